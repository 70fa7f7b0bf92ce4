"""The Dispatcher (model/dispatcher.py): a JobManagerRunner per job, results and the per-job
HA cleanup once a job is globally terminal, the application cluster's shutdown
(ApplicationDispatcherBootstrap), the invariants that judge them failing on states that break
them, and FLINK-19154 breaking what its safe twin keeps.
"""

from __future__ import annotations

from model.actions import (CancelJob, GrantJobLeadership, JobTaskFailed, JobTaskFinished, RegisterWorker,
                           RevokeJobLeadership, SubmitJob, TaskTerminated)
from model.cluster import Cluster
from model.dispatcher import GLOBALLY_TERMINAL, ApplicationDispatcherBootstrap, Dispatcher
from model.variants import small_scenario, variant
from properties.engines import Run
from scenario_util import assert_safe_twin_takes_the_same_actions
from spec.deployment import (application_shutdown_only_when_globally_terminal,
                             ha_data_cleaned_only_when_globally_terminal, terminated_job_slots_returned)


class _Run:
    """What the deployment invariants read of a run: its cluster."""

    def __init__(self, cluster):
        self.cluster = cluster


def test_each_submitted_job_gets_its_own_runner_and_its_job_graph_in_the_store():
    d = Dispatcher()
    a, b = d.submit_job(2), d.submit_job(1)
    assert (a.index, b.index) == (0, 1) and a is not b
    assert d.job_graphs == {0, 1} and a.required == 2 and b.required == 1
    a.status = "SUSPENDED"
    assert d.recoverable(a) and not d.recoverable(b)
    assert a.required == 0, "a SUSPENDED job declares nothing"
    d.shut_down_cluster()
    assert not d.recoverable(a) and d.job_graphs == set() and d.ha_cleaned


def test_the_bootstrap_shuts_down_on_a_globally_terminal_result_only():
    boot = ApplicationDispatcherBootstrap()
    assert all(boot.shuts_down_on(s) for s in GLOBALLY_TERMINAL)
    assert not any(boot.shuts_down_on(s) for s in ("RUNNING", "SUSPENDED", "FAILING", "CANCELLING"))


def test_a_session_cleans_a_jobs_ha_data_when_it_is_globally_terminal_and_keeps_the_others():
    c = Cluster.from_scenario(small_scenario(variant("session-cluster")))
    d = c.deployment
    for _ in range(3):
        c.step(SubmitJob())
    c.step(JobTaskFailed(1, 0))
    c.step(RevokeJobLeadership(0))
    assert d.dispatcher.results == {1: "FAILED"} and d.dispatcher.job_graphs == {0, 2}
    assert d.jobs[0].status == "SUSPENDED", "a lost JobMaster is no result"
    assert ha_data_cleaned_only_when_globally_terminal(_Run(c)) is None
    c.step(GrantJobLeadership(0))
    assert d.jobs[0].status == "RUNNING" and d.jobs[0].attempt == 1


def test_a_cancelled_application_shuts_the_cluster_down_once_its_tasks_ended():
    c = Cluster.from_scenario(small_scenario(variant("application-cluster")))
    d = c.deployment
    for w in sorted(d.active.pending):
        c.step(RegisterWorker(w))
    c.step(CancelJob(0))
    assert d.jobs[0].status == "CANCELLING" and not d.dispatcher.shut_down
    for w in sorted(d.workers):
        for s, ts in sorted(d.workers[w].tasks.items()):
            (job, task, attempt, _), = ts
            c.step(TaskTerminated(w, s, job, task, attempt))
    assert d.jobs[0].status == "CANCELED" and d.dispatcher.shut_down and d.dispatcher.results == {0: "CANCELED"}
    assert application_shutdown_only_when_globally_terminal(_Run(c)) is None


def test_the_invariants_fail_on_states_that_break_them():
    c = Cluster.from_scenario(small_scenario(variant("application-cluster")))
    d = c.deployment
    d.dispatcher.job_graphs.discard(0)  # (hand-made: the HA data of a running job removed)
    v = ha_data_cleaned_only_when_globally_terminal(_Run(c))
    assert v is not None and "RUNNING" in v.message
    d.dispatcher.shut_down = True
    assert application_shutdown_only_when_globally_terminal(_Run(c)) is not None

    s = Cluster.from_scenario(small_scenario(variant("session-cluster")))
    s.step(SubmitJob())
    s.step(JobTaskFinished(0, 0))
    assert s.is_drained() and terminated_job_slots_returned(_Run(s)) is None
    key = next(iter(s.deployment.slot_manager.slots))
    s.deployment.slot_manager.slots[key] = (1, 0)  # (hand-made: the SlotManager still gives the job a slot)
    v = terminated_job_slots_returned(_Run(s))
    assert v is not None and "slot_manager" in v.message


def test_variant_flink_19154_cleans_the_ha_data_of_a_suspended_application():
    sc = small_scenario(variant("FLINK-19154"))
    run = Run(sc)
    v = run.step(RevokeJobLeadership(0))
    assert v is not None and v.invariant in variant("FLINK-19154").expected
    d = run.cluster.deployment
    assert d.dispatcher.shut_down and d.jobs[0].status == "SUSPENDED" and not d.dispatcher.recoverable(d.jobs[0])
    assert_safe_twin_takes_the_same_actions(sc, [RevokeJobLeadership(0)])
