"""model.statebackend call by call: each backend's tables asserted right after each call, as
``HeapSnapshotStrategy`` and ``RocksIncrementalSnapshotStrategy`` leave them -- the pending
snapshots of the synchronous phase, the live SST files, the view they read to, the uploads per
checkpoint and the last confirmed one -- before a later call could trip over a wrong value."""

from __future__ import annotations

import attrs

from model.checkpointstorage import CheckpointStorage, KeyedStateHandle
from model.cluster import RuntimeConfig
from model.statebackend import (
    BACKENDS,
    MAX_LIVE_SSTS,
    HashMapStateBackend,
    KeyedStateBackend,
    RocksDBStateBackend,
    make_backend,
    restored_files_are_the_base,
)
from model.streamtask import TaskSnapshot


def _snap(cid, keyed, subtask=0):
    return TaskSnapshot(cid, subtask, "agg", 0, keyed={k: dict(v) for k, v in keyed.items()})


def _rocks(b: RocksDBStateBackend) -> tuple:
    return b.incremental, b.ssts, b.live, b.view, b.next_sst, b.uploads, b.confirmed


class _Op:
    def __init__(self, state):
        self.state = state

    def snapshot_state(self):
        return dict(self.state)


def test_the_backend_names_and_the_compaction_bound():
    """First in the file: a mutant that breaks another test module's collection (the names read
    by ``RuntimeConfig``'s check) still meets this assertion."""
    assert BACKENDS == ("hashmap", "rocksdb") and MAX_LIVE_SSTS == 3


def test_a_new_backend_holds_its_uid_and_nothing_pending():
    heap = HashMapStateBackend("t-0")
    assert (heap.uid, heap.pending, heap.checkpoint_listener) == ("t-0", {}, False)
    rocks = RocksDBStateBackend("t-1", incremental=True)
    assert (rocks.uid, rocks.pending, rocks.checkpoint_listener) == ("t-1", {}, True)
    assert _rocks(rocks) == (True, {}, [], {}, 0, {}, None)
    assert _rocks(RocksDBStateBackend("t-2", incremental=False))[0] is False
    assert KeyedStateBackend.notify_complete(heap, 1) is None
    # the backend holds no link to the task's operators: the asynchronous phase is handed them
    assert KeyedStateBackend.__slots__ == ("uid", "pending")
    operators = {"agg": _Op({1: "a"})}
    assert heap.state_to_write({"agg": {1: "old"}}, operators) == {"agg": {1: "old"}}


def test_make_backend_follows_the_configuration():
    assert BACKENDS == ("hashmap", "rocksdb")
    assert isinstance(MAX_LIVE_SSTS, int) and MAX_LIVE_SSTS >= 1  # a count of files
    heap = make_backend(RuntimeConfig(state_backend="hashmap"), "u")
    assert type(heap) is HashMapStateBackend and heap.uid == "u"
    for incremental in (True, False):
        rocks = make_backend(RuntimeConfig(state_backend="rocksdb", incremental=incremental), "v")
        assert type(rocks) is RocksDBStateBackend and (rocks.uid, rocks.incremental) == ("v", incremental)
    assert [restored_files_are_the_base(m) for m in ("CLAIM", "NO_CLAIM")] == [True, False]


def test_the_synchronous_phase_keeps_the_snapshot_pending_until_ready_and_written():
    b = HashMapStateBackend("t")
    s1 = _snap(1, {"agg": {1: "a"}})
    assert b.sync_phase(s1) is None
    assert b.pending == {1: [s1, {"agg": {1: "a"}}, False]} and b.ready_ids() == []
    s2 = _snap(2, {"agg": {1: "b"}})
    b.sync_phase(s2)
    later = _snap(1, {"agg": {1: "a"}}, subtask=0)
    b.ready(later)
    assert b.pending[1][0] is later and b.pending[1][2] is True and b.pending[2][2] is False
    assert b.ready_ids() == [1]
    b.ready(_snap(9, {}))  # no such pending snapshot: nothing changes
    assert sorted(b.pending) == [1, 2]
    storage = CheckpointStorage()
    done = b.async_phase(1, storage, savepoint=False, operators={})
    assert sorted(b.pending) == [2] and b.ready_ids() == []
    assert done.state_handle == KeyedStateHandle(1, (("t", "chk-1/t"),), ("chk-1/t",), False)
    assert done.keyed == later.keyed and done.checkpoint_id == 1
    assert storage.files == {"chk-1/t": ((("agg", 1), "a"),)}


def test_a_heap_savepoint_and_restore():
    b = HashMapStateBackend("t")
    b.sync_phase(_snap(3, {"agg": {2: "y", 1: "x"}}))
    storage = CheckpointStorage()
    done = b.async_phase(3, storage, savepoint=True, operators={})
    assert done.state_handle == KeyedStateHandle(3, (("t", "sp-3/t"),), ("sp-3/t",), False)
    assert storage.files == {"sp-3/t": ((("agg", 1), "x"), (("agg", 2), "y"))}
    fresh = HashMapStateBackend("t")
    assert fresh.restore(done.state_handle, storage, {}, keep_base=True) == {"agg": {1: "x", 2: "y"}}
    assert fresh.restore(None, storage, {"agg": {5: "z"}}, keep_base=False) == {"agg": {5: "z"}}
    assert fresh.pending == {}


def test_rocksdb_flush_adds_one_sst_of_the_changes_and_moves_the_view():
    b = RocksDBStateBackend("t", incremental=True)
    b._flush({("agg", 2): "b", ("agg", 1): "a"})
    assert _rocks(b)[1:5] == ({"t-0": ((("agg", 1), "a"), (("agg", 2), "b"))}, ["t-0"],
                              {("agg", 2): "b", ("agg", 1): "a"}, 1)
    b._flush({("agg", 2): "b", ("agg", 1): "a"})  # nothing changed: no new SST
    assert (b.live, b.next_sst) == (["t-0"], 1)
    b._flush({("agg", 1): "c"})
    assert b.ssts["t-1"] == ((("agg", 1), "c"), (("agg", 2), None)) and b.live == ["t-0", "t-1"]
    assert b.view == {("agg", 1): "c"} and b.next_sst == 2
    for i in range(MAX_LIVE_SSTS - 1):
        b._flush({("agg", 1): i})
    # one more than MAX_LIVE_SSTS: merged into one new SST, the older ones gone
    n = MAX_LIVE_SSTS + 1
    assert b.live == [f"t-{n}"] and b.ssts == {f"t-{n}": ((("agg", 1), MAX_LIVE_SSTS - 2),)}  # markers applied
    assert b.next_sst == n + 1


def test_rocksdb_resources_are_the_live_ssts_after_the_flush():
    b = RocksDBStateBackend("t", incremental=True)
    res = b._resources(_snap(1, {"agg": {1: "a"}}))
    assert res == (("t-0", ((("agg", 1), "a"),)),)
    b.sync_phase(_snap(2, {"agg": {1: "a", 2: "b"}}))
    assert b.pending[2][1] == (("t-0", ((("agg", 1), "a"),)), ("t-1", ((("agg", 2), "b"),)))


def test_rocksdb_incremental_checkpoints_record_their_uploads_and_a_confirmation_moves_the_base():
    b = RocksDBStateBackend("t", incremental=True)
    storage = CheckpointStorage()
    assert b.base() == ({}, True)
    b.sync_phase(_snap(1, {"agg": {1: "a"}}))
    h1 = b.async_phase(1, storage, savepoint=False, operators={}).state_handle
    assert h1 == KeyedStateHandle(1, (("t-0", "shared/t-0@1"),), ("shared/t-0@1",), True, ())
    assert b.uploads == {1: {"t-0": "shared/t-0@1"}} and b.confirmed is None
    assert b.base() == ({}, True)  # nothing confirmed yet
    b.notify_complete(1)
    assert b.confirmed == 1 and b.uploads == {1: {"t-0": "shared/t-0@1"}}
    assert b.base() == ({"t-0": "shared/t-0@1"}, True)
    b.sync_phase(_snap(2, {"agg": {1: "a", 2: "b"}}))
    h2 = b.async_phase(2, storage, savepoint=False, operators={}).state_handle
    assert h2 == KeyedStateHandle(2, (("t-0", "shared/t-0@1"), ("t-1", "shared/t-1@2")), ("shared/t-1@2",), True,
                                  ("shared/t-0@1",))
    assert b.uploads == {1: {"t-0": "shared/t-0@1"}, 2: {"t-0": "shared/t-0@1", "t-1": "shared/t-1@2"}}
    b.notify_complete(1)  # not newer than the confirmed one: nothing
    assert b.confirmed == 1 and sorted(b.uploads) == [1, 2]
    b.notify_complete(7)  # no uploads of 7: nothing
    assert b.confirmed == 1 and sorted(b.uploads) == [1, 2]
    b.notify_complete(2)  # the older uploads forgotten
    assert b.confirmed == 2 and b.uploads == {2: {"t-0": "shared/t-0@1", "t-1": "shared/t-1@2"}}


def test_rocksdb_full_checkpoints_and_savepoints_upload_everything():
    b = RocksDBStateBackend("t", incremental=False)
    storage = CheckpointStorage()
    b.sync_phase(_snap(1, {"agg": {1: "a"}}))
    h = b.async_phase(1, storage, savepoint=False, operators={}).state_handle
    assert h == KeyedStateHandle(1, (("t-0", "chk-1/t-0"),), ("chk-1/t-0",), False, ())
    assert b.uploads == {1: {"t-0": "chk-1/t-0"}} and b.base() == ({}, True)
    inc = RocksDBStateBackend("u", incremental=True)
    inc.sync_phase(_snap(1, {"agg": {1: "a"}}))
    inc.async_phase(1, storage, savepoint=False, operators={})
    inc.notify_complete(1)
    inc.sync_phase(_snap(2, {"agg": {1: "a"}}))
    sp = inc.async_phase(2, storage, savepoint=True, operators={}).state_handle
    assert sp == KeyedStateHandle(2, (("u-0", "sp-2/u-0"),), ("sp-2/u-0",), False, ())
    assert inc.uploads == {1: {"u-0": "shared/u-0@1"}} and inc.confirmed == 1  # a savepoint records nothing
    assert storage.files["sp-2/u-0"] == ((("agg", 1), "a"),)


def test_rocksdb_restore_reads_the_files_and_keeps_them_as_the_base_only_when_told():
    storage = CheckpointStorage()
    storage.write("shared/x-0@4", ((("agg", 1), "a"), (("agg", 2), "b")))
    storage.write("shared/x-1@5", ((("agg", 2), None), (("agg", 3), "c")))
    handle = KeyedStateHandle(5, (("x-0", "shared/x-0@4"), ("x-1", "shared/x-1@5")),
                              ("shared/x-1@5",), True)
    for keep in (True, False):
        b = RocksDBStateBackend("t", incremental=True)
        assert b.restore(handle, storage, {}, keep_base=keep) == {"agg": {1: "a", 3: "c"}}
        assert b.ssts == {"x-0": ((("agg", 1), "a"), (("agg", 2), "b")),
                          "x-1": ((("agg", 2), None), (("agg", 3), "c"))}
        assert b.live == ["x-0", "x-1"] and b.view == {("agg", 1): "a", ("agg", 3): "c"}
        if keep:
            assert b.uploads == {5: {"x-0": "shared/x-0@4", "x-1": "shared/x-1@5"}} and b.confirmed == 5
        else:
            assert (b.uploads, b.confirmed) == ({}, None)
        assert b.next_sst == 0
    # a deleted file restores as empty (the loss is judged by the properties)
    storage.files.pop("shared/x-0@4")
    b = RocksDBStateBackend("t", incremental=True)
    assert b.restore(handle, storage, {}, keep_base=False) == {"agg": {3: "c"}}
    assert b.ssts["x-0"] == ()
    # without a handle (rescaled): the values go into one new SST
    c = RocksDBStateBackend("t", incremental=True)
    assert c.restore(None, storage, {"agg": {7: "z"}}, keep_base=True) == {"agg": {7: "z"}}
    assert (c.ssts, c.live, c.view, c.next_sst) == ({"t-0": ((("agg", 7), "z"),)}, ["t-0"], {("agg", 7): "z"}, 1)
    assert (c.uploads, c.confirmed) == ({}, None)


class _HeapRecorded(HashMapStateBackend):
    """The heap backend recording what the two phases hand its snapshot strategy
    (``SnapshotStrategy.syncPrepareResources`` and ``asyncSnapshot``, as
    ``SnapshotStrategyRunner`` calls them), answering only well-formed calls."""

    __slots__ = ("calls",)

    def __init__(self):
        super().__init__("t")
        self.calls: list = []

    def _resources(self, snap):
        self.calls.append(("resources", snap))
        return super()._resources(snap) if snap is not None else None

    def _write(self, checkpoint_id, res, storage, savepoint, operators):
        self.calls.append(("write", checkpoint_id, res, storage, savepoint))
        return KeyedStateHandle(checkpoint_id)


class _RocksRecorded(RocksDBStateBackend):
    """The RocksDB backend recording each memtable flush: the state it flushes and the view
    it flushes against."""

    __slots__ = ("calls",)

    def __init__(self):
        super().__init__("t", incremental=True)
        self.calls: list = []

    def _flush(self, current):
        self.calls.append(("flush", current, self.view))
        if isinstance(current, dict) and isinstance(self.view, dict):
            super()._flush(current)


def test_the_two_phases_hand_the_snapshot_strategy_the_snapshot_its_resources_and_the_storage():
    b = _HeapRecorded()
    s1 = _snap(1, {"agg": {1: "a"}})
    b.sync_phase(s1)
    assert b.calls == [("resources", s1)]
    storage = CheckpointStorage()
    done = b.async_phase(1, storage, savepoint=True, operators={})
    assert b.calls[1:] == [("write", 1, {"agg": {1: "a"}}, storage, True)]
    assert done == attrs.evolve(s1, state_handle=KeyedStateHandle(1))  # the snapshot with its handle


def test_rocksdb_flushes_the_snapshot_and_a_rescaled_restore_against_an_empty_view():
    b = _RocksRecorded()
    b._resources(_snap(1, {"agg": {1: "a"}}))
    assert b.calls == [("flush", {("agg", 1): "a"}, {})]
    c = _RocksRecorded()
    c.view = {("agg", 9): "old"}
    c.restore(None, CheckpointStorage(), {"agg": {7: "z"}}, keep_base=False)
    assert c.calls == [("flush", {("agg", 7): "z"}, {})]
