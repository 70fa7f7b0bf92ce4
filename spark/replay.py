"""The replay pipeline: seeded random walks of the model on Spark executors.

::

    spark.range(runs)                       run index i
      -> (variant, seed, swarm, max_steps)  variant = variants[i % V], seed = S + i div V
      -> mapPartitions(run_fn)              one result row per run, on the executors
      -> dropDuplicates(variant, seed)      a retried / speculative task cannot count twice
      -> Parquet OUT/runs/variant=<name>/   written to a temporary directory, then renamed
      -> summary per variant                read back from the Parquet files
      -> failing seeds, one per signature   re-run in the driver (same trace hash), shrunk,
                                            written into counterexamples/

Guarantees (tested in tests/test_spark_replay.py):

* **Determinism**: a row depends only on (variant, seed, swarm, max_steps) because the engine
  is deterministic; partitioning, the number of cores, the master and reruns change nothing
  but ``duration_s``. A failing seed re-run in the driver must give the trace hash it gave on
  the executor (else the run is reported as an error: ``nondeterministic``).
* **Retries change nothing**: a failed task attempt's output is discarded by Spark, and rows
  are keyed by (variant, seed) and deduplicated before anything is written or counted.

A *violation signature* is ``(variant, invariant)``: the variant fixes the configuration and
the invariant names the broken rule; the step, expected/actual values and message of a
violation differ from seed to seed for the same bug, so they would count one bug many times.
One representative per signature (fewest steps, then smallest seed) is shrunk and stored.

The engine is a parameter (:class:`Engine`); :func:`default_engine` is the model
(``properties.engines.random_walk`` and friends), ``spark.standin.ENGINE`` a synthetic one.

Imports: the model engine (``model.variants``, ``properties.engines``: ~0.7 s) is imported by
the functions that use it, so the pipeline with the standin engine, ``flinkspec`` start-up
and every executor that imports this module do not load it; likewise pyspark is imported by
the driver-side functions that build DataFrames only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

import attrs

from model.errors import FlinkspecError, InvalidArgument
from properties.progress import Reporter
from spark import standin
from spark.session import jvm_log_path

#: Columns of a result row (the Parquet schema; ``variant`` becomes the partition directory).
RESULT_COLUMNS = (
    ("variant", "string"),
    ("seed", "bigint"),
    ("swarm", "boolean"),
    ("max_steps", "int"),
    ("verdict", "string"),  # 'pass' | 'violation' | 'error'
    ("invariant", "string"),
    ("steps", "int"),
    ("goals", "array<string>"),
    ("trace_hash", "string"),
    ("duration_s", "double"),
    ("violation", "string"),  # the violation as JSON (sorted keys), or null
    ("error", "string"),  # 'ExceptionType: message' when the engine raised, or null
)
RESULT_DDL = ", ".join(f"{name} {type_}" for name, type_ in RESULT_COLUMNS)
#: Columns that must be identical between runs of the same seeds (all but the timing).
DETERMINISTIC_COLUMNS = tuple(name for name, _ in RESULT_COLUMNS if name != "duration_s")


@attrs.frozen
class Engine:
    """What the pipeline runs: the per-run function and what it needs for failing seeds.

    ``run(variant, seed, *, swarm, max_steps)`` -> a result with ``verdict``, ``invariant``,
    ``steps``, ``goals``, ``trace_hash``, ``duration_s``, ``actions``, ``violation``;
    ``shrink(variant, seed, actions, invariant)`` -> shorter action list, same violation;
    ``write_counterexample(directory, variant, seed, engine, actions, violation)`` -> path;
    ``expected``: variant name -> expected verdicts: ``("pass",)`` or the invariants any one of
    which the variant must violate (a plain string counts as a 1-tuple).
    """

    name: str
    run: Callable
    shrink: Callable
    write_counterexample: Callable
    expected: Mapping[str, str]


def model_shrink(variant: str, seed: int, actions, invariant: str) -> list:
    """``properties.engines.shrink`` on the scenario of (variant, seed)."""
    from model.variants import generate, variant as get_variant  # the model engine: lazy (module docstring)
    from properties import engines  # the model engine: lazy (module docstring)

    return engines.shrink(generate(get_variant(variant), seed), actions, invariant)


def model_write_counterexample(directory, variant, seed, engine, actions, violation):
    """``properties.counterexample.write_counterexample`` with the scenario of (variant, seed)
    and the violation the (shrunk) ``actions`` replay to, so the file states what it shows."""
    try:
        # the model engine: lazy (module docstring); a broken install is a one-line error here
        from properties.counterexample import write_counterexample
    except ImportError as e:
        raise FlinkspecError(f"counterexamples cannot be written: {e}") from None
    from model.variants import generate, variant as get_variant  # the model engine: lazy (module docstring)
    from properties import engines  # the model engine: lazy (module docstring)

    v = get_variant(variant)
    scenario = generate(v, seed)
    found, _run = engines.replay(scenario, actions, finish=True)
    if found is None or (violation is not None and found.invariant != violation.get("invariant")):
        raise FlinkspecError(f"seed {seed} of {variant}: the shrunk trace does not replay to "
                             f"{(violation or {}).get('invariant')} (got {found and found.invariant})")
    return write_counterexample(directory, variant=v.name, expected=tuple(v.expected), engine=engine,
                                seed=seed, scenario=scenario, actions=list(actions),
                                violation=found)


def default_engine() -> Engine:
    """The model: ``properties.engines.random_walk`` over ``model.variants.VARIANTS``."""
    from model.variants import VARIANTS  # the model engine: lazy (module docstring)
    from properties import engines  # the model engine: lazy (module docstring)

    return Engine(
        name="random_walk",
        run=engines.random_walk,
        shrink=model_shrink,
        write_counterexample=model_write_counterexample,
        expected={name: tuple(v.expected) for name, v in VARIANTS.items()},
    )


def expected_verdicts(value) -> tuple:
    """``("pass",)`` or the invariant names of an expected verdict (string or sequence)."""
    return (value,) if isinstance(value, str) else tuple(value)


def verdict_ok(expected, violations: int, errors: int, invariants) -> bool:
    """A safe variant: no violation; an unsafe one: one of its expected invariants violated.
    Any engine error is unexpected."""
    exp = expected_verdicts(expected)
    if errors:
        return False
    if exp == ("pass",):
        return violations == 0
    return bool(set(exp) & set(invariants))


def standin_engine() -> Engine:
    """The synthetic engine of ``spark.standin`` (fast; for tests and smoke tests)."""
    return Engine(
        name="standin",
        run=standin.standin_walk,
        shrink=standin.standin_shrink,
        write_counterexample=standin.standin_write_counterexample,
        expected=dict(standin.STANDIN_VARIANTS),
    )


ENGINES = {"model": default_engine, "standin": standin_engine}


#: Bounds of a plan (``--runs``, ``--max-steps``, ``--partitions``).
MAX_RUNS = 1_000_000_000
MAX_STEPS = 10_000_000
MAX_PARTITIONS = 100_000


@attrs.frozen
class ReplayPlan:
    """Which runs: ``runs`` in total, spread round-robin over ``variants``.

    Run ``i`` is variant ``variants[i % V]`` with seed ``seed + i // V``: every variant gets
    the seeds ``seed, seed+1, ...`` and neighbouring runs belong to different variants, so
    every partition holds a mix (the load is balanced even when variants differ in cost).
    """

    runs: int
    variants: tuple
    seed: int = 0
    swarm: bool = True
    max_steps: int | None = None  # None: each variant's own step budget
    partitions: int | None = None

    def __attrs_post_init__(self):
        if not 1 <= self.runs <= MAX_RUNS:
            raise InvalidArgument(f"--runs {self.runs}: must be between 1 and {MAX_RUNS}")
        if not self.variants:
            raise InvalidArgument("--variant: at least one variant is needed")
        if len(set(self.variants)) != len(self.variants):
            raise InvalidArgument(f"--variant: a variant is named twice in {list(self.variants)}")
        if self.max_steps is not None and not 1 <= self.max_steps <= MAX_STEPS:
            raise InvalidArgument(f"--max-steps {self.max_steps}: must be between 1 and {MAX_STEPS}")
        if self.partitions is not None and not 1 <= self.partitions <= MAX_PARTITIONS:
            raise InvalidArgument(f"--partitions {self.partitions}: must be between 1 and {MAX_PARTITIONS}")
        if not -(2**63) <= self.seed <= 2**63 - 1 - self.runs:
            raise InvalidArgument(f"--seed {self.seed}: seeds must fit in a 64-bit integer")

    def run_at(self, index: int) -> tuple[str, int]:
        """(variant, seed) of run ``index``."""
        v = len(self.variants)
        return self.variants[index % v], self.seed + index // v

    def all_runs(self) -> list[tuple[str, int]]:
        return [self.run_at(i) for i in range(self.runs)]

    def num_partitions(self, parallelism: int) -> int:
        """``partitions``, else 8 per core but at least ~100 runs each (a Spark task costs
        tens of milliseconds; 8 per core balance the load and give the progress line steps)."""
        if self.partitions:
            return self.partitions
        return max(1, min(-(-self.runs // 100), 8 * max(1, parallelism)))


def check_variants(names: Iterable[str], engine: Engine) -> tuple:
    """``names`` (default: every variant of the engine), or InvalidArgument naming the unknown one."""
    names = tuple(names or ())
    known = list(engine.expected)
    for name in names:
        if name not in engine.expected:
            raise InvalidArgument(f"--variant {name!r}: unknown variant (known: {', '.join(known)})")
    return names or tuple(known)


# --------------------------------------------------------------------------- executor side


def run_one(run_fn: Callable, variant: str, seed: int, swarm: bool, max_steps: int | None) -> tuple:
    """The result row (a tuple in RESULT_COLUMNS order) of one run.

    An exception of the engine becomes a row with verdict ``error`` (a crash of the model is
    a finding, not a reason to lose the other runs) -- except errors marked ``fails_task``,
    which fail the Spark task on purpose (retry tests).
    """
    t0 = time.perf_counter()
    try:
        r = run_fn(variant, seed, swarm=swarm, max_steps=max_steps)
    except Exception as e:
        if getattr(e, "fails_task", False):
            raise
        return (variant, seed, swarm, max_steps, "error", None, 0, [], "",
                time.perf_counter() - t0, None, f"{type(e).__name__}: {e}")
    violation = None
    if r.violation is not None:
        violation = json.dumps(r.violation, sort_keys=True, default=repr)
    return (variant, seed, swarm, max_steps, str(r.verdict), r.invariant, int(r.steps),
            [str(g) for g in r.goals], str(r.trace_hash), float(r.duration_s), violation, None)


def run_partition(run_fn: Callable, rows: Iterator) -> Iterator[tuple]:
    """``mapPartitions`` body: one result row per input row."""
    for row in rows:
        max_steps = None if row.max_steps is None else int(row.max_steps)
        yield run_one(run_fn, row.variant, int(row.seed), bool(row.swarm), max_steps)


# --------------------------------------------------------------------------- driver side


def plan_frame(spark, plan: ReplayPlan, partitions: int):
    """The input DataFrame: one (variant, seed, swarm, max_steps) row per run."""
    from pyspark.sql import functions as F  # pyspark only on the driver, when used (module docstring)

    v = len(plan.variants)
    return spark.range(0, plan.runs, 1, partitions).select(
        F.element_at(F.array(*[F.lit(n) for n in plan.variants]), (F.col("id") % v + 1).cast("int"))
        .alias("variant"),
        (F.lit(plan.seed).cast("bigint") + F.expr(f"id div {v}")).alias("seed"),
        F.lit(plan.swarm).alias("swarm"),
        F.lit(plan.max_steps).cast("int").alias("max_steps"),  # null: the variant's budget
    )


def result_frame(spark, plan: ReplayPlan, run_fn: Callable, partitions: int | None = None):
    """The (lazy) DataFrame of result rows, deduplicated by (variant, seed)."""
    parts = partitions or plan.num_partitions(spark.sparkContext.defaultParallelism)
    rdd = plan_frame(spark, plan, parts).rdd.mapPartitions(functools.partial(run_partition, run_fn))
    return spark.createDataFrame(rdd, RESULT_DDL).dropDuplicates(["variant", "seed"])


#: Seconds between two polls of Spark's status tracker (the line itself is throttled by
#: ``properties.progress``: redrawn on a terminal, a plain line every few seconds otherwise).
PROGRESS_INTERVAL = 0.5


class Progress:
    """Polls ``sc.statusTracker()`` for the tasks of a job group and reports them through a
    ``properties.progress.Reporter`` labelled ``spark-replay``: a line redrawn on a terminal,
    a plain line every few seconds on stderr otherwise (``FLINKSPEC_PROGRESS`` sets the
    interval or silences it). ``enabled`` True prints even when the variable silences it,
    False never prints; None follows the reporter's rules.
    """

    def __init__(self, sc, group: str, total_runs: int, partitions: int, *, stream=None,
                 enabled: bool | None = None, interval: float | None = None):
        self.sc, self.group, self.total, self.partitions = sc, group, total_runs, partitions
        self.interval = interval or PROGRESS_INTERVAL
        self.reporter = None if enabled is False else Reporter("spark-replay", stream=stream, enabled=enabled)
        self.enabled = self.reporter is not None and self.reporter.active
        if self.enabled:  # the heartbeat says this until the first tasks are reported (the JVM may take a while)
            self.reporter.update(f"starting the Spark job: {total_runs} runs in {partitions} tasks")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="flinkspec-progress", daemon=True)
        self.t0 = time.perf_counter()
        self.last = (0, partitions)

    def __enter__(self):
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.reporter is not None:
            self.reporter.close()

    def snapshot(self) -> tuple[int, int]:
        """(completed tasks, total tasks) of the job group's first stage (the runs)."""
        tracker = self.sc.statusTracker()
        stage_ids = []
        for job_id in tracker.getJobIdsForGroup(self.group):
            info = tracker.getJobInfo(job_id)
            if info is not None:
                stage_ids.extend(info.stageIds)
        for sid in sorted(stage_ids):
            st = tracker.getStageInfo(sid)
            if st is not None and st.numTasks == self.partitions:
                return st.numCompletedTasks, st.numTasks
        return self.last

    def line(self) -> str:
        """The status: tasks done, runs done (estimated from the tasks), runs per second."""
        done, total = self.last
        elapsed = time.perf_counter() - self.t0
        runs = min(self.total, round(self.total * done / max(1, total)))
        rate = runs / elapsed if elapsed > 0 else 0.0
        return f"{done}/{total} tasks, ~{runs}/{self.total} runs, ~{rate:.0f} runs/s"

    def _loop(self) -> None:
        while True:
            try:
                self.last = self.snapshot()
            except Exception:  # the context is stopping; the display is best effort
                return
            self.reporter.update(self.line())  # printed when due
            if self._stop.wait(self.interval):
                return


def _hadoop_fs(spark, path: str):
    jvm = spark.sparkContext._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), jpath, jvm


def write_atomically(spark, df, target: str) -> None:
    """Write ``df`` as Parquet partitioned by variant to ``target``: into a sibling temporary
    directory first, then renamed (an older ``target`` is moved aside and deleted)."""
    parent = target.rstrip("/").rsplit("/", 1)[0] if "/" in target.rstrip("/") else "."
    tmp = f"{parent}/.{target.rstrip('/').rsplit('/', 1)[-1]}-tmp-{uuid.uuid4().hex[:12]}"
    try:
        df.write.mode("errorifexists").partitionBy("variant").parquet(tmp)
    except BaseException:
        fs, jtmp, _ = _hadoop_fs(spark, tmp)
        fs.delete(jtmp, True)
        raise
    fs, jtarget, jvm = _hadoop_fs(spark, target)
    jtmp = jvm.org.apache.hadoop.fs.Path(tmp)
    old = None
    if fs.exists(jtarget):
        old = jvm.org.apache.hadoop.fs.Path(f"{tmp}-old")
        if not fs.rename(jtarget, old):
            raise InvalidArgument(f"--out: cannot replace {target}")
    if not fs.rename(jtmp, jtarget):
        raise InvalidArgument(f"--out: cannot rename {tmp} to {target}")
    if old is not None:
        fs.delete(old, True)


def read_results(spark, runs_dir: str):
    """The result rows stored under ``runs_dir`` (``variant`` read back from the directories)."""
    return spark.read.schema(RESULT_DDL).parquet(runs_dir)


def summarize(df, expected: Mapping[str, str], wall_s: float | None = None) -> dict:
    """The summary of a result DataFrame: per variant and in total (plain JSON-able data).

    Per variant: runs, passes, violations, errors, the violated invariants and their number
    (distinct signatures), the coverage goals reached, the engine's CPU seconds and runs per
    second per core (runs / CPU seconds), whether the verdict is the expected one.
    """
    from pyspark.sql import functions as F  # pyspark only on the driver, when used (module docstring)

    viol = F.col("verdict") == "violation"
    rows = (
        df.groupBy("variant")
        .agg(
            F.count(F.lit(1)).alias("runs"),
            F.sum((F.col("verdict") == "pass").cast("int")).alias("passes"),
            F.sum(viol.cast("int")).alias("violations"),
            F.sum((F.col("verdict") == "error").cast("int")).alias("errors"),
            F.array_sort(F.collect_set(F.when(viol, F.col("invariant")))).alias("invariants"),
            F.array_sort(F.array_distinct(F.flatten(F.collect_list("goals")))).alias("goals"),
            F.sum("duration_s").alias("cpu_s"),
            F.sum("steps").alias("steps"),
        )
        .orderBy("variant")
        .collect()
    )
    variants = []
    for r in rows:
        exp = expected_verdicts(expected.get(r.variant, "?"))
        invariants = list(r.invariants)
        variants.append({
            "variant": r.variant, "expected": list(exp),
            "ok": verdict_ok(exp, r.violations, r.errors, invariants),
            "runs": r.runs, "passes": r.passes, "violations": r.violations, "errors": r.errors,
            "signatures": len(invariants), "invariants": invariants,
            "goals_reached": len(r.goals), "goals": list(r.goals), "steps": int(r.steps),
            "cpu_s": round(float(r.cpu_s), 3),
            "runs_per_second_per_core": round(r.runs / r.cpu_s, 1) if r.cpu_s else None,
        })
    total_runs = sum(v["runs"] for v in variants)
    return {
        "runs": total_runs,
        "violations": sum(v["violations"] for v in variants),
        "errors": sum(v["errors"] for v in variants),
        "signatures": sum(v["signatures"] for v in variants),
        "ok": all(v["ok"] for v in variants),
        "wall_s": round(wall_s, 3) if wall_s is not None else None,
        "runs_per_second": round(total_runs / wall_s, 1) if wall_s else None,
        "variants": variants,
    }


def representatives(df) -> list[dict]:
    """One failing run per signature (variant, invariant): fewest steps, then smallest seed."""
    from pyspark.sql import functions as F  # pyspark only on the driver, when used (module docstring)

    rows = (
        df.where(F.col("verdict") == "violation")
        .groupBy("variant", "invariant")
        .agg(F.min(F.struct("steps", "seed", "trace_hash", "swarm", "max_steps", "violation"))
             .alias("r"), F.count(F.lit(1)).alias("runs"))
        .orderBy("variant", "invariant")
        .collect()
    )
    return [{
        "variant": row.variant, "invariant": row.invariant, "runs": row.runs,
        "seed": row.r.seed, "steps": row.r.steps, "trace_hash": row.r.trace_hash,
        "swarm": row.r.swarm, "max_steps": row.r.max_steps,
        "violation": json.loads(row.r.violation) if row.r.violation else None,
    } for row in rows]


def store_counterexamples(engine: Engine, reps: list[dict], directory, *, shrink: bool = True,
                          log: Callable[[str], None] | None = None) -> list[dict]:
    """Re-run each representative in the driver, check its trace hash, shrink it and write it.

    Returns one record per signature: the paths written, or ``error`` (e.g. nondeterministic).
    """
    out = []
    for rep in reps:
        rec = {k: rep[k] for k in ("variant", "invariant", "seed", "steps")}
        r = engine.run(rep["variant"], rep["seed"], swarm=rep["swarm"], max_steps=rep["max_steps"])
        if r.trace_hash != rep["trace_hash"] or r.invariant != rep["invariant"]:
            rec["error"] = (f"nondeterministic: seed {rep['seed']} of {rep['variant']} gave trace "
                            f"{r.trace_hash[:12]} ({r.invariant}) in the driver, "
                            f"{rep['trace_hash'][:12]} ({rep['invariant']}) on the executor")
            out.append(rec)
            continue
        actions = list(r.actions)
        try:
            if shrink:
                actions = list(engine.shrink(rep["variant"], rep["seed"], actions, rep["invariant"]))
            path = engine.write_counterexample(directory, rep["variant"], rep["seed"], "spark-replay",
                                               actions, r.violation)
        except FlinkspecError as e:
            rec["error"] = str(e)
            out.append(rec)
            continue
        rec.update(shrunk_steps=len(actions), path=str(path))
        if log:
            log(f"counterexample {rep['variant']}/{rep['invariant']}: seed {rep['seed']}, "
                f"{rep['steps']} -> {len(actions)} actions, {path}")
        out.append(rec)
    return out


@attrs.frozen
class ReplayOutcome:
    summary: dict
    counterexamples: list
    runs_dir: str
    partitions: int


def replay(spark, plan: ReplayPlan, out: str, *, engine: Engine | None = None,
           run_fn: Callable | None = None, counterexamples_dir=None, shrink: bool = True,
           progress: bool | None = None, log: Callable[[str], None] | None = None) -> ReplayOutcome:
    """Run ``plan`` on ``spark``; write ``out/runs`` (Parquet) and ``out/summary.json``.

    ``run_fn`` overrides ``engine.run`` on the executors only (e.g. a failure-injecting
    wrapper); ``counterexamples_dir=None`` skips the counterexamples.
    """
    engine = engine or default_engine()
    check_variants(plan.variants, engine)
    run_fn = run_fn or engine.run
    sc = spark.sparkContext
    parts = plan.num_partitions(sc.defaultParallelism)
    out = absolute(out)
    runs_dir = f"{out}/runs"
    group = f"flinkspec-replay-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, f"flinkspec spark-replay: {plan.runs} runs", interruptOnCancel=True)
    t0 = time.perf_counter()
    try:
        with Progress(sc, group, plan.runs, parts, enabled=progress):
            try:
                write_atomically(spark, result_frame(spark, plan, run_fn, parts), runs_dir)
            except Exception as e:
                if type(e).__name__ != "Py4JJavaError":
                    raise
                # the JVM's error, on one line: its first line names the cause; the rest is in the log
                first = str(e).split(": ", 1)[-1].strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise FlinkspecError(f"the Spark job failed writing {runs_dir}: {first[:300]} "
                                     f"(JVM log: {jvm_log_path()})") from None
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    wall = time.perf_counter() - t0
    stored = read_results(spark, runs_dir)
    summary = summarize(stored, engine.expected, wall)
    summary.update(engine=engine.name, seed=plan.seed, swarm=plan.swarm,
                   max_steps=plan.max_steps, partitions=parts, master=sc.master, jvm_log=jvm_log_path())
    cx = []
    if counterexamples_dir is not None:
        reps = representatives(stored)
        with Reporter("spark-replay", enabled=progress) as rep:  # shrinking in the driver may take minutes
            rep.update(f"re-running {'and shrinking ' if shrink else ''}{len(reps)} failing seed(s) in the driver")
            cx = store_counterexamples(engine, reps, counterexamples_dir, shrink=shrink, log=log)
        if any("error" in c for c in cx):
            summary["ok"] = False
    summary["counterexamples"] = cx
    _write_summary(out, summary)
    return ReplayOutcome(summary=summary, counterexamples=cx, runs_dir=runs_dir, partitions=parts)


def absolute(path) -> str:
    """``path`` as an absolute local path, or unchanged when it is a URI (``hdfs://...``).
    (The JVM resolves relative paths against its own start directory, not Python's.)"""
    text = str(path)
    if "://" in text or text.startswith("file:"):
        return text.rstrip("/")
    return os.path.abspath(text)


def check_destinations(out: str, counterexamples_dir=None) -> None:
    """Before Spark starts: a local ``out`` (and the counterexamples folder) must be a folder
    that can be created and written (one-line ``OutputError`` otherwise; a Hadoop URI is
    checked by Spark itself)."""
    from properties.safe_io import check_output_dir  # lazy: the model side is not needed on executors

    text = str(out)
    if "://" not in text or text.startswith("file:"):
        check_output_dir(text.removeprefix("file:"), what="--out folder", create=False)
    if counterexamples_dir is not None:
        check_output_dir(counterexamples_dir, what="counterexamples folder", create=False)


def _write_summary(out: str, summary: dict) -> None:
    """``out/summary.json``, written atomically (``properties.safe_io.write_atomic``)."""
    from properties.safe_io import check_output_dir, write_atomic  # lazy: as check_destinations

    if "://" in out and not out.startswith("file:"):
        return  # a cluster file system: the Parquet files are the record
    directory = check_output_dir(out.removeprefix("file:"), what="--out folder")
    write_atomic(directory / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n",
                 what="summary")


def format_summary(summary: dict) -> str:
    """The summary as a text table (one line per variant and a total line)."""
    head = ("variant", "expected", "runs", "violations", "errors", "signatures", "goals",
            "runs/s/core", "verdict")
    rows = [head]
    for v in summary["variants"]:
        exp = v["expected"][0] + (f" (+{len(v['expected']) - 1})" if len(v["expected"]) > 1 else "")
        rows.append((v["variant"], exp, str(v["runs"]), str(v["violations"]),
                     str(v["errors"]), str(v["signatures"]), str(v["goals_reached"]),
                     f"{v['runs_per_second_per_core'] or 0:.0f}",
                     v.get("verdict_note") or ("ok" if v["ok"] else "UNEXPECTED")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in rows]
    rate = summary.get("runs_per_second")
    lines.append(
        f"total: {summary['runs']} runs, {summary['violations']} violations, "
        f"{summary['signatures']} signatures, {summary['errors']} errors in "
        f"{summary['wall_s']:.1f} s ({rate:.0f} runs/s) on {summary.get('master', '?')}"
        if rate is not None else f"total: {summary['runs']} runs")
    if summary.get("jvm_log"):
        lines.append(f"Spark JVM log: {summary['jvm_log']}")
    for c in summary.get("counterexamples", []):
        if "error" in c:
            lines.append(f"counterexample {c['variant']}/{c['invariant']}: {c['error']}")
        else:
            lines.append(f"counterexample {c['variant']}/{c['invariant']}: seed {c['seed']}, "
                         f"{c['steps']} -> {c['shrunk_steps']} actions: {c['path']}")
    return "\n".join(lines)


def fingerprint(rows: Iterable) -> dict:
    """Totals and a hash over (variant, seed, verdict, invariant, steps, trace hash) of result
    rows (tuples or Rows) -- equal fingerprints = the same runs with the same outcomes."""
    keyed = sorted((r[0], int(r[1]), r[4], r[5] or "", int(r[6]), r[8]) for r in rows)
    h = hashlib.sha256("\n".join(map(repr, keyed)).encode()).hexdigest()
    return {
        "runs": len(keyed),
        "violations": sum(1 for k in keyed if k[2] == "violation"),
        "errors": sum(1 for k in keyed if k[2] == "error"),
        "steps": sum(k[4] for k in keyed),
        "hash": h,
    }


__all__ = [
    "DETERMINISTIC_COLUMNS", "ENGINES", "Engine", "Progress", "RESULT_COLUMNS", "RESULT_DDL",
    "ReplayOutcome", "ReplayPlan", "check_destinations", "check_variants", "default_engine", "fingerprint",
    "format_summary", "plan_frame", "read_results", "replay", "representatives", "result_frame",
    "run_one", "run_partition", "standin_engine", "store_counterexamples", "summarize",
    "write_atomically",
]
