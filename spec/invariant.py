"""Invariants as data: the registry, the :class:`Invariant` record and :class:`Violation`.

An invariant is a pure function ``check(subject) -> Violation | None`` registered with
:func:`invariant`. Its *kind* says how an engine uses it:

* ``always``     -- must hold after every step (checked on every state);
* ``eventually`` -- must hold once the run is drained (checked at the end);
* ``sometimes``  -- a coverage goal: some run must reach it, or the search is blind.

Violations are data (which invariant, which step, expected vs actual); rendering them as
text or HTML is done elsewhere.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs

KINDS = ("always", "eventually", "sometimes")


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
    check: Callable[..., Violation | None] = attrs.field(repr=False, eq=False)

    def __call__(self, subject: Any) -> Violation | None:
        return self.check(subject)


REGISTRY: dict[str, Invariant] = {}


def invariant(name: str, *, kind: str, concept: str, statement: str):
    """Register ``fn`` as the invariant ``name``; returns the :class:`Invariant`.

    The decorated function keeps its name in its module but becomes an :class:`Invariant`
    (callable, with ``.name``, ``.kind``, ``.concept``, ``.statement``).
    """
    if kind not in KINDS:
        raise ValueError(f"invariant {name!r}: kind must be one of {KINDS}, not {kind!r}")

    def wrap(fn: Callable[..., Violation | None]) -> Invariant:
        if name in REGISTRY:
            raise ValueError(f"invariant {name!r} is registered twice")
        inv = Invariant(name=name, kind=kind, concept=concept, statement=statement, check=fn)
        REGISTRY[name] = inv
        return inv

    return wrap
