"""Timing and progress properties: the aligned-checkpoint timeout is honoured (neither early
nor never), and the unsafe variants each one catches survive as their safe twins."""

from __future__ import annotations

import pytest

from model import seams
from model.cluster import RuntimeConfig
from model.errors import FlinkspecError
from model.variants import generate, variant
from properties.engines import Run, random_walk, replay, shrink
from scenario_util import assert_safe_twin_takes_the_same_actions
from spec.checkpoint import aligned_checkpoint_timeout_honoured

INV = "aligned_checkpoint_timeout_honoured"


def _first_found(name: str, invariant: str, runs: int = 60):
    for seed in range(runs):
        r = random_walk(name, seed)
        if r.invariant == invariant:
            return seed, r
    raise AssertionError(f"{name}: no {invariant} violation in {runs} runs")


@pytest.mark.parametrize("name, words", [("alignment-timeout-early", "turns unaligned early"),
                                         ("alignment-timer-never", "holds no alignment timer")])
def test_variant_alignment_timer_is_caught_and_the_safe_timer_survives_the_same_actions(name, words):
    """A two-input task aligns a checkpoint of the alternating mode (aligned, timeout 4).
    "immediate": its timer is due at the trigger time; "never": it has none. The same actions
    with Flink's timer (due at trigger time + 4) violate nothing."""
    seed, r = _first_found(name, INV)
    scenario = generate(variant(name), seed)
    actions = shrink(scenario, list(r.actions), INV)
    v, _ = replay(scenario, actions, finish=False)
    assert v is not None and v.invariant == INV and words in v.message
    assert_safe_twin_takes_the_same_actions(scenario, actions)


def test_an_early_switch_to_unaligned_is_named_as_such():
    """The "not early" half: with the timer due at once, the AlignmentTimeout fires before the
    deadline and the task collects the rest of the barriers unaligned."""
    for seed in range(200):
        scenario = generate(variant("alignment-timeout-early"), seed)
        run = Run(scenario, check_always=False)
        c = run.cluster
        for _ in range(300):
            acts = c.enabled_actions()
            timeouts = [a for a in acts if type(a).__name__ == "AlignmentTimeout"]
            pick = timeouts or [a for a in acts if type(a).__name__ in ("TriggerCheckpoint", "Deliver", "SourceEmit")]
            if not pick:
                break
            run.step(pick[0])
            if timeouts:
                v = aligned_checkpoint_timeout_honoured(run)
                assert v is not None and "before its aligned-checkpoint timeout" in v.message
                return
    raise AssertionError("no alignment timeout fired early in 200 scenarios")


def test_safe_alternating_runs_honour_the_timeout():
    for seed in range(25):
        assert random_walk("alternating-2pc", seed).verdict == "pass", seed


def test_the_alignment_timer_is_a_seam_not_a_knob():
    with pytest.raises(TypeError):
        RuntimeConfig(alignment_timer="immediate")  # the unsafe timers are the seams alignment-timer-*
    with pytest.raises(FlinkspecError, match="both override SingleCheckpointBarrierHandler.alignment_deadline"):
        seams.check(("alignment-timer-immediate", "alignment-timer-never"))
