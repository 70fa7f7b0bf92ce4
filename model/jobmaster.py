"""The JobMaster with its SlotPool: requirements, offered and accepted slots, deployment,
heartbeats with the TaskExecutors and deployment reconciliation.

Invariant upheld: the SlotPool holds each allocation once and never more slots than the job
needs; every subtask the JobMaster believes deployed runs (once heartbeats have settled)
in an allocation of its pool, on the TaskExecutor it was submitted to.

Follows ``JobMaster`` (a ``FencedRpcEndpoint<JobMasterId>``) with a ``DeclarativeSlotPool``:

* its requirement is the number of execution slot sharing groups that hold or need a slot:
  a group needs one while a subtask of it is schedulable and not FINISHED (the control plane
  says which are schedulable: ``model.controlplane``); it declares the requirement to the
  ResourceManager whenever it changes, and again each heartbeat interval until the
  ResourceManager acknowledged it (``DeclareResourceRequirementServiceConnectionManager``
  retries a declaration that failed);
* ``offerSlots`` (a TaskExecutor that offers is connected: a heartbeat target): an offered
  slot is accepted while the pool needs slots (a declarative
  pool accepts any matching slot, whichever allocation it came from), else rejected;
* scheduling (PipelinedRegionSchedulingStrategy with SlotSharingExecutionSlotAllocator):
  once the pool holds a slot for every group with a schedulable subtask waiting, those
  subtasks are submitted (``submitTask``) to their groups' slots. Every subtask of a
  streaming job is schedulable at once (eager); a subtask whose pipelined region consumes a
  blocking partition only once every producer of the region's blocking inputs finished
  (lazy from sources);
* idle slots (``DeclarativeSlotPoolBridge.releaseSlot`` / ``DefaultDeclarativeSlotPool``):
  a group whose subtasks all finished (or none of which is schedulable) gives its slot back
  to the pool, where it is *free*; a group that needs a slot takes a free one first. A
  free slot idle for ``slot_idle_timeout`` heartbeat intervals while the pool holds more
  slots than its requirement is released (``releaseIdleSlots``): it leaves the pool and
  ``freeSlot`` goes to its TaskExecutor, whose next slot report tells the SlotManager;
* heartbeats: each tick a request with the ``AllocatedSlotReport`` to every connected
  TaskExecutor; a TaskExecutor silent for ``heartbeat_timeout`` ticks is lost: its
  slots leave the pool and the subtasks in them fail (the data plane's failover runs);
* deployment reconciliation (``DefaultExecutionDeploymentReconciler``): the answer's
  ``ExecutionDeploymentReport`` is compared with what the JobMaster deployed there; an
  execution it does not know is cancelled, one that is missing fails.

Leaves out: the acknowledgement of ``submitTask`` (a deployment no report has shown yet
counts as missing after ``heartbeat_timeout`` reports without it) and of ``freeSlot`` (a lost
one is repaired by the AllocatedSlotReport), the AdaptiveScheduler, partition tracking, and
a failover's restart delay (a restarted group keeps its slot: Flink frees it and takes it
back from the pool within the delay, long before ``slot.idle.timeout``).
"""

from __future__ import annotations

from model import rpc, seams


class JobMaster:
    """The JobMaster of leader session ``token`` (see the module docstring)."""

    __slots__ = ("token", "groups", "pool", "group_slot", "deployed", "attempts", "pending", "connected", "missed",
                 "unconfirmed", "status", "idle", "needed", "declared", "acked")

    def __init__(self, token: int, groups: tuple, attempts: list):
        self.token = token
        #: the job's execution slot sharing groups: tuple of subtask tuples (static)
        self.groups = groups
        #: accepted allocations: allocation -> (te, incarnation, slot)
        self.pool: dict = {}
        #: execution slot sharing group -> allocation
        self.group_slot: dict = {}
        #: allocation -> ((subtask, attempt), ...) the JobMaster submitted there
        self.deployed: dict = {}
        #: subtask -> its current execution attempt (an ExecutionAttemptID: unique in the run)
        self.attempts: list = list(attempts)
        #: subtasks waiting for deployment
        self.pending: set = set(range(len(attempts)))
        #: te -> incarnation of every TaskExecutor connected to this JobMaster (it offered slots)
        self.connected: dict = {}
        #: te -> heartbeat ticks without an answer
        self.missed: dict = {}
        #: submitted executions no report has shown yet -> reports that did not show them
        self.unconfirmed: dict = {}
        #: RUNNING, or FINISHED once the job reached its globally terminal state
        self.status = "RUNNING"
        #: free slots of the pool (no group holds them) -> heartbeat intervals they have been
        #: free (counted up to the idle timeout)
        self.idle: dict = {}
        #: the groups that hold or need a slot (``update_demand``); all of them until told
        self.needed: frozenset = frozenset(range(len(groups)))
        #: the number of the last declaration sent to the ResourceManager, and whether it
        #: acknowledged it
        self.declared = None
        self.acked = False

    @property
    def required(self) -> int:
        return len(self.needed)

    def update_demand(self, cp, needed: frozenset) -> list:
        """The groups that hold or need a slot are now ``needed``: a group that no longer needs
        its slot gives it back to the pool, free (``freeReservedSlot``); a changed requirement
        is declared. Returns the allocations that became free."""
        freed = []
        for g in sorted(self.group_slot):
            if g not in needed:
                alloc = self.group_slot.pop(g)
                self.idle[alloc] = 0
                freed.append(alloc)
        changed = len(needed) != len(self.needed)
        self.needed = needed
        if changed:
            self.declare(cp, force=True)
        return freed

    def targets(self) -> dict:
        """te -> incarnation of every TaskExecutor connected to this JobMaster (its heartbeat
        targets)."""
        return dict(self.connected)

    def declare(self, cp, force: bool = False) -> None:
        """Declare the requirement: when it changed (``force``), and again (each heartbeat
        interval) until the ResourceManager acknowledged it."""
        if force or not self.acked:
            self.declared = cp.new_sequence_number()
            self.acked = False
            cp.net.send(rpc.DeclareResourceRequirements(self.token, self.token, self.required, self.declared))

    def on_acknowledged(self, m: rpc.RequirementsAcknowledged) -> None:
        """The ResourceManager holds the last declaration (or an older one's answer arrives late)."""
        if m.seq == self.declared:
            self.acked = True

    def on_offer(self, cp, m: rpc.OfferSlots) -> set:
        """Accept or reject the offered slots. A slot offered under a new allocation replaces
        the pool's older allocation of the same slot (the TaskExecutor no longer holds it).
        Returns the subtasks that were deployed in such a replaced allocation."""
        accepted, rejected = [], []
        failed: set = set()
        if self.connected.get(m.te) != m.inc:
            self.connected[m.te] = m.inc
            self.missed[m.te] = 0
        for _slot, alloc in m.slots:
            if alloc not in self.pool:
                for old in [a for a, v in self.pool.items() if v == (m.te, m.inc, _slot)]:
                    failed |= self.fail_slot(old)
            if alloc in self.pool:
                accepted.append(alloc)
            elif self.status == "RUNNING" and len(self.pool) < self.required:
                self.pool[alloc] = (m.te, m.inc, _slot)
                accepted.append(alloc)
            else:
                rejected.append(alloc)
        cp.net.send(rpc.OfferSlotsAnswer(m.te, self.token, tuple(accepted), tuple(rejected)))
        return failed

    def fail(self, cp, subtasks) -> None:
        """Subtasks failed or are restarted: a new attempt each, waiting for deployment."""
        for e in [e for e in self.unconfirmed if e[0] in subtasks]:
            del self.unconfirmed[e]
        for s in sorted(subtasks):
            self.attempts[s] = cp.new_attempt()
            self.pending.add(s)
        for alloc in list(self.deployed):
            keep = tuple(e for e in self.deployed[alloc] if e[0] not in subtasks)
            if keep:
                self.deployed[alloc] = keep
            else:
                del self.deployed[alloc]

    def try_deploy(self, cp, schedulable) -> list:
        """Once every group with a waiting subtask in ``schedulable`` holds a slot (free slots
        of the pool are taken first), submit those subtasks. Returns the SubmitTask messages
        sent."""
        waiting = {s for s in self.pending if s in schedulable}
        if not waiting or self.status != "RUNNING":
            return []
        free = sorted(a for a in self.pool if a not in self.group_slot.values())
        unplaced = [g for g, subtasks in enumerate(self.groups)
                    if g not in self.group_slot and any(s in waiting for s in subtasks)]
        if len(free) < len(unplaced):
            return []
        for g, alloc in zip(unplaced, free):
            self.group_slot[g] = alloc
            self.idle.pop(alloc, None)
        sent = []
        for g, subtasks in enumerate(self.groups):
            mine = tuple(sorted((s, self.attempts[s]) for s in subtasks if s in waiting))
            if not mine:
                continue
            alloc = self.group_slot[g]
            te, _inc, _slot = self.pool[alloc]
            self.deployed[alloc] = tuple(sorted(set(self.deployed.get(alloc, ())) | set(mine)))
            for e in mine:
                self.unconfirmed[e] = 0
            m = rpc.SubmitTask(te, self.token, alloc, mine)
            cp.net.send(m)
            sent.append(m)
        self.pending -= waiting
        return sent

    def release_idle_slots(self, cp, timeout: int) -> list:
        """``releaseIdleSlots``, each heartbeat interval: a free slot idle for ``timeout``
        intervals leaves the pool while the pool holds more slots than the requirement, and
        ``freeSlot`` goes to its TaskExecutor. Returns ``(te, slot, allocation)`` of each."""
        for alloc in self.idle:
            self.idle[alloc] = min(self.idle[alloc] + 1, timeout)
        released = []
        for alloc in sorted(self.idle):
            if self.idle[alloc] < timeout or len(self.pool) <= self.required:
                continue
            del self.idle[alloc]
            te, _inc, slot = self.pool.pop(alloc)
            for e in self.deployed.pop(alloc, ()):
                self.unconfirmed.pop(e, None)
            cp.net.send(rpc.FreeSlot(te, self.token, alloc))
            released.append((te, slot, alloc))
        return released

    def lose_task_executor(self, te: int) -> set:
        """TaskExecutor ``te`` is lost: its slots leave the pool. Returns the subtasks that
        ran there."""
        failed = set()
        for alloc in [a for a, v in self.pool.items() if v[0] == te]:
            del self.pool[alloc]
            self.idle.pop(alloc, None)
            failed.update(s for s, _ in self.deployed.pop(alloc, ()))
            for g in [g for g, a in self.group_slot.items() if a == alloc]:
                del self.group_slot[g]
        self.missed.pop(te, None)
        self.connected.pop(te, None)
        return failed

    def tick(self, cp, timeout: int) -> list:
        """One heartbeat interval: time out silent TaskExecutors, send requests (with the
        AllocatedSlotReport) and re-declare the requirement. Returns the lost TaskExecutors."""
        lost = []
        targets = self.targets()
        for te in sorted(targets):
            self.missed[te] = self.missed.get(te, 0) + 1
            if self.missed[te] > timeout:
                lost.append(te)
        for te in lost:
            del targets[te]
        for te, inc in sorted(targets.items()):
            allocs = tuple(sorted(a for a, v in self.pool.items() if v[0] == te))
            cp.net.send(rpc.HeartbeatRequest("jm", self.token, te, inc, allocs))
        return lost

    def reconcile(self, m: rpc.HeartbeatResponse, timeout: int) -> tuple[set, set]:
        """``ExecutionDeploymentReconciler``: (unknown executions to cancel, missing subtasks
        to fail) from the TaskExecutor's report. A deployment no report has shown yet is
        pending (FLINK-18533): it counts as missing only once ``timeout`` reports in a row
        did not show it (its submission was lost)."""
        expected = set()
        for alloc, v in self.pool.items():
            if v[0] == m.te:
                expected.update(self.deployed.get(alloc, ()))
        reported = set(m.payload[0])
        unknown = {e for e in reported - expected}
        missing = set()
        for e in expected - reported:
            n = self.unconfirmed.get(e)
            if n is not None and n < timeout:
                self.unconfirmed[e] = n + 1
            else:
                missing.add(e[0])
        for e in expected & reported:
            self.unconfirmed.pop(e, None)
        return unknown, missing

    def fail_slot(self, alloc: int) -> set:
        """``failSlot``: the TaskExecutor does not hold ``alloc``; it leaves the pool. Returns
        the subtasks deployed in it."""
        if alloc not in self.pool:
            return set()
        del self.pool[alloc]
        self.idle.pop(alloc, None)
        for g in [g for g, a in self.group_slot.items() if a == alloc]:
            del self.group_slot[g]
        return {s for s, _ in self.deployed.pop(alloc, ())}

    def release_all(self, cp) -> None:
        """Give every slot back (``FreeSlot`` to its TaskExecutor) and withdraw the requirement."""
        for alloc, (te, _inc, _slot) in sorted(self.pool.items()):
            cp.net.send(rpc.FreeSlot(te, self.token, alloc))
        cp.net.send(rpc.DeclareResourceRequirements(self.token, self.token, 0, cp.new_sequence_number()))
        self.pool.clear()
        self.group_slot.clear()
        self.deployed.clear()
        self.idle.clear()


@seams.override("idle-time-restarted-by-heartbeat", JobMaster, "release_idle_slots",
                "a free slot's idle time restarts whenever its TaskExecutor's heartbeat answer reached the "
                "JobMaster in the interval just ended (the answer's slot report is taken for use of the slot): "
                "while heartbeats flow, a slot the job no longer needs is never released, only once its "
                "TaskExecutor falls silent")
def _release_idle_slots_restarted_by_heartbeat(self, cp, timeout: int) -> list:
    for alloc in self.idle:
        # JobMaster.tick counted this interval: 1 means an answer reset the count in it
        if alloc in self.pool and self.missed.get(self.pool[alloc][0]) == 1:
            self.idle[alloc] = -1
    return seams.original("idle-time-restarted-by-heartbeat")(self, cp, timeout)


@seams.override("heartbeat-timeout-one-interval-late", JobMaster, "tick",
                "the JobMaster declares a silent TaskExecutor lost one heartbeat interval late: only after "
                "heartbeat_timeout + 1 intervals without an answer (a timeout compared with >= instead of >, or "
                "scheduled one interval after the last answer instead of at it)")
def _tick_one_interval_late(self, cp, timeout: int) -> list:
    return seams.original("heartbeat-timeout-one-interval-late")(self, cp, timeout + 1)
