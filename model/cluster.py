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
#: Historical bug mechanisms the model can re-introduce (RuntimeConfig.bugs).
KNOWN_BUGS = ("FLINK-17568", "FLINK-20645", "FLINK-12068")


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
    #: failures: how many failure actions (FailTask, LoseTaskManager, FailJobManager) a run may
    #: inject; 0 = a failure-free run.
    max_failures: int = 0
    failover_strategy: str = "region"
    #: restart strategy: "fixed-delay" (``restart_attempts``), "failure-rate"
    #: (``failure_rate_max_failures`` within ``failure_rate_interval`` steps) or "none".
    restart_strategy: str = "fixed-delay"
    #: fixed-delay: restarts allowed before the job is FAILED (None = unbounded).
    restart_attempts: int | None = None
    failure_rate_max_failures: int = 3
    failure_rate_interval: int = 100
    task_managers: int = 2
    #: slots per TaskManager; None = just enough for the job (ceil(required / task_managers)).
    slots_per_task_manager: int | None = None
    #: whether stop-with-savepoint / rescaling actions are offered.
    savepoints: bool = False
    #: parallelisms a RestartFromSavepoint may choose, per operator name: ((name, (p, ...)), ...).
    rescale_options: tuple = ()
    #: whether TriggerCheckpoint(savepoint=True) (a savepoint while running) is offered.
    trigger_savepoints: bool = False
    # -- known-unsafe variants (see model.variants) --
    #: historical bug mechanisms to re-introduce, by FLINK key: "FLINK-17568", "FLINK-20645",
    #: "FLINK-12068" (see model.variants for what each does).
    bugs: tuple = ()
    skip_consumer_regions: bool = False
    restore_pending_checkpoints: bool = False
    keygroup_assignment: str = "range"
    notify_savepoint_complete: bool = False

    def __attrs_post_init__(self):
        if self.checkpointing_mode not in CHECKPOINTING_MODES:
            raise FlinkspecError(f"checkpointing_mode must be one of {CHECKPOINTING_MODES}, not {self.checkpointing_mode!r}")
        if self.unaligned and self.checkpointing_mode != "exactly_once":
            raise FlinkspecError("unaligned checkpoints need checkpointing_mode 'exactly_once' (Flink: FLINK-18403)")
        if self.channel_capacity < 1:
            raise FlinkspecError(f"channel_capacity must be >= 1, not {self.channel_capacity}")
        if self.max_concurrent_checkpoints < 1:
            raise FlinkspecError("max_concurrent_checkpoints must be >= 1")
        if self.failover_strategy not in ("region", "full"):
            raise FlinkspecError(f"failover_strategy must be 'region' or 'full', not {self.failover_strategy!r}")
        if self.restart_strategy not in ("fixed-delay", "failure-rate", "none"):
            raise FlinkspecError(f"restart_strategy must be 'fixed-delay', 'failure-rate' or 'none', "
                                 f"not {self.restart_strategy!r}")
        if self.failure_rate_max_failures < 1 or self.failure_rate_interval < 1:
            raise FlinkspecError("failure-rate restart strategy: max failures and interval must be >= 1")
        if self.keygroup_assignment not in ("range", "modulo"):
            raise FlinkspecError(f"keygroup_assignment must be 'range' or 'modulo', not {self.keygroup_assignment!r}")
        if self.task_managers < 1:
            raise FlinkspecError("task_managers must be >= 1")
        unknown = set(self.bugs) - set(KNOWN_BUGS)
        if unknown:
            raise FlinkspecError(f"unknown bug mechanism(s) {sorted(unknown)}; known: {', '.join(KNOWN_BUGS)}")

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
        self.status = RUNNING
        self.attempt = 0
        self.failures = 0
        self.restarts = 0
        self.acks: dict[int, dict] = {}
        self.completed: dict[int, dict] = {}
        self.new_completed: list[int] = []
        self.restored_from: list = []
        self.savepoint = None
        self.stopping: int | None = None
        self.generation = 0
        self.sink_owners: dict[int, str] = {}
        self.declines: list = []
        self.last_failover = None
        self.failure_times: list[int] = []
        self._tm_cache = None
        self.events: list = []
        self.coordinator = self._new_coordinator(execution_graph)
        self._check_input()
        self._install(execution_graph)

    def _new_coordinator(self, execution_graph):
        from model.checkpointcoordinator import CheckpointCoordinator

        all_ids = [s.id for s in execution_graph.subtasks]
        cfg = self.config
        return CheckpointCoordinator(
            tasks_to_trigger=all_ids,
            tasks_to_ack=all_ids,
            max_concurrent_checkpoints=cfg.max_concurrent_checkpoints,
            min_pause_between_checkpoints=cfg.min_pause_between_checkpoints,
            max_retained=cfg.max_retained_checkpoints,
            restore_pending_checkpoints=cfg.restore_pending_checkpoints,
            notify_savepoint_complete=cfg.notify_savepoint_complete,
        )

    def _install(self, execution_graph, restored=None) -> None:
        """Deploy every subtask of ``execution_graph`` (fresh, or from ``restored``)."""
        from model.failover import failover_strategy
        from model import slotsharing

        self.eg = execution_graph
        n = len(execution_graph.channels)
        self.channels: list[deque] = [deque() for _ in range(n)]
        self.prio = [0] * n
        self.blocked = [False] * n
        self.received = [0] * n
        self.blocking = [self._channel_blocking(ch) for ch in execution_graph.channels]
        #: blocking channels: the deque is the whole partition (append-only), ``read_pos`` the
        #: consumer's position in it; pipelined channels are consumed from the head.
        self.read_pos = [0] * n
        self._ops = {o.name: o for o in execution_graph.stream_graph.operators}
        self.consumer_of = [ch.consumer for ch in execution_graph.channels]
        self.producer_of = [ch.producer for ch in execution_graph.channels]
        self.strategy = failover_strategy(execution_graph, self.config.failover_strategy,
                                          skip_consumer_regions=self.config.skip_consumer_regions,
                                          backtrack_producers="FLINK-12068" not in self.config.bugs)
        required = sum(slotsharing.required_slots(execution_graph).values())
        cfg = self.config
        per_tm = cfg.slots_per_task_manager or -(-required // cfg.task_managers)
        self.task_managers = tuple(slotsharing.TaskManager(f"tm{i}", per_tm) for i in range(cfg.task_managers))
        self.allocation = slotsharing.allocate(execution_graph, self.task_managers)
        self.tasks: list[StreamTask] = [None] * len(execution_graph.subtasks)  # type: ignore[list-item]
        for st in execution_graph.subtasks:
            self.tasks[st.id] = self._deploy(st)
        self.source_tasks = [t for t in self.tasks if t.source is not None]
        if restored is not None:
            self._restore_tasks(set(range(len(self.tasks))), restored)
        ids = [s.id for s in execution_graph.subtasks]
        self.coordinator.update_tasks(ids, ids)

    def _channel_blocking(self, ch) -> bool:
        from model.jobgraph import BLOCKING

        return self.eg.job_graph.edges[ch.job_edge].result_partition_type == BLOCKING

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
        output = TaskOutput([self.channels[c] for c in out_channels],
                            [self.channels[c] for c in out_channels if not self.blocking[c]])
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
            task.handler = self._barrier_handler(task, len(task.barrier_channels))
        return task

    def _barrier_handler(self, task, n):
        cfg = self.config
        mode = cfg.barrier_mode
        if mode == "at_least_once":
            return CheckpointBarrierTracker(task, n, checkpoints_after_tasks_finish=cfg.checkpoints_after_tasks_finish)
        # with unaligned checkpoints enabled Flink always builds the *alternating* handler
        # (InputProcessorUtil.createCheckpointBarrierHandler): unaligned checkpoint barriers take
        # its timeout path at once, savepoints (always aligned) are aligned by it
        return SingleCheckpointBarrierHandler(
            task, n, "aligned" if mode == "aligned" else "alternating", timeout=cfg.aligned_checkpoint_timeout,
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
        """The sink writer of subtask ``st``. Its owner id (transaction owner and the subtask
        recorded with each committed record) is unique across rescalings."""
        from model import sinks

        owner = self.generation * 100_000 + st.id
        self.sink_owners[owner] = spec.name
        return sinks.make_sink(spec.sink_kind, self.external, owner, None)

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
        cid = snap.checkpoint_id
        task.acked.add(cid)
        if cid in self.coordinator.pending:
            self.acks.setdefault(cid, {})[task.id] = snap
        self._effects(self.coordinator.receive_acknowledge(cid, task.id, snap, now=self.now))

    def decline(self, task: StreamTask, checkpoint_id: int, reason: str) -> None:
        self.declines.append((task.id, checkpoint_id, self.attempt))
        self._effects(self.coordinator.receive_decline(checkpoint_id, task.id, reason))

    def _effects(self, effects) -> None:
        from model.checkpointcoordinator import CheckpointAborted, CheckpointCompleted, NotifyCheckpointComplete

        for e in effects or ():
            if isinstance(e, CheckpointCompleted):
                cid = e.checkpoint_id
                self.completed_ids.append(cid)
                self.completed[cid] = self.acks.pop(cid, {})
                self.new_completed.append(cid)
                self.events.append(("completed", self.now, cid, e.properties.is_savepoint))
                if self.stopping == cid:
                    self._stop_after_savepoint(cid)
            elif isinstance(e, CheckpointAborted):
                self.events.append(("aborted", self.now, e.checkpoint_id, e.reason))
                if self.stopping == e.checkpoint_id:
                    # stop-with-savepoint failed: the job keeps running (as in Flink)
                    self.stopping = None
                    self.events.append(("stop_with_savepoint_failed", self.now, e.checkpoint_id, e.reason))
            elif isinstance(e, NotifyCheckpointComplete):
                for tid in e.tasks:
                    self.notifications.append((tid, e.checkpoint_id))

    def task_finished(self, task: StreamTask) -> None:
        """FLIP-147: a task that finished acknowledges, with its final state, the pending
        checkpoints whose barriers never reached it (its EndOfPartitions stand for them);
        one its handler already saw (aligned, aborted or skipped as obsolete) is not acked."""
        h = task.handler
        for cid in self.coordinator.pending_ids():
            if h is not None and h.has_seen(cid):
                continue
            if cid not in task.acked and cid in self.coordinator.pending_ids():
                self.acknowledge(task, task.take_snapshot(cid))

    # -- actions ----------------------------------------------------------------------------
    def outputs_free(self, task: StreamTask) -> bool:
        """Back-pressure: a task starts on its next element only while every pipelined output
        channel has a free buffer (blocking partitions are written to disk, unbounded)."""
        cap = self.config.channel_capacity
        for q in task.out_deques:
            if len(q) >= cap:
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
        blocking = self.blocking
        for c in range(len(chans)):
            if not chans[c] or (blocked[c] and not prio[c]):
                continue
            if blocking[c] and (tasks[self.producer_of[c]].status != FINISHED
                                or self.read_pos[c] >= len(chans[c])):
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
        if (self.status == RUNNING and self.stopping is None
                and self.coordinator.num_pending < self.config.max_concurrent_checkpoints
                and any(t.status == RUNNING for t in self.source_tasks)):
            acts.append(A.TriggerCheckpoint())
            if self.config.trigger_savepoints:
                acts.append(A.TriggerCheckpoint(savepoint=True))
        if self.status == RUNNING:
            for cid in self.coordinator.pending_ids():
                acts.append(A.CheckpointTimeout(cid))
        seen = set()
        for n in self.notifications:
            if n not in seen:
                seen.add(n)
                acts.append(A.NotifyCheckpointComplete(n[0], n[1]))
        for t in tasks:
            if t.timer is not None and t.handler is not None and t.handler.timer_due(self.now, t.timer[1]):
                acts.append(A.AlignmentTimeout(t.id))
        if self._failures_left():
            for t in tasks:
                if t.status == RUNNING:
                    acts.append(A.FailTask(t.id))
            alloc = self.allocation
            if self._tm_cache is None or self._tm_cache[0] is not alloc:
                self._tm_cache = (alloc, [bool(alloc.subtasks_on(tm.id)) for tm in self.task_managers])
            for i, busy in enumerate(self._tm_cache[1]):
                if busy:
                    acts.append(A.LoseTaskManager(i))
            acts.append(A.FailJobManager())
        if self.config.savepoints:
            if self.status == RUNNING and self.stopping is None and self.savepoint is None:
                acts.append(A.StopWithSavepoint())
            elif self.status == "STOPPED":
                for option in self.rescale_choices():
                    acts.append(A.RestartFromSavepoint(option))
        return acts

    def rescale_choices(self) -> list[tuple]:
        """The RestartFromSavepoint parallelisms offered: the current ones and, per operator in
        ``config.rescale_options``, each listed parallelism."""
        sg = self.eg.stream_graph
        current = tuple((o.name, o.parallelism) for o in sg.operators)
        # a forward edge needs equal parallelisms: an operator rescales together with every
        # operator forward-connected to it (e.g. a keyed operator and its chained sink)
        forward: dict[str, list[str]] = {}
        for e in sg.edges:
            if e.partitioner == "forward":
                forward.setdefault(e.source, []).append(e.target)
                forward.setdefault(e.target, []).append(e.source)
        out = [current]
        for name, ps in self.config.rescale_options:
            group, todo = {name}, [name]
            while todo:
                for n in forward.get(todo.pop(), ()):
                    if n not in group:
                        group.add(n)
                        todo.append(n)
            for p in ps:
                opt = tuple((n, p if n in group else q) for n, q in current)
                if opt not in out:
                    out.append(opt)
        return out

    def step(self, action) -> None:
        try:
            fn = _DISPATCH[type(action)]
        except KeyError:
            raise ActionNotEnabled(f"unknown action {action!r}") from None
        if self.new_completed:
            self.new_completed = []
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
        if self.blocking[c] and self.tasks[self.producer_of[c]].status != FINISHED:
            raise ActionNotEnabled(f"{a!r}: blocking channel {c} is consumable only once its producer finished")
        task = self.tasks[self.consumer_of[c]]
        if task.status != RUNNING:
            raise ActionNotEnabled(f"{a!r}: consumer task {task.subtask.name} is {task.status}")
        cap = self.config.channel_capacity
        for q in task.out_deques:
            if len(q) >= cap:
                raise ActionNotEnabled(
                    f"{a!r}: consumer task {task.subtask.name} is back-pressured (an output channel is full)")
        if self.blocking[c]:
            pos = self.read_pos[c]
            if pos >= len(ch):
                raise ActionNotEnabled(f"{a!r}: blocking channel {c} has been read to its end")
            e = ch[pos]
            self.read_pos[c] = pos + 1
        else:
            e = ch.popleft()
            if self.prio[c]:
                self.prio[c] -= 1
        if type(e) is tuple:
            self.received[c] += 1
            if task.persisting and task.local_of[c] in task.persisting:
                task.input_cs[c].append(e)
            task.head.process(e[0], e[1], e[2])
            if task.deferred:
                task.run_deferred()
        else:
            task.process_event(e, c)

    def _free_source(self, a) -> StreamTask:
        """``_source`` for the actions back-pressure disables (a full output channel)."""
        t = self._source(a)
        if not self.outputs_free(t):
            raise ActionNotEnabled(f"{a!r}: {t.subtask.name} is back-pressured (an output channel is full)")
        return t

    def _source(self, a) -> StreamTask:
        if not 0 <= a.subtask < len(self.tasks) or self.tasks[a.subtask].source is None:
            raise ActionNotEnabled(f"{a!r}: subtask {a.subtask} is not a source subtask")
        t = self.tasks[a.subtask]
        if t.status != RUNNING:
            raise ActionNotEnabled(f"{a!r}: {t.subtask.name} is {t.status}")
        return t

    def _source_emit(self, a) -> None:
        t = self._free_source(a)
        src = t.source
        if not src.has_next() or src.wm_output.is_idle:
            raise ActionNotEnabled(f"{a!r}: source has no record to emit or is idle")
        rec = src.next_record()
        t.head.process(rec[0], rec[1], rec[2])

    def _source_watermark(self, a) -> None:
        t = self._free_source(a)
        src = t.source
        if not src.wm_output.emit_watermark(src.current_watermark()):
            raise ActionNotEnabled(f"{a!r}: the generator's watermark does not advance")

    def _source_idle(self, a) -> None:
        t = self._free_source(a)
        if t.source.wm_output.is_idle:
            raise ActionNotEnabled(f"{a!r}: source is idle already")
        t.source.wm_output.mark_idle()

    def _source_active(self, a) -> None:
        t = self._source(a)
        if not t.source.wm_output.is_idle:
            raise ActionNotEnabled(f"{a!r}: source is active already")
        t.source.wm_output.mark_active()

    def _source_end(self, a) -> None:
        t = self._free_source(a)
        src = t.source
        if src.has_next():
            raise ActionNotEnabled(f"{a!r}: source has records left")
        src.wm_output.mark_active()
        src.wm_output.emit_watermark(LONG_MAX)
        src.ended = True
        t.finish()

    def _trigger(self, a) -> None:
        if self.status != RUNNING or self.stopping is not None:
            raise ActionNotEnabled(f"{a!r}: the job is {self.status}")
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
        if a.savepoint:
            self.events.append(("savepoint_triggered", self.now, cid))
        for t in self.tasks:
            if t.status == FINISHED:
                self.acknowledge(t, t.take_snapshot(cid))
            elif t.status == RUNNING and not t.barrier_channels:
                # sources, and tasks fed only by blocking partitions, are triggered directly
                t.trigger(barrier, unaligned)

    def _checkpoint_timeout(self, a) -> None:
        if a.checkpoint_id not in self.coordinator.pending:
            raise ActionNotEnabled(f"{a!r}: checkpoint {a.checkpoint_id} is not pending")
        self.acks.pop(a.checkpoint_id, None)
        self._effects(self.coordinator.receive_decline(a.checkpoint_id, -1, "CHECKPOINT_EXPIRED", now=self.now))

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


    # -- failures and recovery ------------------------------------------------------------------
    def _failures_left(self) -> bool:
        return self.status == RUNNING and self.failures < self.config.max_failures

    def _fail_task(self, a) -> None:
        if not self._failures_left():
            raise ActionNotEnabled(f"{a!r}: no failure may be injected now")
        if not 0 <= a.subtask < len(self.tasks) or self.tasks[a.subtask].status != RUNNING:
            raise ActionNotEnabled(f"{a!r}: subtask {a.subtask} is not running")
        self.failures += 1
        self.events.append(("task_failed", self.now, a.subtask))
        self._failover({a.subtask}, frozenset())

    def _lose_task_manager(self, a) -> None:
        if not self._failures_left():
            raise ActionNotEnabled(f"{a!r}: no failure may be injected now")
        tm = a.task_manager
        if not 0 <= tm < len(self.task_managers):
            raise ActionNotEnabled(f"{a!r}: there is no TaskManager {tm}")
        tm_id = self.task_managers[tm].id
        lost = set(self.allocation.subtasks_on(tm_id))
        if not lost:
            raise ActionNotEnabled(f"{a!r}: TaskManager {tm_id} runs no task")
        self.failures += 1
        self.events.append(("task_manager_lost", self.now, tm_id))
        # blocking partitions held by the lost TaskManager are gone; running consumers that
        # still read one fail with a PartitionNotFoundException
        unavailable = frozenset(c for c in range(len(self.channels))
                                if self.blocking[c] and self.producer_of[c] in lost)
        failed = {t for t in lost if self.tasks[t].status == RUNNING}
        failed |= {self.consumer_of[c] for c in unavailable if self.tasks[self.consumer_of[c]].status == RUNNING}
        if not failed:
            self.events.append(("task_manager_replaced", self.now, tm_id))
            return
        self._failover(failed, unavailable)

    def _fail_job_manager(self, a) -> None:
        if not self._failures_left():
            raise ActionNotEnabled(f"{a!r}: no failure may be injected now")
        self.failures += 1
        self.events.append(("job_manager_failover", self.now))
        self._effects(self.coordinator.job_manager_failover())
        self.acks.clear()
        self.notifications.clear()
        self._restart(frozenset(range(len(self.tasks))), self.coordinator.restore_latest_checkpointed_state())

    def _failover(self, failed: set, unavailable: frozenset) -> None:
        self.restarts += 1
        if not self._can_restart():
            self.status = "FAILED"
            self.events.append(("job_failed", self.now, self.restarts - 1))
            for t in self.tasks:
                if t.status == RUNNING:
                    t.status = "CANCELED"
            return
        restart = self.strategy.tasks_to_restart(failed, unavailable)
        during_alignment = any(self.blocked) or any(t.persisting for t in self.tasks)
        self.last_failover = (frozenset(failed), frozenset(unavailable), frozenset(restart))
        self.events.append(("failover", self.now, tuple(sorted(failed)), tuple(sorted(unavailable)),
                            tuple(sorted(restart)), during_alignment))
        self._effects(self.coordinator.abort_pending("JOB_FAILOVER_REGION", now=self.now))
        self.acks.clear()
        self._restart(restart, self.coordinator.restore_latest_checkpointed_state())

    def _can_restart(self) -> bool:
        """The RestartBackoffTimeStrategy after ``notifyFailure`` (the failure is counted):
        FixedDelayRestartBackoffTimeStrategy (``currentRestartAttempt <= maxAttempts``),
        FailureRateRestartBackoffTimeStrategy (a full queue of the last N failure times whose
        oldest lies more than the interval back) or NoRestartBackoffTimeStrategy."""
        cfg = self.config
        if cfg.restart_strategy == "none":
            return False
        if cfg.restart_strategy == "fixed-delay":
            return cfg.restart_attempts is None or self.restarts <= cfg.restart_attempts
        q = self.failure_times
        if len(q) >= cfg.failure_rate_max_failures:
            q.pop(0)
        q.append(self.now)
        if len(q) >= cfg.failure_rate_max_failures:
            return self.now - q[0] > cfg.failure_rate_interval
        return True

    def _restart(self, restart: frozenset, checkpoint) -> None:
        """Cancel and redeploy the subtasks in ``restart`` and restore them from ``checkpoint``."""
        from model import slotsharing

        self.attempt += 1
        self.restored_from.append((self.now, None if checkpoint is None else checkpoint.checkpoint_id,
                                   tuple(sorted(restart))))
        self.events.append(("restored", self.now, None if checkpoint is None else checkpoint.checkpoint_id,
                            tuple(sorted(restart))))
        self.notifications = [n for n in self.notifications if n[0] not in restart]
        if self.stopping is not None and self.stopping not in self.coordinator.pending:
            self.stopping = None  # the stop-with-savepoint was aborted by the failover
        for c in range(len(self.channels)):
            if self.consumer_of[c] in restart or self.producer_of[c] in restart:
                if self.blocking[c] and self.producer_of[c] not in restart:
                    continue  # the partition survives; the restarted consumer re-reads it
                self.channels[c].clear()
                self.prio[c] = 0
                self.blocked[c] = False
                self.read_pos[c] = 0
        for tid in restart:
            self.tasks[tid].status = "CANCELED"
        eg = self.eg
        for tid in sorted(restart):
            self.tasks[tid] = self._deploy(eg.subtasks[tid])
        self.source_tasks = [t for t in self.tasks if t.source is not None]
        self.allocation = slotsharing.allocate(eg, self.task_managers, previous=self.allocation)
        self._restore_tasks(set(restart), checkpoint)

    def _restore_tasks(self, restart: set, checkpoint) -> None:
        """Restore state of the freshly deployed subtasks in ``restart``: keyed state, source
        offsets, sink transactions, channel state (input part, then output part) and the
        channel bookkeeping; blocking partitions are re-read from the restored position."""
        states = {} if checkpoint is None else dict(checkpoint.task_states)
        for tid in sorted(restart):
            task = self.tasks[tid]
            snap = states.get(tid)
            if snap is None:
                continue
            self._restore_task(task, snap)
        for c in range(len(self.channels)):
            cons, prod = self.consumer_of[c], self.producer_of[c]
            psnap = states.get(prod)
            if self.blocking[c] and prod in restart and psnap is not None:
                # the restored producer's partition is complete again up to its snapshot
                self.channels[c].extend(psnap.partition.get(c, ()))
            if cons not in restart:
                continue  # (only with the unsafe skip_consumer_regions: it reads on at read_pos)
            csnap = states.get(cons)
            received = csnap.received.get(c, 0) if csnap is not None else 0
            self.received[c] = received
            ch = self.channels[c]
            if self.blocking[c]:
                # re-read the partition from just after the records the consumer's state reflects
                pos = 0
                seen = 0
                while seen < received and pos < len(ch):
                    if type(ch[pos]) is tuple:
                        seen += 1
                    pos += 1
                self.read_pos[c] = pos
                continue
            if csnap is not None:
                ch.extend(csnap.input_channel_state.get(c, ()))
            if psnap is not None and prod in restart:
                ch.extend(psnap.output_channel_state.get(c, ()))

    def _restore_task(self, task: StreamTask, snap) -> None:
        src = task.source
        if src is not None and src.name in snap.operator:
            # the subtask reads exactly the splits of its restored split state
            records = self.job_input.splits.get(src.name, ())
            src.splits = [[sid, tuple(records[sid]), off, BoundedOutOfOrdernessWatermarks(src.out_of_orderness)]
                          for (sid, off) in snap.operator[src.name]]
            src.current = 0
        for node in task.nodes:
            if isinstance(node, KeyedNode):
                node.op.restore_state(snap.keyed.get(node.name, {}))
            elif isinstance(node, SinkNode):
                state = snap.operator.get(node.name)
                if state is not None:
                    node.sink.initialize_state(state)

    # -- savepoints and rescaling --------------------------------------------------------------
    def _stop_with_savepoint(self, a) -> None:
        if not self.config.savepoints or self.status != RUNNING or self.stopping is not None:
            raise ActionNotEnabled(f"{a!r}: stop-with-savepoint is not possible now")
        res = self.coordinator.trigger_checkpoint(self.now, "stop_with_savepoint")
        self._effects(res.effects)
        if not res.ok:
            self.events.append(("savepoint_declined", self.now, res.reason))
            return
        cid = res.checkpoint_id
        self.stopping = cid
        self.events.append(("stop_with_savepoint", self.now, cid))
        barrier = CheckpointBarrier(cid, self.now, savepoint=True, unaligned=False)
        for t in self.tasks:
            if t.status == FINISHED:
                self.acknowledge(t, t.take_snapshot(cid))
            elif t.status == RUNNING and not t.barrier_channels:
                t.trigger(barrier, False)
                if self.stopping is None:
                    return

    def _stop_after_savepoint(self, cid: int) -> None:
        """The synchronous savepoint completed: commit (notifyCheckpointComplete reaches every
        task before it stops), then the job is STOPPED."""
        self.stopping = None
        self.savepoint = cid
        for (tid, ncid) in list(self.notifications):
            if ncid <= cid:
                for node in self.tasks[tid].nodes:
                    node.notify_complete(ncid)
        self.notifications = []
        for t in self.tasks:
            for node in t.nodes:
                if isinstance(node, SinkNode):
                    node.sink.close()
            if t.status == RUNNING:
                t.status = "STOPPED"
        for ch in self.channels:
            ch.clear()
        self.status = "STOPPED"
        self.events.append(("stopped", self.now, cid))

    def _restart_from_savepoint(self, a) -> None:
        if self.status != "STOPPED" or self.savepoint is None:
            raise ActionNotEnabled(f"{a!r}: the job is not stopped with a savepoint")
        if tuple(a.parallelism) not in self.rescale_choices():
            raise ActionNotEnabled(f"{a!r}: not one of the offered parallelisms {self.rescale_choices()} "
                                   "(RuntimeConfig.rescale_options)")
        from model.rescaling import rescale_graph, rescale_states

        old_eg = self.eg
        snaps = self.completed[self.savepoint]
        new_sg = rescale_graph(old_eg.stream_graph, dict(a.parallelism))
        from model.executiongraph import compile_stream_graph

        new_eg = compile_stream_graph(new_sg)
        restored = rescale_states(old_eg, new_eg, snaps, self.savepoint, self.config.keygroup_assignment)
        sp = self.savepoint
        self.notifications = []
        self.acks.clear()
        # a new job: a fresh CheckpointCoordinator whose store starts with the (rescaled)
        # savepoint (CheckpointCoordinator.restoreSavepoint, NO_CLAIM)
        from model.checkpointcoordinator import CompletedCheckpoint

        self.coordinator = self._new_coordinator(new_eg)
        self.coordinator.restore_savepoint(CompletedCheckpoint(sp, self.now, task_states=dict(restored.task_states)))
        self.status = RUNNING
        self.attempt += 1
        self.generation += 1
        self.savepoint = None
        self.events.append(("rescaled", self.now, sp, tuple(a.parallelism)))
        self.restored_from.append((self.now, sp, ("rescale",) + tuple(a.parallelism)))
        self._install(new_eg, restored)

    # -- whole runs -------------------------------------------------------------------------
    def is_drained(self) -> bool:
        """Every task finished, nothing in flight, and every sink's output committed."""
        if any(t.status != FINISHED for t in self.tasks):
            return False
        if self.notifications or self.coordinator.num_pending or self._in_flight():
            return False
        return not self._uncommitted_sink_data()

    def _in_flight(self) -> bool:
        blocking = self.blocking
        for c, ch in enumerate(self.channels):
            if ch and (not blocking[c] or self.read_pos[c] < len(ch)):
                return True
        return False

    def _uncommitted_sink_data(self) -> bool:
        """A live two-phase-commit sink still holds written records that are not committed
        (transactions of failed attempts that nobody will commit are not counted: the external
        system times them out)."""
        for t in self.tasks:
            for node in t.nodes:
                if isinstance(node, SinkNode):
                    sink = node.sink
                    if getattr(sink, "pending_commit", None):
                        return True
                    cur = getattr(sink, "current", None)
                    if cur is not None and cur.records:
                        return True
        return False


_DISPATCH = {
    A.Deliver: Cluster._deliver,
    A.SourceEmit: Cluster._source_emit,
    A.SourceWatermark: Cluster._source_watermark,
    A.SourceIdle: Cluster._source_idle,
    A.SourceActive: Cluster._source_active,
    A.SourceEnd: Cluster._source_end,
    A.TriggerCheckpoint: Cluster._trigger,
    A.NotifyCheckpointComplete: Cluster._notify,
    A.CheckpointTimeout: Cluster._checkpoint_timeout,
    A.AlignmentTimeout: Cluster._alignment_timeout,
    A.FailTask: Cluster._fail_task,
    A.LoseTaskManager: Cluster._lose_task_manager,
    A.FailJobManager: Cluster._fail_job_manager,
    A.StopWithSavepoint: Cluster._stop_with_savepoint,
    A.RestartFromSavepoint: Cluster._restart_from_savepoint,
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
            if (all(t.status == FINISHED for t in cluster.tasks) and not cluster.coordinator.num_pending
                    and cluster._uncommitted_sink_data()):
                cluster.step(A.TriggerCheckpoint())
                continue
            timeouts = [a for a in acts if type(a) is A.CheckpointTimeout]
            if timeouts:
                cluster.step(timeouts[0])
                continue
            raise FlinkspecError(f"the run is stuck after {cluster.now} steps: no action drains it further")
        cluster.step(chosen)
    raise FlinkspecError(f"the run did not drain within {max_steps} steps")
