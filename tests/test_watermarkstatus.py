"""StatusWatermarkValve scenarios (model/watermarkstatus.py) and Hypothesis properties.

Every scenario is one input gate of a downstream subtask with its upstream channels::

    ch0 ──┐
    ch1 ──┼──► [StatusWatermarkValve] ──► output (watermarks, IDLE/ACTIVE)
    ch2 ──┘
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.errors import InvalidArgument
from model.watermarkstatus import (
    LONG_MIN,
    VALVE_VARIANTS,
    RecordingValveOutput,
    StatusWatermarkValve,
)


def make(n, **knobs):
    """A valve and the output it is fed with (an argument of each input call, as in Flink)."""
    return StatusWatermarkValve(n, **knobs), RecordingValveOutput()


def feed(valve, inputs, out):
    for inp in inputs:
        if inp[0] == "wm":
            valve.input_watermark(inp[2], inp[1], out)
        else:
            valve.input_watermark_status(inp[0] == "idle", inp[1], out)


def test_output_is_min_over_aligned_active_channels():
    """
    ch0: wm 5 ──┐
    ch1: wm 3 ──┴──► out: 3, then 5 once ch1 passes ch0 (min, not max)
    """
    v, out = make(2)
    v.input_watermark(5, 0, out)
    assert out.events == []  # ch1 still at Long.MIN_VALUE
    v.input_watermark(3, 1, out)
    assert out.watermarks == [3]
    v.input_watermark(7, 1, out)
    assert out.watermarks == [3, 5]
    assert v.last_output_watermark == 5


def test_output_strictly_increasing_non_increasing_channel_watermarks_ignored():
    """
    ch0: 4, 4, 2, 6 ──► out: 4, 6 (a repeated or lower watermark on a channel is dropped)
    """
    v, out = make(1)
    feed(v, [("wm", 0, 4), ("wm", 0, 4), ("wm", 0, 2), ("wm", 0, 6)], out)
    assert out.watermarks == [4, 6]
    assert v.channel_watermark(0) == 6


def test_idle_channel_is_excluded_and_its_watermarks_dropped():
    """
    ch0: 10 ─────────────┐
    ch1: 2, IDLE, 50 ────┴──► out: 2, then 10 when ch1 goes idle; ch1's 50 is dropped
    """
    v, out = make(2)
    feed(v, [("wm", 0, 10), ("wm", 1, 2)], out)
    assert out.watermarks == [2]
    v.input_watermark_status(True, 1, out)
    assert out.watermarks == [2, 10]
    v.input_watermark(50, 1, out)
    assert v.channel_watermark(1) == 2
    assert out.watermarks == [2, 10]
    assert v.channel_is_idle(1) and not v.channel_is_aligned(1)


def test_idle_channel_returning_below_output_stays_unaligned_until_it_catches_up():
    """
    ch0: 10, 20 ─────────────────┐
    ch1: 2, IDLE, ACTIVE, 5, 15 ─┴──► out: 2, 10, 15  (never back to 5)
    """
    v, out = make(2)
    feed(v, [("wm", 0, 10), ("wm", 1, 2), ("idle", 1)], out)
    assert out.watermarks == [2, 10]
    v.input_watermark_status(False, 1, out)
    assert not v.channel_is_aligned(1)          # 2 < 10: not aligned
    v.input_watermark(5, 1, out)
    assert not v.channel_is_aligned(1)          # 5 < 10: still not aligned
    v.input_watermark(20, 0, out)
    assert out.watermarks == [2, 10, 20]        # ch1 does not hold the output back
    v.input_watermark(15, 1, out)
    assert not v.channel_is_aligned(1)          # 15 < 20
    v.input_watermark(25, 1, out)
    assert v.channel_is_aligned(1)              # caught up: part of the min again
    v.input_watermark(30, 0, out)
    assert out.watermarks == [2, 10, 20, 25]
    assert out.watermarks == sorted(set(out.watermarks))


def test_returning_channel_at_or_above_output_is_aligned_immediately():
    """
    ch0: 10 ───────────────┐
    ch1: 12, IDLE, ACTIVE ─┴──► ch1 is aligned again at once (12 >= 10)
    """
    v, out = make(2)
    feed(v, [("wm", 0, 10), ("wm", 1, 12), ("idle", 1), ("active", 1)], out)
    assert v.channel_is_aligned(1)
    assert out.watermarks == [10]


def test_all_idle_flushes_the_max_then_idle_then_active_again():
    """
    ch0: 3, IDLE ──┐
    ch1: 8, IDLE ──┴──► out: 3, 8 (flush of the max), IDLE ; ch1 ACTIVE ──► ACTIVE
    """
    v, out = make(2)
    feed(v, [("wm", 0, 8), ("wm", 1, 3), ("idle", 0), ("idle", 1)], out)
    assert out.events == [("watermark", 3), ("watermark", 8), ("status", "IDLE")]
    assert v.is_idle
    v.input_watermark(9, 0, out)                      # dropped: the valve is idle
    v.input_watermark_status(False, 1, out)
    assert out.events[-1] == ("status", "ACTIVE")
    assert not v.is_idle
    v.input_watermark_status(False, 1, out)           # no status change, nothing emitted
    assert len(out.events) == 4


def test_window_fired_by_flush_when_last_channel_equals_output():
    """
    ch0: 3, IDLE ──┐   ch0 goes idle last; its 3 == output, so 2.3.0 flushes the max 8
    ch1: 8, IDLE ──┘
    """
    v, out = make(2)
    feed(v, [("wm", 0, 3), ("wm", 1, 8), ("idle", 1), ("idle", 0)], out)
    assert out.events == [("watermark", 3), ("watermark", 8), ("status", "IDLE")]


def _final_watermark(inputs, n, **knobs):
    v, out = make(n, **knobs)
    feed(v, inputs, out)
    return v.last_output_watermark


def test_flink_7728_variant_final_watermark_depends_on_idle_order():
    """
    ch0: 5 ──┐  both go idle; the order must not matter.
    ch1: 9 ──┘  Pre-FLINK-7728 (flush_on_all_idle=False): 5 or 9 depending on the order.
    """
    wms = [("wm", 0, 5), ("wm", 1, 9)]
    a = wms + [("idle", 0), ("idle", 1)]
    b = wms + [("idle", 1), ("idle", 0)]
    assert _final_watermark(a, 2) == _final_watermark(b, 2) == 9
    assert {_final_watermark(a, 2, flush_on_all_idle=False),
            _final_watermark(b, 2, flush_on_all_idle=False)} == {5, 9}


# the FLINK-40475 stall (found by spec/z3_valve.py; confirmed against the real 2.3.0 jar)
STALL = [("wm", 1, 3), ("idle", 0), ("wm", 2, 1), ("idle", 1), ("active", 0), ("idle", 2), ("active", 1)]


def test_flink_2_3_0_stalls_when_a_channel_realigns_as_the_only_aligned_one():
    """
    ch0: IDLE ........ ACTIVE (MIN, unaligned) ──┐
    ch1: 3, IDLE ............... ACTIVE (3) ─────┼──► out stays 1 in 2.3.0; the fix emits 3
    ch2: 1 ........ IDLE ────────────────────────┘
    """
    v, out = make(3)
    feed(v, STALL, out)
    assert out.watermarks == [1]
    assert v.channel_is_aligned(1) and v.channel_watermark(1) == 3
    v2, out2 = make(3, flink_40475=True)
    feed(v2, STALL, out2)
    assert out2.watermarks == [1, 3]


def test_flink_2_3_0_skips_the_flush_when_the_last_idle_channel_is_unaligned():
    """Continuing the stall: ch1, ch0 go idle; max is 3 but 2.3.0 ends at 1 (the fix: 3)."""
    trace = STALL + [("idle", 1), ("idle", 0)]
    assert _final_watermark(trace, 3) == 1
    assert _final_watermark(trace, 3, flink_40475=True) == 3


def test_pre_flink_7721_emits_long_max_without_aligned_channels():
    """
    ch0: IDLE ─────────────────┐  after ch2 goes idle only ch1 is active, and it is
    ch1: IDLE, ACTIVE (MIN) ───┤  unaligned (MIN < 0): pre-FLINK-7721 emits Long.MAX_VALUE
    ch2: 0, ........ IDLE ─────┘
    """
    trace = [("wm", 2, 0), ("idle", 0), ("idle", 1), ("active", 1), ("idle", 2)]
    assert _final_watermark(trace, 3) == 0
    assert _final_watermark(trace, 3, check_aligned_nonempty=False) == 2**63 - 1


def test_bad_channel_count_is_a_clear_error():
    with pytest.raises(InvalidArgument, match="num_channels"):
        StatusWatermarkValve(0)


def test_variants_table_names_real_knobs():
    for name, v in VALVE_VARIANTS.items():
        StatusWatermarkValve(2, **v["knobs"])
        assert v["expected"], name


# ---------------------------------------------------------------------------- Hypothesis

channels = st.integers(0, 3)
inputs = st.one_of(
    st.tuples(st.just("wm"), channels, st.integers(-20, 40)),
    st.tuples(st.sampled_from(["idle", "active"]), channels),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(inputs, max_size=40), st.sampled_from([{}, {"flink_40475": True}]))
def test_property_output_strictly_increasing_and_bounded(seq, knobs):
    v, out = make(4, **knobs)
    prev = LONG_MIN
    for inp in seq:
        before = len(out.events)
        feed(v, [inp], out)
        for kind, val in out.events[before:]:
            if kind == "watermark":
                assert val > prev
                prev = val
        last, vidle, wms, idle, aligned = v.state()
        assert last == prev
        for w, i, a in zip(wms, idle, aligned):
            if a:
                assert not i and w >= last       # aligned channels allow the output
            elif not i:
                assert w < last                   # active but unaligned only when behind
        assert last <= max(wms)
        assert vidle == all(idle)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(inputs, max_size=30))
def test_property_fix_final_watermark_independent_of_idle_order(seq):
    """With the FLINK-40475 fix: once all channels are idle, the output is the max (any order)."""
    v, out = make(4, flink_40475=True)
    feed(v, seq, out)
    for perm in itertools.permutations(range(4)):
        v2, out2 = make(4, flink_40475=True)
        feed(v2, seq, out2)
        for c in perm:
            v2.input_watermark_status(True, c, out2)
        assert v2.last_output_watermark == max(v2.channel_watermarks)


@pytest.mark.parametrize("knob", ["flush_on_all_idle", "flink_40475", "check_aligned_nonempty", "realign_below_output"])
def test_variant_knobs_must_be_booleans(knob):
    """A counterexample file whose valve knob is not true/false (e.g. an object) is refused with
    a one-line error instead of being read as truthy."""
    with pytest.raises(InvalidArgument, match=f"StatusWatermarkValve.{knob}: .* must be true or false"):
        StatusWatermarkValve(2, **{knob: {"wrong": 1}})


# ---------------------------------------------------------------------------- contracts

def test_a_channel_catching_up_exactly_to_the_output_is_aligned_again():
    """Flink realigns a channel once its watermark is at or above the output watermark
    (``watermarkMillis >= lastOutputWatermark``): from then on it holds the output back.

    ch0: 5, IDLE ....... ACTIVE (5, behind), 8 (= output: aligned) ──┐
    ch1: 5 ............ 8 ......................................... 20 ─┴──► 5, 8 (not 20)
    """
    v, out = make(2)
    feed(v, [("wm", 0, 5), ("wm", 1, 5), ("idle", 0), ("wm", 1, 8), ("active", 0)], out)
    assert out.watermarks == [5, 8] and not v.channel_is_aligned(0)
    feed(v, [("wm", 0, 8)], out)
    assert v.channel_is_aligned(0) is True
    feed(v, [("wm", 1, 20)], out)
    assert out.watermarks == [5, 8]


def test_status_and_flags_are_booleans():
    """``isIdle()`` and the per-channel flags are booleans, before and after idleness."""
    v, out = make(2)
    assert v.is_idle is False and v.channel_aligned == (True, True) and v.channel_idle == (False, False)
    feed(v, [("wm", 0, 1), ("idle", 0), ("idle", 1)], out)
    assert v.is_idle is True and v.channel_aligned == (False, False)
    feed(v, [("active", 1)], out)
    assert v.is_idle is False
    last, idle, wms, idles, aligned = v.state()
    assert all(type(x) is bool for x in (idle, *idles, *aligned)), v.state()
    assert out.events[-2:] == [("status", "IDLE"), ("status", "ACTIVE")]


@pytest.mark.parametrize("n", [0, -1, True, False, "2", 2.0, None])
def test_a_channel_count_that_is_not_a_positive_int_is_refused(n):
    with pytest.raises(InvalidArgument, match="num_channels"):
        StatusWatermarkValve(n)


def test_the_defaults_are_flink_2_3_0():
    """A valve built without knobs behaves as the table's flink-2.3.0 entry: the FLINK-40475
    stall, no Long.MAX_VALUE without aligned channels, the all-idle flush."""
    assert VALVE_VARIANTS["flink-2.3.0"]["knobs"] == {}
    assert _final_watermark(STALL, 3) == 1
    assert _final_watermark([("wm", 2, 0), ("idle", 0), ("idle", 1), ("active", 1), ("idle", 2)], 3) == 0
    v, out = make(2)
    feed(v, [("wm", 0, 5), ("wm", 1, 9), ("idle", 1), ("idle", 0)], out)
    assert v.last_output_watermark == 9
    assert (v.flush_on_all_idle, v.flink_40475, v.check_aligned_nonempty, v.realign_below_output) == \
        (True, False, True, False)


def test_each_named_valve_variant_shows_the_behaviour_the_table_states():
    """The table's knobs are the ones that produce its verdicts, on the traces above."""
    def final(name, trace, n):
        return _final_watermark(trace, n, **VALVE_VARIANTS[name]["knobs"])

    assert final("flink-2.3.0", STALL, 3) == 1                      # progress violated (FLINK-40475)
    assert final("flink-40475-fix", STALL, 3) == 3                  # progress holds
    wms = [("wm", 0, 5), ("wm", 1, 9)]
    orders = (wms + [("idle", 0), ("idle", 1)], wms + [("idle", 1), ("idle", 0)])
    assert {final("pre-flink-7728", t, 2) for t in orders} == {5, 9}
    assert {final("flink-2.3.0", t, 2) for t in orders} == {9}
    no_aligned = [("wm", 2, 0), ("idle", 0), ("idle", 1), ("active", 1), ("idle", 2)]
    assert final("pre-flink-7721", no_aligned, 3) == 2**63 - 1
    # realign-below-output: a channel returning below the output is aligned at once
    v, out = make(2, **VALVE_VARIANTS["mutant-realign-below-output"]["knobs"])
    feed(v, [("wm", 0, 5), ("wm", 1, 5), ("idle", 0), ("wm", 1, 8), ("active", 0)], out)
    assert v.channel_is_aligned(0) and v.channel_watermark(0) < v.last_output_watermark


def test_a_watermark_not_above_the_channels_changes_nothing():
    """Flink ignores a watermark that is not above its channel's (``watermark > channel's``):
    repeating ch1's 3 after the FLINK-40475 stall does not release it."""
    v, out = make(3)
    feed(v, STALL + [("wm", 1, 3), ("wm", 1, 2)], out)
    assert out.watermarks == [1]
