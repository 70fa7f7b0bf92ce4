"""Conformance with real Flink: random jobs run on a Flink 2.3.0 MiniCluster and in the model.

``flinkspec conform --runs N --seed S`` draws N jobs (:func:`generate_job`, deterministic in the
run's seed ``S + i``), runs each in real Flink through ``tools/flink_conform_driver.py`` (PyFlink
in ``.venv-flink``; several jobs per JVM) and in the model (:func:`model_side`: the same job,
the same failure after the same number of completed checkpoints, the same stop-with-savepoint
and restart with new parallelisms), and compares (:func:`compare`).

A job: a ``DataGeneratorSource`` with one split of ``split_len`` records per source subtask
(``(key, value, timestamp)`` drawn by ``model.jobfile.generate_input``: no record is late for the
watermark ``BoundedOutOfOrdernessWatermarks`` gives), maybe a map and a filter (named functions
of ``model.functions``), ``keyBy`` and one keyed operator -- a rolling ``count``/``sum`` held
in keyed ``ValueState``, or a tumbling or sliding event-time window -- and an exactly-once
sink (Flink's ``FileSink``, the model's two-phase-commit sink). Sources emit ``cap`` records
per subtask, then wait for the next completed checkpoint
(``RateLimiterStrategy.perCheckpoint``), in both.

Variation, by the run's seed modulo 5: an injected failure (0, 1, 2: an operator throws once at
a chosen record; records at an offset of ``cap * c`` or more are emitted only after ``c``
checkpoints completed, so the failure comes after checkpoint ``c``), a stop-with-savepoint after
``cap`` records per split followed by a restart with other parallelisms (2, 3: the keyed
operator's group always, other groups sometimes; up and down; max parallelism 4 to 10, so key
groups split unevenly), both (2), or neither (4).

Compared, per run (each difference is one line of :attr:`RunResult.differences`):

* the committed output of Flink, and of the model's run, against the model's oracle
  (``model.reference.reference_output``: the job at parallelism 1 without failures) -- exactly
  as multisets of ``(key, value, timestamp)`` when every operator before ``keyBy`` runs at
  parallelism 1; otherwise a rolling aggregate's values depend on the order in which the
  key's records arrive over several channels, and ``(key, timestamp)`` (and for a count
  ``(key, value)``) multisets are compared;
* the key group of each key (Flink's ``KeyGroupRangeAssignment`` through the gateway vs
  ``model.keygroups``) and, for every keyed observation in Flink (a key first seen, a final
  value, a window firing), that the subtask holding the key is the one whose key-group range
  contains it (``model.stateassignment``) at that phase's parallelism;
* after a rescale: the keyed state each new subtask restored (Flink: the value a subtask finds
  the first time it sees a key; model: the rescaled savepoint) and the source splits each new
  source subtask holds, with their offsets (Flink: the records each subtask reads;
  model: ``RoundRobinOperatorStateRepartitioner`` as ``model.stateassignment`` does it) -- the
  source reader's split state is Flink's operator list state (SPLIT_DISTRIBUTE);
* the final keyed state (value and subtask) of each key of a rolling aggregate;
* after the injected failure, which checkpoint the restart restored: Flink's (its
  ``CheckpointCoordinator`` logs each completed checkpoint and the checkpoint a restart restores,
  read from the driver JVM's log by :func:`flink_restores`) must be the latest completed before
  the restore, and its place among the checkpoints completed in that phase the same as the
  model's ``restored_from`` (ids are not compared: Flink's counter also counts checkpoints
  declined before every task ran, which the model's run never triggers).

Keys: PyFlink's ``keyBy`` keys by ``Row(key)`` (``KeyByKeySelector``), whose ``hashCode()`` is
``62 + key.hashCode()`` (``RowUtils.deepHashCodeRow``: RowKind INSERT, one field). The model
runs the job with that hash as an ``Integer`` key (:func:`row_key_hash`): ``Integer.hashCode``
is the value, so the model places every key in Flink's key group; outputs are mapped back.

Not expressible through PyFlink, so not compared: operator list or union state of user
functions (PyFlink has no ``CheckpointedFunction``; the source's split state is the list state
compared), TaskManager loss (a local MiniCluster has one TaskManager), unaligned checkpoints.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable

import attrs

from model import actions as A
from model.cluster import Cluster, JobInput, RuntimeConfig, drain
from model.environment import Environment, split_config
from model.errors import FlinkspecError
from model.executiongraph import compile_stream_graph
from model.jobfile import InputSpec, generate_input
from model.keygroups import assign_to_key_group, compute_operator_index_for_key_group, java_string_hash_code
from model.reference import reference_output, sink_output_by_operator
from model.scope import ModelScope
from model.streamgraph import OperatorSpec, StreamGraph, StreamGraphBuilder, stream_graph_to_dict

ROOT = Path(__file__).resolve().parents[1]
FLINK_VENV = ROOT / ".venv-flink"
FLINK_PYTHON = FLINK_VENV / "bin" / "python"
DRIVER = ROOT / "tools" / "flink_conform_driver.py"
#: the command that creates the real-Flink environment (Makefile target ``flink-env``)
FLINK_ENV_PIP = ("apache-flink",)

#: the variations a run's seed selects (seed % 5 -> (failure, rescale))
VARIATIONS = {0: (True, False), 1: (True, False), 2: (True, True), 3: (False, True), 4: (False, False)}
#: key sets a job draws from (strings: PyFlink keys by ``Row(key)`` with a STRING field)
KEY_POOLS = (("a", "b", "c"), ("a", "b", "c", "d", "e"), ("k0", "k1", "k2", "k3"),
             ("user-1", "user-2", "user-3", "user-4", "user-5", "user-6"), ("x", "y"))
MAP_FUNCTIONS = ("identity", "negate", "double", "add:3", "mod:4")
FILTER_FUNCTIONS = ("all", "even_value", "odd_value", "value_ge:3")
MAX_PARALLELISMS = (4, 5, 6, 7, 10)
PARALLELISMS = (1, 2, 3, 4)
#: the names of the operators a generated job may have (fixed: Flink's uids are these names)
SOURCE, MAP, FILTER, AGG, WINDOW, SINK = "source", "map", "filter", "agg", "window", "sink"
#: the model's scope of a replay against real Flink: channels that never back-pressure (Flink's
#: buffers are not what a replay compares; the recorded order of deliveries is)
UNBOUNDED_CHANNELS = ModelScope(channel_capacity=1_000_000)


# -- keys ----------------------------------------------------------------------------------------


def row_key_hash(key: str) -> int:
    """``Row.of(key).hashCode()`` in Flink 2.3.0 (``RowUtils.deepHashCodeRow``): ``31 * kind +
    deepHashCode(fields)`` with kind INSERT = 0 and ``Arrays.deepHashCode([key])`` =
    ``31 + key.hashCode()`` over a one-field array wrapped once more (``31 * 1 + ...``):
    ``62 + key.hashCode()``, as a Java int."""
    return (62 + java_string_hash_code(key) + 2**31) % 2**32 - 2**31


# -- the job -------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class ConformJob:
    """One generated run: the job (``graph``: operators at the first phase's parallelism, every
    one with the job's max parallelism), its input (string keys, one split per source subtask),
    the source's ``cap``, and what happens to it: ``rescale`` -- the parallelism of every operator
    after a stop-with-savepoint (None: no savepoint) -- and ``fail`` -- ``(split, offset,
    checkpoints)``: the record at which an operator throws once, in the last phase, emitted
    after ``checkpoints`` completed checkpoints of that phase (None: no failure)."""

    seed: int
    graph: StreamGraph
    input: JobInput
    split_len: int
    cap: int
    max_parallelism: int
    out_of_orderness: int
    rescale: tuple | None = None
    fail: tuple | None = None
    #: stopped with stop-with-savepoint ``--drain`` once every source subtask emitted ``cap``
    #: records (``flinkspec conform --drain``): the output is then the result of those records
    drain: bool = False

    @property
    def keyed(self) -> OperatorSpec:
        return next(o for o in self.graph.operators if o.kind in ("keyed_aggregate", "window"))

    @property
    def splits(self) -> tuple:
        return self.input.splits[SOURCE]

    def phase_parallelisms(self) -> list[dict]:
        first = {o.name: o.parallelism for o in self.graph.operators}
        return [first] if self.rescale is None else [first, dict(self.rescale)]

    def describe(self) -> str:
        """One line: the operators with their parallelisms, and what happens."""
        parts = []
        for o in self.graph.operators:
            extra = o.function or o.aggregate or ""
            if o.kind == "window":
                extra += f" size={o.window_size}" + (f" slide={o.window_slide}" if o.window_slide else "") + \
                         (f" offset={o.window_offset}" if o.window_offset else "")
            parts.append(f"{o.name}({extra.strip()}) p={o.parallelism}" if extra else f"{o.name} p={o.parallelism}")
        text = " -> ".join(parts) + f"; maxP={self.max_parallelism} cap={self.cap} records={self.split_len}/split"
        if self.rescale is not None:
            text += "; stop-with-savepoint, restart with " + ", ".join(f"{n}={p}" for n, p in self.rescale)
        if self.fail is not None:
            split, offset, cps = self.fail
            text += f"; fails at split {split} offset {offset} (after {cps} checkpoint(s))"
        if self.drain:
            text += f"; stop-with-savepoint --drain after {self.cap} record(s) per split"
        return text

    def to_dict(self) -> dict:
        return {"seed": self.seed, "graph": stream_graph_to_dict(self.graph),
                "records": [[list(r) for r in s] for s in self.splits], "cap": self.cap,
                "max_parallelism": self.max_parallelism, "rescale": None if self.rescale is None else dict(self.rescale),
                "fail": None if self.fail is None else dict(zip(("split", "offset", "after_checkpoints"), self.fail)),
                "drain": self.drain, "description": self.describe()}


def _forward_groups(graph: StreamGraph) -> list[list[str]]:
    """The operators that must keep one parallelism (joined by forward edges), in graph order."""
    group_of = {o.name: {o.name} for o in graph.operators}
    for e in graph.edges:
        if e.partitioner == "forward":
            merged = group_of[e.source] | group_of[e.target]
            for n in merged:
                group_of[n] = merged
    seen, out = set(), []
    for o in graph.operators:
        if o.name not in seen:
            g = [n.name for n in graph.operators if n.name in group_of[o.name]]
            seen.update(g)
            out.append(g)
    return out


def generate_job(seed: int, drain: bool = False) -> ConformJob:
    """The job of run seed ``seed`` (deterministic: the same seed gives the same job). With
    ``drain`` the same operators and input, stopped with stop-with-savepoint ``--drain`` once
    every source subtask emitted ``cap`` records, with neither a failure nor a rescale."""
    rng = random.Random(f"flinkspec-conform:{seed}")
    failure, rescale = (False, False) if drain else VARIATIONS[seed % 5]
    max_p = rng.choice(MAX_PARALLELISMS)
    ps = rng.choice((1, 2, 2, 3))
    split_len = rng.randint(6, 14)
    cap = rng.randint(2, min(4, split_len // 2))
    ooo = rng.randint(0, 3)
    keys = rng.choice(KEY_POOLS)
    b = StreamGraphBuilder(f"conform-{seed}")
    up = b.source(SOURCE, parallelism=ps, max_parallelism=max_p, watermark_out_of_orderness=ooo)
    p_up = ps
    if rng.random() < 0.5:
        p = p_up if rng.random() < 0.7 else rng.choice(PARALLELISMS)
        up = b.map(MAP, up, function=rng.choice(MAP_FUNCTIONS), parallelism=p, max_parallelism=max_p)
        p_up = p
    if rng.random() < 0.4:
        p = p_up if rng.random() < 0.7 else rng.choice(PARALLELISMS)
        up = b.filter(FILTER, up, function=rng.choice(FILTER_FUNCTIONS), parallelism=p, max_parallelism=max_p)
        p_up = p
    pk = rng.choice(PARALLELISMS)
    aggregate = rng.choice(("count", "sum"))
    windowed = rng.random() < 0.5
    if windowed:
        size = rng.randint(2, 8)
        slide = None if rng.random() < 0.5 or size == 2 else rng.randint(1, size - 1)
        bound = slide or size
        offset = rng.randint(-(bound - 1), bound - 1) if rng.random() < 0.4 else 0
        keyed = b.window(WINDOW, up, size=size, slide=slide, offset=offset, aggregate=aggregate,
                         parallelism=pk, max_parallelism=max_p)
    else:
        keyed = b.keyed_aggregate(AGG, up, aggregate=aggregate, parallelism=pk, max_parallelism=max_p)
    p_sink = pk if rng.random() < 0.7 else rng.choice(PARALLELISMS)
    b.sink(SINK, keyed, sink_kind="two_phase_commit", parallelism=p_sink, max_parallelism=max_p)
    graph = b.build()
    job_input = generate_input(graph, InputSpec(records=split_len, keys=keys, out_of_orderness=ooo, seed=seed), seed)
    new_p = None
    if rescale:
        new_p = {o.name: o.parallelism for o in graph.operators}
        for group in _forward_groups(graph):
            old = new_p[group[0]]
            if keyed in group:
                choices = [p for p in PARALLELISMS if p != old]
            elif rng.random() < 0.4:
                choices = [p for p in PARALLELISMS if p != old]
                if SOURCE in group and windowed:
                    # the watermark is assigned after the source (per subtask, not per split): a
                    # subtask reading two splits one after the other would make records late
                    choices = [p for p in choices if p > old]
            else:
                continue
            if choices:
                p = rng.choice(choices)
                for n in group:
                    new_p[n] = p
        new_p = tuple((o.name, new_p[o.name]) for o in graph.operators)
    fail = None
    if failure:
        split = rng.randrange(ps)
        start = cap if rescale else 0
        cps = rng.choice((0, 1, 1, 2, 2, 3))
        while cps and start + cap * cps >= split_len:
            cps -= 1
        offset = rng.randint(start + cap * cps, split_len - 1)
        fail = (split, offset, cps)
    return ConformJob(seed=seed, graph=graph, input=job_input, split_len=split_len, cap=cap, max_parallelism=max_p,
                      out_of_orderness=ooo, rescale=new_p, fail=fail, drain=drain)


def flink_request(job: ConformJob, job_id: int) -> dict:
    """The driver's request for ``job`` (see ``tools/flink_conform_driver.py``)."""
    ops = []
    for o in job.graph.operators:
        if o.kind == "source":
            continue
        d = {"name": o.name, "kind": o.kind}
        if o.kind in ("map", "filter"):
            d["function"] = o.function
        elif o.kind in ("keyed_aggregate", "window"):
            d["aggregate"] = o.aggregate
            if o.kind == "window":
                d.update(size=o.window_size, slide=o.window_slide, offset=o.window_offset)
        ops.append(d)
    phases = []
    pars = job.phase_parallelisms()
    for i, par in enumerate(pars):
        last = i == len(pars) - 1
        fail_at = None
        if last and job.fail is not None:
            fail_at = job.fail[0] * job.split_len + job.fail[1]
        phases.append({"parallelism": par, "stop_with_savepoint": not last or job.drain,
                       "drain": last and job.drain, "fail_at": fail_at})
    return {"id": job_id, "name": job.graph.name, "keyed": job.keyed.name,
            "records": [list(r) for s in job.splits for r in s], "splits": len(job.splits),
            "split_len": job.split_len, "cap": job.cap, "max_parallelism": job.max_parallelism,
            "out_of_orderness": job.out_of_orderness, "ops": ops, "phases": phases}


# -- the model side ------------------------------------------------------------------------------

#: the actions a phase settles with (everything but the source reading on and the control
#: actions the plan takes itself)
_SETTLE = (A.Deliver, A.SourceWatermark, A.FinishAsyncSnapshot, A.NotifyCheckpointComplete, A.DiscardFile)


@attrs.frozen(slots=True)
class ModelSide:
    """What the model predicts for a job (keys are Flink's string keys).

    ``reference``: the oracle's output; ``output``: the committed output of the model's run of
    the same plan; ``restored_keyed``: after the rescale, key -> (subtask, value) of the keyed
    state each new subtask restored (a window's: key -> subtask); ``restored_splits``: after the
    rescale, per new source subtask the splits it holds as ``(split, offset)`` in reading order;
    ``final_keyed``: a rolling aggregate's key -> (subtask, value) at the end; ``failed``: the
    failure happened; ``restored_from``: the checkpoint the failure restored (None: none);
    ``restored_ordinal``: its place among the checkpoints completed in the failing phase
    (1: the phase's first; 0: none of them -- the savepoint the phase started from, or nothing)."""

    reference: tuple
    output: tuple
    restored_keyed: dict | None
    restored_splits: tuple | None
    final_keyed: dict | None
    failed: bool
    restored_from: int | None
    restored_ordinal: int = 0


def _settle(c: Cluster) -> None:
    while True:
        for a in c.enabled_actions():
            if type(a) in _SETTLE:
                c.step(a)
                break
        else:
            return


def _emit(c: Cluster, t, n: int, fail_at: tuple | None) -> bool:
    """Source subtask ``t`` reads up to ``n`` records; True if it reached the failing record
    (then the task fails instead of reading it)."""
    for _ in range(n):
        src = c.tasks[t].source
        if src is None or c.tasks[t].status != "RUNNING" or not src.has_next():
            return False
        s = src.splits[src.next_split()]
        if fail_at is not None and (s[0], s[2]) == fail_at:
            c.step(A.FailTask(t))
            return True
        c.step(A.SourceEmit(t))
    return False


def _restart_from_savepoint(c: Cluster, parallelism: tuple) -> None:
    """Restart the stopped job with ``parallelism``. ``RestartFromSavepoint`` offers the search
    engines one forward group's new parallelism at a time; a conformance run may change several
    groups at once, through the same mechanism."""
    action = A.RestartFromSavepoint(parallelism)
    if c.why_not_enabled(action) is None:
        c.step(action)
        return
    if c.job.status != "STOPPED" or c.job.savepoint is None:
        raise FlinkspecError(f"conform: the model's job is {c.job.status}, not stopped with a savepoint")
    c.restart_from_savepoint(parallelism)
    c.now += 1
    c.trace.append(action)


def _keyed_state(c: Cluster, name: str) -> dict:
    """key (the model's int key) -> (subtask index, state) of operator ``name``: a rolling
    aggregate's value, or a window operator's window contents."""
    out = {}
    for t in c.tasks:
        op = t.keyed_operators.get(name)
        if op is None:
            continue
        for kg, st in op.snapshot_state().items():
            if hasattr(st, "values"):
                for k, v in st.values:
                    out[k] = (t.subtask.subtask_index, v)
            else:
                for k, _w, _agg in st.contents:
                    out[k] = (t.subtask.subtask_index, None)
    return out


def _source_splits(c: Cluster) -> tuple:
    per = {}
    for t in c.tasks:
        if t.source is not None:
            per[t.subtask.subtask_index] = tuple((s[0], s[2]) for s in t.source.splits if s[2] < len(s[1]))
    return tuple(per[i] for i in sorted(per))


def model_side(job: ConformJob, split_order: tuple | None = None, config: dict | None = None) -> ModelSide:
    """Run ``job`` in the model. ``split_order[i]``: the split source subtask ``i`` read first
    in Flink (Flink's enumerator hands the splits out in the order the readers ask; the model
    reads split ``i`` in subtask ``i``): the model's input is permuted to match, and its split
    ids are mapped back. None: split ``i`` in subtask ``i``. ``config``: RuntimeConfig (and
    Environment) fields of the run's Flink configuration (``conform --faults``: unaligned checkpoints, a state
    backend, ...; None: Flink's defaults as conform's driver runs them)."""
    splits = job.splits
    order = tuple(range(len(splits))) if split_order is None else tuple(split_order)
    if sorted(order) != list(range(len(splits))):
        raise FlinkspecError(f"conform: split order {order} is not a permutation of the {len(splits)} splits")
    to_int = {k: row_key_hash(k) for s in splits for (k, _v, _t) in s}
    back = {v: k for k, v in to_int.items()}
    if len(back) != len(to_int):
        raise FlinkspecError("conform: two keys of the job have the same Row hash code")
    model_input = JobInput({SOURCE: tuple(tuple((to_int[k], v, ts) for (k, v, ts) in splits[j]) for j in order)})
    graph = job.graph
    reference = reference_output(graph, model_input)[SINK]
    fields = {"savepoints": job.rescale is not None, "max_failures": 1 if job.fail is not None else 0,
              "drain_savepoints": job.drain}
    cfg, env = split_config(fields | (config or {}))
    c = Cluster(compile_stream_graph(graph), model_input, RuntimeConfig(**cfg), seed=job.seed,
                environment=Environment(**env), scope=UNBOUNDED_CHANNELS)
    model_split = {order[i]: i for i in range(len(order))}  # Flink split -> model split id
    fail_at = None if job.fail is None else (model_split[job.fail[0]], job.fail[1])
    restored_keyed = restored_splits = None
    phase_start = 0  # the failing phase's first entry of c.completed_ids
    if job.rescale is not None:
        for t in [t.id for t in c.source_tasks]:
            _emit(c, t, job.cap, None)
        _settle(c)
        c.step(A.StopWithSavepoint())
        _settle(c)
        if c.job.status != "STOPPED":
            raise FlinkspecError(f"conform: the model's stop-with-savepoint did not stop the job ({c.job.status})")
        _restart_from_savepoint(c, job.rescale)
        state = _keyed_state(c, job.keyed.name)
        restored_keyed = {back[k]: v for k, v in state.items()}
        restored_splits = tuple(tuple((order[sid], off) for sid, off in sub) for sub in _source_splits(c))
        phase_start = len(c.completed_ids)
    failed = False
    restored_ordinal = 0
    restored_from = None
    if job.drain:
        for t in [t.id for t in c.source_tasks]:
            _emit(c, t, job.cap, None)
        _settle(c)
        c.step(A.StopWithSavepointAndDrain())
    if fail_at is not None:
        while not failed:
            for t in [t.id for t in c.source_tasks]:
                if _emit(c, t, job.cap, fail_at):
                    failed = True
                    break
            _settle(c)
            if failed or not any(t.source.has_next() for t in c.source_tasks if t.status == "RUNNING"):
                break
            c.step(A.TriggerCheckpoint())
            _settle(c)
        if failed:
            restored_from = c.restored_from[-1][1]
            if restored_from in c.completed_ids[phase_start:]:
                restored_ordinal = c.completed_ids[phase_start:].index(restored_from) + 1
    drain(c)
    if job.drain:
        if c.job.status != "FINISHED":
            raise FlinkspecError(f"conform: the model's stop-with-savepoint --drain did not finish the job "
                                 f"({c.job.status})")
        read = c.input_read()  # the oracle of what the sources read (None: they had read everything)
        reference = reference_output(graph, model_input if read is None else read)[SINK]
    final = None
    if job.keyed.kind == "keyed_aggregate":
        final = {back[k]: v for k, v in _keyed_state(c, job.keyed.name).items()}
    output = sink_output_by_operator(c)[SINK]
    relabel = lambda recs: tuple((back[k], v, ts) for (k, v, ts) in recs)  # noqa: E731
    return ModelSide(reference=relabel(reference), output=relabel(output), restored_keyed=restored_keyed,
                     restored_splits=restored_splits, final_keyed=final, failed=failed, restored_from=restored_from,
                     restored_ordinal=restored_ordinal)


# -- comparing -----------------------------------------------------------------------------------


def order_deterministic(job: ConformJob) -> bool:
    """Whether each key's records reach the keyed operator in one fixed order: in every phase,
    every operator before it runs at parallelism 1 (one channel into each keyed subtask)."""
    before = [o.name for o in job.graph.operators if o.kind in ("source", "map", "filter")]
    return all(par[n] == 1 for par in job.phase_parallelisms() for n in before)


def _multiset_diff(what: str, expected: Iterable, actual: Iterable, limit: int = 3) -> list[str]:
    e, a = Counter(expected), Counter(actual)
    if e == a:
        return []
    missing = sorted((e - a).elements(), key=repr)
    extra = sorted((a - e).elements(), key=repr)
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing {missing[:limit]}")
    if extra:
        parts.append(f"{len(extra)} unexpected {extra[:limit]}")
    return [f"{what}: " + ", ".join(parts)]


def compare_outputs(job: ConformJob, what: str, expected: Iterable, actual: Iterable) -> list[str]:
    """The differences between two committed outputs of ``job`` (see the module docstring)."""
    expected = [tuple(r) for r in expected]
    actual = [tuple(r) for r in actual]
    if job.keyed.kind == "window" or order_deterministic(job):
        return _multiset_diff(what, expected, actual)
    out = _multiset_diff(f"{what} (key, timestamp)", [(k, ts) for k, _v, ts in expected],
                         [(k, ts) for k, _v, ts in actual])
    if job.keyed.aggregate == "count":
        out += _multiset_diff(f"{what} (key, count)", [(k, v) for k, v, _ts in expected],
                              [(k, v) for k, v, _ts in actual])
    return out


def _owner(job: ConformJob, key: str, parallelism: int) -> int:
    kg = assign_to_key_group(row_key_hash(key), job.max_parallelism)
    return compute_operator_index_for_key_group(job.max_parallelism, parallelism, kg)


def observed_split_order(job: ConformJob, observations: list) -> tuple | None:
    """The split each source subtask read first in Flink's first phase (None if that is not
    one split per subtask). Only a rescaled job needs it (its first phase has no failure)."""
    first = {}
    for o in observations:
        if o[0] == "src" and o[1] == 0 and o[2] == 0:
            first.setdefault(o[3], o[4])
    if sorted(first) != list(range(len(job.splits))) or sorted(first.values()) != list(range(len(job.splits))):
        return None
    return tuple(first[i] for i in range(len(job.splits)))


def compare(job: ConformJob, model: ModelSide, flink: dict, *, restore: bool = True) -> list[str]:
    """Every difference between the model's prediction and what Flink did (empty: agree).
    ``restore``: compare the state restored after the savepoint and the checkpoint the
    injected failure's restart restored (False: ``conform --faults`` replaying Flink's
    checkpoints compares each restore itself, and a resubmission from a retained checkpoint,
    seen as a second phase, has no restored state the model predicts)."""
    diffs: list[str] = []
    diffs += compare_outputs(job, "Flink's committed output vs the oracle", model.reference, flink["output"])
    diffs += compare_outputs(job, "the model's committed output vs the oracle", model.reference, model.output)
    if (job.fail is not None) != bool(flink.get("failed")):
        diffs.append(f"the injected failure {'did not happen' if job.fail is not None else 'happened'} in Flink")
    if model.failed != (job.fail is not None):
        diffs.append("the model's run did not reach the failing record")
    for k, kg in sorted(flink.get("key_group", {}).items()):
        mine = assign_to_key_group(row_key_hash(k), job.max_parallelism)
        if mine != kg:
            diffs.append(f"key {k!r}: Flink's key group {kg}, the model's {mine}")
    for k, h in sorted(flink.get("key_hash", {}).items()):
        if row_key_hash(k) != h:
            diffs.append(f"key {k!r}: Row hash code {h} in Flink, {row_key_hash(k)} in the model")
    pars = job.phase_parallelisms()
    keyed = job.keyed.name
    obs = flink.get("observations", [])
    wrong = set()
    for o in obs:
        if o[0] in ("touch", "final", "fire"):
            phase, sub, key = o[1], o[3], o[4]
            want = _owner(job, key, pars[phase][keyed])
            if sub != want and (phase, key, sub) not in wrong:
                wrong.add((phase, key, sub))
                diffs.append(f"phase {phase}: key {key!r} (key group {assign_to_key_group(row_key_hash(key), job.max_parallelism)}) "
                             f"held by subtask {sub} of {pars[phase][keyed]} in Flink, by subtask {want} in the model")
    if job.rescale is not None and restore:
        diffs += _compare_restore(job, model, obs)
    if job.fail is not None and flink.get("failed") and model.failed and restore:
        diffs += _compare_restored_checkpoint(job, model, flink)
    if model.final_keyed is not None:
        last = len(pars) - 1
        finals = {}
        for o in obs:
            if o[0] == "final" and o[1] == last:
                if o[4] not in finals or o[2] >= finals[o[4]][0]:
                    finals[o[4]] = (o[2], o[3], o[5])
        got = {k: (sub, v) for k, (_a, sub, v) in finals.items()}
        if got != model.final_keyed:
            diffs.append(f"final keyed state (key -> (subtask, value)): Flink {dict(sorted(got.items()))}, "
                         f"the model {dict(sorted(model.final_keyed.items()))}")
    return diffs


#: Flink's CheckpointCoordinator at INFO: a completed checkpoint, and the checkpoint or savepoint a
#: (re)start restores, with its location (``CheckpointCoordinator.restoreLatestCheckpointedStateInternal``)
_R_COMPLETED = re.compile(r"CheckpointCoordinator\s+\[[^\]]*\] - Completed checkpoint (\d+) for job ([0-9a-f]{32})")
_R_RESTORING = re.compile(r"CheckpointCoordinator\s+\[[^\]]*\] - Restoring job ([0-9a-f]{32}) from "
                          r"(Checkpoint|Savepoint) (\d+) @ \d+ for [0-9a-f]{32} located at (\S+)")


def flink_restores(log_text: str, request_id: int) -> list[dict]:
    """The restores of Flink's restarts in the conform job of ``request_id`` (its work folder
    ``job-<id>``), in the order of the log: ``{"phase", "checkpoint", "savepoint",
    "completed_before"}``, the last the ids of the checkpoints that Flink job (that phase)
    completed before the restore. A phase's start from the previous phase's savepoint (the
    harness's choice) is not listed; a restart that restores that savepoint again is."""
    completed: dict[str, list[int]] = {}
    started: set = set()  # the Flink jobs (phases) that started from a savepoint
    out = []
    for line in log_text.splitlines():
        m = _R_COMPLETED.search(line)
        if m:
            completed.setdefault(m.group(2), []).append(int(m.group(1)))
            continue
        m = _R_RESTORING.search(line)
        if not m:
            continue
        job, savepoint = m.group(1), m.group(2) == "Savepoint"
        where = re.search(rf"/job-{request_id}/(checkpoints|savepoint)-(\d+)/", m.group(4))
        if where is None:
            continue
        phase = int(where.group(2)) + (1 if where.group(1) == "savepoint" else 0)
        if savepoint and job not in started:
            started.add(job)
            continue
        out.append({"phase": phase, "checkpoint": int(m.group(3)), "savepoint": savepoint,
                    "completed_before": list(completed.get(job, ()))})
    return out


def _log_text(work: Path) -> str:
    """The driver JVM's log (``FLINK_LOG_DIR`` is the work folder)."""
    parts = []
    for f in sorted(work.glob("*.log")):
        try:
            parts.append(f.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(parts)


def _nth(n: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(n, f"{n}th")


def _compare_restored_checkpoint(job: ConformJob, model: ModelSide, flink: dict) -> list[str]:
    """Which checkpoint the restart after the injected failure restored: in Flink the latest
    completed before the restore, and in both the same place among the failing phase's
    completed checkpoints (``ModelSide.restored_ordinal``)."""
    phase = len(job.phase_parallelisms()) - 1  # the failure comes in the last phase
    if "restores" not in flink:
        return ["Flink's restores were not read from its log (the answer has no 'restores')"]
    if model.restored_ordinal:
        mine = f"the {_nth(model.restored_ordinal)} checkpoint completed in phase {phase} (checkpoint {model.restored_from})"
    else:
        mine = "no checkpoint" if model.restored_from is None else \
            f"the savepoint phase {phase} started from (checkpoint {model.restored_from})"
    restores = [r for r in flink["restores"] if r["phase"] == phase]
    if not restores:
        if model.restored_from is not None:
            return [f"after the injected failure Flink restored no checkpoint (its log names none in phase {phase}), "
                    f"the model {mine}"]
        return []
    r = restores[0]
    done = r["completed_before"]
    if r.get("savepoint"):
        if done:
            return [f"after the injected failure Flink restored the savepoint phase {phase} started from, not the "
                    f"latest checkpoint it completed before the restore (completed: {done})"]
        if model.restored_ordinal or model.restored_from is None:
            return [f"after the injected failure Flink restored the savepoint phase {phase} started from, the model "
                    f"{mine}"]
        return []
    if r["checkpoint"] not in done or r["checkpoint"] != max(done):
        return [f"after the injected failure Flink restored checkpoint {r['checkpoint']}, not the latest it completed "
                f"before the restore (completed: {done})"]
    ordinal = done.index(r["checkpoint"]) + 1
    if ordinal != model.restored_ordinal:
        return [f"after the injected failure Flink restored the {_nth(ordinal)} checkpoint completed in phase {phase} "
                f"(checkpoint {r['checkpoint']}), the model {mine}"]
    return []


def _compare_restore(job: ConformJob, model: ModelSide, obs: list) -> list[str]:
    """The state the new subtasks restored from the savepoint (phase 1, first attempt)."""
    diffs = []
    if job.keyed.kind == "keyed_aggregate":
        for o in obs:
            if o[0] == "touch" and o[1] == 1 and o[2] == 0:
                key, sub, value = o[4], o[3], o[5]
                want = model.restored_keyed.get(key)
                got = (sub, value) if value is not None else None
                if want is not None and got != want or want is None and value is not None:
                    diffs.append(f"restored keyed state of key {key!r}: Flink subtask {sub} found {value}, "
                                 f"the model restored {want if want is not None else 'nothing'}")
    seen: dict[int, list] = {}
    for o in obs:
        if o[0] == "src" and o[1] == 1 and o[2] == 0:
            lst = seen.setdefault(o[3], [])
            if not lst or lst[-1][0] != o[4]:
                lst.append((o[4], o[5]))
    predicted = model.restored_splits
    flink_failed_early = job.fail is not None
    for i, want in enumerate(predicted):
        # compared as sets: Flink merges a new subtask's entries per state handle in a HashMap
        # (RoundRobinOperatorStateRepartitioner), so the order of splits that came from
        # different old subtasks is unspecified; a failure in the first attempt may stop a
        # subtask before it reads its later splits
        got = sorted(seen.get(i, ()))
        ok = got == sorted(want) or (flink_failed_early and set(got) <= set(want))
        if not ok:
            diffs.append(f"after the rescale source subtask {i} reads splits (split, offset) {got} in Flink, "
                         f"the model restored {sorted(want)}")
    extra = sorted(set(seen) - set(range(len(predicted))))
    if extra:
        diffs.append(f"after the rescale Flink's source subtasks {extra} read records; the model has none")
    return diffs


# -- running -------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class RunResult:
    """One run: its job, the differences found (empty: agree), Flink's answer as the driver
    gave it (committed output, observations, key hashes and groups) for the report."""

    seed: int
    job: ConformJob
    differences: tuple
    seconds: float
    flink_failed: bool
    restored_from: int | None
    flink: dict = attrs.field(factory=dict, eq=False)
    restored_ordinal: int = 0

    @property
    def agree(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict:
        return {"seed": self.seed, "agree": self.agree, "job": self.job.to_dict(),
                "differences": list(self.differences), "flink_seconds": self.seconds,
                "with_failure": self.job.fail is not None, "rescaled": self.job.rescale is not None,
                "model_restored_from_checkpoint": self.restored_from,
                "model_restored_ordinal": self.restored_ordinal,
                "flink": {k: v for k, v in self.flink.items() if k != "id"}}


def judge(job: ConformJob, flink: dict, config: dict | None = None) -> RunResult:
    """Run the model side of ``job`` (with ``config``, as :func:`model_side`) and compare it with
    Flink's answer ``flink``."""
    if not flink.get("ok"):
        diffs = (f"Flink did not run the job: {flink.get('error', 'no answer')}",)
        return RunResult(job.seed, job, diffs, float(flink.get("seconds", 0.0)), False, None, flink)
    order = None
    diffs = []
    if job.rescale is not None:
        order = observed_split_order(job, flink.get("observations", []))
        if order is None:
            diffs.append("Flink's first phase did not read exactly one split per source subtask")
    model = model_side(job, order, config)
    diffs += compare(job, model, flink)
    return RunResult(job.seed, job, tuple(diffs), float(flink.get("seconds", 0.0)), bool(flink.get("failed")),
                     model.restored_from, flink, model.restored_ordinal)


def flink_env_missing() -> bool:
    return not FLINK_PYTHON.exists()


def ensure_flink_env(say: Callable[[str], None]) -> None:
    """Create ``.venv-flink`` (``make flink-env``, or the same venv + pip command without make)
    if it is missing; one line says so. Raises FlinkspecError (one line) if that fails."""
    if not flink_env_missing():
        return
    say(f"flinkspec conform: creating the real-Flink environment {FLINK_VENV} "
        "(pip install apache-flink, ~850 MB, first run only)...")
    if shutil.which("make") and (ROOT / "Makefile").is_file():
        cmds = [["make", "-s", "flink-env"]]
    else:
        cmds = [[sys.executable, "-m", "venv", str(FLINK_VENV)],
                [str(FLINK_PYTHON), "-m", "pip", "install", "-q", "--disable-pip-version-check", *FLINK_ENV_PIP]]
    for cmd in cmds:
        try:
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        except OSError as e:
            raise FlinkspecError(f"cannot create {FLINK_VENV}: {' '.join(cmd)}: {e.strerror}") from None
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()
            hint = last[-1][:200] if last else f"exit code {proc.returncode}"
            raise FlinkspecError(f"cannot create {FLINK_VENV} (`{' '.join(cmd)}` failed: {hint}); "
                                 "it needs network access to the Python package index")
    if flink_env_missing():
        raise FlinkspecError(f"cannot create {FLINK_VENV}: {FLINK_PYTHON} is still missing")


class FlinkDriver:
    """One driver process (one JVM) running a batch of jobs; results come back in order."""

    def __init__(self, work: Path, timeout: float):
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env.update(FLINK_LOG_DIR=str(work), TMPDIR=str(work), JVM_ARGS=f"-Djava.io.tmpdir={work}",
                   FLINKSPEC_CONFORM_WORK=str(work), FLINKSPEC_CONFORM_TIMEOUT=str(timeout))
        site = subprocess.run([str(FLINK_PYTHON), "-c", "import site; print(site.getsitepackages()[0])"],
                              capture_output=True, text=True)
        if site.returncode == 0 and site.stdout.strip():
            # PyFlink's thread mode embeds Python in the JVM; it finds the venv's packages
            # (pemja, pyflink) only through PYTHONPATH
            env["PYTHONPATH"] = site.stdout.strip()
        self._stderr: list[str] = []
        self._proc = subprocess.Popen([str(FLINK_PYTHON), str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True, env=env, cwd=str(work))
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        for line in self._proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-50]

    def run(self, requests: list[dict]):
        """Yield the answer to each request, in order (a driver that died answers the rest with
        an error)."""
        try:
            for r in requests:
                self._proc.stdin.write(json.dumps(r) + "\n")
            self._proc.stdin.close()
        except OSError:  # the driver exited before reading: its stderr says why
            pass
        for r in requests:
            line = self._proc.stdout.readline()
            if not line:
                try:  # the driver is gone: let its last words reach self._stderr
                    self._proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    pass
                self._thread.join(timeout=5)
                tail = "".join(self._stderr[-5:]).strip().replace("\n", " | ")
                yield {"id": r["id"], "ok": False, "error": f"the Flink driver exited ({tail[-300:]})"}
                continue
            yield json.loads(line)

    def close(self, *, kill: bool = False) -> None:
        """Wait for the driver to exit (``kill``: end it at once, e.g. on an interrupt)."""
        if self._proc.poll() is None:
            if not kill:
                try:
                    self._proc.wait(timeout=60)
                    return
                except subprocess.TimeoutExpired:
                    pass
            self._proc.kill()
            self._proc.wait()


def run_conform(runs: int, seed: int, *, batch: int = 10, timeout: float = 180.0,
                progress: Callable[[str], None] | None = None, keep: Path | None = None,
                drain: bool = False) -> list[RunResult]:
    """Generate ``runs`` jobs from ``seed`` (run ``i`` has seed ``seed + i``; with ``drain``,
    each stopped with stop-with-savepoint ``--drain``), run them in real Flink in batches of
    ``batch`` jobs per JVM and in the model, and compare. Flink's work folder (part files,
    observations, checkpoints, logs) is removed at the end, unless ``keep`` names a folder to
    keep it in."""
    say = progress or (lambda _m: None)
    jobs = [generate_job(seed + i, drain) for i in range(runs)]
    results: list[RunResult] = []
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="flinkspec-conform-", dir=keep)).resolve()
    else:
        work = Path(tempfile.mkdtemp(prefix="flinkspec-conform-")).resolve()
    try:
        for start in range(0, runs, batch):
            chunk = jobs[start:start + batch]
            t0 = time.perf_counter()
            driver = FlinkDriver(work, timeout)
            done = False
            try:
                answers = driver.run([flink_request(j, start + n) for n, j in enumerate(chunk)])
                for j, answer in zip(chunk, answers):
                    if answer.get("ok"):  # the job is over: its log lines are written
                        answer = dict(answer, restores=flink_restores(_log_text(work), answer["id"]))
                    r = judge(j, answer)
                    results.append(r)
                    kinds = [k for k, on in (("failure", j.fail is not None), ("rescale", j.rescale is not None),
                                             ("drain", j.drain)) if on]
                    verdict = "agree" if r.agree else f"DISAGREE ({len(r.differences)} difference(s))"
                    say(f"[{len(results)}/{runs}] seed {j.seed}: {verdict}"
                        f"{' (' + ', '.join(kinds) + ')' if kinds else ''} {r.seconds:.1f}s")
                    for d in r.differences:
                        say(f"    {d}")
                done = True
            finally:
                driver.close(kill=not done)
            say(f"batch of {len(chunk)} job(s) in {time.perf_counter() - t0:.0f}s")
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return results


def summary(results: list[RunResult], seed: int, seconds: float) -> dict:
    """The ``--json`` last line."""
    return {"runs": len(results), "agree": sum(r.agree for r in results),
            "with_failures": sum(r.job.fail is not None for r in results),
            "failures_injected": sum(r.flink_failed for r in results),
            "rescaled": sum(r.job.rescale is not None for r in results),
            "drained": sum(r.job.drain for r in results),
            "rescaled_up": sum(_direction(r.job) == "up" for r in results),
            "rescaled_down": sum(_direction(r.job) == "down" for r in results),
            "seed": seed, "seconds": round(seconds, 1),
            "disagreements": [{"seed": r.seed, "job": r.job.describe(), "differences": list(r.differences)}
                              for r in results if not r.agree]}


def _direction(job: ConformJob) -> str | None:
    """How the keyed operator was rescaled: "up", "down" or None."""
    if job.rescale is None:
        return None
    new = dict(job.rescale)[job.keyed.name]
    return "up" if new > job.keyed.parallelism else "down"
