"""The exactly-once reference: the same logical job on the same input, run sequentially.

Invariant upheld: ``reference_output(graph, job_input)`` is what the job must produce —
every operator at parallelism 1 (except in jobs with a broadcast edge, whose result depends
on the consumers' parallelism: those keep their parallelism), no failures, no checkpoints,
a fixed FIFO schedule, plain append sinks (without failures an append sink shows
everything written). Any
correct run of the job, however parallel and however often it failed, must end with
the same sink output ("failure transparency", Veresov, Spenger, Carbone
and Haller, ECOOP 2024), compared per key and window (``model.oracle.diff_outputs``).

The reference runs the model itself, so a bug in an operator's semantics would show in
both; that is deliberate — the oracle judges the runtime mechanisms (distribution,
checkpoints, failures), and the operators are checked against Flink separately.

Leaves out: order. A rolling ``sum`` whose key arrives over several channels emits
order-dependent intermediate values; ``comparison_mode`` says how such outputs are
compared.
"""

from __future__ import annotations

import attrs

from model.cluster import Cluster, RuntimeConfig, drain
from model.executiongraph import compile_stream_graph
from model.streamgraph import StreamGraph


def reference_stream_graph(graph: StreamGraph) -> StreamGraph:
    """``graph`` with every operator at parallelism 1 and every sink a plain append sink.

    Exception: a broadcast edge delivers every record once per consumer subtask, so its
    result depends on the consumer's parallelism; a job with a broadcast edge keeps its
    parallelisms (the reference is then the same job run sequentially without failures).
    """
    keep = any(e.partitioner == "broadcast" for e in graph.edges)
    ops = []
    for o in graph.operators:
        changes = {} if keep else {"parallelism": 1}
        if o.kind == "sink":
            changes["sink_kind"] = "append"
        ops.append(attrs.evolve(o, **changes))
    return attrs.evolve(graph, operators=tuple(ops))


def sink_output_by_operator(cluster) -> dict[str, list[tuple]]:
    """The committed external output of ``cluster`` grouped by sink operator:
    ``{sink name: [(key, value, timestamp), ...]}`` in commit order (upsert sinks: the
    changelog in write order)."""
    ops = {o.name: o for o in cluster.eg.stream_graph.operators}
    sink_of = cluster.sink_owners
    out: dict[str, list] = {name: [] for name, o in ops.items() if o.kind == "sink"}
    for (k, v, ts, sub) in cluster.external.committed:
        out[sink_of[sub]].append((k, v, ts))
    for (k, v, ts, sub) in cluster.external.upsert_log:
        out[sink_of[sub]].append((k, v, ts))
    return out


def reference_output(graph: StreamGraph, job_input, seams: tuple = ()) -> dict[str, list[tuple]]:
    """Run the reference job to the end and return its sink output per sink operator.
    ``seams``: the seams (``Scenario.seams``) the run under judgement switches on; the reference runs the same model code, so a re-introduced bug in what it
    shares with the run (an operator's semantics) shows in both, as a bug in the model would
    (the seams of checkpoints and failover never act in a failure-free run without checkpoints)."""
    eg = compile_stream_graph(reference_stream_graph(graph))
    cluster = Cluster(eg, job_input, RuntimeConfig(), seed=0, seams=tuple(seams))
    drain(cluster)
    out = sink_output_by_operator(cluster)
    return out


def comparison_mode(graph: StreamGraph, sink: str) -> str:
    """How ``sink``'s output is compared with the reference.

    ``"multiset"``: exact (key, value, timestamp) multisets. A rolling aggregate upstream
    emits, per key, one result per input record, in arrival order, with that record's
    timestamp: ``"rolling_count"`` (a rolling count) compares (key, value) multisets —
    the counts 1..n are order-independent, their timestamps are not; ``"rolling"`` (a
    rolling sum) compares the number of outputs per key.
    """
    mode = "multiset"
    ops = {o.name: o for o in graph.operators}
    preds: dict[str, list[str]] = {}
    for e in graph.edges:
        preds.setdefault(e.target, []).append(e.source)
    seen, todo = set(), [sink]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        o = ops[n]
        if o.kind == "keyed_aggregate":
            if o.aggregate == "sum":
                return "rolling"
            mode = "rolling_count"
        todo.extend(preds.get(n, ()))
    return mode
