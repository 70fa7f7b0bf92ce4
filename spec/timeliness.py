"""Timeliness: what must happen within a bound the configuration names, not merely in the end.

An *eventually* invariant is satisfied by progress that comes arbitrarily late; the invariants
here bound it. Each bound is named in ``BOUNDS`` (what it is derived from) and measured in
heartbeat intervals -- ``Tick`` steps, the model's unit of time on the control plane -- read off
the run's history (``Cluster.events``: an event's second field is the step that appended it;
``Cluster.trace``: the actions taken), never off the model's own counters, so that a mechanism
that counts wrong is seen. A violation names the bound and the intervals that elapsed.

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
from spec.causality import free_slot_ages, free_slot_summary
from spec.invariant import Violation, invariant

#: each bound, by name: what it is, and the configuration it is derived from
BOUNDS = {
    "idle_slot_release": "slot_idle_timeout heartbeat intervals after the slot became free "
                         "(RuntimeConfig.slot_idle_timeout, Flink's slot.idle.timeout over the idle-check period)",
}


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
        return Violation(
            invariant="idle_slot_released_in_time",
            expected={"bound": "idle_slot_release", "intervals": bound},
            actual={"jobmanager": j, "allocation": int(alloc), "intervals": age, "pool": len(jm.pool),
                    "required": jm.required},
            message=(f"allocation {int(alloc)} has been free in JobManager {j}'s SlotPool for {age} heartbeat "
                     f"interval(s) while the pool holds {len(jm.pool)} slot(s) for a requirement of {jm.required}: "
                     f"bound idle_slot_release is {bound} interval(s) ({BOUNDS['idle_slot_release']})"),
        )
    return None
