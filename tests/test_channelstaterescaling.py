"""model/channelstaterescaling.py: SubtaskStateMapper, RescaleMappings, the rescaling
descriptors, and the record-level reassignment of in-flight data (and the unsafe variant)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import model.channelstaterescaling as csr
from model import seams
from model.channelstaterescaling import (
    AMBIGUOUS_MAPPERS,
    PARTITIONER_MAPPERS,
    SUBTASK_STATE_MAPPERS,
    UNSUPPORTED_MESSAGE,
    ChannelStateRescalingError,
    ambiguous_targets,
    assign_channel_state,
    gate_descriptor,
    inheriting_upstream,
    is_identity,
    keeps,
    new_to_old_mapping,
    old_subtasks,
)
from model.errors import FlinkspecError
from model.keygroups import assign_key_to_parallel_operator, compute_key_group_range_for_operator_index
from model.stateassignment import repartition_broadcast, repartition_operator_state


def test_round_robin_examples_of_flinks_javadoc():
    # SubtaskStateMapper.ROUND_ROBIN's javadoc: old 10 -> new 4, and old 6 -> new 10
    assert new_to_old_mapping("ROUND_ROBIN", 10, 4) == ((0, 4, 8), (1, 5, 9), (2, 6), (3, 7))
    assert new_to_old_mapping("ROUND_ROBIN", 6, 10) == ((0,), (1,), (2,), (3,), (4,), (5,), (), (), (), ())
    assert new_to_old_mapping("ARBITRARY", 10, 4) == new_to_old_mapping("ROUND_ROBIN", 10, 4)


def test_range_example_of_flinks_javadoc():
    # SubtaskStateMapper.RANGE's javadoc: 3 -> 2, each new subtask reads two old ones
    assert new_to_old_mapping("RANGE", 3, 2) == ((0, 1), (1, 2))
    assert ambiguous_targets(new_to_old_mapping("RANGE", 3, 2)) == {1}


def test_first_and_full():
    assert new_to_old_mapping("FIRST", 3, 2) == ((0, 1, 2), ())
    assert new_to_old_mapping("FULL", 2, 3) == ((0, 1),) * 3


def test_identity():
    assert is_identity(new_to_old_mapping("RANGE", 4, 4), 4)
    assert not is_identity(new_to_old_mapping("RANGE", 4, 3), 4)


def test_unsupported_mapper_refuses_with_flinks_message():
    with pytest.raises(ChannelStateRescalingError) as e:
        old_subtasks("UNSUPPORTED", 0, 2, 3)
    assert str(e.value) == UNSUPPORTED_MESSAGE


def test_unknown_mapper():
    with pytest.raises(FlinkspecError, match="unknown SubtaskStateMapper 'NOPE'"):
        old_subtasks("NOPE", 0, 1, 1)


def test_range_mapper_reads_every_old_owner_for_small_max_parallelisms():
    """RANGE computes with 32768 key groups, not the operator's max parallelism ("the actual
    maxParallelism cancels out"): every old subtask whose range (with the real max parallelism)
    intersects a new subtask's range is among the old subtasks RANGE names."""
    for max_p in range(1, 21):
        for old_p in range(1, max_p + 1):
            for new_p in range(1, max_p + 1):
                for k in range(new_p):
                    new_r = compute_key_group_range_for_operator_index(max_p, new_p, k)
                    need = {j for j in range(old_p)
                            if not compute_key_group_range_for_operator_index(max_p, old_p, j)
                            .get_intersection(new_r).is_empty()}
                    assert need <= set(old_subtasks("RANGE", k, old_p, new_p)), (max_p, old_p, new_p, k)


def _inflight(rng, up_p, down_p, max_p, n=60):
    """Records of a hash exchange as they would be in flight: each on the channel to its owner."""
    recs: dict = {}
    for i in range(n):
        key = rng.randrange(40)
        u = rng.randrange(up_p)
        d = assign_key_to_parallel_operator(key, max_p, down_p)
        recs.setdefault((u, d), []).append((key, i, 0))
    return recs


@pytest.mark.parametrize("up, down", [((2, 2), (2, 3)), ((2, 3), (3, 2)), ((3, 1), (4, 2)), ((1, 2), (3, 5))])
def test_hash_exchange_in_flight_records_reach_their_new_owner_exactly_once(up, down):
    rng = random.Random(f"{up}{down}")
    max_p = 128
    recs = _inflight(rng, up[0], down[0], max_p)
    out = assign_channel_state(recs, "hash", up[0], up[1], down[0], down[1], max_p)
    before = Counter(r for rs in recs.values() for r in rs)
    after = Counter(r for rs in out.values() for r in rs)
    assert after == before
    for (u, k), rs in out.items():
        assert 0 <= u < up[1] and 0 <= k < down[1]
        for r in rs:
            assert assign_key_to_parallel_operator(r[0], max_p, down[1]) == k


def test_rebalance_exchange_keeps_every_record_once():
    rng = random.Random(3)
    recs = {(u, d): [(rng.randrange(9), i, 0) for i in range(5)] for u in range(3) for d in range(3)}
    out = assign_channel_state(recs, "rebalance", 3, 3, 3, 2, 128)
    assert Counter(r for rs in out.values() for r in rs) == Counter(r for rs in recs.values() for r in rs)


def test_old_index_variant_loses_or_misroutes_records():
    """The known-unsafe variant: in-flight data to the subtask with the old index."""
    rng = random.Random(7)
    max_p = 128
    recs = _inflight(rng, 2, 3, max_p)
    with seams.active(("inflight-by-old-index",)):
        out = assign_channel_state(recs, "hash", 2, 2, 3, 2, max_p)
    kept = Counter(r for rs in out.values() for r in rs)
    lost = Counter(r for rs in recs.values() for r in rs) - kept
    misrouted = [r for (u, k), rs in out.items() for r in rs if assign_key_to_parallel_operator(r[0], max_p, 2) != k]
    assert lost or misrouted


def test_pointwise_edge_with_in_flight_data_is_refused_when_rescaled():
    recs = {(0, 0): [("a", 1, 0)]}
    with pytest.raises(ChannelStateRescalingError, match="Cannot rescale the given pointwise partitioner"):
        assign_channel_state(recs, "forward", 2, 3, 2, 3, 128)
    # not rescaled: kept in place
    assert assign_channel_state(recs, "forward", 2, 2, 2, 2, 128) == {(0, 0): [("a", 1, 0)]}


# -- regression: BROADCAST operator state of old subtasks that reported none -------------------


def test_broadcast_state_copies_only_reported_handles():
    """StateAssignmentOperationTest#testRepartitionBroadcastStateWithNullSubtaskState: only old
    subtask 0 reported the broadcast state; every new subtask gets its copy (the model used to
    hand new subtask 1 the empty state of old subtask 1)."""
    assert repartition_broadcast([[1, 2, 3], None], 3) == [[1, 2, 3]] * 3
    parts, _ = repartition_operator_state([[1, 2, 3], None], 2, "broadcast")
    assert parts == [[1, 2, 3], [1, 2, 3]]
    assert repartition_broadcast([None, None], 2) == [[], []]
    # every subtask reported: new i gets old i % oldP's copy, as before
    assert repartition_broadcast([[1], [2]], 3) == [[1], [2], [1]]


# -- the rules at their edges -------------------------------------------------------------------


def test_identity_needs_every_new_subtask_to_read_exactly_its_own_old_one():
    """``RescaleMappings.isIdentity``: as many new subtasks as old ones is not enough; FULL at an
    unchanged parallelism has every new subtask read every old one."""
    assert not is_identity(new_to_old_mapping("FULL", 2, 2), 2)
    assert not is_identity(((0,), (1,)), 3)       # one old subtask read by no one
    assert is_identity(new_to_old_mapping("ROUND_ROBIN", 3, 3), 3)


def test_a_gate_is_identity_only_when_both_sides_are_and_reads_old_state():
    """``getInflightDataGateOrPartitionRescalingDescriptor``: IDENTITY only when this side's and
    the other side's mappings are both the identity (or the subtask reads no old subtask);
    an upstream rescaled under an unchanged downstream makes the gate RESCALING."""
    d = gate_descriptor("RANGE", "ARBITRARY", 0, 2, 2, 2, 3)
    assert d["type"] == "RESCALING" and d["old_indices"] == [0] and d["mappings"] == [[0], [1], []]
    assert gate_descriptor("RANGE", "ARBITRARY", 0, 2, 2, 2, 2)["type"] == "IDENTITY"
    assert gate_descriptor("ROUND_ROBIN", "ARBITRARY", 2, 2, 3, 2, 3)["type"] == "IDENTITY"  # reads nothing old


def test_only_a_hash_exchange_filters_recovered_records():
    """``RecordFilter``: a partitioner that does not route by the record keeps everything it
    recovers; a hash exchange keeps a record only on the subtask owning its key group."""
    for partitioner in ("rebalance", "broadcast", "forward", "rescale"):
        assert keeps(partitioner, ("k", 1, 0), 1, 128, 2)
    owner = assign_key_to_parallel_operator("k", 128, 2)
    assert keeps("hash", ("k", 1, 0), owner, 128, 2) and not keeps("hash", ("k", 1, 0), 1 - owner, 128, 2)


def test_an_empty_old_channel_does_not_end_the_reassignment():
    """Old channels are reassigned one after the other; one with no records in flight is
    skipped, the later ones still go to their new owners."""
    recs = {(0, 0): [], (0, 1): [("a", 1, 0)], (1, 2): [("b", 2, 0)]}
    out = assign_channel_state(recs, "rebalance", 2, 2, 3, 2, 128)
    assert Counter(r for rs in out.values() for r in rs) == Counter({("a", 1, 0): 1, ("b", 2, 0): 1})


def test_the_old_index_variant_drops_exactly_the_channels_of_indices_that_no_longer_exist():
    """``inflight-by-old-index``: each old channel's records go back to the channel with the same
    indices; a channel whose upstream or downstream index is gone loses its records, and an
    empty channel leaves no entry."""
    recs = {(0, 0): [("a", 1, 0)], (1, 1): [], (0, 2): [("b", 2, 0)], (2, 1): [("c", 3, 0)]}
    with seams.active(("inflight-by-old-index",)):
        out = assign_channel_state(recs, "hash", 3, 2, 3, 2, 128)
    assert out == {(0, 0): [("a", 1, 0)]}


# -- Flink's answers, a refusal included -----------------------------------------------------------


def _answer(fn, *args):
    """Flink's answer to a restore: the result, or ``SubtaskStateMapper``'s refusal
    (``UnsupportedOperationException``, here ``ChannelStateRescalingError``) with its message --
    compared like a result, so a valid restore refused is a wrong answer, not an escaping error."""
    try:
        return fn(*args)
    except ChannelStateRescalingError as e:
        return ("refused", str(e))


REFUSED = ("refused", UNSUPPORTED_MESSAGE)


def test_the_mappers_are_flinks_subtask_state_mappers_and_range_and_full_are_ambiguous():
    """``SubtaskStateMapper``'s values; ``isAmbiguous`` holds for FULL and RANGE only."""
    assert SUBTASK_STATE_MAPPERS == ("ARBITRARY", "FIRST", "FULL", "RANGE", "ROUND_ROBIN", "UNSUPPORTED")
    assert AMBIGUOUS_MAPPERS == frozenset({"FULL", "RANGE"})


def test_each_partitioner_has_flinks_upstream_and_downstream_mappers():
    """``StreamPartitioner.getUpstreamSubtaskStateMapper`` / ``getDownstreamSubtaskStateMapper``
    in Flink 2.3: KeyGroupStreamPartitioner RANGE downstream, RebalancePartitioner ROUND_ROBIN,
    the pointwise and broadcast ones UNSUPPORTED both ways; upstream ARBITRARY otherwise."""
    assert PARTITIONER_MAPPERS == {
        "hash": ("ARBITRARY", "RANGE"),
        "rebalance": ("ARBITRARY", "ROUND_ROBIN"),
        "broadcast": ("UNSUPPORTED", "UNSUPPORTED"),
        "forward": ("UNSUPPORTED", "UNSUPPORTED"),
        "rescale": ("UNSUPPORTED", "UNSUPPORTED"),
    }


def test_every_mapper_answers_its_old_subtasks_or_flinks_refusal():
    """Two new subtasks reading three old ones: each mapper's ``getOldSubtasks``, one new subtask
    at a time, and its ``getNewToOldSubtasksMapping``."""
    want = {
        "ARBITRARY": ((0, 2), (1,)),
        "ROUND_ROBIN": ((0, 2), (1,)),
        "FIRST": ((0, 1, 2), ()),
        "FULL": ((0, 1, 2), (0, 1, 2)),
        "RANGE": ((0, 1), (1, 2)),
        "UNSUPPORTED": (REFUSED, REFUSED),
    }
    for mapper, olds in want.items():
        assert tuple(_answer(old_subtasks, mapper, k, 3, 2) for k in range(2)) == olds, mapper
        assert _answer(new_to_old_mapping, mapper, 3, 2) == (REFUSED if mapper == "UNSUPPORTED" else olds), mapper


def test_an_old_upstream_subtasks_data_goes_to_the_first_new_subtask_that_reads_it():
    # ARBITRARY 3 -> 2: new 0 reads old 0 and 2, new 1 reads old 1
    assert [_answer(inheriting_upstream, "ARBITRARY", u, 3, 2) for u in range(3)] == [0, 1, 0]
    # RANGE 3 -> 2: new 0 reads old 0 and 1, new 1 reads old 1 and 2: old 1 goes to new 0
    assert [_answer(inheriting_upstream, "RANGE", u, 3, 2) for u in range(3)] == [0, 0, 1]
    # an unchanged upstream keeps its subtasks whatever its mapper; a rescaled pointwise one is refused
    assert [_answer(inheriting_upstream, "UNSUPPORTED", u, 2, 2) for u in range(2)] == [0, 1]
    assert _answer(inheriting_upstream, "UNSUPPORTED", 0, 2, 3) == REFUSED


def test_an_edge_whose_ends_keep_their_parallelism_keeps_its_in_flight_data_in_place():
    """Whatever its partitioner (pointwise ones included), an edge neither of whose ends was
    rescaled gets its in-flight data back unmapped; a pointwise edge with either end rescaled is
    refused."""
    recs = {(0, 0): [("a", 1, 0)], (1, 1): [("b", 2, 0)]}
    for partitioner in sorted(PARTITIONER_MAPPERS):
        assert _answer(assign_channel_state, recs, partitioner, 2, 2, 2, 2, 128) == recs, partitioner
    for up_new, down_new in ((3, 3), (2, 3), (3, 2)):
        for partitioner in ("forward", "rescale"):
            assert _answer(assign_channel_state, recs, partitioner, 2, up_new, 2, down_new, 128) == REFUSED, \
                (partitioner, up_new, down_new)


# -- the calls each function makes on the module's others, recorded ------------------------------


def _recorded(monkeypatch, name, expected, log, default=None):
    """Replace the module function ``name`` by a stand-in that records ``(name, arguments)`` of
    each call in ``log`` and answers what the real function answers for the ``expected``
    argument tuples (computed beforehand), ``default`` for any other: the caller's call returns,
    and the test asserts what it asked."""
    real = getattr(csr, name)
    answers = {args: real(*args) for args in expected}

    def stand_in(*args):
        log.append((name, args))
        return answers.get(args, default)

    monkeypatch.setattr(csr, name, stand_in)


def test_the_new_to_old_mapping_asks_get_old_subtasks_for_each_new_subtask(monkeypatch):
    log = []
    _recorded(monkeypatch, "old_subtasks", [("ARBITRARY", 0, 3, 2), ("ARBITRARY", 1, 3, 2)], log, default=())
    assert csr.new_to_old_mapping("ARBITRARY", 3, 2) == ((0, 2), (1,))
    assert log == [("old_subtasks", ("ARBITRARY", 0, 3, 2)), ("old_subtasks", ("ARBITRARY", 1, 3, 2))]


def test_a_gate_descriptor_asks_for_both_sides_mappings_their_identity_and_the_ambiguous_targets(monkeypatch):
    """``getInflightDataGateOrPartitionRescalingDescriptor``: the own side's and the other
    side's ``RescaleMappings``, ``isIdentity`` of each, and ``getAmbiguousTargets`` of the own
    side for an ambiguous mapper."""
    ident = ((0,), (1,))
    log = []
    _recorded(monkeypatch, "new_to_old_mapping", [("RANGE", 2, 2), ("ARBITRARY", 2, 2)], log, default=ident)
    _recorded(monkeypatch, "is_identity", [(ident, 2)], log, default=False)
    _recorded(monkeypatch, "ambiguous_targets", [(ident,)], log, default=frozenset())
    d = csr.gate_descriptor("RANGE", "ARBITRARY", 1, 2, 2, 2, 2)
    assert d == {"old_indices": [1], "mappings": [[0], [1]], "ambiguous": [], "type": "IDENTITY"}
    assert log == [("new_to_old_mapping", ("RANGE", 2, 2)), ("new_to_old_mapping", ("ARBITRARY", 2, 2)),
                   ("is_identity", (ident, 2)), ("is_identity", (ident, 2)), ("ambiguous_targets", (ident,))]


def test_the_rescaling_descriptor_asks_for_each_gates_descriptor(monkeypatch):
    log = []
    args = ("RANGE", "ARBITRARY", 1, 2, 3, 2, 2)
    other = {"old_indices": [], "mappings": [], "ambiguous": [], "type": "RESCALING"}
    _recorded(monkeypatch, "gate_descriptor", [args], log, default=other)
    real = gate_descriptor(*args)
    assert csr.inflight_data_rescaling_descriptor("input", 1, [("RANGE", "ARBITRARY")], 2, 3,
                                                  up_old_parallelism=2, up_new_parallelism=2) == [real]
    assert log == [("gate_descriptor", args)]


def test_the_inheriting_upstream_asks_get_old_subtasks_new_subtask_by_new_subtask(monkeypatch):
    log = []
    _recorded(monkeypatch, "old_subtasks", [("ARBITRARY", 0, 3, 2), ("ARBITRARY", 1, 3, 2)], log,
              default=(0, 1, 2))
    assert csr.inheriting_upstream("ARBITRARY", 1, 3, 2) == 1
    assert log == [("old_subtasks", ("ARBITRARY", 0, 3, 2)), ("old_subtasks", ("ARBITRARY", 1, 3, 2))]


def test_a_rescaled_hash_edge_asks_for_its_mappers_mapping_ambiguous_targets_and_inheriting_upstreams(monkeypatch):
    """``assign_channel_state`` of a hash edge rescaled 2 -> 3 on both ends: the partitioner's
    mappers, the downstream ``RescaleMappings`` and its ambiguous old subtasks, and for each
    old channel with records (in channel order) the new upstream subtask inheriting its data."""
    recs = {(1, 1): [("b", 2, 0)], (0, 0): [("a", 1, 0), ("c", 3, 0)], (0, 1): []}
    # the keys "a" and "c" belong to new subtask 1 (max parallelism 128, parallelism 3), "b" to 0
    want = {(0, 1): [("a", 1, 0), ("c", 3, 0)]}
    down_map = ((0,), (0, 1), (1,))  # RANGE 2 -> 3: old 0 and old 1 are both ambiguous
    log = []
    _recorded(monkeypatch, "edge_mappers", [("hash",)], log, default=("ARBITRARY", "RANGE"))
    _recorded(monkeypatch, "new_to_old_mapping", [("RANGE", 2, 3)], log, default=down_map)
    _recorded(monkeypatch, "ambiguous_targets", [(down_map,)], log, default=frozenset({0, 1}))
    _recorded(monkeypatch, "inheriting_upstream", [("ARBITRARY", 0, 2, 3), ("ARBITRARY", 1, 2, 3)], log, default=0)
    # the RecordFilter asked about each record of an ambiguous old channel, for each new consumer reading it
    a, b, c = ("a", 1, 0), ("b", 2, 0), ("c", 3, 0)
    asked = [("hash", a, 0, 128, 3), ("hash", c, 0, 128, 3), ("hash", a, 1, 128, 3), ("hash", c, 1, 128, 3),
             ("hash", b, 1, 128, 3), ("hash", b, 2, 128, 3)]
    filter_log = []
    _recorded(monkeypatch, "keeps", asked, filter_log, default=True)
    got = csr.assign_channel_state(recs, "hash", 2, 3, 2, 3, 128)
    assert filter_log == [("keeps", args) for args in asked]
    assert log == [("edge_mappers", ("hash",)), ("new_to_old_mapping", ("RANGE", 2, 3)),
                   ("ambiguous_targets", (down_map,)), ("inheriting_upstream", ("ARBITRARY", 0, 2, 3)),
                   ("inheriting_upstream", ("ARBITRARY", 1, 2, 3))]
    assert got == want
    assert set(got) <= {(u, d) for u in range(3) for d in range(3)}
