"""One quiet SparkSession factory for flinkspec (local by default, any ``--master``).

What it takes care of (measured pitfalls):

* executors run *this* interpreter (``PYSPARK_PYTHON = sys.executable``; override with the
  environment variable ``FLINKSPEC_PYSPARK_PYTHON`` when a cluster's workers need another path);
* no web UI, no console progress bar, and nothing from the JVM on the terminal: the JVM's
  stdout and stderr go to a log file (:func:`jvm_log_path`, printed with the results and in
  every Spark error), ``spark/log4j2.properties`` sets the log levels;
* a master URL is checked before any JVM starts (:func:`validate_master`: scheme, host,
  port 1-65535; :func:`preflight`: YARN's configuration, the Kubernetes image, a TCP
  connection to a ``spark://`` or ``k8s://`` endpoint); a cluster that does not answer or
  gives no executor fails within a bounded time (:func:`master_timeout`, 25 s by default);
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
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator, Mapping

from model.errors import InvalidArgument
from model.inputfiles import short

LOG4J2_FILE = Path(__file__).with_name("log4j2.properties")
DEFAULT_MASTER = "local[*]"

_LOCAL_RE = re.compile(r"^local(?:\[(?P<cores>\*|[1-9]\d*)(?:,\s*(?P<failures>[1-9]\d*))?\])?$")
_LOCAL_CLUSTER_RE = re.compile(r"^local-cluster\[\s*[1-9]\d{0,3}\s*,\s*[1-9]\d{0,3}\s*,\s*[1-9]\d{0,6}\s*\]$")
#: a DNS name (labels of letters, digits and hyphens), an IPv4 address or a bracketed IPv6 one
_HOST_RE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}"
                      r"[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost")
#: Seconds a cluster master has to answer (TCP connect) and to give the application an
#: executor, unless ``--master-timeout`` / ``FLINKSPEC_SPARK_MASTER_TIMEOUT`` says otherwise.
DEFAULT_MASTER_TIMEOUT = 25.0
MASTER_USAGE = "use local, local[N], local[*], local[N,F], spark://HOST:PORT, yarn or k8s://https://HOST:PORT"

#: Temporary directories of the sessions this process started, removed on stop / at exit.
_TEMP_DIRS: dict[int, str] = {}
#: The process's scratch root. Spark caches ``spark.local.dir`` for the JVM's lifetime, so all
#: sessions of one process share it; it is removed at exit.
_PROCESS_TEMP: list[str] = []


def _process_temp() -> str:
    if not _PROCESS_TEMP:
        _PROCESS_TEMP.append(tempfile.mkdtemp(prefix="flinkspec-spark-"))
    return _PROCESS_TEMP[0]


def _host_port(text: str, flag: str) -> tuple[str, int]:
    """``(host, port)`` of ``HOST:PORT`` (port 1-65535), else InvalidArgument naming the rule."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise InvalidArgument(f"{flag}: not a Spark master URL ({short(text)} needs HOST:PORT; {MASTER_USAGE})")
    if not _HOST_RE.match(host):
        raise InvalidArgument(f"{flag}: not a Spark master URL ({short(host)} is not a host name or IP address)")
    if not port.isdigit() or len(port) > 5 or not 1 <= int(port) <= 65535:
        raise InvalidArgument(f"{flag}: not a Spark master URL (port {short(port)} is not a port number 1-65535)")
    return host, int(port)


def master_endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs a ``spark://`` or ``k8s://`` master names (empty for the others)."""
    flag = f"--master {short(master)}"
    if master.startswith("spark://"):
        return [_host_port(hp, flag) for hp in master[len("spark://"):].split(",")]
    if master.startswith("k8s://"):
        rest = master[len("k8s://"):]
        scheme = "https"
        if "://" in rest:
            scheme, _, rest = rest.partition("://")
        rest = rest.rstrip("/")
        if ":" not in rest.strip("[]").rsplit("]", 1)[-1]:
            rest += ":443" if scheme == "https" else ":80"
        return [_host_port(rest, flag)]
    return []


def validate_master(master: str) -> str:
    """``master`` if it is a Spark master URL flinkspec can use, else :class:`InvalidArgument`
    (one line, before any JVM starts).

    Accepted: ``local``, ``local[N]``, ``local[*]``, ``local[N,F]`` / ``local[*,F]`` (F = maximum
    task failures), ``local-cluster[W,C,M]``, ``spark://host:port[,host:port...]`` (a host
    name or IP address, a port 1-65535), ``yarn``, ``k8s://[https://]host[:port]``.
    """
    m = str(master).strip()
    if len(m) > 2_000:
        raise InvalidArgument(f"--master {short(m)}: not a Spark master URL ({MASTER_USAGE})")
    if _LOCAL_RE.match(m) or _LOCAL_CLUSTER_RE.match(m) or m == "yarn":
        return m
    if m.startswith(("spark://", "k8s://")):
        master_endpoints(m)
        return m
    raise InvalidArgument(f"--master {short(master)}: not a Spark master URL ({MASTER_USAGE})")


def master_timeout(value: float | None = None) -> float:
    """The bound on waiting for a cluster master: ``value``, else the environment variable
    ``FLINKSPEC_SPARK_MASTER_TIMEOUT``, else :data:`DEFAULT_MASTER_TIMEOUT` seconds."""
    if value is None:
        text = os.environ.get("FLINKSPEC_SPARK_MASTER_TIMEOUT", "")
        try:
            value = float(text) if text else DEFAULT_MASTER_TIMEOUT
        except ValueError:
            raise InvalidArgument(f"FLINKSPEC_SPARK_MASTER_TIMEOUT={short(text)}: not a number of seconds") from None
    if not 0 < value <= 3_600:  # also refuses nan and inf
        raise InvalidArgument(f"--master-timeout {value}: must be more than 0 and at most 3600 seconds")
    return float(value)


def preflight(master: str, conf: Mapping[str, str] | None = None, timeout: float | None = None) -> None:
    """What can be known about a cluster master before a JVM starts, each a one-line
    :class:`SparkStartError`: ``yarn`` needs ``HADOOP_CONF_DIR`` or ``YARN_CONF_DIR``;
    ``k8s://`` needs ``spark.kubernetes.container.image`` (a ``--conf``); a ``spark://`` or
    ``k8s://`` endpoint must accept a TCP connection within ``timeout`` seconds."""
    conf = dict(conf or {})
    if master == "yarn" and not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
        raise SparkStartError("--master yarn: set HADOOP_CONF_DIR or YARN_CONF_DIR to the cluster's "
                              "configuration folder (neither is set)")
    if master.startswith("k8s://") and not conf.get("spark.kubernetes.container.image"):
        raise SparkStartError(f"--master {short(master)}: Kubernetes needs --conf "
                              "spark.kubernetes.container.image=IMAGE (an image with Python and flinkspec)")
    endpoints = master_endpoints(master)
    if not endpoints:
        return
    limit = master_timeout(timeout)
    deadline = time.monotonic() + limit
    reasons = []
    for host, port in endpoints:
        left = max(0.1, deadline - time.monotonic())
        try:
            with socket.create_connection((host.strip("[]"), port), timeout=left):
                return
        except socket.timeout:
            reasons.append(f"{host}:{port} did not answer within {limit:g} s")
        except OSError as e:
            reasons.append(f"{host}:{port}: {e.strerror or type(e).__name__}")
    raise SparkStartError(f"cannot reach the Spark master {short(master)}: {'; '.join(reasons)} "
                          "(--master-timeout / FLINKSPEC_SPARK_MASTER_TIMEOUT bound the wait)")


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


def jvm_log_path() -> str:
    """Where the JVM's output goes (log4j, spark-submit, the executors' Python workers in local
    mode): ``FLINKSPEC_SPARK_LOG``, else ``<temp dir>/flinkspec-spark-<pid>.log``. Never the
    terminal; the path is printed with the results and in every Spark error."""
    return os.environ.get("FLINKSPEC_SPARK_LOG") or str(Path(tempfile.gettempdir()) / f"flinkspec-spark-{os.getpid()}.log")


def _ensure_gateway(conf: Mapping[str, str]) -> None:
    """Start the py4j JVM (once per process) with its stdout and stderr sent to
    :func:`jvm_log_path` instead of the terminal; ``conf`` reaches spark-submit as ``--conf``
    (the driver's Java options take effect only here)."""
    from pyspark import SparkConf, SparkContext  # pyspark only when used (module docstring)
    from pyspark.java_gateway import launch_gateway  # pyspark only when used (module docstring)

    if SparkContext._gateway is not None:
        return
    path = jvm_log_path()
    try:
        log = open(path, "ab")
    except OSError as e:
        raise SparkStartError(f"cannot open the JVM log {path}: {e.strerror or e}") from None
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    try:
        with log:
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": log, "stderr": log})
    except Exception as e:  # no Java, a broken install: one line, the details are in the log
        raise SparkStartError(f"the Spark JVM did not start ({type(e).__name__}; JVM log: {path})") from None
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm


def _is_cluster(master: str) -> bool:
    return local_cores(master) is None and not _LOCAL_CLUSTER_RE.match(master)


def _executors(sc) -> int:
    """Executors registered with the application (the driver's own entry left out)."""
    return max(0, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)


def start_session(
    master: str = DEFAULT_MASTER,
    app_name: str = "flinkspec",
    conf: Mapping[str, str] | None = None,
    *,
    timeout: float | None = None,
):
    """A new SparkSession on ``master`` (stops a live one first). Raises InvalidArgument
    for a malformed master and :class:`SparkStartError` (one line) when Spark cannot start:
    checked before the JVM starts (:func:`preflight`), then, on a cluster, bounded by
    ``timeout`` seconds (:func:`master_timeout`) until an executor registers."""
    master = validate_master(master)
    limit = master_timeout(timeout)
    deadline = time.monotonic() + limit  # the whole start on a cluster: connect, JVM, registration
    preflight(master, conf, limit)
    stop_session()
    os.environ["PYSPARK_PYTHON"] = os.environ.get("FLINKSPEC_PYSPARK_PYTHON", sys.executable)
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if _binds_loopback(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession  # pyspark only when used (module docstring)

    temp_dir = tempfile.mkdtemp(prefix="warehouse-", dir=_process_temp())
    settings = {**base_conf(master, temp_dir), **dict(conf or {})}
    log = jvm_log_path()
    try:
        def create():
            _ensure_gateway({"spark.master": master, "spark.app.name": app_name, **settings})
            builder = SparkSession.builder.master(master).appName(app_name)
            for key, value in settings.items():
                builder = builder.config(key, value)
            return builder.getOrCreate()

        spark = _bounded(create, deadline, master, limit) if _is_cluster(master) else create()
    except SparkStartError:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    except Exception as e:  # py4j / Java errors: one line, no traceback; the JVM's account is in the log
        shutil.rmtree(temp_dir, ignore_errors=True)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SparkStartError(f"Spark could not start on master {short(master)}: {short(first, 200)} "
                              f"(JVM log: {log})") from None
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    _TEMP_DIRS[id(sc)] = temp_dir
    if _is_cluster(master):
        while _executors(sc) == 0:
            if time.monotonic() > deadline:
                stop_session(spark)
                raise SparkStartError(f"no executor registered with the Spark master {short(master)} within "
                                      f"{limit:g} s (is a worker running and able to reach this driver? "
                                      f"JVM log: {log})")
            time.sleep(0.2)
    if local_cores(master) is None:  # a cluster: shuffle partitions = its cores
        spark.conf.set("spark.sql.shuffle.partitions", str(max(1, sc.defaultParallelism)))
    return spark


def _bounded(fn, deadline: float, master: str, limit: float):
    """``fn()`` in a daemon thread, given up at ``deadline`` (``time.monotonic``): a cluster
    master that accepts connections but never registers the application would block for
    minutes."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=target, name="flinkspec-spark-start", daemon=True)
    t.start()
    t.join(max(0.0, deadline - time.monotonic()))
    if t.is_alive():
        raise SparkStartError(f"the Spark master {short(master)} did not register the application within "
                              f"{limit:g} s (JVM log: {jvm_log_path()})")
    if "error" in box:
        raise box["error"]
    return box["value"]


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
    *,
    timeout: float | None = None,
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
    spark = start_session(master, app_name, conf, timeout=timeout)
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
