"""model.jobgraph call by call: every field of small JobGraphs written out (each JobVertex and
JobEdge whole, the vertex of each operator, the networkx graph's edges, the slot sharing and
co-location groups), and each chaining, region, ordering and co-location function's whole
answer right after its call."""

from __future__ import annotations

import attrs
import networkx as nx
import pytest

from graph_util import edge, graph, op
from model import jobgraph as J
from model.errors import InvalidJobSpec
from model.jobgraph import JobEdge, JobVertex


def V(id, ops, p, *, max_p=128, configured=False, group="default", co=None):
    return JobVertex(id=id, operators=tuple(ops), parallelism=p, max_parallelism=max_p,
                     max_parallelism_configured=configured, slot_sharing_group=group, co_location_group=co)


def E(index, sv, tv, so, to, partitioner, mode, distribution, rpt, unaligned):
    return JobEdge(index=index, source_vertex=sv, target_vertex=tv, source_operator=so, target_operator=to,
                   partitioner=partitioner, exchange_mode=mode, distribution=distribution,
                   result_partition_type=rpt, supports_unaligned_checkpoints=unaligned)


PB, BL = "PIPELINED_BOUNDED", "BLOCKING"


def _diamond():
    """
        src(2) ─fwd─► map(2) ─hash─► key(3) ─fwd─────────────► out(3)
                        └──fwd──► side(2, HEAD) ─rebalance, blocking─┘
    """
    return graph([op("src", "source", 2), op("map", "map", 2), op("key", "keyed_aggregate", 3),
                  op("side", "map", 2, chaining_strategy="HEAD"), op("out", "sink", 3)],
                 [edge("src", "map"), edge("map", "key", "hash"), edge("map", "side"),
                  edge("side", "out", "rebalance", "blocking"), edge("key", "out")])


def test_the_constants_and_the_partition_types():
    assert (J.PIPELINED_BOUNDED, J.BLOCKING) == (PB, BL)
    assert J.result_partition_type("blocking") == BL
    assert J.result_partition_type("pipelined") == PB and J.result_partition_type("batch") == PB


def _within(seconds: float, fn, *args):
    """``fn(*args)``, or a failed test when it has not returned within ``seconds``."""
    import signal

    def stop(*_):
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    except TimeoutError:
        pytest.fail(f"{fn.__name__} did not return within {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _answer(call, arg, what):
    """The job spec's answer: ``("ok", what(result))``, or Flink's refusal ``("refused", message)``."""
    try:
        return "ok", what(call(arg))
    except InvalidJobSpec as e:
        return "refused", str(e)


def _pipelined(a, b):
    return E(0, a, b, a, b, "rebalance", "pipelined", "ALL_TO_ALL", PB, True)


def test_the_regions_and_the_order_are_found_in_bounded_time():
    """Union-find over the pipelined edges, and the topological order of three sources each
    feeding its own vertex, return (a loop that never ends would hang every JobGraph)."""
    e = _pipelined
    assert _within(2.0, J._sorted_topologically_from_sources, ["a"], ()) == ["a"]
    assert _within(2.0, J.logical_pipelined_regions, ("a", "b", "c"), (e("a", "b"), e("b", "c"))) == (("a", "b", "c"),)
    edges = (e("a", "x"), e("b", "y"), e("c", "z"))
    assert _within(2.0, J._sorted_topologically_from_sources, ["a", "b", "c", "x", "y", "z"], edges) == \
        ["a", "b", "c", "x", "y", "z"]


def test_a_diamond_job_graph_whole():
    g = _diamond()
    jg = J.compile_job_graph(g)
    assert isinstance(jg.graph, nx.DiGraph) and isinstance(jg.vertices, dict) and isinstance(jg.edges, tuple)
    assert list(jg.vertices) == ["src", "key", "side", "out"]
    assert list(jg.vertices.values()) == [V("src", ("src", "map"), 2), V("key", ("key",), 3),
                                          V("side", ("side",), 2), V("out", ("out",), 3)]
    assert jg.edges == (E(0, "src", "key", "map", "key", "hash", "pipelined", "ALL_TO_ALL", PB, True),
                        E(1, "src", "side", "map", "side", "forward", "pipelined", "POINTWISE", PB, False),
                        E(2, "key", "out", "key", "out", "forward", "pipelined", "POINTWISE", PB, False),
                        E(3, "side", "out", "side", "out", "rebalance", "blocking", "ALL_TO_ALL", BL, False))
    assert jg.vertex_of_operator == {"src": "src", "map": "src", "key": "key", "side": "side", "out": "out"}
    assert list(jg.graph.nodes) == ["src", "key", "side", "out"]
    assert dict(jg.graph.edges) == {("src", "key"): {"job_edges": (0,)}, ("src", "side"): {"job_edges": (1,)},
                                    ("key", "out"): {"job_edges": (2,)}, ("side", "out"): {"job_edges": (3,)}}
    assert jg.operator_slot_sharing_groups == dict.fromkeys(["src", "map", "key", "side", "out"], "default")
    assert jg.slot_sharing_groups() == {"default": ("src", "key", "side", "out")}
    assert jg.co_location_groups() == {}
    assert jg.stream_graph is g
    assert repr(jg) == "<JobGraph 't': 4 vertices, 4 edges>"
    assert jg.in_edges("out") == jg.edges[2:] and jg.in_edges("src") == () and jg.in_edges("key") == jg.edges[:1]
    assert jg.out_edges("src") == jg.edges[:2] and jg.out_edges("out") == () and jg.out_edges("side") == jg.edges[3:]
    assert J.chainable_edges(g) == {("src", "map"): True, ("map", "key"): False, ("map", "side"): False,
                                    ("side", "out"): False, ("key", "out"): False}
    assert J.chain_heads(g) == ("src", "key", "side", "out")
    assert J.logical_pipelined_regions(tuple(jg.vertices), jg.edges) == (("src", "key", "side", "out"),)


def test_regions_named_groups_co_location_and_configured_max_parallelism():
    """
        a(1) ─fwd, blocking─► b(1, max 64) ─rebalance─► c(2, group x, co-located cl) ─fwd─► d(2, cl2)
    every vertex not in one group by default: a and b are two regions' groups; d is chained to c
    (its co-location group ignored, as Flink's setCoLocation reads only the head)."""
    g = graph([op("a", "source", 1), op("b", "map", 1, max_parallelism=64),
               op("c", "map", 2, slot_sharing_group="x", co_location_group="cl"),
               op("d", "sink", 2, co_location_group="cl2")],
              [edge("a", "b", "forward", "blocking"), edge("b", "c", "rebalance"), edge("c", "d")],
              all_vertices_in_same_slot_sharing_group_by_default=False)
    jg = J.compile_job_graph(g)
    assert list(jg.vertices.values()) == [V("a", "a", 1, group="default#region0"),
                                          V("b", "b", 1, max_p=64, configured=True, group="default#region1"),
                                          V("c", ("c", "d"), 2, group="x", co="cl")]
    assert jg.edges == (E(0, "a", "b", "a", "b", "forward", "blocking", "POINTWISE", BL, False),
                        E(1, "b", "c", "b", "c", "rebalance", "pipelined", "ALL_TO_ALL", PB, True))
    assert jg.vertex_of_operator == {"a": "a", "b": "b", "c": "c", "d": "c"}
    assert jg.operator_slot_sharing_groups == {"a": "default", "b": "default", "c": "x", "d": "x"}
    assert jg.slot_sharing_groups() == {"default#region0": ("a",), "default#region1": ("b",), "x": ("c",)}
    assert jg.co_location_groups() == {"cl": ("c",)}
    assert J.logical_pipelined_regions(("a", "b", "c"), jg.edges) == (("a",), ("b", "c"))
    assert J.co_location_violation(jg) is None


def test_two_job_edges_between_one_pair_of_vertices():
    """src ─fwd─► m (chained), m ─rebalance─► b and src ─hash─► b: two JobEdges src -> b."""
    g = graph([op("src", "source", 1), op("m", "map", 1), op("b", "map", 2)],
              [edge("src", "m"), edge("m", "b", "rebalance"), edge("src", "b", "hash")])
    jg = J.compile_job_graph(g)
    assert list(jg.vertices.values()) == [V("src", ("src", "m"), 1), V("b", "b", 2)]
    # createChain: the chained out-edges first (m's rebalance), then the head's own (hash)
    assert jg.edges == (E(0, "src", "b", "m", "b", "rebalance", "pipelined", "ALL_TO_ALL", PB, True),
                        E(1, "src", "b", "src", "b", "hash", "pipelined", "ALL_TO_ALL", PB, True))
    assert dict(jg.graph.edges) == {("src", "b"): {"job_edges": (0, 1)}}
    assert isinstance(jg.graph, nx.DiGraph) and jg.graph.number_of_edges() == 1


def test_two_sources_and_the_order_of_vertices_and_edges():
    """Sources in id order; JobEdges by head id; the vertices topologically from the sources."""
    g = graph([op("late", "map", 1), op("s2", "source", 1), op("s1", "source", 1), op("j", "map", 1)],
              [edge("s2", "j", "rebalance"), edge("s1", "late", "rebalance"), edge("late", "j", "rebalance")])
    jg = J.compile_job_graph(g)
    assert list(jg.vertices) == ["s2", "s1", "late", "j"]
    assert [(e.index, e.source_vertex, e.target_vertex) for e in jg.edges] == [
        (0, "late", "j"), (1, "s2", "j"), (2, "s1", "late")]
    assert J.chain_heads(g) == ("late", "s2", "s1", "j")


def test_the_topological_order_over_creation_order():
    def e(i, a, b):
        return E(i, a, b, a, b, "rebalance", "pipelined", "ALL_TO_ALL", PB, True)

    # d has inputs from b and c: it waits for both; c comes after b although created first
    edges = (e(0, "a", "c"), e(1, "a", "b"), e(2, "b", "d"), e(3, "c", "d"))
    assert J._sorted_topologically_from_sources(["d", "c", "b", "a"], edges) == ["a", "c", "b", "d"]
    assert J._sorted_topologically_from_sources(["x", "a", "d", "c", "b"], edges) == ["x", "a", "c", "b", "d"]
    # a chain reached from a later vertex
    edges = (e(0, "a", "b"), e(1, "b", "c"), e(2, "z", "c"))
    assert J._sorted_topologically_from_sources(["c", "b", "a", "z"], edges) == ["a", "z", "b", "c"]
    assert J._sorted_topologically_from_sources([], ()) == []
    # an edge to a vertex placed already, then another edge: both followed
    edges = (e(0, "a", "c"), e(1, "a", "c"), e(2, "a", "b"))
    assert J._sorted_topologically_from_sources(["c", "b", "a"], edges) == ["a", "c", "b"]
    # an edge to a vertex still waiting for another input, then the edge to that input
    edges = (e(0, "a", "d"), e(1, "a", "b"), e(2, "b", "d"))
    assert J._sorted_topologically_from_sources(["d", "b", "a"], edges) == ["a", "b", "d"]
    # a vertex reached only from the second vertex placed
    edges = (e(0, "a", "b"), e(1, "c", "d"), e(2, "b", "e"))
    assert J._sorted_topologically_from_sources(["e", "d", "b", "c", "a"], edges) == ["c", "a", "d", "b", "e"]


def test_logical_pipelined_regions_union_and_find():
    def e(a, b, rpt):
        return E(0, a, b, a, b, "rebalance", "pipelined", "ALL_TO_ALL", rpt, True)

    vs = ("a", "b", "c", "d", "e")
    assert J.logical_pipelined_regions(vs, ()) == (("a",), ("b",), ("c",), ("d",), ("e",))
    assert J.logical_pipelined_regions(vs, (e("d", "e", PB), e("a", "c", PB), e("c", "e", PB), e("a", "b", BL))) \
        == (("a", "c", "d", "e"), ("b",))
    # joined through a chain of unions (find compresses paths)
    assert J.logical_pipelined_regions(vs, (e("a", "b", PB), e("c", "d", PB), e("b", "d", PB), e("e", "d", PB))) \
        == (vs,)
    assert J.logical_pipelined_regions(("a", "b"), (e("a", "b", PB), e("b", "a", PB))) == (("a", "b"),)


@pytest.mark.parametrize("why, ops, edges, flags, chainable", [
    ("forward, same everything", [op("a", "source"), op("b", "map")], [edge("a", "b")], {}, True),
    ("chaining disabled", [op("a", "source"), op("b", "map")], [edge("a", "b")], {"chaining_enabled": False}, False),
    ("two inputs", [op("a", "source"), op("c", "source"), op("b", "map")], [edge("a", "b"), edge("c", "b")], {}, False),
    ("slot sharing groups differ", [op("a", "source"), op("b", "map", slot_sharing_group="x")], [edge("a", "b")],
     {}, False),
    ("upstream NEVER", [op("a", "source", chaining_strategy="NEVER"), op("b", "map")], [edge("a", "b")], {}, False),
    ("downstream NEVER", [op("a", "source"), op("b", "map", chaining_strategy="NEVER")], [edge("a", "b")], {}, False),
    ("downstream HEAD", [op("a", "source"), op("b", "map", chaining_strategy="HEAD")], [edge("a", "b")], {}, False),
    ("HEAD_WITH_SOURCES behind a source", [op("a", "source"), op("b", "map", chaining_strategy="HEAD_WITH_SOURCES")],
     [edge("a", "b")], {}, True),
    ("HEAD_WITH_SOURCES behind a map", [op("s", "source"), op("a", "map"),
                                        op("b", "map", chaining_strategy="HEAD_WITH_SOURCES")],
     [edge("s", "a"), edge("a", "b")], {}, False),
    ("parallelism differs", [op("a", "source", 2), op("b", "map", 3)], [edge("a", "b", "rebalance")], {}, False),
    ("max parallelism differs, allowed", [op("a", "source", max_parallelism=8), op("b", "map", max_parallelism=16)],
     [edge("a", "b")], {}, True),
    ("max parallelism differs, not allowed", [op("a", "source", max_parallelism=8),
                                              op("b", "map", max_parallelism=16)],
     [edge("a", "b")], {"chain_operators_with_different_max_parallelism": False}, False),
    ("max parallelism equal, differences not allowed", [op("a", "source", max_parallelism=8),
                                                        op("b", "map", max_parallelism=8)],
     [edge("a", "b")], {"chain_operators_with_different_max_parallelism": False}, True),
    ("rescale", [op("a", "source"), op("b", "map")], [edge("a", "b", "rescale")], {}, False),
    ("blocking", [op("a", "source"), op("b", "map")], [edge("a", "b", "forward", "blocking")], {}, False),
])
def test_is_chainable_of_the_last_edge(why, ops, edges, flags, chainable):
    g = graph(ops, edges, **flags)
    e = g.edges[-1]
    assert J.is_chainable(g, e) is chainable, why
    assert J.is_chainable(g, e, J.resolve_slot_sharing_groups(g)) is chainable, why
    assert J.chainable_edges(g)[(e.source, e.target)] is chainable, why
    heads = J.chain_heads(g)
    assert (e.target not in heads) is chainable, why
    assert J.chain_heads(g, J.resolve_slot_sharing_groups(g)) == heads
    assert J.chainable_edges(g, J.resolve_slot_sharing_groups(g)) == J.chainable_edges(g)


def test_the_slot_sharing_groups_passed_in_are_the_ones_used():
    g = graph([op("a", "source"), op("b", "map")], [edge("a", "b")])
    assert J.is_chainable(g, g.edges[0], {"a": "x", "b": "y"}) is False
    assert J.chainable_edges(g, {"a": "x", "b": "y"}) == {("a", "b"): False}
    assert J.chain_heads(g, {"a": "x", "b": "y"}) == ("a", "b")
    assert J.chain_heads(g, {"a": "x", "b": "x"}) == ("a",)


def test_a_co_location_group_across_slot_sharing_groups_is_refused():
    g = graph([op("a", "source", co_location_group="k"), op("m", "map", co_location_group="other"),
               op("b", "map", slot_sharing_group="y", co_location_group="k")],
              [edge("a", "m", "rebalance"), edge("m", "b", "rebalance")])
    with pytest.raises(InvalidJobSpec) as info:
        J.compile_job_graph(g)
    assert (info.value.subject, info.value.rule) == (
        "operator 'b'", "co-location group 'k' spans different slot sharing groups ('a' is in 'default', 'b' is in "
        "'y') (Flink: Cannot co-locate operators from different slot sharing groups)")
    # a vertex without a group first, then the clash
    g = graph([op("s", "source"), op("a", "map", co_location_group="k"),
               op("b", "map", slot_sharing_group="y", co_location_group="k")],
              [edge("s", "a", "rebalance"), edge("a", "b", "rebalance")])
    with pytest.raises(InvalidJobSpec) as info:
        J.compile_job_graph(g)
    assert info.value.subject == "operator 'b'"
    # two co-location groups, each in its own slot sharing group: fine (the answer compared, a
    # refusal included: Flink accepts this job)
    ok = graph([op("a", "source", co_location_group="k"), op("b", "map", slot_sharing_group="y", co_location_group="k2")],
               [edge("a", "b", "rebalance")])
    assert _answer(J.compile_job_graph, ok, lambda jg: jg.co_location_groups()) == ("ok", {"k": ("a",), "k2": ("b",)})
    jg = J.compile_job_graph(ok)
    assert J.co_location_violation(jg) is None
    # a chained operator's group is not the vertex's: no violation
    ok = graph([op("a", "source", co_location_group="k"), op("b", "map", co_location_group="k2")], [edge("a", "b")])
    jg = J.compile_job_graph(ok)
    assert J.co_location_violation(jg) is None and jg.co_location_groups() == {"k": ("a",)}
    # the same group in one slot sharing group: fine, listed in order
    same = graph([op("a", "source", co_location_group="k"), op("b", "map", co_location_group="k")],
                 [edge("a", "b", "rebalance")])
    assert J.compile_job_graph(same).co_location_groups() == {"k": ("a", "b")}


def test_load_job_graph_names_the_file(tmp_path):
    ok = tmp_path / "ok.toml"
    ok.write_text('name = "j"\n\n[[operators]]\nname = "s"\nkind = "source"\n\n[[operators]]\nname = "m"\n'
                  'kind = "map"\n\n[[edges]]\nsource = "s"\ntarget = "m"\n')
    jg = J.load_job_graph(ok)
    assert list(jg.vertices.values()) == [V("s", ("s", "m"), 1)] and repr(jg) == "<JobGraph 'j': 1 vertices, 0 edges>"
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "j"\n\n[[operators]]\nname = "s"\nkind = "source"\nco_location_group = "k"\n\n'
                   '[[operators]]\nname = "m"\nkind = "map"\nco_location_group = "k"\nslot_sharing_group = "y"\n\n'
                   '[[edges]]\nsource = "s"\ntarget = "m"\npartitioner = "rebalance"\n')
    with pytest.raises(InvalidJobSpec) as info:
        J.load_job_graph(bad)
    assert info.value.subject == f"{bad}: operator 'm'"
    assert info.value.rule.startswith("co-location group 'k' spans different slot sharing groups")
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_the_declared_fields_of_the_graphs_classes():
    fields = {cls.__name__: [(a.name, a.default, a.kw_only) for a in attrs.fields(cls)]
              for cls in (JobVertex, JobEdge, J.JobGraph)}
    N = attrs.NOTHING
    assert fields == {
        "JobVertex": [("id", N, True), ("operators", N, True), ("parallelism", N, True), ("max_parallelism", N, True),
                      ("max_parallelism_configured", N, True), ("slot_sharing_group", N, True),
                      ("co_location_group", None, True)],
        "JobEdge": [(n, N, True) for n in ("index", "source_vertex", "target_vertex", "source_operator",
                                           "target_operator", "partitioner", "exchange_mode", "distribution",
                                           "result_partition_type", "supports_unaligned_checkpoints")],
        "JobGraph": [(n, N, True) for n in ("stream_graph", "vertices", "edges", "vertex_of_operator", "graph",
                                            "operator_slot_sharing_groups")],
    }
    v = JobVertex(id="a", operators=("a",), parallelism=1, max_parallelism=128, max_parallelism_configured=False,
                  slot_sharing_group="default")
    assert v.co_location_group is None and v == V("a", "a", 1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        v.id = "b"
    jg = J.compile_job_graph(_diamond())
    assert jg != J.compile_job_graph(_diamond()) and jg == jg  # compared by identity (eq=False)


def test_a_cyclic_graph_is_refused_by_the_order():
    """validate() rejects cycles first; the order's own guard names one when asked directly."""
    e = _pipelined
    with pytest.raises(AssertionError, match="the job graph is cyclic"):
        J._sorted_topologically_from_sources(["s", "a", "b"], (e("s", "a"), e("a", "b"), e("b", "a")))
