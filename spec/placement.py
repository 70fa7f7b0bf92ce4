"""Placement invariants: slot sharing and co-location (Flink's scheduler guarantees).

Each invariant is a pure function of a :class:`Placement` (the execution graph and a
:class:`model.slotsharing.SlotAllocation`) and returns a :class:`Violation` or ``None``.
They read the allocation's per-subtask slots (``slot_of_subtask``), not the model's
execution slot sharing groups, so a wrong grouping is caught too. A waiting allocation
(``WAITING_FOR_RESOURCES``) places nothing and trivially satisfies all of them except
that nothing may be placed.

They are registered with subject ``placement``: :func:`check_placement` (called by the
run-level invariant ``placement_valid`` in ``spec.recovery``) checks every one of them, as
listed by ``spec.invariant.invariants("placement")``; ``PLACEMENT_INVARIANTS`` is that list.
"""

from __future__ import annotations

import attrs

from model.executiongraph import ExecutionGraph
from model.slotsharing import SlotAllocation
from spec import load_all
from spec.invariant import Violation, invariant, invariants


@attrs.frozen(slots=True)
class Placement:
    """The subject of the placement invariants."""

    execution_graph: ExecutionGraph = attrs.field(repr=False)
    allocation: SlotAllocation


def _slots(p: Placement) -> dict:
    """slot -> subtask ids placed in it."""
    out: dict = {}
    for sid, slot in enumerate(p.allocation.slot_of_subtask):
        if slot is not None:
            out.setdefault(slot, []).append(sid)
    return out


@invariant(
    "placement.one_subtask_per_vertex_per_slot",
    kind="always",
    subject="placement",
    concept="SlotSharingGroup / LocalInputPreferredSlotSharingStrategy",
    statement="A shared slot holds at most one subtask of each JobVertex.",
)
def one_subtask_per_vertex_per_slot(p: Placement) -> Violation | None:
    subtasks = p.execution_graph.subtasks
    for slot, sids in sorted(_slots(p).items()):
        seen: dict[str, int] = {}
        for sid in sids:
            v = subtasks[sid].job_vertex
            if v in seen:
                return Violation(
                    invariant="placement.one_subtask_per_vertex_per_slot",
                    expected=f"one subtask of {v!r} in slot {slot}",
                    actual=[subtasks[seen[v]].name, subtasks[sid].name],
                    message=f"slot {slot} holds two subtasks of {v!r}: "
                            f"{subtasks[seen[v]].name} and {subtasks[sid].name}",
                )
            seen[v] = sid
    return None


@invariant(
    "placement.slot_holds_one_slot_sharing_group",
    kind="always",
    subject="placement",
    concept="SlotSharingGroup",
    statement="Subtasks share a slot only when their JobVertices are in the same slot sharing group.",
)
def slot_holds_one_slot_sharing_group(p: Placement) -> Violation | None:
    eg = p.execution_graph
    vertices = eg.job_graph.vertices
    for slot, sids in sorted(_slots(p).items()):
        groups = sorted({vertices[eg.subtasks[s].job_vertex].slot_sharing_group for s in sids})
        if len(groups) > 1:
            return Violation(
                invariant="placement.slot_holds_one_slot_sharing_group",
                expected="one slot sharing group per slot",
                actual=groups,
                message=f"slot {slot} mixes slot sharing groups {groups}",
            )
    return None


@invariant(
    "placement.co_location_honoured",
    kind="always",
    subject="placement",
    concept="CoLocationGroup / CoLocationConstraint",
    statement="Subtask i of every JobVertex of a co-location group runs in the same slot.",
)
def co_location_honoured(p: Placement) -> Violation | None:
    eg = p.execution_graph
    if p.allocation.is_waiting:
        return None
    for key, vids in sorted(eg.job_graph.co_location_groups().items()):
        where: dict[int, tuple[str, object]] = {}
        for vid in vids:
            for sid in eg.subtasks_of(vid):
                i = eg.subtasks[sid].subtask_index
                slot = p.allocation.slot_of_subtask[sid]
                if i not in where:
                    where[i] = (vid, slot)
                elif where[i][1] != slot:
                    other, other_slot = where[i]
                    return Violation(
                        invariant="placement.co_location_honoured",
                        expected=str(other_slot),
                        actual=str(slot),
                        message=f"co-location group {key!r}: subtask {i} of {other!r} is in slot {other_slot}"
                                f" but subtask {i} of {vid!r} is in slot {slot}",
                    )
    return None


@invariant(
    "placement.every_subtask_placed_once",
    kind="always",
    subject="placement",
    concept="ExecutionSlotSharingGroup / SlotAllocation",
    statement="An allocated job places every subtask in exactly one slot; a waiting job places none.",
)
def every_subtask_placed_once(p: Placement) -> Violation | None:
    a = p.allocation
    eg = p.execution_graph
    if len(a.slot_of_subtask) != len(eg.subtasks):
        return Violation(
            invariant="placement.every_subtask_placed_once",
            expected=len(eg.subtasks), actual=len(a.slot_of_subtask),
            message="the allocation does not cover the execution graph's subtasks",
        )
    if a.is_waiting:
        placed = [s for s, sl in enumerate(a.slot_of_subtask) if sl is not None]
        if placed:
            return Violation(
                invariant="placement.every_subtask_placed_once",
                expected=[], actual=placed,
                message=f"a job waiting for resources has placed subtasks {placed}",
            )
        return None
    unplaced = [eg.subtasks[s].name for s, sl in enumerate(a.slot_of_subtask) if sl is None]
    if unplaced:
        return Violation(
            invariant="placement.every_subtask_placed_once",
            expected="every subtask placed", actual=unplaced,
            message=f"subtasks not placed: {unplaced}",
        )
    count: dict[int, int] = {}
    for group in a.groups:
        for s in group.subtasks:
            count[s] = count.get(s, 0) + 1
    wrong = sorted(s for s in range(len(eg.subtasks)) if count.get(s, 0) != 1)
    if wrong:
        return Violation(
            invariant="placement.every_subtask_placed_once",
            expected="each subtask in exactly one execution slot sharing group",
            actual={eg.subtasks[s].name: count.get(s, 0) for s in wrong},
            message=f"subtasks in zero or several groups: {[eg.subtasks[s].name for s in wrong]}",
        )
    for g, group in enumerate(a.groups):
        for s in group.subtasks:
            if a.slot_of_subtask[s] != a.slot_of_group[g]:
                return Violation(
                    invariant="placement.every_subtask_placed_once",
                    expected=str(a.slot_of_group[g]), actual=str(a.slot_of_subtask[s]),
                    message=f"{eg.subtasks[s].name} is not in the slot of its group {g}",
                )
    return None


@invariant(
    "placement.slots_used_equal_required",
    kind="always",
    subject="placement",
    concept="SlotSharingSlotAllocator.calculateRequiredSlots",
    statement="An allocated job uses exactly sum over slot sharing groups of max parallelism slots,"
              " each a distinct slot of a live TaskManager.",
)
def slots_used_equal_required(p: Placement) -> Violation | None:
    a = p.allocation
    if a.is_waiting:
        return None
    required: dict[str, int] = {}
    for v in p.execution_graph.job_graph.vertices.values():
        required[v.slot_sharing_group] = max(required.get(v.slot_sharing_group, 0), v.parallelism)
    total = sum(required.values())
    placed_groups = [s for s in a.slot_of_group if s is not None]
    used = set(s for s in a.slot_of_subtask if s is not None)
    if len(used) != total or len(placed_groups) != len(set(placed_groups)):
        return Violation(
            invariant="placement.slots_used_equal_required",
            expected=total, actual=len(used),
            message=f"uses {len(used)} slots for {len(placed_groups)} groups, requires {total} ({required})",
        )
    live = {(tm.id, i) for tm in a.task_managers if tm.id not in a.lost_task_managers
            for i in range(tm.number_of_slots)}
    dead = sorted(str(s) for s in used if (s.task_manager, s.index) not in live)
    if dead:
        return Violation(
            invariant="placement.slots_used_equal_required",
            expected="slots of live TaskManagers", actual=dead,
            message=f"subtasks placed in slots that do not exist or are lost: {dead}",
        )
    return None


def _registered() -> tuple:
    load_all()  # a placement invariant registered by any spec module is checked too
    return invariants("placement")


def __getattr__(name: str):
    """``PLACEMENT_INVARIANTS``: the registered placement invariants, read from the registry
    (``spec.invariant.invariants("placement")``) whenever the name is looked up, so it cannot
    drift from what :func:`check_placement` checks."""
    if name == "PLACEMENT_INVARIANTS":
        return _registered()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_placement(execution_graph: ExecutionGraph, allocation: SlotAllocation) -> list[Violation]:
    """All placement violations (empty when the placement is valid): every registered invariant
    of subject ``placement``, in registration order. The run-level invariant
    ``spec.recovery.placement_valid`` calls this after every (re)start."""
    p = Placement(execution_graph, allocation)
    return [v for inv in _registered() if (v := inv(p)) is not None]
