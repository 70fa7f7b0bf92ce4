"""A counterexample as one self-contained, interactive HTML page (``flinkspec show FILE --html``).

The page works offline: its data, style and script are inline, it loads nothing. What it shows
(the data comes from ``properties.timeline``, which replays the file through the one step
function):

* **swimlanes** -- one lane per subtask and one for the JobManager's CheckpointCoordinator;
  a column per step with the mark its action kind draws (``ActionKind.mark`` in
  ``model.actions``: records, barriers, watermarks, failures, coordinator actions), an arrow
  from the producer's lane for every delivery, a star where a checkpoint completed;
* a **step cursor** -- a slider, buttons, the arrow keys (Home/End too), a click on a step or
  a column; the URL fragment ``#step=N`` opens the page at step N and follows the cursor;
* the **state panel** after the current step -- channels (in flight, blocked, received),
  tasks (valve watermarks, barrier handler, source offsets), checkpoints (pending with their
  acknowledgements, completed), sink transactions and committed output, keyed state per key
  group, the job -- with what the step changed highlighted and what it removed struck out;
* the **enabled actions not taken** at the current step (the run's other choices);
* the **violation**: its step, and every element it concerns (channel, checkpoint, key group,
  subtask, record, key) marked in the lanes, the graph, the state panel and the output table;
* the **execution graph** (subtasks and channels, drawn as inline SVG by this module's own
  layered layout -- columns by the job vertex's depth in the graph, no Graphviz), with every
  channel's elements in flight and blocked channels at the current step;
* **expected vs actual output** per sink at the end (the p=1 failure-free reference against
  what was committed);
* runs of uneventful steps (only records moved) **collapsed** (a toggle), and a **filter**
  by subtask.

Stable hooks (for tests and for links): every step element has ``data-step="<i>"`` (0-based,
one per step, also when collapsed); the step list's current row has ``aria-current="step"``;
elements the violation concerns carry ``data-violation``; ``#step=N`` opens step N;
ArrowRight/ArrowLeft move one step.

A trace divergence (``properties.tracecounterexample``: a run of real Flink the model cannot
produce) gets the whole-cluster page of the model's run with one more lane, **observed (real
Flink)**: each event of the trace at the column of the model step that produced it, the first
event the model cannot produce at the end, and the list of every observed event with its status
(``#observed li[data-observed="<seq>"]``; the first unmatched one carries
``data-first-unmatched``).

Focused counterexamples (one mechanism, ``properties.machines``) get the same page without
lanes or graph: the initialisation, the numbered operations, the violation, and what the
machine observed after each operation (``properties.machines.focused_states``).
"""

from __future__ import annotations

import html
import json
import re

from model.errors import FlinkspecError
from properties.timeline import COLLAPSE_AT, build_timeline, flatten, state_refs

COL = 22
LANE = 30
LEFT = 150


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _json_for_script(obj) -> str:
    """JSON that is safe inside a ``<script>`` element (no ``</``, no ``<!--``)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")


# -- the execution graph ---------------------------------------------------------------------------

def graph_svg(tl, concerns: set) -> str:
    """Subtasks as boxes in columns (a job vertex's column is its depth: the longest path from a
    source over the channels), channels as lines labelled ``ch<N>`` with a count of the
    elements in flight that the page's script updates per step."""
    vertex_of = {ln["id"]: ln["vertex"] for ln in tl.lanes}
    vertices = list(dict.fromkeys(vertex_of[ln["id"]] for ln in tl.lanes))
    preds: dict = {v: set() for v in vertices}
    for ch in tl.channels:
        a, b = vertex_of[ch["producer"]], vertex_of[ch["consumer"]]
        if a != b:
            preds[b].add(a)
    depth: dict = {}

    def d(v, seen=()):
        if v not in depth:
            depth[v] = 0 if not preds[v] or v in seen else 1 + max(d(p, seen + (v,)) for p in preds[v])
        return depth[v]
    for v in vertices:
        d(v)
    cols: dict = {}
    for ln in tl.lanes:
        cols.setdefault(depth[vertex_of[ln["id"]]], []).append(ln)
    bw, bh, gapx, gapy = 120, 26, 90, 14
    pos = {}
    height = 0
    for c, lns in sorted(cols.items()):
        for r, ln in enumerate(lns):
            pos[ln["id"]] = (10 + c * (bw + gapx), 10 + r * (bh + gapy))
            height = max(height, 10 + (r + 1) * (bh + gapy))
    width = 10 + (max(cols) + 1) * (bw + gapx) - gapx + 10 if cols else 100
    parts = []
    for ch in tl.channels:
        (x1, y1), (x2, y2) = pos[ch["producer"]], pos[ch["consumer"]]
        ax, ay, bx, by = x1 + bw, y1 + bh / 2, x2, y2 + bh / 2
        if ch["producer"] == ch["consumer"] or x2 <= x1:
            ax, bx = x1 + bw / 2, x2 + bw / 2
        ref = f"ch{ch['id']}"
        viol = " data-violation" if ref in concerns else ""
        mx, my = (ax + bx) / 2, (ay + by) / 2
        parts.append(f'<g class="gch" data-ref="{ref}"{viol}><title>channel {ch["id"]}: '
                     f'{_e(tl.lanes[ch["producer"]]["name"])} → {_e(tl.lanes[ch["consumer"]]["name"])} '
                     f'({_e(ch["partitioner"])}{", blocking" if ch["blocking"] else ""})</title>'
                     f'<line x1="{ax:.0f}" y1="{ay:.0f}" x2="{bx:.0f}" y2="{by:.0f}" marker-end="url(#garrow)"/>'
                     f'<text x="{mx:.0f}" y="{my - 3:.0f}" class="chlabel">ch{ch["id"]}'
                     f'<tspan class="chn" data-ch="{ch["id"]}"></tspan></text></g>')
    for ln in tl.lanes:
        x, y = pos[ln["id"]]
        ref = f"task{ln['id']}"
        viol = " data-violation" if ref in concerns else ""
        parts.append(f'<g class="gtask" data-ref="{ref}" data-task="{ln["id"]}"{viol}><rect x="{x}" y="{y}" '
                     f'width="{bw}" height="{bh}" rx="4"/><text x="{x + 6}" y="{y + 17}">{_e(ln["name"])}</text></g>')
    return (f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height + 6:.0f}" '
            f'viewBox="0 0 {width:.0f} {height + 6:.0f}" '
            f'role="img" aria-label="execution graph"><defs><marker id="garrow" viewBox="0 0 10 10" refX="9" '
            f'refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" '
            f'fill="#666"/></marker></defs>{"".join(parts)}</svg>')


# -- the page ------------------------------------------------------------------------------------

def _fold_runs(eventful: list) -> list:
    """(start, end) of every run of at least COLLAPSE_AT uneventful steps."""
    runs, start = [], None
    for i, ev in enumerate(eventful + [True]):
        if not ev and start is None:
            start = i
        elif ev and start is not None:
            if i - start >= COLLAPSE_AT:
                runs.append((start, i - 1))
            start = None
    return runs


#: the step list's last row when the violation is judged at the end of the run
END_TEXT = "every action taken; the end-of-run invariants are judged here"


def _step_list(tl, vstep, end_text: str = END_TEXT) -> str:
    rows = []
    runs = {s: e for s, e in _fold_runs([s.eventful for s in tl.steps])}
    fold_of = {}
    for s, e in runs.items():
        for i in range(s, e + 1):
            fold_of[i] = s
    for st in tl.steps:
        i = st.index
        if i in runs:
            n = runs[i] - i + 1
            rows.append(f'<li class="fold" data-fold="{i}"><button type="button" class="foldbtn" data-fold="{i}">'
                        f'▸ {n} uneventful steps ({i}–{runs[i]}): only records moved</button></li>')
        attrs = [f'data-step="{i}"', f'data-kind="{_e(st.kind)}"', f'data-lanes="{" ".join(map(str, st.lanes))}"']
        cls = ["step"]
        if not st.eventful:
            cls.append("quiet")
        if st.drained:
            cls.append("drained")
        if i in fold_of:
            attrs.append(f'data-fold="{fold_of[i]}"')
            cls.append("folded")
        if vstep == i:
            attrs.append("data-violation")
        extra = ""
        if st.completed:
            extra += f' <span class="done">★ checkpoint {", ".join(map(str, st.completed))} completed</span>'
        if st.drained:
            extra += ' <span class="drn">drain policy</span>'
        if vstep == i:
            extra += ' <span class="vtag">VIOLATION</span>'
        rows.append(f'<li class="{" ".join(cls)}" {" ".join(attrs)} tabindex="-1"><span class="n">{i}</span> '
                    f'<code>{_e(st.action)}</code> <span class="d">{_e(st.description)}</span>{extra}</li>')
    if vstep is not None and vstep == len(tl.steps):
        rows.append(f'<li class="step end" data-step="{vstep}" data-end data-violation tabindex="-1">'
                    f'<span class="n">{vstep}</span> <b>end of the run</b> <span class="d">{_e(end_text)}</span> '
                    f'<span class="vtag">VIOLATION</span></li>')
    return "".join(rows)


def _output_tables(tl, concerns: set) -> str:
    if not tl.output:
        return "<p>no sink</p>"
    out = []
    for t in tl.output:
        rows = []
        for r in t["rows"]:
            cls = "same" if r["expected"] == r["actual"] else ("missing" if r["actual"] < r["expected"] else "extra")
            key = r["record"][1:].split(",", 1)[0] if r["record"].startswith("(") else ""
            viol = " data-violation" if ("rec:" + r["record"]) in concerns or f"key:{key}" in concerns else ""
            sign = {"same": " ", "missing": "−", "extra": "+"}[cls]
            rows.append(f'<tr class="{cls}"{viol}><td class="sign">{sign}</td><td><code>{_e(r["record"])}</code></td>'
                        f'<td>{r["expected"]}</td><td>{r["actual"]}</td></tr>')
        fields = {"rolling": "key", "rolling_count": "key, value"}.get(t["mode"], "key, value, @timestamp")
        out.append(f'<h4>sink <code>{_e(t["sink"])}</code> (compared as {_e(t["mode"])}): expected {t["expected_count"]} '
                   f'record(s), committed {t["actual_count"]}</h4><table class="diff"><thead><tr><th></th>'
                   f'<th>record ({fields})</th><th>expected</th><th>actual</th></tr></thead>'
                   f'<tbody>{"".join(rows) or "<tr><td></td><td colspan=3>no output</td></tr>"}</tbody></table>')
    return "".join(out)


def _state_data(tl, names: dict) -> dict:
    """The states as one key list and one value list per state (None: absent), and each key's
    element ids (for the violation marks: by its path, and a record the violation names by the
    values that hold it)."""
    flats = [flatten(s) for s in tl.states]
    keys = _ordered_keys(flats)
    records = [c for c in tl.concerns if c.startswith("rec:")]
    keyrefs = [c for c in tl.concerns if c.startswith("key:")]
    refs = {}
    for k in keys:
        r = list(state_refs(k, names))
        r += [c for c in records if any(c[4:] in (f.get(k) or "") for f in flats)]
        if k.startswith("keyed_state"):  # a key's state: "'b' = 1", "'b' [0,3) = 7"
            r += [c for c in keyrefs if any(re.search(r"(^|; )" + re.escape(c[4:]) + r" [=\[]", f.get(k) or "")
                                            for f in flats)]
        if k.endswith("session"):  # a component's leader session: "session 3"
            r += [f"session:{m}" for m in sorted({m for f in flats for m in re.findall(r"session (\d+)", f.get(k) or "")})]
        if k == "checkpoints › completed":
            ids = {x for f in flats for x in f.get(k, "").strip("[]").split(", ") if x.isdigit()}
            r += [f"cp{x}" for x in sorted(ids, key=int)]
        if r:
            refs[k] = r
    return {"keys": keys, "values": [[f.get(k) for k in keys] for f in flats], "refs": refs}


def _ordered_keys(flats) -> list:
    """Every key of every state, siblings together: a key that appears later (a new pending
    checkpoint, a new transaction) goes beside the keys that share its parent."""
    tree: dict = {}
    for f in flats:
        for k in f:
            node = tree
            for part in k.split(" › "):
                node = node.setdefault(part, {})
    out = []

    def walk(prefix, node):
        for part, child in node.items():
            key = f"{prefix} › {part}" if prefix else part
            if child:
                walk(key, child)
            if not child or any(key in f for f in flats):
                out.append(key)
    walk("", tree)
    return out


def _observed_list(observed) -> str:
    """The observed events of a trace divergence, each with its status (``LaneEvent.to_dict``)."""
    rows = []
    for it in observed:
        attrs = [f'data-observed="{it["seq"]}"', f'data-status="{_e(it["status"])}"']
        if it["step"] is not None and it["status"] == "matched":
            attrs.append(f'data-at-step="{it["step"]}"')
        tag = {"matched": f"produced by model step {it['step']}", "omitted": f"left out by rule {it['rule']}",
               "divergence": "the first event the model cannot produce", "unmatched": "not reached"}[it["status"]]
        if it["status"] == "divergence":
            attrs.append("data-first-unmatched")
            tag = f'<span class="vtag">{_e(tag)}</span>'
        else:
            tag = f'<span class="d">{_e(tag)}</span>'
        rows.append(f'<li class="obs {_e(it["status"])}" {" ".join(attrs)}><span class="n">#{it["seq"]}</span> '
                    f'<code>{_e(it["text"])}</code> {tag}</li>')
    return "".join(rows)


def render_timeline(tl, observed=None) -> str:
    """The page of a timeline; ``observed`` (a trace divergence's lane, dicts of
    ``properties.tracecounterexample.LaneEvent``) adds the lane of real Flink's events."""
    concerns = set(tl.concerns)
    vstep = tl.violation_step
    v = tl.violation
    data = {
        "lanes": list(tl.lanes) + list(tl.components),
        "steps": [{"a": s.action, "k": s.kind, "d": s.description, "m": s.mark, "alt": [list(x) for x in s.alternatives],
                   "c": list(s.completed), "ev": s.eventful, "dr": s.drained} for s in tl.steps],
        "state": _state_data(tl, {ln["name"]: ln["id"] for ln in tl.lanes}),
        "vstep": vstep, "concerns": sorted(concerns), "end": vstep is not None and vstep == len(tl.steps),
        "col": COL, "lane": LANE, "left": LEFT, "unit": "step", "zero": "at deployment, no step taken",
        "observed": list(observed) if observed is not None else None,
        "endText": "end of the model's run: the next observed event is one the model cannot produce"
                   if observed is not None else None,
    }
    h = tl.header
    filt = "".join(f'<label><input type="checkbox" class="lanef" value="{ln["id"]}" checked> {_e(ln["name"])}</label>'
                   for ln in tl.lanes + tl.components)
    job = "; ".join(f'{_e(o["name"])} ({_e(o["kind"])}, p={o["parallelism"]})' for o in tl.job["operators"])
    edges = "; ".join(f'{_e(e["source"])} —{_e(e["partitioner"])}{"/blocking" if e["exchange_mode"] == "blocking" else ""}→ '
                      f'{_e(e["target"])}' for e in tl.job["edges"])
    where = ("at the end of the run" if data["end"] else f"at step {vstep}") if vstep is not None else "at deployment"
    note = "" if tl.reproduced else '<p class="warn">replaying the file now does NOT reproduce this violation</p>'
    body = f"""
<header>
<h1>{_e(v["invariant"])} <small>— variant {_e(h.get("variant"))}</small></h1>
<p class="meta">{_e(h.get("path"))} · engine {_e(h.get("engine"))} · seed {_e(h.get("seed"))} · model {_e(h.get("model_version"))}
 · {len(tl.steps)} steps · job: {job} · {edges} · {_e(tl.job["config"])}</p>
<div class="violation" id="violation" data-violation><b>Violation of {_e(v["invariant"])} {where}:</b> {_e(v["message"])}
<table class="ea"><tr><th>expected</th><td><code>{_e(json.dumps(v["expected"], sort_keys=True))}</code></td></tr>
<tr><th>actual</th><td><code>{_e(json.dumps(v["actual"], sort_keys=True))}</code></td></tr></table>
<p class="concerns">concerns: {", ".join(f"<code>{_e(c)}</code>" for c in sorted(concerns)) or "-"}
 {f'<button type="button" id="goviol">go to step {vstep}</button>' if vstep is not None and tl.steps else ""}</p>{note}</div>
</header>
<nav class="toolbar" aria-label="step cursor">
<button type="button" id="first" title="first step (Home)">|◀</button>
<button type="button" id="prev" title="previous step (←)">◀</button>
<input type="range" id="slider" min="0" max="{max(len(tl.steps) - (0 if data["end"] else 1), 0)}" value="0" aria-label="step">
<button type="button" id="next" title="next step (→)">▶</button>
<button type="button" id="last" title="last step (End)">▶|</button>
<span id="pos" aria-live="polite"></span>
<label><input type="checkbox" id="collapse" checked> collapse uneventful runs</label>
<details class="filter"><summary>filter lanes</summary>{filt}
<button type="button" id="fall">all</button> <button type="button" id="fnone">none</button></details>
</nav>
<section class="lanesbox"><h2>swimlanes</h2><div id="lanes"></div>
<p class="legend"><span style="color:#2a6fdb">●</span> record delivered · <span style="color:#1b9e3e">●</span> source read ·
<span style="color:#c77c02">▮</span> barrier · <span style="color:#888">▲</span> watermark · <span style="color:#d00">✕</span> failure ·
<span style="color:#c77c02">■</span> coordinator action · <span style="color:#1b9e3e">★</span> checkpoint completed ·
<span style="color:#d00">┆</span> the violation · arrows: producer → consumer, RPC sender → receiver
{'· lane <i>observed (real Flink)</i>: <span style="color:#1b6e9e">◆</span> an event the model step produced, '
 '<span style="color:#999">○</span> left out by a mapping rule, <span style="color:#d00">✕</span> the first event the '
 'model cannot produce' if observed is not None else ''}</p></section>
{'<section class="observedbox"><h2>observed (real Flink): ' + str(len(observed)) + ' events</h2>'
 '<p class="hint">the trace of the real run, in the order Flink logged it; click an event to go to the model step '
 'that produced it</p><ol id="observed">' + _observed_list(observed) + '</ol></section>'
 if observed is not None else ''}
<div class="cols">
<section class="stepsbox"><h2>steps</h2><ol id="steps">{_step_list(tl, vstep, data["endText"] or END_TEXT)}</ol></section>
<section class="statebox"><h2>state <span id="stn"></span></h2>
<p class="hint">highlighted: changed by this step · struck out: removed by it · red outline: what the violation concerns
 · <label><input type="checkbox" id="onlychanged"> only what changed</label></p>
<div id="state"></div></section>
<section class="altbox"><h2>current step</h2><div id="cur"></div>
<h3>enabled here, not taken</h3><ul id="alts"></ul>
<h2>execution graph</h2>{graph_svg(tl, concerns)}
<p class="hint">numbers on a channel: elements in flight after the current step; red dashed: blocked by alignment</p></section>
</div>
<section class="outbox"><h2>expected vs actual output {"at the end of the run" if tl.ended else f"after step {len(tl.steps) - 1}" if tl.steps else "at deployment"}</h2>
<p class="hint">expected: the same job at parallelism 1 without failures (the reference); actual: what the sinks committed.
− missing, + extra or duplicated.{"" if tl.ended else " The run stops at the violation, before it ends: output not committed yet counts as missing here."}</p>
{_output_tables(tl, concerns)}</section>
"""
    return _page(f"{v['invariant']} — {h.get('variant')}", body, data)


def render_focused(cx) -> str:
    """The page of a focused counterexample: initialisation, operations, violation."""
    v = cx.violation
    sc = cx.scenario
    n = len(cx.actions)
    vstep = v.step if v.step is None or v.step <= n else n
    end = vstep is not None and vstep == n and n > 0
    rows = []
    for i, op in enumerate(cx.actions):
        viol = " data-violation" if vstep == i else ""
        tag = ' <span class="vtag">VIOLATION</span>' if vstep == i else ""
        rows.append(f'<li class="step" data-step="{i}" data-lanes=""{viol} tabindex="-1"><span class="n">{i}</span> '
                    f'<code>{_e(repr(op))}</code>{tag}</li>')
    if end:
        rows.append(f'<li class="step end" data-step="{n}" data-end data-violation tabindex="-1"><span class="n">{n}'
                    f'</span> <b>end of the run</b> <span class="vtag">VIOLATION</span></li>')
    from properties.machines import focused_states  # lazy: the machines (Hypothesis) only for focused files

    states = focused_states(sc, cx.actions)
    state = None
    if len(states) == n + 1:
        flats = [flatten(x) for x in states]
        keys = _ordered_keys(flats)
        state = {"keys": keys, "values": [[f.get(k) for k in keys] for f in flats], "refs": {}}
    data = {"lanes": [], "steps": [{"a": repr(op), "k": "operation", "d": "", "m": {}, "alt": [], "c": [], "ev": True,
                                    "dr": False} for op in cx.actions],
            "state": state, "vstep": vstep, "concerns": [], "end": end, "col": COL, "lane": LANE, "left": LEFT,
            "unit": "operation", "zero": "after initialisation, no operation"}
    h = cx.header
    where = "after initialisation" if vstep is None else ("at the end of the run" if end else f"at step {vstep}")
    init = ", ".join(f"{_e(k)}={_e(repr(x))}" for k, x in sc.init.items()) or "-"
    body = f"""
<header><h1>{_e(v.invariant)} <small>— focused suite {_e(h.get("variant"))}</small></h1>
<p class="meta">{_e(cx.path)} · engine {_e(h.get("engine"))} · seed {_e(h.get("seed"))} · the {_e(sc.machine)} machine,
 built with <code>{_e(json.dumps(sc.knobs, sort_keys=True))}</code> · initialisation: <code>{init}</code></p>
<div class="violation" id="violation" data-violation><b>Violation of {_e(v.invariant)} {where}:</b> {_e(v.message)}
<table class="ea"><tr><th>expected</th><td><code>{_e(json.dumps(v.expected, sort_keys=True))}</code></td></tr>
<tr><th>actual</th><td><code>{_e(json.dumps(v.actual, sort_keys=True))}</code></td></tr></table></div></header>
<nav class="toolbar" aria-label="step cursor">
<button type="button" id="first">|◀</button> <button type="button" id="prev">◀</button>
<input type="range" id="slider" min="0" max="{max(n - (0 if end else 1), 0)}" value="0" aria-label="step">
<button type="button" id="next">▶</button> <button type="button" id="last">▶|</button> <span id="pos" aria-live="polite"></span>
</nav>
<div class="cols2"><section class="stepsbox"><h2>operations</h2>{"<ol id='steps'>" + "".join(rows) + "</ol>" if rows else
     "<p>a one-shot check: the initialisation is the whole run</p><ol id='steps'></ol>"}</section>
{'<section class="statebox"><h2>what the machine observed <span id="stn"></span></h2><p class="hint">'
 'highlighted: changed by this operation · <label><input type="checkbox" id="onlychanged"> only what changed</label>'
 '</p><div id="state"></div></section>' if state else ""}</div>
"""
    return _page(f"{v.invariant} — {h.get('variant')}", body, data)


def render_html(cx) -> str:
    """The page of counterexample ``cx`` (validated and replayable: see ``flinkspec show``)."""
    from properties.scenario_kinds import kind_of  # lazy: the registry of scenario kinds imports the machines

    kind = kind_of(cx.scenario)
    if kind is not None:
        return kind.html(cx) if kind.html is not None else render_focused(cx)
    try:
        tl = build_timeline(cx)
    except FlinkspecError as e:
        raise FlinkspecError(f"{cx.path}: {e}") from None
    return render_timeline(tl)


def _page(title: str, body: str, data: dict) -> str:
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head><body>'
            f'{body}<script type="application/json" id="data">{_json_for_script(data)}</script>'
            f'<script>{JS}</script></body></html>\n')


CSS = """
body{font-family:system-ui,sans-serif;margin:0 16px 40px;color:#222;font-size:14px}
h1{font-size:20px;margin:12px 0 4px} h1 small{font-weight:normal;color:#555} h2{font-size:15px;margin:10px 0 6px}
h3{font-size:13px;margin:10px 0 4px} h4{margin:8px 0 4px;font-size:13px}
.meta{color:#555;margin:2px 0 8px} code{font-size:12px}
.violation{background:#fff1f0;border:1px solid #d00;border-radius:4px;padding:6px 10px}
.violation table.ea th{text-align:left;padding-right:8px;color:#900}
.warn{color:#900;font-weight:bold}
.toolbar{position:sticky;top:0;background:#fafafa;border-bottom:1px solid #ddd;padding:6px 0;z-index:5;
 display:flex;gap:6px;align-items:center;flex-wrap:wrap}
.toolbar input[type=range]{flex:1;min-width:200px} #pos{font-variant-numeric:tabular-nums;min-width:160px}
.filter{display:inline-block} .filter label{display:block;font-size:12px}
.lanesbox #lanes{overflow-x:auto;border:1px solid #eee;max-height:420px;overflow-y:auto}
.legend,.hint{color:#666;font-size:12px;margin:4px 0}
.cols2{display:grid;grid-template-columns:minmax(300px,1fr) minmax(320px,1.4fr);gap:14px;align-items:start}
.cols{display:grid;grid-template-columns:minmax(300px,1.1fr) minmax(320px,1fr) minmax(280px,0.9fr);gap:14px;align-items:start}
#steps{list-style:none;padding:0;margin:0;max-height:620px;overflow-y:auto;border:1px solid #eee}
#steps li{padding:2px 6px;border-bottom:1px solid #f3f3f3;cursor:pointer;font-size:12px}
#steps li .n{display:inline-block;min-width:2.4em;color:#888;text-align:right;font-variant-numeric:tabular-nums}
#steps li .d{color:#444} #steps li.quiet{color:#777}
#steps li.folded.hide{display:none} #steps li.fold{background:#f6f6f6} #steps li.fold.hide{display:none}
#steps li.filtered{display:none}
.foldbtn{border:0;background:none;color:#555;cursor:pointer;font-size:12px;padding:0}
#steps li[aria-current=step]{background:#e3efff;outline:2px solid #2a6fdb}
#steps li[data-violation]{border-left:4px solid #d00}
.vtag{background:#d00;color:#fff;border-radius:3px;padding:0 4px;font-size:11px}
.done{color:#1b9e3e} .drn{color:#888;font-size:11px;border:1px solid #bbb;border-radius:3px;padding:0 3px}
#state table{border-collapse:collapse;width:100%;font-size:12px} #state td{padding:1px 4px;vertical-align:top;border-bottom:1px solid #f3f3f3}
#state td.k{color:#555;white-space:nowrap} #state tr.sec td{background:#f0f0f0;font-weight:bold;color:#333}
#state tr.changed td{background:#fff5bf} #state tr.grp td{color:#666;font-style:italic;padding-top:4px} #state tr.removed td{text-decoration:line-through;color:#999;background:#f7f7f7}
#state tr[data-violation] td{box-shadow:inset 0 0 0 1px #d00} #state tr[data-violation] td.k{color:#b00;font-weight:bold}
#state .was{color:#999;text-decoration:line-through;margin-left:6px}
#alts{font-size:12px;padding-left:18px;max-height:220px;overflow-y:auto} #alts li{margin:1px 0}
#cur{font-size:13px;background:#f6f8fb;border:1px solid #dde;border-radius:4px;padding:6px}
#graph{border:1px solid #eee;background:#fff;max-width:100%;height:auto}
#graph .gtask rect{fill:#eef3fb;stroke:#6a8cc7} #graph .gtask text{font-size:11px}
#graph .gtask.active rect{fill:#ffe7a8;stroke:#c77c02;stroke-width:2}
#graph .gtask[data-violation] rect{stroke:#d00;stroke-width:2.5}
#graph .gtask.failed rect{fill:#fdd}
#graph .gch line{stroke:#888;stroke-width:1.4} #graph .gch.active line{stroke:#2a6fdb;stroke-width:3}
#graph .gch.blocked line{stroke:#d00;stroke-dasharray:5 3}
#graph .gch[data-violation] line{stroke:#d00;stroke-width:2.5}
#graph .chlabel{font-size:10px;fill:#555} #graph .chn{fill:#2a6fdb;font-weight:bold}
table.diff{border-collapse:collapse;font-size:12px;margin-bottom:8px} table.diff td,table.diff th{padding:1px 8px;border-bottom:1px solid #eee}
table.diff tr.missing{background:#ffecec} table.diff tr.extra{background:#eaffea} table.diff td.sign{font-weight:bold}
table.diff tr[data-violation] td{box-shadow:inset 0 0 0 1px #d00}
svg text{font-family:system-ui,sans-serif}
#observed{list-style:none;padding:0;margin:0;max-height:260px;overflow-y:auto;border:1px solid #eee;font-size:12px}
#observed li{padding:2px 6px;border-bottom:1px solid #f3f3f3} #observed li[data-at-step]{cursor:pointer}
#observed li .n{display:inline-block;min-width:2.6em;color:#888} #observed li.omitted,#observed li.unmatched{color:#888}
#observed li[data-first-unmatched]{border-left:4px solid #d00;background:#fff1f0}
#lanes .col.cur rect.bg{fill:#e3efff} #lanes .col[data-violation] rect.bg{fill:#ffe5e5}
#lanes .col.cur[data-violation] rect.bg{fill:#ffc9c9} #lanes .col{cursor:pointer}
"""

JS = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("data").textContent);
  var steps = D.steps, n = steps.length, last = D.end ? n : Math.max(n - 1, 0);
  var cur = 0;
  var list = document.getElementById("steps");
  var rows = list ? Array.prototype.slice.call(list.querySelectorAll("li[data-step]")) : [];
  var slider = document.getElementById("slider");
  var posEl = document.getElementById("pos");
  var concerns = {};
  D.concerns.forEach(function (c) { concerns[c] = true; });
  var hidden = {};           // subtask lanes filtered out
  var collapse = true;
  var opened = {};           // fold runs opened by the cursor or a click
  var SVGNS = "http://www.w3.org/2000/svg";
  var lastLayout = null;     // the lanes are redrawn only when their layout changes
  var onlyChanged = false;   // the state panel shows only what the step changed (and the violation's elements)

  function el(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]); }
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // -- swimlanes (drawn here from the steps' marks, so that filtering and folding re-layout) --
  function isFolded(i) {
    var r = rows[i];
    return collapse && r && r.hasAttribute("data-fold") && !opened[r.getAttribute("data-fold")] && i !== cur;
  }
  function drawLanes() {
    var box = document.getElementById("lanes");
    if (!box || !D.lanes.length) return;
    var lanesShown = D.lanes.filter(function (l) { return !hidden[l.id]; });
    var y = {}, top = 34, LANE = D.lane, COL = D.col, LEFT = D.left;
    var coordY = top;
    lanesShown.forEach(function (l, k) { y[l.id] = top + (k + 1) * LANE; });
    var xs = [], x = LEFT, widths = [];
    for (var i = 0; i < n; i++) {
      var w = isFolded(i) ? 5 : COL;
      xs.push(x + w / 2); widths.push(w); x += w;
    }
    var endX = x;
    if (D.end) { xs.push(x + COL / 2); widths.push(COL); x += COL; }
    var obsY = D.observed ? top + (lanesShown.length + 1) * LANE : null;  // real Flink's lane, last
    var width = x + 30, height = top + (lanesShown.length + 1 + (D.observed ? 1 : 0)) * LANE;
    var svg = el("svg", {width: width, height: height, id: "lanesvg", role: "img", "aria-label": "swimlanes"});
    var defs = el("defs", {});
    var mk = el("marker", {id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "5", markerHeight: "5", orient: "auto"});
    mk.appendChild(el("path", {d: "M0,0 L10,5 L0,10 z", fill: "#555"}));
    defs.appendChild(mk); svg.appendChild(defs);
    var names = [["coordinator", coordY]].concat(lanesShown.map(function (l) { return [l.name, y[l.id]]; }));
    if (D.observed) names.push(["observed (real Flink)", obsY]);
    names.forEach(function (nm) {
      svg.appendChild(el("line", {x1: LEFT, y1: nm[1], x2: width - 20, y2: nm[1], stroke: "#e2e2e2"}));
      svg.appendChild(el("text", {x: 6, y: nm[1] + 4, "font-size": 12}, nm[0]));
    });
    for (var j = 0; j <= last; j++) {
      if (j === n && !D.end) break;
      var g = el("g", {"class": "col", "data-step": j});
      if (D.vstep === j) g.setAttribute("data-violation", "");
      g.appendChild(el("rect", {"class": "bg", x: xs[j] - widths[j] / 2, y: 12, width: widths[j], height: height - 14, fill: "transparent"}));
      if (j % 5 === 0 && widths[j] === COL) g.appendChild(el("text", {x: xs[j] - 4, y: 10, "font-size": 9, fill: "#999"}, String(j)));
      if (j < n && widths[j] === COL) drawMark(g, steps[j], xs[j], y, coordY);
      else if (j < n) g.appendChild(el("rect", {x: xs[j] - 1, y: top, width: 2, height: height - top - 10, fill: "#e8e8e8"}));
      if (j === n) g.appendChild(el("text", {x: xs[j] - 10, y: coordY + 4, "font-size": 11, fill: "#d00"}, "end"));
      if (D.vstep === j) g.appendChild(el("line", {x1: xs[j], y1: 14, x2: xs[j], y2: height - 4, stroke: "#d00", "stroke-dasharray": "4 3"}));
      if (D.observed && widths[j] === COL) drawObserved(g, j, xs[j], obsY);
      (function (jj) { g.addEventListener("click", function () { go(jj); }); })(j);
      svg.appendChild(g);
    }
    box.textContent = "";
    box.appendChild(svg);
    markLaneCursor();
  }
  function drawMark(g, s, x, y, coordY) {
    var m = s.m || {}, lane = m.lane, color = m.color || "#7b3fb5";
    var yy = (lane === null || lane === undefined) ? coordY : y[lane];
    var t = el("title", {}, s.a + " — " + s.d);
    g.appendChild(t);
    if (lane !== null && lane !== undefined && yy === undefined) return;  // its lane is filtered out
    if (m.from_lane !== undefined && m.from_lane !== null && y[m.from_lane] !== undefined) {
      g.appendChild(el("line", {x1: x - D.col / 2, y1: y[m.from_lane], x2: x, y2: yy, stroke: color, "stroke-width": 1.2, "marker-end": "url(#arrow)"}));
    }
    var shape = m.shape;
    if (shape === "barrier") g.appendChild(el("rect", {x: x - 2, y: yy - 10, width: 4, height: 20, fill: color}));
    else if (shape === "watermark") g.appendChild(el("polygon", {points: (x - 5) + "," + (yy + 6) + " " + (x + 5) + "," + (yy + 6) + " " + x + "," + (yy - 6), fill: color}));
    else if (shape === "cross") g.appendChild(el("text", {x: x - 6, y: yy + 6, fill: color, "font-size": 18, "font-weight": "bold"}, "\u2715"));
    else if (shape === "square") g.appendChild(el("rect", {x: x - 5, y: yy - 5, width: 10, height: 10, fill: color}));
    else g.appendChild(el("circle", {cx: x, cy: yy, r: (shape === "record" || shape === "event") ? 4 : 5, fill: color}));
    if (s.c && s.c.length) g.appendChild(el("text", {x: x - 5, y: coordY + 18, fill: "#1b9e3e", "font-size": 14}, "\u2605"));
  }
  // real Flink's events of a trace divergence: at the column of the model step that produced
  // them (left out by a rule: after the last step before them); the first one the model cannot
  // produce at the end of the run
  function drawObserved(g, j, x, yy) {
    var here = D.observed.filter(function (o) {
      return o.status === "divergence" ? j === n : (o.step === j && (o.status === "matched" || o.status === "omitted"));
    });
    if (!here.length) return;
    var obs = el("g", {"class": "obsmark", "data-observed": here.map(function (o) { return o.seq; }).join(" ")});
    obs.appendChild(el("title", {}, here.map(function (o) { return "#" + o.seq + " " + o.text + " (" + o.status + ")"; }).join("\n")));
    var div = here.some(function (o) { return o.status === "divergence"; });
    var matched = here.some(function (o) { return o.status === "matched"; });
    if (div) { obs.setAttribute("data-first-unmatched", ""); obs.appendChild(el("text", {x: x - 6, y: yy + 6, fill: "#d00", "font-size": 18, "font-weight": "bold"}, "\u2715")); }
    else if (matched) obs.appendChild(el("polygon", {points: x + "," + (yy - 6) + " " + (x + 6) + "," + yy + " " + x + "," + (yy + 6) + " " + (x - 6) + "," + yy, fill: "#1b6e9e"}));
    else obs.appendChild(el("circle", {cx: x, cy: yy, r: 4, fill: "none", stroke: "#999"}));
    g.appendChild(obs);
  }
  function markLaneCursor() {
    var cols = document.querySelectorAll("#lanes .col");
    for (var i = 0; i < cols.length; i++) {
      var c = cols[i];
      if (+c.getAttribute("data-step") === cur) c.classList.add("cur"); else c.classList.remove("cur");
    }
    var box = document.getElementById("lanes");
    var c0 = document.querySelector('#lanes .col[data-step="' + cur + '"] rect.bg');
    if (box && c0) {
      var x = +c0.getAttribute("x");
      if (x < box.scrollLeft + D.left || x > box.scrollLeft + box.clientWidth - 40) box.scrollLeft = Math.max(0, x - box.clientWidth / 2);
    }
  }

  // -- step list: folding and filtering --
  function applyList() {
    rows.forEach(function (r, i) {
      var f = r.getAttribute("data-fold");
      var hide = f !== null && collapse && !opened[f] && i !== cur;
      r.classList.toggle("hide", hide);
      var lanes = (r.getAttribute("data-lanes") || "").split(" ").filter(function (x) { return x !== ""; });
      var shown = lanes.length === 0 || lanes.some(function (l) { return !hidden[l]; });
      r.classList.toggle("filtered", !shown);
    });
    var folds = list ? list.querySelectorAll("li.fold") : [];
    for (var k = 0; k < folds.length; k++) {
      var f = folds[k].getAttribute("data-fold");
      folds[k].classList.toggle("hide", !collapse || !!opened[f]);
    }
  }

  // -- state panel --
  var S = D.state;
  // the state shown at cursor i is the one after step i; at the end of the run, after the last step
  // (or, when the file has no step, the state it starts from)
  function stateLabel(i) {
    if (i < n) return "after " + D.unit + " " + i;
    return n ? "at the end of the run (after " + D.unit + " " + (n - 1) + ")" : D.zero;
  }
  function stateAt(i) { return S.values[Math.min(i + 1, S.values.length - 1)]; }
  function renderState() {
    var box = document.getElementById("state");
    if (!box || !S) return;
    var now = stateAt(cur);
    var before = (cur < n) ? S.values[cur] : now;
    var tbl = h("table"), lastSec = null;
    for (var k = 0; k < S.keys.length; k++) {
      var key = S.keys[k], v = now[k], b = before[k];
      if (v === null && b === null) continue;
      var parts = key.split(" \u203a ");
      var sec = parts.length > 1 ? parts[0] : null;  // a top-level field is its own row, without a section
      if (sec !== null && sec !== lastSec) {
        var sr = h("tr", "sec"); var sd = h("td", "", sec.replace("_", " ")); sd.colSpan = 2; sr.appendChild(sd); tbl.appendChild(sr);
      }
      lastSec = sec;
      var tr = h("tr");
      tr.setAttribute("data-key", key);
      var refs = S.refs[key] || [];
      if (refs.some(function (r) { return concerns[r]; })) tr.setAttribute("data-violation", "");
      if (refs.length) tr.setAttribute("data-ref", refs.join(" "));
      if (parts[parts.length - 1] === "route" && v !== null && b === v) {  // a channel's route: its group header
        tr.className = "grp"; var tg = h("td", "", parts.slice(1, -1).join(" \u203a ") + ": " + v); tg.colSpan = 2;
        tr.appendChild(tg); tbl.appendChild(tr); continue;
      }
      if (onlyChanged && b === v && !tr.hasAttribute("data-violation")) continue;
      var td1 = h("td", "k", parts.length > 1 ? parts.slice(1).join(" \u203a ") : key), td2 = h("td", "v");
      if (v === null) { tr.className = "removed"; td2.textContent = b; }
      else {
        td2.textContent = v;
        if (b !== v) {
          tr.className = "changed";
          if (b !== null) td2.appendChild(h("span", "was", b));
        }
      }
      tr.appendChild(td1); tr.appendChild(td2); tbl.appendChild(tr);
    }
    box.textContent = ""; box.appendChild(tbl);
    var stn = document.getElementById("stn"); if (stn) stn.textContent = stateLabel(cur);
    // the graph: elements in flight, blocked channels, the step's channel and subtask
    var ki = {}; S.keys.forEach(function (key, idx) { ki[key] = idx; });
    var chn = document.querySelectorAll("#graph .chn");
    for (var c = 0; c < chn.length; c++) {
      var id = chn[c].getAttribute("data-ch");
      var fl = now[ki["channels \u203a ch" + id + " \u203a in_flight"]];
      var cnt = (!fl || fl === "-") ? 0 : fl.split(", ").length;
      chn[c].textContent = cnt ? " \u00b7" + cnt : "";
      var g = chn[c].parentNode.parentNode;
      g.classList.toggle("blocked", now[ki["channels \u203a ch" + id + " \u203a blocked"]] === "yes");
      g.classList.toggle("active", cur < n && steps[cur].k === "Deliver" && steps[cur].a === "Deliver(channel=" + id + ")");
    }
    var tasks = document.querySelectorAll("#graph .gtask");
    for (var t = 0; t < tasks.length; t++) {
      var tid = +tasks[t].getAttribute("data-task");
      var m = cur < n ? steps[cur].m : {};
      tasks[t].classList.toggle("active", !!m && m.lane === tid);
      var name = D.lanes[tid].name;
      var st = now[ki["tasks \u203a " + name + " \u203a status"]];
      tasks[t].classList.toggle("failed", st !== undefined && st !== null && st !== "RUNNING" && st !== "FINISHED");
    }
  }

  function renderCurrent() {
    var box = document.getElementById("cur"), alts = document.getElementById("alts");
    if (box) {
      box.textContent = "";
      if (cur < n) {
        var s = steps[cur];
        box.appendChild(h("b", "", "step " + cur + ": "));
        box.appendChild(h("code", "", s.a));
        box.appendChild(h("div", "", s.d));
        if (s.dr) box.appendChild(h("div", "drn", "chosen by the drain policy (after the file's actions)"));
        if (s.c.length) box.appendChild(h("div", "done", "\u2605 checkpoint " + s.c.join(", ") + " completed"));
      } else {
        box.appendChild(h("b", "", D.endText || "end of the run: the end-of-run invariants are judged"));
      }
      if (D.vstep === cur) box.appendChild(h("div", "vtag", "the violation is found here"));
    }
    if (alts) {
      alts.textContent = "";
      var a = cur < n ? steps[cur].alt : [];
      if (!a.length) alts.appendChild(h("li", "", cur < n ? "none: this was the only enabled action" : "-"));
      a.forEach(function (x) {
        var li = h("li"); li.appendChild(h("code", "", x[0])); li.appendChild(document.createTextNode(" \u2014 " + x[1])); alts.appendChild(li);
      });
    }
  }

  function go(i, fromHash) {
    if (!(i >= 0)) i = 0;
    i = Math.max(0, Math.min(last, Math.floor(i)));
    var prev = rows[cur];
    cur = i;
    if (prev) prev.removeAttribute("aria-current");
    var r = rows[cur];
    if (r) {
      var f = r.getAttribute("data-fold");
      r.setAttribute("aria-current", "step");
    }
    if (slider) slider.value = String(cur);
    if (posEl) posEl.textContent = (cur < n ? D.unit + " " + cur + " of " + (n - 1)
                                    : "end of the run (" + (n ? "after " + D.unit + " " + (n - 1) : D.zero) + ")") +
      (D.vstep === cur ? " \u2014 VIOLATION" : "");
    applyList();
    var layout = JSON.stringify([hidden, collapse, opened, r ? r.getAttribute("data-fold") : null]);
    if (layout !== lastLayout) { lastLayout = layout; drawLanes(); } else markLaneCursor();
    renderState();
    renderCurrent();
    if (r && list) {
      var top = r.offsetTop - list.offsetTop;
      if (top < list.scrollTop || top > list.scrollTop + list.clientHeight - 24) list.scrollTop = Math.max(0, top - list.clientHeight / 3);
    }
    if (!fromHash && window.history && window.history.replaceState) {
      try { window.history.replaceState(null, "", "#step=" + cur); } catch (e) { /* a file:// page in a sandbox */ }
    }
  }

  function fromHash() {
    var m = /step=(\d+)/.exec(window.location.hash || "");
    return m ? +m[1] : null;
  }

  document.addEventListener("keydown", function (ev) {
    var t = ev.target && ev.target.tagName;
    if (t === "INPUT" && ev.target.type !== "range" && ev.target.type !== "checkbox") return;
    if (ev.key === "ArrowRight") { go(cur + 1); ev.preventDefault(); }
    else if (ev.key === "ArrowLeft") { go(cur - 1); ev.preventDefault(); }
    else if (ev.key === "Home") { go(0); ev.preventDefault(); }
    else if (ev.key === "End") { go(last); ev.preventDefault(); }
  });
  function on(id, evt, fn) { var e = document.getElementById(id); if (e) e.addEventListener(evt, fn); }
  on("first", "click", function () { go(0); });
  on("prev", "click", function () { go(cur - 1); });
  on("next", "click", function () { go(cur + 1); });
  on("last", "click", function () { go(last); });
  on("goviol", "click", function () { go(D.vstep); });
  on("slider", "input", function () { go(+slider.value); });
  on("collapse", "change", function (ev) { collapse = ev.target.checked; opened = {}; go(cur); });
  on("onlychanged", "change", function (ev) { onlyChanged = ev.target.checked; renderState(); });
  function setFilter(all) {
    var boxes = document.querySelectorAll("input.lanef");
    for (var i = 0; i < boxes.length; i++) { boxes[i].checked = all; hidden[boxes[i].value] = !all; }
    go(cur);
  }
  on("fall", "click", function () { setFilter(true); });
  on("fnone", "click", function () { setFilter(false); });
  var lf = document.querySelectorAll("input.lanef");
  for (var q = 0; q < lf.length; q++) {
    lf[q].addEventListener("change", function (ev) { hidden[ev.target.value] = !ev.target.checked; go(cur); });
  }
  var olist = document.getElementById("observed");
  if (olist) olist.addEventListener("click", function (ev) {
    var li = ev.target.closest ? ev.target.closest("li[data-observed]") : null;
    if (!li) return;
    if (li.hasAttribute("data-at-step")) go(+li.getAttribute("data-at-step"));
    else if (li.hasAttribute("data-first-unmatched")) go(last);
  });
  if (list) list.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest("button.foldbtn") : null;
    if (b) { opened[b.getAttribute("data-fold")] = true; go(cur); return; }
    var li = ev.target.closest ? ev.target.closest("li[data-step]") : null;
    if (li) go(+li.getAttribute("data-step"));
  });
  window.addEventListener("hashchange", function () { var s = fromHash(); if (s !== null && s !== cur) go(s, true); });
  var start = fromHash();
  go(start === null ? 0 : start, start === null);
})();
"""
