"""A counterexample as a self-contained HTML page: per-subtask swimlanes over the steps.

Each step is a column. A mark on a subtask's lane shows what happened there: a record read
or processed (dot), a checkpoint barrier (bar), a watermark (triangle), a failure (cross);
an arrow goes from the producer's lane to the consumer's lane for every delivery. The
coordinator lane shows triggers and completions. Hovering a mark shows the step's
description. No scripts, no external resources.
"""

from __future__ import annotations

import html

from model import actions as A
from model.errors import FlinkspecError
from properties.engines import Run
from properties.explain import _describe

COL = 22
LANE = 34
LEFT = 170
TOP = 40


def _mark(m: dict, x: int, y: dict, coord_y: int, desc: str) -> str:
    """The SVG of one step from its action kind's ``mark`` (lane, shape, color)."""
    lane = m.get("lane")
    yy = coord_y if lane is None else y[lane]
    color = m["color"]
    shape = m["shape"]
    tip = f"<title>{desc}</title>"
    if "from_lane" in m:  # a delivery: an arrow from the producer's lane, then what arrived
        arrow = (f'<line x1="{x - COL // 2}" y1="{y[m["from_lane"]]}" x2="{x}" y2="{yy}" stroke="{color}" '
                 f'stroke-width="1.2" marker-end="url(#arrow)">{tip}</line>')
    else:
        arrow = ""
    if shape == "barrier":
        return arrow + f'<rect x="{x - 2}" y="{yy - 10}" width="4" height="20" fill="{color}">{tip}</rect>'
    if shape == "watermark":
        return arrow + f'<polygon points="{x - 5},{yy + 6} {x + 5},{yy + 6} {x},{yy - 6}" fill="{color}">{tip}</polygon>'
    if shape == "cross":
        return arrow + (f'<text x="{x - 6}" y="{yy + 6}" fill="{color}" font-size="18" font-weight="bold">✕'
                        f'{tip}</text>')
    if shape == "square":
        return arrow + f'<rect x="{x - 5}" y="{yy - 5}" width="10" height="10" fill="{color}">{tip}</rect>'
    r = 4 if shape in ("record", "event") else 5
    return arrow + f'<circle cx="{x}" cy="{yy}" r="{r}" fill="{color}">{tip}</circle>'


def render_html(cx) -> str:
    run = Run(cx.scenario)
    c = run.cluster
    eg = c.eg
    lanes = ["coordinator"] + [s.name for s in eg.subtasks]
    y = {i: TOP + (i + 1) * LANE for i in range(len(eg.subtasks))}
    coord_y = TOP
    marks = []
    violation_step = cx.violation.step
    for i, a in enumerate(cx.actions):
        reason = c.why_not_enabled(a)
        if reason is not None:  # rendered only after validation (check_replay); never draw a refused step
            raise FlinkspecError(f"{cx.path}:{i + 2}: step {i}: {a!r} is not enabled: {reason}")
        desc = html.escape(f"{i}. {a!r} — {_describe(run, a)}")
        x = LEFT + i * COL + COL // 2
        m = A.kind_of(a).mark(c, a)
        marks.append(_mark(m, x, y, coord_y, desc))
        before = len(c.completed_ids)
        run.step(a)
        if len(c.completed_ids) > before:
            marks.append(f'<text x="{x - 5}" y="{coord_y + 18}" fill="#1b9e3e" font-size="14">★<title>checkpoint '
                         f'{c.completed_ids[-1]} completed</title></text>')
    width = LEFT + len(cx.actions) * COL + 40
    height = TOP + (len(eg.subtasks) + 2) * LANE
    rows = []
    for i, name in enumerate(lanes):
        yy = coord_y if i == 0 else y[i - 1]
        rows.append(f'<line x1="{LEFT}" y1="{yy}" x2="{width - 20}" y2="{yy}" stroke="#ddd"/>'
                    f'<text x="8" y="{yy + 4}" font-size="12">{html.escape(name)}</text>')
    if violation_step is not None:
        vx = LEFT + violation_step * COL + COL // 2
        rows.append(f'<line x1="{vx}" y1="{TOP - 20}" x2="{vx}" y2="{height - 10}" stroke="#d00" stroke-dasharray="4 3"/>')
    ticks = "".join(f'<text x="{LEFT + i * COL + 4}" y="{TOP - 22}" font-size="9" fill="#999">{i}</text>'
                    for i in range(0, len(cx.actions), 5))
    v = cx.violation
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif">'
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="5" markerHeight="5" '
           'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>'
           + "".join(rows) + ticks + "".join(marks) + "</svg>")
    graph = "".join(f"<li>{html.escape(o.name)}: {o.kind} p={o.parallelism}</li>" for o in cx.scenario.graph.operators)
    edges = "".join(f"<li>{html.escape(e.source)} —{e.partitioner}/{e.exchange_mode}→ {html.escape(e.target)}</li>"
                    for e in cx.scenario.graph.edges)
    chans = "".join(f"<li>ch{ch.id}: {html.escape(eg.subtasks[ch.producer].name)} → "
                    f"{html.escape(eg.subtasks[ch.consumer].name)}</li>" for ch in eg.channels)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(cx.path)}</title>
<style>body{{font-family:sans-serif;margin:20px}} .v{{background:#fee;border:1px solid #d00;padding:8px}}
.cols{{display:flex;gap:40px}} svg{{border:1px solid #eee}}</style></head><body>
<h2>{html.escape(v.invariant)} — variant {html.escape(cx.variant)}</h2>
<p class="v"><b>step {v.step}:</b> {html.escape(v.message)}<br>expected: {html.escape(str(v.expected))}<br>
actual: {html.escape(str(v.actual))}</p>
<div class="cols"><div><h3>job</h3><ul>{graph}</ul><ul>{edges}</ul></div><div><h3>channels</h3><ul>{chans}</ul></div></div>
<h3>swimlanes (hover a mark for the step)</h3>
<p>blue dot: record; orange bar: barrier; grey triangle: watermark; green dot: source read; red ✕: failure;
orange square: coordinator action; ★: checkpoint completed; dashed red line: the violation.</p>
{svg}
</body></html>
"""
