"""Traces of real Flink runs under faults: recording (``flinkspec trace``) and trace files.

A **trace** is one real Flink 2.3.0 run: a header saying what ran (the job as the model's
StreamGraph, its input, the Flink configuration as the model's ``RuntimeConfig``, the fault
kind, the real set-up) and the events Flink reported, in the order it logged them
(``properties/flinklog.py`` reads them from Flink's log). ``flinkspec validate``
(``properties/tracevalidation.py``) asks whether the model can produce the same events.

The runs are ``flinkspec conform``'s random jobs (a source with fixed records, maybe a map and
a filter, keyBy with a rolling aggregate or an event-time window, an exactly-once FileSink),
on a MiniCluster with :data:`TASK_MANAGERS` TaskManagers of :data:`SLOTS` slots each, run
through PyFlink's JVM gateway by ``tools/flink_trace_driver.py``. Each run has one **fault
kind** (:data:`FAULT_KINDS`, one registry: the recorder, the header, the docs table and the
validator's scenario all read it).

A trace file is NDJSON: the header line (``docs/schemas/trace-header.schema.json``), then one
event per line (``docs/schemas/trace-event.schema.json``). Files are written atomically and
named by content; a file is validated on read like every input, and a bad one is one clear
error naming the file, the line and the rule.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

import attrs

from model.errors import FlinkspecError
from model.jobfile import InputSpec, generate_input
from model.streamgraph import stream_graph_from_dict, stream_graph_to_dict
from properties import conform
from properties.flinklog import observations

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tools" / "flink_trace_driver.py"
LOG4J = ROOT / "tools" / "flink-trace-log4j2.properties"
SCHEMA_DIR = ROOT / "docs" / "schemas"
FORMAT = "flinkspec-trace"
VERSION = 1
#: the MiniCluster of a recorded run (slots per TaskManager): four slots fit every generated job
TASK_MANAGERS = 2
SLOTS = 2


@attrs.frozen(slots=True)
class FaultKind:
    """One named kind of fault a recorded run injects: ``conform_variation`` the conform
    variations its jobs are drawn from (failure, rescale), ``trace`` the driver's settings."""

    name: str
    summary: str
    #: the real set-up: "minicluster" (tools/flink_trace_driver.py) or "standalone-ha"
    #: (tools/flink_ha_cluster.py: ZooKeeper, two JobManagers, two TaskManagers)
    setup: str = "minicluster"
    failure: bool = False
    lose_job_manager: bool = False
    rescale: str | None = None          # None, "up", "down" or "same"
    lose_task_manager: bool = False
    #: the tasks' asynchronous snapshots of one or two checkpoints fail (TraceRun.decline)
    decline: bool = False
    #: the job is stopped with stop-with-savepoint --drain (``ConformJob.drain``)
    drain: bool = False
    trace: dict = attrs.field(factory=dict)


#: the settings of a run restored from a retained checkpoint (tools/flink_trace_driver.py)
_RETAINED_RESTORE = {"state_backend": "rocksdb", "incremental": True, "num_retained": 2, "cancel_after_checkpoints": 2}

FAULT_KINDS = {k.name: k for k in (
    FaultKind("task-failure", "a user function throws once, after 0 to 3 completed checkpoints", failure=True),
    FaultKind("taskmanager-loss", "MiniCluster.terminateTaskManager after the first completed checkpoint; a "
              "replacement TaskManager with the same slots is started", lose_task_manager=True),
    FaultKind("checkpoint-expired", "slow records (30 ms each) and a 15 ms checkpoint timeout: checkpoints expire "
              "behind the back-pressured records", trace={"delay_ms": 30, "checkpoint_timeout_ms": 15}),
    FaultKind("rescale-up", "stop-with-savepoint, then the job restored from the savepoint with a higher "
              "parallelism", rescale="up"),
    FaultKind("rescale-down", "stop-with-savepoint, then the job restored from the savepoint with a lower "
              "parallelism", rescale="down"),
    FaultKind("unaligned", "unaligned checkpoints under back-pressure (slow records) with a task failure",
              failure=True, trace={"delay_ms": 20, "unaligned": True}),
    FaultKind("rocksdb-incremental", "incremental RocksDB checkpoints, 2 retained, with a task failure",
              failure=True, trace={"state_backend": "rocksdb", "incremental": True, "num_retained": 2}),
    FaultKind("claim-restore", "incremental RocksDB, 2 retained checkpoints kept on cancellation: the job is "
              "cancelled after two completed checkpoints and submitted again from the latest (CLAIM mode), then "
              "takes more checkpoints", trace=_RETAINED_RESTORE | {"claim_mode": "CLAIM"}),
    FaultKind("no-claim-restore", "as claim-restore, the job submitted again from its latest retained checkpoint "
              "in NO_CLAIM mode", trace=_RETAINED_RESTORE | {"claim_mode": "NO_CLAIM"}),
    FaultKind("stop-with-savepoint", "stop-with-savepoint, then the job restored from the savepoint with the same "
              "parallelisms", rescale="same"),
    FaultKind("checkpoint-declined", "the tasks' asynchronous snapshots of checkpoint 1 or 2 (and maybe the next) fail for real (their checkpoint directory is not writable): every task with state declines it "
              "(CHECKPOINT_ASYNC_EXCEPTION); tolerable-failed-checkpoints 0 or 1 decides whether the job fails over "
              "globally", decline=True),
    FaultKind("jobmanager-loss", "a standalone cluster with ZooKeeper HA (two JobManagers, two TaskManagers): the "
              "leading JobManager is killed (SIGKILL) after two completed checkpoints; the standby takes over and "
              "recovers the job from the HA store", setup="standalone-ha", lose_job_manager=True,
              trace={"delay_ms": 40}),
    FaultKind("drain", "stop-with-savepoint --drain once every source subtask emitted its first records: the "
              "sources end their input (MAX_WATERMARK, every window fires), the savepoint commits, the job is "
              "FINISHED", drain=True),
)}

#: records per split of a run on the standalone HA cluster: enough (with the slow records) for
#: the job to outlive the cluster's start, two checkpoints and the takeover
HA_SPLIT_LEN = 150
#: a run restored from a retained checkpoint reads this many times its ``cap`` records per split
#: (each checkpoint lets each source subtask read ``cap`` more): two checkpoints before the
#: cancellation and several after the restore
RETAINED_RESTORE_CAPS = 6


def fault_kinds(spec: str | None) -> tuple[str, ...]:
    """``--faults KIND,...`` checked against the registry (None: every kind)."""
    if spec is None:
        return tuple(FAULT_KINDS)
    kinds = tuple(k.strip() for k in spec.split(",") if k.strip())
    unknown = [k for k in kinds if k not in FAULT_KINDS]
    if unknown or not kinds:
        raise FlinkspecError(f"--faults {spec!r}: unknown fault kind(s) {unknown}; known: {', '.join(FAULT_KINDS)}")
    return kinds


# -- the runs ---------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class TraceRun:
    """One run to record: a conform job and its fault kind."""

    seed: int
    kind: str
    job: conform.ConformJob
    lose: dict | None = None
    #: checkpoint-declined: ``{"checkpoints": [N, ...], "tolerable": t}``, the checkpoints whose
    #: asynchronous snapshots fail and ``execution.checkpointing.tolerable-failed-checkpoints``
    decline: dict | None = None


def _rescaled(job: conform.ConformJob, direction: str) -> bool:
    if job.rescale is None:
        return False
    old = {o.name: o.parallelism for o in job.graph.operators}
    new = dict(job.rescale)
    changes = [new[n] - old[n] for n in old if new[n] != old[n]]
    return bool(changes) and all((c > 0) if direction == "up" else (c < 0) for c in changes)


def draw_run(seed: int, kind: str) -> TraceRun:
    """The run of ``seed`` for fault kind ``kind`` (deterministic): the first conform job, from
    seed ``seed`` on, whose variation fits the kind (a failure, a rescale in the direction)."""
    fk = FAULT_KINDS[kind]
    rng = random.Random(f"flinkspec-trace:{seed}:{kind}")
    for k in range(10_000):
        s = seed * 7919 + k
        job = conform.generate_job(s, drain=fk.drain)
        if (job.fail is not None) != fk.failure:
            continue
        if fk.lose_job_manager:
            if job.rescale is not None:
                continue
            job = attrs.evolve(job, input=generate_input(job.graph, InputSpec(
                records=HA_SPLIT_LEN, keys=tuple(sorted({k for sp in job.splits for (k, _v, _t) in sp})),
                out_of_orderness=job.out_of_orderness, seed=s), s), split_len=HA_SPLIT_LEN)
        if fk.rescale is None and job.rescale is not None:
            continue
        if fk.rescale == "same":
            if job.rescale is not None:
                continue
            job = attrs.evolve(job, rescale=tuple((o.name, o.parallelism) for o in job.graph.operators))
        elif fk.rescale is not None and not _rescaled(job, fk.rescale):
            continue
        if fk.trace.get("cancel_after_checkpoints"):
            n = RETAINED_RESTORE_CAPS * job.cap
            job = attrs.evolve(job, input=generate_input(job.graph, InputSpec(
                records=n, keys=tuple(sorted({k for sp in job.splits for (k, _v, _t) in sp})),
                out_of_orderness=job.out_of_orderness, seed=s), s), split_len=n)
        lose = None
        if fk.lose_task_manager:
            lose = {"after_checkpoints": 1, "task_manager": rng.randrange(TASK_MANAGERS)}
        decline = None
        if fk.decline:
            first = rng.randrange(1, 3)
            decline = {"checkpoints": list(range(first, first + rng.choice((1, 2)))), "tolerable": rng.choice((0, 1))}
        return TraceRun(seed=seed, kind=kind, job=job, lose=lose, decline=decline)
    raise FlinkspecError(f"no conform job fits fault kind {kind!r} near seed {seed}")


def plan(runs: int, seed: int, kinds: tuple[str, ...]) -> list[TraceRun]:
    """``runs`` runs, the kinds in turn (run i: kind ``kinds[i % len(kinds)]``, seed ``seed + i``)."""
    return [draw_run(seed + i, kinds[i % len(kinds)]) for i in range(runs)]


def phases(run: TraceRun) -> list[dict]:
    """The run's phases (one Flink job each) as the header states them: the parallelisms, and
    for a phase after the first what it restored (``restore``: a savepoint the previous phase
    stopped with, or the latest retained checkpoint of the cancelled previous phase, with the
    claim mode)."""
    fk = FAULT_KINDS[run.kind]
    pars = run.job.phase_parallelisms()
    if fk.trace.get("cancel_after_checkpoints"):
        return [{"parallelism": pars[0]},
                {"parallelism": pars[0], "restore": {"snapshot": "retained-checkpoint",
                                                     "claim_mode": fk.trace["claim_mode"]}}]
    return [{"parallelism": p} | ({"restore": {"snapshot": "savepoint", "claim_mode": "NO_CLAIM"}} if i else {})
            for i, p in enumerate(pars)]


def driver_request(run: TraceRun, run_id: int) -> dict:
    req = conform.flink_request(run.job, run_id)
    fk = FAULT_KINDS[run.kind]
    if fk.trace.get("cancel_after_checkpoints"):
        first = dict(req["phases"][0], stop_with_savepoint=False, fail_at=None)
        req["phases"] = [first, dict(first)]
    req["trace"] = {"task_managers": TASK_MANAGERS, "slots": SLOTS, "lose_task_manager": run.lose, **fk.trace}
    if run.decline is not None:
        req["trace"]["decline_checkpoints"] = run.decline
    if fk.trace.get("delay_ms"):
        req["delay_ms"] = fk.trace["delay_ms"]
    return req


# -- the header -----------------------------------------------------------------------------------


def runtime_config(run: TraceRun) -> dict:
    """The run's settings for the trace header's ``config``: its Flink configuration as
    ``model.cluster.RuntimeConfig`` fields, and what the recorder does to it as
    ``model.environment.Environment`` fields (``max_failures``: the faults it injects;
    ``savepoints``: whether it stops with a savepoint and restarts from it; ``drain_savepoints``:
    whether it stops with stop-with-savepoint --drain)."""
    fk = FAULT_KINDS[run.kind]
    faults = (1 if run.job.fail is not None else 0) + (1 if run.lose else 0) + (1 if fk.lose_job_manager else 0) \
        + (len(run.decline["checkpoints"]) if run.decline else 0)
    cfg = {"checkpointing_mode": "exactly_once", "unaligned": bool(fk.trace.get("unaligned")),
           "max_concurrent_checkpoints": 1, "max_retained_checkpoints": fk.trace.get("num_retained", 1),
           "failover_strategy": "region", "restart_strategy": "fixed-delay", "restart_attempts": 3,
           "task_managers": TASK_MANAGERS, "slots_per_task_manager": SLOTS, "max_failures": faults,
           "savepoints": run.job.rescale is not None, "drain_savepoints": run.job.drain}
    if fk.trace.get("state_backend"):
        cfg.update(state_backend=fk.trace["state_backend"], incremental=bool(fk.trace.get("incremental")))
    if run.decline is not None:
        # Flink's default state backend, whose snapshots' asynchronous phase fails here; the
        # CheckpointFailureManager's threshold as set (other kinds leave the model's unlimited)
        cfg.update(state_backend="hashmap", tolerable_failed_checkpoints=run.decline["tolerable"])
    if fk.trace.get("claim_mode"):
        cfg["restore_mode"] = fk.trace["claim_mode"]
    return cfg


def flink_graph(graph):
    """The job as the recorded Flink program states it: conform's programs set no partitioner
    but keyBy's, so every other edge has Flink's default (``EdgeSpec.default_partitioner``),
    chosen again when a phase resubmits the job with other parallelisms."""
    edges = tuple(e if e.partitioner == "hash" else attrs.evolve(e, default_partitioner=True) for e in graph.edges)
    return attrs.evolve(graph, edges=edges)


def header(run: TraceRun, answer: dict, shapes: list[dict]) -> dict:
    job = run.job
    return {
        "format": FORMAT, "version": VERSION, "flink_version": answer.get("flink_version"),
        "setup": FAULT_KINDS[run.kind].setup, "seed": run.seed, "fault": run.kind, "job_seed": job.seed,
        "description": job.describe(),
        "job": stream_graph_to_dict(flink_graph(job.graph)),
        "input": {conform.SOURCE: [[list(r) for r in split] for split in job.splits]},
        "key_hash": {k: conform.row_key_hash(k) for s in job.splits for (k, _v, _t) in s},
        "config": runtime_config(run),
        "phases": phases(run),
        "flink_vertices": shapes,
        "lost_task_manager": answer.get("lost_task_manager"),
        "lost_job_manager": answer.get("lost_job_manager"),
        "injected_failure": bool(answer.get("failed")),
    }


def render(head: dict, events: list[dict]) -> str:
    lines = [json.dumps(head, sort_keys=True)]
    lines += [json.dumps(dict(e, seq=i), sort_keys=True) for i, e in enumerate(events)]
    return "\n".join(lines) + "\n"


def write_trace(directory: Path, head: dict, events: list[dict]) -> Path:
    """Write a trace atomically, named by the fault kind, the seed and its content's hash."""
    from properties.safe_io import write_atomic  # lazy: only writers need it

    text = render(head, events)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    path = Path(directory) / f"{head['fault']}-seed{head['seed']}-{digest}.ndjson"
    write_atomic(path, text, what="trace file")
    return path


# -- reading --------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Trace:
    path: str
    header: dict
    events: tuple


_validators: dict = {}


def _validator(name: str):
    if name not in _validators:
        import jsonschema  # lazy: only reading a trace needs it

        schema = json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))
        _validators[name] = jsonschema.Draft202012Validator(schema)
    return _validators[name]


def _schema_error(path: str, line: int, err) -> FlinkspecError:
    where = "/".join(str(p) for p in err.absolute_path) or "(the line)"
    return FlinkspecError(f"{path}:{line}: {where}: {err.message[:200]}")


def load_trace(path) -> Trace:
    """Read and check a trace file (one clear error naming the file, line and rule)."""
    p = str(path)
    try:
        text = Path(p).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FlinkspecError(f"{p}: no such trace file") from None
    except IsADirectoryError:
        raise FlinkspecError(f"{p}: is a folder, not a trace file") from None
    except UnicodeDecodeError:
        raise FlinkspecError(f"{p}: not a text file (a trace is UTF-8 NDJSON)") from None
    except OSError as e:
        raise FlinkspecError(f"{p}: cannot read: {e.strerror}") from None
    lines = [ln for ln in text.splitlines()]
    if not lines or not lines[0].strip():
        raise FlinkspecError(f"{p}:1: empty file: a trace starts with its header line")
    rows = []
    for i, ln in enumerate(lines, start=1):
        if not ln.strip():
            continue
        try:
            rows.append((i, json.loads(ln)))
        except ValueError as e:
            raise FlinkspecError(f"{p}:{i}: not JSON ({e.msg})") from None
    (hl, head), rest = rows[0], rows[1:]
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise FlinkspecError(f"{p}:{hl}: not a flinkspec trace (the header's format must be {FORMAT!r})")
    for err in _validator("trace-header.schema.json").iter_errors(head):
        raise _schema_error(p, hl, err)
    if head["fault"] not in FAULT_KINDS:
        raise FlinkspecError(f"{p}:{hl}: fault: unknown fault kind {head['fault']!r}; known: {', '.join(FAULT_KINDS)}")
    try:
        stream_graph_from_dict(head["job"])
    except FlinkspecError as e:
        raise FlinkspecError(f"{p}:{hl}: job: {e}") from None
    events = []
    ev_validator = _validator("trace-event.schema.json")
    for n, (i, ev) in enumerate(rest):
        for err in ev_validator.iter_errors(ev):
            raise _schema_error(p, i, err)
        if ev["seq"] != n:
            raise FlinkspecError(f"{p}:{i}: seq: {ev['seq']}, expected {n} (events are numbered from 0 in order)")
        events.append(ev)
    return Trace(path=p, header=head, events=tuple(events))


# -- recording ------------------------------------------------------------------------------------


class TraceDriver(conform.FlinkDriver):
    """The recording driver: ``tools/flink_trace_driver.py`` in one JVM logging to ``log``."""

    def __init__(self, work: Path, timeout: float):
        self.log = work / "flink.log"
        self._work = work
        self._timeout = timeout
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        jvm_args = (f"-Djava.io.tmpdir={work} -Dlog4j.configurationFile={LOG4J} "
                    f"-Dlog4j2.configurationFile={LOG4J} -Dflinkspec.log.file={self.log}")
        env.update(FLINK_LOG_DIR=str(work), TMPDIR=str(work), JVM_ARGS=jvm_args, FLINKSPEC_TRACE_LOG=str(self.log),
                   FLINKSPEC_CONFORM_WORK=str(work), FLINKSPEC_CONFORM_TIMEOUT=str(timeout))
        site = subprocess.run([str(conform.FLINK_PYTHON), "-c", "import site; print(site.getsitepackages()[0])"],
                              capture_output=True, text=True)
        paths = [str(ROOT / "tools")]
        if site.returncode == 0 and site.stdout.strip():
            paths.insert(0, site.stdout.strip())
        # thread mode embeds Python in the JVM: it finds pyflink and the driver's functions only
        # through PYTHONPATH
        env["PYTHONPATH"] = os.pathsep.join(paths)
        self._stderr: list[str] = []
        self._proc = subprocess.Popen([str(conform.FLINK_PYTHON), str(DRIVER)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                      cwd=str(work))
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def log_slice(self, span) -> str:
        with open(self.log, "rb") as f:
            f.seek(span[0])
            return f.read(span[1] - span[0]).decode("utf-8", "replace")


@attrs.frozen(slots=True)
class Recorded:
    run: TraceRun
    path: str | None
    error: str | None
    seconds: float
    events: int


def record(runs: list[TraceRun], out: Path, *, batch: int = 5, timeout: float = 180.0,
           progress: Callable[[str], None] = lambda m: None, keep: Path | None = None) -> list[Recorded]:
    """Run each of ``runs`` on real Flink and write its trace into ``out``. A run that Flink
    could not finish is reported (``Recorded.error``), never written as a trace."""
    out = Path(out)
    done: list[Recorded] = []
    mini = [r for r in runs if FAULT_KINDS[r.kind].setup == "minicluster"]
    for r in runs:
        if FAULT_KINDS[r.kind].setup == "standalone-ha":
            done.append(_record_ha(r, len(done), len(runs), out, timeout=timeout, progress=progress, keep=keep))
    for b0 in range(0, len(mini), batch):
        chunk = mini[b0:b0 + batch]
        work = Path(tempfile.mkdtemp(prefix="flinkspec-trace-", dir=keep))
        driver = TraceDriver(work, timeout)
        try:
            requests = [driver_request(r, b0 + i) for i, r in enumerate(chunk)]
            for r, answer in zip(chunk, driver.run(requests)):
                i = len(done)
                if not answer.get("ok"):
                    done.append(Recorded(r, None, answer.get("error", "unknown"), 0.0, 0))
                    progress(f"[{i + 1}/{len(runs)}] {r.kind} seed {r.seed}: Flink did not finish: "
                             f"{answer.get('error', '')[:160]}")
                    continue
                text = driver.log_slice(answer["log"])
                try:
                    events, shapes = observations(text, phases=len(phases(r)))
                except FlinkspecError as e:
                    done.append(Recorded(r, None, f"unreadable log: {e}", answer.get("seconds", 0.0), 0))
                    progress(f"[{i + 1}/{len(runs)}] {r.kind} seed {r.seed}: unreadable log: {e}")
                    continue
                path = write_trace(out, header(r, answer, shapes), events)
                done.append(Recorded(r, str(path), None, answer.get("seconds", 0.0), len(events)))
                progress(f"[{i + 1}/{len(runs)}] {r.kind} seed {r.seed}: {len(events)} events in "
                         f"{answer.get('seconds', 0):.1f}s -> {path}")
        except KeyboardInterrupt:
            driver.close(kill=True)
            raise
        finally:
            driver.close()
            if keep is None:
                shutil.rmtree(work, ignore_errors=True)
    return done


def _ha_harness():
    """``tools/flink_ha_cluster.py`` (stdlib only), imported from its file."""
    import importlib.util  # lazy: only a run on the standalone cluster needs the harness

    spec = importlib.util.spec_from_file_location("flink_ha_cluster", ROOT / "tools" / "flink_ha_cluster.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


#: the processes of the standalone cluster whose logs hold the trace (the clients' and
#: ZooKeeper's hold none of its events)
_HA_LOGS = ("jobmanager-", "taskmanager-", "harness")


def _record_ha(r: TraceRun, i: int, n: int, out: Path, *, timeout: float, progress, keep) -> Recorded:
    """One run on a standalone cluster with ZooKeeper HA, started and stopped for it."""
    harness = _ha_harness()
    work = Path(tempfile.mkdtemp(prefix="flinkspec-trace-ha-", dir=keep))
    request = driver_request(r, i)
    t0 = time.perf_counter()
    try:
        try:
            harness.check_environment()
            summary = harness.run_scenario(work, request, job_timeout=timeout)
        except (harness.ClusterError, OSError, RuntimeError) as e:
            progress(f"[{i + 1}/{n}] {r.kind} seed {r.seed}: the HA cluster run failed: {str(e)[:200]}")
            return Recorded(r, None, f"HA cluster: {str(e)[:300]}", time.perf_counter() - t0, 0)
        logs = {name: Path(p).read_text(encoding="utf-8", errors="replace")
                for name, p in summary["logs"].items() if name.startswith(_HA_LOGS) and Path(p).is_file()}
        try:
            events, shapes = observations(logs, phases=1)
        except FlinkspecError as e:
            progress(f"[{i + 1}/{n}] {r.kind} seed {r.seed}: unreadable logs: {e}")
            return Recorded(r, None, f"unreadable logs: {e}", time.perf_counter() - t0, 0)
        answer = {"flink_version": _flink_version_of(logs), "failed": False,
                  "lost_job_manager": {"job_manager": summary.get("killed"), "new_leader": summary["leaders"][-1]}}
        path = write_trace(out, header(r, answer, shapes), events)
        secs = time.perf_counter() - t0
        progress(f"[{i + 1}/{n}] {r.kind} seed {r.seed}: {len(events)} events in {secs:.1f}s -> {path}")
        return Recorded(r, str(path), None, secs, len(events))
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def _flink_version_of(logs: dict) -> str | None:
    import re  # lazy: only the HA recorder reads the version from a log

    for text in logs.values():
        m = re.search(r"Starting \w+ \(Version: ([0-9.]+),", text)
        if m:
            return m.group(1)
    return None


__all__ = ["FAULT_KINDS", "Trace", "TraceRun", "draw_run", "fault_kinds", "load_trace", "plan", "record",
           "write_trace"]
