"""spec/z3_valve.py: the bounded/inductive valve proofs, their counterexamples, and the
cross-check between the z3 transition relation and the Python valve.

    inputs (watermark/idle/active per channel) ──► z3 valve  ══ same trace ══  Python valve
"""

from __future__ import annotations

import random

import pytest

from spec import z3_valve
from spec.z3_valve import CHECKS, bmc, inductive, replay, z3_accepts_run

KNOBS = {
    "flink-2.3.0": {},
    "flink-40475-fix": {"flink_40475": True},
    "pre-flink-7728": {"flush_on_all_idle": False},
    "pre-flink-7721": {"check_aligned_nonempty": False},
    "mutant-realign-below-output": {"realign_below_output": True},
}


#: the bounded searches to k=16 inputs that take tens of seconds each: run in the slow run (and
#: by ``flinkspec prove``/``make check``). By default the inductive proofs (every length) stand
#: for the two bounded proofs, and ``test_flink_2_3_0_progress_counterexample_needs_three_channels``
#: (k=8) for the 2.3.0 progress counterexample.
SLOW_CHECKS = ("valve_safety", "valve_progress_flink_40475_fix", "valve_progress_flink_2_3_0")


class _Outcomes(dict):
    """name -> (expected, the check's outcome), each check run when first asked."""

    def __missing__(self, name):
        expected, fn = next((exp, fn) for n, _scope, exp, fn in CHECKS if n == name)
        out = self[name] = (expected, fn())
        return out


@pytest.fixture(scope="module")
def outcomes():
    return _Outcomes()


def _params(names):
    return [pytest.param(n, id=n, marks=[pytest.mark.slow] if n in SLOW_CHECKS else []) for n in names]


@pytest.mark.parametrize("name", _params([name for name, *_ in CHECKS]))
def test_every_check_gives_its_expected_result(outcomes, name):
    expected, out = outcomes[name]
    assert out[0] == expected, (name, out[0], out[1])


def test_four_checks_expect_a_counterexample():
    assert sum(1 for _n, _s, expected, _f in CHECKS if expected == "counterexample") == 4


@pytest.mark.parametrize("name", _params([name for name, _s, expected, _f in CHECKS if expected == "counterexample"]))
def test_counterexamples_replay_in_python_with_the_same_violation(outcomes, name):
    _expected, out = outcomes[name]
    cexs = {name: out[2]}
    for name, cex in cexs.items():
        assert cex["python_replay"]["step"] == cex["step"], name
        assert cex["property"] in cex["python_replay"]["violated"], name
        assert cex["fixed_valve_clean"], name
        # and independently of the check's own bookkeeping:
        knobs = cex["knobs"]
        steps = replay([tuple(i) for i in cex["trace"]], cex["channels"], knobs)
        assert steps and steps[0][0] == cex["step"]
        assert replay([tuple(i) for i in cex["trace"]], cex["channels"], {"flink_40475": True}) == []


def test_flink_2_3_0_progress_counterexample_on_three_channels():
    """The FLINK-40475 stall / skipped flush happens with three channels within 7 inputs..."""
    result, (trace, step, prop) = bmc(3, 8, z3_valve.PROGRESS, {})
    assert result == "counterexample" and step == len(trace) == 7
    assert replay(trace, 3, {})[0] == (step, [prop])  # the Python valve of Flink 2.3.0 agrees
    assert replay(trace, 3, {"flink_40475": True}) == []  # and the fixed valve is fine on it


@pytest.mark.slow  # a bounded proof (~15 s)
def test_flink_2_3_0_progress_counterexample_needs_three_channels():
    """... and cannot happen with two channels (k <= 8)."""
    assert bmc(2, 8, z3_valve.PROGRESS, {})[0] == "proved"


def test_mutant_knob_is_needed_for_the_bound_violation():
    result, (trace, step, prop) = bmc(3, 8, z3_valve.SAFETY, {"realign_below_output": True})
    assert result == "counterexample" and prop == "bound"
    assert replay(trace, 3, {}) == []  # the real valve is fine on the same inputs
    assert replay(trace, 3, {"realign_below_output": True})[0] == (step, ["bound"])


def test_inductive_invariant_fails_for_the_unsafe_variants():
    assert inductive(3, {"realign_below_output": True})[0] == "counterexample"
    assert inductive(3, {"check_aligned_nonempty": False})[0] == "counterexample"
    assert inductive(3, {}, with_progress=True)[0] == "counterexample"  # 2.3.0: FLINK-40475


def _random_trace(rng: random.Random, n: int, length: int) -> list[tuple]:
    out = []
    for _ in range(length):
        r = rng.random()
        ch = rng.randrange(n)
        if r < 0.5:
            out.append(("watermark", ch, rng.choice([rng.randint(-5, 25), -(2**63), 2**63 - 1])))
        elif r < 0.75:
            out.append(("idle", ch))
        else:
            out.append(("active", ch))
    return out


@pytest.mark.parametrize("variant", sorted(KNOBS))
def test_random_python_runs_satisfy_the_z3_transition_relation(variant):
    rng = random.Random(17 + sorted(KNOBS).index(variant))
    knobs = KNOBS[variant]
    for _ in range(25):
        n = rng.choice([1, 2, 3])
        trace = _random_trace(rng, n, rng.randint(1, 20))
        assert z3_accepts_run(trace, n, knobs) is None, (trace, z3_accepts_run(trace, n, knobs))


def test_cross_check_names_the_step_where_model_and_z3_part():
    trace = [("watermark", 1, 3), ("idle", 0), ("watermark", 2, 1), ("idle", 1),
             ("active", 0), ("idle", 2), ("active", 1)]
    step, py, zs = z3_accepts_run(trace, 3, {}, z3_knobs={"flink_40475": True})
    assert step == 7
    assert py[0] == 1 and zs[0] == 3  # last output watermark: Python 2.3.0 vs z3 with the fix


def test_checks_are_registered_in_the_proof_registry():
    from spec import proofs

    registry = proofs.load_all()
    for name, scope, expected, _fn in CHECKS:
        assert registry[name].expected == expected
        assert registry[name].scope == scope
