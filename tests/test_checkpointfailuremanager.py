"""The CheckpointFailureManager (model/checkpointfailuremanager.py) against Flink 2.3.0's rules,
and hand-written runs of the whole cluster in which a task's asynchronous snapshot fails.

The cluster scenarios use the small state-backend job::

    source (p=1) --hash--> [agg (keyed count) -> sink] (p=1, chained)
"""

import attrs
import pytest

from model.actions import (CheckpointTimeout, Deliver, FailAsyncSnapshot, FinishAsyncSnapshot, SourceEmit,
                           TriggerCheckpoint, parse_action)
from model.checkpointcoordinator import FAILURE_REASONS, CheckpointCoordinator
from model.checkpointfailuremanager import (COUNTED_REASONS, EXCEEDED_MESSAGE, IGNORED_REASONS,
                                            CheckpointFailureManager, FailJob)
from model.cluster import Cluster, RuntimeConfig
from model.errors import FlinkspecError, InvalidArgument
from model.variants import small_scenario, variant
from tests.scenario_util import chan, sub


# -- the manager alone ------------------------------------------------------------------------

#: Flink 2.3.0's reasons, written out (the parameters do not depend on the module under test)
FLINK_COUNTED = ("CHECKPOINT_ASYNC_EXCEPTION", "CHECKPOINT_DECLINED", "CHECKPOINT_EXPIRED",
                 "FINALIZE_CHECKPOINT_FAILURE", "IO_EXCEPTION")
FLINK_IGNORED = ("BLOCKING_OUTPUT_EXIST", "CHANNEL_STATE_SHARED_STREAM_EXCEPTION", "CHECKPOINT_COORDINATOR_SHUTDOWN",
                 "CHECKPOINT_COORDINATOR_SUSPEND", "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM",
                 "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER", "CHECKPOINT_DECLINED_SUBSUMED",
                 "CHECKPOINT_DECLINED_TASK_CLOSING", "CHECKPOINT_DECLINED_TASK_NOT_READY", "CHECKPOINT_SUBSUMED",
                 "JOB_FAILOVER_REGION", "MINIMUM_TIME_BETWEEN_CHECKPOINTS", "NOT_ALL_REQUIRED_TASKS_RUNNING",
                 "PERIODIC_SCHEDULER_SHUTDOWN", "TASK_CHECKPOINT_FAILURE", "TOO_MANY_CHECKPOINT_REQUESTS",
                 "TOO_MANY_CONCURRENT_CHECKPOINTS", "TRIGGER_CHECKPOINT_FAILURE", "TASK_FAILURE",
                 "UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE")


def test_every_coordinator_reason_is_counted_or_ignored_and_flink_counts_five():
    assert COUNTED_REASONS == set(FLINK_COUNTED) and IGNORED_REASONS == set(FLINK_IGNORED)
    assert COUNTED_REASONS | IGNORED_REASONS == FAILURE_REASONS
    assert not COUNTED_REASONS & IGNORED_REASONS
    assert COUNTED_REASONS == {"IO_EXCEPTION", "CHECKPOINT_ASYNC_EXCEPTION", "CHECKPOINT_DECLINED",
                               "CHECKPOINT_EXPIRED", "FINALIZE_CHECKPOINT_FAILURE"}


@pytest.mark.parametrize("reason", FLINK_IGNORED)
def test_an_ignored_reason_never_fails_the_job(reason):
    fm = CheckpointFailureManager(0)
    for cid in range(1, 5):
        assert fm.handle_checkpoint_exception(cid, reason, 0) is None
    assert fm.counter == 0


@pytest.mark.parametrize("reason", FLINK_COUNTED)
def test_with_tolerable_zero_the_first_counted_failure_fails_the_job(reason):
    fm = CheckpointFailureManager(0)
    d = fm.handle_checkpoint_exception(1, reason, 3)
    pre_flight = reason == "IO_EXCEPTION"  # the JobManager's own failure: failJob, no task
    assert d == FailJob(1, reason, None if pre_flight else 3, EXCEEDED_MESSAGE)
    assert fm.counter == 0 and not fm.counted  # cleared when exceeded


def test_tolerable_n_fails_on_the_n_plus_first_consecutive_checkpoint_each_counted_once():
    fm = CheckpointFailureManager(2)
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_ASYNC_EXCEPTION", 0) is None
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_ASYNC_EXCEPTION", 1) is None  # same id: once
    assert fm.handle_checkpoint_exception(2, "CHECKPOINT_EXPIRED", None) is None
    assert fm.counter == 2
    d = fm.handle_checkpoint_exception(3, "CHECKPOINT_DECLINED", 1)
    assert d is not None and d.subtask == 1 and d.cause == EXCEEDED_MESSAGE


def test_a_completed_checkpoint_resets_the_count_and_older_failures_are_not_counted():
    fm = CheckpointFailureManager(1)
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_EXPIRED", None) is None
    fm.handle_checkpoint_success(3)
    assert fm.counter == 0
    assert fm.handle_checkpoint_exception(2, "CHECKPOINT_EXPIRED", None) is None  # 2 <= 3: not counted
    assert fm.handle_checkpoint_exception(3, "CHECKPOINT_EXPIRED", None) is None
    assert fm.counter == 0
    assert fm.handle_checkpoint_exception(4, "CHECKPOINT_EXPIRED", None) is None
    assert fm.handle_checkpoint_exception(5, "CHECKPOINT_EXPIRED", None) is not None
    fm.handle_checkpoint_success(2)  # not newer than the last success: no reset, no change
    assert fm.last_succeeded == 3


def test_savepoints_a_job_level_failure_is_ignored_a_task_decline_of_a_synchronous_one_always_fails():
    fm = CheckpointFailureManager(None)  # unlimited: nothing is counted
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_EXPIRED", None, savepoint=True, synchronous=True) is None
    assert fm.handle_checkpoint_exception(2, "CHECKPOINT_ASYNC_EXCEPTION", 0, savepoint=True) is None
    d = fm.handle_checkpoint_exception(3, "CHECKPOINT_DECLINED_SUBSUMED", 0, savepoint=True, synchronous=True)
    assert d is not None and d.subtask is None  # failJob, whatever the reason
    assert CheckpointFailureManager(0).handle_checkpoint_exception(
        4, "CHECKPOINT_ASYNC_EXCEPTION", 0, savepoint=True) is not None  # a plain savepoint counts


def test_bad_tolerable_numbers_and_unknown_reasons_are_clear_errors():
    for bad in (-1, 1.5, "0"):
        with pytest.raises(InvalidArgument, match="tolerable failed checkpoints"):
            CheckpointFailureManager(bad)
        with pytest.raises(FlinkspecError, match="tolerable_failed_checkpoints"):
            RuntimeConfig(tolerable_failed_checkpoints=bad)
    with pytest.raises(InvalidArgument, match="Unknown checkpoint failure reason : NOPE"):
        CheckpointFailureManager(0).handle_checkpoint_exception(1, "NOPE", 0)


def test_the_coordinator_reports_aborts_and_completions_to_its_manager():
    co = CheckpointCoordinator([0], [0, 1], failure_manager=CheckpointFailureManager(1))
    co.trigger_checkpoint(0, "checkpoint")
    assert not [e for e in co.receive_decline(1, 1, "CHECKPOINT_ASYNC_EXCEPTION") if isinstance(e, FailJob)]
    co.trigger_checkpoint(1, "checkpoint")
    co.receive_acknowledge(2, 0, "s0")
    co.receive_acknowledge(2, 1, "s1")  # completes 2: the count is reset
    co.trigger_checkpoint(2, "checkpoint")
    assert not [e for e in co.receive_decline(3, 0, "CHECKPOINT_EXPIRED") if isinstance(e, FailJob)]
    co.trigger_checkpoint(3, "checkpoint")
    effects = co.receive_decline(4, 0, "CHECKPOINT_ASYNC_EXCEPTION")
    assert effects[-1] == FailJob(4, "CHECKPOINT_ASYNC_EXCEPTION", 0, EXCEEDED_MESSAGE)
    assert "failure_manager" not in vars(CheckpointCoordinator([0], [0]))  # none: no field


# -- whole runs ---------------------------------------------------------------------------------

def _sc(**cfg):
    v = variant("rocksdb-incremental")
    sc = small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, records=2)))
    return sc.with_settings(**({"max_checkpoints": None, "max_failures": 3} | cfg))


def _to_async_phases(c):
    """Checkpoint n+1 triggered; its barrier taken by every task (both wait for their
    asynchronous phase)."""
    eg = c.eg
    src, agg = sub(eg, "source", 0), sub(eg, "agg", 0)
    ch = chan(eg, ("source", 0), ("agg", 0))
    cid = c.coordinator.next_checkpoint_id
    for a in (TriggerCheckpoint(), Deliver(ch)):
        c.step(a)
    assert FinishAsyncSnapshot(agg, cid) in c.enabled_actions()
    return src, agg, cid


def test_the_fault_action_reads_back_and_needs_a_state_backend_and_the_failure_budget():
    a = FailAsyncSnapshot(subtask=1, checkpoint_id=2)
    assert parse_action(repr(a)) == a
    c = Cluster.from_scenario(_sc(max_failures=0))
    _, agg, cid = _to_async_phases(c)
    assert "failure budget" in c.why_not_enabled(FailAsyncSnapshot(agg, cid))
    plain = variant("aligned-2pc")
    c = Cluster.from_scenario(small_scenario(plain))
    assert not [x for x in c.candidate_actions() if isinstance(x, FailAsyncSnapshot)]


def test_a_failed_asynchronous_phase_is_tolerated_without_a_manager():
    """tolerable None (the model's default): agg declines checkpoint 1, which is aborted; no
    failover; checkpoint 2 completes."""
    c = Cluster.from_scenario(_sc())
    src, agg, cid = _to_async_phases(c)
    c.step(FailAsyncSnapshot(agg, cid))
    assert ("aborted", c.now - 1, cid, "CHECKPOINT_ASYNC_EXCEPTION", agg) in c.events
    assert not [e for e in c.events if e[0] == "failover"] and c.job.attempt == 0
    assert cid not in c.tasks[agg].backend.pending
    _, _, cid2 = _to_async_phases(c)
    c.step(FinishAsyncSnapshot(src, cid2))
    c.step(FinishAsyncSnapshot(agg, cid2))
    assert c.completed_ids == [cid2]


def test_with_flinks_default_one_declined_checkpoint_fails_the_whole_job_over():
    """tolerable 0 (Flink's default): the decline aborts checkpoint 1 and every task restarts
    (a global failover, not agg's region), from no checkpoint."""
    c = Cluster.from_scenario(_sc(tolerable_failed_checkpoints=0))
    src, agg, cid = _to_async_phases(c)
    c.step(FailAsyncSnapshot(agg, cid))
    kinds = [e[0] for e in c.events if e[0] in ("aborted", "checkpoint_failures_exceeded", "failover", "restored")]
    assert kinds == ["aborted", "checkpoint_failures_exceeded", "failover", "restored"]
    failover = next(e for e in c.events if e[0] == "failover")
    assert failover[2] == () and failover[4] == tuple(range(len(c.tasks)))
    assert c.job.attempt == 1 and c.restarts == 1 and c.job.failures == 1
    assert c.job_failure is None


def test_tolerable_one_fails_over_on_the_second_consecutive_failure_and_a_completion_resets():
    c = Cluster.from_scenario(_sc(tolerable_failed_checkpoints=1))
    src, agg, cid = _to_async_phases(c)
    c.step(FailAsyncSnapshot(agg, cid))
    assert c.job.attempt == 0
    _, _, cid = _to_async_phases(c)  # completes: the count starts again
    c.step(FinishAsyncSnapshot(src, cid))
    c.step(FinishAsyncSnapshot(agg, cid))
    assert c.completed_ids == [cid]
    _, _, cid = _to_async_phases(c)
    c.step(FailAsyncSnapshot(src, cid))
    assert c.job.attempt == 0
    _, _, cid = _to_async_phases(c)
    c.step(CheckpointTimeout(cid))  # an expiry counts too: the second in a row
    assert c.job.attempt == 1
    assert ("restored", c.now - 1, 2, tuple(range(len(c.tasks)))) in c.events
