"""Checkpoint barrier handling inside one task: Flink's ``SingleCheckpointBarrierHandler``
(aligned, unaligned, aligned-with-timeout "alternating") and ``CheckpointBarrierTracker``
(at-least-once).

Invariant upheld (exactly-once modes): the task snapshots its operators at a point where,
for every input channel, exactly the records before that channel's barrier ``n`` are
reflected either in the snapshot (aligned: a channel is blocked from its barrier until all
barriers arrived) or in the channel state of ``n`` (unaligned: records consumed after the
snapshot and before the channel's barrier are persisted). The at-least-once tracker never
blocks, so post-barrier records of fast channels enter snapshot ``n``: it is *known* to
duplicate state effects after a restore.

Follows: ``SingleCheckpointBarrierHandler`` and its ``BarrierHandlerState`` machine
(WaitingForFirstBarrier, CollectingBarriers, AlternatingWaitingForFirstBarrier,
AlternatingCollectingBarriers, AlternatingCollectingBarriersUnaligned), ``CheckpointBarrierTracker``,
and FLIP-147 (with checkpoints after tasks finish, an EndOfPartition counts as that
channel's barrier; without, it aborts the pending checkpoint).

The handler talks to its task through a small context (``ctx``), an argument of each call
that can change the task (``process_barrier(ctx, barrier, channel, now)``, ...), never held by
the handler: Flink's handler holds its task (``toNotifyOnCheckpoint``), the model passes it, so
that a task's state has no reference cycle through its handler. The context offers
``block(ch)``/``resume(ch)``/``resume_all()``, ``trigger(barrier, unaligned)`` (snapshot the
operators and emit the barrier downstream), ``abort(checkpoint_id, reason)`` (decline to
the coordinator and send a CancelCheckpointMarker downstream), ``start_persisting(checkpoint_id,
channels)``/``stop_persisting(ch)``/``channel_state_complete(checkpoint_id)`` (unaligned
channel state) and ``register_timer(checkpoint_id, deadline)``; ``ctx.barrier_channels`` lists the local indices of
the inputs that carry barriers (pipelined channels; blocking partitions carry none).

Known-unsafe knob: ``CheckpointBarrierTracker(recreate_aborted=True)`` is the pre-FLINK-5285
tracker (a trailing cancel marker of a finished entry aborts that checkpoint again).

Leaves out: barrier *announcements* and the upstream conversion of timed-out aligned
barriers into priority barriers (FLINK-27251): after a timeout the consumer persists input
until the (still aligned) barrier arrives in FIFO order, which yields the same channel
state, only later. Without announcements the alignment timer is registered by the first
barrier, so it can only fire while barriers are being collected: Flink's
``AlternatingWaitingForFirstBarrierUnaligned`` (a timeout before the first barrier arrived)
is never reached and is not modeled. Channels are addressed by the task's flat input index.
"""

from __future__ import annotations

import sys

from model import seams
from model.events import CheckpointBarrier

# Handler states (names of Flink's BarrierHandlerState classes).
WAITING = "WaitingForFirstBarrier"
COLLECTING = "CollectingBarriers"
ALT_WAITING = "AlternatingWaitingForFirstBarrier"
ALT_COLLECTING = "AlternatingCollectingBarriers"
ALT_COLLECTING_UNALIGNED = "AlternatingCollectingBarriersUnaligned"

DECLINED_SUBSUMED = "CHECKPOINT_DECLINED_SUBSUMED"
DECLINED_ON_CANCELLATION_BARRIER = "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER"
DECLINED_INPUT_END_OF_STREAM = "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM"


def snapshots_obsolete_barriers() -> bool:
    """Whether a barrier of a checkpoint older than one a task already took is snapshotted: no.
    ``SingleCheckpointBarrierHandler`` only resumes its channel, and
    ``SubtaskCheckpointCoordinatorImpl.checkpointState`` ignores such a trigger: it logs "Out of
    order checkpoint barrier (aborted previously?)", aborts the checkpoint's channel-state
    writing and returns, with no snapshot and no decline (Flink 2.3)."""
    return False


class SingleCheckpointBarrierHandler:
    """Exactly-once barrier handling. ``mode`` is ``"aligned"``, ``"unaligned"`` or
    ``"alternating"`` (aligned with ``aligned_checkpoint_timeout``, switching to unaligned)."""

    __slots__ = (
        "mode",
        "timeout",
        "num_open_channels",
        "current_id",
        "last_done_id",
        "aligned",
        "target",
        "state",
        "barrier",
        "checkpoints_after_tasks_finish",
        "finished",
    )

    def __init__(self, num_channels: int, mode: str, *, timeout: int | None = None,
                 checkpoints_after_tasks_finish: bool = True):
        self.mode = mode
        self.timeout = timeout
        self.num_open_channels = num_channels
        self.current_id = -1
        self.last_done_id = -1
        self.aligned: set[int] = set()
        self.target = 0
        self.barrier: CheckpointBarrier | None = None
        self.checkpoints_after_tasks_finish = checkpoints_after_tasks_finish
        self.finished: set[int] = set()  # channels that delivered EndOfPartition (ChannelState.channelFinished)
        self.state = self._start_state()

    def _start_state(self) -> str:
        # Flink creates ``SingleCheckpointBarrierHandler.alternating`` whenever unaligned
        # checkpoints are enabled (InputProcessorUtil), with or without a timeout: pure
        # unaligned checkpoints send *unaligned* barriers, which AlternatingWaitingForFirstBarrier
        # turns into an unaligned checkpoint at once, while a savepoint's barrier stays aligned
        # (a savepoint never has channel state).
        if self.mode == "aligned":
            return WAITING
        return ALT_WAITING

    @property
    def pending(self) -> bool:
        return self.current_id != self.last_done_id and self.current_id >= 0

    def has_seen(self, checkpoint_id: int) -> bool:
        """Whether checkpoint ``checkpoint_id`` already reached this handler (it is being
        aligned, was triggered, aborted, or skipped as obsolete)."""
        return checkpoint_id <= self.current_id

    # -- barriers -------------------------------------------------------------------------
    def is_obsolete(self, b: CheckpointBarrier) -> bool:
        """Whether barrier ``b`` is of a checkpoint older than the one this handler began, or
        of the one it began and already ended (aligned, taken or aborted): such a barrier
        only goes to :meth:`on_obsolete_barrier` (``SingleCheckpointBarrierHandler`` ignores a
        barrier below its current checkpoint id, and one of a checkpoint it no longer waits for)."""
        return self.current_id > b.id or (self.current_id == b.id and not self.pending)

    def on_obsolete_barrier(self, ctx, b: CheckpointBarrier, ch: int) -> None:
        """A barrier of a checkpoint this handler already finished or skipped: an aligned one
        blocked its channel upstream when it was sent, so the channel is resumed."""
        if not b.unaligned:
            ctx.resume(ch)
        if b.id < self.current_id and snapshots_obsolete_barriers():
            ctx.trigger(b, b.unaligned)  # (only with the unsafe seam: the older checkpoint is snapshotted now)

    def alignment_deadline(self, b: CheckpointBarrier) -> int | None:
        """When the aligned checkpoint of timeoutable barrier ``b`` turns unaligned: its
        timestamp + ``execution.checkpointing.aligned-checkpoint-timeout``
        (``registerAlignmentTimer``)."""
        return b.timestamp + self.timeout

    def process_barrier(self, ctx, b: CheckpointBarrier, ch: int, now: int) -> None:
        if self.is_obsolete(b):
            self.on_obsolete_barrier(ctx, b, ch)
            return
        if b.id > self.current_id:
            if self.pending:
                self._abort(ctx, self.current_id, DECLINED_SUBSUMED)
            self.current_id = b.id
            self.aligned.clear()
            self.target = self.num_open_channels
            self.barrier = b
            if self.mode == "alternating" and b.timeoutable and self.timeout is not None:
                deadline = self.alignment_deadline(b)
                if deadline is not None:
                    ctx.register_timer(b.id, deadline)
            if not b.unaligned:
                # the abort above resumed the channels blocked *before*; this barrier's channel is
                # blocked upstream by credit since it was sent (barrierReceived blocks it again)
                ctx.block(ch)
        if ch in self.aligned:
            return
        self.aligned.add(ch)
        state = self.state
        if state == WAITING or state == COLLECTING:
            if len(self.aligned) == self.target:
                self._finish_aligned(ctx, b)
            else:
                self.state = COLLECTING
        elif state == ALT_WAITING or state == ALT_COLLECTING:
            if b.unaligned:
                self._timeout_to_unaligned(ctx)
                return
            if len(self.aligned) == self.target:
                self._finish_aligned(ctx, b)
            elif self._is_timed_out(b, now):
                self._timeout_to_unaligned(ctx)
            else:
                self.state = ALT_COLLECTING
        else:  # AlternatingCollectingBarriersUnaligned
            ctx.stop_persisting(ch)
            if len(self.aligned) == self.target:
                self._finish_unaligned(ctx)

    def _is_timed_out(self, b: CheckpointBarrier, now: int) -> bool:
        return (b.timeoutable and b.id <= self.current_id and self.timeout is not None
                and self.timeout < now - b.timestamp)

    def _finish_aligned(self, ctx, b: CheckpointBarrier) -> None:
        self.aligned.clear()
        self.last_done_id = self.current_id
        ctx.trigger(b, False)
        ctx.resume_all()
        self.state = self._start_state()

    def _finish_unaligned(self, ctx) -> None:
        self.aligned.clear()
        self.last_done_id = self.current_id
        ctx.channel_state_complete(self.current_id)
        ctx.resume_all()
        self.state = self._start_state()

    def _timeout_to_unaligned(self, ctx) -> None:
        """AlternatingCollectingBarriers.alignmentTimeout (or an unaligned barrier arriving):
        trigger an unaligned checkpoint of the current barrier now; open channels whose barrier
        has not arrived persist their input (a finished channel's EndOfPartition stands for its
        barrier: Flink counts it among ``alignedChannels``)."""
        others = [c for c in ctx.barrier_channels if c not in self.aligned and c not in self.finished]
        ctx.start_persisting(self.current_id, others)
        ctx.trigger(_as_unaligned(self.barrier), True)
        ctx.resume_all()
        self.state = ALT_COLLECTING_UNALIGNED
        if len(self.aligned) == self.target:
            self._finish_unaligned(ctx)

    def on_alignment_timeout(self, ctx, checkpoint_id: int) -> None:
        """The alignment timer of ``checkpoint_id`` fired."""
        if checkpoint_id != self.current_id or not self.pending:
            return
        if self.state == ALT_COLLECTING:
            self._timeout_to_unaligned(ctx)

    def timer_due(self, now: int, deadline: int) -> bool:
        return self.state == ALT_COLLECTING and now >= deadline

    # -- cancellation and end of partition --------------------------------------------------
    def process_cancellation(self, ctx, checkpoint_id: int) -> None:
        if checkpoint_id > self.current_id or (checkpoint_id == self.current_id and self.aligned):
            self._abort(ctx, checkpoint_id, DECLINED_ON_CANCELLATION_BARRIER)
        else:
            self.on_obsolete_cancellation(ctx, checkpoint_id)

    def on_obsolete_cancellation(self, ctx, checkpoint_id: int) -> None:
        """A CancelCheckpointMarker of a checkpoint older than the one being aligned is ignored
        (``processCancellationBarrier`` compares its id with the current one)."""
        return None

    def _abort(self, ctx, checkpoint_id: int, reason: str) -> None:
        self.current_id = max(checkpoint_id, self.current_id)
        self.last_done_id = max(self.last_done_id, checkpoint_id)
        self.aligned.clear()
        was_unaligned = self.state in (ALT_COLLECTING_UNALIGNED,)
        self.state = self._start_state()
        ctx.resume_all()
        if was_unaligned:
            ctx.stop_persisting_all()
        ctx.abort(checkpoint_id, reason)

    def process_end_of_partition(self, ctx, ch: int, now: int | None = None) -> None:
        """An EndOfPartition on channel ``ch`` at logical time ``now`` (``None``: the caller has
        no clock, so the alignment deadline is not looked at)."""
        self.num_open_channels -= 1
        self.finished.add(ch)
        if not self.pending:
            return
        if not self.checkpoints_after_tasks_finish:
            self._abort(ctx, self.current_id, DECLINED_INPUT_END_OF_STREAM)
            return
        # FLIP-147: the EndOfPartition stands for this channel's barrier.
        if ch in self.aligned:
            self.aligned.discard(ch)
        self.target -= 1
        if self.state in (ALT_COLLECTING_UNALIGNED,):
            ctx.stop_persisting(ch)
            if len(self.aligned) >= self.target:
                self._finish_unaligned(ctx)
        elif self.state in (COLLECTING, ALT_COLLECTING):
            if len(self.aligned) >= self.target and self.barrier is not None:
                self._finish_aligned(ctx, self.barrier)
            elif self.state == ALT_COLLECTING and now is not None and self._is_timed_out(self.barrier, now):
                # AlternatingCollectingBarriers.endOfPartitionReceived: the deadline passed while
                # the alignment waited (the timer has not fired yet): the EndOfPartition itself
                # switches to an unaligned checkpoint (alignmentTimeout), then counts as the
                # channel's barrier in AlternatingCollectingBarriersUnaligned
                self._timeout_to_unaligned(ctx)


def _as_unaligned(b: CheckpointBarrier) -> CheckpointBarrier:
    if b.unaligned:
        return b
    return CheckpointBarrier(b.id, b.timestamp, savepoint=b.savepoint, unaligned=True, timeoutable=False)


class CheckpointBarrierTracker:
    """At-least-once barrier tracking (Flink's ``CheckpointBarrierTracker``): never blocks;
    checkpoint ``n`` triggers once barrier ``n`` (or, FLIP-147, EndOfPartition) arrived on
    every channel that was open when ``n``'s first barrier came.

    Like Flink, each pending entry keeps the *set* of channels that delivered its barrier or
    cancel marker and the channel count it waits for (``targetChannelCount``, fixed when the
    entry is created), so an EndOfPartition on a channel that already delivered counts once.

    ``checkpoints_after_tasks_finish=False``: an EndOfPartition aborts every pending
    checkpoint (``CHECKPOINT_DECLINED_INPUT_END_OF_STREAM``), as Flink does without FLIP-147.

    ``recreate_aborted=True`` is the known-unsafe pre-FLINK-5285 mechanism (kept as a knob for
    the ``barrier-tracker-FLINK-5285`` suite): a trailing cancel marker of a checkpoint whose
    entry is gone re-creates an aborted entry and aborts that id again, so interleaved cancel
    markers of consecutive checkpoints flood declines and CancelCheckpointMarkers downstream.
    """

    MAX_CHECKPOINTS_TO_TRACK = 50

    __slots__ = ("num_open_channels", "pending", "latest_pending_id", "checkpoints_after_tasks_finish",
                 "recreate_aborted")

    def __init__(self, num_channels: int, *, checkpoints_after_tasks_finish: bool = True,
                 recreate_aborted: bool = False):
        self.num_open_channels = num_channels
        self.checkpoints_after_tasks_finish = checkpoints_after_tasks_finish
        self.recreate_aborted = recreate_aborted
        # entries (CheckpointBarrierCount): [checkpoint_id, barrier or None, aligned channels,
        # aborted, target channel count]
        self.pending: list[list] = []
        self.latest_pending_id = -1

    def process_barrier(self, ctx, b: CheckpointBarrier, ch: int, now: int) -> None:
        if b.id > self.latest_pending_id and self.num_open_channels == 1:
            # fast path (Flink leaves latestPendingCheckpointID alone here; it is kept for has_seen,
            # which cannot change the outcome: the one open channel only brings newer ids)
            self.latest_pending_id = b.id
            ctx.trigger(b, False)
            return
        for pos, entry in enumerate(self.pending):
            if entry[0] == b.id:
                entry[2].add(ch)
                if len(entry[2]) == entry[4]:
                    del self.pending[: pos + 1]
                    if not entry[3]:
                        ctx.trigger(entry[1], False)
                return
        if b.id > self.latest_pending_id:
            self.latest_pending_id = b.id
            self.pending.append([b.id, b, {ch}, False, self.num_open_channels])
            if len(self.pending) > self.MAX_CHECKPOINTS_TO_TRACK:
                self.pending.pop(0)

    def process_cancellation(self, ctx, checkpoint_id: int, ch: int) -> None:
        if checkpoint_id > self.latest_pending_id and self.num_open_channels == 1:
            self.latest_pending_id = checkpoint_id  # model bookkeeping for has_seen (as above)
            ctx.abort(checkpoint_id, DECLINED_ON_CANCELLATION_BARRIER)
            return
        while self.pending and self.pending[0][0] < checkpoint_id:
            entry = self.pending.pop(0)
            if not entry[3]:  # abort the subsumed checkpoints if not already done
                ctx.abort(entry[0], DECLINED_ON_CANCELLATION_BARRIER)
        if self.pending and self.pending[0][0] == checkpoint_id:
            entry = self.pending[0]
            if not entry[3]:
                entry[3] = True
                ctx.abort(checkpoint_id, DECLINED_ON_CANCELLATION_BARRIER)
            entry[2].add(ch)
            if len(entry[2]) == entry[4]:
                self.pending.pop(0)
        elif checkpoint_id > self.latest_pending_id or self.recreate_aborted:
            ctx.abort(checkpoint_id, DECLINED_ON_CANCELLATION_BARRIER)
            if not self.recreate_aborted:
                self.latest_pending_id = checkpoint_id
            # Flink: "we have removed all other pending checkpoint barrier counts --> no need to
            # check that we don't exceed the maximum checkpoints to track" (the unsafe knob may
            # keep older entries; it is bounded by the run's length)
            self.pending.insert(0, [checkpoint_id, None, {ch}, True, self.num_open_channels])

    def process_end_of_partition(self, ctx, ch: int, now: int | None = None) -> None:
        """``now`` is unused: the tracker has no alignment timer."""
        self.num_open_channels -= 1
        if not self.checkpoints_after_tasks_finish:
            while self.pending:
                entry = self.pending.pop(0)
                if not entry[3]:
                    ctx.abort(entry[0], DECLINED_INPUT_END_OF_STREAM)
            return
        # checkAlignmentOnEndOfPartitionIfEnabled: newest first, the EndOfPartition stands for
        # this channel's barrier; the newest entry it completes triggers, older ones are dropped.
        for pos in range(len(self.pending) - 1, -1, -1):
            entry = self.pending[pos]
            entry[2].add(ch)
            if len(entry[2]) == entry[4]:
                del self.pending[: pos + 1]
                if not entry[3]:
                    ctx.trigger(entry[1], False)
                return

    def on_alignment_timeout(self, ctx, checkpoint_id: int) -> None:  # never registered
        return None

    def has_seen(self, checkpoint_id: int) -> bool:
        return checkpoint_id <= self.latest_pending_id

    def pending_checkpoint_ids(self) -> list[int]:
        """The checkpoints with some but not all barriers or cancel markers, oldest first
        (Flink's ``getPendingCheckpointIds``)."""
        return [entry[0] for entry in self.pending]

    def timer_due(self, now: int, deadline: int) -> bool:
        return False


@seams.override("FLINK-20645", SingleCheckpointBarrierHandler, "on_obsolete_barrier",
                "a late barrier of an older checkpoint (an aligned savepoint overtaken by an unaligned "
                "checkpoint) switches the channel's channel-state persistence off")
def _on_obsolete_barrier_flink_20645(self, ctx, b: CheckpointBarrier, ch: int) -> None:
    if not b.unaligned:
        ctx.resume(ch)
    # the bug: the channel's persister is switched off, so in-flight data of the current
    # unaligned checkpoint behind this late barrier is not persisted
    ctx.stop_persisting(ch)


@seams.override("unchecked-barrier-order", sys.modules[__name__], "snapshots_obsolete_barriers",
                "barriers are taken without comparing their checkpoint id to the newest one seen: a late barrier "
                "of an older checkpoint triggers a snapshot after a newer one")
def _obsolete_barriers_snapshotted() -> bool:
    return True


@seams.override("unchecked-cancellation-id", SingleCheckpointBarrierHandler, "on_obsolete_cancellation",
                "CancelCheckpointMarkers are taken without comparing their checkpoint id to the one being "
                "aligned: a late marker of an older checkpoint aborts the current one")
def _obsolete_cancellation_aborts_current(self, ctx, checkpoint_id: int) -> None:
    if self.pending:
        self._abort(ctx, self.current_id, DECLINED_ON_CANCELLATION_BARRIER)


@seams.override("alignment-timer-immediate", SingleCheckpointBarrierHandler, "alignment_deadline",
                "the aligned-checkpoint timeout's timer is due at once: an aligned checkpoint turns unaligned "
                "before its timeout")
def _alignment_deadline_now(self, b: CheckpointBarrier) -> int | None:
    return b.timestamp


@seams.override("alignment-timer-never", SingleCheckpointBarrierHandler, "alignment_deadline",
                "no alignment timer is registered: an aligned checkpoint whose alignment stalls never turns "
                "unaligned")
def _alignment_deadline_never(self, b: CheckpointBarrier) -> int | None:
    return None
