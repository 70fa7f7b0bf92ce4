"""Invariants of the focused suites: one task's barrier handler, the CheckpointCoordinator
alone, and state assignment on rescaling (``StateAssignmentOperation``).

All are pure ``check(subject) -> Violation | None`` functions of kind *always*, registered
with their subject (``barrier_handler``, ``coordinator``, ``rescaling``): the focused machine
of that subject in ``properties.machines`` checks every one of them, as listed by
``spec.invariant.invariants(subject)``. An invariant that holds only under some condition (a
mode, an initialised handler) tests that condition itself. Those that read the recorded
history (the handler's ``log``, the coordinator's ``effects`` and ``restores``) have scope
``trace``; the others judge the current state. The subjects are plain observation records
built by ``properties.machines`` (what was sent to the mechanism and what it answered), never
the mechanism's own bookkeeping, so a wrong mechanism cannot vouch for itself; an invariant
never writes into its subject.

**Barrier handler subject** (``SingleCheckpointBarrierHandler`` / ``CheckpointBarrierTracker``
driven through a recording context):

* ``mode`` -- ``"aligned"``, ``"alternating"`` (aligned with alignment timeout) or
  ``"at_least_once"`` (the tracker);
* ``num_channels``; ``blocked`` -- the channels currently blocked (an aligned barrier blocks
  its channel upstream by credit when it is delivered; only the handler resumes it);
* ``arrived`` -- checkpoint id -> channels whose barrier of that id was delivered;
* ``log`` -- what the handler told its task, in order: ``("trigger", id, unaligned,
  covered)``, ``("abort", id, reason)``, ``("complete", id, covered)`` (unaligned channel
  state complete), where ``covered`` is the set of channels that had delivered barrier
  ``id`` or their EndOfPartition at that moment;
* ``waiting`` -- True when the handler is back in its start state with nothing pending.

**Coordinator subject** (``CheckpointCoordinator`` driven by trigger/ack/decline/failover
requests):

* ``coordinator`` (for its ``store`` and ``pending``), ``max_concurrent``, ``tasks_to_ack``;
* ``effects`` -- every effect the coordinator returned, in order;
* ``acked_at_completion`` -- checkpoint id -> the subtasks that had sent an ack for it when
  its completion was reported;
* ``kinds`` -- checkpoint id -> CheckpointProperties of every triggered checkpoint;
* ``restores`` -- ``(returned CompletedCheckpoint or None, newest completed checkpoint id or
  None)`` per restore request.

**Rescaling subject**: ``max_parallelism``, ``old_parallelism``, ``new_parallelism``;
``old_keyed``/``new_keyed`` (per subtask {key group: state}); ``old_lists``/``new_split``
(per state name, per subtask, the SPLIT_DISTRIBUTE entries); ``union_old``/``union_new``;
``broadcast_old``/``broadcast_new``.
"""

from __future__ import annotations

from collections import Counter

from model.checkpointcoordinator import (
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointTriggered,
    NotifyCheckpointComplete,
)
from model.keygroups import compute_operator_index_for_key_group
from spec.invariant import Violation, invariant

# ---------------------------------------------------------------------------------------
# barrier handler
# ---------------------------------------------------------------------------------------


def _settled(log, cid: int) -> bool:
    """Checkpoint ``cid`` was triggered, or the handler aborted ``cid`` or a newer id (an
    abort of a newer checkpoint ends the alignment of the older one: ``abortInternal``
    raises ``currentCheckpointId``)."""
    for e in log:
        if e[0] == "trigger" and e[1] >= cid:
            return True
        if e[0] == "abort" and e[1] >= cid:
            return True
    return False


@invariant("handler_blocked_until_settled", kind="always", subject="barrier_handler", scope="trace",
           concept="SingleCheckpointBarrierHandler alignment (CollectingBarriers)",
           statement="While checkpoint n is being aligned, every channel that delivered barrier n stays "
           "blocked until n is triggered or aborted.")
def handler_blocked_until_settled(s) -> Violation | None:
    if s.mode == "at_least_once" or not s.arrived:
        return None
    cur = max(s.arrived)
    if _settled(s.log, cur):
        return None
    free = sorted(set(s.arrived[cur]) - set(s.blocked))
    if free:
        return Violation(invariant="handler_blocked_until_settled",
                         expected={"blocked": sorted(s.arrived[cur])}, actual={"blocked": sorted(s.blocked)},
                         message=f"checkpoint {cur} is still being aligned (neither triggered nor aborted) but "
                         f"channel(s) {free} that already delivered barrier {cur} are no longer blocked: "
                         f"records after the barrier would enter snapshot {cur}")
    return None


@invariant("handler_trigger_after_all_barriers", kind="always", subject="barrier_handler", scope="trace",
           concept="CheckpointBarrierHandler alignment / FLIP-147 EndOfPartition",
           statement="A handler triggers checkpoint n at most once, and an aligned snapshot of n (or the "
           "completion of n's channel state) only after barrier n or EndOfPartition arrived on every channel.")
def handler_trigger_after_all_barriers(s) -> Violation | None:
    seen: Counter = Counter()
    everyone = set(range(s.num_channels))
    for e in s.log:
        if e[0] == "trigger":
            seen[e[1]] += 1
            if seen[e[1]] > 1:
                return Violation(invariant="handler_trigger_after_all_barriers", expected="at most one trigger",
                                 actual={"checkpoint": e[1], "triggers": seen[e[1]]},
                                 message=f"checkpoint {e[1]} was triggered {seen[e[1]]} times by one task")
            if e[2]:  # an unaligned snapshot is taken early by design; its channel state completes later
                continue
        elif e[0] != "complete":
            continue
        missing = sorted(everyone - set(e[-1]))
        if missing:
            what = "triggered" if e[0] == "trigger" else "had its channel state completed"
            return Violation(invariant="handler_trigger_after_all_barriers",
                             expected={"covered": sorted(everyone)}, actual={"covered": sorted(e[-1])},
                             message=f"checkpoint {e[1]} {what} before barrier {e[1]} or EndOfPartition "
                             f"arrived on channel(s) {missing}")
    return None


@invariant("handler_triggers_increasing", kind="always", subject="barrier_handler", scope="trace",
           concept="SingleCheckpointBarrierHandler",
           statement="The checkpoint ids an exactly-once barrier handler triggers are strictly increasing.")
def handler_triggers_increasing(s) -> Violation | None:
    """Not checked for the at-least-once ``CheckpointBarrierTracker``: Flink's tracker can hand
    its task an older checkpoint after a newer one (barrier 1 on channel 0, EndOfPartition on
    0, barrier 2 on channel 1 takes the one-open-channel fast path and triggers 2 leaving 1's
    entry behind, EndOfPartition on 1 then completes and triggers 1). The task drops it:
    ``SubtaskCheckpointCoordinatorImpl.checkpointState`` ignores an "Out of order checkpoint
    barrier" whose id is <= the last one it snapshotted."""
    if s.mode == "at_least_once":
        return None
    last = None
    for e in s.log:
        if e[0] == "trigger":
            if last is not None and e[1] <= last:
                return Violation(invariant="handler_triggers_increasing", expected=f"> {last}", actual=e[1],
                                 message=f"the handler triggered checkpoint {e[1]} after checkpoint {last}")
            last = e[1]
    return None


@invariant("handler_abort_once", kind="always", subject="barrier_handler", scope="trace",
           concept="CheckpointBarrierTracker / SingleCheckpointBarrierHandler abort (FLINK-5285)",
           statement="A handler reports the abort of a checkpoint id at most once, and never aborts a "
           "checkpoint it snapshotted aligned.")
def handler_abort_once(s) -> Violation | None:
    aborted: dict = {}
    aligned_triggers = set()
    for i, e in enumerate(s.log):
        if e[0] == "trigger" and not e[2]:
            aligned_triggers.add(e[1])
        elif e[0] == "abort":
            cid = e[1]
            if cid in aborted:
                return Violation(invariant="handler_abort_once", expected="one abort per checkpoint",
                                 actual={"checkpoint": cid, "aborts": [aborted[cid], e[2]]},
                                 message=f"checkpoint {cid} was aborted twice ({aborted[cid]}, then {e[2]}): "
                                 f"each abort declines to the coordinator and floods a CancelCheckpointMarker "
                                 f"downstream")
            if cid in aligned_triggers:
                return Violation(invariant="handler_abort_once", expected="no abort after the snapshot",
                                 actual={"checkpoint": cid, "abort": e[2]},
                                 message=f"checkpoint {cid} was aborted ({e[2]}) after the task took its "
                                 f"aligned snapshot of it")
            aborted[cid] = e[2]
    return None


@invariant("handler_unblocked_when_waiting", kind="always", subject="barrier_handler",
           concept="BarrierHandlerState WaitingForFirstBarrier / CheckpointBarrierTracker",
           statement="No channel is blocked while the handler waits for a first barrier, and the "
           "at-least-once tracker never blocks a channel.")
def handler_unblocked_when_waiting(s) -> Violation | None:
    if not s.blocked:
        return None
    if s.mode == "at_least_once":
        return Violation(invariant="handler_unblocked_when_waiting", expected=[], actual=sorted(s.blocked),
                         message=f"the at-least-once tracker left channel(s) {sorted(s.blocked)} blocked")
    if s.waiting:
        return Violation(invariant="handler_unblocked_when_waiting", expected=[], actual=sorted(s.blocked),
                         message=f"the handler waits for a first barrier (nothing pending) but channel(s) "
                         f"{sorted(s.blocked)} are still blocked: the task stalls on them")
    return None


# ---------------------------------------------------------------------------------------
# checkpoint coordinator
# ---------------------------------------------------------------------------------------


def _completions(s):
    return [e for e in s.effects if type(e) is CheckpointCompleted]


@invariant("coordinator_completed_ids_increasing", kind="always", subject="coordinator", scope="trace",
           concept="CheckpointCoordinator completion",
           statement="Completed checkpoints (not savepoints) complete in strictly increasing id order.")
def coordinator_completed_ids_increasing(s) -> Violation | None:
    last = None
    for e in _completions(s):
        if e.properties.is_savepoint:
            continue
        if last is not None and e.checkpoint_id <= last:
            return Violation(invariant="coordinator_completed_ids_increasing", expected=f"> {last}",
                             actual=e.checkpoint_id,
                             message=f"checkpoint {e.checkpoint_id} completed after checkpoint {last}: the store "
                             f"would go back in time")
        last = e.checkpoint_id
    return None


@invariant("coordinator_complete_only_when_all_acked", kind="always", subject="coordinator", scope="trace",
           concept="PendingCheckpoint.isFullyAcknowledged",
           statement="A checkpoint completes only after every task to acknowledge acknowledged it.")
def coordinator_complete_only_when_all_acked(s) -> Violation | None:
    for e in _completions(s):
        got = s.acked_at_completion.get(e.checkpoint_id, frozenset())
        missing = sorted(set(s.tasks_to_ack) - set(got))
        if missing:
            return Violation(invariant="coordinator_complete_only_when_all_acked",
                             expected=sorted(s.tasks_to_ack), actual=sorted(got),
                             message=f"checkpoint {e.checkpoint_id} completed without the acknowledgement of "
                             f"subtask(s) {missing}: their state is missing from it")
    return None


@invariant("coordinator_savepoints_outside_store", kind="always", subject="coordinator", scope="trace",
           concept="CheckpointCoordinator savepoints (FLINK-6328, FLINK-25191) / PendingCheckpoint.canBeSubsumed",
           statement="Savepoints never enter the completed checkpoint store and are never subsumed.")
def coordinator_savepoints_outside_store(s) -> Violation | None:
    sp = {cid for cid, p in s.kinds.items() if p.is_savepoint}
    in_store = sorted(sp & set(s.coordinator.store.checkpoint_ids()))
    if in_store:
        return Violation(invariant="coordinator_savepoints_outside_store", expected=[], actual=in_store,
                         message=f"savepoint(s) {in_store} are in the completed checkpoint store: restore would "
                         f"depend on user-owned snapshots")
    for e in s.effects:
        if type(e) is CheckpointAborted and e.reason == "CHECKPOINT_SUBSUMED" and e.checkpoint_id in sp:
            return Violation(invariant="coordinator_savepoints_outside_store", expected="not subsumed",
                             actual={"savepoint": e.checkpoint_id, "reason": e.reason},
                             message=f"savepoint {e.checkpoint_id} was aborted as subsumed by a newer checkpoint")
        if type(e) is CheckpointCompleted and e.checkpoint_id in sp and (e.added_to_store or e.subsumed_from_store):
            return Violation(invariant="coordinator_savepoints_outside_store", expected="not added",
                             actual={"savepoint": e.checkpoint_id, "added_to_store": e.added_to_store},
                             message=f"the completion of savepoint {e.checkpoint_id} changed the store")
    return None


@invariant("coordinator_store_latest_is_newest", kind="always", subject="coordinator", scope="trace",
           concept="CompletedCheckpointStore",
           statement="The store's latest checkpoint is the newest completed checkpoint (none before the first).")
def coordinator_store_latest_is_newest(s) -> Violation | None:
    done = [e.checkpoint_id for e in _completions(s) if not e.properties.is_savepoint]
    newest = max(done) if done else None
    latest = s.coordinator.store.get_latest_checkpoint()
    got = None if latest is None else latest.checkpoint_id
    if got != newest:
        return Violation(invariant="coordinator_store_latest_is_newest", expected=newest, actual=got,
                         message=f"the store's latest checkpoint is {got} but the newest completed checkpoint "
                         f"is {newest}: a restore would not use it")
    return None


@invariant("coordinator_pending_within_max_concurrent", kind="always", subject="coordinator",
           concept="CheckpointRequestDecider",
           statement="A non-forced checkpoint starts only while fewer than max-concurrent checkpoints are "
           "pending: every pending non-forced checkpoint has fewer than max-concurrent older pending ones.")
def coordinator_pending_within_max_concurrent(s) -> Violation | None:
    pend = s.coordinator.pending
    ids = sorted(pend)
    for n, cid in enumerate(ids):
        if not pend[cid].properties.forced and n >= s.max_concurrent:
            return Violation(invariant="coordinator_pending_within_max_concurrent",
                             expected=f"< {s.max_concurrent} older pending", actual={"checkpoint": cid, "older": ids[:n]},
                             message=f"non-forced checkpoint {cid} is pending with {n} older pending checkpoint(s) "
                             f"{ids[:n]} although at most {s.max_concurrent} may run concurrently")
    return None


@invariant("coordinator_notify_only_completed", kind="always", subject="coordinator", scope="trace",
           concept="CheckpointCoordinator.sendAcknowledgeMessages (notifyCheckpointOnComplete)",
           statement="Every notify-complete is sent once, for a checkpoint that completed before.")
def coordinator_notify_only_completed(s) -> Violation | None:
    completed = set()
    notified = set()
    for e in s.effects:
        if type(e) is CheckpointCompleted:
            completed.add(e.checkpoint_id)
        elif type(e) is NotifyCheckpointComplete:
            cid = e.checkpoint_id
            if cid not in completed or cid in notified:
                why = "twice" if cid in notified else "although it never completed"
                return Violation(invariant="coordinator_notify_only_completed", expected=sorted(completed),
                                 actual=cid, message=f"the tasks were notified that checkpoint {cid} completed {why}: "
                                 f"2PC sinks would commit its transactions")
            notified.add(cid)
    return None


@invariant("coordinator_no_notify_for_savepoint", kind="always", subject="coordinator", scope="trace",
           concept="CheckpointCoordinator.cleanupAfterCompletedCheckpoint (FLINK-10354)",
           statement="A plain (not stop-with-) savepoint never sends notify-complete: it is not in the store, "
           "so side effects committed on its notification could be replayed from an older checkpoint.")
def coordinator_no_notify_for_savepoint(s) -> Violation | None:
    for e in s.effects:
        if type(e) is NotifyCheckpointComplete:
            p = s.kinds.get(e.checkpoint_id)
            if p is not None and p.is_savepoint and not p.is_synchronous:
                return Violation(invariant="coordinator_no_notify_for_savepoint", expected="no notification",
                                 actual={"savepoint": e.checkpoint_id},
                                 message=f"savepoint {e.checkpoint_id} notified the tasks of its completion: 2PC "
                                 f"sinks commit it, yet a failure restores the older checkpoint in the store and "
                                 f"replays (re-commits) the same records")
    return None


@invariant("coordinator_restore_latest_completed", kind="always", subject="coordinator", scope="trace",
           concept="CheckpointCoordinator.restoreLatestCheckpointedState",
           statement="A restore returns the newest completed checkpoint, complete (or nothing before the first).")
def coordinator_restore_latest_completed(s) -> Violation | None:
    for got, newest in s.restores:
        gid = None if got is None else got.checkpoint_id
        if gid != newest or (got is not None and not got.complete):
            actual = {"checkpoint": gid, "complete": None if got is None else got.complete}
            return Violation(invariant="coordinator_restore_latest_completed", expected={"checkpoint": newest,
                             "complete": True}, actual=actual,
                             message=f"restore returned checkpoint {gid}"
                             f"{' (which never completed)' if got is not None and not got.complete else ''} "
                             f"instead of the newest completed checkpoint {newest}")
    return None


def triggered_kinds(effects) -> dict:
    """checkpoint id -> CheckpointProperties of every CheckpointTriggered in ``effects``."""
    return {e.checkpoint_id: e.properties for e in effects if type(e) is CheckpointTriggered}

# ---------------------------------------------------------------------------------------
# rescaling
# ---------------------------------------------------------------------------------------


@invariant("keygroup_assigned_to_range_owner", kind="always", subject="rescaling",
           concept="StateAssignmentOperation / KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup",
           statement="After rescaling, each key group's state is on exactly the new subtask that records of "
           "that key group are routed to (kg * p' / maxP), and on no other.")
def keygroup_assigned_to_range_owner(s) -> Violation | None:
    for i, mine in enumerate(s.new_keyed):
        for kg in sorted(mine):
            owner = compute_operator_index_for_key_group(s.max_parallelism, s.new_parallelism, kg)
            if owner != i:
                return Violation(invariant="keygroup_assigned_to_range_owner",
                                 expected={"key_group": kg, "subtask": owner}, actual={"key_group": kg, "subtask": i},
                                 message=f"rescaling {s.old_parallelism} -> {s.new_parallelism} (max parallelism "
                                 f"{s.max_parallelism}) put key group {kg}'s state on subtask {i}, but its records "
                                 f"go to subtask {owner}: the state is stranded")
    return None


@invariant("keyed_state_preserved", kind="always", subject="rescaling",
           concept="StateAssignmentOperation (key-group range intersection)",
           statement="Rescaling keyed state loses no key group, duplicates none and keeps every value.")
def keyed_state_preserved(s) -> Violation | None:
    before = {}
    for st in s.old_keyed:
        before.update(st)
    after: dict = {}
    for i, st in enumerate(s.new_keyed):
        for kg, v in st.items():
            if kg in after:
                return Violation(invariant="keyed_state_preserved", expected={"key_group": kg, "owners": 1},
                                 actual={"key_group": kg, "owners": [after[kg][0], i]},
                                 message=f"key group {kg} was restored on subtasks {after[kg][0]} and {i}")
            after[kg] = (i, v)
    lost = sorted(set(before) - set(after))
    extra = sorted(set(after) - set(before))
    changed = sorted(kg for kg in before if kg in after and after[kg][1] != before[kg])
    if lost or extra or changed:
        return Violation(invariant="keyed_state_preserved", expected=sorted(before), actual=sorted(after),
                         message=f"rescaling {s.old_parallelism} -> {s.new_parallelism}: key groups lost {lost}, "
                         f"invented {extra}, changed {changed}")
    return None


@invariant("split_distribute_exact_and_balanced", kind="always", subject="rescaling",
           concept="RoundRobinOperatorStateRepartitioner",
           statement="SPLIT_DISTRIBUTE list state: every old entry goes to exactly one new subtask, and the new "
           "subtasks' list sizes differ by at most one.")
def split_distribute_exact_and_balanced(s) -> Violation | None:
    for name, (old, new) in enumerate(zip(s.old_lists, s.new_split)):
        if len(new) != s.new_parallelism:
            return Violation(invariant="split_distribute_exact_and_balanced", expected=s.new_parallelism,
                             actual=len(new), message=f"state {name}: {len(new)} lists for {s.new_parallelism} subtasks")
        want = Counter(e for lst in old for e in lst)
        got = Counter(e for lst in new for e in lst)
        if want != got:
            return Violation(invariant="split_distribute_exact_and_balanced", expected=sorted(want.elements()),
                             actual=sorted(got.elements()),
                             message=f"state {name}: entries lost {sorted((want - got).elements())}, duplicated or "
                             f"invented {sorted((got - want).elements())}")
        sizes = [len(x) for x in new]
        if max(sizes) - min(sizes) > 1:
            return Violation(invariant="split_distribute_exact_and_balanced", expected="sizes within 1",
                             actual=sizes, message=f"state {name}: new list sizes {sizes} differ by more than one")
    return None


@invariant("union_state_to_all", kind="always", subject="rescaling", concept="OperatorStateHandle.Mode.UNION",
           statement="UNION list state: every new subtask gets every entry of every old subtask.")
def union_state_to_all(s) -> Violation | None:
    want = Counter(e for lst in s.union_old for e in lst)
    if len(s.union_new) != s.new_parallelism:
        return Violation(invariant="union_state_to_all", expected=s.new_parallelism, actual=len(s.union_new),
                         message=f"union state restored on {len(s.union_new)} of {s.new_parallelism} subtasks")
    for i, lst in enumerate(s.union_new):
        if Counter(lst) != want:
            return Violation(invariant="union_state_to_all", expected=sorted(want.elements()), actual=sorted(lst),
                             message=f"new subtask {i} did not get exactly the union of all old entries")
    return None


@invariant("broadcast_state_copied", kind="always", subject="rescaling",
           concept="OperatorStateHandle.Mode.BROADCAST",
           statement="BROADCAST state: new subtask i gets a copy of old subtask i % oldParallelism's state.")
def broadcast_state_copied(s) -> Violation | None:
    if len(s.broadcast_new) != s.new_parallelism:
        return Violation(invariant="broadcast_state_copied", expected=s.new_parallelism, actual=len(s.broadcast_new),
                         message=f"broadcast state restored on {len(s.broadcast_new)} of {s.new_parallelism} subtasks")
    for i, lst in enumerate(s.broadcast_new):
        src = s.broadcast_old[i % s.old_parallelism]
        if list(lst) != list(src):
            return Violation(invariant="broadcast_state_copied", expected=list(src), actual=list(lst),
                             message=f"new subtask {i} should hold a copy of old subtask {i % s.old_parallelism}'s "
                             f"broadcast state")
    return None
