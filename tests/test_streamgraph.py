"""StreamGraph: validation rules, slot sharing group resolution, builder and files."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings

from model.errors import FlinkspecError, InvalidJobSpec
from model.executiongraph import compile_stream_graph
from model.jobgraph import compile_job_graph, load_job_graph
from model.streamgraph import (
    StreamGraphBuilder,
    load_stream_graph,
    resolve_slot_sharing_groups,
    stream_graph_from_dict,
    stream_graph_to_dict,
)
from properties.jobgraphs import invalid_stream_graphs, stream_graphs


from graph_util import edge, graph, op  # noqa: E402


def base_ops():
    return [op("src", "source", 2), op("map", "map", 2), op("out", "sink", 2)]


def base_edges():
    return [edge("src", "map"), edge("map", "out")]


def test_valid_base_graph_passes():
    g = graph(base_ops(), base_edges())
    assert g.validate() is g


# (name, graph, subject that must appear, words of the rule that must appear)
INVALID = [
    ("no operators", graph([], []), "job 't'", "no operators"),
    ("cycle", graph([op("src", "source"), op("a", "map"), op("b", "map")],
                    [edge("src", "a"), edge("a", "b"), edge("b", "a")]), "edge '", "cycle"),
    ("self loop", graph([op("src", "source"), op("a", "map")], [edge("src", "a"), edge("a", "a")]),
     "edge 'a' -> 'a'", "cycle"),
    ("unknown kind", graph([op("src", "source"), op("fm", "flatmap")], [edge("src", "fm")]),
     "operator 'fm'", "unknown operator kind 'flatmap'"),
    ("duplicate name", graph([op("src", "source"), op("src", "source")], []), "operator 'src'", "duplicate"),
    ("parallelism 0", graph([op("src", "source", 0)], []), "operator 'src'", "at least 1"),
    ("parallelism negative", graph([op("src", "source", -2)], []), "operator 'src'", "at least 1"),
    ("parallelism not int", graph([op("src", "source", 1.5)], []), "operator 'src'", "integer"),
    ("parallelism > max parallelism", graph([op("src", "source", 5, max_parallelism=4)], []),
     "operator 'src'", "higher than the max parallelism 4"),
    ("parallelism > 32768 (default max parallelism)", graph([op("src", "source", 32769)], []),
     "operator 'src'", "higher than the max parallelism 32768"),
    ("max parallelism > 32768", graph([op("src", "source", 1, max_parallelism=32769)], []),
     "operator 'src'", "between 1 and 32768"),
    ("max parallelism 0", graph([op("src", "source", 1, max_parallelism=0)], []),
     "operator 'src'", "between 1 and 32768"),
    ("forward between different parallelisms",
     graph([op("src", "source", 2), op("map", "map", 3)], [edge("src", "map")]),
     "edge 'src' -> 'map'", "forward partitioning does not allow change of parallelism (2 -> 3)"),
    ("unknown partitioner", graph([op("src", "source"), op("map", "map")], [edge("src", "map", "shuffle")]),
     "edge 'src' -> 'map'", "unknown partitioner 'shuffle'"),
    ("unknown exchange mode", graph([op("src", "source"), op("map", "map")],
                                    [edge("src", "map", mode="hybrid")]),
     "edge 'src' -> 'map'", "unknown exchange mode 'hybrid'"),
    ("unknown chaining strategy", graph([op("src", "source", chaining_strategy="SOMETIMES")], []),
     "operator 'src'", "unknown chaining strategy"),
    ("unknown aggregate", graph([op("src", "source"), op("agg", "keyed_aggregate", aggregate="avg")],
                                [edge("src", "agg", "hash")]), "operator 'agg'", "unknown aggregate 'avg'"),
    ("missing aggregate", graph([op("src", "source"), op("agg", "keyed_aggregate", aggregate=None)],
                                [edge("src", "agg", "hash")]), "operator 'agg'", "needs 'aggregate'"),
    ("unknown sink kind", graph([op("src", "source"), op("out", "sink", sink_kind="kafka")], [edge("src", "out")]),
     "operator 'out'", "unknown sink kind 'kafka'"),
    ("missing sink kind", graph([op("src", "source"), op("out", "sink", sink_kind=None)], [edge("src", "out")]),
     "operator 'out'", "needs 'sink_kind'"),
    ("unknown map function", graph([op("src", "source"), op("m", "map", function="square")], [edge("src", "m")]),
     "operator 'm'", "unknown map function 'square'"),
    ("keyed aggregate behind rebalance",
     graph([op("src", "source", 2), op("agg", "keyed_aggregate", 2)], [edge("src", "agg", "rebalance")]),
     "edge 'src' -> 'agg'", "keyBy ('hash')"),
    ("window behind forward",
     graph([op("src", "source"), op("w", "window")], [edge("src", "w", "forward")]),
     "edge 'src' -> 'w'", "keyBy ('hash')"),
    ("keyed operator with one non-hash input of two",
     graph([op("a", "source"), op("b", "source"), op("w", "window")],
           [edge("a", "w", "hash"), edge("b", "w", "broadcast")]), "edge 'b' -> 'w'", "keyBy"),
    ("dangling edge (target)", graph([op("src", "source")], [edge("src", "ghost")]),
     "edge 'src' -> 'ghost'", "missing operator 'ghost'"),
    ("dangling edge (source)", graph([op("src", "source"), op("m", "map")], [edge("src", "m"), edge("ghost", "m")]),
     "edge 'ghost' -> 'm'", "missing operator 'ghost'"),
    ("source with inputs", graph([op("a", "source"), op("b", "source")], [edge("a", "b")]),
     "operator 'b'", "source cannot have inputs"),
    ("sink with outputs", graph([op("a", "source"), op("s", "sink"), op("m", "map")], [edge("a", "s"), edge("s", "m")]),
     "operator 's'", "sink cannot have outputs"),
    ("operator without inputs", graph([op("a", "source"), op("m", "map")], []),
     "operator 'm'", "needs at least one input"),
    ("duplicate edge", graph([op("a", "source"), op("m", "map")], [edge("a", "m"), edge("a", "m", "rebalance")]),
     "edge 'a' -> 'm'", "duplicate edge"),
    ("window without size", graph([op("a", "source"), op("w", "window", window_size=None)], [edge("a", "w", "hash")]),
     "operator 'w'", "needs 'window_size'"),
    ("tumbling size 0", graph([op("a", "source"), op("w", "window", window_size=0)], [edge("a", "w", "hash")]),
     "operator 'w'", "abs(offset) < size"),
    ("tumbling |offset| >= size",
     graph([op("a", "source"), op("w", "window", window_size=10, window_offset=-10)], [edge("a", "w", "hash")]),
     "operator 'w'", "abs(offset) < size"),
    ("sliding slide 0",
     graph([op("a", "source"), op("w", "window", window_size=10, window_slide=0)], [edge("a", "w", "hash")]),
     "operator 'w'", "abs(offset) < slide and size > 0"),
    ("sliding |offset| >= slide",
     graph([op("a", "source"), op("w", "window", window_size=10, window_slide=5, window_offset=5)],
           [edge("a", "w", "hash")]), "operator 'w'", "abs(offset) < slide"),
    ("sliding size 0",
     graph([op("a", "source"), op("w", "window", window_size=0, window_slide=5)], [edge("a", "w", "hash")]),
     "operator 'w'", "size > 0"),
    ("negative allowed lateness",
     graph([op("a", "source"), op("w", "window", allowed_lateness=-1)], [edge("a", "w", "hash")]),
     "operator 'w'", "allowed_lateness"),
    ("negative out-of-orderness", graph([op("a", "source", watermark_out_of_orderness=-1)], []),
     "operator 'a'", "watermark_out_of_orderness"),
    ("parameter of another kind", graph([op("a", "source"), op("m", "map", window_size=3)], [edge("a", "m")]),
     "operator 'm'", "'window_size' does not apply to a map"),
    ("empty slot sharing group", graph([op("a", "source", slot_sharing_group="")], []),
     "operator 'a'", "non-empty string"),
]

# The co-location rule needs the operator chains (only a chain head's group counts), so it is
# checked where the chains are built (model.jobgraph.build_job_graph), as Flink's
# StreamingJobGraphGenerator.setCoLocation does; compile_job_graph / compile_stream_graph raise it.
CO_LOCATION_INVALID = [
    ("co-location across named slot sharing groups",
     graph([op("a", "source", slot_sharing_group="x", co_location_group="c"),
            op("m", "map", slot_sharing_group="y", co_location_group="c")], [edge("a", "m")]),
     "operator 'm'", "co-location group 'c' spans different slot sharing groups"),
    ("co-location across pipelined regions (regions get their own default group)",
     graph([op("a", "source", co_location_group="c"), op("m", "map", co_location_group="c")],
           [edge("a", "m", "rebalance", "blocking")], all_vertices_in_same_slot_sharing_group_by_default=False),
     "operator 'm'", "spans different slot sharing groups"),
    ("co-location with a default-resolved group (inputs disagree -> 'default')",
     graph([op("a", "source", slot_sharing_group="x", co_location_group="c"), op("b", "source"),
            op("m", "map", co_location_group="c")], [edge("a", "m", "rebalance"), edge("b", "m", "rebalance")]),
     "operator 'm'", "('a' is in 'x', 'm' is in 'default')"),
]


@pytest.mark.parametrize("name,g,subject,rule", INVALID, ids=[x[0] for x in INVALID])
def test_invalid_spec_raises_naming_subject_and_rule(name, g, subject, rule):
    with pytest.raises(InvalidJobSpec) as info:
        g.validate()
    err = info.value
    assert subject in err.subject, (err.subject, subject)
    assert rule in err.rule, (err.rule, rule)
    assert str(err) == f"{err.subject}: {err.rule}"
    assert "\n" not in str(err)


@pytest.mark.parametrize("name,g,subject,rule", CO_LOCATION_INVALID, ids=[x[0] for x in CO_LOCATION_INVALID])
@pytest.mark.parametrize("compile_", [compile_job_graph, compile_stream_graph], ids=["job_graph", "stream_graph"])
def test_co_location_rule_raises_at_compile_naming_subject_and_rule(name, g, subject, rule, compile_):
    g.validate()  # the StreamGraph's own rules hold; the broken rule needs the chains
    with pytest.raises(InvalidJobSpec) as info:
        compile_(g)
    err = info.value
    assert subject in err.subject, (err.subject, subject)
    assert rule in err.rule, (err.rule, rule)
    assert str(err) == f"{err.subject}: {err.rule}"
    assert "\n" not in str(err)
    assert "(Flink: Cannot co-locate operators from different slot sharing groups)" in err.rule


def test_co_location_error_from_a_file_names_the_file(tmp_path):
    path = tmp_path / "colocate.toml"
    path.write_text(
        '[[operators]]\nname = "a"\nkind = "source"\nslot_sharing_group = "x"\nco_location_group = "c"\n'
        '[[operators]]\nname = "m"\nkind = "map"\nslot_sharing_group = "y"\nco_location_group = "c"\n'
        '[[edges]]\nsource = "a"\ntarget = "m"\n'
    )
    load_stream_graph(path)  # the StreamGraph's own rules hold
    with pytest.raises(InvalidJobSpec) as info:
        load_job_graph(path)
    assert str(info.value) == (
        f"{path}: operator 'm': co-location group 'c' spans different slot sharing groups ('a' is in 'x', 'm' is in"
        " 'y') (Flink: Cannot co-locate operators from different slot sharing groups)"
    )


def test_co_location_of_a_chained_operator_is_ignored_like_flink():
    """Flink's setCoLocation reads only the chain head's co-location key.

        a (ssg x, col c) --forward--> m (col c, chained into a)   b (ssg y, col c)
    m's key is ignored (it is not a head), but a and b (both heads) disagree -> error;
    without b the job is valid although m and b ... are never compared.
    """
    ok = graph([op("a", "source", slot_sharing_group="x", co_location_group="c"),
                op("m", "map", co_location_group="c")], [edge("a", "m")])
    compile_job_graph(ok)
    bad = graph(list(ok.operators) + [op("b", "source", slot_sharing_group="y", co_location_group="c")],
                list(ok.edges))
    with pytest.raises(InvalidJobSpec, match="operator 'b'.*co-location group 'c'"):
        compile_job_graph(bad)


def test_resolve_slot_sharing_groups_follows_determine_slot_sharing_group():
    """
        s1 (ssg 'x') ──► m1 ──┐
                              ├──► u (inputs 'x' and 'default' disagree) ──► k
        s2 ─────────► m2 ─────┘
        s3 (ssg 'y') ──► n (ssg 'z', set by the user)
    m1 inherits 'x', m2 inherits 'default', u falls back to 'default', k inherits it,
    n keeps its own 'z'.
    """
    g = graph(
        [op("s1", "source", slot_sharing_group="x"), op("s2", "source"), op("s3", "source", slot_sharing_group="y"),
         op("m1", "map"), op("m2", "map"), op("u", "map"), op("k", "map"), op("n", "map", slot_sharing_group="z")],
        [edge("s1", "m1"), edge("s2", "m2"), edge("m1", "u", "rebalance"), edge("m2", "u", "rebalance"),
         edge("u", "k"), edge("s3", "n")],
    ).validate()
    assert resolve_slot_sharing_groups(g) == {
        "s1": "x", "s2": "default", "s3": "y", "m1": "x", "m2": "default", "u": "default", "k": "default", "n": "z",
    }
    # all inputs agree on a named group -> that group
    g2 = graph([op("a", "source", slot_sharing_group="x"), op("b", "source", slot_sharing_group="x"),
                op("m", "map")], [edge("a", "m", "rebalance"), edge("b", "m", "rebalance")])
    assert resolve_slot_sharing_groups(g2)["m"] == "x"


def test_builder_uses_flink_default_partitioner_and_validates():
    """src (p=2) ──► m (p=2): forward by default;  m ──► k (p=3): rebalance by default;
    k ──keyBy──► w (window, hash by default)."""
    b = StreamGraphBuilder("b")
    s = b.source("src", parallelism=2)
    m = b.map("m", s, parallelism=2)
    k = b.map("k", m, parallelism=3, function="add:1")
    w = b.window("w", k, size=5, slide=5, parallelism=3)
    b.sink("out", w, sink_kind="upsert", parallelism=3)
    g = b.build()
    parts = {(e.source, e.target): e.partitioner for e in g.edges}
    assert parts == {("src", "m"): "forward", ("m", "k"): "rebalance", ("k", "w"): "hash", ("w", "out"): "forward"}
    with pytest.raises(InvalidJobSpec, match="operator 'x'"):
        b2 = StreamGraphBuilder()
        b2.source("s")
        b2.map("x", "s", bogus=1)
    b3 = StreamGraphBuilder()
    b3.source("s")
    b3.map("m", "s", parallelism=2, partitioner="forward")
    with pytest.raises(InvalidJobSpec, match="forward partitioning"):
        b3.build()


@settings(max_examples=150, deadline=None)
@given(stream_graphs())
def test_dict_round_trip_of_generated_graphs(g):
    d = stream_graph_to_dict(g)
    json.dumps(d)  # JSON-able
    assert stream_graph_from_dict(d) == g


@settings(max_examples=150, deadline=None)
@given(invalid_stream_graphs())
def test_generated_invalid_graphs_are_rejected(case):
    g, rule = case
    with pytest.raises(InvalidJobSpec):
        g.validate()


def test_load_toml_and_json(tmp_path):
    toml = tmp_path / "job.toml"
    toml.write_text(
        'name = "j"\n[[operators]]\nname = "s"\nkind = "source"\nparallelism = 2\n'
        '[[operators]]\nname = "m"\nkind = "map"\nparallelism = 3\n'
        '[[edges]]\nsource = "s"\ntarget = "m"\n'
    )
    g = load_stream_graph(toml)
    assert g.edges[0].partitioner == "rebalance"  # Flink's default for a parallelism change
    js = tmp_path / "job.json"
    js.write_text(json.dumps(stream_graph_to_dict(g)))
    assert load_stream_graph(js) == g


@pytest.mark.parametrize(
    "name,text,expected",
    [
        ("bad.toml", "name = \n", "malformed TOML"),
        ("bad.json", "{", "malformed JSON"),
        ("keys.toml", '[[operators]]\nname = "s"\nkind = "source"\ncolour = "red"\n', "unknown key 'colour'"),
        ("types.toml", '[[operators]]\nname = "s"\nkind = "source"\nparallelism = "2"\n',
         "key 'parallelism' must be an integer"),
        ("bool.json", '{"operators": [{"name": "s", "kind": "source", "parallelism": true}]}',
         "key 'parallelism' must be an integer"),
        ("missing.toml", '[[operators]]\nname = "s"\n', "missing required key 'kind'"),
        ("top.toml", 'jobname = "x"\n[[operators]]\nname = "s"\nkind = "source"\n', "unknown key 'jobname'"),
        ("rule.toml", '[[operators]]\nname = "s"\nkind = "source"\nparallelism = 0\n', "operator 's': parallelism"),
        ("edge.toml", '[[operators]]\nname = "s"\nkind = "source"\n[[edges]]\nsource = "s"\ntarget = "t"\nmode = 1\n',
         "edge 's' -> 't': unknown key 'mode'"),
    ],
)
def test_bad_files_name_the_file_and_the_problem(tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(InvalidJobSpec) as info:
        load_stream_graph(path)
    msg = str(info.value)
    assert msg.startswith(str(path) + ":")
    assert expected in msg


def test_unreadable_or_unknown_format(tmp_path):
    with pytest.raises(FlinkspecError, match="cannot read"):
        load_stream_graph(tmp_path / "nope.toml")
    p = tmp_path / "job.yaml"
    p.write_text("x: 1")
    with pytest.raises(FlinkspecError, match="use .toml or .json"):
        load_stream_graph(p)


def test_examples_load():
    from pathlib import Path

    files = sorted((Path(__file__).parent.parent / "examples").glob("*.toml")) + sorted(
        (Path(__file__).parent.parent / "examples").glob("*.json"))
    assert any(f.name == "reference-window-job.toml" for f in files)
    for f in files:
        try:
            load_stream_graph(f)
        except InvalidJobSpec as e:  # other helpers may add deliberately invalid examples
            assert "invalid" in f.name, e


def test_reference_window_job_is_the_issue_3_job():
    from pathlib import Path

    g = load_stream_graph(Path(__file__).parent.parent / "examples" / "reference-window-job.toml")
    kinds = [(o.kind, o.parallelism) for o in g.operators]
    assert kinds == [("source", 2), ("window", 3), ("sink", 2)]
    assert g.operators[2].sink_kind == "two_phase_commit"
    assert g.operators[1].window_slide is None  # tumbling
    assert [e.partitioner for e in g.edges][0] == "hash"
