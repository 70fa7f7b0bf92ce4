"""ExecutionGraph: parallel subtasks, result partitions, input gates and channels.

Invariant upheld: channels are wired exactly as Flink's ``EdgeManagerBuildUtil`` wires
them: ALL_TO_ALL edges connect every producer subtask to every consumer subtask
(producer i's subpartition j feeds consumer j; consumer j's gate lists producers in index
order); POINTWISE edges connect ranges (``connectPointwise``: 1:1 for equal parallelism,
fan-in ``[i*P/C, (i+1)*P/C)`` and fan-out ``[ceil(i*C/P), ceil((i+1)*C/P))`` otherwise).

Which subpartition a consumer reads follows ``VertexInputInfoComputationUtils``
(static graph): ``computeConsumedSubpartitionRange`` gives consumer ``i`` the subpartition
``i % numConsumers`` of each partition it reads, where a partition has one subpartition per
consumer. So for ALL_TO_ALL subpartition ``j`` feeds consumer ``j``; for POINTWISE fan-in the
single subpartition 0; for POINTWISE fan-out producer ``k`` has ``end-start`` subpartitions
and consumer ``i`` in ``[start, end)`` reads subpartition ``i % (end - start)`` (for 2 -> 5,
producer 1 feeds consumers 3 and 4 through subpartitions 1 and 0).

Everything is numbered densely (subtasks, channels) so the runtime can keep its state in
lists indexed by integers: subtasks by JobVertex in topological order, then subtask index;
channels by JobEdge index, then consumer subtask, then gate channel. A consumer's input
gates are ordered by JobEdge index (the order Flink connects them), a producer's result
partitions likewise.

Follows: ``EdgeManagerBuildUtil.connectPointwise``/``connectAllToAll``,
``VertexInputInfoComputationUtils`` (static graphs), ``DefaultExecutionGraph`` (one
ExecutionJobVertex per JobVertex in topological order).

Leaves out: hybrid partitions, dynamic (adaptive batch) graphs, multiple consumers of one
IntermediateDataSet.
"""

from __future__ import annotations

import attrs
import networkx as nx

from model.jobgraph import JobGraph, compile_job_graph
from model.streamgraph import StreamGraph


@attrs.frozen(slots=True, kw_only=True)
class Subtask:
    """One ExecutionVertex: subtask ``subtask_index`` of ``job_vertex``; ``id`` is dense (0..n-1)."""

    id: int
    job_vertex: str
    subtask_index: int
    parallelism: int

    @property
    def name(self) -> str:
        """Flink's task name format: ``"vertex (i+1/p)"``."""
        return f"{self.job_vertex} ({self.subtask_index + 1}/{self.parallelism})"


@attrs.frozen(slots=True, kw_only=True)
class InputChannel:
    """A FIFO channel from a producer subtask's subpartition to a consumer's input gate.

    ``id`` is dense over the whole graph; ``gate``/``gate_channel`` locate it in the
    consumer (``gate`` = index of the consumer's input gate, ``gate_channel`` = index of
    the channel inside that gate); ``subpartition`` locates it in the producer's
    result partition for ``job_edge``.
    """

    id: int
    job_edge: int
    producer: int
    consumer: int
    subpartition: int
    gate: int
    gate_channel: int


@attrs.frozen(slots=True, kw_only=True)
class ResultPartition:
    """The output of one producer subtask on one JobEdge: ``channels[k]`` is subpartition k."""

    job_edge: int
    producer: int
    partitioner: str
    channels: tuple[int, ...]
    #: max parallelism of the consuming operator (KeyGroupStreamPartitioner uses it).
    consumer_max_parallelism: int
    blocking: bool


@attrs.frozen(slots=True, kw_only=True)
class InputGate:
    """One consumer subtask's input from one JobEdge; ``channels`` in gate-channel order."""

    job_edge: int
    consumer: int
    channels: tuple[int, ...]


# ------------------------------------------------------------------------------------------
# ExecutionGraph
# ------------------------------------------------------------------------------------------


def pointwise_consumers(producer_parallelism: int, consumer_parallelism: int, producer_index: int) -> range:
    """Consumers of producer ``producer_index`` on a POINTWISE edge (``connectPointwise``)."""
    p, c, k = producer_parallelism, consumer_parallelism, producer_index
    if p == c:
        return range(k, k + 1)
    if p > c:
        # fan-in: consumer i reads [i*p/c, (i+1)*p/c); find the one whose range holds k
        i = ((k + 1) * c - 1) // p
        return range(i, i + 1)
    return range((k * c + p - 1) // p, ((k + 1) * c + p - 1) // p)


def pointwise_producers(producer_parallelism: int, consumer_parallelism: int, consumer_index: int) -> range:
    """Producers read by consumer ``consumer_index`` on a POINTWISE edge (``connectPointwise``)."""
    p, c, i = producer_parallelism, consumer_parallelism, consumer_index
    if p >= c:
        return range(i * p // c, (i + 1) * p // c)
    # fan-out: the producer k with ceil(k*c/p) <= i < ceil((k+1)*c/p)
    k = (i * p) // c
    return range(k, k + 1)


@attrs.frozen(slots=True, kw_only=True, eq=False, repr=False)
class ExecutionGraph:
    """Parallel subtasks and their channels (see the module docstring for the numbering)."""

    stream_graph: StreamGraph
    job_graph: JobGraph
    subtasks: tuple[Subtask, ...]
    channels: tuple[InputChannel, ...]
    #: ``partitions[s]``: subtask ``s``'s outgoing result partitions in JobEdge index order.
    partitions: tuple[tuple[ResultPartition, ...], ...]
    #: ``input_gates[s]``: subtask ``s``'s input gates in JobEdge index order.
    input_gates: tuple[tuple[InputGate, ...], ...]
    first_subtask: dict[str, int]
    graph: nx.MultiDiGraph

    def __repr__(self) -> str:
        return (
            f"<ExecutionGraph {self.stream_graph.name!r}: {len(self.subtasks)} subtasks, "
            f"{len(self.channels)} channels>"
        )

    def subtasks_of(self, vertex_id: str) -> tuple[int, ...]:
        first = self.first_subtask[vertex_id]
        return tuple(range(first, first + self.job_graph.vertices[vertex_id].parallelism))

    def subtask_id(self, vertex_id: str, subtask_index: int) -> int:
        p = self.job_graph.vertices[vertex_id].parallelism
        if not 0 <= subtask_index < p:
            raise IndexError(f"{vertex_id!r} has subtasks 0..{p - 1}, not {subtask_index}")
        return self.first_subtask[vertex_id] + subtask_index

    def channels_of_edge(self, job_edge: int) -> tuple[InputChannel, ...]:
        return tuple(ch for ch in self.channels if ch.job_edge == job_edge)


def build_execution_graph(job_graph: JobGraph) -> ExecutionGraph:
    """Expand ``job_graph`` into subtasks, result partitions, input gates and channels."""
    vertices = job_graph.vertices
    subtasks: list[Subtask] = []
    first: dict[str, int] = {}
    for v in vertices.values():
        first[v.id] = len(subtasks)
        for i in range(v.parallelism):
            subtasks.append(Subtask(id=len(subtasks), job_vertex=v.id, subtask_index=i, parallelism=v.parallelism))
    n = len(subtasks)
    gate_index: list[int] = [0] * n
    channels: list[InputChannel] = []
    partitions: list[list[ResultPartition]] = [[] for _ in range(n)]
    gates: list[list[InputGate]] = [[] for _ in range(n)]

    for edge in job_graph.edges:
        prod_v, cons_v = vertices[edge.source_vertex], vertices[edge.target_vertex]
        p, c = prod_v.parallelism, cons_v.parallelism
        p0, c0 = first[prod_v.id], first[cons_v.id]
        # subpartition slots per producer: number of consumers of its partition
        if edge.distribution == "ALL_TO_ALL":
            consumers_of = [range(c)] * p
            producers_of = [range(p)] * c
        else:
            consumers_of = [pointwise_consumers(p, c, k) for k in range(p)]
            producers_of = [pointwise_producers(p, c, i) for i in range(c)]
        sub_channels: list[list[int | None]] = [[None] * len(consumers_of[k]) for k in range(p)]
        for i in range(c):
            cons = c0 + i
            gate = gate_index[cons]
            gate_index[cons] += 1
            ids = []
            for gc, k in enumerate(producers_of[i]):
                num_consumers = len(consumers_of[k])
                sub = i % num_consumers  # computeConsumedSubpartitionRange (static graph)
                ch = InputChannel(
                    id=len(channels), job_edge=edge.index, producer=p0 + k, consumer=cons,
                    subpartition=sub, gate=gate, gate_channel=gc,
                )
                channels.append(ch)
                sub_channels[k][sub] = ch.id
                ids.append(ch.id)
            gates[cons].append(InputGate(job_edge=edge.index, consumer=cons, channels=tuple(ids)))
        for k in range(p):
            assert all(x is not None for x in sub_channels[k]), (edge, k)
            partitions[p0 + k].append(
                ResultPartition(
                    job_edge=edge.index, producer=p0 + k, partitioner=edge.partitioner,
                    channels=tuple(sub_channels[k]),  # type: ignore[arg-type]
                    consumer_max_parallelism=cons_v.max_parallelism,
                    blocking=edge.result_partition_type == "BLOCKING",
                )
            )

    graph = nx.MultiDiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from((ch.producer, ch.consumer, ch.id) for ch in channels)
    return ExecutionGraph(
        stream_graph=job_graph.stream_graph,
        job_graph=job_graph,
        subtasks=tuple(subtasks),
        channels=tuple(channels),
        partitions=tuple(tuple(x) for x in partitions),
        input_gates=tuple(tuple(x) for x in gates),
        first_subtask=first,
        graph=graph,
    )


def compile_stream_graph(stream_graph: StreamGraph) -> ExecutionGraph:
    """Validate, chain and expand: StreamGraph -> JobGraph -> ExecutionGraph.

    The chaining runs once (``model.jobgraph.build_job_graph``, which also checks the
    co-location rule); ``StreamGraph.validate`` does not chain."""
    return build_execution_graph(compile_job_graph(stream_graph))
