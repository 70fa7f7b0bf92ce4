"""Event time at the sources: Java ``long`` arithmetic, watermark generation and dedup.

Invariant upheld: the watermarks a source subtask puts on the wire are strictly
increasing (``WatermarkToDataOutput`` drops every watermark that is not larger than the
last one), and ``BoundedOutOfOrdernessWatermarks`` never emits a watermark above
``max seen timestamp - out_of_orderness - 1``.

Flink classes followed:

* ``org.apache.flink.api.common.eventtime.BoundedOutOfOrdernessWatermarks`` (flink-core):
  ``maxTimestamp`` starts at ``Long.MIN_VALUE + outOfOrdernessMillis + 1`` so that the
  first periodic watermark is exactly ``Long.MIN_VALUE``; ``onEvent`` takes the max;
  ``onPeriodicEmit`` emits ``maxTimestamp - outOfOrdernessMillis - 1``. The constructor
  rejects a negative bound (``checkArgument(!maxOutOfOrderness.isNegative())``).
* ``org.apache.flink.streaming.api.operators.source.WatermarkToDataOutput``
  (flink-streaming-java): ``emitWatermark`` returns early when
  ``newWatermark <= maxWatermarkSoFar`` (initially ``Long.MIN_VALUE``, so a watermark of
  ``Long.MIN_VALUE`` is never forwarded); otherwise it first marks the output ACTIVE again
  if it was idle (emitting ``WatermarkStatus.ACTIVE``) and then forwards the watermark.
  ``markIdle`` emits IDLE once; ``markActive`` emits ACTIVE only if currently idle.
  Deliberate difference: Flink's ``WatermarkToDataOutput`` holds its ``DataOutput``; here the
  output is an argument of each call (as ``StatusWatermarkValve``'s is in Flink), so that a
  source task's state holds no reference cycle through it (task -> reader -> output -> task).

Left out: the Duration type (the bound is a plain int of milliseconds), the
``OnWatermarkEmitted`` listener (watermark alignment), split-level combination
(``CombinedWatermarkStatus``) and idleness timeouts -- the step function decides when a
source goes idle.

All event times are Python ints restricted to the Java ``long`` range; use :func:`jlong`
wherever Flink's own arithmetic can overflow (it wraps around silently in Java).
"""

from __future__ import annotations

from typing import Protocol

from model.errors import InvalidArgument

__all__ = [
    "LONG_MIN",
    "LONG_MAX",
    "jlong",
    "java_rem",
    "java_abs",
    "check_long",
    "BoundedOutOfOrdernessWatermarks",
    "WatermarkStatusOutput",
    "WatermarkToDataOutput",
]

#: ``Long.MIN_VALUE``: "no watermark yet" / "no timestamp".
LONG_MIN = -(2**63)
#: ``Long.MAX_VALUE``: the final watermark at end of input.
LONG_MAX = 2**63 - 1

_TWO_64 = 2**64
_MASK = _TWO_64 - 1
_SIGN = 2**63


def jlong(x: int) -> int:
    """Wrap ``x`` to a Java ``long`` (two's complement, 64 bit), as Java arithmetic does."""
    if LONG_MIN <= x <= LONG_MAX:
        return x
    x &= _MASK
    return x - _TWO_64 if x >= _SIGN else x


def java_rem(a: int, b: int) -> int:
    """Java's ``a % b`` on longs: the result has the sign of the dividend (truncating division).

    ``Long.MIN_VALUE % -1 == 0`` in Java, which this also returns.
    """
    if b == 0:
        raise ZeroDivisionError("java_rem: division by zero (ArithmeticException in Java)")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def java_abs(x: int) -> int:
    """Java's ``Math.abs(long)``: ``Math.abs(Long.MIN_VALUE) == Long.MIN_VALUE``."""
    return jlong(-x) if x < 0 else x


def check_long(name: str, value: object) -> int:
    """Return ``value`` if it is an int in the Java long range, else raise :class:`InvalidArgument`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{name}: must be an integer (a Java long), got {value!r}")
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidArgument(
            f"{name}: {value} is outside the Java long range [{LONG_MIN}, {LONG_MAX}]"
        )
    return int(value)


class BoundedOutOfOrdernessWatermarks:
    """``BoundedOutOfOrdernessWatermarks``: periodic watermark ``max ts - ooo - 1``.

    >>> g = BoundedOutOfOrdernessWatermarks(5)
    >>> g.on_periodic_emit() == LONG_MIN
    True
    >>> g.on_event(100); g.on_periodic_emit()
    94
    """

    __slots__ = ("out_of_orderness", "max_timestamp")

    def __init__(self, out_of_orderness: int):
        out_of_orderness = check_long("BoundedOutOfOrdernessWatermarks.out_of_orderness", out_of_orderness)
        if out_of_orderness < 0:
            raise InvalidArgument(
                f"BoundedOutOfOrdernessWatermarks.out_of_orderness: {out_of_orderness} is "
                "negative (maxOutOfOrderness cannot be negative)"
            )
        self.out_of_orderness = out_of_orderness
        # start so that our lowest watermark would be Long.MIN_VALUE (cannot overflow: ooo >= 0)
        self.max_timestamp = LONG_MIN + out_of_orderness + 1

    def on_event(self, timestamp: int) -> None:
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp

    def on_periodic_emit(self) -> int:
        """The watermark this generator emits now (Java long arithmetic: may wrap for huge ooo)."""
        w = self.max_timestamp - self.out_of_orderness - 1
        return w if LONG_MIN <= w <= LONG_MAX else jlong(w)  # jlong's test inlined (a hot path)

    def __repr__(self) -> str:
        return (
            f"BoundedOutOfOrdernessWatermarks({self.out_of_orderness})"
            f"  # max_timestamp={self.max_timestamp}"
        )


class WatermarkStatusOutput(Protocol):
    """What :class:`WatermarkToDataOutput` writes to (the source task's DataOutput)."""

    def emit_watermark(self, ts: int) -> None: ...

    def emit_watermark_status(self, idle: bool) -> None: ...


class WatermarkToDataOutput:
    """``WatermarkToDataOutput``: forwards only strictly increasing watermarks.

    ``emit_watermark(ts)`` returns ``True`` iff the watermark was forwarded. Emitting a
    watermark while idle first re-activates the output (ACTIVE is emitted before the
    watermark), exactly as ``markActiveInternally()`` does -- but only when the watermark
    passes the monotonicity guard (a non-increasing watermark leaves the output idle; that is
    the open issue FLINK-40504, reproduced here as Flink behaves).
    """

    __slots__ = ("max_watermark_so_far", "is_idle")

    def __init__(self):
        self.max_watermark_so_far = LONG_MIN
        self.is_idle = False

    def emit_watermark(self, ts: int, output: WatermarkStatusOutput) -> bool:
        if ts <= self.max_watermark_so_far:
            return False
        self.max_watermark_so_far = ts
        if self.is_idle:
            output.emit_watermark_status(False)
            self.is_idle = False
        output.emit_watermark(ts)
        return True

    def mark_idle(self, output: WatermarkStatusOutput) -> None:
        if self.is_idle:
            return
        output.emit_watermark_status(True)
        self.is_idle = True

    def mark_active(self, output: WatermarkStatusOutput) -> None:
        if not self.is_idle:
            return
        output.emit_watermark_status(False)
        self.is_idle = False
