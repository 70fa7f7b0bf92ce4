"""Scenario tests for model.sinks: the external system and the three sink kinds.

The sink subtasks are driven by hand, as the runtime would drive them::

    ... ──► sink subtask 0 ──┐
                             ├──► ExternalSystem (committed output, upsert table, transactions)
    ... ──► sink subtask 1 ──┘

"snapshot n" = the barrier of checkpoint n reached the sink; "notify n" = the coordinator's
notify-checkpoint-complete(n) reached it; "fail" = the sink instance is discarded and a new
one is created from the restored state (or from nothing).
"""

from __future__ import annotations

import pytest

from model import seams
from model.errors import InvalidArgument
from model.oracle import diff_outputs
from model.sinks import (
    ABORTED,
    COMMITTED,
    OPEN,
    PRECOMMITTED,
    AppendSink,
    ExternalSystem,
    PendingCommit,
    TransactionId,
    TwoPhaseCommitSink,
    TwoPhaseCommitState,
    UpsertSink,
    make_sink,
    merge_restored_states,
)


def recs(n, start=0, key="k"):
    return [(key, i, i) for i in range(start, start + n)]


def write_all(ext, sink, records):
    for k, v, ts in records:
        sink.write(ext, k, v, ts)


def test_two_phase_commit_nothing_visible_before_notify():
    """1. write r0..r2, 2. snapshot 1: pre-commit, state lists the pending transaction,
    3. nothing visible, 4. notify 1: r0..r2 visible in order, once."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    write_all(ext, s, recs(3))
    first = s.current
    state = s.snapshot_state(ext, 1)
    assert ext.transactions[first].status == PRECOMMITTED
    assert state == TwoPhaseCommitState(s.current, (PendingCommit(1, first),))
    assert state.pending_transaction != first
    assert ext.committed == []
    assert s.notify_checkpoint_complete(ext, 1) == [first]
    assert ext.committed_records() == recs(3)
    assert ext.transactions[first].status == COMMITTED
    assert s.notify_checkpoint_complete(ext, 1) == []  # already committed: nothing left
    assert ext.committed_records() == recs(3)


def test_two_phase_commit_notify_commits_all_pending_up_to_id():
    """Concurrent checkpoints: 1. write a, snapshot 1, 2. write b, snapshot 2, 3. write c,
    snapshot 3, 4. notify 2 (notify 1 was lost): a and b committed in order, c pending,
    5. notify 3 commits c."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    s.write(ext, "a", 1, 1)
    s.snapshot_state(ext, 1)
    s.write(ext, "b", 2, 2)
    s.snapshot_state(ext, 2)
    s.write(ext, "c", 3, 3)
    st = s.snapshot_state(ext, 3)
    assert [p.checkpoint_id for p in st.pending_commit_transactions] == [1, 2, 3]
    s.notify_checkpoint_complete(ext, 2)
    assert ext.committed_records() == [("a", 1, 1), ("b", 2, 2)]
    assert list(s.pending_commit) == [3]
    s.notify_checkpoint_aborted(ext, 3)  # no effect
    s.notify_checkpoint_complete(ext, 3)
    assert ext.committed_records() == [("a", 1, 1), ("b", 2, 2), ("c", 3, 3)]


def test_failure_between_snapshot_and_notify_recommits_without_duplicates():
    """1. write r0..r4, snapshot 1 (checkpoint 1 completes on the master),
    2. write r5..r7 (after the barrier), 3. FAIL before notify 1 reaches the sink,
    4. restore from checkpoint 1: the pending transaction is committed (r0..r4), the one
    opened after the snapshot is aborted, 5. replay r5..r7, snapshot 2, notify 2,
    6. output == r0..r7 exactly once; 7. a stale notify 1 to the new instance is a no-op."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    write_all(ext, s, recs(5))
    state1 = s.snapshot_state(ext, 1)
    write_all(ext, s, recs(3, start=5))
    after_snapshot = s.current
    # failure: the instance is gone; only state1 survives
    s2 = TwoPhaseCommitSink(ext, 0, state1)
    assert ext.committed_records() == recs(5)
    assert ext.transactions[after_snapshot].status == ABORTED
    write_all(ext, s2, recs(3, start=5))
    s2.snapshot_state(ext, 2)
    s2.notify_checkpoint_complete(ext, 1)
    s2.notify_checkpoint_complete(ext, 2)
    assert diff_outputs(recs(8), ext.committed_records()).ok
    assert ext.anomalies == []


def test_restore_recommit_is_idempotent_when_already_committed():
    """1. snapshot 1, notify 1 (committed), 2. FAIL, 3. restore from checkpoint 1 commits
    the same transaction again: no-op, no duplicate."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    write_all(ext, s, recs(4))
    st = s.snapshot_state(ext, 1)
    s.notify_checkpoint_complete(ext, 1)
    TwoPhaseCommitSink(ext, 0, st)
    assert ext.committed_records() == recs(4)


def test_restore_aborts_lingering_open_transactions_but_not_precommitted():
    """1. snapshot 1 (txn A pending), 2. write, snapshot 2 (txn B pre-committed, checkpoint
    2 never completes), 3. write into txn C (open), 4. FAIL, restore from checkpoint 1:
    A committed, B aborted (it is state1's pending transaction), C aborted as lingering."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    s.write(ext, "a", 1, 1)
    a = s.current
    st1 = s.snapshot_state(ext, 1)
    b = s.current
    s.write(ext, "b", 2, 2)
    s.snapshot_state(ext, 2)
    c = s.current
    s.write(ext, "c", 3, 3)
    TwoPhaseCommitSink(ext, 0, st1)
    assert [ext.transactions[t].status for t in (a, b, c)] == [COMMITTED, ABORTED, ABORTED]
    assert ext.committed_records() == [("a", 1, 1)]


def test_fresh_start_aborts_open_transactions_of_a_failed_attempt():
    """No checkpoint completed: 1. write, 2. FAIL, 3. fresh start (None): the old open
    transaction is aborted, never visible; transaction ids are never reused."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 1)
    s.write(ext, "x", 1, 1)
    old = s.current
    s2 = TwoPhaseCommitSink(ext, 1, None)
    assert ext.transactions[old].status == ABORTED
    assert s2.current == TransactionId(1, 1)
    assert ext.committed == []


def test_rescale_in_restores_states_of_two_old_subtasks():
    """Scale-in 2 -> 1: both old sink subtasks snapshot checkpoint 1 and fail before notify;
    the single new subtask restores both entries and commits both pending transactions."""
    ext = ExternalSystem()
    s0, s1 = TwoPhaseCommitSink(ext, 0), TwoPhaseCommitSink(ext, 1)
    s0.write(ext, "a", 1, 1)
    s1.write(ext, "b", 2, 2)
    states = merge_restored_states([s0.snapshot_state(ext, 1), None, s1.snapshot_state(ext, 1)])
    TwoPhaseCommitSink(ext, 0, states)
    assert sorted(ext.committed_records()) == [("a", 1, 1), ("b", 2, 2)]
    assert ext.committed[1][3] == 1  # the record keeps the subtask that wrote it
    with pytest.raises(InvalidArgument):
        TwoPhaseCommitSink(ext, 0, ["not a state"])


def test_commit_of_aborted_transaction_is_an_anomaly():
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    s.write(ext, "a", 1, 1)
    tid = s.current
    ext.abort(tid)
    assert ext.commit(tid) is False
    assert ext.anomalies == [("commit_aborted", tid)]
    assert ext.committed == []


def test_savepoint_transaction_committed_by_next_checkpoint_notify():
    """1. write a, snapshot 2 (a savepoint: no notify), 2. write b, snapshot 3, notify 3:
    a and b committed."""
    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    s.write(ext, "a", 1, 1)
    s.snapshot_state(ext, 2)
    s.write(ext, "b", 2, 2)
    s.snapshot_state(ext, 3)
    s.notify_checkpoint_complete(ext, 3)
    assert ext.committed_records() == [("a", 1, 1), ("b", 2, 2)]


def test_append_sink_duplicates_after_restore():
    """Known-unsafe append sink: 1. write r0..r4 (checkpoint 1 after r2), 2. FAIL,
    3. restore from checkpoint 1 and replay r3..r4: r3 and r4 are visible twice."""
    ext = ExternalSystem()
    s = AppendSink(ext, 0)
    write_all(ext, s, recs(3))
    assert s.snapshot_state(ext, 1) is None
    write_all(ext, s, recs(2, start=3))
    s2 = make_sink("append", ext, 0, None)
    write_all(ext, s2, recs(2, start=3))
    d = diff_outputs(recs(5), ext.committed_records())
    assert not d.ok
    assert [(e.value, e.expected, e.actual) for e in d.duplicated] == [(3, 1, 2), (4, 1, 2)]
    assert d.missing == () and d.unexpected == ()


def test_upsert_sink_final_table_equal_after_replay():
    """Same failure as above with an upsert sink keyed by (key, window): the replay
    overwrites the same keys, the final table equals the failure-free one."""
    ext = ExternalSystem()
    s = UpsertSink(ext, 0)
    results = [(("k", w), w * 10, w) for w in range(5)]
    write_all(ext, s, results)
    s2 = make_sink("upsert", ext, 0, None)
    write_all(ext, s2, results[3:])
    assert len(ext.upsert_log) == 7
    assert diff_outputs(results, ext.upsert_records(), mode="upsert").ok
    # the changelog itself is not exactly-once: the replayed upserts show up twice
    changelog = diff_outputs(results, ext.upsert_log, mode="multiset")
    assert [e.key for e in changelog.duplicated] == [("k", 3), ("k", 4)]


def test_make_sink_rejects_unknown_kind():
    with pytest.raises(InvalidArgument, match="sink kind"):
        make_sink("exactly_twice", ExternalSystem(), 0)
    assert isinstance(make_sink("two_phase_commit", ExternalSystem(), 0), TwoPhaseCommitSink)
    assert OPEN == "OPEN"


def test_two_phase_commit_write_is_fast():
    """10k writes + 100 checkpoints in well under a second."""
    import time

    ext = ExternalSystem()
    s = TwoPhaseCommitSink(ext, 0)
    t0 = time.perf_counter()
    for i in range(10_000):
        s.write(ext, i % 7, i, i)
        if i % 100 == 99:
            s.snapshot_state(ext, i // 100 + 1)
            s.notify_checkpoint_complete(ext, i // 100 + 1)
    assert time.perf_counter() - t0 < 1.0
    assert len(ext.committed) == 10_000


def _run_with_failure(restore_pending: bool):
    """Drive coordinator + 2PC sink by hand on::

        src (subtask 0, records r0..r9, state = offset) ──► sink (subtask 1, 2PC)

    1. src emits r0..r2; checkpoint 1: src acks offset 3, sink snapshots and acks -> complete,
       notify commits r0..r2;
    2. src emits r3..r5; checkpoint 2: src acks offset 6; the barrier is still in flight;
    3. FAIL (all tasks): abort pending, restore, src rewinds, sink re-initialised;
    4. src emits the rest; final checkpoint; notify.
    Returns the committed output."""
    from model.checkpointcoordinator import CheckpointCoordinator, NotifyCheckpointComplete

    data = recs(10)
    ext = ExternalSystem()
    c = CheckpointCoordinator([0], [0, 1])
    sink = TwoPhaseCommitSink(ext, 1)
    offset = 0

    def emit(n):
        nonlocal offset
        for r in data[offset : offset + n]:
            sink.write(ext, *r)
        offset = min(offset + n, len(data))

    def notify(effects):
        for e in effects:
            if isinstance(e, NotifyCheckpointComplete):
                sink.notify_checkpoint_complete(ext, e.checkpoint_id)

    emit(3)
    cid = c.trigger_checkpoint(now=1).checkpoint_id
    c.receive_acknowledge(cid, 0, offset, now=2)
    notify(c.receive_acknowledge(cid, 1, sink.snapshot_state(ext, cid), now=3))
    emit(3)
    cid = c.trigger_checkpoint(now=4).checkpoint_id
    c.receive_acknowledge(cid, 0, offset, now=5)
    # failure (with the seam restore-pending-checkpoints acting on the restore in the unsafe run)
    with seams.active(("restore-pending-checkpoints",) if restore_pending else ()):
        restored = c.restore_latest_checkpointed_state()
    c.abort_pending()
    offset = restored.task_states.get(0, 0)
    sink = TwoPhaseCommitSink(ext, 1, restored.task_states.get(1))
    emit(10)
    cid = c.trigger_checkpoint(now=10).checkpoint_id
    c.receive_acknowledge(cid, 0, offset, now=11)
    notify(c.receive_acknowledge(cid, 1, sink.snapshot_state(ext, cid), now=12))
    return data, ext.committed_records()


def test_restore_pending_variant_loses_output_where_safe_restore_is_exact():
    data, out = _run_with_failure(restore_pending=False)
    assert diff_outputs(data, out).ok
    data, out = _run_with_failure(restore_pending=True)
    d = diff_outputs(data, out)
    assert [e.value for e in d.missing] == [3, 4, 5]
    assert d.duplicated == () and d.unexpected == ()


# -- the external system's transaction protocol, and the sink's entry points ---------------


def test_snapshot_pre_commits_the_current_transaction_for_its_checkpoint():
    """``snapshotState(n)``: preCommit(current) and pendingCommitTransactions.put(n, current),
    then a new transaction; the returned state names both."""
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 0)
    first = sink.current
    write_all(ext, sink, recs(2))
    state = sink.snapshot_state(ext, 5)
    txn = ext.transactions[first]
    assert (txn.status, txn.checkpoint_id) == (PRECOMMITTED, 5)
    assert sink.current != first and ext.transactions[sink.current].status == OPEN
    assert ext.transactions[sink.current].checkpoint_id is None
    assert state == TwoPhaseCommitState(sink.current, (PendingCommit(5, first),))
    assert ext.committed == []


def test_the_four_transaction_states_are_distinct_names():
    """The viewer and the anomalies show a transaction's state by its name."""
    assert [OPEN, PRECOMMITTED, COMMITTED, ABORTED] == ["OPEN", "PRECOMMITTED", "COMMITTED", "ABORTED"]


def test_commit_and_abort_say_whether_they_changed_anything():
    ext = ExternalSystem()
    a, b, c = (ext.begin_transaction(0) for _ in range(3))
    a.records.append(("k", 1, 1))
    ext.pre_commit(a.id, 1)
    assert ext.commit(a.id) is True and ext.committed == [("k", 1, 1, 0)]
    assert ext.commit(a.id) is False and ext.committed == [("k", 1, 1, 0)]  # idempotent
    assert ext.abort(a.id) is False and ext.anomalies == [("abort_committed", a.id)]
    assert ext.transactions[a.id].status == COMMITTED
    assert ext.abort(b.id) is True and ext.transactions[b.id].status == ABORTED
    assert ext.abort(b.id) is False and len(ext.anomalies) == 1
    c.records.append(("j", 2, 2))
    assert ext.commit(c.id) is True  # never pre-committed: visible, but recorded as an anomaly
    assert ext.anomalies[-1] == ("commit_open", c.id) and ext.committed[-1] == ("j", 2, 2, 0)


def test_pre_commit_of_a_transaction_that_is_not_open_is_an_anomaly():
    ext = ExternalSystem()
    t = ext.begin_transaction(3)
    ext.pre_commit(t.id, 1)
    ext.pre_commit(t.id, 2)
    assert ext.anomalies == [("pre_commit", t.id, PRECOMMITTED)]
    assert ext.transactions[t.id].checkpoint_id == 1


def test_unknown_transaction_is_refused():
    ext = ExternalSystem()
    with pytest.raises(InvalidArgument, match="unknown to the external system"):
        ext.commit(TransactionId(0, 7))


def test_transaction_ids_are_per_owner_sequences():
    ext = ExternalSystem()
    ids = [ext.begin_transaction(o).id for o in (0, 1, 0, 0, 1)]
    assert ids == [TransactionId(0, 0), TransactionId(1, 0), TransactionId(0, 1), TransactionId(0, 2),
                   TransactionId(1, 1)]


def test_uncommitted_transactions_of_an_owner_in_id_order():
    ext = ExternalSystem()
    t = [ext.begin_transaction(o) for o in (1, 0, 1, 1, 0)]
    ext.pre_commit(t[2].id, 1)
    ext.commit(t[3].id)
    ext.abort(t[4].id)
    assert [x.id for x in ext.uncommitted_transactions()] == [t[1].id, t[0].id, t[2].id]
    assert [x.id for x in ext.uncommitted_transactions(1)] == [t[0].id, t[2].id]
    assert [x.id for x in ext.uncommitted_transactions(1, (OPEN,))] == [t[0].id]
    assert [x.id for x in ext.uncommitted_transactions(0, (PRECOMMITTED,))] == []


def test_make_sink_runs_initialize_state_with_the_restored_state():
    ext = ExternalSystem()
    old = TwoPhaseCommitSink(ext, 0)
    write_all(ext, old, recs(2))
    state = old.snapshot_state(ext, 1)
    restored = make_sink("two_phase_commit", ext, 0, state)
    assert isinstance(restored, TwoPhaseCommitSink) and restored.kind == "two_phase_commit"
    assert ext.committed_records() == recs(2)  # recoverAndCommit of the pending transaction
    assert ext.transactions[state.pending_transaction].status == ABORTED  # recoverAndAbort
    assert isinstance(make_sink("upsert", ext, 1), UpsertSink) and make_sink("upsert", ext, 1).kind == "upsert"
    assert isinstance(make_sink("append", ext, 1), AppendSink) and make_sink("append", ext, 1).kind == "append"


def test_initialize_state_aborts_lingering_open_transactions_by_default():
    """A new attempt of subtask 0 aborts the transaction its failed attempt left open (the
    default of both the constructor and ``initialize_state``)."""
    ext = ExternalSystem()
    failed = TwoPhaseCommitSink(ext, 0)
    write_all(ext, failed, recs(1))
    lingering = failed.current
    again = TwoPhaseCommitSink.__new__(TwoPhaseCommitSink)
    again.subtask, again.current, again.pending_commit = 0, None, {}
    again.initialize_state(ext)
    assert ext.transactions[lingering].status == ABORTED
    assert again.current != lingering and ext.transactions[again.current].status == OPEN and again.pending_commit == {}


def test_initialize_state_forgets_pending_commits_of_the_instance():
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 0)
    sink.snapshot_state(ext, 1)
    sink.initialize_state(ext, None)
    assert sink.pending_commit == {} and sink.notify_checkpoint_complete(ext, 1) == []


def test_notify_returns_the_committed_transactions_in_checkpoint_order():
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 0)
    assert sink.notify_checkpoint_complete(ext, 3) == []
    ids = []
    for n in (1, 2, 3):
        ids.append(sink.current)
        write_all(ext, sink, recs(1, start=n))
        sink.snapshot_state(ext, n)
    assert sink.notify_checkpoint_complete(ext, 2) == ids[:2]
    assert list(sink.pending_commit) == [3]
    sink.notify_checkpoint_aborted(ext, 3)
    assert list(sink.pending_commit) == [3]  # an abort notification changes nothing
    assert sink.notify_checkpoint_complete(ext, 3) == ids[2:]


def test_close_aborts_the_current_transaction():
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 0)
    cur = sink.current
    sink.close(ext)
    assert ext.transactions[cur].status == ABORTED and sink.current is None
    sink.close(ext)  # twice: nothing more
    assert ext.anomalies == []


def test_stateless_sinks_have_no_state_and_commit_nothing():
    ext = ExternalSystem()
    for sink in (UpsertSink(ext, 0), AppendSink(ext, 0)):
        assert sink.snapshot_state(ext, 1) is None and sink.notify_checkpoint_complete(ext, 1) == []
        assert sink.initialize_state(ext, None) is None and sink.notify_checkpoint_aborted(ext, 1) is None
        assert sink.close(ext) is None


def test_upsert_sink_keeps_the_changelog_and_the_last_value_per_key():
    ext = ExternalSystem()
    s0, s1 = UpsertSink(ext, 0), UpsertSink(ext, 1)
    s0.write(ext, "a", 1, 10)
    s1.write(ext, "b", 2, 20)
    s0.write(ext, "a", 3, 30)
    assert ext.upsert_log == [("a", 1, 10, 0), ("b", 2, 20, 1), ("a", 3, 30, 0)]
    assert ext.upsert_records() == [("a", 3, 30), ("b", 2, 20)]
    assert ext.committed == []


def test_append_sink_output_names_its_subtask():
    ext = ExternalSystem()
    AppendSink(ext, 4).write(ext, "k", 1, 2)
    assert ext.committed == [("k", 1, 2, 4)] and ext.committed_records() == [("k", 1, 2)]


def test_merge_restored_states_flattens_and_skips_none():
    s1 = TwoPhaseCommitState(TransactionId(0, 1))
    s2 = TwoPhaseCommitState(TransactionId(1, 1), (PendingCommit(1, TransactionId(1, 0)),))
    assert merge_restored_states([None, s1, [s2], None]) == [s1, s2]
    assert merge_restored_states([]) == []


def test_the_protocol_invariant_reports_the_first_anomaly():
    from types import SimpleNamespace

    from spec.exactly_once import transactions_follow_two_phase_commit

    ext = ExternalSystem()
    run = SimpleNamespace(cluster=SimpleNamespace(external=ext))
    t = ext.begin_transaction(2)
    ext.pre_commit(t.id, 1)
    ext.commit(t.id)
    assert transactions_follow_two_phase_commit(run) is None  # the protocol, followed
    ext.abort(t.id)
    v = transactions_follow_two_phase_commit(run)
    assert v is not None and v.invariant == "transactions_follow_two_phase_commit"
    assert v.actual == {"transaction": [2, 0], "anomaly": "abort_committed"}
    assert "aborted a transaction that was already committed" in v.message


def test_a_savepoint_that_commits_then_an_older_restore_breaks_the_protocol():
    """FLINK-10354: the savepoint's notification commits the transaction that checkpoint 1
    holds as its open one; the restore from checkpoint 1 then aborts a committed
    transaction. The same walk without the bug follows the protocol."""
    import attrs

    from model.variants import PASS, VARIANTS
    from properties.engines import random_walk

    bug = VARIANTS["FLINK-10354"]
    found = next((r for r in (random_walk(bug, seed) for seed in range(40))
                  if r.invariant == "transactions_follow_two_phase_commit"), None)
    assert found is not None, "FLINK-10354: no walk of 40 broke transactions_follow_two_phase_commit"
    safe = attrs.evolve(bug, expected=(PASS,), seams=())
    assert random_walk(safe, found.seed).violation is None


def test_restore_of_a_state_without_pending_transactions_aborts_its_open_one():
    ext = ExternalSystem()
    old = TwoPhaseCommitSink(ext, 0)
    write_all(ext, old, recs(1))
    state = TwoPhaseCommitState(old.current)
    TwoPhaseCommitSink(ext, 1, state)
    assert ext.transactions[state.pending_transaction].status == ABORTED and ext.committed == []


def test_without_abort_lingering_an_open_transaction_of_a_failed_attempt_stays_open():
    ext = ExternalSystem()
    failed = TwoPhaseCommitSink(ext, 0)
    lingering = failed.current
    TwoPhaseCommitSink(ext, 0, None, abort_lingering=False)
    assert ext.transactions[lingering].status == OPEN


def test_sink_reprs_name_the_subtask_the_transaction_and_the_pending_checkpoints():
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 3)
    sink.snapshot_state(ext, 7)
    assert repr(sink) == f"<TwoPhaseCommitSink subtask=3 current={sink.current!r} pending=[7]>"
    sink.close(ext)
    assert repr(sink) == "<TwoPhaseCommitSink subtask=3 current=None pending=[7]>"
    assert repr(UpsertSink(ext, 1)) == "<UpsertSink subtask=1>" and repr(AppendSink(ext, 2)) == "<AppendSink subtask=2>"


@pytest.mark.parametrize("kind", ["two_phase_commit", "upsert", "append"])
def test_exactly_once_sink_kinds_are_those_whose_output_survives_a_restore(kind):
    """Write 2 records, checkpoint 1 completes, write 2 more, fail, restore checkpoint 1,
    replay the 2, checkpoint 2 completes: the output equals the input exactly when the kind
    is one of EXACTLY_ONCE_SINK_KINDS."""
    from model.sinks import EXACTLY_ONCE_SINK_KINDS

    rows = [(f"k{i}", i, i) for i in range(4)]
    ext = ExternalSystem()
    sink = make_sink(kind, ext, 0)
    write_all(ext, sink, rows[:2])
    state = sink.snapshot_state(ext, 1)
    sink.notify_checkpoint_complete(ext, 1)
    write_all(ext, sink, rows[2:])  # lost with the failure
    sink = make_sink(kind, ext, 0, state)
    write_all(ext, sink, rows[2:])  # replayed from the source's restored offset
    sink.snapshot_state(ext, 2)
    sink.notify_checkpoint_complete(ext, 2)
    out = ext.upsert_records() if kind == "upsert" else ext.committed_records()
    assert (sorted(out) == rows) == (kind in EXACTLY_ONCE_SINK_KINDS)
