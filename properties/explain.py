"""Render a counterexample as text: the job, numbered steps with what each did and the
state that matters afterwards, and the violation as expected vs actual, in plain words."""

from __future__ import annotations

from model import actions as A
from model.errors import FlinkspecError
from properties import scenario_kinds
from properties.engines import Run
from spec.invariant import REGISTRY


def _describe(run: Run, a) -> str:
    """What ``a`` does, in words: the action kind's own description (``model.actions``)."""
    unit = A.kind_of(a)
    return unit.describe(run.cluster, a) if unit is not None else repr(a)


def _state(run: Run) -> str:
    c = run.cluster
    parts = []
    inflight = {i: len(q) - (c.read_pos[i] if c.blocking[i] else 0) for i, q in enumerate(c.channels)}
    inflight = {i: n for i, n in inflight.items() if n}
    if inflight:
        parts.append("in flight " + ", ".join(f"ch{i}:{n}" for i, n in sorted(inflight.items())))
    blocked = [i for i, b in enumerate(c.blocked) if b]
    if blocked:
        parts.append("blocked " + ",".join(f"ch{i}" for i in blocked))
    persisting = [(t.id, sorted(t.persisting)) for t in c.tasks if t.persisting]
    if persisting:
        parts.append("persisting channel state " + "; ".join(f"task {t}: inputs {p}" for t, p in persisting))
    pend = c.coordinator.pending_ids()
    if pend:
        parts.append(f"pending checkpoints {list(pend)}")
    if c.completed_ids:
        parts.append(f"completed {c.completed_ids[-3:]}")
    parts.append(f"committed {len(c.external.committed)} record(s)")
    if c.status != "RUNNING":
        parts.append(f"job {c.status}")
    return "; ".join(parts)


def explain(cx, *, all_state: bool = False) -> str:
    other = scenario_kinds.kind_of(cx.scenario)  # a focused counterexample explains itself
    if other is not None:
        return other.explain(cx, all_state)
    sc = cx.scenario
    out = []
    h = cx.header
    out.append(f"counterexample {cx.path}")
    out.append(f"  variant {h['variant']} (expected verdict: {' or '.join(h['expected_verdict'])}), "
               f"engine {h['engine']}, seed {h['seed']}, model {h.get('model_version')}")
    g = sc.graph
    out.append("job:")
    for o in g.operators:
        extra = {"source": f"ooo={o.watermark_out_of_orderness}",
                 "window": f"{o.aggregate} size={o.window_size} slide={o.window_slide} lateness={o.allowed_lateness}",
                 "sink": f"{o.sink_kind}", "map": o.function or "", "keyed_aggregate": o.aggregate or ""}.get(o.kind, "")
        out.append(f"  {o.name}: {o.kind} p={o.parallelism} {extra}")
    for e in g.edges:
        out.append(f"  {e.source} --{e.partitioner}{'/blocking' if e.exchange_mode == 'blocking' else ''}--> {e.target}")
    cfg = sc.config
    out.append(f"configuration: {cfg.barrier_mode} checkpoints, failover {cfg.failover_strategy}, "
               f"max concurrent {cfg.max_concurrent_checkpoints}, channel capacity {sc.scope.channel_capacity}"
               + (f", seams {list(sc.seams)}" if sc.seams else ""))
    for name, splits in sc.job_input.splits.items():
        for j, s in enumerate(splits):
            out.append(f"input {name} split {j}: {list(s)}")
    run = Run(sc)
    c = run.cluster
    out.append("channels: " + ", ".join(f"ch{ch.id} {c.eg.subtasks[ch.producer].name}->{c.eg.subtasks[ch.consumer].name}"
                                        for ch in c.eg.channels))
    out.append("steps:")
    last = None
    v = None
    for i, a in enumerate(cx.actions):
        reason = c.why_not_enabled(a)
        if reason is not None:  # explained only after validation (check_replay); never describe a refused step
            raise FlinkspecError(f"{cx.path}:{i + 2}: step {i}: {a!r} is not enabled: {reason}")
        desc = _describe(run, a)
        v = run.step(a)
        st = _state(run)
        line = f"{i:4d}. {a!r:48s} {desc}"
        out.append(line)
        if all_state or st != last:
            out.append(f"        -> {st}")
            last = st
        if v is not None:
            break
    if v is None:
        v = run.finish()
        if v is not None:
            out.append(f"      (the run was then drained by the fixed policy; {c.now - len(cx.actions)} more steps)")
    rec = cx.violation
    out.append("")
    out.append(f"VIOLATION of {rec.invariant} at step {rec.step}:")
    out.append(f"  {rec.message}")
    out.append(f"  expected: {rec.expected}")
    out.append(f"  actual:   {rec.actual}")
    inv = REGISTRY.get(rec.invariant)
    if inv is not None:
        out.append(f"  the invariant ({inv.kind}, guards {inv.concept}): {inv.statement}")
    if v is None or v.invariant != rec.invariant:
        out.append("  NOTE: replaying the file now does NOT reproduce this violation")
    return "\n".join(out)
