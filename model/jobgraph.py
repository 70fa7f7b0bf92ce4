"""JobGraph: operator chaining (Flink's ``StreamingJobGraphGenerator``).

Invariant upheld: two operators share a :class:`JobVertex` exactly when Flink's
``isChainable`` holds for the edge between them (flink-facts §5), and the slot sharing
group of every vertex is the one ``StreamGraphGenerator.determineSlotSharingGroup`` and
``StreamingJobGraphGenerator.setSlotSharing`` give it.

Leaves out: YieldingOperatorFactory and legacy sources, chaining of sources into
``HEAD_WITH_SOURCES`` multi-input operators (``isChainableSource``), dynamic graphs.
"""

from __future__ import annotations

import attrs

#: ResultPartitionType names used by the model (flink-facts §4).
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
