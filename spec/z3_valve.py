"""z3: bounded model checking (and an inductive proof) of the StatusWatermarkValve.

The valve of ``model/watermarkstatus.py`` is encoded as a transition relation over
``n`` channels. A step consumes one input -- ``("watermark", ch, value)``, ``("idle", ch)``
or ``("active", ch)`` -- exactly as ``StatusWatermarkValve.inputWatermark`` /
``inputWatermarkStatus`` of apache-flink 2.3.0 do, with the same knobs as the model
(``flink_40475``, ``flush_on_all_idle``, ``check_aligned_nonempty``, ``realign_below_output``).

Properties (state after every step; ``last`` = the valve's last output watermark):

* **strictly increasing** -- every emitted watermark is larger than the previous output;
* **bound** -- the output never exceeds what the aligned channels allow: every aligned
  channel is ACTIVE and has ``wm >= last``, and ``last <= max_c wm_c`` (the output is never
  larger than any watermark a channel actually delivered). An ACTIVE channel may be behind
  the output only while it is unaligned (it came back from IDLE below the output); then
  its records are late, which is Flink's documented behaviour, not a violation;
* **progress (aligned min)** -- whenever some channel is aligned, ``last >= min over the
  aligned channels`` (with the bound: ``last`` *equals* that min), i.e. the valve never
  holds back a watermark it may emit;
* **all-idle flush** -- whenever every channel is IDLE, ``last >= max_c wm_c``: the final
  watermark does not depend on the order in which the inputs went idle (FLINK-7728).

Bounded checks go step by step (k = 1, 2, ... K, incrementally), so a counterexample is a
shortest one; "proved" means: no input sequence of length <= K from the initial state
violates the property, for the given ``n``. ``valve_inductive`` additionally proves the
safety properties for *every* sequence length with an inductive invariant.

Expected verdicts: 2.3.0 is safe (strictly increasing, bound) but violates both progress
properties from n = 3 (the FLINK-40475 stall and skipped flush, 7 inputs; none with n = 2); the FLINK-40475
fix satisfies all four; the pre-FLINK-7728 variant violates the all-idle flush (n = 2);
the pre-FLINK-7721 variant and the realign-below-output mutant violate the bound.
Every counterexample is replayed through the Python valve with the same knobs
(:func:`replay`), and must show the same violation at the same step.
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Sequence

import z3

from model.watermarkstatus import RecordingValveOutput, StatusWatermarkValve
from spec import proofs

__all__ = [
    "LONG_MIN",
    "LONG_MAX",
    "PROPERTIES",
    "ValveState",
    "initial_state",
    "transition",
    "violations",
    "bmc",
    "inductive",
    "replay",
    "z3_accepts_run",
    "CHECKS",
    "register",
]

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

PROPERTIES = ("strictly_increasing", "bound", "progress_aligned_min", "all_idle_flush")

KIND_WM, KIND_IDLE, KIND_ACTIVE = 0, 1, 2


class ValveState:
    """Symbolic (or concrete z3) valve state: per-channel wm/active/aligned, last, valve idle."""

    __slots__ = ("wm", "act", "al", "last", "vidle")

    def __init__(self, wm, act, al, last, vidle):
        self.wm = list(wm)
        self.act = list(act)
        self.al = list(al)
        self.last = last
        self.vidle = vidle


def initial_state(n: int) -> ValveState:
    return ValveState(
        [z3.IntVal(LONG_MIN)] * n,
        [z3.BoolVal(True)] * n,
        [z3.BoolVal(True)] * n,
        z3.IntVal(LONG_MIN),
        z3.BoolVal(False),
    )


def fresh_state(n: int, prefix: str) -> ValveState:
    return ValveState(
        [z3.Int(f"{prefix}_wm{c}") for c in range(n)],
        [z3.Bool(f"{prefix}_act{c}") for c in range(n)],
        [z3.Bool(f"{prefix}_al{c}") for c in range(n)],
        z3.Int(f"{prefix}_last"),
        z3.Bool(f"{prefix}_vidle"),
    )


def _min_aligned(wm, al):
    m = z3.IntVal(LONG_MAX)  # the empty min is Long.MAX_VALUE (what pre-FLINK-7721 emitted)
    for w, a in zip(wm, al):
        m = z3.If(z3.And(a, w < m), w, m)
    return m


def _max_all(wm):
    m = wm[0]
    for w in wm[1:]:
        m = z3.If(w > m, w, m)
    return m


def _select(xs, ch):
    r = xs[-1]
    for c in range(len(xs) - 2, -1, -1):
        r = z3.If(ch == c, xs[c], r)
    return r


def transition(
    s: ValveState,
    kind,
    ch,
    val,
    *,
    flink_40475: bool = False,
    flush_on_all_idle: bool = True,
    check_aligned_nonempty: bool = True,
    realign_below_output: bool = False,
):
    """One valve step. Returns ``(next_state, emitted: BoolRef, emitted_value: ArithRef)``."""
    n = len(s.wm)
    is_wm = kind == KIND_WM
    is_idle = kind == KIND_IDLE
    is_act = kind == KIND_ACTIVE
    sel = [ch == c for c in range(n)]
    wm_ch = _select(s.wm, ch)
    act_ch = _select(s.act, ch)
    al_ch = _select(s.al, ch)

    def new_min(wm, al, cond, last):
        has = z3.Or(*al) if check_aligned_nonempty else z3.BoolVal(True)
        m = _min_aligned(wm, al)
        emit = z3.And(cond, has, m > last)
        return emit, z3.If(emit, m, last)

    # --- watermark
    w_apply = z3.And(is_wm, z3.Not(s.vidle), act_ch, val > wm_ch)
    w_wm = [z3.If(z3.And(w_apply, sel[c]), val, s.wm[c]) for c in range(n)]
    w_al = [
        z3.If(z3.And(w_apply, sel[c], z3.Not(s.al[c]), val >= s.last), True, s.al[c])
        for c in range(n)
    ]
    w_emit, w_last = new_min(w_wm, w_al, w_apply, s.last)

    # --- idle
    i_apply = z3.And(is_idle, act_ch)
    i_act = [z3.If(z3.And(i_apply, sel[c]), False, s.act[c]) for c in range(n)]
    i_al = [z3.If(z3.And(i_apply, sel[c]), False, s.al[c]) for c in range(n)]
    all_idle = z3.Not(z3.Or(*i_act))
    if flush_on_all_idle:
        guard = z3.BoolVal(True) if flink_40475 else (wm_ch == s.last)
        mx = _max_all(s.wm)
        f_emit = z3.And(i_apply, all_idle, guard, mx > s.last)
    else:
        mx = s.last
        f_emit = z3.BoolVal(False)
    m_emit, m_last = new_min(s.wm, i_al, z3.And(i_apply, z3.Not(all_idle), wm_ch == s.last), s.last)
    i_emit = z3.Or(f_emit, m_emit)
    i_last = z3.If(f_emit, mx, m_last)
    i_vidle = z3.If(z3.And(i_apply, all_idle), True, s.vidle)

    # --- active
    a_apply = z3.And(is_act, z3.Not(act_ch))
    a_act = [z3.If(z3.And(a_apply, sel[c]), True, s.act[c]) for c in range(n)]
    realign = z3.BoolVal(True) if realign_below_output else None
    a_al = [
        z3.If(
            z3.And(a_apply, sel[c], realign if realign is not None else s.wm[c] >= s.last),
            True,
            s.al[c],
        )
        for c in range(n)
    ]
    a_vidle = z3.If(a_apply, False, s.vidle)
    if flink_40475:
        a_emit, a_last = new_min(s.wm, a_al, a_apply, s.last)
    else:
        a_emit, a_last = z3.BoolVal(False), s.last

    nxt = ValveState(
        [z3.If(is_wm, w_wm[c], s.wm[c]) for c in range(n)],
        [z3.If(is_idle, i_act[c], z3.If(is_act, a_act[c], s.act[c])) for c in range(n)],
        [z3.If(is_wm, w_al[c], z3.If(is_idle, i_al[c], a_al[c])) for c in range(n)],
        z3.If(is_wm, w_last, z3.If(is_idle, i_last, a_last)),
        z3.If(is_idle, i_vidle, z3.If(is_act, a_vidle, s.vidle)),
    )
    emitted = z3.If(is_wm, w_emit, z3.If(is_idle, i_emit, a_emit))
    del al_ch
    return nxt, emitted, nxt.last


def violations(prev: ValveState, s: ValveState, emitted, value) -> dict[str, z3.BoolRef]:
    """For each property, the z3 condition "violated after this step"."""
    n = len(s.wm)
    bound_ok = z3.And(
        *[z3.Implies(s.al[c], z3.And(s.act[c], s.wm[c] >= s.last)) for c in range(n)],
        s.last <= _max_all(s.wm),
    )
    any_al = z3.Or(*s.al)
    all_idle = z3.Not(z3.Or(*s.act))
    return {
        "strictly_increasing": z3.And(emitted, value <= prev.last),
        "bound": z3.Not(bound_ok),
        "progress_aligned_min": z3.And(any_al, s.last < _min_aligned(s.wm, s.al)),
        "all_idle_flush": z3.And(all_idle, s.last < _max_all(s.wm)),
    }


def _inputs(k: int, n: int, prefix: str = "in"):
    kinds = [z3.Int(f"{prefix}_kind{t}") for t in range(k)]
    chs = [z3.Int(f"{prefix}_ch{t}") for t in range(k)]
    vals = [z3.Int(f"{prefix}_val{t}") for t in range(k)]
    return kinds, chs, vals


def _input_domain(kind, ch, val, n):
    return z3.And(kind >= 0, kind <= 2, ch >= 0, ch < n, val >= LONG_MIN, val <= LONG_MAX)


def _decode(model: z3.ModelRef, kind, ch, val) -> tuple:
    k = model.eval(kind, model_completion=True).as_long()
    c = model.eval(ch, model_completion=True).as_long()
    if k == KIND_WM:
        return ("watermark", c, model.eval(val, model_completion=True).as_long())
    return ("idle" if k == KIND_IDLE else "active", c)


def bmc(
    n: int,
    k: int,
    properties: Sequence[str],
    knobs: dict | None = None,
    timeout_s: float | None = None,
):
    """Bounded model check from the initial state, k = 1..K incrementally.

    Returns ``("proved", None)`` or ``("counterexample", (trace, step, property))`` where
    ``trace`` is the shortest input sequence and ``step`` its 1-based violating step.
    """
    knobs = knobs or {}
    solver = z3.Solver()
    if timeout_s:
        solver.set("timeout", int(timeout_s * 1000))
    s = initial_state(n)
    kinds, chs, vals = _inputs(k, n)
    for t in range(k):
        solver.add(_input_domain(kinds[t], chs[t], vals[t], n))
        # small readable values are enough to witness every behaviour of the valve, but the
        # proof must not depend on it: values stay unconstrained within the long range
        nxt, emitted, value = transition(s, kinds[t], chs[t], vals[t], **knobs)
        viol = violations(s, nxt, emitted, value)
        goal = z3.Or(*[viol[p] for p in properties])
        solver.push()
        solver.add(goal)
        r = solver.check()
        if r == z3.sat:
            # prefer a readable witness: small watermark values, if one exists at this length
            solver.push()
            solver.add(*[z3.And(vals[i] >= 0, vals[i] <= 100) for i in range(t + 1)])
            if solver.check() != z3.sat:
                solver.pop()
                solver.check()
            m = solver.model()
            trace = [_decode(m, kinds[i], chs[i], vals[i]) for i in range(t + 1)]
            broken = [p for p in properties if z3.is_true(m.eval(viol[p], model_completion=True))]
            solver.pop()
            return "counterexample", (trace, t + 1, broken[0])
        if r != z3.unsat:
            solver.pop()
            return "unknown", None
        solver.pop()
        solver.add(z3.Not(goal))  # proved for this step: a sound lemma for the later ones
        # name the state so the next step's terms stay small
        named = fresh_state(n, f"s{t + 1}")
        solver.add(*[a == b for a, b in zip(named.wm, nxt.wm)])
        solver.add(*[a == b for a, b in zip(named.act, nxt.act)])
        solver.add(*[a == b for a, b in zip(named.al, nxt.al)])
        solver.add(named.last == nxt.last, named.vidle == nxt.vidle)
        s = named
    return "proved", None


def _structural_invariant(s: ValveState):
    n = len(s.wm)
    return z3.And(
        *[z3.Implies(s.al[c], z3.And(s.act[c], s.wm[c] >= s.last)) for c in range(n)],
        *[z3.Implies(z3.And(s.act[c], z3.Not(s.al[c])), s.wm[c] < s.last) for c in range(n)],
        s.vidle == z3.Not(z3.Or(*s.act)),
        s.last <= _max_all(s.wm),
        *[z3.And(w >= LONG_MIN, w <= LONG_MAX) for w in s.wm],
        s.last >= LONG_MIN,
    )


def inductive(
    n: int,
    knobs: dict | None = None,
    *,
    with_progress: bool = False,
    timeout_s: float | None = None,
):
    """Prove safety for all sequence lengths: invariant J holds initially and is preserved.

    J = aligned => active and wm >= last; active and unaligned => wm < last;
    valve idle <=> all channels idle; last <= max wm (plus, ``with_progress``, the two
    progress properties). J implies "bound"; the step's guard gives "strictly increasing".
    Returns ``("proved", None)`` or ``("counterexample", (state, input))``.
    """
    knobs = knobs or {}

    def J(s):
        inv = _structural_invariant(s)
        if with_progress:
            v = violations(s, s, z3.BoolVal(False), s.last)
            inv = z3.And(inv, z3.Not(v["progress_aligned_min"]), z3.Not(v["all_idle_flush"]))
        return inv

    init = initial_state(n)
    solver = z3.Solver()
    solver.add(z3.Not(J(init)))
    if solver.check() != z3.unsat:
        return "counterexample", ("initial state", None)
    s = fresh_state(n, "ind")
    kind, ch, val = z3.Int("kind"), z3.Int("ch"), z3.Int("val")
    nxt, emitted, value = transition(s, kind, ch, val, **knobs)
    viol = violations(s, nxt, emitted, value)
    solver = z3.Solver()
    if timeout_s:
        solver.set("timeout", int(timeout_s * 1000))
    solver.add(J(s), _input_domain(kind, ch, val, n))
    solver.add(z3.Or(z3.Not(J(nxt)), viol["strictly_increasing"], viol["bound"]))
    r = solver.check()
    if r == z3.unsat:
        return "proved", None
    if r == z3.sat:
        m = solver.model()
        state = {
            "wm": [m.eval(w, model_completion=True).as_long() for w in s.wm],
            "active": [z3.is_true(m.eval(a, model_completion=True)) for a in s.act],
            "aligned": [z3.is_true(m.eval(a, model_completion=True)) for a in s.al],
            "last": m.eval(s.last, model_completion=True).as_long(),
        }
        return "counterexample", (state, _decode(m, kind, ch, val))
    return "unknown", None


# ---------------------------------------------------------------------------- Python side


def _py_violations(prev_last: int, valve: StatusWatermarkValve, emitted: list[int]) -> list[str]:
    last, _vidle, wms, idle, aligned = valve.state()
    out = []
    prev = prev_last
    for w in emitted:
        if w <= prev:
            out.append("strictly_increasing")
            break
        prev = w
    if any(a and (i or w < last) for w, i, a in zip(wms, idle, aligned)) or last > max(wms):
        out.append("bound")
    al = [w for w, a in zip(wms, aligned) if a]
    if al and last < min(al):
        out.append("progress_aligned_min")
    if all(idle) and last < max(wms):
        out.append("all_idle_flush")
    return out


def replay(trace: Iterable[tuple], n: int, knobs: dict | None = None) -> list[tuple[int, list[str]]]:
    """Run ``trace`` through the Python valve with ``knobs``; return ``[(step, [violated...])]``.

    Steps are 1-based; only steps with at least one violated property are listed.
    """
    out = RecordingValveOutput()
    valve = StatusWatermarkValve(n, **(knobs or {}))
    result = []
    for step, inp in enumerate(trace, start=1):
        prev_last = valve.last_output_watermark
        out.clear()
        if inp[0] == "watermark":
            valve.input_watermark(inp[2], inp[1], out)
        else:
            valve.input_watermark_status(inp[0] == "idle", inp[1], out)
        v = _py_violations(prev_last, valve, out.watermarks)
        if v:
            result.append((step, v))
    return result


def z3_accepts_run(
    trace: Sequence[tuple], n: int, knobs: dict | None = None, *, z3_knobs: dict | None = None
):
    """Cross-check: run ``trace`` in the Python valve and evaluate the z3 transition on the
    same inputs from the same states. Returns ``None`` if they agree at every step, else
    ``(step, python_state, z3_state)`` for the first step where they part (states are
    ``(last, valve_idle, wms, idle flags, aligned flags, emitted a watermark)``).
    ``z3_knobs`` (default: ``knobs``) lets a test check that a disagreement is detected.
    """
    knobs = knobs or {}
    z3_knobs = knobs if z3_knobs is None else z3_knobs
    out = RecordingValveOutput()
    valve = StatusWatermarkValve(n, **knobs)

    def concrete(v: StatusWatermarkValve) -> ValveState:
        last, vidle, wms, idle, aligned = v.state()
        return ValveState(
            [z3.IntVal(w) for w in wms],
            [z3.BoolVal(not i) for i in idle],
            [z3.BoolVal(a) for a in aligned],
            z3.IntVal(last),
            z3.BoolVal(vidle),
        )

    def as_tuple(s: ValveState, emitted) -> tuple:
        ev = lambda e: z3.simplify(e)  # noqa: E731
        return (
            ev(s.last).as_long(),
            z3.is_true(ev(s.vidle)),
            tuple(ev(w).as_long() for w in s.wm),
            tuple(not z3.is_true(ev(a)) for a in s.act),
            tuple(z3.is_true(ev(a)) for a in s.al),
            z3.is_true(ev(emitted)),
        )

    for step, inp in enumerate(trace, start=1):
        s = concrete(valve)
        kind = {"watermark": KIND_WM, "idle": KIND_IDLE, "active": KIND_ACTIVE}[inp[0]]
        val = inp[2] if inp[0] == "watermark" else 0
        nxt, emitted, _ = transition(s, z3.IntVal(kind), z3.IntVal(inp[1]), z3.IntVal(val), **z3_knobs)
        out.clear()
        if inp[0] == "watermark":
            valve.input_watermark(inp[2], inp[1], out)
        else:
            valve.input_watermark_status(inp[0] == "idle", inp[1], out)
        py = valve.state() + (bool(out.watermarks),)
        zs = as_tuple(nxt, emitted)
        if py != zs:
            return step, py, zs
    return None


# ---------------------------------------------------------------------------- checks

SAFETY = ("strictly_increasing", "bound")
PROGRESS = ("progress_aligned_min", "all_idle_flush")


def _bmc_check(n: int, k: int, properties, knobs) -> Callable[..., tuple]:
    def run(timeout_s: float | None = None):
        t0 = time.perf_counter()
        result, cex = bmc(n, k, properties, knobs, timeout_s)
        elapsed = time.perf_counter() - t0
        props = ", ".join(properties)
        if result == "proved":
            return result, f"no input sequence of length <= {k} on {n} channels violates {props} ({elapsed:.2f}s)", None
        if result != "counterexample":
            return result, f"z3 gave up after {elapsed:.2f}s", None
        trace, step, prop = cex
        replayed = replay(trace, n, knobs)
        py_step = replayed[0] if replayed else None
        agrees = py_step is not None and py_step[0] == step and prop in py_step[1]
        fixed_clean = not any(
            set(v) & set(properties) for _, v in replay(trace, n, {"flink_40475": True})
        )
        cexd = {
            "channels": n,
            "trace": [list(i) for i in trace],
            "step": step,
            "property": prop,
            "knobs": knobs,
            "python_replay": {"step": py_step[0] if py_step else None,
                              "violated": py_step[1] if py_step else []},
            "fixed_valve_clean": fixed_clean,
        }
        if not agrees or not fixed_clean:
            why = (f"replay in the Python valve parts from z3 (z3: {prop} at step {step}; "
                   f"python: {py_step})" if not agrees else "the FLINK-40475-fix valve also violates it")
            return "unknown", f"cross-check failed: {why}", cexd
        return result, (
            f"{len(trace)}-input trace violates {prop} at step {step}; the Python valve with the "
            f"same knobs shows it at the same step, the fixed valve does not ({elapsed:.2f}s)"
        ), cexd

    run.__doc__ = f"bounded check of {', '.join(properties)} for knobs {knobs}"
    return run


def _inductive_check(n: int, knobs, with_progress=False) -> Callable[..., tuple]:
    def run(timeout_s: float | None = None):
        t0 = time.perf_counter()
        result, cex = inductive(n, knobs, with_progress=with_progress, timeout_s=timeout_s)
        elapsed = time.perf_counter() - t0
        what = "strictly increasing + bound" + (" + progress" if with_progress else "")
        if result == "proved":
            return result, f"invariant is initial and inductive on {n} channels: {what} for every length ({elapsed:.2f}s)", None
        if result == "counterexample":
            state, inp = cex
            return result, f"invariant not inductive ({elapsed:.2f}s)", {"state": state, "input": inp}
        return result, f"z3 gave up after {elapsed:.2f}s", None

    run.__doc__ = f"inductive invariant for knobs {knobs}"
    return run


#: bound of the bounded checks (inputs per sequence) and channel count of the inductive ones
K = 16
N_IND = 4

#: (name, scope, expected, function) -- registered into spec.proofs when it exists.
CHECKS: list[tuple[str, str, str, Callable[..., tuple]]] = [
    ("valve_safety", f"n=3, k<={K}, Flink 2.3.0 valve: strictly increasing + bound", "proved",
     _bmc_check(3, K, SAFETY, {})),
    ("valve_safety_inductive", f"n={N_IND}, every length (inductive invariant), Flink 2.3.0 valve",
     "proved", _inductive_check(N_IND, {})),
    ("valve_progress_flink_40475_fix", f"n=3, k<={K}, FLINK-40475 fix: safety + progress", "proved",
     _bmc_check(3, K, SAFETY + PROGRESS, {"flink_40475": True})),
    ("valve_progress_flink_40475_fix_inductive",
     f"n={N_IND}, every length (inductive invariant), FLINK-40475 fix: safety + progress", "proved",
     _inductive_check(N_IND, {"flink_40475": True}, with_progress=True)),
    ("valve_progress_flink_2_3_0", f"n=3, k<={K}, Flink 2.3.0 valve: progress (FLINK-40475 bug)",
     "counterexample", _bmc_check(3, K, PROGRESS, {})),
    ("valve_mutant_realign_below_output", f"n=3, k<={K}, mutant re-aligning below the output: bound",
     "counterexample", _bmc_check(3, K, SAFETY, {"realign_below_output": True})),
    ("valve_pre_flink_7721", f"n=3, k<={K}, no 'any channel aligned' check (FLINK-7721): bound",
     "counterexample", _bmc_check(3, K, SAFETY, {"check_aligned_nonempty": False})),
    ("valve_pre_flink_7728", f"n=3, k<={K}, no all-idle flush (FLINK-7728): all-idle flush",
     "counterexample", _bmc_check(3, K, ("all_idle_flush",), {"flush_on_all_idle": False})),
]


def register() -> None:
    """Register :data:`CHECKS` in ``spec.proofs``."""
    for name, scope, expected, fn in CHECKS:
        proofs.register(name, scope, expected, fn, f"StatusWatermarkValve: {fn.__doc__}")
