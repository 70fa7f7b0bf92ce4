"""The cluster state and the one step function every engine drives.

``Cluster(graph, job_input, config, seed)`` deploys a compiled job; ``enabled_actions(c)``
lists the actions possible now (``model.actions``) in a deterministic order and
``step(c, action)`` applies one. A *trace* (configuration + seed + actions) therefore
replays to an identical state: nothing in here reads a clock or an unseeded random source.

Invariant upheld: the state only changes through ``step``; ``enabled_actions`` never offers
an action whose preconditions do not hold (a blocked or empty channel, a back-pressured
producer, a finished source, a checkpoint beyond the concurrency limit...), and ``step``
refuses one that is not enabled with :class:`ActionNotEnabled`.

Follows: DESIGN.md §2. Time is logical: ``now`` counts the steps taken; a barrier's
timestamp is the step at which the CheckpointCoordinator triggered it, and the aligned
checkpoint timeout is measured in steps.

Deliberate differences from Flink: the trigger RPC reaches every running source at once
(one step); a finished task acknowledges a checkpoint immediately with its final state
(FLIP-147 without the "finished on restore" bookkeeping); the coordinator's periodic
scheduler is replaced by the ``TriggerCheckpoint`` action, which an engine chooses.
The state is mutated in place (speed); engines that need to go back replay a prefix.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Iterable, Sequence

import attrs

from model import actions as A
from model.checkpointbarrierhandler import CheckpointBarrierTracker, SingleCheckpointBarrierHandler
from model.errors import FlinkspecError
from model.eventtime import BoundedOutOfOrdernessWatermarks, WatermarkToDataOutput
from model.events import LONG_MAX, CheckpointBarrier
from model.functions import filter_function, map_function
from model.keygroups import assign_key_to_parallel_operator, assign_to_key_group
from model.streamtask import (
    FINISHED,
    RUNNING,
    Discard,
    Fanout,
    FilterNode,
    KeyedNode,
    MapNode,
    PartitionOutput,
    SinkNode,
    SourceReader,
    StreamTask,
    TaskOutput,
)

CHECKPOINTING_MODES = ("exactly_once", "at_least_once")


class ActionNotEnabled(FlinkspecError):
    """``step`` was given an action that is not enabled in the current state."""


@attrs.frozen(slots=True, kw_only=True)
class RuntimeConfig:
    """The knobs of a run. Defaults are Flink's defaults where Flink has one.

    ``unaligned`` with ``aligned_checkpoint_timeout=None`` is pure unaligned; with a timeout
    it is Flink's "alternating" aligned-then-unaligned mode (barriers are timeoutable).
    ``unaligned_channel_state=False`` is the known-unsafe variant that drops channel state.
    """

    checkpointing_mode: str = "exactly_once"
    unaligned: bool = False
    aligned_checkpoint_timeout: int | None = None
    unaligned_channel_state: bool = True
    max_concurrent_checkpoints: int = 1
    min_pause_between_checkpoints: int = 0
    max_retained_checkpoints: int = 1
    channel_capacity: int = 4
    checkpoints_after_tasks_finish: bool = True

    def __attrs_post_init__(self):
        if self.checkpointing_mode not in CHECKPOINTING_MODES:
            raise FlinkspecError(f"checkpointing_mode must be one of {CHECKPOINTING_MODES}, not {self.checkpointing_mode!r}")
        if self.unaligned and self.checkpointing_mode != "exactly_once":
            raise FlinkspecError("unaligned checkpoints need checkpointing_mode 'exactly_once' (Flink: FLINK-18403)")
        if self.channel_capacity < 1:
            raise FlinkspecError(f"channel_capacity must be >= 1, not {self.channel_capacity}")
        if self.max_concurrent_checkpoints < 1:
            raise FlinkspecError("max_concurrent_checkpoints must be >= 1")

    @property
    def barrier_mode(self) -> str:
        if self.checkpointing_mode == "at_least_once":
            return "at_least_once"
        if not self.unaligned:
            return "aligned"
        return "unaligned" if self.aligned_checkpoint_timeout is None else "alternating"

    @property
    def timeoutable_barriers(self) -> bool:
        return self.barrier_mode == "alternating"


@attrs.frozen(slots=True)
class JobInput:
    """The records of every source: ``splits[source_name]`` is a tuple of splits, each a
    tuple of ``(key, value, timestamp)`` records. Split ``j`` is read by subtask ``j % p``."""

    splits: dict = attrs.field(factory=dict)


class Cluster:
    """The whole runtime state of one job run."""

    def __init__(self, execution_graph, job_input: JobInput, config: RuntimeConfig | None = None, seed: int = 0):
        from model.checkpointcoordinator import CheckpointCoordinator
        from model.sinks import ExternalSystem

        self.eg = execution_graph
        self.job_input = job_input
        self.config = config or RuntimeConfig()
        self.seed = seed
        self.now = 0
        self.trace: list = []
        self.external = ExternalSystem()
        self.late: list = []
        self.notifications: list[tuple[int, int]] = []
        self.completed_ids: list[int] = []
        self.trigger_results: list = []
        n = len(execution_graph.channels)
        self.channels: list[deque] = [deque() for _ in range(n)]
        self.prio = [0] * n
        self.blocked = [False] * n
        self.received = [0] * n
        self.attempt = 0
        all_ids = [s.id for s in execution_graph.subtasks]
        self.coordinator = CheckpointCoordinator(
            tasks_to_trigger=all_ids,
            tasks_to_ack=all_ids,
            max_concurrent_checkpoints=self.config.max_concurrent_checkpoints,
            min_pause_between_checkpoints=self.config.min_pause_between_checkpoints,
            max_retained=self.config.max_retained_checkpoints,
        )
        self._ops = {o.name: o for o in execution_graph.stream_graph.operators}
        self._check_input()
        self.tasks: list[StreamTask] = [self._deploy(s) for s in execution_graph.subtasks]
        self.source_tasks = [t for t in self.tasks if t.source is not None]
        self.consumer_of = [ch.consumer for ch in execution_graph.channels]

    # -- deployment -------------------------------------------------------------------------
    def _check_input(self) -> None:
        sg = self.eg.stream_graph
        sources = {o.name for o in sg.operators if o.kind == "source"}
        unknown = set(self.job_input.splits) - sources
        if unknown:
            raise FlinkspecError(f"job input names unknown source(s) {sorted(unknown)}; sources are {sorted(sources)}")

    def _deploy(self, st) -> StreamTask:
        """Build subtask ``st``'s OperatorChain: every operator of the JobVertex gets a node
        whose output is its chained successors plus the result partitions it produces."""
        eg = self.eg
        sg = eg.stream_graph
        ops = self._ops
        vertex = eg.job_graph.vertices[st.job_vertex]
        in_vertex = set(vertex.operators)
        out_channels: list[int] = []
        partition_outputs: dict[str, list] = {}
        for part in eg.partitions[st.id]:
            edge = eg.job_graph.edges[part.job_edge]
            chans = [self.channels[c] for c in part.channels]
            partition_outputs.setdefault(edge.source_operator, []).append(
                PartitionOutput(self._writer(st, part), chans))
            out_channels.extend(part.channels)
        chained: dict[str, list[str]] = {}
        for e in sg.edges:
            if e.source in in_vertex and e.target in in_vertex:
                chained.setdefault(e.source, []).append(e.target)
        nodes: dict[str, object] = {}
        late = self.late

        def build(name):
            if name in nodes:
                return nodes[name]
            spec = ops[name]
            kind = spec.kind
            outs = [build(t) for t in chained.get(name, ())] + partition_outputs.get(name, [])
            nxt = outs[0] if len(outs) == 1 else (Fanout(outs) if outs else Discard())
            if kind == "source":
                node = nxt
            elif kind == "map":
                node = MapNode(name, map_function(spec.function, f"operator '{name}'"))
            elif kind == "filter":
                node = FilterNode(name, filter_function(spec.function, f"operator '{name}'"))
            elif kind in ("keyed_aggregate", "window"):
                node = KeyedNode(name, self._keyed_operator(spec, vertex.max_parallelism), late, kind == "window")
            elif kind == "sink":
                node = SinkNode(name, self._sink(spec, st))
            else:  # pragma: no cover - validate() rejects unknown kinds
                raise FlinkspecError(f"operator '{name}': unknown kind {kind!r}")
            if kind != "source" and kind != "sink":
                node.next = nxt
            nodes[name] = node
            return node

        head_name = vertex.operators[0]
        head = build(head_name)
        op_nodes = [nodes[n] for n in vertex.operators if ops[n].kind != "source"]
        input_channels = [c for gate in eg.input_gates[st.id] for c in gate.channels]
        output = TaskOutput([self.channels[c] for c in out_channels])
        task = StreamTask(self, st, head, op_nodes, output, None, input_channels, out_channels)
        head_spec = ops[head_name]
        if head_spec.kind == "source":
            splits = self.job_input.splits.get(head_spec.name, ())
            ooo = head_spec.watermark_out_of_orderness
            mine = [[j, tuple(s), 0, BoundedOutOfOrdernessWatermarks(ooo)]
                    for j, s in enumerate(splits) if j % st.parallelism == st.subtask_index]
            task.source = SourceReader(head_spec.name, mine, ooo, WatermarkToDataOutput(task))
        else:
            from model.watermarkstatus import StatusWatermarkValve

            task.valve = StatusWatermarkValve(len(input_channels), task)
            task.handler = self._barrier_handler(task, len(input_channels))
        return task

    def _barrier_handler(self, task, n):
        cfg = self.config
        mode = cfg.barrier_mode
        if mode == "at_least_once":
            return CheckpointBarrierTracker(task, n)
        return SingleCheckpointBarrierHandler(
            task, n, mode, timeout=cfg.aligned_checkpoint_timeout,
            checkpoints_after_tasks_finish=cfg.checkpoints_after_tasks_finish)

    def _keyed_operator(self, spec, max_parallelism):
        from model.windowing import (
            KeyedAggregateOperator,
            SlidingEventTimeWindows,
            TumblingEventTimeWindows,
            WindowOperator,
        )

        cache: dict = {}

        def key_group_of(key, _m=max_parallelism, _c=cache):
            kg = _c.get(key)
            if kg is None:
                kg = _c[key] = assign_to_key_group(key, _m)
            return kg

        if spec.kind == "keyed_aggregate":
            return KeyedAggregateOperator(spec.aggregate, key_group_of)
        if spec.window_slide is None or spec.window_slide == spec.window_size:
            assigner = TumblingEventTimeWindows(spec.window_size, spec.window_offset)
        else:
            assigner = SlidingEventTimeWindows(spec.window_size, spec.window_slide, spec.window_offset)
        return WindowOperator(assigner, spec.aggregate, spec.allowed_lateness, key_group_of)

    def _sink(self, spec, st):
        from model import sinks

        kind = spec.sink_kind
        if kind == "two_phase_commit":
            return sinks.TwoPhaseCommitSink(self.external, st.id)
        if kind == "upsert":
            return sinks.UpsertSink(self.external, st.id)
        return sinks.AppendSink(self.external, st.id)

    def _writer(self, st, part):
        chans = [self.channels[c] for c in part.channels]
        n = len(chans)
        kind = part.partitioner
        if n == 1 or kind == "forward":
            ch = chans[0]
            return ch.append
        if kind == "broadcast":
            def write(rec, _chans=chans):
                for ch in _chans:
                    ch.append(rec)
            return write
        if kind == "hash":
            maxp = part.consumer_max_parallelism
            cache: dict = {}

            def write(rec, _chans=chans, _cache=cache, _m=maxp, _n=n):
                k = rec[0]
                i = _cache.get(k)
                if i is None:
                    i = _cache[k] = assign_key_to_parallel_operator(k, _m, _n)
                _chans[i].append(rec)
            return write
        # rebalance: random start (seeded), then round robin; rescale: round robin from 0.
        if kind == "rebalance":
            rng = random.Random(f"{self.seed}:{self.attempt}:{st.id}:{part.job_edge}")
            state = [rng.randrange(n)]
        else:
            state = [-1]

        def write(rec, _chans=chans, _s=state, _n=n):
            i = _s[0] + 1
            if i >= _n:
                i = 0
            _s[0] = i
            _chans[i].append(rec)
        return write

    # -- coordinator plumbing ----------------------------------------------------------------
    def acknowledge(self, task: StreamTask, snap) -> None:
        task.acked.add(snap.checkpoint_id)
        self._effects(self.coordinator.receive_acknowledge(snap.checkpoint_id, task.id, snap))

    def decline(self, task: StreamTask, checkpoint_id: int, reason: str) -> None:
        self._effects(self.coordinator.receive_decline(checkpoint_id, task.id, reason))

    def _effects(self, effects) -> None:
        from model.checkpointcoordinator import CheckpointCompleted, NotifyCheckpointComplete

        for e in effects or ():
            if isinstance(e, CheckpointCompleted):
                self.completed_ids.append(e.checkpoint_id)
                self.trigger_results.append(e)
            elif isinstance(e, NotifyCheckpointComplete):
                for tid in e.tasks:
                    self.notifications.append((tid, e.checkpoint_id))

    def task_finished(self, task: StreamTask) -> None:
        for cid in self.coordinator.pending_ids():
            if cid not in task.acked and cid in self.coordinator.pending_ids():
                self.acknowledge(task, task.take_snapshot(cid))

    # -- actions ----------------------------------------------------------------------------
    def outputs_free(self, task: StreamTask) -> bool:
        cap = self.config.channel_capacity
        chans = self.channels
        for c in task.output_channels:
            if len(chans[c]) >= cap:
                return False
        return True

    def enabled_actions(self) -> list:
        acts = []
        tasks = self.tasks
        for t in self.source_tasks:
            if t.status != RUNNING:
                continue
            src = t.source
            free = self.outputs_free(t)
            wo = src.wm_output
            if src.has_next():
                if free and not wo.is_idle:
                    acts.append(A.SourceEmit(t.id))
            elif free:
                acts.append(A.SourceEnd(t.id))
            if free and src.current_watermark() > wo.max_watermark_so_far:
                acts.append(A.SourceWatermark(t.id))
            if wo.is_idle:
                acts.append(A.SourceActive(t.id))
            elif free:
                acts.append(A.SourceIdle(t.id))
        chans = self.channels
        blocked = self.blocked
        prio = self.prio
        consumer_of = self.consumer_of
        free_cache: dict[int, bool] = {}
        for c in range(len(chans)):
            if not chans[c] or (blocked[c] and not prio[c]):
                continue
            tid = consumer_of[c]
            t = tasks[tid]
            if t.status != RUNNING:
                continue
            f = free_cache.get(tid)
            if f is None:
                f = free_cache[tid] = self.outputs_free(t)
            if f:
                acts.append(A.Deliver(c))
        if (self.coordinator.num_pending < self.config.max_concurrent_checkpoints
                and any(t.status == RUNNING for t in self.source_tasks)):
            acts.append(A.TriggerCheckpoint())
        seen = set()
        for n in self.notifications:
            if n not in seen:
                seen.add(n)
                acts.append(A.NotifyCheckpointComplete(n[0], n[1]))
        for t in tasks:
            if t.timer is not None and t.handler is not None and t.handler.timer_due(self.now, t.timer[1]):
                acts.append(A.AlignmentTimeout(t.id))
        return acts

    def step(self, action) -> None:
        t = type(action)
        fn = _DISPATCH.get(t)
        if fn is None:
            raise ActionNotEnabled(f"unknown action {action!r}")
        fn(self, action)
        self.now += 1
        self.trace.append(action)

    def _deliver(self, a) -> None:
        c = a.channel
        ch = self.channels[c]
        if not ch:
            raise ActionNotEnabled(f"{a!r}: channel {c} is empty")
        if self.blocked[c] and not self.prio[c]:
            raise ActionNotEnabled(f"{a!r}: channel {c} is blocked by checkpoint alignment")
        e = ch.popleft()
        if self.prio[c]:
            self.prio[c] -= 1
        task = self.tasks[self.consumer_of[c]]
        if task.status != RUNNING:
            raise ActionNotEnabled(f"{a!r}: consumer task {task.subtask.name} is {task.status}")
        if type(e) is tuple:
            self.received[c] += 1
            if task.persisting and task.local_of[c] in task.persisting:
                task.input_cs[c].append(e)
            task.head.process(e[0], e[1], e[2])
        else:
            task.process_event(e, c)

    def _source(self, a) -> StreamTask:
        if not 0 <= a.subtask < len(self.tasks) or self.tasks[a.subtask].source is None:
            raise ActionNotEnabled(f"{a!r}: subtask {a.subtask} is not a source subtask")
        t = self.tasks[a.subtask]
        if t.status != RUNNING:
            raise ActionNotEnabled(f"{a!r}: {t.subtask.name} is {t.status}")
        return t

    def _source_emit(self, a) -> None:
        t = self._source(a)
        src = t.source
        if not src.has_next() or src.wm_output.is_idle:
            raise ActionNotEnabled(f"{a!r}: source has no record to emit or is idle")
        rec = src.next_record()
        t.head.process(rec[0], rec[1], rec[2])

    def _source_watermark(self, a) -> None:
        t = self._source(a)
        src = t.source
        if not src.wm_output.emit_watermark(src.current_watermark()):
            raise ActionNotEnabled(f"{a!r}: the generator's watermark does not advance")

    def _source_idle(self, a) -> None:
        t = self._source(a)
        if t.source.wm_output.is_idle:
            raise ActionNotEnabled(f"{a!r}: source is idle already")
        t.source.wm_output.mark_idle()

    def _source_active(self, a) -> None:
        t = self._source(a)
        if not t.source.wm_output.is_idle:
            raise ActionNotEnabled(f"{a!r}: source is active already")
        t.source.wm_output.mark_active()

    def _source_end(self, a) -> None:
        t = self._source(a)
        src = t.source
        if src.has_next():
            raise ActionNotEnabled(f"{a!r}: source has records left")
        src.wm_output.mark_active()
        src.wm_output.emit_watermark(LONG_MAX)
        src.ended = True
        t.finish()

    def _trigger(self, a) -> None:
        coord = self.coordinator
        res = coord.trigger_checkpoint(self.now, "savepoint" if a.savepoint else "checkpoint")
        self.trigger_results.append(res)
        self._effects(res.effects)
        if not res.ok:
            return  # declined (e.g. TOO_MANY_CONCURRENT_CHECKPOINTS): the request fails, as in Flink
        cid = res.checkpoint_id
        cfg = self.config
        unaligned = cfg.barrier_mode == "unaligned" and not a.savepoint
        barrier = CheckpointBarrier(cid, self.now, savepoint=a.savepoint, unaligned=unaligned)
        for t in self.tasks:
            if t.status == FINISHED:
                self.acknowledge(t, t.take_snapshot(cid))
        for t in self.source_tasks:
            if t.status == RUNNING:
                t.trigger(barrier, unaligned)

    def _notify(self, a) -> None:
        key = (a.subtask, a.checkpoint_id)
        try:
            self.notifications.remove(key)
        except ValueError:
            raise ActionNotEnabled(f"{a!r}: no such notification is in flight") from None
        for node in self.tasks[a.subtask].nodes:
            node.notify_complete(a.checkpoint_id)

    def _alignment_timeout(self, a) -> None:
        t = self.tasks[a.subtask]
        if t.timer is None or not t.handler.timer_due(self.now, t.timer[1]):
            raise ActionNotEnabled(f"{a!r}: no alignment timer is due")
        cid = t.timer[0]
        t.timer = None
        t.handler.on_alignment_timeout(cid)

    # -- whole runs -------------------------------------------------------------------------
    def is_drained(self) -> bool:
        """Every task finished, nothing in flight, and every sink's output committed."""
        if any(t.status != FINISHED for t in self.tasks):
            return False
        if any(self.channels) or self.notifications or self.coordinator.num_pending:
            return False
        return not self._uncommitted_sink_data()

    def _uncommitted_sink_data(self) -> bool:
        return any(t.records for t in self.external.uncommitted_transactions())


_DISPATCH = {
    A.Deliver: Cluster._deliver,
    A.SourceEmit: Cluster._source_emit,
    A.SourceWatermark: Cluster._source_watermark,
    A.SourceIdle: Cluster._source_idle,
    A.SourceActive: Cluster._source_active,
    A.SourceEnd: Cluster._source_end,
    A.TriggerCheckpoint: Cluster._trigger,
    A.NotifyCheckpointComplete: Cluster._notify,
    A.AlignmentTimeout: Cluster._alignment_timeout,
}


def enabled_actions(cluster: Cluster) -> list:
    return cluster.enabled_actions()


def step(cluster: Cluster, action) -> Cluster:
    cluster.step(action)
    return cluster


#: Order in which ``drain`` prefers actions: finish the data first, then commit.
_DRAIN_ORDER = (A.Deliver, A.NotifyCheckpointComplete, A.SourceActive, A.SourceEmit,
                A.SourceWatermark, A.SourceEnd, A.AlignmentTimeout)


def drain(cluster: Cluster, max_steps: int = 1_000_000) -> None:
    """Run ``cluster`` to the end with a fixed, deterministic policy (no failures): deliver
    everything, end the sources, and take a final checkpoint so that two-phase-commit sinks
    commit. Raises FlinkspecError if the run does not drain within ``max_steps``."""
    for _ in range(max_steps):
        if cluster.is_drained():
            return
        acts = cluster.enabled_actions()
        chosen = None
        for kind in _DRAIN_ORDER:
            for act in acts:
                if type(act) is kind:
                    chosen = act
                    break
            if chosen is not None:
                break
        if chosen is None:
            if all(t.status == FINISHED for t in cluster.tasks) and not cluster.coordinator.num_pending:
                cluster.step(A.TriggerCheckpoint())
                continue
            raise FlinkspecError(f"the run is stuck after {cluster.now} steps: no action drains it further")
        cluster.step(chosen)
    raise FlinkspecError(f"the run did not drain within {max_steps} steps")
