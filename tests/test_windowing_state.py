"""model.windowing call by call: the assigners', outputs' and operators' fields and tables
asserted right after each call, as ``WindowOperator`` (its window state and its
``InternalTimerServiceImpl``'s timers per key group) and ``StreamGroupedReduceOperator`` leave
them -- before a later call could trip over a wrong value."""

from __future__ import annotations

from model import windowing
from model.windowing import (
    LONG_MAX,
    LONG_MIN,
    KeyedAggregateKeyGroupState,
    KeyedAggregateOperator,
    RecordingWindowOutput,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
    WindowKeyGroupState,
    WindowOperator,
)

def test_a_time_window_and_the_snapshot_records():
    """Cheap and first in the file: a mutant that stops the module importing fails here first."""
    assert TimeWindow(0, 10).max_timestamp() == 9
    assert WindowKeyGroupState() == WindowKeyGroupState((), ()) and KeyedAggregateKeyGroupState().values == ()


def KG(key):
    """A stand-in key-group function: an int key's group is key % 4, anything else's -1."""
    return key % 4 if isinstance(key, int) else -1


def _tables(op: WindowOperator) -> tuple:
    return op._key_info, op._contents, op._timers, sorted(op._heap) if isinstance(op._heap, list) else op._heap


class _AskedTumbling(TumblingEventTimeWindows):
    """Tumbling windows recording the timestamps the operator asks them to assign."""

    __slots__ = ("asked",)

    def __init__(self, size):
        super().__init__(size)
        self.asked = []

    def assign_starts(self, timestamp):
        self.asked.append(timestamp)
        return super().assign_starts(timestamp) if timestamp is not None else ()


def test_the_assigners_fields():
    legacy = TumblingEventTimeWindows(10, 3, legacy_window_start=True)  # no fast path: built whatever the bounds
    assert (legacy.size, legacy.offset, legacy._offset, legacy._legacy, legacy._fast) == (10, 3, 3, True, False)
    t = TumblingEventTimeWindows(10, -3)
    assert (t.size, t.offset, t._offset, t._legacy, t._fast) == (10, -3, -3, False, True)
    s = SlidingEventTimeWindows(10, 5, 2)
    assert (s.size, s.slide, s.offset, s._legacy, s._fast) == (10, 5, 2, False, True)
    ls = SlidingEventTimeWindows(10, 5, legacy_window_start=True)
    assert (ls.size, ls.slide, ls.offset, ls._legacy, ls._fast) == (10, 5, 0, True, False)
    assert t.assign_windows(7) == (TimeWindow(7, 17),) and s.assign_windows(7) == (TimeWindow(7, 17), TimeWindow(2, 12))


def test_a_new_recording_output_holds_nothing_and_records_each_call():
    out = RecordingWindowOutput()
    assert (out.records, out.late, out.skipped) == ([], [], [])
    assert out.collect(1, 2, 3) is None and out.collect_late(4, 5, 6) is None and out.skip_window(7, 8, 9, 10) is None
    assert (out.records, out.late, out.skipped) == ([(1, 2, 3)], [(4, 5, 6)], [(7, 8, 9, 10)])


def test_a_new_window_operator_holds_its_settings_and_no_state():
    assigner = TumblingEventTimeWindows(10)
    op = WindowOperator(assigner, "sum", 5, KG)
    assert (op.assigner, op.aggregate, op.allowed_lateness, op.key_group_of) == (assigner, "sum", 5, KG)
    assert (op.current_watermark, op.num_late_records_dropped, op._size, op._is_count) == (LONG_MIN, 0, 10, False)
    assert not hasattr(op, "_assign")  # the assigner is asked through op.assigner: held once
    assert _tables(op) == ({}, {}, {}, [])
    assert WindowOperator(assigner, "count", 0, KG)._is_count is True
    assert op.key_groups() == () and op.snapshot_state() == {}


def test_a_key_is_looked_up_once_and_its_group_remembered():
    op = WindowOperator(TumblingEventTimeWindows(10), "sum", 5, KG)
    assert op._info(6) == (2, ("int", 6)) and op._key_info == {6: (2, ("int", 6))}
    assert op.key_group(5) == 1 and op._key_info == {6: (2, ("int", 6)), 5: (1, ("int", 5))}
    assert op._info(6) == (2, ("int", 6)) and len(op._key_info) == 2


def test_process_element_asks_the_assigner_for_the_elements_timestamp():
    assigner = _AskedTumbling(10)
    op = WindowOperator(assigner, "sum", 0, KG)
    op.process_element(6, 3, 12, RecordingWindowOutput())
    assert assigner.asked == [12] and op._contents == {2: {(6, 10): 3}}


def test_process_element_adds_the_contents_and_both_timers_of_each_window():
    op = WindowOperator(TumblingEventTimeWindows(10), "sum", 5, KG)
    out = RecordingWindowOutput()
    assert op.process_element(6, 3, 12, out) is None
    assert op._key_info == {6: (2, ("int", 6))}
    assert op._contents == {2: {(6, 10): 3}}
    assert op._timers == {2: {(19, 6, 10), (24, 6, 10)}}  # the window's end - 1, and + lateness (cleanup)
    assert sorted(op._heap) == [(19, 2, ("int", 6), 10, 6), (24, 2, ("int", 6), 10, 6)]
    op.process_element(6, 4, 15, out)  # the same window: its aggregate only
    assert op._contents == {2: {(6, 10): 7}} and len(op._heap) == 2
    op.process_element(1, 1, 3, out)
    assert op._contents == {2: {(6, 10): 7}, 1: {(1, 0): 1}}
    assert op._timers[1] == {(9, 1, 0), (14, 1, 0)} and len(op._heap) == 4
    assert op.key_group(1) == 1 and op.key_groups() == (1, 2)
    assert (out.records, out.late, out.skipped, op.num_late_records_dropped) == ([], [], [], 0)


def test_advance_watermark_fires_then_cleans_up_each_window_and_forgets_empty_key_groups():
    op = WindowOperator(TumblingEventTimeWindows(10), "count", 5, KG)
    out = RecordingWindowOutput()
    op.process_element(6, "x", 12, out)
    op.process_element(1, "y", 3, out)
    assert op.advance_watermark(5, out) is None
    assert op.current_watermark == 5 and out.records == [] and len(op._heap) == 4
    op.advance_watermark(9, out)  # window [0, 10) of key 1 fires, its cleanup timer stays
    assert out.records == [(1, 1, 9)]
    assert op._contents == {2: {(6, 10): 1}, 1: {(1, 0): 1}}
    assert op._timers == {2: {(19, 6, 10), (24, 6, 10)}, 1: {(14, 1, 0)}}
    assert sorted(op._heap) == [(14, 1, ("int", 1), 0, 1), (19, 2, ("int", 6), 10, 6), (24, 2, ("int", 6), 10, 6)]
    op.advance_watermark(14, out)  # its cleanup: contents and timers of key group 1 gone
    assert op._contents == {2: {(6, 10): 1}} and op._timers == {2: {(19, 6, 10), (24, 6, 10)}}
    assert len(op._heap) == 2 and op.key_groups() == (2,)
    # another element of the open window counts in it
    op.process_element(6, "z", 11, out)
    assert op._contents == {2: {(6, 10): 2}} and len(op._heap) == 2
    op.advance_watermark(21, out)  # fired, not yet cleaned up
    assert out.records == [(1, 1, 9), (6, 2, 19)] and op._timers == {2: {(24, 6, 10)}}
    # behind the watermark by less than the lateness: counted, and the window fires again at once
    op.process_element(6, "w", 13, out)
    assert out.records[-1] == (6, 3, 19) and op._contents == {2: {(6, 10): 3}} and op._timers == {2: {(24, 6, 10)}}
    op.advance_watermark(30, out)
    assert out.records == [(1, 1, 9), (6, 2, 19), (6, 3, 19)]
    assert _tables(op)[1:] == ({}, {}, []) and op.current_watermark == 30
    # behind the watermark by more than the lateness: to the late side output, no state
    op.process_element(6, "late", 3, out)
    assert op.num_late_records_dropped == 0 and _tables(op)[1:] == ({}, {}, [])
    assert out.late == [(6, "late", 3)] and out.skipped == []


def test_a_sliding_element_skipping_a_late_window_is_noted_and_counted_in_the_others():
    op = WindowOperator(SlidingEventTimeWindows(10, 5), "count", 0, KG)
    out = RecordingWindowOutput()
    op.advance_watermark(9, out)
    op.process_element(4, "v", 12, out)  # windows [10, 20) and [5, 15); [5, 15) ends at 14 > 9
    assert op._contents == {0: {(4, 10): 1, (4, 5): 1}} and out.skipped == []
    op.advance_watermark(16, out)
    op.process_element(4, "w", 17, out)  # windows [15, 25) and [10, 20): both open
    assert op._contents[0] == {(4, 10): 2, (4, 15): 1}
    op.advance_watermark(22, out)
    op.process_element(4, "u", 21, out)  # [20, 30) open; [15, 25) open
    op.advance_watermark(26, out)
    op.process_element(4, "t", 26, out)  # [25, 35) open, [20, 30) open
    op.process_element(8, "s", 24, out)  # [20, 30) open, [15, 25) late: skipped and noted
    assert out.skipped == [(8, "s", 24, 24)] and op._contents[0][(8, 20)] == 1 and (8, 15) not in op._contents[0]


def test_restore_state_replaces_every_table_and_the_watermark():
    op = WindowOperator(TumblingEventTimeWindows(10), "sum", 0, KG)
    out = RecordingWindowOutput()
    op.process_element(5, 2, 3, out)
    assert op._heap == [(9, 1, ("int", 5), 0, 5)]  # no lateness: the cleanup timer is the firing one
    op.advance_watermark(1, out)
    state = {3: WindowKeyGroupState(contents=((7, TimeWindow(20, 30), 4),), timers=((29, 7, TimeWindow(20, 30)),))}
    assert op.restore_state(state) is None
    assert op.current_watermark == LONG_MIN
    assert op._key_info == {} and op._contents == {3: {(7, 20): 4}} and op._timers == {3: {(29, 7, 20)}}
    assert op._heap == [(29, 3, ("int", 7), 20, 7)]
    assert op.snapshot_state() == state
    op.restore_state({2: WindowKeyGroupState(timers=((9, 6, TimeWindow(0, 10)),))})
    assert op._contents == {} and op._timers == {2: {(9, 6, 0)}} and op.key_groups() == (2,)


def test_the_keyed_aggregate_operator_call_by_call():
    op = KeyedAggregateOperator("sum", KG)
    assert (op.aggregate, op.key_group_of, op.current_watermark, op._is_count) == ("sum", KG, LONG_MIN, False)
    assert (op._kg_cache, op._values) == ({}, {})
    assert KeyedAggregateOperator("count", KG)._is_count is True
    out = RecordingWindowOutput()
    op.process_element(5, 3, 100, out)
    assert (op._kg_cache, op._values, out.records) == ({5: 1}, {1: {5: 3}}, [(5, 3, 100)])
    op.process_element(9, 4, 101, out)
    op.process_element(2, 1, 102, out)
    assert op._values == {1: {5: 3, 9: 4}, 2: {2: 1}} and op._kg_cache == {5: 1, 9: 1, 2: 2}
    assert op.key_group(9) == 1 and op.key_groups() == (1, 2)
    assert op.advance_watermark(50, out) is None and op.current_watermark == 50
    snap = op.snapshot_state()
    assert snap == {1: KeyedAggregateKeyGroupState(((5, 3), (9, 4))), 2: KeyedAggregateKeyGroupState(((2, 1),))}
    op.restore_state({3: KeyedAggregateKeyGroupState(((7, 8),)), 0: KeyedAggregateKeyGroupState()})
    assert (op._values, op._kg_cache, op.current_watermark) == ({3: {7: 8}}, {}, LONG_MIN)


def test_the_vocabulary_and_the_fast_paths_bound():
    """The aggregates a job spec names; the fast path's bound: a sum of three values below it
    (a timestamp, an offset, a size) stays in the long range, so Python's exact arithmetic
    equals Java's there."""
    assert windowing.AGGREGATES == ("count", "sum")
    assert isinstance(windowing._SAFE, int) and 0 < windowing._SAFE and 3 * windowing._SAFE <= LONG_MAX


def test_the_assigners_ask_get_window_start_with_offset_for_the_timestamp_offset_and_size(monkeypatch):
    """Off the fast path, ``assignWindows`` calls ``TimeWindow.getWindowStartWithOffset(timestamp,
    offset, size)`` (a sliding assigner with its slide), and ``assign_windows`` the starts of the
    same timestamp: each call's arguments, recorded."""
    calls = []

    def recording(name, real):
        def start(ts, offset, size):
            calls.append((name, ts, offset, size))
            return real(ts, offset, size) if None not in (ts, offset, size) else 0
        return start

    monkeypatch.setattr(windowing, "get_window_start_with_offset",
                        recording("current", windowing.get_window_start_with_offset))
    monkeypatch.setattr(windowing, "legacy_get_window_start_with_offset",
                        recording("legacy", windowing.legacy_get_window_start_with_offset))
    big = 2**62  # beyond the fast path's bound
    TumblingEventTimeWindows(10, 3).assign_starts(big)
    assert calls == [("current", big, 3, 10)]
    TumblingEventTimeWindows(10, 3, legacy_window_start=True).assign_starts(5)
    assert calls[1:] == [("legacy", 5, 3, 10)]
    SlidingEventTimeWindows(10, 5, 2).assign_starts(big)
    assert calls[2:] == [("current", big, 2, 5)]
    SlidingEventTimeWindows(10, 5, 2, legacy_window_start=True).assign_starts(7)
    assert calls[3:] == [("legacy", 7, 2, 5)]
    asked = []
    for cls in (TumblingEventTimeWindows, SlidingEventTimeWindows):
        real = cls.assign_starts
        monkeypatch.setattr(cls, "assign_starts", lambda self, ts, real=real: asked.append(ts) or (
            real(self, ts) if ts is not None else ()))
    TumblingEventTimeWindows(10).assign_windows(17)
    SlidingEventTimeWindows(10, 5).assign_windows(18)
    assert asked == [17, 18]


def test_a_restore_without_timers_or_without_state_leaves_empty_tables():
    op = WindowOperator(TumblingEventTimeWindows(10), "sum", 0, KG)
    op.process_element(5, 2, 3, RecordingWindowOutput())
    op.restore_state({1: WindowKeyGroupState(contents=((5, TimeWindow(0, 10), 2),))})
    assert _tables(op) == ({}, {1: {(5, 0): 2}}, {}, [])
    op.restore_state({})
    assert _tables(op) == ({}, {}, {}, []) and op.key_groups() == ()
    agg = KeyedAggregateOperator("count", KG)
    agg.process_element(5, "x", 1, RecordingWindowOutput())
    agg.restore_state({})
    assert agg._values == {} and agg._kg_cache == {}
    assert agg.key_groups() == ()


def test_restored_timers_without_contents_snapshot_and_clean_up_as_they_are():
    """A restored key group may hold a window's timers without its contents (a window whose
    contents another window's cleanup left alone): its snapshot holds the timers and no
    contents, and the cleanup timer of a window without contents deletes nothing else."""
    w0, w1 = TimeWindow(0, 10), TimeWindow(10, 20)
    op = WindowOperator(TumblingEventTimeWindows(10), "sum", 0, KG)
    only_timers = {2: WindowKeyGroupState(timers=((9, 6, w0),))}
    op.restore_state(only_timers)
    assert _tables(op) == ({}, {}, {2: {(9, 6, 0)}}, [(9, 2, ("int", 6), 0, 6)])  # no contents table at all
    assert op.snapshot_state() == only_timers
    mixed = {2: WindowKeyGroupState(contents=((6, w1, 5),), timers=((9, 6, w0), (19, 6, w1)))}
    op.restore_state(mixed)
    out = RecordingWindowOutput()
    op.advance_watermark(9, out)  # w0's timer: nothing to emit, nothing to delete
    assert out.records == [] and op._contents == {2: {(6, 10): 5}} and op._timers == {2: {(19, 6, 10)}}
    op.advance_watermark(19, out)
    assert out.records == [(6, 5, 19)] and _tables(op)[1:] == ({}, {}, [])


def test_a_key_group_with_keys_of_two_types_snapshots_in_a_canonical_order():
    agg = KeyedAggregateOperator("count", KG)  # every non-int key is in key group -1
    out = RecordingWindowOutput()
    for key in ("b", (1,), "a"):
        agg.process_element(key, None, 0, out)
    assert agg.snapshot_state() == {-1: KeyedAggregateKeyGroupState((("a", 1), ("b", 1), ((1,), 1)))}
