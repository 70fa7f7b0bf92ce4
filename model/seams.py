"""Seams: a historical bug mechanism re-introduced by overriding one definition.

A known-unsafe variant that re-introduces a shipped Flink bug does it the way a TLA+
model-checking configuration overrides an operator: the safe definition stays where it is,
and the bug is a replacement for exactly one method of one class, registered beside it::

    @seams.override("FLINK-17568", StreamTask, "trigger", "the task processes one more element ...")
    def _trigger_flink_17568(self, barrier, unaligned): ...

``RuntimeConfig.bugs`` names the FLINK keys a run re-introduces; the model builds its objects
from ``seams.variant_class(StreamTask, config.bugs)``, which is the class itself when no seam
of that class is switched on, else a subclass with the overriding methods (cached). No
handler tests ``if bug == ...``.

Invariant upheld: a seam changes one definition; with ``bugs=()`` the model is exactly the
safe model. ``SEAMS`` lists every registered seam (key, the definition it overrides, what it
does); ``known_bugs()`` is what ``RuntimeConfig`` accepts.
"""

from __future__ import annotations

from typing import Callable

import attrs


@attrs.frozen(slots=True)
class Seam:
    flink_key: str
    #: the overridden definition, ``Class.method``
    definition: str
    description: str
    cls: type = attrs.field(repr=False, eq=False)
    method: str = attrs.field(repr=False)
    replacement: Callable = attrs.field(repr=False, eq=False)


SEAMS: dict[str, Seam] = {}
_CLASSES: dict = {}


def override(flink_key: str, cls: type, method: str, description: str):
    """Register the decorated function as ``cls.method`` under the bug ``flink_key``."""
    if not hasattr(cls, method):
        raise TypeError(f"seam {flink_key}: {cls.__name__} has no method {method!r} to override")

    def wrap(fn: Callable) -> Callable:
        if flink_key in SEAMS:
            raise ValueError(f"seam {flink_key!r} is registered twice")
        SEAMS[flink_key] = Seam(flink_key, f"{cls.__name__}.{method}", description, cls, method, fn)
        return fn

    return wrap


def known_bugs() -> tuple[str, ...]:
    return tuple(SEAMS)


def variant_class(cls: type, bugs) -> type:
    """``cls``, or its subclass with the methods that the seams in ``bugs`` override."""
    keys = tuple(sorted(k for k in bugs if k in SEAMS and issubclass(cls, SEAMS[k].cls)))
    if not keys:
        return cls
    sub = _CLASSES.get((cls, keys))
    if sub is None:
        body: dict = {"__slots__": (), "__doc__": f"{cls.__name__} with {', '.join(keys)} re-introduced."}
        for k in keys:
            body[SEAMS[k].method] = SEAMS[k].replacement
        sub = _CLASSES[(cls, keys)] = type(f"{cls.__name__}[{','.join(keys)}]", (cls,), body)
    return sub
