"""Hypothesis strategies for job specs (StreamGraphs).

``stream_graphs()`` draws small *valid* StreamGraphs that cover every partitioner, both
exchange modes, every chaining strategy, chainable and non-chainable forward edges
(parallelism change is impossible on forward, so non-chainable forward edges come from
NEVER/HEAD strategies, slot sharing group changes, blocking exchanges and unions),
unions (several inputs), named and default slot sharing groups (including inputs that
disagree and fall back to ``"default"``), co-location groups, configured and default max
parallelism and the graph-wide switches. Operators are drawn in topological order, so
the graph is a DAG by construction; shrinking goes towards fewer operators, parallelism
1 and forward edges.

``invalid_stream_graphs()`` takes a valid graph and breaks exactly one rule; it returns
``(graph, rule)`` where ``rule`` names the broken rule (see docs/job-specs.md).
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from model.streamgraph import (
    AGGREGATES,
    CHAINING_STRATEGIES,
    SINK_KINDS,
    EdgeSpec,
    OperatorSpec,
    StreamGraph,
)
from model.jobgraph import build_job_graph

_NON_FORWARD = ("hash", "rebalance", "rescale", "broadcast")


@st.composite
def stream_graphs(
    draw,
    *,
    max_operators: int = 7,
    max_parallelism: int = 4,
    max_sources: int = 2,
    allow_co_location: bool = True,
    sink_kinds: tuple = SINK_KINDS,
) -> StreamGraph:
    n = draw(st.integers(1, max_operators))
    ssg_names = st.sampled_from([None, None, None, "default", "a", "b"])
    operators: list[OperatorSpec] = []
    edges: list[EdgeSpec] = []
    sinks: set[str] = set()
    n_sources = 0
    for i in range(n):
        name = f"op{i}"
        candidates = [op for op in operators if op.name not in sinks]
        if not candidates or (n_sources < max_sources and i > 0 and draw(st.integers(0, 5)) == 0):
            kind = "source"
        else:
            kind = draw(st.sampled_from(["map", "filter", "map", "keyed_aggregate", "window", "sink"]))
        chosen: list[OperatorSpec] = []
        if kind != "source":
            k = draw(st.integers(1, min(2, len(candidates))))
            chosen = draw(st.lists(st.sampled_from(candidates), min_size=k, max_size=k, unique_by=lambda o: o.name))
        if chosen and draw(st.integers(0, 2)) > 0:
            p = chosen[0].parallelism  # favour equal parallelism, so forward edges and chains occur
        else:
            p = draw(st.integers(1, max_parallelism))
        maxp = draw(st.one_of(st.none(), st.none(), st.sampled_from([p, max_parallelism, 128, 256])))
        strategy = draw(st.one_of(st.none(), st.none(), st.sampled_from(CHAINING_STRATEGIES)))
        params: dict = {}
        if kind == "source":
            n_sources += 1
            params["watermark_out_of_orderness"] = draw(st.integers(0, 3))
        elif kind == "map":
            params["function"] = draw(st.sampled_from(["identity", "add:1", "double", "mod:3"]))
        elif kind == "filter":
            params["function"] = draw(st.sampled_from(["all", "even_value", "value_ge:0"]))
        elif kind == "keyed_aggregate":
            params["aggregate"] = draw(st.sampled_from(AGGREGATES))
        elif kind == "window":
            params["aggregate"] = draw(st.sampled_from(AGGREGATES))
            size = draw(st.integers(1, 10))
            params["window_size"] = size
            if draw(st.booleans()):
                slide = draw(st.integers(1, 10))
                params["window_slide"] = slide
                params["window_offset"] = draw(st.integers(-(slide - 1), slide - 1))
            else:
                params["window_offset"] = draw(st.integers(-(size - 1), size - 1))
            params["allowed_lateness"] = draw(st.integers(0, 3))
        else:
            params["sink_kind"] = draw(st.sampled_from(sink_kinds))
            sinks.add(name)
        op = OperatorSpec(
            name=name, kind=kind, parallelism=p, max_parallelism=maxp,
            slot_sharing_group=draw(ssg_names), chaining_strategy=strategy, **params,
        )
        operators.append(op)
        for up in chosen:
            if kind in ("keyed_aggregate", "window"):
                part = "hash"
            elif up.parallelism == p:
                part = draw(st.sampled_from(("forward",) * 4 + _NON_FORWARD))
            else:
                part = draw(st.sampled_from(_NON_FORWARD))
            mode = draw(st.sampled_from(["pipelined", "pipelined", "pipelined", "blocking"]))
            edges.append(EdgeSpec(source=up.name, target=name, partitioner=part, exchange_mode=mode))
    g = StreamGraph(
        name="generated",
        operators=tuple(operators),
        edges=tuple(edges),
        chaining_enabled=draw(st.sampled_from([True, True, True, False])),
        all_vertices_in_same_slot_sharing_group_by_default=draw(st.sampled_from([True, True, False])),
        chain_operators_with_different_max_parallelism=draw(st.sampled_from([True, True, False])),
    )
    if allow_co_location and len(operators) > 1 and draw(st.booleans()):
        # a co-location group inside one JobGraph-level slot sharing group
        jg = build_job_graph(g)
        ssg = {op.name: jg.vertices[jg.vertex_of_operator[op.name]].slot_sharing_group for op in operators}
        group = draw(st.sampled_from(sorted(set(ssg.values()))))
        members = [op.name for op in operators if ssg[op.name] == group]
        chosen = draw(st.lists(st.sampled_from(members), min_size=1, max_size=len(members), unique=True))
        ops = tuple(
            attrs.evolve(op, co_location_group="cl") if op.name in chosen else op for op in operators
        )
        g = attrs.evolve(g, operators=ops)
    return g


@st.composite
def invalid_stream_graphs(draw) -> tuple[StreamGraph, str]:
    """A graph that breaks exactly one named rule."""
    g = draw(stream_graphs(max_operators=5, allow_co_location=False))
    ops = list(g.operators)
    rule = draw(st.sampled_from([
        "parallelism", "max_parallelism_bound", "parallelism_above_max", "unknown_kind",
        "duplicate_name", "unknown_chaining_strategy", "dangling_edge", "no_operators",
    ]))
    i = draw(st.integers(0, len(ops) - 1))
    op = ops[i]
    if rule == "parallelism":
        ops[i] = attrs.evolve(op, parallelism=draw(st.integers(-3, 0)))
    elif rule == "max_parallelism_bound":
        ops[i] = attrs.evolve(op, max_parallelism=draw(st.sampled_from([0, -1, 32769, 1 << 16])))
    elif rule == "parallelism_above_max":
        ops[i] = attrs.evolve(op, max_parallelism=op.parallelism, parallelism=op.parallelism + 1)
    elif rule == "unknown_kind":
        ops[i] = attrs.evolve(op, kind="flatmap")
    elif rule == "duplicate_name":
        ops.append(attrs.evolve(ops[i]))
    elif rule == "unknown_chaining_strategy":
        ops[i] = attrs.evolve(op, chaining_strategy="SOMETIMES")
    elif rule == "dangling_edge":
        return attrs.evolve(g, edges=g.edges + (EdgeSpec(source=op.name, target="nowhere"),)), rule
    elif rule == "no_operators":
        return attrs.evolve(g, operators=(), edges=()), rule
    return attrs.evolve(g, operators=tuple(ops)), rule
