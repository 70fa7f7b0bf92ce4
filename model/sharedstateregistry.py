"""SharedStateRegistry: which checkpoint still uses each shared file, and when to discard it.

Invariant upheld: a shared file is discarded only when no retained checkpoint uses it any
more, i.e. the last checkpoint that used it is older than the lowest retained checkpoint,
and never when it was created by a checkpoint the job restored without claiming it
(NO_CLAIM, or a savepoint): such files belong to the user.

Follows (apache/flink, ``flink-runtime/.../state/SharedStateRegistryImpl``):

* ``registerReference(key, handle, checkpointID)``: a new key gets an entry created *and*
  last used by ``checkpointID``; a key registered again (a placeholder: the incremental
  snapshot reuses a file uploaded earlier) only advances ``lastUsedCheckpointID``;
* ``unregisterUnusedState(lowestCheckpointID)``: every entry whose ``lastUsedCheckpointID``
  is below the lowest retained checkpoint is removed, and its file scheduled for an
  asynchronous delete unless ``createdByCheckpointID <= highestNotClaimedCheckpointID``;
* ``registerAllAfterRestored(checkpoint, mode)``: the restored checkpoint's shared files are
  registered; outside CLAIM mode ``highestNotClaimedCheckpointID`` is raised to its id
  (the fix of FLINK-26985: shared state of a restored, unclaimed snapshot is never
  discarded);
* ``checkpointCompleted(id)``: entries last used by ``id`` are confirmed.

Deliberately left out / different: the registry key is the uploaded file itself (Flink keys
an entry by the backend's UID and the SST file name, and resolves a second upload of the
same SST by the ``confirmed`` flag); here every upload is a new key, so those duplicate
registrations cannot happen. ``preventDiscardingCreatedCheckpoint`` (changelog and native
savepoints in CLAIM mode) is left out: the model never keeps a checkpoint's private files
for the sake of its shared ones.

Known-unsafe variants, each a seam (``model.seams``): ``shared-state-discarded-with-creator``
(``last_use`` answers the checkpoint that *created* an entry) discards an entry once that
checkpoint is older than the lowest retained one, although a later retained checkpoint still
references the file (expected: ``retained_checkpoints_restorable``); FLINK-26985 ignores
``highestNotClaimedCheckpointID`` (expected: ``no_claim_restore_keeps_snapshot``).
"""

from __future__ import annotations

from model import seams

#: ``RecoveryClaimMode`` values a restore may use.
RESTORE_MODES = ("CLAIM", "NO_CLAIM")


class SharedStateEntry:
    """One registered shared file: the checkpoint that created it and the last that used it."""

    __slots__ = ("created_by", "last_used", "confirmed")

    def __init__(self, created_by: int, last_used: int):
        self.created_by = created_by
        self.last_used = last_used
        self.confirmed = False

    def __repr__(self) -> str:
        return f"SharedStateEntry(created_by={self.created_by}, last_used={self.last_used})"


class SharedStateRegistry:
    """The JobManager's registry of shared files (key: the file's path)."""

    __slots__ = ("entries", "highest_not_claimed")

    def __init__(self):
        self.entries: dict[str, SharedStateEntry] = {}
        self.highest_not_claimed = -1

    def register_reference(self, path: str, checkpoint_id: int) -> None:
        """``registerReference``: a new entry, or one more checkpoint using the file."""
        e = self.entries.get(path)
        if e is None:
            self.entries[path] = SharedStateEntry(checkpoint_id, checkpoint_id)
        elif checkpoint_id > e.last_used:
            e.last_used = checkpoint_id

    def register_all(self, paths, checkpoint_id: int) -> None:
        for p in paths:
            self.register_reference(p, checkpoint_id)

    def register_all_after_restored(self, paths, checkpoint_id: int, mode: str) -> None:
        """``registerAllAfterRestored``: outside CLAIM the restored files are never discarded."""
        self.register_all(paths, checkpoint_id)
        if mode != "CLAIM":
            self.highest_not_claimed = max(self.highest_not_claimed, checkpoint_id)

    def checkpoint_completed(self, checkpoint_id: int) -> None:
        for e in self.entries.values():
            if e.last_used == checkpoint_id:
                e.confirmed = True

    def last_use(self, e: "SharedStateEntry") -> int:
        """The newest checkpoint that references ``e`` (``SharedStateEntry.lastUsedCheckpointID``)."""
        return e.last_used

    def unregister_unused_state(self, lowest_checkpoint_id: int) -> list[str]:
        """``unregisterUnusedState``: remove the entries no retained checkpoint uses; returns
        the files to delete (asynchronously), in path order."""
        out = []
        for path in sorted(self.entries):
            e = self.entries[path]
            if self.last_use(e) < lowest_checkpoint_id:
                if self._may_discard(e):
                    out.append(path)
                del self.entries[path]
        return out

    def _may_discard(self, e: SharedStateEntry) -> bool:
        return e.created_by > self.highest_not_claimed

    def __repr__(self) -> str:
        return f"SharedStateRegistry({self.entries!r}, highest_not_claimed={self.highest_not_claimed})"


@seams.override("shared-state-discarded-with-creator", SharedStateRegistry, "last_use",
                "a shared file's last use is taken to be the checkpoint that created it: it is discarded once that "
                "checkpoint is subsumed, although a later retained checkpoint still references it")
def _last_use_is_the_creator(self, e: SharedStateEntry) -> int:
    return e.created_by


@seams.override("FLINK-26985", SharedStateRegistry, "_may_discard",
                "shared state of a restored snapshot the job did not claim is discarded once unused "
                "(highestNotClaimedCheckpointID is ignored)")
def _may_discard_flink_26985(self, e: SharedStateEntry) -> bool:
    return True
