"""Rescaling: restart a job from a savepoint with new parallelisms.

Invariant upheld: the restored job owns every key group exactly once (by KeyGroupRange, as
``StateAssignmentOperation`` assigns it), every source split exactly once (its offset
carried over), and every pending two-phase-commit transaction exactly once (it will be
committed by whichever new sink subtask received it); nothing of the savepoint is lost.

Follows: ``StateAssignmentOperation`` (keyed state by key-group range intersection,
operator list state by ``RoundRobinOperatorStateRepartitioner``), the max-parallelism rules
of ``Checkpoints``/``SchedulerBase``. Source split state and the legacy
``TwoPhaseCommitSinkFunction`` state are SPLIT_DISTRIBUTE list states in Flink.

Deliberate difference: an operator whose max parallelism was auto-configured adopts the
savepoint's max parallelism by being compiled with it explicitly in the new StreamGraph.
Savepoints are aligned, so there is no channel state to rescale.
"""

from __future__ import annotations

import attrs

from model.errors import FlinkspecError
from model.stateassignment import assign_keyed_state, check_max_parallelism, repartition_operator_state
from model.streamgraph import effective_max_parallelism
from model.streamtask import TaskSnapshot


@attrs.frozen(slots=True)
class RestoredState:
    """What ``Cluster._install`` restores from: ``task_states`` by new subtask id."""

    checkpoint_id: int
    task_states: dict


def rescale_graph(graph, parallelism: dict):
    """``graph`` with the parallelisms in ``parallelism`` (operator name -> p)."""
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
    new = attrs.evolve(graph, operators=tuple(ops))
    # StreamGraph rules only: the co-location rule (checked when the graph is chained) cannot
    # break here, because a rescale that passes validate() splits no chain (a chained edge is
    # forward, so both ends keep one parallelism and, if auto-configured, one max parallelism).
    new.validate()
    return new


def rescale_states(old_eg, new_eg, snaps: dict, checkpoint_id: int, assignment: str = "range") -> RestoredState:
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
        assigned = assign_keyed_state(states, old_max, new_op.parallelism, assignment)
        subs = new_eg.subtasks_of(vertex_of[name])
        for i, sid in enumerate(subs):
            per_new[sid].keyed[name] = assigned[i]
    start = 0
    for name in sorted(list_old):
        new_op = new_ops[name]
        parts, start = repartition_operator_state(list_old[name], new_op.parallelism, "split_distribute", start)
        subs = new_eg.subtasks_of(vertex_of[name])
        for i, sid in enumerate(subs):
            per_new[sid].operator[name] = parts[i]
    return RestoredState(checkpoint_id, per_new)
