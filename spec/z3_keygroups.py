"""z3 proofs for key groups over ALL parameters ``1 <= p <= maxP <= 32768``.

What is proved (``KeyGroupRangeAssignment``, see ``model/keygroups.py``), for every
``1 <= p <= maxP <= 32768``, every subtask ``0 <= i < p`` and every key group ``0 <= kg < maxP``,
with ``start(i) = (i*maxP + p - 1) / p`` and ``end(i) = ((i+1)*maxP - 1) / p``:

* ``keygroups.partition``: ``start(0) = 0``, ``end(p-1) = maxP-1``,
  ``start(i) = end(i-1) + 1`` and ``start(i) <= end(i)``: the ranges of subtasks 0..p-1 are
  non-empty, consecutive and cover ``[0, maxP)`` exactly once;
* ``keygroups.operator_index``: ``0 <= kg*p/maxP < p`` and
  ``computeOperatorIndexForKeyGroup(maxP, p, kg) = i  <=>  start(i) <= kg <= end(i)``;
* ``keygroups.no_int32_overflow``: every intermediate value of those Java ``int`` expressions
  lies in ``[-2^31, 2^31)`` and every dividend is ``>= 0``. So Java's wrapping ``int``
  arithmetic and truncating ``/`` compute exactly the mathematical integers and floor division
  that the two proofs above reason about (z3 ``Int``, where ``/`` is floor division for a
  positive divisor). Proving over 32-bit bit-vectors directly times out; this split does not.

Each property is proved by asking z3 for a model of its negation under the scope constraints;
``unsat`` means no parameter in the scope violates it.

* ``keygroups.mutant_floor_start`` runs the *same* encoding with a wrong range start
  (``start(i) = i*maxP / p``, a floor instead of a ceiling). z3 finds a counterexample (smallest
  ``maxP`` first), and the counterexample's parameters are fed to a plain Python function using
  that wrong formula (:func:`replay_counterexample`), which must really misbehave (a key group
  owned by two subtasks or by none, or routed to a subtask that does not own it).

The formulas are written once, generic over the division operator (:class:`Formulas`), and
used both for z3 terms and for Python ints.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import attrs
import z3

from model import keygroups
from spec.proofs import proof

UPPER = keygroups.UPPER_BOUND_MAX_PARALLELISM
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SCOPE = f"1<=p<=maxP<={UPPER}, 0<=i<p, 0<=kg<maxP"

Div = Callable[[Any, Any], Any]


def _z3_div(a, b):
    return a / b  # z3 Int: floor division (b > 0 in scope)


def _py_div(a: int, b: int) -> int:
    return a // b  # dividends are >= 0 in scope (proved by keygroups.no_int32_overflow)


@attrs.frozen(slots=True)
class Formulas:
    """The three formulas of KeyGroupRangeAssignment, generic over ``div``."""

    name: str
    start: Callable[[Any, Any, Any, Div], Any] = attrs.field(repr=False)
    end: Callable[[Any, Any, Any, Div], Any] = attrs.field(repr=False)
    operator_index: Callable[[Any, Any, Any, Div], Any] = attrs.field(repr=False)

    def range_for(self, max_p: int, p: int, i: int) -> tuple[int, int]:
        return self.start(i, max_p, p, _py_div), self.end(i, max_p, p, _py_div)

    def index_for(self, max_p: int, p: int, kg: int) -> int:
        return self.operator_index(kg, max_p, p, _py_div)


#: Flink's formulas (computeKeyGroupRangeForOperatorIndex / computeOperatorIndexForKeyGroup).
FLINK = Formulas(
    name="flink",
    start=lambda i, m, p, div: div(i * m + p - 1, p),
    end=lambda i, m, p, div: div((i + 1) * m - 1, p),
    operator_index=lambda kg, m, p, div: div(kg * p, m),
)

#: A wrong variant: the range start rounds down (``i*maxP/p``) instead of up.
FLOOR_START = attrs.evolve(FLINK, name="floor_start", start=lambda i, m, p, div: div(i * m, p))


def _vars():
    return z3.Ints("maxP p i kg")


def _scope(m, p, i, kg):
    return [1 <= p, p <= m, m <= UPPER, 0 <= i, i < p, 0 <= kg, kg < m]


def goals(f: Formulas) -> dict[str, Any]:
    """The properties, as z3 formulas over (maxP, p, i, kg)."""
    m, p, i, kg = _vars()
    start = lambda j: f.start(j, m, p, _z3_div)  # noqa: E731
    end = lambda j: f.end(j, m, p, _z3_div)  # noqa: E731
    idx = f.operator_index(kg, m, p, _z3_div)
    return {
        "range(0).start == 0": start(0) == 0,
        "range(p-1).end == maxP-1": end(p - 1) == m - 1,
        "range(i).start == range(i-1).end + 1": z3.Implies(i >= 1, start(i) == end(i - 1) + 1),
        "range(i).start <= range(i).end": start(i) <= end(i),
        "0 <= operatorIndex(kg) < p": z3.And(0 <= idx, idx < p),
        "operatorIndex(kg) == i <=> kg in range(i)": (idx == i) == z3.And(start(i) <= kg, kg <= end(i)),
    }


PARTITION_GOALS = (
    "range(0).start == 0",
    "range(p-1).end == maxP-1",
    "range(i).start == range(i-1).end + 1",
    "range(i).start <= range(i).end",
)
INDEX_GOALS = ("0 <= operatorIndex(kg) < p", "operatorIndex(kg) == i <=> kg in range(i)")
#: Goals whose counterexample involves the subtask index i.
_GOALS_WITH_I = (
    "range(i).start == range(i-1).end + 1",
    "range(i).start <= range(i).end",
    "operatorIndex(kg) == i <=> kg in range(i)",
)


def _model_dict(model, goal: str) -> dict:
    m, p, i, kg = _vars()
    val = lambda v: model.eval(v, model_completion=True).as_long()  # noqa: E731
    cex = {"goal": goal, "max_parallelism": val(m), "parallelism": val(p)}
    if goal in _GOALS_WITH_I:
        cex["operator_index"] = val(i)
    if goal in INDEX_GOALS:
        cex["key_group"] = val(kg)
    return cex


def prove_goals(f: Formulas, names, timeout_s: float | None = None, minimize: bool = False):
    """Check each goal ``name`` of ``goals(f)``: ``(result, details, counterexample)``.

    ``proved`` when every negated goal is unsat in the scope; at the first sat goal,
    ``counterexample`` with the model (with ``minimize``, the smallest maxP, then p).
    """
    all_goals = goals(f)
    m, p, i, kg = _vars()
    times = []
    for name in names:
        t0 = time.perf_counter()
        s = z3.Optimize() if minimize else z3.Solver()
        if timeout_s:
            s.set(timeout=int(timeout_s * 1000))
        s.add(*_scope(m, p, i, kg))
        s.add(z3.Not(all_goals[name]))
        if minimize:
            s.minimize(m)
            s.minimize(p)
        r = s.check()
        times.append(f"{time.perf_counter() - t0:.3f}s")
        if r == z3.sat:
            cex = _model_dict(s.model(), name)
            return "counterexample", f"{name} fails at {cex}", cex
        if r != z3.unsat:
            return "unknown", f"{name}: z3 {r} ({s.reason_unknown()})", None
    return "proved", f"{len(names)} goals unsat ({', '.join(times)})", None


def overflow_terms(m, p, i, kg) -> dict[str, Any]:
    """Every intermediate value of the Java expressions, in Java's evaluation order."""
    return {
        "i*maxP": i * m,
        "i*maxP + p": i * m + p,
        "i*maxP + p - 1": i * m + p - 1,
        "i + 1": i + 1,
        "(i+1)*maxP": (i + 1) * m,
        "(i+1)*maxP - 1": (i + 1) * m - 1,
        "kg*p": kg * p,
    }


DIVIDENDS = ("i*maxP + p - 1", "(i+1)*maxP - 1", "kg*p")


def prove_no_overflow(timeout_s: float | None = None):
    m, p, i, kg = _vars()
    terms = overflow_terms(m, p, i, kg)
    ok = [z3.And(INT_MIN <= t, t <= INT_MAX) for t in terms.values()]
    ok += [terms[d] >= 0 for d in DIVIDENDS]
    s = z3.Solver()
    if timeout_s:
        s.set(timeout=int(timeout_s * 1000))
    s.add(*_scope(m, p, i, kg))
    s.add(z3.Not(z3.And(*ok)))
    r = s.check()
    if r == z3.unsat:
        return "proved", f"{len(terms)} int32 terms in range, {len(DIVIDENDS)} dividends >= 0", None
    if r == z3.sat:
        cex = _model_dict(s.model(), "no int32 overflow")
        return "counterexample", f"overflow at {cex}", cex
    return "unknown", f"z3 {r} ({s.reason_unknown()})", None


def replay_counterexample(cex: dict, f: Formulas = FLOOR_START) -> list[str]:
    """Feed ``cex``'s (maxP, p) to plain Python functions using formulas ``f``; return every
    problem found over all key groups (owned by != 1 subtask, routed to a non-owner, ranges
    not starting at 0 / ending at maxP-1). Empty list: no failure."""
    max_p, p = cex["max_parallelism"], cex["parallelism"]
    ranges = [f.range_for(max_p, p, i) for i in range(p)]
    problems = []
    if ranges[0][0] != 0:
        problems.append(f"range of subtask 0 starts at {ranges[0][0]}, not 0")
    if ranges[-1][1] != max_p - 1:
        problems.append(f"range of subtask {p - 1} ends at {ranges[-1][1]}, not {max_p - 1}")
    for i, (s, e) in enumerate(ranges):
        if s > e:
            problems.append(f"range of subtask {i} is empty: [{s}, {e}]")
    for kg in range(max_p):
        owners = [i for i, (s, e) in enumerate(ranges) if s <= kg <= e]
        routed = f.index_for(max_p, p, kg)
        if len(owners) != 1:
            problems.append(f"key group {kg} owned by subtasks {owners}")
        elif routed != owners[0]:
            problems.append(f"key group {kg} routed to subtask {routed}, owned by {owners[0]}")
    return problems


@proof(
    "keygroups.partition",
    scope=SCOPE,
    expected="proved",
    description="ranges of subtasks 0..p-1 are non-empty, consecutive, cover [0,maxP)",
)
def _partition(timeout_s: float | None = None):
    return prove_goals(FLINK, PARTITION_GOALS, timeout_s)


@proof(
    "keygroups.operator_index",
    scope=SCOPE,
    expected="proved",
    description="computeOperatorIndexForKeyGroup(kg) == i iff kg in range(i)",
)
def _operator_index(timeout_s: float | None = None):
    return prove_goals(FLINK, INDEX_GOALS, timeout_s)


@proof(
    "keygroups.no_int32_overflow",
    scope=SCOPE,
    expected="proved",
    description="no int32 overflow and non-negative dividends in the Java expressions",
)
def _no_overflow(timeout_s: float | None = None):
    return prove_no_overflow(timeout_s)


@proof(
    "keygroups.mutant_floor_start",
    scope=SCOPE,
    expected="counterexample",
    description="mutation start=i*maxP/p (floor): z3 finds a counterexample that fails in Python",
)
def _mutant_floor_start(timeout_s: float | None = None):
    result, details, cex = prove_goals(
        FLOOR_START, PARTITION_GOALS + INDEX_GOALS, timeout_s, minimize=True
    )
    if result != "counterexample":
        return result, details, cex
    problems = replay_counterexample(cex, FLOOR_START)
    if not problems:
        return "unknown", f"z3 counterexample {cex} does NOT fail in Python", cex
    if replay_counterexample(cex, FLINK):
        return "unknown", f"Flink's own formulas fail at {cex}: encoding broken", cex
    cex = dict(cex, python_failures=problems[:5])
    return (
        "counterexample",
        f"maxP={cex['max_parallelism']} p={cex['parallelism']}: {cex['goal']} fails; "
        f"Python: {problems[0]}",
        cex,
    )
