"""The step contract at every reachable state of small scenarios (properties/contract.py run by
the explorer at each state it expands): not sampled -- the search completes, so every state is
checked. The default run checks three small spaces; marked slow, every variant whose small
scenario is exhaustive."""

from __future__ import annotations

import attrs
import pytest

from model import actions as A
from model.cluster import Cluster
from model.variants import small_scenario, variant, variant_names
from properties.contract import contract_problems
from model.errors import FlinkspecError
from properties.explore import Limits, explore
from properties.explore_workers import ProcessLevels


def _checked(scenario, limits=Limits()):
    problems: list = []
    states = [0]

    def inspect(run):
        states[0] += 1
        for p in contract_problems(run.cluster):
            problems.append((run.cluster.now, p))

    ex = explore(scenario, limits, inspect=inspect)
    return ex, states[0], problems


def _small(name: str, **changes):
    v = variant(name)
    return small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, **changes)))


@pytest.mark.parametrize("name,changes", [("aligned-2pc", {"failures": 0}), ("append-sink-under-failures", {}),
                                          ("cp-no-fencing", {})])
def test_the_step_contract_holds_at_every_reachable_state(name, changes):
    ex, states, problems = _checked(_small(name, **changes))
    assert problems == []
    assert ex.verdict in ("verified", "violation")
    if ex.verdict == "verified":  # every state was expanded, so every state was checked
        assert states == ex.distinct_states


def test_the_contract_check_finds_a_step_that_changes_a_refused_state(monkeypatch):
    """A guard that refuses after changing the state is caught at the first state it refuses."""
    sc = _small("aligned-2pc", failures=0)
    real = Cluster.step

    def leaky(self, a):
        if type(a) is A.Deliver and self.why_not_enabled(a) is not None:
            self.now += 1  # a refused action that still moves the clock
        return real(self, a)

    monkeypatch.setattr(Cluster, "step", leaky)
    _ex, _states, problems = _checked(sc, Limits(max_depth=3))
    assert problems and "refused the action but changed the state" in problems[0][1]


def test_the_contract_check_finds_an_enabled_action_that_raises(monkeypatch):
    sc = _small("aligned-2pc", failures=0)
    real = Cluster.step
    seen = []

    def crashing(self, a):
        if type(a) is A.TriggerCheckpoint and self.why_not_enabled(a) is None and not seen:
            seen.append(a)
            raise KeyError("a crash in the mechanism")
        return real(self, a)

    monkeypatch.setattr(Cluster, "step", crashing)
    _ex, _states, problems = _checked(sc, Limits(max_depth=2))
    assert any("of an enabled action raised KeyError" in p for _n, p in problems)


def _exhaustive() -> list[str]:
    return [n for n in variant_names() if variant(n).small is not None
            and variant(n).small.search_seconds is not None]


def _strict(run) -> None:
    """The contract at a state, raising (in a worker process, the search then fails naming it)."""
    problems = contract_problems(run.cluster)
    if problems:
        raise AssertionError(f"the step contract does not hold at step {run.cluster.now}: {problems[:3]}")


@pytest.mark.slow
@pytest.mark.parametrize("name", _exhaustive())
def test_the_step_contract_holds_at_every_state_of_every_small_space(name):
    """On two worker processes (each checks the states it expands); a search that does not
    complete within the time given checked only part of the space, and fails."""
    sc = small_scenario(variant(name))
    with ProcessLevels(sc, True, 2, inspect=_strict) as levels:
        ex = explore(sc, Limits(max_seconds=1800), levels=levels)
    assert ex.verdict != "bounded", f"{name}: the search did not complete ({ex.limit}): not every state was checked"


def test_worker_processes_check_the_contract_at_the_states_they_expand(monkeypatch):
    sc = _small("aligned-2pc", failures=0)
    real = Cluster.step

    def leaky(self, a):
        if type(a) is A.Deliver and self.why_not_enabled(a) is not None:
            self.now += 1
        return real(self, a)

    monkeypatch.setattr(Cluster, "step", leaky)  # (inherited by the forked workers)
    with ProcessLevels(sc, True, 2, inspect=_strict) as levels:
        with pytest.raises(FlinkspecError, match="refused the action but changed the state"):
            explore(sc, Limits(max_depth=3), levels=levels)
