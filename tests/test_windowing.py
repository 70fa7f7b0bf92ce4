"""Windows, timers and keyed aggregation of one subtask (model/windowing.py).

    records (key, value, ts) ──► [WindowOperator: assigner + EventTimeTrigger + count/sum]
    watermark wm             ──► advance_watermark(wm): fire timers <= wm ──► then forward wm
                                      │ results (key, aggregate, window.max_timestamp())
                                      └ late side output (key, value, ts)
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.errors import InvalidArgument
from model.windowing import (
    LONG_MAX,
    LONG_MIN,
    KeyedAggregateOperator,
    RecordingWindowOutput,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    WindowKeyGroupState,
    WindowOperator,
    get_window_start_with_offset,
    legacy_get_window_start_with_offset,
)

# a stand-in key-group function: keys are ints, key group = key % 4 (enough for the tests)
KG = lambda key: key % 4  # noqa: E731


def brute_force_starts(ts, offset, size, slide):
    """All window starts s with s = offset (mod slide) and s <= ts < s + size, latest first."""
    first = ts - ((ts - offset) % slide)  # Python's floor mod: the start at or below ts
    starts = []
    s = first
    while s > ts - size:
        starts.append(s)
        s -= slide
    return starts


# ---------------------------------------------------------------------------- window start


@pytest.mark.parametrize("size", [1, 3, 10])
@pytest.mark.parametrize("offset", [-9, -2, 0, 2, 9])
def test_window_start_contains_timestamp_incl_negative(size, offset):
    if abs(offset) >= size:
        return
    for ts in range(-35, 36):
        start = get_window_start_with_offset(ts, offset, size)
        assert start <= ts < start + size, (ts, offset, size)
        assert (start - offset) % size == 0
        assert start == brute_force_starts(ts, offset, size, size)[0]


def test_legacy_window_start_breaks_containment_flink_26334():
    """ts - offset + size < 0 with Java's %: the element lands in the next window."""
    start = legacy_get_window_start_with_offset(-15, 0, 10)
    assert start == -10 and not start <= -15
    assert get_window_start_with_offset(-15, 0, 10) == -20
    # for ts - offset + size >= 0 the two formulas agree
    assert all(
        legacy_get_window_start_with_offset(ts, 3, 10) == get_window_start_with_offset(ts, 3, 10)
        for ts in range(-7, 50)
    )
    w = TumblingEventTimeWindows(10, legacy_window_start=True).assign_windows(-15)
    assert w == (TimeWindow(-10, 0),)


def test_window_start_wraps_like_java_long_near_long_min():
    # (MIN+1) % 10 == -7 in Java; start = ts - (-7 + 10) underflows and wraps, as in Java
    assert get_window_start_with_offset(LONG_MIN + 1, 0, 10) == LONG_MAX - 1
    assert get_window_start_with_offset(LONG_MAX, 0, 10) == LONG_MAX - 7


# ---------------------------------------------------------------------------- assigners


def test_tumbling_constructor_checks_like_flink():
    with pytest.raises(InvalidArgument, match=r"abs\(offset\) < size"):
        TumblingEventTimeWindows(10, 10)
    with pytest.raises(InvalidArgument, match=r"abs\(offset\) < size"):
        TumblingEventTimeWindows(0)
    with pytest.raises(InvalidArgument, match=r"abs\(offset\) < size"):
        TumblingEventTimeWindows(-5)
    TumblingEventTimeWindows(10, -9)
    # Math.abs(Long.MIN_VALUE) is negative in Java, so Flink accepts this offset
    w = TumblingEventTimeWindows(10, LONG_MIN)
    assert w.assign_windows(0)[0].start % 10 == (LONG_MIN % 10)


def test_sliding_constructor_checks_like_flink():
    with pytest.raises(InvalidArgument, match=r"abs\(offset\) < slide and size > 0"):
        SlidingEventTimeWindows(10, 5, 5)
    with pytest.raises(InvalidArgument, match="size > 0"):
        SlidingEventTimeWindows(0, 5)
    with pytest.raises(InvalidArgument, match="slide"):
        SlidingEventTimeWindows(10, 0)


def test_assigners_reject_long_min_timestamp():
    with pytest.raises(InvalidArgument, match="Long.MIN_VALUE timestamp"):
        TumblingEventTimeWindows(10).assign_windows(LONG_MIN)
    with pytest.raises(InvalidArgument, match="Long.MIN_VALUE timestamp"):
        SlidingEventTimeWindows(10, 5).assign_windows(LONG_MIN)


def test_sliding_assignment_latest_start_first():
    assert SlidingEventTimeWindows(10, 5).assign_windows(12) == (TimeWindow(10, 20), TimeWindow(5, 15))
    # size not a multiple of slide: 7 is in [6,16), [3,13), [0,10) but not [-3,7)
    assert [w.start for w in SlidingEventTimeWindows(10, 3).assign_windows(7)] == [6, 3, 0]
    assert [w.start for w in SlidingEventTimeWindows(10, 3, 1).assign_windows(-7)] == [-8, -11, -14]
    # size < slide: gaps between windows; a timestamp in a gap gets no window
    assert SlidingEventTimeWindows(2, 5).assign_windows(3) == ()


@settings(deadline=None, derandomize=True)
@given(
    st.integers(-10**6, 10**6),
    st.integers(1, 40),
    st.integers(1, 15),
    st.integers(-14, 14),
)
def test_property_sliding_windows_are_exactly_the_containing_ones(ts, size, slide, offset):
    if abs(offset) >= slide:
        return
    windows = SlidingEventTimeWindows(size, slide, offset).assign_windows(ts)
    assert [w.start for w in windows] == brute_force_starts(ts, offset, size, slide)
    assert all(w.start <= ts < w.end and w.end - w.start == size for w in windows)


def test_time_window_max_timestamp():
    assert TimeWindow(0, 10).max_timestamp() == 9
    assert TimeWindow(LONG_MIN, LONG_MIN).max_timestamp() == LONG_MAX  # Java wraps


# ---------------------------------------------------------------------------- operator


def tumbling(size=10, lateness=0, aggregate="count"):
    return WindowOperator(TumblingEventTimeWindows(size), aggregate, lateness, KG)


def test_window_fires_when_max_timestamp_reaches_watermark():
    """
    key 1: ts 1, 5, 12 ─► [0,10) fires at wm 9 (not 8) with count 2, ts 9; [10,20) at wm 19
    """
    op, out = tumbling(), RecordingWindowOutput()
    for ts in (1, 5, 12):
        op.process_element(1, 1, ts, out)
    op.advance_watermark(8, out)
    assert out.records == []
    op.advance_watermark(9, out)
    assert out.records == [(1, 2, 9)]
    op.advance_watermark(100, out)
    assert out.records == [(1, 2, 9), (1, 1, 19)]
    assert op.snapshot_state() == {}  # everything fired and cleaned up (lateness 0)


def test_sum_aggregate_and_negative_timestamps():
    op, out = tumbling(aggregate="sum"), RecordingWindowOutput()
    for ts, v in ((-15, 2), (-11, 5), (-10, 7), (-1, 1)):
        op.process_element(3, v, ts, out)
    op.advance_watermark(-1, out)
    assert out.records == [(3, 7, -11), (3, 8, -1)]  # [-20,-10) and [-10,0)


def test_timers_fire_before_the_watermark_is_forwarded():
    """
    src ──► window [0,10) ──► downstream log: result (ts 9) must precede watermark 9
    """
    log = []

    class Out(RecordingWindowOutput):
        def collect(self, key, value, timestamp):
            log.append(("record", key, value, timestamp))

    op, out = tumbling(), Out()
    op.process_element(1, 1, 3, out)
    for wm in (5, 9, 15):
        op.advance_watermark(wm, out)
        log.append(("watermark", wm))  # the caller forwards the watermark afterwards
    assert log == [("watermark", 5), ("record", 1, 1, 9), ("watermark", 9), ("watermark", 15)]
    assert op.current_watermark == 15


def test_allowed_lateness_fires_immediately_then_cleans_up_then_side_output():
    """
    tumbling 10, allowed lateness 5, key 1:
      ts 3 ; wm 9 ─► fire (1, ts 9) ; ts 4 (late but allowed) ─► fire (2, ts 9) at once
      wm 13 ; ts 5 ─► fire (3) ; wm 14 = cleanup time ─► state gone ; ts 6 ─► late side output
    """
    op, out = tumbling(lateness=5), RecordingWindowOutput()
    op.process_element(1, 1, 3, out)
    op.advance_watermark(9, out)
    assert out.records == [(1, 1, 9)]
    op.process_element(1, 1, 4, out)
    assert out.records == [(1, 1, 9), (1, 2, 9)]
    op.advance_watermark(13, out)
    op.process_element(1, 1, 5, out)
    assert out.records[-1] == (1, 3, 9)
    assert op.snapshot_state()[1].contents == ((1, TimeWindow(0, 10), 3),)
    op.advance_watermark(14, out)
    assert op.snapshot_state() == {}
    op.process_element(1, 7, 6, out)
    assert out.late == [(1, 7, 6)]
    assert len(out.records) == 3


def test_late_element_only_if_all_its_windows_are_late():
    """
    sliding 10/5, lateness 0, wm 9: ts 7 is in [5,15) (open) and [0,10) (late):
    it counts into [5,15) and is NOT sent to the side output.
    """
    op = WindowOperator(SlidingEventTimeWindows(10, 5), "count", 0, KG)
    out = RecordingWindowOutput()
    op.advance_watermark(9, out)
    op.process_element(2, 1, 7, out)
    assert out.late == [] and out.records == []
    op.process_element(2, 1, 3, out)  # only [0,10) and [-5,5): both late
    assert out.late == [(2, 1, 3)]
    op.advance_watermark(14, out)
    assert out.records == [(2, 1, 14)]


def test_huge_allowed_lateness_overflows_to_no_cleanup_like_flink():
    """maxTs + L overflows -> cleanup time Long.MAX_VALUE: no cleanup timer, window never late."""
    op, out = tumbling(lateness=LONG_MAX), RecordingWindowOutput()
    op.process_element(1, 1, 3, out)
    op.advance_watermark(10**18, out)
    assert out.records == [(1, 1, 9)]
    assert op.snapshot_state()[1].timers == ()
    op.process_element(1, 1, 4, out)  # still accepted and fires with the whole window
    assert out.records[-1] == (1, 2, 9)
    assert out.late == []


def test_equal_timestamp_timers_fire_in_key_group_then_key_order():
    op, out = tumbling(), RecordingWindowOutput()
    for key in (7, 2, 5, 1, 4):  # key groups 3, 2, 1, 1, 0
        op.process_element(key, 1, 0, out)
    op.advance_watermark(9, out)
    assert [r[0] for r in out.records] == [4, 1, 5, 2, 7]


def test_negative_allowed_lateness_and_bad_aggregate_are_clear_errors():
    with pytest.raises(InvalidArgument, match="allowed_lateness"):
        tumbling(lateness=-1)
    with pytest.raises(InvalidArgument, match="aggregate"):
        tumbling(aggregate="avg")


def _run(op, out, events):
    for e in events:
        if e[0] == "wm":
            op.advance_watermark(e[1], out)
        else:
            op.process_element(e[1], e[2], e[3], out)


EVENTS_BEFORE = [("rec", k, k * 10 + t, t) for t in (1, 4, 11, 14) for k in range(8)] + [("wm", 9)]
EVENTS_AFTER = [("rec", k, 1, 16) for k in range(8)] + [("rec", k, 1, 8) for k in range(8)] + [
    ("wm", 12), ("wm", 19), ("wm", 40)]


@pytest.mark.parametrize("lateness", [0, 5])
def test_snapshot_restore_by_key_group_round_trip(lateness):
    """
    one subtask (key groups 0..3) ──snapshot──► split {0,1} | {2,3} ──► two new subtasks;
    running on equals the uninterrupted run (same results, same late records).
    """
    a, out_a = tumbling(lateness=lateness, aggregate="sum"), RecordingWindowOutput()
    _run(a, out_a, EVENTS_BEFORE)
    n_records, n_late = len(out_a.records), len(out_a.late)
    assert n_records == 8  # the [0,10) windows fired at wm 9
    snap = a.snapshot_state()
    assert set(snap) == {0, 1, 2, 3}
    assert all(isinstance(s, WindowKeyGroupState) for s in snap.values())
    frozen = dict(snap)
    _run(a, out_a, EVENTS_AFTER)
    assert snap == frozen and a.snapshot_state() != snap  # the snapshot did not move with `a`

    b1 = tumbling(lateness=lateness, aggregate="sum")
    b2 = tumbling(lateness=lateness, aggregate="sum")
    b1.restore_state({kg: snap[kg] for kg in (0, 1)})
    b2.restore_state({kg: snap[kg] for kg in (2, 3)})
    out_b = RecordingWindowOutput()
    # the restored subtasks start at Long.MIN_VALUE; the next watermark they see is 9 again
    for op in (b1, b2):
        op.advance_watermark(9, out_b)
    assert out_b.records == []  # nothing fires twice: the [0,10) timers already fired in `a`
    for e in EVENTS_AFTER:
        if e[0] == "wm":
            b1.advance_watermark(e[1], out_b)
            b2.advance_watermark(e[1], out_b)
        else:
            (b1 if KG(e[1]) in (0, 1) else b2).process_element(e[1], e[2], e[3], out_b)
    assert out_b.records and sorted(out_b.records) == sorted(out_a.records[n_records:])
    assert sorted(out_b.late) == sorted(out_a.late[n_late:])
    assert bool(out_b.late) == (lateness == 0)  # ts 8 after wm 9: late only without lateness
    assert b1.key_groups() + b2.key_groups() == a.key_groups()


def test_restore_rejects_foreign_state():
    with pytest.raises(InvalidArgument, match="key group 3"):
        tumbling().restore_state({3: ("not", "a", "state")})


# ---------------------------------------------------------------------------- keyed aggregate


def test_keyed_aggregate_emits_running_values_with_element_timestamp():
    """src ──keyBy──► [sum per key] ──► (key, running sum, element ts)"""
    op, out = KeyedAggregateOperator("sum", KG), RecordingWindowOutput()
    for key, v, ts in ((1, 5, 100), (2, 1, 50), (1, 3, 20)):
        op.process_element(key, v, ts, out)
    assert out.records == [(1, 5, 100), (2, 1, 50), (1, 8, 20)]
    c, out_c = KeyedAggregateOperator("count", KG), RecordingWindowOutput()
    for key in (1, 1, 5):
        c.process_element(key, 99, 0, out_c)
    assert out_c.records == [(1, 1, 0), (1, 2, 0), (5, 1, 0)]


def test_keyed_aggregate_snapshot_restore_split():
    op, out = KeyedAggregateOperator("sum", KG), RecordingWindowOutput()
    for key in range(8):
        op.process_element(key, key, 0, out)
    snap = op.snapshot_state()
    assert set(snap) == {0, 1, 2, 3}
    b = KeyedAggregateOperator("sum", KG)
    b.restore_state({kg: snap[kg] for kg in (1, 3)})
    out_b = RecordingWindowOutput()
    for key in (1, 3, 5, 7):
        b.process_element(key, 10, 1, out_b)
    assert out_b.records == [(1, 11, 1), (3, 13, 1), (5, 15, 1), (7, 17, 1)]
    assert b.key_groups() == (1, 3)


# ---------------------------------------------------------------------------- the rules at their edges


def test_bad_arguments_name_the_parameter():
    """One clear line naming the problem: the class and parameter a bad value was given for."""
    for make, name in ((lambda: TumblingEventTimeWindows("x"), "TumblingEventTimeWindows.size"),
                       (lambda: TumblingEventTimeWindows(10, "x"), "TumblingEventTimeWindows.offset"),
                       (lambda: SlidingEventTimeWindows("x", 5), "SlidingEventTimeWindows.size"),
                       (lambda: SlidingEventTimeWindows(10, "x"), "SlidingEventTimeWindows.slide"),
                       (lambda: SlidingEventTimeWindows(10, 5, "x"), "SlidingEventTimeWindows.offset"),
                       (lambda: tumbling(lateness="x"), "WindowOperator.allowed_lateness"),
                       (lambda: tumbling(aggregate="max"), "WindowOperator.aggregate"),
                       (lambda: KeyedAggregateOperator("max", KG), "KeyedAggregateOperator.aggregate")):
        with pytest.raises(InvalidArgument, match=name.replace(".", r"\.")):
            make()
    with pytest.raises(InvalidArgument, match=r"^TumblingEventTimeWindows\.assign_windows: record has Long"):
        TumblingEventTimeWindows(10).assign_windows(LONG_MIN)
    with pytest.raises(InvalidArgument, match=r"^SlidingEventTimeWindows\.assign_windows: record has Long"):
        SlidingEventTimeWindows(10, 5).assign_windows(LONG_MIN)


def test_assigners_and_operators_print_as_built():
    assert repr(TumblingEventTimeWindows(10, 3)) == "TumblingEventTimeWindows(10, 3)"
    assert repr(TumblingEventTimeWindows(10, legacy_window_start=True)) == \
        "TumblingEventTimeWindows(10, 0, legacy_window_start=True)"
    assert repr(SlidingEventTimeWindows(10, 5, 1)) == "SlidingEventTimeWindows(10, 5, 1)"
    assert repr(SlidingEventTimeWindows(10, 5, legacy_window_start=True)) == \
        "SlidingEventTimeWindows(10, 5, 0, legacy_window_start=True)"
    assert repr(tumbling()).startswith("WindowOperator(TumblingEventTimeWindows(10, 0), 'count', 0, ...)")
    assert repr(KeyedAggregateOperator("sum", KG)) == "KeyedAggregateOperator('sum', ...)"


def test_legacy_sliding_windows_start_after_the_element_flink_26334():
    """The pre-FLINK-26334 start for sliding windows: ts=-17, slide 5 -> the last start is
    -17 - (-12 % 5) = -15 (Java's %), after the element; the current formula starts at -20."""
    legacy = SlidingEventTimeWindows(10, 5, legacy_window_start=True)
    assert legacy.assign_starts(-17) == (-15, -20, -25)
    assert SlidingEventTimeWindows(10, 5).assign_starts(-17) == (-20, -25)
    assert legacy.assign_starts(17) == SlidingEventTimeWindows(10, 5).assign_starts(17) == (15, 10)


def test_sliding_windows_near_the_ends_of_the_long_range_as_in_java():
    """Timestamps near Long.MAX_VALUE: Flink's loop, exact (no overflow); near Long.MIN_VALUE
    ``timestamp - size`` overflows in Java, so the loop ``start > timestamp - size`` runs not
    once: the element gets no window."""
    ts = LONG_MAX - 2
    assert SlidingEventTimeWindows(10, 5).assign_starts(ts) == tuple(brute_force_starts(ts, 0, 10, 5))
    assert SlidingEventTimeWindows(10, 5, 3).assign_starts(ts) == tuple(brute_force_starts(ts, 3, 10, 5))
    assert SlidingEventTimeWindows(10, 5).assign_starts(LONG_MIN + 3) == ()


def test_count_counts_elements_whatever_their_values():
    op, out = tumbling(aggregate="count"), RecordingWindowOutput()
    op.process_element(1, 5, 1, out)
    op.process_element(1, 7, 2, out)
    op.advance_watermark(9, out)
    assert out.records == [(1, 2, 9)]


def test_an_element_whose_windows_end_past_long_max_is_dropped_and_counted():
    """``TimeWindow(start, start + size)``: past Long.MAX_VALUE the end wraps (Java long), so
    ``maxTimestamp()`` is near Long.MIN_VALUE and every window is late at watermark 0, while
    the element itself is not late: ``WindowOperator`` drops it and counts it in
    ``numLateRecordsDropped``; nothing goes to the late side output."""
    op, out = tumbling(), RecordingWindowOutput()
    assert op.num_late_records_dropped == 0
    op.advance_watermark(0, out)
    op.process_element(1, 1, LONG_MAX - 1, out)
    op.process_element(2, 1, LONG_MAX - 3, out)
    assert op.num_late_records_dropped == 2 and out.records == [] and out.late == []


def test_a_window_past_long_max_fires_at_its_wrapped_max_timestamp():
    """At watermark Long.MIN_VALUE the same window is not late: its timer is at the wrapped
    ``maxTimestamp()`` (Long.MIN_VALUE + 1), where it fires."""
    op, out = tumbling(), RecordingWindowOutput()
    op.process_element(1, 1, LONG_MAX - 1, out)
    op.advance_watermark(LONG_MIN + 1, out)
    assert out.records == [(1, 1, LONG_MIN + 1)]


def test_an_element_records_every_sliding_window_it_skipped_as_late():
    """size 15, slide 5, watermark 14: the element at 7 belongs to [5,20), [0,15) and [-5,10);
    the last two are late (``isWindowLate``) and skipped, each noted with its max timestamp."""
    op = WindowOperator(SlidingEventTimeWindows(15, 5), "sum", 0, KG)
    out = RecordingWindowOutput()
    op.advance_watermark(14, out)
    op.process_element(3, 4, 7, out)
    assert out.skipped == [(3, 4, 7, 14), (3, 4, 7, 9)] and out.late == [] and op.num_late_records_dropped == 0
    op.advance_watermark(19, out)
    assert out.records == [(3, 4, 19)]


def test_a_snapshot_is_canonical_whatever_the_order_of_the_elements():
    """Two operators that saw the same elements in another order have equal snapshots (keys of
    one key group, one window, timers included)."""
    a, b, out = tumbling(), tumbling(), RecordingWindowOutput()
    for key in (1, 5, 9):  # one key group (1)
        a.process_element(key, 1, 3, out)
    for key in (9, 5, 1):
        b.process_element(key, 1, 3, out)
    assert a.snapshot_state() == b.snapshot_state()
    w = TimeWindow(0, 10)
    assert a.snapshot_state()[1] == WindowKeyGroupState(contents=((1, w, 1), (5, w, 1), (9, w, 1)),
                                                        timers=((9, 1, w), (9, 5, w), (9, 9, w)))
    k1, k2 = KeyedAggregateOperator("sum", KG), KeyedAggregateOperator("sum", KG)
    for key in (1, 5, 9):
        k1.process_element(key, 10 - key, 3, out)
    for key in (9, 5, 1):
        k2.process_element(key, 10 - key, 3, out)
    assert k1.snapshot_state() == k2.snapshot_state()
    assert k1.snapshot_state()[1].values == ((1, 9), (5, 5), (9, 1))


def test_watermarks_are_not_state_and_key_groups_come_from_the_key():
    """A restored operator starts at Long.MIN_VALUE again (the watermark is not checkpointed);
    the keyed aggregate only records the watermark; both place a key in its key group."""
    op, out = tumbling(), RecordingWindowOutput()
    assert op.key_group(6) == 2 and op.key_group(6) == 2
    op.process_element(1, 1, 3, out)
    op.advance_watermark(5, out)
    snap = op.snapshot_state()
    op.restore_state(snap)
    assert op.current_watermark == LONG_MIN
    k = KeyedAggregateOperator("count", KG)
    assert k.current_watermark == LONG_MIN and k.key_group(6) == 2 and k.key_group(6) == 2
    k.advance_watermark(5, out)
    assert k.current_watermark == 5
    k.restore_state(k.snapshot_state())
    assert k.current_watermark == LONG_MIN


def test_sliding_windows_stop_where_javas_loop_would_wrap_around():
    """Near Long.MIN_VALUE ``start - slide`` wraps to a huge start; Flink's loop would go on
    through the whole long range. The model stops there, with the windows found so far."""
    assert SlidingEventTimeWindows(10, 10).assign_starts(LONG_MIN + 12) == (LONG_MIN + 8,)


def test_a_restored_key_group_keeps_every_timer():
    """Three keys of one key group, one timer each: all three fire after a restore."""
    a, out = tumbling(), RecordingWindowOutput()
    for key in (1, 5, 9):
        a.process_element(key, 1, 3, out)
    b = tumbling()
    b.restore_state(a.snapshot_state())
    b.advance_watermark(9, out)
    assert out.records == [(1, 1, 9), (5, 1, 9), (9, 1, 9)]


def test_an_element_is_late_at_the_boundary_and_when_its_lateness_overflows():
    """``isElementLate``: ``timestamp + allowedLateness <= currentWatermark`` in Java long
    arithmetic -- late exactly at equality, and late when the sum overflows (it wraps negative)."""
    op, out = tumbling(lateness=5), RecordingWindowOutput()
    op.advance_watermark(24, out)
    op.process_element(1, 1, 19, out)          # [10,20): cleanup 24 <= 24; 19 + 5 <= 24: late
    assert out.late == [(1, 1, 19)] and op.num_late_records_dropped == 0
    op2, out2 = tumbling(lateness=5), RecordingWindowOutput()
    op2.advance_watermark(0, out2)
    op2.process_element(1, 1, LONG_MAX - 1, out2)  # its window wraps (late); ts + 5 wraps: late too
    assert out2.late == [(1, 1, LONG_MAX - 1)] and op2.num_late_records_dropped == 0


def test_a_window_ending_at_long_max_is_cleaned_up_at_long_max():
    """A window whose max timestamp is Long.MAX_VALUE has no cleanup timer (its cleanup time is
    Long.MAX_VALUE, ``registerCleanupTimer`` skips it), yet at watermark Long.MAX_VALUE its
    timer both fires it and, being its cleanup time, clears it."""
    op = WindowOperator(TumblingEventTimeWindows(10, 8), "count", 1, KG)
    out = RecordingWindowOutput()
    op.process_element(1, 1, LONG_MAX - 3, out)
    assert op.snapshot_state()[1].timers == ((LONG_MAX, 1, TimeWindow(LONG_MAX - 9, LONG_MIN)),)
    op.advance_watermark(LONG_MAX, out)
    assert out.records == [(1, 1, LONG_MAX)] and op.key_groups() == ()
