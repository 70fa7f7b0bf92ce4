"""The TaskExecutor: its slot table, its leaders, and what it accepts from them.

Invariant upheld: a task is deployed only into a slot allocated for the job, and (with
fencing) only by the JobMaster the TaskExecutor knows as the job's leader; a slot holds at
most one allocation.

Follows ``TaskExecutor`` with its ``TaskSlotTable`` and ``JobLeaderService``:

* it finds the leading ResourceManager and the job's leading JobMaster by leader retrieval
  (``LeaderRetrieval`` reads the leader information node), registers at the
  ResourceManager with a ``SlotReport`` (``RegisterTaskExecutor``) and re-registers when
  the leader changes;
* ``requestSlot`` allocates a free slot for an allocation (else answers "not free"), and the
  TaskExecutor offers its allocated, not yet active slots to the job leader
  (``offerSlots``); accepted slots become active, rejected ones are freed;
* ``submitTask`` runs subtasks in a slot allocated for the job (the ``jobMasterId`` must be
  the connected job leader's: fencing); a slot still waiting for its ``offerSlots`` answer
  is marked active by the submission (``TaskSlotTable.tryMarkSlotActive``); ``freeSlot`` and
  ``cancelTask`` are accepted from the slot's owner only;
* heartbeats: it answers the ResourceManager with its ``SlotReport`` and the JobMaster with
  its ``ExecutionDeploymentReport`` and the allocations of its ``AllocatedSlotReport`` it
  does not hold (``failSlot``); an active slot missing from two reports in a row is freed
  (``syncSlotsWithSnapshotFromJobMaster``);
* an allocated slot that no JobMaster accepted within ``heartbeat_timeout`` intervals is
  freed (``taskmanager.slot.timeout``);
* a TaskExecutor that hears no heartbeat request of its ResourceManager for
  ``heartbeat_timeout`` ticks registers again; while unregistered it retries each tick, and
  it offers inactive slots again each tick;
* a TaskExecutor that holds active slots of its job leader and hears no heartbeat request of
  that JobMaster for ``heartbeat_timeout`` ticks disconnects it
  (``disconnectJobManagerConnection``): the job's tasks fail, its active slots become
  inactive and are offered again (the JobMaster takes or rejects them; the slot timeout
  frees one nobody takes);
* when the job leader changes it fails the job's tasks, marks the job's slots inactive and
  offers them to the new leader (``disconnectJobManagerConnection`` + re-offer).

Leaves out: resource profiles (every slot fits every request), local state, partitions.
"""

from __future__ import annotations

from model import rpc, seams
from model.rpc import checks_fencing_tokens

FREE = None


class TaskExecutor:
    """One TaskExecutor process (``index``; ``inc`` counts its restarts: a restarted process
    is a new incarnation with an empty slot table)."""

    __slots__ = ("index", "alive", "inc", "rm_token", "registered", "missed_rm", "job_token", "slots", "deployed",
                 "unreported", "inactive", "missed_jm")

    def __init__(self, index: int, number_of_slots: int):
        self.index = index
        self.alive = True
        self.inc = 0
        #: the ResourceManager leader it retrieved (its fencing token), registered there or not
        self.rm_token: int | None = None
        self.registered = False
        #: heartbeat ticks without a request of its ResourceManager (it reconnects after
        #: ``heartbeat_timeout``)
        self.missed_rm = 0
        #: the job leader it retrieved (JobMasterId)
        self.job_token: int | None = None
        #: per slot: FREE (None) or ``(allocation, owner JobMasterId, active)``
        self.slots: list = [FREE] * number_of_slots
        #: slot -> ``((subtask, attempt), ...)`` running in it
        self.deployed: dict = {}
        #: active allocations the last AllocatedSlotReport did not name
        self.unreported: set = set()
        #: allocated, inactive slots -> heartbeat intervals they have been waiting for acceptance
        self.inactive: dict = {}
        #: heartbeat ticks without a request of its job leader while it holds active slots of it
        self.missed_jm = 0

    # -- reports ---------------------------------------------------------------------------
    def slot_report(self) -> tuple:
        """``SlotReport``: ``((slot, allocation or None, owner or None), ...)``."""
        return tuple((i, s[0], s[1]) if s is not None else (i, None, None) for i, s in enumerate(self.slots))

    def deployment_report(self, job_token: int) -> tuple:
        """``ExecutionDeploymentReport`` for the JobMaster ``job_token``: the executions it runs."""
        out = []
        for i, ex in sorted(self.deployed.items()):
            s = self.slots[i]
            if s is not None and s[1] == job_token:
                out.extend(ex)
        return tuple(sorted(out))

    def slot_of(self, allocation: int) -> int | None:
        for i, s in enumerate(self.slots):
            if s is not None and s[0] == allocation:
                return i
        return None

    def running(self) -> set:
        return {e for ex in self.deployed.values() for e in ex}

    # -- process lifecycle -----------------------------------------------------------------
    def crash(self) -> set:
        """The process dies: its slot table and tasks are gone. Returns the executions lost."""
        lost = self.running()
        self.alive = False
        self.slots = [FREE] * len(self.slots)
        self.deployed = {}
        self.unreported = set()
        self.inactive = {}
        self.rm_token = self.job_token = None
        self.registered = False
        self.missed_rm = 0
        self.missed_jm = 0
        return lost

    def restart(self) -> None:
        self.alive = True
        self.inc += 1

    # -- leader retrieval ------------------------------------------------------------------
    def new_leader(self, cp, token: int) -> set:
        """The leader information names leader session ``token`` (ResourceManager and job
        leader alike): register at the new ResourceManager, and move the job to the new
        JobMaster (its tasks fail, its slots are offered anew). Returns the executions failed."""
        failed: set = set()
        if self.rm_token != token:
            self.rm_token = token
            self.registered = False
            cp.net.send(rpc.RegisterTaskExecutor(self.index, self.inc, token, self.slot_report()))
        if self.job_token != token:
            old = self.job_token
            self.job_token = token
            if old is not None:
                for i, s in enumerate(self.slots):
                    if s is not None and s[1] == old:
                        failed.update(self.deployed.pop(i, ()))
                        self.slots[i] = (s[0], s[1], False)
            self.offer(cp)
        return failed

    def job_leader_tick(self, timeout: int) -> set | None:
        """One heartbeat interval of the job leader's heartbeat monitoring: None while the
        job leader's requests arrive (or no active slot of it is held); else, once it was
        silent for more than ``timeout`` intervals, disconnect it: its active slots become
        inactive (offered again) and the executions in them die, which are returned."""
        if self.job_token is None or not any(s is not None and s[1] == self.job_token and s[2] for s in self.slots):
            self.missed_jm = 0
            return None
        self.missed_jm += 1
        if self.missed_jm <= timeout:
            return None
        self.missed_jm = 0
        died: set = set()
        for i, s in enumerate(self.slots):
            if s is not None and s[1] == self.job_token and s[2]:
                self.slots[i] = (s[0], s[1], False)
                self.unreported.discard(s[0])
                died.update(self.deployed.pop(i, ()))
        return died

    def timeout_inactive(self, timeout: int) -> None:
        """``TaskSlotTable``'s slot timeout: a slot allocated but not accepted by any JobMaster
        within ``timeout`` heartbeat intervals is freed (the SlotManager learns it from the
        next slot report)."""
        waiting = {s[0] for s in self.slots if s is not None and not s[2]}
        self.inactive = {a: n + 1 for a, n in self.inactive.items() if a in waiting}
        for a in waiting - set(self.inactive):
            self.inactive[a] = 0
        for i, s in enumerate(self.slots):
            if s is not None and not s[2] and self.inactive[s[0]] > timeout:
                del self.inactive[s[0]]
                self.slots[i] = FREE

    def offer(self, cp) -> None:
        """Offer every allocated, inactive slot to the known job leader."""
        if self.job_token is None:
            return
        offers = tuple((i, s[0]) for i, s in enumerate(self.slots) if s is not None and not s[2])
        if offers:
            cp.net.send(rpc.OfferSlots(self.index, self.inc, self.job_token, offers))

    # -- RPCs --------------------------------------------------------------------------------
    def on_request_slot(self, cp, m: rpc.RequestSlot) -> str:
        if checks_fencing_tokens() and m.token != self.rm_token:
            return "rejected: ResourceManagerId does not match"
        cur = self.slots[m.slot] if 0 <= m.slot < len(self.slots) else "missing"
        if cur == "missing":
            return "rejected: no such slot"
        held = self.slot_of(m.allocation)
        if held is not None and held != m.slot:
            # TaskSlotTableImpl.allocateSlot refuses an allocation another slot holds (the
            # ResourceManager draws a fresh AllocationID per request, so runs never send one)
            return "rejected: the allocation holds another slot"
        if cur is not None and cur[0] != m.allocation:
            cp.net.send(rpc.SlotRequestAnswer(self.index, m.token, m.slot, m.allocation, False, (cur[0], cur[1])))
            return "answered: the slot is not free"
        cp.net.send(rpc.SlotRequestAnswer(self.index, m.token, m.slot, m.allocation, True))
        if cur is None:
            self.slots[m.slot] = (m.allocation, m.job_token, False)
            self.offer(cp)
        return "allocated"

    def on_offer_answer(self, cp, m: rpc.OfferSlotsAnswer) -> str:
        if checks_fencing_tokens() and m.job_token != self.job_token:
            return "rejected: not the job leader's answer"
        for alloc in m.accepted:
            i = self.slot_of(alloc)
            if i is not None:
                self.slots[i] = (alloc, m.job_token, True)
        for alloc in m.rejected:
            i = self.slot_of(alloc)
            if i is not None and not self.slots[i][2]:
                self.slots[i] = FREE
                self.deployed.pop(i, None)
        return "applied"

    def submit_allowed(self, cp, m: rpc.SubmitTask) -> str | None:
        """Why ``submitTask`` is refused (None: it is accepted), as ``TaskExecutor.submitTask``
        checks: the JobMasterId is the job leader's (the fencing check), and a slot is allocated
        for the job under the allocation (``TaskSlotTable.tryMarkSlotActive``: an allocated slot
        that is not active yet -- its ``offerSlots`` answer was lost or has not arrived -- is
        accepted too, and :meth:`on_submit` marks it active)."""
        if checks_fencing_tokens() and m.job_token != self.job_token:
            return "the JobMasterId is not the job leader's"
        if self.slot_of(m.allocation) is None:
            return "no task slot is allocated for the job and allocation"
        return None

    def on_submit(self, m: rpc.SubmitTask) -> set:
        """Run the subtasks (the guard held) in the slot, which ``tryMarkSlotActive`` made
        active (the slot timeout no longer runs for it) for the submitting JobMaster, as an
        accepted offer would have. Returns the executions replaced in the slot."""
        i = self.slot_of(m.allocation)
        self.slots[i] = (m.allocation, m.job_token, True)
        old = set(self.deployed.get(i, ()))
        keep = {e for e in old if e[0] not in {s for s, _ in m.subtasks}}
        self.deployed[i] = tuple(sorted(keep | set(m.subtasks)))
        return old - keep - set(m.subtasks)

    def on_free_slot(self, cp, m: rpc.FreeSlot) -> set | None:
        """Free the slot; None if refused, else the executions that die with it."""
        i = self.slot_of(m.allocation)
        if i is None:
            return None
        if checks_fencing_tokens() and self.slots[i][1] != m.job_token:
            return None
        self.slots[i] = FREE
        return set(self.deployed.pop(i, ()))

    def on_cancel(self, cp, m: rpc.CancelTask) -> set | None:
        if checks_fencing_tokens() and m.job_token != self.job_token:
            return None
        gone = set()
        for i in list(self.deployed):
            s = self.slots[i]
            if s is None or s[1] != m.job_token:
                continue
            ex = self.deployed[i]
            keep = tuple(e for e in ex if e not in m.subtasks)
            gone.update(e for e in ex if e in m.subtasks)
            if keep:
                self.deployed[i] = keep
            else:
                del self.deployed[i]
        return gone

    def syncs_with_allocated_slot_report(self) -> bool:
        """Whether an ``AllocatedSlotReport`` frees the active slots it does not name
        (``syncSlotsWithSnapshotFromJobMaster``): yes."""
        return True

    def on_allocated_slot_report(self, job_token: int, allocations: tuple) -> tuple:
        """The JobMaster's ``AllocatedSlotReport`` (``syncSlotsWithSnapshotFromJobMaster``):
        an active slot of that JobMaster missing from two reports in a row is freed (one
        report may have been sent before the JobMaster accepted the slot); an allocation the report names that this
        TaskExecutor does not hold for the JobMaster is answered as failed (``failSlot``).
        Returns (executions that died, failed allocations, allocations freed)."""
        gone: set = set()
        freed = []
        sync = self.syncs_with_allocated_slot_report()
        for i, s in enumerate(self.slots):
            if sync and s is not None and s[1] == job_token and s[2] and s[0] not in allocations:
                if s[0] in self.unreported:
                    self.unreported.discard(s[0])
                    self.slots[i] = FREE
                    gone.update(self.deployed.pop(i, ()))
                    freed.append(s[0])
                else:
                    self.unreported.add(s[0])
            elif s is not None:
                self.unreported.discard(s[0])
        held = {s[0] for s in self.slots if s is not None and s[1] == job_token}
        return gone, tuple(a for a in allocations if a not in held), freed


@seams.override("no-allocated-slot-report-sync", TaskExecutor, "syncs_with_allocated_slot_report",
                "the TaskExecutor ignores the JobMaster's AllocatedSlotReport: a lost freeSlot of an idle slot leaves "
                "the slot allocated for the job for ever")
def _allocated_slot_report_ignored(self) -> bool:
    return False
