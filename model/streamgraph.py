"""StreamGraph: the declarative job spec (Flink's ``StreamGraph`` / ``StreamNode`` / ``StreamEdge``).

Invariant upheld: a :class:`StreamGraph` that passed :meth:`StreamGraph.validate` is a DAG
whose every node and edge obeys the rules Flink enforces when it builds and schedules a
job (parallelism within ``(0, maxParallelism]``, ``maxParallelism <= 32768``, forward only
between equal parallelisms, keyed operators fed only by keyBy edges, co-location only
inside one slot sharing group, ...). Anything else raises :class:`model.errors.InvalidJobSpec`
naming the operator or edge and the rule.

Follows: ``org.apache.flink.streaming.api.graph.StreamGraph``/``StreamNode``/``StreamEdge``
and ``StreamGraphGenerator.determineSlotSharingGroup``.

Leaves out: user-defined functions (operators take a *named* function from a small
deterministic library, see ``model.functions``), side-output edges, iterations, two-input
operators with distinct input types (several inputs of one operator form a *union*),
``ForwardForConsecutiveHashPartitioner`` and dynamic graphs.
"""

from __future__ import annotations

import attrs

#: Operator kinds the model knows.
OPERATOR_KINDS = ("source", "map", "filter", "keyed_aggregate", "window", "sink")
#: Operator kinds that need keyed input (every input edge is a keyBy / ``hash`` edge).
KEYED_KINDS = ("keyed_aggregate", "window")
#: Partitioners (Flink: ForwardPartitioner, KeyGroupStreamPartitioner, RebalancePartitioner,
#: RescalePartitioner, BroadcastPartitioner).
PARTITIONERS = ("forward", "hash", "rebalance", "rescale", "broadcast")
#: Partitioners wired POINTWISE in the ExecutionGraph; the others are ALL_TO_ALL.
POINTWISE_PARTITIONERS = ("forward", "rescale")
#: Exchange modes (StreamExchangeMode PIPELINED / BATCH). ``blocking`` gives a BLOCKING result partition.
EXCHANGE_MODES = ("pipelined", "blocking")
#: ChainingStrategy values.
CHAINING_STRATEGIES = ("ALWAYS", "HEAD", "NEVER", "HEAD_WITH_SOURCES")
#: Aggregates of keyed_aggregate and window operators.
AGGREGATES = ("count", "sum")
#: Sink kinds: two-phase commit (TwoPhaseCommitSinkFunction / SinkWriter+Committer),
#: idempotent upsert by key, plain append (known unsafe under failures).
SINK_KINDS = ("two_phase_commit", "upsert", "append")
#: Flink's UPPER_BOUND_MAX_PARALLELISM (1 << 15), inclusive.
UPPER_BOUND_MAX_PARALLELISM = 1 << 15
#: Name of Flink's default slot sharing group.
DEFAULT_SLOT_SHARING_GROUP = "default"


@attrs.frozen(slots=True, kw_only=True)
class OperatorSpec:
    """One StreamNode.

    ``max_parallelism=None`` means *auto-configured* (``computeDefaultMaxParallelism``):
    only then may a restore adopt a checkpoint's different max parallelism.
    ``slot_sharing_group=None`` means "not set by the user" (Flink's default rules apply).
    ``chaining_strategy=None`` means the kind's default: ``HEAD`` for sources, ``ALWAYS`` else.
    """

    name: str
    kind: str
    parallelism: int = 1
    max_parallelism: int | None = None
    slot_sharing_group: str | None = None
    co_location_group: str | None = None
    chaining_strategy: str | None = None
    #: map / filter: a function name from ``model.functions`` (e.g. ``"identity"``, ``"add:3"``).
    function: str | None = None
    #: keyed_aggregate / window: ``"count"`` or ``"sum"``.
    aggregate: str | None = None
    #: window: size, slide (None = tumbling), offset and allowed lateness, in event-time units.
    window_size: int | None = None
    window_slide: int | None = None
    window_offset: int = 0
    allowed_lateness: int = 0
    #: sink: one of SINK_KINDS.
    sink_kind: str | None = None
    #: source: BoundedOutOfOrdernessWatermarks' out-of-orderness bound.
    watermark_out_of_orderness: int = 0

    @property
    def effective_chaining_strategy(self) -> str:
        if self.chaining_strategy is not None:
            return self.chaining_strategy
        return "HEAD" if self.kind == "source" else "ALWAYS"


@attrs.frozen(slots=True, kw_only=True)
class EdgeSpec:
    """One StreamEdge: ``source`` -> ``target`` with a partitioner and an exchange mode."""

    source: str
    target: str
    partitioner: str = "forward"
    exchange_mode: str = "pipelined"

    @property
    def label(self) -> str:
        return f"edge '{self.source}' -> '{self.target}'"


@attrs.frozen(slots=True, kw_only=True)
class StreamGraph:
    """The job spec: operators, edges and the graph-wide switches.

    ``all_vertices_in_same_slot_sharing_group_by_default`` mirrors
    ``StreamGraph.isAllVerticesInSameSlotSharingGroupByDefault`` (true for streaming jobs).
    """

    name: str = "job"
    operators: tuple[OperatorSpec, ...] = ()
    edges: tuple[EdgeSpec, ...] = ()
    chaining_enabled: bool = True
    all_vertices_in_same_slot_sharing_group_by_default: bool = True
