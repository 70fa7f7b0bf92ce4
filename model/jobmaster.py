"""The JobMaster with its SlotPool: requirements, offered and accepted slots, deployment,
heartbeats with the TaskExecutors and deployment reconciliation.

Invariant upheld: the SlotPool holds each allocation once and never more slots than the job
needs; every subtask the JobMaster believes deployed runs (once heartbeats have settled)
in an allocation of its pool, on the TaskExecutor it was submitted to.

Follows ``JobMaster`` (a ``FencedRpcEndpoint<JobMasterId>``) with a ``DeclarativeSlotPool``:

* on start it declares its requirement -- the number of execution slot sharing groups of
  the job (``SlotSharingSlotAllocator.calculateRequiredSlots``) -- to the ResourceManager,
  and again each heartbeat interval while the pool holds fewer slots;
* ``offerSlots`` (a TaskExecutor that offers is connected: a heartbeat target): an offered
  slot is accepted while the pool needs slots (a declarative
  pool accepts any matching slot, whichever allocation it came from), else rejected;
* scheduling is eager (a streaming job): once the pool holds a slot for every execution slot
  sharing group, every subtask waiting for deployment is submitted (``submitTask``) to the
  slot of its group; an execution slot sharing group keeps its slot while the slot lives;
* heartbeats: each tick a request with the ``AllocatedSlotReport`` to every connected
  TaskExecutor; a TaskExecutor silent for ``heartbeat_timeout`` ticks is lost: its
  slots leave the pool and the subtasks in them fail (the data plane's failover runs);
* deployment reconciliation (``DefaultExecutionDeploymentReconciler``): the answer's
  ``ExecutionDeploymentReport`` is compared with what the JobMaster deployed there; an
  execution it does not know is cancelled, one that is missing fails.

Leaves out: idle slots and ``slot.idle.timeout`` (a finished job releases its slots at
cleanup; a failover keeps them), lazy scheduling of blocking regions (every subtask is
deployed eagerly), the acknowledgement of ``submitTask`` (a deployment no report has shown yet
counts as missing after ``heartbeat_timeout`` reports without it), the AdaptiveScheduler, and partition tracking.
"""

from __future__ import annotations

from model import rpc


class JobMaster:
    """The JobMaster of leader session ``token`` (see the module docstring)."""

    __slots__ = ("token", "groups", "pool", "group_slot", "deployed", "attempts", "pending", "connected", "missed",
                 "unconfirmed", "status")

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

    @property
    def required(self) -> int:
        return len(self.groups)

    def targets(self) -> dict:
        """te -> incarnation of every TaskExecutor connected to this JobMaster (its heartbeat
        targets)."""
        return dict(self.connected)

    def declare(self, cp) -> None:
        if self.status == "RUNNING" and len(self.pool) < self.required:
            cp.net.send(rpc.DeclareResourceRequirements(self.token, self.token, self.required))

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

    def try_deploy(self, cp) -> list:
        """Eager scheduling: once every group has a slot, submit the waiting subtasks.
        Returns the SubmitTask messages sent."""
        if not self.pending or self.status != "RUNNING":
            return []
        free = sorted(a for a in self.pool if a not in self.group_slot.values())
        unplaced = [g for g in range(len(self.groups)) if g not in self.group_slot]
        if len(free) < len(unplaced):
            return []
        for g, alloc in zip(unplaced, free):
            self.group_slot[g] = alloc
        sent = []
        for g, subtasks in enumerate(self.groups):
            mine = tuple(sorted((s, self.attempts[s]) for s in subtasks if s in self.pending))
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
        self.pending.clear()
        return sent

    def lose_task_executor(self, te: int) -> set:
        """TaskExecutor ``te`` is lost: its slots leave the pool. Returns the subtasks that
        ran there."""
        failed = set()
        for alloc in [a for a, v in self.pool.items() if v[0] == te]:
            del self.pool[alloc]
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
        for g in [g for g, a in self.group_slot.items() if a == alloc]:
            del self.group_slot[g]
        return {s for s, _ in self.deployed.pop(alloc, ())}

    def release_all(self, cp) -> None:
        """Give every slot back (``FreeSlot`` to its TaskExecutor) and withdraw the requirement."""
        for alloc, (te, _inc, _slot) in sorted(self.pool.items()):
            cp.net.send(rpc.FreeSlot(te, self.token, alloc))
        cp.net.send(rpc.DeclareResourceRequirements(self.token, self.token, 0))
        self.pool.clear()
        self.group_slot.clear()
        self.deployed.clear()
