"""Invariants of checkpoints: consistent cuts, abort idempotence.

``consistent_cut`` (always): every completed checkpoint is a consistent cut of the
dataflow (Chandy-Lamport; Carbone et al., "Lightweight Asynchronous Snapshots for
Distributed Dataflows", 2015): for every pipelined channel from producer P to consumer T,
the records P had sent before its snapshot are exactly the records T had consumed before
its snapshot plus the channel state persisted for that channel (T's input side and P's
output side, unaligned checkpoints). A record counted on neither side is lost on restore;
a record counted on both (or consumed past the barrier) is duplicated.
"""

from __future__ import annotations

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
    concept="SubtaskCheckpointCoordinatorImpl (out-of-order barriers are declined)",
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
