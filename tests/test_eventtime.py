"""Source-side event time (model/eventtime.py): Java long arithmetic, BoundedOutOfOrdernessWatermarks,
WatermarkToDataOutput.

    records ──► [BoundedOutOfOrdernessWatermarks] ──periodic──► [WatermarkToDataOutput] ──► channel
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.errors import InvalidArgument
from model.eventtime import (
    LONG_MAX,
    LONG_MIN,
    BoundedOutOfOrdernessWatermarks,
    WatermarkToDataOutput,
    check_long,
    java_abs,
    java_rem,
    jlong,
)
from model.watermarkstatus import RecordingValveOutput


def test_jlong_wraps_like_java():
    assert jlong(LONG_MAX + 1) == LONG_MIN
    assert jlong(LONG_MIN - 1) == LONG_MAX
    assert jlong(2**64 + 5) == 5
    assert jlong(-5) == -5


def test_java_rem_truncates_toward_zero():
    assert java_rem(-7, 3) == -1 and (-7) % 3 == 2
    assert java_rem(7, -3) == 1
    assert java_rem(LONG_MIN, -1) == 0
    with pytest.raises(ZeroDivisionError):
        java_rem(1, 0)


def test_java_abs_of_long_min_is_long_min():
    assert java_abs(LONG_MIN) == LONG_MIN
    assert java_abs(-3) == 3


def test_check_long_rejects_non_longs():
    with pytest.raises(InvalidArgument, match="Java long range"):
        check_long("x", LONG_MAX + 1)
    with pytest.raises(InvalidArgument, match="integer"):
        check_long("x", True)


def test_bounded_out_of_orderness_starts_at_long_min():
    for ooo in (0, 1, 5, 10**12):
        g = BoundedOutOfOrdernessWatermarks(ooo)
        assert g.max_timestamp == LONG_MIN + ooo + 1
        assert g.on_periodic_emit() == LONG_MIN


def test_bounded_out_of_orderness_emits_max_minus_ooo_minus_one():
    g = BoundedOutOfOrdernessWatermarks(5)
    for ts in (100, 90, 120, 110):
        g.on_event(ts)
    assert g.on_periodic_emit() == 120 - 5 - 1
    g.on_event(-(10**6))  # an old event does not lower the watermark
    assert g.on_periodic_emit() == 114


def test_bounded_out_of_orderness_negative_timestamps_and_zero_bound():
    g = BoundedOutOfOrdernessWatermarks(0)
    g.on_event(-50)
    assert g.on_periodic_emit() == -51


def test_bounded_out_of_orderness_rejects_negative_bound():
    with pytest.raises(InvalidArgument, match="negative"):
        BoundedOutOfOrdernessWatermarks(-1)


def test_bounded_out_of_orderness_long_min_event_keeps_start():
    g = BoundedOutOfOrdernessWatermarks(3)
    g.on_event(LONG_MIN)
    assert g.on_periodic_emit() == LONG_MIN


def test_watermark_to_data_output_drops_non_increasing():
    out = RecordingValveOutput()
    w = WatermarkToDataOutput()
    assert w.emit_watermark(LONG_MIN, out) is False        # not above the initial Long.MIN_VALUE
    assert [w.emit_watermark(x, out) for x in (5, 5, 3, 7)] == [True, False, False, True]
    assert out.events == [("watermark", 5), ("watermark", 7)]


def test_watermark_to_data_output_reactivates_before_watermark():
    out = RecordingValveOutput()
    w = WatermarkToDataOutput()
    w.emit_watermark(10, out)
    w.mark_idle(out)
    w.mark_idle(out)                                     # idempotent
    w.emit_watermark(9, out)                               # dropped, stays idle (FLINK-40504, open)
    assert w.is_idle
    w.emit_watermark(11, out)
    assert out.events == [("watermark", 10), ("status", "IDLE"), ("status", "ACTIVE"), ("watermark", 11)]
    w.mark_active(out)                                   # already active: nothing
    assert len(out.events) == 4


@settings(deadline=None, derandomize=True)
@given(st.integers(0, 10**6), st.lists(st.integers(-(10**9), 10**9), max_size=30))
def test_property_source_watermarks_never_exceed_max_minus_bound(ooo, timestamps):
    g = BoundedOutOfOrdernessWatermarks(ooo)
    out = RecordingValveOutput()
    w = WatermarkToDataOutput()
    for ts in timestamps:
        g.on_event(ts)
        w.emit_watermark(g.on_periodic_emit(), out)
    wms = out.watermarks
    assert wms == sorted(set(wms))
    if timestamps:
        assert all(x <= max(timestamps) - ooo - 1 for x in wms)
