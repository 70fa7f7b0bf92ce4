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
from spec.timeliness import BOUNDS, idle_slot_release_bound, idle_slot_released_in_time

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
    return attrs.evolve(v, config=attrs.evolve(v.config, bugs=()))


@pytest.mark.slow  # 150 control-plane walks: about 20 s
def test_idle_slot_released_in_time_alone_catches_its_unsafe_variant_on_50_seeds_and_the_safe_twin_survives():
    v = variant("idle-time-restarted-by-heartbeat")
    assert v.expected == ("idle_slot_released_in_time",)
    found = _walks(v)
    caught = [s for s, inv in found.items() if inv is not None]
    assert caught, f"idle_slot_released_in_time found on none of {len(SEEDS)} seeds"
    assert {found[s] for s in caught} == {"idle_slot_released_in_time"}
    blind = _walks(v, without="idle_slot_released_in_time")
    assert all(blind[s] is None for s in caught), {s: blind[s] for s in caught if blind[s]}
    assert set(_walks(_safe(v)).values()) == {None}


@pytest.mark.slow  # two control-plane searches: about 30 s
def test_the_search_finds_the_late_release_and_verifies_the_safe_twin():
    v = variant("idle-time-restarted-by-heartbeat")
    ex = explore(small_scenario(v), Limits(max_seconds=120))
    assert ex.verdict == "violation" and ex.violation.invariant == "idle_slot_released_in_time"
    assert f"bound idle_slot_release is {v.config.slot_idle_timeout} interval(s)" in ex.violation.message
    safe = explore(small_scenario(_safe(v)), Limits(max_seconds=120))
    assert safe.verdict == "verified", (safe.verdict, safe.violation)


def test_the_bound_is_named_and_derived_from_the_configuration():
    inv = REGISTRY["idle_slot_released_in_time"]
    assert inv.kind == "always" and inv.history is not None
    assert "idle_slot_release" in BOUNDS and "idle_slot_release" in inv.statement
    c = variant("cp-blocking-regions").config
    assert idle_slot_release_bound(c) == c.slot_idle_timeout
    assert idle_slot_release_bound(attrs.evolve(c, slot_idle_timeout=5)) == 5


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
