"""Actions: every nondeterministic choice of a run is one of these values.

``enabled_actions(state)`` lists the actions possible now; ``step(state, action)`` applies
one deterministically (``model.cluster``). All actions are frozen, slotted attrs classes
whose repr is valid Python (``Deliver(channel=3)``), so a trace is a list of reprs that
``parse_action`` reads back.
"""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class Deliver:
    """The consumer of ``channel`` takes the channel's head element and processes it."""

    channel: int


@attrs.frozen(slots=True)
class SourceEmit:
    """Source subtask ``subtask`` reads its next record and pushes it through its chain."""

    subtask: int


@attrs.frozen(slots=True)
class SourceWatermark:
    """Source subtask ``subtask`` runs its periodic watermark emission."""

    subtask: int


@attrs.frozen(slots=True)
class SourceIdle:
    """Source subtask ``subtask`` marks itself idle (WatermarkStatus.IDLE)."""

    subtask: int


@attrs.frozen(slots=True)
class SourceActive:
    """Source subtask ``subtask`` becomes active again (WatermarkStatus.ACTIVE)."""

    subtask: int


@attrs.frozen(slots=True)
class SourceEnd:
    """Source subtask ``subtask`` has read everything: emits MAX_WATERMARK and EndOfPartition."""

    subtask: int


@attrs.frozen(slots=True)
class TriggerCheckpoint:
    """The CheckpointCoordinator triggers a checkpoint (or a savepoint)."""

    savepoint: bool = False


@attrs.frozen(slots=True)
class CheckpointTimeout:
    """Pending checkpoint ``checkpoint_id`` expires (the coordinator's checkpoint timeout)."""

    checkpoint_id: int


@attrs.frozen(slots=True)
class NotifyCheckpointComplete:
    """The notifyCheckpointComplete RPC of ``checkpoint_id`` reaches subtask ``subtask``."""

    subtask: int
    checkpoint_id: int


@attrs.frozen(slots=True)
class AlignmentTimeout:
    """The aligned-checkpoint timeout timer of subtask ``subtask`` fires."""

    subtask: int


@attrs.frozen(slots=True)
class FailTask:
    """Subtask ``subtask`` fails (an exception in the task)."""

    subtask: int


@attrs.frozen(slots=True)
class LoseTaskManager:
    """TaskManager ``task_manager`` is lost with every task in its slots."""

    task_manager: int


@attrs.frozen(slots=True)
class FailJobManager:
    """The JobManager fails over: pending checkpoints are lost, the job restores globally."""


@attrs.frozen(slots=True)
class StopWithSavepoint:
    """Stop-with-savepoint: a synchronous savepoint, then the job stops."""


@attrs.frozen(slots=True)
class RestartFromSavepoint:
    """Restart a stopped job from its savepoint with new parallelisms ``((operator, p), ...)``."""

    parallelism: tuple = ()


ACTION_TYPES = (
    Deliver,
    SourceEmit,
    SourceWatermark,
    SourceIdle,
    SourceActive,
    SourceEnd,
    TriggerCheckpoint,
    CheckpointTimeout,
    NotifyCheckpointComplete,
    AlignmentTimeout,
    FailTask,
    LoseTaskManager,
    FailJobManager,
    StopWithSavepoint,
    RestartFromSavepoint,
)
ACTIONS_BY_NAME = {t.__name__: t for t in ACTION_TYPES}
#: Action kinds for swarm testing: a run may disable some of these.
ACTION_KINDS = tuple(t.__name__ for t in ACTION_TYPES)


def parse_action(text: str):
    """Parse an action's repr (``"Deliver(channel=3)"``) without ``eval``.

    Raises ValueError with the reason when the text is not a known action.
    """
    import ast

    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"not an action: {text!r} ({e.msg})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not an action: {text!r}")
    cls = ACTIONS_BY_NAME.get(node.func.id)
    if cls is None:
        raise ValueError(f"unknown action {node.func.id!r} in {text!r}")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        return cls(*args, **kwargs)
    except (ValueError, TypeError) as e:
        raise ValueError(f"bad arguments in {text!r}: {e}") from None
