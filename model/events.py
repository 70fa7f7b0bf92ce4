"""Stream elements that travel through channels besides records.

Records travel as plain tuples ``(key, value, timestamp)`` (the hot path); everything
else is one of the frozen, slotted classes below, named after Flink's runtime events:
``Watermark``, ``WatermarkStatus``, ``CheckpointBarrier``, ``CancelCheckpointMarker`` and
``EndOfPartitionEvent``.

Deliberate difference from Flink: there are no network buffers; a channel carries
elements one by one and its capacity (credits) counts elements, not bytes.
"""

from __future__ import annotations

import attrs

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1


def _same(self, memo=None):
    return self


def value(cls: type) -> type:
    """Mark a frozen class whose fields are immutable as a value: ``copy.copy`` and
    ``copy.deepcopy`` return the object itself (``Cluster.copy`` is on an explorer's hot path)."""
    cls.__copy__ = _same
    cls.__deepcopy__ = _same
    return cls


@value
@attrs.frozen(slots=True)
class Watermark:
    timestamp: int


MAX_WATERMARK = Watermark(LONG_MAX)


@value
@attrs.frozen(slots=True)
class WatermarkStatus:
    idle: bool


IDLE = WatermarkStatus(True)
ACTIVE = WatermarkStatus(False)


@value
@attrs.frozen(slots=True)
class CheckpointBarrier:
    """Flink's CheckpointBarrier: ``id``, ``timestamp`` (the JobManager's trigger time, here
    the logical clock) and the options that matter: savepoint or checkpoint, unaligned,
    whether an aligned barrier may time out into an unaligned one, and ``forced_aligned``:
    Flink's ``AlignmentType.FORCED_ALIGNED``, a barrier of an unaligned (or timeoutable)
    checkpoint sent aligned over an edge that cannot carry unaligned barriers
    (:meth:`with_unaligned_unsupported`)."""

    id: int
    timestamp: int
    savepoint: bool = False
    unaligned: bool = False
    timeoutable: bool = False
    forced_aligned: bool = False

    def with_unaligned_unsupported(self) -> "CheckpointBarrier":
        """``CheckpointOptions.withUnalignedUnsupported``: a barrier that needs channel state
        (unaligned, or aligned with a timeout) becomes FORCED_ALIGNED -- aligned, never timing
        out; any other barrier is unchanged. ``RecordWriterOutput.broadcastEvent`` applies it on
        an edge whose ``supportsUnalignedCheckpoints()`` is false and sends it as a normal (not
        a priority) event."""
        if not (self.unaligned or self.timeoutable):
            return self
        return CheckpointBarrier(self.id, self.timestamp, savepoint=self.savepoint, forced_aligned=True)


@value
@attrs.frozen(slots=True)
class CancelCheckpointMarker:
    checkpoint_id: int


@value
@attrs.frozen(slots=True)
class EndOfPartitionEvent:
    pass


END_OF_PARTITION = EndOfPartitionEvent()
