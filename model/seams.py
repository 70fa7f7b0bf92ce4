"""Seams: a behaviour changed by overriding one definition of the model.

A known-unsafe variant that re-introduces a shipped Flink bug, or a user's proposed design
(``flinkspec check --design FILE``, docs/designs.md), changes the model the way a TLA+
model-checking configuration overrides an operator: the safe definition stays where it is,
and the change is a replacement for exactly one definition, registered beside it::

    @seams.override("FLINK-17568", StreamTask, "trigger", "the task processes one more element ...")
    def _trigger_flink_17568(self, barrier, unaligned): ...

A definition is a method (plain, static, class method or property) defined in the body of
one of the model's classes, or a function of one of the model's modules. A seam has a name
(``Scenario.seams`` lists the names a run switches on) and may carry a FLINK key (a
re-introduced bug); a design's seams need none.

How a seam acts: while the model runs a step for a configuration that switches it on
(:func:`within`: ``Cluster``'s constructor, ``enabled_actions``, ``step`` and the user's
actions outside the search), the definition is replaced; before the step returns, the safe
definition is back. Invariants, the reference run's judge and anything else outside a step
read the safe model. A replacement that needs the safe behaviour calls :func:`original`.

Invariant upheld: a seam changes one definition, for the steps of the runs that switch it on;
with ``seams=()`` the model is exactly the safe model. Two seams that override the same
definition cannot be switched on together (:func:`conflicts`). ``SEAMS`` lists every
registered seam (its name, the definition it overrides, what it does, where it was
declared); :func:`check` is what a run (``Cluster``) accepts.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import types
from typing import Callable

import attrs

from model.errors import FlinkspecError


class SeamError(ValueError):
    """A seam that cannot be registered (its definition does not exist, its name is taken)."""


@attrs.frozen(slots=True)
class Seam:
    name: str
    #: the overridden definition: ``Class.method`` or ``module.function``
    definition: str
    description: str
    #: the FLINK issue whose mechanism this seam re-introduces, or None (a design's change)
    flink_key: str | None = None
    #: the file that declared the seam when it is not the model's own (a design file)
    origin: str | None = None
    owner: object = attrs.field(default=None, repr=False, eq=False)
    attribute: str = attrs.field(default="", repr=False)
    #: what is installed while the seam acts, and the safe definition it replaces
    installed: object = attrs.field(default=None, repr=False, eq=False)
    safe: object = attrs.field(default=None, repr=False, eq=False)


SEAMS: dict[str, Seam] = {}
#: per seam name: the (namespace, attribute) pairs that hold its definition (computed when the
#: seam first acts: every model module that imported a seamed function by name holds it too)
_BINDINGS: dict[str, tuple] = {}
#: the seam names acting now (``()``: the safe model)
_ACTIVE: list = [()]


def _is_model(name: str) -> bool:
    return name == "model" or name.startswith("model.")


def _definition(owner, attribute: str) -> tuple[str, object, object]:
    """``(definition name, safe definition, what a replacement function becomes)`` or SeamError."""
    if isinstance(owner, types.ModuleType):
        if not _is_model(owner.__name__):
            raise SeamError(f"{owner.__name__} is not a module of the model (model.*): only the model's "
                            f"definitions can be overridden")
        safe = vars(owner).get(attribute)
        if not isinstance(safe, types.FunctionType):
            raise SeamError(f"module {owner.__name__} defines no function {attribute!r} to override")
        return f"{owner.__name__}.{attribute}", safe, None
    if not isinstance(owner, type):
        raise SeamError(f"{owner!r} is neither a class nor a module of the model")
    if not _is_model(owner.__module__):
        raise SeamError(f"{owner.__qualname__} is not a class of the model (model.*): only the model's "
                        f"definitions can be overridden")
    safe = owner.__dict__.get(attribute)
    if safe is None:
        where = next((c.__qualname__ for c in owner.__mro__[1:] if attribute in c.__dict__), None)
        hint = f" (it is defined in {where}: override it there)" if where else ""
        raise SeamError(f"{owner.__qualname__} defines no method {attribute!r} to override{hint}")
    for kind in (staticmethod, classmethod, property):
        if isinstance(safe, kind):
            return f"{owner.__qualname__}.{attribute}", safe, kind
    if not isinstance(safe, types.FunctionType):
        raise SeamError(f"{owner.__qualname__}.{attribute} is not a method (a {type(safe).__name__}): only "
                        f"functions, methods and properties can be overridden")
    return f"{owner.__qualname__}.{attribute}", safe, None


def override(name: str, owner, attribute: str, description: str, *, flink_key: str | None = None,
             origin: str | None = None):
    """Register the decorated function as the replacement of ``owner.attribute`` under the seam
    ``name``. ``owner``: a class of the model (the method must be defined in its body) or a
    module of the model (a function). A name that starts with ``FLINK-`` is its FLINK key."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise SeamError(f"a seam's name must be a non-empty string without surrounding spaces, not {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise SeamError(f"seam {name!r}: a description (what the change does) is required")
    definition, safe, kind = _definition(owner, attribute)
    if flink_key is None and name.startswith("FLINK-"):
        flink_key = name

    def wrap(fn: Callable) -> Callable:
        if not callable(fn):
            raise SeamError(f"seam {name!r}: the replacement of {definition} must be a function, not {fn!r}")
        old = SEAMS.get(name)
        if old is not None:
            where = old.origin or "the model"
            raise SeamError(f"seam {name!r} is already registered (by {where}, overriding {old.definition})")
        installed = fn if kind is None else kind(fn)
        SEAMS[name] = Seam(name, definition, description, flink_key, origin, owner, attribute, installed, safe)
        return fn

    return wrap


def unregister(names) -> None:
    """Forget the seams ``names`` (a design file reloaded after an error). Not while acting."""
    for n in names:
        if n in _ACTIVE[0]:
            raise SeamError(f"seam {n!r} is acting: it cannot be unregistered now")
        SEAMS.pop(n, None)
        _BINDINGS.pop(n, None)


def known_bugs() -> tuple[str, ...]:
    return tuple(SEAMS)


def check(names) -> tuple[str, ...]:
    """``names`` as the tuple of seams a run switches on, or a FlinkspecError naming the
    problem: a name no seam is registered under, two seams overriding one definition."""
    if isinstance(names, str) or not all(type(n) is str for n in names):
        raise FlinkspecError(f"seams must be a list of seam names, not {names!r}")
    names = tuple(names)
    unknown = sorted(set(names) - set(SEAMS))
    if unknown:
        raise FlinkspecError(f"unknown seam(s) {unknown}; known: {', '.join(SEAMS)}")
    clash = conflicts(names)
    if clash:
        raise FlinkspecError(f"seams={list(names)!r}: {clash}; a run switches on one change per definition")
    return names


def conflicts(names) -> str | None:
    """Why the seams ``names`` cannot be switched on together (two override one definition), or None."""
    seen: dict[str, str] = {}
    for n in names:
        s = SEAMS.get(n)
        if s is None:
            continue
        if s.definition in seen:
            return f"seams {seen[s.definition]!r} and {n!r} both override {s.definition}"
        seen[s.definition] = n
    return None


def original(name: str):
    """The safe definition seam ``name`` replaces, callable as the definition is (a method's
    function takes ``self``; a static method's function does not)."""
    s = SEAMS.get(name)
    if s is None:
        raise SeamError(f"unknown seam {name!r}; registered: {', '.join(SEAMS) or 'none'}")
    safe = s.safe
    if isinstance(safe, (staticmethod, classmethod)):
        return safe.__func__
    if isinstance(safe, property):
        return safe.fget
    return safe


def _bindings(name: str) -> tuple:
    b = _BINDINGS.get(name)
    if b is None:
        s = SEAMS[name]
        if isinstance(s.owner, types.ModuleType):
            # the function, and every model module that imported it by name (``from m import f``)
            b = tuple((m, attr) for mod_name, m in list(sys.modules.items()) if _is_model(mod_name)
                      and m is not None for attr, v in list(vars(m).items()) if v is s.safe)
        else:
            b = ((s.owner, s.attribute),)
        _BINDINGS[name] = b
    return b


def _install(names, which: str) -> None:
    for n in names:
        s = SEAMS[n]
        value = s.installed if which == "installed" else s.safe
        for holder, attr in _bindings(n):
            setattr(holder, attr, value)


@contextlib.contextmanager
def active(names):
    """The seams ``names`` act inside the block (and only they: the seams acting outside it are
    put back after it)."""
    names = tuple(names)
    before = _ACTIVE[0]
    if names == before:
        yield
        return
    _install(before, "safe")
    try:
        _install(names, "installed")
        _ACTIVE[0] = names
        yield
    finally:
        _install(names, "safe")
        _install(before, "installed")
        _ACTIVE[0] = before


def within(method: Callable) -> Callable:
    """Decorate a method of an object with a ``seams`` attribute (the names a run switches on):
    they act while the method runs (nothing is done when they act already: the common case of
    none)."""
    @functools.wraps(method)
    def with_seams(self, *args, **kwargs):
        names = self.seams
        if names == _ACTIVE[0]:
            return method(self, *args, **kwargs)
        with active(names):
            return method(self, *args, **kwargs)

    return with_seams
