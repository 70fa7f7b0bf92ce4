"""Timeliness: what must happen within a bound the configuration names, not merely in the end.

An *eventually* invariant is satisfied by progress that comes arbitrarily late; the invariants
here bound it. Each bound is named in ``BOUNDS`` (what it is derived from) and measured in
heartbeat intervals -- ``Tick`` steps, the model's unit of time on the control plane -- read off
the run's history (``Cluster.events``: an event's second field is the step that appended it;
``Cluster.trace``: the actions taken), never off the model's own counters, so that a mechanism
that counts wrong is seen. A violation names the bound and the intervals that elapsed.

``silent_task_executor_disconnected_in_time`` (always): a TaskExecutor whose JobMaster has not
heard of it -- no heartbeat answer since the last one, or since it began monitoring it on the
TaskExecutor's first offer (``registerTaskManager``) -- for more than ``heartbeat_timeout``
intervals is disconnected at the interval that passes that bound (``HeartbeatMonitor``'s
timeout: ``notifyHeartbeatTimeout`` -> ``disconnectTaskManager``), not later. Judged after every
``Tick``: no JobMaster still holds such a TaskExecutor connected. ``disturbance_has_cause``
checks the converse (never sooner).

``idle_slot_released_in_time`` (always): a free slot of a JobMaster's SlotPool is released at
the first heartbeat interval at which it has been free for ``slot_idle_timeout`` intervals while
the pool holds more slots than the job requires (``DeclarativeSlotPoolService.releaseIdleSlots``
with ``slot.idle.timeout``, run on every idle-check period: the model's heartbeat interval).
Judged after every ``Tick``: no slot is still free in a pool that holds more slots than its
requirement after that many intervals. The existing ``idle_slots_returned`` checks that a slot
the pool gave up is free everywhere once heartbeats settle; this one that the pool gives it up
in time.
"""

from __future__ import annotations

from model import actions as A
from spec.causality import free_slot_ages, free_slot_summary, heard_intervals, heard_summary
from spec.invariant import Violation, invariant

#: each bound, by name: what it is, and the configuration it is derived from
BOUNDS = {
    "idle_slot_release": "slot_idle_timeout heartbeat intervals after the slot became free "
                         "(RuntimeConfig.slot_idle_timeout, Flink's slot.idle.timeout over the idle-check period)",
    "task_executor_timeout": "heartbeat_timeout + 1 heartbeat intervals after the JobMaster last heard of the "
                             "TaskExecutor (RuntimeConfig.heartbeat_timeout, Flink's heartbeat.timeout over "
                             "heartbeat.interval)",
}


def task_executor_timeout_bound(config) -> int:
    """``BOUNDS["task_executor_timeout"]``: the heartbeat intervals after which a silent
    TaskExecutor is disconnected (more than ``heartbeat_timeout`` of them)."""
    return config.heartbeat_timeout + 1


def idle_slot_release_bound(config) -> int:
    """``BOUNDS["idle_slot_release"]``: heartbeat intervals a free slot may stay in a pool that
    holds more slots than its requirement."""
    return config.slot_idle_timeout


@invariant(
    "idle_slot_released_in_time",
    kind="always",
    scope="trace",
    concept="DeclarativeSlotPoolService.releaseIdleSlots (slot.idle.timeout)",
    statement="A free slot of a JobMaster's SlotPool is released at the first heartbeat interval at which it has "
    "been free for slot_idle_timeout intervals while the pool holds more slots than the job requires: after a "
    "heartbeat interval, no such slot is still in the pool (bound idle_slot_release).",
    history=free_slot_summary,
)
def idle_slot_released_in_time(run) -> Violation | None:
    c = run.cluster
    if c.cp is None or not c.now or type(c.trace[-1]) is not A.Tick:
        return None
    bound = idle_slot_release_bound(c.config)
    for j, jm, alloc, age in free_slot_ages(c):
        if age is None or age < bound or not c.cp.jms[j].alive or len(jm.pool) <= jm.required:
            continue
        te, _inc, slot = jm.pool[alloc]
        return Violation(
            invariant="idle_slot_released_in_time",
            expected={"bound": "idle_slot_release", "intervals": bound},
            actual={"jobmanager": j, "allocation": int(alloc), "slot": f"te{te}/{slot}", "intervals": age,
                    "pool": len(jm.pool), "required": jm.required},
            message=(f"allocation {int(alloc)} (slot te{te}/{slot}) has been free in JobManager {j}'s SlotPool for "
                     f"{age} heartbeat "
                     f"interval(s) while the pool holds {len(jm.pool)} slot(s) for a requirement of {jm.required}: "
                     f"bound idle_slot_release is {bound} interval(s) ({BOUNDS['idle_slot_release']})"),
        )
    return None


@invariant(
    "silent_task_executor_disconnected_in_time",
    kind="always",
    scope="trace",
    concept="HeartbeatManager / HeartbeatMonitor timeout (JobMaster.disconnectTaskManager)",
    statement="A TaskExecutor its JobMaster has not heard of (no heartbeat answer, no first offer) for more than "
    "heartbeat_timeout heartbeat intervals is disconnected at the interval that passes that bound: after a heartbeat "
    "interval no JobMaster holds such a TaskExecutor connected (bound task_executor_timeout).",
    history=heard_summary,
)
def silent_task_executor_disconnected_in_time(run) -> Violation | None:
    c = run.cluster
    if c.cp is None or not c.now or type(c.trace[-1]) is not A.Tick:
        return None
    bound = task_executor_timeout_bound(c.config)
    for j, _jm, te, n in heard_intervals(c):
        if n is None or n < bound or not c.cp.jms[j].alive:
            continue
        return Violation(
            invariant="silent_task_executor_disconnected_in_time",
            expected={"bound": "task_executor_timeout", "intervals": bound},
            actual={"jobmanager": j, "task_executor": te, "intervals": n},
            message=(f"JobManager {j}'s JobMaster still holds TaskExecutor {te} connected {n} heartbeat interval(s) "
                     f"after it last heard of it: bound task_executor_timeout is {bound} interval(s) "
                     f"({BOUNDS['task_executor_timeout']})"),
        )
    return None
