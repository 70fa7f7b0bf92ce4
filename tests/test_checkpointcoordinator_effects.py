"""Exact effects and results of ``model/checkpointcoordinator.py``: the values Flink's classes
carry (``CheckpointProperties`` factories, ``TaskAcknowledgeResult`` names, the
``CheckpointRequestDecider``'s queue and its defaults), every effect compared as a whole
(reasons, timestamps, properties, tasks), the restore-claim modes, argument checking, and
the known-unsafe ``restore-pending-checkpoints`` seam's choice of checkpoint.

The job is the one of ``tests/test_checkpointcoordinator.py``: triggered at subtask 0,
acknowledged by 0, 1 and 2.
"""

from __future__ import annotations

import attrs
import pytest

from model import seams
from model.checkpointcoordinator import (
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointCoordinator,
    CheckpointProperties,
    CheckpointTriggered,
    CheckpointTriggerFailed,
    CompletedCheckpoint,
    CompletedCheckpointStore,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
    PendingCheckpoint,
    TriggerResult,
    last_subsumed_checkpoint_id,
)
from model.errors import InvalidArgument
from test_checkpointcoordinator import TASKS, ack_all, coord

def props(snapshot_type, forced, discard_subsumed, unclaimed):
    return CheckpointProperties(snapshot_type, forced, discard_subsumed, unclaimed)


CP = props("CHECKPOINT", False, True, False)
SP = props("SAVEPOINT", True, False, False)


def started(effects):
    return [e for e in effects if type(e) is CheckpointTriggered]


# -- CheckpointProperties ------------------------------------------------------------------------

@pytest.mark.parametrize("made, expected", [
    (lambda: CheckpointProperties.for_checkpoint(), ("CHECKPOINT", False, True, False)),
    (lambda: CheckpointProperties.for_checkpoint(True), ("CHECKPOINT", True, True, False)),
    (lambda: CheckpointProperties.for_savepoint(), ("SAVEPOINT", True, False, False)),
    (lambda: CheckpointProperties.for_savepoint(False), ("SAVEPOINT", False, False, False)),
    (lambda: CheckpointProperties.for_sync_savepoint(), ("SUSPEND", True, False, False)),
    (lambda: CheckpointProperties.for_sync_savepoint(False, terminate=True), ("TERMINATE", False, False, False)),
    (lambda: CheckpointProperties.for_unclaimed_snapshot(), ("SAVEPOINT", False, False, True)),
])
def test_properties_factories_carry_flinks_values(made, expected):
    """(snapshot type, forced, discardOnSubsumed, unclaimed) as Flink's factories set them:
    checkpoints are discarded on subsume, savepoints never; NO_CLAIM snapshots are unclaimed."""
    p = made()
    assert attrs.astuple(p) == expected
    assert all(type(v) is bool for v in expected[1:]) and all(type(v) is bool for v in attrs.astuple(p)[1:])
    assert p.is_savepoint == (expected[0] != "CHECKPOINT")
    assert p.is_synchronous == (expected[0] in ("SUSPEND", "TERMINATE"))


@pytest.mark.parametrize("kind, kw, unaligned, expected", [
    ("checkpoint", {}, False, ("CHECKPOINT", False, True, False)),
    ("checkpoint", {"force": True}, False, ("CHECKPOINT", True, True, False)),
    ("savepoint", {}, False, ("SAVEPOINT", True, False, False)),
    ("savepoint", {}, True, ("SAVEPOINT", False, False, False)),
    ("savepoint", {"force": False}, False, ("SAVEPOINT", False, False, False)),
    ("stop_with_savepoint", {}, False, ("SUSPEND", True, False, False)),
    ("stop_with_savepoint", {}, True, ("SUSPEND", False, False, False)),
    ("stop_with_savepoint_drain", {"force": True}, True, ("TERMINATE", True, False, False)),
])
def test_trigger_kinds_get_the_properties_flink_gives_them(kind, kw, unaligned, expected):
    """Savepoints are forced iff unaligned checkpoints are disabled, unless ``force`` says."""
    c = coord(unaligned_checkpoints_enabled=unaligned)
    r = c.trigger_checkpoint(now=4, kind=kind, **kw)
    assert r.status == "TRIGGERED"
    assert attrs.astuple(r.properties) == expected
    assert attrs.astuple(c.pending[r.checkpoint_id].properties) == expected


# -- results and effects as a whole ----------------------------------------------------------------

def test_a_triggered_request_result_and_effect():
    c = coord()
    r = c.trigger_checkpoint(now=7)
    assert r == TriggerResult("TRIGGERED", 1, 7, CP, (0,), None, (CheckpointTriggered(1, 7, CP, (0,)),))
    assert r.ok


def test_a_failed_request_result_after_shutdown():
    c = coord()
    c.shutdown_coordinator()
    r = c.trigger_checkpoint(now=3)
    reason = "CHECKPOINT_COORDINATOR_SHUTDOWN"
    assert r == TriggerResult("FAILED", None, None, CP, (), reason, (CheckpointTriggerFailed(3, CP, reason),))
    assert not r.ok


def test_a_periodic_request_after_the_scheduler_stopped_fails_with_its_reason():
    c = coord()
    c.stop_checkpoint_scheduler()
    r = c.trigger_checkpoint(now=2)
    reason = "PERIODIC_SCHEDULER_SHUTDOWN"
    assert r == TriggerResult("FAILED", None, None, CP, (), reason, (CheckpointTriggerFailed(2, CP, reason),))
    c.start_checkpoint_scheduler()
    assert c.trigger_checkpoint(now=3).ok


def test_shutdown_aborts_pending_and_fails_queued_requests_with_its_reason():
    c = coord(queue_requests=True)
    c.trigger_checkpoint(now=1)
    c.trigger_checkpoint(now=2)
    effects = c.shutdown_coordinator()
    reason = "CHECKPOINT_COORDINATOR_SHUTDOWN"
    assert effects == [CheckpointTriggerFailed(2, CP, reason), CheckpointAborted(1, 1, reason, None),
                       NotifyCheckpointAborted(1, 1, 0, TASKS)]
    assert c.shutdown_coordinator() == [] and c.trigger_checkpoint(now=3).reason == reason
    assert c.receive_acknowledge(1, 0) == [] and c.receive_decline(1, 0) == []


def test_completion_effects_of_a_checkpoint_and_of_a_stop_with_savepoint():
    c = coord(max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=1)
    effects = ack_all(c, 1, now=2)
    assert effects == [CheckpointCompleted(1, 1, CP, True, ()), NotifyCheckpointComplete(1, 1, -1, TASKS)]
    sync = props("SUSPEND", True, False, False)
    c.trigger_checkpoint(now=3)
    c.trigger_checkpoint(now=4, kind="stop_with_savepoint")
    effects = ack_all(c, 3, now=5)
    assert effects == [CheckpointCompleted(3, 4, sync, False, ()),
                       CheckpointAborted(2, 3, "CHECKPOINT_SUBSUMED", None),
                       NotifyCheckpointAborted(2, 3, 1, TASKS),
                       NotifyCheckpointComplete(3, 4, -1, TASKS)]


def test_a_task_failure_aborts_with_its_reason():
    c = coord()
    c.trigger_checkpoint(now=1)
    assert c.fail_unacknowledged_pending_checkpoints_for(2) == [
        CheckpointAborted(1, 1, "TASK_FAILURE", None), NotifyCheckpointAborted(1, 1, 0, TASKS)]


def test_acknowledge_results_are_flinks_task_acknowledge_result_names():
    pc = PendingCheckpoint(1, 0, CP, {0, 1}, None, True, (0, 1))
    assert pc.acknowledge_task(0, "s") == "SUCCESS"
    assert pc.acknowledge_task(0, "s") == "DUPLICATE"
    assert pc.acknowledge_task(5, "s") == "UNKNOWN"
    pc.disposed = True
    assert pc.acknowledge_task(1, "s") == "DISCARDED"


def test_to_completed_keeps_timestamp_properties_and_orders_task_states():
    pc = PendingCheckpoint(4, 9, SP, {2, 0}, "meta", False, (0, 2))
    pc.acknowledge_task(2, "b")
    pc.acknowledge_task(0, "a")
    done = pc.to_completed()
    assert done == CompletedCheckpoint(4, 9, SP, {0: "a", 2: "b"}, "meta", True)
    assert list(done.task_states) == [0, 2]
    assert pc.to_completed(complete=False).complete is False


def test_a_completed_checkpoint_by_default_is_a_complete_periodic_checkpoint_without_state():
    assert attrs.astuple(CompletedCheckpoint(3, 4), recurse=False) == (3, 4, CP, {}, None, True)


# -- the request decider ---------------------------------------------------------------------------

def test_default_queue_holds_1000_user_requests():
    """``CheckpointRequestDecider.DEFAULT_MAX_QUEUED_REQUESTS`` = 1000."""
    c = coord(queue_requests=True)
    c.trigger_checkpoint(now=0)
    for i in range(1000):
        assert c.trigger_checkpoint(now=1 + i, periodic=False).status == "QUEUED"
    r = c.trigger_checkpoint(now=2000, periodic=False)
    assert r.reason == "TOO_MANY_CHECKPOINT_REQUESTS" and c.num_queued_requests == 1000


def test_a_full_queue_of_user_requests_drops_even_a_new_savepoint():
    """Flink keeps queued user (non-periodic) requests and fails the new one, whatever it is."""
    c = coord(queue_requests=True, max_queued_requests=2, unaligned_checkpoints_enabled=True)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1, periodic=False)
    c.trigger_checkpoint(now=2, periodic=False)
    sp = props("SAVEPOINT", False, False, False)
    r = c.trigger_checkpoint(now=3, kind="savepoint")
    reason = "TOO_MANY_CHECKPOINT_REQUESTS"
    assert r == TriggerResult("FAILED", None, None, sp, (), reason, (CheckpointTriggerFailed(3, sp, reason),))


def test_a_full_queue_with_a_periodic_tail_evicts_the_periodic_request():
    """Only the *last* queued request decides: a periodic one there is evicted for the new one."""
    c = coord(queue_requests=True, max_queued_requests=3)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1, periodic=False)
    c.trigger_checkpoint(now=2, periodic=False)
    c.trigger_checkpoint(now=3)  # periodic: the tail
    r = c.trigger_checkpoint(now=4, periodic=False)
    reason = "TOO_MANY_CHECKPOINT_REQUESTS"
    assert r == TriggerResult("QUEUED", None, None, CP, (), None, (CheckpointTriggerFailed(3, CP, reason),))
    assert c.num_queued_requests == 3


def test_a_queued_periodic_request_failing_the_min_pause_is_a_failed_result():
    c = coord(queue_requests=True, min_pause_between_checkpoints=5)
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=10)
    r = c.trigger_checkpoint(now=12)
    reason = "MINIMUM_TIME_BETWEEN_CHECKPOINTS"
    assert r == TriggerResult("FAILED", None, None, CP, (), reason, (CheckpointTriggerFailed(12, CP, reason),))


def test_a_periodic_request_left_behind_waits_for_the_next_event():
    """After a queued periodic request fails the min pause, Flink reschedules the trigger and
    examines the queue again only on the next event (completion, abort, trigger): an expiry
    check that expires nothing is not such an event."""
    c = coord(queue_requests=True, min_pause_between_checkpoints=5, checkpoint_timeout=100)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1)
    c.trigger_checkpoint(now=2)
    effects = ack_all(c, 1, now=10)
    assert [type(e) for e in effects][-1] is CheckpointTriggerFailed and c.num_queued_requests == 1
    assert c.expire_overdue(20) == [] and c.num_queued_requests == 1 and c.num_pending == 0
    assert c.trigger_checkpoint(now=21, periodic=False).ok and c.num_queued_requests == 1


def test_queue_order_savepoint_then_forced_then_user_then_periodic():
    """``checkpointTriggerRequestsComparator``. With unaligned checkpoints a savepoint is not
    forced, so it waits like a checkpoint; a forced request right behind it starts at once."""
    c = coord(queue_requests=True, unaligned_checkpoints_enabled=True, max_concurrent_checkpoints=1)
    c.trigger_checkpoint(now=0)  # cp 1
    assert c.trigger_checkpoint(now=1).status == "QUEUED"  # periodic
    assert c.trigger_checkpoint(now=2, periodic=False).status == "QUEUED"  # user
    assert c.trigger_checkpoint(now=3, kind="savepoint").status == "QUEUED"
    assert c.trigger_checkpoint(now=4, periodic=False, force=True).status == "QUEUED"  # behind the savepoint
    effects = ack_all(c, 1, now=5)
    assert [(e.checkpoint_id, e.properties.snapshot_type, e.properties.forced) for e in started(effects)] == [
        (2, "SAVEPOINT", False), (3, "CHECKPOINT", True)]
    effects = ack_all(c, 2, now=6) + ack_all(c, 3, now=7)
    assert [(e.checkpoint_id, c.pending[e.checkpoint_id].is_periodic) for e in started(effects)] == [(4, False)]
    effects = ack_all(c, 4, now=8)
    assert [(e.checkpoint_id, e.timestamp) for e in started(effects)] == [(5, 8)]


def test_equal_requests_run_in_arrival_order():
    c = coord(queue_requests=True)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1, periodic=False, metadata="first")
    c.trigger_checkpoint(now=1, periodic=False, metadata="second")
    c.trigger_checkpoint(now=1, periodic=False, metadata="third")
    order = []
    for cid in (1, 2, 3):
        ack_all(c, cid, now=10 + cid)
        order.append(c.pending[cid + 1].metadata)
    assert order == ["first", "second", "third"]


def test_a_forced_request_skips_the_queue_and_leaves_the_others_queued():
    c = coord(queue_requests=True)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1)
    c.trigger_checkpoint(now=2, periodic=False)
    r = c.trigger_checkpoint(now=3, kind="savepoint")
    assert r == TriggerResult("TRIGGERED", 2, 3, SP, (0,), None, (CheckpointTriggered(2, 3, SP, (0,)),))
    assert c.num_queued_requests == 2 and c.num_pending == 2


@pytest.mark.parametrize("now, ok", [(14, False), (15, True)])
def test_min_pause_is_counted_from_the_last_completion(now, ok):
    """A periodic request fails while ``lastCompletion - now + minPause > 0``."""
    c = coord(min_pause_between_checkpoints=5)
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=10)
    r = c.trigger_checkpoint(now=now)
    assert r.ok is ok
    if not ok:
        assert r.reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS"

    q = coord(min_pause_between_checkpoints=5, queue_requests=True)
    q.trigger_checkpoint(now=0)
    ack_all(q, 1, now=10)
    r = q.trigger_checkpoint(now=now)
    assert (r.status == "TRIGGERED") is ok
    if not ok:
        assert r.reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS"


def test_completion_time_is_the_latest_time_the_coordinator_was_told():
    """Acks without ``now`` complete at the last time the caller passed (here the trigger's)."""
    c = coord(min_pause_between_checkpoints=10)
    c.trigger_checkpoint(now=5)
    ack_all(c, 1)
    assert c.trigger_checkpoint(now=6).reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS"


def test_a_checkpoint_with_nothing_to_ack_completes_at_its_trigger_time():
    c = CheckpointCoordinator([0], [], min_pause_between_checkpoints=10)
    r = c.trigger_checkpoint(now=3)
    assert r.effects == (CheckpointTriggered(1, 3, CP, (0,)), CheckpointCompleted(1, 3, CP, True, ()),
                         NotifyCheckpointComplete(1, 3, -1, (0,)))
    assert c.trigger_checkpoint(now=4).reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS"


@pytest.mark.parametrize("event", ["decline", "abort_pending", "expire"])
def test_a_queued_request_starts_at_the_time_of_the_event_that_freed_room(event):
    c = coord(queue_requests=True, checkpoint_timeout=5)
    c.trigger_checkpoint(now=0)
    assert c.trigger_checkpoint(now=1, periodic=False).status == "QUEUED"
    if event == "decline":
        effects = c.receive_decline(1, 2, "CHECKPOINT_DECLINED", now=20)
        at, reason, subtask = 20, "CHECKPOINT_DECLINED", 2
    elif event == "abort_pending":
        effects = c.abort_pending(now=30)
        at, reason, subtask = 30, "JOB_FAILOVER_REGION", None
    else:
        assert c.expire_overdue(4) == []
        effects = c.expire_overdue(5)
        at, reason, subtask = 5, "CHECKPOINT_EXPIRED", None
    assert effects == [CheckpointAborted(1, 0, reason, subtask), NotifyCheckpointAborted(1, 0, 0, TASKS),
                       CheckpointTriggered(2, at, CP, (0,))]


def test_expiry_counts_from_the_trigger_time():
    c = coord(checkpoint_timeout=5, max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=3)
    assert c.expire_overdue(7) == []
    assert c.expire_overdue(8) == [CheckpointAborted(1, 3, "CHECKPOINT_EXPIRED", None),
                                   NotifyCheckpointAborted(1, 3, 0, TASKS)]


# -- configuration -----------------------------------------------------------------------------------

def test_job_metadata_is_the_default_metadata_and_a_store_and_commit_set_are_used():
    store = CompletedCheckpointStore(2)
    c = CheckpointCoordinator([0], TASKS, tasks_to_commit=[2], job_metadata={"p": 3}, store=store)
    assert c.store is store
    c.trigger_checkpoint(now=1)
    c.trigger_checkpoint(now=2, metadata="mine", force=True)
    effects = ack_all(c, 1, now=3)
    assert effects[-1] == NotifyCheckpointComplete(1, 1, -1, (2,))
    ack_all(c, 2, now=4)
    assert [cp.metadata for cp in store.get_all_checkpoints()] == [{"p": 3}, "mine"]


@pytest.mark.parametrize("kw, name", [
    ({"tasks_to_trigger": ["a"]}, "tasks_to_trigger"),
    ({"tasks_to_ack": [True]}, "tasks_to_ack"),
    ({"tasks_to_commit": 3}, "tasks_to_commit"),
    ({"tasks_to_commit": ["x"]}, "tasks_to_commit"),
    ({"min_pause_between_checkpoints": "1"}, "min_pause_between_checkpoints"),
    ({"min_pause_between_checkpoints": -1}, "min_pause_between_checkpoints"),
    ({"checkpoint_timeout": "5"}, "checkpoint_timeout"),
    ({"checkpoint_timeout": 0}, "checkpoint_timeout"),
    ({"max_queued_requests": "5"}, "max_queued_requests"),
    ({"max_queued_requests": 0}, "max_queued_requests"),
])
def test_bad_coordinator_arguments_are_named(kw, name):
    args = {"tasks_to_trigger": [0], "tasks_to_ack": TASKS, **kw}
    t, a = args.pop("tasks_to_trigger"), args.pop("tasks_to_ack")
    with pytest.raises(InvalidArgument, match=name):
        CheckpointCoordinator(t, a, **args)


def test_smallest_valid_timeout_and_queue():
    c = CheckpointCoordinator([0], [0], checkpoint_timeout=1, max_queued_requests=1, queue_requests=True)
    c.trigger_checkpoint(now=0)
    assert c.trigger_checkpoint(now=0, periodic=False).status == "QUEUED"
    assert c.expire_overdue(1)[0] == CheckpointAborted(1, 0, "CHECKPOINT_EXPIRED", None)


@pytest.mark.parametrize("bad", ["2", True, 0])
def test_store_rejects_a_bad_retention(bad):
    with pytest.raises(InvalidArgument, match="max_retained"):
        CompletedCheckpointStore(bad)


def test_store_retains_one_by_default_and_lists_and_prints_its_checkpoints():
    s = CompletedCheckpointStore()
    a = CompletedCheckpoint(1, 1)
    b = CompletedCheckpoint(2, 2)
    s.add_checkpoint_and_subsume_oldest_one(a)
    assert s.add_checkpoint_and_subsume_oldest_one(b) == (a,)
    assert s.get_all_checkpoints() == [b] and len(s) == 1
    assert repr(s) == "<CompletedCheckpointStore max_retained=1 ids=[2]>"


def test_coordinator_repr_names_pending_store_and_queue():
    c = coord(queue_requests=True)
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    c.trigger_checkpoint(now=2)
    c.trigger_checkpoint(now=3)
    assert repr(c) == "<CheckpointCoordinator next_id=3 pending=[2] store=[1] queued=1>"


def test_last_subsumed_id_takes_the_first_of_equal_ids_as_flink_does():
    """``CheckpointSubsumeHelper``: the subsumed checkpoint with the *larger* id (strictly) is
    the one reported, so of two with the same id the first one counts."""
    sp = CompletedCheckpoint(3, 3, SP)
    cp = CompletedCheckpoint(3, 3, CP)
    assert last_subsumed_checkpoint_id([sp, cp]) == -1
    assert last_subsumed_checkpoint_id([cp, sp]) == 3


# -- restore -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode, expected", [
    ("CLAIM", ("CHECKPOINT", False, True, False)),
    ("NO_CLAIM", ("SAVEPOINT", False, False, True)),
    ("LEGACY", ("SAVEPOINT", False, False, False)),
])
def test_restore_savepoint_loads_it_with_the_claim_modes_properties(mode, expected):
    c = coord()
    got = c.restore_savepoint(CompletedCheckpoint(7, 70, SP, {0: "s"}), mode)
    assert (got.checkpoint_id, got.task_states) == (7, {0: "s"})
    assert attrs.astuple(got.properties) == expected
    assert c.trigger_checkpoint(now=80).checkpoint_id == 8


@pytest.mark.parametrize("mode", ["claim", "legacy", "XCLAIM"])
def test_restore_savepoint_rejects_an_unknown_claim_mode(mode):
    with pytest.raises(InvalidArgument, match="claim_mode"):
        coord().restore_savepoint(CompletedCheckpoint(7, 70), mode)


@pytest.fixture
def restore_pending():
    """The seam ``restore-pending-checkpoints`` acts for the test (as during a run that switches it on)."""
    with seams.active(("restore-pending-checkpoints",)):
        yield


def test_unsafe_restore_pending_needs_an_acknowledgement(restore_pending):
    c = coord()
    c.trigger_checkpoint(now=0)
    assert c.restore_latest_checkpointed_state() is None  # pending without acks
    c.receive_decline(1, 0)
    assert c.restore_latest_checkpointed_state() is None  # aborted without acks


def test_unsafe_restore_pending_prefers_a_newer_incomplete_checkpoint(restore_pending):
    c = coord(max_concurrent_checkpoints=3)
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    assert c.restore_latest_checkpointed_state().checkpoint_id == 1  # nothing incomplete
    c.trigger_checkpoint(now=2)  # 2
    c.trigger_checkpoint(now=3)  # 3
    c.receive_acknowledge(2, 0, "a")
    assert c.restore_latest_checkpointed_state() == CompletedCheckpoint(2, 2, CP, {0: "a"}, None, False)
    c.receive_acknowledge(3, 1, "b")
    c.receive_decline(3, 2)
    c.receive_decline(2, 2)  # the older one is aborted last: the newer incomplete one still wins
    got = c.restore_latest_checkpointed_state()
    assert (got.checkpoint_id, got.complete) == (3, False)


def test_unsafe_restore_pending_keeps_a_newer_incomplete_over_an_older_completion(restore_pending):
    c = coord(max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=0)  # 1
    c.trigger_checkpoint(now=1)  # 2
    c.receive_acknowledge(2, 0, "a")
    c.receive_decline(2, 1)
    ack_all(c, 1, now=2)  # 1 completes after 2 was aborted
    assert c.restore_latest_checkpointed_state().checkpoint_id == 2
    c.trigger_checkpoint(now=3)  # 3 completes: the incomplete 2 is forgotten
    ack_all(c, 3, now=4)
    c.trigger_checkpoint(now=5)  # 4: an ack, then aborted
    c.receive_acknowledge(4, 0, "c")
    c.receive_decline(4, 1)
    assert c.restore_latest_checkpointed_state().checkpoint_id == 4


def test_unsafe_restore_pending_is_not_reset_by_a_savepoint(restore_pending):
    c = coord(max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=0)  # 1
    c.receive_acknowledge(1, 0, "a")
    c.receive_decline(1, 1)
    c.trigger_checkpoint(now=1, kind="savepoint")  # 2, kept out of the store
    ack_all(c, 2, now=2)
    got = c.restore_latest_checkpointed_state()
    assert (got.checkpoint_id, got.complete) == (1, False)
