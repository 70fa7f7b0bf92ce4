"""Invariants of watermarks and windows (``StatusWatermarkValve``, ``WindowOperator``).

Valve invariants (subject ``valve``) take a subject with ``.valve`` (a
``StatusWatermarkValve``) and ``.emitted`` (the watermarks it emitted, in order; reading it
makes ``valve_output_strictly_increasing`` a *trace* invariant). The window invariant
(subject ``window``) takes ``.windows`` (what an assigner returned for one element),
``.timestamp``, ``.size`` and ``.offset``. ``properties.machines`` checks every registered
invariant of each subject (``spec.invariant.invariants``); none writes into its subject.
"""

from __future__ import annotations

from spec.invariant import Violation, invariant

LONG_MIN = -(1 << 63)


@invariant("valve_output_strictly_increasing", kind="always", subject="valve", scope="trace",
           concept="StatusWatermarkValve",
           statement="The watermarks a StatusWatermarkValve emits are strictly increasing.")
def valve_output_strictly_increasing(s) -> Violation | None:
    em = s.emitted
    for i in range(1, len(em)):
        if em[i] <= em[i - 1]:
            return Violation(invariant="valve_output_strictly_increasing", expected=f"> {em[i - 1]}",
                             actual=em[i], message=f"the valve emitted watermark {em[i]} after {em[i - 1]}")
    return None


@invariant("valve_output_bounded", kind="always", subject="valve", concept="StatusWatermarkValve alignment",
           statement="Every aligned active channel is at or above the valve's output watermark, and the "
           "output never exceeds the largest watermark any channel sent.")
def valve_output_bounded(s) -> Violation | None:
    v = s.valve
    out = v.last_output_watermark
    if out == LONG_MIN:
        return None
    n = len(v.channel_watermarks)
    for ch in range(n):
        if v.channel_is_aligned(ch) and not v.channel_is_idle(ch) and v.channel_watermark(ch) < out:
            return Violation(invariant="valve_output_bounded", expected=f"channel {ch} >= output {out}",
                             actual=v.channel_watermark(ch),
                             message=f"aligned active channel {ch} is at {v.channel_watermark(ch)}, below the "
                             f"output watermark {out}: the output ran ahead of an input")
    top = max(v.channel_watermarks)
    if out > top:
        return Violation(invariant="valve_output_bounded", expected=f"<= {top}", actual=out,
                         message=f"the output watermark {out} exceeds every channel's watermark (max {top})")
    return None


@invariant("valve_all_idle_flush", kind="always", subject="valve", concept="StatusWatermarkValve (FLINK-7728)",
           statement="When every channel is idle, the output watermark is the largest channel watermark, "
           "whatever the order in which the channels went idle.")
def valve_all_idle_flush(s) -> Violation | None:
    v = s.valve
    n = len(v.channel_watermarks)
    if not all(v.channel_is_idle(ch) for ch in range(n)):
        return None
    top = max(v.channel_watermarks)
    if top == LONG_MIN or v.last_output_watermark == top:
        return None
    return Violation(invariant="valve_all_idle_flush", expected=top, actual=v.last_output_watermark,
                     message=f"all {n} channels are idle but the output watermark is "
                     f"{v.last_output_watermark}, not the largest channel watermark {top}")


@invariant("window_contains_timestamp", kind="always", subject="window",
           concept="TimeWindow.getWindowStartWithOffset (FLINK-26334)",
           statement="Every window an element is assigned to contains its timestamp: start <= ts < end.")
def window_contains_timestamp(s) -> Violation | None:
    for w in s.windows:
        if not (w.start <= s.timestamp < w.end):
            return Violation(invariant="window_contains_timestamp", expected=f"start <= {s.timestamp} < end",
                             actual=[w.start, w.end],
                             message=f"timestamp {s.timestamp} was assigned to window [{w.start}, {w.end}) "
                             f"(size {s.size}, offset {s.offset})")
    return None
