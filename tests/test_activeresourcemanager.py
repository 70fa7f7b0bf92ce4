"""The ActiveResourceManager (model/activeresourcemanager.py) of an application cluster:
workers requested for the SlotManager's unfulfilled requirements and counted while pending,
surplus pending workers released, the registration and idle timeouts, the workers stopped at
the cluster's shutdown, and the two seams (pending workers ignored; FLINK-13554, no
registration timeout) breaking what their safe twin keeps.

application-cluster's small scenario: one job of two tasks (two slots), workers of one slot,
registration and idle timeouts of one heartbeat interval.
"""

from __future__ import annotations

import pytest

from model.actions import DeploymentTick, JobTaskFinished, RegisterWorker, RevokeJobLeadership, TaskTerminated
from model.activeresourcemanager import ActiveResourceManager
from model.cluster import Cluster, drain
from model.clusterentrypoint import needed_pending_workers
from model.variants import generate, small_scenario, variant
from properties.engines import Run
from scenario_util import assert_safe_twin_takes_the_same_actions


class _Ids:
    """What check_resource_declarations draws worker ids from."""

    def __init__(self):
        self.n = 0

    def new_worker(self):
        self.n += 1
        return self.n


def _cluster(name: str = "application-cluster") -> Cluster:
    return Cluster.from_scenario(small_scenario(variant(name)))


def test_the_declaration_is_compared_with_the_pending_workers_and_surplus_ones_are_released():
    arm, ids = ActiveResourceManager(), _Ids()
    assert arm.check_resource_declarations(ids, 2) == ([1, 2], [])
    assert arm.check_resource_declarations(ids, 2) == ([], []), "two pending workers meet the declaration"
    assert arm.check_resource_declarations(ids, 1) == ([], [2]), "the newest surplus pending worker is released"
    assert sorted(arm.pending) == [1]
    arm.on_worker_registered(1)
    assert arm.pending == {}


def test_a_pending_worker_is_stopped_once_the_registration_timeout_passed():
    arm, ids = ActiveResourceManager(), _Ids()
    arm.check_resource_declarations(ids, 1)
    assert arm.tick(2, 5, []) == ([], []) and arm.pending == {1: 1}
    assert arm.tick(2, 5, []) == ([], []) and arm.pending == {1: 2}
    assert arm.tick(2, 5, []) == ([1], []) and arm.pending == {}, "past the timeout: stopped"


def test_an_idle_worker_is_released_after_the_idle_timeout_and_a_busy_one_forgets_its_idle_time():
    arm = ActiveResourceManager()
    assert arm.tick(3, 1, [7]) == ([], []) and arm.idle == {7: 1}
    assert arm.tick(3, 1, []) == ([], []) and arm.idle == {}, "busy again: its idle time starts over"
    arm.tick(3, 1, [7])
    assert arm.tick(3, 1, [7]) == ([], [7]), "idle for more than one interval: released"
    assert arm.ticking(3, 1, []) is False, "nothing pending, nothing idle: a tick would change nothing"


def test_an_application_cluster_requests_its_workers_deploys_and_shuts_down_with_its_job():
    c = _cluster()
    d = c.deployment
    assert d.mode == "application" and [r.status for r in d.jobs] == ["RUNNING"], "submitted as it starts"
    assert len(d.active.pending) == 2 and d.workers == {}, "two slots needed, workers of one slot"
    assert needed_pending_workers(d) == 2
    w0, w1 = sorted(d.active.pending)
    c.step(RegisterWorker(w0))
    assert d.jobs[0].tasks == ["DEPLOYED", "CREATED"] and list(d.active.pending) == [w1]
    assert needed_pending_workers(d) == 1
    c.step(RegisterWorker(w1))
    assert d.jobs[0].tasks == ["DEPLOYED", "DEPLOYED"] and not d.active.pending
    c.step(JobTaskFinished(0, 0))
    c.step(JobTaskFinished(0, 1))
    assert d.dispatcher.shut_down and d.dispatcher.ha_cleaned and d.workers == {}
    assert c.enabled_actions() == [] and c.is_drained()


def test_a_worker_that_does_not_register_in_time_is_replaced():
    c = _cluster()
    d = c.deployment
    first = sorted(d.active.pending)
    c.step(DeploymentTick())
    c.step(DeploymentTick())
    assert not set(first) & set(d.active.pending), "both timed out"
    assert len(d.active.pending) == 2, "and new ones were requested: the job still needs two slots"
    assert ("dm_worker_registration_timeout", 1, first[0]) in c.events


def test_a_worker_left_idle_by_a_suspended_job_is_released_and_requested_again_when_it_recovers():
    c = _cluster()
    d = c.deployment
    for w in sorted(d.active.pending):
        c.step(RegisterWorker(w))
    c.step(RevokeJobLeadership(0))
    assert d.jobs[0].status == "SUSPENDED" and not d.dispatcher.shut_down, "not globally terminal: the cluster stays"
    drain(c)
    assert d.dispatcher.results == {0: "FINISHED"} and d.dispatcher.shut_down


def test_every_safe_application_walk_keeps_the_invariants_and_drains():
    import random  # only this test draws random walks

    for seed in range(8):
        run = Run(generate(variant("application-cluster"), seed))
        rng = random.Random(seed)
        for _ in range(60):
            acts = run.cluster.enabled_actions()
            if not acts:
                break
            assert run.step(rng.choice(acts)) is None, (seed, run.cluster.trace)
        assert run.finish() is None, seed
        assert run.cluster.is_drained()


# -- the seams -------------------------------------------------------------------------------------

def test_variant_rm_ignores_pending_workers_requests_another_worker_at_every_check():
    sc = small_scenario(variant("application-rm-ignores-pending-workers"))
    run = Run(sc)
    w = sorted(run.cluster.deployment.active.pending)[0]
    v = run.step(RegisterWorker(w))
    assert v is not None and v.invariant == "active_rm_pending_workers_within_requirements"
    assert len(run.cluster.deployment.active.pending) > needed_pending_workers(run.cluster.deployment)
    assert_safe_twin_takes_the_same_actions(sc, [RegisterWorker(w)])


def test_variant_flink_13554_keeps_a_worker_pending_past_its_registration_timeout():
    sc = small_scenario(variant("FLINK-13554"))
    run = Run(sc)
    assert run.step(DeploymentTick()) is None
    v = run.step(DeploymentTick())
    assert v is not None and v.invariant == "active_rm_timeouts_honoured"
    assert all(n == 2 for n in run.cluster.deployment.active.pending.values())
    assert_safe_twin_takes_the_same_actions(sc, [DeploymentTick(), DeploymentTick()])


@pytest.mark.parametrize("name", ["application-rm-ignores-pending-workers", "FLINK-13554"])
def test_the_unsafe_variants_switch_one_seam_of_the_active_resource_manager(name):
    assert variant(name).seam.startswith("ActiveResourceManager.")


def test_the_timeouts_reach_the_application_goals():
    run = Run(small_scenario(variant("application-cluster")))
    run.step(DeploymentTick())
    assert not run.goals["pending_worker_timed_out"]
    run.step(DeploymentTick())
    assert run.goals["pending_worker_timed_out"] == 1
    for w in sorted(run.cluster.deployment.active.pending):
        run.step(RegisterWorker(w))
    run.step(RevokeJobLeadership(0))
    d = run.cluster.deployment
    assert d.idle_workers() == [], "their slots are RELEASING while the cancelled tasks run"
    for w in sorted(d.workers):
        for s, ((job, task, attempt, _),) in sorted(d.workers[w].tasks.items()):
            run.step(TaskTerminated(w, s, job, task, attempt))
    assert len(d.idle_workers()) == 2
    run.step(DeploymentTick())
    assert not run.goals["idle_worker_released"]
    run.step(DeploymentTick())
    assert run.goals["idle_worker_released"] == 1 and run.cluster.deployment.workers == {}
