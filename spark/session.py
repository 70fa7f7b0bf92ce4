"""One quiet SparkSession factory for flinkspec (local by default, any ``--master``).

What it takes care of (measured pitfalls):

* executors run *this* interpreter (``PYSPARK_PYTHON = sys.executable``; override with the
  environment variable ``FLINKSPEC_PYSPARK_PYTHON`` when a cluster's workers need another path);
* no web UI, no console progress bar, quiet logs: ``spark/log4j2.properties`` (root level
  ``error``) is handed to the driver and executor JVMs, so start-up noise never prints;
* local masters (and a standalone master on the loopback address) bind to 127.0.0.1;
* ``spark.sql.shuffle.partitions`` = the number of cores (``spark.default.parallelism``);
* the warehouse and Spark's scratch space live in a private temporary directory (one per
  process, removed at exit): nothing is written into the working directory.

``session(master)`` is a context manager; ``start_session`` / ``stop_session`` the plain
functions. Only one SparkContext can live in a process: asking for a different master stops
the active one first; asking for the active master reuses it (and then does not stop it).

pyspark (~0.13 s to import) is imported by the functions that start or look up a session
only, so ``flinkspec`` start-up and ``validate_master`` do not load it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping

from model.errors import InvalidArgument

LOG4J2_FILE = Path(__file__).with_name("log4j2.properties")
DEFAULT_MASTER = "local[*]"

_LOCAL_RE = re.compile(r"^local(?:\[(?P<cores>\*|[1-9]\d*)(?:,\s*(?P<failures>[1-9]\d*))?\])?$")
_LOCAL_CLUSTER_RE = re.compile(r"^local-cluster\[\s*[1-9]\d*\s*,\s*[1-9]\d*\s*,\s*[1-9]\d*\s*\]$")
_HOSTPORT = r"[A-Za-z0-9_.\-]+:[1-9]\d{0,4}"
_STANDALONE_RE = re.compile(rf"^spark://{_HOSTPORT}(?:,{_HOSTPORT})*$")
_K8S_RE = re.compile(r"^k8s://\S+$")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost")

#: Temporary directories of the sessions this process started, removed on stop / at exit.
_TEMP_DIRS: dict[int, str] = {}
#: The process's scratch root. Spark caches ``spark.local.dir`` for the JVM's lifetime, so all
#: sessions of one process share it; it is removed at exit.
_PROCESS_TEMP: list[str] = []


def _process_temp() -> str:
    if not _PROCESS_TEMP:
        _PROCESS_TEMP.append(tempfile.mkdtemp(prefix="flinkspec-spark-"))
    return _PROCESS_TEMP[0]


def validate_master(master: str) -> str:
    """``master`` if it is a Spark master URL Spark accepts, else :class:`InvalidArgument`.

    Accepted: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]`` / ``local[*,F]`` (F = maximum
    task failures), ``local-cluster[W,C,M]``, ``spark://host:port[,host:port...]``, ``yarn``,
    ``k8s://...``.
    """
    m = str(master).strip()
    if (
        _LOCAL_RE.match(m)
        or _LOCAL_CLUSTER_RE.match(m)
        or _STANDALONE_RE.match(m)
        or m == "yarn"
        or _K8S_RE.match(m)
    ):
        return m
    raise InvalidArgument(
        f"--master {master!r}: not a Spark master URL (use local, local[N], local[*], "
        "local[N,F], spark://HOST:PORT, yarn or k8s://URL)"
    )


def local_cores(master: str) -> int | None:
    """The number of cores of a ``local[...]`` master (``*`` = this machine's), else None."""
    m = _LOCAL_RE.match(master)
    if not m:
        return None
    cores = m.group("cores")
    if cores is None:
        return 1
    if cores == "*":
        return os.cpu_count() or 1
    return int(cores)


def _binds_loopback(master: str) -> bool:
    if _LOCAL_RE.match(master) or _LOCAL_CLUSTER_RE.match(master):
        return True
    if master.startswith("spark://"):
        hosts = [hp.rsplit(":", 1)[0] for hp in master[len("spark://"):].split(",")]
        return all(h in _LOOPBACK_HOSTS for h in hosts)
    return False


def base_conf(master: str, warehouse_dir: str) -> dict[str, str]:
    """The Spark configuration of a flinkspec session (before user overrides)."""
    java_opts = f"-Dlog4j2.configurationFile=file:{LOG4J2_FILE}"
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.sql.warehouse.dir": warehouse_dir,
        "spark.local.dir": str(Path(_process_temp()) / "local"),
        "spark.sql.catalogImplementation": "in-memory",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.pyspark.driver.python": sys.executable,
    }
    cores = local_cores(master)
    if cores is not None:
        conf["spark.default.parallelism"] = str(cores)
        conf["spark.sql.shuffle.partitions"] = str(cores)
    if _binds_loopback(master):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def active_session():
    """The SparkSession of the live SparkContext of this process, or None."""
    from pyspark import SparkContext  # pyspark only when used (module docstring)
    from pyspark.sql import SparkSession  # pyspark only when used (module docstring)

    sc = SparkContext._active_spark_context
    if sc is None:
        return None
    return SparkSession.getActiveSession() or SparkSession(sc)


def start_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "flinkspec",
    conf: Mapping[str, str] | None = None,
):
    """A new SparkSession on ``master`` (stops a live one first). Raises InvalidArgument
    for a malformed master and :class:`SparkStartError` when Spark cannot start."""
    master = validate_master(master)
    stop_session()
    os.environ["PYSPARK_PYTHON"] = os.environ.get("FLINKSPEC_PYSPARK_PYTHON", sys.executable)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if _binds_loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # pyspark only when used (module docstring)

    temp_dir = tempfile.mkdtemp(prefix="warehouse-", dir=_process_temp())
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**base_conf(master, temp_dir), **dict(conf or {})}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # py4j / Java errors: one line, no traceback
        shutil.rmtree(temp_dir, ignore_errors=True)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SparkStartError(f"Spark could not start on master {master!r}: {first}") from None
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    if local_cores(master) is None:  # a cluster: shuffle partitions = its cores
        spark.conf.set("spark.sql.shuffle.partitions", str(max(1, sc.defaultParallelism)))
    _TEMP_DIRS[id(sc)] = temp_dir
    return spark


def stop_session(spark=None) -> None:
    """Stop ``spark`` (default: the live session, if any) and remove its temporary directory."""
    if spark is None:
        spark = active_session()
        if spark is None:
            return
    sc = spark.sparkContext
    spark.stop()
    temp_dir = _TEMP_DIRS.pop(id(sc), None)
    if temp_dir:
        shutil.rmtree(temp_dir, ignore_errors=True)


@contextlib.contextmanager
def session(
    master: str = DEFAULT_MASTER,
    app_name: str = "flinkspec",
    conf: Mapping[str, str] | None = None,
) -> Iterator:
    """A SparkSession on ``master`` for the ``with`` block.

    Reuses the live session when it already runs on ``master`` (and then leaves it running);
    otherwise starts one and stops it at the end of the block.
    """
    master = validate_master(master)
    live = active_session()
    if live is not None and live.sparkContext.master == master and not conf:
        yield live
        return
    spark = start_session(master, app_name, conf)
    try:
        yield spark
    finally:
        stop_session(spark)


def timed_start(master: str = DEFAULT_MASTER) -> tuple[object, float]:
    """(session, seconds it took to start) -- for the benchmark and the docs."""
    t0 = time.perf_counter()
    spark = start_session(master)
    return spark, time.perf_counter() - t0


class SparkStartError(InvalidArgument):
    """Spark did not start (bad master, unreachable cluster, missing Java)."""


@atexit.register
def _cleanup() -> None:  # pragma: no cover - process exit
    for temp_dir in list(_TEMP_DIRS.values()) + _PROCESS_TEMP:
        shutil.rmtree(temp_dir, ignore_errors=True)
    _TEMP_DIRS.clear()
