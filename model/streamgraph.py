"""StreamGraph: the declarative job spec (Flink's ``StreamGraph`` / ``StreamNode`` / ``StreamEdge``).

Invariant upheld: a :class:`StreamGraph` that passed :meth:`StreamGraph.validate` is a DAG
whose every node and edge obeys the rules Flink enforces when it builds and schedules a
job (parallelism within ``(0, maxParallelism]``, ``maxParallelism <= 32768``, forward only
between equal parallelisms, keyed operators fed only by keyBy edges, ...). Anything else
raises :class:`model.errors.InvalidJobSpec` naming the operator or edge and the rule.
The one rule that needs the operator chains, co-location only inside one slot sharing
group (``StreamingJobGraphGenerator.setCoLocation`` reads the chain heads only), is checked
where the chains are built, by ``model.jobgraph.build_job_graph``; ``compile_job_graph``
and ``compile_stream_graph`` check both. This module does not import ``model.jobgraph``.

Follows: ``org.apache.flink.streaming.api.graph.StreamGraph``/``StreamNode``/``StreamEdge``
and ``StreamGraphGenerator.determineSlotSharingGroup``; the rules come from
``OperatorValidationUtils`` (parallelism, max parallelism), ``StreamGraph.addEdgeInternal``
(forward needs equal parallelism), ``KeyedStream`` (keyed operators sit behind keyBy),
``SchedulerBase``/``ExecutionJobVertex`` (parallelism <= max parallelism) and the window
assigners' constructors (``TumblingEventTimeWindows``: ``|offset| < size``;
``SlidingEventTimeWindows``: ``|offset| < slide and size > 0``). The full rule table is in
``docs/job-specs.md``.

An edge without a partitioner in a file or the builder gets Flink's default
(``StreamGraph.addEdgeInternal``): forward when both ends have the same parallelism,
rebalance otherwise.

Leaves out: user-defined functions (operators take a *named* function from a small
deterministic library, see ``model.functions``), side-output edges, iterations, two-input
operators with distinct input types (several inputs of one operator form a *union*),
``ForwardForConsecutiveHashPartitioner`` and dynamic graphs, default parallelism (every
operator states its parallelism). Deliberately stricter than Flink: two edges between the
same pair of operators and parameters that do not apply to an operator's kind (e.g. a
``window_size`` on a map) are rejected, because in a declarative spec they are mistakes.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Iterable, Mapping, Sequence

import attrs
import networkx as nx

from model import functions
from model.errors import InvalidJobSpec
from model.inputfiles import INT_MAX, INT_MIN, InputError, check_schema, int_schema, read_json_or_toml, short, string_schema
from model.keygroups import compute_default_max_parallelism

#: Operator kinds the model knows.
OPERATOR_KINDS = ("source", "map", "filter", "keyed_aggregate", "window", "sink")
#: Operator kinds that need keyed input (every input edge is a keyBy / ``hash`` edge).
KEYED_KINDS = ("keyed_aggregate", "window")
#: Partitioners (Flink: ForwardPartitioner, KeyGroupStreamPartitioner, RebalancePartitioner,
#: RescalePartitioner, BroadcastPartitioner).
PARTITIONERS = ("forward", "hash", "rebalance", "rescale", "broadcast")
#: Partitioners wired POINTWISE in the ExecutionGraph; the others are ALL_TO_ALL.
POINTWISE_PARTITIONERS = ("forward", "rescale")
#: Partitioners that cannot carry an unaligned checkpoint in Flink 2.3: the pointwise ones and
#: broadcast (``StreamPartitioner.isSupportsUnalignedCheckpoint`` is false when ``isPointwise()``
#: or ``isBroadcast()``).
UNALIGNED_UNSUPPORTED_PARTITIONERS = POINTWISE_PARTITIONERS + ("broadcast",)
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


def discard_graph(g) -> None:
    """Empty a temporary networkx graph once used: its cached views (``in_degree``, ``edges``
    ...) refer back to it, so a dropped graph would wait for the cyclic garbage collector, which
    the explorer leaves off (``properties.explore``)."""
    g.__dict__.clear()


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
    #: the job set no partitioner: ``partitioner`` is Flink's default for the parallelisms the
    #: graph was generated with (``StreamGraph.addEdgeInternal``: forward when both ends have
    #: the same parallelism, else rebalance), chosen again whenever the job is resubmitted with
    #: other parallelisms (``model.rescaling.rescale_graph``). A job file's edge without a
    #: ``partitioner`` key has it; its dict form leaves the key out again.
    default_partitioner: bool = False

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
    #: ``pipeline.operator-chaining.chain-operators-with-different-max-parallelism``
    #: (default true in Flink): when false, chaining also needs equal *configured* max parallelism.
    chain_operators_with_different_max_parallelism: bool = True

    # -- look-ups ---------------------------------------------------------------------------

    def operator(self, name: str) -> OperatorSpec:
        for op in self.operators:
            if op.name == name:
                return op
        raise KeyError(name)

    def operators_by_name(self) -> dict[str, OperatorSpec]:
        return {op.name: op for op in self.operators}

    def in_edges(self, name: str) -> tuple[EdgeSpec, ...]:
        return tuple(e for e in self.edges if e.target == name)

    def out_edges(self, name: str) -> tuple[EdgeSpec, ...]:
        return tuple(e for e in self.edges if e.source == name)

    def supports_unaligned_checkpoints(self, edge: EdgeSpec) -> bool:
        """``StreamEdge.supportsUnalignedCheckpoints()`` as ``StreamGraphGenerator.generate``
        leaves it: false for *every* input edge of a node that has one input edge whose
        partitioner cannot carry an unaligned checkpoint (:data:`UNALIGNED_UNSUPPORTED_PARTITIONERS`).
        Such an edge's producer sends each barrier aligned (``RecordWriterOutput.broadcastEvent``:
        ``CheckpointOptions.withUnalignedUnsupported``, not a priority event)."""
        return all(e.partitioner not in UNALIGNED_UNSUPPORTED_PARTITIONERS for e in self.in_edges(edge.target))

    def topological_order(self) -> tuple[str, ...]:
        """Operator names in topological order, ties broken by declaration order."""
        pos = {op.name: i for i, op in enumerate(self.operators)}
        g = nx.DiGraph()
        g.add_nodes_from(pos)
        g.add_edges_from((e.source, e.target) for e in self.edges)
        order = tuple(nx.lexicographical_topological_sort(g, key=pos.__getitem__))
        discard_graph(g)
        return order

    def effective_max_parallelism(self, name: str) -> int:
        return effective_max_parallelism(self.operator(name))

    # -- validation -------------------------------------------------------------------------

    def validate(self) -> "StreamGraph":
        """Raise :class:`InvalidJobSpec` for the first broken rule; return ``self`` when valid.

        Rules are checked in the order of the table in ``docs/job-specs.md``; operators and
        edges are visited in declaration order, so the reported violation is deterministic.
        The co-location rule (the table's last) needs the chains and is checked by
        ``model.jobgraph.build_job_graph`` instead (``compile_job_graph`` does both).
        """
        _validate(self)
        return self


# ------------------------------------------------------------------------------------------
# Max parallelism and slot sharing groups
# ------------------------------------------------------------------------------------------


def effective_max_parallelism(op: OperatorSpec) -> int:
    """The configured max parallelism, else ``computeDefaultMaxParallelism(parallelism)``
    (what ``SchedulerBase`` gives a vertex whose max parallelism was not set)."""
    if op.max_parallelism is not None:
        return op.max_parallelism
    return compute_default_max_parallelism(op.parallelism)


def resolve_slot_sharing_groups(g: StreamGraph) -> dict[str, str]:
    """``StreamGraphGenerator.determineSlotSharingGroup`` for every operator.

    A group set by the user wins; otherwise, if every input has the same (resolved) group,
    that group; otherwise (inputs disagree, or no inputs) ``"default"``. Operators are
    resolved in topological order so inputs are always resolved first. Needs an acyclic
    graph whose edges name existing operators.
    """
    ops = g.operators_by_name()
    inputs: dict[str, list[str]] = {name: [] for name in ops}
    for e in g.edges:
        inputs[e.target].append(e.source)
    resolved: dict[str, str] = {}
    for name in g.topological_order():
        op = ops[name]
        if op.slot_sharing_group is not None:
            resolved[name] = op.slot_sharing_group
            continue
        group: str | None = None
        for src in inputs[name]:
            cand = resolved[src]
            if group is None:
                group = cand
            elif group != cand:
                group = DEFAULT_SLOT_SHARING_GROUP
                break
        resolved[name] = DEFAULT_SLOT_SHARING_GROUP if group is None else group
    return {op.name: resolved[op.name] for op in g.operators}


# ------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------

#: Which optional parameters apply to which kinds (others must stay at their defaults).
_KIND_PARAMS: dict[str, tuple[str, ...]] = {
    "source": ("watermark_out_of_orderness",),
    "map": ("function",),
    "filter": ("function",),
    "keyed_aggregate": ("aggregate",),
    "window": ("aggregate", "window_size", "window_slide", "window_offset", "allowed_lateness"),
    "sink": ("sink_kind",),
}
_KIND_SPECIFIC_DEFAULTS: dict[str, Any] = {
    "function": None,
    "aggregate": None,
    "window_size": None,
    "window_slide": None,
    "window_offset": 0,
    "allowed_lateness": 0,
    "sink_kind": None,
    "watermark_out_of_orderness": 0,
}


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _op_subject(name: object) -> str:
    return f"operator {short(name)}"


def _validate_operator(op: OperatorSpec) -> None:
    subj = _op_subject(op.name)
    if op.kind not in OPERATOR_KINDS:
        raise InvalidJobSpec(subj, f"unknown operator kind {op.kind!r} (known: {', '.join(OPERATOR_KINDS)})")
    if not _is_int(op.parallelism):
        raise InvalidJobSpec(subj, f"parallelism must be an integer, not {op.parallelism!r}")
    if op.parallelism < 1:
        raise InvalidJobSpec(
            subj, f"parallelism must be at least 1, not {op.parallelism} (Flink: The parallelism of an operator must be at least 1)"
        )
    if op.max_parallelism is not None:
        if not _is_int(op.max_parallelism):
            raise InvalidJobSpec(subj, f"max_parallelism must be an integer, not {op.max_parallelism!r}")
        if not 1 <= op.max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
            raise InvalidJobSpec(
                subj,
                f"max parallelism must be between 1 and {UPPER_BOUND_MAX_PARALLELISM}, not {op.max_parallelism}",
            )
        if op.parallelism > op.max_parallelism:
            raise InvalidJobSpec(
                subj,
                f"parallelism {op.parallelism} is higher than the max parallelism {op.max_parallelism}",
            )
    elif op.parallelism > UPPER_BOUND_MAX_PARALLELISM:
        raise InvalidJobSpec(
            subj,
            f"parallelism {op.parallelism} is higher than the max parallelism {UPPER_BOUND_MAX_PARALLELISM}"
            " (the upper bound of the default max parallelism)",
        )
    if op.chaining_strategy is not None and op.chaining_strategy not in CHAINING_STRATEGIES:
        raise InvalidJobSpec(
            subj,
            f"unknown chaining strategy {op.chaining_strategy!r} (known: {', '.join(CHAINING_STRATEGIES)})",
        )
    for attr in ("slot_sharing_group", "co_location_group"):
        v = getattr(op, attr)
        if v is not None and (not isinstance(v, str) or not v):
            raise InvalidJobSpec(subj, f"{attr} must be a non-empty string, not {v!r}")
    allowed = _KIND_PARAMS[op.kind]
    for attr, default in _KIND_SPECIFIC_DEFAULTS.items():
        if attr not in allowed and getattr(op, attr) != default:
            raise InvalidJobSpec(subj, f"parameter {attr!r} does not apply to a {op.kind} operator")
    if op.kind == "source":
        if not _is_int(op.watermark_out_of_orderness) or op.watermark_out_of_orderness < 0:
            raise InvalidJobSpec(
                subj, f"watermark_out_of_orderness must be an integer >= 0, not {op.watermark_out_of_orderness!r}"
            )
    elif op.kind in ("map", "filter"):
        if op.function is not None and not isinstance(op.function, str):
            raise InvalidJobSpec(subj, f"function must be a string, not {op.function!r}")
        (functions.map_function if op.kind == "map" else functions.filter_function)(op.function, subj)
    elif op.kind in KEYED_KINDS:
        if op.aggregate is None:
            raise InvalidJobSpec(subj, f"a {op.kind} operator needs 'aggregate' (one of {', '.join(AGGREGATES)})")
        if op.aggregate not in AGGREGATES:
            raise InvalidJobSpec(subj, f"unknown aggregate {op.aggregate!r} (known: {', '.join(AGGREGATES)})")
        if op.kind == "window":
            _validate_window(op, subj)
    elif op.kind == "sink":
        if op.sink_kind is None:
            raise InvalidJobSpec(subj, f"a sink needs 'sink_kind' (one of {', '.join(SINK_KINDS)})")
        if op.sink_kind not in SINK_KINDS:
            raise InvalidJobSpec(subj, f"unknown sink kind {op.sink_kind!r} (known: {', '.join(SINK_KINDS)})")


def _validate_window(op: OperatorSpec, subj: str) -> None:
    size, slide, offset = op.window_size, op.window_slide, op.window_offset
    if size is None:
        raise InvalidJobSpec(subj, "a window needs 'window_size'")
    for attr in ("window_size", "window_slide", "window_offset", "allowed_lateness"):
        v = getattr(op, attr)
        if v is not None and not _is_int(v):
            raise InvalidJobSpec(subj, f"{attr} must be an integer, not {v!r}")
    if slide is None:
        # TumblingEventTimeWindows(size, offset): abs(offset) >= size -> IllegalArgumentException
        if abs(offset) >= size:
            raise InvalidJobSpec(
                subj,
                f"tumbling window needs abs(offset) < size, got size={size} offset={offset}"
                " (Flink: TumblingEventTimeWindows parameters must satisfy abs(offset) < size)",
            )
    else:
        # SlidingEventTimeWindows(size, slide, offset): abs(offset) >= slide || size <= 0
        if abs(offset) >= slide or size <= 0:
            raise InvalidJobSpec(
                subj,
                f"sliding window needs abs(offset) < slide and size > 0, got size={size} slide={slide} offset={offset}"
                " (Flink: SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0)",
            )
    if op.allowed_lateness < 0:
        raise InvalidJobSpec(
            subj, f"allowed_lateness must be >= 0, not {op.allowed_lateness} (Flink: The allowed lateness cannot be negative)"
        )


def _validate(g: StreamGraph) -> None:
    job = f"job {g.name!r}"
    if not isinstance(g.operators, tuple) or not isinstance(g.edges, tuple):
        raise InvalidJobSpec(job, "operators and edges must be tuples")
    if not g.operators:
        raise InvalidJobSpec(job, "has no operators (Flink: No operators defined in streaming topology)")
    # -- operators on their own
    seen: set[str] = set()
    for i, op in enumerate(g.operators):
        if not isinstance(op, OperatorSpec):
            raise InvalidJobSpec(f"{job} operator #{i}", f"must be an OperatorSpec, not {type(op).__name__}")
        if not isinstance(op.name, str) or not op.name:
            raise InvalidJobSpec(f"{job} operator #{i}", f"name must be a non-empty string, not {op.name!r}")
        if op.name in seen:
            raise InvalidJobSpec(_op_subject(op.name), "duplicate operator name (names must be unique)")
        seen.add(op.name)
        _validate_operator(op)
    ops = g.operators_by_name()
    # -- edges on their own
    pairs: set[tuple[str, str]] = set()
    for i, e in enumerate(g.edges):
        if not isinstance(e, EdgeSpec):
            raise InvalidJobSpec(f"{job} edge #{i}", f"must be an EdgeSpec, not {type(e).__name__}")
        for end in (e.source, e.target):
            if end not in ops:
                raise InvalidJobSpec(e.label, f"names the missing operator {end!r} (dangling edge)")
        if e.partitioner not in PARTITIONERS:
            raise InvalidJobSpec(e.label, f"unknown partitioner {e.partitioner!r} (known: {', '.join(PARTITIONERS)})")
        if e.exchange_mode not in EXCHANGE_MODES:
            raise InvalidJobSpec(
                e.label, f"unknown exchange mode {e.exchange_mode!r} (known: {', '.join(EXCHANGE_MODES)})"
            )
        if (e.source, e.target) in pairs:
            raise InvalidJobSpec(e.label, "duplicate edge (at most one edge between two operators)")
        pairs.add((e.source, e.target))
    # -- cycles
    graph = nx.DiGraph()
    graph.add_nodes_from(ops)
    graph.add_edges_from(pairs)
    acyclic = nx.is_directed_acyclic_graph(graph)
    if acyclic:
        discard_graph(graph)
    else:
        cycle = nx.find_cycle(graph)
        first = cycle[0]
        path = " -> ".join([repr(u) for u, _ in cycle] + [repr(cycle[0][0])])
        raise InvalidJobSpec(f"edge {first[0]!r} -> {first[1]!r}", f"closes a cycle {path} (a job graph must be acyclic)")
    # -- structure
    for op in g.operators:
        ins = g.in_edges(op.name)
        outs = g.out_edges(op.name)
        subj = _op_subject(op.name)
        if op.kind == "source" and ins:
            raise InvalidJobSpec(subj, f"a source cannot have inputs ({ins[0].label})")
        if op.kind == "sink" and outs:
            raise InvalidJobSpec(subj, f"a sink cannot have outputs ({outs[0].label})")
        if op.kind != "source" and not ins:
            raise InvalidJobSpec(subj, f"a {op.kind} operator needs at least one input edge")
    for e in g.edges:
        up, down = ops[e.source], ops[e.target]
        if e.partitioner == "forward" and up.parallelism != down.parallelism:
            raise InvalidJobSpec(
                e.label,
                f"forward partitioning does not allow change of parallelism ({up.parallelism} -> {down.parallelism});"
                " use rescale, rebalance, hash or broadcast",
            )
        if down.kind in KEYED_KINDS and e.partitioner != "hash":
            raise InvalidJobSpec(
                e.label,
                f"keyed operator {down.name!r} ({down.kind}) needs every input to be a keyBy ('hash') edge,"
                f" not {e.partitioner!r}",
            )
    # -- co-location is not checked here: StreamingJobGraphGenerator.setCoLocation works on
    # JobVertices (chain heads) and their JobGraph-level slot sharing groups, so the chaining
    # (model.jobgraph.build_job_graph) checks it, once, when it builds the chains.


# ------------------------------------------------------------------------------------------
# Builder
# ------------------------------------------------------------------------------------------


def default_partitioner(up_parallelism: int, down_parallelism: int) -> str:
    """Flink's choice when no partitioner is set: forward if parallelisms match, else rebalance."""
    return "forward" if up_parallelism == down_parallelism else "rebalance"


class StreamGraphBuilder:
    """Build a :class:`StreamGraph` the way the DataStream API does.

    Each method adds one operator and returns its name, so calls nest::

        b = StreamGraphBuilder("wordcount")
        src = b.source("src", parallelism=2)
        win = b.window("win", src, size=10, parallelism=3)      # keyBy (hash) by default
        b.sink("out", win, sink_kind="two_phase_commit", parallelism=2)
        graph = b.build()                                        # validates

    ``input`` is one operator name or a sequence of names (a union). A ``partitioner`` left
    as ``None`` gets Flink's default (forward for equal parallelism, else rebalance); keyed
    operators default to ``"hash"`` (keyBy).
    """

    def __init__(
        self,
        name: str = "job",
        *,
        default_parallelism: int = 1,
        chaining_enabled: bool = True,
        all_vertices_in_same_slot_sharing_group_by_default: bool = True,
        chain_operators_with_different_max_parallelism: bool = True,
    ):
        self.name = name
        self.default_parallelism = default_parallelism
        self._flags = dict(
            chaining_enabled=chaining_enabled,
            all_vertices_in_same_slot_sharing_group_by_default=all_vertices_in_same_slot_sharing_group_by_default,
            chain_operators_with_different_max_parallelism=chain_operators_with_different_max_parallelism,
        )
        self._operators: list[OperatorSpec] = []
        self._edges: list[EdgeSpec] = []

    def _add(self, name: str, kind: str, inputs: str | Sequence[str] | None, partitioner: str | None,
             exchange_mode: str, params: dict[str, Any]) -> str:
        if params.get("parallelism") is None:
            params["parallelism"] = self.default_parallelism
        try:
            op = OperatorSpec(name=name, kind=kind, **params)
        except TypeError as e:
            raise InvalidJobSpec(_op_subject(name), f"bad parameter: {e}") from None
        self._operators.append(op)
        if inputs is not None:
            for src in [inputs] if isinstance(inputs, str) else list(inputs):
                self.connect(src, name, partitioner=partitioner, exchange_mode=exchange_mode)
        return name

    def source(self, name: str, *, parallelism: int | None = None, **params: Any) -> str:
        return self._add(name, "source", None, None, "pipelined", dict(parallelism=parallelism, **params))

    def map(self, name: str, input: str | Sequence[str], *, function: str | None = "identity",
            partitioner: str | None = None, exchange_mode: str = "pipelined",
            parallelism: int | None = None, **params: Any) -> str:
        return self._add(name, "map", input, partitioner, exchange_mode,
                         dict(parallelism=parallelism, function=function, **params))

    def filter(self, name: str, input: str | Sequence[str], *, function: str | None = "all",
               partitioner: str | None = None, exchange_mode: str = "pipelined",
               parallelism: int | None = None, **params: Any) -> str:
        return self._add(name, "filter", input, partitioner, exchange_mode,
                         dict(parallelism=parallelism, function=function, **params))

    def keyed_aggregate(self, name: str, input: str | Sequence[str], *, aggregate: str = "count",
                        partitioner: str | None = "hash", exchange_mode: str = "pipelined",
                        parallelism: int | None = None, **params: Any) -> str:
        return self._add(name, "keyed_aggregate", input, partitioner, exchange_mode,
                         dict(parallelism=parallelism, aggregate=aggregate, **params))

    def window(self, name: str, input: str | Sequence[str], *, size: int, slide: int | None = None,
               offset: int = 0, allowed_lateness: int = 0, aggregate: str = "count",
               partitioner: str | None = "hash", exchange_mode: str = "pipelined",
               parallelism: int | None = None, **params: Any) -> str:
        return self._add(name, "window", input, partitioner, exchange_mode,
                         dict(parallelism=parallelism, aggregate=aggregate, window_size=size,
                              window_slide=slide, window_offset=offset,
                              allowed_lateness=allowed_lateness, **params))

    def sink(self, name: str, input: str | Sequence[str], *, sink_kind: str = "two_phase_commit",
             partitioner: str | None = None, exchange_mode: str = "pipelined",
             parallelism: int | None = None, **params: Any) -> str:
        return self._add(name, "sink", input, partitioner, exchange_mode,
                         dict(parallelism=parallelism, sink_kind=sink_kind, **params))

    def connect(self, source: str, target: str, *, partitioner: str | None = None,
                exchange_mode: str = "pipelined") -> "StreamGraphBuilder":
        """Add an edge ``source -> target`` (a further input of ``target`` is a union)."""
        if partitioner is None:
            ops = {op.name: op for op in self._operators}
            if source in ops and target in ops:
                partitioner = default_partitioner(ops[source].parallelism, ops[target].parallelism)
            else:
                partitioner = "forward"
        self._edges.append(EdgeSpec(source=source, target=target, partitioner=partitioner,
                                    exchange_mode=exchange_mode))
        return self

    def build(self, *, validate: bool = True) -> StreamGraph:
        g = StreamGraph(name=self.name, operators=tuple(self._operators), edges=tuple(self._edges),
                        **self._flags)
        return g.validate() if validate else g


# ------------------------------------------------------------------------------------------
# Files: dict <-> StreamGraph, TOML/JSON loading
# ------------------------------------------------------------------------------------------

_GRAPH_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "operators": (list,),
    "edges": (list,),
    "chaining_enabled": (bool,),
    "all_vertices_in_same_slot_sharing_group_by_default": (bool,),
    "chain_operators_with_different_max_parallelism": (bool,),
    # how the job runs and what it reads (``model.jobfile``: ``flinkspec check --job``)
    "runtime": (dict,),
    "environment": (dict,),
    "input": (dict,),
}
#: top-level tables of a job file that are not part of the StreamGraph
_RUN_TABLES = ("runtime", "environment", "input")
_OP_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "kind": (str,),
    "parallelism": (int,),
    "max_parallelism": (int, type(None)),
    "slot_sharing_group": (str, type(None)),
    "co_location_group": (str, type(None)),
    "chaining_strategy": (str, type(None)),
    "function": (str, type(None)),
    "aggregate": (str, type(None)),
    "window_size": (int, type(None)),
    "window_slide": (int, type(None)),
    "window_offset": (int,),
    "allowed_lateness": (int,),
    "sink_kind": (str, type(None)),
    "watermark_out_of_orderness": (int,),
}
_EDGE_FIELDS: dict[str, tuple[type, ...]] = {
    "source": (str,),
    "target": (str,),
    "partitioner": (str,),
    "exchange_mode": (str,),
}


def _type_name(types: tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "a table",
             type(None): "null"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _check_fields(d: object, fields: Mapping[str, tuple[type, ...]], required: Iterable[str], subject: str) -> dict:
    if not isinstance(d, dict):
        raise InvalidJobSpec(subject, f"must be a table/object, not {type(d).__name__}")
    for key, value in d.items():
        if key not in fields:
            raise InvalidJobSpec(subject, f"unknown key {short(key)} (known: {', '.join(fields)})")
        types = fields[key]
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            raise InvalidJobSpec(subject, f"key {short(key)} must be {_type_name(types)}, not {short(value)}")
    for key in required:
        if key not in d:
            raise InvalidJobSpec(subject, f"missing required key {key!r}")
    return d


def stream_graph_from_dict(d: Mapping[str, Any], *, validate: bool = True) -> StreamGraph:
    """Build (and by default validate) a StreamGraph from its dict form (see docs/job-specs.md).

    Unknown keys, wrong types and missing required keys raise :class:`InvalidJobSpec`.
    An edge without ``partitioner`` gets Flink's default (forward for equal parallelism,
    else rebalance).
    """
    _check_fields(d, _GRAPH_FIELDS, ("operators",), "job")
    job = f"job {short(d.get('name', 'job'))}"
    operators = []
    for i, od in enumerate(d.get("operators", [])):
        subj = f"{job} operator #{i}" if not (isinstance(od, dict) and isinstance(od.get("name"), str)) \
            else _op_subject(od["name"])
        _check_fields(od, _OP_FIELDS, ("name", "kind"), subj)
        operators.append(OperatorSpec(**od))
    by_name = {op.name: op for op in operators}
    edges = []
    for i, ed in enumerate(d.get("edges", [])):
        subj = f"{job} edge #{i}"
        if isinstance(ed, dict) and isinstance(ed.get("source"), str) and isinstance(ed.get("target"), str):
            subj = f"edge {ed['source']!r} -> {ed['target']!r}"
        _check_fields(ed, _EDGE_FIELDS, ("source", "target"), subj)
        ed = dict(ed)
        if "partitioner" not in ed:
            ed["default_partitioner"] = True
            up, down = by_name.get(ed["source"]), by_name.get(ed["target"])
            ed["partitioner"] = (
                default_partitioner(up.parallelism, down.parallelism)
                if up is not None and down is not None and _is_int(up.parallelism) and _is_int(down.parallelism)
                else "forward"
            )
        edges.append(EdgeSpec(**ed))
    flags = {k: d[k] for k in _GRAPH_FIELDS if k not in ("name", "operators", "edges", *_RUN_TABLES) and k in d}
    g = StreamGraph(name=d.get("name", "job"), operators=tuple(operators), edges=tuple(edges), **flags)
    return g.validate() if validate else g


def stream_graph_to_dict(g: StreamGraph) -> dict[str, Any]:
    """The dict form (TOML/JSON-ready: ``None`` and default-valued optional keys are omitted)."""
    defaults = {a.name: a.default for a in attrs.fields(OperatorSpec) if a.default is not attrs.NOTHING}
    ops = []
    for op in g.operators:
        od: dict[str, Any] = {"name": op.name, "kind": op.kind, "parallelism": op.parallelism}
        for a in attrs.fields(OperatorSpec):
            if a.name in od:
                continue
            v = getattr(op, a.name)
            if v is None or v == defaults.get(a.name):
                continue
            od[a.name] = v
        ops.append(od)
    out: dict[str, Any] = {"name": g.name}
    for flag in ("chaining_enabled", "all_vertices_in_same_slot_sharing_group_by_default",
                 "chain_operators_with_different_max_parallelism"):
        out[flag] = getattr(g, flag)
    out["operators"] = ops
    out["edges"] = [
        {"source": e.source, "target": e.target, "exchange_mode": e.exchange_mode} if e.default_partitioner else
        {"source": e.source, "target": e.target, "partitioner": e.partitioner, "exchange_mode": e.exchange_mode}
        for e in g.edges
    ]
    return out


#: Bounds on what a job spec *file* may ask for (the model builds every subtask and channel:
#: a keyBy between two operators of parallelism 2,000 is 4 million channels and would take
#: minutes): the number of operators and edges, and of subtasks and channels the
#: ExecutionGraph would have (:func:`execution_size`).
MAX_OPERATORS = 1_000
MAX_EDGES = 10_000
MAX_SUBTASKS = 10_000
MAX_CHANNELS = 100_000
#: Longest name (operator, job, group, function) accepted in a file.
MAX_NAME = 200


@functools.cache
def job_spec_schema() -> dict:
    """The JSON Schema of a job spec file (``docs/schemas/job-spec.schema.json``), generated
    from the field tables and the enumerations above: types, known keys, value ranges,
    size bounds. The Flink rules that relate fields (``StreamGraph.validate``) come after.
    Built once; callers must not change it."""
    enums = {"kind": OPERATOR_KINDS, "partitioner": PARTITIONERS, "exchange_mode": EXCHANGE_MODES,
             "chaining_strategy": CHAINING_STRATEGIES, "aggregate": AGGREGATES, "sink_kind": SINK_KINDS}
    ranges = {"parallelism": (1, UPPER_BOUND_MAX_PARALLELISM), "max_parallelism": (1, UPPER_BOUND_MAX_PARALLELISM),
              "window_size": (1, INT_MAX), "window_slide": (1, INT_MAX), "allowed_lateness": (0, INT_MAX),
              "watermark_out_of_orderness": (0, INT_MAX)}

    def field(name: str, types: tuple) -> dict:
        alts = []
        for t in types:
            if t is type(None):
                alts.append({"type": "null"})
            elif t is bool:
                alts.append({"type": "boolean"})
            elif t is int:
                alts.append(int_schema(*ranges.get(name, (INT_MIN, INT_MAX))))
            elif t is str:
                alts.append({"type": "string", "enum": list(enums[name])} if name in enums
                            else string_schema(MAX_NAME))
            elif t is list:
                alts.append({"type": "array"})
            elif t is dict:  # [runtime] / [input]: their keys are checked by model.jobfile
                alts.append({"type": "object"})
        return alts[0] if len(alts) == 1 else {"anyOf": alts}

    def obj(fields: Mapping[str, tuple], required: tuple) -> dict:
        return {"type": "object", "properties": {k: field(k, t) for k, t in fields.items()},
                "required": list(required), "additionalProperties": False}

    top = obj(_GRAPH_FIELDS, ("operators",))
    top["properties"]["operators"] = {"type": "array", "maxItems": MAX_OPERATORS,
                                      "items": obj(_OP_FIELDS, ("name", "kind"))}
    top["properties"]["edges"] = {"type": "array", "maxItems": MAX_EDGES,
                                  "items": obj(_EDGE_FIELDS, ("source", "target"))}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://flinkspec.invalid/schemas/job-spec.schema.json",
            "title": "flinkspec job spec (a StreamGraph: operators and edges)", **top}


def execution_size(g: StreamGraph) -> tuple[int, int]:
    """(subtasks, channels) of the ExecutionGraph of ``g``, bounded from above without
    building it: every edge counted as if unchained (ALL_TO_ALL: p_up * p_down channels,
    POINTWISE: max(p_up, p_down)). Needs the operator names of the edges to exist."""
    ops = g.operators_by_name()
    subtasks = sum(op.parallelism for op in g.operators)
    channels = 0
    for e in g.edges:
        up, down = ops[e.source].parallelism, ops[e.target].parallelism
        channels += max(up, down) if e.partitioner in POINTWISE_PARTITIONERS else up * down
    return subtasks, channels


def check_execution_size(g: StreamGraph, subject: str, *, max_subtasks: int = MAX_SUBTASKS,
                         max_channels: int = MAX_CHANNELS) -> None:
    """Refuse a graph whose ExecutionGraph would exceed the bounds (InvalidJobSpec)."""
    subtasks, channels = execution_size(g)
    if subtasks > max_subtasks:
        raise InvalidJobSpec(subject, f"the job has {subtasks} subtasks, more than the model's limit of {max_subtasks}")
    if channels > max_channels:
        raise InvalidJobSpec(subject, f"the job would have up to {channels} channels, more than the model's "
                                      f"limit of {max_channels} (lower the parallelism of all-to-all edges)")


def load_stream_graph(path: str | os.PathLike) -> StreamGraph:
    """Load and validate a job spec from ``.toml`` or ``.json``.

    Every problem raises a :class:`FlinkspecError` whose message starts with the file name:
    a file that is missing, not regular, too large or not UTF-8; malformed TOML/JSON,
    duplicate keys, NaN/Infinity, integers beyond 64 bits, nesting too deep
    (``model.inputfiles``); unknown keys, wrong types and missing keys (the field tables);
    values out of range and oversized names or lists (:func:`job_spec_schema`); a graph too
    large for the model (:func:`check_execution_size`); a broken Flink rule (``validate``).
    ``model.jobgraph.load_job_graph`` loads and chains, so the co-location rule is checked too.
    """
    p = os.fspath(path)
    try:
        data = read_json_or_toml(p, what="job spec")
    except InputError as e:
        raise InvalidJobSpec(f"{e.source}:{e.where}" if e.where else e.source, e.rule) from None
    try:
        g = stream_graph_from_dict(data, validate=False)  # types and keys, with their own messages
        g.validate()  # Flink's rules, with theirs
        check_schema(data, job_spec_schema(), p)  # what remains: lengths, 64-bit ranges, sizes
        check_execution_size(g, "job")
        return g
    except InvalidJobSpec as e:
        raise InvalidJobSpec(f"{p}: {e.subject}", e.rule) from None
    except InputError as e:
        raise InvalidJobSpec(f"{p}:{e.where}", e.rule) from None
