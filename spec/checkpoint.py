"""Invariants of checkpoints: consistent cuts, abort idempotence.

``consistent_cut`` (always): every completed checkpoint is a consistent cut of the
dataflow (Chandy-Lamport; Carbone et al., "Lightweight Asynchronous Snapshots for
Distributed Dataflows", 2015): for every pipelined channel from producer P to consumer T,
the records P had sent before its snapshot are exactly the records T had consumed before
its snapshot plus the channel state persisted for that channel (T's input side and P's
output side, unaligned checkpoints). A record counted on neither side is lost on restore;
a record counted on both (or consumed past the barrier) is duplicated.

``drain_fires_every_window`` (always): the savepoint of a stop-with-savepoint ``--drain`` holds
no window contents and no event-time timer: every source ended its input with MAX_WATERMARK
before the savepoint's barrier (``StreamTask.advanceToEndOfEventTime``), so every window fired
and was purged before its operator's snapshot, and the job ends with every result of what it
read committed.

``no_channel_state_on_forced_aligned_edges`` (always): an edge that cannot carry unaligned
checkpoints (Flink 2.3: a pointwise or broadcast input makes every input edge of its consumer
such an edge) has no channel state in any completed checkpoint.
"""

from __future__ import annotations

from model.actions import CheckpointTimeout, kind_of
from model.windowing import WindowKeyGroupState
from model.checkpointfailuremanager import COUNTED_REASONS
from spec.invariant import Violation, invariant


def cut_violations(eg, snaps: dict) -> list[dict]:
    """The channels of ``eg`` on which checkpoint ``snaps`` (subtask id -> TaskSnapshot) is
    not a consistent cut, as dicts (channel, producer, consumer, sent, received, channel_state)."""
    bad = []
    for ch in eg.channels:
        p = snaps.get(ch.producer)
        t = snaps.get(ch.consumer)
        if p is None or t is None or ch.id not in p.sent:
            continue  # blocking partitions are persisted whole; finished tasks report no cut
        sent = p.sent[ch.id]
        received = t.received.get(ch.id, 0)
        state = len(t.input_channel_state.get(ch.id, ())) + len(p.output_channel_state.get(ch.id, ()))
        if sent != received + state:
            bad.append({"channel": ch.id, "producer": ch.producer, "consumer": ch.consumer,
                        "sent": sent, "received": received, "channel_state": state})
    return bad


@invariant(
    "consistent_cut",
    kind="always",
    concept="CheckpointBarrier alignment / unaligned channel state (CheckpointCoordinator)",
    statement="Every completed checkpoint is a consistent cut: per channel, records sent before the "
    "producer's snapshot = records consumed before the consumer's snapshot + channel state.",
)
def consistent_cut(run) -> Violation | None:
    cluster = run.cluster
    for cid in cluster.new_completed:
        bad = cut_violations(cluster.eg, cluster.completed.get(cid, {}))
        if bad:
            b = bad[0]
            verb = "lost" if b["sent"] > b["received"] + b["channel_state"] else "counted twice"
            n = abs(b["sent"] - b["received"] - b["channel_state"])
            return Violation(
                invariant="consistent_cut",
                expected={"channel": b["channel"], "received + channel_state": b["sent"]},
                actual={"channel": b["channel"], "received": b["received"], "channel_state": b["channel_state"]},
                message=(f"checkpoint {cid} is not a consistent cut on channel {b['channel']} "
                         f"(subtask {b['producer']} -> {b['consumer']}): the producer had sent {b['sent']} "
                         f"records before its snapshot, the consumer's snapshot reflects {b['received']} and "
                         f"the channel state holds {b['channel_state']}, so {n} record(s) would be {verb} "
                         f"on restore"),
            )
    return None


@invariant(
    "no_channel_state_on_forced_aligned_edges",
    kind="always",
    concept="StreamEdge.supportsUnalignedCheckpoints / CheckpointOptions.withUnalignedUnsupported",
    statement="A completed checkpoint holds no in-flight data of an edge that cannot carry unaligned checkpoints "
    "(a forward, rescale or broadcast edge, or another input edge of their consumer): its barriers travel "
    "aligned, behind the data, so neither the consumer's input channel state nor the producer's output channel "
    "state has anything for it.",
)
def no_channel_state_on_forced_aligned_edges(run) -> Violation | None:
    cluster = run.cluster
    eg = cluster.eg
    edges = eg.job_graph.edges
    for cid in cluster.new_completed:
        for tid, snap in sorted(cluster.completed.get(cid, {}).items()):
            for side, state in (("input", snap.input_channel_state), ("output", snap.output_channel_state)):
                for c in sorted(state):
                    e = edges[eg.channels[c].job_edge]
                    if state[c] and not e.supports_unaligned_checkpoints:
                        return Violation(
                            invariant="no_channel_state_on_forced_aligned_edges",
                            expected={"channel": c, f"{side}_channel_state": 0},
                            actual={"channel": c, f"{side}_channel_state": len(state[c])},
                            message=(f"checkpoint {cid} holds {len(state[c])} in-flight record(s) of channel {c} "
                                     f"as subtask {tid}'s {side} channel state, but its edge "
                                     f"{e.source_operator} -> {e.target_operator} ({e.partitioner}) cannot carry "
                                     f"unaligned checkpoints: its barriers must travel aligned, behind the data"),
                        )
    return None


@invariant(
    "decline_at_most_once",
    kind="always",
    concept="CheckpointBarrierTracker / SingleCheckpointBarrierHandler abort handling (FLINK-5285)",
    statement="A subtask declines (aborts) a given checkpoint at most once.",
)
def decline_at_most_once(run) -> Violation | None:
    seen: set = set()
    for key in run.cluster.declines:
        if key in seen:
            tid, cid, attempt = key
            return Violation(
                invariant="decline_at_most_once",
                expected="each (subtask, checkpoint) declined at most once",
                actual={"subtask": tid, "checkpoint": cid},
                message=f"subtask {tid} declined checkpoint {cid} more than once (an abort flood)",
            )
        seen.add(key)
    return None


@invariant(
    "snapshots_in_checkpoint_order",
    kind="always",
    concept="SubtaskCheckpointCoordinatorImpl (no snapshot for an out-of-order barrier or trigger)",
    statement="Per task, snapshots are taken in increasing checkpoint order: no task takes (the synchronous "
    "phase of) a snapshot of a checkpoint older than one it already took in the same attempt.",
)
def snapshots_in_checkpoint_order(run) -> Violation | None:
    """Reads ``StreamTask.out_of_order``: set when a task takes the synchronous phase of a
    snapshot older than one it already took in the same attempt (the asynchronous phases,
    with a state backend, may finish and be acknowledged in any order, as Flink's
    ``AsyncCheckpointRunnable`` instances do)."""
    cluster = run.cluster
    for t in cluster.tasks:
        if t.out_of_order is not None:
            cid, newer = t.out_of_order
            name = cluster.eg.subtasks[t.id].name
            return Violation(
                invariant="snapshots_in_checkpoint_order",
                expected={"subtask": t.id, "checkpoint": f"> {newer}"},
                actual={"subtask": t.id, "checkpoint": cid},
                message=(f"{name} took a snapshot of checkpoint {cid} after it had taken one of checkpoint "
                         f"{newer}: its state for {cid} already contains what it processed for {newer}"),
            )
    return None


@invariant(
    "aligned_checkpoint_timeout_honoured",
    kind="always",
    concept="SingleCheckpointBarrierHandler alignment timer (execution.checkpointing.aligned-checkpoint-timeout)",
    statement="With an aligned-checkpoint timeout, a task turns an aligned checkpoint unaligned only once the "
    "timeout has passed since the checkpoint was triggered, and while it aligns it holds a timer due then.",
)
def aligned_checkpoint_timeout_honoured(run) -> Violation | None:
    """Neither early: a task collecting a timed-out checkpoint's barriers unaligned
    (``AlternatingCollectingBarriersUnaligned`` for a barrier sent aligned) is at or past the
    barrier's timestamp + timeout (an upstream task that timed out sends unaligned barriers
    only after its own deadline, which is the same). Nor never: a task aligning such a
    checkpoint (``AlternatingCollectingBarriers``) holds the alignment timer of that checkpoint,
    due at that deadline, so the timeout can fire."""
    cluster = run.cluster
    timeout = cluster.config.aligned_checkpoint_timeout
    if timeout is None or not cluster.config.timeoutable_barriers:
        return None
    now = cluster.now - 1  # the logical time of the step just taken
    for t in cluster.tasks:
        h = t.handler
        b = getattr(h, "barrier", None)
        if b is None or not getattr(h, "pending", False) or not b.timeoutable or b.unaligned:
            continue
        deadline = b.timestamp + timeout
        name = cluster.eg.subtasks[t.id].name
        if h.state == "AlternatingCollectingBarriersUnaligned" and now < deadline:
            return Violation(
                invariant="aligned_checkpoint_timeout_honoured",
                expected={"subtask": t.id, "checkpoint": h.current_id, "unaligned_not_before": deadline},
                actual={"subtask": t.id, "checkpoint": h.current_id, "unaligned_at": now},
                message=(f"{name} turned checkpoint {h.current_id} unaligned at time {now}, before its aligned-"
                         f"checkpoint timeout: triggered at {b.timestamp} with a timeout of {timeout}, it may "
                         f"switch at {deadline} at the earliest"),
            )
        if h.state == "AlternatingCollectingBarriers" and t.timer != (h.current_id, deadline):
            return Violation(
                invariant="aligned_checkpoint_timeout_honoured",
                expected={"subtask": t.id, "timer": [h.current_id, deadline]},
                actual={"subtask": t.id, "timer": None if t.timer is None else list(t.timer)},
                message=(f"{name} aligns checkpoint {h.current_id} (triggered at {b.timestamp}, aligned-checkpoint "
                         f"timeout {timeout}) but " + (
                             "holds no alignment timer: the timeout can never turn it unaligned" if t.timer is None
                             else f"its alignment timer is due at {t.timer[1]} instead of {deadline}: the "
                                  f"checkpoint turns unaligned {'early' if t.timer[1] < deadline else 'late'}")),
            )
    return None


#: events that disturb checkpointing without an action of a disturbing kind in the same step
#: (a failover noticed later, a restore, a JobManager recovery, a TaskManager declared lost by
#: heartbeat timeout, a finalization that failed because a snapshot referenced shared state the
#: SharedStateRegistry no longer knows): checkpoints pending then may legitimately never complete
DISTURBING_EVENTS = frozenset({"failover", "task_failed", "task_manager_lost", "job_manager_failover", "job_failed",
                               "restored", "rescaled", "rescaled_from_checkpoint", "stop_with_savepoint",
                               "cp_tm_timeout", "cp_jobmaster_lost", "cp_job_recovered", "cp_rpc_lost",
                               "finalize_failed", "cp_finalize_failed", "failure_between_snapshot_phases"})
#: abort reasons that mean "a newer checkpoint took its place": fine when a newer one completes
SUBSUMED_REASONS = frozenset({"CHECKPOINT_SUBSUMED", "CHECKPOINT_DECLINED_SUBSUMED"})
#: abort reasons of a job's natural end (a task's input ended before the barrier came, with
#: checkpoints after tasks finish switched off)
END_OF_INPUT_REASONS = frozenset({"CHECKPOINT_DECLINED_INPUT_END_OF_STREAM"})


def last_disturbance(run) -> int:
    """The logical time of the run's last disturbance: a step of a disturbing action kind
    (``ActionKind.disturbs``: a failure, a lost message, a checkpoint timeout, a stop, restart
    or rescale) or a disturbing event; -1 when there was none. A ``CheckpointTimeout`` taken
    when nothing could complete the checkpoint any more (the model records
    ``checkpoint_stuck``: what the drain policy does at the end of a run) is no disturbance: it
    is the sign that the checkpoint can never complete, which is what is judged."""
    cluster = run.cluster
    stuck = {e[1] for e in cluster.events if e[0] == "checkpoint_stuck"}
    last = -1
    for i, a in enumerate(cluster.trace):
        unit = kind_of(a)
        if unit is None or not unit.disturbs:
            continue
        if type(a) is CheckpointTimeout and i in stuck:
            continue
        last = i
    for e in cluster.events:
        if e[0] in DISTURBING_EVENTS and e[1] > last:
            last = e[1]
    return last


#: the open obligations of ``checkpoint_obligations``: a checkpoint still pending (a newer
#: completed one, or its own completion, resolves it), one declined as subsumed (a newer
#: completed one resolves it) and one aborted for another cause (only a later disturbance
#: excuses it)
OBLIGATION_STATUSES = ("pending", "subsumed", "failed")


def checkpoint_obligations(run) -> list[tuple]:
    """The checkpoints triggered after the run's last disturbance that have neither completed
    nor been excused so far, in trigger order: ``(checkpoint id, status, trigger step,
    abort reason, abort step, declining subtask)``, status one of ``OBLIGATION_STATUSES``.

    Only what happened at or after a checkpoint's trigger counts for it. Excused: declined
    because a task's input ended; declined as subsumed once a newer checkpoint completes; or
    ended otherwise (aborted, or still pending) after a newer checkpoint had completed. In a
    drained run every obligation left is a violation of ``checkpoints_keep_completing``; the
    list's ids and statuses (``obligation_summary``) are all of the history that verdict can
    still depend on: a later disturbance clears every obligation, and a later completion or
    abort acts on an obligation by its status alone."""
    cluster = run.cluster
    last = last_disturbance(run)
    triggers = [(r.checkpoint_id, r.timestamp) for r in cluster.trigger_results if r.ok and r.timestamp > last]
    if not triggers:
        return []
    ends = [e for e in cluster.events if (e[0] == "completed" or e[0] == "aborted") and e[1] > last]
    out = []
    for cid, at in triggers:
        mine = [e for e in ends if e[2] == cid and e[1] >= at]
        if any(e[0] == "completed" for e in mine):
            continue
        aborts = [e for e in mine if e[0] == "aborted"]
        reason, when, decliner = (aborts[-1][3], aborts[-1][1], aborts[-1][4]) if aborts else (None, cluster.now, None)
        newer = [e[1] for e in ends if e[0] == "completed" and e[2] > cid and e[1] >= at]
        if reason in END_OF_INPUT_REASONS or (reason in SUBSUMED_REASONS and newer) or any(t <= when for t in newer):
            continue
        status = "pending" if reason is None else "subsumed" if reason in SUBSUMED_REASONS else "failed"
        out.append((cid, status, at, reason, when, decliner))
    return out


def obligation_summary(run) -> tuple:
    """The part of the run's history ``checkpoints_keep_completing`` still depends on: the open
    obligations' checkpoint ids and statuses (no steps: they would tell apart states that
    behave alike)."""
    return tuple((cid, status) for cid, status, *_ in checkpoint_obligations(run))


@invariant(
    "checkpoints_keep_completing",
    kind="eventually",
    concept="CheckpointCoordinator progress (a checkpoint fails only for a cause; CheckpointFailureManager)",
    statement="With no further faults, checkpoints keep completing: in a drained run, every checkpoint triggered "
    "after the last disturbance (failure, lost message, timeout, stop, restart) completes, or is overtaken by a "
    "newer checkpoint that completes, or is declined because a task's input ended.",
    history=obligation_summary,
    # an obligation aborted for no cause stays open until a disturbance: every fault-free
    # continuation violates the invariant
    doomed=lambda summary: any(status == "failed" for _cid, status in summary),
)
def checkpoints_keep_completing(run) -> Violation | None:
    """Overtaken: declined as subsumed (a newer barrier reached a task first) and a newer
    checkpoint completes; or ended otherwise after a newer checkpoint had completed (a
    savepoint's aligned barrier overtaken by a newer unaligned checkpoint's reaches tasks that
    already took the newer one: they skip it without declining, as Flink's
    ``SubtaskCheckpointCoordinatorImpl`` does, and the savepoint expires). The open
    obligations are ``checkpoint_obligations``."""
    cluster = run.cluster
    for cid, _status, at, reason, when, decliner in checkpoint_obligations(run):
        last = last_disturbance(run)
        since = "in a run without disturbance" if last < 0 else f"after the last disturbance (step {last})"
        what = f"was aborted ({reason}) at step {when}" if reason is not None else "never completed"
        if decliner is not None:
            what += f", declined by {cluster.eg.subtasks[decliner].name}"
        actual = {"checkpoint": cid, "outcome": reason or "pending"}
        if decliner is not None:
            actual["subtask"] = decliner
        return Violation(
            invariant="checkpoints_keep_completing",
            expected={"checkpoint": cid, "outcome": "completed, or overtaken by a newer completed checkpoint"},
            actual=actual,
            message=(f"checkpoint {cid}, triggered at step {at} {since}, {what} and no newer "
                     f"checkpoint had completed: with no further faults a triggered checkpoint must complete"),
        )
    return None


# -- the CheckpointFailureManager ------------------------------------------------------------------

#: events after which the job has a new JobMaster, and so a new CheckpointFailureManager
_NEW_JOB_MASTER = ("job_manager_failover", "rescaled", "rescaled_from_checkpoint", "resubmitted_from_checkpoint")


def failure_count(run) -> tuple:
    """Flink's count of consecutive failed checkpoints, from the run's events alone:
    ``(count, counted ids, newest completed id, breach)``. A checkpoint (not a savepoint)
    aborted for a counted reason (``model.checkpointfailuremanager.COUNTED_REASONS``) counts once,
    if it is newer than the newest completed checkpoint; a newer completion, a failover of the
    manager's and a new JobMaster clear the count. ``breach`` is the first disagreement with
    the threshold: ``("missed", cid, count)`` (the count passed it and the job was not failed
    over in that step) or ``("early", cid, count)`` (failed over with the count within it)."""
    tolerable = run.cluster.config.tolerable_failed_checkpoints
    events = run.cluster.events
    savepoints = {e[2] for e in events if e[0] == "triggered" and e[3]}
    count, counted, newest, due = 0, frozenset(), None, None
    for e in events:
        kind = e[0]
        if due is not None and e[1] != due[0]:
            return count, counted, newest, ("missed", due[1], due[2])  # the step ended without the failover
        if kind in _NEW_JOB_MASTER:
            count, counted, newest = 0, frozenset(), None
        elif kind == "completed":
            if newest is None or e[2] > newest:
                count, counted, newest = 0, frozenset(), e[2]
        elif kind == "aborted":
            cid, reason = e[2], e[3]
            if cid in savepoints or reason not in COUNTED_REASONS or cid in counted \
                    or (newest is not None and cid <= newest):
                continue
            count, counted = count + 1, counted | {cid}
            if count > tolerable:
                due = (e[1], cid, count)
        elif kind == "checkpoint_failures_exceeded" and e[2] not in savepoints:
            if due is None:
                return count, counted, newest, ("early", e[2], count)
            count, counted, due = 0, frozenset(), None
    if due is not None and due[0] != run.cluster.now:
        return count, counted, newest, ("missed", due[1], due[2])
    return count, counted, newest, None


def _failure_history(run):
    cfg = run.cluster.config
    if cfg.tolerable_failed_checkpoints is None or run.cluster.cp is not None:
        return None
    return failure_count(run)


@invariant(
    "checkpoint_failures_tolerated",
    kind="always",
    scope="trace",
    concept="CheckpointFailureManager (execution.checkpointing.tolerable-failed-checkpoints)",
    statement="With a threshold N of tolerable failed checkpoints, the job is failed over for its checkpoints' "
    "failures exactly when more than N checkpoints in a row, each newer than the newest completed one, failed "
    "for a reason Flink counts (an expiry, a task's failed asynchronous snapshot, a declined or unfinalizable "
    "checkpoint), in the step of the failure that passed N; never earlier.",
    history=_failure_history,
)
def checkpoint_failures_tolerated(run) -> Violation | None:
    """Not judged without a threshold (the model's default: unlimited) nor with the control plane
    (a completion the HA store refuses is not reported to the manager, see
    ``model.checkpointfailuremanager``). A stop-with-savepoint's decline, which always fails the
    job, and a savepoint's failures are not counted."""
    summary = _failure_history(run)
    if summary is None or summary[3] is None:
        return None
    what, cid, count = summary[3]
    n = run.cluster.config.tolerable_failed_checkpoints
    if what == "missed":
        return Violation(
            invariant="checkpoint_failures_tolerated",
            expected={"failover": "global", "after_checkpoint": cid, "consecutive_failures": count},
            actual={"failover": None},
            message=(f"checkpoint {cid} was the {count}th failed checkpoint in a row, more than the {n} tolerated "
                     f"(execution.checkpointing.tolerable-failed-checkpoints), and the job was not failed over"),
        )
    return Violation(
        invariant="checkpoint_failures_tolerated",
        expected={"failover": None, "consecutive_failures": f"> {n}"},
        actual={"failover": "global", "after_checkpoint": cid, "consecutive_failures": count},
        message=(f"the job was failed over for its checkpoints' failures after checkpoint {cid}, with {count} "
                 f"failed in a row, within the {n} tolerated"),
    )


@invariant(
    "drain_fires_every_window",
    kind="always",
    concept="stop-with-savepoint --drain (SavepointType TERMINATE, StreamTask.advanceToEndOfEventTime)",
    statement="When a stop-with-savepoint --drain completes, its savepoint holds no window contents and no "
    "event-time timer: MAX_WATERMARK reached every window operator before its snapshot.",
)
def drain_fires_every_window(run) -> Violation | None:
    """Judged in the step the drained savepoint completes (the job is then FINISHED): the
    savepoint's snapshots are read, the first window key group with contents or timers named."""
    c = run.cluster
    job = c.job
    if job.status != "FINISHED" or job.savepoint not in c.delta.completed:
        return None
    for tid, snap in sorted((job.savepoint_snapshots or {}).items()):
        for op, groups in sorted(snap.keyed.items()):
            for kg, st in sorted(groups.items()):
                if type(st) is WindowKeyGroupState and (st.contents or st.timers):
                    return Violation(
                        invariant="drain_fires_every_window",
                        expected={"savepoint": job.savepoint, "window_state": "none"},
                        actual={"savepoint": job.savepoint, "subtask": tid, "operator": op, "key_group": kg,
                                "windows": len(st.contents), "timers": len(st.timers)},
                        message=(f"stop-with-savepoint --drain completed savepoint {job.savepoint} with "
                                 f"{len(st.contents)} unfired window(s) and {len(st.timers)} timer(s) of operator "
                                 f"'{op}' (key group {kg}, {c.eg.subtasks[tid].name}): MAX_WATERMARK did not reach "
                                 f"it before its snapshot, and its results are lost with the finished job"),
                    )
    return None
