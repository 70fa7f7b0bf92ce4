"""``model.eventtime`` call by call: Java ``long`` arithmetic on its edge values, and each call of
``BoundedOutOfOrdernessWatermarks`` and ``WatermarkToDataOutput`` with the object's fields and what
it wrote to its output compared as a whole right after the call."""

from __future__ import annotations

import pytest

from model import eventtime
from model.errors import InvalidArgument
from model.eventtime import BoundedOutOfOrdernessWatermarks, WatermarkToDataOutput, check_long, java_abs, java_rem, jlong

# Java's bounds written out here (not imported): the cases below do not depend on the module's constants
LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1


def test_the_constants():
    assert eventtime.LONG_MIN == -9223372036854775808 and eventtime.LONG_MAX == 9223372036854775807
    assert eventtime._TWO_64 == 18446744073709551616
    assert eventtime._MASK == 0xFFFFFFFFFFFFFFFF
    assert eventtime._SIGN == 9223372036854775808


JLONG = [
    (0, 0), (5, 5), (-5, -5), (LONG_MAX, LONG_MAX), (LONG_MIN, LONG_MIN),
    (LONG_MAX + 1, LONG_MIN), (LONG_MAX + 2, LONG_MIN + 1), (LONG_MIN - 1, LONG_MAX), (LONG_MIN - 2, LONG_MAX - 1),
    (2**64, 0), (2**64 + 5, 5), (2**64 - 1, -1), (-(2**64), 0), (-(2**64) - 3, -3), (3 * 2**64 + 7, 7),
    (2**65 + LONG_MAX, LONG_MAX), (2**65 + 2**63, LONG_MIN),
]


def _ids(cases):
    """Node ids that do not depend on the values (a mutant may change a constant they hold)."""
    return [f"case{i}" for i in range(len(cases))]


@pytest.mark.parametrize("x, wrapped", JLONG, ids=_ids(JLONG))
def test_jlong(x, wrapped):
    assert jlong(x) == wrapped
    assert type(jlong(x)) is int


REM = [
    (7, 3, 1), (-7, 3, -1), (7, -3, 1), (-7, -3, -1), (6, 3, 0), (-6, 3, 0), (0, 5, 0), (0, -5, 0),
    (LONG_MIN, -1, 0), (LONG_MIN, 1, 0), (LONG_MIN, 10, -8), (LONG_MAX, 10, 7), (1, 2, 1), (-1, 2, -1),
    (2, 3, 2), (-2, 3, -2), (3, 4, 3),
]


@pytest.mark.parametrize("a, b, r", REM, ids=_ids(REM))
def test_java_rem(a, b, r):
    assert java_rem(a, b) == r


def test_java_rem_by_zero():
    with pytest.raises(ZeroDivisionError):
        java_rem(5, 0)
    with pytest.raises(ZeroDivisionError):
        java_rem(0, 0)


ABS = [(0, 0), (1, 1), (-1, 1), (LONG_MAX, LONG_MAX), (-LONG_MAX, LONG_MAX), (LONG_MIN, LONG_MIN),
       (LONG_MIN + 1, LONG_MAX), (-2, 2), (2, 2)]


@pytest.mark.parametrize("x, a", ABS, ids=_ids(ABS))
def test_java_abs(x, a):
    assert java_abs(x) == a


@pytest.mark.parametrize("value", [0, 1, -1, LONG_MIN, LONG_MAX], ids=_ids(range(5)))
def test_check_long_keeps_a_long(value):
    assert check_long("x", value) == value and type(check_long("x", value)) is int


def test_check_long_returns_a_plain_int():
    class Big(int):
        pass

    out = check_long("x", Big(3))
    assert out == 3 and type(out) is int


REFUSED = [
    (True, "ts: must be an integer (a Java long), got True"),
    (False, "ts: must be an integer (a Java long), got False"),
    (1.0, "ts: must be an integer (a Java long), got 1.0"),
    ("3", "ts: must be an integer (a Java long), got '3'"),
    (None, "ts: must be an integer (a Java long), got None"),
    (LONG_MAX + 1, f"ts: {LONG_MAX + 1} is outside the Java long range [{LONG_MIN}, {LONG_MAX}]"),
    (LONG_MIN - 1, f"ts: {LONG_MIN - 1} is outside the Java long range [{LONG_MIN}, {LONG_MAX}]"),
]


@pytest.mark.parametrize("value, text", REFUSED, ids=_ids(REFUSED))
def test_check_long_refuses(value, text):
    with pytest.raises(InvalidArgument) as e:
        check_long("ts", value)
    assert str(e.value) == text


def _g(g):
    return g.out_of_orderness, g.max_timestamp


@pytest.mark.parametrize("ooo", [0, 1, 5, LONG_MAX], ids=_ids(range(4)))
def test_a_new_generator_starts_so_that_its_first_watermark_is_long_min(ooo):
    g = BoundedOutOfOrdernessWatermarks(ooo)
    assert _g(g) == (ooo, LONG_MIN + ooo + 1)
    assert g.on_periodic_emit() == LONG_MIN
    assert _g(g) == (ooo, LONG_MIN + ooo + 1)


def test_the_generator_keeps_the_largest_timestamp():
    g = BoundedOutOfOrdernessWatermarks(5)
    g.on_event(100)
    assert _g(g) == (5, 100) and g.on_periodic_emit() == 94
    g.on_event(100)
    assert _g(g) == (5, 100)
    g.on_event(99)
    assert _g(g) == (5, 100) and g.on_periodic_emit() == 94
    g.on_event(101)
    assert _g(g) == (5, 101) and g.on_periodic_emit() == 95
    z = BoundedOutOfOrdernessWatermarks(0)
    z.on_event(-10)
    assert _g(z) == (0, -10) and z.on_periodic_emit() == -11
    z.on_event(LONG_MIN)
    assert _g(z) == (0, -10)


def test_a_timestamp_at_the_start_changes_nothing():
    g = BoundedOutOfOrdernessWatermarks(2)
    g.on_event(LONG_MIN + 3)
    assert _g(g) == (2, LONG_MIN + 3) and g.on_periodic_emit() == LONG_MIN
    g.on_event(LONG_MIN + 4)
    assert _g(g) == (2, LONG_MIN + 4) and g.on_periodic_emit() == LONG_MIN + 1


def test_the_periodic_watermark_wraps_as_a_java_long():
    g = BoundedOutOfOrdernessWatermarks(LONG_MAX)
    g.on_event(LONG_MIN + 5)  # below the start: kept
    assert _g(g) == (LONG_MAX, 0)
    g.on_event(-1)
    assert _g(g) == (LONG_MAX, 0) and g.on_periodic_emit() == LONG_MIN
    g.on_event(LONG_MAX)
    assert g.on_periodic_emit() == -1
    h = BoundedOutOfOrdernessWatermarks(LONG_MAX)
    h.max_timestamp = -2
    assert h.on_periodic_emit() == LONG_MAX - 1  # -2 - MAX - 1 wraps


BAD_BOUNDS = [
    (-1, "BoundedOutOfOrdernessWatermarks.out_of_orderness: -1 is negative (maxOutOfOrderness cannot be negative)"),
    (1.5, "BoundedOutOfOrdernessWatermarks.out_of_orderness: must be an integer (a Java long), got 1.5"),
    (LONG_MAX + 1, f"BoundedOutOfOrdernessWatermarks.out_of_orderness: {LONG_MAX + 1} is outside the Java long "
                   f"range [{LONG_MIN}, {LONG_MAX}]"),
]


@pytest.mark.parametrize("ooo, text", BAD_BOUNDS, ids=_ids(BAD_BOUNDS))
def test_a_bad_bound_is_refused(ooo, text):
    with pytest.raises(InvalidArgument) as e:
        BoundedOutOfOrdernessWatermarks(ooo)
    assert str(e.value) == text


def test_the_generators_repr():
    g = BoundedOutOfOrdernessWatermarks(3)
    g.on_event(10)
    assert repr(g) == "BoundedOutOfOrdernessWatermarks(3)  # max_timestamp=10"


class _Out:
    """Records what is written, in order: ("wm", ts) and ("status", idle)."""

    def __init__(self):
        self.log = []

    def emit_watermark(self, ts):
        self.log.append(("wm", ts))

    def emit_watermark_status(self, idle):
        self.log.append(("status", idle))


def _o(o):
    return o.max_watermark_so_far, o.is_idle


def test_a_new_output():
    o = WatermarkToDataOutput()
    assert _o(o) == (LONG_MIN, False) and o.is_idle is False


def test_only_strictly_increasing_watermarks_are_forwarded():
    o, out = WatermarkToDataOutput(), _Out()
    assert o.emit_watermark(LONG_MIN, out) is False
    assert _o(o) == (LONG_MIN, False) and out.log == []
    assert o.emit_watermark(5, out) is True
    assert _o(o) == (5, False) and out.log == [("wm", 5)]
    assert o.emit_watermark(5, out) is False
    assert o.emit_watermark(4, out) is False
    assert _o(o) == (5, False) and out.log == [("wm", 5)]
    assert o.emit_watermark(6, out) is True
    assert _o(o) == (6, False) and out.log == [("wm", 5), ("wm", 6)]


def test_idle_once_and_active_once():
    o, out = WatermarkToDataOutput(), _Out()
    o.mark_active(out)
    assert _o(o) == (LONG_MIN, False) and out.log == []
    o.mark_idle(out)
    assert _o(o) == (LONG_MIN, True) and out.log == [("status", True)]
    o.mark_idle(out)
    assert _o(o) == (LONG_MIN, True) and out.log == [("status", True)]
    o.mark_active(out)
    assert _o(o) == (LONG_MIN, False) and out.log == [("status", True), ("status", False)]
    o.mark_active(out)
    assert _o(o) == (LONG_MIN, False) and out.log == [("status", True), ("status", False)]


def test_a_watermark_reactivates_an_idle_output_first():
    o, out = WatermarkToDataOutput(), _Out()
    o.mark_idle(out)
    assert o.emit_watermark(3, out) is True
    assert _o(o) == (3, False) and out.log == [("status", True), ("status", False), ("wm", 3)]


def test_a_dropped_watermark_leaves_an_idle_output_idle():
    o, out = WatermarkToDataOutput(), _Out()
    o.emit_watermark(7, out)
    o.mark_idle(out)
    assert o.emit_watermark(7, out) is False
    assert _o(o) == (7, True) and out.log == [("wm", 7), ("status", True)]
