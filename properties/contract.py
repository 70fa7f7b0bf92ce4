"""The step contract, checked at one state (``docs/architecture.md``, "The step contract").

:func:`contract_problems` checks, at a cluster's state, what every engine relies on:

* ``enabled_actions()`` is exactly the candidates (``candidate_actions()``) whose kind's guard
  holds (``why_not_enabled(a) is None``), in candidate order, without repeats;
* ``step(a)`` refuses every candidate that is not enabled with ``ActionNotEnabled`` and leaves
  the state untouched (its fingerprint, clock and trace);
* ``copy()`` has the original's fingerprint, and stepping the copy by each enabled action
  raises nothing and leaves the original's fingerprint as it was.

An exhaustive search runs it at every state it expands (``properties.explore.explore(...,
inspect=...)``): on a small scenario the search completes, so every reachable state is checked,
not a sample (tests/test_explore_contract.py). Problems are data (strings naming the action
and the rule), rendered by the caller.
"""

from __future__ import annotations

from model.cluster import Cluster
from model.errors import ActionNotEnabled


def _snapshot(c: Cluster) -> tuple:
    return c.fingerprint(), c.now, len(c.trace)


def contract_problems(c: Cluster) -> list[str]:
    """What of the step contract does not hold at ``c`` (empty when all of it holds). ``c`` is
    left as it was (every step is taken on a copy, or refused)."""
    problems: list[str] = []
    candidates = c.candidate_actions()
    enabled = c.enabled_actions()
    guarded = [a for a in candidates if c.why_not_enabled(a) is None]
    if enabled != guarded:
        problems.append(f"enabled_actions() {enabled!r} is not the candidates whose guard holds {guarded!r}")
    if len(set(enabled)) != len(enabled):
        problems.append(f"enabled_actions() repeats an action: {enabled!r}")
    before = _snapshot(c)
    on = set(enabled)
    for a in candidates:
        if a in on:
            continue
        try:
            c.step(a)
        except ActionNotEnabled:
            pass
        except Exception as e:  # noqa: BLE001 -- any other exception is the problem reported
            problems.append(f"step({a!r}) of an action not enabled raised {type(e).__name__}: {e}")
            return problems  # the state may be damaged: nothing after this is meaningful
        else:
            problems.append(f"step({a!r}) took an action that is not enabled")
            return problems
        if _snapshot(c) != before:
            problems.append(f"step({a!r}) refused the action but changed the state")
            return problems
    for a in enabled:
        d = c.copy()
        if d.fingerprint() != before[0]:
            problems.append("copy() has another fingerprint than the original")
            return problems
        try:
            d.step(a)
        except Exception as e:  # noqa: BLE001 -- any exception is the problem reported
            problems.append(f"step({a!r}) of an enabled action raised {type(e).__name__}: {e}")
        if _snapshot(c) != before:
            problems.append(f"stepping a copy by {a!r} changed the original")
            return problems
    return problems
