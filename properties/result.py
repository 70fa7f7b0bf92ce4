"""The result of one suite run, and how it is judged against the suite's expected verdict.

Shared by the random-walk suites (``properties.suites``) and the focused Hypothesis suites
(``properties.focused``); a module of its own so neither has to import the other for it.
"""

from __future__ import annotations

from collections import Counter

import attrs

from model.catalog import PASS


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
        return self.expected == (PASS,)

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
