"""StatusWatermarkValve: combining the watermarks and idleness of one input gate's channels.

Invariant upheld (checked by spec/z3_valve.py for every input sequence up to a bound, and
differentially against the real ``StatusWatermarkValve`` of apache-flink 2.3.0):

* the output watermark is strictly increasing;
* it never exceeds what the *aligned* channels allow: ``last_output_watermark <=`` the
  watermark of every aligned (hence active) channel, and never exceeds the largest watermark
  any channel has delivered;
* an IDLE channel, or one that came back ACTIVE below the output watermark, is excluded from
  the min until its own watermark catches up (``>= last_output_watermark``);
* watermarks arriving on an IDLE channel are dropped;
* when the last active channel goes idle, the max watermark over all channels is flushed
  (FLINK-7728) -- in 2.3.0 only if that channel's watermark equals the output watermark.

Flink class followed: ``org.apache.flink.streaming.runtime.watermarkstatus.StatusWatermarkValve``
(flink-streaming-java; 1.14-1.16 keep per-channel state in an array, 1.17+/2.x in a
``HeapPriorityQueue`` of ``SubpartitionStatus`` -- same decisions, the heap only finds the
min faster). Verified against the bytecode of ``flink-dist-2.3.0.jar``: 2.3.0 still has both
``watermark == lastOutputWatermark`` guards and does **not** re-derive the min when a channel
re-aligns on IDLE -> ACTIVE. The default configuration of this class is exactly 2.3.0, and
``tests/differential/test_valve_vs_flink.py`` feeds 602 sequences (12,966 inputs) into both this
class and the real valve of the 2.3.0 jar: every emitted watermark and status is identical.

Per channel: ``watermark = Long.MIN_VALUE``, ``ACTIVE``, ``aligned = true``; the valve starts
with ``lastOutputWatermark = Long.MIN_VALUE`` and status ACTIVE::

    inputWatermark(wm, ch):   if valve ACTIVE and ch ACTIVE and wm > ch.wm:
                                  ch.wm = wm; if !ch.aligned and wm >= last: ch.aligned = true
                                  newMin()
    inputWatermarkStatus(IDLE, ch) when ch ACTIVE:
        ch IDLE, unaligned
        if no channel ACTIVE: [if ch.wm == last:] flushMax(); valve IDLE; emit IDLE
        elif ch.wm == last: newMin()
    inputWatermarkStatus(ACTIVE, ch) when ch IDLE:
        ch ACTIVE; if ch.wm >= last: ch.aligned = true
        if valve IDLE: valve ACTIVE; emit ACTIVE
        [FLINK-40475: newMin()]
    newMin():   if any aligned and min(aligned wm) > last: last = that; emit it
    flushMax(): if max(all wm) > last: last = that; emit it

Variants (knobs; all default to 2.3.0 behaviour), with the verdict the suite expects:

* ``flink_40475=True`` -- the fix of FLINK-40475 (apache/flink PR #29024, merged after
  2.3.0): re-derive the min at the end of the IDLE -> ACTIVE branch (after ACTIVE is
  emitted) and flush the max *unconditionally* when all channels are idle. Expected: the
  *progress* property ("the output equals the aligned min; when all are idle it equals the
  max") holds. 2.3.0 (the default) violates it: a channel that re-aligns as the only aligned
  one stalls, and the all-idle flush is skipped when the last channel to go idle was
  unaligned -- the final watermark then depends on the order in which inputs went idle.
* ``flush_on_all_idle=False`` -- before FLINK-7728 (PR #4747): when all inputs became idle
  only IDLE was emitted. Known unsafe: the final watermark depends on the order in which
  the inputs go idle (violates order-independence / the all-idle flush property).
* ``check_aligned_nonempty=False`` -- before FLINK-7721 (PR #4738): the new min was emitted
  even when no channel was aligned, i.e. ``Long.MAX_VALUE`` (the empty min) was emitted
  when every active channel was unaligned. Known unsafe: violates the bound (the output
  exceeds every channel's watermark).
* ``realign_below_output=True`` -- a hypothetical mutant (no Flink release had it): a
  channel returning to ACTIVE is re-aligned even if its watermark is below the output
  watermark. Violates the bound "every aligned channel is at or above the output".

Left out: channels that consume several subpartitions (``InternalWatermark`` with a
subpartition index -- batch jobs only, and ``inputWatermarkStatus`` rejects them), the
generalized watermarks of FLIP-467, and the FINISHED status of the open FLINK-38477.
"""

from __future__ import annotations

from typing import Protocol

from model.errors import InvalidArgument
from model.eventtime import LONG_MAX, LONG_MIN

__all__ = [
    "LONG_MIN",
    "ValveOutput",
    "RecordingValveOutput",
    "StatusWatermarkValve",
    "VALVE_VARIANTS",
]



class ValveOutput(Protocol):
    """The valve's ``DataOutput``: receives the watermarks and statuses the valve emits."""

    def emit_watermark(self, ts: int) -> None: ...

    def emit_watermark_status(self, idle: bool) -> None: ...


class RecordingValveOutput:
    """Collects emissions as ``("watermark", ts)`` / ``("status", "IDLE"|"ACTIVE")`` tuples."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def emit_watermark(self, ts: int) -> None:
        self.events.append(("watermark", ts))

    def emit_watermark_status(self, idle: bool) -> None:
        self.events.append(("status", "IDLE" if idle else "ACTIVE"))

    @property
    def watermarks(self) -> list[int]:
        return [v for k, v in self.events if k == "watermark"]

    def clear(self) -> None:
        self.events.clear()

    def __repr__(self) -> str:
        return f"RecordingValveOutput()  # events={self.events!r}"


#: Named variants: knobs for :class:`StatusWatermarkValve` and the verdict the suite expects.
VALVE_VARIANTS: dict[str, dict] = {
    "flink-2.3.0": {"knobs": {}, "expected": "safe (bound, strictly increasing); progress violated (FLINK-40475)"},
    "flink-40475-fix": {"knobs": {"flink_40475": True}, "expected": "safe and progress holds"},
    "pre-flink-7728": {
        "knobs": {"flush_on_all_idle": False},
        "expected": "unsafe: final watermark depends on the order inputs go idle",
    },
    "pre-flink-7721": {
        "knobs": {"check_aligned_nonempty": False},
        "expected": "unsafe: emits Long.MAX_VALUE when no channel is aligned",
    },
    "mutant-realign-below-output": {
        "knobs": {"realign_below_output": True},
        "expected": "unsafe: an aligned channel lies below the output watermark",
    },
}


class StatusWatermarkValve:
    """One input gate's valve (see the module docstring for the exact rules and variants).

    ``input_watermark(watermark, channel, output)`` / ``input_watermark_status(idle, channel,
    output)`` call ``output.emit_watermark(ts)`` and ``output.emit_watermark_status(idle)``
    synchronously, in Flink's order. The output is an argument of each call, as in Flink
    (``inputWatermark(Watermark, int channelIndex, DataOutput<?> output)``): the valve holds no
    reference to the task it feeds, so a task's state has no reference cycle through its valve.
    """

    __slots__ = (
        "num_channels",
        "flush_on_all_idle",
        "flink_40475",
        "check_aligned_nonempty",
        "realign_below_output",
        "_wm",
        "_active",
        "_aligned",
        "_last",
        "_idle",
    )

    def __init__(
        self,
        num_channels: int,
        *,
        flush_on_all_idle: bool = True,
        flink_40475: bool = False,
        check_aligned_nonempty: bool = True,
        realign_below_output: bool = False,
    ):
        if isinstance(num_channels, bool) or not isinstance(num_channels, int) or num_channels < 1:
            raise InvalidArgument(
                f"StatusWatermarkValve.num_channels: {num_channels!r} must be an int >= 1"
            )
        for name, flag in (("flush_on_all_idle", flush_on_all_idle), ("flink_40475", flink_40475),
                           ("check_aligned_nonempty", check_aligned_nonempty),
                           ("realign_below_output", realign_below_output)):
            if not isinstance(flag, bool):
                raise InvalidArgument(f"StatusWatermarkValve.{name}: {flag!r} must be true or false")
        self.num_channels = num_channels
        self.flush_on_all_idle = flush_on_all_idle
        self.flink_40475 = flink_40475
        self.check_aligned_nonempty = check_aligned_nonempty
        self.realign_below_output = realign_below_output
        self._wm = [LONG_MIN] * num_channels
        self._active = [True] * num_channels
        self._aligned = [True] * num_channels
        self._last = LONG_MIN
        self._idle = False  # lastOutputWatermarkStatus == IDLE

    # ------------------------------------------------------------------ inputs

    def input_watermark(self, watermark: int, channel: int, output: ValveOutput) -> None:
        if self._idle or not self._active[channel]:
            return
        wm = self._wm
        if watermark > wm[channel]:
            wm[channel] = watermark
            if not self._aligned[channel] and watermark >= self._last:
                self._aligned[channel] = True
            self._new_min(output)

    def input_watermark_status(self, idle: bool, channel: int, output: ValveOutput) -> None:
        active = self._active
        if idle:
            if not active[channel]:
                return
            active[channel] = False
            self._aligned[channel] = False
            if True not in active:
                if self.flush_on_all_idle and (
                    self.flink_40475 or self._wm[channel] == self._last
                ):
                    self._flush_max(output)
                self._idle = True
                output.emit_watermark_status(True)
            elif self._wm[channel] == self._last:
                self._new_min(output)
        else:
            if active[channel]:
                return
            active[channel] = True
            if self.realign_below_output or self._wm[channel] >= self._last:
                self._aligned[channel] = True
            if self._idle:
                self._idle = False
                output.emit_watermark_status(False)
            if self.flink_40475:
                self._new_min(output)

    # ------------------------------------------------------------------ helpers

    def _new_min(self, output: ValveOutput) -> None:
        m = None
        wm = self._wm
        for c, a in enumerate(self._aligned):
            if a:
                w = wm[c]
                if m is None or w < m:
                    m = w
        if m is None:
            if self.check_aligned_nonempty:
                return
            m = LONG_MAX  # pre-FLINK-7721: Long.MAX_VALUE, the min over no channel
        if m > self._last:
            self._last = m
            output.emit_watermark(m)

    def _flush_max(self, output: ValveOutput) -> None:
        m = max(self._wm)
        if m > self._last:
            self._last = m
            output.emit_watermark(m)

    # ------------------------------------------------------------------ inspection

    @property
    def last_output_watermark(self) -> int:
        return self._last

    @property
    def is_idle(self) -> bool:
        """The last status the valve emitted is IDLE (``lastOutputWatermarkStatus.isIdle()``)."""
        return self._idle

    def channel_watermark(self, channel: int) -> int:
        return self._wm[channel]

    def channel_is_idle(self, channel: int) -> bool:
        return not self._active[channel]

    def channel_is_aligned(self, channel: int) -> bool:
        return self._aligned[channel]

    @property
    def channel_watermarks(self) -> tuple[int, ...]:
        return tuple(self._wm)

    @property
    def channel_idle(self) -> tuple[bool, ...]:
        return tuple(not a for a in self._active)

    @property
    def channel_aligned(self) -> tuple[bool, ...]:
        return tuple(self._aligned)

    def state(self) -> tuple:
        """An immutable snapshot ``(last, valve_idle, wms, idle flags, aligned flags)`` for checks."""
        return (self._last, self._idle, tuple(self._wm), self.channel_idle, tuple(self._aligned))

    def __repr__(self) -> str:
        return (
            f"StatusWatermarkValve({self.num_channels}, ...)  # last={self._last} "
            f"idle={self._idle} wm={self._wm} active={self._active} aligned={self._aligned}"
        )
