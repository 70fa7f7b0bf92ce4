"""A run's history (``model.history.RunHistory``): a new one is empty, a copy holds the same
entries in new containers (each completed checkpoint's snapshot map its own) and shares the
immutable entries themselves."""

from __future__ import annotations

import copy

from model.history import RunHistory

FIELDS = ("trace", "events", "restored_from", "trigger_results", "completed_ids", "completed",
          "channel_rescales", "failovers")


def _fields(h: RunHistory) -> dict:
    return {f: getattr(h, f) for f in FIELDS}


def test_a_new_history_is_empty():
    h = RunHistory()
    assert _fields(h) == {"trace": [], "events": [], "restored_from": [], "trigger_results": [],
                          "completed_ids": [], "completed": {}, "channel_rescales": [], "failovers": 0}
    assert type(h.completed) is dict and type(h.failovers) is int
    assert all(type(getattr(h, f)) is list for f in FIELDS if f not in ("completed", "failovers"))
    assert set(RunHistory.__slots__) == set(FIELDS)


def test_two_new_histories_share_nothing():
    a, b = RunHistory(), RunHistory()
    for f in FIELDS[:-1]:
        assert getattr(a, f) is not getattr(b, f)


def _filled() -> RunHistory:
    h = RunHistory()
    h.trace.extend([("Trigger", 1), ("Deliver", 2)])
    h.events.append(("checkpoint-completed", 4, 1))
    h.restored_from.append((6, 1, "checkpoint"))
    h.trigger_results.append("OK")
    h.completed_ids.extend([1, 2])
    h.completed.update({1: {("map", 0): "s1"}, 2: {("map", 0): "s2", ("map", 1): "s3"}})
    h.channel_rescales.append((7, 2, ()))
    h.failovers = 3
    return h


def test_a_copy_has_the_same_entries():
    h = _filled()
    before = copy.deepcopy(_fields(h))
    c = h.copy()
    assert type(c) is RunHistory
    assert _fields(c) == before == _fields(h)
    assert c.failovers == 3


def test_a_copy_is_independent_of_its_original():
    h = _filled()
    c = h.copy()
    for f in FIELDS[:-1]:
        assert getattr(c, f) is not getattr(h, f), f
    for k in h.completed:
        assert c.completed[k] is not h.completed[k] and c.completed[k] == h.completed[k]
    c.trace.append(("Fail", 9))
    c.events.append(("x", 9))
    c.restored_from.append((9, None, "nothing"))
    c.trigger_results.append("DECLINED")
    c.completed_ids.append(3)
    c.completed[1][("map", 1)] = "other"
    c.completed[3] = {}
    c.channel_rescales.append((9, 3, ()))
    c.failovers += 1
    assert _fields(h) == _fields(_filled())
    assert c.trace[-1] == ("Fail", 9) and c.completed[1] == {("map", 0): "s1", ("map", 1): "other"}


def test_deepcopy_is_copy():
    h = _filled()
    d = copy.deepcopy(h)
    assert type(d) is RunHistory and _fields(d) == _fields(h)
    assert d.trace is not h.trace and d.completed[2] is not h.completed[2]
    # the entries themselves are shared (immutable values)
    assert d.trace[0] is h.trace[0]
