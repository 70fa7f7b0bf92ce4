"""The ZooKeeper-like store and the leader latch (model/highavailability.py), against
ZooKeeper's documented semantics (tests/test_zookeeper_differential.py compares them with a
real server)."""

from __future__ import annotations

import pytest

from model import highavailability as ha
from model import seams
from model.highavailability import (
    BadVersion,
    NoChildrenForEphemerals,
    NoNode,
    NodeExists,
    NotEmpty,
    SessionExpired,
    ZooKeeperStore,
)


def test_sequential_suffixes_count_the_parents_child_creations_and_sort_in_creation_order():
    s = ZooKeeperStore()
    s.create("/latch")
    a = s.create("/latch/n-", sequential=True)
    s.create("/latch/other")  # a plain child counts too
    b = s.create("/latch/n-", sequential=True)
    s.delete("/latch/other")  # a deletion does not (as a real server does it)
    c = s.create("/latch/n-", sequential=True)
    assert (a, b, c) == ("/latch/n-0000000000", "/latch/n-0000000002", "/latch/n-0000000003")
    assert s.nodes["/latch"].cversion == 5  # Stat.cversion counts creations and deletions
    assert s.children("/latch") == ["n-0000000000", "n-0000000002", "n-0000000003"]


def test_session_expiry_removes_exactly_the_sessions_ephemeral_nodes():
    s = ZooKeeperStore()
    s.create("/l")
    one, two = s.open_session(), s.open_session()
    e1 = s.create("/l/x-", ephemeral=True, sequential=True, session=one)
    e2 = s.create("/l/x-", ephemeral=True, sequential=True, session=two)
    s.create("/l/persistent")
    assert s.expire_session(one) == [e1]
    assert s.children("/l") == ["persistent", e2.rsplit("/", 1)[1]]
    with pytest.raises(SessionExpired):
        s.create("/l/y", ephemeral=True, session=one)


def test_versioned_writes_are_compare_and_set():
    s = ZooKeeperStore()
    s.create("/counter", 1)
    assert s.get("/counter") == (1, 0)
    assert s.set_data("/counter", 2, 0) == 1
    with pytest.raises(BadVersion):
        s.set_data("/counter", 3, 0)  # a stale version fails, the value stays
    assert s.get("/counter") == (2, 1)
    assert s.set_data("/counter", 5, -1) == 2  # -1: unconditional
    with pytest.raises(BadVersion):
        s.delete("/counter", 1)
    s.delete("/counter", 2)
    assert not s.exists("/counter")


@pytest.mark.parametrize("op, error", [
    (lambda s: s.create("/a"), NodeExists),
    (lambda s: s.create("/missing/child"), NoNode),
    (lambda s: s.delete("/a"), NotEmpty),
    (lambda s: s.set_data("/nope", 1), NoNode),
    (lambda s: s.create("/eph/child"), NoChildrenForEphemerals),
])
def test_errors_are_zookeepers(op, error):
    s = ZooKeeperStore()
    s.create("/a")
    s.create("/a/b")
    sid = s.open_session()
    s.create("/eph", ephemeral=True, session=sid)
    before = {p: (n.data, n.version, n.cversion) for p, n in s.nodes.items()}
    with pytest.raises(error):
        op(s)
    assert {p: (n.data, n.version, n.cversion) for p, n in s.nodes.items()} == before


def test_the_lowest_sequence_number_leads_and_its_token_is_unique():
    s = ZooKeeperStore()
    s.create(ha.LATCH, make_parents=True)
    assert ha.latch_leader(s) is None
    sessions = [s.open_session() for _ in range(3)]
    latches = [s.create(ha.LATCH + "/latch-", ephemeral=True, sequential=True, session=x) for x in sessions]
    assert ha.latch_leader(s) == latches[0]
    s.expire_session(sessions[0])
    assert ha.latch_leader(s) == latches[1]
    again = s.open_session()
    rejoined = s.create(ha.LATCH + "/latch-", ephemeral=True, sequential=True, session=again)
    assert ha.latch_leader(s) == latches[1]  # a rejoining contender queues behind
    tokens = {ha.token_of(p) for p in latches + [rejoined]}
    assert len(tokens) == 4 and min(tokens) >= 1


def test_error_codes_are_zookeepers_keeper_exception_codes():
    """The codes ``tests/test_zookeeper_differential.py`` compares with a real server's
    (``KeeperException.Code``)."""
    assert [e.code for e in (NoNode, NodeExists, BadVersion, NotEmpty, NoChildrenForEphemerals, SessionExpired)] == \
        ["NONODE", "NODEEXISTS", "BADVERSION", "NOTEMPTY", "NOCHILDRENFOREPHEMERALS", "SESSIONEXPIRED"]
    assert issubclass(NoNode, ha.StoreError)


def test_a_new_store_holds_only_the_root_and_sessions_count_from_one():
    s = ZooKeeperStore()
    assert s.nodes == {"/": ha.ZNode()} and s.kids == {"/": set()}
    assert ha.ZNode() == ha.ZNode(data=None, version=0, cversion=0, seq=0, owner=0)
    assert (s.sessions, s.suspended) == (set(), set())
    assert [s.open_session() for _ in range(3)] == [1, 2, 3]
    assert s.sessions == {1, 2, 3}


def test_created_nodes_hold_their_data_and_owner_and_the_parents_index():
    s = ZooKeeperStore()
    sid = s.open_session()
    assert s.create("/a", "x") == "/a"
    assert s.create("/a/b", 7, session=sid) == "/a/b"  # not ephemeral: persistent whatever the session
    assert s.create("/a/e", ephemeral=True, session=sid) == "/a/e"
    assert s.nodes["/a"] == ha.ZNode(data="x", cversion=2, seq=2)
    assert s.nodes["/a/b"].owner == 0 and s.nodes["/a/e"].owner == sid
    assert s.get("/a/b") == (7, 0)
    assert s.children("/") == ["a"] and s.children("/a") == ["b", "e"] and s.children("/a/b") == []
    assert s.create("/q-", sequential=True) == "/q-0000000001"  # the root's second child
    assert s.kids["/"] == {"a", "q-0000000001"}


def test_make_parents_creates_every_missing_ancestor():
    s = ZooKeeperStore()
    s.create("/x")
    assert s.create("/x/y/z/leaf", 1, make_parents=True) == "/x/y/z/leaf"
    assert [p for p in sorted(s.nodes)] == ["/", "/x", "/x/y", "/x/y/z", "/x/y/z/leaf"]
    assert s.children("/x/y") == ["z"] and s.children("/x/y/z") == ["leaf"]
    assert s.get("/x/y") == (None, 0) and s.nodes["/x"].cversion == 1


def test_reads_of_a_missing_node_fail_with_no_node():
    s = ZooKeeperStore()
    s.create("/a")
    assert s.exists("/a") and not s.exists("/b")
    for op in (s.get, s.children, s.delete):
        with pytest.raises(NoNode):
            op("/b")


def test_a_deletion_updates_the_parents_cversion_and_children():
    s = ZooKeeperStore()
    s.create("/a")
    s.create("/a/b", 1)
    s.create("/a/c")
    s.set_data("/a/b", 2)
    s.delete("/a/b", 1)  # the version it has
    assert s.children("/a") == ["c"] and "/a/b" not in s.kids
    assert (s.nodes["/a"].cversion, s.nodes["/a"].seq) == (3, 2)
    s.delete("/a/c")
    s.delete("/a")
    assert s.children("/") == [] and s.nodes["/"].cversion == 2


def test_expiry_removes_every_ephemeral_node_of_the_session_in_path_order():
    s = ZooKeeperStore()
    s.create("/l")
    s.create("/m")
    sid, other = s.open_session(), s.open_session()
    s.create("/m/e", ephemeral=True, session=sid)
    s.create("/l/e", ephemeral=True, session=sid)
    s.create("/l/f", ephemeral=True, session=other)
    assert s.expire_session(sid) == ["/l/e", "/m/e"]
    assert s.children("/l") == ["f"] and s.children("/m") == [] and s.sessions == {other}
    assert s.expire_session(sid) == []


def test_a_suspended_connection_keeps_the_session_and_its_nodes_until_it_reconnects_or_expires():
    """Curator's SUSPENDED: the server keeps the session (its ephemeral nodes stay);
    RECONNECTED: the same session again, nothing changed; LOST: the session expired."""
    s = ZooKeeperStore()
    s.create("/l")
    sid, other = s.open_session(), s.open_session()
    e = s.create("/l/n-", ephemeral=True, sequential=True, session=sid)
    s.suspend(sid)
    s.suspend(99)  # no such session: nothing to suspend
    assert s.suspended == {sid} and s.exists(e) and sid in s.sessions
    s.reconnect(sid)
    assert s.suspended == set() and s.exists(e)
    s.suspend(sid)
    s.suspend(other)
    assert s.expire_session(sid) == [e]
    assert s.suspended == {other}


def test_the_leader_is_the_lowest_sequence_suffix_whatever_the_node_names():
    """Curator's LeaderLatch sorts its latch nodes by the sequence suffix only."""
    s = ZooKeeperStore()
    s.create(ha.LATCH, make_parents=True)
    s.create(ha.LATCH + "/zz-", sequential=True)
    s.create(ha.LATCH + "/aa-", sequential=True)
    assert ha.latch_leader(s) == ha.LATCH + "/zz-0000000000"
    assert ha.token_of(ha.LATCH + "/aa-0000000041") == 42
    assert ha.latch_leader(ZooKeeperStore()) is None  # no latch path at all


def test_the_checkpoint_id_counter_lives_in_the_store_unless_the_seam_is_on():
    assert ha.checkpoint_id_counter_in_store() is True
    with seams.active(("checkpoint-counter-in-memory",)):
        assert ha.checkpoint_id_counter_in_store() is False


def test_an_ephemeral_node_needs_a_live_session():
    """Without a session (0: persistent nodes only) an ephemeral create fails, even while
    other sessions live."""
    s = ZooKeeperStore()
    assert s.open_session() == 1
    with pytest.raises(SessionExpired):
        s.create("/e", ephemeral=True)
    assert not s.exists("/e")


def test_the_leader_is_the_lowest_whole_sequence_number():
    """After a million contenders the suffixes still sort by the whole number."""
    s = ZooKeeperStore()
    s.create(ha.LATCH, make_parents=True)
    s.nodes[ha.LATCH].seq = 999_999
    first = s.create(ha.LATCH + "/latch-", sequential=True)
    s.create(ha.LATCH + "/latch-", sequential=True)
    assert first == ha.LATCH + "/latch-0000999999"
    assert ha.latch_leader(s) == first


def _answer(op, *args, **kw):
    """What a ZooKeeper client gets back from ``op``: its result, or the ``KeeperException``
    code it fails with (an error is an answer of the store, compared like a result)."""
    try:
        return op(*args, **kw)
    except ha.StoreError as e:
        return e.code


def test_the_paths_flink_keeps_in_zookeeper_are_distinct_absolute_paths_under_the_root():
    assert ha.ROOT == "/"  # ZooKeeper's root node
    paths = (ha.LATCH, ha.LEADER_INFO, ha.JOB_GRAPH, ha.CHECKPOINTS, ha.CHECKPOINT_COUNTER, ha.JOB_RESULT)
    for p in paths:
        assert isinstance(p, str) and p.startswith("/") and not p.endswith("/") and "//" not in p, p
    assert len(set(paths)) == len(paths)


def test_a_client_s_operations_get_zookeeper_s_answers_one_by_one():
    """A client's session of operations, each answer (a result or the error code) as ZooKeeper
    gives it: the answer right after each call, before a later call builds on it."""
    s = ZooKeeperStore()
    assert s.next_session == 1
    sid = s.open_session()
    script = [
        (s.create, ("/a",), {}, "/a"),
        (s.create, ("/a/b", 1), {}, "/a/b"),
        (s.create, ("/a",), {}, "NODEEXISTS"),
        (s.create, ("/x/y",), {}, "NONODE"),                      # the parent is missing
        (s.create, ("/p/q/r",), {"make_parents": True}, "/p/q/r"),  # every missing ancestor
        (s.exists, ("/p/q",), {}, True),
        (s.get, ("/a/b",), {}, (1, 0)),
        (s.set_data, ("/a/b", 2), {}, 1),                          # unconditional
        (s.set_data, ("/a/b", 3, 1), {}, 2),                       # the version it has
        (s.set_data, ("/a/b", 4, 1), {}, "BADVERSION"),            # a stale one
        (s.get, ("/a/b",), {}, (3, 2)),
        (s.children, ("/a",), {}, ["b"]),
        (s.children, ("/",), {}, ["a", "p"]),
        (s.children, ("/nope",), {}, "NONODE"),
        (s.delete, ("/a",), {}, "NOTEMPTY"),
        (s.delete, ("/a/b", 1), {}, "BADVERSION"),
        (s.get, ("/nope",), {}, "NONODE"),
        (s.set_data, ("/nope", 1), {}, "NONODE"),
        (s.delete, ("/nope",), {}, "NONODE"),
        (s.delete, ("/a/b", 2), {}, None),
        (s.exists, ("/a/b",), {}, False),
        (s.create, ("/a/c",), {}, "/a/c"),                         # a persistent node takes children
        (s.create, ("/a/c/d",), {}, "/a/c/d"),
        (s.delete, ("/a/c/d",), {}, None),                         # unconditional
        (s.create, ("/a/c/d", 2), {}, "/a/c/d"),
        (s.create, ("/e",), {"ephemeral": True, "session": sid}, "/e"),
        (s.create, ("/e/c",), {}, "NOCHILDRENFOREPHEMERALS"),
        (s.create, ("/f",), {"ephemeral": True, "session": sid + 1}, "SESSIONEXPIRED"),
        (s.create, ("/f",), {"session": sid + 1}, "/f"),            # persistent: no session needed
        (s.create, ("/a/s-",), {"sequential": True}, "/a/s-0000000002"),  # b and c created before
        (s.create, ("/s-",), {"sequential": True}, "/s-0000000004"),      # a, p, e and f before it
    ]
    for i, (op, args, kw, want) in enumerate(script):
        assert _answer(op, *args, **kw) == want, (i, op.__name__, args, kw)


def test_a_created_node_is_indexed_under_its_parent_at_once():
    s = ZooKeeperStore()
    s.create("/a")
    assert s.kids == {"/": {"a"}, "/a": set()}
    assert s.nodes["/a"] == ha.ZNode() and s.nodes["/"] == ha.ZNode(cversion=1, seq=1)


class _RemovalRecordingStore(ZooKeeperStore):
    """A store whose removal step (``_remove``: the node, its index entry and the parent's
    cversion) only records the path it is given; the test asserts after the call returned."""

    __slots__ = ("removed",)

    def __init__(self):
        super().__init__()
        self.removed = []

    def _remove(self, path):
        self.removed.append(path)


def test_a_delete_and_a_session_s_expiry_remove_exactly_their_nodes():
    s = _RemovalRecordingStore()
    s.create("/a")
    s.create("/a/b")
    sid = s.open_session()
    s.create("/a/e", ephemeral=True, session=sid)
    s.create("/d", ephemeral=True, session=sid)
    s.delete("/a/b")
    assert s.removed == ["/a/b"]
    assert s.expire_session(sid) == ["/a/e", "/d"]
    assert s.removed == ["/a/b", "/a/e", "/d"]


def test_create_and_remove_ask_for_the_parent_of_the_path_they_were_given(monkeypatch):
    """The parent a node is created under, and the parent whose index and cversion a removal
    updates, are those of the node's own path (``_parent``, recorded: it answers from the
    test's table, the root for any other path)."""
    asked = []
    table = {"/a": "/", "/a/b": "/a"}

    def parent(path):
        asked.append(path)
        return table.get(path, "/")

    monkeypatch.setattr(ha, "_parent", parent)
    s = ZooKeeperStore()
    s.create("/a")
    s.create("/a/b")
    assert asked == ["/a", "/a/b"]
    s.delete("/a/b")
    assert asked == ["/a", "/a/b", "/a/b"]
    assert s.kids == {"/": {"a"}, "/a": set()} and s.nodes["/a"].cversion == 2
