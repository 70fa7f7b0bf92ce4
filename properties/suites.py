"""Suites: what ``flinkspec check`` runs, per profile, and how a suite's verdict is judged.

A suite searches one variant (``model.variants``) with seeded random walks (and, for the
focused suites, Hypothesis). A *safe* variant passes when no run violates anything; an
*unsafe* one passes when the search finds a violation of one of its expected invariants —
the first one found is shrunk and written to the given directory (``flinkspec check`` gives
a fresh run directory under ``results/``; ``flinkspec corpus update`` merges it into the
committed corpus). Seeds are
``base_seed, base_seed + 1, ...``: a check run is reproducible from its profile and seed.

Which suites exist is ``model.catalog``'s business (the entries ``check`` runs:
:func:`suite_names`); :func:`run_suite` runs one of them by name. A suite's outcome is a
``properties.result.SuiteResult`` (re-exported here).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from typing import Callable

from model import catalog
from model.variants import VARIANTS, Variant, generate
from properties.counterexample import write_counterexample
from properties.engines import random_walk, replay, shrink
from properties.focused import FOCUSED, job_hypothesis_suite
from properties.progress import Reporter
from properties.result import SuiteResult

__all__ = ["PROFILES", "SuiteResult", "run_suite", "run_variant_suite", "suite_names"]

PROFILES = {
    # runs for a safe variant / at most for an unsafe one before it counts as not found; the
    # replays the shrinker may try on what an unsafe one found (``properties.engines.shrink``:
    # a long control-plane walk uses them all, a few hundred milliseconds each)
    "quick": {"safe_runs": 150, "unsafe_max_runs": 600, "shrink_tests": 600},
    "thorough": {"safe_runs": 3000, "unsafe_max_runs": 20000, "shrink_tests": 1500},
}


def run_variant_suite(v: Variant, *, profile: str = "quick", base_seed: int = 0,
                      corpus_dir=None, progress: Callable[[int, int], None] | None = None,
                      max_runs: int | None = None, shrink_found: bool = True,
                      stop_at_first: bool = False, reporter: Reporter | None = None) -> SuiteResult:
    """Random-walk ``v``; store the first (shrunk) counterexample in ``corpus_dir``.
    ``shrink_found=False`` (a seed sweep measuring the search only) skips shrinking and
    writing. An unsafe variant's search stops at its first violation; a safe one's too with
    ``stop_at_first`` (a user's job: one counterexample answers the question). ``reporter``
    (``properties.progress``) is told the runs and steps done and when shrinking starts."""
    prof = PROFILES[profile]
    total = max_runs or (prof["safe_runs"] if v.safe else prof["unsafe_max_runs"])
    if max_runs is None and profile == "quick" and v.safe and v.quick_safe_runs is not None:
        total = min(total, v.quick_safe_runs)
    res = SuiteResult(name=v.name, expected=v.expected)
    t0 = time.perf_counter()
    for i in range(total):
        seed = base_seed + i
        try:
            r = random_walk(v, seed)
        except Exception as e:  # a crash of the model is a finding: report it with its seed
            if os.environ.get("FLINKSPEC_RAISE_MODEL_CRASHES"):  # mutation testing: a crash is not a kill
                raise
            res.error = f"seed {seed}: {type(e).__name__}: {e}"
            res.first_seed = seed
            break
        res.runs += 1
        res.steps += r.steps
        res.goals.update(r.goals)
        if r.verdict == "violation":
            res.violations[r.invariant] += 1
            if res.first_violation is None:
                res.first_violation = r.violation
                res.first_seed = seed
                res.runs_to_find = i + 1
                if shrink_found:
                    if reporter is not None:
                        reporter.update(f"violation of {r.invariant} at run {i + 1}; shrinking its "
                                        f"{len(r.actions)} steps (at most {prof['shrink_tests']} replays)")
                    res.counterexample = _shrink_and_store(v, seed, r, res, corpus_dir,
                                                           max_tests=prof["shrink_tests"])
            if not v.safe or stop_at_first:
                break  # found: the unsafe variant (or the job) has its counterexample
        if progress is not None:
            progress(i + 1, total)
        if reporter is not None:
            reporter.update(lambda: f"run {res.runs}/{total}, {res.steps:,} steps")
    res.seconds = time.perf_counter() - t0
    return res


def _shrink_and_store(v: Variant, seed: int, r, res: SuiteResult, corpus_dir, *, max_tests: int) -> str | None:
    """Shrink the failing walk ``r`` with at most ``max_tests`` replays (recording the lengths
    in ``res``) and, with a ``corpus_dir``, write it there; returns the file written, or None."""
    scenario = generate(v, seed)
    small = shrink(scenario, list(r.actions), r.invariant, max_tests=max_tests)
    res.shrunk_from, res.shrunk_to = len(r.actions), len(small)
    vio, _ = replay(scenario, small, finish=True)
    if corpus_dir is None or vio is None:
        return None
    path = write_counterexample(corpus_dir, variant=v.name, expected=v.expected, engine="random_walk",
                                seed=seed, scenario=scenario, actions=small, violation=vio)
    return str(path)


def run_suite(name: str, *, profile: str = "quick", base_seed: int = 0, corpus_dir=None,
              progress: Callable[[int, int], None] | None = None, shrink_found: bool = True) -> SuiteResult:
    """Run the suite ``name``: a whole-cluster variant (random walks, with ``progress``) or a
    focused Hypothesis suite. KeyError if ``name`` is neither. ``shrink_found=False``: a
    random-walk suite does not shrink what it finds (a seed sweep measures the search only).
    A progress line goes to stderr every few seconds while it runs (:func:`_reporter`)."""
    with _reporter(f"check: {name}") as rep:
        if name in VARIANTS:
            return run_variant_suite(VARIANTS[name], profile=profile, base_seed=base_seed,
                                     corpus_dir=corpus_dir, progress=progress, shrink_found=shrink_found,
                                     reporter=rep)
        if rep is not None:
            rep.update("Hypothesis search")
        return FOCUSED[name].run(profile, base_seed, corpus_dir=corpus_dir)


def _reporter(label: str):
    """The progress reporter of one suite (a context manager giving a ``Reporter``): plain
    lines on stderr when it is not a terminal; on a terminal a redrawn line only when stdout is
    not one too (``flinkspec check`` prints its suite lines and its own run counter there)."""
    try:
        return Reporter(label, redraw=not sys.stdout.isatty())
    except (AttributeError, ValueError):  # stdout replaced or closed: no progress, the suite still runs
        return nullcontext(None)


def run_job_suites(v: Variant, *, profile: str = "quick", base_seed: int = 0, corpus_dir=None,
                   progress: Callable[[str, int, int], None] | None = None,
                   finished: Callable[[str, SuiteResult], None] | None = None) -> list[SuiteResult]:
    """``flinkspec check --job``: the random-walk search of a user's job (``v``, a
    ``model.variants.job_variant``) with fault injection, then the Hypothesis cluster machine
    over it; ``progress(label, done, total)`` during the walks, ``finished(label, result)``
    after each search."""
    label = f"[1/2] {v.name} (random walk)"
    on_progress = None if progress is None else (lambda done, total: progress(label, done, total))
    with _reporter(f"check: {v.name} (random walk)") as rep:
        walk = run_variant_suite(v, profile=profile, base_seed=base_seed, corpus_dir=corpus_dir,
                                 progress=on_progress, stop_at_first=True, reporter=rep)
    walk.name = f"{v.name} (random walk)"
    if finished is not None:
        finished(label, walk)
    hyp_suite = job_hypothesis_suite(v)
    with _reporter(f"check: {hyp_suite.name}") as rep:
        if rep is not None:
            rep.update("Hypothesis search")
        hyp = hyp_suite.run(profile, base_seed, corpus_dir=corpus_dir)
    if finished is not None:
        finished(f"[2/2] {hyp.name}", hyp)
    return [walk, hyp]


def suite_names() -> list[str]:
    """The names ``flinkspec check`` runs, in catalog order (cluster variants, then focused)."""
    return [e.name for e in catalog.entries(runner="check")]
