"""model.watermarkstatus call by call: the valve's whole state (every field: the output
watermark, the valve's status, each channel's watermark, status and alignment, the knobs) and
what it emitted, asserted right after each call, as Flink's ``StatusWatermarkValve`` leaves them
(``StatusWatermarkValveTest`` checks the output after each input the same way)."""

from __future__ import annotations

import pytest

from model.errors import InvalidArgument
from model.eventtime import LONG_MAX
from model.watermarkstatus import __all__ as PUBLIC
from model.watermarkstatus import LONG_MIN, VALVE_VARIANTS, RecordingValveOutput, StatusWatermarkValve

KNOBS = ("flush_on_all_idle", "flink_40475", "check_aligned_nonempty", "realign_below_output")


def fields(v: StatusWatermarkValve) -> tuple:
    """Every slot of the valve, read directly (a list copied, anything else as it is: a table the
    valve lost is compared, not tripped over here)."""
    return (v.num_channels, tuple(getattr(v, k) for k in KNOBS), *(x[:] if isinstance(x, list) else x
                                                                   for x in (v._wm, v._active, v._aligned)),
            v._last, v._idle)


def step(v, out, call, *args):
    """Make one call, return what it emitted and the valve's fields after it."""
    out.clear()
    assert call(*args, out) is None
    return list(out.events), fields(v)


DEFAULT = (True, False, True, False)


def test_a_new_valve_every_channel_at_long_min_active_and_aligned():
    v = StatusWatermarkValve(3)
    assert fields(v) == (3, DEFAULT, [LONG_MIN] * 3, [True] * 3, [True] * 3, LONG_MIN, False)
    assert v.state() == (LONG_MIN, False, (LONG_MIN,) * 3, (False,) * 3, (True,) * 3)
    assert (v.last_output_watermark, v.is_idle) == (LONG_MIN, False)
    assert (v.channel_watermarks, v.channel_idle, v.channel_aligned) == ((LONG_MIN,) * 3, (False,) * 3, (True,) * 3)
    knobbed = StatusWatermarkValve(1, flush_on_all_idle=False, flink_40475=True, check_aligned_nonempty=False,
                                   realign_below_output=True)
    assert fields(knobbed) == (1, (False, True, False, True), [LONG_MIN], [True], [True], LONG_MIN, False)


def test_watermarks_call_by_call():
    v, out = StatusWatermarkValve(2), RecordingValveOutput()
    assert step(v, out, v.input_watermark, 5, 0) == ([], (2, DEFAULT, [5, LONG_MIN], [True, True], [True, True],
                                                          LONG_MIN, False))
    assert step(v, out, v.input_watermark, 3, 1) == ([("watermark", 3)], (2, DEFAULT, [5, 3], [True, True],
                                                                          [True, True], 3, False))
    # not above the channel's own watermark: nothing changes
    assert step(v, out, v.input_watermark, 3, 1) == ([], (2, DEFAULT, [5, 3], [True, True], [True, True], 3, False))
    assert step(v, out, v.input_watermark, 2, 0) == ([], (2, DEFAULT, [5, 3], [True, True], [True, True], 3, False))
    assert step(v, out, v.input_watermark, 9, 1) == ([("watermark", 5)], (2, DEFAULT, [5, 9], [True, True],
                                                                          [True, True], 5, False))
    assert step(v, out, v.input_watermark, 7, 0) == ([("watermark", 7)], (2, DEFAULT, [7, 9], [True, True],
                                                                          [True, True], 7, False))


def test_idle_and_active_call_by_call_in_flink_2_3_0():
    v, out = StatusWatermarkValve(3), RecordingValveOutput()
    for ch, wm in ((0, 4), (1, 6), (2, 8)):
        v.input_watermark(wm, ch, out)
    assert fields(v)[2:] == ([4, 6, 8], [True] * 3, [True] * 3, 4, False)
    # the channel at the output goes idle: the min over the others
    assert step(v, out, v.input_watermark_status, True, 0) == (
        [("watermark", 6)], (3, DEFAULT, [4, 6, 8], [False, True, True], [False, True, True], 6, False))
    # idle again: nothing
    assert step(v, out, v.input_watermark_status, True, 0)[0] == []
    # a watermark on an idle channel is dropped
    assert step(v, out, v.input_watermark, 10, 0) == (
        [], (3, DEFAULT, [4, 6, 8], [False, True, True], [False, True, True], 6, False))
    # a channel above the output goes idle: no new min
    assert step(v, out, v.input_watermark_status, True, 2) == (
        [], (3, DEFAULT, [4, 6, 8], [False, True, False], [False, True, False], 6, False))
    # the last active channel, at the output, goes idle: the max flushed, then IDLE
    assert step(v, out, v.input_watermark_status, True, 1) == (
        [("watermark", 8), ("status", "IDLE")],
        (3, DEFAULT, [4, 6, 8], [False, False, False], [False, False, False], 8, True))
    # a watermark while the valve is idle is dropped
    assert step(v, out, v.input_watermark, 20, 1)[0] == []
    # active again, below the output: not aligned; the valve ACTIVE
    assert step(v, out, v.input_watermark_status, False, 0) == (
        [("status", "ACTIVE")], (3, DEFAULT, [4, 6, 8], [True, False, False], [False, False, False], 8, False))
    # active again when already active: nothing
    assert step(v, out, v.input_watermark_status, False, 0)[0] == []
    # at the output: aligned, no min re-derived in 2.3.0
    assert step(v, out, v.input_watermark_status, False, 2) == (
        [], (3, DEFAULT, [4, 6, 8], [True, False, True], [False, False, True], 8, False))
    # catching up to the output re-aligns the channel (equal counts)
    assert step(v, out, v.input_watermark, 8, 0) == (
        [], (3, DEFAULT, [8, 6, 8], [True, False, True], [True, False, True], 8, False))
    assert step(v, out, v.input_watermark, 12, 0) == (
        [], (3, DEFAULT, [12, 6, 8], [True, False, True], [True, False, True], 8, False))
    assert step(v, out, v.input_watermark, 11, 2) == (
        [("watermark", 11)], (3, DEFAULT, [12, 6, 11], [True, False, True], [True, False, True], 11, False))


def test_a_channel_below_the_output_catches_up_only_at_or_above_it():
    v, out = StatusWatermarkValve(2), RecordingValveOutput()
    v.input_watermark(5, 0, out)
    v.input_watermark(5, 1, out)
    v.input_watermark_status(True, 0, out)
    v.input_watermark(9, 1, out)
    assert fields(v)[2:] == ([5, 9], [False, True], [False, True], 9, False)
    assert step(v, out, v.input_watermark_status, False, 0)[1][2:] == ([5, 9], [True, True], [False, True], 9, False)
    assert step(v, out, v.input_watermark, 8, 0) == ([], (2, DEFAULT, [8, 9], [True, True], [False, True], 9, False))
    assert step(v, out, v.input_watermark, 10, 0) == ([], (2, DEFAULT, [10, 9], [True, True], [True, True], 9, False))


def test_the_all_idle_flush_only_when_the_last_channel_is_at_the_output_in_2_3_0():
    v, out = StatusWatermarkValve(2), RecordingValveOutput()
    v.input_watermark(3, 0, out)
    v.input_watermark(7, 1, out)
    v.input_watermark_status(True, 0, out)  # output 7; channel 1 at it
    v.input_watermark_status(False, 0, out)  # channel 0 back below: unaligned
    v.input_watermark_status(True, 1, out)
    assert fields(v)[2:] == ([3, 7], [True, False], [False, False], 7, False)
    # channel 0, the last active one, is below the output: no flush, IDLE
    assert step(v, out, v.input_watermark_status, True, 0) == (
        [("status", "IDLE")], (2, DEFAULT, [3, 7], [False, False], [False, False], 7, True))


def test_the_fix_of_flink_40475_flushes_always_and_re_derives_the_min():
    knobs = (True, True, True, False)
    v, out = StatusWatermarkValve(2, flink_40475=True), RecordingValveOutput()
    v.input_watermark(3, 0, out)
    assert step(v, out, v.input_watermark_status, True, 1) == (
        [("watermark", 3)], (2, knobs, [3, LONG_MIN], [True, False], [True, False], 3, False))
    # channel 1 back at LONG_MIN: unaligned, the min re-derived over channel 0 alone: unchanged
    assert step(v, out, v.input_watermark_status, False, 1) == (
        [], (2, knobs, [3, LONG_MIN], [True, True], [True, False], 3, False))
    v.input_watermark(9, 1, out)
    assert fields(v)[2:] == ([3, 9], [True, True], [True, True], 3, False)
    v.input_watermark_status(True, 1, out)
    # the last channel goes idle: the max flushed though 3 is the output (as in 2.3.0) ...
    assert step(v, out, v.input_watermark_status, True, 0) == (
        [("watermark", 9), ("status", "IDLE")], (2, knobs, [3, 9], [False, False], [False, False], 9, True))
    # ... and back ACTIVE at the output: ACTIVE, then the min re-derived (nothing above 9)
    assert step(v, out, v.input_watermark_status, False, 1) == (
        [("status", "ACTIVE")], (2, knobs, [3, 9], [False, True], [False, True], 9, False))
    w, out2 = StatusWatermarkValve(2, flink_40475=True), RecordingValveOutput()
    w.input_watermark(5, 0, out2)
    w.input_watermark(8, 1, out2)
    w.input_watermark_status(True, 0, out2)
    w.input_watermark_status(True, 1, out2)
    w.input_watermark(20, 1, out2)
    # the flush with the last idle channel below the output in the fix: the max of 8 is not above
    assert fields(w)[2:] == ([5, 8], [False, False], [False, False], 8, True)
    assert step(w, out2, w.input_watermark_status, False, 1) == (
        [("status", "ACTIVE")], (2, knobs, [5, 8], [False, True], [False, True], 8, False))
    w.input_watermark(12, 1, out2)
    assert fields(w)[5] == 12 and out2.watermarks == [12]


def test_the_re_derived_min_after_a_channel_returns_in_the_fix():
    knobs = (True, True, True, False)
    v, out = StatusWatermarkValve(2, flink_40475=True), RecordingValveOutput()
    v.input_watermark(4, 0, out)
    v.input_watermark(9, 1, out)
    v.input_watermark_status(True, 0, out)  # output 9
    v.input_watermark_status(True, 1, out)  # all idle: 9 is the max, IDLE
    v.input_watermark_status(False, 0, out)  # below: unaligned; no aligned channel
    v.input_watermark(12, 0, out)
    assert fields(v) == (2, knobs, [12, 9], [True, False], [True, False], 12, False)
    # channel 1 returns below the output: unaligned, min over channel 0 (12, not above)
    assert step(v, out, v.input_watermark_status, False, 1) == (
        [], (2, knobs, [12, 9], [True, True], [True, False], 12, False))


def test_the_variants_before_flink_7728_and_7721_and_the_realigning_mutant():
    v, out = StatusWatermarkValve(2, flush_on_all_idle=False), RecordingValveOutput()
    v.input_watermark(3, 0, out)
    v.input_watermark(3, 1, out)
    v.input_watermark(7, 1, out)
    v.input_watermark_status(True, 1, out)
    assert step(v, out, v.input_watermark_status, True, 0) == (
        [("status", "IDLE")], (2, (False, False, True, False), [3, 7], [False, False], [False, False], 3, True))
    u, out = StatusWatermarkValve(2, check_aligned_nonempty=False), RecordingValveOutput()
    u.input_watermark(5, 0, out)
    u.input_watermark(5, 1, out)
    u.input_watermark_status(True, 0, out)
    u.input_watermark(9, 1, out)
    u.input_watermark_status(False, 0, out)  # 5 < 9: unaligned
    assert step(u, out, u.input_watermark_status, True, 1) == (
        [("watermark", LONG_MAX)], (2, (True, False, False, False), [5, 9], [True, False], [False, False],
                                    LONG_MAX, False))
    r, out = StatusWatermarkValve(2, realign_below_output=True), RecordingValveOutput()
    r.input_watermark(5, 0, out)
    r.input_watermark(5, 1, out)
    r.input_watermark_status(True, 0, out)
    r.input_watermark(9, 1, out)
    assert step(r, out, r.input_watermark_status, False, 0) == (
        [], (2, (True, False, True, True), [5, 9], [True, True], [True, True], 9, False))


def test_the_new_min_and_the_max_flush_alone():
    v, out = StatusWatermarkValve(3), RecordingValveOutput()
    v._wm[:] = [6, 2, 9]
    v._aligned[:] = [True, False, True]
    assert step(v, out, v._new_min) == ([("watermark", 6)], (3, DEFAULT, [6, 2, 9], [True] * 3,
                                                             [True, False, True], 6, False))
    assert step(v, out, v._new_min)[0] == []
    v._aligned[:] = [False] * 3
    assert step(v, out, v._new_min) == ([], (3, DEFAULT, [6, 2, 9], [True] * 3, [False] * 3, 6, False))
    assert step(v, out, v._flush_max) == ([("watermark", 9)], (3, DEFAULT, [6, 2, 9], [True] * 3, [False] * 3, 9,
                                                               False))
    assert step(v, out, v._flush_max)[0] == []
    # the minimum of equal aligned watermarks and of the first channel being the smallest
    w, out = StatusWatermarkValve(3), RecordingValveOutput()
    w._wm[:] = [1, 4, 1]
    assert step(w, out, w._new_min)[0] == [("watermark", 1)]


def test_the_inspection_reads_the_fields():
    v, out = StatusWatermarkValve(3), RecordingValveOutput()
    v.input_watermark(4, 1, out)
    v.input_watermark_status(True, 2, out)
    v.input_watermark(2, 0, out)
    assert fields(v)[2:] == ([2, 4, LONG_MIN], [True, True, False], [True, True, False], 2, False)
    assert [v.channel_watermark(c) for c in range(3)] == [2, 4, LONG_MIN]
    assert [v.channel_is_idle(c) for c in range(3)] == [False, False, True]
    assert [v.channel_is_aligned(c) for c in range(3)] == [True, True, False]
    assert (v.channel_watermarks, v.channel_idle, v.channel_aligned) == ((2, 4, LONG_MIN), (False, False, True),
                                                                         (True, True, False))
    assert v.state() == (2, False, (2, 4, LONG_MIN), (False, False, True), (True, True, False))
    assert (v.last_output_watermark, v.is_idle) == (2, False)
    assert repr(v) == (f"StatusWatermarkValve(3, ...)  # last=2 idle=False wm=[2, 4, {LONG_MIN}] "
                       "active=[True, True, False] aligned=[True, True, False]")


def test_the_recording_output():
    out = RecordingValveOutput()
    assert out.events == [] and out.watermarks == []
    out.emit_watermark(3)
    out.emit_watermark_status(True)
    out.emit_watermark_status(False)
    out.emit_watermark(5)
    assert out.events == [("watermark", 3), ("status", "IDLE"), ("status", "ACTIVE"), ("watermark", 5)]
    assert out.watermarks == [3, 5]
    assert repr(out) == f"RecordingValveOutput()  # events={out.events!r}"
    out.clear()
    assert out.events == []


def test_bad_arguments_are_one_line_errors_naming_the_field():
    with pytest.raises(InvalidArgument, match=r"^StatusWatermarkValve.num_channels: 0 must be an int >= 1$"):
        StatusWatermarkValve(0)
    with pytest.raises(InvalidArgument, match=r"^StatusWatermarkValve.num_channels: True must be an int >= 1$"):
        StatusWatermarkValve(True)
    with pytest.raises(InvalidArgument, match=r"^StatusWatermarkValve.num_channels: '2' must be an int >= 1$"):
        StatusWatermarkValve("2")
    for knob in KNOBS:
        with pytest.raises(InvalidArgument, match=rf"^StatusWatermarkValve.{knob}: 1 must be true or false$"):
            StatusWatermarkValve(1, **{knob: 1})
    assert fields(StatusWatermarkValve(1)) == (1, DEFAULT, [LONG_MIN], [True], [True], LONG_MIN, False)


def test_the_public_names_and_the_variants_table():
    assert PUBLIC == ["LONG_MIN", "ValveOutput", "RecordingValveOutput", "StatusWatermarkValve", "VALVE_VARIANTS"]
    assert type(VALVE_VARIANTS) is dict and {k: v["knobs"] for k, v in VALVE_VARIANTS.items()} == {
        "flink-2.3.0": {}, "flink-40475-fix": {"flink_40475": True}, "pre-flink-7728": {"flush_on_all_idle": False},
        "pre-flink-7721": {"check_aligned_nonempty": False},
        "mutant-realign-below-output": {"realign_below_output": True}}


class _RawOutput:
    """A stand-in output recording each argument as the valve passes it (Flink hands the
    output a ``WatermarkStatus``; here the flag ``idle`` itself, which must be a bool)."""

    def __init__(self):
        self.calls: list = []

    def emit_watermark(self, ts):
        self.calls.append(("emitWatermark", ts))

    def emit_watermark_status(self, idle):
        self.calls.append(("emitWatermarkStatus", idle))


def test_the_valve_hands_its_output_the_status_as_a_bool():
    v, out = StatusWatermarkValve(2), _RawOutput()
    v.input_watermark(4, 0, out)
    v.input_watermark(6, 1, out)
    v.input_watermark_status(True, 0, out)
    v.input_watermark_status(True, 1, out)
    v.input_watermark_status(False, 1, out)
    assert out.calls == [("emitWatermark", 4), ("emitWatermark", 6), ("emitWatermarkStatus", True),
                         ("emitWatermarkStatus", False)]
    assert [type(a) for k, a in out.calls if k == "emitWatermarkStatus"] == [bool, bool]
