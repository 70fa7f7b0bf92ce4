"""The exhaustive search's hot path, measured in one run (``flinkspec bench explore``).

On a variant's small scenario: the search itself (distinct states/s, transitions/s, for
``max_states`` states; and the same search with ``copy.deepcopy`` as the copier, for the
ratio), then, on the states it reached, the cost of each part of a
transition -- ``Cluster.copy`` (the model's copier, ``model.statecopy``, against
``copy.deepcopy`` with the same shared data), ``Cluster.step`` and ``Cluster.fingerprint``
-- as microseconds per call and the copier's speed-up ratio. Beside them, in the same run: the
search with every successor copied (no parent reuse), the fingerprint with the value-form
cache cleared before each call, and the search of the scenario with the sources' IDLE/ACTIVE
toggles unbounded (the small scenario before ``RuntimeConfig.max_idle_periods``: a larger
space, comparable with measurements made before). CPU time (``time.process_time``) is used
throughout, so other processes on the machine distort less.
"""

from __future__ import annotations

import copy
import random
import time

import attrs

from model import fingerprint
from model.cluster import Cluster
from model.variants import small_scenario, variant
from properties import explore as explore_module
from properties.explore import Limits, explore


def _deepcopy(c: Cluster) -> Cluster:
    """What ``Cluster.copy`` did with ``copy.deepcopy`` (same shared deployment data)."""
    memo = {id(o): o for o in (c.eg, c.job_input, c.config, c.strategy, c.task_managers, c._ops, *c.eg.subtasks)}
    for history in (c.trace, c.events, c.restored_from, c.trigger_results, c.completed_ids):
        memo[id(history)] = list(history)
    return copy.deepcopy(c, memo)


def _sample_states(name: str, n: int, seed: int) -> list[tuple[Cluster, object]]:
    """``n`` (state, enabled action) pairs from seeded walks of the small scenario."""
    rng = random.Random(seed)
    out = []
    sc = small_scenario(variant(name), seed)
    while len(out) < n:
        c = Cluster.from_scenario(sc)
        for _ in range(rng.randrange(1, 30)):
            acts = c.enabled_actions()
            if not acts:
                break
            out.append((c.copy(), rng.choice(acts)))
            c.step(out[-1][1])
    return out[:n]


def _per_call(fn, items, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for x in items:
            fn(x)
        best = min(best, time.process_time() - t0)
    return best / len(items) * 1e6


def _fingerprint_uncached(c: Cluster) -> str:
    """``Cluster.fingerprint`` with the value-form cache cleared first (every value's form
    computed again, as before the cache existed)."""
    for forms in fingerprint._VALUE_FORMS:
        forms.clear()
    return c.fingerprint()


def _timed_search(sc, max_states: int, consume: bool = True):
    """CPU seconds and result of the search; ``consume=False``: every successor is a copy
    (the parent is not reused for its last successor)."""
    plain = explore_module.expand
    if not consume:
        explore_module.expand = lambda *a, consume=False, **k: plain(*a, **k)
    try:
        t0 = time.process_time()
        ex = explore(sc, Limits(max_states=max_states))
        return time.process_time() - t0, ex
    finally:
        explore_module.expand = plain


def _paired(sc, max_states: int) -> tuple:
    """``(cpu, result, cpu_copying)``: the search with and without parent reuse, each run twice
    in alternating order and its best CPU time kept (a later search in one process runs
    slower: more objects for the garbage collector), with the same states and transitions."""
    runs: dict = {True: [], False: []}
    for consume in (True, False, False, True):
        runs[consume].append(_timed_search(sc, max_states, consume=consume))
    (cpu, ex), (cpu_copying, copying) = min(runs[True], key=lambda r: r[0]), min(runs[False], key=lambda r: r[0])
    assert (copying.distinct_states, copying.transitions) == (ex.distinct_states, ex.transitions)
    return cpu, ex, cpu_copying


def bench_explore(name: str = "aligned-2pc", max_states: int = 3000, samples: int = 300, seed: int = 0,
                  repeat: int = 3) -> dict:
    sc = small_scenario(variant(name), seed)
    cpu, ex, cpu_copying = _paired(sc, max_states)
    # the scenario with the sources' IDLE/ACTIVE toggles unbounded (the small scenario before
    # max_idle_periods): a larger space, for states/s comparable with earlier measurements
    toggles = attrs.evolve(sc, config=attrs.evolve(sc.config, max_idle_periods=None))
    cpu_toggles, ex_toggles, cpu_toggles_copying = _paired(toggles, max_states)
    fast_copy = Cluster.copy
    Cluster.copy = _deepcopy  # the same search with copy.deepcopy, for the ratio
    try:
        t0 = time.process_time()
        slow = explore(sc, Limits(max_states=max_states))
        cpu_deepcopy = time.process_time() - t0
    finally:
        Cluster.copy = fast_copy
    assert (slow.distinct_states, slow.transitions) == (ex.distinct_states, ex.transitions)
    states = _sample_states(name, samples, seed)
    copy_us = _per_call(lambda s: s[0].copy(), states, repeat)
    deepcopy_us = _per_call(lambda s: _deepcopy(s[0]), states, repeat)
    fingerprint_us = _per_call(lambda s: s[0].fingerprint(), states, repeat)
    fingerprint_uncached_us = _per_call(lambda s: _fingerprint_uncached(s[0]), states, repeat)

    def step(s):
        c = s[0].copy()
        c.step(s[1])

    step_us = max(_per_call(step, states, repeat) - copy_us, 0.0)
    return {
        "variant": name, "small": True, "seed": seed, "verdict": ex.verdict,
        "distinct_states": ex.distinct_states, "transitions": ex.transitions, "cpu_s": round(cpu, 3),
        "states_per_cpu_s": round(ex.distinct_states / cpu, 1), "transitions_per_cpu_s": round(ex.transitions / cpu, 1),
        "states_per_cpu_s_with_deepcopy": round(slow.distinct_states / cpu_deepcopy, 1),
        "search_speedup_vs_deepcopy": round(cpu_deepcopy / cpu, 2),
        "copy_us": round(copy_us, 1), "deepcopy_us": round(deepcopy_us, 1),
        "copy_speedup_vs_deepcopy": round(deepcopy_us / copy_us, 2),
        "fingerprint_us": round(fingerprint_us, 1), "step_us": round(step_us, 1), "samples": len(states),
        "fingerprint_uncached_us": round(fingerprint_uncached_us, 1),
        "fingerprint_speedup_from_value_cache": round(fingerprint_uncached_us / fingerprint_us, 2),
        "states_per_cpu_s_copying_every_successor": round(ex.distinct_states / cpu_copying, 1),
        "search_speedup_from_parent_reuse": round(cpu_copying / cpu, 2),
        "idle_toggles_distinct_states": ex_toggles.distinct_states, "idle_toggles_verdict": ex_toggles.verdict,
        "states_per_cpu_s_with_idle_toggles": round(ex_toggles.distinct_states / cpu_toggles, 1),
        "idle_toggles_speedup_from_parent_reuse": round(cpu_toggles_copying / cpu_toggles, 2),
    }
