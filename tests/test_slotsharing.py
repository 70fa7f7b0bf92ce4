"""Scheduling: LocalInputPreferredSlotSharingStrategy, slot allocation, placement invariants."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.errors import InvalidArgument
from model.executiongraph import compile_stream_graph
from model.slotsharing import (
    ALLOCATED,
    WAITING_FOR_RESOURCES,
    SlotId,
    TaskManager,
    allocate,
    compute_execution_slot_sharing_groups,
    required_slots,
)
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph, load_stream_graph
from properties.jobgraphs import stream_graphs
from spec.invariant import REGISTRY
from spec.placement import PLACEMENT_INVARIANTS, Placement, check_placement

EXAMPLES = Path(__file__).parent.parent / "examples"


def names(eg, groups):
    return [[eg.subtasks[s].name for s in g.subtasks] for g in groups]


def test_reference_job_groups():
    """
        source (p=2) ──hash──► window (p=3) ──rebalance──► sink (p=2)     one group 'default'
    source i opens group i; window 0/1 take the candidates of their all-to-all input
    (groups of source 0, source 1); window 2 finds no candidate left and no free group ->
    new group 2; sink 0/1 take the producers' groups 0 and 1. Needs max(2, 3, 2) = 3 slots.
    """
    eg = compile_stream_graph(load_stream_graph(EXAMPLES / "reference-window-job.toml"))
    groups = compute_execution_slot_sharing_groups(eg)
    assert names(eg, groups) == [
        ["source (1/2)", "window (1/3)", "sink (1/2)"],
        ["source (2/2)", "window (2/3)", "sink (2/2)"],
        ["window (3/3)"],
    ]
    assert required_slots(eg) == {"default": 3}


def test_fan_out_candidates_are_consumed():
    """
        src (p=2) ──rescale──► m (p=4)      pointwise fan-out: src0 -> m0, m1; src1 -> m2, m3
    m0 takes src0's group (candidate of the ConsumedPartitionGroup {src0}); m1 shares that
    ConsumedPartitionGroup, whose candidate is now used up, so it is left for the second
    pass; m2 takes src1's group; m1 and m3 then get new groups (no group is available to m).
    """
    ops = (OperatorSpec(name="src", kind="source", parallelism=2), OperatorSpec(name="m", kind="map", parallelism=4))
    eg = compile_stream_graph(StreamGraph(operators=ops, edges=(EdgeSpec(source="src", target="m", partitioner="rescale"),)))
    assert names(eg, compute_execution_slot_sharing_groups(eg)) == [
        ["src (1/2)", "m (1/4)"], ["src (2/2)", "m (3/4)"], ["m (2/4)"], ["m (4/4)"]]


def test_any_available_group_then_co_location():
    """
        a (p=2, ssg 'x') ──rebalance──► b (p=2, ssg 'y', co-location 'c')
        t (p=4, ssg 'y') ──rescale────► d (p=2, ssg 'y', co-location 'c')   fan-in: d1 reads t2, t3
    Vertex order a, t, b, d. a opens x0, x1; t opens y0..y3. b's producer is in another slot
    sharing group (no candidates), so b0, b1 take the oldest available groups y0, y1. d0
    goes to y0 with b0. d1's producers t2, t3 sit in y2, y3, but the co-location constraint
    comes first: d1 joins b1 in y1.
    """
    ops = (OperatorSpec(name="a", kind="source", parallelism=2, slot_sharing_group="x"),
           OperatorSpec(name="t", kind="source", parallelism=4, slot_sharing_group="y"),
           OperatorSpec(name="b", kind="map", parallelism=2, slot_sharing_group="y", co_location_group="c"),
           OperatorSpec(name="d", kind="map", parallelism=2, slot_sharing_group="y", co_location_group="c"))
    edges = (EdgeSpec(source="a", target="b", partitioner="rebalance"),
             EdgeSpec(source="t", target="d", partitioner="rescale"))
    eg = compile_stream_graph(StreamGraph(operators=ops, edges=edges))
    assert list(eg.job_graph.vertices) == ["a", "t", "b", "d"]
    groups = compute_execution_slot_sharing_groups(eg)
    assert names(eg, groups) == [
        ["a (1/2)"], ["a (2/2)"],
        ["t (1/4)", "b (1/2)", "d (1/2)"], ["t (2/4)", "b (2/2)", "d (2/2)"], ["t (3/4)"], ["t (4/4)"]]
    assert required_slots(eg) == {"x": 2, "y": 4}
    a = allocate(eg, [TaskManager("tm-2", 3), TaskManager("tm-1", 3)])
    assert a.state == ALLOCATED
    # TaskManagers by id, slots by index, groups in creation order
    assert a.slot_of_group == (SlotId("tm-1", 0), SlotId("tm-1", 1), SlotId("tm-1", 2), SlotId("tm-2", 0),
                               SlotId("tm-2", 1), SlotId("tm-2", 2))
    assert check_placement(eg, a) == []
    # without the co-location group, d1 would follow its producer t2 into y2
    plain = tuple(attrs.evolve(o, co_location_group=None) for o in ops)
    eg2 = compile_stream_graph(StreamGraph(operators=plain, edges=edges))
    assert names(eg2, compute_execution_slot_sharing_groups(eg2))[4] == ["t (3/4)", "d (2/2)"]


def test_not_enough_slots_is_a_waiting_state():
    """reference job (needs 3 slots) on 1 TaskManager with 2 slots: WAITING_FOR_RESOURCES."""
    eg = compile_stream_graph(load_stream_graph(EXAMPLES / "reference-window-job.toml"))
    a = allocate(eg, [TaskManager("tm", 2)])
    assert a.state == WAITING_FOR_RESOURCES and a.is_waiting
    assert (a.total_required_slots, a.available_slots) == (3, 2)
    assert set(a.slot_of_subtask) == {None}
    assert check_placement(eg, a) == []
    assert allocate(eg, []).available_slots == 0


def test_re_placement_after_task_manager_loss_is_sticky():
    """
        reference job on tm-a (2 slots) + tm-b (1 slot): groups 0,1 on tm-a, group 2 on tm-b.
        tm-a is lost; tm-c (2 slots) joins: group 2 stays on tm-b, groups 0, 1 move to tm-c.
    """
    eg = compile_stream_graph(load_stream_graph(EXAMPLES / "reference-window-job.toml"))
    first = allocate(eg, [TaskManager("tm-a", 2), TaskManager("tm-b", 1)])
    assert first.slot_of_group == (SlotId("tm-a", 0), SlotId("tm-a", 1), SlotId("tm-b", 0))
    assert first.subtasks_on("tm-a") == tuple(sorted(first.groups[0].subtasks + first.groups[1].subtasks))
    tms = [TaskManager("tm-a", 2), TaskManager("tm-b", 1)]
    waiting = allocate(eg, tms, lost_task_managers={"tm-a"}, previous=first)
    assert waiting.is_waiting and waiting.available_slots == 1
    again = allocate(eg, tms + [TaskManager("tm-c", 2)], lost_task_managers={"tm-a"}, previous=first)
    assert again.slot_of_group == (SlotId("tm-c", 0), SlotId("tm-c", 1), SlotId("tm-b", 0))
    assert check_placement(eg, again) == []


def test_bad_task_managers():
    with pytest.raises(InvalidArgument):
        TaskManager("tm", -1)
    with pytest.raises(InvalidArgument):
        TaskManager("", 1)
    eg = compile_stream_graph(load_stream_graph(EXAMPLES / "reference-window-job.toml"))
    with pytest.raises(InvalidArgument, match="duplicate"):
        allocate(eg, [TaskManager("tm", 1), TaskManager("tm", 2)])


def test_invariants_are_registered_and_catch_broken_placements():
    """Corrupt a valid placement of examples/pipeline-features.toml in four ways."""
    assert {inv.name for inv in PLACEMENT_INVARIANTS} <= set(REGISTRY)
    eg = compile_stream_graph(load_stream_graph(EXAMPLES / "pipeline-features.toml"))
    good = allocate(eg, [TaskManager("tm", 9)])
    assert check_placement(eg, good) == []
    slots = list(good.slot_of_subtask)
    enrich = eg.subtasks_of("enrich")
    # two subtasks of one vertex in a slot
    bad = list(slots)
    bad[enrich[1]] = slots[enrich[0]]
    v = {x.invariant for x in check_placement(eg, attrs.evolve(good, slot_of_subtask=tuple(bad)))}
    assert "placement.one_subtask_per_vertex_per_slot" in v
    # co-location broken: swap store 0 and store 1
    bad = list(slots)
    s0, s1 = eg.subtasks_of("store")[:2]
    bad[s0], bad[s1] = slots[s1], slots[s0]
    v = {x.invariant for x in check_placement(eg, attrs.evolve(good, slot_of_subtask=tuple(bad)))}
    assert "placement.co_location_honoured" in v
    # a subtask not placed
    bad = list(slots)
    bad[0] = None
    v = {x.invariant for x in check_placement(eg, attrs.evolve(good, slot_of_subtask=tuple(bad)))}
    assert "placement.every_subtask_placed_once" in v
    # an extra slot used / a slot mixing slot sharing groups
    bad = list(slots)
    bad[eg.subtasks_of("audit")[0]] = SlotId("tm", 42)
    v = {x.invariant for x in check_placement(eg, attrs.evolve(good, slot_of_subtask=tuple(bad)))}
    assert "placement.slots_used_equal_required" in v
    bad = list(slots)
    bad[eg.subtasks_of("audit")[0]] = slots[eg.subtasks_of("agg")[0]]
    v = {x.invariant for x in check_placement(eg, attrs.evolve(good, slot_of_subtask=tuple(bad)))}
    assert "placement.slot_holds_one_slot_sharing_group" in v
    # a waiting job must not place anything
    v = check_placement(eg, attrs.evolve(good, state=WAITING_FOR_RESOURCES))
    assert {x.invariant for x in v} == {"placement.every_subtask_placed_once"}
    assert all(isinstance(x.message, str) and x.message for x in v)


@settings(max_examples=200, deadline=None)
@given(stream_graphs(), st.lists(st.integers(0, 6), min_size=1, max_size=4), st.data())
def test_placement_invariants_hold_on_generated_jobs(g, slots_per_tm, data):
    eg = compile_stream_graph(g)
    tms = [TaskManager(f"tm-{i}", n) for i, n in enumerate(slots_per_tm)]
    a = allocate(eg, tms)
    need = sum(required_slots(eg).values())
    assert a.total_required_slots == need
    assert len(a.groups) == need  # LocalInputPreferred creates exactly max-parallelism groups per ssg
    assert a.is_waiting == (sum(slots_per_tm) < need)
    assert check_placement(eg, a) == []
    if not a.is_waiting:
        lost = data.draw(st.sets(st.sampled_from([t.id for t in tms])))
        extra = [TaskManager("tm-new", data.draw(st.integers(0, need)))]
        b = allocate(eg, tms + extra, lost_task_managers=lost, previous=a)
        assert check_placement(eg, b) == []
        if not b.is_waiting:  # survivors stay where they were
            for old, new in zip(a.slot_of_group, b.slot_of_group):
                if old.task_manager not in lost:
                    assert old == new
