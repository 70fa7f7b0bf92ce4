"""Searches that change a source's parallelism on restore (family ``rescale_source``), and the
unsafe variant they catch."""

from __future__ import annotations

from model.variants import generate, small_scenario, variant
from properties.engines import random_walk, replay, replay_lenient
from pathlib import Path

import pytest

from properties.counterexample import load_counterexample
from properties.explore import Limits, explore
from scenario_util import safe_twin



def _corpus_file() -> Path:
    """The corpus's counterexample of rescale-source-state-by-index found by the explorer (its
    shortest: the corpus keeps what ``flinkspec corpus update`` wrote, named by content)."""
    import json

    found = [p for p in sorted((Path(__file__).parent.parent / "counterexamples" / "exactly_once").glob("*.ndjson"))
             if (h := json.loads(p.read_text().partition("\n")[0]))["variant"] == "rescale-source-state-by-index"
             and h["engine"] == "explore"]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow  # the search (~10 s)
def test_the_explorer_finds_the_lost_splits():
    scenario = small_scenario(variant("rescale-source-state-by-index"))
    found = explore(scenario, Limits(max_seconds=120))
    assert found.verdict == "violation" and found.violation.invariant == "exactly_once"
    assert len(found.trace) == len(load_counterexample(_corpus_file(), known_variant=True).actions)


def test_the_source_may_be_rescaled_on_restore():
    opts = [dict(generate(variant("rescale-source-savepoint"), seed).environment.rescale_options) for seed in range(20)]
    assert any(o.get("source") for o in opts) and all("agg" in o for o in opts)
    assert dict(small_scenario(variant("rescale-source-savepoint")).environment.rescale_options)["source"] == (1, 2)
    # the keyed-only family keeps its options
    assert all("source" not in dict(generate(variant("rescale-savepoint"), s).environment.rescale_options)
               for s in range(20))


def test_variant_operator_state_by_index_loses_splits_and_round_robin_survives_the_same_actions():
    """source p=2 -> keyBy -> agg -> sink; stop-with-savepoint, restart with the source at p=1.
    By index, the new subtask takes old subtask 0's split offsets only: old subtask 1's splits
    are never read again (exactly_once: records missing). Round-robin hands it both. The
    actions are the explorer's shortest counterexample of the small scenario, as the corpus
    keeps it (random walks reach this restore rarely; the search itself:
    test_the_explorer_finds_the_lost_splits, slow)."""
    cx = load_counterexample(_corpus_file(), known_variant=True)
    scenario = small_scenario(variant("rescale-source-state-by-index"))
    assert cx.variant == "rescale-source-state-by-index" and cx.header["engine"] == "explore"
    assert cx.scenario == scenario
    actions = list(cx.actions)
    v, _ = replay(scenario, actions)
    assert v is not None and v.invariant == "exactly_once" and "missing" in v.message
    assert any(type(a).__name__ == "RestartFromSavepoint" and "'source'" in repr(a) for a in actions)
    safe = safe_twin(scenario)
    # after the restore the safe twin still has the splits to read, so a SourceEnd of the
    # unsafe run is not enabled there: the same actions where enabled, then drained
    v_safe, run = replay_lenient(safe, actions)
    assert v_safe is None and run.cluster.is_drained()


def test_safe_source_rescaling_passes():
    for seed in range(20):
        assert random_walk("rescale-source-savepoint", seed).verdict == "pass", seed
