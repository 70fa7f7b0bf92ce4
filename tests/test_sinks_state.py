"""model.sinks call by call: the external system's and the sinks' tables asserted right after
each call, as ``TwoPhaseCommitSinkFunction`` and a transactional external system (Kafka's
transactional producer, say) leave them -- before a later call could trip over a wrong value.

Each test drives one object by hand and compares whole values (a table, a transaction's fields),
so that a wrong field is a failing assertion here and not an exception in a later call."""

from __future__ import annotations

import pytest

from model.errors import InvalidArgument
from model.sinks import (
    ABORTED,
    APPEND,
    COMMITTED,
    OPEN,
    PRECOMMITTED,
    TWO_PHASE_COMMIT,
    UPSERT,
    AppendSink,
    ExternalSystem,
    PendingCommit,
    Transaction,
    TransactionId,
    TwoPhaseCommitSink,
    TwoPhaseCommitState,
    UpsertSink,
    make_sink,
    merge_restored_states,
)


def _fields(txn: Transaction) -> tuple:
    return txn.id, txn.status, txn.records, txn.checkpoint_id


def _tables(ext: ExternalSystem) -> tuple:
    return ext.committed, ext.upsert_table, ext.upsert_log, ext.transactions, ext.anomalies, ext._next_seq


def test_a_new_transaction_is_open_empty_and_not_precommitted():
    tid = TransactionId(3, 7)
    assert _fields(Transaction(tid)) == (tid, OPEN, [], None)


def test_a_new_external_system_holds_nothing():
    assert _tables(ExternalSystem()) == ([], {}, [], {}, [], {})


def test_begin_transaction_numbers_per_owner_and_holds_the_transaction():
    ext = ExternalSystem()
    a = ext.begin_transaction(0)
    assert _fields(a) == (TransactionId(0, 0), OPEN, [], None)
    assert ext.transactions == {TransactionId(0, 0): a} and ext._next_seq == {0: 1}
    b = ext.begin_transaction(1)
    c = ext.begin_transaction(0)
    assert (b.id, c.id) == (TransactionId(1, 0), TransactionId(0, 1))
    assert ext.transactions == {a.id: a, b.id: b, c.id: c} and ext._next_seq == {0: 2, 1: 1}
    assert list(ext.transactions) == [a.id, b.id, c.id]  # begun order


def test_pre_commit_commit_and_abort_leave_the_transaction_and_the_tables_as_stated():
    ext = ExternalSystem()
    t = ext.begin_transaction(2)
    t.records.extend([("k", 1, 10), ("j", 2, 20)])
    assert ext.pre_commit(t.id, 5) is None
    assert _fields(t) == (t.id, PRECOMMITTED, [("k", 1, 10), ("j", 2, 20)], 5)
    assert _tables(ext)[:3] == ([], {}, []) and ext.anomalies == []
    assert ext.commit(t.id) is True
    assert _fields(t)[1:] == (COMMITTED, [("k", 1, 10), ("j", 2, 20)], 5)
    assert ext.committed == [("k", 1, 10, 2), ("j", 2, 20, 2)] and ext.anomalies == []
    assert ext.commit(t.id) is False and ext.committed == [("k", 1, 10, 2), ("j", 2, 20, 2)]
    u = ext.begin_transaction(2)
    assert ext.abort(u.id) is True and _fields(u) == (TransactionId(2, 1), ABORTED, [], None)
    assert ext.abort(u.id) is False and ext.anomalies == []
    # a pre-commit of a transaction no longer open changes nothing and is an anomaly
    ext.pre_commit(u.id, 6)
    assert _fields(u) == (TransactionId(2, 1), ABORTED, [], None)
    assert ext.anomalies == [("pre_commit", u.id, ABORTED)]


def test_uncommitted_transactions_by_owner_and_status_in_id_order():
    ext = ExternalSystem()
    b0 = ext.begin_transaction(1)
    a0 = ext.begin_transaction(0)
    a1 = ext.begin_transaction(0)
    ext.pre_commit(a0.id, 1)
    assert ext.uncommitted_transactions() == [a0, a1, b0]
    assert ext.uncommitted_transactions(0) == [a0, a1]
    assert ext.uncommitted_transactions(0, (OPEN,)) == [a1]
    assert ext.uncommitted_transactions(None, (PRECOMMITTED,)) == [a0]
    ext.commit(a0.id)
    assert ext.uncommitted_transactions(0) == [a1]


def test_upsert_and_append_write_their_tables_at_once():
    ext = ExternalSystem()
    ext.upsert("k", 1, 10, 0)
    ext.upsert("k", 2, 20, 1)
    ext.append("j", 3, 30, 1)
    assert ext.upsert_table == {"k": (2, 20)}
    assert ext.upsert_log == [("k", 1, 10, 0), ("k", 2, 20, 1)]
    assert ext.committed == [("j", 3, 30, 1)] and ext.transactions == {}
    assert ext.committed_records() == [("j", 3, 30)] and ext.upsert_records() == [("k", 2, 20)]


def test_a_fresh_two_phase_commit_sink_begins_one_transaction_and_holds_nothing_pending():
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 4)
    assert (sink.subtask, sink.current, sink.pending_commit) == (4, TransactionId(4, 0), {})
    assert sink.__slots__ == ("subtask", "current", "pending_commit")  # no link to the external system
    assert [_fields(t) for t in ext.transactions.values()] == [(TransactionId(4, 0), OPEN, [], None)]
    assert (sink.kind, sink.checkpoint_listener) == (TWO_PHASE_COMMIT, True)


def test_write_snapshot_notify_and_close_each_leave_the_sink_and_the_system_as_flink_does():
    ext = ExternalSystem()
    sink = TwoPhaseCommitSink(ext, 0)
    t0 = sink.current
    sink.write(ext, "k", 1, 10)
    assert ext.transactions[t0].records == [("k", 1, 10)] and ext.committed == []
    state = sink.snapshot_state(ext, 1)
    t1 = TransactionId(0, 1)
    assert state == TwoPhaseCommitState(t1, (PendingCommit(1, t0),))
    assert sink.current == t1 and sink.pending_commit == {1: t0}
    assert _fields(ext.transactions[t0]) == (t0, PRECOMMITTED, [("k", 1, 10)], 1)
    assert _fields(ext.transactions[t1]) == (t1, OPEN, [], None)
    sink.write(ext, "k", 2, 20)
    state = sink.snapshot_state(ext, 2)
    t2 = TransactionId(0, 2)
    assert state == TwoPhaseCommitState(t2, (PendingCommit(1, t0), PendingCommit(2, t1)))
    assert sink.pending_commit == {1: t0, 2: t1}
    # a notification commits the pending transactions up to its id, in order, and forgets them
    assert sink.notify_checkpoint_complete(ext, 1) == [t0]
    assert sink.pending_commit == {2: t1} and ext.committed == [("k", 1, 10, 0)]
    assert ext.transactions[t0].status == COMMITTED and ext.transactions[t1].status == PRECOMMITTED
    assert sink.notify_checkpoint_aborted(ext, 2) is None and sink.pending_commit == {2: t1}
    assert sink.notify_checkpoint_complete(ext, 1) == [] and sink.pending_commit == {2: t1}
    assert sink.notify_checkpoint_complete(ext, 5) == [t1] and sink.pending_commit == {}
    assert sink.notify_checkpoint_complete(ext, 6) == []
    assert ext.committed == [("k", 1, 10, 0), ("k", 2, 20, 0)] and ext.anomalies == []
    sink.close(ext)
    assert sink.current is None and ext.transactions[t2].status == ABORTED
    sink.close(ext)
    assert sink.current is None and ext.anomalies == []


def test_a_restore_commits_the_pending_aborts_the_current_and_begins_anew():
    ext = ExternalSystem()
    old = TwoPhaseCommitSink(ext, 0)
    old.write(ext, "k", 1, 10)
    state = old.snapshot_state(ext, 1)
    old.write(ext, "k", 2, 20)  # after the checkpoint: lost with the failure
    lingering = ext.begin_transaction(0)  # an open transaction the restored state does not name
    new = TwoPhaseCommitSink(ext, 0, state)
    assert new.pending_commit == {} and new.current == TransactionId(0, 3)
    assert [(t.id.seq, t.status) for t in ext.transactions.values()] == [
        (0, COMMITTED), (1, ABORTED), (2, ABORTED), (3, OPEN)]
    assert ext.committed == [("k", 1, 10, 0)] and ext.anomalies == []
    kept = ExternalSystem()
    keeping = TwoPhaseCommitSink(kept, 1)
    TwoPhaseCommitSink(kept, 1, None, abort_lingering=False)
    assert kept.transactions[keeping.current].status == OPEN


def test_make_sink_looks_the_kind_up_in_its_table():
    from model import sinks

    assert sinks._SINK_CLASSES == {TWO_PHASE_COMMIT: TwoPhaseCommitSink, UPSERT: UpsertSink, APPEND: AppendSink}
    with pytest.raises(InvalidArgument, match=r"^sink kind 'kafka': must be one of two_phase_commit, upsert, append$"):
        make_sink("kafka", ExternalSystem(), 0)


def test_the_stateless_sinks_hold_their_subtask_only():
    ext = ExternalSystem()
    for cls, kind in ((UpsertSink, UPSERT), (AppendSink, APPEND)):
        sink = cls(ext, 3, None)
        assert (sink.subtask, sink.kind, sink.checkpoint_listener) == (3, kind, False) and not hasattr(sink, "external")
        assert sink.initialize_state(ext, None) is None and sink.snapshot_state(ext, 1) is None
        assert sink.notify_checkpoint_complete(ext, 1) == [] and sink.notify_checkpoint_aborted(ext, 1) is None
        assert sink.close(ext) is None
        made = make_sink(kind, ext, 2)
        assert type(made) is cls and made.subtask == 2
    UpsertSink(ext, 3).write(ext, "k", 1, 10)
    AppendSink(ext, 4).write(ext, "j", 2, 20)
    assert ext.upsert_log == [("k", 1, 10, 3)] and ext.committed == [("j", 2, 20, 4)]
    two = make_sink(TWO_PHASE_COMMIT, ext, 5)
    assert type(two) is TwoPhaseCommitSink and two.subtask == 5 and two.current == TransactionId(5, 0)


def test_merged_restored_states_keep_every_entry_in_order():
    a = TwoPhaseCommitState(TransactionId(0, 1), (PendingCommit(1, TransactionId(0, 0)),))
    b = TwoPhaseCommitState(TransactionId(1, 1))
    assert merge_restored_states([a, None, [b], None]) == [a, b]
    assert merge_restored_states([]) == [] and merge_restored_states([None]) == []


def test_the_sink_kinds_are_the_job_specs_and_the_statuses_are_named():
    """The sink kinds are the job spec's ``sink_kind`` values (``model.streamgraph``); a
    transaction's status is named in the anomalies the two-phase-commit invariant reports."""
    from model import sinks, streamgraph

    assert sinks.SINK_KINDS == streamgraph.SINK_KINDS == (TWO_PHASE_COMMIT, UPSERT, APPEND)
    assert (TWO_PHASE_COMMIT, UPSERT, APPEND) == ("two_phase_commit", "upsert", "append")
    assert (OPEN, PRECOMMITTED, COMMITTED, ABORTED) == ("OPEN", "PRECOMMITTED", "COMMITTED", "ABORTED")
    assert sinks.EXACTLY_ONCE_SINK_KINDS == ("two_phase_commit", "upsert")


def test_a_state_without_pending_commits_and_the_lookup_of_a_transaction():
    tid = TransactionId(1, 2)
    assert TwoPhaseCommitState(tid) == TwoPhaseCommitState(tid, ())
    assert TwoPhaseCommitState(tid).pending_commit_transactions == ()
    ext = ExternalSystem()
    with pytest.raises(InvalidArgument, match="unknown to the external system"):
        ext._get(TransactionId(1, 5))
    t = ext.begin_transaction(1)
    assert ext._get(t.id) is t


class _Recording(ExternalSystem):
    """The external system, recording every call a sink makes on it, and answering only those
    naming a transaction it holds (a call naming another is recorded, changes nothing and
    answers False or nothing): the sink's calls are asserted exactly, as Flink's
    ``TwoPhaseCommitSinkFunctionTest`` asserts what its sink did to the transactions."""

    __slots__ = ("calls",)

    def __init__(self):
        super().__init__()
        self.calls: list = []

    def begin_transaction(self, owner):
        self.calls.append(("begin", owner))
        return super().begin_transaction(owner)

    def pre_commit(self, tid, checkpoint_id):
        self.calls.append(("pre_commit", tid, checkpoint_id))
        return super().pre_commit(tid, checkpoint_id) if tid in self.transactions else None

    def commit(self, tid):
        self.calls.append(("commit", tid))
        return super().commit(tid) if tid in self.transactions else False

    def abort(self, tid):
        self.calls.append(("abort", tid))
        return super().abort(tid) if tid in self.transactions else False

    def uncommitted_transactions(self, owner=None, statuses=(OPEN, PRECOMMITTED)):
        self.calls.append(("uncommitted", owner, statuses))
        return super().uncommitted_transactions(owner, statuses) if isinstance(statuses, tuple) else []


def test_the_calls_a_two_phase_commit_sink_makes_on_the_external_system():
    """``initializeState``, ``snapshotState``, ``notifyCheckpointComplete`` and ``close``: each
    call's requests to the external system, exactly and in order."""
    ext = _Recording()
    sink = TwoPhaseCommitSink(ext, 2)
    t = [TransactionId(2, n) for n in range(3)]
    assert ext.calls == [("uncommitted", 2, (OPEN,)), ("begin", 2)]
    ext.calls.clear()
    sink.write(ext, "k", 1, 10)
    sink.snapshot_state(ext, 1)
    assert ext.calls == [("pre_commit", t[0], 1), ("begin", 2)]
    ext.calls.clear()
    sink.snapshot_state(ext, 2)
    sink.notify_checkpoint_complete(ext, 2)
    assert ext.calls == [("pre_commit", t[1], 2), ("begin", 2), ("commit", t[0]), ("commit", t[1])]
    ext.calls.clear()
    sink.close(ext)
    assert ext.calls == [("abort", t[2])]
    # a restore: the pending ones committed, the restored current one aborted, this subtask's
    # open ones aborted, then a new transaction
    ext.calls.clear()
    old = TwoPhaseCommitSink(ext, 3)
    old.write(ext, "j", 2, 20)
    state = old.snapshot_state(ext, 7)
    u = [TransactionId(3, n) for n in range(2)]
    lingering = ext.begin_transaction(3)
    ext.calls.clear()
    TwoPhaseCommitSink(ext, 3, state)
    assert ext.calls == [("commit", u[0]), ("abort", u[1]), ("uncommitted", 3, (OPEN,)), ("abort", lingering.id),
                         ("begin", 3)]
