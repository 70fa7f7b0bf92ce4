"""The exhaustive search's hot path, measured in one run (``flinkspec bench explore``).

On a variant's small scenario: the search itself (distinct states/s, transitions/s, for
``max_states`` states; and the same search with ``copy.deepcopy`` as the copier, for the
ratio), then, on the states it reached, the cost of each part of a
transition -- ``Cluster.copy`` (the model's copier, ``model.statecopy``, against
``copy.deepcopy`` with the same shared data), ``Cluster.step`` and ``Cluster.fingerprint``
-- as microseconds per call and the copier's speed-up ratio. Beside them, in the same run: the
search with every successor copied (no parent reuse), the fingerprint with the value-form
cache cleared before each call, and the search of the scenario with the sources' IDLE/ACTIVE
toggles unbounded (the small scenario before ``Environment.max_idle_periods``: a larger
space, comparable with measurements made before); the search and the per-call costs with the
Python walks instead of the C ones (``model._native``), and the fingerprint hashed from the
canonical form built as tuples and serialized by ``marshal`` (before the C walk wrote the
canonical bytes itself); the first 20,000 states of a larger space
(unaligned-savepoints-2pc ``--small``) with the cyclic garbage collector off, as every search
runs, and on; the same 20,000 states with the frontier kept as runs and as traces
(``Limits.frontier``), each in a fresh interpreter: resident memory per state and states per
CPU second. CPU time (``time.process_time``) is used
throughout, so other processes on the machine distort less -- except for the last ratio: the
wall seconds of a larger search (rocksdb-incremental ``--small``) in one process and on
two worker processes (``properties.explore_workers``), each in a fresh interpreter, with the
same counts.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import hashlib
import json
import marshal
import random
import re
import subprocess
import sys
import time

import attrs

from model import fingerprint, statecopy
from model.cluster import Cluster
from model.variants import small_scenario, variant
from properties import explore as explore_module
from properties.explore import Limits, explore


def _deepcopy(c: Cluster) -> Cluster:
    """What ``Cluster.copy`` did with ``copy.deepcopy`` (same shared deployment data)."""
    memo = {id(o): o for o in (c.eg, c.job_input, c.config, c.environment, c.strategy, c.task_managers, c._ops, *c.eg.subtasks)}
    for history in (c.trace, c.events, c.restored_from, c.trigger_results, c.completed_ids, c.channel_rescales):
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
    """``Cluster.fingerprint`` with the value caches cleared first (every value's form and
    bytes computed again, as before the cache existed)."""
    fingerprint.clear_value_caches()
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


def _paired(sc, max_states: int, rounds: int = 3) -> tuple:
    """``(cpu, result, cpu_copying)``: the search with and without parent reuse, each run
    ``rounds`` times in alternating order and its best CPU time kept (a later search in one
    process runs slower: more objects for the garbage collector; the small spaces' searches
    take a fraction of a second, so one run is noisy), with the same states and transitions."""
    runs: dict = {True: [], False: []}
    for consume in (True, False, False, True, True, False)[:2 * rounds]:
        runs[consume].append(_timed_search(sc, max_states, consume=consume))
    (cpu, ex), (cpu_copying, copying) = min(runs[True], key=lambda r: r[0]), min(runs[False], key=lambda r: r[0])
    assert (copying.distinct_states, copying.transitions) == (ex.distinct_states, ex.transitions)
    return cpu, ex, cpu_copying


@contextlib.contextmanager
def _python_walks():
    """The copy and canonical walks in Python (``model.statecopy.py_deep_copy``,
    ``model.fingerprint.py_canonical`` and ``py_canonical_bytes``) instead of C, for the ratio."""
    was = statecopy._impl is not statecopy.py_deep_copy, fingerprint._impl is not fingerprint.py_canonical
    statecopy.use_native(False)
    fingerprint.use_native(False)
    try:
        yield
    finally:
        statecopy.use_native(was[0])
        fingerprint.use_native(was[1])


#: the cyclic garbage collector's thresholds a search ran with before it switched the
#: collector off (a first threshold of 50,000 allocations instead of 700)
_OLD_SEARCH_GC_THRESHOLD = (50_000, 20, 100)


@contextlib.contextmanager
def _cyclic_gc_on():
    """The search with the cyclic garbage collector on, at the thresholds it used to raise it
    to, instead of off (``properties.explore._without_cyclic_gc``), for the ratio."""
    plain = explore_module._without_cyclic_gc

    @contextlib.contextmanager
    def collecting():
        old = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(*_OLD_SEARCH_GC_THRESHOLD)
        try:
            yield
        finally:
            gc.unfreeze()
            gc.set_threshold(*old)

    explore_module._without_cyclic_gc = collecting
    try:
        yield
    finally:
        explore_module._without_cyclic_gc = plain


def _gc_ratio(name: str, max_states: int, seed: int) -> dict:
    """CPU seconds of the first ``max_states`` states of ``name``'s small scenario with the
    cyclic garbage collector off (as every search runs) and on, with the same counts: a
    larger space than the main one, whose frontier -- what each collection walks again --
    holds thousands of states."""
    sc = small_scenario(variant(name), seed)
    off, ex = _timed_search(sc, max_states)
    with _cyclic_gc_on():
        on, ex_on = _timed_search(sc, max_states)
    assert (ex_on.distinct_states, ex_on.transitions) == (ex.distinct_states, ex.transitions)
    return {"gc_variant": name, "gc_distinct_states": ex.distinct_states, "gc_transitions": ex.transitions,
            "cpu_s_without_cyclic_gc": round(off, 2), "cpu_s_with_cyclic_gc": round(on, 2),
            "search_speedup_without_cyclic_gc": round(on / off, 2)}


_MARK_BYTES = re.compile("\u27e8([A-Z])([0-9]{12})\u27e9".encode())


def _marshal_fingerprint(c: Cluster) -> str:
    """The fingerprint made as it was before the C walk wrote the canonical bytes itself: the
    canonical form built as tuples (C walk), serialized by ``marshal``, each fresh identifier's
    marker replaced in those bytes by its rank, for the ratio: the same equalities, another hash."""
    form = fingerprint.canonical(c, not c.config.time_sensitive)  # what Cluster.fingerprint hashes
    data = marshal.dumps(form, 2)
    ranks: dict = {}
    for tag, digits in sorted(set(_MARK_BYTES.findall(data))):
        ranks[tag] = rank = ranks.get(tag, 0) + 1
        data = data.replace(tag + digits + "\u27e9".encode(), tag + b"#%011d" % rank + "\u27e9".encode())
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _best_search(sc, max_states: int, runs: int = 2):
    """The best CPU time of ``runs`` searches (later searches in one process run slower)."""
    return min(_timed_search(sc, max_states) for _ in range(runs))[0]


def _workers_ratio(name: str, seed: int, workers: int) -> dict:
    """Wall seconds of the whole search of ``name``'s small scenario in one process and on
    ``workers`` processes (``properties.explore_workers``), each in a fresh interpreter
    (``flinkspec explore --json``: its ``seconds``, the search alone) -- a search in a process
    that already ran one is slower, and the workers fork the process they start in -- with the
    same counts."""
    rows = []
    for k in (1, workers):
        out = subprocess.run([sys.executable, "-m", "flinkspec", "explore", "--variant", name, "--small", "--seed",
                              str(seed), "--workers", str(k), "--json", "--no-write"],
                             capture_output=True, text=True, check=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
    one, many = rows
    assert [many[f] for f in ("verdict", "distinct_states", "transitions", "depth")] == \
        [one[f] for f in ("verdict", "distinct_states", "transitions", "depth")]
    return {"workers_variant": name, "workers": workers, "workers_distinct_states": one["distinct_states"],
            "wall_s_one_process": one["seconds"], "wall_s_workers": many["seconds"],
            "states_per_s_one_process": one["states_per_s"], "states_per_s_workers": many["states_per_s"],
            "speedup_from_workers": round(one["seconds"] / many["seconds"], 2)}


_FRONTIER_PROBE = """
import json, sys, time
from model.variants import small_scenario, variant
from properties.explore import Limits, explore, resident_bytes
sc = small_scenario(variant(sys.argv[1]), int(sys.argv[2]))
before = resident_bytes()
t0 = time.process_time()
ex = explore(sc, Limits(max_states=int(sys.argv[3]), frontier=sys.argv[4]))
cpu = time.process_time() - t0
print(json.dumps({"states": ex.distinct_states, "transitions": ex.transitions, "depth": ex.depth,
                  "cpu_s": cpu, "grown": resident_bytes() - before, "peak_frontier_s": ex.seconds}))
"""


def _frontier_ratio(name: str, max_states: int, seed: int) -> dict:
    """The first ``max_states`` states of ``name``'s small scenario with the frontier kept as runs
    and as traces (``Limits.frontier``), each in a fresh interpreter: the resident memory the
    search added, per distinct state, and the states per CPU second -- the same counts."""
    rows = {}
    for mode in ("runs", "traces"):
        out = subprocess.run([sys.executable, "-c", _FRONTIER_PROBE, name, str(seed), str(max_states), mode],
                             capture_output=True, text=True, check=True).stdout
        rows[mode] = json.loads(out.strip().splitlines()[-1])
    runs, traces = rows["runs"], rows["traces"]
    assert [runs[f] for f in ("states", "transitions", "depth")] == [traces[f] for f in ("states", "transitions", "depth")]
    per = {m: r["grown"] / r["states"] for m, r in rows.items()}
    return {"frontier_variant": name, "frontier_distinct_states": runs["states"],
            "bytes_per_state_frontier_runs": round(per["runs"]), "bytes_per_state_frontier_traces": round(per["traces"]),
            "memory_ratio_runs_to_traces": round(per["runs"] / per["traces"], 1) if per["traces"] > 0 else None,
            "states_per_cpu_s_frontier_runs": round(runs["states"] / runs["cpu_s"], 1),
            "states_per_cpu_s_frontier_traces": round(traces["states"] / traces["cpu_s"], 1),
            "cpu_ratio_traces_to_runs": round(traces["cpu_s"] / runs["cpu_s"], 2)}


def bench_explore(name: str = "aligned-2pc", max_states: int = 3000, samples: int = 300, seed: int = 0,
                  repeat: int = 3, workers_variant: str = "rocksdb-incremental", workers: int = 2,
                  gc_variant: str = "unaligned-savepoints-2pc", gc_max_states: int = 20_000) -> dict:
    sc = small_scenario(variant(name), seed)
    cpu, ex, cpu_copying = _paired(sc, max_states)
    with _python_walks():
        cpu_python = _best_search(sc, max_states)
    # the scenario with the sources' IDLE/ACTIVE toggles unbounded (the small scenario before
    # max_idle_periods): a larger space, for states/s comparable with earlier measurements
    toggles = attrs.evolve(sc, environment=attrs.evolve(sc.environment, max_idle_periods=None))
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
    fingerprint_marshal_us = _per_call(lambda s: _marshal_fingerprint(s[0]), states, repeat)
    with _python_walks():
        copy_python_us = _per_call(lambda s: s[0].copy(), states, repeat)
        fingerprint_python_us = _per_call(lambda s: s[0].fingerprint(), states, repeat)

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
        "c_walks": statecopy.native_available(),
        "states_per_cpu_s_python_walks": round(ex.distinct_states / cpu_python, 1),
        "search_speedup_from_c_walks": round(cpu_python / cpu, 2),
        "copy_python_us": round(copy_python_us, 1), "copy_speedup_from_c": round(copy_python_us / copy_us, 2),
        "fingerprint_python_us": round(fingerprint_python_us, 1),
        "fingerprint_speedup_from_c": round(fingerprint_python_us / fingerprint_us, 2),
        "fingerprint_marshal_us": round(fingerprint_marshal_us, 1),
        "fingerprint_speedup_from_direct_bytes": round(fingerprint_marshal_us / fingerprint_us, 2),
        "states_per_cpu_s_copying_every_successor": round(ex.distinct_states / cpu_copying, 1),
        "search_speedup_from_parent_reuse": round(cpu_copying / cpu, 2),
        "idle_toggles_distinct_states": ex_toggles.distinct_states, "idle_toggles_verdict": ex_toggles.verdict,
        "states_per_cpu_s_with_idle_toggles": round(ex_toggles.distinct_states / cpu_toggles, 1),
        "idle_toggles_speedup_from_parent_reuse": round(cpu_toggles_copying / cpu_toggles, 2),
        **_gc_ratio(gc_variant, gc_max_states, seed),
        **_frontier_ratio(gc_variant, gc_max_states, seed),
        **_workers_ratio(workers_variant, seed, workers),
    }
