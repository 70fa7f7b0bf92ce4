"""Timeliness (spec/timeliness.py): what must happen within a bound the configuration names --
each invariant against the known-unsafe variant only it catches, and the safe twin surviving."""

from __future__ import annotations

import attrs
import pytest

import properties.engines as engines
from model import actions as A
from model.variants import generate, small_scenario, variant
from properties.engines import Run, random_walk
from properties.explore import Limits, explore
from spec.invariant import REGISTRY
from spec.timeliness import (
    BOUNDS,
    idle_slot_release_bound,
    idle_slot_released_in_time,
    task_executor_timeout_bound,
)

SEEDS = range(50)


def _walks(v, without: str | None = None) -> dict:
    """seed -> the invariant violated (None: the run passed), with ``without`` not checked."""
    saved = engines.ALWAYS
    if without is not None:
        engines.ALWAYS = tuple(i for i in saved if i.name != without)
    try:
        return {seed: random_walk(v, seed).invariant for seed in SEEDS}
    finally:
        engines.ALWAYS = saved


def _safe(v):
    return attrs.evolve(v, seams=())


#: each timeliness invariant and the unsafe variant only it catches
CASES = [("idle-time-restarted-by-heartbeat", "idle_slot_released_in_time"),
         ("heartbeat-timeout-one-interval-late", "silent_task_executor_disconnected_in_time")]


@pytest.mark.slow  # 150 control-plane walks each: about 20 s
@pytest.mark.parametrize("name, invariant", CASES)
def test_the_invariant_alone_catches_its_unsafe_variant_on_50_seeds_and_the_safe_twin_survives(name, invariant):
    v = variant(name)
    assert v.expected == (invariant,)
    found = _walks(v)
    caught = [s for s, inv in found.items() if inv is not None]
    assert caught, f"{invariant} found on none of {len(SEEDS)} seeds"
    assert {found[s] for s in caught} == {invariant}
    blind = _walks(v, without=invariant)
    assert all(blind[s] is None for s in caught), {s: blind[s] for s in caught if blind[s]}
    assert set(_walks(_safe(v)).values()) == {None}


@pytest.mark.slow  # two control-plane searches: about 5 s
def test_the_search_finds_the_late_disconnection_and_verifies_the_safe_twin():
    """One lost heartbeat answer is enough (the small scenario's heartbeat timeout is 1): 16
    actions, about 600 states."""
    _search_finds("heartbeat-timeout-one-interval-late", "silent_task_executor_disconnected_in_time")


def _search_finds(name, invariant):
    v = variant(name)
    ex = explore(small_scenario(v), Limits(max_seconds=120))
    assert ex.verdict == "violation" and ex.violation.invariant == invariant
    assert "bound " in ex.violation.message and "interval(s)" in ex.violation.message
    safe = explore(small_scenario(_safe(v)), Limits(max_seconds=120))
    assert safe.verdict == "verified", (safe.verdict, safe.violation)


@pytest.mark.slow  # two control-plane searches: about 30 s
def test_the_search_finds_the_late_release_and_verifies_the_safe_twin():
    _search_finds("idle-time-restarted-by-heartbeat", "idle_slot_released_in_time")


def test_each_bound_is_named_and_derived_from_the_configuration():
    for name, bound in (("idle_slot_released_in_time", "idle_slot_release"),
                        ("silent_task_executor_disconnected_in_time", "task_executor_timeout")):
        inv = REGISTRY[name]
        assert inv.kind == "always" and inv.history is not None
        assert bound in BOUNDS and bound in inv.statement
    c = variant("cp-blocking-regions").config
    assert idle_slot_release_bound(c) == c.slot_idle_timeout
    assert idle_slot_release_bound(attrs.evolve(c, slot_idle_timeout=5)) == 5
    assert task_executor_timeout_bound(c) == c.heartbeat_timeout + 1
    assert task_executor_timeout_bound(attrs.evolve(c, heartbeat_timeout=4)) == 5


def test_a_free_slot_kept_past_the_bound_is_named_with_the_intervals_elapsed():
    """The safe blocking job stepped until a producer's slot is free and the pool holds more
    than it needs; its idle counter is then held back (the mechanism's own count is what a bug
    would get wrong) and heartbeat intervals pass: after the one that reaches the bound, the
    invariant names the slot, the bound and the intervals."""
    v = variant("cp-blocking-regions")
    for seed in SEEDS:
        run = Run(generate(v, seed))
        for a in random_walk(v, seed).actions:
            run.step(a)
            jm = run.cluster.cp.running_jobmaster()
            if jm is not None and jm.idle and len(jm.pool) > jm.required:
                break
        else:
            continue
        break
    else:
        raise AssertionError("no walk of cp-blocking-regions held a free slot beyond its requirement")
    c = run.cluster
    bound = idle_slot_release_bound(c.config)
    assert idle_slot_released_in_time(run) is None
    got = None
    for _ in range(bound + 1):
        # every RPC in flight delivered (the heartbeats answered: the TaskExecutor stays), then
        # the next interval, with the mechanism's own count of the free slot's intervals held back
        while (rpcs := [a for a in run.enabled_actions() if type(a) is A.RpcDeliver]):
            assert run.step(rpcs[0]) is None
        for j in jm.idle:
            jm.idle[j] = -1
        c.step(A.Tick())
        got = idle_slot_released_in_time(run)
        if got is not None:
            break
    assert got is not None, "the slot outlived its bound unnoticed"
    assert got.actual["intervals"] == bound and f"{bound} heartbeat interval(s)" in got.message
