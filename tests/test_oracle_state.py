"""model.oracle call by call: each diff's whole result (every entry, both counts, the mode),
its ``to_dict``, ``describe`` text, ``keys`` and ``by_key`` written out, the sort keys over
mixed types, and every bad input's message."""

from __future__ import annotations

import attrs
import pytest

from model.errors import InvalidArgument
from model.oracle import MODES, DiffEntry, OutputDiff, _entry_order, _jsonable, _order, diff_outputs

E = DiffEntry


def test_the_modes_and_a_diffs_defaults():
    assert MODES == ("multiset", "upsert", "prefix")
    d = OutputDiff("multiset")
    assert (d.mode, d.missing, d.duplicated, d.unexpected, d.expected_count, d.actual_count) == (
        "multiset", (), (), (), 0, 0)
    assert d.ok is True and bool(d) is False
    e = E("k", 9, 2, 1, 0)
    assert (e.key, e.timestamp, e.value, e.expected, e.actual) == ("k", 9, 2, 1, 0)


def test_ok_and_truth_each_kind_of_entry_alone():
    e = E("k", 9, 2, 1, 0)
    for field in ("missing", "duplicated", "unexpected"):
        d = OutputDiff("multiset", **{field: (e,)})
        assert d.ok is False and bool(d) is True, field


def test_multiset_diff_whole_result():
    expected = [("b", 3, 9), ("a", 1, 19), ("a", 2, 9), ("b", 3, 9), ("c", 5, 9)]
    actual = [("a", 2, 9), ("a", 2, 9), ("b", 3, 9), ("b", 4, 9), ("c", 5, 9), ("z", 0, 1), ("z", 0, 1)]
    d = diff_outputs(expected, actual)
    assert d == OutputDiff("multiset", missing=(E("a", 19, 1, 1, 0), E("b", 9, 3, 2, 1)),
                           duplicated=(E("a", 9, 2, 1, 2),),
                           unexpected=(E("b", 9, 4, 0, 1), E("z", 1, 0, 0, 2)),
                           expected_count=5, actual_count=7)
    assert d.keys() == ["a", "b", "z"]
    assert d.by_key() == {"a": {"missing": [E("a", 19, 1, 1, 0)], "duplicated": [E("a", 9, 2, 1, 2)], "unexpected": []},
                          "b": {"missing": [E("b", 9, 3, 2, 1)], "duplicated": [], "unexpected": [E("b", 9, 4, 0, 1)]},
                          "z": {"missing": [], "duplicated": [], "unexpected": [E("z", 1, 0, 0, 2)]}}
    assert list(d.by_key()) == ["a", "b", "z"]


def test_multiset_diff_of_equal_outputs_and_of_empty_ones():
    d = diff_outputs([("a", 1, 9), ("a", 1, 9)], [("a", 1, 9), ("a", 1, 9)])
    assert d == OutputDiff("multiset", expected_count=2, actual_count=2)
    assert diff_outputs([], []) == OutputDiff("multiset")
    assert diff_outputs([], [("a", 1, 9)]) == OutputDiff("multiset", unexpected=(E("a", 9, 1, 0, 1),), actual_count=1)
    assert diff_outputs([("a", 1, 9)], []) == OutputDiff("multiset", missing=(E("a", 9, 1, 1, 0),), expected_count=1)


def test_prefix_diff_whole_result():
    expected = [("a", 1, 9), ("a", 1, 9), ("b", 2, 9), ("c", 3, 9)]
    d = diff_outputs(expected, [("a", 1, 9), ("b", 2, 9)], mode="prefix")
    assert d == OutputDiff("prefix", expected_count=4, actual_count=2)
    d = diff_outputs(expected, [("b", 2, 9), ("b", 2, 9), ("a", 1, 9), ("d", 0, 1)], mode="prefix")
    assert d == OutputDiff("prefix", duplicated=(E("b", 9, 2, 1, 2),), unexpected=(E("d", 1, 0, 0, 1),),
                           expected_count=4, actual_count=4)
    # as often as expected: neither missing nor duplicated
    assert diff_outputs(expected, expected, mode="prefix") == OutputDiff("prefix", expected_count=4, actual_count=4)


def test_upsert_diff_whole_result():
    expected = [("a", 1, 9), ("a", 2, 19), ("b", 5, 9), ("c", 7, 9), ("e", 1, 1)]
    actual = [("a", 2, 29), ("b", 6, 19), ("d", 1, 9), ("b", 6, 39), ("e", 1, 1)]
    d = diff_outputs(expected, actual, mode="upsert")
    # "a": same final value (its timestamp is not compared); "b": another value; "c": missing; "d": unexpected
    assert d == OutputDiff("upsert", missing=(E("b", 9, 5, 1, 0), E("c", 9, 7, 1, 0)), duplicated=(),
                           unexpected=(E("b", 39, 6, 0, 1), E("d", 9, 1, 0, 1)), expected_count=4, actual_count=4)
    assert diff_outputs(expected, expected, mode="upsert") == OutputDiff("upsert", expected_count=4, actual_count=4)
    # a final value None is a value, not a missing key
    d = diff_outputs([("a", None, 1)], [("a", None, 1)], mode="upsert")
    assert d == OutputDiff("upsert", expected_count=1, actual_count=1)
    d = diff_outputs([("a", 0, 1)], [("a", None, 1)], mode="upsert")
    assert d == OutputDiff("upsert", missing=(E("a", 1, 0, 1, 0),), unexpected=(E("a", 1, None, 0, 1),),
                           expected_count=1, actual_count=1)


def test_records_of_four_lists_and_objects_are_normalized():
    @attrs.frozen
    class Rec:
        key: object
        value: object
        timestamp: object

    d = diff_outputs([["a", 1, 9], ("b", 2, 9, 0), Rec("c", 3, 9)], [("a", 1, 9), ["b", 2, 9, 1], ("c", 3, 9)])
    assert d == OutputDiff("multiset", expected_count=3, actual_count=3)
    d = diff_outputs([Rec("c", 3, 9)], [["c", 4, 9, 1]])
    assert d == OutputDiff("multiset", missing=(E("c", 9, 3, 1, 0),), unexpected=(E("c", 9, 4, 0, 1),),
                           expected_count=1, actual_count=1)


@pytest.mark.parametrize("expected, actual, mode, message", [
    ([], [], "exact", "mode='exact': must be one of multiset, upsert, prefix"),
    (None, [], "multiset", "expected: must be a list of (key, value, timestamp) records, got None"),
    ([], None, "multiset", "actual: must be a list of (key, value, timestamp) records, got None"),
    ([("a", 1)], [], "multiset", "expected[0] = ('a', 1): a sink record must be (key, value, timestamp) "
                                 "(optionally followed by the sink subtask)"),
    ([], [("a", 1, 9), ("a", 1, 9, 0, 0)], "prefix", "actual[1] = ('a', 1, 9, 0, 0): a sink record must be"),
    ([], [("a", 1, 9), 7], "multiset", "actual[1] = 7: a sink record must be"),
    ([("a", 1, 9), ("a", [1], 9)], [], "multiset", "expected[1] = ('a', [1], 9): key, value and timestamp must be hashable"),
    ([], [["a", {}, 9]], "multiset", "actual[0] = ('a', {}, 9): key, value and timestamp must be hashable"),
])
def test_bad_input_messages(expected, actual, mode, message):
    with pytest.raises(InvalidArgument) as info:
        diff_outputs(expected, actual, mode=mode)
    assert str(info.value).startswith(message), str(info.value)


def test_the_sort_keys_over_mixed_types():
    assert _order(None) == (0, 0, "")
    assert _order(True) == (1, 1, "") and _order(False) == (1, 0, "")
    assert _order(3) == (1, 3, "") and _order(2.5) == (1, 2.5, "")
    assert _order("k") == (2, 0, "k")
    assert _order((1, "a")) == (3, 0, "(1, 'a')")
    assert _entry_order(E("k", 9, None, 1, 0)) == ((2, 0, "k"), (1, 9, ""), (0, 0, ""))
    d = diff_outputs([], [(("t",), 1, 1), ("s", 1, 1), (2, 1, 1), (None, 1, 1), (False, 1, 1), (1, 0, 1), (1, 1, 0),
                          (1.5, 1, 1)])
    assert [(e.key, e.timestamp, e.value) for e in d.unexpected] == [
        (None, 1, 1), (False, 1, 1), (1, 0, 1), (1, 1, 0), (1.5, 1, 1), (2, 1, 1), ("s", 1, 1), (("t",), 1, 1)]
    assert d.keys() == [None, False, 1, 1.5, 2, "s", ("t",)]


def test_jsonable_and_to_dict():
    assert _jsonable(None) is None and _jsonable(True) is True and _jsonable(2) == 2 and _jsonable(1.5) == 1.5
    assert _jsonable("s") == "s"
    assert _jsonable((1, ["a", (2, None)])) == [1, ["a", [2, None]]]
    assert _jsonable({1}) == "{1}" and _jsonable(frozenset()) == "frozenset()"
    e = E(("k", 1), 9, {2}, 1, 0)
    assert e.to_dict() == {"key": ["k", 1], "timestamp": 9, "value": "{2}", "expected": 1, "actual": 0}
    d = diff_outputs([("a", 1, 9)], [("b", 2, 9), ("b", 2, 9)])
    assert d.to_dict() == {"mode": "multiset", "ok": False, "expected_count": 1, "actual_count": 2,
                           "missing": [{"key": "a", "timestamp": 9, "value": 1, "expected": 1, "actual": 0}],
                           "duplicated": [],
                           "unexpected": [{"key": "b", "timestamp": 9, "value": 2, "expected": 0, "actual": 2}]}
    d = diff_outputs([("a", 1, 9), ("a", 1, 9)], [("a", 1, 9)] * 3, mode="prefix")
    assert d.to_dict() == {"mode": "prefix", "ok": False, "expected_count": 2, "actual_count": 3, "missing": [],
                           "duplicated": [{"key": "a", "timestamp": 9, "value": 1, "expected": 2, "actual": 3}],
                           "unexpected": []}
    assert diff_outputs([], []).to_dict() == {"mode": "multiset", "ok": True, "expected_count": 0, "actual_count": 0,
                                              "missing": [], "duplicated": [], "unexpected": []}


def test_describe_whole_text():
    d = diff_outputs([("a", 1, 9)] * 2, [("a", 1, 9)])
    assert d.describe() == diff_outputs([("a", 1, 9)] * 2, [("a", 1, 9)]).describe()
    assert d.describe() == ("multiset: 1 missing (expected 2 records, got 1)\n"
                            "  missing: key='a' ts=9 value=1 (expected 2, actual 1)")
    assert diff_outputs([("a", 1, 9)], [("a", 1, 9)]).describe() == \
        "multiset: ok (1 actual records match 1 expected)"
    expected = [(k, 1, 9) for k in "abcde"] + [("x", 1, 9)]
    actual = [("x", 1, 9)] * 4 + [("u", 5, 1), ("v", 6, 2), ("w", 7, 3)]
    d = diff_outputs(expected, actual)
    assert d.describe() == (
        "multiset: 5 missing, 3 duplicated, 3 unexpected (expected 6 records, got 7)\n"
        "  missing: key='a' ts=9 value=1 (expected 1, actual 0)\n"
        "  missing: key='b' ts=9 value=1 (expected 1, actual 0)\n"
        "  missing: key='c' ts=9 value=1 (expected 1, actual 0)\n"
        "  ... 2 more missing\n"
        "  duplicated: key='x' ts=9 value=1 (expected 1, actual 4)\n"
        "  unexpected: key='u' ts=1 value=5 (expected 0, actual 1)\n"
        "  unexpected: key='v' ts=2 value=6 (expected 0, actual 1)\n"
        "  unexpected: key='w' ts=3 value=7 (expected 0, actual 1)")
    assert d.describe(limit=1) == (
        "multiset: 5 missing, 3 duplicated, 3 unexpected (expected 6 records, got 7)\n"
        "  missing: key='a' ts=9 value=1 (expected 1, actual 0)\n"
        "  ... 4 more missing\n"
        "  duplicated: key='x' ts=9 value=1 (expected 1, actual 4)\n"
        "  unexpected: key='u' ts=1 value=5 (expected 0, actual 1)\n"
        "  ... 2 more unexpected")
    # an unexpected record counts its copies
    assert diff_outputs([], [("u", 5, 1)] * 2).describe(limit=0) == (
        "multiset: 2 unexpected (expected 0 records, got 2)\n  ... 1 more unexpected")


def test_the_keys_of_a_diff_with_each_kind_of_entry_alone():
    for field in ("missing", "duplicated", "unexpected"):
        d = OutputDiff("multiset", **{field: (E("m", 1, 1, 1, 0),)})
        assert d.keys() == ["m"], field
        assert d.by_key() == {"m": {"missing": [], "duplicated": [], "unexpected": [], field: [E("m", 1, 1, 1, 0)]}}
    d = diff_outputs([("only-missing", 1, 1), ("dup", 1, 1)], [("dup", 1, 1), ("dup", 1, 1)])
    assert d.keys() == ["dup", "only-missing"]


def test_keys_and_entries_are_ordered_by_the_sort_keys_not_by_python():
    """Tuple keys order by their text ("(10,)" before "(2,)"); one key's values by their own order."""
    d = diff_outputs([((2,), 1, 1), ((10,), 1, 1)], [])
    assert d.keys() == [(10,), (2,)] and list(d.by_key()) == [(10,), (2,)]
    assert [e.key for e in d.missing] == [(10,), (2,)]
    d = diff_outputs([("k", 5, 1), ("k", 3, 1), ("k", 4, 1)], [])
    assert [e.value for e in d.missing] == [3, 4, 5]
    d = diff_outputs([], [("k", (10,), 1), ("k", (2,), 1)])
    assert [e.value for e in d.unexpected] == [(10,), (2,)]


def test_normalize_and_final_per_key_answer_call_by_call():
    from model.oracle import _final_per_key, _normalize

    @attrs.frozen
    class Rec:
        key: object
        value: object
        timestamp: object

    t = ("a", 1, 9)
    got = _normalize([t, ["b", 2, 9], ("c", 3, 9, 0), ["d", 4, 9, 1], Rec("e", 5, 9)], "x")
    assert got == [("a", 1, 9), ("b", 2, 9), ("c", 3, 9), ("d", 4, 9), ("e", 5, 9)]
    assert got[0] is t and all(type(r) is tuple for r in got)
    # an object first, then more records: every record is read
    assert _normalize([Rec("e", 5, 9), ("a", 1, 9), Rec("f", 6, 9)], "x") == [("e", 5, 9), ("a", 1, 9), ("f", 6, 9)]
    assert _normalize((r for r in [("a", 1, 9)]), "x") == [("a", 1, 9)]  # any iterable
    assert _final_per_key([("a", 1, 9), ("b", 2, 3), ("a", 3, 19)]) == {"a": (3, 19), "b": (2, 3)}
    assert _final_per_key([]) == {}


@attrs.frozen
class _KeyValue:
    key: object
    value: object


@attrs.frozen
class _KeyOnly:
    key: object


@attrs.frozen
class _ValueTimestamp:
    value: object
    timestamp: object


@pytest.mark.parametrize("record", [_KeyValue("a", 1), _KeyOnly("a"), _ValueTimestamp(1, 9)])
def test_an_object_without_all_three_fields_is_refused(record):
    with pytest.raises(InvalidArgument) as info:
        diff_outputs([record], [])
    assert str(info.value) == (f"expected[0] = {record!r}: a sink record must be (key, value, timestamp) "
                               "(optionally followed by the sink subtask)")
