"""Failover strategies (model/failover.py) on small hand-drawn ExecutionGraphs: pipelined regions
as Flink's ``SchedulingPipelinedRegionComputeUtil`` builds them, and the restart set of
``RestartPipelinedRegionFailoverStrategy`` against its definition computed independently here
(a closure over the region graph)."""

from __future__ import annotations

from itertools import combinations
from types import SimpleNamespace as NS

import networkx as nx

from model import seams
from model.failover import (RestartAllFailoverStrategy, RestartPipelinedRegionFailoverStrategy, failover_strategy,
                            pipelined_regions)
from model.jobgraph import BLOCKING


def _eg(n: int, pipelined=(), blocking=()):
    """A duck-typed ExecutionGraph: subtasks 0..n-1, channels (producer, consumer)."""
    edges = {"p": NS(result_partition_type="PIPELINED_BOUNDED"), "b": NS(result_partition_type=BLOCKING)}
    chans = [NS(id=i, producer=a, consumer=b, job_edge=kind)
             for i, (a, b, kind) in enumerate([(a, b, "p") for a, b in pipelined] + [(a, b, "b") for a, b in blocking])]
    return NS(subtasks=[NS(id=i) for i in range(n)], channels=chans, job_graph=NS(edges=edges))


def _regions_by_hand(eg):
    """Connected components over pipelined channels, then strongly connected components of the
    region graph over blocking channels merged (FLINK-17330), ordered by smallest subtask id."""
    parent = list(range(len(eg.subtasks)))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for ch in eg.channels:
        if ch.job_edge == "p":
            parent[find(ch.producer)] = find(ch.consumer)
    for _ in range(len(eg.subtasks)):  # merge blocking cycles until nothing changes
        comp = {s: find(s) for s in range(len(eg.subtasks))}
        g = nx.DiGraph()
        g.add_nodes_from(set(comp.values()))
        g.add_edges_from((comp[c.producer], comp[c.consumer]) for c in eg.channels if c.job_edge == "b")
        for scc in nx.strongly_connected_components(g):
            first, *rest = sorted(scc)
            for r in rest:
                parent[find(r)] = find(first)
    groups: dict = {}
    for s in range(len(eg.subtasks)):
        groups.setdefault(find(s), set()).add(s)
    return sorted((frozenset(g) for g in groups.values()), key=min)


#: source 0,1 -pipelined-> map 2,3 -blocking-> agg 4,5 -pipelined-> sink 6; and 7 -> 8 on its own
DIAMOND = _eg(9, pipelined=[(0, 2), (1, 3), (4, 6), (5, 6), (7, 8)],
              blocking=[(2, 4), (2, 5), (3, 4), (3, 5)])
#: X -blocking-> Y -blocking-> Z with X and Z joined by a pipelined channel: the region graph
#: has a cycle, so Flink merges the two regions into one
BLOCKING_CYCLE = _eg(3, pipelined=[(0, 2)], blocking=[(0, 1), (1, 2)])


def test_regions_are_pipelined_components_ordered_by_smallest_subtask():
    assert list(pipelined_regions(DIAMOND)) == _regions_by_hand(DIAMOND)
    assert list(pipelined_regions(DIAMOND)) == [frozenset({0, 2}), frozenset({1, 3}), frozenset({4, 5, 6}),
                                                frozenset({7, 8})]


def test_regions_joined_by_a_cycle_of_blocking_channels_are_one_region():
    assert list(pipelined_regions(BLOCKING_CYCLE)) == [frozenset({0, 1, 2})] == _regions_by_hand(BLOCKING_CYCLE)
    # a blocking channel inside one region adds nothing
    inner = _eg(2, pipelined=[(0, 1)], blocking=[(0, 1)])
    assert list(pipelined_regions(inner)) == [frozenset({0, 1})]
    # regions listed by smallest subtask even when the blocking edge runs from the larger one
    back = _eg(2, blocking=[(1, 0)])
    assert list(pipelined_regions(back)) == [frozenset({0}), frozenset({1})]


def _closure(eg, failed, *, consumers=True):
    """The failed subtasks' regions and, transitively, every consumer region (Flink's
    RestartPipelinedRegionFailoverStrategy without lost partitions)."""
    regions = _regions_by_hand(eg)
    of = {s: i for i, r in enumerate(regions) for s in r}
    g = nx.DiGraph()
    g.add_nodes_from(range(len(regions)))
    g.add_edges_from((of[c.producer], of[c.consumer]) for c in eg.channels if of[c.producer] != of[c.consumer])
    start = {of[s] for s in failed}
    reach = set(start)
    if consumers:
        for r in start:
            reach |= nx.descendants(g, r)
    return frozenset().union(*(regions[r] for r in reach))


def test_region_restart_set_is_the_closure_over_consumer_regions_for_every_set_of_failed_subtasks():
    strategy = failover_strategy(DIAMOND, "region")
    for k in (1, 2, 3):
        for failed in combinations(range(9), k):
            assert strategy.tasks_to_restart(list(failed)) == _closure(DIAMOND, failed), failed


def test_lost_blocking_partitions_restart_their_producers():
    strategy = RestartPipelinedRegionFailoverStrategy(DIAMOND)
    lost = {c.id for c in DIAMOND.channels if (c.producer, c.consumer) == (2, 4)}
    assert strategy.tasks_to_restart([4], frozenset(lost)) == frozenset({0, 2, 4, 5, 6})
    assert strategy.tasks_to_restart([4]) == frozenset({4, 5, 6})
    assert strategy.tasks_to_restart([]) == frozenset()


def test_consumer_regions_restart_unless_the_unsafe_seam_skips_them():
    strategy = RestartPipelinedRegionFailoverStrategy(DIAMOND)
    assert strategy.tasks_to_restart([0]) == frozenset({0, 2, 4, 5, 6})
    with seams.active(("skip-consumer-regions",)):
        assert strategy.tasks_to_restart([0]) == frozenset({0, 2})
    with seams.active(("backtrack-every-blocking-input",)):  # still-available blocking inputs' producers too
        assert strategy.tasks_to_restart([4]) > frozenset({4, 5, 6})
    assert strategy.tasks_to_restart([4]) == frozenset({4, 5, 6})
    assert failover_strategy(DIAMOND, "full").tasks_to_restart([0]) == frozenset(range(9))
    assert isinstance(failover_strategy(DIAMOND, "full"), RestartAllFailoverStrategy)
