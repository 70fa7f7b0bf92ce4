"""The CheckpointFailureManager (model/checkpointfailuremanager.py) call by call: after each
call its whole state -- ``continuousFailureCounter`` (``counter``), ``countedCheckpointIds``
(``counted``), ``lastSucceededCheckpointId`` (``last_succeeded``) and the threshold -- and the
decision it returned, as Flink's ``CheckpointFailureManager`` leaves them."""

import pytest

from model.checkpointfailuremanager import (COUNTED_REASONS, EXCEEDED_MESSAGE, IGNORED_REASONS,
                                            PRE_FLIGHT_REASONS, CheckpointFailureManager, FailJob)
from model.errors import InvalidArgument


#: ``CheckpointFailureReason.isPreFlight()`` (literal, so that the parameters do not depend on the
#: module under test)
FLINK_PRE_FLIGHT = ("BLOCKING_OUTPUT_EXIST", "IO_EXCEPTION", "MINIMUM_TIME_BETWEEN_CHECKPOINTS",
                    "NOT_ALL_REQUIRED_TASKS_RUNNING", "PERIODIC_SCHEDULER_SHUTDOWN", "TOO_MANY_CHECKPOINT_REQUESTS",
                    "TOO_MANY_CONCURRENT_CHECKPOINTS")


def state(fm):
    return fm.tolerable, fm.counter, fm.counted, fm.last_succeeded


def test_the_reason_tables_are_flinks():
    assert PRE_FLIGHT_REASONS == set(FLINK_PRE_FLIGHT)
    assert COUNTED_REASONS == {"IO_EXCEPTION", "CHECKPOINT_ASYNC_EXCEPTION", "CHECKPOINT_DECLINED",
                               "CHECKPOINT_EXPIRED", "FINALIZE_CHECKPOINT_FAILURE"}
    assert IGNORED_REASONS == {
        "PERIODIC_SCHEDULER_SHUTDOWN", "TOO_MANY_CHECKPOINT_REQUESTS", "TOO_MANY_CONCURRENT_CHECKPOINTS",
        "MINIMUM_TIME_BETWEEN_CHECKPOINTS", "NOT_ALL_REQUIRED_TASKS_RUNNING", "CHECKPOINT_SUBSUMED",
        "CHECKPOINT_COORDINATOR_SUSPEND", "CHECKPOINT_COORDINATOR_SHUTDOWN", "CHANNEL_STATE_SHARED_STREAM_EXCEPTION",
        "JOB_FAILOVER_REGION", "CHECKPOINT_DECLINED_TASK_NOT_READY", "CHECKPOINT_DECLINED_TASK_CLOSING",
        "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER", "CHECKPOINT_DECLINED_SUBSUMED",
        "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM", "TASK_FAILURE", "TASK_CHECKPOINT_FAILURE",
        "UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE", "TRIGGER_CHECKPOINT_FAILURE", "BLOCKING_OUTPUT_EXIST"}
    assert EXCEEDED_MESSAGE == "Exceeded checkpoint tolerable failure threshold."


def test_a_new_manager_has_counted_nothing_and_no_checkpoint_succeeded():
    for tolerable in (None, 0, 3):
        fm = CheckpointFailureManager(tolerable)
        assert state(fm) == (tolerable, 0, frozenset(), None)
        assert type(fm.counted) is frozenset
        assert repr(fm) == f"CheckpointFailureManager(tolerable={tolerable}, counter=0, last_succeeded=None)"
    assert CheckpointFailureManager.__slots__ == ("tolerable", "counter", "counted", "last_succeeded")
    for bad in (-1, True, 2.0, "1"):
        with pytest.raises(InvalidArgument, match="tolerable failed checkpoints"):
            CheckpointFailureManager(bad)


def test_each_counted_failure_call_by_call_until_the_threshold_is_exceeded():
    fm = CheckpointFailureManager(2)
    # a task's decline (task level): failJobDueToTaskFailure when exceeded
    assert fm.handle_checkpoint_exception(5, "CHECKPOINT_DECLINED", 1) is None
    assert state(fm) == (2, 1, frozenset({5}), None)
    # the same checkpoint id again, another task: counted once
    assert fm.handle_checkpoint_exception(5, "CHECKPOINT_ASYNC_EXCEPTION", 0) is None
    assert state(fm) == (2, 1, frozenset({5}), None)
    # an ignored reason: nothing changes
    assert fm.handle_checkpoint_exception(6, "CHECKPOINT_DECLINED_TASK_NOT_READY", 0) is None
    assert state(fm) == (2, 1, frozenset({5}), None)
    # the JobManager's own failure (no task): counted too
    assert fm.handle_checkpoint_exception(6, "CHECKPOINT_EXPIRED", None) is None
    assert state(fm) == (2, 2, frozenset({5, 6}), None)
    # the third: 3 > 2, the count cleared and the job failed over, with the declining task
    assert fm.handle_checkpoint_exception(7, "CHECKPOINT_ASYNC_EXCEPTION", 4) == \
        FailJob(7, "CHECKPOINT_ASYNC_EXCEPTION", 4, EXCEEDED_MESSAGE)
    assert state(fm) == (2, 0, frozenset(), None)
    # counting starts again from zero
    assert fm.handle_checkpoint_exception(8, "CHECKPOINT_DECLINED", 2) is None
    assert state(fm) == (2, 1, frozenset({8}), None)


def test_at_the_threshold_exactly_the_job_runs_on():
    fm = CheckpointFailureManager(1)
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_EXPIRED", None) is None
    assert state(fm) == (1, 1, frozenset({1}), None)
    d = fm.handle_checkpoint_exception(2, "CHECKPOINT_EXPIRED", None)
    assert d == FailJob(2, "CHECKPOINT_EXPIRED", None, EXCEEDED_MESSAGE)
    assert state(fm) == (1, 0, frozenset(), None)


def test_an_unknown_checkpoint_id_is_counted_every_time_and_never_remembered():
    fm = CheckpointFailureManager(2)
    assert fm.handle_checkpoint_exception(None, "IO_EXCEPTION", None) is None
    assert state(fm) == (2, 1, frozenset(), None)
    assert fm.handle_checkpoint_exception(None, "IO_EXCEPTION", None) is None
    assert state(fm) == (2, 2, frozenset(), None)
    fm.handle_checkpoint_success(4)
    assert state(fm) == (2, 0, frozenset(), 4)
    # unknown ids are counted even after a success (not compared with it)
    for n in (1, 2):
        assert fm.handle_checkpoint_exception(None, "IO_EXCEPTION", 3) is None
        assert state(fm) == (2, n, frozenset(), 4)
    # IO_EXCEPTION is pre-flight: the JobManager's failure (failJob, no task) although a task was named
    assert fm.handle_checkpoint_exception(None, "IO_EXCEPTION", 3) == FailJob(None, "IO_EXCEPTION", None,
                                                                               EXCEEDED_MESSAGE)
    assert state(fm) == (2, 0, frozenset(), 4)


def test_a_success_call_by_call():
    fm = CheckpointFailureManager(5)
    fm.handle_checkpoint_exception(1, "CHECKPOINT_DECLINED", 0)
    fm.handle_checkpoint_exception(2, "CHECKPOINT_DECLINED", 0)
    assert state(fm) == (5, 2, frozenset({1, 2}), None)
    fm.handle_checkpoint_success(0)  # the first success, whatever its id
    assert state(fm) == (5, 0, frozenset(), 0)
    fm.handle_checkpoint_exception(3, "CHECKPOINT_DECLINED", 0)
    assert state(fm) == (5, 1, frozenset({3}), 0)
    fm.handle_checkpoint_success(0)  # not newer: nothing cleared
    assert state(fm) == (5, 1, frozenset({3}), 0)
    fm.handle_checkpoint_success(1)
    assert state(fm) == (5, 0, frozenset(), 1)
    # failures of checkpoints up to the newest success are not counted
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_DECLINED", 0) is None
    assert fm.handle_checkpoint_exception(0, "CHECKPOINT_EXPIRED", None) is None
    assert state(fm) == (5, 0, frozenset(), 1)
    assert fm.handle_checkpoint_exception(2, "CHECKPOINT_DECLINED", 0) is None
    assert state(fm) == (5, 1, frozenset({2}), 1)
    fm.handle_checkpoint_success(9)
    assert state(fm) == (5, 0, frozenset(), 9)
    assert repr(fm) == "CheckpointFailureManager(tolerable=5, counter=0, last_succeeded=9)"


def test_a_failure_older_than_the_last_success_is_not_counted_even_past_the_threshold():
    fm = CheckpointFailureManager(0)
    fm.handle_checkpoint_success(3)
    for cid in (1, 2, 3):
        assert fm.handle_checkpoint_exception(cid, "CHECKPOINT_DECLINED", 0) is None
        assert fm.handle_checkpoint_exception(cid, "CHECKPOINT_EXPIRED", None) is None
        assert state(fm) == (0, 0, frozenset(), 3)
    assert fm.handle_checkpoint_exception(4, "CHECKPOINT_DECLINED", 0) == \
        FailJob(4, "CHECKPOINT_DECLINED", 0, EXCEEDED_MESSAGE)
    assert state(fm) == (0, 0, frozenset(), 3)


def test_reset_forgets_the_count_and_the_last_success():
    fm = CheckpointFailureManager(3)
    fm.handle_checkpoint_success(2)
    fm.handle_checkpoint_exception(3, "CHECKPOINT_DECLINED", 0)
    assert state(fm) == (3, 1, frozenset({3}), 2)
    fm.reset()
    assert state(fm) == (3, 0, frozenset(), None)
    # a failure of checkpoint 1 counts again: no success known
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_DECLINED", 0) is None
    assert state(fm) == (3, 1, frozenset({1}), None)


def test_unlimited_counts_nothing_and_never_fails_over():
    fm = CheckpointFailureManager(None)
    for cid in range(1, 6):
        for reason in ("IO_EXCEPTION", "CHECKPOINT_ASYNC_EXCEPTION", "CHECKPOINT_DECLINED", "CHECKPOINT_EXPIRED",
                       "FINALIZE_CHECKPOINT_FAILURE"):
            assert fm.handle_checkpoint_exception(cid, reason, 0) is None
            assert fm.handle_checkpoint_exception(cid, reason, None) is None
        assert state(fm) == (None, 0, frozenset(), None)
    # an unknown reason is not even looked at when nothing is counted
    assert fm.handle_checkpoint_exception(9, "NOPE", 0) is None
    with pytest.raises(InvalidArgument, match="Unknown checkpoint failure reason : NOPE"):
        CheckpointFailureManager(4).handle_checkpoint_exception(9, "NOPE", 0)


@pytest.mark.parametrize("reason", FLINK_PRE_FLIGHT)
def test_a_pre_flight_failure_is_the_job_managers_even_with_a_task(reason):
    fm = CheckpointFailureManager(0)
    d = fm.handle_checkpoint_exception(1, reason, 2)
    if reason == "IO_EXCEPTION":  # the one pre-flight reason that counts
        assert d == FailJob(1, reason, None, EXCEEDED_MESSAGE)
    else:
        assert d is None
    assert state(fm) == (0, 0, frozenset(), None)
    # a savepoint's pre-flight failure is a manual action's: ignored even when synchronous
    fm = CheckpointFailureManager(0)
    assert fm.handle_checkpoint_exception(1, reason, 2, savepoint=True, synchronous=True) is None
    assert state(fm) == (0, 0, frozenset(), None)


def test_savepoints_call_by_call():
    fm = CheckpointFailureManager(1)
    # job level (no task): a savepoint's failure is ignored, synchronous or not
    assert fm.handle_checkpoint_exception(1, "CHECKPOINT_EXPIRED", None, savepoint=True) is None
    assert fm.handle_checkpoint_exception(2, "CHECKPOINT_EXPIRED", None, savepoint=True, synchronous=True) is None
    assert state(fm) == (1, 0, frozenset(), None)
    # a task's decline of a plain savepoint goes against the counter
    assert fm.handle_checkpoint_exception(3, "CHECKPOINT_DECLINED", 1, savepoint=True) is None
    assert state(fm) == (1, 1, frozenset({3}), None)
    # a synchronous flag without a savepoint is a checkpoint's: counted
    assert fm.handle_checkpoint_exception(4, "CHECKPOINT_DECLINED", 1, synchronous=True) == \
        FailJob(4, "CHECKPOINT_DECLINED", 1, EXCEEDED_MESSAGE)
    assert state(fm) == (1, 0, frozenset(), None)
    # a task's decline of a synchronous savepoint always fails the job (failJob), nothing counted
    for reason in ("CHECKPOINT_DECLINED", "CHECKPOINT_DECLINED_TASK_CLOSING"):
        d = fm.handle_checkpoint_exception(5, reason, 2, savepoint=True, synchronous=True)
        assert d == FailJob(5, reason, None, "a task declined a synchronous savepoint")
        assert state(fm) == (1, 0, frozenset(), None)


def test_fail_job_fields():
    d = FailJob(3, "CHECKPOINT_DECLINED", 1, "x")
    assert (d.checkpoint_id, d.reason, d.subtask, d.cause) == (3, "CHECKPOINT_DECLINED", 1, "x")
    assert d == FailJob(3, "CHECKPOINT_DECLINED", 1, "x") and d != FailJob(3, "CHECKPOINT_DECLINED", None, "x")
