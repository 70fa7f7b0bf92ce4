"""``model.dispatcher`` call by call: every field of the Dispatcher and of its JobManagerRunners
compared as a whole right after each call (Flink's ``Dispatcher.submitJob``, the per-job HA
cleanup once a job is globally terminal, ``ApplicationDispatcherBootstrap``)."""

from __future__ import annotations

import pytest

from model import dispatcher
from model.dispatcher import GLOBALLY_TERMINAL, ApplicationDispatcherBootstrap, Dispatcher, JobManagerRunner


def _runner(r: JobManagerRunner) -> tuple:
    """The runner's fields (anything else as it is: the comparison then fails on it)."""
    if not isinstance(r, JobManagerRunner):
        return r
    return (r.index, r.status, r.attempt, r.tasks, r.pool, r.task_slot)


def _dispatcher(d: Dispatcher) -> tuple:
    jobs = [_runner(r) for r in d.jobs] if isinstance(d.jobs, list) else d.jobs
    return (jobs, d.job_graphs, d.results, d.shut_down, d.ha_cleaned)


def test_the_globally_terminal_states():
    assert GLOBALLY_TERMINAL == ("FINISHED", "FAILED", "CANCELED")


def test_a_new_runner():
    r = JobManagerRunner(3, 2)
    assert _runner(r) == (3, "RUNNING", 0, ["CREATED", "CREATED"], {}, {})
    assert type(r.pool) is dict and type(r.task_slot) is dict and type(r.attempt) is int
    assert r.required == 2 and not r.globally_terminal and r.free_allocations() == []
    assert _runner(JobManagerRunner(0, 0)) == (0, "RUNNING", 0, [], {}, {})
    # each runner's tables are its own
    a, b = JobManagerRunner(0, 1), JobManagerRunner(1, 1)
    assert a.tasks is not b.tasks and a.pool is not b.pool and a.task_slot is not b.task_slot


def test_free_allocations_are_the_pools_unused_ones_in_order():
    r = JobManagerRunner(0, 3)
    r.pool = {"a3": ("w0", 0), "a1": ("w0", 1), "a2": ("w1", 0), "a0": ("w1", 1)}
    assert r.free_allocations() == ["a0", "a1", "a2", "a3"]
    r.task_slot = {0: "a2", 1: "a0"}
    assert r.free_allocations() == ["a1", "a3"]
    r.task_slot = {0: "a2", 1: "a0", 2: "a3"}
    assert r.free_allocations() == ["a1"]
    r.task_slot = {0: "a1", 1: "a2", 2: "a0", 3: "a3"}
    assert r.free_allocations() == []
    assert _runner(r)[4] == {"a3": ("w0", 0), "a1": ("w0", 1), "a2": ("w1", 0), "a0": ("w1", 1)}


@pytest.mark.parametrize("status", ["RUNNING", "FAILING", "CANCELLING", "SUSPENDED", "FINISHED", "FAILED", "CANCELED"])
def test_the_bootstrap_shuts_down_on_a_globally_terminal_status_only(status):
    assert ApplicationDispatcherBootstrap().shuts_down_on(status) is (status in ("FINISHED", "FAILED", "CANCELED"))
    assert Dispatcher().bootstrap.shuts_down_on(status) is (status in ("FINISHED", "FAILED", "CANCELED"))


def test_one_bootstrap_for_every_dispatcher():
    assert type(dispatcher._BOOTSTRAP) is ApplicationDispatcherBootstrap
    assert Dispatcher().bootstrap is Dispatcher().bootstrap is dispatcher._BOOTSTRAP


def test_a_new_dispatcher():
    d = Dispatcher()
    assert _dispatcher(d) == ([], set(), {}, False, False)
    assert d.shut_down is False and d.ha_cleaned is False
    assert type(d.job_graphs) is set and type(d.results) is dict
    e = Dispatcher()
    assert d.jobs is not e.jobs and d.job_graphs is not e.job_graphs and d.results is not e.results


def test_submit_job_persists_the_job_graph_and_starts_a_runner():
    d = Dispatcher()
    r0 = d.submit_job(2)
    assert _dispatcher(d) == ([(0, "RUNNING", 0, ["CREATED", "CREATED"], {}, {})], {0}, {}, False, False)
    assert d.jobs[0] is r0
    r1 = d.submit_job(1)
    assert _dispatcher(d) == ([(0, "RUNNING", 0, ["CREATED", "CREATED"], {}, {}),
                               (1, "RUNNING", 0, ["CREATED"], {}, {})], {0, 1}, {}, False, False)
    assert d.jobs == [r0, r1]


def test_a_globally_terminal_job_gets_its_result_and_loses_its_ha_data():
    d = Dispatcher()
    r0, r1, r2 = d.submit_job(1), d.submit_job(1), d.submit_job(1)
    r1.status = "FAILED"
    d.job_reached_globally_terminal_state(r1)
    assert _dispatcher(d)[1:] == ({0, 2}, {1: "FAILED"}, False, False)
    r0.status = "FINISHED"
    d.job_reached_globally_terminal_state(r0)
    assert _dispatcher(d)[1:] == ({2}, {1: "FAILED", 0: "FINISHED"}, False, False)
    # a second report of a job whose HA data is gone changes nothing else
    d.job_reached_globally_terminal_state(r0)
    assert _dispatcher(d)[1:] == ({2}, {1: "FAILED", 0: "FINISHED"}, False, False)
    assert [x.status for x in d.jobs] == ["FINISHED", "FAILED", "RUNNING"]


def test_only_a_suspended_job_with_its_job_graph_in_a_running_cluster_is_recoverable():
    d = Dispatcher()
    r0, r1 = d.submit_job(1), d.submit_job(1)
    for status in ("RUNNING", "FAILING", "CANCELLING", "FINISHED", "FAILED", "CANCELED"):
        r0.status = status
        assert d.recoverable(r0) is False, status
    r0.status = "SUSPENDED"
    assert d.recoverable(r0) is True
    r1.status = "SUSPENDED"
    d.job_graphs.discard(1)
    assert d.recoverable(r1) is False and d.recoverable(r0) is True
    d.shut_down = True
    assert d.recoverable(r0) is False


def test_shut_down_cluster_removes_every_jobs_ha_data():
    d = Dispatcher()
    d.submit_job(1)
    d.submit_job(2)
    d.jobs[0].status = "FINISHED"
    d.job_reached_globally_terminal_state(d.jobs[0])
    d.shut_down_cluster()
    assert _dispatcher(d)[1:] == (set(), {0: "FINISHED"}, True, True)
    assert d.shut_down is True and d.ha_cleaned is True
    assert [x.status for x in d.jobs] == ["FINISHED", "RUNNING"]
