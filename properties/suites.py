"""Suites: what ``flinkspec check`` runs, per profile, and how a suite's verdict is judged.

A suite searches one variant (``model.variants``) with seeded random walks (and, for the
focused suites, Hypothesis). A *safe* variant passes when no run violates anything; an
*unsafe* one passes when the search finds a violation of one of its expected invariants —
the first one found is shrunk and stored in the counterexample corpus. Seeds are
``base_seed, base_seed + 1, ...``: a check run is reproducible from its profile and seed.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Callable

import attrs

from model.variants import VARIANTS, Variant, generate
from properties.engines import random_walk, shrink
from spec.invariant import Violation

PROFILES = {
    # runs for a safe variant / at most for an unsafe one before it counts as not found
    "quick": {"safe_runs": 150, "unsafe_max_runs": 600},
    "thorough": {"safe_runs": 3000, "unsafe_max_runs": 20000},
}


@attrs.define
class SuiteResult:
    name: str
    expected: tuple
    runs: int = 0
    steps: int = 0
    violations: Counter = attrs.field(factory=Counter)
    goals: Counter = attrs.field(factory=Counter)
    seconds: float = 0.0
    first_violation: dict | None = None
    first_seed: int | None = None
    runs_to_find: int | None = None
    counterexample: str | None = None
    shrunk_from: int | None = None
    shrunk_to: int | None = None
    error: str | None = None

    @property
    def safe(self) -> bool:
        return self.expected == ("pass",)

    @property
    def found(self) -> bool:
        return any(inv in self.expected for inv in self.violations)

    @property
    def verdict(self) -> str:
        if self.error:
            return "error"
        if not self.violations:
            return "pass"
        return "violation: " + ", ".join(sorted(self.violations))

    @property
    def as_expected(self) -> bool:
        if self.error:
            return False
        if self.safe:
            return not self.violations
        return self.found and set(self.violations) <= set(self.expected)


def run_variant_suite(v: Variant, *, profile: str = "quick", base_seed: int = 0,
                      corpus_dir=None, progress: Callable[[int, int], None] | None = None,
                      max_runs: int | None = None) -> SuiteResult:
    """Random-walk ``v``; store the first (shrunk) counterexample in ``corpus_dir``."""
    from properties.counterexample import write_counterexample

    prof = PROFILES[profile]
    total = max_runs or (prof["safe_runs"] if v.safe else prof["unsafe_max_runs"])
    res = SuiteResult(name=v.name, expected=v.expected)
    t0 = time.perf_counter()
    for i in range(total):
        seed = base_seed + i
        try:
            r = random_walk(v, seed)
        except Exception as e:  # a crash of the model is a finding: report it with its seed
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
                scenario = generate(v, seed)
                small = shrink(scenario, list(r.actions), r.invariant)
                res.shrunk_from, res.shrunk_to = len(r.actions), len(small)
                from properties.engines import replay

                vio, _ = replay(scenario, small, finish=True)
                if corpus_dir is not None and vio is not None:
                    path = write_counterexample(corpus_dir, variant=v.name, expected=v.expected,
                                               engine="random_walk", seed=seed, scenario=scenario,
                                               actions=small, violation=vio)
                    res.counterexample = str(path)
                    from properties.counterexample import drop_stale

                    drop_stale(corpus_dir, v.name, "random_walk", path)
            if not v.safe:
                break  # found: the unsafe variant has its counterexample
        if progress is not None:
            progress(i + 1, total)
    res.seconds = time.perf_counter() - t0
    return res


def suite_names() -> list[str]:
    from properties.focused import FOCUSED

    return list(VARIANTS) + list(FOCUSED)
