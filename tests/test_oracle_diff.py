"""Tests for model.oracle.diff_outputs: missing / duplicated / unexpected per key and window.

The outputs compared are what a keyed tumbling-window job writes to its sink::

    src ──keyBy──► window(count) ──► sink        records: (key, count, window.maxTimestamp())
"""

from __future__ import annotations

import random
import time

import attrs
import pytest

from model.errors import InvalidArgument
from model.oracle import DiffEntry, OutputDiff, diff_outputs

EXPECTED = [("a", 2, 9), ("a", 1, 19), ("b", 3, 9), ("b", 3, 9)]


def test_equal_multisets_in_any_order_are_ok():
    d = diff_outputs(EXPECTED, list(reversed(EXPECTED)))
    assert d.ok and not d
    assert d.expected_count == d.actual_count == 4
    assert "ok" in d.describe()


def test_missing_duplicated_and_wrong_are_separated():
    """1. ('a',1,19) missing, 2. ('a',2,9) twice (duplicate), 3. ('b',3,9) once instead of
    twice (missing one copy), 4. ('b',4,9) a wrong value (unexpected)."""
    actual = [("a", 2, 9), ("a", 2, 9), ("b", 3, 9), ("b", 4, 9)]
    d = diff_outputs(EXPECTED, actual)
    assert not d.ok
    assert d.missing == (DiffEntry("a", 19, 1, 1, 0), DiffEntry("b", 9, 3, 2, 1))
    assert d.duplicated == (DiffEntry("a", 9, 2, 1, 2),)
    assert d.unexpected == (DiffEntry("b", 9, 4, 0, 1),)
    assert list(d.by_key()) == ["a", "b"]
    assert d.keys() == ["a", "b"]
    text = d.describe()
    assert "2 missing" in text and "1 duplicated" in text and "1 unexpected" in text
    js = d.to_dict()
    assert js["ok"] is False and js["missing"][0] == {"key": "a", "timestamp": 19, "value": 1, "expected": 1, "actual": 0}


def test_prefix_mode_allows_missing_but_not_duplicates_or_wrong():
    """While running: committed output must be a sub-multiset of the oracle's output."""
    assert diff_outputs(EXPECTED, [("b", 3, 9), ("a", 2, 9)], mode="prefix").ok
    assert diff_outputs(EXPECTED, [("b", 3, 9), ("b", 3, 9)], mode="prefix").ok  # expected twice
    d = diff_outputs(EXPECTED, [("a", 2, 9), ("a", 2, 9)], mode="prefix")
    assert d.duplicated == (DiffEntry("a", 9, 2, 1, 2),) and d.missing == ()
    d = diff_outputs(EXPECTED, [("c", 1, 9)], mode="prefix")
    assert d.unexpected == (DiffEntry("c", 9, 1, 0, 1),)


def test_upsert_mode_compares_final_value_per_key():
    """The last record per key wins; earlier intermediate values do not matter."""
    expected = [("a", 1, 9), ("a", 2, 19), ("b", 5, 9)]
    assert diff_outputs(expected, [("b", 5, 9), ("a", 2, 19)], mode="upsert").ok
    assert diff_outputs(expected, [("a", 1, 9), ("b", 5, 9), ("a", 2, 19), ("a", 2, 19)], mode="upsert").ok
    d = diff_outputs(expected, [("a", 1, 9), ("c", 0, 0)], mode="upsert")
    assert d.missing == (DiffEntry("a", 19, 2, 1, 0), DiffEntry("b", 9, 5, 1, 0))
    assert d.unexpected == (DiffEntry("a", 9, 1, 0, 1), DiffEntry("c", 0, 0, 0, 1))


def test_accepts_four_tuples_and_record_objects():
    @attrs.frozen
    class Rec:
        key: str
        value: int
        timestamp: int

    assert diff_outputs([Rec("a", 1, 2)], [("a", 1, 2, 0)]).ok


def test_bad_input_is_a_clear_error():
    with pytest.raises(InvalidArgument, match=r"actual\[1\]"):
        diff_outputs(EXPECTED, [("a", 2, 9), ("a", 2)])
    with pytest.raises(InvalidArgument, match="mode"):
        diff_outputs(EXPECTED, EXPECTED, mode="set")
    with pytest.raises(InvalidArgument, match="hashable"):
        diff_outputs([("a", [1], 9)], [])


def test_entries_are_sorted_deterministically_over_mixed_keys():
    expected = [(k, 1, 0) for k in ["b", 2, ("x", 1), "a", 1, None]]
    d1 = diff_outputs(expected, [])
    d2 = diff_outputs(list(reversed(expected)), [])
    assert d1 == d2
    assert [e.key for e in d1.missing] == [None, 1, 2, "a", "b", ("x", 1)]


def test_ten_thousand_records_fast():
    rng = random.Random(7)
    expected = [(rng.randrange(100), rng.randrange(1000), rng.randrange(50) * 10 + 9) for _ in range(10_000)]
    actual = list(expected)
    rng.shuffle(actual)
    dup = actual[0]
    gone = actual[5]
    assert expected.count(dup) == 1 and expected.count(gone) == 1 and dup != gone
    actual.append(dup)  # one duplicate
    del actual[5]  # one missing
    t0 = time.perf_counter()
    d = diff_outputs(expected, actual)
    elapsed = time.perf_counter() - t0
    assert elapsed < 0.2
    assert not d.ok and isinstance(d, OutputDiff)
    assert [(e.key, e.value, e.timestamp, e.actual) for e in d.duplicated] == [(dup[0], dup[1], dup[2], 2)]
    assert [(e.key, e.value, e.timestamp, e.actual) for e in d.missing] == [(gone[0], gone[1], gone[2], 0)]
    assert d.unexpected == ()
    t0 = time.perf_counter()
    assert diff_outputs(expected, list(reversed(expected))).ok
    assert time.perf_counter() - t0 < 0.2
