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
"""

from __future__ import annotations

from model.keygroups import compute_key_group_range_for_operator_index
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
        for node in task.nodes:
            op = getattr(node, "op", None)
            if op is None or not hasattr(op, "key_groups"):
                continue
            vertex = eg.job_graph.vertices[task.subtask.job_vertex]
            r = compute_key_group_range_for_operator_index(vertex.max_parallelism, vertex.parallelism,
                                                           task.subtask.subtask_index)
            for kg in op.key_groups():
                if not r.contains(kg):
                    return Violation(
                        invariant="keyed_state_on_owner",
                        expected={"key_group": kg, "owner_range": [r.start, r.end]},
                        actual={"key_group": kg, "subtask": task.subtask.name},
                        message=(f"operator '{node.name}': the state of key group {kg} was restored on "
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

