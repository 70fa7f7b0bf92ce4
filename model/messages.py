"""Messages a StreamTask sends to the JobMaster: the task's effects, as data.

A task never calls the JobMaster (here: the ``Cluster``) directly. What it has to tell it —
a checkpoint acknowledged or declined, the task finished — it appends as one of these frozen
values to its outbox; ``Cluster.step`` delivers the outbox in order after the action (and
after each task a loop of the cluster triggers, so a loop sees the effect of one task's
acknowledgement before it triggers the next, as the synchronous RPC did before).

Follows Flink's RPC messages from the TaskExecutor to the JobMaster:
``AcknowledgeCheckpoint`` and ``DeclineCheckpoint`` (sent by the task's
``CheckpointResponder``) and ``updateTaskExecutionState(FINISHED)`` (here ``TaskFinished``).

Deliberately left out: the RPC transport (a message is delivered in the step that sent it,
never lost or reordered), and the task's other state updates (RUNNING, FAILED, CANCELED: the
model's failures are actions of their own).
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class AcknowledgeCheckpoint:
    """The task took its snapshot for ``checkpoint_id`` (``snapshot``: a TaskSnapshot)."""

    subtask: int
    checkpoint_id: int
    snapshot: object


@attrs.frozen(slots=True)
class DeclineCheckpoint:
    """The task declines ``checkpoint_id`` (Flink's CheckpointFailureReason name as ``reason``)."""

    subtask: int
    checkpoint_id: int
    reason: str


@attrs.frozen(slots=True)
class TaskFinished:
    """The task finished (all inputs ended, EndOfPartition sent): ``updateTaskExecutionState(FINISHED)``."""

    subtask: int
