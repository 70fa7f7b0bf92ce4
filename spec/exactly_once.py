"""Exactly-once: the sink output of a faulty run equals the failure-free reference.

``exactly_once`` (eventually): once the run is drained, every sink's output equals the
reference output (``model.reference``: the same job at parallelism 1, no failures),
compared per key and window (``model.oracle.diff_outputs``): upsert sinks by their final
table (same keys; each value one the reference wrote for the key), outputs of rolling
aggregates as ``model.reference.comparison_mode`` says.

``committed_output_within_reference`` (always): while running, what the sinks made
visible is always part of the reference output, with no record more often than there.
This is the "prefix-consistent" half of failure transparency (Veresov, Spenger, Carbone and Haller, ECOOP 2024).

``transactions_follow_two_phase_commit`` (always): the external system never sees a call that
breaks the two-phase-commit protocol (a commit of an aborted or never pre-committed
transaction, an abort of a committed one, a second pre-commit).
"""

from __future__ import annotations

from collections import Counter

from model.oracle import DiffEntry, OutputDiff, diff_outputs
from model.reference import comparison_mode, reference_output, sink_output_by_operator
from spec.declarative import (event_time_judged, input_disordered, inputs_of, operator_outputs, restores_of,
                              window_starts)
from spec.invariant import Violation, invariant


class Expected:
    """The reference output of a scenario, with per-sink comparison modes; computed once."""

    def __init__(self, graph, job_input, seams: tuple = ()):
        self.graph = graph
        self.output = reference_output(graph, job_input, seams)
        ops = {o.name: o for o in graph.operators}
        self.modes = {}
        for name in self.output:
            if ops[name].sink_kind == "upsert":
                self.modes[name] = "upsert"
            else:
                self.modes[name] = comparison_mode(graph, name)
        self.remaining = {name: Counter(_canon(recs, self.modes[name])) for name, recs in self.output.items()}
        # what decides whether the reference can judge the window results (``Run.timing_dependent``)
        self.event_time_judged = event_time_judged(graph)
        self.disordered = input_disordered(graph, job_input)
        #: whether a run of this job is judged correctly when a source goes idle: a job without
        #: event-time windows (idleness makes no record late), or one the event-time judge
        #: covers (a record made late by idleness is dropped, and the drop judged by
        #: ``late_drop_justified`` and ``window_results_exactly_once``). On any other windowed
        #: job the reference is no oracle for a run with an idle source, and no engine offers
        #: ``SourceIdle`` there (``properties.engines.offered_kinds``).
        self.idle_judged = idle_judged(graph)
        #: on a job the event-time judge covers: per sink, its window operator and each window's
        #: records (``{(key, maxTimestamp): [values]}``), what a committed result may count
        self.windows = window_records(graph, job_input) if self.event_time_judged else {}


def window_records(graph, job_input) -> dict:
    """``{sink: (window operator, {(key, maxTimestamp): [values of its records]})}`` for a job
    whose every sink is fed directly by an event-time window (``event_time_judged``)."""
    outs = operator_outputs(graph, job_input)
    ops = {o.name: o for o in graph.operators}
    ins = inputs_of(graph)
    out = {}
    for o in graph.operators:
        if o.kind != "sink":
            continue
        (w,) = (ops[i] for i in ins[o.name])
        recs: dict = {}
        for k, v, ts in (r for i in ins[w.name] for r in outs[i]):
            slide = None if w.window_slide in (None, w.window_size) else w.window_slide
            for start in window_starts(ts, w.window_size, slide, w.window_offset):
                recs.setdefault((k, start + w.window_size - 1), []).append(v)
        out[o.name] = (w, recs)
    return out


def idle_judged(graph) -> bool:
    """Whether a run of ``graph`` with an idle source is judged correctly (``Expected.idle_judged``)."""
    return event_time_judged(graph) or not any(o.kind == "window" for o in graph.operators)


def canonical(records, mode: str) -> list:
    """``records`` as the comparison of ``mode`` sees them: a rolling aggregate's output
    without its timestamp (``rolling_count``) or as keys only (``rolling``)."""
    return _canon(records, mode)


def _canon(records, mode):
    if mode == "rolling":
        return [(k, None, None) for (k, _v, _ts) in records]
    if mode == "rolling_count":
        return [(k, v, None) for (k, v, _ts) in records]
    return [tuple(r) for r in records]


def _upsert_diff(expected, changelog) -> OutputDiff:
    """An upsert sink's final table: the same keys as the reference, each holding a value
    the reference wrote for that key. (Which of several writers of a key wins depends on
    arrival order — nondeterministic in Flink too — so any written value is accepted; the
    timestamp is not compared, as a rolling aggregate's result carries the timestamp of
    whichever record arrived last.)"""
    final: dict = {}
    for k, v, ts in changelog:
        final[k] = (v, ts)
    allowed: dict = {}
    for k, v, _ts in expected:
        allowed.setdefault(k, set()).add(v)
    missing = tuple(DiffEntry(key=k, timestamp=None, value=None, expected=1, actual=0)
                    for k in sorted(allowed.keys() - final.keys(), key=repr))
    wrong = tuple(DiffEntry(key=k, timestamp=final[k][1], value=final[k][0], expected=0, actual=1)
                  for k in sorted(final, key=repr) if final[k][0] not in allowed.get(k, ()))
    return OutputDiff(mode="upsert", missing=missing, unexpected=wrong, expected_count=len(allowed),
                      actual_count=len(final))


def output_diff(graph_expected: Expected, cluster) -> dict:
    """Per sink operator, the OutputDiff of the run against the reference (only non-empty diffs)."""
    actual = sink_output_by_operator(cluster)
    out = {}
    for name, expected in graph_expected.output.items():
        mode = graph_expected.modes[name]
        got = actual.get(name, [])
        if mode == "upsert":
            d = _upsert_diff(expected, got)
        else:
            d = diff_outputs(_canon(expected, mode), _canon(got, mode), mode="multiset")
        if not d.ok:
            out[name] = d
    return out


def timing_dependent(run) -> bool:
    """Whether the run's window results may depend on timing (``Run.timing_dependent``: a
    source went idle earlier in the run, on a job the event-time judge covers): then the
    failure-free reference judges no window result. Part of the run's history, so the
    summary these invariants depend on."""
    return bool(getattr(run, "timing_dependent", False))


def _committed_history(run):
    """What of the run's history ``committed_output_within_reference`` reads: whether the
    window results depend on timing and, then, how often the run was restored (the number of
    generations a window's results may come in)."""
    return (True, restores_of(run)) if timing_dependent(run) else False


def _beyond_records(run, start: int) -> Violation | None:
    """On a run whose window results depend on timing, the reference counts records that
    idleness made late and the window dropped (justified by ``late_drop_justified``), so it
    judges no result. What the committed results of a window may count instead: each of its
    records at most once over its results (a window without allowed lateness fires once per
    generation -- the watermark is in no snapshot, so a restore may reopen it -- and a
    two-phase-commit sink commits a generation's result only once its records are behind the
    checkpoint the job restores from); with allowed lateness each result counts the records
    that arrived so far, so none exceeds the window's records. Sums are bounded so only when
    no value is negative. The results that add up exactly are judged once drained
    (``window_results_exactly_once``)."""
    committed = run.cluster.external.committed
    sink_of = run.sink_of_subtask
    windows = run.expected.windows
    restores = None
    for i in range(start, len(committed)):
        k, v, ts, sub = committed[i]
        name = sink_of.get(sub)
        if name not in windows:
            continue
        w, recs = windows[name]
        values = recs.get((k, ts), [])
        got = [r[1] for r in committed[:i + 1] if r[0] == k and r[2] == ts and sink_of.get(r[3]) == name]
        total = len(values) if w.aggregate == "count" else sum(values)
        where = f"sink '{name}' committed (key={k!r}, value={v!r}, ts={ts})"
        problem = None
        if not values:
            problem = f"a result for a window no record belongs to (window ending {ts + 1})"
        elif w.aggregate == "sum" and any(x < 0 for x in values):
            continue
        elif w.allowed_lateness > 0:
            if v > total:
                problem = f"a result above its window's {w.aggregate} of all {len(values)} record(s), {total}"
        else:
            restores = restores_of(run) if restores is None else restores
            if len(got) > 1 + restores:
                problem = (f"a duplicate: {len(got)} results {got} of one window after {restores} restore(s), "
                           f"which fires once per opening")
            elif sum(got) > total:
                problem = (f"a duplicate: the window's results {got} add up to {sum(got)}, more than the "
                           f"{w.aggregate} of its {len(values)} record(s), {total}")
        if problem is not None:
            return Violation(
                invariant="committed_output_within_reference",
                expected={"sink": name, "record": [k, v, ts], "window_records": len(values), "total": total},
                actual={"sink": name, "record": [k, v, ts], "results": got},
                message=f"{where}, {problem}")
    return None


@invariant(
    "exactly_once",
    kind="eventually",
    concept="end-to-end exactly-once (checkpoints + two-phase-commit sinks + restore)",
    statement="A drained run's sink output equals the failure-free parallelism-1 reference, per key and window.",
    history=timing_dependent,
)
def exactly_once(run) -> Violation | None:
    if timing_dependent(run):
        return None  # window results that depend on timing: window_results_exactly_once judges them
    diffs = output_diff(run.expected, run.cluster)
    if not diffs:
        return None
    name, d = sorted(diffs.items())[0]
    return Violation(
        invariant="exactly_once",
        expected={"sink": name, "records": len(run.expected.output[name])},
        actual={"sink": name, "diff": d.to_dict()},
        message=f"sink '{name}' does not match the failure-free reference: {d.describe()}",
    )


@invariant(
    "committed_output_within_reference",
    kind="always",
    concept="end-to-end exactly-once while running (what a sink makes visible: a two-phase-commit sink on "
            "notifyCheckpointComplete, an append sink as it writes)",
    statement="Committed sink output is always part of the reference output, never with more copies of a record; "
              "where records made late by idleness were dropped, a window's committed results count each of its "
              "records at most once.",
    history=_committed_history,
)
def committed_output_within_reference(run) -> Violation | None:
    """Looks at the records the last step committed (``run.committed_before`` on: the engine
    records where the committed output stood before the step): each must not now be committed
    more often than the reference holds it."""
    cluster = run.cluster
    committed = cluster.external.committed
    start = run.committed_before
    if start >= len(committed):
        return None
    if timing_dependent(run):
        return _beyond_records(run, start)
    sink_of = run.sink_of_subtask
    modes = run.expected.modes
    counts: dict = {}  # sink -> Counter of its committed records, canonical (built on demand)
    for i in range(start, len(committed)):
        k, v, ts, sub = committed[i]
        name = sink_of.get(sub)
        if name is None or modes[name] == "upsert":
            continue
        mode = modes[name]
        have = counts.get(name)
        if have is None:
            have = counts[name] = Counter(_canon([r[:3] for r in committed[:start] if sink_of.get(r[3]) == name],
                                                 mode))
        rec = _canon([(k, v, ts)], mode)[0]
        have[rec] += 1
        if have[rec] > run.expected.remaining[name].get(rec, 0):
            seen_before = sum(1 for r in committed[:i] if r[:3] == (k, v, ts))
            what = "a duplicate" if seen_before else "not in the reference at all"
            return Violation(
                invariant="committed_output_within_reference",
                expected={"sink": name, "record": [k, v, ts],
                          "copies": run.expected.output[name].count((k, v, ts)) if mode == "multiset" else None},
                actual={"sink": name, "record": [k, v, ts], "copies": seen_before + 1},
                message=(f"sink '{name}' committed record (key={k!r}, value={v!r}, ts={ts}) which is {what}: "
                         f"the external system now shows it {seen_before + 1} time(s)"),
            )
    return None


#: what each anomaly the external system records means (``model.sinks.ExternalSystem``)
_ANOMALY_TEXT = {
    "commit_aborted": "committed a transaction that was aborted (a real system has lost its records)",
    "abort_committed": "aborted a transaction that was already committed (a real system would refuse or lose it)",
    "commit_open": "committed a transaction that was never pre-committed (its records may be partial)",
    "pre_commit": "pre-committed a transaction that was not open",
}


@invariant(
    "transactions_follow_two_phase_commit",
    kind="always",
    concept="TwoPhaseCommitSinkFunction preCommit / commit / recoverAndCommit / recoverAndAbort",
    statement="The external system only sees the two-phase-commit protocol: a transaction is pre-committed while "
    "open, committed only once pre-committed and never after an abort, and never aborted once committed.",
)
def transactions_follow_two_phase_commit(run) -> Violation | None:
    """Reads ``ExternalSystem.anomalies``: the model's external system accepts every call (as
    no real one would) and records each that breaks the protocol, so the first such call is
    reported at its step (e.g. a restore aborting, as its checkpoint's open transaction, a
    transaction that a later savepoint's notification already committed)."""
    anomalies = run.cluster.external.anomalies
    if not anomalies:
        return None
    what, tid = anomalies[0][0], anomalies[0][1]
    return Violation(
        invariant="transactions_follow_two_phase_commit",
        expected={"transaction": [tid.owner, tid.seq], "protocol": "pre-commit, then commit or abort, once"},
        actual={"transaction": [tid.owner, tid.seq], "anomaly": what},
        message=f"the sink {_ANOMALY_TEXT.get(what, what)}: transaction {tid.owner}/{tid.seq}",
    )


@invariant("run_drains", kind="eventually", concept="the drain policy (liveness)",
           statement="With no further faults, the run can always be driven to its end: while it is not drained, "
                     "some enabled action (finishing the data, a commit, a final checkpoint, expiring what can no "
                     "longer complete, a restart) brings it closer.")
def run_drains(run) -> Violation | None:
    why = getattr(run, "stuck", None)
    if why is None:
        return None
    return Violation(invariant="run_drains", expected="an enabled action that drains the run",
                     actual="none", message=why)
