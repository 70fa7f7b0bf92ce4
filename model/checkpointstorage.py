"""Checkpoint storage: the state files in the DFS, who owns them, and their deletion.

Invariant upheld: a file is deleted only by an asynchronous ``DiscardFile`` action after the
JobManager scheduled it, and it is scheduled only when nothing the job keeps references it:
private files of a checkpoint when the checkpoint is subsumed (and owned by the job) or
aborted; shared files when the ``SharedStateRegistry`` finds them unused; never a file of a
savepoint or of a snapshot restored in NO_CLAIM mode.

Follows (apache/flink): ``FsCheckpointStorageAccess`` (``chk-<id>/`` private files,
``shared/`` files of incremental snapshots; savepoints self-contained in their own
directory), ``CompletedCheckpoint.markAsDiscardedOnSubsume`` / ``discardOnSubsume`` and
``CheckpointsCleaner`` (a subsumed checkpoint's private state is discarded asynchronously,
then ``SharedStateRegistry.unregisterUnusedState(lowest retained id)``),
``PendingCheckpoint.abort`` / ``CheckpointCoordinator.discardSubtaskState`` (the state an
aborted checkpoint or a late acknowledgement uploaded is discarded), and
``CheckpointCoordinator.restoreSavepoint`` with ``RecoveryClaimMode`` (CLAIM: the restored
snapshot is the job's and is discarded when subsumed; NO_CLAIM: it stays the user's).

Deliberately different: shared files are registered when the checkpoint *completes*, and
what an aborted checkpoint uploaded is discarded by the JobManager (Flink before 1.15; since
FLINK-24611 Flink registers shared state on acknowledgement and leaves an aborted checkpoint's
shared files to the registry). Either way a later checkpoint may only reuse files of a
confirmed one.

Deliberately left out: the ``_metadata`` file (a completed checkpoint's handles are kept
here, as data), operator state and channel state (they stay inside the model's
``TaskSnapshot``), file sizes, failures of the file system. A file's content is the keyed
state it holds: ``((operator, key group), state-or-None)`` pairs, None a deletion marker.
"""

from __future__ import annotations

import attrs

from model.fingerprint import beside_state
from model.sharedstateregistry import SharedStateRegistry


@attrs.frozen(slots=True)
class KeyedStateHandle:
    """What a task's keyed state backend acknowledges for one snapshot
    (``IncrementalRemoteKeyedStateHandle`` / ``KeyGroupsStateHandle``).

    ``files``: ``(local name, DFS path)`` pairs in the order they are read (older first,
    newer entries override); ``uploaded``: the paths this snapshot wrote (the others are
    reused from an earlier checkpoint); ``placeholders``: the reused paths the backend sent as
    placeholders (``PlaceholderStreamStateHandle``: the registry must know them); ``shared``:
    whether the files are shared state registered in the ``SharedStateRegistry``."""

    checkpoint_id: int
    files: tuple = ()
    uploaded: tuple = ()
    shared: bool = False
    placeholders: tuple = ()

    @property
    def paths(self) -> tuple:
        return tuple(p for _, p in self.files)


def flatten(keyed: dict) -> dict:
    """``{operator: {key group: state}}`` -> ``{(operator, key group): state}``."""
    return {(op, kg): st for op, per_kg in keyed.items() for kg, st in per_kg.items()}


def nest(flat: dict) -> dict:
    out: dict = {}
    for (op, kg), st in sorted(flat.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if st is not None:
            out.setdefault(op, {})[kg] = st
    return out


def fold(contents) -> dict:
    """Read files in order: a later entry of a key overrides an earlier one."""
    flat: dict = {}
    for content in contents:
        for k, st in content:
            if st is None:
                flat.pop(k, None)
            else:
                flat[k] = st
    return flat


@beside_state
class StorageNotes:
    """What the checkpoint storage's last steps did, for the invariants that judge a step by
    its change: ``last_deleted`` / ``last_restore``: ``(step, ...)`` of the latest delete and
    restore; ``last_change``: the step of the last change that can make a kept snapshot
    unrestorable (a delete, a completion, a restore). History, beside the state
    (``model.history``): no step reads a note of an earlier step."""

    __slots__ = ("last_deleted", "last_restore", "last_change")

    def __init__(self):
        self.last_deleted: tuple | None = None
        self.last_restore: tuple | None = None
        self.last_change = -1


def _note(name: str) -> property:
    """The storage's note ``name`` (``StorageNotes``), read and written through the storage."""
    return property(lambda self: getattr(self.notes, name), lambda self, v: setattr(self.notes, name, v))


class CheckpointStorage:
    """The DFS and the JobManager's bookkeeping of what the files belong to.

    ``files``: path -> content of every existing file; ``deleted``: path -> who deleted it
    ("job" or "user"); ``scheduled``: path -> why, the deletes not yet run (asynchronous);
    ``registry``: the SharedStateRegistry; ``handles``: checkpoint id -> {subtask: handle} of
    every completed checkpoint and savepoint; ``owned``: the ids whose private files the job
    discards when they are subsumed; ``savepoints``: savepoint ids the job never discards;
    ``restored``: ``(id, mode)`` of the snapshot a restart-from-savepoint restored, with
    ``released`` once the user deleted it (NO_CLAIM) and ``completed_since_restore``;
    ``notes``: what the last steps did, for the invariants (:class:`StorageNotes`, beside the
    state; read as ``last_deleted``, ``last_restore``, ``last_change``)."""

    __slots__ = ("files", "deleted", "scheduled", "registry", "handles", "owned", "savepoints", "restored",
                 "released", "completed_since_restore", "notes", "unclaimed")
    last_deleted = _note("last_deleted")
    last_restore = _note("last_restore")
    last_change = _note("last_change")

    def __init__(self):
        self.files: dict[str, tuple] = {}
        self.deleted: dict[str, str] = {}
        self.scheduled: dict[str, str] = {}
        self.registry = SharedStateRegistry()
        self.handles: dict[int, dict] = {}
        self.owned: set[int] = set()
        self.savepoints: set[int] = set()
        self.restored: tuple | None = None
        #: every snapshot a restart restored in NO_CLAIM mode (the user's files)
        self.unclaimed: set[int] = set()
        self.released = False
        self.completed_since_restore = False
        self.notes = StorageNotes()

    def note_restore(self, step: int, record: tuple) -> None:
        """Remember what a restore at ``step`` gave: ``(subtask, checkpoint id, state equals
        the snapshot's, missing paths)`` (every task restored in that step)."""
        if self.last_restore is None or self.last_restore[0] != step:
            self.last_restore = (step, ())
        self.last_restore = (step, self.last_restore[1] + (record,))
    # -- files ----------------------------------------------------------------------------
    def write(self, path: str, content: tuple) -> None:
        self.files[path] = content

    def read(self, path: str):
        """The content of ``path``, or None if it does not exist (deleted)."""
        return self.files.get(path)

    def materialize(self, handle: KeyedStateHandle) -> tuple[dict, tuple]:
        """The keyed state ``handle`` restores to, and the paths it names that do not exist."""
        missing = tuple(p for p in handle.paths if p not in self.files)
        flat = fold(self.files[p] for p in handle.paths if p in self.files)
        return nest(flat), missing

    def schedule_delete(self, paths, reason: str) -> None:
        for p in paths:
            if p in self.files and p not in self.scheduled:
                self.scheduled[p] = reason

    def discard(self, path: str, step: int) -> None:
        """``DiscardFile``: the scheduled asynchronous delete of ``path`` runs."""
        self.scheduled.pop(path, None)
        self.files.pop(path, None)
        self.deleted[path] = "job"
        self.last_deleted = (step, path)
        self.last_change = step

    # -- the JobManager's side -----------------------------------------------------------
    def complete(self, checkpoint_id: int, snaps: dict, savepoint: bool, subsumed: tuple, retained: tuple,
                 step: int) -> int:
        """A checkpoint (or savepoint) completed: keep its handles; for a checkpoint register its
        shared files, discard the private files of the checkpoints it subsumed that the job
        owns, then the shared files no retained checkpoint uses. Returns how many shared files
        that freed."""
        handles = {tid: s.state_handle for tid, s in snaps.items() if s.state_handle is not None}
        self.handles[checkpoint_id] = handles
        self.last_change = step
        if savepoint:
            self.savepoints.add(checkpoint_id)
            return 0
        if self.restored is not None:
            self.completed_since_restore = True
        self.owned.add(checkpoint_id)
        reg = self.registry
        for h in handles.values():
            if h.shared:
                reg.register_all(h.paths, checkpoint_id)
        reg.checkpoint_completed(checkpoint_id)
        for s in subsumed:
            self.subsume(s)
        if not retained:
            return 0
        unused = reg.unregister_unused_state(min(retained))
        self.schedule_delete(unused, "shared state no retained checkpoint uses")
        return len(unused)

    def subsume(self, checkpoint_id: int) -> None:
        """A checkpoint left the store: the job discards its private files if it owns it."""
        if checkpoint_id not in self.owned:
            return
        self.owned.discard(checkpoint_id)
        for h in self.handles.get(checkpoint_id, {}).values():
            if not h.shared:
                self.schedule_delete(h.paths, f"private state of subsumed checkpoint {checkpoint_id}")

    def unknown_placeholders(self, snaps) -> tuple:
        """Placeholders of ``snaps`` the registry does not know: registering them fails
        (``registerReference``: "Attempt to reference unknown state"), and so does the
        checkpoint's finalization."""
        entries = self.registry.entries
        return tuple(p for s in snaps if s.state_handle is not None for p in s.state_handle.placeholders
                     if p not in entries)

    def discard_uploads(self, snaps, why: str) -> None:
        """An aborted checkpoint, or an acknowledgement nobody waits for: discard what its
        snapshots uploaded (``discardSubtaskState``)."""
        for s in snaps:
            h = s.state_handle
            if h is not None:
                self.schedule_delete(h.uploaded, why)

    def new_job(self) -> None:
        """The job was cancelled and a new one is submitted: a new JobMaster with an empty
        SharedStateRegistry, owning none of the old job's checkpoints (retained on cancellation,
        they are the user's). The files stay; deletes the old job scheduled still run
        (its ``CheckpointsCleaner`` outlives the cancellation)."""
        self.registry = SharedStateRegistry()
        self.owned = set()

    def restore_from(self, checkpoint_id: int, mode: str, shared: bool, step: int) -> None:
        """A new job restores snapshot ``checkpoint_id`` in ``mode`` (``restoreSavepoint``):
        CLAIM makes it the job's (discarded once subsumed). With ``shared`` (a RocksDB native
        savepoint) its SST files become shared state, registered either way
        (``registerAllAfterRestored``), so later incremental checkpoints may reference them."""
        self.restored = (checkpoint_id, mode)
        self.last_change = step
        self.released = False
        self.completed_since_restore = False
        handles = self.handles.get(checkpoint_id, {})
        if shared:
            handles = self.handles[checkpoint_id] = {t: attrs.evolve(h, shared=True) for t, h in handles.items()}
        files = [p for h in handles.values() if h.shared for p in h.paths]
        self.registry.register_all_after_restored(files, checkpoint_id, mode)
        if mode == "CLAIM":
            self.savepoints.discard(checkpoint_id)
            self.owned.add(checkpoint_id)
        else:
            self.unclaimed.add(checkpoint_id)

    def release_restored(self, step: int) -> tuple:
        """The user deletes the snapshot restored in NO_CLAIM mode (allowed once a checkpoint
        of the new job completed); returns the deleted paths."""
        cid = self.restored[0]
        self.released = True
        self.last_change = step
        self.savepoints.discard(cid)
        out = []
        for h in self.handles.get(cid, {}).values():
            for p in h.paths:
                if p in self.files:
                    del self.files[p]
                    self.scheduled.pop(p, None)
                    self.deleted[p] = "user"
                    out.append(p)
        return tuple(out)

    # -- what the invariants read -----------------------------------------------------------
    def kept(self, retained: tuple) -> dict:
        """Snapshot id -> why the job must keep it restorable: the retained checkpoints, the
        savepoints, and the snapshot restored without claim (until the user released it)."""
        out = {cid: "retained checkpoint" for cid in retained if cid in self.handles}
        for sp in self.savepoints:
            out.setdefault(sp, "savepoint")
        if self.restored is not None and self.restored[1] == "NO_CLAIM" and not self.released:
            out.setdefault(self.restored[0], f"snapshot restored in {self.restored[1]} mode")
        return out

    def referenced(self, retained: tuple) -> dict:
        """Path -> (snapshot id, why) for every file a kept snapshot references."""
        out = {}
        for cid, why in sorted(self.kept(retained).items()):
            for h in self.handles.get(cid, {}).values():
                for p in h.paths:
                    out.setdefault(p, (cid, why))
        return out

    @property
    def busy(self) -> bool:
        """Deletes are still to run."""
        return bool(self.scheduled)

    def __repr__(self) -> str:
        return (f"<CheckpointStorage files={len(self.files)} deleted={len(self.deleted)} "
                f"scheduled={len(self.scheduled)} handles={sorted(self.handles)}>")
