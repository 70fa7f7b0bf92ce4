"""Real Flink's StatusWatermarkValve as an oracle (JSON over stdin/stdout).

* **Server** (``.venv-flink/bin/python tools/flink_valve_oracle.py``): reads ONE JSON request
  from stdin, feeds every case into a fresh
  ``org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve(numChannels)`` of the
  installed apache-flink jars (2.3.0) through PyFlink's py4j gateway, and writes one JSON
  response to stdout::

      -> {"cases": [{"num_channels": 2,
                     "inputs": [["watermark", 0, 5], ["idle", 1], ["active", 1]]}]}
      <- {"ok": true, "flink_version": "2.3.0",
          "results": [{"events": [["watermark", 5], ["status", "IDLE"]], "per_input": [1, 1, 0]}]}

  The valve's ``PushingAsyncDataInput.DataOutput`` is a Python object implementing that Java
  interface through a py4j callback: the valve calls ``emitWatermark(Watermark)`` and
  ``emitWatermarkStatus(WatermarkStatus)``; any other call (records, latency markers, record
  attributes) is recorded as an ``["unexpected", name]`` event. Inputs are
  ``valve.inputWatermark(new Watermark(ts), ch, output)`` and
  ``valve.inputWatermarkStatus(WatermarkStatus.IDLE|ACTIVE, ch, output)`` -- the 2.3.0
  signatures (checked with ``javap``: ``inputWatermark`` takes
  ``org.apache.flink.streaming.api.watermark.Watermark`` in 2.3.0). ``per_input`` gives how
  many events each input produced, so the client can align emissions with inputs.
  A Java exception in a case is reported as ``{"error": {"class": ..., "message": ...}}``.

* **Client** (:func:`run_valve_cases`, importable from the main venv, never imports pyflink):
  spawns the server with ``.venv-flink/bin/python`` and returns the parsed response.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLINK_VENV = REPO / ".venv-flink"
FLINK_PYTHON = FLINK_VENV / "bin" / "python"

DATA_OUTPUT = "org.apache.flink.streaming.runtime.io.PushingAsyncDataInput$DataOutput"

# ============================================================================================
# Server side (runs inside .venv-flink)
# ============================================================================================


class _RecordingDataOutput:
    """A Python implementation of Flink's ``PushingAsyncDataInput.DataOutput`` (py4j callback)."""

    def __init__(self):
        self.events: list[list] = []

    def emitWatermark(self, watermark):  # noqa: N802 - Java name; both overloads land here
        try:
            ts = watermark.getTimestamp()
        except Exception:  # a WatermarkEvent (generalized watermark) -- not expected in 2.3.0
            self.events.append(["unexpected", "emitWatermark(WatermarkEvent)", str(watermark)])
            return None
        self.events.append(["watermark", int(ts)])
        return None

    def emitWatermarkStatus(self, status):  # noqa: N802
        self.events.append(["status", "IDLE" if status.isIdle() else "ACTIVE"])
        return None

    def emitRecord(self, record):  # noqa: N802
        self.events.append(["unexpected", "emitRecord"])

    def emitLatencyMarker(self, marker):  # noqa: N802
        self.events.append(["unexpected", "emitLatencyMarker"])

    def emitRecordAttributes(self, attributes):  # noqa: N802
        self.events.append(["unexpected", "emitRecordAttributes"])

    class Java:
        implements = [DATA_OUTPUT]


def _run_case(jvm, case) -> dict:
    from py4j.protocol import Py4JJavaError

    valve_cls = jvm.org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve
    status_cls = jvm.org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus
    watermark_cls = jvm.org.apache.flink.streaming.api.watermark.Watermark
    idle, active = status_cls.IDLE, status_cls.ACTIVE
    out = _RecordingDataOutput()
    per_input = []
    try:
        valve = valve_cls(int(case["num_channels"]))
        for inp in case["inputs"]:
            before = len(out.events)
            kind, ch = inp[0], int(inp[1])
            if kind == "watermark":
                valve.inputWatermark(watermark_cls(int(inp[2])), ch, out)
            elif kind == "idle":
                valve.inputWatermarkStatus(idle, ch, out)
            elif kind == "active":
                valve.inputWatermarkStatus(active, ch, out)
            else:
                raise ValueError(f"unknown input kind {kind!r}")
            per_input.append(len(out.events) - before)
    except Py4JJavaError as e:
        ex = e.java_exception
        return {
            "events": out.events,
            "per_input": per_input,
            "error": {"class": ex.getClass().getName(), "message": ex.getMessage()},
        }
    return {"events": out.events, "per_input": per_input}


def serve(stdin=sys.stdin, stdout=sys.stdout) -> None:
    os.environ.setdefault("FLINK_LOG_DIR", tempfile.mkdtemp(prefix="flinkspec-valve-log-"))
    from pyflink.java_gateway import get_gateway

    request = json.loads(stdin.read())
    jvm = get_gateway().jvm
    try:
        version = jvm.org.apache.flink.runtime.util.EnvironmentInformation.getVersion()
        results = [_run_case(jvm, case) for case in request["cases"]]
        resp = {"ok": True, "flink_version": version, "results": results}
    except Exception as e:  # a bad request
        resp = {"ok": False, "error": {"class": type(e).__name__, "message": str(e)}}
    stdout.write(json.dumps(resp) + "\n")
    stdout.flush()


# ============================================================================================
# Client side (runs in the main venv)
# ============================================================================================


class OracleUnavailable(RuntimeError):
    """The Flink venv is missing or the oracle failed."""


def run_valve_cases(cases: list[dict], *, python: Path | str = FLINK_PYTHON, timeout: float = 600.0) -> dict:
    """Run ``cases`` through the real valve; returns the server's response (``ok`` is true)."""
    python = Path(python)
    if not python.exists():
        raise OracleUnavailable(
            f"{python} not found: the real-Flink environment is missing; run `make flink-env` "
            "(creates .venv-flink with apache-flink, ~850 MB)"
        )
    with tempfile.TemporaryDirectory(prefix="flinkspec-valve-oracle-") as tmp:
        env = dict(os.environ)
        env["FLINK_LOG_DIR"] = tmp
        env["TMPDIR"] = tmp
        env["JVM_ARGS"] = f"-Djava.io.tmpdir={tmp}"
        env.pop("PYTHONPATH", None)
        proc = subprocess.run(
            [str(python), str(Path(__file__).resolve())],
            input=json.dumps({"cases": cases}),
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp,
            timeout=timeout,
        )
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        raise OracleUnavailable(
            f"flink valve oracle failed (exit {proc.returncode}); stderr tail: {proc.stderr[-2000:]}"
        )
    resp = json.loads(lines[-1])
    if not resp.get("ok"):
        raise OracleUnavailable(f"flink valve oracle rejected the request: {resp.get('error')}")
    return resp


if __name__ == "__main__":
    serve()
