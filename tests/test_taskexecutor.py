"""Unit tests of model/taskexecutor.py: one TaskExecutor driven alone, RPC by RPC, with the
RPCs it sends collected (no cluster, no network).

Each test states a rule of Flink's ``TaskExecutor`` (``requestSlot``, ``offerSlots`` and its
answer, ``submitTask``, ``freeSlot``, ``cancelTask``, ``disconnectJobManagerConnection``,
``syncSlotsWithSnapshotFromJobMaster``, the heartbeat payloads) and of its ``TaskSlotTable``
(``allocateSlot``, ``markSlotActive``/``markSlotInactive``, the slot timeout)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from model import rpc, seams
from model.taskexecutor import TaskExecutor

RM = 3      # the ResourceManager's leader session (its fencing token)
JM = 3      # the job leader of the same session
OLD_JM = 2


def control_plane():
    sent: list = []
    return SimpleNamespace(net=SimpleNamespace(send=sent.append), sent=sent)


def of(cp, cls):
    return [m for m in cp.sent if type(m) is cls]


def a(n):
    return rpc.AllocationID(n)


def te_with(slots, job_token=JM, rm_token=RM, index=1, inc=0):
    """A TaskExecutor whose slot table is ``slots`` (FREE is None)."""
    te = TaskExecutor(index, len(slots))
    te.inc, te.rm_token, te.job_token, te.slots = inc, rm_token, job_token, list(slots)
    return te


# -- reports -----------------------------------------------------------------------------------


def test_a_new_task_executor_is_empty_and_reports_every_slot_free():
    te = TaskExecutor(4, 3)
    assert (te.index, te.alive, te.inc, te.rm_token, te.registered, te.job_token) == (4, True, 0, None, False, None)
    assert te.slots == [None, None, None]
    assert (te.deployed, te.unreported, te.inactive, te.missed_rm, te.missed_jm) == ({}, set(), {}, 0, 0)
    assert te.slot_report() == ((0, None, None), (1, None, None), (2, None, None))


def test_the_slot_report_and_the_execution_deployment_report():
    te = te_with([(a(5), JM, True), None, (a(6), OLD_JM, True), (a(7), JM, False)])
    te.deployed = {0: (("s", 2), ("r", 1)), 2: (("x", 1),), 3: (("q", 4),)}
    assert te.slot_report() == ((0, a(5), JM), (1, None, None), (2, a(6), OLD_JM), (3, a(7), JM))
    # the ExecutionDeploymentReport for a JobMaster names the executions in its slots, sorted
    assert te.deployment_report(JM) == (("q", 4), ("r", 1), ("s", 2))
    assert te.deployment_report(OLD_JM) == (("x", 1),)
    assert te.deployment_report(99) == ()
    assert te.slot_of(a(6)) == 2 and te.slot_of(a(9)) is None
    assert te.running() == {("s", 2), ("r", 1), ("x", 1), ("q", 4)}


# -- process lifecycle ----------------------------------------------------------------------------


def test_a_crash_loses_the_slot_table_and_a_restart_is_a_new_incarnation():
    te = te_with([(a(5), JM, True), (a(6), JM, False)], inc=2)
    te.deployed, te.unreported, te.inactive = {0: (("s", 1),)}, {a(5)}, {a(6): 1}
    te.registered, te.missed_rm, te.missed_jm = True, 1, 2
    assert te.crash() == {("s", 1)}
    assert not te.alive and te.slots == [None, None]
    assert (te.deployed, te.unreported, te.inactive) == ({}, set(), {})
    assert (te.rm_token, te.job_token, te.registered, te.missed_rm, te.missed_jm) == (None, None, False, 0, 0)
    assert te.inc == 2
    te.restart()
    assert te.alive and te.inc == 3


# -- leader retrieval -----------------------------------------------------------------------------


def test_a_new_leader_gets_a_registration_and_the_jobs_slots_are_offered_to_it():
    """A new ResourceManager leader: register with the current SlotReport. A new job leader
    (``JobLeaderService``): the old leader's tasks fail (``disconnectJobManagerConnection``),
    its slots become inactive and are offered to the new one."""
    cp = control_plane()
    te = te_with([(a(5), OLD_JM, True), None, (a(6), OLD_JM, False), (a(7), 9, True)], job_token=OLD_JM,
                 rm_token=OLD_JM, inc=4)
    te.registered = True
    te.deployed = {0: (("s", 1),), 3: (("z", 1),)}
    assert te.new_leader(cp, JM) == {("s", 1)}
    # unregistered as a TaskExecutor that never registered is (False, not another false value:
    # ControlPlane's state tuple holds it, and equal states must read equal)
    assert te.registered is False and te.rm_token == JM and te.job_token == JM
    assert of(cp, rpc.RegisterTaskExecutor) == [rpc.RegisterTaskExecutor(1, 4, JM, (
        (0, a(5), OLD_JM), (1, None, None), (2, a(6), OLD_JM), (3, a(7), 9)))]
    assert te.slots == [(a(5), OLD_JM, False), None, (a(6), OLD_JM, False), (a(7), 9, True)]
    assert te.deployed == {3: (("z", 1),)}
    assert of(cp, rpc.OfferSlots) == [rpc.OfferSlots(1, 4, JM, ((0, a(5)), (2, a(6))))]
    # the same leader again: nothing changes, nothing is sent
    cp.sent.clear()
    assert te.new_leader(cp, JM) == set()
    assert cp.sent == []


def test_a_first_job_leader_fails_nothing_and_gets_the_inactive_slots():
    cp = control_plane()
    te = te_with([(a(5), None, False), None], job_token=None, rm_token=JM)
    assert te.new_leader(cp, JM) == set()
    assert of(cp, rpc.RegisterTaskExecutor) == []
    assert of(cp, rpc.OfferSlots) == [rpc.OfferSlots(1, 0, JM, ((0, a(5)),))]


def test_offers_go_only_to_a_known_job_leader_and_only_for_inactive_slots():
    cp = control_plane()
    te = te_with([(a(5), JM, True), None], job_token=None)
    te.offer(cp)
    te.job_token = JM
    te.offer(cp)  # no inactive slot: no OfferSlots at all
    assert cp.sent == []
    te.slots[1] = (a(6), JM, False)
    te.offer(cp)
    assert cp.sent == [rpc.OfferSlots(1, 0, JM, ((1, a(6)),))]


# -- the job leader's heartbeat timeout and the slot timeout ---------------------------------------


def test_a_silent_job_leader_is_disconnected_after_more_than_the_timeout():
    te = te_with([(a(5), JM, True), (a(6), JM, False), (a(7), OLD_JM, True), (a(8), JM, True)])
    te.deployed = {0: (("s", 1),), 2: (("o", 1),)}  # slot 3 active but empty
    te.unreported = {a(5), a(7)}
    assert te.job_leader_tick(2) is None and te.missed_jm == 1
    assert te.job_leader_tick(2) is None and te.missed_jm == 2
    assert te.job_leader_tick(2) == {("s", 1)}
    assert te.missed_jm == 0
    # its active slots become inactive (offered again), other jobs' slots are untouched
    assert te.slots == [(a(5), JM, False), (a(6), JM, False), (a(7), OLD_JM, True), (a(8), JM, False)]
    assert te.deployed == {2: (("o", 1),)} and te.unreported == {a(7)}
    # nothing active of the job leader any more: nothing is monitored
    assert te.job_leader_tick(0) is None and te.missed_jm == 0


def test_no_job_leader_or_no_active_slot_of_it_resets_the_count():
    te = te_with([(a(5), JM, False)])
    te.missed_jm = 5
    assert te.job_leader_tick(0) is None and te.missed_jm == 0
    te = te_with([(a(5), JM, True)], job_token=None)
    te.missed_jm = 5
    assert te.job_leader_tick(0) is None and te.missed_jm == 0


def test_a_slot_nobody_accepts_is_freed_after_the_slot_timeout():
    """``taskmanager.slot.timeout``: an allocated slot not activated within the timeout is
    freed; an active slot never times out, and a slot that became active is forgotten."""
    te = te_with([(a(5), JM, False), (a(6), JM, True), (a(7), JM, False)])
    te.timeout_inactive(1)
    assert te.inactive == {a(5): 0, a(7): 0}
    te.slots[2] = (a(7), JM, True)  # accepted
    te.timeout_inactive(1)
    assert te.inactive == {a(5): 1}
    assert te.slots[0] == (a(5), JM, False)
    te.timeout_inactive(1)
    assert te.inactive == {}
    assert te.slots == [None, (a(6), JM, True), (a(7), JM, True)]


# -- requestSlot ----------------------------------------------------------------------------------


def test_a_free_slot_is_allocated_answered_and_offered():
    cp = control_plane()
    te = te_with([None, None])
    assert te.on_request_slot(cp, rpc.RequestSlot(1, RM, 1, a(5), JM)) == "allocated"
    assert te.slots == [None, (a(5), JM, False)]
    assert cp.sent == [rpc.SlotRequestAnswer(1, RM, 1, a(5), True), rpc.OfferSlots(1, 0, JM, ((1, a(5)),))]


def test_a_request_for_the_allocation_the_slot_holds_is_answered_ok_again():
    cp = control_plane()
    te = te_with([(a(5), JM, True)])
    assert te.on_request_slot(cp, rpc.RequestSlot(1, RM, 0, a(5), JM)) == "allocated"
    assert te.slots == [(a(5), JM, True)]
    assert cp.sent == [rpc.SlotRequestAnswer(1, RM, 0, a(5), True)]


def test_an_occupied_slot_is_answered_with_its_holder():
    """``SlotOccupiedException`` carries the allocation and the job holding the slot."""
    cp = control_plane()
    te = te_with([(a(5), OLD_JM, True)])
    assert te.on_request_slot(cp, rpc.RequestSlot(1, RM, 0, a(6), JM)) == "answered: the slot is not free"
    assert te.slots == [(a(5), OLD_JM, True)]
    assert cp.sent == [rpc.SlotRequestAnswer(1, RM, 0, a(6), False, (a(5), OLD_JM))]


@pytest.mark.parametrize("slot, alloc, token, why", [
    (0, 6, RM + 1, "rejected: ResourceManagerId does not match"),
    (2, 6, RM, "rejected: no such slot"),
    (-1, 6, RM, "rejected: no such slot"),
    (1, 5, RM, "rejected: the allocation holds another slot"),
])
def test_a_request_slot_that_cannot_be_served_is_rejected_without_an_answer(slot, alloc, token, why):
    cp = control_plane()
    te = te_with([(a(5), JM, True), None])
    assert te.on_request_slot(cp, rpc.RequestSlot(1, token, slot, a(alloc), JM)) == why
    assert te.slots == [(a(5), JM, True), None]
    assert cp.sent == []


def test_without_fencing_a_request_of_another_resource_manager_is_served():
    cp = control_plane()
    te = te_with([None])
    with seams.active(("no-fencing",)):
        assert te.on_request_slot(cp, rpc.RequestSlot(1, RM + 1, 0, a(6), JM)) == "allocated"


# -- offerSlots' answer -----------------------------------------------------------------------------


def test_accepted_offers_become_active_and_rejected_inactive_slots_are_freed():
    cp = control_plane()
    te = te_with([(a(5), JM, False), (a(6), JM, False), (a(7), JM, True), (a(4), JM, False)])
    te.deployed = {1: (("s", 1),), 2: (("t", 1),)}
    ans = rpc.OfferSlotsAnswer(1, JM, accepted=(a(5), a(9)), rejected=(a(4), a(6), a(7), a(8)))
    assert te.on_offer_answer(cp, ans) == "applied"
    # an active slot is not freed by a rejection (it was accepted before); unknown ones ignored
    assert te.slots == [(a(5), JM, True), None, (a(7), JM, True), None]
    assert te.deployed == {2: (("t", 1),)}


def test_an_offer_answer_of_another_job_leader_is_rejected():
    cp = control_plane()
    te = te_with([(a(5), JM, False)])
    ans = rpc.OfferSlotsAnswer(1, OLD_JM, accepted=(), rejected=(a(5),))
    assert te.on_offer_answer(cp, ans) == "rejected: not the job leader's answer"
    assert te.slots == [(a(5), JM, False)]


# -- submitTask, freeSlot, cancelTask -----------------------------------------------------------------


def test_submit_task_needs_the_job_leader_and_a_slot_of_the_allocation():
    cp = control_plane()
    te = te_with([(a(5), JM, True)])
    assert te.submit_allowed(cp, rpc.SubmitTask(1, OLD_JM, a(5), (("s", 1),))) == "the JobMasterId is not the job leader's"
    assert te.submit_allowed(cp, rpc.SubmitTask(1, JM, a(6), (("s", 1),))) is not None
    assert te.submit_allowed(cp, rpc.SubmitTask(1, JM, a(5), (("s", 1),))) is None


def test_a_submission_replaces_the_earlier_attempt_of_the_same_subtask_only():
    te = te_with([(a(5), JM, True), (a(6), JM, True)])
    te.deployed = {0: (("r", 1), ("s", 1))}
    assert te.on_submit(rpc.SubmitTask(1, JM, a(5), (("s", 2), ("t", 1)))) == {("s", 1)}
    assert te.deployed == {0: (("r", 1), ("s", 2), ("t", 1))}
    assert te.on_submit(rpc.SubmitTask(1, JM, a(6), (("u", 1),))) == set()  # the slot's first tasks
    assert te.deployed[1] == (("u", 1),)
    assert te.slots == [(a(5), JM, True), (a(6), JM, True)]


def test_free_slot_from_the_owner_frees_it_and_kills_its_tasks():
    cp = control_plane()
    te = te_with([(a(5), JM, True), (a(6), JM, True)])
    te.deployed = {0: (("s", 1),), 1: (("t", 1),)}
    assert te.on_free_slot(cp, rpc.FreeSlot(1, JM, a(9))) is None
    assert te.on_free_slot(cp, rpc.FreeSlot(1, OLD_JM, a(5))) is None
    assert te.slots[0] == (a(5), JM, True)
    assert te.on_free_slot(cp, rpc.FreeSlot(1, JM, a(5))) == {("s", 1)}
    assert te.slots == [None, (a(6), JM, True)] and te.deployed == {1: (("t", 1),)}
    te.deployed = {}
    assert te.on_free_slot(cp, rpc.FreeSlot(1, JM, a(6))) == set()  # an idle slot
    assert te.slots == [None, None]


def test_cancel_task_removes_the_named_executions_of_the_jobs_slots():
    cp = control_plane()
    te = te_with([(a(5), JM, True), (a(6), JM, True), (a(7), OLD_JM, True)], job_token=JM)
    te.deployed = {2: (("s", 1),), 0: (("r", 1), ("s", 1)), 1: (("t", 1),)}  # another job's slot first
    assert te.on_cancel(cp, rpc.CancelTask(1, OLD_JM, (("s", 1),))) is None
    assert te.on_cancel(cp, rpc.CancelTask(1, JM, (("s", 1), ("t", 1), ("u", 1)))) == {("s", 1), ("t", 1)}
    # an emptied slot keeps its allocation; another job's execution of the same name stays
    assert te.deployed == {2: (("s", 1),), 0: (("r", 1),)}
    assert te.slots[1] == (a(6), JM, True)


# -- the AllocatedSlotReport --------------------------------------------------------------------------


def test_an_active_slot_missing_from_two_allocated_slot_reports_in_a_row_is_freed():
    """``syncSlotsWithSnapshotFromJobMaster``: one report may predate the slot's acceptance, so
    a slot is freed only when two reports in a row miss it; an allocation the report names that
    this TaskExecutor does not hold for the JobMaster is failed (``failSlot``)."""
    te = te_with([(a(5), JM, True), (a(6), JM, True), (a(7), JM, False), (a(8), OLD_JM, True)])
    te.deployed = {0: (("s", 1),), 1: (("t", 1),)}
    assert te.on_allocated_slot_report(JM, (a(6), a(8), a(9))) == (set(), (a(8), a(9)), [])
    assert te.unreported == {a(5)}
    # named again in the next report: the count starts over
    assert te.on_allocated_slot_report(JM, (a(5), a(6))) == (set(), (), [])
    assert te.unreported == set()
    assert te.on_allocated_slot_report(JM, (a(6),)) == (set(), (), [])
    assert te.on_allocated_slot_report(JM, (a(6),)) == ({("s", 1)}, (), [a(5)])
    assert te.slots == [None, (a(6), JM, True), (a(7), JM, False), (a(8), OLD_JM, True)]
    assert te.deployed == {1: (("t", 1),)} and te.unreported == set()


def test_an_idle_active_slot_missing_from_two_reports_is_freed_too():
    te = te_with([(a(5), JM, True)])
    assert te.on_allocated_slot_report(JM, ()) == (set(), (), [])
    assert te.on_allocated_slot_report(JM, ()) == (set(), (), [a(5)])
    assert te.slots == [None]


def test_without_the_allocated_slot_report_sync_nothing_is_freed():
    te = te_with([(a(5), JM, True)])
    with seams.active(("no-allocated-slot-report-sync",)):
        for _ in range(3):
            assert te.on_allocated_slot_report(JM, ()) == (set(), (), [])
    assert te.slots == [(a(5), JM, True)]


# -- the calls a TaskExecutor makes on itself, recorded -------------------------------------------


class _OfferRecordingTaskExecutor(TaskExecutor):
    """A TaskExecutor whose ``offer`` only records the control plane it is handed."""

    __slots__ = ("offered_with",)

    def __init__(self, *args):
        super().__init__(*args)
        self.offered_with = []

    def offer(self, cp):
        self.offered_with.append(cp)


def test_a_new_job_leader_gets_the_slots_offered_through_the_same_control_plane():
    cp = control_plane()
    te = _OfferRecordingTaskExecutor(1, 2)
    te.job_token, te.slots = OLD_JM, [(a(5), OLD_JM, True), None]
    te.new_leader(cp, JM)
    assert te.offered_with == [cp] and te.offered_with[0] is cp
    te.new_leader(cp, JM)  # the same leader again: nothing offered
    assert len(te.offered_with) == 1


def test_a_slot_allocated_by_a_request_is_offered_through_the_same_control_plane():
    cp = control_plane()
    te = _OfferRecordingTaskExecutor(1, 2)
    te.rm_token, te.job_token = RM, JM
    assert te.on_request_slot(cp, rpc.RequestSlot(1, RM, 1, a(5), JM)) == "allocated"
    assert te.offered_with == [cp] and te.offered_with[0] is cp
    assert te.slots == [None, (a(5), JM, False)]
    # the slot already holds the allocation: answered again, nothing offered
    te.on_request_slot(cp, rpc.RequestSlot(1, RM, 1, a(5), JM))
    assert len(te.offered_with) == 1
