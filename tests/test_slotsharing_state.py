"""Slot sharing and slot allocation (model/slotsharing.py) call by call: every field of each
SlotAllocation ``allocate`` returns (placed, waiting, sticky after a TaskManager loss), the
queries on it, ``free_slots`` in the offer order, and the values' own checks.

The reference job (examples/reference-window-job.toml)::

    source (p=2) --hash--> window (p=3) --rebalance--> sink (p=2)     one group 'default'

subtasks 0, 1 source; 2, 3, 4 window; 5, 6 sink; ESSGs (0, 2, 5), (1, 3, 6), (4,).
"""

from pathlib import Path

import pytest

from model.errors import InvalidArgument
from model.executiongraph import compile_stream_graph
from model.slotsharing import (ALLOCATED, WAITING_FOR_RESOURCES, ExecutionSlotSharingGroup, SlotAllocation, SlotId,
                               TaskManager, allocate, compute_execution_slot_sharing_groups, free_slots,
                               required_slots)
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph, load_stream_graph

EXAMPLES = Path(__file__).parent.parent / "examples"
GROUPS = (ExecutionSlotSharingGroup(id=0, slot_sharing_group="default", subtasks=(0, 2, 5)),
          ExecutionSlotSharingGroup(id=1, slot_sharing_group="default", subtasks=(1, 3, 6)),
          ExecutionSlotSharingGroup(id=2, slot_sharing_group="default", subtasks=(4,)))


def _eg():
    return compile_stream_graph(load_stream_graph(EXAMPLES / "reference-window-job.toml"))


def test_the_states_and_the_values():
    assert (ALLOCATED, WAITING_FOR_RESOURCES) == ("ALLOCATED", "WAITING_FOR_RESOURCES")
    assert str(SlotId("tm-1", 2)) == "tm-1/2"
    assert sorted([SlotId("b", 0), SlotId("a", 1), SlotId("a", 0)]) == [SlotId("a", 0), SlotId("a", 1), SlotId("b", 0)]
    assert TaskManager("tm", 0).number_of_slots == 0
    for bad in (("", 1), (None, 1), (3, 1)):
        with pytest.raises(InvalidArgument, match="TaskManager id must be a non-empty string"):
            TaskManager(*bad)
    for bad in (-1, True, 1.0, "2"):
        with pytest.raises(InvalidArgument, match="number of slots must be an integer >= 0"):
            TaskManager("tm", bad)


def test_groups_and_required_slots_of_the_reference_job():
    eg = _eg()
    assert compute_execution_slot_sharing_groups(eg) == GROUPS
    assert required_slots(eg) == {"default": 3}


def test_two_slot_sharing_groups_need_the_sum_of_their_widest_vertices():
    ops = (OperatorSpec(name="a", kind="source", parallelism=3, slot_sharing_group="x"),
           OperatorSpec(name="b", kind="map", parallelism=1, slot_sharing_group="x"),
           OperatorSpec(name="c", kind="map", parallelism=2, slot_sharing_group="y"))
    eg = compile_stream_graph(StreamGraph(operators=ops, edges=(
        EdgeSpec(source="a", target="b", partitioner="rebalance"),
        EdgeSpec(source="b", target="c", partitioner="rebalance"))))
    assert required_slots(eg) == {"x": 3, "y": 2}
    groups = compute_execution_slot_sharing_groups(eg)
    # b0 takes a0's group (its first candidate); c opens the groups of 'y'
    assert groups == tuple(ExecutionSlotSharingGroup(id=g, slot_sharing_group=ssg, subtasks=m) for g, ssg, m in (
        (0, "x", (0, 3)), (1, "x", (1,)), (2, "x", (2,)), (3, "y", (4,)), (4, "y", (5,))))
    a = allocate(eg, [TaskManager("tm", 5)])
    assert a.total_required_slots == 5 and a.available_slots == 5 and a.state == ALLOCATED
    assert a.slot_of_subtask == (SlotId("tm", 0), SlotId("tm", 1), SlotId("tm", 2), SlotId("tm", 0),
                                 SlotId("tm", 3), SlotId("tm", 4))


def test_free_slots_in_offer_order():
    tms = [TaskManager("b", 2), TaskManager("a", 1), TaskManager("c", 2)]
    assert free_slots(tms) == (SlotId("a", 0), SlotId("b", 0), SlotId("b", 1), SlotId("c", 0), SlotId("c", 1))
    assert free_slots(tms, ["c"], [SlotId("b", 0)]) == (SlotId("a", 0), SlotId("b", 1))
    assert free_slots(tms, ("a", "b", "c")) == ()
    assert free_slots([]) == ()


def test_an_allocation_whole_and_its_queries():
    eg = _eg()
    a = allocate(eg, [TaskManager("tm-b", 1), TaskManager("tm-a", 3)])
    a0, a1, a2 = SlotId("tm-a", 0), SlotId("tm-a", 1), SlotId("tm-a", 2)
    assert a == SlotAllocation(
        state=ALLOCATED, groups=GROUPS, slot_of_group=(a0, a1, a2),
        slot_of_subtask=(a0, a1, a0, a1, a2, a0, a1), required_slots={"default": 3}, available_slots=4,
        task_managers=(TaskManager("tm-a", 3), TaskManager("tm-b", 1)), lost_task_managers=frozenset())
    assert (a.total_required_slots, a.is_waiting) == (3, False)
    assert [a.slot_of(s) for s in range(7)] == [a0, a1, a0, a1, a2, a0, a1]
    assert a.subtasks_in_slot(a0) == (0, 2, 5) and a.subtasks_in_slot(a2) == (4,)
    assert a.subtasks_in_slot(SlotId("tm-b", 0)) == ()
    assert a.used_slots() == (a0, a1, a2)
    assert a.subtasks_on("tm-a") == (0, 1, 2, 3, 4, 5, 6) and a.subtasks_on("tm-b") == ()


def test_a_waiting_allocation_whole():
    eg = _eg()
    w = allocate(eg, [TaskManager("tm", 2)], lost_task_managers=["x"])
    assert w == SlotAllocation(
        state=WAITING_FOR_RESOURCES, groups=GROUPS, slot_of_group=(None, None, None),
        slot_of_subtask=(None,) * 7, required_slots={"default": 3}, available_slots=2,
        task_managers=(TaskManager("tm", 2),), lost_task_managers=frozenset({"x"}))
    assert w.is_waiting and w.used_slots() == () and w.subtasks_on("tm") == ()
    assert w.subtasks_in_slot(SlotId("tm", 0)) == ()
    # exactly as many free slots as groups: placed
    assert allocate(eg, [TaskManager("tm", 3)]).state == ALLOCATED
    assert allocate(eg, [TaskManager("tm", 3)], lost_task_managers=["tm"]).available_slots == 0


def test_a_re_placement_call_by_call():
    eg = _eg()
    tms = [TaskManager("tm-a", 2), TaskManager("tm-b", 1)]
    first = allocate(eg, tms)
    assert first.slot_of_group == (SlotId("tm-a", 0), SlotId("tm-a", 1), SlotId("tm-b", 0))
    assert first.subtasks_on("tm-b") == (4,) and first.subtasks_on("tm-a") == (0, 1, 2, 3, 5, 6)
    # tm-a lost, nothing new: one kept slot, no free one -> waiting (kept counted as available)
    waiting = allocate(eg, tms, lost_task_managers={"tm-a"}, previous=first)
    assert (waiting.state, waiting.available_slots, waiting.slot_of_group) == \
        (WAITING_FOR_RESOURCES, 1, (None, None, None))
    assert waiting.lost_task_managers == frozenset({"tm-a"}) and waiting.groups == GROUPS
    # a waiting previous allocation keeps nothing: everything is placed afresh in order
    tms2 = tms + [TaskManager("tm-c", 2)]
    fresh = allocate(eg, tms2, lost_task_managers={"tm-a"}, previous=waiting)
    assert fresh.slot_of_group == (SlotId("tm-b", 0), SlotId("tm-c", 0), SlotId("tm-c", 1))
    # from the placed one, tm-b's group stays, the others take tm-c's slots
    again = allocate(eg, tms2, lost_task_managers={"tm-a"}, previous=first)
    assert again.state == ALLOCATED and again.available_slots == 3
    assert again.slot_of_group == (SlotId("tm-c", 0), SlotId("tm-c", 1), SlotId("tm-b", 0))
    assert again.slot_of_subtask == (SlotId("tm-c", 0), SlotId("tm-c", 1), SlotId("tm-c", 0), SlotId("tm-c", 1),
                                     SlotId("tm-b", 0), SlotId("tm-c", 0), SlotId("tm-c", 1))
    # nothing lost: every group keeps its slot, even with new TaskManagers offering earlier slots
    same = allocate(eg, [TaskManager("tm-0", 3)] + tms, previous=first)
    assert same.slot_of_group == first.slot_of_group and same.available_slots == 6
    # groups handed in are used as they are
    one = (ExecutionSlotSharingGroup(id=0, slot_sharing_group="default", subtasks=tuple(range(7))),)
    solo = allocate(eg, tms, groups=one)
    assert solo.groups == one and solo.slot_of_group == (SlotId("tm-a", 0),)
    assert solo.slot_of_subtask == (SlotId("tm-a", 0),) * 7 and solo.available_slots == 3


def test_duplicate_task_manager_ids_are_one_clear_error():
    with pytest.raises(InvalidArgument, match=r"duplicate TaskManager ids in \['tm', 'tm', 'x'\]"):
        allocate(_eg(), [TaskManager("tm", 1), TaskManager("x", 1), TaskManager("tm", 2)])


def test_an_allocation_built_without_its_task_managers_has_none():
    a = SlotAllocation(state=WAITING_FOR_RESOURCES, groups=(), slot_of_group=(), slot_of_subtask=(),
                       required_slots={}, available_slots=0)
    assert a.task_managers == () and a.lost_task_managers == frozenset()
    assert a.total_required_slots == 0 and a.used_slots() == () and a.subtasks_on("tm") == ()


def test_a_single_vertex_opens_one_group_per_subtask_holding_that_subtask():
    """No producer, no co-location: each subtask of the only vertex takes a new group (step 4),
    the group holding exactly that subtask, ids in creation order."""
    eg = compile_stream_graph(StreamGraph(operators=(
        OperatorSpec(name="src", kind="source", parallelism=3, slot_sharing_group="x"),), edges=()))
    assert compute_execution_slot_sharing_groups(eg) == (
        ExecutionSlotSharingGroup(id=0, slot_sharing_group="x", subtasks=(0,)),
        ExecutionSlotSharingGroup(id=1, slot_sharing_group="x", subtasks=(1,)),
        ExecutionSlotSharingGroup(id=2, slot_sharing_group="x", subtasks=(2,)))
    assert required_slots(eg) == {"x": 3}


def test_a_subtask_whose_first_input_offers_no_candidate_tries_its_next_input():
    """c's first input comes from u in another slot sharing group (no candidates); its second,
    a rescale from a (p=4), offers a0, a1's groups to c0 and a2, a3's to c1: c1 joins a2 in
    group 3, not the oldest available group 2."""
    ops = (OperatorSpec(name="u", kind="source", parallelism=1, slot_sharing_group="x"),
           OperatorSpec(name="a", kind="source", parallelism=4, slot_sharing_group="y"),
           OperatorSpec(name="c", kind="map", parallelism=2, slot_sharing_group="y"))
    eg = compile_stream_graph(StreamGraph(operators=ops, edges=(
        EdgeSpec(source="u", target="c", partitioner="rebalance"),
        EdgeSpec(source="a", target="c", partitioner="rescale"))))
    assert [len(eg.input_gates[s]) for s in eg.subtasks_of("c")] == [2, 2]
    assert compute_execution_slot_sharing_groups(eg) == (
        ExecutionSlotSharingGroup(id=0, slot_sharing_group="x", subtasks=(0,)),
        ExecutionSlotSharingGroup(id=1, slot_sharing_group="y", subtasks=(1, 5)),
        ExecutionSlotSharingGroup(id=2, slot_sharing_group="y", subtasks=(2,)),
        ExecutionSlotSharingGroup(id=3, slot_sharing_group="y", subtasks=(3, 6)),
        ExecutionSlotSharingGroup(id=4, slot_sharing_group="y", subtasks=(4,)))


def test_a_re_placement_keeps_the_groups_of_the_previous_allocation():
    """The groups are computed once (the strategy's ExecutionSlotSharingGroups): a re-placement
    from a previous allocation uses its groups, even ones handed in, and does not compute them anew."""
    eg = _eg()
    tms = [TaskManager("tm-a", 1), TaskManager("tm-b", 1)]
    one = (ExecutionSlotSharingGroup(id=0, slot_sharing_group="default", subtasks=tuple(range(7))),)
    solo = allocate(eg, tms, groups=one)
    moved = allocate(eg, tms, lost_task_managers={"tm-a"}, previous=solo)
    assert moved == SlotAllocation(
        state=ALLOCATED, groups=one, slot_of_group=(SlotId("tm-b", 0),), slot_of_subtask=(SlotId("tm-b", 0),) * 7,
        required_slots={"default": 3}, available_slots=1, task_managers=(TaskManager("tm-a", 1), TaskManager("tm-b", 1)),
        lost_task_managers=frozenset({"tm-a"}))
