"""Engines: determinism of random walks, replay, shrinking, and the verdict of every variant.

The unsafe variants must be *found* (the suite has teeth) and the safe ones must pass, with
the same deterministic seeds the check command uses.
"""

import pytest

from model.variants import VARIANTS, generate, variant
from properties.engines import random_walk, replay, shrink, trace_hash
from properties.suites import run_variant_suite

UNSAFE = [n for n, v in VARIANTS.items() if not v.safe]
SAFE = [n for n, v in VARIANTS.items() if v.safe]


def test_random_walk_is_deterministic():
    a = random_walk("aligned-2pc", 5)
    b = random_walk("aligned-2pc", 5)
    assert a.trace_hash == b.trace_hash
    assert a.actions == b.actions and a.steps == b.steps and a.verdict == b.verdict
    c = random_walk("aligned-2pc", 6)
    assert c.trace_hash != a.trace_hash


def test_walk_trace_replays_to_the_same_state():
    r = random_walk("unaligned-2pc", 3)
    v, run = replay(generate(variant("unaligned-2pc"), 3), r.actions, finish=False)
    assert v is None
    assert trace_hash(run.cluster.trace) == r.trace_hash
    assert run.cluster.now == r.steps


@pytest.mark.parametrize("name", UNSAFE)
def test_unsafe_variant_is_caught(name):
    v = VARIANTS[name]
    res = run_variant_suite(v, max_runs=150)
    assert res.found, f"{name}: no violation of {v.expected} in {res.runs} runs"
    assert res.as_expected, f"{name}: violations {dict(res.violations)} outside the expected {v.expected}"


@pytest.mark.parametrize("name", SAFE)
def test_safe_variant_passes(name):
    res = run_variant_suite(VARIANTS[name], max_runs=40)
    assert not res.violations, f"{name}: {res.first_violation}"
    assert res.runs == 40


def test_shrink_keeps_the_violation_and_does_not_grow():
    name = "at-least-once-2pc"
    v = variant(name)
    for seed in range(50):
        r = random_walk(v, seed)
        if r.verdict == "violation":
            break
    else:
        pytest.fail("no violation to shrink")
    sc = generate(v, seed)
    small = shrink(sc, list(r.actions), r.invariant)
    assert len(small) <= len(r.actions)
    got, _ = replay(sc, small, finish=True)
    assert got is not None and got.invariant == r.invariant


def test_a_wrong_expectation_is_reported_as_unexpected():
    """The judge itself can fail: an unsafe configuration declared safe is not 'as expected'."""
    import attrs

    wrong = attrs.evolve(VARIANTS["at-least-once-2pc"], expected=("pass",))
    res = run_variant_suite(wrong, max_runs=60)
    assert res.violations and not res.as_expected
