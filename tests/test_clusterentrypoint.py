"""Deployment modes (model/clusterentrypoint.py): the TaskExecutor's TaskSlotTable with its
RELEASING slots, the SlotManager's allocation across jobs, a session cluster's jobs sharing a
TaskExecutor, the knobs refused in one line, and the session variants' seams breaking what
their safe twin keeps.

session-cluster's small scenario: three one-slot jobs, one TaskExecutor (worker 0) of two
slots; session-cluster-contended's: the same with one slot.
"""

from __future__ import annotations

import pytest

from model.actions import (CancelJob, GrantJobLeadership, JobTaskFailed, JobTaskFinished, RevokeJobLeadership,
                           SubmitJob, TaskTerminated)
from model.cluster import Cluster, RuntimeConfig, drain
from model.clusterentrypoint import ACTIVE, CANCELING, RELEASING, RUNNING, TaskSlotTable
from model.errors import FlinkspecError
from model.executiongraph import compile_stream_graph
from model.scope import ModelScope
from model.variants import generate, small_scenario, variant
from properties.engines import Run
from scenario_util import assert_safe_twin_takes_the_same_actions
from spec.deployment import running_job_tasks_run, slot_allocated_to_one_job, slot_isolation


class _Run:
    """What the deployment invariants read of a run: its cluster."""

    def __init__(self, cluster):
        self.cluster = cluster


def _cluster(name: str) -> Cluster:
    return Cluster.from_scenario(small_scenario(variant(name)))


def _slot(c, worker: int, slot: int):
    d = c.deployment
    w = next(x for x in d.workers if x == worker)
    return d.workers[w].slots[slot], d.workers[w].tasks.get(slot, ())


# -- TaskSlotTable ---------------------------------------------------------------------------------

def test_a_slot_takes_tasks_of_the_job_it_is_allocated_to_only():
    t = TaskSlotTable(2)
    assert t.allocate(0, 7, job=0)
    assert not t.allocate(0, 8, job=1), "an allocated slot is not free (SlotOccupiedException)"
    assert not t.add_task(7, 1, 0, 0), "TaskSlot.add refuses a task of another job"
    assert t.add_task(7, 0, 0, 0)
    assert t.tasks[0] == ((0, 0, 0, RUNNING),)
    assert not t.add_task(9, 0, 0, 0), "no slot holds that allocation"


def test_free_slot_with_a_running_task_releases_it_only_once_the_task_ended():
    t = TaskSlotTable(1)
    t.allocate(0, 7, job=0)
    t.add_task(7, 0, 0, 0)
    assert not t.free_slot(7)
    assert t.slots[0] == (7, 0, RELEASING) and t.tasks[0] == ((0, 0, 0, CANCELING),)
    assert not t.allocate(0, 8, job=1), "a RELEASING slot is not free"
    assert t.remove_task(0, (0, 0, 0, CANCELING)), "the last task ended: the slot is freed"
    assert t.slots[0] is None and t.idle()
    t.allocate(0, 8, job=1)
    assert t.free_slot(8) and t.slots[0] is None, "an empty slot is freed at once"


def test_a_finished_task_leaves_its_slot_allocated():
    t = TaskSlotTable(1)
    t.allocate(0, 7, job=0)
    t.add_task(7, 0, 0, 0)
    assert not t.remove_task(0, (0, 0, 0, RUNNING))
    assert t.slots[0] == (7, 0, ACTIVE) and not t.idle()


# -- the session cluster ---------------------------------------------------------------------------

def test_a_session_cluster_starts_without_jobs_and_offers_no_data_plane_action():
    c = _cluster("session-cluster")
    d = c.deployment
    assert d.mode == "session" and d.jobs == [] and len(d.workers) == 1
    assert c.cp is None
    assert [type(a).__name__ for a in c.enabled_actions()] == ["SubmitJob"]
    assert c.is_drained(), "nothing submitted: the session is at its end"


def test_jobs_submitted_over_time_share_the_task_executor_and_the_third_waits():
    c = _cluster("session-cluster")
    for _ in range(3):
        c.step(SubmitJob())
    d = c.deployment
    assert [r.status for r in d.jobs] == ["RUNNING"] * 3
    assert [r.tasks for r in d.jobs] == [["DEPLOYED"], ["DEPLOYED"], ["CREATED"]]
    (w,) = d.workers
    assert [s[1] for s in d.workers[w].slots] == [0, 1], "one TaskExecutor's two slots, one job each"
    assert "3 job(s) submitted" in c.why_not_enabled(SubmitJob())
    c.step(JobTaskFinished(0, 0))
    assert d.jobs[0].status == "FINISHED" and d.jobs[2].tasks == ["DEPLOYED"], "the freed slot goes to the third job"
    assert 0 not in d.dispatcher.job_graphs and d.dispatcher.results == {0: "FINISHED"}
    assert d.jobs[1].tasks == ["DEPLOYED"] and slot_isolation(_Run(c)) is None


def test_one_jobs_failure_and_cancellation_touch_no_other_jobs_task():
    c = _cluster("session-cluster")
    c.step(SubmitJob())
    c.step(SubmitJob())
    c.step(CancelJob(0))
    assert c.deployment.jobs[0].status == "CANCELLING", "a cancelled job waits for its task to end"
    assert _slot(c, 0, 1)[1] == ((1, 0, 0, RUNNING),)
    c.step(TaskTerminated(0, 0, 0, 0, 0))
    assert c.deployment.jobs[0].status == "CANCELED" and _slot(c, 0, 0) == (None, ())
    c.step(SubmitJob())
    c.step(JobTaskFailed(2, 0))
    assert c.deployment.jobs[2].status == "FAILED"
    assert c.deployment.jobs[1].status == "RUNNING" and _slot(c, 0, 1)[1] == ((1, 0, 0, RUNNING),)
    assert running_job_tasks_run(_Run(c)) is None


def test_a_job_that_lost_its_job_master_frees_its_slot_only_once_its_task_ended():
    c = _cluster("session-cluster-contended")
    c.step(SubmitJob())
    c.step(SubmitJob())
    d = c.deployment
    c.step(RevokeJobLeadership(0))
    assert d.jobs[0].status == "SUSPENDED" and 0 in d.dispatcher.job_graphs, "recoverable from the JobGraphStore"
    slot, tasks = _slot(c, 0, 0)
    assert slot[1:] == (0, RELEASING) and tasks == ((0, 0, 0, CANCELING),)
    assert d.jobs[1].tasks == ["CREATED"], "the next job waits while the old task still runs in the slot"
    c.step(GrantJobLeadership(0))
    assert d.jobs[0].attempt == 1 and d.jobs[0].status == "RUNNING"
    c.step(TaskTerminated(0, 0, 0, 0, 0))
    # the slot is free and goes to the job first in line: job 0's new attempt
    assert _slot(c, 0, 0)[1] == ((0, 0, 1, RUNNING),)
    for inv in (slot_isolation, slot_allocated_to_one_job, running_job_tasks_run):
        assert inv(_Run(c)) is None
    drain(c)
    assert [r.status for r in d.jobs] == ["FINISHED", "FINISHED"]


def test_every_safe_session_walk_keeps_the_invariants_and_drains():
    import random  # only this test draws random walks

    for name in ("session-cluster", "session-cluster-contended"):
        for seed in range(6):
            run = Run(generate(variant(name), seed))
            rng = random.Random(seed)
            for _ in range(60):
                acts = run.cluster.enabled_actions()
                if not acts:
                    break
                assert run.step(rng.choice(acts)) is None, (name, seed, run.cluster.trace)
            assert run.finish() is None, (name, seed)
            assert run.cluster.is_drained()


# -- the knobs ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("knobs, words", [
    (dict(deployment_mode="per-job"), "deployment_mode must be one of"),
    (dict(deployment_mode="session", slots_per_task_manager=0), "slots_per_task_manager must be"),
    (dict(taskmanager_registration_timeout=0), "taskmanager_registration_timeout must be"),
    (dict(taskmanager_idle_timeout="1"), "taskmanager_idle_timeout must be"),
])
def test_bad_deployment_knobs_are_refused_in_one_line(knobs, words):
    with pytest.raises(FlinkspecError) as e:
        RuntimeConfig(**knobs)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_deployment_mode_is_not_modelled_with_the_control_plane():
    """The deployment modes model their own ResourceManager and JobMasters: a scenario (or a
    cluster) that asks for both is refused in one line."""
    sc = generate(variant("session-cluster"), 0)
    with pytest.raises(FlinkspecError, match="cannot be combined") as e:
        sc.with_settings(control_plane=True)
    assert "\n" not in str(e.value)
    with pytest.raises(FlinkspecError, match="cannot be combined"):
        Cluster(compile_stream_graph(sc.graph), sc.job_input, sc.config, scope=ModelScope(control_plane=True))


def test_without_a_deployment_mode_a_cluster_has_no_deployment_state_or_action():
    c = Cluster.from_scenario(small_scenario(variant("aligned-2pc")))
    assert c.deployment is None and "deployment" not in vars(c)
    assert not any(type(a).__name__ in ("SubmitJob", "DeploymentTick") for a in c.candidate_actions())


# -- the session variants' seams -------------------------------------------------------------------

def test_variant_slot_freed_before_tasks_terminated_gives_the_next_job_a_slot_with_the_old_task_in_it():
    sc = small_scenario(variant("session-slot-freed-before-tasks-terminated"))
    actions = [SubmitJob(), SubmitJob(), RevokeJobLeadership(0)]
    run = Run(sc)
    got = [run.step(a) for a in actions]
    assert got[:2] == [None, None] and got[2].invariant == "slot_isolation"
    # job 1 took the slot job 0's cancelled task still runs in
    assert _slot(run.cluster, 0, 0)[1] == ((0, 0, 0, CANCELING), (1, 0, 0, RUNNING))
    assert_safe_twin_takes_the_same_actions(sc, actions)


def test_variant_cancel_task_without_job_id_cancels_the_other_jobs_task():
    sc = small_scenario(variant("session-cancel-task-without-job-id"))
    actions = [SubmitJob(), SubmitJob(), CancelJob(0)]
    run = Run(sc)
    got = [run.step(a) for a in actions]
    assert got[2] is not None and got[2].invariant == "running_job_tasks_run"
    assert _slot(run.cluster, 0, 1)[1] == ((1, 0, 0, CANCELING),)
    assert_safe_twin_takes_the_same_actions(sc, actions)


def test_the_views_disagreeing_on_a_slots_job_is_a_violation():
    c = _cluster("session-cluster")
    c.step(SubmitJob())
    key = next(iter(c.deployment.jobs[0].pool.values()))
    c.deployment.slot_manager.slots[key] = (99, 1)  # (a hand-made disagreement)
    v = slot_allocated_to_one_job(_Run(c))
    assert v is not None and "jobs [0, 1]" in v.message


def test_the_viewer_shows_the_jobs_of_a_session_cluster_apart():
    from model.actions import component_lanes  # the viewer's lanes: only this test draws them
    from properties.timeline import snapshot  # the viewer's state panel: only this test reads it

    run = Run(small_scenario(variant("session-cluster")))
    for a in (SubmitJob(), SubmitJob(), RevokeJobLeadership(0)):
        run.step(a)
    d = snapshot(run)["deployment"]
    assert d["mode"] == "session" and sorted(d["jobs"]) == ["job 0", "job 1"]
    assert d["jobs"]["job 0"]["status"] == "SUSPENDED" and d["jobs"]["job 0"]["slot_pool"] == []
    assert d["jobs"]["job 1"]["status"] == "RUNNING"
    assert d["jobs"]["job 1"]["slot_pool"] == ["allocation 2 in worker 0/slot 1"]
    assert d["workers"]["worker 0"]["slot 0"] == "allocation 1 of job 0 (RELEASING); job 0 task 0 attempt 0 CANCELING"
    assert [lane["id"] for lane in component_lanes(run.cluster)] == ["rm", "job0", "job1"]
    assert "deployment" not in snapshot(Run(small_scenario(variant("aligned-2pc"))))


def test_a_lost_job_masters_slot_passed_to_the_next_job_once_its_task_ended_reaches_the_session_goals():
    run = Run(small_scenario(variant("session-cluster-contended")))
    for a in (SubmitJob(), SubmitJob(), RevokeJobLeadership(0)):
        run.step(a)
    assert not run.goals["releasing_slot_freed"] and not run.goals["slot_passed_between_jobs"]
    run.step(TaskTerminated(0, 0, 0, 0, 0))
    assert run.goals["releasing_slot_freed"] == 1, "the RELEASING slot was freed when its task ended"
    assert run.goals["slot_passed_between_jobs"] == 1, "and allocated to job 1"


def test_inactive_slots_of_a_job_are_freed_by_free_inactive_slots_only():
    t = TaskSlotTable(3)
    t.allocate(0, 7, job=0)
    t.allocate(1, 8, job=0, state="ALLOCATED")
    t.allocate(2, 9, job=1, state="ALLOCATED")
    assert t.free_inactive_slots(0) == [1]
    assert t.slots[0] == (7, 0, ACTIVE) and t.slots[1] is None and t.slots[2] == (9, 1, "ALLOCATED")


def test_variant_flink_31444_leaves_a_finished_jobs_slot_allocated_to_it():
    sc = small_scenario(variant("FLINK-31444"))
    actions = [SubmitJob(), JobTaskFinished(0, 0)]
    run = Run(sc)
    assert [run.step(a) for a in actions] == [None, None]
    d = run.cluster.deployment
    slot, tasks = _slot(run.cluster, 0, 0)
    assert d.jobs[0].status == "FINISHED" and slot[1:] == (0, "ALLOCATED") and tasks == ()
    assert d.slot_manager.slots[next(iter(d.workers)), 0][1] == 0, "the SlotManager gave it back to the finished job"
    v = run.finish()
    assert v is not None and v.invariant == "terminated_job_slots_returned"
    assert_safe_twin_takes_the_same_actions(sc, actions)
