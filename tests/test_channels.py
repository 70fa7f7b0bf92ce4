"""The coarse network stack (``model.channels.Channels``) call by call: every table compared as a
whole right after each call -- a new stack, ``head`` and ``take`` on pipelined channels (priority
events first) and on blocking partitions (read from ``read_pos``, never consumed), ``in_flight``
and ``reset``."""

from __future__ import annotations

from collections import deque, namedtuple

import pytest

from model.channels import Channels

Ch = namedtuple("Ch", "producer consumer")


def _tables(s: Channels) -> tuple:
    """Every table (a queue as a list; anything else as it is: the comparison then fails on it)."""
    queues = [list(q) if isinstance(q, deque) else q for q in s.queues] if isinstance(s.queues, list) else s.queues
    return (queues, s.prio, s.blocked, s.received, s.read_pos, s.blocking, s.producer_of, s.consumer_of)


def _stack(blocking=(False, True, False)) -> Channels:
    return Channels([Ch(("src", 0), ("map", 0)), Ch(("src", 0), ("map", 1)), Ch(("src", 1), ("map", 0))][:len(blocking)],
                    blocking)


def test_the_coarse_stack_models_no_network():
    assert not Channels.network and not _stack().network
    assert set(Channels.__slots__) == {"queues", "prio", "blocked", "received", "read_pos", "blocking",
                                       "producer_of", "consumer_of"}


def test_a_new_stack():
    s = _stack()
    assert _tables(s) == ([[], [], []], [0, 0, 0], [False, False, False], [0, 0, 0], [0, 0, 0],
                          [False, True, False], [("src", 0), ("src", 0), ("src", 1)],
                          [("map", 0), ("map", 1), ("map", 0)])
    assert all(type(q) is deque for q in s.queues)
    assert len({id(q) for q in s.queues}) == 3
    assert len(s) == 3
    assert s.blocked[0] is False and type(s.blocking) is list
    e = Channels([], ())
    assert _tables(e) == ([], [], [], [], [], [], [], []) and len(e) == 0


def test_the_blocking_flags_are_copied():
    flags = [True, False]
    s = _stack(flags)
    flags[0] = False
    assert s.blocking == [True, False]
    gen = Channels([Ch(1, 2)], (x for x in [True]))
    assert gen.blocking == [True]


def test_head_and_take_on_a_pipelined_channel():
    s = _stack()
    assert s.head(0) is None
    s.queues[0].extend([("k", 1, 5), ("k", 2, 6)])
    assert s.head(0) == ("k", 1, 5)
    assert _tables(s)[0] == [[("k", 1, 5), ("k", 2, 6)], [], []]
    assert s.take(0) == ("k", 1, 5)
    assert _tables(s)[:5] == ([[("k", 2, 6)], [], []], [0, 0, 0], [False] * 3, [0, 0, 0], [0, 0, 0])
    assert s.head(0) == ("k", 2, 6)
    assert s.take(0) == ("k", 2, 6)
    assert s.head(0) is None and _tables(s)[0] == [[], [], []]
    with pytest.raises(IndexError):
        s.take(0)


def test_a_falsy_head_is_returned():
    s = _stack()
    s.queues[2].append(0)
    assert s.head(2) == 0 and s.head(2) is not None
    s.queues[1].append(0)
    assert s.head(1) == 0 and s.head(1) is not None


def test_take_counts_down_the_priority_events_at_the_head():
    s = _stack()
    s.queues[2].extend(["barrier", "cancel", ("k", 1, 1)])
    s.prio[2] = 2
    assert s.take(2) == "barrier" and s.prio == [0, 0, 1]
    assert s.take(2) == "cancel" and s.prio == [0, 0, 0]
    assert s.take(2) == ("k", 1, 1) and s.prio == [0, 0, 0]
    assert _tables(s)[:2] == ([[], [], []], [0, 0, 0])


def test_a_blocking_partition_is_read_from_read_pos_and_kept():
    s = _stack()
    assert s.head(1) is None
    s.queues[1].extend(["a", "b"])
    s.prio[1] = 1  # never consulted for a blocking partition
    assert s.head(1) == "a"
    assert s.take(1) == "a"
    assert _tables(s)[:5] == ([[], ["a", "b"], []], [0, 1, 0], [False] * 3, [0, 0, 0], [0, 1, 0])
    assert s.head(1) == "b"
    assert s.take(1) == "b"
    assert _tables(s)[:5] == ([[], ["a", "b"], []], [0, 1, 0], [False] * 3, [0, 0, 0], [0, 2, 0])
    assert s.head(1) is None
    s.read_pos[1] = 1
    assert s.head(1) == "b"
    s.read_pos[1] = 0
    assert s.head(1) == "a"


def test_in_flight():
    s = _stack()
    assert s.in_flight() is False
    s.queues[1].append("a")
    assert s.in_flight() is True
    s.read_pos[1] = 1  # the blocking partition was read to its end
    assert s.in_flight() is False
    s.queues[2].append("x")
    assert s.in_flight() is True
    s.queues[2].clear()
    s.queues[0].append("y")
    assert s.in_flight() is True
    s.queues[0].clear()
    s.read_pos[1] = 0
    assert s.in_flight() is True
    s.read_pos[0] = 5  # a pipelined channel's read_pos means nothing
    s.queues[0].append("y")
    s.read_pos[1] = 1
    assert s.in_flight() is True


def test_in_flight_sees_only_blocking_partitions_read_to_their_end():
    s = _stack((True, True))
    s.queues[0].extend(["a", "b"])
    s.queues[1].extend(["c"])
    s.read_pos[0], s.read_pos[1] = 2, 1
    assert s.in_flight() is False
    s.read_pos[0] = 1
    assert s.in_flight() is True
    s.read_pos[0], s.read_pos[1] = 2, 0
    assert s.in_flight() is True


def test_reset_empties_and_unblocks_one_channel():
    s = _stack()
    for c in range(3):
        s.queues[c].extend(["e", "f"])
        s.prio[c] = 1
        s.blocked[c] = True
        s.received[c] = 4
        s.read_pos[c] = 1
    q1 = s.queues[1]
    s.reset(1)
    assert _tables(s) == ([["e", "f"], [], ["e", "f"]], [1, 0, 1], [True, False, True], [4, 4, 4], [1, 0, 1],
                          [False, True, False], [("src", 0), ("src", 0), ("src", 1)],
                          [("map", 0), ("map", 1), ("map", 0)])
    assert s.queues[1] is q1 and s.blocked[1] is False
