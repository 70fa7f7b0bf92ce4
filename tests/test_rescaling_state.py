"""Rescaling (model/rescaling.py) call by call: the StreamGraph a job resubmitted with new
parallelisms generates (``rescale_graph``), the list state ``RoundRobinOperatorStateRepartitioner``
hands out (``repartition_list_state``), every new subtask's restored state after
``StateAssignmentOperation`` (``rescale_states``), and the in-flight data of an unaligned
checkpoint placed in the new channels (``rescale_channel_states``) or refused
(``channel_rescale_refusal``), each asserted whole on small hand-made savepoints.

The keyed job::

    src (p=2) --rebalance--> m (p=2) --hash--> [agg (keyed count, maxP 6) -> out] (p=3)

rescaled to ``m`` 3, ``agg`` and ``out`` 2 (key groups [0,1],[2,3],[4,5] -> [0,2],[3,5]).
"""

import attrs
import pytest

from model.channelstaterescaling import ChannelStateRescalingError
from model.errors import FlinkspecError
from model.executiongraph import compile_stream_graph
from model.rescaling import (EdgeReassignment, RestoredState, _old_inflight, channel_rescale_refusal,
                             repartition_list_state, rescale_channel_states, rescale_graph, rescale_states)
from model.stateassignment import StateAssignmentError
from model.streamgraph import StreamGraphBuilder
from model.streamtask import TaskSnapshot

NEW = {"m": 3, "agg": 2, "out": 2}


def _keyed_job():
    b = StreamGraphBuilder("keyed")
    b.source("src", parallelism=2)
    b.map("m", "src", partitioner="rebalance", parallelism=2)
    b.keyed_aggregate("agg", "m", aggregate="count", parallelism=3, max_parallelism=6)
    b.sink("out", "agg", sink_kind="two_phase_commit", parallelism=3)
    return b.build()


def _empty_snaps(eg, cid):
    return {s.id: TaskSnapshot(cid, s.id, s.job_vertex, s.subtask_index) for s in eg.subtasks}


def _ops(g):
    return [(o.name, o.parallelism, o.max_parallelism) for o in g.operators]


# -- rescale_graph -------------------------------------------------------------------------------

def test_rescale_graph_sets_the_new_parallelisms_and_fixes_auto_max_parallelisms():
    g = _keyed_job()
    assert _ops(g) == [("src", 2, None), ("m", 2, None), ("agg", 3, 6), ("out", 3, None)]
    new = rescale_graph(g, NEW)
    # an auto-configured max parallelism is the old parallelism's default (128), kept explicitly
    assert _ops(new) == [("src", 2, 128), ("m", 3, 128), ("agg", 2, 6), ("out", 2, 128)]
    assert new.edges == g.edges  # partitioners the job set are kept
    assert new.name == g.name
    assert _ops(g) == [("src", 2, None), ("m", 2, None), ("agg", 3, 6), ("out", 3, None)]  # unchanged
    # an operator not named keeps its parallelism
    assert _ops(rescale_graph(g, {})) == [("src", 2, 128), ("m", 2, 128), ("agg", 3, 6), ("out", 3, 128)]


def test_an_edge_without_a_partitioner_gets_flinks_default_for_the_new_parallelisms():
    b = StreamGraphBuilder("d")
    b.source("src", parallelism=2)
    b.map("m", "src", parallelism=2)
    b.map("n", "m", partitioner="rebalance", parallelism=2)
    g = b.build()
    g = attrs.evolve(g, edges=(attrs.evolve(g.edges[0], default_partitioner=True), g.edges[1]))
    assert [(e.partitioner, e.default_partitioner) for e in g.edges] == [("forward", True), ("rebalance", False)]
    up = rescale_graph(g, {"m": 3})
    assert [(e.source, e.target, e.partitioner, e.default_partitioner) for e in up.edges] == \
        [("src", "m", "rebalance", True), ("m", "n", "rebalance", False)]
    back = rescale_graph(up, {"m": 2})
    assert [(e.source, e.target, e.partitioner, e.default_partitioner) for e in back.edges] == \
        [("src", "m", "forward", True), ("m", "n", "rebalance", False)]
    # an edge the job set keeps its partitioner even where it no longer fits: validate() refuses it
    b = StreamGraphBuilder("f")
    b.source("src", parallelism=2)
    b.map("m", "src", partitioner="forward", parallelism=2)
    with pytest.raises(FlinkspecError):
        rescale_graph(b.build(), {"m": 3})


def test_unknown_operators_are_one_clear_error():
    with pytest.raises(FlinkspecError, match=r"rescale: unknown operator\(s\) \['aa', 'zz'\]"):
        rescale_graph(_keyed_job(), {"zz": 1, "aa": 2, "m": 1})


# -- repartition_list_state ----------------------------------------------------------------------

def test_list_state_is_split_round_robin_from_new_subtask_zero():
    assert repartition_list_state([["a", "b", "c"], ["d"]], 3) == [["a", "b"], ["c"], ["d"]]
    assert repartition_list_state([["a"], ["b"], ["c"], ["d"], ["e"]], 2) == [["a", "b", "c"], ["d", "e"]]
    assert repartition_list_state([["a", "b"], []], 4) == [["a"], ["b"], [], []]
    assert repartition_list_state([[], []], 2) == [[], []]


# -- rescale_states ------------------------------------------------------------------------------

def _savepoint(eg, cid=7):
    snaps = _empty_snaps(eg, cid)
    snaps[0].operator["src"] = [("s0", 3), ("s2", 1)]
    snaps[1].operator["src"] = [("s1", 5)]
    snaps[2].operator["m"] = None  # no state of this name: skipped
    snaps[4].keyed["agg"] = {0: ("k", 1), 1: ("j", 2)}
    snaps[5].keyed["agg"] = {2: ("x", 1), 3: ("y", 1)}
    snaps[6].keyed["agg"] = {4: ("z", 1), 5: ("w", 9)}
    snaps[4].operator["agg"] = None  # no list state of this name, before one that has
    snaps[4].operator["out"] = "tx0"  # a single entry: a list of one
    snaps[5].operator["out"] = ["tx1", "tx1b"]
    snaps[6].operator["out"] = []
    return snaps


def test_every_new_subtask_gets_its_key_groups_and_its_share_of_the_list_state():
    g = _keyed_job()
    old, new = compile_stream_graph(g), compile_stream_graph(rescale_graph(g, NEW))
    assert [(s.id, s.job_vertex, s.subtask_index) for s in new.subtasks] == \
        [(0, "src", 0), (1, "src", 1), (2, "m", 0), (3, "m", 1), (4, "m", 2), (5, "agg", 0), (6, "agg", 1)]
    snaps = _savepoint(old)
    restored = rescale_states(old, new, snaps, 7)
    assert restored == RestoredState(7, {
        0: TaskSnapshot(7, 0, "src", 0, operator={"src": [("s0", 3), ("s2", 1)]}),
        1: TaskSnapshot(7, 1, "src", 1, operator={"src": [("s1", 5)]}),
        2: TaskSnapshot(7, 2, "m", 0), 3: TaskSnapshot(7, 3, "m", 1), 4: TaskSnapshot(7, 4, "m", 2),
        5: TaskSnapshot(7, 5, "agg", 0, keyed={"agg": {0: ("k", 1), 1: ("j", 2), 2: ("x", 1)}},
                        operator={"out": ["tx0", "tx1"]}),
        6: TaskSnapshot(7, 6, "agg", 1, keyed={"agg": {3: ("y", 1), 4: ("z", 1), 5: ("w", 9)}},
                        operator={"out": ["tx1b"]}),
    })
    got = {sid: (t.checkpoint_id, t.subtask, t.job_vertex, t.subtask_index, t.keyed, t.operator)
           for sid, t in restored.task_states.items()}
    assert got == {
        0: (7, 0, "src", 0, {}, {"src": [("s0", 3), ("s2", 1)]}),
        1: (7, 1, "src", 1, {}, {"src": [("s1", 5)]}),
        2: (7, 2, "m", 0, {}, {}),
        3: (7, 3, "m", 1, {}, {}),
        4: (7, 4, "m", 2, {}, {}),
        5: (7, 5, "agg", 0, {"agg": {0: ("k", 1), 1: ("j", 2), 2: ("x", 1)}}, {"out": ["tx0", "tx1"]}),
        6: (7, 6, "agg", 1, {"agg": {3: ("y", 1), 4: ("z", 1), 5: ("w", 9)}}, {"out": ["tx1b"]}),
    }
    assert list(restored.task_states) == [0, 1, 2, 3, 4, 5, 6]
    for t in restored.task_states.values():  # nothing in flight from a savepoint
        assert (t.input_channel_state, t.output_channel_state, t.finished) == ({}, {}, False)
    # the savepoint itself is untouched
    assert snaps[4].operator["out"] == "tx0" and snaps[5].operator["out"] == ["tx1", "tx1b"]
    assert snaps[5].keyed["agg"] == {2: ("x", 1), 3: ("y", 1)}


def test_a_scale_up_splits_the_source_splits_and_the_key_groups():
    g = _keyed_job()
    old = compile_stream_graph(g)
    new = compile_stream_graph(rescale_graph(g, {"src": 3, "agg": 6, "out": 6}))
    restored = rescale_states(old, new, _savepoint(old), 7).task_states
    src = [restored[s].operator.get("src") for s in new.subtasks_of("src")]
    assert src == [[("s0", 3)], [("s2", 1)], [("s1", 5)]]
    agg = [restored[s].keyed.get("agg") for s in new.subtasks_of("agg")]
    assert agg == [{0: ("k", 1)}, {1: ("j", 2)}, {2: ("x", 1)}, {3: ("y", 1)}, {4: ("z", 1)}, {5: ("w", 9)}]
    out = [restored[s].operator.get("out") for s in new.subtasks_of("agg")]
    assert out == [["tx0"], ["tx1"], ["tx1b"], [], [], []]


def test_a_savepoint_missing_a_subtask_is_one_clear_error():
    g = _keyed_job()
    old, new = compile_stream_graph(g), compile_stream_graph(rescale_graph(g, NEW))
    snaps = _savepoint(old)
    del snaps[3]
    with pytest.raises(FlinkspecError, match=r"savepoint 7 has no state of m \(2/2\)"):
        rescale_states(old, new, snaps, 7)


def _agg_job(agg_p, max_p):
    b = StreamGraphBuilder("keyed")
    b.source("src", parallelism=2)
    b.map("m", "src", partitioner="rebalance", parallelism=2)
    b.keyed_aggregate("agg", "m", aggregate="count", parallelism=agg_p, max_parallelism=max_p)
    b.sink("out", "agg", sink_kind="two_phase_commit", parallelism=agg_p)
    return b.build()


def test_the_max_parallelism_rules_name_the_operator():
    old = compile_stream_graph(_keyed_job())
    snaps = _savepoint(old)
    with pytest.raises(StateAssignmentError, match=r"operator 'agg': Max parallelism mismatch between "
                                                    r"checkpoint/savepoint state \(6\) and the new program \(8\)"):
        rescale_states(old, compile_stream_graph(_agg_job(2, 8)), snaps, 7)
    # an auto-configured new max parallelism adopts the savepoint's 6: parallelism 8 is too high
    with pytest.raises(StateAssignmentError, match=r"operator 'agg': the new parallelism 8 is higher than the max "
                                                    r"parallelism 6 of the restored state"):
        rescale_states(old, compile_stream_graph(_agg_job(8, None)), snaps, 7)
    # adopted: 4 subtasks over the savepoint's 6 key groups
    restored = rescale_states(old, compile_stream_graph(_agg_job(4, None)), snaps, 7).task_states
    assert [restored[s].keyed["agg"] for s in (4, 5, 6, 7)] == \
        [{0: ("k", 1), 1: ("j", 2)}, {2: ("x", 1)}, {3: ("y", 1), 4: ("z", 1)}, {5: ("w", 9)}]


# -- in-flight data ------------------------------------------------------------------------------

def test_the_old_in_flight_records_per_edge_and_old_channel():
    """``_old_inflight``: per JobEdge, per (old upstream index, old downstream index), the input
    channel state of the consumer, then the output channel state of the producer."""
    old = compile_stream_graph(_keyed_job())
    snaps = _empty_snaps(old, 4)
    assert _old_inflight(old, snaps) == {}
    snaps[5].input_channel_state[6] = [("k2", 1)]  # channel 6: m0 -> agg1
    snaps[5].input_channel_state[7] = []  # channel 7: m1 -> agg1, nothing
    snaps[2].output_channel_state[6] = [("k7", 2)]
    snaps[3].output_channel_state[9] = [("k24", 3)]  # channel 9: m1 -> agg2, output state alone
    snaps[2].input_channel_state[0] = [("a", 1)]  # channel 0: src0 -> m0
    assert _old_inflight(old, snaps) == {
        0: {(0, 0): [("a", 1)]},
        1: {(0, 1): [("k2", 1), ("k7", 2)], (1, 2): [("k24", 3)]},
    }
    assert snaps[5].input_channel_state[6] == [("k2", 1)]  # the snapshot is not changed
    # a subtask without a snapshot contributes nothing
    del snaps[5]
    assert _old_inflight(old, snaps) == {0: {(0, 0): [("a", 1)]}, 1: {(0, 1): [("k7", 2)], (1, 2): [("k24", 3)]}}


def test_in_flight_records_are_placed_in_the_new_channels_input_state_first():
    g = _keyed_job()
    old, new = compile_stream_graph(g), compile_stream_graph(rescale_graph(g, NEW))
    assert [(c.id, c.job_edge, c.producer, c.consumer) for c in new.channels] == [
        (0, 0, 0, 2), (1, 0, 1, 2), (2, 0, 0, 3), (3, 0, 1, 3), (4, 0, 0, 4), (5, 0, 1, 4),
        (6, 1, 2, 5), (7, 1, 3, 5), (8, 1, 4, 5), (9, 1, 2, 6), (10, 1, 3, 6), (11, 1, 4, 6)]
    snaps = _empty_snaps(old, 4)
    assert rescale_channel_states(old, new, snaps) == ({}, ())
    assert channel_rescale_refusal(old, new, snaps) is None
    # old channels: 0 src0->m0, 4 m0->agg0, 6 m0->agg1, 9 m1->agg2
    snaps[2].input_channel_state[0] = [("a", 1)]
    snaps[4].input_channel_state[4] = [("k0", 1)]
    snaps[5].input_channel_state[6] = [("k2", 1), ("k7", 2)]  # old agg 1: split between new 0 and 1
    snaps[6].input_channel_state[9] = [("k1", 1)]
    snaps[3].output_channel_state[9] = [("k24", 3)]  # the producer's output state, after the input state
    assert channel_rescale_refusal(old, new, snaps) is None
    placed, report = rescale_channel_states(old, new, snaps)
    assert placed == {0: [("a", 1)], 6: [("k0", 1), ("k2", 1)], 9: [("k7", 2)], 10: [("k1", 1), ("k24", 3)]}
    assert report == (
        EdgeReassignment(0, "rebalance", 128, (2, 2), (2, 3), (("a", 1),), ((0, ("a", 1)),)),
        EdgeReassignment(1, "hash", 6, (2, 3), (3, 2),
                         (("k0", 1), ("k2", 1), ("k7", 2), ("k1", 1), ("k24", 3)),
                         ((0, ("k0", 1)), (0, ("k2", 1)), (1, ("k7", 2)), (1, ("k1", 1)), (1, ("k24", 3)))),
    )


def _pointwise():
    b = StreamGraphBuilder("p")
    b.source("src", parallelism=2)
    b.map("m", "src", partitioner="rescale", parallelism=2)
    b.sink("out", "m", sink_kind="two_phase_commit", parallelism=2)
    return b.build()


def test_in_flight_data_on_a_rescaled_pointwise_edge_is_refused():
    g = _pointwise()
    old, new = compile_stream_graph(g), compile_stream_graph(rescale_graph(g, {"m": 1, "out": 1}))
    snaps = _empty_snaps(old, 2)
    assert channel_rescale_refusal(old, new, snaps) is None  # nothing in flight
    snaps[3].input_channel_state[1] = [("x", 1)]
    assert channel_rescale_refusal(old, new, snaps) == (
        "rescale edge src -> m holds in-flight data and is rescaled: Cannot rescale the given pointwise partitioner")
    with pytest.raises(ChannelStateRescalingError, match="Cannot rescale the given pointwise partitioner"):
        rescale_channel_states(old, new, snaps)
    # the same parallelism: the data stays on its channel
    assert channel_rescale_refusal(old, old, snaps) is None
    assert rescale_channel_states(old, old, snaps) == (
        {1: [("x", 1)]},
        (EdgeReassignment(0, "rescale", 128, (2, 2), (2, 2), (("x", 1),), ((1, ("x", 1)),)),))
    # the producer's output state alone is in flight too
    snaps = _empty_snaps(old, 2)
    snaps[0].output_channel_state[0] = [("y", 1)]
    assert channel_rescale_refusal(old, new, snaps).startswith("rescale edge src -> m holds in-flight data")
