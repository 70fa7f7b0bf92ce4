"""The ZooKeeper-like store and the leader latch (model/highavailability.py), against
ZooKeeper's documented semantics (tests/test_zookeeper_differential.py compares them with a
real server)."""

from __future__ import annotations

import pytest

from model import highavailability as ha
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
