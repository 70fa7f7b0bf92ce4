"""Coverage goals ("sometimes"): states a search must reach, or it is blind to a mechanism.

Each goal is a pure predicate ``goal(run, new_events) -> bool`` evaluated after every step
(``new_events`` are the entries the step appended to ``cluster.events``). A check run
reports how often each goal was reached; a goal reached 0 times fails the run.

A goal may set a *floor*: the number of runs of a full check (every suite of a profile)
that must reach it, when one run is too few to show the search reaches the mechanism on
purpose rather than by accident (:data:`FLOORS`; 1 otherwise).

Each goal also says which scenarios it can apply to (``applies(scenario) -> bool``, kept in
:data:`APPLIES`): the mechanism it names is switched on in the scenario's ``RuntimeConfig``
and the job has what it needs (a task with two input channels, a blocking edge, ...). A
check of one job (``flinkspec check --job``) reports only the goals that apply to it.
"""

from __future__ import annotations

from typing import Callable

from spec.exactly_once import idle_judged
from spec.invariant import invariant

GOALS: dict = {}
#: goal name -> ``applies(scenario) -> bool``: whether the goal can be reached on the scenario
APPLIES: dict[str, Callable] = {}
#: goal name -> the runs of a full check that must reach it
FLOORS: dict[str, int] = {}


def goal(name: str, concept: str, statement: str, *, applies: Callable, floor: int = 1):
    if not isinstance(floor, int) or floor < 1:
        raise ValueError(f"goal {name!r}: floor must be an integer >= 1, not {floor!r}")

    def wrap(fn):
        inv = invariant(name, kind="sometimes", concept=concept, statement=statement)(fn)
        GOALS[name] = inv
        APPLIES[name] = applies
        FLOORS[name] = floor
        return inv
    return wrap


def below_floor(reached) -> tuple[str, ...]:
    """The goals a full check's runs reached fewer times than their floor (``reached``: goal
    name -> runs), in registration order."""
    return tuple(g for g in GOALS if reached.get(g, 0) < FLOORS[g])


def goals_applying_to(scenario) -> tuple[str, ...]:
    """The goals that can be reached on ``scenario`` (``APPLIES``), in registration order."""
    return tuple(name for name in GOALS if APPLIES[name](scenario))


_INPUTS: dict = {}


def max_input_channels(scenario) -> int:
    """The most input channels one subtask of the scenario's job reads (its StreamTask's
    valve and barrier handler see that many), at its parallelisms or at any it may be
    restarted with from a savepoint (``Cluster.rescale_choices``)."""
    key = (repr(scenario.graph), repr(scenario.config), repr(scenario.environment))
    if key not in _INPUTS:
        from model.cluster import Cluster  # only when a job's goals are listed (no model at import)
        from model.executiongraph import compile_stream_graph  # as above
        from model.rescaling import rescale_graph  # as above

        env = scenario.environment
        rescales = env.savepoints or env.rescale_from_checkpoints
        choices = Cluster.from_scenario(scenario).rescale_choices() if rescales else [()]
        most = 0
        for choice in choices:
            eg = compile_stream_graph(rescale_graph(scenario.graph, dict(choice)))
            per: dict = {}
            for ch in eg.channels:
                per[ch.consumer] = per.get(ch.consumer, 0) + 1
            most = max(most, max(per.values(), default=0))
        _INPUTS[key] = most
    return _INPUTS[key]


def aligns(scenario) -> bool:
    """Barriers block channels: aligned (or not yet timed-out alternating) exactly-once
    checkpoints on a task with more than one input channel."""
    return scenario.config.barrier_mode in ("aligned", "alternating") and max_input_channels(scenario) > 1


def unaligned(scenario) -> bool:
    return scenario.config.barrier_mode in ("unaligned", "alternating")


def fails(scenario) -> bool:
    return scenario.environment.max_failures > 0


@goal("barrier_aligned_while_other_channel_blocked", "SingleCheckpointBarrierHandler (aligned)",
      "A barrier arrived and blocked its channel while another channel of the same task was blocked.",
      applies=lambda s: aligns(s) and max_input_channels(s) > 2)  # (the last barrier of two ends the alignment)
def barrier_aligned_while_other_channel_blocked(run, new_events) -> bool:
    blocked = run.cluster.blocked
    if not any(blocked):
        return False
    for t in run.cluster.tasks:
        if sum(1 for c in t.plan.input_channels if blocked[c]) >= 2:
            return True
    return False


@goal("failure_during_alignment", "failover during checkpoint alignment",
      "A failure hit while a checkpoint was aligning (a channel blocked or channel state being persisted).",
      applies=lambda s: fails(s) and (aligns(s) or unaligned(s)))
def failure_during_alignment(run, new_events) -> bool:
    return any(e[0] == "failover" and e[5] for e in new_events)


@goal("concurrent_checkpoints_subsumed", "CheckpointCoordinator subsumption",
      "With concurrent checkpoints, a newer checkpoint subsumed an older pending one.",
      applies=lambda s: s.config.max_concurrent_checkpoints > 1)
def concurrent_checkpoints_subsumed(run, new_events) -> bool:
    return any(e[0] == "aborted" and "SUBSUMED" in str(e[3]) for e in new_events)


@goal("unaligned_snapshot_channel_state_both_sides", "unaligned checkpoint channel state",
      "A completed unaligned checkpoint holds input channel state and output channel state.",
      applies=unaligned)
def unaligned_snapshot_channel_state_both_sides(run, new_events) -> bool:
    cluster = run.cluster
    for cid in cluster.new_completed:
        snaps = cluster.completed.get(cid, {}).values()
        if any(s.input_channel_state for s in snaps) and any(s.output_channel_state for s in snaps):
            return True
    return False


@goal("idle_channel_returned_below_output_watermark", "StatusWatermarkValve realignment",
      "An idle channel became active again with a watermark below the valve's output watermark.",
      applies=lambda s: s.environment.max_idle_periods != 0 and idle_judged(s.graph) and max_input_channels(s) > 1)
def idle_channel_returned_below_output_watermark(run, new_events) -> bool:
    for t in run.cluster.tasks:
        v = t.valve
        if v is None:
            continue
        for ch in range(len(t.plan.input_channels)):
            if not v.channel_is_idle(ch) and not v.channel_is_aligned(ch):
                return True
    return False


@goal("rescale_uneven_key_groups", "KeyGroupRange rescaling",
      "A job was rescaled to a parallelism that splits the key groups unevenly.",
      applies=lambda s: s.environment.savepoints and any(o.kind in ("keyed_aggregate", "window")
                                                     for o in s.graph.operators))
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
      "A region failover restarted a producer region because a blocking partition it produced was lost.",
      applies=lambda s: fails(s) and s.config.failover_strategy == "region" and any(e.exchange_mode == "blocking" for e in s.graph.edges))
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


def _has_merged_region(scenario) -> bool:
    from model.cluster import Cluster  # only when a job's goals are listed (no model at import)
    from model.failover import regions_merged_from_cycles  # as above

    key = ("merged", repr(scenario.graph))
    if key not in _INPUTS:
        _INPUTS[key] = bool(regions_merged_from_cycles(Cluster.from_scenario(scenario).eg))
    return _INPUTS[key]


@goal("failover_in_merged_region", "SchedulingPipelinedRegionComputeUtil (regions merged on cycles)",
      "A region failover restarted a pipelined region that was merged from several pipelined components whose "
      "blocking channels form a cycle.",
      applies=lambda s: fails(s) and s.config.failover_strategy == "region" and _has_merged_region(s), floor=5)
def failover_in_merged_region(run, new_events) -> bool:
    if not any(e[0] == "failover" for e in new_events):
        return False
    from model.failover import regions_merged_from_cycles  # a failover is rare: the regions only then

    merged = regions_merged_from_cycles(run.cluster.eg)
    return any(e[0] == "failover" and any(set(e[4]) & r for r in merged) for e in new_events)


@goal("record_late_after_source_idle", "WindowOperator lateness under idleness (StatusWatermarkValve)",
      "A window operator dropped a record as late, or left it out of a late sliding window, in a run where a "
      "source went idle.",
      applies=lambda s: s.environment.max_idle_periods != 0 and idle_judged(s.graph)
      and any(o.kind == "window" for o in s.graph.operators) and max_input_channels(s) > 1, floor=5)
def record_late_after_source_idle(run, new_events) -> bool:
    c = run.cluster
    return bool(getattr(run, "idle_seen", False) and (c.late or c.window_skips))


@goal("drain_fired_windows", "stop-with-savepoint --drain (SavepointType TERMINATE, MAX_WATERMARK)",
      "A stop-with-savepoint --drain finished a windowed job whose sources had input left, and its windows' "
      "results were committed.",
      applies=lambda s: s.environment.drain_savepoints and any(o.kind == "window" for o in s.graph.operators),
      floor=3)
def drain_fired_windows(run, new_events) -> bool:
    """The step committed results of a job a drain finished with input left (the savepoint's
    notification may reach the sink's task after the job turned FINISHED)."""
    c = run.cluster
    return (c.job.status == "FINISHED" and len(c.external.committed) > run.committed_before
            and c.input_read() is not None)


_BARRIER_TYPES: tuple = ()


def _barriers_at_tasks(run) -> list:
    """``(handler, barrier)`` for every barrier next in line on a pipelined input channel of a
    running task with an exactly-once barrier handler (``SingleCheckpointBarrierHandler``) that
    has begun a checkpoint: what a ``Deliver`` of that channel hands to the handler."""
    global _BARRIER_TYPES
    if not _BARRIER_TYPES:
        from model.checkpointbarrierhandler import SingleCheckpointBarrierHandler  # once (no model at import)
        from model.events import CheckpointBarrier  # as above

        _BARRIER_TYPES = (SingleCheckpointBarrierHandler, CheckpointBarrier)
    handler_type, barrier_type = _BARRIER_TYPES
    c = run.cluster
    net = c.net
    found = []
    # a barrier at a channel's head is rare: find the heads first, then their tasks
    for ch, q in enumerate(net.queues):
        if q and type(q[0]) is barrier_type and not net.blocking[ch] and not (net.blocked[ch] and not net.prio[ch]):
            t = c.tasks[net.consumer_of[ch]]
            h = t.handler
            if type(h) is handler_type and h.current_id >= 0 and t.status == "RUNNING":
                found.append((h, q[0]))
    return found


def _barriers_from_several_inputs(scenario) -> bool:
    """Exactly-once barriers reach a task over two or more input channels (the barriers of one
    channel arrive in checkpoint order, one per checkpoint)."""
    return scenario.config.checkpointing_mode == "exactly_once" and max_input_channels(scenario) > 1


@goal("older_barrier_reached_task", "SingleCheckpointBarrierHandler (obsolete barriers)",
      "A barrier of a checkpoint older than one the receiving task's barrier handler had already begun was next "
      "in line on one of the task's input channels (the handler only resumes the channel, it takes no snapshot).",
      applies=_barriers_from_several_inputs, floor=5)
def older_barrier_reached_task(run, new_events) -> bool:
    return any(b.id < h.current_id for h, b in _barriers_at_tasks(run))


@goal("barrier_of_ended_checkpoint_reached_task", "SingleCheckpointBarrierHandler (obsolete barriers)",
      "A barrier of the checkpoint the receiving task's barrier handler had already ended (taken or aborted) was "
      "next in line on one of the task's input channels: the same checkpoint's trigger reached the task again.",
      applies=_barriers_from_several_inputs, floor=3)
def barrier_of_ended_checkpoint_reached_task(run, new_events) -> bool:
    return any(b.id == h.current_id and h.is_obsolete(b) for h, b in _barriers_at_tasks(run))


def _triggers_in_flight(scenario) -> bool:
    """The CheckpointCoordinator's trigger RPCs are messages that reach the tasks in any order
    (``Environment.trigger_delivery``)."""
    return scenario.environment.trigger_delivery == "any_order"


@goal("older_trigger_reached_task", "SubtaskCheckpointCoordinatorImpl.checkpointState (a late trigger RPC)",
      "A checkpoint's trigger RPC reached a task that had already taken a newer checkpoint (Flink's task ignores "
      "it: no snapshot, no barrier, no decline).",
      applies=_triggers_in_flight, floor=5)
def older_trigger_reached_task(run, new_events) -> bool:
    return any(e[0] == "trigger_delivered" and e[3] < e[4] for e in new_events)


@goal("aborted_trigger_reached_task", "SubtaskCheckpointCoordinatorImpl.checkpointState (a late trigger RPC)",
      "A checkpoint's trigger RPC reached a task after the task was notified that the checkpoint was aborted "
      "(Flink's task takes no snapshot and sends a CancelCheckpointMarker downstream, unless it already took a "
      "newer checkpoint).",
      applies=_triggers_in_flight, floor=3)
def aborted_trigger_reached_task(run, new_events) -> bool:
    return any(e[0] == "trigger_delivered" and e[5] for e in new_events)


def _rescaled_from_checkpoint_with_inflight(new_events, direction: str) -> bool:
    return any(e[0] == "rescaled_from_checkpoint" and e[4] > 0 and e[5] == direction for e in new_events)


@goal("unaligned_rescale_up_with_inflight", "StateAssignmentOperation (channel state)",
      "A job was resubmitted from an unaligned checkpoint holding in-flight data with a higher parallelism.",
      applies=lambda s: unaligned(s) and s.environment.rescale_from_checkpoints and bool(s.environment.rescale_options))
def unaligned_rescale_up_with_inflight(run, new_events) -> bool:
    return _rescaled_from_checkpoint_with_inflight(new_events, "up")


@goal("unaligned_rescale_down_with_inflight", "StateAssignmentOperation (channel state)",
      "A job was resubmitted from an unaligned checkpoint holding in-flight data with a lower parallelism.",
      applies=lambda s: unaligned(s) and s.environment.rescale_from_checkpoints and bool(s.environment.rescale_options))
def unaligned_rescale_down_with_inflight(run, new_events) -> bool:
    return _rescaled_from_checkpoint_with_inflight(new_events, "down")
