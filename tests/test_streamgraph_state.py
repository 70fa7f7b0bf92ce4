"""``model.streamgraph`` call by call: the exact message of every broken rule and the value
just inside each bound, each look-up's whole answer, the builder's operators and edges, the
dict form both ways, the schema and the size bounds."""

from __future__ import annotations

import attrs
import pytest

from graph_util import edge, graph, op
from model import streamgraph as sg
from model.errors import InvalidJobSpec
from model.inputfiles import INT_MAX, INT_MIN
from model.streamgraph import (EdgeSpec, OperatorSpec, StreamGraph, StreamGraphBuilder, check_execution_size,
                               default_partitioner, effective_max_parallelism, execution_size, job_spec_schema,
                               load_stream_graph, resolve_slot_sharing_groups, stream_graph_from_dict,
                               stream_graph_to_dict)


def accepted(call, *args, **kw):
    """``call``'s answer; a valid input refused is a failed statement, not an error."""
    try:
        return call(*args, **kw)
    except InvalidJobSpec as e:
        pytest.fail(f"a valid input refused: {e}")


def refused(call, *args, **kw) -> str:
    with pytest.raises(InvalidJobSpec) as e:
        call(*args, **kw)
    return str(e.value)


def test_the_declared_names_and_bounds():
    assert sg.OPERATOR_KINDS == ("source", "map", "filter", "keyed_aggregate", "window", "sink")
    assert sg.KEYED_KINDS == ("keyed_aggregate", "window")
    assert sg.PARTITIONERS == ("forward", "hash", "rebalance", "rescale", "broadcast")
    assert sg.POINTWISE_PARTITIONERS == ("forward", "rescale")
    assert sg.UNALIGNED_UNSUPPORTED_PARTITIONERS == ("forward", "rescale", "broadcast")
    assert sg.EXCHANGE_MODES == ("pipelined", "blocking")
    assert sg.CHAINING_STRATEGIES == ("ALWAYS", "HEAD", "NEVER", "HEAD_WITH_SOURCES")
    assert sg.AGGREGATES == ("count", "sum") and sg.SINK_KINDS == ("two_phase_commit", "upsert", "append")
    assert sg.UPPER_BOUND_MAX_PARALLELISM == 32768 and sg.DEFAULT_SLOT_SHARING_GROUP == "default"
    assert (sg.MAX_OPERATORS, sg.MAX_EDGES, sg.MAX_SUBTASKS, sg.MAX_CHANNELS, sg.MAX_NAME) == (
        1_000, 10_000, 10_000, 100_000, 200)
    assert sg._RUN_TABLES == ("runtime", "environment", "input")
    assert sg._KIND_PARAMS == {
        "source": ("watermark_out_of_orderness",), "map": ("function",), "filter": ("function",),
        "keyed_aggregate": ("aggregate",),
        "window": ("aggregate", "window_size", "window_slide", "window_offset", "allowed_lateness"),
        "sink": ("sink_kind",)}
    assert sg._KIND_SPECIFIC_DEFAULTS == {"function": None, "aggregate": None, "window_size": None,
                                          "window_slide": None, "window_offset": 0, "allowed_lateness": 0,
                                          "sink_kind": None, "watermark_out_of_orderness": 0}
    assert sg._GRAPH_FIELDS == {"name": (str,), "operators": (list,), "edges": (list,), "chaining_enabled": (bool,),
                                "all_vertices_in_same_slot_sharing_group_by_default": (bool,),
                                "chain_operators_with_different_max_parallelism": (bool,), "runtime": (dict,),
                                "environment": (dict,), "input": (dict,)}
    assert sg._EDGE_FIELDS == {"source": (str,), "target": (str,), "partitioner": (str,), "exchange_mode": (str,)}
    none = type(None)
    assert sg._OP_FIELDS == {
        "name": (str,), "kind": (str,), "parallelism": (int,), "max_parallelism": (int, none),
        "slot_sharing_group": (str, none), "co_location_group": (str, none), "chaining_strategy": (str, none),
        "function": (str, none), "aggregate": (str, none), "window_size": (int, none), "window_slide": (int, none),
        "window_offset": (int,), "allowed_lateness": (int,), "sink_kind": (str, none),
        "watermark_out_of_orderness": (int,)}
    assert list(sg._OP_FIELDS) == [a.name for a in attrs.fields(OperatorSpec)]


def test_the_declared_defaults():
    assert [(a.name, a.default) for a in attrs.fields(OperatorSpec) if a.default is not attrs.NOTHING] == [
        ("parallelism", 1), ("max_parallelism", None), ("slot_sharing_group", None), ("co_location_group", None),
        ("chaining_strategy", None), ("function", None), ("aggregate", None), ("window_size", None),
        ("window_slide", None), ("window_offset", 0), ("allowed_lateness", 0), ("sink_kind", None),
        ("watermark_out_of_orderness", 0)]
    assert [(a.name, a.default) for a in attrs.fields(EdgeSpec) if a.default is not attrs.NOTHING] == [
        ("partitioner", "forward"), ("exchange_mode", "pipelined"), ("default_partitioner", False)]
    assert [(a.name, a.default) for a in attrs.fields(StreamGraph)] == [
        ("name", "job"), ("operators", ()), ("edges", ()), ("chaining_enabled", True),
        ("all_vertices_in_same_slot_sharing_group_by_default", True),
        ("chain_operators_with_different_max_parallelism", True)]


def test_operator_and_edge_look_ups():
    assert OperatorSpec(name="s", kind="source").effective_chaining_strategy == "HEAD"
    assert OperatorSpec(name="m", kind="map").effective_chaining_strategy == "ALWAYS"
    assert OperatorSpec(name="m", kind="sink", chaining_strategy="NEVER").effective_chaining_strategy == "NEVER"
    assert OperatorSpec(name="s", kind="source", chaining_strategy="ALWAYS").effective_chaining_strategy == "ALWAYS"
    assert edge("a", "b").label == "edge 'a' -> 'b'"
    g = graph([op("s", "source", 2), op("m", "map", 2), op("n", "map", 3), op("out", "sink", 3)],
              [edge("s", "m"), edge("s", "n", "rebalance"), edge("m", "out", "rescale"), edge("n", "out", "hash")])
    assert g.operator("n") is g.operators[2]
    with pytest.raises(KeyError):
        g.operator("x")
    assert g.operators_by_name() == {o.name: o for o in g.operators}
    assert g.in_edges("out") == (g.edges[2], g.edges[3]) and g.in_edges("s") == ()
    assert g.out_edges("s") == (g.edges[0], g.edges[1]) and g.out_edges("out") == ()
    assert g.topological_order() == ("s", "m", "n", "out")
    # out has a rescale input: none of its inputs carries an unaligned barrier; n's only input can
    assert [g.supports_unaligned_checkpoints(e) for e in g.edges] == [False, True, False, False]
    g2 = graph([op("b", "source"), op("a", "source"), op("m", "map")], [edge("a", "m", "hash"), edge("b", "m", "hash")])
    assert g2.topological_order() == ("b", "a", "m"), "ties broken by declaration order"
    assert g2.supports_unaligned_checkpoints(g2.edges[0]) is True
    assert effective_max_parallelism(op("s", "source", 3, max_parallelism=7)) == 7
    assert effective_max_parallelism(op("s", "source", 3)) == 128
    assert effective_max_parallelism(op("s", "source", 100)) == 256
    assert g.effective_max_parallelism("n") == 128


def test_resolve_slot_sharing_groups():
    g = graph([op("a", "source", slot_sharing_group="x"), op("b", "source"), op("m", "map"),
               op("n", "map", slot_sharing_group="y"), op("k", "map")],
              [edge("a", "m", "rebalance"), edge("b", "m", "rebalance"), edge("a", "n"), edge("n", "k")])
    assert resolve_slot_sharing_groups(g) == {"a": "x", "b": "default", "m": "default", "n": "y", "k": "y"}
    g = graph([op("a", "source", slot_sharing_group="x"), op("b", "source", slot_sharing_group="x"),
               op("c", "source", slot_sharing_group="z"), op("m", "map")],
              [edge("a", "m", "rebalance"), edge("b", "m", "rebalance"), edge("c", "m", "rebalance")])
    assert resolve_slot_sharing_groups(g) == {"a": "x", "b": "x", "c": "z", "m": "default"}
    g = graph([op("c", "source", slot_sharing_group="z"), op("a", "source", slot_sharing_group="x"),
               op("b", "source", slot_sharing_group="x"), op("m", "map")],
              [edge("c", "m", "rebalance"), edge("a", "m", "rebalance"), edge("b", "m", "rebalance")])
    assert resolve_slot_sharing_groups(g)["m"] == "default", "a disagreement is final"
    assert list(resolve_slot_sharing_groups(graph([op("z", "source"), op("y", "source")], []))) == ["z", "y"]


# -- validation: the exact message of each rule ----------------------------------------------------

RULES = [
    (graph([], []), "job 't': has no operators (Flink: No operators defined in streaming topology)"),
    (StreamGraph(name="t", operators=[op("s", "source")]), "job 't': operators and edges must be tuples"),
    (StreamGraph(name="t", operators=(op("s", "source"),), edges=[]), "job 't': operators and edges must be tuples"),
    (graph([op("s", "source"), "x"], []), "job 't' operator #1: must be an OperatorSpec, not str"),
    (graph([op("s", "source"), op("", "map")], []), "job 't' operator #1: name must be a non-empty string, not ''"),
    (graph([op(3, "source")], []), "job 't' operator #0: name must be a non-empty string, not 3"),
    (graph([op("s", "source")], [("s", "s")]), "job 't' edge #0: must be an EdgeSpec, not tuple"),
    (graph([op("src", "source"), op("fm", "flatmap")], [edge("src", "fm")]),
     "operator 'fm': unknown operator kind 'flatmap' (known: source, map, filter, keyed_aggregate, window, sink)"),
    (graph([op("src", "source"), op("src", "source")], []),
     "operator 'src': duplicate operator name (names must be unique)"),
    (graph([op("src", "source", 0)], []), "operator 'src': parallelism must be at least 1, not 0 (Flink: The "
                                          "parallelism of an operator must be at least 1)"),
    (graph([op("src", "source", 1.5)], []), "operator 'src': parallelism must be an integer, not 1.5"),
    (graph([op("src", "source", True)], []), "operator 'src': parallelism must be an integer, not True"),
    (graph([op("src", "source", 5, max_parallelism=4)], []),
     "operator 'src': parallelism 5 is higher than the max parallelism 4"),
    (graph([op("src", "source", 32769)], []), "operator 'src': parallelism 32769 is higher than the max parallelism "
                                              "32768 (the upper bound of the default max parallelism)"),
    (graph([op("src", "source", 1, max_parallelism=32769)], []),
     "operator 'src': max parallelism must be between 1 and 32768, not 32769"),
    (graph([op("src", "source", 1, max_parallelism=0)], []),
     "operator 'src': max parallelism must be between 1 and 32768, not 0"),
    (graph([op("src", "source", 1, max_parallelism=2.0)], []),
     "operator 'src': max_parallelism must be an integer, not 2.0"),
    (graph([op("src", "source", 1, max_parallelism=True)], []),
     "operator 'src': max_parallelism must be an integer, not True"),
    (graph([op("src", "source", 2), op("map", "map", 3)], [edge("src", "map")]),
     "edge 'src' -> 'map': forward partitioning does not allow change of parallelism (2 -> 3); use rescale, "
     "rebalance, hash or broadcast"),
    (graph([op("src", "source"), op("map", "map")], [edge("src", "map", "shuffle")]),
     "edge 'src' -> 'map': unknown partitioner 'shuffle' (known: forward, hash, rebalance, rescale, broadcast)"),
    (graph([op("src", "source"), op("map", "map")], [edge("src", "map", mode="hybrid")]),
     "edge 'src' -> 'map': unknown exchange mode 'hybrid' (known: pipelined, blocking)"),
    (graph([op("src", "source", chaining_strategy="SOMETIMES")], []),
     "operator 'src': unknown chaining strategy 'SOMETIMES' (known: ALWAYS, HEAD, NEVER, HEAD_WITH_SOURCES)"),
    (graph([op("src", "source"), op("agg", "keyed_aggregate", aggregate="avg")], [edge("src", "agg", "hash")]),
     "operator 'agg': unknown aggregate 'avg' (known: count, sum)"),
    (graph([op("src", "source"), op("agg", "keyed_aggregate", aggregate=None)], [edge("src", "agg", "hash")]),
     "operator 'agg': a keyed_aggregate operator needs 'aggregate' (one of count, sum)"),
    (graph([op("src", "source"), op("w", "window", aggregate=None)], [edge("src", "w", "hash")]),
     "operator 'w': a window operator needs 'aggregate' (one of count, sum)"),
    (graph([op("src", "source"), op("out", "sink", sink_kind="kafka")], [edge("src", "out")]),
     "operator 'out': unknown sink kind 'kafka' (known: two_phase_commit, upsert, append)"),
    (graph([op("src", "source"), op("out", "sink", sink_kind=None)], [edge("src", "out")]),
     "operator 'out': a sink needs 'sink_kind' (one of two_phase_commit, upsert, append)"),
    (graph([op("src", "source"), op("m", "map", function="square")], [edge("src", "m")]),
     "operator 'm': unknown map function 'square' (known: identity, negate, double, add:N, mod:N, rekey_mod:N)"),
    (graph([op("s", "source"), op("f", "filter", function="identity")], [edge("s", "f")]),
     "operator 'f': unknown filter function 'identity' (known: all, none, even_value, odd_value, value_ge:N)"),
    (graph([op("s", "source"), op("m", "map", function="all")], [edge("s", "m")]),
     "operator 'm': unknown map function 'all' (known: identity, negate, double, add:N, mod:N, rekey_mod:N)"),
    (graph([op("src", "source"), op("m", "map", function=3)], [edge("src", "m")]),
     "operator 'm': function must be a string, not 3"),
    (graph([op("src", "source"), op("f", "filter", function=3)], [edge("src", "f")]),
     "operator 'f': function must be a string, not 3"),
    (graph([op("src", "source", 2), op("agg", "keyed_aggregate", 2)], [edge("src", "agg", "rebalance")]),
     "edge 'src' -> 'agg': keyed operator 'agg' (keyed_aggregate) needs every input to be a keyBy ('hash') edge, "
     "not 'rebalance'"),
    (graph([op("a", "source"), op("b", "source"), op("w", "window")], [edge("a", "w", "hash"),
                                                                      edge("b", "w", "broadcast")]),
     "edge 'b' -> 'w': keyed operator 'w' (window) needs every input to be a keyBy ('hash') edge, not 'broadcast'"),
    (graph([op("src", "source")], [edge("src", "ghost")]),
     "edge 'src' -> 'ghost': names the missing operator 'ghost' (dangling edge)"),
    (graph([op("src", "source"), op("m", "map")], [edge("src", "m"), edge("ghost", "m")]),
     "edge 'ghost' -> 'm': names the missing operator 'ghost' (dangling edge)"),
    (graph([op("a", "source"), op("b", "source")], [edge("a", "b")]),
     "operator 'b': a source cannot have inputs (edge 'a' -> 'b')"),
    (graph([op("a", "source"), op("s", "sink"), op("m", "map")], [edge("a", "s"), edge("s", "m")]),
     "operator 's': a sink cannot have outputs (edge 's' -> 'm')"),
    (graph([op("a", "source"), op("m", "map")], []), "operator 'm': a map operator needs at least one input edge"),
    (graph([op("a", "source"), op("m", "map")], [edge("a", "m"), edge("a", "m", "rebalance")]),
     "edge 'a' -> 'm': duplicate edge (at most one edge between two operators)"),
    (graph([op("src", "source"), op("a", "map"), op("b", "map")], [edge("src", "a"), edge("a", "b"), edge("b", "a")]),
     "edge 'a' -> 'b': closes a cycle 'a' -> 'b' -> 'a' (a job graph must be acyclic)"),
    (graph([op("src", "source"), op("a", "map")], [edge("src", "a"), edge("a", "a")]),
     "edge 'a' -> 'a': closes a cycle 'a' -> 'a' (a job graph must be acyclic)"),
    (graph([op("a", "source"), op("w", "window", window_size=None)], [edge("a", "w", "hash")]),
     "operator 'w': a window needs 'window_size'"),
    (graph([op("a", "source"), op("w", "window", window_size=2.5)], [edge("a", "w", "hash")]),
     "operator 'w': window_size must be an integer, not 2.5"),
    (graph([op("a", "source"), op("w", "window", window_slide=True)], [edge("a", "w", "hash")]),
     "operator 'w': window_slide must be an integer, not True"),
    (graph([op("a", "source"), op("w", "window", window_offset=0.5)], [edge("a", "w", "hash")]),
     "operator 'w': window_offset must be an integer, not 0.5"),
    (graph([op("a", "source"), op("w", "window", allowed_lateness="1")], [edge("a", "w", "hash")]),
     "operator 'w': allowed_lateness must be an integer, not '1'"),
    (graph([op("a", "source"), op("w", "window", window_size=10, window_offset=-10)], [edge("a", "w", "hash")]),
     "operator 'w': tumbling window needs abs(offset) < size, got size=10 offset=-10 (Flink: TumblingEventTimeWindows "
     "parameters must satisfy abs(offset) < size)"),
    (graph([op("a", "source"), op("w", "window", window_size=10, window_offset=10)], [edge("a", "w", "hash")]),
     "operator 'w': tumbling window needs abs(offset) < size, got size=10 offset=10 (Flink: TumblingEventTimeWindows "
     "parameters must satisfy abs(offset) < size)"),
    (graph([op("a", "source"), op("w", "window", window_size=10, window_slide=5, window_offset=-5)],
           [edge("a", "w", "hash")]),
     "operator 'w': sliding window needs abs(offset) < slide and size > 0, got size=10 slide=5 offset=-5 (Flink: "
     "SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0)"),
    (graph([op("a", "source"), op("w", "window", window_size=0, window_slide=5)], [edge("a", "w", "hash")]),
     "operator 'w': sliding window needs abs(offset) < slide and size > 0, got size=0 slide=5 offset=0 (Flink: "
     "SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0)"),
    (graph([op("a", "source"), op("w", "window", allowed_lateness=-1)], [edge("a", "w", "hash")]),
     "operator 'w': allowed_lateness must be >= 0, not -1 (Flink: The allowed lateness cannot be negative)"),
    (graph([op("a", "source", watermark_out_of_orderness=-1)], []),
     "operator 'a': watermark_out_of_orderness must be an integer >= 0, not -1"),
    (graph([op("a", "source", watermark_out_of_orderness=1.0)], []),
     "operator 'a': watermark_out_of_orderness must be an integer >= 0, not 1.0"),
    (graph([op("a", "source"), op("m", "map", window_size=3)], [edge("a", "m")]),
     "operator 'm': parameter 'window_size' does not apply to a map operator"),
    (graph([op("a", "source", sink_kind="append")], []),
     "operator 'a': parameter 'sink_kind' does not apply to a source operator"),
    (graph([op("a", "source"), op("k", "keyed_aggregate", window_offset=1)], [edge("a", "k", "hash")]),
     "operator 'k': parameter 'window_offset' does not apply to a keyed_aggregate operator"),
    (graph([op("a", "source", slot_sharing_group="")], []),
     "operator 'a': slot_sharing_group must be a non-empty string, not ''"),
    (graph([op("a", "source", co_location_group=3)], []),
     "operator 'a': co_location_group must be a non-empty string, not 3"),
]


@pytest.mark.parametrize("i", range(len(RULES)))
def test_each_rule_has_its_message(i):
    g, message = RULES[i]
    assert refused(g.validate) == message


def test_the_values_just_inside_each_bound_are_valid():
    ok = [
        graph([op("s", "source", 32768)], []),
        graph([op("s", "source", 4, max_parallelism=4)], []),
        graph([op("s", "source", 1, max_parallelism=32768)], []),
        graph([op("s", "source", 1, max_parallelism=1)], []),
        graph([op("s", "source", watermark_out_of_orderness=0)], []),
        graph([op("s", "source", slot_sharing_group="g", co_location_group="c", chaining_strategy="NEVER")], []),
        graph([op("a", "source"), op("w", "window", window_size=10, window_offset=9)], [edge("a", "w", "hash")]),
        graph([op("a", "source"), op("w", "window", window_size=10, window_offset=-9)], [edge("a", "w", "hash")]),
        graph([op("a", "source"), op("w", "window", window_size=10, window_slide=5, window_offset=4,
                                     allowed_lateness=0)], [edge("a", "w", "hash")]),
        graph([op("a", "source"), op("w", "window", window_size=1, window_slide=5, window_offset=-4)],
              [edge("a", "w", "hash")]),
        graph([op("a", "source"), op("m", "map", function=None), op("f", "filter", function="all")],
              [edge("a", "m"), edge("m", "f")]),
        graph([op("a", "source", 2), op("b", "map", 3)], [edge("a", "b", "rescale", "blocking")]),
        graph([op("a", "source", 2), op("k", "keyed_aggregate", 3, aggregate="sum")], [edge("a", "k", "hash")]),
    ]
    for g in ok:
        assert accepted(g.validate) is g
    # a StreamGraph built from lists is refused, one of tuples is not
    assert refused(StreamGraph(name="t", operators=[op("s", "source")], edges=()).validate) == (
        "job 't': operators and edges must be tuples")


def test_a_cycle_names_its_first_edge_in_the_search_order():
    g = graph([op("s", "source"), op("a", "map"), op("b", "map"), op("c", "map")],
              [edge("s", "a"), edge("a", "b"), edge("b", "c", "rebalance"), edge("c", "a", "rebalance")])
    assert refused(g.validate) == "edge 'a' -> 'b': closes a cycle 'a' -> 'b' -> 'c' -> 'a' (a job graph must be acyclic)"


def test_default_partitioner():
    assert default_partitioner(2, 2) == "forward" and default_partitioner(2, 3) == "rebalance"


# -- the builder -------------------------------------------------------------------------------

def test_the_builder_adds_each_kind_with_its_defaults():
    b = StreamGraphBuilder("wc", default_parallelism=2)
    assert (b.name, b.default_parallelism, b._flags, b._operators, b._edges) == (
        "wc", 2, {"chaining_enabled": True, "all_vertices_in_same_slot_sharing_group_by_default": True,
                  "chain_operators_with_different_max_parallelism": True}, [], [])
    assert b.source("s") == "s"
    assert b._operators == [OperatorSpec(name="s", kind="source", parallelism=2)] and b._edges == []
    assert b.map("m", "s") == "m"
    assert b._operators[-1] == OperatorSpec(name="m", kind="map", parallelism=2, function="identity")
    assert b._edges == [EdgeSpec(source="s", target="m", partitioner="forward", exchange_mode="pipelined")]
    assert b.filter("f", "m", parallelism=3) == "f"
    assert b._operators[-1] == OperatorSpec(name="f", kind="filter", parallelism=3, function="all")
    assert b._edges[-1] == EdgeSpec(source="m", target="f", partitioner="rebalance")
    assert b.keyed_aggregate("k", "f", parallelism=3) == "k"
    assert b._operators[-1] == OperatorSpec(name="k", kind="keyed_aggregate", parallelism=3, aggregate="count")
    assert b._edges[-1] == EdgeSpec(source="f", target="k", partitioner="hash")
    assert b.window("w", "k", size=4, parallelism=3, partitioner="hash", exchange_mode="blocking") == "w"
    assert b._operators[-1] == OperatorSpec(name="w", kind="window", parallelism=3, aggregate="count",
                                            window_size=4, window_slide=None, window_offset=0, allowed_lateness=0)
    assert b._edges[-1] == EdgeSpec(source="k", target="w", partitioner="hash", exchange_mode="blocking")
    assert b.window("w2", "k", size=4, slide=2, offset=1, allowed_lateness=3, aggregate="sum") == "w2"
    assert b._operators[-1] == OperatorSpec(name="w2", kind="window", parallelism=2, aggregate="sum",
                                            window_size=4, window_slide=2, window_offset=1, allowed_lateness=3)
    assert b.sink("out", ["w", "w2"], parallelism=3) == "out"
    assert b._operators[-1] == OperatorSpec(name="out", kind="sink", parallelism=3, sink_kind="two_phase_commit")
    assert b._edges[-2:] == [EdgeSpec(source="w", target="out", partitioner="forward"),
                             EdgeSpec(source="w2", target="out", partitioner="rebalance")]
    assert b.build(validate=False) == StreamGraph(name="wc", operators=tuple(b._operators), edges=tuple(b._edges))
    g = accepted(b.build)
    assert g == StreamGraph(name="wc", operators=tuple(b._operators), edges=tuple(b._edges))


def test_the_builder_flags_and_connect():
    b = StreamGraphBuilder(chaining_enabled=False, all_vertices_in_same_slot_sharing_group_by_default=False,
                           chain_operators_with_different_max_parallelism=False)
    s = b.source("s", parallelism=3)
    assert b.connect(s, "later") is b
    assert b._edges == [EdgeSpec(source="s", target="later", partitioner="forward")]
    b.connect("s", "s", partitioner="rescale", exchange_mode="blocking")
    assert b._edges[-1] == EdgeSpec(source="s", target="s", partitioner="rescale", exchange_mode="blocking")
    assert b.build(validate=False) == StreamGraph(
        name="job", operators=(OperatorSpec(name="s", kind="source", parallelism=3),), edges=tuple(b._edges),
        chaining_enabled=False, all_vertices_in_same_slot_sharing_group_by_default=False,
        chain_operators_with_different_max_parallelism=False)
    b2 = StreamGraphBuilder()
    b2.source("s")
    assert refused(b2.map, "x", "s", bogus=1) == (
        "operator 'x': bad parameter: OperatorSpec.__init__() got an unexpected keyword argument 'bogus'")
    assert refused(StreamGraphBuilder().source("s", parallelism=0) and StreamGraphBuilder().build) == (
        "job 'job': has no operators (Flink: No operators defined in streaming topology)")
    b3 = StreamGraphBuilder()
    b3.source("s", parallelism=None)
    assert b3._operators == [OperatorSpec(name="s", kind="source", parallelism=1)]


# -- the dict form --------------------------------------------------------------------------------

def test_to_dict_leaves_out_defaults_and_a_default_partitioner():
    g = StreamGraph(name="j", operators=(
        OperatorSpec(name="s", kind="source", parallelism=2, watermark_out_of_orderness=3, max_parallelism=8),
        OperatorSpec(name="w", kind="window", parallelism=2, aggregate="sum", window_size=4, window_offset=0,
                     slot_sharing_group="g")),
        edges=(EdgeSpec(source="s", target="w", partitioner="hash", default_partitioner=False),),
        chaining_enabled=False)
    assert stream_graph_to_dict(g) == {
        "name": "j", "chaining_enabled": False, "all_vertices_in_same_slot_sharing_group_by_default": True,
        "chain_operators_with_different_max_parallelism": True,
        "operators": [{"name": "s", "kind": "source", "parallelism": 2, "max_parallelism": 8,
                       "watermark_out_of_orderness": 3},
                      {"name": "w", "kind": "window", "parallelism": 2, "slot_sharing_group": "g", "aggregate": "sum",
                       "window_size": 4}],
        "edges": [{"source": "s", "target": "w", "partitioner": "hash", "exchange_mode": "pipelined"}]}
    g2 = attrs.evolve(g, edges=(EdgeSpec(source="s", target="w", partitioner="forward", exchange_mode="blocking",
                                         default_partitioner=True),))
    assert stream_graph_to_dict(g2)["edges"] == [{"source": "s", "target": "w", "exchange_mode": "blocking"}]
    g3 = StreamGraph(operators=(OperatorSpec(name="s", kind="source", parallelism=1),))
    assert stream_graph_to_dict(g3)["operators"] == [{"name": "s", "kind": "source", "parallelism": 1}]


def test_from_dict_without_validation():
    d = {"name": "j", "operators": [{"name": "s", "kind": "source", "parallelism": 0}],
         "edges": [{"source": "s", "target": "s", "partitioner": "hash"}], "chaining_enabled": False}
    assert stream_graph_from_dict(d, validate=False) == StreamGraph(
        name="j", operators=(OperatorSpec(name="s", kind="source", parallelism=0),),
        edges=(EdgeSpec(source="s", target="s", partitioner="hash"),), chaining_enabled=False)


def test_from_dict():
    d = {"name": "j", "chaining_enabled": False,
         "operators": [{"name": "s", "kind": "source", "parallelism": 2}, {"name": "m", "kind": "map", "parallelism": 3},
                       {"name": "n", "kind": "map", "parallelism": 2}],
         "edges": [{"source": "s", "target": "m"}, {"source": "s", "target": "n"},
                   {"source": "m", "target": "n", "partitioner": "rebalance", "exchange_mode": "blocking"}],
         "runtime": {"unaligned": True}}
    g = accepted(stream_graph_from_dict, d)
    assert g == StreamGraph(name="j", chaining_enabled=False, operators=(
        OperatorSpec(name="s", kind="source", parallelism=2), OperatorSpec(name="m", kind="map", parallelism=3),
        OperatorSpec(name="n", kind="map", parallelism=2)), edges=(
        EdgeSpec(source="s", target="m", partitioner="rebalance", default_partitioner=True),
        EdgeSpec(source="s", target="n", partitioner="forward", default_partitioner=True),
        EdgeSpec(source="m", target="n", partitioner="rebalance", exchange_mode="blocking")))
    assert d["edges"][0] == {"source": "s", "target": "m"}, "the input is left as it was"
    assert accepted(stream_graph_from_dict, {"operators": [{"name": "s", "kind": "source"}]}) == StreamGraph(
        name="job", operators=(OperatorSpec(name="s", kind="source"),))
    # an edge to a missing operator gets forward, and is refused by the validation
    raw = stream_graph_from_dict({"operators": [{"name": "s", "kind": "source", "parallelism": 2}],
                                  "edges": [{"source": "s", "target": "x"}, {"source": "y", "target": "s"}]},
                                 validate=False)
    assert raw == StreamGraph(operators=(OperatorSpec(name="s", kind="source", parallelism=2),), edges=(
        EdgeSpec(source="s", target="x", default_partitioner=True),
        EdgeSpec(source="y", target="s", default_partitioner=True)))


def test_from_dict_refusals():
    def msg(d):
        return refused(stream_graph_from_dict, d)

    assert msg([]) == "job: must be a table/object, not list"
    assert msg({"name": "j"}) == "job: missing required key 'operators'"
    assert msg({"operators": [], "x": 1}) == (
        "job: unknown key 'x' (known: name, operators, edges, chaining_enabled, "
        "all_vertices_in_same_slot_sharing_group_by_default, chain_operators_with_different_max_parallelism, "
        "runtime, environment, input)")
    assert msg({"operators": [], "chaining_enabled": 1}) == "job: key 'chaining_enabled' must be a boolean, not 1"
    assert msg({"operators": {}}) == "job: key 'operators' must be a list, not {}"
    assert msg({"operators": [], "runtime": 1}) == "job: key 'runtime' must be a table, not 1"
    assert msg({"name": "j", "operators": [3]}) == "job 'j' operator #0: must be a table/object, not int"
    assert msg({"operators": [{"kind": "source"}]}) == "job 'job' operator #0: missing required key 'name'"
    assert msg({"operators": [{"name": 1, "kind": "source"}]}) == (
        "job 'job' operator #0: key 'name' must be a string, not 1")
    assert msg({"operators": [{"name": "s"}]}) == "operator 's': missing required key 'kind'"
    assert msg({"operators": [{"name": "s", "kind": "source", "parallelism": True}]}) == (
        "operator 's': key 'parallelism' must be an integer, not True")
    assert msg({"operators": [{"name": "s", "kind": "source", "max_parallelism": "2"}]}) == (
        "operator 's': key 'max_parallelism' must be an integer or null, not '2'")
    assert msg({"operators": [{"name": "s", "kind": "source", "colour": 1}]}).startswith(
        "operator 's': unknown key 'colour' (known: name, kind, parallelism, max_parallelism, ")
    assert msg({"operators": [{"name": "s", "kind": "source"}], "edges": [{"source": "s"}]}) == (
        "job 'job' edge #0: missing required key 'target'")
    assert msg({"operators": [{"name": "s", "kind": "source"}], "edges": [{"source": "s", "target": 2}]}) == (
        "job 'job' edge #0: key 'target' must be a string, not 2")
    assert msg({"operators": [{"name": "s", "kind": "source"}], "edges": [[1]]}) == (
        "job 'job' edge #0: must be a table/object, not list")
    assert msg({"operators": [{"name": "s", "kind": "source"}],
                "edges": [{"source": "s", "target": "t", "mode": 1}]}) == (
        "edge 's' -> 't': unknown key 'mode' (known: source, target, partitioner, exchange_mode)")
    assert msg({"operators": [{"name": "s", "kind": "source", "parallelism": 0}]}) == (
        "operator 's': parallelism must be at least 1, not 0 (Flink: The parallelism of an operator must be at "
        "least 1)")
    assert stream_graph_from_dict({"operators": [{"name": "s", "kind": "source", "parallelism": 0}]},
                                  validate=False).operators[0].parallelism == 0
    assert sg._type_name((int, type(None))) == "an integer or null"
    assert sg._type_name((str, bool, list, dict, float)) == "a string or a boolean or a list or a table or float"


# -- the schema and the sizes ----------------------------------------------------------------------

def test_the_job_spec_schema():
    s = job_spec_schema()
    assert s is job_spec_schema()
    assert (s["$schema"], s["$id"], s["title"], s["type"], s["required"], s["additionalProperties"]) == (
        "https://json-schema.org/draft/2020-12/schema", "https://flinkspec.invalid/schemas/job-spec.schema.json",
        "flinkspec job spec (a StreamGraph: operators and edges)", "object", ["operators"], False)
    p = s["properties"]
    assert list(p) == list(sg._GRAPH_FIELDS)
    assert p["name"] == {"type": "string", "minLength": 1, "maxLength": 200}
    assert p["chaining_enabled"] == {"type": "boolean"}
    assert p["runtime"] == {"type": "object"} and p["input"] == {"type": "object"}
    assert (p["operators"]["type"], p["operators"]["maxItems"]) == ("array", 1000)
    assert (p["edges"]["type"], p["edges"]["maxItems"]) == ("array", 10000)
    o = p["operators"]["items"]
    assert (o["type"], o["required"], o["additionalProperties"]) == ("object", ["name", "kind"], False)
    f = o["properties"]
    assert f["kind"] == {"type": "string", "enum": list(sg.OPERATOR_KINDS)}
    assert f["parallelism"] == {"type": "integer", "minimum": 1, "maximum": 32768}
    assert f["max_parallelism"] == {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 32768}, {"type": "null"}]}
    assert f["window_size"] == {"anyOf": [{"type": "integer", "minimum": 1, "maximum": INT_MAX}, {"type": "null"}]}
    assert f["window_slide"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": INT_MAX}
    assert f["window_offset"] == {"type": "integer", "minimum": INT_MIN, "maximum": INT_MAX}
    assert f["allowed_lateness"] == {"type": "integer", "minimum": 0, "maximum": INT_MAX}
    assert f["watermark_out_of_orderness"] == {"type": "integer", "minimum": 0, "maximum": INT_MAX}
    assert f["chaining_strategy"] == {"anyOf": [{"type": "string", "enum": list(sg.CHAINING_STRATEGIES)},
                                                {"type": "null"}]}
    assert f["aggregate"]["anyOf"][0] == {"type": "string", "enum": ["count", "sum"]}
    assert f["sink_kind"]["anyOf"][0] == {"type": "string", "enum": list(sg.SINK_KINDS)}
    assert f["slot_sharing_group"] == {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 200},
                                                 {"type": "null"}]}
    e = p["edges"]["items"]
    assert (e["required"], e["additionalProperties"]) == (["source", "target"], False)
    assert e["properties"] == {"source": {"type": "string", "minLength": 1, "maxLength": 200},
                               "target": {"type": "string", "minLength": 1, "maxLength": 200},
                               "partitioner": {"type": "string", "enum": list(sg.PARTITIONERS)},
                               "exchange_mode": {"type": "string", "enum": list(sg.EXCHANGE_MODES)}}


def test_execution_size_and_its_bounds():
    g = graph([op("s", "source", 3), op("m", "map", 3), op("n", "map", 5), op("k", "map", 2), op("o", "sink", 7)],
              [edge("s", "m"), edge("m", "n", "rescale"), edge("n", "k", "hash"), edge("k", "o", "broadcast"),
               edge("s", "o", "rebalance")])
    assert execution_size(g) == (20, 3 + 5 + 10 + 14 + 21)
    assert accepted(check_execution_size, g, "job", max_subtasks=20, max_channels=53) is None
    assert refused(check_execution_size, g, "j", max_subtasks=19) == (
        "j: the job has 20 subtasks, more than the model's limit of 19")
    assert refused(check_execution_size, g, "j", max_channels=52) == (
        "j: the job would have up to 53 channels, more than the model's limit of 52 (lower the parallelism of "
        "all-to-all edges)")
    assert execution_size(graph([op("s", "source", 4)], [])) == (4, 0)
    big = graph([op("s", "source", 10_000)], [])
    assert accepted(check_execution_size, big, "job") is None
    assert refused(check_execution_size, graph([op("s", "source", 10_001)], []), "job") == (
        "job: the job has 10001 subtasks, more than the model's limit of 10000")
    wide = graph([op("s", "source", 316), op("m", "map", 316)], [edge("s", "m", "hash")])
    assert accepted(check_execution_size, wide, "job") is None
    assert refused(check_execution_size, graph([op("s", "source", 317), op("m", "map", 317)],
                                               [edge("s", "m", "hash")]), "job") == (
        "job: the job would have up to 100489 channels, more than the model's limit of 100000 (lower the "
        "parallelism of all-to-all edges)")


def test_load_stream_graph_messages(tmp_path):
    def load(name, text):
        p = tmp_path / name
        p.write_text(text)
        return p, refused(load_stream_graph, p)

    p, m = load("a.toml", "name = \n")
    assert m == f"{p}: malformed TOML: Invalid value (at line 1, column 8)"
    p, m = load("a.json", '{"operators": [], "operators": []}')
    assert m == f"{p}: duplicate key 'operators'"
    p, m = load("b.json", "{\n")
    assert m == f"{p}:2 column 1: malformed JSON: Expecting property name enclosed in double quotes"
    p, m = load("c.toml", '[[operators]]\nname = "s"\nkind = "source"\nparallelism = 0\n')
    assert m == (f"{p}: operator 's': parallelism must be at least 1, not 0 (Flink: The parallelism of an operator "
                 "must be at least 1)")
    p, m = load("d.toml", f'name = "{"n" * 201}"\n[[operators]]\nname = "s"\nkind = "source"\n')
    assert m == f"{p}:name: is 201 characters long, more than the limit of 200"
    p, m = load("e.toml", '[[operators]]\nname = "s"\nkind = "source"\nparallelism = 10001\n')
    assert m == f"{p}: job: the job has 10001 subtasks, more than the model's limit of 10000"
    p, m = load("f.toml", '[[operators]]\nname = "s"\nkind = "source"\nwatermark_out_of_orderness = 1\n'
                          '[[operators]]\nname = "w"\nkind = "window"\naggregate = "count"\nwindow_size = 0\n'
                          '[[edges]]\nsource = "s"\ntarget = "w"\npartitioner = "hash"\n')
    assert m.startswith(f"{p}: operator 'w': tumbling window needs abs(offset) < size")
    p, m = load("g.toml", '[[operators]]\nname = "s"\nkind = "source"\nmax_parallelism = 9223372036854775807\n')
    assert m == f"{p}: operator 's': max parallelism must be between 1 and 32768, not 9223372036854775807"
    p, m = load("h.toml", '[[operators]]\nname = "s"\nkind = "source"\nwatermark_out_of_orderness = 1\n'
                          'co_location_group = "' + "c" * 201 + '"\n')
    assert m == f"{p}:operators[0].co_location_group: is 201 characters long, more than the limit of 200"
    missing = tmp_path / "none.toml"
    assert refused(load_stream_graph, missing) == f"{missing}: cannot read the job spec: no such file"
    ok = tmp_path / "ok.json"
    ok.write_text('{"name": "j", "operators": [{"name": "s", "kind": "source", "parallelism": 2}]}')
    assert accepted(load_stream_graph, ok) == StreamGraph(name="j", operators=(OperatorSpec(name="s", kind="source",
                                                                                  parallelism=2),))
    assert load_stream_graph(str(ok)) == load_stream_graph(ok)


def test_the_specs_are_frozen_slotted_keyword_only_values():
    o = OperatorSpec(name="s", kind="source")
    e = EdgeSpec(source="a", target="b")
    g = StreamGraph()
    for x in (o, e, g):
        assert not hasattr(x, "__dict__")
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            x.name = "y"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        e.source = "c"
    with pytest.raises(TypeError):
        OperatorSpec("s", "source")
    with pytest.raises(TypeError):
        EdgeSpec("a", "b")
    with pytest.raises(TypeError):
        StreamGraph("j")


def test_each_builder_method_passes_its_partitioner_exchange_mode_and_parameters():
    b = StreamGraphBuilder(default_parallelism=2)
    assert b.source("s", parallelism=3, watermark_out_of_orderness=2, slot_sharing_group="g") == "s"
    assert b._operators[-1] == OperatorSpec(name="s", kind="source", parallelism=3, watermark_out_of_orderness=2,
                                            slot_sharing_group="g")
    assert b.map("m", "s", function="double", partitioner="rescale", exchange_mode="blocking",
                 chaining_strategy="NEVER") == "m"
    assert b._operators[-1] == OperatorSpec(name="m", kind="map", parallelism=2, function="double",
                                            chaining_strategy="NEVER")
    assert b._edges[-1] == EdgeSpec(source="s", target="m", partitioner="rescale", exchange_mode="blocking")
    assert b.filter("f", "m", function="even_value", partitioner="broadcast", exchange_mode="blocking",
                    parallelism=4, co_location_group="c") == "f"
    assert b._operators[-1] == OperatorSpec(name="f", kind="filter", parallelism=4, function="even_value",
                                            co_location_group="c")
    assert b._edges[-1] == EdgeSpec(source="m", target="f", partitioner="broadcast", exchange_mode="blocking")
    assert b.keyed_aggregate("k", "f", aggregate="sum", partitioner="rebalance", exchange_mode="blocking",
                             max_parallelism=8) == "k"
    assert b._operators[-1] == OperatorSpec(name="k", kind="keyed_aggregate", parallelism=2, aggregate="sum",
                                            max_parallelism=8)
    assert b._edges[-1] == EdgeSpec(source="f", target="k", partitioner="rebalance", exchange_mode="blocking")
    assert b.window("w", "k", size=6, partitioner="forward", slot_sharing_group="h") == "w"
    assert b._operators[-1] == OperatorSpec(name="w", kind="window", parallelism=2, aggregate="count",
                                            window_size=6, slot_sharing_group="h")
    assert b._edges[-1] == EdgeSpec(source="k", target="w", partitioner="forward")
    assert b.sink("o", "w", sink_kind="upsert", partitioner="rebalance", exchange_mode="blocking",
                  chaining_strategy="HEAD") == "o"
    assert b._operators[-1] == OperatorSpec(name="o", kind="sink", parallelism=2, sink_kind="upsert",
                                            chaining_strategy="HEAD")
    assert b._edges[-1] == EdgeSpec(source="w", target="o", partitioner="rebalance", exchange_mode="blocking")
    assert len(b._operators) == 6 and len(b._edges) == 5
    assert StreamGraphBuilder().source("x") == "x"
    b2 = StreamGraphBuilder()
    b2.source("ab", parallelism=2)
    b2.source("cd", parallelism=3)
    b2.map("un", ("ab", "cd"), parallelism=3)
    b2.sink("out", "un", parallelism=3)
    assert b2._edges == [EdgeSpec(source="ab", target="un", partitioner="rebalance"),
                         EdgeSpec(source="cd", target="un", partitioner="forward"),
                         EdgeSpec(source="un", target="out", partitioner="forward")]
