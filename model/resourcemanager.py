"""The ResourceManager and its SlotManager: registered TaskExecutors, the slot table, the
resource requirements, and the rule that matches them.

Invariant upheld: the SlotManager never hands one slot to two allocations (a slot is FREE,
PENDING for one allocation, or ALLOCATED to one allocation), and once heartbeats have
settled its slot table agrees with every registered TaskExecutor's ``SlotReport``
(slot-report reconciliation).

Follows ``ResourceManager`` (a ``FencedRpcEndpoint<ResourceManagerId>``: an RPC carrying
another leader session's id is dropped) with a ``DeclarativeSlotManager``-style
``SlotManager``:

* ``registerTaskExecutor`` registers a TaskExecutor (a second registration of the same
  process replaces the first) and takes its slots from the registration's ``SlotReport``;
* ``declareRequiredResources`` sets the job's requirement (a number of slots);
* the allocation rule (``checkResourceRequirements``): while a requirement is not met by
  PENDING and ALLOCATED slots of that JobMaster, the first FREE slot (TaskExecutors by
  index, slots by index) becomes PENDING and ``requestSlot`` goes to its TaskExecutor; the
  answer makes it ALLOCATED -- to the holder the answer names if the slot was not free;
* heartbeats: each tick a request to every registered TaskExecutor; the answer's
  ``SlotReport`` is reconciled into the table (``reportSlotStatus``); a TaskExecutor that
  does not answer within ``heartbeat_timeout`` ticks is unregistered with its slots.

Leaves out: resource profiles and fine-grained resources (a requirement is a number of
equal slots), requesting new workers from a resource provider (TaskExecutors are restarted
by the environment, ``StartTaskExecutor``), slot request timeouts (a lost answer is repaired
by reconciliation), redundant TaskManagers, and blocklists.

Where the model deliberately differs: a PENDING slot that a heartbeat's ``SlotReport`` shows
free becomes FREE at once (and the rule may request it again). Flink's
``DefaultSlotStatusSyncer.reportSlotStatus`` keeps a PENDING slot as it is ("we might wait for
the next slot report or the acknowledgement of the allocation request") and frees it when the
``requestSlot`` RPC fails or times out (``taskManagerRequestTimeout``). The model has no RPC
timeout, so the report stands in for it: without it a lost ``RequestSlot`` would leave the slot
PENDING for ever. A second request for a slot whose first is still in flight ends as Flink's
race does: the TaskExecutor answers the later one with ``SlotOccupiedException`` and the slot
becomes its holder's.
"""

from __future__ import annotations

from model import rpc, seams

FREE = "FREE"
PENDING = "PENDING"
ALLOCATED = "ALLOCATED"


class ResourceManager:
    """The ResourceManager of leader session ``token`` (see the module docstring)."""

    __slots__ = ("token", "registered", "missed", "slots", "requirements", "declaration_seq")

    def __init__(self, token: int):
        self.token = token
        #: te -> incarnation registered
        self.registered: dict = {}
        #: te -> heartbeat ticks without an answer
        self.missed: dict = {}
        #: (te, slot) -> (state, allocation or None, JobMasterId or None)
        self.slots: dict = {}
        #: JobMasterId -> number of slots required
        self.requirements: dict = {}
        #: JobMasterId -> the number of the declaration taken
        self.declaration_seq: dict = {}

    def _take_report(self, te: int, report: tuple) -> None:
        for slot, alloc, owner in report:
            self.slots[(te, slot)] = (FREE, None, None) if alloc is None else (ALLOCATED, alloc, owner)

    def on_register(self, cp, m: rpc.RegisterTaskExecutor) -> bool:
        """Register (returns whether the same incarnation was registered already)."""
        duplicate = self.registered.get(m.te) == m.inc
        for key in [k for k in self.slots if k[0] == m.te]:
            del self.slots[key]
        self.registered[m.te] = m.inc
        self.missed[m.te] = 0
        self._take_report(m.te, m.slot_report)
        cp.net.send(rpc.RegistrationResponse(m.te, self.token))
        self.check_requirements(cp)
        return duplicate

    def on_declare(self, cp, m: rpc.DeclareResourceRequirements) -> None:
        """Take the declaration unless a newer one of the job was taken (``seq``); acknowledge."""
        if m.seq >= self.declaration_seq.get(m.job_token, m.seq):
            self.declaration_seq = {m.job_token: m.seq}
            self.requirements = {m.job_token: m.slots} if m.slots else {}
        cp.net.send(rpc.RequirementsAcknowledged(self.token, m.job_token, m.seq))
        self.check_requirements(cp)

    def on_answer(self, cp, m: rpc.SlotRequestAnswer) -> None:
        cur = self.slots.get((m.te, m.slot))
        if cur is None or cur[0] != PENDING or cur[1] != m.allocation:
            return
        # a slot that was not free is taken as its holder's (SlotOccupiedException)
        self.slots[(m.te, m.slot)] = (ALLOCATED, cur[1], cur[2]) if m.ok else (ALLOCATED,) + tuple(m.holder)
        if not m.ok:
            self.check_requirements(cp)

    def takes_slot_reports(self) -> bool:
        """Whether the SlotManager reconciles its slot table with a heartbeat's ``SlotReport``
        (``reportSlotStatus``): yes."""
        return True

    def on_heartbeat(self, cp, m: rpc.HeartbeatResponse) -> list:
        """A TaskExecutor's answer: reset its timeout and take its ``SlotReport``. Returns the
        slots whose PENDING state the report resolved."""
        if self.registered.get(m.te) != m.inc:
            return []
        self.missed[m.te] = 0
        resolved = []
        if self.takes_slot_reports():
            for slot, alloc, owner in m.payload:
                cur = self.slots.get((m.te, slot))
                new = (FREE, None, None) if alloc is None else (ALLOCATED, alloc, owner)
                if cur != new:
                    if cur is not None and cur[0] == PENDING:
                        resolved.append((m.te, slot))
                    self.slots[(m.te, slot)] = new
            self.check_requirements(cp)
        return resolved

    def tick(self, cp, timeout: int) -> list:
        """One heartbeat interval: time out silent TaskExecutors, then send requests.
        Returns the TaskExecutors unregistered."""
        lost = []
        for te in sorted(self.registered):
            self.missed[te] = self.missed.get(te, 0) + 1
            if self.missed[te] > timeout:
                lost.append(te)
                del self.registered[te]
                del self.missed[te]
                for key in [k for k in self.slots if k[0] == te]:
                    del self.slots[key]
        for te, inc in sorted(self.registered.items()):
            cp.net.send(rpc.HeartbeatRequest("rm", self.token, te, inc))
        if lost:
            self.check_requirements(cp)
        return lost

    def check_requirements(self, cp) -> None:
        """The allocation rule (see the module docstring)."""
        for job, need in sorted(self.requirements.items()):
            have = sum(1 for st, _, owner in self.slots.values() if st != FREE and owner == job)
            for key in sorted(self.slots):
                if have >= need:
                    break
                if self.slots[key][0] != FREE:
                    continue
                alloc = cp.new_allocation()
                self.slots[key] = (PENDING, alloc, job)
                te, slot = key
                cp.net.send(rpc.RequestSlot(te, self.token, slot, alloc, job))
                have += 1


@seams.override("no-slot-report-reconciliation", ResourceManager, "takes_slot_reports",
                "the SlotManager ignores the slot reports of heartbeats: a lost slot-request answer leaves the slot "
                "tables disagreeing for ever")
def _slot_reports_ignored(self) -> bool:
    return False
