"""``model/checkpointstorage.py`` in isolation: the DFS of ``FsCheckpointStorageAccess`` and the
JobManager's bookkeeping of who owns each file, stated at its boundaries and checked right after
each call (the tables a call leaves, not only what a later call makes of them).

* a completed checkpoint keeps its handles, registers its shared files in the
  ``SharedStateRegistry`` and confirms them (``checkpointCompleted``), discards the private files
  of the checkpoints it subsumed that the job owns (``CompletedCheckpoint.discardOnSubsume``: a
  savepoint's ``CheckpointProperties`` never discard on subsume), then the shared files no retained
  checkpoint uses (``CheckpointsCleaner`` -> ``unregisterUnusedState(lowest retained id)``);
* deletes are asynchronous: scheduled first (with the first reason), run by ``DiscardFile``;
* an aborted checkpoint or a late acknowledgement discards only what it uploaded
  (``CheckpointCoordinator.discardSubtaskState``), never the files it reuses;
* ``restoreSavepoint`` with ``RecoveryClaimMode``: CLAIM hands the snapshot to the job, NO_CLAIM
  leaves it the user's until the user deletes it;
* a new job (after a cancellation) has a new, empty registry and owns none of the old checkpoints.

The whole-cluster behaviour is in tests/test_statebackend.py and the scenario files."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from model.checkpointstorage import CheckpointStorage, KeyedStateHandle, StorageNotes, flatten, fold, nest
from model.sharedstateregistry import SharedStateRegistry


def _snap(handle):
    """What a task acknowledges: a snapshot with its keyed state handle (or none)."""
    return SimpleNamespace(checkpoint_id=None if handle is None else handle.checkpoint_id, state_handle=handle)


def _private(cid, *paths, uploaded=None):
    return KeyedStateHandle(cid, tuple((p.rsplit("/", 1)[-1], p) for p in paths),
                            tuple(paths) if uploaded is None else tuple(uploaded), False)


def _shared(cid, *paths, uploaded=None, placeholders=()):
    return KeyedStateHandle(cid, tuple((p.rsplit("/", 1)[-1], p) for p in paths),
                            tuple(paths) if uploaded is None else tuple(uploaded), True, tuple(placeholders))


def _write(st, *paths):
    for p in paths:
        st.write(p, (((p, 0), p),))


# -- the files -----------------------------------------------------------------------------------


def test_a_new_storage_holds_nothing_and_owes_nothing():
    st = CheckpointStorage()
    assert isinstance(st.notes, StorageNotes)
    assert (st.files, st.deleted, st.scheduled, st.handles) == ({}, {}, {}, {})
    assert (st.owned, st.savepoints, st.unclaimed) == (set(), set(), set())
    assert st.restored is None and st.released is False and st.completed_since_restore is False
    assert isinstance(st.registry, SharedStateRegistry) and st.registry.entries == {}
    assert st.registry.highest_not_claimed == -1
    assert (st.last_deleted, st.last_restore, st.last_change) == (None, None, -1)
    assert st.busy is False
    assert st.kept(()) == {} and st.referenced(()) == {}
    assert repr(st) == "<CheckpointStorage files=0 deleted=0 scheduled=0 handles=[]>"


def test_a_new_notes_object_has_seen_no_step():
    n = StorageNotes()
    assert (n.last_deleted, n.last_restore, n.last_change) == (None, None, -1)


def test_the_notes_are_read_and_written_through_the_storage():
    st = CheckpointStorage()
    st.notes.last_deleted, st.notes.last_restore, st.notes.last_change = (3, "g"), (3, ()), 3
    assert (st.last_deleted, st.last_restore, st.last_change) == ((3, "g"), (3, ()), 3)
    st.last_change = 4
    st.last_deleted = (4, "f")
    assert (st.notes.last_change, st.notes.last_deleted) == (4, (4, "f"))
    st.notes.last_restore = (9, ())
    assert st.last_restore == (9, ())


def test_a_file_reads_back_its_content_and_a_missing_one_reads_none():
    st = CheckpointStorage()
    assert st.read("chk-1/t") is None
    st.write("chk-1/t", ((("agg", 1), "a"),))
    assert st.read("chk-1/t") == ((("agg", 1), "a"),)
    st.write("chk-1/t", ((("agg", 1), "b"),))  # a write replaces the file
    assert st.files == {"chk-1/t": ((("agg", 1), "b"),)}


def test_nothing_flattens_nests_and_folds_to_nothing():
    assert nest({}) == {} and flatten({}) == {} and fold([]) == {}
    assert fold([(), ()]) == {}


def test_flatten_and_nest_are_inverse_and_nest_drops_deletion_markers():
    keyed = {"agg": {1: "a", 2: "b"}, "map": {1: "m"}}
    assert flatten(keyed) == {("agg", 1): "a", ("agg", 2): "b", ("map", 1): "m"}
    assert nest(flatten(keyed)) == keyed
    assert nest({("agg", 1): None, ("agg", 2): "b", ("map", 3): None}) == {"agg": {2: "b"}}
    assert nest({}) == {} and flatten({}) == {}


def test_nest_orders_operators_then_key_groups_whatever_the_order_of_the_entries():
    """The restored state is built in one canonical order (operator, then key group), so a
    state printed or replayed does not depend on the order in which the files were read."""
    out = nest({("b", 2): "x", ("a", 9): "y", ("b", 1): "z", ("a", 3): "w"})
    assert list(out) == ["a", "b"]
    assert list(out["a"]) == [3, 9] and list(out["b"]) == [1, 2]


def test_fold_reads_files_in_order_a_later_entry_overriding_and_a_marker_deleting():
    older = ((("agg", 1), "a"), (("agg", 2), "b"))
    newer = ((("agg", 1), "a2"), (("agg", 2), None), (("agg", 3), None))
    assert fold([older, newer]) == {("agg", 1): "a2"}
    assert fold([newer, older]) == {("agg", 1): "a", ("agg", 2): "b"}
    # a marker then a new value: the value
    assert fold([((("agg", 2), None),), ((("agg", 2), "c"),)]) == {("agg", 2): "c"}
    assert fold([]) == {}


def test_materialize_restores_the_files_in_handle_order_and_names_every_missing_path():
    st = CheckpointStorage()
    st.write("shared/1", ((("agg", 1), "a"), (("agg", 2), "b")))
    st.write("shared/2", ((("agg", 2), None), (("agg", 1), "a2")))
    h = KeyedStateHandle(2, (("x", "shared/1"), ("gone", "shared/0"), ("y", "shared/2"), ("z", "shared/9")),
                         ("shared/2",), True)
    assert h.paths == ("shared/1", "shared/0", "shared/2", "shared/9")
    assert st.materialize(h) == ({"agg": {1: "a2"}}, ("shared/0", "shared/9"))
    assert st.materialize(KeyedStateHandle(3)) == ({}, ())


def test_a_handle_defaults_to_private_state_with_nothing_reused():
    h = KeyedStateHandle(4)
    assert h.files == () and h.uploaded == () and h.shared is False and h.placeholders == ()
    assert h.paths == ()


# -- asynchronous deletes ------------------------------------------------------------------------


def test_a_delete_is_scheduled_once_for_an_existing_file_and_keeps_its_first_reason():
    st = CheckpointStorage()
    _write(st, "a", "b")
    st.schedule_delete(["a", "missing"], "first")
    assert st.scheduled == {"a": "first"} and st.busy is True
    st.schedule_delete(["a", "b"], "second")
    assert st.scheduled == {"a": "first", "b": "second"}
    assert set(st.files) == {"a", "b"}  # nothing deleted before DiscardFile runs
    assert st.deleted == {} and st.last_deleted is None and st.last_change == -1


def test_discard_file_deletes_the_file_as_the_job_and_notes_the_step():
    st = CheckpointStorage()
    _write(st, "a", "b")
    st.schedule_delete(["a", "b"], "why")
    st.discard("a", 7)
    assert set(st.files) == {"b"} and st.scheduled == {"b": "why"}
    assert st.deleted == {"a": "job"}
    assert (st.last_deleted, st.last_change) == ((7, "a"), 7)
    assert st.busy is True
    st.discard("b", 8)
    assert st.files == {} and st.scheduled == {} and st.busy is False
    assert st.deleted == {"a": "job", "b": "job"} and (st.last_deleted, st.last_change) == ((8, "b"), 8)


def test_discarding_a_file_that_was_never_scheduled_or_is_gone_is_harmless():
    st = CheckpointStorage()
    _write(st, "a")
    st.discard("a", 1)     # not scheduled
    st.discard("a", 2)     # already gone
    assert st.files == {} and st.scheduled == {} and st.deleted == {"a": "job"}
    assert st.last_deleted == (2, "a")


# -- completion, subsumption ---------------------------------------------------------------------


def test_a_completed_checkpoint_keeps_its_handles_registers_and_confirms_its_shared_files():
    st = CheckpointStorage()
    h0 = _shared(1, "shared/a", "shared/b")
    h1 = _private(1, "chk-1/t1")
    _write(st, "shared/a", "shared/b", "chk-1/t1")
    freed = st.complete(1, {0: _snap(h0), 1: _snap(h1), 2: _snap(None)}, False, (), (1,), step=5)
    assert freed == 0
    assert st.handles == {1: {0: h0, 1: h1}}  # a task without keyed state has no handle
    assert st.owned == {1} and st.savepoints == set()
    assert sorted(st.registry.entries) == ["shared/a", "shared/b"]  # private files are not registered
    for e in st.registry.entries.values():
        assert (e.created_by, e.last_used, e.confirmed) == (1, 1, True)
    assert st.last_change == 5 and st.scheduled == {}
    assert st.completed_since_restore is False  # nothing restored


def test_a_completed_savepoint_is_kept_never_owned_never_registered():
    """A savepoint's ``CheckpointProperties`` never discard it on subsume: the job keeps its
    handles but neither owns its files nor registers them."""
    st = CheckpointStorage()
    h = _shared(3, "sp-3/a")
    _write(st, "sp-3/a")
    st.restore_from(1, "CLAIM", shared=False, step=0)
    assert st.complete(3, {0: _snap(h)}, True, (), (3,), step=4) == 0
    assert st.handles[3] == {0: h} and st.savepoints == {3}
    assert 3 not in st.owned and st.registry.entries == {}
    assert st.last_change == 4
    assert st.completed_since_restore is False  # a savepoint is not a checkpoint of the new job
    assert st.scheduled == {}


def test_a_savepoint_completion_subsumes_nothing_and_frees_nothing():
    st = CheckpointStorage()
    _write(st, "chk-1/t", "shared/s")
    st.complete(1, {0: _snap(_private(1, "chk-1/t")), 1: _snap(_shared(1, "shared/s"))}, False, (), (1,), 1)
    assert st.complete(2, {}, True, (1,), (2,), 2) == 0
    assert st.scheduled == {} and st.owned == {1} and "shared/s" in st.registry.entries


def test_a_checkpoint_after_a_restore_is_noted():
    st = CheckpointStorage()
    st.restore_from(1, "NO_CLAIM", shared=False, step=0)
    st.complete(2, {}, False, (), (2,), step=1)
    assert st.completed_since_restore is True


def test_a_subsumed_checkpoint_s_private_files_are_scheduled_and_its_unused_shared_files_freed():
    st = CheckpointStorage()
    _write(st, "chk-1/t", "shared/x", "shared/y", "shared/z")
    st.complete(1, {0: _snap(_private(1, "chk-1/t")), 1: _snap(_shared(1, "shared/x", "shared/y"))},
                False, (), (1,), 1)
    # checkpoint 2 reuses shared/y (a placeholder) and uploads shared/z; it subsumes 1
    _write(st, "chk-2/t")
    h2 = _shared(2, "shared/y", "shared/z", uploaded=("shared/z",), placeholders=("shared/y",))
    freed = st.complete(2, {0: _snap(_private(2, "chk-2/t")), 1: _snap(h2)}, False, (1,), (2,), 2)
    assert freed == 1
    assert st.scheduled == {"chk-1/t": "private state of subsumed checkpoint 1",
                            "shared/x": "shared state no retained checkpoint uses"}
    assert st.owned == {2}
    assert sorted(st.registry.entries) == ["shared/y", "shared/z"]
    y = st.registry.entries["shared/y"]
    assert (y.created_by, y.last_used, y.confirmed) == (1, 2, True)
    assert set(st.files) == {"chk-1/t", "chk-2/t", "shared/x", "shared/y", "shared/z"}  # not yet run


def test_the_lowest_retained_checkpoint_decides_which_shared_files_are_unused():
    st = CheckpointStorage()
    _write(st, "shared/1", "shared/2", "shared/3")
    st.complete(1, {0: _snap(_shared(1, "shared/1"))}, False, (), (1,), 1)
    st.complete(2, {0: _snap(_shared(2, "shared/2"))}, False, (), (1, 2), 2)
    # 3 subsumes 1 only; 2 is still retained: shared/2 stays, shared/1 goes
    assert st.complete(3, {0: _snap(_shared(3, "shared/3"))}, False, (1,), (3, 2), 3) == 1
    assert st.scheduled == {"shared/1": "shared state no retained checkpoint uses"}
    assert sorted(st.registry.entries) == ["shared/2", "shared/3"]


def test_with_no_checkpoint_retained_nothing_shared_is_unregistered():
    st = CheckpointStorage()
    _write(st, "shared/1")
    assert st.complete(1, {0: _snap(_shared(1, "shared/1"))}, False, (), (), 1) == 0
    assert st.scheduled == {} and list(st.registry.entries) == ["shared/1"]
    e = st.registry.entries["shared/1"]
    assert (e.created_by, e.last_used, e.confirmed) == (1, 1, True)


def test_subsume_discards_only_owned_checkpoints_private_files_once():
    st = CheckpointStorage()
    _write(st, "chk-1/t", "shared/s")
    st.handles[1] = {0: _private(1, "chk-1/t"), 1: _shared(1, "shared/s")}
    st.subsume(1)                          # not owned (a savepoint, an old job's checkpoint)
    assert st.scheduled == {} and st.owned == set()
    st.owned.add(1)
    st.subsume(1)
    assert st.scheduled == {"chk-1/t": "private state of subsumed checkpoint 1"}  # shared: the registry's
    assert st.owned == set()
    st.scheduled.clear()
    st.subsume(1)                          # again: no longer owned
    assert st.scheduled == {}


def test_subsuming_an_owned_checkpoint_without_handles_schedules_nothing():
    st = CheckpointStorage()
    st.owned.add(4)
    st.subsume(4)
    assert st.owned == set() and st.scheduled == {}


# -- placeholders, aborted checkpoints -----------------------------------------------------------


def test_unknown_placeholders_are_those_the_registry_never_registered_in_ack_order():
    st = CheckpointStorage()
    st.registry.register_all(["shared/known"], 1)
    snaps = [_snap(_shared(2, "shared/known", "shared/u1", placeholders=("shared/u1", "shared/known"))),
             _snap(None),
             _snap(_shared(2, "shared/u2", placeholders=("shared/u2",)))]
    assert st.unknown_placeholders(snaps) == ("shared/u1", "shared/u2")
    assert st.unknown_placeholders([_snap(None)]) == ()
    assert st.unknown_placeholders(snaps[:1] + [_snap(_shared(2, "shared/known",
                                                              placeholders=("shared/known",)))]) == ("shared/u1",)


def test_an_aborted_checkpoint_discards_what_it_uploaded_never_what_it_reuses():
    st = CheckpointStorage()
    _write(st, "shared/old", "shared/new", "chk-2/t")
    h = _shared(2, "shared/old", "shared/new", uploaded=("shared/new",), placeholders=("shared/old",))
    st.discard_uploads([_snap(h)], "late acknowledgement of checkpoint 2")
    assert st.scheduled == {"shared/new": "late acknowledgement of checkpoint 2"}
    st.scheduled.clear()
    st.discard_uploads([_snap(h), _snap(None), _snap(_private(2, "chk-2/t"))], "aborted checkpoint 2")
    assert st.scheduled == {"shared/new": "aborted checkpoint 2", "chk-2/t": "aborted checkpoint 2"}
    assert set(st.files) == {"shared/old", "shared/new", "chk-2/t"}


# -- a new job, restores --------------------------------------------------------------------------


def test_a_new_job_has_an_empty_registry_and_owns_nothing_while_files_and_deletes_stay():
    st = CheckpointStorage()
    _write(st, "chk-1/t", "shared/s")
    st.complete(1, {0: _snap(_private(1, "chk-1/t")), 1: _snap(_shared(1, "shared/s"))}, False, (), (1,), 1)
    st.complete(2, {}, True, (), (1, 2), 2)
    st.schedule_delete(["chk-1/t"], "before the cancellation")
    old = st.registry
    st.new_job()
    assert isinstance(st.registry, SharedStateRegistry)
    assert st.registry is not old and st.registry.entries == {} and st.registry.highest_not_claimed == -1
    assert st.owned == set()
    assert st.scheduled == {"chk-1/t": "before the cancellation"}
    assert set(st.files) == {"chk-1/t", "shared/s"} and set(st.handles) == {1, 2} and st.savepoints == {2}


def test_a_claim_restore_hands_the_snapshot_to_the_job():
    st = CheckpointStorage()
    _write(st, "sp-3/a")
    st.complete(3, {0: _snap(_private(3, "sp-3/a"))}, True, (), (), 1)
    st.released = True
    st.completed_since_restore = True
    st.restore_from(3, "CLAIM", shared=False, step=6)
    assert st.restored == (3, "CLAIM") and st.last_change == 6
    assert st.released is False and st.completed_since_restore is False
    assert st.owned == {3} and st.savepoints == set() and st.unclaimed == set()
    assert st.registry.entries == {} and st.registry.highest_not_claimed == -1  # private: nothing registered
    assert st.handles[3][0].shared is False
    assert st.kept(()) == {}  # the job's own now: kept only while retained


def test_a_no_claim_restore_leaves_the_snapshot_the_user_s():
    st = CheckpointStorage()
    _write(st, "sp-3/a")
    st.complete(3, {0: _snap(_private(3, "sp-3/a"))}, True, (), (), 1)
    st.restore_from(3, "NO_CLAIM", shared=False, step=6)
    assert st.restored == (3, "NO_CLAIM") and st.last_change == 6
    assert st.owned == set() and st.savepoints == {3} and st.unclaimed == {3}
    assert st.registry.highest_not_claimed == 3
    assert st.kept(()) == {3: "savepoint"}


def test_a_native_rocksdb_savepoint_restored_becomes_shared_state_registered_after_restore():
    """``registerAllAfterRestored``: the restored SST files become shared state, so a later
    incremental checkpoint may reference them; in NO_CLAIM mode they are never discarded."""
    for mode, highest in (("CLAIM", -1), ("NO_CLAIM", 3)):
        st = CheckpointStorage()
        _write(st, "sp-3/a", "sp-3/b")
        h = _private(3, "sp-3/a", "sp-3/b")
        st.complete(3, {0: _snap(h)}, True, (), (), 1)
        st.restore_from(3, mode, shared=True, step=2)
        assert st.handles[3] == {0: KeyedStateHandle(3, h.files, h.uploaded, True, ())}, mode
        assert sorted(st.registry.entries) == ["sp-3/a", "sp-3/b"], mode
        for e in st.registry.entries.values():
            assert (e.created_by, e.last_used) == (3, 3), mode
        assert st.registry.highest_not_claimed == highest, mode


def test_a_restore_of_a_snapshot_without_handles_registers_nothing():
    st = CheckpointStorage()
    st.restore_from(5, "NO_CLAIM", shared=True, step=1)
    assert st.registry.entries == {} and st.handles.get(5, {}) == {}
    assert st.restored == (5, "NO_CLAIM") and st.unclaimed == {5}


def test_the_user_deleting_a_no_claim_snapshot_deletes_its_files_as_the_user():
    st = CheckpointStorage()
    _write(st, "sp-3/a", "sp-3/b", "chk-4/t")
    st.complete(3, {0: _snap(_private(3, "sp-3/a")), 1: _snap(_private(3, "sp-3/b", "sp-3/gone"))},
                True, (), (), 1)
    st.restore_from(3, "NO_CLAIM", shared=False, step=2)
    st.schedule_delete(["sp-3/b"], "something")
    assert st.release_restored(9) == ("sp-3/a", "sp-3/b")
    assert st.released is True and st.last_change == 9
    assert st.savepoints == set()
    assert set(st.files) == {"chk-4/t"} and st.scheduled == {}
    assert st.deleted == {"sp-3/a": "user", "sp-3/b": "user"}
    assert st.last_deleted is None  # the job deleted nothing
    assert st.kept(()) == {}


def test_the_user_may_delete_a_restored_snapshot_that_holds_no_state():
    """A snapshot of a job without keyed state: nothing to delete, but released all the same."""
    st = CheckpointStorage()
    st.restore_from(4, "NO_CLAIM", shared=False, step=1)
    assert st.referenced(()) == {}  # kept, but it names no file
    assert st.kept(()) == {4: "snapshot restored in NO_CLAIM mode"}
    assert st.release_restored(2) == () and st.released is True and st.kept(()) == {}


# -- what the invariants read ----------------------------------------------------------------------


def test_kept_names_retained_checkpoints_savepoints_and_an_unreleased_no_claim_snapshot():
    st = CheckpointStorage()
    st.handles.update({1: {}, 2: {}, 5: {}})
    st.savepoints.update({2, 7})
    assert st.kept((1, 2, 4)) == {1: "retained checkpoint", 2: "retained checkpoint", 7: "savepoint"}
    st.restored = (5, "NO_CLAIM")
    assert st.kept(()) == {2: "savepoint", 7: "savepoint", 5: "snapshot restored in NO_CLAIM mode"}
    st.released = True
    assert 5 not in st.kept(())
    st.released = False
    st.restored = (5, "CLAIM")
    assert 5 not in st.kept(())


def test_referenced_names_each_file_by_the_lowest_kept_snapshot_that_uses_it():
    st = CheckpointStorage()
    st.handles[2] = {0: _shared(2, "shared/a", "shared/b")}
    st.handles[1] = {0: _shared(1, "shared/a")}
    st.handles[3] = {0: _private(3, "sp-3/c")}
    st.savepoints.add(3)
    assert st.referenced((2, 1)) == {"shared/a": (1, "retained checkpoint"),
                                     "shared/b": (2, "retained checkpoint"),
                                     "sp-3/c": (3, "savepoint")}
    assert st.referenced((2,)) == {"shared/a": (2, "retained checkpoint"),
                                   "shared/b": (2, "retained checkpoint"),
                                   "sp-3/c": (3, "savepoint")}


def test_a_restore_note_gathers_every_task_restored_in_one_step():
    st = CheckpointStorage()
    st.note_restore(4, (0, 1, True, ()))
    assert st.last_restore == (4, ((0, 1, True, ()),))
    st.note_restore(4, (1, 1, False, ("shared/x",)))
    assert st.last_restore == (4, ((0, 1, True, ()), (1, 1, False, ("shared/x",))))
    st.note_restore(5, (0, 2, True, ()))   # a later step starts afresh
    assert st.last_restore == (5, ((0, 2, True, ()),))


def test_repr_counts_files_deletes_and_lists_the_handles():
    st = CheckpointStorage()
    _write(st, "a", "b", "c")
    st.schedule_delete(["a", "b"], "x")
    st.discard("a", 1)
    st.handles.update({4: {}, 2: {}})
    assert repr(st) == "<CheckpointStorage files=2 deleted=1 scheduled=1 handles=[2, 4]>"


@pytest.mark.parametrize("mode", ["CLAIM", "NO_CLAIM"])
def test_a_restored_checkpoint_subsumed_later_is_discarded_only_when_claimed(mode):
    """The restored snapshot, subsumed by the new job's first checkpoint: CLAIM discards its
    private files (the job's now), NO_CLAIM never does (the user's)."""
    st = CheckpointStorage()
    _write(st, "chk-1/t")
    st.complete(1, {0: _snap(_private(1, "chk-1/t"))}, False, (), (1,), 1)
    st.new_job()
    st.restore_from(1, mode, shared=False, step=2)
    _write(st, "chk-2/t")
    st.complete(2, {0: _snap(_private(2, "chk-2/t"))}, False, (1,), (2,), 3)
    want = {"chk-1/t": "private state of subsumed checkpoint 1"} if mode == "CLAIM" else {}
    assert st.scheduled == want
    assert st.owned == {2}


# -- the calls the storage makes on its collaborators, recorded -----------------------------------
#
# As Flink's CheckpointsCleaner and CompletedCheckpoint tests record the discards with a mocked
# state handle: a stand-in in the callee's place records what each call hands it (and checks it
# right there, so a wrong argument fails the test before the caller goes on with it).

_NOTES = ("last_deleted", "last_restore", "last_change")


def test_each_note_is_a_readable_and_writable_attribute_of_the_storage():
    """``last_deleted``, ``last_restore`` and ``last_change`` are the storage's own attributes,
    read and written through its notes: each one reads back what was written, on the notes too."""
    st = CheckpointStorage()
    for i, name in enumerate(_NOTES):
        prop = vars(CheckpointStorage).get(name)
        assert isinstance(prop, property), f"{name} is not a property of CheckpointStorage"
        assert prop.fget is not None and prop.fset is not None, f"{name} cannot be both read and written"
        try:
            st.notes.__setattr__(name, ("from the notes", i))
            read = getattr(st, name)
            setattr(st, name, ("through the storage", i))
            on_notes = getattr(st.notes, name)
        except (AttributeError, TypeError) as e:
            pytest.fail(f"the storage's note {name} is not read and written through its notes: {e!r}")
        assert read == ("from the notes", i), name
        assert on_notes == ("through the storage", i), name
    assert [getattr(st.notes, n) for n in _NOTES] == [("through the storage", i) for i in range(3)]


class _RecordingStorage(CheckpointStorage):
    """A storage whose ``schedule_delete`` and ``kept`` are recorded stand-ins: each call's
    arguments are kept (paths as a tuple), ``schedule_delete`` schedules nothing, ``kept`` answers
    ``kept_answer``."""

    def __init__(self, kept_answer=None):
        super().__init__()
        self.deletes: list = []
        self.kept_calls: list = []
        self.kept_answer = kept_answer

    def schedule_delete(self, paths, reason: str) -> None:
        assert paths is not None, f"schedule_delete handed no paths ({reason!r})"
        self.deletes.append((tuple(paths), reason))

    def kept(self, retained: tuple) -> dict:
        self.kept_calls.append(retained)
        return dict(self.kept_answer or {})


def test_a_completion_hands_the_registry_s_unused_files_to_schedule_delete():
    st = _RecordingStorage()
    _write(st, "shared/x", "shared/y")
    st.complete(1, {0: _snap(_shared(1, "shared/x", "shared/y"))}, False, (), (1,), 1)
    assert st.deletes == [((), "shared state no retained checkpoint uses")]
    h2 = _shared(2, "shared/y", uploaded=(), placeholders=("shared/y",))
    assert st.complete(2, {0: _snap(h2)}, False, (), (2,), 2) == 1
    assert st.deletes == [((), "shared state no retained checkpoint uses"),
                          (("shared/x",), "shared state no retained checkpoint uses")]
    assert sorted(st.registry.entries) == ["shared/y"]


def test_a_subsumed_checkpoint_hands_each_private_handle_s_paths_to_schedule_delete():
    st = _RecordingStorage()
    st.handles[3] = {0: _private(3, "chk-3/a", "chk-3/b"), 1: _shared(3, "shared/s"), 2: _private(3, "chk-3/c")}
    st.owned.add(3)
    st.subsume(3)
    assert st.deletes == [(("chk-3/a", "chk-3/b"), "private state of subsumed checkpoint 3"),
                          (("chk-3/c",), "private state of subsumed checkpoint 3")]
    assert st.owned == set()


def test_discarding_uploads_hands_each_snapshot_s_uploaded_paths_to_schedule_delete():
    st = _RecordingStorage()
    h = _shared(4, "shared/old", "shared/new", uploaded=("shared/new",), placeholders=("shared/old",))
    st.discard_uploads([_snap(h), _snap(None), _snap(_private(4, "chk-4/t"))], "aborted checkpoint 4")
    assert st.deletes == [(("shared/new",), "aborted checkpoint 4"), (("chk-4/t",), "aborted checkpoint 4")]


def test_referenced_asks_kept_for_the_retained_checkpoints_it_was_given():
    st = _RecordingStorage(kept_answer={2: "retained checkpoint", 9: "savepoint"})
    st.handles[2] = {0: _shared(2, "shared/a", "shared/b")}
    st.handles[9] = {0: _private(9, "sp-9/c")}
    assert st.referenced((2, 5)) == {"shared/a": (2, "retained checkpoint"), "shared/b": (2, "retained checkpoint"),
                                     "sp-9/c": (9, "savepoint")}
    assert st.kept_calls == [(2, 5)]


def test_materialize_folds_the_existing_files_in_handle_order_and_nests_what_fold_returns(monkeypatch):
    import model.checkpointstorage as cs

    folded, nested = [], []
    flat, keyed = {("agg", 1): "from fold"}, {"agg": {1: "from nest"}}

    def recording_fold(contents):
        assert contents is not None, "fold handed no contents"
        folded.append(list(contents))
        return flat

    def recording_nest(arg):
        nested.append(arg)
        return keyed

    monkeypatch.setattr(cs, "fold", recording_fold)
    monkeypatch.setattr(cs, "nest", recording_nest)
    st = CheckpointStorage()
    st.write("shared/2", ((("agg", 1), "b"),))
    st.write("shared/1", ((("agg", 1), "a"),))
    h = KeyedStateHandle(2, (("x", "shared/1"), ("gone", "shared/0"), ("y", "shared/2")), (), True)
    assert st.materialize(h) == (keyed, ("shared/0",))
    assert folded == [[((("agg", 1), "a"),), ((("agg", 1), "b"),)]]
    assert nested == [flat] and nested[0] is flat
