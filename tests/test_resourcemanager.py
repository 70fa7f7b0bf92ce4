"""Unit tests of model/resourcemanager.py: the ResourceManager and its SlotManager driven alone,
message by message, with the RPCs it sends collected (no cluster, no network).

Each test states a rule of Flink's ``ResourceManager`` (``registerTaskExecutorInternal``,
``declareRequiredResources``, the TaskManager heartbeat) and of its SlotManager
(``registerTaskManager``, ``processResourceRequirements`` and ``checkResourceRequirements``,
the slot request's answer, ``reportSlotStatus``, ``unregisterTaskManager``). The slot table
names a slot's state as Flink's ``SlotState`` does (``FREE``, ``PENDING``, ``ALLOCATED``);
``spec/controlplane.py`` and the peer suite read it by those names."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from model import rpc
from model.resourcemanager import ResourceManager

TOKEN = 7
JOB = 11
OTHER_JOB = 12


def control_plane():
    """What the ResourceManager uses of the control plane: ``net.send`` and fresh
    ``AllocationID``s (drawn 100, 101, ...)."""
    sent: list = []
    counter = iter(range(100, 10_000))
    return SimpleNamespace(net=SimpleNamespace(send=sent.append), sent=sent,
                           new_allocation=lambda: rpc.AllocationID(next(counter)))


def register(rm, cp, te, inc=0, report=((0, None, None),)):
    return rm.on_register(cp, rpc.RegisterTaskExecutor(te, inc, rm.token, report))


def declare(rm, cp, slots, seq=0, job=JOB):
    rm.on_declare(cp, rpc.DeclareResourceRequirements(rm.token, job, slots, seq))


def heartbeat(rm, cp, te, report, inc=0):
    return rm.on_heartbeat(cp, rpc.HeartbeatResponse("rm", rm.token, te, inc, report))


def of(cp, cls):
    return [m for m in cp.sent if type(m) is cls]


def requested(cp):
    return [(m.te, m.slot, m.allocation, m.job_token) for m in of(cp, rpc.RequestSlot)]


# -- a new leader's ResourceManager ----------------------------------------------------------------


def test_a_new_resource_manager_knows_no_task_executor_slot_or_requirement():
    """A ResourceManager that just gained leadership starts from nothing: TaskExecutors register
    with it again and JobMasters declare their requirements again
    (``ResourceManagerServiceImpl.startNewLeaderResourceManager`` creates a new
    ResourceManager, with a new, empty SlotManager, for each leader session)."""
    rm = ResourceManager(TOKEN)
    assert rm.token == TOKEN
    assert (rm.registered, rm.missed, rm.slots, rm.requirements, rm.declaration_seq) == ({}, {}, {}, {}, {})
    cp = control_plane()
    rm.check_requirements(cp)
    assert rm.tick(cp, timeout=3) == [] and cp.sent == []


# -- registerTaskExecutor: the registration's SlotReport --------------------------------------------


def test_registration_takes_the_slot_report_free_and_allocated_slots_by_their_state_names():
    rm, cp = ResourceManager(TOKEN), control_plane()
    a = rpc.AllocationID(5)
    assert register(rm, cp, 0, report=((0, None, None), (1, a, JOB))) is False
    assert rm.slots == {(0, 0): ("FREE", None, None), (0, 1): ("ALLOCATED", a, JOB)}
    assert rm.registered == {0: 0} and rm.missed == {0: 0}
    # the RegistrationResponse names the TaskExecutor and the ResourceManager's leader session
    assert of(cp, rpc.RegistrationResponse) == [rpc.RegistrationResponse(0, TOKEN)]


def test_a_second_registration_replaces_the_first_and_its_slots():
    """``registerTaskExecutorInternal``: an old registration of the same ResourceID is removed
    and ``unregisterTaskManager`` drops its slots; the new registration's SlotReport is the
    slot table of that TaskExecutor. Only the same incarnation registering again is a
    duplicate; other TaskExecutors' slots stay."""
    rm, cp = ResourceManager(TOKEN), control_plane()
    a, b = rpc.AllocationID(5), rpc.AllocationID(6)
    register(rm, cp, 0, inc=0, report=((0, a, JOB), (1, None, None), (2, None, None)))
    register(rm, cp, 1, inc=0, report=((0, b, JOB),))
    rm.missed[0] = 2
    # a restarted process (new incarnation) with a smaller report: slot 2 is gone, slot 0 free
    assert register(rm, cp, 0, inc=1, report=((0, None, None), (1, None, None))) is False
    assert rm.slots == {(0, 0): ("FREE", None, None), (0, 1): ("FREE", None, None),
                        (1, 0): ("ALLOCATED", b, JOB)}
    assert rm.registered == {0: 1, 1: 0}
    assert rm.missed[0] == 0
    # the same incarnation again: a duplicate, its report taken again
    assert register(rm, cp, 0, inc=1, report=((0, None, None),)) is True
    assert rm.slots == {(0, 0): ("FREE", None, None), (1, 0): ("ALLOCATED", b, JOB)}
    assert of(cp, rpc.RegistrationResponse) == [rpc.RegistrationResponse(t, TOKEN) for t in (0, 1, 0, 0)]


def test_a_registration_serves_a_waiting_requirement_at_once():
    """``registerTaskManager`` ends with ``checkResourceRequirements``: a requirement no slot
    could meet gets the new TaskExecutor's free slot."""
    rm, cp = ResourceManager(TOKEN), control_plane()
    declare(rm, cp, 1)
    assert requested(cp) == []
    register(rm, cp, 3, report=((0, None, None),))
    assert requested(cp) == [(3, 0, 100, JOB)]
    assert rm.slots[(3, 0)] == ("PENDING", 100, JOB)


# -- declareRequiredResources -------------------------------------------------------------------------


def test_a_declaration_is_acknowledged_and_allocates_free_slots_in_order():
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 1, report=((0, None, None), (1, None, None)))
    register(rm, cp, 0, report=((0, None, None), (1, None, None)))
    declare(rm, cp, 3, seq=4)
    assert of(cp, rpc.RequirementsAcknowledged) == [rpc.RequirementsAcknowledged(TOKEN, JOB, 4)]
    assert rm.requirements == {JOB: 3} and rm.declaration_seq == {JOB: 4}
    # TaskExecutors by index, slots by index; one fresh allocation per RequestSlot
    assert requested(cp) == [(0, 0, 100, JOB), (0, 1, 101, JOB), (1, 0, 102, JOB)]
    assert all(m.token == TOKEN for m in of(cp, rpc.RequestSlot))
    assert rm.slots[(1, 1)] == ("FREE", None, None)
    assert rm.slots[(0, 1)] == ("PENDING", 101, JOB)


def test_a_stale_declaration_is_acknowledged_but_not_taken():
    rm, cp = ResourceManager(TOKEN), control_plane()
    declare(rm, cp, 2, seq=3)
    declare(rm, cp, 5, seq=2)
    assert rm.requirements == {JOB: 2} and rm.declaration_seq == {JOB: 3}
    # the acknowledgement names the declaration it answers, also a stale one
    assert [m.seq for m in of(cp, rpc.RequirementsAcknowledged)] == [3, 2]
    declare(rm, cp, 0, seq=4)  # requirements withdrawn: nothing is required any more
    assert rm.requirements == {} and rm.declaration_seq == {JOB: 4}


def test_a_requirement_counts_pending_and_allocated_slots_of_its_job_only():
    rm, cp = ResourceManager(TOKEN), control_plane()
    a = rpc.AllocationID(5)
    register(rm, cp, 0, report=((0, a, OTHER_JOB), (1, None, None), (2, None, None), (3, None, None)))
    declare(rm, cp, 2)
    assert requested(cp) == [(0, 1, 100, JOB), (0, 2, 101, JOB)]
    declare(rm, cp, 2, seq=1)  # met by its two PENDING slots: nothing more requested
    assert len(requested(cp)) == 2
    rm.on_answer(cp, rpc.SlotRequestAnswer(0, TOKEN, 1, rpc.AllocationID(100), True))
    declare(rm, cp, 3, seq=2)  # one ALLOCATED, one PENDING: one more
    assert requested(cp)[2:] == [(0, 3, 102, JOB)]
    assert rm.slots[(0, 0)] == ("ALLOCATED", a, OTHER_JOB)


# -- the answer to requestSlot --------------------------------------------------------------------


def test_an_accepted_slot_request_makes_the_slot_allocated():
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, report=((0, None, None), (1, None, None)))
    declare(rm, cp, 1)
    rm.on_answer(cp, rpc.SlotRequestAnswer(0, TOKEN, 0, rpc.AllocationID(100), True))
    assert rm.slots[(0, 0)] == ("ALLOCATED", 100, JOB)
    assert len(requested(cp)) == 1


def test_an_occupied_slot_is_taken_as_its_holders_and_the_requirement_is_checked_again():
    """``SlotOccupiedException``: the slot is allocated to the allocation and job the
    TaskExecutor names, and the requirement, no longer met, gets the next free slot."""
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, report=((0, None, None), (1, None, None)))
    declare(rm, cp, 1)
    holder = (rpc.AllocationID(9), OTHER_JOB)
    rm.on_answer(cp, rpc.SlotRequestAnswer(0, TOKEN, 0, rpc.AllocationID(100), False, holder))
    assert rm.slots[(0, 0)] == ("ALLOCATED", 9, OTHER_JOB)
    assert requested(cp) == [(0, 0, 100, JOB), (0, 1, 101, JOB)]
    assert rm.slots[(0, 1)] == ("PENDING", 101, JOB)


@pytest.mark.parametrize("state", ["unknown slot", "other allocation", "allocated", "free"])
def test_an_answer_that_is_not_for_the_pending_allocation_is_ignored(state):
    """``DefaultSlotStatusSyncer.allocateSlot``'s answer is ignored when the allocation is no
    longer pending (completed by a slot report, freed, or another allocation's)."""
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, report=((0, None, None), (1, None, None)))
    declare(rm, cp, 1)  # slot 0 PENDING as allocation 100
    before_sent = list(cp.sent)
    if state == "allocated":
        heartbeat(rm, cp, 0, ((0, rpc.AllocationID(100), JOB), (1, None, None)))
        before_sent = list(cp.sent)
    elif state == "free":
        declare(rm, cp, 0, seq=1)
        heartbeat(rm, cp, 0, ((0, None, None), (1, None, None)))
        before_sent = list(cp.sent)
    before = dict(rm.slots)
    slot, alloc = {"unknown slot": (5, 100), "other allocation": (0, 101)}.get(state, (0, 100))
    rm.on_answer(cp, rpc.SlotRequestAnswer(0, TOKEN, slot, rpc.AllocationID(alloc), False,
                                           (rpc.AllocationID(9), OTHER_JOB)))
    assert rm.slots == before
    assert cp.sent == before_sent


# -- heartbeats: reportSlotStatus and the timeout -----------------------------------------------------


def test_a_heartbeat_reconciles_the_slot_table_and_names_the_pending_slots_it_resolved():
    """``reportSlotStatus``: the TaskExecutor's report is the truth for allocated slots. A
    PENDING slot reported allocated completes its allocation; a free slot reported allocated is
    the reported job's; an allocated slot reported free is freed, and the requirement it met is
    checked again."""
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, report=((0, None, None), (1, None, None), (2, None, None)))
    declare(rm, cp, 2)  # slots 0 and 1 PENDING (100, 101)
    rm.missed[0] = 3
    a, b, c = rpc.AllocationID(100), rpc.AllocationID(101), rpc.AllocationID(9)
    # both answers lost; slot 2 meanwhile held by another job
    resolved = heartbeat(rm, cp, 0, ((0, a, JOB), (1, b, JOB), (2, c, OTHER_JOB)))
    assert resolved == [(0, 0), (0, 1)]
    assert rm.missed[0] == 0
    assert rm.slots == {(0, 0): ("ALLOCATED", a, JOB), (0, 1): ("ALLOCATED", b, JOB),
                        (0, 2): ("ALLOCATED", c, OTHER_JOB)}
    assert len(requested(cp)) == 2
    # slot 0 freed at the TaskExecutor: free here, and the requirement (2) takes it anew
    assert heartbeat(rm, cp, 0, ((0, None, None), (1, b, JOB), (2, c, OTHER_JOB))) == []
    assert rm.slots[(0, 0)] == ("PENDING", 102, JOB)
    assert requested(cp)[2:] == [(0, 0, 102, JOB)]
    # its allocation completed by the next report; a report that agrees resolves nothing
    d = rpc.AllocationID(102)
    assert heartbeat(rm, cp, 0, ((0, d, JOB), (1, b, JOB), (2, c, OTHER_JOB))) == [(0, 0)]
    assert heartbeat(rm, cp, 0, ((0, d, JOB), (1, b, JOB), (2, c, OTHER_JOB))) == []
    assert rm.slots[(0, 0)] == ("ALLOCATED", d, JOB)
    assert len(requested(cp)) == 3


def test_a_heartbeat_of_an_unregistered_incarnation_is_ignored():
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, inc=1, report=((0, None, None),))
    rm.missed[0] = 2
    before = dict(rm.slots)
    assert heartbeat(rm, cp, 0, ((0, rpc.AllocationID(9), JOB),), inc=0) == []
    assert heartbeat(rm, cp, 4, ((0, rpc.AllocationID(9), JOB),), inc=1) == []
    assert rm.slots == before and rm.missed == {0: 2}


def test_a_task_executor_silent_longer_than_the_timeout_is_unregistered_with_its_slots():
    """The heartbeat timeout: a TaskExecutor is lost after more than ``timeout`` intervals
    without an answer; ``unregisterTaskManager`` drops its slots and the requirement they met
    is checked again. Every interval sends each registered TaskExecutor a request."""
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, inc=2, report=((0, None, None),))
    register(rm, cp, 1, inc=5, report=((0, None, None),))
    declare(rm, cp, 1)  # te 0's slot PENDING
    for _ in range(2):
        heartbeat(rm, cp, 1, ((0, None, None),), inc=5)
        assert rm.tick(cp, 2) == []
    assert rm.missed == {0: 2, 1: 1}
    reqs = of(cp, rpc.HeartbeatRequest)
    assert reqs == [rpc.HeartbeatRequest("rm", TOKEN, te, inc) for te, inc in ((0, 2), (1, 5)) * 2]
    heartbeat(rm, cp, 1, ((0, None, None),), inc=5)
    assert rm.tick(cp, 2) == [0]
    assert rm.registered == {1: 5} and rm.missed == {1: 1}
    assert set(rm.slots) == {(1, 0)}
    # the requirement moves to the remaining TaskExecutor, and only it gets requests
    assert rm.slots[(1, 0)] == ("PENDING", 101, JOB)
    assert of(cp, rpc.HeartbeatRequest)[4:] == [rpc.HeartbeatRequest("rm", TOKEN, 1, 5)]


def test_the_allocation_rule_serves_jobs_in_order_and_skips_busy_slots():
    rm, cp = ResourceManager(TOKEN), control_plane()
    register(rm, cp, 0, report=((0, rpc.AllocationID(9), 99), (1, None, None), (2, None, None)))
    rm.requirements = {OTHER_JOB: 1, JOB: 1}
    rm.check_requirements(cp)
    assert requested(cp) == [(0, 1, 100, JOB), (0, 2, 101, OTHER_JOB)]
    rm.check_requirements(cp)  # met: nothing more
    assert len(requested(cp)) == 2
