"""model.failover call by call: each failover strategy's tables asserted right after it is built
and after each call, as ``RestartPipelinedRegionFailoverStrategy`` and ``RestartAllFailoverStrategy``
leave them -- so that a wrong table is a failing assertion here, not an exception in a later
call."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from model import seams
from model.errors import FlinkspecError
from model.failover import (RestartAllFailoverStrategy, RestartPipelinedRegionFailoverStrategy, _regions,
                            channel_is_blocking, failover_strategy, pipelined_regions, regions_merged_from_cycles)
from model.jobgraph import BLOCKING


def _eg(n: int, pipelined=(), blocking=()):
    """A duck-typed ExecutionGraph: subtasks 0..n-1, channels (producer, consumer), the
    pipelined ones first, numbered in that order."""
    edges = {"p": NS(result_partition_type="PIPELINED_BOUNDED"), "b": NS(result_partition_type=BLOCKING)}
    chans = [NS(id=i, producer=a, consumer=b, job_edge=kind)
             for i, (a, b, kind) in enumerate([(a, b, "p") for a, b in pipelined] + [(a, b, "b") for a, b in blocking])]
    return NS(subtasks=[NS(id=i) for i in range(n)], channels=chans, job_graph=NS(edges=edges))


#: source 0,1 -pipelined-> map 2,3 -blocking-> agg 4,5 -pipelined-> sink 6; and 7 -> 8 on its own
#: channels 0-4 pipelined ((0,2) (1,3) (4,6) (5,6) (7,8)), 5-8 blocking ((2,4) (2,5) (3,4) (3,5))
DIAMOND = _eg(9, pipelined=[(0, 2), (1, 3), (4, 6), (5, 6), (7, 8)],
              blocking=[(2, 4), (2, 5), (3, 4), (3, 5)])
#: 0 -blocking-> 1 -blocking-> 2 with 0 and 2 joined by a pipelined channel (channel 0): one region
#: of two components; and 3 alone
CYCLE = _eg(4, pipelined=[(0, 2)], blocking=[(0, 1), (1, 2)])


def test_a_new_region_strategy_without_channels_between_regions():
    """First: a strategy whose construction never touches the region graph's tables (no channel
    crosses two regions), so a wrong initial table fails here on the assertion."""
    cyc = RestartPipelinedRegionFailoverStrategy(CYCLE)
    assert cyc.regions == (frozenset({0, 1, 2}), frozenset({3}))
    assert cyc.region_of == {0: 0, 1: 0, 2: 0, 3: 1}
    assert cyc.consumed_by == {0: set(), 1: set()}
    assert cyc.inputs_of == {0: [], 1: []}
    assert cyc.tasks_to_restart([3]) == frozenset({3})
    assert cyc.tasks_to_restart([1], frozenset({1})) == frozenset({0, 1, 2})


class _Visiting(RestartPipelinedRegionFailoverStrategy):
    """The region strategy recording the regions whose consumers it asks for: each region is
    visited once (Flink's ``RestartPipelinedRegionFailoverStrategy`` keeps the visited regions
    in a set), so a second visit fails at once instead of looping."""

    def __init__(self, eg):
        super().__init__(eg)
        self.asked: list = []

    def consumer_regions(self, r):
        assert r not in self.asked, f"region {r} visited twice: {self.asked}"
        self.asked.append(r)
        return super().consumer_regions(r)


def test_each_region_is_visited_once_in_the_order_of_the_stack():
    strategy = _Visiting(DIAMOND)
    # region 2 fails; its input channel 7 ((3, 4)) is lost: region 1 backtracked, whose consumer
    # region 2 is already restarting
    assert strategy.tasks_to_restart([5], frozenset({7})) == frozenset({1, 3, 4, 5, 6})
    assert strategy.asked == [2, 1]
    strategy.asked.clear()
    assert strategy.tasks_to_restart([0, 1]) == frozenset({0, 1, 2, 3, 4, 5, 6})
    assert strategy.asked == [1, 2, 0]


def test_channel_is_blocking_reads_the_job_edges_result_partition_type():
    assert [channel_is_blocking(DIAMOND, ch) for ch in DIAMOND.channels] == [False] * 5 + [True] * 4


def test_regions_with_the_count_of_components_each_merges():
    assert _regions(DIAMOND) == [(frozenset({0, 2}), 1), (frozenset({1, 3}), 1), (frozenset({4, 5, 6}), 1),
                                 (frozenset({7, 8}), 1)]
    assert _regions(CYCLE) == [(frozenset({0, 1, 2}), 2), (frozenset({3}), 1)]
    assert pipelined_regions(CYCLE) == (frozenset({0, 1, 2}), frozenset({3}))
    assert regions_merged_from_cycles(CYCLE) == (frozenset({0, 1, 2}),)
    assert regions_merged_from_cycles(DIAMOND) == ()
    # a blocking channel inside one pipelined component adds no edge and merges nothing
    assert _regions(_eg(2, pipelined=[(0, 1)], blocking=[(0, 1)])) == [(frozenset({0, 1}), 1)]
    assert _regions(_eg(2, blocking=[(1, 0)])) == [(frozenset({0}), 1), (frozenset({1}), 1)]
    assert _regions(_eg(0)) == []


def test_a_new_region_strategy_holds_its_regions_and_the_region_graph():
    strategy = RestartPipelinedRegionFailoverStrategy(DIAMOND)
    assert strategy.eg is DIAMOND
    assert strategy.regions == (frozenset({0, 2}), frozenset({1, 3}), frozenset({4, 5, 6}), frozenset({7, 8}))
    assert strategy.region_of == {0: 0, 2: 0, 1: 1, 3: 1, 4: 2, 5: 2, 6: 2, 7: 3, 8: 3}
    assert strategy.consumed_by == {0: {2}, 1: {2}, 2: set(), 3: set()}
    ch = DIAMOND.channels
    assert strategy.inputs_of == {0: [], 1: [], 2: [ch[5], ch[6], ch[7], ch[8]], 3: []}
    assert strategy.name == "region"
    # the merged cycle: one region, no edge between regions
    cyc = RestartPipelinedRegionFailoverStrategy(CYCLE)
    assert cyc.regions == (frozenset({0, 1, 2}), frozenset({3}))
    assert cyc.region_of == {0: 0, 1: 0, 2: 0, 3: 1}
    assert (cyc.consumed_by, cyc.inputs_of) == ({0: set(), 1: set()}, {0: [], 1: []})


def test_a_new_restart_all_strategy_holds_every_subtask():
    strategy = RestartAllFailoverStrategy(DIAMOND)
    assert strategy.all == frozenset(range(9)) and strategy.name == "full"
    assert strategy.tasks_to_restart([3]) == frozenset(range(9))
    assert strategy.tasks_to_restart([], frozenset({5})) == frozenset(range(9))
    assert strategy.all == frozenset(range(9))


def test_each_restart_set_and_the_tables_unchanged_after_it():
    strategy = RestartPipelinedRegionFailoverStrategy(DIAMOND)
    before = (strategy.regions, dict(strategy.region_of), {k: set(v) for k, v in strategy.consumed_by.items()},
              {k: list(v) for k, v in strategy.inputs_of.items()})
    assert strategy.tasks_to_restart([8]) == frozenset({7, 8})
    assert strategy.tasks_to_restart([6]) == frozenset({4, 5, 6})
    assert strategy.tasks_to_restart([1]) == frozenset({1, 3, 4, 5, 6})
    assert strategy.tasks_to_restart([2, 7]) == frozenset({0, 2, 4, 5, 6, 7, 8})
    assert strategy.tasks_to_restart([]) == frozenset()
    assert strategy.tasks_to_restart([], frozenset({5})) == frozenset()
    # channel 7 is (3, 4): its partition lost, the producer's region restarts, then its consumers
    assert strategy.tasks_to_restart([5], frozenset({7})) == frozenset({1, 3, 4, 5, 6})
    assert strategy.tasks_to_restart([5], frozenset({5, 8})) == frozenset({0, 1, 2, 3, 4, 5, 6})
    # a lost partition of a region that does not restart changes nothing
    assert strategy.tasks_to_restart([8], frozenset({5})) == frozenset({7, 8})
    assert (strategy.regions, strategy.region_of, strategy.consumed_by, strategy.inputs_of) == before


def test_the_region_strategys_two_questions():
    strategy = RestartPipelinedRegionFailoverStrategy(DIAMOND)
    assert [strategy.consumer_regions(r) for r in range(4)] == [{2}, {2}, set(), set()]
    ch = DIAMOND.channels
    assert strategy.producer_to_backtrack(ch[5], frozenset({5})) is True
    assert strategy.producer_to_backtrack(ch[5], frozenset({6})) is False
    assert strategy.producer_to_backtrack(ch[5], frozenset()) is False
    with seams.active(("skip-consumer-regions",)):
        assert tuple(strategy.consumer_regions(0)) == ()
    with seams.active(("backtrack-every-blocking-input",)):
        assert strategy.producer_to_backtrack(ch[5], frozenset()) is True
        assert strategy.producer_to_backtrack(ch[0], frozenset()) is False
        assert strategy.producer_to_backtrack(ch[0], frozenset({0})) is True
    with seams.active(("FLINK-12068",)):
        assert strategy.producer_to_backtrack(ch[5], frozenset({5})) is False
        assert strategy.tasks_to_restart([4], frozenset({5})) == frozenset({4, 5, 6})


def test_failover_strategy_by_name():
    assert type(failover_strategy(DIAMOND, "full")) is RestartAllFailoverStrategy
    region = failover_strategy(DIAMOND, "region")
    assert type(region) is RestartPipelinedRegionFailoverStrategy and region.eg is DIAMOND
    with pytest.raises(FlinkspecError, match=r"^failover_strategy must be 'full' or 'region', not 'none'$"):
        failover_strategy(DIAMOND, "none")
