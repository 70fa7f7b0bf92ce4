"""A run's report as one self-contained HTML page (``--report OUT.html`` of ``flinkspec check``,
``flinkspec explore`` and ``flinkspec spark-replay``).

The page holds the suite table (expected and actual verdict per suite or variant), the coverage
goals as bars (how many runs reached each; a goal no run reached stands out), and for the
unsafe configurations the time to find the violation and the length of the counterexample;
each counterexample file gets its own viewer page (``properties.html``) in the folder
``<OUT stem>-counterexamples/`` beside the report, linked from its row.

The plots are inline SVG drawn by matplotlib (its ``Agg``/SVG backend: offline, no display;
text is drawn as paths, so the page needs no font and loads nothing). The report is data
first (:class:`Report`, built by each command from its own results) and rendered by
:func:`render_report`.
"""

from __future__ import annotations

import html
import io
import os
from pathlib import Path

import attrs

from model.errors import FlinkspecError


@attrs.frozen(kw_only=True)
class Row:
    """One suite or variant of a run."""

    name: str
    expected: tuple
    verdict: str
    as_expected: bool
    unsafe: bool
    runs: int | None = None
    steps: int | None = None
    seconds: float | None = None
    #: runs (or states) it took to find the violation (unsafe, found)
    to_find: int | None = None
    #: steps of the counterexample written (after shrinking, for a random walk)
    cx_steps: int | None = None
    counterexample: str | None = None
    #: further columns: (header, text)
    extra: tuple = ()


@attrs.frozen(kw_only=True)
class Report:
    title: str
    summary: str
    ok: bool
    rows: tuple
    #: (goal, runs reaching it, statement); empty when the run judges no goals
    goals: tuple = ()
    #: what "to find" counts (runs, states...)
    to_find_unit: str = "runs"
    notes: tuple = ()


def _e(x) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _svg(fig) -> str:
    """``fig`` as inline SVG (no XML prolog, no metadata date: the same data gives the same SVG)."""
    import matplotlib.pyplot as plt  # lazy: matplotlib only when a report is written

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _pyplot():
    try:
        import matplotlib  # lazy: only a report needs it
    except ImportError:
        raise FlinkspecError("--report needs matplotlib: pip install 'flinkspec[viewer]' (or make env)") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "flinkspec"  # deterministic ids in the SVG
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: smaller, searchable, selectable
    import matplotlib.pyplot as plt  # lazy, as above

    return plt


def goals_plot(goals: tuple) -> str:
    """Horizontal bars: runs reaching each coverage goal; unreached goals in red."""
    plt = _pyplot()
    names = [g[0] for g in goals][::-1]
    counts = [g[1] for g in goals][::-1]
    fig, ax = plt.subplots(figsize=(7.5, 0.26 * len(goals) + 0.8))
    colors = ["#d62728" if c == 0 else "#2a6fdb" for c in counts]
    ax.barh(names, [max(c, 0.0) for c in counts], color=colors)
    for y, c in enumerate(counts):
        ax.text(c, y, f" {c}", va="center", fontsize=8, color="#d62728" if c == 0 else "#333")
    ax.set_xlabel("runs reaching the goal")
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xscale("symlog", linthresh=1)
    ticks = decade_ticks(max(counts, default=0))
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks])
    ax.xaxis.set_minor_locator(_NullLocator())
    ax.set_xlim(0, ticks[-1])
    ax.spines[["top", "right"]].set_visible(False)
    return _svg(fig)


def decade_ticks(largest: int) -> list[int]:
    """The ticks of a log axis of counts from 0 to ``largest``: 0 and every power of ten up
    to the first at or above ``largest`` (at least 0, 1, 10)."""
    ticks, t = [0, 1], 1
    while t < max(largest, 10):
        t *= 10
        ticks.append(t)
    return ticks


def _NullLocator():
    from matplotlib.ticker import NullLocator  # lazy: matplotlib only when a report is written

    return NullLocator()


def unsafe_plot(rows: list, unit: str) -> str:
    """Per unsafe configuration that was caught: time to find (seconds) and counterexample
    length (steps), side by side."""
    plt = _pyplot()
    found = [r for r in rows if r.unsafe and r.seconds is not None]
    names = [r.name for r in found][::-1]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 0.28 * len(found) + 1.0), sharey=True)
    a1.barh(names, [r.seconds for r in found][::-1], color="#c77c02")
    a1.set_xlabel("seconds until found (incl. shrinking)")
    a2.barh(names, [r.cx_steps or 0 for r in found][::-1], color="#2a6fdb")
    a2.set_xlabel("counterexample length (steps)")
    for ax in (a1, a2):
        ax.tick_params(axis="y", labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    for y, r in enumerate(found[::-1]):
        if r.to_find is not None:
            a1.text(r.seconds, y, f" {r.to_find} {unit}", va="center", fontsize=7, color="#555")
    return _svg(fig)


def _pages_dir(out: Path) -> Path:
    return out.parent / f"{out.stem}-counterexamples"


def counterexample_pages(rows, out: Path) -> dict:
    """Write a viewer page for each row's counterexample; ``{path: relative link or error}``."""
    from properties.counterexample import load_counterexample  # lazy: the engines, only when linking
    from properties.html import render_html  # lazy, as above
    from properties.safe_io import check_output_dir, write_atomic  # lazy, as above

    links: dict = {}
    files = [r.counterexample for r in rows if r.counterexample]
    if not files:
        return links
    folder = check_output_dir(_pages_dir(out), what="report's counterexample folder")
    for f in files:
        p = Path(f)
        page = folder / f"{p.parent.name}-{p.stem}.html"
        try:
            write_atomic(page, render_html(load_counterexample(p)), what="counterexample page")
        except FlinkspecError as e:
            links[f] = ("error", str(e))
            continue
        links[f] = ("ok", os.path.relpath(page, out.parent))
    return links


def render_report(report: Report, out) -> str:
    """The report page (written by :func:`write_report`); viewer pages are written beside it."""
    out = Path(out)
    links = counterexample_pages(report.rows, out)
    extra_heads = list(dict.fromkeys(h for r in report.rows for h, _ in r.extra))
    head = ["suite", "expected", "verdict", "as expected", "runs", "steps", "time",
            f"found after ({report.to_find_unit})", "counterexample"] + extra_heads
    trs = []
    for r in report.rows:
        link = "-"
        if r.counterexample:
            kind, val = links.get(r.counterexample, ("error", "not written"))
            text = f"{r.cx_steps} steps" if r.cx_steps is not None else "page"
            link = (f'<a href="{_e(val)}">{_e(text)}</a> <small><code>{_e(os.path.basename(r.counterexample))}</code></small>'
                    if kind == "ok" else f'<span class="bad">{_e(val)}</span>')
        extra = dict(r.extra)
        cells = [f"<td><b>{_e(r.name)}</b></td>", f"<td>{_e('/'.join(r.expected))}</td>",
                 f"<td>{_e(r.verdict)}</td>",
                 f'<td class="{"ok" if r.as_expected else "bad"}">{"yes" if r.as_expected else "NO"}</td>',
                 f"<td class=num>{_e(r.runs if r.runs is not None else '-')}</td>",
                 f"<td class=num>{_e(r.steps if r.steps else '-')}</td>",
                 f"<td class=num>{'-' if r.seconds is None else f'{r.seconds:.1f}s'}</td>",
                 f"<td class=num>{_e(r.to_find if r.to_find is not None else '-')}</td>", f"<td>{link}</td>"]
        cells += [f"<td>{_e(extra.get(h, ''))}</td>" for h in extra_heads]
        trs.append(f'<tr data-suite="{_e(r.name)}" class="{"unsafe" if r.unsafe else "safe"}">{"".join(cells)}</tr>')
    table = (f'<table id="suites"><thead><tr>{"".join(f"<th>{_e(h)}</th>" for h in head)}</tr></thead>'
             f'<tbody>{"".join(trs)}</tbody></table>')
    goals = ""
    if report.goals:
        missing = [g[0] for g in report.goals if g[1] == 0]
        rows = "".join(f'<tr data-goal="{_e(g[0])}" class="{"bad" if g[1] == 0 else ""}"><td>{_e(g[0])}</td>'
                       f'<td class=num>{g[1]}</td><td>{_e(g[2])}</td></tr>' for g in report.goals)
        goals = (f'<h2>coverage goals</h2><p>{len(report.goals) - len(missing)}/{len(report.goals)} reached'
                 f'{" — never reached: " + _e(", ".join(missing)) if missing else ""}</p>'
                 f'<figure id="goals-plot">{goals_plot(report.goals)}</figure>'
                 f'<details><summary>the goals</summary><table class="goals"><tr><th>goal</th><th>runs</th>'
                 f'<th>statement</th></tr>{rows}</table></details>')
    caught = [r for r in report.rows if r.unsafe and r.seconds is not None and r.cx_steps is not None]
    unsafe = ""
    if caught:
        unsafe = (f'<h2>unsafe configurations: time to find, counterexample length</h2>'
                  f'<figure id="unsafe-plot">{unsafe_plot(caught, report.to_find_unit)}</figure>')
    notes = "".join(f"<p class=note>{_e(n)}</p>" for n in report.notes)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(report.title)}</title>
<style>
body{{font-family:system-ui,sans-serif;margin:16px;color:#222;font-size:14px}} h1{{font-size:20px}} h2{{font-size:16px;margin-top:22px}}
table{{border-collapse:collapse;font-size:13px}} td,th{{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}}
td.num{{text-align:right;font-variant-numeric:tabular-nums}} .ok{{color:#1b7e2e}} .bad{{color:#c00;font-weight:bold}}
tr.unsafe td:first-child{{border-left:3px solid #c77c02}} .summary{{padding:6px 10px;border-radius:4px}}
.summary.ok{{background:#eefbea}} .summary.bad{{background:#fff1f0}} figure{{margin:6px 0}} .note{{color:#555}}
</style></head><body>
<h1>{_e(report.title)}</h1>
<p class="summary {"ok" if report.ok else "bad"}" id="summary">{_e(report.summary)}</p>
{notes}
<h2>suites</h2>{table}
{goals}
{unsafe}
<p class=note>Plots: matplotlib, inline SVG. Counterexample pages: flinkspec show FILE --html (one per file, in
{_e(_pages_dir(out).name)}/).</p>
</body></html>
"""


def write_report(report: Report, out) -> Path:
    """Render ``report`` and write it atomically to ``out`` (checked by the caller before the run)."""
    from properties.safe_io import write_atomic  # lazy: kept with the other lazy imports of this module

    out = Path(out)
    write_atomic(out, render_report(report, out), what="report")
    return out
