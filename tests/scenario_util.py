"""Helpers for the hand-written runtime and failure scenarios.

Scenarios look channels and subtasks up *by name* in the ExecutionGraph (``chan(eg,
("src", 0), ("win", 1))``), never by magic number, so a change in the numbering scheme
breaks loudly instead of silently driving a different scenario.
"""

from __future__ import annotations

import random

from model import actions as A
from model.cluster import Cluster, JobInput, RuntimeConfig, drain
from model.environment import Environment
from model.events import CheckpointBarrier, CancelCheckpointMarker, EndOfPartitionEvent, Watermark, WatermarkStatus
from model.executiongraph import compile_stream_graph
from model.oracle import diff_outputs
from model.reference import comparison_mode, reference_output, sink_output_by_operator
from model.scope import ModelScope


def sub(eg, vertex: str, index: int) -> int:
    """The dense subtask id of subtask ``index`` of JobVertex ``vertex``."""
    return eg.subtask_id(vertex, index)


def chan(eg, producer: tuple[str, int], consumer: tuple[str, int]) -> int:
    """The id of the unique channel from subtask ``producer`` to subtask ``consumer``
    (each given as ``(job vertex, subtask index)``)."""
    p = sub(eg, *producer)
    c = sub(eg, *consumer)
    found = [ch.id for ch in eg.channels if ch.producer == p and ch.consumer == c]
    assert len(found) == 1, f"expected one channel {producer} -> {consumer}, found {found}"
    return found[0]


def kinds(channel) -> list[str]:
    """The element kinds queued in a channel deque, for readable assertions."""
    out = []
    for e in channel:
        t = type(e)
        if t is tuple:
            out.append("rec")
        elif t is Watermark:
            out.append(f"wm{e.timestamp}")
        elif t is WatermarkStatus:
            out.append("IDLE" if e.idle else "ACTIVE")
        elif t is CheckpointBarrier:
            out.append(f"{'UC' if e.unaligned else 'FA' if e.forced_aligned else 'AC'}{e.id}")
        elif t is CancelCheckpointMarker:
            out.append(f"cancel{e.checkpoint_id}")
        elif t is EndOfPartitionEvent:
            out.append("EOP")
        else:  # pragma: no cover
            out.append(repr(e))
    return out


def records(channel) -> list[tuple]:
    return [e for e in channel if type(e) is tuple]


def enabled(c: Cluster, kind) -> list:
    return [a for a in c.enabled_actions() if type(a) is kind]


def deliver_until_empty(c: Cluster, channel: int) -> None:
    """Deliver the head of ``channel`` while it is enabled."""
    while A.Deliver(channel) in c.enabled_actions():
        c.step(A.Deliver(channel))


def random_walk(c: Cluster, seed: int, steps: int, exclude: tuple = ()) -> list:
    """``steps`` seeded random choices over ``enabled_actions`` (minus the types in
    ``exclude``); returns the actions taken."""
    rng = random.Random(seed)
    taken = []
    for _ in range(steps):
        acts = [a for a in c.enabled_actions() if type(a) not in exclude]
        if not acts:
            break
        a = rng.choice(acts)
        c.step(a)
        taken.append(a)
    return taken


def oracle_diffs(graph, job_input, cluster) -> dict:
    """Per sink: the OutputDiff of ``cluster``'s committed output against the p=1 reference
    (upsert sinks by their final table; rolling counts as (key, count) multisets; rolling
    sums per key by number of outputs; everything else as a multiset). Only non-empty diffs are returned."""
    expected = reference_output(graph, job_input)
    actual = sink_output_by_operator(cluster)
    ops = {o.name: o for o in graph.operators}
    out = {}
    for name, exp in expected.items():
        got = actual.get(name, [])
        if ops[name].sink_kind == "upsert":
            d = diff_outputs(exp, got, mode="upsert")
        elif comparison_mode(graph, name) == "rolling":
            d = diff_outputs([(k, None, None) for k, _v, _t in exp], [(k, None, None) for k, _v, _t in got])
        elif comparison_mode(graph, name) == "rolling_count":
            d = diff_outputs([(k, v, None) for k, v, _t in exp], [(k, v, None) for k, v, _t in got])
        else:
            d = diff_outputs(exp, got, mode="multiset")
        if not d.ok:
            out[name] = d
    return out


def fresh(graph, job_input: JobInput, config: RuntimeConfig, seed: int = 0,
          environment: Environment | None = None, seams: tuple = (), channel_capacity: int | None = None) -> Cluster:
    """A Cluster of ``graph``; ``channel_capacity``: the model's coarse channels' capacity
    (``ModelScope``; None: its default)."""
    scope = None if channel_capacity is None else ModelScope(channel_capacity=channel_capacity)
    return Cluster(compile_stream_graph(graph), job_input, config, seed=seed, environment=environment, seams=seams,
                   scope=scope)


def replay(graph, job_input: JobInput, config: RuntimeConfig, seed: int, trace,
           environment: Environment | None = None, channel_capacity: int | None = None) -> Cluster:
    c = fresh(graph, job_input, config, seed, environment, channel_capacity=channel_capacity)
    for a in trace:
        c.step(a)
    return c


def assert_old_file_refused_then_migrated(tmp_path, src, make_old, refusal: str) -> None:
    """``make_old(header)`` turns the header of the committed counterexample ``src`` into what
    an older flinkspec wrote: loading that file is refused with ``refusal`` (a regex), and
    ``tools/migrate_knobs.py`` rewrites it to exactly ``src``, which replays."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import pytest

    from properties.counterexample import CounterexampleError, load_counterexample, replay_counterexample

    f = tmp_path / "old.ndjson"
    shutil.copy(src, f)
    lines = f.read_text().splitlines()
    header = json.loads(lines[0])
    make_old(header)
    f.write_text("\n".join([json.dumps(header, sort_keys=True, separators=(",", ":"))] + lines[1:]) + "\n")
    with pytest.raises(CounterexampleError, match=refusal):
        load_counterexample(f, known_variant=True)
    tool = Path(__file__).resolve().parent.parent / "tools" / "migrate_knobs.py"
    out = subprocess.run([sys.executable, str(tool), str(tmp_path)], capture_output=True, text=True, check=True).stdout
    assert "1 of 1 file(s) rewritten" in out
    assert f.read_bytes() == Path(src).read_bytes()  # exactly the file the engines write now
    ok, _ = replay_counterexample(load_counterexample(f, known_variant=True))
    assert ok


__all__ = [
    "A", "Cluster", "Environment", "JobInput", "RuntimeConfig", "drain", "compile_stream_graph", "sub", "chan", "kinds",
    "records", "enabled", "deliver_until_empty", "random_walk", "oracle_diffs", "fresh", "replay",
]


class RecordingTask:
    """The handler's task context; ``log`` holds every request, barriers in full."""

    def __init__(self, n: int):
        self.barrier_channels = list(range(n))
        self.log: list[tuple] = []

    def take(self) -> list[tuple]:
        log, self.log = self.log, []
        return log

    def block(self, ch):
        self.log.append(("block", ch))

    def resume(self, ch):
        self.log.append(("resume", ch))

    def resume_all(self):
        self.log.append(("resume_all",))

    def trigger(self, barrier, unaligned):
        self.log.append(("trigger", barrier, unaligned))

    def abort(self, checkpoint_id, reason):
        self.log.append(("abort", checkpoint_id, reason))

    def start_persisting(self, checkpoint_id, channels):
        self.log.append(("persist", checkpoint_id, tuple(channels)))

    def stop_persisting(self, ch):
        self.log.append(("stop_persisting", ch))

    def stop_persisting_all(self):
        self.log.append(("stop_persisting_all",))

    def channel_state_complete(self, checkpoint_id):
        self.log.append(("channel_state_complete", checkpoint_id))

    def register_timer(self, checkpoint_id, deadline):
        self.log.append(("timer", checkpoint_id, deadline))


def safe_twin(scenario):
    """``scenario`` with none of its seams switched on: the safe twin of an unsafe variant's run."""
    import attrs  # (attrs is only needed by the twin helpers)

    return attrs.evolve(scenario, seams=())


def assert_safe_twin_takes_the_same_actions(scenario, actions) -> None:
    """Each of ``actions`` is enabled in the safe twin in turn and violates nothing, and the
    drained run passes: what the unsafe run broke is its seams' doing."""
    from properties.engines import Run  # tests/ helper: the engines only where a test judges a run

    run = Run(safe_twin(scenario))
    for a in actions:
        assert run.cluster.why_not_enabled(a) is None, a
        assert run.step(a) is None
    assert run.finish() is None
