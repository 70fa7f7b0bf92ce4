"""Real Apache Flink as an oracle: JSON queries over stdin/stdout, answered by Flink's own jars.

Two halves in one file:

* **Server** (``python tools/flink_oracle.py``, run by ``.venv-flink/bin/python``; see
  ``make flink-env``): starts a JVM through PyFlink's gateway and answers one JSON request per
  input line with one JSON response per output line::

      -> {"id": 1, "op": "assign_to_key_group", "args": {"keys": [1, "a"], "max_parallelism": 128}}
      <- {"id": 1, "ok": true, "result": [86, 81]}
      <- {"id": 2, "ok": false, "error": {"class": "java.lang.IllegalArgumentException", "message": "..."}}

  Batch ops answer per item; an item Flink rejects becomes ``{"error": {...}}`` in the list.
  Ops are plain functions registered in :data:`OPS` with :func:`op`, so other mechanisms (e.g.
  the ``StatusWatermarkValve``) can be added as new ops; ``SESSION`` holds state across calls.

* **Client** (:class:`FlinkOracle`, importable from the main venv, never imports pyflink):
  spawns the server with the Flink venv's interpreter and offers ``call(op, **args)``.

Keys travel as JSON values and reach Java through py4j exactly as the model reads them: a
Python int in int32 arrives as ``java.lang.Integer``, a larger one as ``java.lang.Long``, a str
as ``java.lang.String``, a bool as ``java.lang.Boolean``. Strings with lone surrogates cannot
cross py4j and are not supported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
FLINK_VENV = REPO / ".venv-flink"
FLINK_PYTHON = FLINK_VENV / "bin" / "python"

# ============================================================================================
# Server side (runs inside .venv-flink)
# ============================================================================================

#: op name -> function(jvm, **args) -> JSON-able result
OPS: dict[str, Callable[..., Any]] = {}
#: state kept across requests (e.g. live Java objects created by stateful ops), by handle name
SESSION: dict[str, Any] = {}


class JavaError(Exception):
    def __init__(self, cls: str, message: str | None):
        super().__init__(f"{cls}: {message}")
        self.cls = cls
        self.message = message

    def to_json(self) -> dict:
        return {"class": self.cls, "message": self.message}


def op(name: str):
    """Register an op: ``@op("name") def f(jvm, **args)``."""

    def wrap(fn):
        OPS[name] = fn
        return fn

    return wrap


def _java_call(fn, *args):
    """Call into Java, turning a Java exception into :class:`JavaError`."""
    from py4j.protocol import Py4JJavaError

    try:
        return fn(*args)
    except Py4JJavaError as e:
        ex = e.java_exception
        raise JavaError(ex.getClass().getName(), ex.getMessage()) from None


def _each(fn, items) -> list:
    out = []
    for item in items:
        try:
            out.append(fn(item))
        except JavaError as e:
            out.append({"error": e.to_json()})
    return out


def _kgra(jvm):
    return jvm.org.apache.flink.runtime.state.KeyGroupRangeAssignment


def _range_json(r) -> list[int]:
    return [r.getStartKeyGroup(), r.getEndKeyGroup()]


@op("ping")
def _ping(jvm):
    return {
        "flink_version": jvm.org.apache.flink.runtime.util.EnvironmentInformation.getVersion(),
        "java_version": jvm.java.lang.System.getProperty("java.version"),
        "ops": sorted(OPS),
    }


@op("java_hash_code")
def _java_hash_code(jvm, keys):
    objects = jvm.java.util.Objects
    return _each(lambda k: _java_call(objects.hashCode, k), keys)


@op("murmur_hash")
def _murmur_hash(jvm, codes):
    mu = jvm.org.apache.flink.util.MathUtils
    return _each(lambda c: _java_call(mu.murmurHash, c), codes)


@op("round_up_to_power_of_two")
def _round_up(jvm, values):
    mu = jvm.org.apache.flink.util.MathUtils
    return _each(lambda x: _java_call(mu.roundUpToPowerOfTwo, x), values)


@op("assign_to_key_group")
def _assign_to_key_group(jvm, keys, max_parallelism):
    k = _kgra(jvm)
    return _each(lambda key: _java_call(k.assignToKeyGroup, key, max_parallelism), keys)


@op("assign_key_to_parallel_operator")
def _assign_key_to_parallel_operator(jvm, keys, max_parallelism, parallelism):
    k = _kgra(jvm)
    return _each(
        lambda key: _java_call(k.assignKeyToParallelOperator, key, max_parallelism, parallelism),
        keys,
    )


@op("compute_key_group_for_key_hash")
def _kg_for_hash(jvm, hashes, max_parallelism):
    k = _kgra(jvm)
    return _each(lambda h: _java_call(k.computeKeyGroupForKeyHash, h, max_parallelism), hashes)


@op("compute_operator_index_for_key_group")
def _op_index(jvm, max_parallelism, parallelism, key_groups):
    k = _kgra(jvm)
    return _each(
        lambda kg: _java_call(k.computeOperatorIndexForKeyGroup, max_parallelism, parallelism, kg),
        key_groups,
    )


@op("compute_key_group_range_for_operator_index")
def _range_for_index(jvm, cases):
    """``cases``: list of ``[maxP, p, i]``; result per case ``[start, end]`` or an error."""
    k = _kgra(jvm)
    return _each(
        lambda c: _range_json(_java_call(k.computeKeyGroupRangeForOperatorIndex, *c)), cases
    )


@op("key_group_ranges")
def _ranges(jvm, max_parallelism, parallelism):
    """All ranges of subtasks 0..p-1, computed inside Java in one call
    (``StateAssignmentOperation.createKeyGroupPartitions``)."""
    ranges = _java_call(
        jvm.org.apache.flink.runtime.checkpoint.StateAssignmentOperation.createKeyGroupPartitions,
        max_parallelism,
        parallelism,
    )
    # One round trip: the Java List's toString() (KeyGroupRange.toString per element),
    # instead of two py4j calls per range.
    import re

    text = ranges.toString()
    found = [
        [int(a), int(b)]
        for a, b in re.findall(r"startKeyGroup=(-?\d+), endKeyGroup=(-?\d+)", text)
    ]
    if len(found) != ranges.size():
        raise RuntimeError(f"could not parse {ranges.size()} ranges from {text[:200]!r}")
    return found


@op("compute_default_max_parallelism")
def _default_max_p(jvm, parallelisms):
    k = _kgra(jvm)
    return _each(lambda p: _java_call(k.computeDefaultMaxParallelism, p), parallelisms)


#: the model's partitioner names -> how the DataStream API asks for each
_PARTITION_CALLS = {"forward": "forward", "rescale": "rescale", "rebalance": "rebalance", "broadcast": "broadcast",
                    "shuffle": "shuffle", "global": "global"}


def _build_stream_graph(jvm, operators, chaining_enabled=True):
    """Build a job with the DataStream API; return Flink's ``StreamGraph`` of it.

    ``operators``: in topological order, ``{"name", "parallelism", "inputs": [[name,
    partitioner], ...]}`` and optionally ``"slot_sharing_group"``; no inputs is a source
    (``fromSequence``), else the union of the partitioned inputs feeds an operator without a
    user function (``assignTimestampsAndWatermarks(WatermarkStrategy.noWatermarks())``, chaining
    strategy ALWAYS); ``hash`` is ``keyBy`` with a ``NullByteKeySelector``."""
    from pyflink.java_gateway import get_gateway

    gw = get_gateway()
    env = jvm.org.apache.flink.streaming.api.environment.StreamExecutionEnvironment.getExecutionEnvironment()
    if not chaining_enabled:
        env.disableOperatorChaining()
    no_watermarks = jvm.org.apache.flink.api.common.eventtime.WatermarkStrategy.noWatermarks()
    data_stream = jvm.org.apache.flink.streaming.api.datastream.DataStream
    streams = {}
    for o in operators:
        if not o["inputs"]:
            ds = env.fromSequence(0, 1).name(o["name"]).setParallelism(o["parallelism"])
        else:
            parts = []
            for src, partitioner in o["inputs"]:
                up = streams[src]
                if partitioner == "hash":
                    parts.append(up.keyBy(jvm.org.apache.flink.api.java.functions.NullByteKeySelector()))
                else:
                    parts.append(getattr(up, _PARTITION_CALLS[partitioner])())
            joined = parts[0]
            if len(parts) > 1:
                rest = gw.new_array(data_stream, len(parts) - 1)
                for i, p in enumerate(parts[1:]):
                    rest[i] = p
                joined = joined.union(rest)
            ds = _java_call(lambda: joined.assignTimestampsAndWatermarks(no_watermarks).name(o["name"])
                            .setParallelism(o["parallelism"]))
        if o.get("slot_sharing_group"):
            ds = ds.slotSharingGroup(o["slot_sharing_group"])
        streams[o["name"]] = ds
    return _java_call(env.getStreamGraph)


def _operator_name(name: str) -> str:
    return name[len("Source: "):] if name.startswith("Source: ") else name


@op("stream_edges")
def _stream_edges(jvm, operators):
    """Flink's StreamGraph edges of the job :func:`_build_stream_graph` builds: ``[source,
    target, partitioner, supportsUnalignedCheckpoints]`` for every ``StreamEdge``."""
    sg = _build_stream_graph(jvm, operators)
    out = []
    for node in list(sg.getStreamNodes().toArray()):
        for e in list(node.getInEdges().toArray()):
            out.append([_operator_name(sg.getStreamNode(e.getSourceId()).getOperatorName()), node.getOperatorName(),
                        e.getPartitioner().toString(), bool(e.supportsUnalignedCheckpoints())])
    return sorted(out)


@op("job_vertices")
def _job_vertices(jvm, operators, chaining_enabled=True):
    """Flink's JobGraph of the job :func:`_build_stream_graph` builds
    (``StreamingJobGraphGenerator``): per JobVertex ``[head operator, operators of its chain
    (sorted), parallelism, the heads of the vertices in its slot sharing group (sorted)]``."""
    sg = _build_stream_graph(jvm, operators, chaining_enabled)
    jg = _java_call(sg.getJobGraph)
    vertices = list(jg.getVerticesSortedTopologicallyFromSources().toArray())
    names = {}
    for v in vertices:
        chain = v.getName()
        names[v.getID().toString()] = _operator_name(chain.split(" -> ")[0])
    groups: dict = {}
    for v in vertices:
        groups.setdefault(v.getSlotSharingGroup().getSlotSharingGroupId().toString(), []).append(
            names[v.getID().toString()])
    out = []
    for v in vertices:
        ops = [o for o in (_operator_name(x.strip(" ()")) for x in v.getName().replace(", ", " -> ").split(" -> "))]
        group = groups[v.getSlotSharingGroup().getSlotSharingGroupId().toString()]
        out.append([names[v.getID().toString()], sorted(ops), v.getParallelism(), sorted(group)])
    return sorted(out)


def serve(stdin=sys.stdin, stdout=sys.stdout) -> None:
    os.environ.setdefault("FLINK_LOG_DIR", tempfile.mkdtemp(prefix="flinkspec-oracle-log-"))
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    for line in stdin:
        line = line.strip()
        if not line:
            continue
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            name = req["op"]
            if name not in OPS:
                raise KeyError(f"unknown op {name!r}; known: {sorted(OPS)}")
            result = OPS[name](jvm, **req.get("args", {}))
            resp = {"id": rid, "ok": True, "result": result}
        except JavaError as e:
            resp = {"id": rid, "ok": False, "error": e.to_json()}
        except Exception as e:  # a bad request: report it, keep serving
            resp = {"id": rid, "ok": False, "error": {"class": type(e).__name__, "message": str(e)}}
        stdout.write(json.dumps(resp) + "\n")
        stdout.flush()


# ============================================================================================
# Client side (runs in the main venv)
# ============================================================================================


class OracleUnavailable(RuntimeError):
    """The Flink venv is missing or the oracle died."""


class FlinkOracle:
    """A running oracle process. ``call(op, **args)`` returns the result or raises
    :class:`JavaError` (a request-level Java exception). Use as a context manager."""

    def __init__(self, python: Path | str = FLINK_PYTHON, timeout: float = 300.0):
        python = Path(python)
        if not python.exists():
            raise OracleUnavailable(
                f"{python} not found: the real-Flink environment is missing; run `make flink-env` "
                "(creates .venv-flink with apache-flink, ~850 MB)"
            )
        self._tmp = tempfile.TemporaryDirectory(prefix="flinkspec-oracle-")
        env = dict(os.environ)
        env["FLINK_LOG_DIR"] = self._tmp.name
        env["TMPDIR"] = self._tmp.name
        env["JVM_ARGS"] = f"-Djava.io.tmpdir={self._tmp.name}"
        env.pop("PYTHONPATH", None)
        self._proc = subprocess.Popen(
            [str(python), str(Path(__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=self._tmp.name,
        )
        self._stderr: list[str] = []
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()
        self._next_id = 0
        self.timeout = timeout

    def _drain_stderr(self) -> None:
        for line in self._proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-200]

    def call(self, op_name: str, **args) -> Any:
        self._next_id += 1
        req = {"id": self._next_id, "op": op_name, "args": args}
        try:
            self._proc.stdin.write(json.dumps(req) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise OracleUnavailable(f"flink oracle died: {e}; stderr: {''.join(self._stderr)}")
        if not line:
            raise OracleUnavailable(f"flink oracle exited; stderr: {''.join(self._stderr)}")
        resp = json.loads(line)
        if resp.get("id") != self._next_id:
            raise OracleUnavailable(f"flink oracle answered out of order: {resp}")
        if not resp["ok"]:
            raise JavaError(resp["error"]["class"], resp["error"]["message"])
        return resp["result"]

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=30)
            except Exception:
                self._proc.kill()
                self._proc.wait()
        self._tmp.cleanup()

    def __enter__(self) -> "FlinkOracle":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


if __name__ == "__main__":
    serve()
