"""Restart strategies: fixed-delay attempts, failure-rate and no-restart as bounded counters.

Topology (one region):

    source (p=1) --hash--> count (p=1) --forward--> sink (p=1, two-phase commit)
"""

import pytest

from model import actions as A
from model.cluster import Cluster, JobInput, RuntimeConfig
from model.environment import Environment
from model.errors import FlinkspecError
from model.executiongraph import compile_stream_graph
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph

GRAPH = StreamGraph(
    operators=(
        OperatorSpec(name="source", kind="source"),
        OperatorSpec(name="count", kind="keyed_aggregate", aggregate="count"),
        OperatorSpec(name="sink", kind="sink", sink_kind="two_phase_commit"),
    ),
    edges=(EdgeSpec(source="source", target="count", partitioner="hash"),
           EdgeSpec(source="count", target="sink", partitioner="forward")),
).validate()
INPUT = JobInput({"source": (((1, 1, 1), (2, 1, 2)),)})


def cluster(**cfg):
    return Cluster(compile_stream_graph(GRAPH), INPUT, RuntimeConfig(**cfg), environment=Environment(max_failures=10))


def fail(c, times, gap=0):
    for _ in range(times):
        for _ in range(gap):  # let logical time pass with actions that fail nothing
            c.step(next(a for a in c.enabled_actions()
                        if isinstance(a, (A.SourceWatermark, A.TriggerCheckpoint, A.CheckpointTimeout))))
        if c.status != "RUNNING":
            return
        c.step(A.FailTask(0))


def test_fixed_delay_allows_exactly_the_attempts():
    c = cluster(restart_strategy="fixed-delay", restart_attempts=2)
    fail(c, 2)
    assert c.status == "RUNNING" and c.restarts == 2
    fail(c, 1)
    assert c.status == "FAILED"
    assert not [a for a in c.enabled_actions() if isinstance(a, (A.FailTask, A.TriggerCheckpoint))]


def test_failure_rate_counts_failures_within_the_interval():
    # 2 failures per 5 steps: the 2nd failure right after the 1st is too fast
    c = cluster(restart_strategy="failure-rate", failure_rate_max_failures=2, failure_rate_interval=5)
    fail(c, 1)
    fail(c, 1)
    assert c.status == "FAILED"
    # the same failures spread out are fine
    c = cluster(restart_strategy="failure-rate", failure_rate_max_failures=2, failure_rate_interval=5)
    fail(c, 3, gap=6)
    assert c.status == "RUNNING" and c.restarts == 3


def test_no_restart_fails_on_the_first_failure():
    c = cluster(restart_strategy="none")
    fail(c, 1)
    assert c.status == "FAILED"


def test_bad_restart_configuration_is_a_clear_error():
    with pytest.raises(FlinkspecError, match="restart_strategy"):
        RuntimeConfig(restart_strategy="exponential")
