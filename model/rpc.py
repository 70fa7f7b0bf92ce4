"""The control plane's RPC messages and the unreliable network that carries them.

Invariant upheld: a message is delivered only while it is in flight, and at most as many
times as it was sent (a duplicate is a second copy in flight).

Every RPC between the ResourceManager, the JobMaster and the TaskExecutors (and their
answers) is a frozen value in :class:`RpcNetwork`'s ``in_flight`` list until an action
delivers it (``RpcDeliver``: any message, so messages are reordered), loses it (``RpcLose``)
or duplicates it (``RpcDuplicate``). Fenced messages carry the sender's fencing token
(``token``: Flink's ``ResourceManagerId`` or ``JobMasterId``, the leader session id); the
receiver of a fenced RPC compares it with the token it expects (``FencedRpcEndpoint``) and
drops the message when they differ.

Follows Flink's gateways: ``ResourceManagerGateway`` (registerTaskExecutor,
declareRequiredResources, heartbeatFromTaskManager), ``TaskExecutorGateway`` (requestSlot,
submitTask, freeSlot, heartbeatFromJobManager / heartbeatFromResourceManager) and
``JobMasterGateway`` (offerSlots, heartbeatFromTaskManager), with their payloads:
``SlotReport`` (TaskExecutor -> ResourceManager), ``AllocatedSlotReport`` (JobMaster ->
TaskExecutor) and ``ExecutionDeploymentReport`` (TaskExecutor -> JobMaster). An RPC's
return value is a message of its own (``RegistrationResponse``, ``RequirementsAcknowledged``,
``SlotRequestAnswer``, ``OfferSlotsAnswer``), so answers can be lost and reordered too.

Leaves out: timeouts of individual RPCs (a lost answer is repaired by heartbeats and
reconciliation, or by a heartbeat timeout), ``updateTaskExecutionState`` (task failures
and finishes reach the JobMaster through the data plane's own messages), partitions.
"""

from __future__ import annotations

import sys

import attrs

from model import seams
from model.events import value
from model.fingerprint import fresh_id


@fresh_id("A")
@value
class AllocationID(int):
    """Flink's ``AllocationID``: names one allocation of one slot; unique in the run (each is
    drawn above every one drawn before). Compared only for equality and order, so a
    fingerprint counts it by its rank among the live ones (``model.fingerprint.fresh_id``)."""

    __slots__ = ()


@fresh_id("E")
@value
class ExecutionAttemptID(int):
    """Flink's ``ExecutionAttemptID``: names one execution attempt of one subtask; unique in
    the run, compared only for equality and order (like :class:`AllocationID`)."""

    __slots__ = ()


@fresh_id("S")
@value
class SequenceNumber(int):
    """The order of a JobMaster's resource declarations: the ResourceManager takes a declaration
    only if it is newer than the last it took (Flink needs none: Pekko delivers one sender's
    messages to one receiver in order; the model's network may reorder them)."""

    __slots__ = ()


@attrs.frozen(slots=True)
class RegisterTaskExecutor:
    """TaskExecutor ``te`` (incarnation ``inc``) registers at the ResourceManager of leader
    session ``token`` with its slot report (``((slot, allocation or None, job token or None), ...)``)."""

    te: int
    inc: int
    token: int
    slot_report: tuple


@attrs.frozen(slots=True)
class RegistrationResponse:
    """The ResourceManager ``token`` accepted TaskExecutor ``te``'s registration."""

    te: int
    token: int


@attrs.frozen(slots=True)
class DeclareResourceRequirements:
    """The JobMaster ``job_token`` declares to the ResourceManager ``token`` that it needs
    ``slots`` slots (its declaration number ``seq``)."""

    token: int
    job_token: int
    slots: int
    seq: int = 0


@attrs.frozen(slots=True)
class RequirementsAcknowledged:
    """The ResourceManager ``token`` holds the JobMaster ``job_token``'s declaration ``seq``
    or a newer one (the Acknowledge ``declareRequiredResources`` returns; without it the
    JobMaster retries)."""

    token: int
    job_token: int
    seq: int


@attrs.frozen(slots=True)
class RequestSlot:
    """The ResourceManager ``token`` asks TaskExecutor ``te`` to allocate ``slot`` as
    ``allocation`` for the JobMaster ``job_token`` (``TaskExecutorGateway.requestSlot``)."""

    te: int
    token: int
    slot: int
    allocation: int
    job_token: int


@attrs.frozen(slots=True)
class SlotRequestAnswer:
    """TaskExecutor ``te``'s answer to a RequestSlot: ``ok``, or the slot was not free --
    then ``holder`` is its ``(allocation, JobMasterId)`` (Flink's ``SlotOccupiedException``)."""

    te: int
    token: int
    slot: int
    allocation: int
    ok: bool
    holder: tuple | None = None


@attrs.frozen(slots=True)
class OfferSlots:
    """TaskExecutor ``te`` offers its slots ``((slot, allocation), ...)`` to the JobMaster
    ``job_token``."""

    te: int
    inc: int
    job_token: int
    slots: tuple


@attrs.frozen(slots=True)
class OfferSlotsAnswer:
    """The JobMaster ``job_token`` accepted ``accepted`` (allocations) of TaskExecutor ``te``'s
    offer; the others are to be freed."""

    te: int
    job_token: int
    accepted: tuple
    rejected: tuple


@attrs.frozen(slots=True)
class SubmitTask:
    """The JobMaster ``job_token`` deploys ``subtasks`` into ``allocation`` on TaskExecutor ``te``."""

    te: int
    job_token: int
    allocation: int
    subtasks: tuple


@attrs.frozen(slots=True)
class FreeSlot:
    """The JobMaster ``job_token`` releases ``allocation`` on TaskExecutor ``te``."""

    te: int
    job_token: int
    allocation: int


@attrs.frozen(slots=True)
class CancelTask:
    """The JobMaster ``job_token`` cancels subtasks ``subtasks`` on TaskExecutor ``te``
    (deployment reconciliation: executions it does not know)."""

    te: int
    job_token: int
    subtasks: tuple


@attrs.frozen(slots=True)
class HeartbeatRequest:
    """A heartbeat request of ``sender`` ("rm" or "jm" of leader session ``token``) to
    TaskExecutor ``te``; a JobMaster's carries its ``AllocatedSlotReport`` (``payload``:
    the allocations it holds on ``te``)."""

    sender: str
    token: int
    te: int
    inc: int
    payload: tuple = ()


@attrs.frozen(slots=True)
class HeartbeatResponse:
    """TaskExecutor ``te``'s answer to ``receiver`` ("rm" or "jm", leader session ``token``):
    its ``SlotReport`` for the ResourceManager; for the JobMaster the pair
    (``ExecutionDeploymentReport``: the executions it runs for that JobMaster, the allocations
    of the request's AllocatedSlotReport it does not hold)."""

    receiver: str
    token: int
    te: int
    inc: int
    payload: tuple = ()


MESSAGE_TYPES = (RegisterTaskExecutor, RegistrationResponse, DeclareResourceRequirements, RequirementsAcknowledged,
                 RequestSlot, SlotRequestAnswer, OfferSlots, OfferSlotsAnswer, SubmitTask, FreeSlot, CancelTask,
                 HeartbeatRequest, HeartbeatResponse)


def connection(m) -> tuple:
    """The (sender, receiver) endpoints of message ``m``: ``("te", index)`` for a TaskExecutor,
    ``("rm", token)`` / ``("jm", token)`` for the ResourceManager / JobMaster of a leader
    session (Flink creates both anew for each leadership)."""
    t = type(m)
    if t is RegisterTaskExecutor or t is SlotRequestAnswer:
        return ("te", m.te), ("rm", m.token)
    if t is RegistrationResponse or t is RequestSlot:
        return ("rm", m.token), ("te", m.te)
    if t is DeclareResourceRequirements:
        return ("jm", m.job_token), ("rm", m.token)
    if t is RequirementsAcknowledged:
        return ("rm", m.token), ("jm", m.job_token)
    if t is OfferSlots:
        return ("te", m.te), ("jm", m.job_token)
    if t is HeartbeatRequest:
        return (m.sender, m.token), ("te", m.te)
    if t is HeartbeatResponse:
        return ("te", m.te), (m.receiver, m.token)
    return ("jm", m.job_token), ("te", m.te)  # OfferSlotsAnswer, SubmitTask, FreeSlot, CancelTask


def receiver_session(m) -> tuple[str, int] | None:
    """For an RPC to a ResourceManager ("rm") or a JobMaster ("jm"): the receiver's kind and
    the leader session (fencing token) it is found by -- the ResourceManager or JobMaster of
    that session, if one lives, takes it; else nobody does. None for an RPC to a
    TaskExecutor (found by its index, whatever the session)."""
    t = type(m)
    if t is RegisterTaskExecutor or t is DeclareResourceRequirements or t is SlotRequestAnswer:
        return ("rm", m.token)
    if t is OfferSlots or t is RequirementsAcknowledged:
        return ("jm", m.job_token)
    if t is HeartbeatResponse:
        return (m.receiver, m.token)
    return None


class RpcNetwork:
    """The messages in flight, in the order they were sent. Any of them may be delivered next
    (messages overtake each other), so a fingerprint counts them as a multiset."""

    __slots__ = ("in_flight",)
    FINGERPRINT_MULTISET = ("in_flight",)

    def __init__(self):
        self.in_flight: list = []

    def send(self, m) -> None:
        self.in_flight.append(m)

    def take(self, i: int):
        return self.in_flight.pop(i)

    def deliverable(self, i: int) -> bool:
        """Whether the message at ``i`` may be delivered next."""
        return True

    def drop_for_te(self, te: int) -> None:
        """A TaskExecutor process died: what was addressed to it or sent by it and not yet
        delivered is lost with its connections."""
        self.in_flight = [m for m in self.in_flight if getattr(m, "te", None) != te]


class ConnectionOrderedNetwork(RpcNetwork):
    """Pekko's guarantee: the messages of one sender to one receiver arrive in the order they
    were sent (a lost message does not hold the next one back); messages of different
    connections overtake each other. The list is kept grouped by :func:`connection` (groups
    in the connections' order, each group in sending order), so equal states have equal
    lists: a fingerprint counts the list as it is."""

    __slots__ = ()
    FINGERPRINT_MULTISET = ()

    def send(self, m) -> None:
        k = connection(m)
        fl = self.in_flight
        i = len(fl)
        while i > 0 and connection(fl[i - 1]) > k:
            i -= 1
        fl.insert(i, m)

    def deliverable(self, i: int) -> bool:
        return i == 0 or connection(self.in_flight[i - 1]) != connection(self.in_flight[i])


def checks_fencing_tokens() -> bool:
    """Whether a fenced RPC is accepted only with its receiver's expected fencing token, and an
    HA write only from the leader whose latch node leads (``FencedRpcEndpoint``; the leader
    election's session check): yes."""
    return True


@seams.override("no-fencing", sys.modules[__name__], "checks_fencing_tokens",
                "no fencing tokens: a deposed leader's slot answers, deployments, slot releases and HA writes are "
                "accepted")
def _fencing_tokens_unchecked() -> bool:
    return False
