"""Unit tests of model/jobmaster.py: the JobMaster and its SlotPool driven alone, RPC by RPC,
with the RPCs it sends collected (no cluster, no network).

Each test states a rule of Flink's ``JobMaster`` with its ``DeclarativeSlotPool``
(``offerSlots``, ``releaseIdleSlots``, ``failAllocation``/``failSlot``, the declaration of
resource requirements and its retry by ``DeclareResourceRequirementServiceConnectionManager``),
the slot sharing allocator's placement, the TaskManager heartbeat with its
``AllocatedSlotReport``, and ``DefaultExecutionDeploymentReconciler``."""

from __future__ import annotations

from types import SimpleNamespace

from model import rpc
from model.jobmaster import JobMaster

JM = 4


def control_plane():
    sent: list = []
    seq = iter(range(1, 10_000))
    attempt = iter(range(500, 10_000))
    return SimpleNamespace(net=SimpleNamespace(send=sent.append), sent=sent,
                           new_sequence_number=lambda: next(seq),
                           new_attempt=lambda: rpc.ExecutionAttemptID(next(attempt)))


def of(cp, cls):
    return [m for m in cp.sent if type(m) is cls]


def a(n):
    return rpc.AllocationID(n)


def job(groups=((0, 1), (2,)), attempts=(10, 11, 12)):
    return JobMaster(JM, groups, [rpc.ExecutionAttemptID(x) for x in attempts])


def test_a_new_job_master_waits_for_every_subtask_and_needs_every_group():
    jm = job()
    assert jm.groups == ((0, 1), (2,)) and jm.token == JM
    assert jm.needed == frozenset({0, 1}) and jm.pending == {0, 1, 2} and jm.required == 2
    assert (jm.status, jm.declared, jm.acked) == ("RUNNING", None, False)
    assert (jm.pool, jm.group_slot, jm.deployed, jm.connected, jm.missed, jm.unconfirmed, jm.idle) == \
        ({}, {}, {}, {}, {}, {}, {})
    assert jm.attempts == [10, 11, 12]


# -- declareRequiredResources ------------------------------------------------------------------------


def test_the_requirement_is_declared_until_acknowledged_and_again_when_it_changes():
    cp, jm = control_plane(), job()
    jm.declare(cp)
    jm.declare(cp)  # not acknowledged: retried with a new number
    assert of(cp, rpc.DeclareResourceRequirements) == [rpc.DeclareResourceRequirements(JM, JM, 2, 1),
                                                      rpc.DeclareResourceRequirements(JM, JM, 2, 2)]
    jm.on_acknowledged(rpc.RequirementsAcknowledged(9, JM, 1))  # a late answer to the first
    assert jm.acked is False
    jm.on_acknowledged(rpc.RequirementsAcknowledged(9, JM, 2))
    assert jm.acked is True
    jm.declare(cp)
    assert len(of(cp, rpc.DeclareResourceRequirements)) == 2
    jm.declare(cp, force=True)
    assert of(cp, rpc.DeclareResourceRequirements)[2:] == [rpc.DeclareResourceRequirements(JM, JM, 2, 3)]
    assert jm.acked is False and jm.declared == 3


def test_a_group_that_no_longer_needs_its_slot_gives_it_back_free_and_a_changed_requirement_is_declared():
    cp, jm = control_plane(), job(groups=((0,), (1,), (2,)))
    jm.pool = {a(5): (0, 0, 0), a(6): (0, 0, 1), a(7): (1, 0, 0)}
    jm.group_slot = {2: a(5), 0: a(6), 1: a(7)}
    assert jm.update_demand(cp, frozenset({1})) == [a(6), a(5)]  # by group
    assert jm.group_slot == {1: a(7)} and jm.idle == {a(6): 0, a(5): 0}
    assert of(cp, rpc.DeclareResourceRequirements) == [rpc.DeclareResourceRequirements(JM, JM, 1, 1)]
    jm.acked = True
    # another set of the same size: nothing freed that is still needed, nothing declared
    assert jm.update_demand(cp, frozenset({1})) == []
    assert jm.needed == frozenset({1})
    assert len(of(cp, rpc.DeclareResourceRequirements)) == 1


# -- offerSlots --------------------------------------------------------------------------------------


def test_offered_slots_are_accepted_while_the_pool_needs_them():
    cp, jm = control_plane(), job()
    assert jm.on_offer(cp, rpc.OfferSlots(1, 3, JM, ((0, a(5)), (1, a(6)), (2, a(7))))) == set()
    assert jm.pool == {a(5): (1, 3, 0), a(6): (1, 3, 1)}
    assert jm.connected == {1: 3} and jm.missed == {1: 0}
    assert of(cp, rpc.OfferSlotsAnswer) == [rpc.OfferSlotsAnswer(1, JM, (a(5), a(6)), (a(7),))]
    # an offer again of slots the pool holds is accepted again; the heartbeat count is kept
    jm.missed[1] = 2
    jm.on_offer(cp, rpc.OfferSlots(1, 3, JM, ((1, a(6)),)))
    assert of(cp, rpc.OfferSlotsAnswer)[1] == rpc.OfferSlotsAnswer(1, JM, (a(6),), ())
    assert jm.missed == {1: 2}


def test_a_finished_job_rejects_every_new_offer():
    cp, jm = control_plane(), job()
    jm.status = "FINISHED"
    jm.on_offer(cp, rpc.OfferSlots(1, 0, JM, ((0, a(5)),)))
    assert jm.pool == {}
    assert of(cp, rpc.OfferSlotsAnswer) == [rpc.OfferSlotsAnswer(1, JM, (), (a(5),))]


def test_a_slot_offered_under_a_new_allocation_replaces_the_pools_older_one():
    """A restarted TaskExecutor incarnation connects anew; the same slot of the same
    incarnation offered under a new allocation means the older allocation is gone
    (``failAllocation``): the subtasks deployed there fail."""
    cp, jm = control_plane(), job()
    jm.pool = {a(5): (1, 0, 0), a(6): (2, 0, 0)}
    jm.group_slot = {0: a(5), 1: a(6)}
    jm.deployed = {a(5): ((0, 10), (1, 11)), a(6): ((2, 12),)}
    assert jm.on_offer(cp, rpc.OfferSlots(1, 0, JM, ((0, a(8)),))) == {0, 1}
    assert jm.pool == {a(6): (2, 0, 0), a(8): (1, 0, 0)}
    assert jm.group_slot == {1: a(6)} and a(5) not in jm.deployed
    # two slots offered anew in one offer: the subtasks of both replaced allocations fail
    jm.pool = {a(5): (1, 0, 0), a(6): (1, 0, 1)}
    jm.deployed = {a(5): ((0, 10),), a(6): ((2, 12),)}
    assert jm.on_offer(cp, rpc.OfferSlots(1, 0, JM, ((0, a(10)), (1, a(11))))) == {0, 2}
    # a new incarnation connects (its count starts at 0)
    jm.missed[2] = 3
    jm.on_offer(cp, rpc.OfferSlots(2, 1, JM, ()))
    assert jm.connected[2] == 1 and jm.missed[2] == 0


# -- failures and deployment -------------------------------------------------------------------------


def test_failed_subtasks_get_new_attempts_and_leave_the_deployments():
    cp, jm = control_plane(), job()
    jm.pending = set()
    jm.deployed = {a(5): ((0, 10), (1, 11)), a(6): ((2, 12),)}
    jm.unconfirmed = {(0, 10): 1, (2, 12): 0}
    jm.fail(cp, {0, 2})
    assert jm.attempts == [500, 11, 501]
    assert jm.pending == {0, 2}
    assert jm.deployed == {a(5): ((1, 11),)}
    assert jm.unconfirmed == {}


def test_subtasks_are_submitted_once_every_waiting_group_holds_a_slot():
    cp, jm = control_plane(), job()
    jm.pool = {a(6): (1, 0, 0)}
    assert jm.try_deploy(cp, {0, 1, 2}) == []  # two groups wait, one slot: nothing placed
    assert jm.group_slot == {} and jm.pending == {0, 1, 2}
    jm.pool[a(5)] = (2, 0, 1)
    jm.idle = {a(5): 1}
    sent = jm.try_deploy(cp, {0, 1, 2})
    # free slots by allocation, groups in order
    assert sent == [rpc.SubmitTask(2, JM, a(5), ((0, 10), (1, 11))), rpc.SubmitTask(1, JM, a(6), ((2, 12),))]
    assert of(cp, rpc.SubmitTask) == sent
    assert jm.group_slot == {0: a(5), 1: a(6)} and jm.idle == {}
    assert jm.deployed == {a(5): ((0, 10), (1, 11)), a(6): ((2, 12),)}
    assert jm.unconfirmed == {(0, 10): 0, (1, 11): 0, (2, 12): 0}
    assert jm.pending == set()


def test_only_schedulable_subtasks_are_submitted_and_a_group_keeps_its_slot():
    cp, jm = control_plane(), job()
    jm.pool = {a(5): (1, 0, 0)}
    assert [m.subtasks for m in jm.try_deploy(cp, {1})] == [((1, 11),)]
    assert jm.pending == {0, 2}
    # the same group's other subtask goes to the slot it holds, beside the first
    assert [m.subtasks for m in jm.try_deploy(cp, {0, 1})] == [((0, 10),)]
    assert jm.deployed == {a(5): ((0, 10), (1, 11))}
    assert jm.try_deploy(cp, {0, 1}) == []


def test_a_finished_job_submits_nothing():
    cp, jm = control_plane(), job()
    jm.pool = {a(5): (1, 0, 0), a(6): (1, 0, 1)}
    jm.status = "FINISHED"
    assert jm.try_deploy(cp, {0, 1, 2}) == [] and cp.sent == []


# -- releaseIdleSlots --------------------------------------------------------------------------------


def test_a_free_slot_is_released_after_the_idle_timeout_while_the_pool_holds_more_than_needed():
    cp, jm = control_plane(), job(groups=((0,),), attempts=(10,))
    jm.pool = {a(5): (1, 0, 0), a(6): (2, 0, 3), a(7): (2, 0, 4)}
    jm.group_slot = {0: a(7)}
    jm.deployed = {a(5): ((0, 9),), a(6): ((1, 3),)}  # (1, 3) confirmed by a report already
    jm.unconfirmed = {(0, 9): 0}
    jm.idle = {a(5): 0, a(6): 0}
    assert jm.release_idle_slots(cp, 2) == []
    assert jm.idle == {a(5): 1, a(6): 1}
    assert jm.release_idle_slots(cp, 2) == [(1, 0, a(5)), (2, 3, a(6))]
    assert of(cp, rpc.FreeSlot) == [rpc.FreeSlot(1, JM, a(5)), rpc.FreeSlot(2, JM, a(6))]
    assert jm.pool == {a(7): (2, 0, 4)} and jm.idle == {}
    assert jm.deployed == {} and jm.unconfirmed == {}


def test_a_free_slot_the_requirement_still_counts_is_kept_and_its_idle_time_stops_at_the_timeout():
    cp, jm = control_plane(), job()
    jm.pool = {a(5): (1, 0, 0), a(6): (1, 0, 1)}
    jm.idle = {a(5): 0}
    for _ in range(4):
        assert jm.release_idle_slots(cp, 2) == []
    assert jm.idle == {a(5): 2}
    jm.needed = frozenset({0})  # now one slot more than the requirement
    assert jm.release_idle_slots(cp, 2) == [(1, 0, a(5))]


# -- heartbeats and lost TaskExecutors ---------------------------------------------------------------


def test_heartbeat_requests_carry_the_allocated_slot_report_and_a_silent_task_executor_is_lost():
    cp, jm = control_plane(), job()
    jm.connected = {1: 0, 2: 4}
    jm.missed = {1: 0, 2: 1}
    jm.pool = {a(7): (2, 4, 1), a(5): (2, 4, 0), a(6): (1, 0, 0)}
    assert jm.tick(cp, 1) == [2]
    assert jm.missed == {1: 1, 2: 2}
    assert of(cp, rpc.HeartbeatRequest) == [rpc.HeartbeatRequest("jm", JM, 1, 0, (a(6),))]
    cp.sent.clear()
    jm.missed = {1: 0}
    jm.connected = {1: 0, 2: 4}  # missed of 2 unknown: counted from 0
    assert jm.tick(cp, 1) == []
    assert of(cp, rpc.HeartbeatRequest) == [rpc.HeartbeatRequest("jm", JM, 1, 0, (a(6),)),
                                            rpc.HeartbeatRequest("jm", JM, 2, 4, (a(5), a(7)))]


def test_a_lost_task_executor_takes_its_slots_and_their_subtasks_with_it():
    jm = job()
    jm.connected, jm.missed = {1: 0, 2: 0}, {1: 3, 2: 0}
    jm.pool = {a(5): (1, 0, 0), a(6): (1, 0, 1), a(7): (2, 0, 0)}
    jm.group_slot = {0: a(5), 1: a(7)}
    jm.deployed = {a(5): ((0, 10), (1, 11)), a(7): ((2, 12),)}
    jm.idle = {a(6): 1}
    assert jm.lose_task_executor(1) == {0, 1}
    assert jm.pool == {a(7): (2, 0, 0)} and jm.group_slot == {1: a(7)} and jm.idle == {}
    assert jm.deployed == {a(7): ((2, 12),)}
    assert jm.connected == {2: 0} and jm.missed == {2: 0}
    assert jm.lose_task_executor(9) == set()


def test_fail_slot_removes_the_allocation_and_returns_its_subtasks():
    jm = job()
    jm.pool = {a(5): (1, 0, 0), a(6): (1, 0, 1)}
    jm.group_slot = {0: a(5)}
    jm.deployed = {a(5): ((0, 10), (1, 11))}
    jm.idle = {a(6): 0}
    assert jm.fail_slot(a(9)) == set()
    assert jm.fail_slot(a(5)) == {0, 1}
    assert jm.fail_slot(a(6)) == set()
    assert jm.pool == {} and jm.group_slot == {} and jm.deployed == {} and jm.idle == {}


# -- deployment reconciliation --------------------------------------------------------------------


def test_reconciliation_cancels_unknown_executions_and_fails_missing_ones_after_the_timeout():
    """``DefaultExecutionDeploymentReconciler``: an execution reported but not deployed by the
    JobMaster there is unknown (cancelled); one deployed but not reported is missing (failed),
    except a fresh deployment no report has shown yet, which waits ``timeout`` reports."""
    jm = job()
    jm.pool = {a(5): (1, 0, 0), a(6): (2, 0, 0)}
    jm.deployed = {a(5): ((0, 10), (1, 11)), a(6): ((2, 12),), a(7): ((2, 99),)}
    jm.unconfirmed = {(1, 11): 0}

    def report(*executions):
        return rpc.HeartbeatResponse("jm", JM, 1, 0, (executions, ()))

    assert jm.reconcile(report((0, 10), (3, 7)), 2) == ({(3, 7)}, set())
    assert jm.unconfirmed == {(1, 11): 1}
    assert jm.reconcile(report((0, 10)), 2) == (set(), set())
    assert jm.reconcile(report(), 2) == (set(), {0, 1})
    assert jm.unconfirmed == {(1, 11): 2}
    # shown once: confirmed, and missing at once afterwards
    assert jm.reconcile(report((0, 10), (1, 11)), 2) == (set(), set())
    assert jm.unconfirmed == {}
    assert jm.reconcile(report((0, 10)), 2) == (set(), {1})


def test_release_all_frees_every_slot_and_withdraws_the_requirement():
    cp, jm = control_plane(), job()
    jm.pool = {a(6): (2, 0, 1), a(5): (1, 0, 0)}
    jm.group_slot, jm.deployed, jm.idle = {0: a(5)}, {a(5): ((0, 10),)}, {a(6): 1}
    jm.release_all(cp)
    assert cp.sent == [rpc.FreeSlot(1, JM, a(5)), rpc.FreeSlot(2, JM, a(6)),
                       rpc.DeclareResourceRequirements(JM, JM, 0, 1)]
    assert (jm.pool, jm.group_slot, jm.deployed, jm.idle) == ({}, {}, {}, {})


# -- the state right after each call (before a later call trips over it) -----------------------------


class _RecordingJobMaster(JobMaster):
    """A JobMaster whose ``declare`` only records what it is handed (the control plane, force)."""

    __slots__ = ("declared_with",)

    def __init__(self, *args):
        super().__init__(*args)
        self.declared_with = []

    def declare(self, cp, force=False):
        self.declared_with.append((cp, force))


def test_a_demand_of_as_many_groups_frees_nothing_and_keeps_the_new_set():
    cp, jm = control_plane(), job()
    jm.group_slot = {0: a(5), 1: a(6)}
    assert jm.update_demand(cp, frozenset({0, 1})) == []
    assert jm.needed == frozenset({0, 1}) and jm.group_slot == {0: a(5), 1: a(6)} and jm.idle == {}
    assert cp.sent == []


def test_a_changed_demand_is_declared_to_the_control_plane_at_once_with_force():
    cp = control_plane()
    jm = _RecordingJobMaster(JM, ((0, 1), (2,)), [rpc.ExecutionAttemptID(x) for x in (10, 11, 12)])
    assert jm.update_demand(cp, frozenset({1})) == []
    assert jm.declared_with == [(cp, True)] and jm.declared_with[0][0] is cp
    assert jm.needed == frozenset({1})


def test_a_changed_demand_is_declared_even_after_the_last_declaration_was_acknowledged():
    cp, jm = control_plane(), job()
    jm.declared, jm.acked = 7, True
    jm.update_demand(cp, frozenset({0}))
    assert cp.sent == [rpc.DeclareResourceRequirements(JM, JM, 1, 1)]
    assert (jm.declared, jm.acked) == (1, False)
