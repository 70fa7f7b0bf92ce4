"""High-availability services: a ZooKeeper-like store and leader election over it.

Invariant upheld: at most one contender holds the leader latch at a time -- the owner of the
lowest-numbered ephemeral sequential node under the latch path -- and a write guarded by a
node's version succeeds only if nobody wrote that node since the writer read it.

:class:`ZooKeeperStore` keeps ZooKeeper's data model with the semantics the control plane
relies on (checked against a real ZooKeeper server by ``tests/test_zookeeper_differential.py``):

* a tree of nodes, each with data, a ``version`` (``Stat.version``: +1 per ``set_data``),
  a ``cversion`` (``Stat.cversion``: +1 per child created or deleted) and ``seq``, the
  number of children ever created under it;
* sessions; an *ephemeral* node belongs to the session that created it and is deleted when
  that session expires or closes (``expire_session``); ephemeral nodes have no children;
* a session's *connection* as Curator reports it (``ConnectionState``): CONNECTED, SUSPENDED
  (``suspend``: the client lost its connection, the session may still live on the server and
  keeps its ephemeral nodes), RECONNECTED (``reconnect``: the same session is connected again,
  nothing in the tree changed) and LOST (the session expired: ``expire_session``);
* *sequential* nodes get the suffix ``%010d`` of the number of children created under the
  parent before (``seq``): a real server's suffixes count creations only, not deletions --
  the differential test found it (ZooKeeper's docs speak of the parent's cversion);
* ``set_data(path, data, version)`` fails with :class:`BadVersion` if ``version`` is not -1
  and differs from the node's version (the compare-and-set every HA write uses);
* ``create`` fails with :class:`NodeExists` / :class:`NoNode`, ``delete`` with
  :class:`NotEmpty` / :class:`BadVersion` / :class:`NoNode`, as ZooKeeper does.

Leader election follows Curator's ``LeaderLatch`` as Flink's ``ZooKeeperLeaderElectionDriver``
uses it: every contender creates an ephemeral sequential node under :data:`LATCH`; the contender
whose node sorts first is the leader (:func:`latch_leader`). The leader session id (the
fencing token, Flink's ``ResourceManagerId`` / ``JobMasterId``) is the latch node's sequence
number + 1 here -- unique per leadership, compared only for equality, as Flink compares its
random UUIDs.

HA paths (:data:`JOB_GRAPH`, :data:`CHECKPOINTS`, :data:`CHECKPOINT_COUNTER`,
:data:`JOB_RESULT`, :data:`LEADER_INFO`) follow Flink's ZooKeeper layout in spirit:
``DefaultJobGraphStore``, ``DefaultCompletedCheckpointStore`` over a
``ZooKeeperStateHandleStore`` (the node holds pointers: checkpoint ids), the
``ZooKeeperCheckpointIDCounter`` (a ``SharedCount`` updated by versioned compare-and-set) and
the leader information node the ``LeaderRetrievalService`` watches.

Leaves out: watches (a contender or retriever *polls* through an action of its own, which
delivers the same information late, as a watch notification is), ACLs, the ConnectionLoss of
a suspended client's reads (its writes fail, ``ControlPlane.ha_write``), multi-op transactions, and the ``JobResultStore``
living on a file system in Flink (here it is a node of the same store).
"""

from __future__ import annotations

import sys

import attrs

from model import seams

ROOT = "/"
LATCH = "/leader/latch"
LEADER_INFO = "/leader/info"
JOB_GRAPH = "/jobgraphs/job"
CHECKPOINTS = "/checkpoints/job"
CHECKPOINT_COUNTER = "/checkpoint-counter/job"
JOB_RESULT = "/job-results/job"


class StoreError(Exception):
    """A ZooKeeper error code (KeeperException)."""

    code = "ERROR"


class NoNode(StoreError):
    code = "NONODE"


class NodeExists(StoreError):
    code = "NODEEXISTS"


class BadVersion(StoreError):
    code = "BADVERSION"


class NotEmpty(StoreError):
    code = "NOTEMPTY"


class NoChildrenForEphemerals(StoreError):
    code = "NOCHILDRENFOREPHEMERALS"


class SessionExpired(StoreError):
    code = "SESSIONEXPIRED"


@attrs.define(slots=True)
class ZNode:
    """One node: its data, ``version``, ``cversion``, ``seq`` and owning session (0: persistent)."""

    data: object = None
    version: int = 0
    cversion: int = 0
    seq: int = 0
    owner: int = 0


def _parent(path: str) -> str:
    i = path.rstrip("/").rfind("/")
    return "/" if i <= 0 else path[:i]


class ZooKeeperStore:
    """The store (see the module docstring). Paths are absolute, without a trailing slash."""

    __slots__ = ("nodes", "kids", "sessions", "next_session", "suspended")

    def __init__(self):
        self.nodes: dict[str, ZNode] = {ROOT: ZNode()}
        #: path -> the names of its children (an index over ``nodes``)
        self.kids: dict[str, set] = {ROOT: set()}
        #: live session ids
        self.sessions: set[int] = set()
        self.next_session = 1
        #: live sessions whose client connection is SUSPENDED (Curator's ConnectionState)
        self.suspended: set[int] = set()

    # -- sessions --------------------------------------------------------------------------
    def open_session(self) -> int:
        sid = self.next_session
        self.next_session += 1
        self.sessions.add(sid)
        return sid

    def expire_session(self, sid: int) -> list[str]:
        """The session ends (expiry or close): its ephemeral nodes are deleted. Returns them."""
        self.sessions.discard(sid)
        self.suspended.discard(sid)
        gone = sorted(p for p, n in self.nodes.items() if n.owner == sid)
        for p in gone:
            self._remove(p)
        return gone

    def suspend(self, sid: int) -> None:
        """The client of live session ``sid`` loses its connection (Curator: SUSPENDED). The
        server keeps the session and its ephemeral nodes until the session times out."""
        if sid in self.sessions:
            self.suspended.add(sid)

    def reconnect(self, sid: int) -> None:
        """The client of suspended session ``sid`` is connected again before the session expired
        (Curator: RECONNECTED): every node, persistent or ephemeral, is as it was."""
        self.suspended.discard(sid)

    # -- reads -----------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return path in self.nodes

    def get(self, path: str) -> tuple:
        """``(data, version)``; NoNode if absent."""
        n = self.nodes.get(path)
        if n is None:
            raise NoNode(path)
        return n.data, n.version

    def children(self, path: str) -> list[str]:
        if path not in self.nodes:
            raise NoNode(path)
        return sorted(self.kids[path])

    # -- writes ----------------------------------------------------------------------------
    def create(self, path: str, data=None, *, ephemeral: bool = False, sequential: bool = False,
               session: int = 0, make_parents: bool = False) -> str:
        """Create ``path`` (with the parent's cversion appended if ``sequential``); returns the
        path created."""
        if ephemeral and session not in self.sessions:
            raise SessionExpired(str(session))
        parent = _parent(path)
        if parent not in self.nodes:
            if not make_parents:
                raise NoNode(parent)
            self.create(parent, make_parents=True)
        pnode = self.nodes[parent]
        if pnode.owner:
            raise NoChildrenForEphemerals(parent)
        if sequential:
            path = f"{path}{pnode.seq:010d}"
        if path in self.nodes:
            raise NodeExists(path)
        self.nodes[path] = ZNode(data=data, owner=session if ephemeral else 0)
        self.kids[path] = set()
        self.kids[parent].add(path[len(parent.rstrip("/")) + 1:])
        pnode.cversion += 1
        pnode.seq += 1
        return path

    def set_data(self, path: str, data, version: int = -1) -> int:
        """Write ``data`` if ``version`` is -1 or the node's version; returns the new version."""
        n = self.nodes.get(path)
        if n is None:
            raise NoNode(path)
        if version != -1 and version != n.version:
            raise BadVersion(path)
        n.data = data
        n.version += 1
        return n.version

    def delete(self, path: str, version: int = -1) -> None:
        n = self.nodes.get(path)
        if n is None:
            raise NoNode(path)
        if version != -1 and version != n.version:
            raise BadVersion(path)
        if self.kids[path]:
            raise NotEmpty(path)
        self._remove(path)

    def _remove(self, path: str) -> None:
        del self.nodes[path]
        del self.kids[path]
        pp = _parent(path)
        parent = self.nodes.get(pp)
        if parent is not None:
            parent.cversion += 1
            self.kids[pp].discard(path[len(pp.rstrip("/")) + 1:])


def latch_leader(store: ZooKeeperStore) -> str | None:
    """The latch node of the current leader: the child of :data:`LATCH` with the lowest
    sequence number (Curator's LeaderLatch sorts by the sequence suffix), or None."""
    kids = store.kids.get(LATCH)
    return f"{LATCH}/{min(kids, key=lambda k: k[-10:])}" if kids else None


def token_of(latch_path: str) -> int:
    """The leader session id (fencing token) of a latch node: its sequence number + 1."""
    return int(latch_path[-10:]) + 1


def checkpoint_id_counter_in_store() -> bool:
    """Whether the checkpoint ID counter lives in the HA store (``ZooKeeperCheckpointIDCounter``:
    a new leader continues the count): yes."""
    return True


@seams.override("checkpoint-counter-in-memory", sys.modules[__name__], "checkpoint_id_counter_in_store",
                "the checkpoint ID counter is kept in the JobManager's memory (StandaloneCheckpointIDCounter): a new "
                "leader hands out ids again")
def _checkpoint_id_counter_in_memory() -> bool:
    return False
