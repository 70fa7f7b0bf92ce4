"""Unit tests of ``model/checkpointbarrierhandler.py`` against a recording task context, in the
manner of Flink's ``AlternatingCheckpointsTest``, ``UnalignedCheckpointsTest`` and
``CheckpointBarrierTrackerTest``: each test feeds barriers, cancel markers, EndOfPartitions
and timer firings to one handler and asserts *exactly* what the handler asked its task to do
(block, resume, trigger with which barrier and mode, abort with which reason, persist which
channels) and, for the tracker, which checkpoints it still tracks (Flink's
``getPendingCheckpointIds``).
"""

from __future__ import annotations

import pytest

from model import seams
from model.checkpointbarrierhandler import (
    DECLINED_INPUT_END_OF_STREAM,
    DECLINED_ON_CANCELLATION_BARRIER,
    DECLINED_SUBSUMED,
    CheckpointBarrierTracker,
    SingleCheckpointBarrierHandler,
)
from model.events import CheckpointBarrier
from scenario_util import RecordingTask


def aligned(cid: int, ts: int = 0, *, timeoutable: bool = False, savepoint: bool = False) -> CheckpointBarrier:
    return CheckpointBarrier(cid, ts, savepoint=savepoint, unaligned=False, timeoutable=timeoutable)


def unaligned(cid: int, ts: int = 0) -> CheckpointBarrier:
    return CheckpointBarrier(cid, ts, unaligned=True)


# -- SingleCheckpointBarrierHandler: states ------------------------------------------------------

def test_states_carry_the_names_of_flinks_barrier_handler_state_classes():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "aligned")
    assert h.state == "WaitingForFirstBarrier"
    h.process_barrier(task, aligned(1), 0, 1)
    assert h.state == "CollectingBarriers"
    h.process_barrier(task, aligned(1), 1, 2)
    assert h.state == "WaitingForFirstBarrier"

    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "alternating", timeout=10)
    assert h.state == "AlternatingWaitingForFirstBarrier"
    h.process_barrier(task, aligned(1, timeoutable=True), 0, 1)
    assert h.state == "AlternatingCollectingBarriers"
    h.on_alignment_timeout(task, 1)
    assert h.state == "AlternatingCollectingBarriersUnaligned"
    h.process_barrier(task, aligned(1, timeoutable=True), 1, 2)
    h.process_barrier(task, aligned(1, timeoutable=True), 2, 3)
    assert h.state == "AlternatingWaitingForFirstBarrier"

    # pure unaligned checkpoints use the alternating handler too (InputProcessorUtil)
    assert SingleCheckpointBarrierHandler(2, "unaligned").state == \
        "AlternatingWaitingForFirstBarrier"


# -- aligned -----------------------------------------------------------------------------------

def test_aligned_blocks_the_first_channel_and_triggers_once_every_barrier_arrived():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "aligned")
    b = aligned(1, ts=5)
    h.process_barrier(task, b, 0, 6)
    assert task.take() == [("block", 0)]
    assert h.pending and h.has_seen(1) and not h.has_seen(2)
    h.process_barrier(task, b, 1, 7)
    assert task.take() == [("trigger", b, False), ("resume_all",)]
    assert not h.pending and h.has_seen(1)


def test_a_fresh_handler_has_seen_no_checkpoint():
    h = SingleCheckpointBarrierHandler(2, "aligned")
    assert not h.pending and not h.has_seen(1)


def test_a_newer_barrier_subsumes_the_checkpoint_being_aligned():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "aligned")
    h.process_barrier(task, aligned(1), 0, 1)
    task.take()
    h.process_barrier(task, aligned(2), 1, 2)
    assert task.take() == [("resume_all",), ("abort", 1, DECLINED_SUBSUMED), ("block", 1)]
    assert h.current_id == 2 and h.pending


def test_end_of_partition_stands_for_the_barrier_by_default():
    """FLIP-147 (``execution.checkpointing.checkpoints-after-tasks-finish``, default true): an
    EndOfPartition of a channel counts as that channel's barrier."""
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "aligned")
    b = aligned(1)
    h.process_barrier(task, b, 0, 1)
    task.take()
    h.process_end_of_partition(task, 1)
    assert task.take() == [("trigger", b, False), ("resume_all",)]


def test_end_of_partition_aborts_the_pending_checkpoint_without_checkpoints_after_tasks_finish():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "aligned", checkpoints_after_tasks_finish=False)
    h.process_barrier(task, aligned(1), 0, 1)
    task.take()
    h.process_end_of_partition(task, 1)
    assert task.take() == [("resume_all",), ("abort", 1, DECLINED_INPUT_END_OF_STREAM)]


def test_an_end_of_partition_does_not_complete_an_alignment_still_missing_barriers():
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "aligned")
    b = aligned(1)
    h.process_barrier(task, b, 0, 1)
    h.process_end_of_partition(task, 1)
    assert task.take() == [("block", 0)]
    assert h.state == "CollectingBarriers"
    h.process_barrier(task, b, 2, 2)
    assert task.take() == [("trigger", b, False), ("resume_all",)]


def test_a_cancel_marker_aborts_the_alignment_and_a_stale_one_is_ignored():
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "aligned")
    h.process_barrier(task, aligned(2), 0, 1)
    task.take()
    h.process_cancellation(task, 1)  # older than the checkpoint being aligned
    assert task.take() == [] and h.pending
    h.process_cancellation(task, 2)
    assert task.take() == [("resume_all",), ("abort", 2, DECLINED_ON_CANCELLATION_BARRIER)]
    assert not h.pending


def test_known_unsafe_stale_cancel_marker_aborts_the_current_checkpoint():
    """The seam ``unchecked-cancellation-id``: a CancelCheckpointMarker of an older checkpoint
    aborts the one being aligned; Flink's handler ignores it."""
    for seam, expected in ((None, []), ("unchecked-cancellation-id",
                                        [("resume_all",), ("abort", 2, DECLINED_ON_CANCELLATION_BARRIER)])):
        task = RecordingTask(3)
        h = SingleCheckpointBarrierHandler(3, "aligned")
        h.process_barrier(task, aligned(2), 0, 1)
        task.take()
        with seams.active((seam,) if seam else ()):
            h.process_cancellation(task, 1)
        assert task.take() == expected, seam


@pytest.mark.parametrize("snapshot_obsolete", [False, True])
def test_a_late_barrier_of_an_older_checkpoint_only_resumes_its_channel(snapshot_obsolete):
    """The late barrier's channel was blocked upstream when it was sent, so it is resumed. With
    the known-unsafe seam ``unchecked-barrier-order`` the older checkpoint is snapshotted too; a
    late barrier of the *current* checkpoint after it was aborted is ignored either way."""
    with seams.active(("unchecked-barrier-order",) if snapshot_obsolete else ()):
        task = RecordingTask(2)
        h = SingleCheckpointBarrierHandler(2, "aligned")
        h.process_barrier(task, aligned(2), 0, 1)
        task.take()
        old = aligned(1)
        h.process_barrier(task, old, 1, 2)
        assert task.take() == [("resume", 1)] + ([("trigger", old, False)] if snapshot_obsolete else [])

        task = RecordingTask(2)
        h = SingleCheckpointBarrierHandler(2, "aligned")
        h.process_barrier(task, aligned(1), 0, 1)
        h.process_cancellation(task, 1)
        task.take()
        h.process_barrier(task, aligned(1), 1, 2)
        assert task.take() == [("resume", 1)]


def test_is_obsolete_tells_older_and_ended_checkpoints_from_the_current_and_newer_ones():
    """What ``process_barrier`` hands to ``on_obsolete_barrier``: a barrier below the current
    checkpoint id, or of the current checkpoint once the handler ended it (aligned and taken,
    or aborted); a barrier of the checkpoint being aligned or of a newer one is not."""
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "aligned")
    assert not h.is_obsolete(aligned(1))  # nothing begun yet
    h.process_barrier(task, aligned(2), 0, 1)
    assert h.is_obsolete(aligned(1))
    assert not h.is_obsolete(aligned(2))  # still aligning: the other channel's barrier is due
    assert not h.is_obsolete(aligned(3))
    h.process_barrier(task, aligned(2), 1, 2)  # aligned and taken
    assert h.is_obsolete(aligned(2)) and h.is_obsolete(aligned(1)) and not h.is_obsolete(aligned(3))
    h.process_barrier(task, aligned(3), 0, 3)
    h.process_cancellation(task, 3)  # aborted
    assert h.is_obsolete(unaligned(3)) and not h.is_obsolete(unaligned(4))


# -- alternating: aligned with a timeout ---------------------------------------------------------

@pytest.mark.parametrize("timer, expected", [("deadline", [("timer", 1, 7 + 10)]),
                                             ("immediate", [("timer", 1, 7)]),
                                             ("never", [])])
def test_the_first_timeoutable_barrier_registers_the_alignment_timer(timer, expected):
    """Flink registers the timer for ``barrier.timestamp + alignedCheckpointTimeout``; the
    known-unsafe seams ``alignment-timer-immediate`` / ``-never`` fire it at once or never."""
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "alternating", timeout=10)
    with seams.active(() if timer == "deadline" else (f"alignment-timer-{timer}",)):
        h.process_barrier(task, aligned(1, ts=7, timeoutable=True), 0, 8)
    assert task.take() == expected + [("block", 0)]


def test_a_savepoint_barrier_registers_no_timer():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "alternating", timeout=10)
    h.process_barrier(task, aligned(1, savepoint=True), 0, 1)
    assert task.take() == [("block", 0)]


@pytest.mark.parametrize("now, times_out", [(7 + 10, False), (7 + 11, True)])
def test_a_barrier_arriving_after_the_timeout_switches_to_unaligned(now, times_out):
    """``isTimedOut``: ``alignedCheckpointTimeout < now - barrier.timestamp`` (strictly). On the
    switch the task snapshots with the barrier turned unaligned (same id, timestamp; no longer
    timeoutable), persists the input of the channels whose barrier is missing and resumes all."""
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "alternating", timeout=10)
    b = aligned(1, ts=7, timeoutable=True)
    h.process_barrier(task, b, 0, 8)
    task.take()
    h.process_barrier(task, b, 1, now)
    if not times_out:
        assert task.take() == [] and h.state == "AlternatingCollectingBarriers"
        return
    as_unaligned = CheckpointBarrier(1, 7, savepoint=False, unaligned=True, timeoutable=False)
    assert task.take() == [("persist", 1, (2,)), ("trigger", as_unaligned, True), ("resume_all",)]
    h.process_barrier(task, b, 2, now + 1)
    assert task.take() == [("stop_persisting", 2), ("channel_state_complete", 1), ("resume_all",)]
    assert not h.pending


@pytest.mark.parametrize("now, times_out", [(7 + 10, False), (7 + 11, True)])
def test_an_end_of_partition_after_the_alignment_deadline_switches_to_unaligned(now, times_out):
    """Flink's ``AlternatingCollectingBarriers.endOfPartitionReceived``: when an input ends while
    the alignment waits and the deadline has passed (``isTimedOut``, strictly) but the timer has
    not fired yet, the EndOfPartition itself calls ``alignmentTimeout``: the checkpoint turns
    unaligned at once and the EndOfPartition counts as the finished channel's barrier
    (``AlternatingCollectingBarriersUnaligned``). The finished channel persists nothing: it is
    among ``alignedChannels`` in ``SingleCheckpointBarrierHandler.processEndOfPartition``."""
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "alternating", timeout=10)
    b = aligned(1, ts=7, timeoutable=True)
    h.process_barrier(task, b, 0, 8)
    task.take()
    h.process_end_of_partition(task, 1, now)
    if not times_out:
        assert task.take() == [] and h.state == "AlternatingCollectingBarriers"
        h.on_alignment_timeout(task, 1)  # the timer fires later: the finished channel 1 is not persisted either
    as_unaligned = CheckpointBarrier(1, 7, savepoint=False, unaligned=True, timeoutable=False)
    assert task.take() == [("persist", 1, (2,)), ("trigger", as_unaligned, True), ("resume_all",)]
    assert h.state == "AlternatingCollectingBarriersUnaligned"
    h.process_barrier(task, b, 2, now + 1)
    assert task.take() == [("stop_persisting", 2), ("channel_state_complete", 1), ("resume_all",)]
    assert not h.pending and h.state == "AlternatingWaitingForFirstBarrier"


def test_an_end_of_partition_completing_the_alignment_after_the_deadline_stays_aligned():
    """``AlternatingCollectingBarriers.endOfPartitionReceived`` asks ``allBarriersReceived``
    before ``isTimedOut``: an EndOfPartition that stands for the last missing barrier completes
    the aligned checkpoint even past its deadline."""
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "alternating", timeout=10)
    b = aligned(1, ts=7, timeoutable=True)
    h.process_barrier(task, b, 0, 8)
    task.take()
    h.process_end_of_partition(task, 1, 7 + 50)
    assert task.take() == [("trigger", b, False), ("resume_all",)]
    assert not h.pending and h.state == "AlternatingWaitingForFirstBarrier"


def test_no_timeout_configured_never_times_out():
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "alternating", timeout=None)
    b = aligned(1, ts=0, timeoutable=True)
    h.process_barrier(task, b, 0, 1)
    h.process_barrier(task, b, 1, 10_000)
    assert task.take() == [("block", 0)]
    assert h.state == "AlternatingCollectingBarriers"


def test_the_alignment_timer_switches_the_collecting_checkpoint_to_unaligned():
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "alternating", timeout=10)
    b = aligned(1, ts=3, timeoutable=True)
    h.process_barrier(task, b, 1, 4)
    task.take()
    h.on_alignment_timeout(task, 1)
    as_unaligned = CheckpointBarrier(1, 3, unaligned=True, timeoutable=False)
    assert task.take() == [("persist", 1, (0, 2)), ("trigger", as_unaligned, True), ("resume_all",)]


def test_a_stale_alignment_timer_never_turns_a_later_savepoint_unaligned():
    """The timer of checkpoint 1 fires while savepoint 2 (never timeoutable: a savepoint has no
    channel state) is being aligned: it is ignored."""
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "alternating", timeout=10)
    b1 = aligned(1, timeoutable=True)
    h.process_barrier(task, b1, 0, 1)
    h.process_barrier(task, b1, 1, 2)
    h.process_barrier(task, aligned(2, ts=3, savepoint=True), 0, 4)
    task.take()
    h.on_alignment_timeout(task, 1)
    assert task.take() == [] and h.state == "AlternatingCollectingBarriers"


def test_a_timer_after_the_checkpoint_completed_does_nothing():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "alternating", timeout=10)
    b1 = aligned(1, timeoutable=True)
    h.process_barrier(task, b1, 0, 1)
    h.process_barrier(task, b1, 1, 2)
    task.take()
    h.on_alignment_timeout(task, 1)
    assert task.take() == [] and h.state == "AlternatingWaitingForFirstBarrier"


# -- unaligned ---------------------------------------------------------------------------------

def test_unaligned_triggers_on_the_first_barrier_and_persists_the_other_channels():
    task = RecordingTask(3)
    h = SingleCheckpointBarrierHandler(3, "unaligned")
    b = unaligned(1, ts=2)
    h.process_barrier(task, b, 1, 3)
    assert task.take() == [("persist", 1, (0, 2)), ("trigger", b, True), ("resume_all",)]
    h.process_barrier(task, b, 0, 4)
    assert task.take() == [("stop_persisting", 0)]
    h.process_end_of_partition(task, 2)  # stands for channel 2's barrier
    assert task.take() == [("stop_persisting", 2), ("channel_state_complete", 1), ("resume_all",)]


def test_aborting_an_unaligned_checkpoint_discards_its_channel_state():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "unaligned")
    h.process_barrier(task, unaligned(1), 0, 1)
    task.take()
    h.process_cancellation(task, 1)
    assert task.take() == [("resume_all",), ("stop_persisting_all",),
                           ("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]


def test_aborting_an_aligned_checkpoint_has_no_channel_state_to_discard():
    task = RecordingTask(2)
    h = SingleCheckpointBarrierHandler(2, "alternating", timeout=10)
    h.process_barrier(task, aligned(1, timeoutable=True), 0, 1)
    task.take()
    h.process_cancellation(task, 1)
    assert task.take() == [("resume_all",), ("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]


# -- CheckpointBarrierTracker (at-least-once) ------------------------------------------------------

def test_tracker_single_channel_fast_path_triggers_at_once():
    task = RecordingTask(1)
    t = CheckpointBarrierTracker(1)
    b = aligned(1)
    t.process_barrier(task, b, 0, 1)
    assert task.take() == [("trigger", b, False)]
    assert t.pending_checkpoint_ids() == [] and t.has_seen(1) and not t.has_seen(2)
    t.process_cancellation(task, 2, 0)
    assert task.take() == [("abort", 2, DECLINED_ON_CANCELLATION_BARRIER)]
    assert t.pending_checkpoint_ids() == []


def test_tracker_never_blocks_and_triggers_each_checkpoint_when_complete():
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    b1, b2 = aligned(1), aligned(2)
    t.process_barrier(task, b1, 0, 1)
    t.process_barrier(task, b2, 0, 2)
    assert task.take() == [] and t.pending_checkpoint_ids() == [1, 2]
    t.process_barrier(task, b1, 1, 3)
    assert task.take() == [("trigger", b1, False)] and t.pending_checkpoint_ids() == [2]
    t.process_barrier(task, b2, 1, 4)
    assert task.take() == [("trigger", b2, False)] and t.pending_checkpoint_ids() == []


def test_tracker_ignores_a_trailing_barrier_or_cancel_marker_of_a_finished_checkpoint():
    """Flink adds an entry only for an id newer than ``latestPendingCheckpointID`` ("there
    cannot be a successful checkpoint for that ID anyways")."""
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    b1 = aligned(1)
    t.process_barrier(task, b1, 0, 1)
    t.process_barrier(task, b1, 1, 2)
    task.take()
    t.process_barrier(task, b1, 0, 3)
    t.process_cancellation(task, 1, 1)
    assert task.take() == [] and t.pending_checkpoint_ids() == []


def test_tracker_tracks_at_most_fifty_checkpoints():
    """``MAX_CHECKPOINTS_TO_TRACK = 50``: the oldest entry is dropped, and its checkpoint can no
    longer trigger."""
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    for cid in range(1, 51):
        t.process_barrier(task, aligned(cid), 0, cid)
    assert t.pending_checkpoint_ids() == list(range(1, 51))
    t.process_barrier(task, aligned(51), 0, 51)
    assert t.pending_checkpoint_ids() == list(range(2, 52))
    t.process_barrier(task, aligned(1), 1, 52)
    assert task.take() == []
    t.process_barrier(task, aligned(2), 1, 53)
    assert task.take() == [("trigger", aligned(2), False)]


def test_tracker_cancel_marker_aborts_older_pending_checkpoints_and_its_own():
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    t.process_barrier(task, aligned(1), 0, 1)
    t.process_barrier(task, aligned(2), 0, 2)
    task.take()
    t.process_cancellation(task, 3, 1)
    assert task.take() == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER),
                           ("abort", 2, DECLINED_ON_CANCELLATION_BARRIER),
                           ("abort", 3, DECLINED_ON_CANCELLATION_BARRIER)]
    assert t.pending_checkpoint_ids() == [3]


def test_tracker_cancel_marker_of_a_pending_checkpoint_aborts_it_and_forgets_it_when_complete():
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    t.process_barrier(task, aligned(1), 0, 1)
    t.process_cancellation(task, 1, 1)
    assert task.take() == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]
    assert t.pending_checkpoint_ids() == []


def test_tracker_cancelled_checkpoint_keeps_counting_until_every_channel_delivered():
    """The aborted entry stays until every channel delivered (so trailing markers and
    barriers of it are recognised) and is then forgotten; it is aborted once."""
    task = RecordingTask(3)
    t = CheckpointBarrierTracker(3)
    t.process_cancellation(task, 1, 0)
    assert task.take() == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]
    t.process_cancellation(task, 1, 1)
    assert t.pending_checkpoint_ids() == [1]
    t.process_barrier(task, aligned(1), 2, 3)
    assert task.take() == [] and t.pending_checkpoint_ids() == []

    task = RecordingTask(3)
    t = CheckpointBarrierTracker(3)
    for ch in range(3):
        t.process_cancellation(task, 1, ch)
    assert task.take() == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]
    assert t.pending_checkpoint_ids() == []


def test_tracker_cancel_marker_with_several_open_channels_takes_no_fast_path():
    """With two open channels a cancel marker leaves an aborted entry, so the other channel's
    barrier of that checkpoint does not trigger it."""
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    t.process_cancellation(task, 1, 0)
    assert task.take() == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]
    assert t.pending_checkpoint_ids() == [1]
    t.process_barrier(task, aligned(1), 1, 2)
    assert task.take() == [] and t.pending_checkpoint_ids() == []


@pytest.mark.parametrize("recreate_aborted", [False, True])
def test_tracker_flood_of_the_pre_flink_5285_tracker(recreate_aborted):
    """A checkpoint cancelled on every channel is aborted once either way; interleaved cancel
    markers of consecutive checkpoints abort checkpoint 1 again only with the known-unsafe
    ``recreate_aborted`` (the mechanism of FLINK-5285)."""
    task = RecordingTask(3)
    t = CheckpointBarrierTracker(3, recreate_aborted=recreate_aborted)
    for ch in range(3):
        t.process_cancellation(task, 1, ch)
    assert task.take() == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]

    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2, recreate_aborted=recreate_aborted)
    t.process_cancellation(task, 1, 0)
    t.process_cancellation(task, 2, 0)
    t.process_cancellation(task, 1, 1)
    aborted = [e[1] for e in task.take()]
    assert aborted == ([1, 2, 1] if recreate_aborted else [1, 2])
    # the last marker of checkpoint 2 leaves nothing tracked either way (the re-created entry
    # of 1 is put first, as Flink's addFirst, so checkpoint 2's marker drops it)
    t.process_cancellation(task, 2, 1)
    assert task.take() == [] and t.pending_checkpoint_ids() == []


def test_tracker_end_of_partition_completes_the_newest_checkpoint_it_can():
    """``checkAlignmentOnEndOfPartitionIfEnabled``: newest first; the entry it completes
    triggers, older ones are dropped, newer ones stay."""
    task = RecordingTask(3)
    t = CheckpointBarrierTracker(3)
    b1, b2 = aligned(1), aligned(2)
    t.process_barrier(task, b1, 0, 1)
    t.process_barrier(task, b1, 1, 2)
    t.process_barrier(task, b2, 0, 3)
    task.take()
    t.process_end_of_partition(task, 2)
    assert task.take() == [("trigger", b1, False)] and t.pending_checkpoint_ids() == [2]
    t.process_barrier(task, b2, 1, 4)
    assert task.take() == [("trigger", b2, False)] and t.pending_checkpoint_ids() == []


def test_tracker_end_of_partition_aborts_everything_without_checkpoints_after_tasks_finish():
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2, checkpoints_after_tasks_finish=False)
    t.process_barrier(task, aligned(1), 0, 1)
    t.process_barrier(task, aligned(2), 0, 2)
    t.process_end_of_partition(task, 1)
    assert task.take() == [("abort", 1, DECLINED_INPUT_END_OF_STREAM), ("abort", 2, DECLINED_INPUT_END_OF_STREAM)]
    assert t.pending_checkpoint_ids() == []


def test_tracker_has_no_alignment_timer():
    task = RecordingTask(2)
    t = CheckpointBarrierTracker(2)
    t.process_barrier(task, aligned(1), 0, 1)
    assert not t.timer_due(10**9, 0)
    assert t.on_alignment_timeout(task, 1) is None
