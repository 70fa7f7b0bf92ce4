"""The model's ZooKeeper store (model/highavailability.py) against a real ZooKeeper server.

A standalone server from Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``)
is started on loopback by the fixture and stopped at the end; ``kazoo`` drives it. On seeded
random operation sequences -- create (persistent, ephemeral, sequential), versioned
set_data and delete, session expiry (the session is closed: its ephemeral nodes go) -- every
operation must give the same outcome (the path created, the new version, or the same
error) in both, and after every operation both trees must hold the same nodes with the same
data, versions and child versions (cversion). This is what the control plane relies on: session expiry removes
ephemeral nodes, sequential order decides the leader, a write with a stale version fails.

Marked slow (a JVM starts); needs ``apt-get install zookeeper`` (``make test-slow`` installs it when
run as root: ``tools/ensure-zookeeper.sh``) and the test extras (kazoo):
it fails, never skips, without them.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from model import highavailability as ha

pytestmark = pytest.mark.slow

ZK_JAR = Path("/usr/share/java/zookeeper.jar")
ROOT = "/t"
PATHS = ("/t/a", "/t/b", "/t/a/x", "/t/latch")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def zk_server(tmp_path_factory):
    java = shutil.which("java")
    assert java and ZK_JAR.exists(), "needs Java and Debian's zookeeper package (apt-get install zookeeper)"
    data = tmp_path_factory.mktemp("zk-data")
    port = _free_port()
    conf = data / "zoo.cfg"
    conf.write_text(f"tickTime=200\ndataDir={data}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                    "admin.enableServer=false\nminSessionTimeout=400\nmaxSessionTimeout=4000\n")
    proc = subprocess.Popen([java, "-Xmx128m", "-cp", f"/etc/zookeeper/conf:{ZK_JAR}",
                             "org.apache.zookeeper.server.ZooKeeperServerMain", str(conf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=data)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, "the ZooKeeper server exited at start"
                assert time.monotonic() < deadline, "the ZooKeeper server did not start within 30 s"
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _client(hosts):
    from kazoo.client import KazooClient  # here: kazoo is a test extra, only this slow test needs it
    c = KazooClient(hosts=hosts, timeout=5)
    c.start(timeout=10)
    return c


def _code(exc) -> str:
    from kazoo import exceptions as ke  # as above
    table = {ke.NoNodeError: "NONODE", ke.NodeExistsError: "NODEEXISTS", ke.BadVersionError: "BADVERSION",
             ke.NotEmptyError: "NOTEMPTY", ke.NoChildrenForEphemeralsError: "NOCHILDRENFOREPHEMERALS"}
    for cls, code in table.items():
        if isinstance(exc, cls):
            return code
    raise exc


def _real_tree(c) -> dict:
    out = {}

    def walk(p):
        data, stat = c.get(p)
        out[p] = (data.decode() if data else None, stat.version, stat.cversion, bool(stat.ephemeralOwner))
        for k in sorted(c.get_children(p)):
            walk(f"{p}/{k}")
    walk(ROOT)
    return out


def _model_tree(s: ha.ZooKeeperStore) -> dict:
    return {p: (n.data, n.version, n.cversion, bool(n.owner)) for p, n in s.nodes.items() if p == ROOT or p.startswith(ROOT + "/")}


def _ops(rng: random.Random, n: int):
    for _ in range(n):
        kind = rng.choice(["create", "create", "create", "set", "delete", "expire"])
        path = rng.choice(PATHS)
        if kind == "create":
            yield ("create", path + ("/n-" if rng.random() < 0.5 else ""), rng.choice("xyz"),
                   rng.random() < 0.5, path.endswith("latch") or rng.random() < 0.3, rng.randrange(2))
        elif kind == "set":
            yield ("set", path, rng.choice("pqr"), rng.choice([-1, 0, 1, 2]))
        elif kind == "delete":
            yield ("delete", path, rng.choice([-1, 0, 1]))
        else:
            yield ("expire", rng.randrange(2))


@pytest.mark.parametrize("seed", range(12))
def test_model_store_agrees_with_zookeeper(zk_server, seed):
    rng = random.Random(f"zk:{seed}")
    admin = _client(zk_server)
    try:
        if admin.exists(ROOT):
            admin.delete(ROOT, recursive=True)
        admin.create(ROOT)
        model = ha.ZooKeeperStore()
        model.create(ROOT)
        clients = [_client(zk_server), _client(zk_server)]
        sessions = [model.open_session(), model.open_session()]
        for op in _ops(rng, 30):
            if op[0] == "create":
                _, path, data, ephemeral, sequential, who = op
                try:
                    real = clients[who].create(path, data.encode(), ephemeral=ephemeral, sequence=sequential)
                except Exception as e:  # noqa: BLE001 - compared by code below
                    real = _code(e)
                try:
                    mine = model.create(path, data, ephemeral=ephemeral, sequential=sequential, session=sessions[who])
                except ha.StoreError as e:
                    mine = e.code
            elif op[0] == "set":
                _, path, data, version = op
                try:
                    real = clients[0].set(path, data.encode(), version=version).version
                except Exception as e:  # noqa: BLE001
                    real = _code(e)
                try:
                    mine = model.set_data(path, data, version)
                except ha.StoreError as e:
                    mine = e.code
            elif op[0] == "delete":
                _, path, version = op
                try:
                    clients[0].delete(path, version=version)
                    real = "ok"
                except Exception as e:  # noqa: BLE001
                    real = _code(e)
                try:
                    model.delete(path, version)
                    mine = "ok"
                except ha.StoreError as e:
                    mine = e.code
            else:
                who = op[1]
                clients[who].stop()
                clients[who].close()
                model.expire_session(sessions[who])
                clients[who] = _client(zk_server)
                sessions[who] = model.open_session()
                real = mine = "expired"
            assert mine == real, f"seed {seed}: {op}: the model gives {mine!r}, ZooKeeper {real!r}"
            admin.sync(ROOT)
            assert _model_tree(model) == _real_tree(admin), f"seed {seed}: trees differ after {op}"
            # the leader of the latch is the same node in both
            if model.exists("/t/latch"):
                kids = admin.get_children("/t/latch")
                real_leader = f"/t/latch/{min(kids, key=lambda k: k[-10:])}" if kids else None
                latch = min(model.children("/t/latch"), key=lambda k: k[-10:], default=None)
                assert real_leader == (None if latch is None else f"/t/latch/{latch}")
        for c in clients:
            c.stop()
            c.close()
    finally:
        admin.stop()
        admin.close()
