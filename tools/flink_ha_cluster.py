"""A standalone Flink session cluster with ZooKeeper HA on loopback, started and stopped from Python.

Stdlib only (runs under any python3). :class:`HaCluster` starts, in its work folder:

* a standalone ZooKeeper server (Debian's ``zookeeper`` package, ``ZooKeeperServerMain``, a
  ``zoo.cfg`` with ``clientPortAddress=127.0.0.1`` and a free port; ``bash tools/ensure-zookeeper.sh``
  installs it),
* ``job_managers`` JobManagers (``bin/jobmanager.sh start-foreground``, a distinct free
  ``rest.port`` each) and ``task_managers`` TaskManagers (``bin/taskmanager.sh start-foreground``)
  of the ``apache-flink`` pip package in ``.venv-flink`` (FLINK_HOME = its ``pyflink`` folder).

Every process is a ``subprocess.Popen`` in its own session (process group). Flink's scripts
``exec`` down to the JVM (``jobmanager.sh`` -> ``flink-console.sh`` -> ``java``), so the Popen's
pid IS the JVM's pid and its process group holds that JVM only: :meth:`HaCluster.kill_leader`
SIGKILLs exactly the leading JobManager's JVM (``os.killpg``), :meth:`HaCluster.stop` SIGTERMs
each group (TaskManagers, JobManagers, ZooKeeper), SIGKILLs what is left after a grace period,
reaps every child and asserts by pid and by ``pgrep -f <work folder>`` that nothing is left.

The configuration is written into ``<work>/conf`` (FLINK_CONF_DIR; nothing of ``.venv-flink``
is edited): ``config.yaml`` plus ``tools/flink-trace-log4j2.properties`` copied as
``log4j.properties``, ``log4j-console.properties`` (what ``flink-console.sh`` names on the JVM's
command line), ``log4j-cli.properties`` (the ``bin/flink`` client) and ``log4j-session.properties``.
Each process gets ``-Dflinkspec.log.file=<work>/logs/<name>.log`` through ``JVM_ARGS``
(``flink-console.sh`` and ``bin/flink`` put ``$JVM_ARGS`` on the java command line; the
``env.java.opts.all`` of config.yaml keeps Flink's default ``--add-opens`` list, which is lost
when FLINK_ENV_JAVA_OPTS is set in the environment, so that variable is not used). Process
names: ``zookeeper`` (ZooKeeper's own output, ``.out`` only: it is not a Flink process),
``jobmanager-<i>``, ``taskmanager-<i>``, ``client-<n>`` (each ``bin/flink run``), and
``harness``: what this harness did, in the same pattern (logger ``flinkspec.ha.HaCluster``,
thread ``harness``; e.g. ``flinkspec: JobManager 1 killed (SIGKILL, pid 123)``), so a parser can
place the kill among Flink's own events.
FLINK_LOG_DIR, FLINK_PID_DIR, TMPDIR, ``java.io.tmpdir`` and ``io.tmp.dirs`` are in the work
folder too.

Which JobManager leads (:meth:`HaCluster.leader`) is read from ZooKeeper: the leader node of the
REST endpoint, ``/flink/<cluster-id>/leader/rest_server/connection_info``, holds the leader's
REST URL (``http://127.0.0.1:<rest.port>``), and the rest port names the JobManager; a tiny
stdlib ZooKeeper client (:class:`ZkClient`: connect, getData, getChildren) reads it. The node is
ephemeral: after a SIGKILL it names the dead JobManager until its ZooKeeper session expires, so
:meth:`HaCluster.wait_new_leader` waits for a different, living JobManager. REST requests (job
state, checkpoints) go to the leader's REST endpoint first, then to any other living
JobManager (a standby's REST forwards to the leading Dispatcher).

Jobs are submitted with ``bin/flink run -d -py tools/flink_trace_job.py <request.json> --phase N
--folder DIR`` (see that file) against the same FLINK_CONF_DIR: the client finds the leading
REST endpoint through ZooKeeper. PyFlink's thread mode is used (the conform driver's default):
the TaskManagers' embedded Python (pemja) finds PyFlink and the pickled functions' module
``flink_conform_driver`` only through PYTHONPATH, which the TaskManagers get set to
``.venv-flink``'s site-packages plus ``tools/``; ``python.executable`` (the interpreter whose
libpython pemja loads) is the ``.venv-flink`` interpreter.

``python tools/flink_ha_cluster.py --work DIR --request REQ.json`` runs the whole failover
scenario (see :func:`run_scenario`) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / "tools"
FLINK_VENV = REPO / ".venv-flink"
FLINK_PYTHON = FLINK_VENV / "bin" / "python"
ZK_JAR = Path("/usr/share/java/zookeeper.jar")
TRACE_LOG4J = TOOLS / "flink-trace-log4j2.properties"
TRACE_JOB = TOOLS / "flink_trace_job.py"

#: Flink's default JVM options for Java 17 (its conf/config.yaml's env.java.opts.all)
_JAVA_OPENS = (
    "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED "
    "--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED "
    "--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED "
    "--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED "
    "--add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED "
    "--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED "
    "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED "
    "--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED "
    "--add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED "
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED "
    "--add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED "
    "--add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED "
    "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED "
    "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED"
)

#: job states after which a job does not run again
TERMINAL = ("FINISHED", "FAILED", "CANCELED")


class ClusterError(RuntimeError):
    """A cluster that cannot start or a wait that timed out (one line, no traceback in main)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a living (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _ancestors() -> set[int]:
    """This process and its ancestors."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


def find_flink_home() -> Path:
    py = sorted((FLINK_VENV / "lib").glob("python3*/site-packages/pyflink"))
    return py[0] if py else FLINK_VENV / "lib" / "python3.11" / "site-packages" / "pyflink"


def check_environment(flink_home: Path | None = None) -> None:
    """Raise :class:`ClusterError` (one line saying what to do) when Java, ZooKeeper or
    ``.venv-flink`` is missing."""
    if shutil.which("java") is None:
        raise ClusterError("Java is missing: install a JDK 17 (`java` on PATH)")
    if not ZK_JAR.exists():
        raise ClusterError(f"ZooKeeper is missing ({ZK_JAR}): run `bash tools/ensure-zookeeper.sh` "
                           "as root (or `sudo apt-get install zookeeper`)")
    home = flink_home or find_flink_home()
    if not FLINK_PYTHON.exists() or not (home / "bin" / "jobmanager.sh").exists():
        raise ClusterError(f"the real-Flink environment {FLINK_VENV} is missing: run `make flink-env` first")


# -- a minimal ZooKeeper client (jute over TCP): connect, getData, getChildren, close ------------


class ZkError(Exception):
    pass


class ZkClient:
    """Just enough of ZooKeeper's client protocol to read nodes (no watches, no writes)."""

    NONODE = -101

    def __init__(self, host: str, port: int, timeout: float = 5.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.xid = 0
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly
        self._send(struct.pack(">iqiqi16s?", 0, 0, 10000, 0, 16, b"\0" * 16, False))
        self._recv()

    def _send(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ZkError("ZooKeeper closed the connection")
            buf += chunk
        return buf

    def _recv(self) -> bytes:
        (n,) = struct.unpack(">i", self._exact(4))
        return self._exact(n)

    @staticmethod
    def _string(s: str) -> bytes:
        b = s.encode()
        return struct.pack(">i", len(b)) + b

    def _call(self, op: int, body: bytes) -> bytes:
        self.xid += 1
        self._send(struct.pack(">ii", self.xid, op) + body)
        while True:
            reply = self._recv()
            xid, _zxid, err = struct.unpack(">iqi", reply[:16])
            if xid == self.xid:
                break  # (xid -1: a watch event, -2: a ping answer; none are asked for)
        if err == self.NONODE:
            raise KeyError("no node")
        if err:
            raise ZkError(f"ZooKeeper error {err}")
        return reply[16:]

    def get(self, path: str) -> bytes | None:
        body = self._call(4, self._string(path) + b"\0")
        (n,) = struct.unpack(">i", body[:4])
        return None if n < 0 else body[4:4 + n]

    def children(self, path: str) -> list[str]:
        body = self._call(8, self._string(path) + b"\0")
        (count,) = struct.unpack(">i", body[:4])
        out, pos = [], 4
        for _ in range(count):
            (n,) = struct.unpack(">i", body[pos:pos + 4])
            out.append(body[pos + 4:pos + 4 + n].decode())
            pos += 4 + n
        return out

    def close(self) -> None:
        try:
            self.xid += 1
            self._send(struct.pack(">ii", self.xid, -11))
        except OSError:
            pass
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def leader_information(data: bytes | None) -> tuple[str, str] | None:
    """(address, leader session id) of a Flink leader node: ``ObjectOutputStream.writeUTF``
    of the address, then ``writeObject`` of the session's ``java.util.UUID`` (its two longs are
    the last 16 bytes of the stream)."""
    if not data:
        return None
    i = data.find(b"\x77")  # TC_BLOCKDATA of the writeUTF
    if i < 0:
        return None
    (n,) = struct.unpack(">H", data[i + 2:i + 4])
    address = data[i + 4:i + 4 + n].decode("utf-8", "replace")
    # serialized fields in name order: leastSigBits, then mostSigBits
    session = str(uuid.UUID(bytes=data[-8:] + data[-16:-8])) if len(data) >= i + 4 + n + 16 else ""
    return address, session


# -- the cluster ---------------------------------------------------------------------------------


class _Proc:
    def __init__(self, name: str, popen: subprocess.Popen, out):
        self.name, self.popen, self.out = name, popen, out
        self.pid = popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None and _alive(self.pid)


class HaCluster:
    """ZooKeeper + ``job_managers`` JobManagers + ``task_managers`` TaskManagers (a context
    manager: ``with HaCluster(work) as c: ...`` starts it and stops everything)."""

    def __init__(self, work: Path, *, job_managers: int = 2, task_managers: int = 2, slots: int = 2,
                 flink_home: Path | None = None, timeout: float = 120.0):
        self.work = Path(work).resolve()
        self.n_jm, self.n_tm, self.slots = job_managers, task_managers, slots
        self.flink_home = Path(flink_home) if flink_home else find_flink_home()
        self.timeout = timeout
        self.cluster_id = f"flinkspec-{uuid.uuid4().hex[:12]}"
        self.conf = self.work / "conf"
        self.log_dir = self.work / "logs"
        self.tmp = self.work / "tmp"
        self.zk_port = 0
        self.rest_ports: list[int] = []
        self.zk: _Proc | None = None
        self.jms: list[_Proc | None] = []
        self.tms: list[_Proc] = []
        self.killed: list[int] = []
        self._all: list[_Proc] = []
        self._clients = 0
        self._stopped = False
        self.events: list[tuple[float, str]] = []

    def event(self, msg: str) -> None:
        """Record what the harness did in ``logs/harness.log`` (the trace pattern)."""
        now = time.time()
        self.events.append((now, msg))
        stamp = time.strftime("%H:%M:%S", time.localtime(now)) + f",{int(now * 1000) % 1000:03d}"
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            with open(self.log_dir / "harness.log", "a", encoding="utf-8") as f:
                f.write(f"{stamp} INFO  flinkspec.ha.HaCluster [harness] - flinkspec: {msg}\n")
        except OSError:
            pass

    # -- context manager
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- configuration
    def _write_conf(self) -> None:
        for d in (self.conf, self.log_dir, self.tmp, self.work / "ha", self.work / "checkpoints",
                  self.work / "pids", self.work / "zk", self.log_dir / "flink"):
            d.mkdir(parents=True, exist_ok=True)
        for name in ("log4j.properties", "log4j-console.properties", "log4j-cli.properties",
                     "log4j-session.properties"):
            shutil.copyfile(TRACE_LOG4J, self.conf / name)
        site = self.flink_home.parent
        cfg = {
            "env.java.opts.all": _JAVA_OPENS + f" -Djava.io.tmpdir={self.tmp}",
            "env.log.dir": str(self.log_dir / "flink"),
            "env.pid.dir": str(self.work / "pids"),
            "io.tmp.dirs": str(self.tmp),
            "high-availability.type": "zookeeper",
            "high-availability.zookeeper.quorum": f"127.0.0.1:{self.zk_port}",
            "high-availability.zookeeper.path.root": "/flink",
            "high-availability.cluster-id": self.cluster_id,
            "high-availability.storageDir": f"file://{self.work / 'ha'}",
            "high-availability.zookeeper.client.session-timeout": "4 s",
            "high-availability.zookeeper.client.connection-timeout": "3 s",
            "high-availability.jobmanager.port": "0",
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.memory.process.size": "1g",
            "jobmanager.execution.failover-strategy": "region",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.numberOfTaskSlots": str(self.slots),
            "taskmanager.memory.process.size": "1536m",
            "heartbeat.interval": "1 s",
            "heartbeat.timeout": "6 s",
            "slot.request.timeout": "60 s",
            "blob.server.port": "0",
            "metrics.internal.query-service.port": "0",
            "parallelism.default": "1",
            "execution.checkpointing.dir": f"file://{self.work / 'checkpoints'}",
            "python.executable": str(FLINK_PYTHON),
            "python.client.executable": str(FLINK_PYTHON),
            "python.execution-mode": "thread",
            "web.submit.enable": "false",
            # REST caches a job's execution graph and checkpoint stats this long (default 3 s)
            "web.refresh-interval": "500 ms",
        }
        (self.conf / "config.yaml").write_text("".join(f"{k}: {v}\n" for k, v in cfg.items()))
        (self.conf / "masters").write_text("")
        (self.conf / "workers").write_text("")

    def _env(self, name: str, extra_jvm: str = "") -> dict:
        env = dict(os.environ)
        for k in ("FLINK_ENV_JAVA_OPTS", "FLINK_ENV_JAVA_OPTS_JM", "FLINK_ENV_JAVA_OPTS_TM",
                  "FLINK_ENV_JAVA_OPTS_CLI", "FLINK_LIB_DIR", "FLINK_OPT_DIR", "FLINK_PLUGINS_DIR",
                  "PYTHONHOME", "VIRTUAL_ENV", "_FLINK_HOME_DETERMINED"):
            env.pop(k, None)
        log4j = self.conf / "log4j-console.properties"
        env.update({
            "FLINK_HOME": str(self.flink_home),
            "FLINK_CONF_DIR": str(self.conf),
            "FLINK_LOG_DIR": str(self.log_dir / "flink"),
            "FLINK_PID_DIR": str(self.work / "pids"),
            "FLINK_IDENT_STRING": "flinkspec",
            "TMPDIR": str(self.tmp),
            "JVM_ARGS": (f"-Dlog4j.configurationFile=file:{log4j} -Dlog4j2.configurationFile=file:{log4j} "
                         f"-Dflinkspec.log.file={self.log_dir / (name + '.log')} "
                         # no /tmp/hsperfdata_<user>/<pid> (a SIGKILLed JVM would leave its file)
                         f"-Djava.io.tmpdir={self.tmp} -XX:-UsePerfData {extra_jvm}").strip(),
            "PYFLINK_CLIENT_EXECUTABLE": str(FLINK_PYTHON),
            # thread mode: the embedded interpreter finds PyFlink and the pickled functions'
            # module (tools/flink_conform_driver.py) only through PYTHONPATH
            "PYTHONPATH": f"{self.flink_home.parent}:{TOOLS}",
        })
        return env

    def _spawn(self, name: str, cmd: list[str], env: dict) -> _Proc:
        out = open(self.log_dir / f"{name}.out", "ab")
        popen = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env, cwd=self.work, start_new_session=True)
        p = _Proc(name, popen, out)
        self._all.append(p)
        self.event(f"{name} started (pid {p.pid})")
        return p

    # -- start
    def start(self) -> None:
        """ZooKeeper, then the JobManagers, then the TaskManagers; returns once a leader's REST
        endpoint answers and every TaskManager registered (REST ``/taskmanagers``)."""
        check_environment(self.flink_home)
        self._stopped = False
        self.work.mkdir(parents=True, exist_ok=True)
        self.zk_port = _free_port()
        self.rest_ports = [_free_port() for _ in range(self.n_jm)]
        self._write_conf()
        deadline = time.monotonic() + self.timeout
        self._start_zookeeper(deadline)
        bin_dir = self.flink_home / "bin"
        for i in range(self.n_jm):
            self.jms.append(self._spawn(f"jobmanager-{i}",
                                        ["bash", str(bin_dir / "jobmanager.sh"), "start-foreground",
                                         "-D", f"rest.port={self.rest_ports[i]}"],
                                        self._env(f"jobmanager-{i}")))
        for i in range(self.n_tm):
            self.tms.append(self._spawn(f"taskmanager-{i}",
                                        ["bash", str(bin_dir / "taskmanager.sh"), "start-foreground"],
                                        self._env(f"taskmanager-{i}")))
        while True:
            self._check_started()
            try:
                lead = self.leader()
                tms = self._rest_get(self.rest_ports[lead], "/taskmanagers", timeout=2)
                if len(tms.get("taskmanagers", [])) >= self.n_tm:
                    self.event(f"cluster up: JobManager {lead} leads (session {self._session()}), "
                               f"{self.n_tm} TaskManagers registered")
                    return
            except (ClusterError, OSError, ValueError, KeyError, ZkError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"the cluster did not start within {self.timeout:.0f} s (logs in {self.log_dir})")
            time.sleep(0.3)

    def _check_started(self) -> None:
        for p in [self.zk, *self.jms, *self.tms]:
            if p is not None and p.popen.poll() is not None:
                raise ClusterError(f"{p.name} exited at start (code {p.popen.returncode}); see "
                                   f"{self.log_dir / (p.name + '.out')} and {p.name}.log")

    def _start_zookeeper(self, deadline: float) -> None:
        data = self.work / "zk"
        cfg = data / "zoo.cfg"
        cfg.write_text(f"tickTime=200\ndataDir={data}\nclientPort={self.zk_port}\nclientPortAddress=127.0.0.1\n"
                       "admin.enableServer=false\nminSessionTimeout=400\nmaxSessionTimeout=20000\n"
                       "4lw.commands.whitelist=*\n")
        java = shutil.which("java")
        self.zk = self._spawn("zookeeper", [java, "-Xmx128m", "-XX:-UsePerfData", f"-Djava.io.tmpdir={self.tmp}",
                                            f"-Dzookeeper.root.logger=INFO,CONSOLE",
                                            "-cp", f"/etc/zookeeper/conf:{ZK_JAR}",
                                            "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)],
                              self._env("zookeeper"))
        while True:
            try:
                with ZkClient("127.0.0.1", self.zk_port, timeout=1) as zk:
                    zk.children("/")
                return
            except (OSError, ZkError):
                if self.zk.popen.poll() is not None:
                    raise ClusterError(f"the ZooKeeper server exited at start (see {self.log_dir / 'zookeeper.out'})")
                if time.monotonic() > deadline:
                    raise ClusterError("the ZooKeeper server did not start in time")
                time.sleep(0.2)

    # -- REST
    def _rest(self, port: int, path: str, method: str = "GET", timeout: float = 5.0) -> dict:
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
        return json.loads(body) if body else {}

    def _rest_get(self, port: int, path: str, timeout: float = 5.0) -> dict:
        return self._rest(port, path, timeout=timeout)

    def _rest_any(self, path: str, method: str = "GET", timeout: float = 5.0) -> dict:
        """``path`` from the leader's REST endpoint, else from any other living JobManager."""
        order = []
        try:
            order.append(self.leader())
        except (ClusterError, OSError, ZkError):
            pass
        order += [i for i in range(self.n_jm) if i not in order]
        last = None
        for i in order:
            p = self.jms[i]
            if p is None or not p.alive():
                continue
            try:
                return self._rest(self.rest_ports[i], path, method, timeout)
            except (OSError, ValueError) as e:  # URLError/HTTPError are OSErrors
                last = e
        raise ClusterError(f"no JobManager answered {path}: {last}")

    # -- leadership
    def leader_info(self) -> dict:
        """The leader nodes under ``/flink/<cluster-id>/leader`` (component -> (address,
        session id))."""
        root = f"/flink/{self.cluster_id}/leader"
        out = {}
        with ZkClient("127.0.0.1", self.zk_port) as zk:
            try:
                comps = zk.children(root)
            except KeyError:
                return out
            for c in comps:
                try:
                    info = leader_information(zk.get(f"{root}/{c}/connection_info"))
                except KeyError:
                    continue
                if info:
                    out[c] = info
        return out

    def _session(self) -> str:
        try:
            return self.leader_info().get("rest_server", ("", "?"))[1]
        except (OSError, ZkError):
            return "?"

    def leader(self) -> int:
        """Index of the JobManager whose REST endpoint ZooKeeper names as leader
        (``/flink/<cluster-id>/leader/rest_server/connection_info``)."""
        info = self.leader_info().get("rest_server")
        if not info:
            raise ClusterError("no REST leader in ZooKeeper")
        m = re.search(r":(\d+)/?$", info[0])
        port = int(m.group(1)) if m else -1
        if port not in self.rest_ports:
            raise ClusterError(f"the REST leader {info[0]} is none of this cluster's JobManagers")
        return self.rest_ports.index(port)

    def kill_leader(self) -> int:
        """SIGKILL the leading JobManager's JVM (its process group holds that JVM only)."""
        i = self.leader()
        p = self.jms[i]
        self.event(f"JobManager {i} killed (SIGKILL, pid {p.pid})")
        os.killpg(p.pid, signal.SIGKILL)
        p.popen.wait(timeout=30)
        self.killed.append(i)
        return i

    def wait_new_leader(self, old: int, timeout: float = 60.0) -> int:
        deadline = time.monotonic() + timeout
        while True:
            try:
                i = self.leader()
                if i != old and self.jms[i] is not None and self.jms[i].alive():
                    self._rest_get(self.rest_ports[i], "/overview", timeout=2)
                    self.event(f"JobManager {i} leads (session {self._session()}; was JobManager {old})")
                    return i
            except (ClusterError, OSError, ValueError, ZkError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"no new leader within {timeout:.0f} s of the old one (JobManager {old})")
            time.sleep(0.2)

    # -- jobs
    def submit(self, request: dict, phase: int = 0, timeout: float = 120.0) -> str:
        """Submit one phase of a conform request (``bin/flink run -d -py tools/flink_trace_job.py``);
        returns the Flink JobID (hex)."""
        self._clients += 1
        name = f"client-{self._clients}"
        folder = self.work / "jobs" / f"job-{request.get('id', 0)}-{self._clients}"
        folder.mkdir(parents=True, exist_ok=True)
        req = folder / "request.json"
        req.write_text(json.dumps(request))
        cmd = ["bash", str(self.flink_home / "bin" / "flink"), "run", "-d",
               "-py", str(TRACE_JOB), "-pyexec", str(FLINK_PYTHON), "-pyclientexec", str(FLINK_PYTHON),
               str(req), "--phase", str(phase), "--folder", str(folder)]
        p = self._spawn(name, cmd, self._env(name))
        try:
            p.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"the submission did not finish within {timeout:.0f} s "
                               f"(see {self.log_dir / (name + '.out')})") from None
        finally:
            self._kill_group(p)
        text = (self.log_dir / f"{name}.out").read_text(errors="replace")
        m = re.search(r'"job_id": "([0-9a-f]{32})"', text) or re.search(r"JobID ([0-9a-f]{32})", text)
        if p.popen.returncode != 0 or not m:
            tail = " | ".join(text.strip().splitlines()[-3:])
            raise ClusterError(f"the submission failed (code {p.popen.returncode}): {tail[-400:]}")
        self.event(f"job {m.group(1)} submitted (request {request.get('id')}, phase {phase})")
        return m.group(1)

    def job(self, job_id: str) -> dict:
        return self._rest_any(f"/jobs/{job_id}", timeout=3)

    def checkpoints(self, job_id: str) -> dict:
        return self._rest_any(f"/jobs/{job_id}/checkpoints", timeout=3)

    def wait_job(self, job_id: str, states=("RUNNING",), timeout: float = 60.0) -> str:
        """Wait until the job is in one of ``states`` (via the REST of the current leader, else
        any living JobManager; errors while JobManagers die or take over are retried)."""
        deadline = time.monotonic() + timeout
        state = None
        while True:
            try:
                state = self.job(job_id).get("state")
                if state in states:
                    return state
                if state in TERMINAL:
                    raise ClusterError(f"job {job_id} ended {state} while waiting for {states}")
            except (ClusterError, OSError, ValueError) as e:
                if isinstance(e, ClusterError) and "ended" in str(e):
                    raise
            if time.monotonic() > deadline:
                raise ClusterError(f"job {job_id} not in {states} within {timeout:.0f} s (last {state})")
            time.sleep(0.2)

    def wait_checkpoint(self, job_id: str, after_id: int = 0, count: int = 1, timeout: float = 60.0) -> int:
        """Wait until a checkpoint with an id greater than ``after_id`` completed and the job
        completed at least ``count`` checkpoints (REST ``/jobs/<id>/checkpoints``); returns the
        latest completed id."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                cp = self.checkpoints(job_id)
                latest = (cp.get("latest") or {}).get("completed") or {}
                if latest.get("id", -1) > after_id and cp.get("counts", {}).get("completed", 0) >= count:
                    return latest["id"]
            except (ClusterError, OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ClusterError(f"job {job_id}: no completed checkpoint after {after_id} within {timeout:.0f} s")
            time.sleep(0.1)

    def cancel(self, job_id: str) -> None:
        self.event(f"job {job_id} cancelled")
        self._rest_any(f"/jobs/{job_id}?mode=cancel", method="PATCH")

    # -- logs
    def logs(self) -> dict[str, Path]:
        """Process name -> its log file (trace log4j pattern); ZooKeeper's own output is its .out."""
        out = {}
        for p in self._all:
            log = self.log_dir / f"{p.name}.log"
            out[p.name] = log if log.exists() else self.log_dir / f"{p.name}.out"
        if (self.log_dir / "harness.log").exists():
            out["harness"] = self.log_dir / "harness.log"
        return out

    def grep(self, name: str, pattern: str) -> list[tuple[str, str]]:
        """(time of day, first group) of each line of ``<name>.log`` matching ``pattern``."""
        try:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            m = re.search(pattern, line)
            if m and re.match(r"\d\d:\d\d:\d\d,\d{3} ", line):
                out.append((line[:12], m.group(1)))
        return out

    def completed_in_log(self, name: str) -> list[int]:
        """Checkpoint ids a JobManager's log says completed."""
        try:
            text = (self.log_dir / f"{name}.log").read_text(errors="replace")
        except OSError:
            return []
        return [int(x) for x in re.findall(r"\] - Completed checkpoint (\d+) for job", text)]

    # -- stop
    def pids(self) -> list[int]:
        return [p.pid for p in self._all]

    def _kill_group(self, p: _Proc, sig=signal.SIGKILL) -> None:
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        if sig == signal.SIGKILL:
            try:
                p.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def stop(self) -> None:
        """Stop every process (TaskManagers, JobManagers, then ZooKeeper: SIGTERM to each
        process group, SIGKILL after a grace period), reap them and assert none is left (by pid
        and by ``pgrep -f <work>``). Idempotent."""
        if self._stopped:
            return
        if self._all:
            self.event("stopping every process")
        groups = [self.tms, [p for p in self.jms if p is not None], [self.zk] if self.zk else []]
        clients = [p for p in self._all if p.name.startswith("client-")]
        for p in clients:
            self._kill_group(p)
        for group in groups:
            for p in group:
                if p.popen.poll() is None:
                    try:
                        os.killpg(p.pid, signal.SIGTERM)
                    except (ProcessLookupError, PermissionError):
                        pass
            end = time.monotonic() + 15
            for p in group:
                try:
                    p.popen.wait(timeout=max(0.1, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                self._kill_group(p)  # the group: anything the process started goes too
        for p in self._all:
            self._kill_group(p)
            try:
                p.out.close()
            except OSError:
                pass
        left = [p.pid for p in self._all if _alive(p.pid)]
        stray = self._pgrep()
        for pid in stray:  # anything else with the work folder on its command line
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._stopped = True
        if self._all:
            self.event(f"stopped; left: pids {left}, pgrep {stray}")
        if left or stray:
            raise ClusterError(f"processes left after stop: pids {left}, pgrep {stray}")

    def _pgrep(self) -> list[int]:
        try:
            r = subprocess.run(["pgrep", "-f", str(self.work)], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return []
        mine = _ancestors()  # e.g. this harness started with --work <work> on its command line
        return [int(x) for x in r.stdout.split() if int(x) not in mine and _alive(int(x))]


def _since(wall: float, stamp: str) -> float:
    """Seconds from the wall time ``wall`` to the log time of day ``stamp`` (HH:MM:SS,mmm,
    local time, within a day of it)."""
    lt = time.localtime(wall)
    h, m, rest = stamp.split(":")
    sec, ms = rest.split(",")
    day = int(h) * 3600 + int(m) * 60 + int(sec) + int(ms) / 1000
    d = day - (lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec + wall % 1)
    return d - 86400 if d > 43200 else d + 86400 if d < -43200 else d


# -- the scenario --------------------------------------------------------------------------------


def run_scenario(work: Path, request: dict, *, phase: int = 0, job_timeout: float = 120.0,
                 cluster: HaCluster | None = None) -> dict:
    """Start a cluster, submit one phase, wait RUNNING and >= 2 completed checkpoints, SIGKILL the
    leading JobManager, wait for a new leader, the job RUNNING again and a checkpoint completed
    under it, wait for the job to finish (cancel it after ``job_timeout``), stop. Returns the
    summary (times in seconds)."""
    c = cluster or HaCluster(work)
    t0 = time.monotonic()
    out: dict = {"work": str(c.work), "cluster_id": c.cluster_id}
    ok = False
    try:
        c.start()
        out["start_s"] = round(time.monotonic() - t0, 2)
        first = c.leader()
        out["leaders"] = [first]
        out["leader_sessions"] = [c.leader_info().get("rest_server", ("", ""))[1]]
        t = time.monotonic()
        job_id = c.submit(request, phase)
        out["job_id"] = job_id
        out["submit_s"] = round(time.monotonic() - t, 2)
        c.wait_job(job_id, ("RUNNING",), timeout=60)
        c.wait_checkpoint(job_id, count=2, timeout=60)
        t_kill = time.monotonic()
        killed = c.kill_leader()
        out["killed"] = killed
        before = c.completed_in_log(f"jobmanager-{killed}")
        out["last_checkpoint_before_kill"] = max(before) if before else None
        new = c.wait_new_leader(killed, timeout=90)
        out["leaders"].append(new)
        out["leader_sessions"].append(c.leader_info().get("rest_server", ("", ""))[1])
        out["new_leader_s"] = round(time.monotonic() - t_kill, 2)
        c.wait_job(job_id, ("RUNNING",), timeout=90)
        out["running_again_s"] = round(time.monotonic() - t_kill, 2)
        seen = c.wait_checkpoint(job_id, after_id=out["last_checkpoint_before_kill"] or 0, timeout=90)
        out["checkpoint_seen_after_takeover"] = seen  # REST's latest, when the harness looked
        out["checkpoint_after_takeover_s"] = round(time.monotonic() - t_kill, 2)
        try:
            out["final_state"] = c.wait_job(job_id, TERMINAL, timeout=job_timeout)
        except ClusterError:
            c.cancel(job_id)
            out["final_state"] = c.wait_job(job_id, TERMINAL, timeout=30) + " (cancelled after the timeout)"
        # what the new leader's log says (the harness's REST view lags by up to a poll and
        # Flink's REST cache)
        new_log = f"jobmanager-{new}"
        kill_at = next(t for t, msg in reversed(c.events) if msg.startswith(f"JobManager {killed} killed"))
        restored = c.grep(new_log, rf"\] - Restoring job {job_id} from Checkpoint (\d+) ")
        out["restored_checkpoint"] = int(restored[0][1]) if restored else None
        after = c.grep(new_log, rf"\] - Completed checkpoint (\d+) for job {job_id}")
        out["first_checkpoint_after_takeover"] = int(after[0][1]) if after else None
        out["completed_after_takeover"] = [int(x) for _, x in after]
        granted = c.grep(new_log, r"DispatcherRestEndpoint \[.*\] - (http://\S+) was granted leadership")
        running = c.grep(new_log, rf"ExecutionGraph \[.*\] - Job .* \({job_id}\) switched from state CREATED to (RUNNING)")
        out["takeover_from_logs_s"] = {
            what: round(_since(kill_at, hits[0][0]), 3) if hits else None
            for what, hits in (("leadership", granted), ("job_running", running), ("first_checkpoint", after))}
        ok = True
    finally:
        try:
            c.stop()
        except ClusterError:
            if ok:  # else the scenario's own error is the one to report
                raise
        finally:
            out["logs"] = {k: str(v) for k, v in c.logs().items()}
            out["pids"] = c.pids()
            out["total_s"] = round(time.monotonic() - t0, 2)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", required=True, type=Path, help="the work folder (created)")
    ap.add_argument("--request", required=True, type=Path, help="a conform request (JSON file)")
    ap.add_argument("--phase", type=int, default=0)
    ap.add_argument("--delay-ms", type=int, default=None, help="set the request's delay_ms")
    ap.add_argument("--job-timeout", type=float, default=120.0)
    args = ap.parse_args(argv)

    def _terminated(signum, _frame):  # SIGTERM/SIGHUP: unwind, so the cluster is stopped
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGHUP, _terminated)
    try:
        check_environment()
        request = json.loads(args.request.read_text())
        if args.delay_ms is not None:
            request["delay_ms"] = args.delay_ms
        summary = run_scenario(args.work, request, phase=args.phase, job_timeout=args.job_timeout)
    except (ClusterError, OSError, ValueError) as e:
        print(f"flink_ha_cluster: {type(e).__name__}: {e}".splitlines()[0], file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("flink_ha_cluster: interrupted", file=sys.stderr)
        return 130
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
