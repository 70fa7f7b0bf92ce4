"""A job file: a job spec (``model.streamgraph``) plus how to run it, for ``flinkspec check --job``.

Besides the StreamGraph, a job spec file may hold three optional tables:

* ``[runtime]`` -- Flink's configuration the job runs with (:data:`RUNTIME_KEYS`): checkpointing
  mode, unaligned checkpoints and their aligned-checkpoint timeout, concurrent checkpoints,
  the failover strategy, the TaskManagers and their slots. A key left out takes Flink's
  default where Flink has one
  (``execution.checkpointing.mode`` EXACTLY_ONCE, ``execution.checkpointing.unaligned.enabled``
  false, ``execution.checkpointing.aligned-checkpoint-timeout`` 0 = none,
  ``execution.checkpointing.max-concurrent-checkpoints`` 1,
  ``jobmanager.execution.failover-strategy`` region, ``taskmanager.numberOfTaskSlots`` 1, and
  as many TaskManagers as the job needs, as an active resource manager starts them).
* ``[environment]`` -- what the world around the job may do in a run (:data:`ENVIRONMENT_KEYS`,
  ``model.environment``): how many failures (task failure, TaskManager loss, JobManager
  failover) a run may inject, and whether the CheckpointCoordinator's trigger RPCs reach the
  sources at once or in any order. Not Flink options: the search's fault budget and its
  environment.
* ``[input]`` -- the records the sources read (:data:`INPUT_KEYS`): ``records`` per source
  subtask, the ``keys`` they carry, their ``out_of_orderness`` (how far an event time may lag
  the largest one before it in its split) and the ``seed`` that draws them. A key left out is
  drawn from the seed; without ``seed`` every run of a search draws a new input from its own
  seed.

Every broken rule raises :class:`model.errors.InvalidJobSpec` naming the file, the table
and the key: ``"<file>: [environment] max_failures: must be an integer >= 0, not -1"``. The
rules are listed in docs/job-specs.md. :func:`model.variants.job_variant` turns a loaded file into
the variant every engine searches.
"""

from __future__ import annotations

import os
import random
from typing import Any

import attrs

from model.cluster import CHECKPOINTING_MODES, JobInput, RuntimeConfig
from model.environment import TRIGGER_DELIVERY, Environment
from model.errors import FlinkspecError, InvalidJobSpec
from model.inputfiles import INT_MAX, INT_MIN, InputError, read_json_or_toml, short
from model.streamgraph import MAX_NAME, StreamGraph, check_execution_size, stream_graph_from_dict

#: Bounds of what [runtime] and [input] may ask for (each TaskManager, slot and record is built).
MAX_TASK_MANAGERS = 256
MAX_SLOTS_PER_TASK_MANAGER = 1_024
MAX_RECORDS_PER_SUBTASK = 10_000
MAX_KEYS = 1_000
MAX_FAILURES = 100
MAX_CONCURRENT = 100

#: [runtime] key -> (meaning, Flink's default as written in the docs)
RUNTIME_KEYS = {
    "checkpointing_mode": ("`exactly_once` or `at_least_once` (`execution.checkpointing.mode`)", "exactly_once"),
    "unaligned": ("unaligned checkpoints (`execution.checkpointing.unaligned.enabled`)", "false"),
    "aligned_checkpoint_timeout": ("with `unaligned = true`: steps a barrier may align before the checkpoint "
                                   "switches to unaligned (`execution.checkpointing.aligned-checkpoint-timeout`); "
                                   "0 = unaligned at once", "0"),
    "max_concurrent_checkpoints": ("checkpoints in flight at once (`execution.checkpointing.max-concurrent-checkpoints`)",
                                   "1"),
    "failover_strategy": ("`region` or `full` (`jobmanager.execution.failover-strategy`)", "region"),
    "task_managers": ("TaskManagers", "as many as the job needs"),
    "slots_per_task_manager": ("slots of each TaskManager (`taskmanager.numberOfTaskSlots`)", "1"),
}
#: [environment] key -> (meaning, default)
ENVIRONMENT_KEYS = {
    "max_failures": ("failures (task failure, TaskManager loss, JobManager failover) a run may inject; "
                     "0 = failure-free runs (not a Flink option: the search's fault budget)", "2"),
    "trigger_delivery": ("how the CheckpointCoordinator's trigger RPCs reach the sources: `at_once` (in the "
                         "step that triggers the checkpoint) or `any_order` (in any order, also after the "
                         "checkpoint was aborted)", "at_once"),
}
#: [input] key -> (meaning, default)
INPUT_KEYS = {
    "records": ("records each source subtask reads (one split per subtask)", "3 to 8, drawn from the seed"),
    "keys": ("the keys the records carry (a list of strings)", "drawn from the seed"),
    "out_of_orderness": ("how far a record's event time may lag the largest one before it in its split; "
                         "more than the source's `watermark_out_of_orderness` makes records late",
                         "the source's `watermark_out_of_orderness`"),
    "seed": ("the seed that draws the records", "the seed of each run of the search"),
}

#: the tables of a job file besides the StreamGraph, with their keys
_TABLES = {"runtime": RUNTIME_KEYS, "environment": ENVIRONMENT_KEYS, "input": INPUT_KEYS}
#: the fault budget of ``check --job`` when [environment] names none
DEFAULT_MAX_FAILURES = 2
DEFAULT_SLOTS_PER_TASK_MANAGER = 1


@attrs.frozen(slots=True, kw_only=True)
class InputSpec:
    """The [input] table; None = drawn from the seed."""

    records: int | None = None
    keys: tuple | None = None
    out_of_orderness: int | None = None
    seed: int | None = None


@attrs.frozen(slots=True, kw_only=True)
class JobFile:
    """A loaded job file: its graph, the configuration it runs with, its environment, its input
    table."""

    path: str
    graph: StreamGraph
    config: RuntimeConfig
    input: InputSpec
    environment: Environment

    @property
    def name(self) -> str:
        return self.graph.name


def _int(table: str, key: str, value: Any, lo: int, hi: int = INT_MAX) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        bound = f">= {lo}" if hi == INT_MAX else f"in [{lo}, {hi}]"
        raise InvalidJobSpec(f"[{table}] {key}", f"must be an integer {bound}, not {short(value)}")
    return value


def _table(data: dict, table: str, known: dict) -> dict:
    d = data.get(table, {})
    if not isinstance(d, dict):
        raise InvalidJobSpec(f"[{table}]", f"must be a table/object, not {short(d)}")
    for key in d:
        if key not in known:
            for other, keys in _TABLES.items():
                if other != table and key in keys:
                    raise InvalidJobSpec(f"[{table}] {key}", f"belongs in [{other}], not in [{table}]")
            raise InvalidJobSpec(f"[{table}]", f"unknown key {short(key)} (known: {', '.join(known)})")
    return d


def environment(data: dict) -> Environment:
    """The Environment of a job file's [environment] table (``data`` is the whole file)."""
    d = _table(data, "environment", ENVIRONMENT_KEYS)
    delivery = d.get("trigger_delivery", "at_once")
    if delivery not in TRIGGER_DELIVERY:
        raise InvalidJobSpec("[environment] trigger_delivery",
                             f"must be one of {', '.join(TRIGGER_DELIVERY)}, not {short(delivery)}")
    return Environment(max_failures=_int("environment", "max_failures", d.get("max_failures", DEFAULT_MAX_FAILURES),
                                         0, MAX_FAILURES), trigger_delivery=delivery)


def runtime_config(data: dict, graph: StreamGraph) -> RuntimeConfig:
    """The RuntimeConfig of a job file's [runtime] table (``data`` is the whole file)."""
    d = _table(data, "runtime", RUNTIME_KEYS)
    kw: dict = {}
    mode = d.get("checkpointing_mode", "exactly_once")
    if mode not in CHECKPOINTING_MODES:
        raise InvalidJobSpec("[runtime] checkpointing_mode", f"must be one of {', '.join(CHECKPOINTING_MODES)}, "
                                                             f"not {short(mode)}")
    kw["checkpointing_mode"] = mode
    unaligned = d.get("unaligned", False)
    if not isinstance(unaligned, bool):
        raise InvalidJobSpec("[runtime] unaligned", f"must be a boolean, not {short(unaligned)}")
    if unaligned and mode != "exactly_once":
        raise InvalidJobSpec("[runtime] unaligned", "unaligned checkpoints need checkpointing_mode "
                                                    "'exactly_once' (Flink refuses them with at-least-once)")
    kw["unaligned"] = unaligned
    timeout = _int("runtime", "aligned_checkpoint_timeout", d.get("aligned_checkpoint_timeout", 0), 0)
    if timeout and not unaligned:
        raise InvalidJobSpec("[runtime] aligned_checkpoint_timeout", "needs unaligned = true (the timeout "
                                                                     "switches an aligned checkpoint to unaligned)")
    kw["aligned_checkpoint_timeout"] = timeout or None
    kw["max_concurrent_checkpoints"] = _int("runtime", "max_concurrent_checkpoints",
                                            d.get("max_concurrent_checkpoints", 1), 1, MAX_CONCURRENT)
    strategy = d.get("failover_strategy", "region")
    if strategy not in ("region", "full"):
        raise InvalidJobSpec("[runtime] failover_strategy", f"must be 'region' or 'full', not {short(strategy)}")
    kw["failover_strategy"] = strategy
    slots = _int("runtime", "slots_per_task_manager", d.get("slots_per_task_manager", DEFAULT_SLOTS_PER_TASK_MANAGER),
                 1, MAX_SLOTS_PER_TASK_MANAGER)
    required = required_slots(graph)
    if "task_managers" in d:
        tms, _ = cluster_shape(required, _int("runtime", "task_managers", d["task_managers"], 1, MAX_TASK_MANAGERS),
                               slots)
        if tms * slots < required:
            raise InvalidJobSpec("[runtime] task_managers",
                                 f"{tms} TaskManager(s) x {slots} slot(s) = {tms * slots} slots, but the job needs "
                                 f"{required} (it would wait for resources forever)")
    else:
        tms, _ = cluster_shape(required, None, slots)
        if tms > MAX_TASK_MANAGERS:
            raise InvalidJobSpec("[runtime] slots_per_task_manager",
                                 f"the job needs {required} slots: with {slots} per TaskManager that is {tms} "
                                 f"TaskManagers, more than the limit of {MAX_TASK_MANAGERS}")
    kw["task_managers"] = tms
    kw["slots_per_task_manager"] = slots
    try:
        return RuntimeConfig(**kw)
    except FlinkspecError as e:  # pragma: no cover - every rule is checked above first
        raise InvalidJobSpec("[runtime]", str(e)) from None


def cluster_shape(required: int, task_managers: int | None = None,
                  slots_per_task_manager: int | None = None) -> tuple[int, int]:
    """(TaskManagers, slots of each) of the cluster a job needing ``required`` slots runs on:
    the [runtime] table's rule, which ``check --job``, ``explore --job`` and ``flinkspec compile``
    all use, so that they place one file alike. A count given is kept; the slots default to
    Flink's ``taskmanager.numberOfTaskSlots`` (1) and the TaskManagers to as many as the job
    needs (an active resource manager starts them; at least one)."""
    slots = DEFAULT_SLOTS_PER_TASK_MANAGER if slots_per_task_manager is None else slots_per_task_manager
    if task_managers is not None:
        return task_managers, slots
    return (max(1, -(-required // slots)) if slots > 0 else 1), slots


def required_slots(graph: StreamGraph) -> int:
    """The slots the job needs (per slot sharing group, its largest parallelism)."""
    from model.executiongraph import compile_stream_graph  # here: chaining is only needed by a job file
    from model import slotsharing  # here, as above

    return sum(slotsharing.required_slots(compile_stream_graph(graph)).values())


def input_spec(data: dict) -> InputSpec:
    """The InputSpec of a job file's [input] table (``data`` is the whole file)."""
    d = _table(data, "input", INPUT_KEYS)
    records = d.get("records")
    if records is not None:
        records = _int("input", "records", records, 0, MAX_RECORDS_PER_SUBTASK)
    keys = d.get("keys")
    if keys is not None:
        if not isinstance(keys, list) or not keys or len(keys) > MAX_KEYS:
            raise InvalidJobSpec("[input] keys", f"must be a non-empty list of at most {MAX_KEYS} strings, "
                                                 f"not {short(keys)}")
        for i, k in enumerate(keys):
            if not isinstance(k, str) or not 1 <= len(k) <= MAX_NAME:
                raise InvalidJobSpec(f"[input] keys[{i}]", f"must be a non-empty string of at most {MAX_NAME} "
                                                           f"characters, not {short(k)}")
        if len(set(keys)) != len(keys):
            dup = next(k for i, k in enumerate(keys) if k in keys[:i])
            raise InvalidJobSpec("[input] keys", f"{short(dup)} is listed twice")
        keys = tuple(keys)
    ooo = d.get("out_of_orderness")
    if ooo is not None:
        ooo = _int("input", "out_of_orderness", ooo, 0, 1_000_000)
    seed = d.get("seed")
    if seed is not None:
        seed = _int("input", "seed", seed, INT_MIN)
    return InputSpec(records=records, keys=keys, out_of_orderness=ooo, seed=seed)


def job_file_from_dict(data: Any, path: str = "job") -> JobFile:
    """The JobFile of a parsed job spec (without the file checks of :func:`load_job_file`)."""
    if not isinstance(data, dict):
        raise InvalidJobSpec(path, f"must be a table/object, not {short(data)}")
    try:
        graph = stream_graph_from_dict(data)
        check_execution_size(graph, "job")
        config = runtime_config(data, graph)
        env = environment(data)
        spec = input_spec(data)
    except InvalidJobSpec as e:
        raise InvalidJobSpec(f"{path}: {e.subject}", e.rule) from None
    return JobFile(path=path, graph=graph, config=config, input=spec, environment=env)


def load_job_file(path: str | os.PathLike) -> JobFile:
    """Load a job file: the StreamGraph (``model.jobgraph.load_job_graph``'s checks: file, keys,
    types, Flink's rules, chaining) and the [runtime], [environment] and [input] tables."""
    from model.jobgraph import load_job_graph  # here: model.jobgraph imports the modules this one needs first

    p = os.fspath(path)
    graph = load_job_graph(p).stream_graph  # every check of a job spec, messages naming the file
    try:
        data = read_json_or_toml(p, what="job spec")
    except InputError as e:  # pragma: no cover - read once already by load_job_graph
        raise InvalidJobSpec(e.source, e.rule) from None
    try:
        config = runtime_config(data, graph)
        env = environment(data)
        spec = input_spec(data)
    except InvalidJobSpec as e:
        raise InvalidJobSpec(f"{p}: {e.subject}", e.rule) from None
    return JobFile(path=p, graph=graph, config=config, input=spec, environment=env)


# -- the input of a run ------------------------------------------------------------------------

_KEY_CHOICES = (("a", "b", "c"), ("k0", "k1", "k2", "k3", "k4"), ("user-1", "user-2"))


def generate_input(graph: StreamGraph, spec: InputSpec, seed: int) -> JobInput:
    """The records of every source subtask (one split each), drawn from ``spec.seed`` if set,
    else from ``seed``: event times rise by 0 to 3 per record and lag the largest one before
    them by at most the out-of-orderness; values are 1 to 9."""
    s = spec.seed if spec.seed is not None else seed
    rng = random.Random(f"job-input:{graph.name}:{s}")
    keys = spec.keys if spec.keys is not None else rng.choice(_KEY_CHOICES)
    splits = {}
    for o in graph.operators:
        if o.kind != "source":
            continue
        ooo = spec.out_of_orderness if spec.out_of_orderness is not None else o.watermark_out_of_orderness
        subtasks = []
        for _ in range(o.parallelism):
            n = spec.records if spec.records is not None else rng.randint(3, 8)
            t = 0
            recs = []
            for _ in range(n):
                t += rng.randint(0, 3)
                recs.append((rng.choice(keys), rng.randint(1, 9), t - rng.randint(0, ooo)))
            subtasks.append(tuple(recs))
        splits[o.name] = tuple(subtasks)
    return JobInput(splits)

