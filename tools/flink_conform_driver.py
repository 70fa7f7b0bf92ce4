"""Runs conformance jobs on a real Apache Flink MiniCluster (PyFlink, ``.venv-flink``).

``flinkspec conform`` (``properties/conform.py``) starts this script with the real-Flink
environment's interpreter (``make flink-env``) and writes one JSON job per line to its stdin;
for each it answers one JSON line on stdout, in order. One process runs every job it is given,
so the JVM starts once; each job (and each phase of a job) runs in its own local MiniCluster.
Progress goes to stderr. The script imports nothing of flinkspec: it needs PyFlink and the
standard library only.

A job (all fields written by ``properties.conform.flink_request``)::

    {"id": 3, "name": "conform-7-3", "records": [[key, value, ts], ...]   # split-major
     "splits": 2, "split_len": 12, "cap": 4, "max_parallelism": 7, "out_of_orderness": 2,
     "ops": [{"name": "map", "kind": "map", "function": "add:3"}, ...,
             {"name": "agg", "kind": "keyed_aggregate", "aggregate": "sum"}
             | {"name": "win", "kind": "window", "aggregate": "count", "size": 5, "slide": null, "offset": 0},
             {"name": "sink", "kind": "sink"}],
     "phases": [{"parallelism": {"source": 2, "map": 2, "agg": 3, "sink": 3},
                 "stop_with_savepoint": true, "drain": false, "fail_at": null}, ...]}

The job, per phase (a phase is one Flink job; a phase that stops with a savepoint is followed
by one restored from it, with the next phase's parallelisms):

* ``DataGeneratorSource`` over the record indices ``0 .. splits*split_len-1`` (Flink cuts them
  into one contiguous split of ``split_len`` indices per source subtask of the first phase),
  rate-limited by ``RateLimiterStrategy.perCheckpoint``: each source subtask emits ``cap``
  records, then waits for the next completed checkpoint. A phase that stops with a savepoint
  has no periodic checkpoints, so its sources stop after ``cap`` records each; the savepoint is
  taken once every one of them went through the first operator (observed), so its content is
  known. A checkpointed phase triggers a checkpoint every 100 ms.
* a map turning an index into its record ``Row(key, value, ts)`` (it observes each record: its
  subtask, split and offset -- the source reader's split state, which is operator list state),
  and throws once (a marker file) at record index ``fail_at``; records at an offset of
  ``cap * c`` or more of their split are emitted only after ``c`` checkpoints completed;
* ``assign_timestamps_and_watermarks``: ``BoundedOutOfOrdernessWatermarks`` (PyFlink cannot give
  a Python timestamp assigner to the source itself, so the watermark is per subtask);
* the user's maps and filters (named functions, as ``model.functions``);
* ``key_by(key, Types.STRING())`` (PyFlink keys by ``Row(key)``), then either a
  ``KeyedProcessFunction`` holding the rolling aggregate in a ``ValueState`` (emits the
  aggregate per record with the record's timestamp; observes, per key, the value it finds the
  first time it sees the key and, by an event-time timer at ``Long.MAX_VALUE``, the final value)
  or a tumbling/sliding event-time window with a ``ProcessWindowFunction`` (emits
  ``(key, aggregate, window.maxTimestamp())``; observes each firing);
* a ``FileSink`` (row format, ``OnCheckpointRollingPolicy``, exactly-once): only committed part
  files are read back (in-progress and pending files start with a dot).

Observations are side records the operators append to files in the job's folder (not part of
the exactly-once output): ``["src", phase, attempt, subtask, split, offset]``,
``["touch", phase, attempt, subtask, key, value_before]``, ``["final", phase, attempt, subtask,
key, value]``, ``["fire", phase, attempt, subtask, key, window_max_ts, aggregate]``.

The answer: ``{"id", "ok", "output": [[key, value, ts], ...], "observations": [...],
"failed": bool, "key_hash": {key: Row(key).hashCode()}, "key_group": {key: kg},
"flink_version", "seconds"}`` or ``{"id", "ok": false, "error": "..."}``.

Settings every MiniCluster needs (measured): ``python.executable`` = this interpreter, an
explicit restart strategy (fixed-delay, 3 attempts, 100 ms), and ``FLINK_LOG_DIR``/``TMPDIR``/
``JVM_ARGS`` pointing into the work folder (the client sets them). Python functions run in
PyFlink's thread mode (embedded in the JVM: no Python worker processes, about half the time
of the process mode per job). In thread mode PyFlink 2.3.0's ``RuntimeContext`` still calls
``getIndexOfThisSubtask()`` / ``getAttemptNumber()``, which Flink 2 moved to ``getTaskInfo()``:
:func:`_task_info` reads them there.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import uuid

LONG_MAX = 2**63 - 1
#: checkpoint interval of a checkpointed phase
CHECKPOINT_INTERVAL = "100 ms"


def _log(msg: str) -> None:
    sys.stderr.write(f"[flink-driver] {msg}\n")
    sys.stderr.flush()


# -- the user's functions (the same names as model.functions) -----------------------------------


def map_function(name):
    name = name or "identity"
    if name == "identity":
        return lambda k, v: (k, v)
    if name == "negate":
        return lambda k, v: (k, -v)
    if name == "double":
        return lambda k, v: (k, 2 * v)
    fname, _, arg = name.partition(":")
    n = int(arg)
    if fname == "add":
        return lambda k, v: (k, v + n)
    if fname == "mod":
        return lambda k, v: (k, v % n)
    raise ValueError(f"unknown map function {name!r}")


def filter_function(name):
    name = name or "all"
    if name == "all":
        return lambda k, v: True
    if name == "none":
        return lambda k, v: False
    if name == "even_value":
        return lambda k, v: v % 2 == 0
    if name == "odd_value":
        return lambda k, v: v % 2 != 0
    fname, _, arg = name.partition(":")
    if fname == "value_ge":
        n = int(arg)
        return lambda k, v: v >= n
    raise ValueError(f"unknown filter function {name!r}")


# -- observations --------------------------------------------------------------------------------


class _ObsFile:
    """An append-only observation file of one operator instance (one line per observation)."""

    def __init__(self, folder: str, prefix: str):
        self.path = os.path.join(folder, f"{prefix}-{uuid.uuid4().hex}.jsonl")
        self.f = open(self.path, "a", encoding="utf-8")

    def write(self, obs: list) -> None:
        self.f.write(json.dumps(obs) + "\n")
        self.f.flush()


def _task_info(ctx):
    """(subtask index, attempt number) of a PyFlink RuntimeContext, in process and thread mode."""
    try:
        return ctx.get_index_of_this_subtask(), ctx.get_attempt_number()
    except Exception:  # thread mode in 2.3.0: the Java RuntimeContext has them in getTaskInfo()
        info = ctx._runtime_context.getTaskInfo()
        return info.getIndexOfThisSubtask(), info.getAttemptNumber()


def read_observations(folder: str) -> list:
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if line:
                        try:
                            out.append(json.loads(line))
                        except ValueError:  # a line cut by a task being cancelled mid-write
                            pass
    return out


def read_committed(folder: str) -> list:
    """Every line of every committed part file under ``folder`` (in-progress and pending part
    files of the FileSink are hidden: their names start with a dot)."""
    rows = []
    for d, _dirs, files in os.walk(folder):
        for name in sorted(files):
            if name.startswith("."):
                continue
            with open(os.path.join(d, name), encoding="utf-8") as f:
                for line in f:
                    line = line.rstrip("\n")
                    if line:
                        k, v, ts = line.rsplit(",", 2)
                        rows.append([k, int(v), int(ts)])
    return rows


# -- building one phase ---------------------------------------------------------------------------


def build_phase(env, job: dict, phase_no: int, folder: str, jvm):
    # pyflink is imported by the functions that need it (the module itself loads without it)
    from pyflink.common import Duration, Row, Types, WatermarkStrategy
    from pyflink.common.serialization import Encoder
    from pyflink.common.time import Time
    from pyflink.common.watermark_strategy import TimestampAssigner
    from pyflink.datastream import KeyedProcessFunction, MapFunction, ProcessWindowFunction
    from pyflink.datastream.connectors.base import Source
    from pyflink.datastream.connectors.file_system import BucketAssigner, FileSink, RollingPolicy
    from pyflink.datastream.state import ValueStateDescriptor
    from pyflink.datastream.window import SlidingEventTimeWindows, TumblingEventTimeWindows

    phase = job["phases"][phase_no]
    par = phase["parallelism"]
    records = [tuple(r) for r in job["records"]]
    split_len = job["split_len"]
    n = len(records)
    fail_at = phase.get("fail_at")
    # "delay_ms": each record takes this long in the first map (back-pressure for recorded runs)
    delay = (job.get("delay_ms") or 0) / 1000.0
    marker = os.path.join(folder, "failed.marker")
    obs_dir = os.path.join(folder, "obs")
    os.makedirs(obs_dir, exist_ok=True)

    p_src = par["source"]
    # the default parallelism goes to the operators PyFlink adds without a handle to set it
    # (assign_timestamps_and_watermarks adds a Python Extract-Timestamp and Java's
    # TimestampsAndWatermarksOperator before the map it returns): they must run at the source's
    # parallelism, chained to it, so each watermark generator sees one source subtask's records
    # (the local default is the number of cores)
    env.set_parallelism(p_src)
    elements = jvm.java.util.ArrayList()
    for i in range(n):
        elements.add(str(i))
    string_info = Types.STRING().get_java_type_info()
    gen = jvm.org.apache.flink.connector.datagen.functions.IndexLookupGeneratorFunction(string_info, elements)
    rate = jvm.org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy.perCheckpoint(
        job["cap"] * p_src)
    source = jvm.org.apache.flink.connector.datagen.source.DataGeneratorSource(gen, n, rate, string_info)
    ds = env.from_source(Source(source), WatermarkStrategy.no_watermarks(), "source").uid("source") \
        .set_parallelism(p_src)

    class ToRecord(MapFunction):
        def open(self, ctx):
            self.idx, self.attempt = _task_info(ctx)
            self.obs = _ObsFile(obs_dir, "src")

        def map(self, value):
            i = int(value)
            split, offset = divmod(i, split_len)
            if fail_at is not None and i == fail_at and not os.path.exists(marker):
                open(marker, "w").close()
                raise RuntimeError(f"flinkspec conform: the injected failure at record {i}")
            self.obs.write(["src", phase_no, self.attempt, self.idx, split, offset])
            if delay:
                time.sleep(delay)
            k, v, ts = records[i]
            return Row(k, v, ts)

    row_type = Types.ROW([Types.STRING(), Types.LONG(), Types.LONG()])

    class EventTime(TimestampAssigner):
        def extract_timestamp(self, value, record_timestamp):
            return value[2]

    ds = ds.map(ToRecord(), output_type=row_type).uid("to-record").set_parallelism(p_src)
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_millis(job["out_of_orderness"])) \
        .with_timestamp_assigner(EventTime())
    ds = ds.assign_timestamps_and_watermarks(strategy).uid("watermarks").set_parallelism(p_src)

    for op in job["ops"]:
        name, kind = op["name"], op["kind"]
        p = par[name]
        if kind == "map":
            fn = map_function(op.get("function"))

            def apply_map(r, _fn=fn):
                k, v = _fn(r[0], r[1])
                return Row(k, v, r[2])

            ds = ds.map(apply_map, output_type=row_type).uid(name).set_parallelism(p)
        elif kind == "filter":
            fn = filter_function(op.get("function"))
            ds = ds.filter(lambda r, _fn=fn: _fn(r[0], r[1])).uid(name).set_parallelism(p)
        elif kind == "keyed_aggregate":
            is_count = op["aggregate"] == "count"

            class RollingAggregate(KeyedProcessFunction):
                def open(self, ctx):
                    self.state = ctx.get_state(ValueStateDescriptor("aggregate", Types.LONG()))
                    self.idx, self.attempt = _task_info(ctx)
                    self.obs = _ObsFile(obs_dir, "agg")
                    self.seen = set()

                def process_element(self, r, ctx):
                    acc = self.state.value()
                    if r[0] not in self.seen:
                        self.seen.add(r[0])
                        self.obs.write(["touch", phase_no, self.attempt, self.idx, r[0], acc])
                    if acc is None:
                        ctx.timer_service().register_event_time_timer(LONG_MAX)
                        acc = 0
                    acc = acc + 1 if is_count else acc + r[1]
                    self.state.update(acc)
                    yield Row(r[0], acc, ctx.timestamp())

                def on_timer(self, timestamp, ctx):
                    self.obs.write(["final", phase_no, self.attempt, self.idx, ctx.get_current_key(),
                                    self.state.value()])

            ds = ds.key_by(lambda r: r[0], key_type=Types.STRING()) \
                .process(RollingAggregate(), output_type=row_type).uid(name).set_parallelism(p)
        elif kind == "window":
            is_count = op["aggregate"] == "count"
            size, slide, offset = op["size"], op.get("slide"), op.get("offset", 0)
            if slide is None:
                assigner = TumblingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(offset))
            else:
                assigner = SlidingEventTimeWindows.of(Time.milliseconds(size), Time.milliseconds(slide),
                                                      Time.milliseconds(offset))

            class WindowAggregate(ProcessWindowFunction):
                def open(self, ctx):
                    self.idx, self.attempt = _task_info(ctx)
                    self.obs = _ObsFile(obs_dir, "win")

                def process(self, key, context, elements):
                    agg = 0
                    for e in elements:
                        agg = agg + 1 if is_count else agg + e[1]
                    mts = context.window().max_timestamp()
                    self.obs.write(["fire", phase_no, self.attempt, self.idx, key, mts, agg])
                    yield Row(key, agg, mts)

            ds = ds.key_by(lambda r: r[0], key_type=Types.STRING()).window(assigner) \
                .process(WindowAggregate(), output_type=row_type).uid(name).set_parallelism(p)
        elif kind == "sink":
            # the text map is chained to the keyed operator (same parallelism): it rescales with it
            text = ds.map(lambda r: f"{r[0]},{r[1]},{r[2]}", output_type=Types.STRING()) \
                .uid("to-text").set_parallelism(par[job["keyed"]])
            sink = FileSink.for_row_format(os.path.join(folder, "out"), Encoder.simple_string_encoder()) \
                .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner()) \
                .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy()).build()
            text.sink_to(sink).uid(name).set_parallelism(p)
        else:
            raise ValueError(f"unknown operator kind {kind!r}")


def _configuration(job: dict, phase_no: int, folder: str, restore: str | None):
    from pyflink.common import Configuration

    phase = job["phases"][phase_no]
    cfg = Configuration()
    cfg.set_string("python.executable", sys.executable)
    cfg.set_string("python.execution-mode", os.environ.get("FLINKSPEC_PYTHON_MODE", "thread"))
    cfg.set_string("restart-strategy.type", "fixed-delay")
    cfg.set_string("restart-strategy.fixed-delay.attempts", "3")
    cfg.set_string("restart-strategy.fixed-delay.delay", "100 ms")
    cfg.set_string("execution.checkpointing.mode", "EXACTLY_ONCE")
    if not phase.get("stop_with_savepoint"):
        cfg.set_string("execution.checkpointing.interval", CHECKPOINT_INTERVAL)
    cfg.set_string("execution.checkpointing.dir", "file://" + os.path.join(folder, f"checkpoints-{phase_no}"))
    cfg.set_string("pipeline.max-parallelism", str(job["max_parallelism"]))
    if restore is not None:
        cfg.set_string("execution.state-recovery.path", restore)
    return cfg


def _wait_for_phase_input(job: dict, phase_no: int, folder: str, result, deadline: float) -> None:
    """Wait until every source subtask emitted its ``cap`` records of this phase (each seen by
    the first operator), or raise on the deadline or if the job ends first (``result``: the
    job's execution-result future, done once the job is over)."""
    want = job["splits"] * min(job["cap"], job["split_len"])
    seen = set()
    while True:
        seen = {(o[4], o[5]) for o in read_observations(os.path.join(folder, "obs"))
                if o[0] == "src" and o[1] == phase_no}
        if len(seen) >= want:
            return
        if result.isDone():
            raise RuntimeError(f"phase {phase_no} ended before its sources emitted their records "
                               f"({len(seen)} of {want})")
        if time.time() > deadline:
            raise TimeoutError(f"phase {phase_no}: {len(seen)} of {want} records emitted before the timeout")
        time.sleep(0.05)


def _wait_finished(jvm, result, client, deadline: float, what: str) -> None:
    """Wait for the job's execution result; a failed job raises with Flink's cause, a job still
    running at the deadline is cancelled and raises TimeoutError."""
    from py4j.protocol import Py4JJavaError

    unit = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    try:
        result.get(max(1, int((deadline - time.time()) * 1000)), unit)
    except Py4JJavaError as e:
        if "TimeoutException" in e.java_exception.getClass().getName():
            try:
                client.cancel().result()
            except Exception:
                pass
            raise TimeoutError(f"{what} did not finish before the timeout") from None
        raise RuntimeError(f"{what} failed: {_java_cause(e)}") from None


def _stop_with_savepoint(jvm, client, folder: str, deadline: float, drain: bool = False) -> str:
    """Stop the job with a savepoint into ``folder`` (with ``drain``: ``flink stop --drain``,
    ``advanceToEndOfEventTime``); returns the savepoint's path. A savepoint refused because not
    every task runs yet (the sources may emit before the last tasks are deployed: "Not all
    required tasks are currently running") is retried."""
    from py4j.protocol import Py4JJavaError

    fmt = jvm.org.apache.flink.core.execution.SavepointFormatType.CANONICAL
    while True:
        try:
            # PyFlink 2.3.0's JobClient.stop_with_savepoint passes two arguments to a Java
            # method that takes three (the SavepointFormatType): call the Java client directly
            return client._j_job_client.stopWithSavepoint(bool(drain), "file://" + folder, fmt).get()
        except Py4JJavaError as e:
            if "Not all required tasks are currently running" not in str(e) or time.time() > deadline:
                raise
            time.sleep(0.2)


def _java_cause(e: Exception) -> str:
    text = str(e)
    causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
    return (causes[-1] if causes else text.splitlines()[0] if text else repr(e))[:400]


def run_job(job: dict, base: str, jvm, timeout: float) -> dict:
    from pyflink.datastream import StreamExecutionEnvironment

    t0 = time.time()
    folder = os.path.join(base, f"job-{job['id']}")
    os.makedirs(folder, exist_ok=True)
    deadline = t0 + timeout
    restore = None
    savepoints = []
    for phase_no, phase in enumerate(job["phases"]):
        env = StreamExecutionEnvironment.get_execution_environment(_configuration(job, phase_no, folder, restore))
        build_phase(env, job, phase_no, folder, jvm)
        what = f"job {job['name']} phase {phase_no}"
        client = env.execute_async(f"{job['name']}-phase{phase_no}")
        result = client._j_job_client.getJobExecutionResult()
        if phase.get("stop_with_savepoint"):
            _wait_for_phase_input(job, phase_no, folder, result, deadline)
            restore = _stop_with_savepoint(jvm, client, os.path.join(folder, f"savepoint-{phase_no}"), deadline,
                                           drain=phase.get("drain", False))
            savepoints.append(restore)
        _wait_finished(jvm, result, client, deadline, what)
    return {"id": job["id"], "ok": True, **end_results(job, folder, jvm), "savepoints": savepoints,
            "seconds": round(time.time() - t0, 3)}


def end_results(job: dict, folder: str, jvm) -> dict:
    """What a finished job left, as ``flinkspec conform`` compares it: the committed output,
    the observations, whether the injected failure happened, and each key's Row hash code and
    key group (the recorder of ``flinkspec trace`` answers them too, so that ``conform
    --faults`` judges its runs)."""
    keys = sorted({r[0] for r in job["records"]})
    return {
        "output": read_committed(os.path.join(folder, "out")),
        "observations": read_observations(os.path.join(folder, "obs")),
        "failed": os.path.exists(os.path.join(folder, "failed.marker")),
        "key_hash": {k: _row_key(jvm, k).hashCode() for k in keys},
        "key_group": {k: jvm.org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignToKeyGroup(
            _row_key(jvm, k), job["max_parallelism"]) for k in keys},
    }


def _row_key(jvm, key: str):
    """The key object PyFlink's keyBy hands to Flink: ``KeyByKeySelector`` wraps the key in a
    one-field ``Row``."""
    row = jvm.org.apache.flink.types.Row(1)
    row.setField(0, key)
    return row


def serve(run, on_error=lambda: {}) -> int:
    """Answer each JSON request on stdin with one JSON line on stdout, in order: ``run(job,
    base, jvm, timeout)``'s result, or ``{"id", "ok": false, "error", "traceback"}`` plus
    ``on_error()`` when it raises (reported per request: the client turns it into a
    disagreement or a failed recording). One JVM serves every request."""
    base = os.environ.get("FLINKSPEC_CONFORM_WORK") or os.getcwd()
    timeout = float(os.environ.get("FLINKSPEC_CONFORM_TIMEOUT", "180"))
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    version = jvm.org.apache.flink.runtime.util.EnvironmentInformation.getVersion()
    _log(f"Flink {version} ready")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        job = json.loads(line)
        try:
            result = run(job, base, jvm, timeout)
        except Exception as e:  # reported per request
            tb = traceback.format_exc(limit=3)
            result = {"id": job.get("id"), "ok": False, "error": f"{type(e).__name__}: {_java_cause(e)}",
                      "traceback": tb[-2000:], **on_error()}
        result["flink_version"] = version
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()
    return 0


def main() -> int:
    return serve(run_job)

if __name__ == "__main__":
    sys.exit(main())
