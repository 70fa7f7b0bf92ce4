"""Coverage goals ("sometimes"): states a search must reach, or it is blind to a mechanism.

Each goal is a pure predicate ``goal(run, new_events) -> bool`` evaluated after every step
(``new_events`` are the entries the step appended to ``cluster.events``). A check run
reports how often each goal was reached; a goal reached 0 times fails the run.
"""

from __future__ import annotations

from spec.invariant import invariant

GOALS: dict = {}


def goal(name: str, concept: str, statement: str):
    def wrap(fn):
        inv = invariant(name, kind="sometimes", concept=concept, statement=statement)(fn)
        GOALS[name] = inv
        return inv
    return wrap


@goal("barrier_aligned_while_other_channel_blocked", "SingleCheckpointBarrierHandler (aligned)",
      "A barrier arrived and blocked its channel while another channel of the same task was blocked.")
def barrier_aligned_while_other_channel_blocked(run, new_events) -> bool:
    blocked = run.cluster.blocked
    if not any(blocked):
        return False
    for t in run.cluster.tasks:
        if sum(1 for c in t.input_channels if blocked[c]) >= 2:
            return True
    return False


@goal("failure_during_alignment", "failover during checkpoint alignment",
      "A failure hit while a checkpoint was aligning (a channel blocked or channel state being persisted).")
def failure_during_alignment(run, new_events) -> bool:
    return any(e[0] == "failover" and e[5] for e in new_events)


@goal("concurrent_checkpoints_subsumed", "CheckpointCoordinator subsumption",
      "With concurrent checkpoints, a newer checkpoint subsumed an older pending one.")
def concurrent_checkpoints_subsumed(run, new_events) -> bool:
    return any(e[0] == "aborted" and "SUBSUMED" in str(e[3]) for e in new_events)


@goal("unaligned_snapshot_channel_state_both_sides", "unaligned checkpoint channel state",
      "A completed unaligned checkpoint holds input channel state and output channel state.")
def unaligned_snapshot_channel_state_both_sides(run, new_events) -> bool:
    cluster = run.cluster
    for cid in cluster.new_completed:
        snaps = cluster.completed.get(cid, {}).values()
        if any(s.input_channel_state for s in snaps) and any(s.output_channel_state for s in snaps):
            return True
    return False


@goal("idle_channel_returned_below_output_watermark", "StatusWatermarkValve realignment",
      "An idle channel became active again with a watermark below the valve's output watermark.")
def idle_channel_returned_below_output_watermark(run, new_events) -> bool:
    for t in run.cluster.tasks:
        v = t.valve
        if v is None:
            continue
        for ch in range(len(t.input_channels)):
            if not v.channel_is_idle(ch) and not v.channel_is_aligned(ch):
                return True
    return False


@goal("rescale_uneven_key_groups", "KeyGroupRange rescaling",
      "A job was rescaled to a parallelism that splits the key groups unevenly.")
def rescale_uneven_key_groups(run, new_events) -> bool:
    for e in new_events:
        if e[0] != "rescaled":
            continue
        eg = run.cluster.eg
        for v in eg.job_graph.vertices.values():
            ops = {o.name: o for o in eg.stream_graph.operators}
            keyed = any(ops[n].kind in ("keyed_aggregate", "window") for n in v.operators)
            if keyed and v.max_parallelism % v.parallelism != 0:
                return True
    return False


@goal("region_failover_restarted_producer_region", "RestartPipelinedRegionFailoverStrategy",
      "A region failover restarted a producer region because a blocking partition it produced was lost.")
def region_failover_restarted_producer_region(run, new_events) -> bool:
    eg = run.cluster.eg
    for e in new_events:
        if e[0] != "failover":
            continue
        failed, unavailable, restart = set(e[2]), set(e[3]), set(e[4])
        if len(restart) == len(eg.subtasks):
            continue
        for c in unavailable:
            p = eg.channels[c].producer
            if p in restart and p not in failed:
                return True
    return False


def _rescaled_from_checkpoint_with_inflight(new_events, direction: str) -> bool:
    return any(e[0] == "rescaled_from_checkpoint" and e[4] > 0 and e[5] == direction for e in new_events)


@goal("unaligned_rescale_up_with_inflight", "StateAssignmentOperation (channel state)",
      "A job was resubmitted from an unaligned checkpoint holding in-flight data with a higher parallelism.")
def unaligned_rescale_up_with_inflight(run, new_events) -> bool:
    return _rescaled_from_checkpoint_with_inflight(new_events, "up")


@goal("unaligned_rescale_down_with_inflight", "StateAssignmentOperation (channel state)",
      "A job was resubmitted from an unaligned checkpoint holding in-flight data with a lower parallelism.")
def unaligned_rescale_down_with_inflight(run, new_events) -> bool:
    return _rescaled_from_checkpoint_with_inflight(new_events, "down")
