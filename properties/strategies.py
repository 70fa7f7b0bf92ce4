"""Hypothesis strategies for scenarios: job specs, inputs and runtime configurations.

* ``job_inputs(graph)`` — records per source split with out-of-order event times (bounded by
  each source's out-of-orderness, so that no record is late unless a source goes idle),
  duplicate keys (few distinct keys), negative timestamps, and empty splits.
* ``runtime_configs(safe=True)`` — a ``RuntimeConfig`` (checkpointing mode: aligned, unaligned,
  alternating, at-least-once only when ``safe=False``; concurrency, channel capacity, failover
  strategy) and an ``Environment`` (failures, savepoints while running, trigger RPCs in any order).
* ``scenarios()`` — any valid job (``properties.jobgraphs.stream_graphs``) with an input and a
  configuration; idle periods come from the SourceIdle/SourceActive actions the engines pick.
"""

from __future__ import annotations

from hypothesis import strategies as st

from model.cluster import JobInput, RuntimeConfig
from model.environment import TRIGGER_DELIVERY, Environment
from model.scope import ModelScope
from model.sinks import EXACTLY_ONCE_SINK_KINDS, SINK_KINDS
from model.variants import Scenario
from properties.jobgraphs import stream_graphs

keys = st.one_of(st.integers(-3, 5), st.sampled_from(["a", "b", "c", "é", "𝄞"]))


@st.composite
def split_records(draw, out_of_orderness: int, max_records: int = 8):
    n = draw(st.integers(0, max_records))
    t = draw(st.integers(-20, 10))
    out = []
    for _ in range(n):
        t += draw(st.integers(0, 3))
        late_by = draw(st.integers(0, out_of_orderness))
        out.append((draw(keys), draw(st.integers(-5, 9)), t - late_by))
    return tuple(out)


@st.composite
def job_inputs(draw, graph):
    splits = {}
    for o in graph.operators:
        if o.kind != "source":
            continue
        n = draw(st.integers(1, o.parallelism + 1))
        splits[o.name] = tuple(draw(split_records(o.watermark_out_of_orderness)) for _ in range(n))
    return JobInput(splits)


@st.composite
def runtime_configs(draw, safe: bool = True):
    """A (RuntimeConfig, Environment, ModelScope) triple."""
    mode = draw(st.sampled_from(["aligned", "unaligned", "alternating"] + ([] if safe else ["at_least_once"])))
    kw = dict(
        max_concurrent_checkpoints=draw(st.integers(1, 2)),
        failover_strategy=draw(st.sampled_from(["region", "full"])),
    )
    env = Environment(max_failures=draw(st.integers(0, 2)), trigger_savepoints=draw(st.booleans()),
                      trigger_delivery=draw(st.sampled_from(TRIGGER_DELIVERY)))
    if mode == "at_least_once":
        kw["checkpointing_mode"] = "at_least_once"
    elif mode == "unaligned":
        kw["unaligned"] = True
    elif mode == "alternating":
        kw.update(unaligned=True, aligned_checkpoint_timeout=draw(st.integers(0, 6)))
    scope = ModelScope(channel_capacity=draw(st.integers(1, 4)))
    return RuntimeConfig(**kw), env, scope


@st.composite
def scenarios(draw, safe: bool = True):
    """A job, its input and a runtime configuration. ``safe``: only settings under which the
    runtime promises exactly-once (no at-least-once checkpointing, only sinks whose output is
    exactly-once across failures: an append sink under failures duplicates by design)."""
    graph = draw(stream_graphs(max_operators=5, max_parallelism=3,
                               sink_kinds=EXACTLY_ONCE_SINK_KINDS if safe else SINK_KINDS))
    job_input = draw(job_inputs(graph))
    config, env, scope = draw(runtime_configs(safe))
    return Scenario(graph=graph, job_input=job_input, config=config, seed=draw(st.integers(0, 1000)), environment=env,
                    scope=scope)
