"""``flinkspec bench model``: model steps per second on a fixed reference job.

The reference job (examples/reference-window-job.toml): source p=2 --keyBy--> tumbling
event-time window p=3 --rebalance--> two-phase-commit sink p=2; 10,000 records; a
checkpoint every 500 steps; random delivery order from a fixed seed.

Method: the trace is recorded once (choosing uniformly among the enabled data actions,
triggering a checkpoint every 500 steps and delivering completion notifications), then
timed twice in the same process:

* ``steps_per_second``: replaying the trace through ``Cluster.step`` on a fresh cluster;
* ``floor_steps_per_second``: a bare loop doing only the channel deque operations of the
  same trace (an append per record a source emits, a popleft per delivery plus the append
  of what the consumer forwards), i.e. the cost of moving the same elements with no model.

``ratio = floor_steps_per_second / steps_per_second`` is what the model's bookkeeping costs
over moving data. Best of ``repeat`` timings each.
"""

from __future__ import annotations

import json
import random
import time
from collections import deque
from pathlib import Path

from model import actions as A
from model.cluster import Cluster, JobInput, RuntimeConfig
from model.executiongraph import compile_stream_graph
from model.streamgraph import load_stream_graph

REFERENCE_JOB = Path(__file__).resolve().parents[1] / "examples" / "reference-window-job.toml"


def reference_input(records: int = 10_000, seed: int = 7) -> JobInput:
    rng = random.Random(seed)
    splits = []
    per = records // 2
    for _ in range(2):
        t = 0
        out = []
        for _ in range(per):
            t += rng.randint(0, 2)
            out.append((rng.randrange(100), rng.randint(1, 9), t - rng.randint(0, 2)))
        splits.append(tuple(out))
    return JobInput({"source": tuple(splits)})


def record_trace(records: int = 10_000, seed: int = 7, checkpoint_every: int = 500):
    graph = load_stream_graph(REFERENCE_JOB)
    eg = compile_stream_graph(graph)
    job_input = reference_input(records, seed)
    c = Cluster(eg, job_input, RuntimeConfig(), seed=seed)
    rng = random.Random(seed)
    data_kinds = (A.Deliver, A.SourceEmit, A.SourceWatermark, A.SourceEnd, A.NotifyCheckpointComplete)
    while True:
        if c.now and c.now % checkpoint_every == 0 and not c.coordinator.num_pending \
                and any(t.status == "RUNNING" for t in c.source_tasks):
            c.step(A.TriggerCheckpoint())
            continue
        acts = [a for a in c.enabled_actions() if type(a) in data_kinds]
        if not acts:
            break
        c.step(rng.choice(acts))
    return eg, job_input, list(c.trace), c


def _time_model(eg, job_input, trace, seed) -> float:
    c = Cluster(eg, job_input, RuntimeConfig(), seed=seed)
    step = c.step
    t0 = time.perf_counter()
    for a in trace:
        step(a)
    return time.perf_counter() - t0


def _floor_ops(eg, trace):
    """The deque operations of the trace: (kind, channel, forward_to) tuples."""
    out_of: dict[int, int | None] = {}
    for st in eg.subtasks:
        chans = [c for part in eg.partitions[st.id] for c in part.channels]
        out_of[st.id] = chans[0] if chans else None
    ops = []
    for a in trace:
        t = type(a)
        if t is A.SourceEmit:
            ops.append((0, out_of[a.subtask], -1))
        elif t is A.Deliver:
            fwd = out_of[eg.channels[a.channel].consumer]
            ops.append((1, a.channel, -1 if fwd is None else fwd))
        else:
            ops.append((2, -1, -1))
    return ops


def _time_floor(eg, ops) -> float:
    chans = [deque() for _ in eg.channels]
    rec = (1, 1, 1)
    t0 = time.perf_counter()
    for kind, ch, fwd in ops:
        if kind == 0:
            chans[ch].append(rec)
        elif kind == 1:
            q = chans[ch]
            e = q.popleft() if q else rec
            if fwd >= 0:
                chans[fwd].append(e)
    return time.perf_counter() - t0


def bench_model(records: int = 10_000, seed: int = 7, repeat: int = 3) -> dict:
    eg, job_input, trace, recorded = record_trace(records, seed)
    model_t = min(_time_model(eg, job_input, trace, seed) for _ in range(repeat))
    ops = _floor_ops(eg, trace)
    floor_t = min(_time_floor(eg, ops) for _ in range(repeat))
    sps = len(trace) / model_t
    fsps = len(trace) / floor_t
    return {
        "benchmark": "model",
        "job": "source p=2 -> keyBy -> tumbling window p=3 -> 2PC sink p=2",
        "records": records,
        "steps": len(trace),
        "checkpoints_completed": len(recorded.completed_ids),
        "steps_per_second": round(sps),
        "floor_steps_per_second": round(fsps),
        "ratio": round(fsps / sps, 2),
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(bench_model()))
