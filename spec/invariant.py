"""Invariants as data: the registry, the :class:`Invariant` record and :class:`Violation`.

An invariant is a pure function ``check(subject) -> Violation | None`` registered with
:func:`invariant`. Its *kind* says how an engine uses it:

* ``always``     -- must hold after every step (checked on every state);
* ``eventually`` -- must hold once the run is drained (checked at the end);
* ``sometimes``  -- a coverage goal: some run must reach it, or the search is blind.

Its *scope* says what it reads: ``state`` (the state after a step, and what that one step
changed: ``Cluster.delta``), ``trace`` (the history of the run) or ``end`` (a drained run).
Its *subject* says what it judges, and so which engines check it: ``run`` (a whole-cluster
run: random walks, the Hypothesis cluster machines, Spark replays, exploration) or one
mechanism driven alone by a focused machine (``barrier_handler``, ``coordinator``,
``rescaling``, ``valve``, ``window``, ``placement``).

Invariants are pure: they read their subject and never write into it. Engines take their
lists from :func:`invariants`, never from a hand-kept list.

An invariant of subject ``run`` that reads the run's *history* (its events, trigger results,
the actions taken -- which the state's fingerprint leaves out) names, with ``history``, the
part of that history its verdict can still depend on: a function of the run whose value,
together with the state, decides the invariant's verdict on every continuation. An explorer
merges two runs only when their states *and* these summaries are equal
(``properties.engines.Run.fingerprint``); without it, a state reached by two paths would be
judged on the history of one of them only.

An *eventually* invariant with a history summary may also say, with ``doomed``, when that
summary already decides it: ``doomed(summary)`` true means every continuation without a
further disturbance violates it (a checkpoint aborted for no cause stays aborted). An
explorer then drains the run at once, instead of searching every way to its end.

Violations are data (which invariant, which step, expected vs actual); rendering them as
text or HTML is done elsewhere.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

KINDS = ("always", "eventually", "sometimes")
SCOPES = ("state", "trace", "end")
SUBJECTS = ("run", "barrier_handler", "coordinator", "rescaling", "valve", "window", "placement")


@attrs.frozen(slots=True, kw_only=True)
class Violation:
    """One broken invariant: ``expected`` and ``actual`` are JSON-able values."""

    invariant: str
    expected: Any
    actual: Any
    message: str
    step: int | None = None

    def at_step(self, step: int) -> "Violation":
        return attrs.evolve(self, step=step)

    def to_dict(self) -> dict:
        return {
            "invariant": self.invariant,
            "step": self.step,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Violation":
        return cls(
            invariant=d["invariant"],
            step=d.get("step"),
            expected=d.get("expected"),
            actual=d.get("actual"),
            message=d.get("message", ""),
        )


@attrs.frozen(slots=True, kw_only=True)
class Invariant:
    name: str
    kind: str
    concept: str
    statement: str
    subject: str = "run"
    scope: str = "state"
    check: Callable[..., Violation | None] = attrs.field(repr=False, eq=False)
    #: for an invariant that reads the run's history: ``run -> hashable summary`` (see the
    #: module docstring); None for one that reads the state and the last step only
    history: Callable[..., Any] | None = attrs.field(default=None, repr=False, eq=False)
    #: for an *eventually* invariant with a ``history``: ``summary -> bool``, true when every
    #: continuation without a further disturbance violates it (see the module docstring)
    doomed: Callable[[Any], bool] | None = attrs.field(default=None, repr=False, eq=False)

    def __call__(self, subject: Any) -> Violation | None:
        return self.check(subject)


REGISTRY: dict[str, Invariant] = {}


def invariant(name: str, *, kind: str, concept: str, statement: str, subject: str = "run",
              scope: str | None = None, history: Callable[..., Any] | None = None,
              doomed: Callable[[Any], bool] | None = None):
    """Register ``fn`` as the invariant ``name``; returns the :class:`Invariant`.

    The decorated function keeps its name in its module but becomes an :class:`Invariant`
    (callable, with ``.name``, ``.kind``, ``.concept``, ``.statement``, ``.subject``,
    ``.scope``, ``.history``). ``scope`` defaults to ``end`` for *eventually* invariants, else
    ``state``. ``history``: the summary of the run's history the verdict depends on (module
    docstring); only for subject ``run``. ``doomed``: when that summary already decides an
    *eventually* invariant.
    """
    if kind not in KINDS:
        raise ValueError(f"invariant {name!r}: kind must be one of {KINDS}, not {kind!r}")
    if scope is None:
        scope = "end" if kind == "eventually" else "state"
    if scope not in SCOPES:
        raise ValueError(f"invariant {name!r}: scope must be one of {SCOPES}, not {scope!r}")
    if subject not in SUBJECTS:
        raise ValueError(f"invariant {name!r}: subject must be one of {SUBJECTS}, not {subject!r}")
    if history is not None and subject != "run":
        raise ValueError(f"invariant {name!r}: only invariants of subject 'run' have a history summary")
    if doomed is not None and (history is None or kind != "eventually"):
        raise ValueError(f"invariant {name!r}: only an eventually invariant with a history summary can be doomed")

    def wrap(fn: Callable[..., Violation | None]) -> Invariant:
        if name in REGISTRY:
            raise ValueError(f"invariant {name!r} is registered twice")
        inv = Invariant(name=name, kind=kind, concept=concept, statement=statement, subject=subject,
                        scope=scope, check=fn, history=history, doomed=doomed)
        REGISTRY[name] = inv
        return inv

    return wrap


def unregister(names) -> None:
    """Forget the invariants ``names`` (a design file that failed to load, or reloaded)."""
    for n in names:
        REGISTRY.pop(n, None)


def invariants(subject: str, kind: str | None = None) -> tuple[Invariant, ...]:
    """The registered invariants of ``subject`` (and ``kind``), in registration order.

    Engines call this after importing the modules that register them (``spec.load_all``)."""
    if subject not in SUBJECTS:
        raise ValueError(f"unknown invariant subject {subject!r}; known: {SUBJECTS}")
    return tuple(i for i in REGISTRY.values() if i.subject == subject and (kind is None or i.kind == kind))
