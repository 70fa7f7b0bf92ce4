"""Scenario tests for model.checkpointcoordinator (CheckpointCoordinator, store, decider).

Unless a test draws another one, the job is::

    src (subtask 0) ──► map (subtask 1) ──► sink (subtask 2)

The coordinator triggers at {0} and waits for acks from {0, 1, 2}. Time is the logical
step counter passed as ``now``.
"""

from __future__ import annotations

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
    last_subsumed_checkpoint_id,
)
from model.errors import FlinkspecError, InvalidArgument

TASKS = (0, 1, 2)


def coord(**kw) -> CheckpointCoordinator:
    return CheckpointCoordinator([0], TASKS, **kw)


def ack_all(c, cid, now=None, tasks=TASKS):
    effects = []
    for t in tasks:
        effects += c.receive_acknowledge(cid, t, f"state-{cid}-{t}", now=now)
    return effects


def cp(cid, kind="checkpoint"):
    props = {
        "checkpoint": CheckpointProperties.for_checkpoint(),
        "savepoint": CheckpointProperties.for_savepoint(),
        "sync": CheckpointProperties.for_sync_savepoint(),
    }[kind]
    return CompletedCheckpoint(cid, cid * 10, props, {0: cid})


# ----------------------------------------------------------------------------- basics


def test_ids_start_at_one_and_increase_and_completion_needs_every_ack():
    """1. trigger -> id 1, 2. two of three acks: still pending, 3. third ack completes."""
    c = coord()
    r = c.trigger_checkpoint(now=0)
    assert r.ok and r.checkpoint_id == 1 and r.timestamp == 0 and r.tasks_to_trigger == (0,)
    assert r.effects == (CheckpointTriggered(1, 0, CheckpointProperties.for_checkpoint(), (0,)),)
    assert c.receive_acknowledge(1, 0, "a", now=1) == []
    assert c.receive_acknowledge(1, 1, "b", now=2) == []
    assert c.pending_ids() == (1,)
    effects = c.receive_acknowledge(1, 2, "c", now=3)
    assert [type(e) for e in effects] == [CheckpointCompleted, NotifyCheckpointComplete]
    assert effects[1] == NotifyCheckpointComplete(1, 0, -1, (0, 1, 2))
    latest = c.restore_latest_checkpointed_state()
    assert latest.checkpoint_id == 1 and latest.task_states == {0: "a", 1: "b", 2: "c"}
    assert c.pending_ids() == ()
    assert c.trigger_checkpoint(now=4).checkpoint_id == 2


def test_duplicate_unknown_and_late_acks_are_ignored():
    """1. ack from subtask 9 (not a task to ack) and a duplicate ack change nothing;
    2. after completion a late ack for checkpoint 1 and one for a never-triggered id are no-ops."""
    c = coord()
    c.trigger_checkpoint(now=0)
    pc = c.pending[1]
    assert pc.acknowledge_task(9, "x") == "UNKNOWN"
    assert c.receive_acknowledge(1, 0, "a") == []
    assert pc.acknowledge_task(0, "again") == "DUPLICATE"
    assert pc.acknowledged[0] == "a"
    ack_all(c, 1, now=1, tasks=(1, 2))
    assert pc.acknowledge_task(1, "y") == "DISCARDED"
    assert c.receive_acknowledge(1, 0, "late", now=2) == []
    assert c.receive_acknowledge(77, 0, "unknown", now=2) == []
    assert c.restore_latest_checkpointed_state().task_states[0] == "a"


def test_newer_checkpoint_completes_first_and_subsumes_older_pending():
    """max concurrent 2.
    1. trigger cp1 at t=0, 2. trigger cp2 at t=1, 3. cp1 gets acks from 0 and 1 only,
    4. cp2 gets all acks at t=5 -> cp2 completes, cp1 aborted CHECKPOINT_SUBSUMED (with an
    abort notification) before cp2's notify-complete; 5. a late ack of cp1 is ignored."""
    c = coord(max_concurrent_checkpoints=2)
    assert c.trigger_checkpoint(now=0).checkpoint_id == 1
    assert c.trigger_checkpoint(now=1).checkpoint_id == 2
    ack_all(c, 1, now=2, tasks=(0, 1))
    effects = ack_all(c, 2, now=5)
    assert effects == [
        CheckpointCompleted(2, 1, CheckpointProperties.for_checkpoint(), True, ()),
        CheckpointAborted(1, 0, "CHECKPOINT_SUBSUMED", None),
        NotifyCheckpointAborted(1, 0, 2, (0, 1, 2)),
        NotifyCheckpointComplete(2, 1, -1, (0, 1, 2)),
    ]
    assert c.pending_ids() == ()
    assert c.receive_acknowledge(1, 2, "late", now=6) == []
    assert c.store.checkpoint_ids() == (2,)


def test_max_concurrent_limit_declines_and_frees_up_after_completion():
    """max concurrent 1. 1. cp1 triggered, 2. second periodic request declined
    TOO_MANY_CONCURRENT_CHECKPOINTS (no id consumed), 3. cp1 completes, 4. next trigger gets id 2."""
    c = coord()
    c.trigger_checkpoint(now=0)
    r = c.trigger_checkpoint(now=1)
    assert not r.ok and r.reason == "TOO_MANY_CONCURRENT_CHECKPOINTS"
    assert isinstance(r.effects[0], CheckpointTriggerFailed)
    ack_all(c, 1, now=2)
    assert c.trigger_checkpoint(now=3).checkpoint_id == 2


def test_min_pause_between_checkpoints_applies_to_periodic_only():
    """min pause 10. 1. cp1 completes at t=5, 2. periodic trigger at t=14 declined
    MINIMUM_TIME_BETWEEN_CHECKPOINTS, 3. non-periodic trigger at t=14 runs (cp2),
    4. after cp2 completes at t=20, periodic at t=29 is declined and at t=30 runs."""
    c = coord(min_pause_between_checkpoints=10)
    assert c.trigger_checkpoint(now=0).ok  # nothing completed yet: no pause
    ack_all(c, 1, now=5)
    r = c.trigger_checkpoint(now=14)
    assert r.reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS"
    assert c.trigger_checkpoint(now=14, periodic=False).checkpoint_id == 2
    ack_all(c, 2, now=20)
    assert c.trigger_checkpoint(now=29).reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS"
    assert c.trigger_checkpoint(now=30).checkpoint_id == 3


def test_savepoint_ignores_concurrency_limit_is_not_stored_not_subsumed_and_not_notified():
    """max concurrent 1. 1. cp1 pending, 2. savepoint 2 triggers anyway (forced),
    3. cp3 declined (2 pending), 4. savepoint completes: not in the store, no
    notify-complete, cp1 not aborted, 5. cp1 completes: store = [1]."""
    c = coord()
    c.trigger_checkpoint(now=0)
    sp = c.trigger_checkpoint(now=1, kind="savepoint")
    assert sp.ok and sp.checkpoint_id == 2 and sp.properties.forced
    assert c.trigger_checkpoint(now=2).reason == "TOO_MANY_CONCURRENT_CHECKPOINTS"
    effects = ack_all(c, 2, now=3)
    assert effects == [CheckpointCompleted(2, 1, CheckpointProperties.for_savepoint(), False, ())]
    assert c.store.checkpoint_ids() == () and c.pending_ids() == (1,)
    assert c.restore_latest_checkpointed_state() is None
    effects = ack_all(c, 1, now=4)
    assert effects[-1] == NotifyCheckpointComplete(1, 0, -1, (0, 1, 2))
    assert c.store.checkpoint_ids() == (1,)


def test_pending_savepoint_is_not_subsumed_by_newer_checkpoint():
    """max concurrent 2. 1. savepoint 1, 2. cp2, 3. cp2 completes: savepoint 1 stays pending."""
    c = coord(max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=0, kind="savepoint")
    c.trigger_checkpoint(now=1)
    effects = ack_all(c, 2, now=2)
    assert not any(isinstance(e, CheckpointAborted) for e in effects)
    assert c.pending_ids() == (1,)
    assert c.pending[1].can_be_subsumed is False


def test_unaligned_savepoint_is_not_forced():
    """With unaligned checkpoints enabled savepoints are not forced: with cp1 pending and
    max concurrent 1 the savepoint is declined."""
    c = coord(unaligned_checkpoints_enabled=True)
    c.trigger_checkpoint(now=0)
    r = c.trigger_checkpoint(now=1, kind="savepoint")
    assert r.reason == "TOO_MANY_CONCURRENT_CHECKPOINTS"


def test_stop_with_savepoint_notifies_and_subsumes_pending_but_is_not_stored():
    """max concurrent 2. 1. cp1 pending, 2. stop-with-savepoint 2 (synchronous), 3. it
    completes: cp1 aborted SUBSUMED, notify-complete(2) sent, store stays empty."""
    c = coord(max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=0)
    r = c.trigger_checkpoint(now=1, kind="stop_with_savepoint")
    assert r.properties.is_synchronous
    effects = ack_all(c, 2, now=2)
    assert [type(e) for e in effects] == [
        CheckpointCompleted,
        CheckpointAborted,
        NotifyCheckpointAborted,
        NotifyCheckpointComplete,
    ]
    assert effects[1].reason == "CHECKPOINT_SUBSUMED" and effects[3].checkpoint_id == 2
    assert c.store.checkpoint_ids() == ()


def test_decline_aborts_and_notifies_tasks():
    """1. cp1 pending, 2. subtask 1 declines, 3. cp1 aborted with that reason and tasks told,
    4. a later ack of cp1 is ignored, 5. a new checkpoint may start."""
    c = coord()
    c.trigger_checkpoint(now=0)
    c.receive_acknowledge(1, 0, "a", now=1)
    effects = c.receive_decline(1, 1, "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER", now=2)
    assert effects == [
        CheckpointAborted(1, 0, "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER", 1),
        NotifyCheckpointAborted(1, 0, 0, (0, 1, 2)),
    ]
    assert c.receive_acknowledge(1, 2, "c", now=3) == []
    assert c.receive_decline(1, 2) == []
    assert c.trigger_checkpoint(now=4).checkpoint_id == 2
    assert c.restore_latest_checkpointed_state() is None


def test_bad_reason_and_kind_are_clear_errors():
    c = coord()
    with pytest.raises(InvalidArgument, match="CheckpointFailureReason"):
        c.receive_decline(1, 0, "NOPE")
    with pytest.raises(FlinkspecError, match="checkpoint kind"):
        c.trigger_checkpoint(now=0, kind="snapshot")
    with pytest.raises(InvalidArgument, match="max_concurrent_checkpoints"):
        CheckpointCoordinator([0], [0], max_concurrent_checkpoints=0)
    with pytest.raises(InvalidArgument, match="at least one"):
        CompletedCheckpointStore(0)


def test_failover_aborts_all_pending_and_restore_returns_latest_completed():
    """max concurrent 3. 1. cp1 completes, 2. cp2 and cp3 pending (partly acked),
    3. failover: abort_pending(JOB_FAILOVER_REGION) aborts 2 and 3,
    4. restore returns cp1, 5. ids continue at 4."""
    c = coord(max_concurrent_checkpoints=3)
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    c.trigger_checkpoint(now=2)
    c.trigger_checkpoint(now=3)
    c.receive_acknowledge(2, 0, "x", now=4)
    effects = c.abort_pending()
    assert [e.checkpoint_id for e in effects if isinstance(e, CheckpointAborted)] == [2, 3]
    assert all(e.reason == "JOB_FAILOVER_REGION" for e in effects if isinstance(e, CheckpointAborted))
    assert c.restore_latest_checkpointed_state().checkpoint_id == 1
    assert c.trigger_checkpoint(now=5).checkpoint_id == 4


def test_restore_without_any_completed_checkpoint_returns_none():
    """FLINK-20396: 1. cp1 pending with acks, 2. failover, 3. restore -> None (start empty)."""
    c = coord()
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1, tasks=(0, 1))
    c.abort_pending()
    assert c.restore_latest_checkpointed_state() is None


def test_job_manager_failover_keeps_counter_and_store_but_loses_pending():
    """1. cp1 completes, 2. cp2 pending, 3. JM failover: cp2 lost without task
    notifications, 4. restore = cp1, 5. next id is 3 (the HA counter survived)."""
    c = coord(min_pause_between_checkpoints=100)
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    c.trigger_checkpoint(now=200)
    effects = c.job_manager_failover()
    assert effects == [CheckpointAborted(2, 200, "JOB_FAILOVER_REGION", None)]
    assert c.restore_latest_checkpointed_state().checkpoint_id == 1
    assert c.trigger_checkpoint(now=201).checkpoint_id == 3  # no min pause after JM failover


def test_task_failure_fails_only_unacknowledged_pending():
    """max concurrent 2. cp1 acked by subtask 2, cp2 not; subtask 2 fails -> only cp2 aborted."""
    c = coord(max_concurrent_checkpoints=2)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1)
    c.receive_acknowledge(1, 2, "s", now=2)
    effects = c.fail_unacknowledged_pending_checkpoints_for(2)
    assert [e.checkpoint_id for e in effects if isinstance(e, CheckpointAborted)] == [2]
    assert c.pending_ids() == (1,)


def test_checkpoint_timeout_expires():
    c = coord(checkpoint_timeout=10)
    c.trigger_checkpoint(now=0)
    assert c.expire_overdue(9) == []
    effects = c.expire_overdue(10)
    assert effects[0] == CheckpointAborted(1, 0, "CHECKPOINT_EXPIRED", None)


def test_no_tasks_to_ack_completes_at_trigger():
    c = CheckpointCoordinator([], [])
    r = c.trigger_checkpoint(now=3)
    assert [type(e) for e in r.effects] == [CheckpointTriggered, CheckpointCompleted, NotifyCheckpointComplete]
    assert c.store.checkpoint_ids() == (1,)


def test_stop_checkpoint_scheduler_blocks_periodic_but_not_savepoints():
    """Stop-with-savepoint: 1. stop the scheduler (aborts pending as SUSPEND),
    2. periodic trigger fails PERIODIC_SCHEDULER_SHUTDOWN, 3. sync savepoint runs."""
    c = coord()
    c.trigger_checkpoint(now=0)
    effects = c.stop_checkpoint_scheduler()
    assert effects[0].reason == "CHECKPOINT_COORDINATOR_SUSPEND"
    assert c.trigger_checkpoint(now=1).reason == "PERIODIC_SCHEDULER_SHUTDOWN"
    assert c.trigger_checkpoint(now=1, kind="stop_with_savepoint_drain").ok


def test_metadata_travels_to_the_completed_checkpoint():
    c = coord(job_metadata={"parallelism": {"src": 1, "map": 1, "sink": 1}})
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    c.trigger_checkpoint(now=2, metadata={"parallelism": {"src": 2}})
    ack_all(c, 2, now=3)
    assert c.restore_latest_checkpointed_state().metadata == {"parallelism": {"src": 2}}


# ----------------------------------------------------------------------------- queue mode


def test_queued_requests_run_in_decider_order_after_completion():
    """queue_requests=True, max concurrent 1, min pause 0.
    1. cp1 runs, 2. periodic request at t=1 queued, 3. non-periodic request at t=2 queued,
    4. cp1 completes at t=3 -> the non-periodic one runs first (cp2, timestamp 3),
    5. cp2 completes -> the periodic one runs (cp3)."""
    c = coord(queue_requests=True)
    assert c.trigger_checkpoint(now=0).checkpoint_id == 1
    assert c.trigger_checkpoint(now=1).status == "QUEUED"
    assert c.trigger_checkpoint(now=2, periodic=False).status == "QUEUED"
    effects = ack_all(c, 1, now=3)
    started = [e for e in effects if isinstance(e, CheckpointTriggered)]
    assert [(e.checkpoint_id, e.timestamp) for e in started] == [(2, 3)]
    assert c.pending[2].is_periodic is False
    effects = ack_all(c, 2, now=4)
    assert [e.checkpoint_id for e in effects if isinstance(e, CheckpointTriggered)] == [3]
    assert c.num_queued_requests == 0


def test_queued_periodic_request_fails_min_pause():
    """queue mode, min pause 10: 1. cp1 runs, 2. periodic queued, 3. cp1 completes at t=5:
    the queued periodic fails MINIMUM_TIME_BETWEEN_CHECKPOINTS."""
    c = coord(queue_requests=True, min_pause_between_checkpoints=10)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1)
    effects = ack_all(c, 1, now=5)
    assert any(isinstance(e, CheckpointTriggerFailed) and e.reason == "MINIMUM_TIME_BETWEEN_CHECKPOINTS" for e in effects)
    assert c.num_queued_requests == 0


def test_queue_capacity():
    c = coord(queue_requests=True, max_queued_requests=2)
    c.trigger_checkpoint(now=0)
    c.trigger_checkpoint(now=1, periodic=False)
    c.trigger_checkpoint(now=2, periodic=False)
    r = c.trigger_checkpoint(now=3, periodic=False)
    assert r.reason == "TOO_MANY_CHECKPOINT_REQUESTS"
    # a periodic one at the tail is evicted in favour of a user request
    c2 = coord(queue_requests=True, max_queued_requests=2)
    c2.trigger_checkpoint(now=0)
    c2.trigger_checkpoint(now=1)
    c2.trigger_checkpoint(now=2)
    r = c2.trigger_checkpoint(now=3, periodic=False)
    assert r.status == "QUEUED"
    assert any(isinstance(e, CheckpointTriggerFailed) and e.request_timestamp == 2 for e in r.effects)


# ----------------------------------------------------------------------------- store


def test_store_retention_keeps_latest_n():
    s = CompletedCheckpointStore(2)
    assert s.add_checkpoint_and_subsume_oldest_one(cp(1)) == ()
    assert s.add_checkpoint_and_subsume_oldest_one(cp(2)) == ()
    sub = s.add_checkpoint_and_subsume_oldest_one(cp(3))
    assert [c.checkpoint_id for c in sub] == [1]
    assert s.checkpoint_ids() == (2, 3)
    assert last_subsumed_checkpoint_id(sub) == 1
    assert s.get_latest_checkpoint_id() == 3


def test_store_keeps_latest_non_savepoint_flink_21351():
    """num-retained 1: store [cp1]; add savepoint 2 -> cp1 kept (latest non-savepoint);
    add savepoint 3 -> savepoint 2 subsumed, cp1 still kept; add cp4 -> cp1 and sp3 go."""
    s = CompletedCheckpointStore(1)
    s.add_checkpoint_and_subsume_oldest_one(cp(1))
    assert s.add_checkpoint_and_subsume_oldest_one(cp(2, "savepoint")) == ()
    assert s.checkpoint_ids() == (1, 2)
    sub = s.add_checkpoint_and_subsume_oldest_one(cp(3, "savepoint"))
    assert [c.checkpoint_id for c in sub] == [2]
    assert last_subsumed_checkpoint_id(sub) == -1  # savepoints are not discardOnSubsumed
    assert s.checkpoint_ids() == (1, 3)
    sub = s.add_checkpoint_and_subsume_oldest_one(cp(4))
    assert [c.checkpoint_id for c in sub] == [1, 3]
    assert s.checkpoint_ids() == (4,)


def test_store_sync_savepoint_may_subsume_last_checkpoint():
    s = CompletedCheckpointStore(1)
    s.add_checkpoint_and_subsume_oldest_one(cp(1))
    sub = s.add_checkpoint_and_subsume_oldest_one(cp(2, "sync"))
    assert [c.checkpoint_id for c in sub] == [1]


def test_store_variant_without_keeping_non_savepoint():
    """FLINK-21351 variant: the last checkpoint is subsumed by a savepoint; restore would use it."""
    s = CompletedCheckpointStore(1, keep_latest_non_savepoint=False)
    s.add_checkpoint_and_subsume_oldest_one(cp(1))
    s.add_checkpoint_and_subsume_oldest_one(cp(2, "savepoint"))
    assert s.checkpoint_ids() == (2,)
    assert s.get_latest_checkpoint().is_savepoint


def test_completed_checkpoint_subsumed_by_store_reports_last_subsumed_id():
    """max retained 1: cp1 complete, cp2 complete -> notify(2, last_subsumed=1)."""
    c = coord()
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    c.trigger_checkpoint(now=2)
    effects = ack_all(c, 2, now=3)
    assert effects[0].subsumed_from_store == (1,)
    assert effects[-1] == NotifyCheckpointComplete(2, 2, 1, (0, 1, 2))


def test_restore_savepoint_resets_counter_and_is_restored():
    """Restart from savepoint 7 (NO_CLAIM): restore returns it, next id is 8; the first
    checkpoint of the new run subsumes it (it is a savepoint in the store)."""
    c = coord()
    sp = cp(7, "savepoint")
    restored = c.restore_savepoint(sp)
    assert restored.checkpoint_id == 7 and restored.properties.unclaimed
    assert c.restore_latest_checkpointed_state().checkpoint_id == 7
    assert c.trigger_checkpoint(now=0).checkpoint_id == 8
    ack_all(c, 8, now=1)
    assert c.store.checkpoint_ids() == (8,)
    with pytest.raises(InvalidArgument, match="claim_mode"):
        c.restore_savepoint(sp, "MAYBE")


# ----------------------------------------------------------------------------- unsafe variants


def test_restore_pending_variant_returns_incomplete_checkpoint():
    """Variant 'restoring a checkpoint that never completed'.
    1. cp1 completes, 2. cp2 acked by subtasks 0 and 1 only, 3. failover aborts cp2,
    4. the safe coordinator restores cp1; the variant restores cp2 (incomplete, no state
    for subtask 2)."""
    for variant in (False, True):
        with seams.active(("restore-pending-checkpoints",) if variant else ()):
            c = coord()
            c.trigger_checkpoint(now=0)
            ack_all(c, 1, now=1)
            c.trigger_checkpoint(now=2)
            ack_all(c, 2, now=3, tasks=(0, 1))
            before = c.restore_latest_checkpointed_state()
            c.abort_pending()
            after = c.restore_latest_checkpointed_state()
        if not variant:
            assert before.checkpoint_id == after.checkpoint_id == 1 and after.complete
        else:
            assert before.checkpoint_id == after.checkpoint_id == 2
            assert after.complete is False
            assert set(after.task_states) == {0, 1}


def test_notify_savepoint_complete_variant_flink_10354():
    """Variant: a plain savepoint notifies the tasks (commits side effects) but is not in
    the store, so a failure afterwards restores the older checkpoint."""
    c = coord()
    c.trigger_checkpoint(now=0)
    ack_all(c, 1, now=1)
    c.trigger_checkpoint(now=2, kind="savepoint")
    with seams.active(("FLINK-10354",)):
        effects = ack_all(c, 2, now=3)
    assert isinstance(effects[-1], NotifyCheckpointComplete) and effects[-1].checkpoint_id == 2
    assert c.restore_latest_checkpointed_state().checkpoint_id == 1


def test_pending_checkpoint_repr_is_python():
    pc = PendingCheckpoint(1, 0, CheckpointProperties.for_checkpoint(), {1}, None, True, (1,))
    assert "PendingCheckpoint(" in repr(pc)
    v = CompletedCheckpoint(3, 4, CheckpointProperties.for_savepoint(), {0: (1, 2)}, {"p": 1})
    assert eval(repr(v)) == v
