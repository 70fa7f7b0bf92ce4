"""Keyed state backends: the two phases of a snapshot, and the files it writes.

Invariant upheld: a snapshot holds exactly the keyed state of its synchronous phase, however
many records the task processes before the asynchronous phase runs; an incremental snapshot
restores to the same state as a full one of the same moment.

A snapshot has two phases. The *synchronous* phase runs in the task at the barrier
(``TaskContext.take_snapshot`` calls :meth:`KeyedStateBackend.sync_phase`); the *asynchronous*
phase (``AsyncCheckpointRunnable``) is the action ``FinishAsyncSnapshot``: it writes the
files and only then the task acknowledges the checkpoint. Records processed in between, other
barriers, failures and deletions can interleave.

Follows (apache/flink):

* ``HashMapStateBackend`` / ``HeapSnapshotStrategy`` over ``CopyOnWriteStateMap``: the
  synchronous phase takes a copy-on-write snapshot (later writes copy the entries they
  change, so the snapshot keeps the barrier's values); the asynchronous phase writes one
  full file ``chk-<id>/<backend>`` (a savepoint: ``sp-<id>/<backend>``);
* ``EmbeddedRocksDBStateBackend`` with ``RocksIncrementalSnapshotStrategy``: state lives in
  immutable SST files; the synchronous phase flushes the memtable into a new SST (only the
  key groups that changed; a deletion marker for those that disappeared) and takes the set
  of live SSTs (the native checkpoint: hard links); a compaction merges the live SSTs into
  one when there are more than :data:`MAX_LIVE_SSTS`. The asynchronous phase uploads, for an
  incremental checkpoint, only the SSTs not uploaded by the last *confirmed* checkpoint
  (``uploadedSstFiles.get(lastCompletedCheckpointId)``; ``notifyCheckpointComplete``
  confirms) to ``shared/``, and references the others (placeholders); a full (non-incremental)
  checkpoint uploads every SST as private state; a savepoint (native format) copies every
  SST into its own directory. After a restore from an incremental checkpoint the restored
  files are the base of the next checkpoint (``RocksIncrementalRestoreOperation``); after a
  NO_CLAIM restore there is no base, so the first checkpoint is full (FLIP-193's
  ``FULL_CHECKPOINT`` type).

Deliberately left out: serialization formats, key-value granularity (a key group's state is
one value), RocksDB's levels (one compaction policy: merge everything), local recovery,
the changelog backend, rescaling of SST files (a rescaled restore re-inserts the state into
one new SST, as a canonical savepoint restore does).

Known-unsafe variants, each a seam (``model.seams``): ``heap-snapshot-without-copy-on-write``
(``HashMapStateBackend.state_to_write`` answers the live state: the asynchronous phase reads
it, so writes after the barrier leak into the snapshot); ``incremental-reuses-unconfirmed-files``
(``RocksDBStateBackend.base``: the base is the last snapshot *taken*, confirmed or not, so a
checkpoint may reference files of an aborted one that the JobManager discards);
``no-claim-first-checkpoint-incremental`` (``restored_files_are_the_base`` answers yes after a
NO_CLAIM restore too: the first checkpoint references the user's snapshot).
"""

from __future__ import annotations

import sys

import attrs

from model import seams
from model.checkpointstorage import KeyedStateHandle, flatten, fold, nest

BACKENDS = ("hashmap", "rocksdb")
#: a compaction merges the live SST files into one when there are more than this many
MAX_LIVE_SSTS = 3


class KeyedStateBackend:
    """A task's keyed state backend. ``uid`` names its files; ``pending`` holds, per
    checkpoint id, ``[snapshot, resources, ready]`` from the synchronous phase until the
    asynchronous one ran (``ready``: the task would acknowledge now, e.g. its unaligned channel
    state is complete). The backend holds no link to the task's operators: the asynchronous
    phase is handed the task's keyed operators by name (``StreamTask.keyed_operators``) with the
    call."""

    __slots__ = ("uid", "pending")
    #: whether ``notify_complete`` does anything (the RocksDB backend's confirms uploads)
    checkpoint_listener = False

    def __init__(self, uid: str):
        self.uid = uid
        self.pending: dict[int, list] = {}

    # -- the two phases -------------------------------------------------------------------
    def sync_phase(self, snap) -> None:
        self.pending[snap.checkpoint_id] = [snap, self._resources(snap), False]

    def ready(self, snap) -> None:
        """The task would acknowledge ``snap`` now: its asynchronous phase may run."""
        entry = self.pending.get(snap.checkpoint_id)
        if entry is not None:
            entry[0] = snap
            entry[2] = True

    def ready_ids(self) -> list:
        return [cid for cid, e in self.pending.items() if e[2]]

    def async_phase(self, checkpoint_id: int, storage, savepoint: bool, operators: dict):
        """Write the files; returns the snapshot with its ``state_handle``. ``operators``: the
        task's keyed operators by name, whose live state the asynchronous phase could read (it
        must not: ``HashMapStateBackend.state_to_write``)."""
        snap, res, _ = self.pending.pop(checkpoint_id)
        handle = self._write(checkpoint_id, res, storage, savepoint, operators)
        return _with_handle(snap, handle)

    # -- overridden ---------------------------------------------------------------------
    def _resources(self, snap):  # pragma: no cover - overridden
        raise NotImplementedError

    def _write(self, checkpoint_id, res, storage, savepoint, operators) -> KeyedStateHandle:  # pragma: no cover
        raise NotImplementedError

    def restore(self, handle, storage, keyed: dict, keep_base: bool) -> dict:  # pragma: no cover
        """Restore from ``handle`` (or, without one, from the values ``keyed``); returns the
        keyed state the operators get."""
        raise NotImplementedError

    def notify_complete(self, checkpoint_id: int) -> None:
        return None


class HashMapStateBackend(KeyedStateBackend):
    """Heap state; a snapshot is one full file per task."""

    __slots__ = ()

    def _resources(self, snap):
        # the copy-on-write snapshot: the per-key-group values of the barrier moment (immutable)
        return snap.keyed

    def state_to_write(self, res, operators) -> dict:
        """What the asynchronous phase writes: the copy-on-write snapshot of the synchronous
        phase (``HeapSnapshotStrategy``: ``CopyOnWriteStateTableSnapshot``), not the live state
        of the task's keyed ``operators``."""
        return res

    def _write(self, checkpoint_id, res, storage, savepoint, operators):
        keyed = self.state_to_write(res, operators)
        path = f"{'sp' if savepoint else 'chk'}-{checkpoint_id}/{self.uid}"
        storage.write(path, tuple(sorted(flatten(keyed).items(), key=lambda kv: kv[0])))
        return KeyedStateHandle(checkpoint_id, ((self.uid, path),), (path,), False)

    def restore(self, handle, storage, keyed, keep_base):
        if handle is None:
            return keyed
        return storage.materialize(handle)[0]


class RocksDBStateBackend(KeyedStateBackend):
    """State as immutable SST files (``EmbeddedRocksDBStateBackend``)."""

    __slots__ = ("incremental", "ssts", "live", "view", "next_sst", "uploads", "confirmed")
    checkpoint_listener = True

    def __init__(self, uid, incremental: bool):
        super().__init__(uid)
        self.incremental = incremental
        self.ssts: dict[str, tuple] = {}      # live SST name -> content
        self.live: list[str] = []             # live SSTs, oldest first
        self.view: dict = {}                  # what the live SSTs read to: (op, kg) -> state
        self.next_sst = 0
        self.uploads: dict[int, dict] = {}    # checkpoint id -> {SST name: DFS path} (uploadedSstFiles)
        self.confirmed: int | None = None     # lastCompletedCheckpointId

    def _new_sst(self, content: tuple) -> None:
        name = f"{self.uid}-{self.next_sst}"
        self.next_sst += 1
        self.ssts[name] = content
        self.live.append(name)

    def _flush(self, current: dict) -> None:
        """Flush the memtable: the changed key groups (and deletion markers) into a new SST;
        compact when there are too many live SSTs."""
        view = self.view
        diff = {k: v for k, v in current.items() if view.get(k) != v}
        for k in view:
            if k not in current:
                diff[k] = None
        if diff:
            self._new_sst(tuple(sorted(diff.items(), key=lambda kv: kv[0])))
            self.view = dict(current)
        if len(self.live) > MAX_LIVE_SSTS:
            merged = tuple(sorted(fold(self.ssts[n] for n in self.live).items(), key=lambda kv: kv[0]))
            self.ssts = {}
            self.live = []
            self._new_sst(merged)

    def _resources(self, snap):
        self._flush(flatten(snap.keyed))
        return tuple((n, self.ssts[n]) for n in self.live)  # the native checkpoint (hard links)

    def base(self) -> tuple[dict, bool]:
        """The files an incremental snapshot may reference instead of uploading -- those of the
        last *confirmed* checkpoint (``uploadedSstFiles.get(lastCompletedCheckpointId)``) -- and
        whether it sends them as placeholders (``PlaceholderStreamStateHandle``: the JobManager
        checks that its SharedStateRegistry still holds each)."""
        if not self.incremental or not self.uploads:
            return {}, True
        return (self.uploads.get(self.confirmed, {}) if self.confirmed is not None else {}), True

    def _write(self, checkpoint_id, res, storage, savepoint, operators):
        base, as_placeholders = ({}, True) if savepoint else self.base()
        files, uploaded, sent, reused = [], [], {}, []
        for name, content in res:
            path = base.get(name)
            if path is not None:
                reused.append(path)
            else:
                if savepoint:
                    path = f"sp-{checkpoint_id}/{name}"
                elif self.incremental:
                    path = f"shared/{name}@{checkpoint_id}"
                else:
                    path = f"chk-{checkpoint_id}/{name}"
                storage.write(path, content)
                uploaded.append(path)
            files.append((name, path))
            sent[name] = path
        if not savepoint:
            self.uploads[checkpoint_id] = sent
        placeholders = tuple(reused) if as_placeholders else ()
        return KeyedStateHandle(checkpoint_id, tuple(files), tuple(uploaded), self.incremental and not savepoint,
                                placeholders)

    def notify_complete(self, checkpoint_id):
        """``RocksIncrementalSnapshotStrategy.notifyCheckpointComplete``."""
        if (self.confirmed is None or checkpoint_id > self.confirmed) and checkpoint_id in self.uploads:
            for cid in [c for c in self.uploads if c < checkpoint_id]:
                del self.uploads[cid]
            self.confirmed = checkpoint_id

    def restore(self, handle, storage, keyed, keep_base):
        if handle is None:  # a rescaled (canonical) restore: the values go into one new SST
            self.view = {}
            self._flush(flatten(keyed))
            return keyed
        for name, path in handle.files:
            content = storage.read(path)
            self.ssts[name] = () if content is None else content
            self.live.append(name)
        self.view = fold(self.ssts[n] for n in self.live)
        if keep_base:
            self.uploads = {handle.checkpoint_id: dict(handle.files)}
            self.confirmed = handle.checkpoint_id
        return nest(self.view)


def _with_handle(snap, handle):
    """``snap`` with its state handle (TaskSnapshot is frozen; its dicts are shared)."""
    return attrs.evolve(snap, state_handle=handle)


def make_backend(config, uid: str) -> KeyedStateBackend:
    """The backend ``config.state_backend`` names, for the task whose files ``uid`` names."""
    if config.state_backend == "hashmap":
        return HashMapStateBackend(uid)
    return RocksDBStateBackend(uid, config.incremental)


def restored_files_are_the_base(claim_mode: str) -> bool:
    """Whether the files a job restored are the base of its next incremental checkpoint: in
    CLAIM mode (``RocksIncrementalRestoreOperation``); after a NO_CLAIM restore the first
    checkpoint is full (FLIP-193: the restored snapshot stays the user's)."""
    return claim_mode == "CLAIM"


@seams.override("heap-snapshot-without-copy-on-write", HashMapStateBackend, "state_to_write",
                "heap snapshots without copy-on-write: the asynchronous phase writes the live state, so writes after "
                "the barrier leak into the snapshot")
def _live_state_written(self, res, operators) -> dict:
    return {name: op.snapshot_state() for name, op in operators.items()}


@seams.override("incremental-reuses-unconfirmed-files", RocksDBStateBackend, "base",
                "an incremental snapshot reuses the files of the last snapshot taken, although its checkpoint never "
                "completed, and sends them as if they were new (no placeholder for the JobManager to check)")
def _base_of_the_last_snapshot_taken(self) -> tuple[dict, bool]:
    if not self.incremental or not self.uploads:
        return {}, True
    return self.uploads[max(self.uploads)], False


@seams.override("no-claim-first-checkpoint-incremental", sys.modules[__name__], "restored_files_are_the_base",
                "after a NO_CLAIM restore the first checkpoint is incremental: it references the user's snapshot")
def _restored_files_always_the_base(claim_mode: str) -> bool:
    return True
