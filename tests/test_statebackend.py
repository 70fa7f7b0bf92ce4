"""State backends and checkpoint storage: the SharedStateRegistry, the two backends, the
checkpoint storage's deletes, and hand-written runs of the whole cluster with a backend.

The scenarios use the small state-backend job::

    source (p=1) --hash--> [agg (keyed count) -> sink] (p=1, chained)

with two records (keys 0 and 1).
"""

import attrs
import pytest

from model import seams
from model.actions import DiscardFile, FinishAsyncSnapshot, ReleaseRestoredSnapshot
from model.actions import Deliver, NotifyCheckpointComplete, RestartFromSavepoint, SourceEmit, SourceEnd
from model.actions import StopWithSavepoint, TriggerCheckpoint
from model.checkpointstorage import CheckpointStorage, KeyedStateHandle, fold
from model.cluster import Cluster, RuntimeConfig, drain
from model.errors import FlinkspecError
from model.sharedstateregistry import SharedStateRegistry
from model.statebackend import MAX_LIVE_SSTS, HashMapStateBackend, RocksDBStateBackend
from model.streamtask import TaskSnapshot
from model.variants import generate, small_scenario, variant
from properties.engines import replay
from tests.scenario_util import chan, sub

import spec
from spec.statebackend import retained_checkpoints_restorable

spec.load_all()


# -- SharedStateRegistry ------------------------------------------------------------------------

def test_registry_discards_a_file_once_the_last_checkpoint_using_it_is_below_the_lowest_retained():
    reg = SharedStateRegistry()
    reg.register_all(["a", "b"], 1)
    reg.register_all(["a", "c"], 2)       # a reused by checkpoint 2
    assert reg.unregister_unused_state(2) == ["b"]   # b was last used by 1
    assert set(reg.entries) == {"a", "c"}
    assert reg.unregister_unused_state(3) == ["a", "c"]
    assert reg.entries == {}


def test_registry_by_creator_discards_a_file_a_retained_checkpoint_still_uses():
    reg = SharedStateRegistry()
    reg.register_all(["a"], 1)
    reg.register_all(["a"], 2)
    with seams.active(("shared-state-discarded-with-creator",)):
        assert reg.unregister_unused_state(2) == ["a"]  # created by 1, although 2 uses it
    reg.register_all(["b"], 3)
    reg.register_all(["b"], 4)
    assert reg.unregister_unused_state(4) == []  # Flink's rule: 4 still uses it


def test_registry_never_discards_files_of_a_snapshot_restored_without_claim():
    for mode, discarded in (("NO_CLAIM", []), ("CLAIM", ["sp"])):
        reg = SharedStateRegistry()
        reg.register_all_after_restored(["sp"], 5, mode)
        reg.register_all(["new"], 6)
        assert reg.unregister_unused_state(6) == discarded, mode
        assert "sp" not in reg.entries  # unregistered either way


def test_the_flink_26985_seam_discards_the_unclaimed_files():
    reg = SharedStateRegistry()
    reg.register_all_after_restored(["sp"], 5, "NO_CLAIM")
    with seams.active(("FLINK-26985",)):
        assert reg.unregister_unused_state(6) == ["sp"]
    reg.register_all_after_restored(["sp"], 7, "NO_CLAIM")
    assert reg.unregister_unused_state(8) == []  # the safe definition is back after the block


# -- the backends -------------------------------------------------------------------------------

class _Op:
    def __init__(self, state):
        self.state = state

    def snapshot_state(self):
        return dict(self.state)


def _snap(cid, keyed):
    return TaskSnapshot(cid, 0, "agg", 0, keyed={k: dict(v) for k, v in keyed.items()})


def test_heap_snapshot_keeps_the_state_of_its_synchronous_phase_only_with_copy_on_write():
    for cow, expected in ((True, {("agg", 1): "v1"}), (False, {("agg", 1): "v2"})):
        op = _Op({1: "v1"})
        b = HashMapStateBackend("t")
        storage = CheckpointStorage()
        b.sync_phase(_snap(1, {"agg": {1: "v1"}}))
        op.state[1] = "v2"  # a record processed between the phases
        b.ready(_snap(1, {"agg": {1: "v1"}}))
        with seams.active(() if cow else ("heap-snapshot-without-copy-on-write",)):
            snap = b.async_phase(1, storage, savepoint=False, operators={"agg": op})
        assert dict(storage.files[snap.state_handle.paths[0]]) == expected, cow


def test_rocksdb_uploads_only_new_ssts_reusing_those_of_the_last_confirmed_checkpoint():
    b = RocksDBStateBackend("t", incremental=True)
    storage = CheckpointStorage()

    def take(cid, keyed):
        b.sync_phase(_snap(cid, keyed))
        return b.async_phase(cid, storage, savepoint=False, operators={}).state_handle

    h1 = take(1, {"agg": {1: "a"}})
    h2 = take(2, {"agg": {1: "a", 2: "b"}})   # 1 not confirmed yet: everything uploaded again
    assert h2.uploaded == h2.paths and h2.placeholders == ()
    b.notify_complete(2)
    h3 = take(3, {"agg": {1: "a", 2: "b", 3: "c"}})
    assert set(h3.placeholders) == set(h2.paths) and len(h3.uploaded) == 1
    assert h1.shared and h3.shared
    # the files read back to the state of the synchronous phase
    assert fold(storage.files[p] for p in h3.paths) == {("agg", 1): "a", ("agg", 2): "b", ("agg", 3): "c"}


def test_rocksdb_flush_writes_deletion_markers_and_compaction_merges_the_live_ssts():
    b = RocksDBStateBackend("t", incremental=False)
    b._flush({("agg", 1): "a", ("agg", 2): "b"})
    b._flush({("agg", 1): "a"})                        # key group 2 gone: a deletion marker
    assert b.ssts[b.live[-1]] == ((("agg", 2), None),)
    for i in range(MAX_LIVE_SSTS - 1):                 # one SST more than MAX_LIVE_SSTS
        b._flush({("agg", 1): f"x{i}"})
    assert len(b.live) == 1                            # compacted into one
    assert dict(b.ssts[b.live[0]]) == {("agg", 1): f"x{MAX_LIVE_SSTS - 2}"}


def test_storage_materializes_handles_and_reports_missing_files():
    st = CheckpointStorage()
    st.write("f1", ((("agg", 1), "a"),))
    st.write("f2", ((("agg", 1), "b"), (("agg", 2), "c")))
    h = KeyedStateHandle(1, (("x", "f1"), ("y", "f2")), ("f1", "f2"), True)
    assert st.materialize(h) == ({"agg": {1: "b", 2: "c"}}, ())
    st.schedule_delete(["f2"], "test")
    assert "f2" in st.files and st.busy  # deletes are asynchronous
    st.discard("f2", step=7)
    assert st.materialize(h) == ({"agg": {1: "a"}}, ("f2",)) and st.last_deleted == (7, "f2")


# -- configuration ------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    (dict(state_backend="memory"), "state_backend must be one of"),
    (dict(state_backend="hashmap", incremental=True), "incremental checkpoints need state_backend 'rocksdb'"),
    (dict(restore_mode="LEGACY"), "restore_mode must be one of"),
])
def test_bad_state_backend_knobs_are_clear_errors(kwargs, message):
    with pytest.raises(FlinkspecError, match=message):
        RuntimeConfig(**kwargs)


def test_without_a_state_backend_there_are_no_files_and_no_new_actions():
    c = Cluster.from_scenario(generate(variant("aligned-2pc"), 3))
    assert c.storage is None and all(t.backend is None for t in c.tasks)
    new = (FinishAsyncSnapshot, DiscardFile, ReleaseRestoredSnapshot)
    for _ in range(200):
        assert not any(isinstance(a, new) for a in c.candidate_actions())
        en = c.enabled_actions()
        if not en:
            break
        c.step(en[0])


# -- whole runs ---------------------------------------------------------------------------------

def _sc(name, **cfg):
    """The variant's small scenario with two records (one before a barrier, one after it)."""
    v = variant(name)
    sc = small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, records=2)))
    return sc.with_settings(max_checkpoints=None, max_failures=0, **cfg)


def _barrier_then_record(sc):
    """Checkpoint 1's barrier reaches agg, which then processes a second record before the
    asynchronous phases run."""
    eg = Cluster.from_scenario(sc).eg
    src, agg = sub(eg, "source", 0), sub(eg, "agg", 0)
    ch = chan(eg, ("source", 0), ("agg", 0))
    return src, agg, [SourceEmit(src), Deliver(ch), TriggerCheckpoint(), SourceEmit(src), Deliver(ch), Deliver(ch)]


def test_a_record_after_the_barrier_never_reaches_the_heap_snapshot_but_does_without_copy_on_write():
    """1. source emits r0; agg counts it. 2. checkpoint 1: the source's synchronous phase,
    barrier. 3. source emits r1. 4. agg takes the barrier (synchronous phase), then r1.
    5. both asynchronous phases run: the checkpoint completes."""
    for cow in (True, False):
        sc = _sc("heap-two-phase-snapshots", seams=() if cow else ("heap-snapshot-without-copy-on-write",))
        src, agg, steps = _barrier_then_record(sc)
        steps += [FinishAsyncSnapshot(agg, 1), FinishAsyncSnapshot(src, 1)]
        vio, run = replay(sc, steps, finish=False)
        c = run.cluster
        if cow:
            assert vio is None and c.completed_ids == [1]
            assert c.tasks[agg].backend.pending == {}
        else:
            assert vio is not None and vio.invariant == "snapshot_reflects_synchronous_phase", vio


def test_the_acknowledgement_waits_for_the_asynchronous_phase():
    sc = _sc("rocksdb-incremental")
    src, agg, steps = _barrier_then_record(sc)
    _, run = replay(sc, steps, finish=False)
    c = run.cluster
    assert c.coordinator.num_pending == 1 and not c.completed_ids
    assert {a for a in c.enabled_actions() if isinstance(a, FinishAsyncSnapshot)} == \
        {FinishAsyncSnapshot(src, 1), FinishAsyncSnapshot(agg, 1)}
    c.step(FinishAsyncSnapshot(agg, 1))
    assert not c.completed_ids
    c.step(FinishAsyncSnapshot(src, 1))
    assert c.completed_ids == [1] and c.storage.registry.entries


def _stop_and_restart(sc):
    eg = Cluster.from_scenario(sc).eg
    src = sub(eg, "source", 0)
    ch = chan(eg, ("source", 0), ("agg", 0))
    c = Cluster.from_scenario(sc)
    for a in (SourceEmit(src), Deliver(ch), StopWithSavepoint()):
        c.step(a)
    while c.status != "STOPPED":  # the savepoint barrier travels, both phases run
        c.step(next(a for a in c.enabled_actions() if isinstance(a, (Deliver, FinishAsyncSnapshot))))
    c.step(next(a for a in c.enabled_actions() if isinstance(a, RestartFromSavepoint)))
    return c, src, ch


def _complete_checkpoint(c):
    c.step(TriggerCheckpoint())
    while c.coordinator.num_pending:
        en = c.enabled_actions()
        c.step(next(a for a in en if isinstance(a, (Deliver, FinishAsyncSnapshot))))


@pytest.mark.parametrize("full_first, broken", [(True, False), (False, True)])
def test_no_claim_restore_takes_a_full_first_checkpoint_so_the_user_may_delete_the_snapshot(full_first, broken):
    sc = _sc("rocksdb-incremental-no-claim", seams=() if full_first else ("no-claim-first-checkpoint-incremental",))
    c, src, ch = _stop_and_restart(sc)
    sp = c.storage.restored[0]
    assert c.storage.restored == (sp, "NO_CLAIM")
    assert ReleaseRestoredSnapshot() not in c.enabled_actions()  # no checkpoint completed yet
    _complete_checkpoint(c)
    cid = c.completed_ids[-1]
    reused = {p for h in c.storage.handles[cid].values() for p in h.paths if p.startswith(f"sp-{sp}/")}
    assert bool(reused) == broken
    c.step(ReleaseRestoredSnapshot())

    class _Run:
        cluster = c

    vio = retained_checkpoints_restorable(_Run())
    assert (vio is not None) == broken, vio


def test_claim_restore_hands_a_heap_savepoint_to_the_job_which_deletes_it_once_subsumed():
    sc = _sc("heap-two-phase-snapshots", restore_mode="CLAIM", max_retained_checkpoints=1)
    c, src, ch = _stop_and_restart(sc)
    sp = c.storage.restored[0]
    assert c.storage.restored == (sp, "CLAIM") and sp in c.storage.owned and sp not in c.storage.savepoints
    assert ReleaseRestoredSnapshot() not in c.enabled_actions()  # the job owns it
    sp_files = [p for h in c.storage.handles[sp].values() for p in h.paths]
    _complete_checkpoint(c)                                     # subsumes the savepoint
    assert set(sp_files) <= set(c.storage.scheduled)            # scheduled, not yet deleted
    assert all(p in c.storage.files for p in sp_files)
    drain(c)
    assert all(c.storage.deleted.get(p) == "job" for p in sp_files)


def test_claim_restore_lets_incremental_checkpoints_reference_the_savepoint_files():
    sc = _sc("rocksdb-incremental", max_retained_checkpoints=1)
    c, src, ch = _stop_and_restart(sc)
    sp = c.storage.restored[0]
    sp_files = {p for h in c.storage.handles[sp].values() for p in h.paths}
    assert sp_files and sp_files <= set(c.storage.registry.entries)   # registerAllAfterRestored
    _complete_checkpoint(c)
    cid = c.completed_ids[-1]
    placeholders = {p for h in c.storage.handles[cid].values() for p in h.placeholders}
    assert placeholders == sp_files                                   # nothing uploaded again
    assert all(c.storage.registry.entries[p].last_used == cid for p in sp_files)
    assert not c.storage.scheduled                                    # still used: nothing to delete


@pytest.mark.parametrize("name", ["heap-two-phase-snapshots", "rocksdb-incremental", "rocksdb-incremental-no-claim"])
def test_safe_state_backend_runs_drain_with_no_file_left_to_delete(name):
    c = Cluster.from_scenario(generate(variant(name), 5))
    drain(c)
    assert c.is_drained() and not c.storage.scheduled and all(not t.backend.pending for t in c.tasks)


def test_a_stop_with_savepoint_completing_after_every_task_finished_is_not_the_end_of_the_run():
    """1. the source emits r0, r1 and the stop-with-savepoint barrier goes out after r0;
    2. the source ends, agg takes r0, the barrier (synchronous phase), r1 and EndOfPartition:
    every task FINISHED; 3. the asynchronous phases run: the savepoint completes, the job is
    STOPPED. The run is not drained there: the drain restarts from the savepoint and commits."""
    sc = _sc("rocksdb-incremental")
    eg = Cluster.from_scenario(sc).eg
    src, agg = sub(eg, "source", 0), sub(eg, "agg", 0)
    ch = chan(eg, ("source", 0), ("agg", 0))
    steps = [SourceEmit(src), StopWithSavepoint(), SourceEmit(src), SourceEnd(src)] + [Deliver(ch)] * 5
    vio, run = replay(sc, steps, finish=False)
    c = run.cluster
    assert vio is None and all(t.status == "FINISHED" for t in c.tasks) and c.status == "RUNNING"
    c.step(FinishAsyncSnapshot(agg, 1))
    c.step(FinishAsyncSnapshot(src, 1))
    assert c.status == "STOPPED" and all(t.status == "FINISHED" for t in c.tasks)
    assert not c.is_drained()
    assert run.finish() is None            # drained through the restart, exactly-once holds
    assert any(e[0] == "rescaled" for e in c.events) and c.is_drained()


# -- the backends' rules at their edges ---------------------------------------------------------

def test_the_asynchronous_phase_waits_until_the_task_would_acknowledge():
    """``AsyncCheckpointRunnable`` runs once the task would acknowledge (its channel state
    complete): a synchronous phase alone does not make a snapshot ready."""
    b = HashMapStateBackend("t")
    b.sync_phase(_snap(1, {"agg": {1: "a"}}))
    assert b.ready_ids() == []
    b.ready(_snap(2, {}))                       # a checkpoint without a synchronous phase: ignored
    assert b.ready_ids() == [] and 2 not in b.pending
    b.ready(_snap(1, {"agg": {1: "a"}}))
    assert b.ready_ids() == [1]


def test_a_heap_snapshot_is_one_private_file_in_the_checkpoint_or_the_savepoint_directory():
    """``HeapSnapshotStrategy`` writes one ``KeyGroupsStateHandle`` per task: private state (not
    registered in the SharedStateRegistry), under the checkpoint's ``chk-<id>`` directory or the
    savepoint's own directory."""
    b = HashMapStateBackend("t")
    storage = CheckpointStorage()
    b.sync_phase(_snap(1, {"agg": {1: "a", 2: "b"}}))
    h1 = b.async_phase(1, storage, savepoint=False, operators={}).state_handle
    assert h1 == KeyedStateHandle(1, (("t", "chk-1/t"),), ("chk-1/t",), False, ())
    assert dict(storage.files["chk-1/t"]) == {("agg", 1): "a", ("agg", 2): "b"}
    b.sync_phase(_snap(2, {"agg": {1: "c"}}))
    h2 = b.async_phase(2, storage, savepoint=True, operators={}).state_handle
    assert h2 == KeyedStateHandle(2, (("t", "sp-2/t"),), ("sp-2/t",), False, ())


def test_a_heap_restore_reads_the_handle_and_without_one_takes_the_redistributed_values():
    storage = CheckpointStorage()
    storage.write("chk-1/t", ((("agg", 1), "a"),))
    handle = KeyedStateHandle(1, (("t", "chk-1/t"),), ("chk-1/t",), False)
    other = {"agg": {7: "z"}}                   # what a rescaled restore hands over instead
    assert HashMapStateBackend("t").restore(handle, storage, other, keep_base=False) == {"agg": {1: "a"}}
    assert HashMapStateBackend("t").restore(None, storage, other, keep_base=False) == other


def _take(b, storage, cid, keyed, savepoint=False):
    b.sync_phase(_snap(cid, keyed))
    return b.async_phase(cid, storage, savepoint=savepoint, operators={}).state_handle


def test_a_full_rocksdb_checkpoint_uploads_every_sst_as_private_state_even_after_a_confirmed_one():
    """Without incremental checkpoints (``RocksFullSnapshotStrategy``) every checkpoint writes
    all of its state into its own ``chk-<id>`` directory, private (nothing shared, nothing
    referenced), whatever was confirmed before."""
    b = RocksDBStateBackend("t", incremental=False)
    storage = CheckpointStorage()
    _take(b, storage, 1, {"agg": {1: "a"}})
    b.notify_complete(1)
    h2 = _take(b, storage, 2, {"agg": {1: "a", 2: "b"}})
    assert h2.paths and h2.uploaded == h2.paths and h2.placeholders == () and h2.shared is False
    assert all(p.startswith("chk-2/") for p in h2.paths), h2.paths
    assert fold(storage.files[p] for p in h2.paths) == {("agg", 1): "a", ("agg", 2): "b"}


def test_a_rocksdb_savepoint_copies_every_sst_and_its_notification_keeps_the_incremental_base():
    """A savepoint in the native format is self-contained: every SST copied into its own
    directory, nothing referenced from a checkpoint, not shared. Its completion notification
    does not move the base of the next incremental checkpoint (FLINK-23949:
    ``notifyCheckpointComplete`` confirms only a checkpoint whose uploads it recorded), so the
    next checkpoint still references the files of the last confirmed checkpoint."""
    b = RocksDBStateBackend("t", incremental=True)
    storage = CheckpointStorage()
    h1 = _take(b, storage, 1, {"agg": {1: "a"}})
    b.notify_complete(1)
    sp = _take(b, storage, 2, {"agg": {1: "a"}}, savepoint=True)
    assert sp.paths and sp.uploaded == sp.paths and sp.placeholders == () and sp.shared is False
    assert all(p.startswith("sp-2/") for p in sp.paths), sp.paths
    b.notify_complete(2)                        # the savepoint's notification
    h3 = _take(b, storage, 3, {"agg": {1: "a", 3: "c"}})
    assert set(h1.paths) <= set(h3.placeholders) and set(h3.placeholders) == set(h1.paths)
    assert len(h3.uploaded) == 1 and h3.shared


def test_the_unconfirmed_files_seam_reuses_the_last_snapshot_taken_without_placeholders():
    """``incremental-reuses-unconfirmed-files``: the base is the last snapshot taken, confirmed
    or not, and the reused files are sent as if they were new (no placeholder the JobManager
    would check against its SharedStateRegistry)."""
    b = RocksDBStateBackend("t", incremental=True)
    storage = CheckpointStorage()
    with seams.active(("incremental-reuses-unconfirmed-files",)):
        h1 = _take(b, storage, 1, {"agg": {1: "a"}})
        h2 = _take(b, storage, 2, {"agg": {1: "a", 2: "b"}})   # 1 never confirmed
    assert set(h1.paths) <= set(h2.paths) and not set(h1.paths) & set(h2.uploaded)
    assert h2.placeholders == ()


def test_a_rocksdb_restore_without_a_handle_puts_the_values_into_one_new_sst():
    """A rescaled restore (canonical, as a savepoint's): the redistributed values are inserted
    into the new instance, one SST, and the next checkpoint writes them."""
    b = RocksDBStateBackend("t", incremental=True)
    keyed = {"agg": {1: "a", 2: "b"}}
    assert b.restore(None, CheckpointStorage(), keyed, keep_base=False) == keyed
    assert len(b.live) == 1 and dict(b.ssts[b.live[0]]) == {("agg", 1): "a", ("agg", 2): "b"}
    storage = CheckpointStorage()
    h = _take(b, storage, 1, keyed)
    assert fold(storage.files[p] for p in h.paths) == {("agg", 1): "a", ("agg", 2): "b"}


def test_a_rocksdb_task_is_told_of_completed_checkpoints():
    """``RocksIncrementalSnapshotStrategy`` is a ``CheckpointListener``: the completion of a
    checkpoint reaches every task with a RocksDB backend (here the source's, which holds no
    other listener), since it confirms that task's uploads."""
    sc = _sc("rocksdb-incremental")
    eg = Cluster.from_scenario(sc).eg
    src = sub(eg, "source", 0)
    c = Cluster.from_scenario(sc)
    _complete_checkpoint(c)
    assert NotifyCheckpointComplete(src, c.completed_ids[-1]) in c.enabled_actions()


def test_a_rocksdb_restore_reads_a_deleted_file_as_empty_so_the_loss_is_judged_not_crashed():
    """A handle naming a file that no longer exists (deleted too early, the bug class of
    FLINK-26985) restores to the state of the other files: the restore goes on and
    ``retained_checkpoints_restorable`` and the restored-state check name the loss, where
    Flink's restore would fail on the missing file."""
    storage = CheckpointStorage()
    storage.write("shared/a", ((("agg", 1), "a"),))
    handle = KeyedStateHandle(1, (("t-0", "shared/a"), ("t-1", "shared/gone")), (), True)
    b = RocksDBStateBackend("t", incremental=True)
    assert b.restore(handle, storage, {}, keep_base=True) == {"agg": {1: "a"}}
    assert b.ssts["t-1"] == () and b.live == ["t-0", "t-1"]
    assert b.uploads == {1: {"t-0": "shared/a", "t-1": "shared/gone"}} and b.confirmed == 1
