"""The exhaustive search on Spark: each level of the breadth-first search expanded by the
executors, the new states deduplicated by ``Run.fingerprint`` in a shuffle.

``properties.explore.explore`` drives the search level by level; :class:`SparkLevels` is what
expands a level there (instead of ``LocalLevels``):

    frontier (traces + sleep sets, sorted)                        driver
      -> parallelize(numSlices = executor cores)
      -> mapPartitions(expand_partition)   every child of every state:  executors
             (fingerprint, (trace key, trace, violation, sleep set, drained))
      -> reduceByKey(merge)                one row per state: the smallest trace, the
                                           intersection of the sleep sets (shuffle by fingerprint)
      -> collect                           the states not seen before join the next frontier

An executor holds no state between levels: it rebuilds a frontier state by replaying its trace
from the scenario (``Cluster.step``, the one step function; the invariants are not judged
again on the way -- the driver's earlier levels judged every prefix). So the states, the
counts, the depth and the counterexample are those of the local search (tests/test_explore.py
compares them), whatever the number of executors.

Deliberate simplification: the set of fingerprints seen stays on the driver (the small
scenarios' spaces are thousands to a few hundred thousand states); the time limit is checked
between levels.
"""

from __future__ import annotations

import functools
from typing import Iterator

from properties.explore import violation_trace, Level, _key, expand, replay_trace

#: the key of the rows that carry a partition's transition count
_COUNT = "#transitions"


def expand_partition(scenario, reduce: bool, rows: Iterator) -> Iterator[tuple]:
    """``mapPartitions`` body: the children of each frontier state ``(trace, sleep)``."""
    count = 0
    for trace, sleep in rows:
        run = replay_trace(scenario, trace)
        for a, child, v, child_sleep in expand(run, trace, sleep, reduce, consume=True):
            count += 1
            t = trace + (a,)
            if v is not None:
                yield ("!" + repr(_key(t)), (_key(t), violation_trace(t, child), v, frozenset(), False))
                continue
            c = child.cluster
            row = (child.fingerprint(), (_key(t), t, None, child_sleep, c.is_drained()))
            child.dispose()  # only the trace leaves the executor
            yield row
    yield (_COUNT, count)


def merge(x, y):
    """Two rows of one state: the smaller trace represents it, sleeping on what both sleep on
    (counts, which never share a key with a state, are added)."""
    if type(x) is int:
        return x + y
    if y[0] < x[0]:
        x, y = y, x
    return x[:3] + (x[3] & y[3], x[4])


class SparkLevels:
    """Expands each level on the executors of ``spark`` (a SparkSession)."""

    def __init__(self, spark, scenario, reduce: bool):
        self.sc = spark.sparkContext
        self.scenario = scenario
        self.reduce = reduce
        self.workers = max(1, self.sc.defaultParallelism)

    def expand(self, frontier: list, seen: set, watch, report) -> Level:
        slices = max(1, min(len(frontier), self.workers * 4))
        rows = [(trace, sleep) for trace, _run, sleep in frontier]
        body = functools.partial(expand_partition, self.scenario, self.reduce)
        merged = (self.sc.parallelize(rows, slices).mapPartitions(body)
                  .reduceByKey(merge, numPartitions=self.workers).collect())
        level = Level()
        for fp, row in merged:
            if fp == _COUNT:
                level.transitions += row
            elif fp.startswith("!"):
                level.violations.append((row[0], row[1], row[2]))
            elif fp not in seen:
                key, trace, _v, sleep, drained = row
                level.add(fp, key, trace, None, sleep, drained)
        report(len(level.states), level.transitions)
        if level.states and not level.violations:
            level.stopped = watch.check()
        return level
