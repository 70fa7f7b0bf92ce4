"""Chaining (StreamingJobGraphGenerator.isChainable), JobVertex order, JobEdges, slot sharing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from model import jobgraph
from model.executiongraph import compile_stream_graph
from model.jobgraph import (
    BLOCKING,
    PIPELINED_BOUNDED,
    chain_heads,
    compile_job_graph,
    is_chainable,
    logical_pipelined_regions,
)
from model.streamgraph import load_stream_graph
from properties.jobgraphs import stream_graphs

EXAMPLES = Path(__file__).parent.parent / "examples"


from graph_util import edge, graph, op  # noqa: E402


def chains(g):
    return [v.operators for v in compile_job_graph(g).vertices.values()]


def test_forward_pipeline_is_one_chain():
    """
        src (p=2) ──forward──► map (p=2) ──forward──► out (p=2)
    all chainable: one JobVertex [src -> map -> out], no JobEdge.
    """
    g = graph([op("src", "source", 2), op("map", "map", 2), op("out", "sink", 2)], [edge("src", "map"), edge("map", "out")])
    jg = compile_job_graph(g)
    assert chains(g) == [("src", "map", "out")]
    assert jg.edges == ()
    assert jg.vertex_of_operator == {"src": "src", "map": "src", "out": "src"}
    assert all(is_chainable(g, e) for e in g.edges)


@pytest.mark.parametrize(
    "why,up_kw,down_kw,e,flags",
    [
        ("parallelism change", {"p": 2}, {"p": 3}, edge("a", "b", "rebalance"), {}),
        ("hash partitioner", {}, {}, edge("a", "b", "hash"), {}),
        ("rebalance partitioner", {}, {}, edge("a", "b", "rebalance"), {}),
        ("rescale partitioner", {}, {}, edge("a", "b", "rescale"), {}),
        ("broadcast partitioner", {}, {}, edge("a", "b", "broadcast"), {}),
        ("blocking exchange", {}, {}, edge("a", "b", "forward", "blocking"), {}),
        ("upstream NEVER", {"chaining_strategy": "NEVER"}, {}, edge("a", "b"), {}),
        ("downstream NEVER", {}, {"chaining_strategy": "NEVER"}, edge("a", "b"), {}),
        ("downstream HEAD", {}, {"chaining_strategy": "HEAD"}, edge("a", "b"), {}),
        ("different slot sharing groups", {"slot_sharing_group": "x"}, {"slot_sharing_group": "y"}, edge("a", "b"), {}),
        ("chaining disabled", {}, {}, edge("a", "b"), {"chaining_enabled": False}),
        ("different configured max parallelism when that is not allowed",
         {"max_parallelism": 128}, {"max_parallelism": 256}, edge("a", "b"),
         {"chain_operators_with_different_max_parallelism": False}),
    ],
)
def test_not_chainable(why, up_kw, down_kw, e, flags):
    """
        src ──forward──► a ──e──► b
    a (a map) and b (a map) stay separate JobVertices for the reason in the test id.
    """
    up_p = up_kw.pop("p", 1)
    down_p = down_kw.pop("p", 1)
    g = graph([op("src", "source", up_p), op("a", "map", up_p, **up_kw), op("b", "map", down_p, **down_kw)],
              [edge("src", "a"), e], **flags)
    jg = compile_job_graph(g)
    assert not is_chainable(g, g.edges[1]), why
    assert jg.vertex_of_operator["b"] == "b"
    assert len(jg.edges) >= 1 and jg.edges[-1].source_operator == "a" and jg.edges[-1].target_operator == "b"


@pytest.mark.parametrize(
    "up_kw,down_kw,flags",
    [
        ({"chaining_strategy": "HEAD"}, {}, {}),  # upstream HEAD may still be followed
        ({"chaining_strategy": "HEAD_WITH_SOURCES"}, {}, {}),
        ({}, {"chaining_strategy": "ALWAYS"}, {}),
        ({"max_parallelism": 128}, {"max_parallelism": 256}, {}),  # default: different max parallelism chain
        ({"max_parallelism": 256}, {"max_parallelism": 256}, {"chain_operators_with_different_max_parallelism": False}),
        ({"slot_sharing_group": "x"}, {}, {}),  # b inherits 'x'
    ],
)
def test_chainable(up_kw, down_kw, flags):
    """
        src ──forward──► a ──forward──► b      (a and b chain; same parallelism 2)
    """
    g = graph([op("src", "source", 2), op("a", "map", 2, **up_kw), op("b", "map", 2, **down_kw)],
              [edge("src", "a", "rebalance"), edge("a", "b")], **flags)
    assert is_chainable(g, g.edges[1])
    assert chains(g)[-1] == ("a", "b")


def test_head_with_sources_chains_only_behind_a_source():
    """
        src ──forward──► h1 (HEAD_WITH_SOURCES)        chained: the upstream is a source
        src2 ──forward──► m ──forward──► h2 (HEAD_WITH_SOURCES)   m -> h2 not chained
    """
    g = graph([op("src", "source"), op("h1", "map", chaining_strategy="HEAD_WITH_SOURCES"),
               op("src2", "source"), op("m", "map"), op("h2", "map", chaining_strategy="HEAD_WITH_SOURCES")],
              [edge("src", "h1"), edge("src2", "m"), edge("m", "h2")])
    assert chains(g) == [("src", "h1"), ("src2", "m"), ("h2",)]


def test_union_input_is_never_chained():
    """
        s1 ──forward──┐
                      ├──► u (p=1)      u has two in-edges (a union): it heads its own vertex
        s2 ──forward──┘
    """
    g = graph([op("s1", "source"), op("s2", "source"), op("u", "map")], [edge("s1", "u"), edge("s2", "u")])
    jg = compile_job_graph(g)
    assert chains(g) == [("s1",), ("s2",), ("u",)]
    assert [(e.source_vertex, e.target_vertex, e.distribution) for e in jg.edges] == [
        ("s1", "u", "POINTWISE"), ("s2", "u", "POINTWISE")]


def test_branching_chain_and_job_edge_order():
    """
                     ┌─forward─► m1 ──hash──► k1 (keyed, p=2)
        src (p=2) ───┤
                     └─forward─► m2 ──rebalance──► k2 (map, p=3)
    src, m1, m2 form one vertex (a tree chain, head first, depth first); its transitive
    out-edges are m1->k1 then m2->k2 (chainable outputs' edges first, in edge order).
    """
    g = graph([op("src", "source", 2), op("m1", "map", 2), op("m2", "map", 2),
               op("k1", "keyed_aggregate", 2), op("k2", "map", 3)],
              [edge("src", "m1"), edge("src", "m2"), edge("m1", "k1", "hash"), edge("m2", "k2", "rebalance")])
    jg = compile_job_graph(g)
    assert jg.vertices["src"].operators == ("src", "m1", "m2")
    assert [(e.index, e.source_operator, e.target_operator, e.source_vertex) for e in jg.edges] == [
        (0, "m1", "k1", "src"), (1, "m2", "k2", "src")]
    assert list(jg.vertices) == ["src", "k1", "k2"]
    assert jg.graph.number_of_edges() == 2


def test_vertex_order_is_flinks_topological_sort_from_sources():
    """
        a (source) ──hash──► x
        b (source) ──hash──► y
    createChain builds vertices post-order (x, a, y, b); getVerticesSortedTopologicallyFromSources
    puts every source first (a, b), then walks from them: a, b, x, y (not a, x, b, y).
    """
    g = graph([op("a", "source"), op("b", "source"), op("x", "keyed_aggregate"), op("y", "keyed_aggregate")],
              [edge("a", "x", "hash"), edge("b", "y", "hash")])
    assert list(compile_job_graph(g).vertices) == ["a", "b", "x", "y"]


def test_diamond_order_and_gates():
    """
                ┌──hash──► l ──hash──────┐
        src ────┤                        ├──► j
                └──hash──► r ──rebalance─┘
    vertices: src, l, r, j (j waits for r); JobEdges: src->l, src->r, l->j, r->j, so j's
    input gate 0 is l->j and gate 1 is r->j.
    """
    g = graph([op("src", "source"), op("l", "keyed_aggregate"), op("r", "keyed_aggregate"), op("j", "map")],
              [edge("src", "l", "hash"), edge("src", "r", "hash"), edge("l", "j", "hash"), edge("r", "j", "rebalance")])
    jg = compile_job_graph(g)
    assert list(jg.vertices) == ["src", "l", "r", "j"]
    assert [(e.source_vertex, e.target_vertex) for e in jg.edges] == [("src", "l"), ("src", "r"), ("l", "j"), ("r", "j")]
    assert [e.index for e in jg.in_edges("j")] == [2, 3]


def test_pipeline_features_example():
    """examples/pipeline-features.toml (diagram in the file):
    src+parse chain; rules, enrich, agg, store, audit alone (parallelism change, union,
    hash, blocking forward, rescale)."""
    jg = compile_job_graph(load_stream_graph(EXAMPLES / "pipeline-features.toml"))
    assert {v.id: v.operators for v in jg.vertices.values()} == {
        "src": ("src", "parse"), "rules": ("rules",), "enrich": ("enrich",), "agg": ("agg",),
        "store": ("store",), "audit": ("audit",)}
    assert list(jg.vertices) == ["src", "rules", "enrich", "agg", "store", "audit"]
    assert [(e.source_operator, e.target_operator, e.distribution, e.result_partition_type) for e in jg.edges] == [
        ("parse", "enrich", "POINTWISE", PIPELINED_BOUNDED),
        ("enrich", "agg", "ALL_TO_ALL", PIPELINED_BOUNDED),
        ("rules", "enrich", "ALL_TO_ALL", PIPELINED_BOUNDED),
        ("agg", "store", "POINTWISE", BLOCKING),
        ("agg", "audit", "POINTWISE", PIPELINED_BOUNDED),
    ]
    assert {v.id: v.slot_sharing_group for v in jg.vertices.values()} == {
        "src": "ingest", "rules": "default", "enrich": "default", "agg": "compute", "store": "compute",
        "audit": "default"}
    assert jg.vertices["agg"].max_parallelism == 64 and jg.vertices["agg"].max_parallelism_configured
    assert jg.vertices["store"].max_parallelism == 128 and not jg.vertices["store"].max_parallelism_configured
    assert jg.co_location_groups() == {"agg-store": ("agg", "store")}


def test_slot_sharing_per_region_when_not_all_in_one_group():
    """
        src ──rebalance, blocking──► m ──rebalance──► out (ssg 'named')
    With all_vertices_in_same_slot_sharing_group_by_default=False the two logical pipelined
    regions {src} and {m, out} get their own default group; 'named' stays shared. With the
    flag (Flink's streaming default) every default vertex is in 'default'.
    """
    ops = [op("src", "source"), op("m", "map"), op("out", "sink", slot_sharing_group="named")]
    es = [edge("src", "m", "rebalance", "blocking"), edge("m", "out", "rebalance")]
    split = compile_job_graph(graph(ops, es, all_vertices_in_same_slot_sharing_group_by_default=False))
    groups = {v.id: v.slot_sharing_group for v in split.vertices.values()}
    assert groups["out"] == "named"
    assert groups["src"] != groups["m"] and groups["src"].startswith("default")
    assert logical_pipelined_regions(tuple(split.vertices), split.edges) == (("src",), ("m", "out"))
    shared = compile_job_graph(graph(ops, es))
    assert {v.id: v.slot_sharing_group for v in shared.vertices.values()} == {"src": "default", "m": "default",
                                                                               "out": "named"}


@settings(max_examples=150, deadline=None)
@given(stream_graphs())
def test_chains_follow_is_chainable(g):
    """Generated graphs: two operators share a vertex iff joined by a chainable edge."""
    jg = compile_job_graph(g)
    chainable = {(e.source, e.target) for e in g.edges if is_chainable(g, e)}
    for e in g.edges:
        same = jg.vertex_of_operator[e.source] == jg.vertex_of_operator[e.target]
        assert same == ((e.source, e.target) in chainable)
    # every non-chained stream edge is exactly one JobEdge
    assert sorted((e.source_operator, e.target_operator) for e in jg.edges) == sorted(
        (e.source, e.target) for e in g.edges if (e.source, e.target) not in chainable)
    # vertex order is topological
    pos = {v: i for i, v in enumerate(jg.vertices)}
    assert all(pos[e.source_vertex] < pos[e.target_vertex] for e in jg.edges)
    assert [e.index for e in jg.edges] == list(range(len(jg.edges)))
    for v in jg.vertices.values():
        ops = [g.operator(o) for o in v.operators]
        assert v.operators[0] == v.id and {o.parallelism for o in ops} == {v.parallelism}


def test_compile_chains_once(monkeypatch):
    """StreamGraph.validate does not chain; compiling chains exactly once (one
    ``chainable_edges`` call, ``is_chainable`` at most once per StreamEdge), also for a job
    with a co-location group, whose rule is checked on those same chains."""
    g = load_stream_graph(EXAMPLES / "pipeline-features.toml")
    assert any(o.co_location_group for o in g.operators)
    calls = {"chainable_edges": 0, "is_chainable": 0}
    for name in calls:
        real = getattr(jobgraph, name)

        def counting(*args, _real=real, _name=name, **kwargs):
            calls[_name] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(jobgraph, name, counting)
    g.validate()
    assert calls == {"chainable_edges": 0, "is_chainable": 0}
    eg = compile_stream_graph(g)
    assert calls["chainable_edges"] == 1
    assert 0 < calls["is_chainable"] <= len(g.edges)
    assert eg.job_graph.co_location_groups() == {"agg-store": ("agg", "store")}


def test_chain_heads_are_the_job_vertices():
    g = load_stream_graph(EXAMPLES / "pipeline-features.toml")
    assert sorted(chain_heads(g)) == sorted(compile_job_graph(g).vertices)
