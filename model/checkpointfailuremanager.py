"""CheckpointFailureManager: how many failed checkpoints a job tolerates before it fails over.

Invariant upheld: the manager fails the job over exactly when more than ``tolerable``
consecutive checkpoints (``execution.checkpointing.tolerable-failed-checkpoints``) failed for a
reason that counts, "consecutive" meaning: since the newest completed checkpoint, and each
checkpoint id counted once. A failure of a checkpoint not newer than the newest completed one
is not counted; a completed checkpoint newer than every completed one resets the count; so does
the failover the manager asks for.

Follows (apache/flink, ``flink-runtime/.../checkpoint/CheckpointFailureManager``, as compiled
into Flink 2.3.0's ``flink-dist``):

* ``handleCheckpointException``: a failure is the JobManager's (``isJobManagerFailure``: the
  reason ``isPreFlight`` -- a trigger-time failure -- or no task attempt reported it: an expiry,
  a failed finalization) or a task's (a ``DeclineCheckpoint``).
  ``handleJobLevelCheckpointException``: a savepoint's failure is ignored (a manual action: a
  failover would not help); a checkpoint's goes against the counter, and when the count is
  exceeded ``failJob`` -- ``DefaultExecutionGraph.failGlobal``, a *global* failover: every task
  restarts, and the restart strategy counts it.
  ``handleTaskLevelCheckpointException``: a *synchronous* savepoint's (stop-with-savepoint)
  decline always fails the job (otherwise the job's cancellation waits for a savepoint that
  never finishes); any other goes against the counter, and when the count is exceeded
  ``failJobDueToTaskFailure`` -- ``failGlobalIfExecutionIsStillRunning``: the same global
  failover, provided the declining attempt still runs.
* ``checkFailureAgainstCounter``: only for an unknown id or an id greater than
  ``lastSucceededCheckpointId``; ``continuousFailureCounter > tolerableCpFailureNumber`` clears
  the count and fails the job.
* ``checkFailureCounter``: nothing with ``UNLIMITED_TOLERABLE_FAILURE_NUMBER``; the reasons of
  :data:`COUNTED_REASONS` count, once per checkpoint id (``countedCheckpointIds``); every other
  reason is ignored (:data:`IGNORED_REASONS`, Flink 2.3.0's switch; among them the declines of a
  task that is not ready, closing, subsumed or cancelled by a barrier, and ``TASK_FAILURE``,
  ``JOB_FAILOVER_REGION``, ``CHECKPOINT_SUBSUMED``).
* ``handleCheckpointSuccess``: a completed checkpoint (a savepoint too:
  ``CheckpointCoordinator.reportCompletedCheckpoint``) newer than ``lastSucceededCheckpointId``
  becomes it and clears the count.

Where a task's snapshot fails decides the reason (``flink-streaming-java``): in the
**asynchronous** phase ``AsyncCheckpointRunnable.handleExecutionException`` declines the
checkpoint with ``CHECKPOINT_ASYNC_EXCEPTION`` (or the reason of a ``CheckpointException`` it
carries) and the task runs on -- the model's ``FailAsyncSnapshot`` action; in the
**synchronous** phase ``SubtaskCheckpointCoordinatorImpl.checkpointState`` rethrows and
``StreamTask.triggerCheckpointOnBarrier`` wraps it ("Could not perform checkpoint N for
operator ..."): the task fails, a task failure like any other (the model's ``FailTask``, a region
failover), never counted by this manager.

Left out: the statistics (``PendingCheckpointStats``, ``CheckpointStatsTracker``); the JobMaster's
main-thread executor (the model applies the failover at the end of the step that exceeded the
count, as that executor runs it after the current message); trigger failures with an unknown
checkpoint id (``IO_EXCEPTION`` while initialising a location: the model has no checkpoint
storage locations); with the control plane, a completion the HA store refuses after the
coordinator completed it (``Cluster._persist_completed``) is not reported to the manager.
``tolerable=None`` is ``UNLIMITED_TOLERABLE_FAILURE_NUMBER`` (nothing is counted), which is also
the model's default: see ``RuntimeConfig.tolerable_failed_checkpoints``. A new JobMaster (a
JobManager failover, a resubmitted job) has a new manager (Flink builds one per ExecutionGraph).

Known-unsafe (a seam, its expected verdict ``checkpoint_failures_tolerated``): ``FLINK-20675``,
Flink's mechanism from FLINK-12364 (1.9) until FLINK-20675 was fixed: ``CHECKPOINT_ASYNC_EXCEPTION``
was among the ignored reasons, so however many checkpoints in a row the tasks' asynchronous
snapshots failed, the job never failed over, and a job whose state could not be written ran on
without a checkpoint.
"""

from __future__ import annotations

import attrs

from model import seams
from model.errors import InvalidArgument

#: ``CheckpointFailureReason``s that go against the counter (Flink 2.3.0's switch in
#: ``checkFailureCounter``).
COUNTED_REASONS = frozenset({
    "IO_EXCEPTION",
    "CHECKPOINT_ASYNC_EXCEPTION",
    "CHECKPOINT_DECLINED",
    "CHECKPOINT_EXPIRED",
    "FINALIZE_CHECKPOINT_FAILURE",
})

#: ``CheckpointFailureReason``s the counter ignores (Flink 2.3.0), plus the model's older name
#: ``TOO_MANY_CONCURRENT_CHECKPOINTS`` (ignored too while Flink had it).
IGNORED_REASONS = frozenset({
    "PERIODIC_SCHEDULER_SHUTDOWN",
    "TOO_MANY_CHECKPOINT_REQUESTS",
    "TOO_MANY_CONCURRENT_CHECKPOINTS",
    "MINIMUM_TIME_BETWEEN_CHECKPOINTS",
    "NOT_ALL_REQUIRED_TASKS_RUNNING",
    "CHECKPOINT_SUBSUMED",
    "CHECKPOINT_COORDINATOR_SUSPEND",
    "CHECKPOINT_COORDINATOR_SHUTDOWN",
    "CHANNEL_STATE_SHARED_STREAM_EXCEPTION",
    "JOB_FAILOVER_REGION",
    "CHECKPOINT_DECLINED_TASK_NOT_READY",
    "CHECKPOINT_DECLINED_TASK_CLOSING",
    "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER",
    "CHECKPOINT_DECLINED_SUBSUMED",
    "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM",
    "TASK_FAILURE",
    "TASK_CHECKPOINT_FAILURE",
    "UNKNOWN_TASK_CHECKPOINT_NOTIFICATION_FAILURE",
    "TRIGGER_CHECKPOINT_FAILURE",
    "BLOCKING_OUTPUT_EXIST",
})

#: ``CheckpointFailureReason.isPreFlight()``: failures before the checkpoint started (at trigger).
PRE_FLIGHT_REASONS = frozenset({
    "PERIODIC_SCHEDULER_SHUTDOWN",
    "TOO_MANY_CHECKPOINT_REQUESTS",
    "TOO_MANY_CONCURRENT_CHECKPOINTS",
    "MINIMUM_TIME_BETWEEN_CHECKPOINTS",
    "NOT_ALL_REQUIRED_TASKS_RUNNING",
    "IO_EXCEPTION",
    "BLOCKING_OUTPUT_EXIST",
})

#: ``CheckpointFailureManager.EXCEEDED_CHECKPOINT_TOLERABLE_FAILURE_MESSAGE``.
EXCEEDED_MESSAGE = "Exceeded checkpoint tolerable failure threshold."


@attrs.frozen(slots=True)
class FailJob:
    """The manager's decision (``FailJobCallback``): fail the job over globally. ``subtask`` is
    the declining task (``failJobDueToTaskFailure``: only if that attempt still runs), or None
    (``failJob``); ``cause`` is the exceeded threshold or the failed synchronous savepoint."""

    checkpoint_id: int
    reason: str
    subtask: int | None
    cause: str


class CheckpointFailureManager:
    """``CheckpointFailureManager`` of one CheckpointCoordinator (see the module docstring)."""

    __slots__ = ("tolerable", "counter", "counted", "last_succeeded")

    def __init__(self, tolerable: int | None):
        if tolerable is not None and (type(tolerable) is not int or tolerable < 0):
            raise InvalidArgument(f"tolerable failed checkpoints {tolerable!r}: must be None (unlimited) or an int "
                                  ">= 0 (CheckpointFailureManager: 'it must be greater than or equal to 0')")
        self.tolerable = tolerable
        #: ``continuousFailureCounter``
        self.counter = 0
        #: ``countedCheckpointIds``
        self.counted: frozenset = frozenset()
        #: ``lastSucceededCheckpointId`` (Long.MIN_VALUE: none yet)
        self.last_succeeded: int | None = None

    def __repr__(self) -> str:
        return (f"CheckpointFailureManager(tolerable={self.tolerable}, counter={self.counter}, "
                f"last_succeeded={self.last_succeeded})")

    def handle_checkpoint_exception(self, checkpoint_id: int | None, reason: str, subtask: int | None, *,
                                    savepoint: bool = False, synchronous: bool = False) -> FailJob | None:
        """``handleCheckpointException`` for checkpoint ``checkpoint_id`` (None: unknown) failed
        with ``reason``; ``subtask`` is the declining task (None: the JobManager's failure)."""
        if reason in PRE_FLIGHT_REASONS or subtask is None:
            if savepoint:
                return None  # handleJobLevelCheckpointException: a savepoint is a manual action
            return self._against_counter(checkpoint_id, reason, None)
        if savepoint and synchronous:
            return FailJob(checkpoint_id, reason, None, "a task declined a synchronous savepoint")
        return self._against_counter(checkpoint_id, reason, subtask)

    def _against_counter(self, checkpoint_id, reason, subtask) -> FailJob | None:
        """``checkFailureAgainstCounter``."""
        if checkpoint_id is not None and self.last_succeeded is not None and checkpoint_id <= self.last_succeeded:
            return None
        self._check_failure_counter(checkpoint_id, reason)
        if self.tolerable is not None and self.counter > self.tolerable:
            self._clear()
            return FailJob(checkpoint_id, reason, subtask, EXCEEDED_MESSAGE)
        return None

    def _check_failure_counter(self, checkpoint_id, reason) -> None:
        """``checkFailureCounter``."""
        if self.tolerable is None:
            return
        if reason not in COUNTED_REASONS:
            if reason not in IGNORED_REASONS:
                raise InvalidArgument(f"Unknown checkpoint failure reason : {reason}")
            return
        if checkpoint_id is None or checkpoint_id not in self.counted:
            if checkpoint_id is not None:
                self.counted = self.counted | {checkpoint_id}
            self.counter += 1

    def handle_checkpoint_success(self, checkpoint_id: int) -> None:
        """``handleCheckpointSuccess``."""
        if self.last_succeeded is None or checkpoint_id > self.last_succeeded:
            self.last_succeeded = checkpoint_id
            self._clear()

    def _clear(self) -> None:
        self.counter = 0
        self.counted = frozenset()

    def reset(self) -> None:
        """A new JobMaster's manager: nothing counted, no checkpoint succeeded yet."""
        self._clear()
        self.last_succeeded = None


@seams.override("FLINK-20675", CheckpointFailureManager, "_check_failure_counter",
                "a failure of a task's asynchronous snapshot (CHECKPOINT_ASYNC_EXCEPTION) is not counted: "
                "however many checkpoints fail so in a row, the job never fails over")
def _check_failure_counter_flink_20675(self, checkpoint_id, reason) -> None:
    if reason == "CHECKPOINT_ASYNC_EXCEPTION":
        return
    seams.original("FLINK-20675")(self, checkpoint_id, reason)
