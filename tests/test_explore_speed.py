"""What makes the exhaustive search cheaper must not change what it finds: the value-form cache
of ``model.fingerprint``, the successor that reuses its parent (``expand(..., consume=True)``)
and the sources' idleness budget of the small scenarios (``Environment.max_idle_periods``)."""

from __future__ import annotations

import random

import attrs
import pytest

from model import actions as A
from model import fingerprint as F
from model.cluster import Cluster
from model.environment import Environment
from model.errors import FlinkspecError
from model.variants import generate, small_scenario, variant, variant_names
from properties.engines import Run
from properties.explore import Limits, expand, explore


def _walk_states(name: str, seed: int, n: int) -> list:
    """The states of a seeded walk of ``name``'s generated scenario (copies)."""
    rng = random.Random(seed)
    c = Cluster.from_scenario(generate(variant(name), seed))
    out = [c.copy()]
    for _ in range(n):
        acts = c.enabled_actions()
        if not acts:
            break
        c.step(rng.choice(acts))
        out.append(c.copy())
    return out


def _uncached_form(c: Cluster):
    F.clear_value_caches()
    return repr(F.canonical(c, not c.config.time_sensitive))


def test_the_value_form_cache_changes_no_fingerprint_and_fingerprints_do_not_collide():
    """On walks of every variant: a state's fingerprint is the same with the cache of value
    forms warm or cleared, and two states have one fingerprint exactly when their canonical
    forms are equal (no collision among the states met)."""
    by_fp: dict = {}
    forms = 0
    for name in variant_names():
        for c in _walk_states(name, 3, 25):
            warm = c.fingerprint()
            form = _uncached_form(c)
            assert F._VALUE_BYTES[0] == {} == F._VALUE_BYTES[1]
            assert c.fingerprint() == warm, f"{name}: the fingerprint depends on the cache"
            assert repr(F.canonical(c, not c.config.time_sensitive)) == form  # warm cache, same form
            key = (repr(c.eg.stream_graph), repr(c.job_input), repr(c.config), c.seed, form)
            have = by_fp.setdefault(warm, key)
            assert have == key, f"{name}: two different states share fingerprint {warm}"
            forms += 1
    assert forms > 500 and len(by_fp) > 200  # enough distinct states for the check to mean something


def test_a_value_form_does_not_depend_on_where_the_value_is_met():
    """A value's back-references are numbered within the value: the same snapshot gives the
    same form wherever it is met, and two equal values give one form."""
    met = 0
    for seed in range(4):
        for c in _walk_states("aligned-2pc", seed, 60):
            for snap in (s for acks in c.acks.values() for s in acks.values()):
                alone = F.canonical(snap)
                assert F.canonical((["x", [1]], snap)) == ("tuple", ("list", "x", ("list", 1)), alone)
                assert F.canonical(attrs.evolve(snap)) == alone
                met += 1
    assert met >= 5


def test_the_successor_that_reuses_its_parent_is_the_successor_of_a_copy():
    """``consume=True`` steps the parent itself for the last action: every successor (action,
    fingerprint, violation, sleep set) is the one the copying expansion gives."""
    checked = 0
    for name in ("aligned-2pc", "at-least-once-2pc", "unaligned-2pc", "blocking-region-failover"):
        sc = small_scenario(variant(name))
        root = Run(sc, track_goals=False)
        frontier = [root]
        for _depth in range(3):
            nxt = []
            for run in frontier:
                plain = [(a, r.cluster.fingerprint(), v and v.invariant, z) for a, r, v, z in expand(run, reduce=True)]
                succ = expand(run, reduce=True, consume=True)
                assert [(a, r.cluster.fingerprint(), v and v.invariant, z) for a, r, v, z in succ] == plain
                assert not succ or succ[-1][1] is run  # the parent itself became the last successor
                checked += len(succ)
                nxt += [r for _a, r, v, _z in succ if v is None]
            frontier = nxt
    assert checked > 100


def test_the_idleness_budget_bounds_source_idle_and_counts_only_under_a_budget():
    sc = small_scenario(variant("aligned-2pc"))
    assert sc.environment.max_idle_periods == 0
    one = sc.with_settings(max_idle_periods=1)
    c = Cluster.from_scenario(one)
    assert A.SourceIdle(0) in c.enabled_actions()
    c.step(A.SourceIdle(0))
    c.step(A.SourceActive(0))
    assert A.SourceIdle(0) not in c.enabled_actions()
    assert "max_idle_periods" in c.why_not_enabled(A.SourceIdle(0))
    # unbounded: an IDLE/ACTIVE toggle returns to a state already met once the statuses are delivered
    free = Cluster.from_scenario(sc.with_settings(max_idle_periods=None))
    free.step(A.SourceIdle(0))
    free.step(A.SourceActive(0))
    assert free.job.idle_periods == 0
    with pytest.raises(FlinkspecError, match="max_idle_periods"):
        Environment(max_idle_periods=-1)


def test_late_window_small_scenarios_keep_idleness():
    """Idleness and allowed lateness are the late-window family's mechanism: its small scenarios
    keep an idle period, two sources and a window with allowed lateness; every other cluster
    variant's small scenario has no idleness."""
    for name in variant_names():
        v = variant(name)
        sc = small_scenario(v)
        budget = sc.environment.max_idle_periods
        if v.family == "late_window":
            assert budget is None or budget >= 1, name
            (agg,) = [o for o in sc.graph.operators if o.kind == "window"]
            src = next(o for o in sc.graph.operators if o.kind == "source")
            assert agg.allowed_lateness > 0 and src.parallelism == 2, name
        else:
            assert budget == 0, name


def test_the_idleness_budget_keeps_a_known_unsafe_variant_found():
    """Without the toggles the shortest counterexample of a known-unsafe variant is found
    as before (the toggles are not part of any checkpointing mechanism)."""
    v = variant("unaligned-without-channel-state")
    with_toggles = small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, idle_periods=None)))
    a = explore(small_scenario(v), Limits(max_seconds=120))
    b = explore(with_toggles, Limits(max_seconds=120))
    assert a.verdict == b.verdict == "violation"
    assert a.violation.invariant == b.violation.invariant and len(a.trace) == len(b.trace)
    assert a.distinct_states <= b.distinct_states


def _plan_form(x):
    """What a task's plan holds, walked afresh (a fingerprint caches a value's form, so it would
    not see a plan changed in place): every chain node's slots, the plan's fields."""
    from model.streamtask import ChainNode, TaskOutput, TaskPlan, _Memo
    from model.statecopy import _slots_of
    t = type(x)
    if t is _Memo:
        return "memo"  # a memo of a pure function, filled as keys come
    if t in (tuple, frozenset, list):
        return (t.__name__,) + tuple(_plan_form(e) for e in (sorted(x) if t is frozenset else x))
    if isinstance(x, (ChainNode, TaskOutput, TaskPlan)):
        return (t.__name__,) + tuple((n, _plan_form(getattr(x, n, None))) for n in _slots_of(t))
    if t.__name__ == "LocalIndex":
        return ("LocalIndex", tuple(sorted(x.of.items())))
    return x if t in (int, str, bool, type(None)) else ("object", id(x))


def test_a_tasks_plan_never_changes():
    """A task's plan (its chain, its record writers, its channel indices) is a value every copy
    shares: on walks of every variant, none of it changes after it is first met, and a copy of
    the cluster holds the very same plan objects."""
    met = 0
    for name in variant_names():
        rng = random.Random(9)
        c = Cluster.from_scenario(generate(variant(name), 9))
        first: dict = {}
        for _ in range(60):
            for t in c.tasks:
                have = first.setdefault(id(t.plan), (t.plan, _plan_form(t.plan)))
                assert have[0] is not t.plan or have[1] == _plan_form(t.plan), f"{name}: the plan of {t.id} changed"
                met += 1
            assert [t.plan for t in c.copy().tasks] == [t.plan for t in c.tasks]
            acts = c.enabled_actions()
            if not acts:
                break
            c.step(rng.choice(acts))
    assert met > 1000
