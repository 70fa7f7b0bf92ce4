"""What must hold of the control plane (``model/controlplane.py``): slots, fencing, leader
failover, the HA store -- invariants over a whole-cluster run, and coverage goals.

Every check returns at once for a run without the control plane (``cluster.cp is None``).
Checks of the last step read the events it appended (an event's second field is the step
that appended it). "Once heartbeats have settled" means: no RPC in flight and more than
``heartbeat_timeout`` + 1 heartbeat intervals since the last fault (``ControlPlane.settled``).
"""

from __future__ import annotations

from spec.coverage import goal
from spec.invariant import Violation, invariant


def _control_plane(scenario) -> bool:
    """The goal needs the modelled control plane (``ModelScope.control_plane``)."""
    return scenario.scope.control_plane


def _step_events(cluster, kind: str) -> list:
    """The events of kind ``kind`` the last step appended."""
    events = cluster.events
    step = cluster.now - 1
    out = []
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if e[1] != step:
            break
        if e[0] == kind:
            out.append(e)
    out.reverse()
    return out


def _leading(cp):
    p = cp.leading_process()
    return p


@invariant("no_slot_shared", kind="always", concept="SlotManager / DeclarativeSlotPool",
           statement="No slot is allocated to two allocations at once: the SlotManager hands each allocation one "
                     "slot, and the running JobMaster's SlotPool holds each slot (TaskExecutor incarnation, "
                     "index) for one allocation.")
def no_slot_shared(run) -> Violation | None:
    cp = run.cluster.cp
    if cp is None:
        return None
    p = _leading(cp)
    if p is not None:
        seen: dict = {}
        for key, (state, alloc, _owner) in sorted(p.rm.slots.items()):
            if alloc is not None and alloc in seen:
                return Violation(invariant="no_slot_shared", expected="one slot per allocation",
                                 actual={"allocation": alloc, "slots": [list(seen[alloc]), list(key)]},
                                 message=f"the SlotManager holds allocation {alloc} in two slots")
            if alloc is not None:
                seen[alloc] = key
    jm = cp.running_jobmaster()
    if jm is not None:
        where: dict = {}
        for alloc, place in sorted(jm.pool.items()):
            if place in where:
                return Violation(invariant="no_slot_shared", expected="one allocation per slot",
                                 actual={"slot": list(place), "allocations": [where[place], alloc]},
                                 message=f"the SlotPool holds slot {place} as allocations {where[place]} and {alloc}")
            where[place] = alloc
    return None


@invariant("slot_views_agree", kind="always", concept="SlotManager.reportSlotStatus / slot reports",
           statement="Once heartbeats have settled, the leading SlotManager's slot table equals the SlotReport of "
                     "every TaskExecutor registered there, and every slot in the running JobMaster's SlotPool is "
                     "an active slot of that JobMaster on its TaskExecutor.")
def slot_views_agree(run) -> Violation | None:
    cp = run.cluster.cp
    if cp is None or not cp.settled():
        return None
    p = _leading(cp)
    if p is None:
        return None
    for te in cp.tes:
        if not te.alive or p.rm.registered.get(te.index) != te.inc or te.rm_token != p.rm.token:
            continue
        for slot, alloc, owner in te.slot_report():
            view = p.rm.slots.get((te.index, slot))
            want = ("FREE", None, None) if alloc is None else ("ALLOCATED", alloc, owner)
            if view != want:
                return Violation(invariant="slot_views_agree", expected=list(want),
                                 actual=None if view is None else list(view),
                                 message=f"settled, yet the SlotManager sees slot te{te.index}/{slot} as {view}, "
                                         f"the TaskExecutor reports {want}")
    jm = p.jobmaster
    if jm is not None:
        for alloc, (i, inc, slot) in sorted(jm.pool.items()):
            te = cp.tes[i]
            if not te.alive or te.inc != inc or te.job_token != jm.token:
                continue
            s = te.slots[slot]
            if s is None or s[0] != alloc or s[1] != jm.token or not s[2]:
                return Violation(invariant="slot_views_agree", expected=[alloc, jm.token, True],
                                 actual=None if s is None else list(s),
                                 message=f"settled, yet the SlotPool holds allocation {alloc} in te{i}/{slot}, "
                                         f"which the TaskExecutor has as {s}")
    return None


@invariant("deployments_agree", kind="always", concept="DefaultExecutionDeploymentReconciler",
           statement="Once heartbeats have settled, what the running JobMaster believes deployed in each of its "
                     "slots is exactly what the TaskExecutor runs there.")
def deployments_agree(run) -> Violation | None:
    cp = run.cluster.cp
    if cp is None or not cp.settled():
        return None
    p = _leading(cp)
    jm = None if p is None else p.jobmaster
    if jm is None or cp.running != p.index:
        return None
    for alloc, (i, inc, slot) in sorted(jm.pool.items()):
        te = cp.tes[i]
        if not te.alive or te.inc != inc or te.job_token != jm.token:
            continue
        believed = set(jm.deployed.get(alloc, ()))
        runs = set(te.deployed.get(slot, ())) if te.slots[slot] is not None and te.slots[slot][0] == alloc else set()
        if believed != runs:
            return Violation(invariant="deployments_agree", expected=sorted(believed), actual=sorted(runs),
                             message=f"settled, yet the JobMaster believes {sorted(believed)} deployed in allocation "
                                     f"{alloc} (te{i}/{slot}), which runs {sorted(runs)}")
    return None


@invariant("task_in_owned_slot", kind="always", concept="TaskExecutor.submitTask (JobMasterId check)",
           statement="A running task runs, as its current execution, in a slot that the running JobMaster owns "
                     "on a living TaskExecutor.")
def task_in_owned_slot(run) -> Violation | None:
    c = run.cluster
    cp = c.cp
    if cp is None:
        return None
    jm = cp.running_jobmaster()
    if jm is None:
        return None
    where = {}
    for te in cp.tes:
        if not te.alive:
            continue
        for slot, ex in te.deployed.items():
            for e in ex:
                where.setdefault(e, []).append((te, slot))
    for t in c.tasks:
        if t.status != "RUNNING":
            continue
        e = (t.id, jm.attempts[t.id])
        places = where.get(e, [])
        ok = [(te, slot) for te, slot in places
              if te.slots[slot] is not None and te.slots[slot][1] == jm.token]
        if len(ok) != 1 or len(places) != 1:
            return Violation(invariant="task_in_owned_slot", expected=f"execution {e} in one slot of JobMaster {jm.token}",
                             actual=[[f"te{te.index}", slot, list(te.slots[slot]) if te.slots[slot] else None]
                                     for te, slot in places],
                             message=f"{t.subtask.name} runs, but its execution {e} is in "
                                     f"{len(places)} slot(s), {len(ok)} of them owned by the running JobMaster")
    return None


@invariant("no_split_brain", kind="always", concept="FencedRpcEndpoint / fenced HA writes",
           statement="No effect of a deposed leader reaches a TaskExecutor or the HA store: every accepted fenced "
                     "RPC carries the fencing token its receiver expects, and every accepted HA write comes from "
                     "the leader whose latch node leads.")
def no_split_brain(run) -> Violation | None:
    c = run.cluster
    if c.cp is None:
        return None
    for e in _step_events(c, "cp_effect"):
        _, _, receiver, what, token, expected, accepted = e
        if accepted and token != expected:
            return Violation(invariant="no_split_brain", expected=expected, actual=token,
                             message=f"{receiver} accepted {what} from leader session {token}, "
                                     f"but the current one is {expected}")
    return None


@invariant("checkpoint_ids_increase", kind="always", concept="ZooKeeperCheckpointIDCounter",
           statement="Checkpoint ids strictly increase across JobManager failovers: no id is handed out twice.")
def checkpoint_ids_increase(run) -> Violation | None:
    c = run.cluster
    if c.cp is None:
        return None
    for _, _, cid, before in _step_events(c, "cp_checkpoint_id"):
        if cid <= before:
            return Violation(invariant="checkpoint_ids_increase", expected=f"> {before}", actual=cid,
                             message=f"checkpoint id {cid} handed out after id {before} was")
    return None


@invariant("restore_uses_latest_checkpoint", kind="always", concept="DefaultCompletedCheckpointStore recovery",
           statement="A new leader restores the job from the latest completed checkpoint of the HA store.")
def restore_uses_latest_checkpoint(run) -> Violation | None:
    c = run.cluster
    if c.cp is None:
        return None
    for e in _step_events(c, "cp_job_recovered"):
        restored, latest = e[3], e[4]
        if restored != latest:
            return Violation(invariant="restore_uses_latest_checkpoint", expected=latest, actual=restored,
                             message=f"the new leader restored checkpoint {restored}; the store's latest is {latest}")
    return None


@invariant("terminal_job_never_reruns", kind="always", concept="JobResultStore (FLIP-194)",
           statement="A job that reached a globally terminal state is never run again.")
def terminal_job_never_reruns(run) -> Violation | None:
    c = run.cluster
    if c.cp is None:
        return None
    for e in _step_events(c, "cp_job_recovered"):
        if e[6]:
            return Violation(invariant="terminal_job_never_reruns", expected="no recovery", actual=f"leader {e[2]}",
                             message=f"leader session {e[2]} recovered and restarted a job that had already finished")
    return None


# -- coverage goals ----------------------------------------------------------------------------

def _any(new_events, kind: str, pred=lambda e: True) -> bool:
    return any(e[0] == kind and pred(e) for e in new_events)


@goal("cp_slot_offered_to_deposed_jobmaster", "DeclarativeSlotPool.offerSlots",
      "A TaskExecutor's slot offer reached a JobMaster whose leadership had already ended.",
      applies=_control_plane)
def cp_slot_offered_to_deposed_jobmaster(run, new_events) -> bool:
    return _any(new_events, "cp_offer_to_deposed")


@goal("cp_heartbeat_timeout_during_checkpoint", "HeartbeatManager (JobMaster -> TaskExecutor)",
      "A JobMaster lost a TaskExecutor by heartbeat timeout while a checkpoint was pending.",
      applies=_control_plane)
def cp_heartbeat_timeout_during_checkpoint(run, new_events) -> bool:
    return _any(new_events, "cp_tm_timeout", lambda e: e[4])


@goal("cp_jobmanager_failover_during_commit", "JobMaster failover / two-phase commit",
      "The JobMaster running the job was lost while notifyCheckpointComplete (the sinks' commit) was in flight.",
      applies=_control_plane)
def cp_jobmanager_failover_during_commit(run, new_events) -> bool:
    return _any(new_events, "cp_jobmaster_lost", lambda e: e[2])


@goal("cp_duplicate_registration", "ResourceManager.registerTaskExecutor",
      "A TaskExecutor registered again at the ResourceManager it was registered at.",
      applies=_control_plane)
def cp_duplicate_registration(run, new_events) -> bool:
    return _any(new_events, "cp_duplicate_registration")


@goal("cp_lost_slot_request_answered_by_reconciliation", "SlotManager.reportSlotStatus",
      "A slot the SlotManager still saw PENDING (its answer lost or late) was resolved by a heartbeat's slot report.",
      applies=_control_plane)
def cp_lost_slot_request_answered_by_reconciliation(run, new_events) -> bool:
    return _any(new_events, "cp_pending_slot_reconciled")


@goal("cp_lost_slot_answer_masked_by_slot_report", "SlotManager.reportSlotStatus (a lost RPC answer)",
      "A TaskExecutor's answer to a slot request was lost, and a later heartbeat's slot report resolved the slot the "
      "SlotManager still saw PENDING: the later message masked the lost answer.",
      applies=lambda s: _control_plane(s) and _loses_rpcs(s), floor=3)
def cp_lost_slot_answer_masked_by_slot_report(run, new_events) -> bool:
    resolved = {e[2] for e in new_events if e[0] == "cp_pending_slot_reconciled"}
    if not resolved:
        return False
    from model.rpc import SlotRequestAnswer  # a reconciliation is rare: the history is read only then

    # the newest loss of each slot's answer, and the newest reconciliation of each slot before
    # this step: the answer lost after the slot was last reconciled is the one this step masks
    lost: dict = {}
    before: dict = {}
    events = run.cluster.events
    for e in events[:len(events) - len(new_events)]:
        if e[0] == "cp_rpc_lost" and type(e[2]) is SlotRequestAnswer:
            lost[(e[2].te, e[2].slot)] = e[1]
        elif e[0] == "cp_pending_slot_reconciled":
            before[e[2]] = e[1]
    return any(key in lost and lost[key] >= before.get(key, -1) for key in resolved)


def _loses_rpcs(scenario) -> bool:
    kinds = scenario.environment.control_plane_faults
    return scenario.environment.max_failures > 0 and (kinds is None or "RpcLose" in kinds)


@goal("cp_deposed_leader_write_rejected", "fenced HA writes",
      "A deposed leader's write to the HA store was rejected.",
      applies=_control_plane)
def cp_deposed_leader_write_rejected(run, new_events) -> bool:
    return _any(new_events, "cp_effect", lambda e: e[2] == "store" and not e[6])


# -- idle slots and scheduling -----------------------------------------------------------------

@invariant("idle_slots_returned", kind="always", concept="DeclarativeSlotPool.releaseIdleSlots / AllocatedSlotReport",
           statement="Once heartbeats have settled, every slot a TaskExecutor holds as active for the leading "
                     "JobMaster is in that JobMaster's SlotPool: a slot the pool gave up (an idle slot after "
                     "slot.idle.timeout, a slot of a TaskExecutor it lost) is free on the TaskExecutor too, and by its "
                     "slot report in the SlotManager.")
def idle_slots_returned(run) -> Violation | None:
    cp = run.cluster.cp
    if cp is None or not cp.settled():
        return None
    p = _leading(cp)
    jm = None if p is None else p.jobmaster
    if jm is None:
        return None
    for te in cp.tes:
        i = te.index
        if not te.alive or te.job_token != jm.token:
            continue
        for slot, s in enumerate(te.slots):
            if s is not None and s[1] == jm.token and s[2] and s[0] not in jm.pool:
                return Violation(invariant="idle_slots_returned", expected="in the SlotPool or free",
                                 actual=[f"te{i}", slot, list(s)],
                                 message=f"settled, yet te{i} holds slot {slot} as allocation {s[0]} of JobMaster "
                                         f"{jm.token}, which the SlotPool does not hold")
    return None


@invariant("region_deployed_after_blocking_inputs", kind="always", concept="PipelinedRegionSchedulingStrategy",
           statement="No subtask of a pipelined region is deployed before every producer of the blocking partitions "
                     "the region consumes has finished (lazy from sources); a region without blocking inputs is "
                     "deployed at once (eager).")
def region_deployed_after_blocking_inputs(run) -> Violation | None:
    c = run.cluster
    if c.cp is None:
        return None
    for e in _step_events(c, "cp_submit"):
        s, waiting = e[2], e[3]
        if waiting:
            return Violation(invariant="region_deployed_after_blocking_inputs", expected="producers FINISHED",
                             actual={"subtask": s, "unfinished_producers": list(waiting)},
                             message=f"{c.tasks[s].subtask.name} was deployed while the producers "
                                     f"{[c.tasks[p].subtask.name for p in waiting]} of its region's blocking inputs "
                                     f"had not finished")
    return None


@goal("cp_idle_slot_released", "DeclarativeSlotPool.releaseIdleSlots",
      "The SlotPool released a slot that had been free for slot.idle.timeout (freeSlot to its TaskExecutor).",
      applies=_control_plane)
def cp_idle_slot_released(run, new_events) -> bool:
    return _any(new_events, "cp_idle_slot_released")


@goal("cp_idle_slot_reused", "DeclarativeSlotPoolBridge (free slots reserved first)",
      "A free slot of the SlotPool was taken by another execution slot sharing group before its idle timeout.",
      applies=_control_plane)
def cp_idle_slot_reused(run, new_events) -> bool:
    return _any(new_events, "cp_idle_slot_reused")


@goal("cp_unreported_slot_freed", "TaskExecutor.syncSlotsWithSnapshotFromJobMaster",
      "A TaskExecutor freed a slot its JobMaster's AllocatedSlotReport no longer named (its freeSlot was lost).",
      applies=_control_plane)
def cp_unreported_slot_freed(run, new_events) -> bool:
    return _any(new_events, "cp_unreported_slot_freed")
