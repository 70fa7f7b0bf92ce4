"""JobGraph: operator chaining (Flink's ``StreamingJobGraphGenerator``).

Invariant upheld: two operators share a :class:`JobVertex` exactly when Flink's
``isChainable`` holds for the edge between them, the slot sharing
group of every vertex is the one ``StreamGraphGenerator.determineSlotSharingGroup`` and
``StreamingJobGraphGenerator.setSlotSharing`` give it, and the vertices of one co-location
group are in one (JobGraph-level) slot sharing group. That last rule is the one job-spec
rule that needs the chains (only a chain head's co-location group counts), so it is checked
here, by :func:`build_job_graph`, as Flink's ``setCoLocation`` checks it while generating the
JobGraph; every other rule is ``StreamGraph.validate``'s.

Follows ``StreamingJobGraphGenerator`` (2.x): ``isChainable``/``isChainableInput``/
``areOperatorsChainable``/``arePartitionerAndExchangeModeChainable`` for chaining,
``createChain`` (depth-first from the sources in id order) for the order in which
JobVertices are created and JobEdges connected, ``setSlotSharing`` (+
``buildVertexRegionSlotSharingGroups``) and ``setCoLocation``;
``JobGraph.getVerticesSortedTopologicallyFromSources`` for the vertex order;
``LogicalPipelinedRegionComputeUtil`` for logical pipelined regions.

Model simplifications (each operator kind is one concrete Flink operator):

* every operator has a factory; ``source`` is a ``SourceOperatorFactory`` (FLIP-27), so the
  "YieldingOperatorFactory after a legacy source" rule never fires;
* a node's StreamNode id is its position in ``StreamGraph.operators`` (Flink: transformation
  ids in creation order), and out-edges are ordered as in ``StreamGraph.edges``;
* several inputs of one operator are a union (same ``typeNumber``), so the union check of
  ``isChainableInput`` is implied by ``inEdges.size() == 1``;
* ``HEAD_WITH_SOURCES`` chains only behind a source (one-input case of ``isChainableSource``);
* each JobEdge produces its own IntermediateDataSet (no output reuse);
* a chained (non-head) operator's co-location group is ignored, exactly as in Flink, whose
  ``setCoLocation`` reads only the chain head's StreamNode.

Leaves out: YieldingOperatorFactory and legacy sources, multi-input operators with chained
sources, ``ForwardForConsecutiveHashPartitioner``, dynamic graphs, hybrid partitions,
resource profiles and managed memory.
"""

from __future__ import annotations

import os
from typing import Mapping

import attrs
import networkx as nx

from model.errors import InvalidJobSpec
from model.streamgraph import (
    DEFAULT_SLOT_SHARING_GROUP,
    POINTWISE_PARTITIONERS,
    EdgeSpec,
    StreamGraph,
    effective_max_parallelism,
    load_stream_graph,
    resolve_slot_sharing_groups,
)

#: ResultPartitionType names used by the model (Flink's ``ResultPartitionType``).
PIPELINED_BOUNDED = "PIPELINED_BOUNDED"
BLOCKING = "BLOCKING"


@attrs.frozen(slots=True, kw_only=True)
class JobVertex:
    """A chain of operators run by one task per parallel subtask.

    ``id`` is the name of the chain's head operator; ``operators`` lists the chain in order.
    """

    id: str
    operators: tuple[str, ...]
    parallelism: int
    max_parallelism: int
    max_parallelism_configured: bool
    slot_sharing_group: str
    co_location_group: str | None = None


@attrs.frozen(slots=True, kw_only=True)
class JobEdge:
    """A non-chained StreamEdge between two JobVertices.

    ``distribution`` is ``"POINTWISE"`` (forward, rescale) or ``"ALL_TO_ALL"`` (hash,
    rebalance, broadcast); ``result_partition_type`` is ``PIPELINED_BOUNDED`` or ``BLOCKING``.
    ``source_operator``/``target_operator`` are the StreamNodes the edge connects inside the chains.
    """

    index: int
    source_vertex: str
    target_vertex: str
    source_operator: str
    target_operator: str
    partitioner: str
    exchange_mode: str
    distribution: str
    result_partition_type: str
    #: ``StreamEdge.supportsUnalignedCheckpoints()`` (``StreamGraph.supports_unaligned_checkpoints``):
    #: false, the producer sends this edge's barriers aligned even for an unaligned checkpoint.
    supports_unaligned_checkpoints: bool


# ------------------------------------------------------------------------------------------
# Chaining
# ------------------------------------------------------------------------------------------


def is_chainable(
    stream_graph: StreamGraph, edge: EdgeSpec, slot_sharing_groups: Mapping[str, str] | None = None
) -> bool:
    """``StreamingJobGraphGenerator.isChainable(edge, streamGraph)``.

    True iff the downstream operator has exactly one input edge and
    ``chaining enabled``, same (resolved) slot sharing group, upstream strategy != NEVER,
    downstream strategy ALWAYS (or HEAD_WITH_SOURCES behind a source), equal parallelism,
    equal *configured* max parallelism unless chaining with different max parallelism is
    enabled, and a forward partitioner on a non-blocking (non-BATCH) exchange.
    ``slot_sharing_groups`` (from :func:`resolve_slot_sharing_groups`) may be passed to
    avoid recomputing it.
    """
    g = stream_graph
    if sum(1 for e in g.edges if e.target == edge.target) != 1:
        return False
    if not g.chaining_enabled:
        return False
    ssg = slot_sharing_groups if slot_sharing_groups is not None else resolve_slot_sharing_groups(g)
    if ssg[edge.source] != ssg[edge.target]:
        return False
    up, down = g.operator(edge.source), g.operator(edge.target)
    return _operators_chainable(g, up, down) and _partitioner_chainable(edge)


def _operators_chainable(g: StreamGraph, up, down) -> bool:
    # areOperatorsChainable
    chainable = up.effective_chaining_strategy != "NEVER"
    ds = down.effective_chaining_strategy
    if ds in ("NEVER", "HEAD"):
        chainable = False
    elif ds == "HEAD_WITH_SOURCES":
        chainable = chainable and up.kind == "source"
    chainable = chainable and up.parallelism == down.parallelism
    if not g.chain_operators_with_different_max_parallelism:
        chainable = chainable and up.max_parallelism == down.max_parallelism
    return chainable


def _partitioner_chainable(edge: EdgeSpec) -> bool:
    # arePartitionerAndExchangeModeChainable (no ForwardForConsecutiveHashPartitioner)
    return edge.partitioner == "forward" and edge.exchange_mode != "blocking"


def chainable_edges(
    stream_graph: StreamGraph, slot_sharing_groups: Mapping[str, str] | None = None
) -> dict[tuple[str, str], bool]:
    """The chaining decision of every StreamEdge, ``(source, target) -> chained``.

    The one place the chaining is computed: :func:`build_job_graph` calls it once per
    JobGraph, :func:`chain_heads` derives the heads from it. ``is_chainable`` is asked only
    for edges whose target has exactly one input (the others never chain).
    """
    g = stream_graph
    ssg = slot_sharing_groups if slot_sharing_groups is not None else resolve_slot_sharing_groups(g)
    in_count: dict[str, int] = {op.name: 0 for op in g.operators}
    for e in g.edges:
        in_count[e.target] += 1
    return {(e.source, e.target): in_count[e.target] == 1 and is_chainable(g, e, ssg) for e in g.edges}


def chain_heads(stream_graph: StreamGraph, slot_sharing_groups: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Operators that head a chain (a JobVertex), in declaration order: every operator
    except those whose single input edge is chainable."""
    chained_targets = {t for (_s, t), chained in chainable_edges(stream_graph, slot_sharing_groups).items() if chained}
    return tuple(op.name for op in stream_graph.operators if op.name not in chained_targets)


# ------------------------------------------------------------------------------------------
# JobGraph
# ------------------------------------------------------------------------------------------


@attrs.frozen(slots=True, kw_only=True, eq=False, repr=False)
class JobGraph:
    """The chained job: JobVertices (topological order), JobEdges (index = position).

    ``graph`` is a networkx DiGraph over vertex ids; each graph edge carries
    ``job_edges`` (the indices of the JobEdges between the two vertices).
    ``operator_slot_sharing_groups`` is the StreamGraph-level resolution
    (``determineSlotSharingGroup``) per operator; ``JobVertex.slot_sharing_group`` is the
    JobGraph-level group after ``setSlotSharing``.
    """

    stream_graph: StreamGraph
    vertices: dict[str, JobVertex]
    edges: tuple[JobEdge, ...]
    vertex_of_operator: dict[str, str]
    graph: nx.DiGraph
    operator_slot_sharing_groups: dict[str, str]

    def __repr__(self) -> str:
        return f"<JobGraph {self.stream_graph.name!r}: {len(self.vertices)} vertices, {len(self.edges)} edges>"

    def in_edges(self, vertex_id: str) -> tuple[JobEdge, ...]:
        """Incoming JobEdges of a vertex in index order (= the order of its input gates)."""
        return tuple(e for e in self.edges if e.target_vertex == vertex_id)

    def out_edges(self, vertex_id: str) -> tuple[JobEdge, ...]:
        """Outgoing JobEdges of a vertex in index order (= the order of its result partitions)."""
        return tuple(e for e in self.edges if e.source_vertex == vertex_id)

    def slot_sharing_groups(self) -> dict[str, tuple[str, ...]]:
        """JobGraph slot sharing group -> its vertices (topological order)."""
        out: dict[str, list[str]] = {}
        for v in self.vertices.values():
            out.setdefault(v.slot_sharing_group, []).append(v.id)
        return {k: tuple(v) for k, v in out.items()}

    def co_location_groups(self) -> dict[str, tuple[str, ...]]:
        """Co-location group key -> its vertices (topological order)."""
        out: dict[str, list[str]] = {}
        for v in self.vertices.values():
            if v.co_location_group is not None:
                out.setdefault(v.co_location_group, []).append(v.id)
        return {k: tuple(v) for k, v in out.items()}


def result_partition_type(exchange_mode: str) -> str:
    """PIPELINED -> PIPELINED_BOUNDED, BATCH -> BLOCKING (``determineResultPartitionType``)."""
    return BLOCKING if exchange_mode == "blocking" else PIPELINED_BOUNDED


def logical_pipelined_regions(vertex_ids: tuple[str, ...], edges: tuple[JobEdge, ...]) -> tuple[tuple[str, ...], ...]:
    """``LogicalPipelinedRegionComputeUtil``: connected components over must-be-pipelined
    (PIPELINED_BOUNDED) JobEdges; regions and their vertices in the given (topological) order."""
    parent = {v: v for v in vertex_ids}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for e in edges:
        if e.result_partition_type == PIPELINED_BOUNDED:
            a, b = find(e.source_vertex), find(e.target_vertex)
            if a != b:
                parent[b] = a
    regions: dict[str, list[str]] = {}
    for v in vertex_ids:
        regions.setdefault(find(v), []).append(v)
    return tuple(tuple(r) for r in regions.values())


def compile_job_graph(stream_graph: StreamGraph) -> JobGraph:
    """Validate ``stream_graph`` and chain it into a :class:`JobGraph` (Flink's
    ``StreamingJobGraphGenerator.createJobGraph`` restricted to the model).

    Raises :class:`InvalidJobSpec` for every broken job-spec rule: the StreamGraph's own
    (``StreamGraph.validate``) and the co-location rule (:func:`build_job_graph`)."""
    return build_job_graph(stream_graph.validate())


def load_job_graph(path: str | os.PathLike) -> JobGraph:
    """Load a job spec file (``.toml``/``.json``, :func:`model.streamgraph.load_stream_graph`)
    and chain it. Every :class:`InvalidJobSpec` names the file first, including a broken
    co-location rule, which only the chaining can check."""
    graph = load_stream_graph(path)
    try:
        return build_job_graph(graph)
    except InvalidJobSpec as e:
        raise InvalidJobSpec(f"{os.fspath(path)}: {e.subject}", e.rule) from None


def co_location_violation(job_graph: JobGraph) -> InvalidJobSpec | None:
    """``setCoLocation``: every vertex of one co-location key must be in the same (JobGraph
    level) slot sharing group. Returns the :class:`InvalidJobSpec` to raise, or ``None``.

    Only chain heads are vertices, so a chained operator's co-location group is ignored,
    as in Flink, whose ``setCoLocation`` reads the head's StreamNode only."""
    first_of_key: dict[str, JobVertex] = {}
    for v in job_graph.vertices.values():
        if v.co_location_group is None:
            continue
        other = first_of_key.setdefault(v.co_location_group, v)
        if other.slot_sharing_group != v.slot_sharing_group:
            return InvalidJobSpec(
                f"operator {v.id!r}",
                f"co-location group {v.co_location_group!r} spans different slot sharing groups"
                f" ({other.id!r} is in {other.slot_sharing_group!r}, {v.id!r} is in {v.slot_sharing_group!r})"
                " (Flink: Cannot co-locate operators from different slot sharing groups)",
            )
    return None


def build_job_graph(stream_graph: StreamGraph) -> JobGraph:
    """Chain a StreamGraph that passed ``StreamGraph.validate`` (whose rules are not checked
    again; :func:`compile_job_graph` validates first), then check the co-location rule on
    the chains (:func:`co_location_violation`, raised as :class:`InvalidJobSpec`)."""
    g = stream_graph
    ssg = resolve_slot_sharing_groups(g)
    ops = g.operators_by_name()
    pos = {op.name: i for i, op in enumerate(g.operators)}
    out_edges: dict[str, list[EdgeSpec]] = {op.name: [] for op in g.operators}
    for e in g.edges:
        out_edges[e.source].append(e)
    chainable = chainable_edges(g, ssg)

    # createChain: depth-first from the sources in id order; vertices are created post-order.
    built: set[str] = set()
    creation_order: list[str] = []
    transitive: dict[str, list[EdgeSpec]] = {}
    members: dict[str, list[str]] = {}
    head_of: dict[str, str] = {}

    def create_chain(node: str, head: str) -> list[EdgeSpec]:
        if head in built:
            return []
        trans: list[EdgeSpec] = []
        members.setdefault(head, []).append(node)
        head_of[node] = head
        outs = out_edges[node]
        for e in outs:
            if chainable[(e.source, e.target)]:
                trans.extend(create_chain(e.target, head))
        for e in outs:
            if not chainable[(e.source, e.target)]:
                trans.append(e)
                create_chain(e.target, e.target)
        if node == head:
            built.add(head)
            creation_order.append(head)
            transitive[head] = trans
        return trans

    for op in g.operators:
        if op.kind == "source":
            create_chain(op.name, op.name)

    # connect(): vertices by head id, then each chain's transitive out-edges in order.
    job_edges: list[JobEdge] = []
    for head in sorted(transitive, key=pos.__getitem__):
        for e in transitive[head]:
            job_edges.append(
                JobEdge(
                    index=len(job_edges),
                    source_vertex=head,
                    target_vertex=head_of[e.target],
                    source_operator=e.source,
                    target_operator=e.target,
                    partitioner=e.partitioner,
                    exchange_mode=e.exchange_mode,
                    distribution="POINTWISE" if e.partitioner in POINTWISE_PARTITIONERS else "ALL_TO_ALL",
                    result_partition_type=result_partition_type(e.exchange_mode),
                    supports_unaligned_checkpoints=g.supports_unaligned_checkpoints(e),
                )
            )
    edges = tuple(job_edges)
    order = _sorted_topologically_from_sources(creation_order, edges)

    # setSlotSharing: "default" -> the logical pipelined region's group (one shared group
    # when all vertices share by default); named groups shared across the job.
    regions = logical_pipelined_regions(tuple(order), edges)
    region_group: dict[str, str] = {}
    for k, region in enumerate(regions):
        name = (
            DEFAULT_SLOT_SHARING_GROUP
            if g.all_vertices_in_same_slot_sharing_group_by_default
            else f"{DEFAULT_SLOT_SHARING_GROUP}#region{k}"
        )
        for v in region:
            region_group[v] = name

    vertices: dict[str, JobVertex] = {}
    for head in order:
        op = ops[head]
        group = ssg[head]
        vertices[head] = JobVertex(
            id=head,
            operators=tuple(members[head]),
            parallelism=op.parallelism,
            max_parallelism=effective_max_parallelism(op),
            max_parallelism_configured=op.max_parallelism is not None,
            slot_sharing_group=region_group[head] if group == DEFAULT_SLOT_SHARING_GROUP else group,
            co_location_group=op.co_location_group,
        )
    graph = nx.DiGraph()
    graph.add_nodes_from(order)
    for e in edges:
        if graph.has_edge(e.source_vertex, e.target_vertex):
            graph.edges[e.source_vertex, e.target_vertex]["job_edges"] += (e.index,)
        else:
            graph.add_edge(e.source_vertex, e.target_vertex, job_edges=(e.index,))
    job_graph = JobGraph(
        stream_graph=g,
        vertices=vertices,
        edges=edges,
        vertex_of_operator={op.name: head_of[op.name] for op in g.operators},
        graph=graph,
        operator_slot_sharing_groups=ssg,
    )
    err = co_location_violation(job_graph)
    if err is not None:
        raise err
    return job_graph


def _sorted_topologically_from_sources(creation_order: list[str], edges: tuple[JobEdge, ...]) -> list[str]:
    """``JobGraph.getVerticesSortedTopologicallyFromSources`` over vertices in creation order."""
    inputs: dict[str, list[JobEdge]] = {v: [] for v in creation_order}
    produced: dict[str, list[JobEdge]] = {v: [] for v in creation_order}
    for e in edges:
        inputs[e.target_vertex].append(e)
        produced[e.source_vertex].append(e)
    remaining = dict.fromkeys(creation_order)  # insertion-ordered set
    ordered: list[str] = []
    for v in creation_order:
        if not inputs[v]:
            ordered.append(v)
            del remaining[v]

    def add_nodes_without_new_predecessors(start: str) -> None:
        for edge in produced[start]:
            v = edge.target_vertex
            if v not in remaining:
                continue
            if any(e is not edge and e.source_vertex in remaining for e in inputs[v]):
                continue
            ordered.append(v)
            del remaining[v]
            add_nodes_without_new_predecessors(v)

    pos = 0
    while remaining:
        if pos >= len(ordered):  # pragma: no cover - validate() rejects cycles
            raise AssertionError("the job graph is cyclic")
        add_nodes_without_new_predecessors(ordered[pos])
        pos += 1
    return ordered
