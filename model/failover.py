"""Failover strategies: which subtasks restart when some fail.

Invariant upheld: the restart set is *sufficient*: it contains the failed subtasks' regions,
the producer regions of every consumed result partition that is no longer available, and
every consumer region of a restarted region, transitively; so no surviving subtask keeps
consuming data that nobody will reproduce, and no restarted producer feeds a consumer that
already saw a different (non-deterministic) version of its output.

Follows: ``RestartPipelinedRegionFailoverStrategy`` and ``RestartAllFailoverStrategy``;
regions as ``SchedulingPipelinedRegionComputeUtil`` builds them:
connected components over must-be-pipelined channels, then strongly connected components
of the region graph over blocking channels merged into one region (FLINK-17330).

Known-unsafe variants, each a seam (``model.seams``) beside the definition it overrides:
``skip-consumer-regions`` (``consumer_regions`` answers none), the pre-FLINK-13222 reasoning
that consumers of a deterministic producer need no restart (with a rebalance edge, a
non-deterministic partitioner, it loses or duplicates data); ``backtrack-every-blocking-input``
(``producer_to_backtrack`` answers yes for every blocking input), which also restarts the
producers of blocking partitions that are still available (more than Flink restarts: the job
recovers, only the restart set's exactness tells); FLINK-12068 (``producer_to_backtrack``
answers no): the producers of lost blocking partitions are not restarted, so a restarted
consumer waits for data nobody produces.

Leaves out: ``PartitionException`` parsing (a lost TaskManager marks every blocking
partition it held unavailable instead), hybrid partitions, and vertices still in CREATED
(every vertex of a streaming job is deployed at once).
"""

from __future__ import annotations

import networkx as nx

from model import seams
from model.errors import FlinkspecError
from model.jobgraph import BLOCKING
from model.streamgraph import discard_graph


def channel_is_blocking(eg, channel) -> bool:
    return eg.job_graph.edges[channel.job_edge].result_partition_type == BLOCKING


def pipelined_regions(eg) -> tuple[frozenset[int], ...]:
    """The ExecutionGraph's pipelined regions as sets of subtask ids, ordered by their
    smallest subtask id."""
    return tuple(region for region, _components in _regions(eg))


def regions_merged_from_cycles(eg) -> tuple[frozenset[int], ...]:
    """The pipelined regions that hold more than one component of must-be-pipelined channels:
    components whose blocking channels form a cycle in the region graph, merged into one region
    (``SchedulingPipelinedRegionComputeUtil.mergeRegionsOnCycles``, FLINK-17330)."""
    return tuple(region for region, components in _regions(eg) if components > 1)


def _regions(eg) -> list[tuple[frozenset[int], int]]:
    """``(region, how many pipelined components it merges)`` per region, ordered by its
    smallest subtask id."""
    g = nx.Graph()
    g.add_nodes_from(s.id for s in eg.subtasks)
    blocking = []
    for ch in eg.channels:
        if channel_is_blocking(eg, ch):
            blocking.append(ch)
        else:
            g.add_edge(ch.producer, ch.consumer)
    raw = [frozenset(c) for c in nx.connected_components(g)]
    region_of = {}
    for i, r in enumerate(raw):
        for s in r:
            region_of[s] = i
    rg = nx.DiGraph()
    rg.add_nodes_from(range(len(raw)))
    for ch in blocking:
        a, b = region_of[ch.producer], region_of[ch.consumer]
        if a != b:
            rg.add_edge(a, b)
    merged = [(frozenset().union(*(raw[i] for i in scc)), len(scc)) for scc in nx.strongly_connected_components(rg)]
    merged.sort(key=lambda m: min(m[0]))
    discard_graph(g)
    discard_graph(rg)
    return merged


class RestartAllFailoverStrategy:
    """Every subtask restarts."""

    name = "full"

    def __init__(self, eg):
        self.all = frozenset(s.id for s in eg.subtasks)

    def tasks_to_restart(self, failed, unavailable_channels=frozenset()) -> frozenset[int]:
        return self.all


class RestartPipelinedRegionFailoverStrategy:
    """Restart the failed regions, producers of unavailable partitions, and all consumers."""

    name = "region"

    def __init__(self, eg):
        self.eg = eg
        self.regions = pipelined_regions(eg)
        self.region_of = {}
        for i, r in enumerate(self.regions):
            for s in r:
                self.region_of[s] = i
        self.consumed_by: dict[int, set[int]] = {i: set() for i in range(len(self.regions))}
        self.inputs_of: dict[int, list] = {i: [] for i in range(len(self.regions))}
        for ch in eg.channels:
            a, b = self.region_of[ch.producer], self.region_of[ch.consumer]
            if a != b:
                self.consumed_by[a].add(b)
                self.inputs_of[b].append(ch)

    def tasks_to_restart(self, failed, unavailable_channels=frozenset()) -> frozenset[int]:
        """``failed``: subtask ids; ``unavailable_channels``: ids of channels whose blocking
        partition is lost (e.g. it lived on a lost TaskManager)."""
        todo = [self.region_of[s] for s in failed]
        involved: set[int] = set()
        while todo:
            r = todo.pop()
            if r in involved:
                continue
            involved.add(r)
            for ch in self.inputs_of[r]:
                if self.producer_to_backtrack(ch, unavailable_channels):
                    todo.append(self.region_of[ch.producer])
            todo.extend(self.consumer_regions(r))
        return frozenset().union(*(self.regions[r] for r in involved)) if involved else frozenset()

    def consumer_regions(self, r: int):
        """The regions consuming a result partition of region ``r``: each restarts with it
        (``getConsumerRegions`` of the regions to visit)."""
        return self.consumed_by[r]

    def producer_to_backtrack(self, ch, unavailable_channels) -> bool:
        """Whether the region producing input channel ``ch`` of a restarting region must restart
        too: its blocking partition is lost, so a restarted consumer could not read it."""
        return ch.id in unavailable_channels


@seams.override("skip-consumer-regions", RestartPipelinedRegionFailoverStrategy, "consumer_regions",
                "region failover does not restart the regions consuming a restarted region's output (the "
                "reasoning that a deterministic producer replays the same records: wrong behind a rebalance)")
def _consumer_regions_skipped(self, r: int):
    return ()


@seams.override("backtrack-every-blocking-input", RestartPipelinedRegionFailoverStrategy, "producer_to_backtrack",
                "region failover also restarts the producers of blocking partitions that are still available")
def _producer_to_backtrack_always(self, ch, unavailable_channels) -> bool:
    return ch.id in unavailable_channels or channel_is_blocking(self.eg, ch)


@seams.override("FLINK-12068", RestartPipelinedRegionFailoverStrategy, "producer_to_backtrack",
                "region failover does not backtrack to the producers of lost blocking partitions")
def _producer_to_backtrack_flink_12068(self, ch, unavailable_channels) -> bool:
    return False


def failover_strategy(eg, name: str):
    """The FailoverStrategy ``name`` ("full" or "region")."""
    if name == "full":
        return RestartAllFailoverStrategy(eg)
    if name == "region":
        return RestartPipelinedRegionFailoverStrategy(eg)
    raise FlinkspecError(f"failover_strategy must be 'full' or 'region', not {name!r}")
