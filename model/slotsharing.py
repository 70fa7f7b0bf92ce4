"""Scheduling: execution slot sharing groups and their placement into TaskManager slots.

Invariant upheld: every subtask belongs to exactly one :class:`ExecutionSlotSharingGroup`
(ESSG); an ESSG holds at most one subtask per JobVertex and only subtasks of one slot
sharing group; subtask ``i`` of every vertex of a co-location group is in the same ESSG;
a slot sharing group gets exactly ``max(parallelism of its vertices)`` ESSGs; a placed
:class:`SlotAllocation` puts each ESSG into its own slot of a live TaskManager. When the
free slots are fewer than the ESSGs the allocation is the *state* ``WAITING_FOR_RESOURCES``
(with the required and available figures), never an exception.

Follows:

* ``LocalInputPreferredSlotSharingStrategy.ExecutionSlotSharingGroupBuilder`` (1.15+,
  the version with candidate groups per ``ConsumedPartitionGroup``): JobVertices in
  topological order; for each vertex, first every subtask tries (1) its co-location
  constraint's group, then (2) a candidate group of its producers (only when producer and
  consumer are in the same slot sharing group; the candidates of a ConsumedPartitionGroup
  are the producers' groups in partition order, shared by all consumers of that group and
  consumed as they are tried); the remaining subtasks then take (3) the oldest group of the
  slot sharing group still available to the vertex, or (4) a new group;
* ``SlotSharingSlotAllocator.calculateRequiredSlots``: the job needs the sum, over slot
  sharing groups, of the max parallelism of the group's vertices;
* slots are offered in a fixed order (TaskManagers by id, slots by index) and ESSGs are
  placed in creation order, one per slot.

Leaves out (deliberately): resource profiles (every slot fits every ESSG), the
AdaptiveScheduler (no running with reduced parallelism, no resource timeouts: an
allocation either places everything or waits), local input preference by actual
locality (producers' TaskManagers), slot request timeouts, the declarative resource
manager and slot pools, TaskBalancedPreferredSlotSharingStrategy. Re-placement after a
loss is modelled by :func:`allocate` with ``lost_task_managers`` and ``previous``: ESSGs
whose slot survived stay where they are (sticky), the others take free slots in order.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import attrs

from model.errors import InvalidArgument
from model.events import value
from model.executiongraph import ExecutionGraph

#: Allocation states.
ALLOCATED = "ALLOCATED"
WAITING_FOR_RESOURCES = "WAITING_FOR_RESOURCES"


@value  # immutable: a copy of the cluster shares it
@attrs.frozen(slots=True)
class TaskManager:
    """A TaskManager ``id`` offering ``number_of_slots`` slots (indices ``0..n-1``)."""

    id: str
    number_of_slots: int

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidArgument(f"TaskManager id must be a non-empty string, not {self.id!r}")
        if not isinstance(self.number_of_slots, int) or isinstance(self.number_of_slots, bool) \
                or self.number_of_slots < 0:
            raise InvalidArgument(f"TaskManager {self.id!r}: number of slots must be an integer >= 0, "
                                  f"not {self.number_of_slots!r}")


@value  # immutable: a copy of the cluster shares it
@attrs.frozen(slots=True, order=True)
class SlotId:
    """Slot ``index`` of TaskManager ``task_manager`` (Flink: ``SlotID``)."""

    task_manager: str
    index: int

    def __str__(self) -> str:
        return f"{self.task_manager}/{self.index}"


@value  # immutable: a copy of the cluster shares it
@attrs.frozen(slots=True, kw_only=True)
class ExecutionSlotSharingGroup:
    """Subtasks that share one slot: ``id`` is dense in creation order."""

    id: int
    slot_sharing_group: str
    subtasks: tuple[int, ...]


@value  # immutable: a copy of the cluster shares it
@attrs.frozen(slots=True, kw_only=True)
class SlotAllocation:
    """The outcome of :func:`allocate`.

    ``state`` is ``ALLOCATED`` or ``WAITING_FOR_RESOURCES``. ``slot_of_group[g]`` is the slot
    of ESSG ``g`` (``None`` while waiting, or for groups not placed); ``slot_of_subtask[s]``
    likewise per subtask id. ``required_slots`` per slot sharing group (sum =
    ``total_required_slots``); ``available_slots`` = free slots on live TaskManagers.
    """

    state: str
    groups: tuple[ExecutionSlotSharingGroup, ...]
    slot_of_group: tuple[SlotId | None, ...]
    slot_of_subtask: tuple[SlotId | None, ...]
    required_slots: dict[str, int]
    available_slots: int
    task_managers: tuple[TaskManager, ...] = ()
    lost_task_managers: frozenset[str] = frozenset()

    @property
    def total_required_slots(self) -> int:
        return sum(self.required_slots.values())

    @property
    def is_waiting(self) -> bool:
        return self.state == WAITING_FOR_RESOURCES

    def slot_of(self, subtask: int) -> SlotId | None:
        return self.slot_of_subtask[subtask]

    def subtasks_in_slot(self, slot: SlotId) -> tuple[int, ...]:
        return tuple(s for s, sl in enumerate(self.slot_of_subtask) if sl == slot)

    def used_slots(self) -> tuple[SlotId, ...]:
        return tuple(sorted({s for s in self.slot_of_group if s is not None}))

    def subtasks_on(self, task_manager: str) -> tuple[int, ...]:
        """Subtasks running on a TaskManager (those that fail when it is lost)."""
        return tuple(s for s, sl in enumerate(self.slot_of_subtask) if sl is not None and sl.task_manager == task_manager)


def required_slots(execution_graph: ExecutionGraph) -> dict[str, int]:
    """Slots per slot sharing group = the max parallelism of its vertices."""
    out: dict[str, int] = {}
    for v in execution_graph.job_graph.vertices.values():
        out[v.slot_sharing_group] = max(out.get(v.slot_sharing_group, 0), v.parallelism)
    return out


def compute_execution_slot_sharing_groups(execution_graph: ExecutionGraph) -> tuple[ExecutionSlotSharingGroup, ...]:
    """``LocalInputPreferredSlotSharingStrategy``: the ESSGs, in creation order."""
    eg = execution_graph
    jg = eg.job_graph
    ssg_of = {v.id: v.slot_sharing_group for v in jg.vertices.values()}
    vertices_of_ssg: dict[str, list[str]] = {}
    for v in jg.vertices.values():
        vertices_of_ssg.setdefault(v.slot_sharing_group, []).append(v.id)
    members: list[list[int]] = []  # ESSG id -> subtasks
    group_ssg: list[str] = []
    group_of: dict[int, int] = {}  # subtask -> ESSG
    # availableGroupsForJobVertex: insertion-ordered "sets" (dicts)
    available: dict[str, dict[int, None]] = {v: {} for v in jg.vertices}
    constraint_group: dict[tuple[str, int], int] = {}  # (co-location key, index) -> ESSG
    candidates: dict[tuple[int, tuple[int, ...]], dict[int, None]] = {}

    def add(subtask: int, vertex: str, group: int) -> None:
        members[group].append(subtask)
        group_of[subtask] = group
        available[vertex].pop(group, None)

    def new_group(vertex: str) -> int:
        gid = len(members)
        members.append([])
        group_ssg.append(ssg_of[vertex])
        for v in vertices_of_ssg[ssg_of[vertex]]:
            available[v][gid] = None
        return gid

    for vid, vertex in jg.vertices.items():
        col = vertex.co_location_group
        remaining: list[int] = []
        for sid in eg.subtasks_of(vid):
            index = eg.subtasks[sid].subtask_index
            group = None
            if col is not None:  # 1. co-location constraint
                group = constraint_group.get((col, index))
            if group is None:  # 2. a producer's group (ConsumedPartitionGroup candidates)
                for gate in eg.input_gates[sid]:
                    producers = tuple(eg.channels[c].producer for c in gate.channels)
                    key = (gate.job_edge, producers)
                    cands = candidates.get(key)
                    if cands is None:
                        cands = {}
                        producer_vertex = eg.subtasks[producers[0]].job_vertex
                        if ssg_of[producer_vertex] == vertex.slot_sharing_group:
                            for p in producers:
                                cands[group_of[p]] = None
                        candidates[key] = cands
                    while cands:
                        cand = next(iter(cands))
                        del cands[cand]
                        if cand in available[vid]:
                            group = cand
                            break
                    if group is not None:
                        break
            if group is None:
                remaining.append(sid)
            else:
                add(sid, vid, group)
        for sid in remaining:  # 3. any available group, 4. a new group
            avail = available[vid]
            group = next(iter(avail)) if avail else new_group(vid)
            add(sid, vid, group)
        if col is not None:
            for sid in eg.subtasks_of(vid):
                constraint_group[(col, eg.subtasks[sid].subtask_index)] = group_of[sid]
    return tuple(
        ExecutionSlotSharingGroup(id=g, slot_sharing_group=group_ssg[g], subtasks=tuple(sorted(m)))
        for g, m in enumerate(members)
    )


def free_slots(task_managers: Iterable[TaskManager], lost_task_managers: Iterable[str] = (),
               occupied: Iterable[SlotId] = ()) -> tuple[SlotId, ...]:
    """Free slots of the live TaskManagers in the deterministic offer order."""
    lost = set(lost_task_managers)
    taken = set(occupied)
    out = []
    for tm in sorted(task_managers, key=lambda t: t.id):
        if tm.id in lost:
            continue
        for i in range(tm.number_of_slots):
            s = SlotId(tm.id, i)
            if s not in taken:
                out.append(s)
    return tuple(out)


def allocate(
    execution_graph: ExecutionGraph,
    task_managers: Sequence[TaskManager],
    *,
    lost_task_managers: Iterable[str] = (),
    previous: SlotAllocation | None = None,
    groups: tuple[ExecutionSlotSharingGroup, ...] | None = None,
) -> SlotAllocation:
    """Place every ESSG into its own slot, or report ``WAITING_FOR_RESOURCES``.

    ``lost_task_managers`` are excluded. With ``previous`` (an earlier allocation of the
    same execution graph) ESSGs whose slot is still alive keep it and only the others are
    placed, into the free slots in order. ``groups`` may pass precomputed ESSGs.
    """
    ids = [tm.id for tm in task_managers]
    if len(set(ids)) != len(ids):
        raise InvalidArgument(f"duplicate TaskManager ids in {sorted(ids)}")
    lost = frozenset(lost_task_managers)
    tms = tuple(sorted(task_managers, key=lambda t: t.id))
    if groups is None:
        groups = previous.groups if previous is not None else compute_execution_slot_sharing_groups(execution_graph)
    alive = {SlotId(tm.id, i) for tm in tms if tm.id not in lost for i in range(tm.number_of_slots)}
    slot_of_group: list[SlotId | None] = [None] * len(groups)
    if previous is not None and previous.state == ALLOCATED:
        for g, s in enumerate(previous.slot_of_group):
            if s is not None and s in alive:
                slot_of_group[g] = s
    kept = [s for s in slot_of_group if s is not None]
    free = free_slots(tms, lost, kept)
    required = required_slots(execution_graph)
    unplaced = [g for g, s in enumerate(slot_of_group) if s is None]
    n_subtasks = len(execution_graph.subtasks)
    if len(free) < len(unplaced):
        return SlotAllocation(
            state=WAITING_FOR_RESOURCES, groups=groups, slot_of_group=(None,) * len(groups),
            slot_of_subtask=(None,) * n_subtasks, required_slots=required,
            available_slots=len(free) + len(kept), task_managers=tms, lost_task_managers=lost,
        )
    for g, s in zip(unplaced, free):
        slot_of_group[g] = s
    slot_of_subtask: list[SlotId | None] = [None] * n_subtasks
    for g, group in enumerate(groups):
        for sid in group.subtasks:
            slot_of_subtask[sid] = slot_of_group[g]
    return SlotAllocation(
        state=ALLOCATED, groups=groups, slot_of_group=tuple(slot_of_group),
        slot_of_subtask=tuple(slot_of_subtask), required_slots=required,
        available_slots=len(free) + len(kept), task_managers=tms, lost_task_managers=lost,
    )
