"""Trace divergences as counterexample files: what real Flink did beside what the model did.

When ``flinkspec validate`` finds a trace ``divergent`` (``properties.tracevalidation``), it
writes one counterexample file per trace (:func:`write_divergence`): the model's run of the
longest matched prefix -- its actions, replayable step by step -- and the trace's events, so
that ``flinkspec replay`` reproduces the divergence and ``flinkspec show`` (text and
``--html``) shows the observed events in a lane of their own beside the model's steps, the
first event the model cannot produce marked.

The file is a counterexample file (``properties.counterexample``) of scenario kind ``trace``
(``properties.scenario_kinds``), one JSON object per line:

1. the header, as every counterexample's (``docs/schemas/counterexample-header.schema.json``),
   with ``engine`` ``trace-validation``, ``invariant`` :data:`DIVERGENCE`, ``variant``
   ``trace:<fault kind>-seed<seed>``, ``expected_verdict`` ``["consistent"]``, and a scenario
   ``{"kind": "trace", "trace": <the trace's header line>, "search": {"states": N}}``: the
   model's scenario is built from the trace's header exactly as ``flinkspec validate`` builds
   it (``tracevalidation.scenario_of``), so nothing of it is stored twice; ``states`` is the
   number of model states the search explored before it was exhausted;
2. one ``action`` line per step of the model's run (``counterexample-action.schema.json``);
3. one ``observed`` line per event of the trace, in the trace's order:
   ``{"type": "observed", "event": <the trace's event line>}``
   (``counterexample-observed.schema.json``; the event is checked against
   ``trace-event.schema.json``);
4. the ``violation`` line (``counterexample-violation.schema.json``): ``step`` = the number of
   actions (the divergence comes after the last of them), ``expected`` =
   ``{"seq", "event"}`` of the first event the model cannot produce, ``actual`` =
   ``{"matched", "events", "model_could"}``.

Replaying (:func:`replay_trace`) re-runs the actions on the trace's scenario -- each one
enabled at its turn, except the user's resubmission of a stopped job with the next phase's
parallelisms (``RestartFromSavepoint``), which is applied as ``flinkspec validate`` applies it
(the user's action, not the model's choice: ``properties.conform._restart_from_savepoint``) --
checks that their observations are the trace's first ones (``tracevalidation.observe`` /
``match``, the same binding of checkpoint ids), and searches the model again with the recorded
number of states: the divergence is reproduced when the search is exhausted at the same event
after the same prefix. The file's name is a hash of the trace and the actions, so validating
the same trace twice writes the same file, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import attrs

from model import MODEL_VERSION
from model import actions as A
from model.cluster import Cluster
from model.errors import FlinkspecError
from model.inputfiles import InputError, check_schema, short
from model.variants import Scenario
from properties import scenario_kinds, validation
from properties.flinktrace import FAULT_KINDS, FORMAT, SCHEMA_DIR, Trace
from properties.safe_io import check_output_dir, write_atomic
from properties.tracevalidation import (DIVERGENT, Verdict, expected_events, match, observe, scenario_of,
                                        validate)
from spec.invariant import Violation

#: the name a divergence file's header and violation line give (not an invariant of the
#: registry: what is broken is the agreement of the model with a recorded run)
DIVERGENCE = "trace_divergence"
#: the engine that writes these files (``properties.validation.ENGINES``)
ENGINE = "trace-validation"
#: a divergence file's variant: ``trace:<fault kind>-seed<seed>``
VARIANT_PREFIX = "trace:"
#: the seconds a replay's search may take (the recorded state count bounds it first)
REPLAY_SECONDS = 3600.0


@attrs.frozen(slots=True)
class TraceScenario:
    """What a divergence file replays on: the trace (its header and events) and what the search
    found: the model states it explored until it was exhausted, the observations matched, the
    first event the model cannot produce (its ``seq``)."""

    header: dict = attrs.field(eq=False)
    events: tuple = attrs.field(eq=False)
    states: int
    matched: int
    first_unmatched: int | None

    def trace(self, path: str = "") -> Trace:
        return Trace(path=path, header=self.header, events=self.events)

    def cluster_scenario(self) -> Scenario:
        return scenario_of(self.trace())

    def to_dict(self) -> dict:
        return {"kind": "trace", "trace": self.header,
                "search": {"states": self.states, "matched": self.matched, "first_unmatched": self.first_unmatched}}


# -- the lane of observed events ------------------------------------------------------------------


@attrs.frozen(slots=True)
class LaneEvent:
    """One event of the trace as the viewer shows it: ``status`` is ``matched`` (the model
    step ``step`` produced it), ``omitted`` (a mapping rule ``rule`` leaves it out; ``step``:
    the last model step before it), ``divergence`` (the first event the model cannot produce)
    or ``unmatched`` (after the matched prefix)."""

    seq: int
    kind: str
    text: str
    status: str
    step: int | None
    rule: str | None = None

    def to_dict(self) -> dict:
        return {"seq": self.seq, "kind": self.kind, "text": self.text, "status": self.status, "step": self.step,
                "rule": self.rule}


def event_text(e: dict) -> str:
    """A trace event in words (its fields, Flink's names)."""
    kind = e["event"]
    rest = {k: v for k, v in e.items() if k not in ("event", "seq")}
    fields = ", ".join(f"{k} {json.dumps(v, sort_keys=True)}" for k, v in sorted(rest.items()))
    return f"{kind}" + (f" ({fields})" if fields else "")


def _is_resubmission(c: Cluster, a) -> bool:
    return type(a) is A.RestartFromSavepoint and c.why_not_enabled(a) is not None \
        and c.job.status == "STOPPED" and c.job.savepoint is not None


def _apply(c: Cluster, a) -> None:
    """One step of the file's run: the model's action, or the user's resubmission."""
    if _is_resubmission(c, a):
        from properties.conform import _restart_from_savepoint  # lazy: conform loads the Flink harness

        _restart_from_savepoint(c, a.parallelism)
        return
    why = c.why_not_enabled(a)
    if why is not None:
        raise ValueError(f"step {len(c.trace)}: {a!r} is not enabled: {why}")
    c.step(a)


def matched_steps(trace: Trace, actions, *, on_step=None) -> tuple[dict, int]:
    """Replay ``actions`` on the trace's scenario and match each step's observations against
    the trace's expected ones in order (the search's rules). Returns ``(seq -> step, matched)``:
    the step that produced each matched expected event, and how many matched before the first
    step whose observations do not (then the replay stops). ``on_step(cluster, action)`` is
    called before each step. ValueError when an action is not enabled at its turn."""
    expected, _ = expected_events(trace)
    c = Cluster.from_scenario(scenario_of(trace))
    pos, binding = 0, {}
    at: dict = {}
    for i, a in enumerate(actions):
        if on_step is not None:
            on_step(c, a)
        before = len(c.events)
        _apply(c, a)
        obs = observe(c, c.events[before:])
        if not obs:
            continue
        nb = match(obs, expected[pos:pos + len(obs)], binding)
        if nb is None:
            return at, -1
        for ex in expected[pos:pos + len(obs)]:
            at.setdefault(ex.seq, i)
        pos, binding = pos + len(obs), nb
    return at, pos


def lane(trace: Trace, actions, first_unmatched_seq: int | None) -> tuple[LaneEvent, ...]:
    """The observed lane: every event of the trace with its status and the model step it is
    shown at (:class:`LaneEvent`). An event is matched when every observation it maps to is
    among those the actions produced."""
    expected, omitted = expected_events(trace)
    at, pos = matched_steps(trace, actions)
    wanted = Counter(ex.seq for ex in expected)
    got = Counter(ex.seq for ex in expected[:max(pos, 0)])
    rule = {}
    for o in omitted:
        rule.setdefault(o.seq, o.rule)
    out = []
    last = None
    for e in trace.events:
        seq = e["seq"]
        if seq == first_unmatched_seq:
            status, step = "divergence", None
        elif seq not in wanted:
            status, step = "omitted", last
        elif got[seq] == wanted[seq]:
            status, step = "matched", at.get(seq)
            last = step if last is None or (step is not None and step > last) else last
        else:
            status, step = "unmatched", None
        out.append(LaneEvent(seq=seq, kind=e["event"], text=event_text(e), status=status, step=step,
                             rule=rule.get(seq) if status == "omitted" else None))
    return tuple(out)


# -- writing --------------------------------------------------------------------------------------


def _dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _prefix_actions(trace: Trace, verdict: Verdict) -> tuple:
    """The model's run of the longest matched prefix: the search's deepest run when it matches
    ``verdict.matched`` events; else (the verdict came before any search: a shared file deleted
    while referenced, a phase's shape) the run the search finds for the trace cut just before
    the first unmatched event."""
    try:
        _, pos = matched_steps(trace, verdict.actions)
    except ValueError:
        pos = -1
    if pos == verdict.matched:
        return tuple(verdict.actions)
    if verdict.first_unmatched is None:
        return tuple(verdict.actions)
    cut = Trace(path=trace.path, header=trace.header,
                events=tuple(e for e in trace.events if e["seq"] < verdict.first_unmatched.seq))
    v = validate(cut, max_states=max(verdict.states, 200_000), max_seconds=REPLAY_SECONDS)
    return tuple(v.actions) if v.verdict == "consistent" else tuple(verdict.actions)


def render(trace: Trace, verdict: Verdict, actions) -> str:
    """The text of the divergence file of ``verdict`` (see the module docstring)."""
    h = trace.header
    fu = verdict.first_unmatched
    header = {"type": "header", "format": validation.FORMAT_VERSION, "model_version": MODEL_VERSION,
              "variant": f"{VARIANT_PREFIX}{h['fault']}-seed{h['seed']}", "expected_verdict": ["consistent"],
              "engine": ENGINE, "seed": h["seed"], "invariant": DIVERGENCE,
              "scenario": TraceScenario(header=h, events=tuple(trace.events), states=verdict.states,
                                        matched=verdict.matched,
                                        first_unmatched=fu.seq if fu is not None else None).to_dict()}
    lines = [_dumps(header)]
    lines += [_dumps({"type": "action", "step": i, "action": repr(a)}) for i, a in enumerate(actions)]
    lines += [_dumps({"type": "observed", "event": e}) for e in trace.events]
    what = f"#{fu.seq} {fu.describe()}" if fu is not None else "the trace's end"
    message = (f"the model cannot produce the observed event {what} after {verdict.matched} of {verdict.total} "
               "observations matched" + (f": {verdict.reason}" if verdict.reason else ""))
    violation = {"type": "violation", "invariant": DIVERGENCE, "step": len(actions),
                 "expected": {"seq": fu.seq if fu is not None else None,
                              "event": fu.describe() if fu is not None else None},
                 "actual": {"matched": verdict.matched, "events": verdict.total,
                            "model_could": list(verdict.model_could)},
                 "message": message}
    lines.append(_dumps(violation))
    return "\n".join(lines) + "\n"


def write_divergence(directory, trace: Trace, verdict: Verdict) -> Path:
    """Write the divergence file of ``verdict`` (a ``divergent`` one) atomically to
    ``directory/trace_divergence/<hash>.ndjson``; returns its path. The name is a hash of the
    trace (header and events) and the model's actions: the same divergence gives the same file."""
    if verdict.verdict != DIVERGENT:
        raise FlinkspecError(f"{trace.path}: only a divergent verdict is written as a counterexample "
                             f"(this one is {verdict.verdict})")
    actions = _prefix_actions(trace, verdict)
    text = render(trace, verdict, actions)
    ident = _dumps([trace.header, list(trace.events), [repr(a) for a in actions]])
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    folder = check_output_dir(Path(directory) / DIVERGENCE, what="counterexample folder")
    path = folder / f"{digest}.ndjson"
    if path.is_file() and path.read_bytes() == text.encode("utf-8"):
        return path
    write_atomic(path, text, what="counterexample")
    return path


# -- reading --------------------------------------------------------------------------------------


_SCHEMAS: dict = {}


def _trace_schema(name: str) -> dict:
    if name not in _SCHEMAS:
        _SCHEMAS[name] = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
    return _SCHEMAS[name]


def header_schema() -> dict:
    """The header line of a divergence file: the counterexample header with its engine and
    invariant fixed and a ``trace`` scenario."""
    base = validation.schema("header")
    props = dict(base["properties"])
    props["engine"] = {"const": ENGINE}
    props["invariant"] = {"const": DIVERGENCE}
    props["variant"] = {"type": "string", "pattern": f"^{VARIANT_PREFIX}", "maxLength": 200}
    props["scenario"] = {"type": "object", "additionalProperties": False, "required": ["kind", "trace", "search"],
                         "properties": {"kind": {"const": "trace"},
                                        "trace": {"$ref": "trace-header.schema.json"},
                                        "search": {"type": "object", "additionalProperties": False,
                                                   "required": ["states", "matched", "first_unmatched"],
                                                   "properties": {
                                                       "states": {"type": "integer", "minimum": 0,
                                                                  "maximum": 100_000_000},
                                                       "matched": {"type": "integer", "minimum": 0,
                                                                   "maximum": 100_000_000},
                                                       "first_unmatched": {"anyOf": [
                                                           {"type": "integer", "minimum": 0,
                                                            "maximum": 100_000_000}, {"type": "null"}]}}}}}
    return {k: v for k, v in base.items() if k != "properties"} | {
        "$id": validation.SCHEMA_ID + "counterexample-trace-header.schema.json",
        "title": "flinkspec counterexample file of a trace divergence: the header line", "properties": props}


def observed_schema() -> dict:
    """An ``observed`` line: one event of the trace (``trace-event.schema.json``)."""
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": validation.SCHEMA_ID + "counterexample-observed.schema.json",
            "title": "flinkspec counterexample file of a trace divergence: an observed line",
            "type": "object", "additionalProperties": False, "required": ["type", "event"],
            "properties": {"type": {"const": "observed"}, "event": {"$ref": "trace-event.schema.json"}}}


def _resolved(schema: dict) -> dict:
    """``schema`` with its references to the trace schemas replaced by their text (the
    validator resolves no files)."""
    refs = {"trace-header.schema.json": _trace_schema("trace-header.schema.json"),
            "trace-event.schema.json": _trace_schema("trace-event.schema.json")}

    def walk(x):
        if isinstance(x, dict):
            if set(x) == {"$ref"} and x["$ref"] in refs:
                return {k: v for k, v in refs[x["$ref"]].items() if k not in ("$id", "$schema")}
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return walk(schema)


def load_trace_lines(source: str, header: dict, objs: list, known_variant: bool):
    """(scenario, actions, violation) of a divergence file's parsed lines, every line checked
    (``model.inputfiles.InputError`` naming the line and the rule)."""
    check_schema(header, _resolved(header_schema()), source, "1")
    th = header["scenario"]["trace"]
    if th.get("format") != FORMAT:
        raise InputError(source, "1: scenario.trace.format", f"must be {FORMAT!r}")
    if th["fault"] not in FAULT_KINDS:
        raise InputError(source, "1: scenario.trace.fault", f"unknown fault kind {short(th['fault'])}")
    body = objs[1:-1]
    n_actions = sum(1 for o in body if o["type"] == "action")
    actions, events = [], []
    obs_schema = _resolved(observed_schema())
    for n, obj in enumerate(body, 2):
        if obj["type"] == "action":
            if events:
                raise InputError(source, f"{n}", "an action line after the observed lines")
            check_schema(obj, validation.schema("action"), source, f"{n}")
            if obj["step"] != n - 2:
                raise InputError(source, f"{n}: step", f"action step {obj['step']} out of order (expected {n - 2})")
            try:
                actions.append(validation.parse_action_text(obj["action"]))
            except ValueError as e:
                raise InputError(source, f"{n}: action", str(e)) from None
        elif obj["type"] == "observed":
            check_schema(obj, obs_schema, source, f"{n}")
            if obj["event"]["seq"] != len(events):
                raise InputError(source, f"{n}: event.seq", f"{obj['event']['seq']}, expected {len(events)} "
                                                           "(the trace's events in order)")
            events.append(obj["event"])
        else:
            raise InputError(source, f"{n}", f"expected an action or observed line, got {short(obj['type'])}")
    if not events:
        raise InputError(source, f"{n_actions + 2}", "no observed line (the trace's events)")
    search = header["scenario"]["search"]
    scenario = TraceScenario(header=th, events=tuple(events), states=search["states"], matched=search["matched"],
                             first_unmatched=search["first_unmatched"])
    if search["first_unmatched"] is not None and search["first_unmatched"] >= len(events):
        raise InputError(source, "1: scenario.search.first_unmatched",
                         f"{search['first_unmatched']} is not an observed event ({len(events)} in the file)")
    try:
        cluster = scenario.cluster_scenario()
    except FlinkspecError as e:
        raise InputError(source, "1: scenario.trace", str(e)) from None
    bounds = validation.id_bounds(_with_phases(cluster, th))
    triggered = 0
    for i, a in enumerate(actions):
        bad = validation.check_action_ids(a, bounds, triggered, cluster)
        if bad:
            raise InputError(source, f"{i + 2}: action", f"{short(a)}: {bad}")
        if isinstance(a, validation.TRIGGERS):
            triggered += 1
    vd = objs[-1]
    check_schema(vd, validation.schema("violation"), source, f"{len(objs)}")
    if vd["invariant"] != DIVERGENCE:
        raise InputError(source, f"{len(objs)}: invariant", f"must be {DIVERGENCE!r}")
    seq = vd["expected"].get("seq") if isinstance(vd["expected"], dict) else None
    if seq != search["first_unmatched"]:
        raise InputError(source, f"{len(objs)}: expected.seq", f"{short(seq)}, but the header's search found the "
                                                               f"first unmatched event {search['first_unmatched']}")
    if vd["step"] != len(actions):
        raise InputError(source, f"{len(objs)}: step", f"{short(vd['step'])}, expected {len(actions)} (the "
                                                       "divergence comes after the last action)")
    return scenario, tuple(actions), Violation.from_dict(vd)


def _with_phases(cluster: Scenario, trace_header: dict) -> Scenario:
    """``cluster`` with every phase's parallelism as a rescale option (for the id bounds only)."""
    options: dict = {}
    for ph in trace_header["phases"]:
        for name, p in ph["parallelism"].items():
            options.setdefault(name, set()).add(p)
    env = attrs.evolve(cluster.environment,
                       rescale_options=tuple((n, tuple(sorted(ps))) for n, ps in options.items()))
    return attrs.evolve(cluster, environment=env)


# -- replaying and explaining ----------------------------------------------------------------------


#: replays already done in this process (``flinkspec show`` replays a file to check it, then
#: explains and draws it): the search is the costly part and its result depends on the file only
_REPLAYED: dict = {}


def replay_trace(scenario: TraceScenario, actions) -> Violation | None:
    """The divergence this file's run gives now (None: none, or another one): the actions'
    observations are the trace's first ones, and the search, given the recorded number of
    states, is exhausted at the same event. ValueError when an action is not enabled."""
    key = _dumps([scenario.to_dict(), list(scenario.events), [repr(a) for a in actions]])
    if key not in _REPLAYED:
        if len(_REPLAYED) >= 8:
            _REPLAYED.clear()
        _REPLAYED[key] = _replay(scenario, actions)
    return _REPLAYED[key]


def _replay(scenario: TraceScenario, actions) -> Violation | None:
    trace = scenario.trace()
    _, pos = matched_steps(trace, actions)
    if pos != scenario.matched:
        return None
    v = validate(trace, max_states=scenario.states + 1, max_seconds=REPLAY_SECONDS)
    if v.verdict != DIVERGENT or v.matched != pos or v.first_unmatched is None \
            or v.first_unmatched.seq != scenario.first_unmatched:
        return None
    fu = v.first_unmatched
    return Violation(invariant=DIVERGENCE, step=len(actions), expected={"seq": fu.seq, "event": fu.describe()},
                     actual={"matched": v.matched, "events": v.total, "model_could": list(v.model_could)},
                     message=f"the model cannot produce the observed event #{fu.seq} {fu.describe()}")


def _reproduced(cx, now: Violation | None) -> bool:
    rec = cx.violation
    return now is not None and now.step == rec.step and now.expected.get("seq") == rec.expected.get("seq")


def explain_trace(cx, all_state: bool = False) -> str:
    """``flinkspec show`` of a divergence file: the trace, the model's steps with the observed
    events each produced beside it, then the observed lane (every event of the trace, the
    first one the model cannot produce marked)."""
    sc, h, rec = cx.scenario, cx.header, cx.violation
    th = sc.header
    trace = sc.trace(cx.path)
    seq = rec.expected.get("seq") if isinstance(rec.expected, dict) else None
    items = lane(trace, cx.actions, seq)
    by_step: dict = {}
    for it in items:
        if it.status == "matched":
            by_step.setdefault(it.step, []).append(it)
    out = [f"trace divergence {cx.path}",
           f"  real Flink {th.get('flink_version')}: fault {th['fault']}, seed {th['seed']}; {th.get('description', '')}",
           f"  model {h.get('model_version')}; the model's run of the longest matched prefix: {len(cx.actions)} steps, "
           f"{rec.actual.get('matched')} of {rec.actual.get('events')} observations matched"]
    out.append("model steps (each with the observed events it produced, <= #seq):")
    c = Cluster.from_scenario(sc.cluster_scenario())
    for i, a in enumerate(cx.actions):
        unit = A.kind_of(a)
        desc = unit.describe(c, a) if unit is not None else ""
        _apply(c, a)
        got = by_step.get(i, ())
        if got or all_state:
            out.append(f"{i:4d}. {a!r:48s} {desc}")
            for it in got:
                out.append(f"        <= #{it.seq} {it.text}")
    quiet = sum(1 for i in range(len(cx.actions)) if i not in by_step)
    if quiet and not all_state:
        out.append(f"      ({quiet} unobservable steps not shown: deliveries, barriers, records; --all-state shows them)")
    out.append("")
    out.append("observed lane (real Flink, the trace's order):")
    for it in items:
        tag = {"matched": f"matched at step {it.step}", "omitted": f"left out by rule {it.rule}",
               "divergence": "<- FIRST EVENT THE MODEL CANNOT PRODUCE", "unmatched": "not reached"}[it.status]
        out.append(f"  #{it.seq:<4d} {it.text:70s} {tag}")
    out.append("")
    out.append(f"DIVERGENCE after step {rec.step}: {rec.message}")
    could = rec.actual.get("model_could") if isinstance(rec.actual, dict) else None
    if could:
        out.append("  the model could instead: " + "; ".join(could[:8]))
    if not _reproduced(cx, replay_trace(sc, cx.actions)):
        out.append("  NOTE: replaying the file now does NOT reproduce this divergence")
    return "\n".join(out)


def timeline_of(cx):
    """The viewer's timeline of the model's run (``properties.timeline``): every step with the
    state after it, replayed as :func:`replay_trace` replays it, without draining (the run is the
    matched prefix, not a run to its end)."""
    from properties.engines import Run  # lazy: the viewer's modules load only for a page
    from properties.timeline import build_timeline  # lazy, as above

    sc = cx.scenario
    cluster = sc.cluster_scenario()

    def run_steps(observe_step):
        run = Run(cluster, check_always=False, track_goals=False)
        for a in cx.actions:
            observe_step(run, a)
            _apply(run.cluster, a)
        return replay_trace(sc, cx.actions), run

    return build_timeline(attrs.evolve(cx, scenario=cluster), replay_with=run_steps)


def render_trace_html(cx) -> str:
    """``flinkspec show --html`` of a divergence file: the model's run on the whole-cluster page
    with the lane of the observed events (``properties.html.render_timeline``)."""
    from properties.html import render_timeline  # lazy: the page's module loads only for a page

    seq = cx.violation.expected.get("seq") if isinstance(cx.violation.expected, dict) else None
    items = lane(cx.scenario.trace(cx.path), cx.actions, seq)
    try:
        tl = timeline_of(cx)
    except (FlinkspecError, ValueError) as e:
        raise FlinkspecError(f"{cx.path}: {e}") from None
    return render_timeline(tl, observed=[it.to_dict() for it in items])


scenario_kinds.register(scenario_kinds.ScenarioKind(
    name="trace", scenario_type=TraceScenario, load_lines=load_trace_lines, to_dict=TraceScenario.to_dict,
    replay=replay_trace, explain=explain_trace, html=render_trace_html))
