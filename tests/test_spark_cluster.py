"""``flinkspec spark-replay --master spark://...`` against a standalone cluster on this machine.

    flinkspec (driver, a subprocess) --RPC--> Master (127.0.0.1) <--registers-- Worker (2 cores)
                                                                              `-> executor JVM + Python

The Master and the Worker come from the pyspark package (``bin/spark-class``), bound to the
loopback address; the replay's Parquet rows must equal the same runs computed in this process.
Slow (three JVMs start): ``make test-slow``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pyspark
import pytest

from spark import replay as R

pytestmark = pytest.mark.slow

SPARK_HOME = Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    pytest.fail(f"{log.name}: {text!r} did not appear:\n{log.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def standalone(tmp_path):
    env = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path), "SPARK_NO_DAEMONIZE": "1"}
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs = []

    def start(name, *args):
        log = tmp_path / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                                    env=env, cwd=tmp_path, start_new_session=True)
        procs.append(proc)
        return proc, log

    try:
        master, log = start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                            "--port", str(port), "--webui-port", str(_free_port()))
        _wait_for(log, "I have been elected leader", master)
        worker, log = start("worker", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                            "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port()),
                            "--work-dir", str(tmp_path / "work"))
        _wait_for(log, "Successfully registered with master", worker)
        yield url
    finally:
        for proc in reversed(procs):  # the process groups this fixture started, nothing else
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(10)


def _rows(runs_dir: Path) -> list[tuple]:
    table = ds.dataset(str(runs_dir), format="parquet", partitioning="hive").to_table()
    return sorted(tuple(str(r[c]) if c == "variant" else r[c] for c in R.DETERMINISTIC_COLUMNS)
                  for r in table.to_pylist())


def test_replay_on_a_standalone_cluster_equals_local_runs(standalone, tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    engine = R.standin_engine()
    plan = R.ReplayPlan(runs=300, variants=tuple(engine.expected), seed=5)
    proc = subprocess.run(
        [sys.executable, "-m", "flinkspec.cli", "spark-replay", "--engine", "standin", "--runs", "300",
         "--seed", "5", "--master", standalone, "--out", "out", "--counterexamples", "cx"],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"on {standalone}" in proc.stdout
    assert sorted(p.name for p in cwd.iterdir()) == ["cx", "out"]
    keep = [i for i, (name, _) in enumerate(R.RESULT_COLUMNS) if name != "duration_s"]
    local = sorted(tuple(R.run_one(engine.run, v, s, True, None)[i] for i in keep) for v, s in plan.all_runs())
    assert _rows(cwd / "out" / "runs") == local
    assert len(list((cwd / "cx").rglob("*.ndjson"))) == 2
