"""Invariants of failover, restore and rescaling.

``restart_set_sufficient`` (always): after a failover, every subtask that consumes from a
restarted producer is restarted too, and every restarted consumer of a blocking partition
can read it again (the partition survived, or its producer restarts), as
``RestartPipelinedRegionFailoverStrategy`` ensures.

``keyed_state_on_owner`` (always): every key group's state lives on the one subtask
whose KeyGroupRange contains it (so every key group is owned exactly once and no keyed
state is stranded where its records never arrive), as ``KeyGroupRangeAssignment`` ensures.

``placement_valid`` (always): after every (re)start, the slot placement satisfies the
placement invariants of ``spec.placement``.

``inflight_preserved_on_rescale`` and ``inflight_on_key_group_owner`` (always): when a job is
resubmitted from a checkpoint with other parallelisms, every in-flight record of the checkpoint
is placed in exactly one new channel of its edge, and a record of a hash exchange in a channel
whose consumer owns its key group under the new KeyGroupRanges (``model/channelstaterescaling.py``).
"""

from __future__ import annotations

from collections import Counter

from model.keygroups import assign_key_to_parallel_operator, compute_key_group_range_for_operator_index
from spec.invariant import Violation, invariant
from spec.placement import check_placement


@invariant(
    "restart_set_sufficient",
    kind="always",
    concept="RestartPipelinedRegionFailoverStrategy",
    statement="A failover restarts every consumer of a restarted producer, and every restarted consumer "
    "of a lost blocking partition has that partition's producer restarted.",
)
def restart_set_sufficient(run) -> Violation | None:
    cluster = run.cluster
    lf = cluster.delta.failover  # the failover the last step ran, if any
    if lf is None:
        return None
    failed, unavailable, restart = lf
    eg = cluster.eg
    for ch in eg.channels:
        if ch.producer in restart and ch.consumer not in restart:
            return Violation(
                invariant="restart_set_sufficient",
                expected={"restart": sorted(restart | {ch.consumer})},
                actual={"restart": sorted(restart)},
                message=(f"subtask {eg.subtasks[ch.producer].name} restarts but its consumer "
                         f"{eg.subtasks[ch.consumer].name} does not: the consumer keeps the output of the "
                         f"old attempt and will also see the new attempt's (possibly different) output"),
            )
        if ch.id in unavailable and ch.consumer in restart and ch.producer not in restart:
            return Violation(
                invariant="restart_set_sufficient",
                expected={"restart": sorted(restart | {ch.producer})},
                actual={"restart": sorted(restart)},
                message=(f"{eg.subtasks[ch.consumer].name} restarts and needs the lost blocking partition of "
                         f"{eg.subtasks[ch.producer].name}, which is not restarted to produce it again"),
            )
    return None


@invariant(
    "keyed_state_on_owner",
    kind="always",
    concept="KeyGroupRange / StateAssignmentOperation",
    statement="Every key group's keyed state lives on the subtask whose KeyGroupRange contains it.",
)
def keyed_state_on_owner(run) -> Violation | None:
    cluster = run.cluster
    if not cluster.delta.redeployed and cluster.now:
        return None  # keyed state only moves when tasks are (re)deployed and restored
    eg = cluster.eg
    for task in cluster.tasks:
        for name, op in task.keyed_operators.items():
            vertex = eg.job_graph.vertices[task.subtask.job_vertex]
            r = compute_key_group_range_for_operator_index(vertex.max_parallelism, vertex.parallelism,
                                                           task.subtask.subtask_index)
            for kg in op.key_groups():
                if not r.contains(kg):
                    return Violation(
                        invariant="keyed_state_on_owner",
                        expected={"key_group": kg, "owner_range": [r.start, r.end]},
                        actual={"key_group": kg, "subtask": task.subtask.name},
                        message=(f"operator '{name}': the state of key group {kg} was restored on "
                                 f"{task.subtask.name}, whose KeyGroupRange is [{r.start}, {r.end}]; records "
                                 f"of that key group are routed elsewhere, so the state is stranded"),
                    )
    return None


@invariant(
    "placement_valid",
    kind="always",
    concept="SlotSharingGroup / CoLocationConstraint / LocalInputPreferredSlotSharingStrategy",
    statement="After every (re)start the slot placement honours slot sharing and co-location and places "
    "every subtask exactly once.",
)
def placement_valid(run) -> Violation | None:
    cluster = run.cluster
    if not cluster.delta.allocation_changed:
        return None
    problems = check_placement(cluster.eg, cluster.allocation)
    if problems:
        v = problems[0]
        return Violation(invariant="placement_valid", expected=v.expected, actual=v.actual,
                         message=f"{v.invariant}: {v.message}")
    return None



def _this_steps_channel_rescale(cluster):
    """The in-flight reassignment the last step did (RescaleFromCheckpoint), or None."""
    rescales = cluster.channel_rescales
    if not rescales or rescales[-1][0] != cluster.now - 1:
        return None
    return rescales[-1]


@invariant(
    "inflight_preserved_on_rescale",
    kind="always",
    concept="StateAssignmentOperation / TaskStateAssignment (channel state)",
    statement="A restore with new parallelisms from an unaligned checkpoint places every in-flight record "
    "of the checkpoint in exactly one new channel of its edge: none lost, none duplicated.",
)
def inflight_preserved_on_rescale(run) -> Violation | None:
    rec = _this_steps_channel_rescale(run.cluster)
    if rec is None:
        return None
    _, cid, report = rec
    for r in report:
        before = Counter(r.before)
        after = Counter(x for _, x in r.after)
        if before != after:
            lost = sorted((before - after).elements(), key=repr)
            extra = sorted((after - before).elements(), key=repr)
            return Violation(
                invariant="inflight_preserved_on_rescale",
                expected={"records": len(r.before)}, actual={"lost": lost, "duplicated": extra},
                message=(f"checkpoint {cid}, {r.partitioner} edge {r.job_edge} rescaled {r.old_parallelism} -> "
                         f"{r.new_parallelism}: in-flight records lost {lost}, duplicated {extra}"),
            )
    return None


@invariant(
    "inflight_on_key_group_owner",
    kind="always",
    concept="SubtaskStateMapper.RANGE / RecordFilter",
    statement="After a rescale from an unaligned checkpoint, every in-flight record of a hash exchange "
    "reaches the new subtask that owns its key group.",
)
def inflight_on_key_group_owner(run) -> Violation | None:
    rec = _this_steps_channel_rescale(run.cluster)
    if rec is None:
        return None
    _, cid, report = rec
    for r in report:
        if r.partitioner != "hash":
            continue
        p = r.new_parallelism[1]
        for k, record in r.after:
            owner = assign_key_to_parallel_operator(record[0], r.max_parallelism, p)
            if owner != k:
                return Violation(
                    invariant="inflight_on_key_group_owner",
                    expected={"key": record[0], "owner": owner}, actual={"subtask": k},
                    message=(f"checkpoint {cid}: the in-flight record {record!r} of hash edge {r.job_edge} was "
                             f"restored to new subtask {k} of {p}, but its key group belongs to subtask {owner}"),
                )
    return None
