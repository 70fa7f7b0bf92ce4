"""Invariants of state backends and checkpoint storage (with ``RuntimeConfig.state_backend``).

* ``file_deleted_only_when_unreferenced`` (always): a delete never removes a file that a
  retained completed checkpoint, a savepoint, or the snapshot a job restored without claiming
  it references;
* ``no_claim_restore_keeps_snapshot`` (always): the job never deletes a file of a snapshot it
  restored in NO_CLAIM mode;
* ``retained_checkpoints_restorable`` (always): every file such a snapshot references exists
  (whoever deleted it; checked after the two above, which name the job's delete);
* ``snapshot_reflects_synchronous_phase`` (always): the files of a completed checkpoint hold
  exactly the keyed state of each task's synchronous phase;
* ``incremental_restore_equals_full`` (always): a restore from the files (an incremental
  chain of shared files or a full snapshot) gives each task the state a full snapshot of the
  synchronous phase holds.

Coverage goals: an asynchronous phase still running when the next barrier arrives, a failure
between the two phases, a subsumption that frees shared files, a restore in CLAIM mode and
one in NO_CLAIM mode. All of them read ``model.checkpointstorage.CheckpointStorage`` and the
tasks' ``model.statebackend`` backends, and hold trivially without a state backend.
"""

from __future__ import annotations

from model.checkpointstorage import flatten
from spec.coverage import goal
from spec.invariant import Violation, invariant


def _backend(scenario) -> bool:
    """The goal needs a modelled state backend (``RuntimeConfig.state_backend``)."""
    return scenario.config.state_backend is not None


def _retained(cluster) -> tuple:
    return tuple(cluster.coordinator.store.checkpoint_ids())


@invariant(
    "no_claim_restore_keeps_snapshot",
    kind="always",
    concept="RecoveryClaimMode.NO_CLAIM (SharedStateRegistry highestNotClaimedCheckpointID)",
    statement="The job never deletes a file of a snapshot it restored in NO_CLAIM mode.",
)
def no_claim_restore_keeps_snapshot(run) -> Violation | None:
    cluster = run.cluster
    storage = cluster.storage
    if storage is None or not storage.unclaimed:
        return None
    if storage.last_deleted is None or storage.last_deleted[0] != cluster.now - 1:
        return None
    path = storage.last_deleted[1]
    for cid in sorted(storage.unclaimed):
        for h in storage.handles.get(cid, {}).values():
            if path in h.paths:
                return Violation(invariant="no_claim_restore_keeps_snapshot", expected=f"{path} kept (the user's)",
                                 actual=f"{path} deleted by the job",
                                 message=f"the job deleted {path} of snapshot {cid}, which it restored in NO_CLAIM mode")
    return None


@invariant(
    "file_deleted_only_when_unreferenced",
    kind="always",
    concept="SharedStateRegistry.unregisterUnusedState / CheckpointsCleaner",
    statement="A state file is deleted only when no retained checkpoint, savepoint or unclaimed restored "
    "snapshot references it.",
)
def file_deleted_only_when_unreferenced(run) -> Violation | None:
    cluster = run.cluster
    storage = cluster.storage
    if storage is None or storage.last_deleted is None or storage.last_deleted[0] != cluster.now - 1:
        return None
    path = storage.last_deleted[1]
    ref = storage.referenced(_retained(cluster)).get(path)
    if ref is None:
        return None
    return Violation(invariant="file_deleted_only_when_unreferenced", expected=f"{path} kept",
                     actual=f"{path} deleted", message=f"{path} was deleted while {ref[1]} {ref[0]} references it")


@invariant(
    "retained_checkpoints_restorable",
    kind="always",
    concept="CompletedCheckpointStore / SharedStateRegistry (state.checkpoints.num-retained)",
    statement="Every file referenced by a retained completed checkpoint, a savepoint, or a snapshot restored "
    "in NO_CLAIM mode (until the user deletes it) exists.",
)
def retained_checkpoints_restorable(run) -> Violation | None:
    storage = run.cluster.storage
    if storage is None or not storage.deleted or storage.last_change != run.cluster.now - 1:
        return None  # nothing kept can have lost a file unless this step deleted or kept something
    for path, (cid, why) in storage.referenced(_retained(run.cluster)).items():
        if path not in storage.files:
            return Violation(invariant="retained_checkpoints_restorable", expected=f"{path} exists",
                             actual=f"{path} was deleted by the {storage.deleted.get(path, 'job')}",
                             message=f"{why} {cid} is not restorable: its file {path} was deleted")
    return None


@invariant(
    "snapshot_reflects_synchronous_phase",
    kind="always",
    concept="HeapSnapshotStrategy (CopyOnWriteStateMap) / RocksIncrementalSnapshotStrategy",
    statement="The files of a completed checkpoint hold exactly each task's keyed state at its synchronous "
    "phase: nothing written after the barrier, nothing missing.",
)
def snapshot_reflects_synchronous_phase(run) -> Violation | None:
    cluster = run.cluster
    storage = cluster.storage
    if storage is None:
        return None
    for cid in cluster.new_completed:
        for tid, snap in sorted(cluster.completed.get(cid, {}).items()):
            h = snap.state_handle
            if h is None:
                continue
            got, missing = storage.materialize(h)
            want = flatten(snap.keyed)
            have = flatten(got)
            if have != want or missing:
                diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
                return Violation(invariant="snapshot_reflects_synchronous_phase",
                                 expected={repr(k): repr(want.get(k)) for k in diff[:3]},
                                 actual={repr(k): repr(have.get(k)) for k in diff[:3]},
                                 message=f"checkpoint {cid}: the files of {cluster.eg.subtasks[tid].name} do not hold "
                                 f"its state at the synchronous phase ({len(diff)} key group(s) differ"
                                 f"{', missing files ' + ', '.join(missing) if missing else ''})")
    return None


@invariant(
    "incremental_restore_equals_full",
    kind="always",
    concept="RocksIncrementalRestoreOperation / SharedStateRegistry placeholders",
    statement="A task restored from a checkpoint's files (a chain of shared incremental files, or a full "
    "snapshot) gets the state a full snapshot of the synchronous phase holds.",
)
def incremental_restore_equals_full(run) -> Violation | None:
    cluster = run.cluster
    storage = cluster.storage
    if storage is None or storage.last_restore is None or storage.last_restore[0] != cluster.now - 1:
        return None
    for tid, cid, same, missing in storage.last_restore[1]:
        if not same:
            return Violation(invariant="incremental_restore_equals_full", expected="the state of the full snapshot",
                             actual=f"a different state (missing files: {', '.join(missing) or 'none'})",
                             message=f"{cluster.eg.subtasks[tid].name} restored from checkpoint {cid} does not get the "
                             f"checkpoint's state")
    return None


# -- coverage goals ---------------------------------------------------------------------------

@goal("async_phase_running_at_next_barrier", "AsyncCheckpointRunnable",
      "A task took the synchronous phase of a snapshot while the asynchronous phase of an earlier one still ran.",
      applies=_backend)
def async_phase_running_at_next_barrier(run, new_events) -> bool:
    cluster = run.cluster
    if cluster.storage is None:
        return False
    return any(len(t.backend.pending) >= 2 for t in cluster.tasks)


@goal("failure_between_snapshot_phases", "AsyncCheckpointRunnable cancelled by a failover",
      "A failure restarted a task between the synchronous and the asynchronous phase of its snapshot.",
      applies=lambda s: _backend(s) and s.environment.max_failures > 0)
def failure_between_snapshot_phases(run, new_events) -> bool:
    return any(e[0] == "failure_between_snapshot_phases" for e in new_events)


@goal("subsumption_freed_shared_files", "SharedStateRegistry.unregisterUnusedState",
      "A completed checkpoint subsumed one whose shared files no retained checkpoint used any more.",
      applies=lambda s: _backend(s) and s.config.incremental)
def subsumption_freed_shared_files(run, new_events) -> bool:
    return any(e[0] == "shared_state_unused" for e in new_events)


@goal("restore_in_claim_mode", "RecoveryClaimMode.CLAIM",
      "A job restored a savepoint in CLAIM mode.",
      applies=lambda s: _backend(s) and s.environment.savepoints and s.config.restore_mode == "CLAIM")
def restore_in_claim_mode(run, new_events) -> bool:
    return any(e[0] == "restored_with_claim_mode" and e[3] == "CLAIM" for e in new_events)


@goal("restore_in_no_claim_mode", "RecoveryClaimMode.NO_CLAIM",
      "A job restored a savepoint in NO_CLAIM mode.",
      applies=lambda s: _backend(s) and s.environment.savepoints and s.config.restore_mode == "NO_CLAIM")
def restore_in_no_claim_mode(run, new_events) -> bool:
    return any(e[0] == "restored_with_claim_mode" and e[3] == "NO_CLAIM" for e in new_events)
