"""Per task, snapshots in increasing checkpoint order (spec/checkpoint.py
``snapshots_in_checkpoint_order``) and the unsafe variant it catches."""

from __future__ import annotations

import attrs

from model.variants import generate, variant
from properties.engines import Run, random_walk, replay, shrink


def _found():
    for seed in range(50):
        r = random_walk("unchecked-barrier-order", seed)
        if r.invariant == "snapshots_in_checkpoint_order":
            return seed, r
    raise AssertionError("the search did not find the unsafe variant's violation in 50 runs")


def test_variant_unchecked_barrier_order_is_caught_and_the_safe_twin_survives_the_same_actions():
    """two_stage job, unaligned checkpoints concurrent with aligned savepoints: the savepoint's
    aligned barrier arrives after the newer unaligned checkpoint's barrier overtook it. With
    the knob the handler snapshots the older checkpoint then; without it the barrier is skipped."""
    seed, r = _found()
    scenario = generate(variant("unchecked-barrier-order"), seed)
    actions = shrink(scenario, list(r.actions), "snapshots_in_checkpoint_order")
    v, _ = replay(scenario, actions, finish=False)
    assert v is not None and v.invariant == "snapshots_in_checkpoint_order"
    assert "took a snapshot of checkpoint" in v.message
    safe = attrs.evolve(scenario, config=attrs.evolve(scenario.config, bugs=()))
    run = Run(safe)
    for a in actions:
        assert run.cluster.why_not_enabled(a) is None, a
        assert run.step(a) is None
    assert run.finish() is None


def test_safe_runs_acknowledge_in_increasing_order():
    for name in ("unaligned-savepoints-2pc", "concurrent-checkpoints-2pc"):
        for seed in range(15):
            assert random_walk(name, seed).verdict == "pass", (name, seed)
