"""StreamTask: one parallel subtask running a chain of operators.

Invariant upheld: a task processes its inputs one element at a time; records flow through
the operator chain synchronously (chained operators share the task, no channel between
them); watermarks go through the task's StatusWatermarkValve and each operator fires its
event-time timers *before* the watermark is forwarded; checkpoint barriers go to the task's
barrier handler, which decides when the task snapshots.

A subtask is two things: its *plan* (:class:`TaskPlan`: the OperatorChain's structure, the
user functions, the record writers' partitioners and the channel indices -- fixed when the
task is deployed from the ExecutionGraph, a value every copy shares) and its *state*
(:class:`StreamTask`: the stateful operators' state by position, the rebalance positions, the
valve, the barrier handler, the flags). The chain's nodes are the plan: a node holds no state,
it reads and writes the task's (``ctx.task.operators[node.slot]``). The task's state holds no
link to the network, the cluster's outbox, the external system or the cluster's late-record
lists: each call into the task is a :class:`TaskContext` the cluster makes with them, handed
down the chain (a record writer names its channels by id, a sink writes to ``ctx.external``).
No part of a task's state has two owners.

Follows: ``StreamTask``/``OperatorChain``/``RecordWriterOutput`` and the partitioners
``ForwardPartitioner``, ``KeyGroupStreamPartitioner``, ``RebalancePartitioner`` (random start,
then round robin), ``RescalePartitioner`` (round robin from 0) and ``BroadcastPartitioner``;
``SubtaskCheckpointCoordinatorImpl`` for the order of a snapshot (operators, then barrier
downstream) and for unaligned checkpoints (the barrier overtakes the output: what it
overtakes is written as output channel state).

Edges that cannot carry unaligned checkpoints (pointwise and broadcast ones, and every other
input of their consumer: ``JobEdge.supports_unaligned_checkpoints``) get each barrier of an
unaligned or timeoutable checkpoint *forced aligned*, behind the data
(``RecordWriterOutput.broadcastEvent`` with ``CheckpointOptions.withUnalignedUnsupported``), so
they never hold channel state; their consumer aligns it, and once aligned takes the checkpoint
as the job configured it (``withUnalignedSupported`` in ``checkpointState``): its own outputs
that support it get an unaligned barrier again.

A checkpoint trigger RPC (``trigger_checkpoint``) is acted on at most once per checkpoint and
never after a newer one: a task snapshots checkpoint n only if it took no checkpoint >= n and
was not notified that n was aborted. The CheckpointCoordinator's ``triggerCheckpoint`` RPCs
(``Execution.triggerCheckpoint`` -> ``TaskExecutor.triggerCheckpoint`` ->
``Task.triggerCheckpointBarrier`` -> ``StreamTask.triggerCheckpointAsync``) reach the tasks it
triggers, the sources, either in the step that triggers the checkpoint or, with
``Environment.trigger_delivery == "any_order"``, as messages (``StreamTask.triggers``) that
arrive in any order and possibly after the checkpoint was aborted; what the task does then is
``SubtaskCheckpointCoordinatorImpl.checkpointState``'s (``trigger_checkpoint``). The
notifyCheckpointAborted RPC, which a task's mailbox runs with priority over a queued trigger,
is delivered at once, and recorded only by a task to which that checkpoint's trigger is still
in flight (``notify_checkpoint_aborted``): elsewhere it changes nothing the model holds.
Left out: a trigger reaching a task twice (Flink's RPCs are at-most-once and not retried, and
a checkpoint id is never handed out twice: ``CheckpointIDCounter.getAndIncrement``, shared
through the HA services across JobManager failovers, whose restarted tasks are new attempts
anyway); a source that induces its own checkpoints (``ExternallyInducedSourceReader``:
``SourceOperatorStreamTask`` holds a trigger until the source asks for it); the trigger RPC
failing at the TaskExecutor (an attempt that is gone: the message dies with the attempt); the
bound on remembered aborts (``maxRecordAbortedCheckpoints``: the model's runs never abort
that many checkpoints).

Deliberate differences: there are no network buffers (a channel holds elements, its
capacity counts elements); a task whose output channels are full does not start processing
the next element (back-pressure), but one element may overshoot the capacity (a window
firing many results); a snapshot is taken synchronously and the acknowledgement reaches the
coordinator at once (unaligned: once the channel state is complete).
"""

from __future__ import annotations

import sys
from collections import deque

import attrs

from model import seams
from model.checkpointbarrierhandler import (CheckpointBarrierTracker, SingleCheckpointBarrierHandler,
                                            snapshots_obsolete_barriers)
from model.messages import AcknowledgeCheckpoint, DeclineCheckpoint, TaskFinished
from model.events import (
    ACTIVE,
    IDLE,
    LONG_MAX,
    LONG_MIN,
    MAX_WATERMARK,
    CancelCheckpointMarker,
    CheckpointBarrier,
    END_OF_PARTITION,
    EndOfPartitionEvent,
    Watermark,
    WatermarkStatus,
    value,
)
from model.fingerprint import beside_state

RUNNING = "RUNNING"
FINISHED = "FINISHED"
CANCELED = "CANCELED"

#: what a task does with a checkpoint trigger RPC (``StreamTask.trigger_verdict``)
TRIGGER_TAKEN = "taken"
TRIGGER_OLDER = "older"
TRIGGER_ABORTED = "aborted"


@attrs.frozen(slots=True)
class TaskSnapshot:
    """What one subtask contributes to checkpoint ``checkpoint_id``.

    ``keyed`` maps operator name -> {key group -> state}; ``operator`` maps operator name ->
    list state entries (source splits with offsets, sink transactions); ``input_channel_state``
    and ``output_channel_state`` map a channel id -> the records persisted for it (unaligned).
    ``sent`` (output channel -> records the task had sent into it) and ``received`` (input
    channel -> records it had consumed from it) are bookkeeping for the consistent-cut
    invariant; Flink has no such counters.
    """

    checkpoint_id: int
    subtask: int
    job_vertex: str
    subtask_index: int
    keyed: dict = attrs.field(factory=dict)
    operator: dict = attrs.field(factory=dict)
    input_channel_state: dict = attrs.field(factory=dict)
    output_channel_state: dict = attrs.field(factory=dict)
    sent: dict = attrs.field(factory=dict)
    received: dict = attrs.field(factory=dict)
    #: blocking output channel -> everything written into its partition so far (records and
    #: watermarks; not EndOfPartition): the model persists blocking partitions with the
    #: checkpoint, so a restored producer's partition is complete again.
    partition: dict = attrs.field(factory=dict)
    finished: bool = False
    #: with a state backend (``RuntimeConfig.state_backend``): the files of the keyed state
    #: (``model.checkpointstorage.KeyedStateHandle``), set by the asynchronous phase; ``keyed``
    #: then records the state of the synchronous phase (what the files must hold)
    state_handle: object = None


_WM_CACHE: dict = {}


def persists_channel_state() -> bool:
    """Whether an unaligned checkpoint writes the in-flight data it overtakes as channel state
    (``ChannelStateWriter``: the output buffers the barrier overtook and the input a channel
    receives until its barrier arrives): always."""
    return True


def barriers_forced_aligned(job_edge) -> bool:
    """Whether a producer sends the barriers of an unaligned (or timeoutable) checkpoint on
    ``job_edge`` forced aligned, behind the data: when the edge cannot carry unaligned
    checkpoints (``JobEdge.supports_unaligned_checkpoints``, which ``RecordWriterOutput``
    reads as ``supportsUnalignedCheckpoints``)."""
    return not job_edge.supports_unaligned_checkpoints


@seams.override("unaligned-barriers-on-every-edge", sys.modules[__name__], "barriers_forced_aligned",
                "every edge carries unaligned barriers, pointwise and broadcast ones too: their in-flight data "
                "becomes channel state, which Flink cannot restore with other parallelisms "
                "(SubtaskStateMapper.UNSUPPORTED)")
def _barriers_never_forced(job_edge) -> bool:
    return False


def _watermark(ts: int) -> Watermark:
    """Watermark values are immutable: share one object per timestamp (bounded cache)."""
    wm = _WM_CACHE.get(ts)
    if wm is None:
        if len(_WM_CACHE) > 4096:
            _WM_CACHE.clear()
        wm = _WM_CACHE[ts] = MAX_WATERMARK if ts == LONG_MAX else Watermark(ts)
    return wm


class ChainNode:
    """An operator in a chain, part of the task's plan (:class:`TaskPlan`): ``process`` a record,
    ``watermark``, ``end_input``, ``snapshot``, ``notify_complete``, each handed the call's
    :class:`TaskContext` and passing it down the chain. A node holds only structure (its name,
    its successor, its user function); a stateful node (``slot``) keeps its state in the task:
    ``ctx.task.operators[slot]`` for a keyed operator or a sink writer,
    ``ctx.task.next_channel[slot]`` for a rebalancing record writer. The record writers at the
    chain's end name their channels by index and append to ``ctx.queues[channel]``. Nodes are
    linked while the plan is built (:meth:`link`), never changed afterwards."""

    __slots__ = ("name", "next")

    def link(self, nxt) -> None:
        """Chain ``nxt`` after this operator."""
        self.next = nxt

    def process(self, ctx, k, v, ts):  # pragma: no cover - overridden
        raise NotImplementedError

    def watermark(self, ctx, ts: int) -> None:
        self.next.watermark(ctx, ts)

    def end_input(self, ctx) -> None:
        self.next.end_input(ctx)

    def snapshot(self, ctx, checkpoint_id: int, snap: TaskSnapshot) -> None:
        return None

    def notify_complete(self, ctx, checkpoint_id: int) -> None:
        return None


class MapNode(ChainNode):
    __slots__ = ("fn",)

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn

    def process(self, ctx, k, v, ts):
        k, v = self.fn(k, v)
        self.next.process(ctx, k, v, ts)


class FilterNode(ChainNode):
    __slots__ = ("fn",)

    def __init__(self, name, fn):
        self.name = name
        self.fn = fn

    def process(self, ctx, k, v, ts):
        if self.fn(k, v):
            self.next.process(ctx, k, v, ts)


class KeyedNode(ChainNode):
    """A keyed operator (``KeyedAggregateOperator`` or ``WindowOperator``, the task's
    ``operators[slot]``) whose state is kept per key group; late records go to the call's
    side-output list (``ctx.late``: the cluster's), as do the windows a sliding window operator
    skipped as late for an element that another of its windows took (``ctx.skips``)."""

    __slots__ = ("slot", "is_window")

    def __init__(self, name, slot: int, is_window: bool):
        self.name = name
        self.slot = slot
        self.is_window = is_window

    def process(self, ctx, k, v, ts):
        ctx.task.operators[self.slot].process_element(k, v, ts, ChainOutput(self, ctx))

    def watermark(self, ctx, ts):
        if self.is_window:
            ctx.task.operators[self.slot].advance_watermark(ts, ChainOutput(self, ctx))
        self.next.watermark(ctx, ts)

    def snapshot(self, ctx, checkpoint_id, snap):
        snap.keyed[self.name] = ctx.task.operators[self.slot].snapshot_state()


class ChainOutput:
    """A keyed operator's output for one call (``model.windowing.WindowOutput``): what it
    emits goes to the next operator of the chain with the call's context; late records
    (operator, key, value, timestamp, the operator's watermark at arrival: what justifies the
    drop) and skipped windows (the same and the window's max timestamp) to the context's side
    lists. Made per call, held by nobody after it."""

    __slots__ = ("node", "ctx")

    def __init__(self, node: KeyedNode, ctx):
        self.node = node
        self.ctx = ctx

    def collect(self, k, v, ts):
        self.node.next.process(self.ctx, k, v, ts)

    def collect_late(self, k, v, ts):
        node, ctx = self.node, self.ctx
        ctx.late.append((node.name, k, v, ts, ctx.task.operators[node.slot].current_watermark))

    def skip_window(self, k, v, ts, max_ts):
        node, ctx = self.node, self.ctx
        ctx.skips.append((node.name, k, v, ts, ctx.task.operators[node.slot].current_watermark, max_ts))


class SinkNode(ChainNode):
    """The last operator of a sink chain: writes to a sink writer (``model.sinks``), the task's
    ``operators[slot]``."""

    __slots__ = ("slot",)

    def __init__(self, name, slot: int):
        self.name = name
        self.slot = slot
        self.next = None

    def process(self, ctx, k, v, ts):
        ctx.task.operators[self.slot].write(ctx.external, k, v, ts)

    def watermark(self, ctx, ts):
        return None

    def end_input(self, ctx):
        return None

    def snapshot(self, ctx, checkpoint_id, snap):
        snap.operator[self.name] = ctx.task.operators[self.slot].snapshot_state(ctx.external, checkpoint_id)

    def notify_complete(self, ctx, checkpoint_id):
        ctx.task.operators[self.slot].notify_checkpoint_complete(ctx.external, checkpoint_id)


class RecordWriterOutput(ChainNode):
    """``RecordWriterOutput`` of one result partition with its partitioner (the subclasses:
    the RecordWriter's ``ChannelSelector``): ``process`` routes a record to the channel(s) the
    partitioner selects; watermarks are broadcast to every channel of the partition.
    ``channels``: the partition's channel ids, in subpartition order."""

    __slots__ = ("channels",)

    def __init__(self, channels):
        self.name = "<output>"
        self.next = None
        self.channels = tuple(channels)

    def watermark(self, ctx, ts):
        wm = _WM_CACHE.get(ts) or _watermark(ts)
        for c in self.channels:
            ctx.queues[c].append(wm)

    def end_input(self, ctx):
        return None


class ForwardPartitioner(RecordWriterOutput):
    """``ForwardPartitioner`` (and any partition with one channel): everything to its channel."""

    __slots__ = ("channel",)

    def __init__(self, channels):
        super().__init__(channels)
        self.channel = channels[0]

    def process(self, ctx, k, v, ts):
        ctx.queues[self.channel].append((k, v, ts))


class RebalancePartitioner(RecordWriterOutput):
    """``RebalancePartitioner`` (its first position drawn at random by the deployment, then round
    robin) and ``RescalePartitioner`` (first position -1: round robin from channel 0) of one
    RecordWriter. The position (Flink's ``nextChannelToSendTo``) is the task's
    ``next_channel[slot]``."""

    __slots__ = ("slot",)

    def __init__(self, channels, slot: int):
        super().__init__(channels)
        self.slot = slot

    def process(self, ctx, k, v, ts):
        positions = ctx.task.next_channel
        i = positions[self.slot] + 1
        if i >= len(self.channels):
            i = 0
        positions[self.slot] = i
        ctx.queues[self.channels[i]].append((k, v, ts))


class BroadcastPartitioner(RecordWriterOutput):
    """``BroadcastPartitioner``: every record to every channel."""

    __slots__ = ()

    def process(self, ctx, k, v, ts):
        rec = (k, v, ts)
        for c in self.channels:
            ctx.queues[c].append(rec)


@value  # a memo of a pure function: every copy shares it
@beside_state
class _Memo:
    """``key -> assign_channel(key)``, filled as keys come: not state."""

    __slots__ = ("known",)

    def __init__(self):
        self.known: dict = {}


class KeyGroupStreamPartitioner(RecordWriterOutput):
    """``KeyGroupStreamPartitioner``: the channel of the subtask whose KeyGroupRange holds the
    record's key group (``assign_channel(key)``, memoized beside the state)."""

    __slots__ = ("assign_channel", "memo")

    def __init__(self, channels, assign_channel):
        super().__init__(channels)
        self.assign_channel = assign_channel
        self.memo = _Memo()

    def process(self, ctx, k, v, ts):
        known = self.memo.known
        i = known.get(k)
        if i is None:
            i = known[k] = self.assign_channel(k)
        ctx.queues[self.channels[i]].append((k, v, ts))


class Fanout(ChainNode):
    """An operator with several outputs (chained operators and/or result partitions)."""

    __slots__ = ("outputs",)

    def __init__(self, outputs):
        self.name = "<fanout>"
        self.next = None
        self.outputs = tuple(outputs)

    def process(self, ctx, k, v, ts):
        for o in self.outputs:
            o.process(ctx, k, v, ts)

    def watermark(self, ctx, ts):
        for o in self.outputs:
            o.watermark(ctx, ts)

    def end_input(self, ctx):
        for o in self.outputs:
            o.end_input(ctx)


class Discard(ChainNode):
    """The output of an operator that has none (a sink without a sink node, never in practice)."""

    __slots__ = ()

    def __init__(self):
        self.name = "<discard>"
        self.next = None

    def process(self, ctx, k, v, ts):
        return None

    def watermark(self, ctx, ts):
        return None

    def end_input(self, ctx):
        return None


class TaskOutput:
    """Events (watermark status, EndOfPartition) go to every output channel; checkpoint
    barriers and cancel markers only to pipelined ones (``barrier_channels``): a blocking
    partition is consumed after its producer finished and carries no barriers. Channels by
    id; the queues are handed with each call."""

    __slots__ = ("channels", "barrier_channels")

    def __init__(self, channels, barrier_channels):
        self.channels = tuple(channels)
        self.barrier_channels = tuple(barrier_channels)

    def emit(self, ctx, event):
        for c in self.channels:
            ctx.queues[c].append(event)

    def emit_barrier(self, ctx, event):
        for c in self.barrier_channels:
            ctx.queues[c].append(event)


class SourceReader:
    """A source subtask's reader (``SourceOperator`` + ``SourceReaderBase``): its splits, their
    offsets and per-split watermark generation.

    ``splits`` is a list of ``[split_id, records, offset, generator]``; splits are read one
    after the other (one legal interleaving of a fetcher). Each split has its own
    ``BoundedOutOfOrdernessWatermarks``; the subtask's watermark is the minimum over the
    splits that are not finished (``WatermarkOutputMultiplexer``: a split's output is
    registered when the split is assigned and released when it finishes), so reading the
    splits in sequence never makes a record late. Watermark generators are not
    checkpointed (as in Flink): after a restore they start again from ``Long.MIN_VALUE``.
    """

    __slots__ = ("name", "splits", "current", "wm_output", "ended", "out_of_orderness")

    def __init__(self, name, splits, out_of_orderness, wm_output):
        self.name = name
        self.out_of_orderness = out_of_orderness
        self.wm_output = wm_output
        self.ended = False
        self.assign(splits)

    def assign(self, splits) -> None:
        """Read ``splits`` (``[split_id, records, offset, generator]`` each) from the first one
        with a record left. ``current`` is kept at that split (``len(splits)`` when none is
        left), so it is determined by the offsets: a guard asks it without a search."""
        self.splits = splits
        self.current = 0
        self._skip_finished()

    def _skip_finished(self) -> None:
        splits = self.splits
        i = self.current
        while i < len(splits) and splits[i][2] >= len(splits[i][1]):
            i += 1
        self.current = i

    def next_split(self) -> int:
        """The index of the split the next record comes from (``len(splits)`` if none is left)."""
        return self.current

    def has_next(self) -> bool:
        return self.current < len(self.splits)

    def next_record(self):
        s = self.splits[self.current]
        rec = s[1][s[2]]
        s[2] += 1
        s[3].on_event(rec[2])
        if s[2] >= len(s[1]):
            self._skip_finished()
        return rec

    def current_watermark(self) -> int:
        """min over unfinished splits of their generator's watermark (LONG_MIN if none)."""
        wm = None
        for s in self.splits:
            if s[2] < len(s[1]):
                w = s[3].on_periodic_emit()
                if wm is None or w < wm:
                    wm = w
        return LONG_MIN if wm is None else wm

    def snapshot_state(self):
        return [(s[0], s[2]) for s in self.splits]


@value  # never changed after the deployment: every copy shares it
@beside_state
class LocalIndex:
    """A task's input channels by id: ``index[channel id]`` is the channel's local index (what
    the task's position in the static ExecutionGraph determines: beside the state)."""

    __slots__ = ("of",)

    def __init__(self, channels):
        self.of = {c: i for i, c in enumerate(channels)}

    def __getitem__(self, channel: int) -> int:
        return self.of[channel]

    def get(self, channel: int, default=None):
        return self.of.get(channel, default)


@value  # fixed at deployment: every copy shares it
@attrs.frozen(slots=True, eq=False)
class TaskPlan:
    """The structure of one deployed subtask (Flink: what ``StreamTask`` builds from its
    ``StreamConfig`` and ``Environment`` at deployment -- the ``OperatorChain`` with its user
    functions and ``RecordWriterOutput``s, the input gates' channels): fixed until the task is
    deployed again, so never part of what a step changes. Every copy of a state shares it; a
    fingerprint reads it once (a value's form is cached).

    ``head``: the chain's first node (a source task's: its source's output), which holds the
    others; ``nodes``: the chain's operators (not its record writers) in the JobVertex's order;
    ``keyed`` and ``sinks``: its keyed operators' and sink's nodes; ``output``: the task's
    events output. Channels are global ids; ``barrier_channels`` are the *local* indices of
    the pipelined input channels (those that carry barriers), ``barrier_outputs`` the pipelined
    output channels, ``forced_aligned_outputs`` those whose barriers go aligned whatever the
    checkpoint's alignment (``RecordWriterOutput.supportsUnalignedCheckpoints`` false);
    ``side_outputs``: the parts beside the task that its chain writes to (``("external",)`` with
    a sink, ``("late",)`` with a keyed operator: ``model.actions`` footprints)."""

    head: object
    nodes: tuple
    output: TaskOutput
    input_channels: tuple
    output_channels: tuple
    local_of: LocalIndex
    barrier_channels: tuple
    barrier_outputs: tuple
    forced_aligned_outputs: frozenset
    keyed: tuple
    sinks: tuple
    side_outputs: tuple

    @classmethod
    def build(cls, blocking, head, nodes, output, input_channels, output_channels,
              unaligned_unsupported=frozenset()) -> "TaskPlan":
        """``blocking``: per channel id, whether it is a blocking partition's
        (``Channels.blocking``); ``unaligned_unsupported``: the output channels whose edge cannot
        carry unaligned barriers (``JobEdge.supports_unaligned_checkpoints`` false)."""
        nodes = tuple(nodes)
        barrier_outputs = tuple(c for c in output_channels if not blocking[c])
        keyed = tuple(n for n in nodes if type(n) is KeyedNode)
        sinks = tuple(n for n in nodes if type(n) is SinkNode)
        return cls(head=head, nodes=nodes, output=output, input_channels=tuple(input_channels),
                   output_channels=tuple(output_channels), local_of=LocalIndex(input_channels),
                   barrier_channels=tuple(i for i, c in enumerate(input_channels) if not blocking[c]),
                   barrier_outputs=barrier_outputs,
                   forced_aligned_outputs=frozenset(c for c in barrier_outputs if c in unaligned_unsupported),
                   keyed=keyed, sinks=sinks,
                   side_outputs=((("external",),) if sinks else ()) + ((("late",),) if keyed else ()))


class StreamTask:
    """One running subtask's state: its operators' state (``operators``, by the position its
    plan's nodes name), its record writers' rebalance positions (``next_channel``), its input
    state (valve, barrier handler, unaligned persistence) and its flags. Its structure is
    ``plan`` (:class:`TaskPlan`). What the task *does* with an element, a trigger or a barrier
    is :class:`TaskContext`'s: the cluster hands the task, for one call, the network and the
    outbox it owns, so that the task holds neither (one owner each)."""

    __slots__ = (
        "id", "subtask", "config", "plan", "operators", "next_channel", "source",
        "valve", "handler", "status", "persisting",
        "input_cs", "pending_uc", "timer", "eop_seen", "acked", "late", "attempt",
        "last_triggered", "deferred",
        "backend", "out_of_order", "triggers", "aborted_triggers",
    )

    def __init__(self, config, subtask, plan: TaskPlan, operators, next_channel, source):
        """``operators``: the state of each stateful node of ``plan`` (a keyed operator, a sink
        writer), at its ``slot``; ``next_channel``: each rebalancing record writer's first
        position, at its ``slot``."""
        self.config = config
        self.subtask = subtask
        self.id = subtask.id
        self.plan = plan
        self.operators = list(operators)
        self.next_channel = list(next_channel)
        self.source = source
        self.deferred = None
        self.last_triggered = -1
        self.valve = None
        self.handler = None
        self.status = RUNNING
        self.persisting: dict[int, int] = {}
        self.input_cs: dict[int, list] = {}
        self.pending_uc: TaskSnapshot | None = None
        self.timer: tuple[int, int] | None = None
        self.eop_seen = 0
        #: the checkpoints this attempt acknowledged, as far as a later step reads them: the
        #: newest and those still pending (``Cluster._forget_acknowledgements`` drops the rest
        #: after each step)
        self.acked: set[int] = set()
        #: (checkpoint, newer checkpoint) if this attempt took a snapshot (its synchronous phase)
        #: after one of a newer checkpoint; None in a correct run
        self.out_of_order: tuple[int, int] | None = None
        self.late: list = []
        #: the CheckpointCoordinator's trigger RPCs in flight to this attempt, as the barriers
        #: they start (``Environment.trigger_delivery == "any_order"``; always empty "at_once")
        self.triggers: tuple = ()
        #: checkpoints notified aborted before their trigger reached this task
        #: (``SubtaskCheckpointCoordinatorImpl.abortedCheckpointIds``)
        self.aborted_triggers: tuple = ()
        #: the keyed state backend (``model.statebackend``) with RuntimeConfig.state_backend, else None
        self.backend = None

    @property
    def keyed_operators(self) -> dict:
        """The chain's keyed operators by name, in the JobVertex's order (what a keyed state
        backend snapshots)."""
        ops = self.operators
        return {n.name: ops[n.slot] for n in self.plan.keyed}

    @property
    def sink_writers(self) -> dict:
        """The chain's sink writers by their operator's name."""
        ops = self.operators
        return {n.name: ops[n.slot] for n in self.plan.sinks}

    @property
    def checkpoint_listener(self) -> bool:
        """Whether notifyCheckpointComplete changes anything in this task: an operator of its
        chain (a two-phase-commit sink) or its state backend (RocksDB's, confirming uploads)
        acts on it. The cluster sends the notification only to such a task (``Cluster``)."""
        ops = self.operators
        return any(ops[n.slot].checkpoint_listener for n in self.plan.sinks) or (
            self.backend is not None and self.backend.checkpoint_listener)

    def with_unaligned_supported(self, barrier: CheckpointBarrier) -> CheckpointBarrier:
        """``CheckpointOptions.withUnalignedSupported``, which ``checkpointState`` applies to a
        FORCED_ALIGNED checkpoint once its inputs are aligned ("revert it here so that it can
        jump over output data"): unaligned again, or aligned with a timeout. Flink keeps the
        timeout in the forced options; the model reads it from the job's configuration, which
        is where the coordinator took it from."""
        if self.config.barrier_mode == "unaligned":
            return CheckpointBarrier(barrier.id, barrier.timestamp, savepoint=barrier.savepoint, unaligned=True)
        return CheckpointBarrier(barrier.id, barrier.timestamp, savepoint=barrier.savepoint)

    # -- the trigger RPC ------------------------------------------------------------------
    def trigger_verdict(self, checkpoint_id: int) -> str:
        """What ``SubtaskCheckpointCoordinatorImpl.checkpointState`` does with the trigger of
        ``checkpoint_id`` before anything else: TRIGGER_OLDER when this task already took
        this or a newer checkpoint (``lastCheckpointId >= id``: "Out of order checkpoint
        barrier (aborted previously?)"), TRIGGER_ABORTED when the checkpoint was notified
        aborted before its trigger came (``checkAndClearAbortedStatus``), else TRIGGER_TAKEN."""
        if checkpoint_id <= self.last_triggered:
            return TRIGGER_OLDER
        if checkpoint_id in self.aborted_triggers:
            return TRIGGER_ABORTED
        return TRIGGER_TAKEN

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """``notifyCheckpointAbortAsync`` of a checkpoint whose trigger is still in flight to this
        task: remembered only when this task has not taken it or a newer one
        (``SubtaskCheckpointCoordinatorImpl.notifyCheckpoint``: "only record checkpoints that
        have not triggered on task side")."""
        if checkpoint_id > self.last_triggered and checkpoint_id not in self.aborted_triggers:
            self.aborted_triggers = self.aborted_triggers + (checkpoint_id,)


class TaskContext:
    """One call into a running task (Flink: the ``StreamTask`` invokable with its
    ``Environment``): the task's state (``task``), the network it reads and writes (``net``:
    ``Channels``; ``queues`` its channel queues), the outbox it sends its messages to
    (``outbox``: ``model.messages``, delivered by the cluster after the step), the external
    system its sinks write to and the cluster's lists of late records and skipped windows. The
    cluster makes one per call (``Cluster.context``) and nobody keeps it: it is handed down the
    chain, and the task's barrier handler, valve and source output are handed it as their
    ``ctx``/``output``. Invariant: the state holds no link from a task to any of these."""

    __slots__ = ("task", "net", "queues", "outbox", "external", "late", "skips")

    def __init__(self, task: StreamTask, net, outbox: list, external, late: list, skips: list):
        self.task = task
        self.net = net
        #: ``net.queues``, handed down the chain with the context
        self.queues = net.queues
        self.outbox = outbox
        #: the external system the chain's sinks write to (``model.sinks.ExternalSystem``)
        self.external = external
        #: the records a keyed operator dropped as late, and the windows a sliding window
        #: operator skipped as late (``Cluster.late``, ``Cluster.window_skips``)
        self.late = late
        self.skips = skips

    @property
    def barrier_channels(self) -> tuple:
        return self.task.plan.barrier_channels

    # -- the task as its valve's (or its source reader's) ``PushingAsyncDataInput.DataOutput``:
    # passed to each call, never held by them (no reference cycle through the task's parts).
    # Watermarks go straight to the head of the chain; the status goes to the task's outputs.
    def emit_watermark(self, ts: int) -> None:
        self.task.plan.head.watermark(self, ts)

    def emit_watermark_status(self, idle: bool) -> None:
        self.task.plan.output.emit(self, IDLE if idle else ACTIVE)

    # -- snapshots --------------------------------------------------------------------------
    def take_snapshot(self, checkpoint_id: int) -> TaskSnapshot:
        st = self.task.subtask
        snap = TaskSnapshot(checkpoint_id, st.id, st.job_vertex, st.subtask_index,
                            finished=self.task.status == FINISHED)
        if self.task.source is not None:
            snap.operator[self.task.source.name] = self.task.source.snapshot_state()
        for node in self.task.plan.nodes:
            node.snapshot(self, checkpoint_id, snap)
        net = self.net
        received = net.received
        for c in self.task.plan.input_channels:
            snap.received[c] = received[c]
        chans = net.queues
        blocking = net.blocking
        for c in self.task.plan.output_channels:
            if blocking[c]:
                snap.partition[c] = tuple(e for e in chans[c] if type(e) is not EndOfPartitionEvent)
                continue
            snap.sent[c] = received[c] + sum(1 for e in chans[c] if type(e) is tuple)
        if self.task.backend is not None:
            self.task.backend.sync_phase(snap)  # the synchronous phase; FinishAsyncSnapshot runs the other
        return snap

    # -- barrier handler context ---------------------------------------------------------
    def block(self, ch: int) -> None:
        self.net.blocked[self.task.plan.input_channels[ch]] = True

    def resume(self, ch: int) -> None:
        self.net.blocked[self.task.plan.input_channels[ch]] = False

    def resume_all(self) -> None:
        blocked = self.net.blocked
        for c in self.task.plan.input_channels:
            blocked[c] = False

    def trigger(self, barrier: CheckpointBarrier, unaligned: bool) -> None:
        """Snapshot the chain and emit ``barrier`` downstream (``triggerCheckpointOnBarrier``)."""
        if barrier.id <= self.task.last_triggered and not snapshots_obsolete_barriers():
            # SubtaskCheckpointCoordinatorImpl: "Out of order checkpoint barrier (aborted
            # previously?)": an older checkpoint than one already taken is declined
            self.abort(barrier.id, "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER")
            return
        if barrier.forced_aligned:
            barrier = self.task.with_unaligned_supported(barrier)
            unaligned = barrier.unaligned
        self.perform_checkpoint(barrier, unaligned)

    def trigger_checkpoint(self, barrier: CheckpointBarrier) -> str:
        """The CheckpointCoordinator's trigger RPC reaches this task (``Task.triggerCheckpointBarrier``
        -> ``StreamTask.triggerCheckpointAsync`` -> ``performCheckpoint`` ->
        ``SubtaskCheckpointCoordinatorImpl.checkpointState``); returns :meth:`trigger_verdict`'s
        answer, and acts on it as Flink 2.3 does:

        * TRIGGER_OLDER: nothing but forgetting an abort notification of that checkpoint: no
          snapshot, no barrier, no CancelCheckpointMarker and no decline (the checkpoint stays
          pending until a newer one subsumes it, a task declines it or it expires);
        * TRIGGER_ABORTED: ``lastCheckpointId`` becomes the checkpoint's id and a
          CancelCheckpointMarker goes downstream "to avoid downstream back-pressure due to
          checkpoint barrier align"; no snapshot, no decline (the coordinator already aborted it);
        * TRIGGER_TAKEN: the snapshot (:meth:`perform_checkpoint`)."""
        cid = barrier.id
        verdict = self.task.trigger_verdict(cid)
        if cid in self.task.aborted_triggers:
            self.task.aborted_triggers = tuple(x for x in self.task.aborted_triggers if x != cid)
        if verdict is TRIGGER_OLDER:
            return verdict
        if verdict is TRIGGER_ABORTED:
            self.task.last_triggered = cid
            self.task.plan.output.emit_barrier(self, CancelCheckpointMarker(cid))
            return verdict
        self.perform_checkpoint(barrier, barrier.unaligned)
        return verdict

    def perform_checkpoint(self, barrier: CheckpointBarrier, unaligned: bool) -> None:
        """Take checkpoint ``barrier.id``: the snapshot of the chain, ``barrier`` downstream."""
        self.task.last_triggered = barrier.id
        snap = self.take_snapshot(barrier.id)
        forced = self.task.plan.forced_aligned_outputs
        if unaligned:
            keep = persists_channel_state()
            net = self.net
            for c in self.task.plan.barrier_outputs:
                ch = net.queues[c]
                if c in forced:  # RecordWriterOutput: FORCED_ALIGNED, behind the data (no priority)
                    ch.append(barrier.with_unaligned_unsupported())
                    continue
                n = net.prio[c]
                overtaken = [e for i, e in enumerate(ch) if i >= n and type(e) is tuple]
                if keep and overtaken:
                    snap.output_channel_state[c] = tuple(overtaken)
                ch.insert(n, barrier)
                net.prio[c] = n + 1
                if net.network:
                    net.add_priority_event(c)  # a priority event crosses the network at once
            if self.task.plan.barrier_channels and (self.task.persisting or self.task.handler.pending):
                self.task.pending_uc = snap
                if not self.task.persisting:
                    self.channel_state_complete(barrier.id)
                return
            self.acknowledge_checkpoint(snap)
        else:
            out = barrier
            if self.task.config.timeoutable_barriers and not barrier.savepoint:
                out = CheckpointBarrier(barrier.id, barrier.timestamp, savepoint=barrier.savepoint,
                                        unaligned=False, timeoutable=True)
            if forced and out.timeoutable:
                queues = self.net.queues
                for c in self.task.plan.barrier_outputs:
                    queues[c].append(out.with_unaligned_unsupported() if c in forced else out)
            else:
                self.task.plan.output.emit_barrier(self, out)
            self.acknowledge_checkpoint(snap)

    def run_deferred(self) -> None:
        """Take the snapshot that the FLINK-17568 seam deferred past one more element."""
        barrier = self.task.deferred
        if barrier is not None:
            self.task.deferred = False  # taken; the next unaligned barrier defers again once reset
            self.trigger(barrier, True)
            self.task.deferred = None

    def abort(self, checkpoint_id: int, reason: str) -> None:
        if self.task.deferred and self.task.deferred.id <= checkpoint_id:
            self.task.deferred = None  # the deferred (FLINK-17568) snapshot of an aborted checkpoint is dropped
        self.task.timer = None
        self.task.plan.output.emit_barrier(self, CancelCheckpointMarker(checkpoint_id))
        self.outbox.append(DeclineCheckpoint(self.task.id, checkpoint_id, reason))

    def acknowledge_checkpoint(self, snap: TaskSnapshot) -> None:
        """``CheckpointResponder.acknowledgeCheckpoint``: send the snapshot to the JobMaster."""
        newer = max(self.task.acked, default=-1)
        if newer > snap.checkpoint_id and self.task.out_of_order is None:
            self.task.out_of_order = (snap.checkpoint_id, newer)
        self.task.acked.add(snap.checkpoint_id)
        if self.task.backend is not None:
            self.task.backend.ready(snap)  # acknowledged after the asynchronous phase (FinishAsyncSnapshot)
            return
        self.outbox.append(AcknowledgeCheckpoint(self.task.id, snap.checkpoint_id, snap))

    def start_persisting(self, checkpoint_id: int, channels) -> None:
        if not persists_channel_state():
            return
        for ch in channels:
            self.task.persisting[ch] = checkpoint_id
            self.task.input_cs.setdefault(self.task.plan.input_channels[ch], [])

    def stop_persisting(self, ch: int) -> None:
        self.task.persisting.pop(ch, None)

    def stop_persisting_all(self) -> None:
        self.task.persisting.clear()
        self.task.input_cs.clear()
        self.task.pending_uc = None

    def channel_state_complete(self, checkpoint_id: int) -> None:
        self.task.persisting.clear()
        snap = self.task.pending_uc
        self.task.pending_uc = None
        if snap is None or snap.checkpoint_id != checkpoint_id:
            self.task.input_cs.clear()
            return
        for c, recs in self.task.input_cs.items():
            if recs:
                snap.input_channel_state[c] = tuple(recs)
        self.task.input_cs.clear()
        self.acknowledge_checkpoint(snap)

    def register_timer(self, checkpoint_id: int, deadline: int) -> None:
        self.task.timer = (checkpoint_id, deadline)

    # -- input ----------------------------------------------------------------------------
    def process_event(self, e, c: int, now: int) -> None:
        """Everything but records arriving on global channel ``c`` (``now``: the logical clock)."""
        ch = self.task.plan.local_of[c]
        t = type(e)
        if t is Watermark:
            self.task.valve.input_watermark(e.timestamp, ch, self)
        elif t is WatermarkStatus:
            self.task.valve.input_watermark_status(e.idle, ch, self)
        elif t is CheckpointBarrier:
            if not e.unaligned and self.task.config.checkpointing_mode == "exactly_once":
                self.net.blocked[c] = True
            self.task.handler.process_barrier(self, e, ch, now)
        elif t is CancelCheckpointMarker:
            if isinstance(self.task.handler, CheckpointBarrierTracker):
                self.task.handler.process_cancellation(self, e.checkpoint_id, ch)
            else:
                self.task.handler.process_cancellation(self, e.checkpoint_id)
        elif t is EndOfPartitionEvent:
            self.task.eop_seen += 1
            if not self.net.blocking[c]:
                # the barrier handler counts only the channels that carry barriers
                self.task.handler.process_end_of_partition(self, ch, now)
            if self.task.eop_seen == len(self.task.plan.input_channels):
                self.finish()

    def finish(self) -> None:
        """All inputs ended (``endInput``): flush, forward EndOfPartition, ack pending checkpoints."""
        if self.task.status != RUNNING:
            return
        self.task.plan.head.end_input(self)
        self.task.status = FINISHED
        self.task.plan.output.emit(self, END_OF_PARTITION)
        self.outbox.append(TaskFinished(self.task.id))




@seams.override("FLINK-17568", TaskContext, "trigger",
                "unaligned: the task processes one more input element after the barrier was announced and "
                "before it snapshots, so a post-barrier record enters the cut")
def _trigger_flink_17568(self, barrier: CheckpointBarrier, unaligned: bool) -> None:
    t = self.task
    if barrier.id > t.last_triggered and unaligned and t.plan.barrier_channels and t.deferred is None:
        # the bug: the snapshot is deferred until the task processed one more element
        # (``DeliverKind.apply`` runs ``run_deferred`` after it)
        t.deferred = barrier
        return
    seams.original("FLINK-17568")(self, barrier, unaligned)


@seams.override("unaligned-drops-channel-state", sys.modules[__name__], "persists_channel_state",
                "unaligned checkpoints write no channel state: the in-flight data a barrier overtakes is "
                "in no snapshot")
def _drops_channel_state() -> bool:
    return False


@seams.override("unchecked-trigger-order", StreamTask, "trigger_verdict",
                "a task takes a checkpoint trigger without comparing its id to the newest checkpoint it took: a "
                "late trigger of an older checkpoint is snapshotted after the newer one")
def _trigger_verdict_unchecked(self, checkpoint_id: int) -> str:
    # the bug: no ``lastCheckpointId >= id`` check; an abort notification is still honoured
    return TRIGGER_ABORTED if checkpoint_id in self.aborted_triggers else TRIGGER_TAKEN
