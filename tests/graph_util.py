"""Small builders for hand-drawn StreamGraphs in tests (kind-specific defaults filled in)."""

from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph


def op(name, kind, p=1, **kw):
    defaults = {"keyed_aggregate": {"aggregate": "count"}, "window": {"aggregate": "count", "window_size": 10},
                "sink": {"sink_kind": "append"}}.get(kind, {})
    return OperatorSpec(name=name, kind=kind, parallelism=p, **{**defaults, **kw})


def edge(a, b, partitioner="forward", mode="pipelined"):
    return EdgeSpec(source=a, target=b, partitioner=partitioner, exchange_mode=mode)


def graph(ops, edges, **flags):
    return StreamGraph(name="t", operators=tuple(ops), edges=tuple(edges), **flags)
