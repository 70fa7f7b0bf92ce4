"""An independent oracle: a job's expected output computed from its input records by a short
declarative spec, without the model's operators.

The exactly-once judge compares a run with the model's own failure-free run
(``model.reference``), so a bug in the semantics both share -- which window an element
belongs to, which records count as late, how an aggregate adds up -- changes the expected
and the actual output alike. This module states those semantics once more, as formulas over
the records, and ``reference_matches_declarative_spec`` compares the model's reference with
them on every run (at its initial state: the reference is a function of the scenario).

The spec, operator by operator (records are ``(key, value, timestamp)``):

* source: its splits' records; map / filter: the named function (``docs/job-specs.md``)
  applied to ``(key, value)``, the timestamp kept;
* keyed_aggregate (``keyBy().sum()/count`` = ``StreamGroupedReduceOperator``): per key, one
  output per input, the running count or sum, with the input's timestamp;
* window: Flink's assigners -- tumbling: the one window starting at
  ``ts - (ts - offset) mod size``; sliding: the windows starting at
  ``last = ts - (ts - offset) mod slide``, ``last - slide``, ... while the start is
  ``> ts - size`` (``TimeWindow.getWindowStartWithOffset``, mathematical ``mod``) -- each
  window ``[start, start + size)`` with ``maxTimestamp = start + size - 1``;
  lateness by the watermark: an element is dropped for a window when
  ``maxTimestamp + allowed_lateness <= W``, ``W`` the watermark its operator had when the
  element arrived; a window fires once when the watermark passes ``maxTimestamp`` (with the
  elements that arrived before), then once more per element that arrives after that
  (``EventTimeTrigger`` fires on element when ``maxTimestamp <= W``); a result is
  ``(key, count or sum, maxTimestamp)``;
* sink: what reaches it.

The watermark each record sees is an argument (:func:`expected_output`'s ``watermark_at``).
The reference's schedule reads every record before any source emits a periodic watermark
(records and deliveries come first in ``model.cluster.drain_choice``), so there every
element arrives at ``W = Long.MIN_VALUE``: no record is late and every window fires once,
at the end of the input.

Covered jobs: no broadcast edge (whose reference keeps its parallelism), and no keyed
aggregate at or behind a union (an operator with several inputs: its output is its inputs'
records together, and a rolling aggregate's results would depend on how they interleave).
:func:`expected_output` returns None for
others; the invariant then has nothing to compare. The records are compared as the
exactly-once judge compares them (``model.reference.comparison_mode``: a rolling aggregate's
outputs by key and value, or by count per key).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from model.reference import comparison_mode, sink_output_by_operator
from spec.invariant import Violation, invariant

LONG_MIN = -(1 << 63)


# -- the named functions, stated again ---------------------------------------------------------

def _arg(name: str) -> int:
    return int(name.split(":", 1)[1])


def map_spec(name: str | None) -> Callable[[object, int], tuple]:
    name = name or "identity"
    table = {"identity": lambda k, v: (k, v), "negate": lambda k, v: (k, -v), "double": lambda k, v: (k, v + v)}
    if name in table:
        return table[name]
    n = _arg(name)
    if name.startswith("add:"):
        return lambda k, v: (k, v + n)
    if name.startswith("mod:"):
        return lambda k, v: (k, v - n * (v // n))
    return lambda k, v: (v - n * (v // n), v)  # rekey_mod:N


def filter_spec(name: str | None) -> Callable[[object, int], bool]:
    name = name or "all"
    table = {"all": lambda k, v: True, "none": lambda k, v: False, "even_value": lambda k, v: v % 2 == 0,
             "odd_value": lambda k, v: v % 2 == 1}
    if name in table:
        return table[name]
    n = _arg(name)
    return lambda k, v: v >= n  # value_ge:N


# -- windows -----------------------------------------------------------------------------------

def window_starts(ts: int, size: int, slide: int | None, offset: int) -> list[int]:
    """The starts of the windows ``ts`` belongs to (Flink's assigners, mathematical mod)."""
    step = size if slide is None else slide
    last = ts - (ts - offset) % step
    return list(range(last, ts - size, -step))


def window_results(records: list, size: int, slide: int | None, offset: int, lateness: int, aggregate: str,
                   watermarks: list) -> list:
    """The results of an event-time window operator over ``records`` in arrival order, the
    ``i``-th arriving when the operator's watermark was ``watermarks[i]``."""
    on_time: dict = {}   # (key, start) -> values that arrived before the window fired
    after: dict = {}     # (key, start) -> values that arrived after it fired, in order
    for (k, v, ts), w in zip(records, watermarks):
        for start in window_starts(ts, size, slide, offset):
            max_ts = start + size - 1
            if max_ts + lateness <= w:
                continue  # the window is late for this element: dropped
            (after if max_ts <= w else on_time).setdefault((k, start), []).append(v)

    def agg(values):
        return len(values) if aggregate == "count" else sum(values)

    out = []
    for (k, start) in sorted(set(on_time) | set(after), key=repr):
        values = list(on_time.get((k, start), ()))
        if values:
            out.append((k, agg(values), start + size - 1))
        for v in after.get((k, start), ()):
            values.append(v)
            out.append((k, agg(values), start + size - 1))
    return out


def rolling(records: list, aggregate: str) -> list:
    acc: dict = {}
    out = []
    for k, v, ts in records:
        acc[k] = acc.get(k, 0) + (1 if aggregate == "count" else v)
        out.append((k, acc[k], ts))
    return out


# -- the job -----------------------------------------------------------------------------------

def inputs_of(graph) -> dict:
    """``{operator: [its input operators, in edge declaration order]}``."""
    out: dict = {}
    for e in graph.edges:
        out.setdefault(e.target, []).append(e.source)
    return out


def covered(graph) -> bool:
    """Whether the spec states this job's output: no broadcast edge, and no keyed aggregate at
    or behind a union (an operator with several inputs), whose rolling results would depend on
    the order in which the union's inputs interleave. A union's output is its inputs' records
    together (every other operator's results do not depend on their order)."""
    if any(e.partitioner == "broadcast" for e in graph.edges):
        return False
    ins = inputs_of(graph)
    ops = {o.name: o for o in graph.operators}
    behind_union = set()
    for name in graph.topological_order():
        if len(ins.get(name, ())) > 1 or any(i in behind_union for i in ins.get(name, ())):
            behind_union.add(name)
            if ops[name].kind == "keyed_aggregate":
                return False
    return True


def operator_outputs(graph, job_input, watermark_at: Callable[[str, int], int] | None = None) -> dict | None:
    """Every operator's output records (``{operator: [records]}``), or None if the job is not
    covered. ``watermark_at(operator, i)`` is the watermark window operator ``operator`` had
    when its ``i``-th record arrived (default: Long.MIN_VALUE, the reference's schedule)."""
    if not covered(graph):
        return None
    ops = {o.name: o for o in graph.operators}
    ins = inputs_of(graph)
    out: dict = {}
    for name in graph.topological_order():
        o = ops[name]
        if o.kind == "source":
            out[name] = [tuple(r) for split in job_input.splits.get(name, ()) for r in split]
            continue
        recs = [r for i in ins[name] for r in out[i]]
        if o.kind == "map":
            f = map_spec(o.function)
            out[name] = [(*f(k, v), ts) for k, v, ts in recs]
        elif o.kind == "filter":
            f = filter_spec(o.function)
            out[name] = [(k, v, ts) for k, v, ts in recs if f(k, v)]
        elif o.kind == "keyed_aggregate":
            out[name] = rolling(recs, o.aggregate)
        elif o.kind == "window":
            wms = [LONG_MIN if watermark_at is None else watermark_at(name, i) for i in range(len(recs))]
            out[name] = window_results(recs, o.window_size, o.window_slide, o.window_offset, o.allowed_lateness,
                                       o.aggregate, wms)
        else:  # sink
            out[name] = recs
    return out


def expected_output(graph, job_input, watermark_at: Callable[[str, int], int] | None = None) -> dict | None:
    """``{sink: [records]}`` the job must produce from ``job_input`` (see
    :func:`operator_outputs`), or None if the job is not covered."""
    out = operator_outputs(graph, job_input, watermark_at)
    if out is None:
        return None
    return {o.name: out[o.name] for o in graph.operators if o.kind == "sink"}


def _canon(records, mode) -> Counter:
    if mode == "rolling":
        return Counter(k for k, _v, _ts in records)
    if mode == "rolling_count":
        return Counter((k, v) for k, v, _ts in records)
    return Counter(tuple(r) for r in records)


def disagreement(graph, reference: dict, declared: dict | None) -> dict | None:
    """The first sink whose reference output differs from the declared one:
    ``{"sink", "missing", "extra"}`` (records, compared as the exactly-once judge does), or None."""
    if declared is None:
        return None
    for sink in sorted(declared):
        mode = comparison_mode(graph, sink)
        want, got = _canon(declared[sink], mode), _canon(reference.get(sink, ()), mode)
        if want != got:
            return {"sink": sink, "mode": mode, "missing": sorted(map(repr, (want - got).elements()))[:5],
                    "extra": sorted(map(repr, (got - want).elements()))[:5]}
    return None


_CACHE: dict = {}


def _judged(graph, job_input, reference: dict) -> dict | None:
    key = (repr(graph), repr(job_input), repr(reference))
    if key not in _CACHE:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[key] = disagreement(graph, reference, expected_output(graph, job_input))
    return _CACHE[key]


@invariant(
    "reference_matches_declarative_spec",
    kind="always",
    concept="window assignment, lateness and aggregates (WindowOperator, TimeWindow, StreamGroupedReduceOperator)",
    statement="The model's failure-free reference output equals the output a declarative spec computes from "
    "the input records (Flink's window formulas, lateness by the watermark, the aggregates).",
)
def reference_matches_declarative_spec(run) -> Violation | None:
    if run.cluster.now:
        return None  # the reference is a function of the scenario: judged once, at the initial state
    graph = run.scenario.graph
    d = _judged(graph, run.scenario.job_input, run.expected.output)
    if d is None:
        return None
    return Violation(
        invariant="reference_matches_declarative_spec",
        expected={"sink": d["sink"], "records": d["missing"]},
        actual={"sink": d["sink"], "records": d["extra"]},
        message=(f"sink '{d['sink']}': the model's failure-free reference disagrees with the declarative spec "
                 f"of the job ({d['mode']}): the spec expects {', '.join(d['missing']) or 'nothing more'}; the "
                 f"reference has {', '.join(d['extra']) or 'nothing more'}"),
    )


# -- the event-time judge ----------------------------------------------------------------------
#
# With an idle source (or records later than their source's watermark bound) the watermark
# may pass a record before it reaches its window: whether it is dropped as late depends on
# timing, and the failure-free reference is no oracle. The judge below needs none: a record
# is dropped only if it was late when it arrived (``late_drop_justified``), and every window
# result counts every other record of its window exactly once
# (``window_results_exactly_once``). It covers jobs whose every sink is fed directly by an
# event-time window, tumbling or sliding, with append, two-phase-commit or upsert sinks (each
# sink with that one input; an upsert sink judged through its changelog, every result it
# wrote), and whose windows read the sources through maps, filters and unions only. A record all of whose windows are late is dropped, and the model logs it with the
# operator's watermark at arrival (``Cluster.late``); a sliding window can skip some windows
# of a record and take it in others (``isWindowLate`` per window, which Flink records
# nowhere): the model logs each such skip with the watermark and the window
# (``Cluster.window_skips``), and the judge excuses the record's absence from that window only.


def _window_inputs_timing_free(graph, name: str, ops: dict, ins: dict) -> bool:
    todo, seen = list(ins.get(name, ())), set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if ops[n].kind in ("window", "keyed_aggregate"):
            return False
        todo.extend(ins.get(n, ()))
    return True


def event_time_judged(graph) -> bool:
    """Whether the event-time judge covers ``graph`` (see above)."""
    if not covered(graph):
        return False
    ops = {o.name: o for o in graph.operators}
    ins = inputs_of(graph)
    sinks = [o for o in graph.operators if o.kind == "sink"]
    if not sinks:
        return False
    for s in sinks:
        if len(ins.get(s.name, ())) != 1:
            return False
        w = ops[ins[s.name][0]]
        if w.kind != "window":
            return False
        if not _window_inputs_timing_free(graph, w.name, ops, ins):
            return False
    return True


def input_disordered(graph, job_input) -> bool:
    """Whether some source split holds a record at or below the watermark its source had
    emitted before it (``max earlier timestamp - watermark_out_of_orderness - 1``): such a
    record may be late wherever it goes."""
    for o in graph.operators:
        if o.kind != "source":
            continue
        for split in job_input.splits.get(o.name, ()):
            top = None
            for _k, _v, ts in split:
                if top is not None and ts <= top - o.watermark_out_of_orderness - 1:
                    return True
                top = ts if top is None else max(top, ts)
    return False


def _window_ops(graph) -> dict:
    return {o.name: o for o in graph.operators if o.kind == "window"}


@invariant(
    "late_drop_justified",
    kind="always",
    concept="WindowOperator.isElementLate / isWindowLate (allowed lateness)",
    statement="A window operator drops a record as late only if its timestamp + allowed lateness is at or "
    "below the watermark the operator had when the record arrived, and leaves a record out of one of its "
    "sliding windows only if that window's maxTimestamp + allowed lateness is.",
)
def late_drop_justified(run) -> Violation | None:
    late = run.cluster.late
    skips = run.cluster.window_skips
    if not late and not skips:
        return None
    windows = _window_ops(run.scenario.graph)
    for name, k, v, ts, w, max_ts in skips:
        op = windows.get(name)
        if op is not None and not max_ts + op.allowed_lateness <= w:
            return Violation(
                invariant="late_drop_justified",
                expected={"operator": name, "record": [k, v, ts], "window_max_timestamp": max_ts,
                          "late_if": f"{max_ts} + {op.allowed_lateness} <= watermark"},
                actual={"operator": name, "record": [k, v, ts], "watermark": w},
                message=(f"window operator '{name}' left record (key={k!r}, value={v!r}, ts={ts}) out of its window "
                         f"ending {max_ts + 1} at watermark {w}, but with an allowed lateness of "
                         f"{op.allowed_lateness} that window was not late ({max_ts} + {op.allowed_lateness} > {w})"),
            )
    for name, k, v, ts, w in late:
        op = windows.get(name)
        if op is not None and not ts + op.allowed_lateness <= w:
            return Violation(
                invariant="late_drop_justified",
                expected={"operator": name, "record": [k, v, ts], "late_if": f"{ts} + {op.allowed_lateness} <= watermark"},
                actual={"operator": name, "record": [k, v, ts], "watermark": w},
                message=(f"window operator '{name}' dropped record (key={k!r}, value={v!r}, ts={ts}) as late at "
                         f"watermark {w}, but with an allowed lateness of {op.allowed_lateness} it was not late "
                         f"({ts} + {op.allowed_lateness} > {w}): its window still accepts it"),
            )
    return None


def _sums(values: list) -> set:
    """Every sum of a sub-multiset of ``values``."""
    out = {0}
    for v in values:
        out |= {s + v for s in out}
    return out


def window_result_problems(graph, job_input, committed: dict, late: list, restores: int = 0,
                           skips: list = ()) -> list[str]:
    """What is wrong with the window results ``committed`` (sink -> records in commit order)
    given the records dropped as late (``late``: operator, key, value, ts, watermark), the
    windows a sliding window skipped as late for a record another of its windows took
    (``skips``: operator, key, value, ts, watermark, window max timestamp) and the
    number of restores of the run. The watermark is not part of a checkpoint, so after a
    restore a record that was late before may open its window again: a window's results then
    come in generations, one per (re)opening. Without allowed lateness each generation fires
    once with the records it holds, so the results of a window add up to its records, each
    counted once, less records dropped as late at some arrival, and a window has at most one
    result per generation (1 + restores). With allowed lateness a window fires again with its
    whole contents for each late record, and a restored window fires again when the watermark
    passes it anew: without a restore its last result counts its records once, less records
    dropped as late; with one, only the bound holds (no count above the window's records).
    An upsert sink's output is its changelog (``ExternalSystem.upsert_log``): every result it
    wrote stays there, also those of a generation a restore went back before, which may have
    fired before all of the window's records arrived (``_upsert_window_problems``)."""
    outs = operator_outputs(graph, job_input)
    ops = {o.name: o for o in graph.operators}
    ins = inputs_of(graph)
    problems = []
    for sink in sorted(o.name for o in graph.operators if o.kind == "sink"):
        (w,) = (ops[i] for i in ins[sink])
        upsert = ops[sink].sink_kind == "upsert"
        size, offset = w.window_size, w.window_offset
        slide = None if w.window_slide in (None, size) else w.window_slide
        elements: dict = {}
        for k, v, ts in (r for i in ins[w.name] for r in outs[i]):
            for start in window_starts(ts, size, slide, offset):
                elements.setdefault((k, start + size - 1), []).append((v, ts))
        dropped = Counter((k, v, ts) for name, k, v, ts, _w in late if name == w.name)
        skipped = Counter((k, v, ts, max_ts) for name, k, v, ts, _w, max_ts in skips if name == w.name)
        results: dict = {}
        for k, v, ts in committed.get(sink, ()):
            results.setdefault((k, ts), []).append(v)
        for key in sorted(set(elements) | set(results), key=repr):
            k, max_ts = key
            recs = elements.get(key, [])
            may_drop = Counter()
            for v, ts in recs:
                if may_drop[(v, ts)] < dropped[(k, v, ts)] + skipped[(k, v, ts, max_ts)]:
                    may_drop[(v, ts)] += 1
            optional = list(may_drop.elements())
            got = results.get(key)
            where = f"sink '{sink}', key {k!r}, window ending {max_ts + 1}"
            if not recs:
                problems.append(f"{where}: a result {got} for a window no record belongs to")
                continue
            if got is None:
                if len(optional) < len(recs):
                    problems.append(f"{where}: no result, but {len(recs) - len(optional)} of its {len(recs)} "
                                    f"record(s) were never dropped as late")
                continue
            total = len(recs) if w.aggregate == "count" else sum(v for v, _ in recs)
            weights = [1 if w.aggregate == "count" else v for v, _ in optional]
            if upsert:
                problems += _upsert_window_problems(where, w, got, recs, total, weights, optional, restores)
                continue
            if w.allowed_lateness > 0:
                if w.aggregate == "count" and max(got) > len(recs):
                    problems.append(f"{where}: a result of {max(got)}, but the window has {len(recs)} record(s)")
                elif not restores and total - got[-1] not in _sums(weights):
                    problems.append(f"{where}: the last result is {got[-1]}, expected {total}"
                                    + (f" less some of the records dropped as late {[v for v, _ in optional]}"
                                       if optional else "") + f" ({w.aggregate} of {len(recs)} record(s))")
                continue
            if len(got) > 1 + restores:
                problems.append(f"{where}: {len(got)} results {got} after {restores} restore(s): a window without "
                                f"allowed lateness fires once per opening")
                continue
            if total - sum(got) not in _sums(weights):
                problems.append(f"{where}: the results {got} add up to {sum(got)}, expected {total}"
                                + (f" less some of the records dropped as late {[v for v, _ in optional]}"
                                   if optional else "")
                                + f" ({w.aggregate} of {len(recs)} record(s), each counted once)")
    return problems


def _upsert_window_problems(where: str, w, got: list, recs: list, total, weights: list, optional: list,
                            restores: int) -> list[str]:
    """What is wrong with the results ``got`` an upsert sink wrote for one window (in write
    order). Nothing is rolled back, and the watermark is in no snapshot: a generation a restore
    went back before may have fired with the records that had arrived (the others were in
    flight, or held back by an idle source, when the job failed), and one that fired and purged
    the window before the checkpoint the job restores leaves the window's later records to the
    next generation, which fires with those only. So a window's results are not held to add up:
    each counts no more than the window's records, and together they count every record not
    dropped as late at least once (values that are not negative)."""
    values = [v for v, _ in recs]
    if w.aggregate == "count" or all(v >= 0 for v in values):
        if max(got) > total:
            return [f"{where}: a result of {max(got)}, more than the {w.aggregate} of the window's "
                    f"{len(recs)} record(s), {total}"]
        if sum(got) + sum(weights) < total:
            return [f"{where}: the results {got} count {sum(got)}, but the window's {len(recs)} record(s) "
                    f"{w.aggregate} to {total}" + (f" and at most {sum(weights)} of it were dropped as late"
                                                  if optional else ", none dropped as late")
                    + ": a record is in none of its results"]
    if w.allowed_lateness == 0 and len(got) > 1 + restores:
        return [f"{where}: {len(got)} results {got} after {restores} restore(s): a window without allowed "
                f"lateness fires once per opening"]
    return []


#: the events of a (re)deployment from a snapshot: a failover's restore, a restart from a
#: savepoint (with or without a new parallelism), a rescale from a checkpoint -- the watermark
#: is part of none of them, so each may reopen a window
RESTORE_EVENTS = frozenset({"restored", "rescaled", "rescaled_from_checkpoint"})


def restores_of(run) -> int:
    """How often the run was (re)deployed from a snapshot (``RESTORE_EVENTS``): the number of
    generations a window's results may come in, less one."""
    return sum(1 for e in run.cluster.events if e[0] in RESTORE_EVENTS)


@invariant(
    "window_results_exactly_once",
    kind="eventually",
    concept="event-time windows under idleness (WindowOperator, EventTimeTrigger, allowed lateness)",
    statement="Once drained, every window result counts each record of its window exactly once, except records "
    "dropped as late on arrival; no reference run is needed.",
    history=lambda run: restores_of(run) if run.expected.event_time_judged else None,
)
def window_results_exactly_once(run) -> Violation | None:
    if not run.expected.event_time_judged:
        return None
    restores = restores_of(run)
    problems = window_result_problems(run.scenario.graph, run.job_input,
                                      sink_output_by_operator(run.cluster), run.cluster.late, restores,
                                      run.cluster.window_skips)
    if not problems:
        return None
    return Violation(invariant="window_results_exactly_once", expected="every record of a window counted once",
                     actual=problems[:5], message="; ".join(problems[:3]))
