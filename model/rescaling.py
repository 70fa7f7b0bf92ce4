"""Rescaling: restart a job from a savepoint with new parallelisms.

Invariant upheld: the restored job owns every key group exactly once (by KeyGroupRange, as
``StateAssignmentOperation`` assigns it), every source split exactly once (its offset
carried over), and every pending two-phase-commit transaction exactly once (it will be
committed by whichever new sink subtask received it); nothing of the savepoint is lost.

Follows: ``StateAssignmentOperation`` (keyed state by key-group range intersection,
operator list state by ``RoundRobinOperatorStateRepartitioner``), the max-parallelism rules
of ``Checkpoints``/``SchedulerBase``. Source split state and the legacy
``TwoPhaseCommitSinkFunction`` state are SPLIT_DISTRIBUTE list states in Flink.

A restore with new parallelisms from an *unaligned checkpoint* also reassigns the in-flight
data of the old subtasks (:func:`rescale_channel_states`, the rules of
``model/channelstaterescaling.py``: ``StateAssignmentOperation`` / ``TaskStateAssignment`` with
each edge's ``SubtaskStateMapper``); :func:`channel_rescale_refusal` names the restores Flink
cannot do (in-flight data on a rescaled pointwise edge).

Deliberate difference: an operator whose max parallelism was auto-configured adopts the
savepoint's max parallelism by being compiled with it explicitly in the new StreamGraph.
Savepoints are aligned, so a rescale from a savepoint has no channel state.
"""

from __future__ import annotations

import sys

import attrs

from model import seams
from model.channelstaterescaling import (
    ChannelStateRescalingError,
    assign_channel_state,
    edge_mappers,
)
from model.errors import FlinkspecError
from model.events import value
from model.stateassignment import assign_keyed_state, check_max_parallelism, repartition_operator_state
from model.streamgraph import default_partitioner, effective_max_parallelism
from model.streamtask import TaskSnapshot


@attrs.frozen(slots=True)
class RestoredState:
    """What ``Cluster._install`` restores from: ``task_states`` by new subtask id."""

    checkpoint_id: int
    task_states: dict


def rescale_graph(graph, parallelism: dict):
    """``graph`` with the parallelisms in ``parallelism`` (operator name -> p), as the job
    resubmitted with them generates it: an edge whose partitioner the job did not set
    (``EdgeSpec.default_partitioner``) gets Flink's default for the new parallelisms."""
    names = {o.name for o in graph.operators}
    unknown = set(parallelism) - names
    if unknown:
        raise FlinkspecError(f"rescale: unknown operator(s) {sorted(unknown)}")
    ops = []
    for o in graph.operators:
        p = parallelism.get(o.name, o.parallelism)
        changes = {"parallelism": p}
        if o.max_parallelism is None:
            changes["max_parallelism"] = effective_max_parallelism(o)
        ops.append(attrs.evolve(o, **changes))
    # a resubmitted job's StreamGraph is generated again: an edge the job set no partitioner on
    # gets Flink's default for the new parallelisms
    par = {o.name: o.parallelism for o in ops}
    edges = tuple(attrs.evolve(e, partitioner=default_partitioner(par[e.source], par[e.target]))
                  if e.default_partitioner else e for e in graph.edges)
    new = attrs.evolve(graph, operators=tuple(ops), edges=edges)
    # StreamGraph rules only: the co-location rule (checked when the graph is chained) cannot
    # break here, because a rescale that passes validate() splits no chain (a chained edge is
    # forward, so both ends keep one parallelism and, if auto-configured, one max parallelism).
    new.validate()
    return new


def repartition_list_state(old: list, new_parallelism: int) -> list:
    """An operator's list state (old subtask i's entries at ``old[i]``) for ``new_parallelism``
    subtasks: ``StateAssignmentOperation`` repartitions each operator on its own; its
    ``RoundRobinOperatorStateRepartitioner`` starts at new subtask 0 for every operator (the
    start index carries over only between the state names of one operator)."""
    parts, _ = repartition_operator_state(old, new_parallelism, "split_distribute", 0)
    return parts


@seams.override("operator-state-by-index", sys.modules[__name__], "repartition_list_state",
                "list state is not repartitioned: new subtask i takes old subtask i's entries, so on a scale-down "
                "the entries of the removed subtasks (a source's split offsets) are lost")
def _list_state_by_index(old: list, new_parallelism: int) -> list:
    return [list(old[i]) if i < len(old) else [] for i in range(new_parallelism)]


def rescale_states(old_eg, new_eg, snaps: dict, checkpoint_id: int) -> RestoredState:
    """Redistribute the savepoint ``snaps`` (old subtask id -> TaskSnapshot) of ``old_eg``
    onto the subtasks of ``new_eg``."""
    old_ops = {o.name: o for o in old_eg.stream_graph.operators}
    new_ops = {o.name: o for o in new_eg.stream_graph.operators}
    # old snapshots per operator name in old-subtask order
    keyed_old: dict[str, list] = {}
    list_old: dict[str, list] = {}
    for st in old_eg.subtasks:
        snap = snaps.get(st.id)
        if snap is None:
            raise FlinkspecError(f"savepoint {checkpoint_id} has no state of {st.name}")
        for name, kg_states in snap.keyed.items():
            keyed_old.setdefault(name, []).append(kg_states)
        for name, entries in snap.operator.items():
            if entries is None:
                continue
            if isinstance(entries, list):
                list_old.setdefault(name, []).append(list(entries))
            else:
                list_old.setdefault(name, []).append([entries])
    per_new: dict[int, TaskSnapshot] = {}
    for st in new_eg.subtasks:
        per_new[st.id] = TaskSnapshot(checkpoint_id, st.id, st.job_vertex, st.subtask_index)
    vertex_of = new_eg.job_graph.vertex_of_operator
    for name, states in keyed_old.items():
        old_max = effective_max_parallelism(old_ops[name])
        new_op = new_ops[name]
        check_max_parallelism(name, old_max, effective_max_parallelism(new_op), new_op.parallelism,
                              new_op.max_parallelism is not None and old_ops[name].max_parallelism is not None)
        assigned = assign_keyed_state(states, old_max, new_op.parallelism)
        subs = new_eg.subtasks_of(vertex_of[name])
        for i, sid in enumerate(subs):
            per_new[sid].keyed[name] = assigned[i]
    for name in sorted(list_old):
        new_op = new_ops[name]
        parts = repartition_list_state(list_old[name], new_op.parallelism)
        subs = new_eg.subtasks_of(vertex_of[name])
        for i, sid in enumerate(subs):
            per_new[sid].operator[name] = parts[i]
    return RestoredState(checkpoint_id, per_new)


@value
@attrs.frozen(slots=True)
class EdgeReassignment:
    """The in-flight records of one JobEdge across a rescale, for the invariants: ``before``
    the records of the old channels (input channel state, then output channel state), ``after``
    ``(new consumer subtask index, record)`` for every record placed in a new channel."""

    job_edge: int
    partitioner: str
    max_parallelism: int
    old_parallelism: tuple  # (upstream, downstream)
    new_parallelism: tuple
    before: tuple
    after: tuple


def _old_inflight(old_eg, snaps: dict) -> dict:
    """JobEdge index -> (old upstream index, old downstream index) -> in-flight records."""
    subs = old_eg.subtasks
    per_edge: dict = {}
    for ch in old_eg.channels:
        cons, prod = snaps.get(ch.consumer), snaps.get(ch.producer)
        recs = list(cons.input_channel_state.get(ch.id, ())) if cons is not None else []
        if prod is not None:
            recs += list(prod.output_channel_state.get(ch.id, ()))
        if recs:
            key = (subs[ch.producer].subtask_index, subs[ch.consumer].subtask_index)
            per_edge.setdefault(ch.job_edge, {})[key] = recs
    return per_edge


def _parallelisms(eg, edge) -> tuple:
    v = eg.job_graph.vertices
    return v[edge.source_vertex].parallelism, v[edge.target_vertex].parallelism


def channel_rescale_refusal(old_eg, new_eg, snaps: dict) -> str | None:
    """Why Flink would refuse to restore ``snaps`` onto ``new_eg`` (None: it would not):
    in-flight data on a pointwise edge whose parallelism changes (``SubtaskStateMapper.UNSUPPORTED``)."""
    for e, recs in sorted(_old_inflight(old_eg, snaps).items()):
        edge = old_eg.job_graph.edges[e]
        if "UNSUPPORTED" in edge_mappers(edge.partitioner) and \
                _parallelisms(old_eg, edge) != _parallelisms(new_eg, new_eg.job_graph.edges[e]):
            return (f"{edge.partitioner} edge {edge.source_vertex} -> {edge.target_vertex} holds in-flight data "
                    "and is rescaled: Cannot rescale the given pointwise partitioner")
    return None


def rescale_channel_states(old_eg, new_eg, snaps: dict) -> tuple[dict, tuple]:
    """The in-flight records of the checkpoint ``snaps`` placed in ``new_eg``'s channels:
    (new channel id -> records, per JobEdge an :class:`EdgeReassignment`). Raises
    ChannelStateRescalingError for a restore Flink refuses."""
    new_subs = new_eg.subtasks
    new_channel = {(ch.job_edge, new_subs[ch.producer].subtask_index, new_subs[ch.consumer].subtask_index): ch.id
                   for ch in new_eg.channels}
    placed: dict = {}
    report = []
    for e, recs in sorted(_old_inflight(old_eg, snaps).items()):
        edge = old_eg.job_graph.edges[e]
        old_p = _parallelisms(old_eg, edge)
        new_p = _parallelisms(new_eg, new_eg.job_graph.edges[e])
        max_p = new_eg.job_graph.vertices[edge.target_vertex].max_parallelism
        out = assign_channel_state(recs, edge.partitioner, old_p[0], new_p[0], old_p[1], new_p[1], max_p)
        after = []
        for (u, k), rs in sorted(out.items()):
            cid = new_channel.get((e, u, k))
            if cid is None:
                raise ChannelStateRescalingError(f"no channel {u} -> {k} on {edge.partitioner} edge "
                                                 f"{edge.source_vertex} -> {edge.target_vertex} after the rescale")
            placed.setdefault(cid, []).extend(rs)
            after += [(k, r) for r in rs]
        before = tuple(r for _, rs in sorted(recs.items()) for r in rs)
        report.append(EdgeReassignment(e, edge.partitioner, max_p, old_p, new_p, before, tuple(after)))
    return placed, tuple(report)
