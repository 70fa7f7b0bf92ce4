"""Registry of z3 checks run by ``flinkspec prove``.

A check is a function ``run(timeout_s) -> (result, details, counterexample)`` where

* ``result`` is ``"proved"`` (the negated goal is unsat for every parameter in the scope),
  ``"counterexample"`` (z3 found one; ``counterexample`` is a JSON-able dict of its values) or
  ``"unknown"`` (timeout or z3 gave up);
* ``details`` is a one-line human-readable summary.

Each check declares the result it is *expected* to give: ``"proved"`` for a property of the
real design, ``"counterexample"`` for a deliberately wrong variant (a mutation), which shows
that the encoding can fail at all. Register with :func:`proof` (a decorator) and list the
module in :data:`PROOF_MODULES` so :func:`load_all` imports it.

Each check is also an entry of ``model.catalog`` (family ``z3/<module>``, e.g. ``z3/valve``
for ``spec.z3_valve``): expected ``("pass",)`` for ``"proved"``, ``("counterexample",)`` for
a mutation; its FLINK key, if any, is the one its name or scope mentions.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import time
from typing import Any, Callable

import attrs

from model import catalog

RESULTS = ("proved", "counterexample", "unknown")
EXPECTED = ("proved", "counterexample")

#: Modules whose import registers checks, in the order ``flinkspec prove`` lists them.
#: Other mechanisms add their module here (one line each).
PROOF_MODULES = (
    "spec.z3_keygroups",
    "spec.z3_valve",
    "spec.z3_barriers",
    "spec.z3_slots",
    "spec.z3_leader_election",
)

Outcome = tuple[str, str, "dict[str, Any] | None"]


@attrs.frozen(slots=True, kw_only=True)
class ProofCheck:
    """One registered z3 check."""

    name: str
    scope: str
    expected: str
    description: str
    run: Callable[[float | None], Outcome] = attrs.field(repr=False, eq=False)


@attrs.frozen(slots=True, kw_only=True)
class ProofRun:
    """The outcome of running one :class:`ProofCheck` once."""

    name: str
    scope: str
    expected: str
    result: str
    details: str
    counterexample: dict | None
    seconds: float

    @property
    def as_expected(self) -> bool:
        return self.result == self.expected

    def to_dict(self) -> dict:
        return attrs.asdict(self) | {"as_expected": self.as_expected}


REGISTRY: dict[str, ProofCheck] = {}


#: prove's expected result -> the catalog's expected verdict
CATALOG_EXPECTED = {"proved": (catalog.PASS,), "counterexample": ("counterexample",)}
_FLINK_KEY = re.compile(r"flink[-_](\d{4,})", re.IGNORECASE)


def _family(module: str | None) -> str:
    """``z3/<mechanism>`` for a check defined in ``spec.z3_<mechanism>`` (underscores as hyphens), else ``z3``."""
    last = (module or "").rsplit(".", 1)[-1]
    return f"z3/{last[3:].replace('_', '-')}" if last.startswith("z3_") and len(last) > 3 else "z3"


def _flink_key(*texts: str) -> str | None:
    """The first FLINK key (``FLINK-7721``, ``flink_7721``) in ``texts``, or None."""
    for text in texts:
        m = _FLINK_KEY.search(text or "")
        if m:
            return f"FLINK-{m.group(1)}"
    return None


def proof(name: str, *, scope: str, expected: str, description: str = "", family: str | None = None,
          flink_key: str | None = None):
    """Register ``fn(timeout_s) -> (result, details, counterexample)`` as check ``name``.

    ``family`` (catalog family, default from ``fn``'s module) and ``flink_key`` (default:
    the key the name or scope mentions) describe the check in ``model.catalog``."""
    if expected not in EXPECTED:
        raise ValueError(f"proof {name!r}: expected must be one of {EXPECTED}, not {expected!r}")

    def wrap(fn: Callable[[float | None], Outcome]) -> Callable[[float | None], Outcome]:
        if name in REGISTRY:
            raise ValueError(f"proof {name!r} registered twice")
        check = ProofCheck(
            name=name,
            scope=scope,
            expected=expected,
            description=description or (fn.__doc__ or "").strip().split("\n")[0],
            run=fn,
        )
        catalog.register(catalog.Entry(  # first: a name clash leaves both registries unchanged
            name=name, family=family or _family(getattr(fn, "__module__", None)),
            expected=CATALOG_EXPECTED[expected], description=check.description,
            flink_key=flink_key or _flink_key(name, scope), command=f"flinkspec prove --only {name}",
            scope=scope))
        REGISTRY[name] = check
        return fn

    return wrap


def register(
    name: str,
    scope: str,
    expected: str,
    fn: Callable[..., Outcome],
    description: str = "",
) -> ProofCheck:
    """Non-decorator form of :func:`proof`. ``fn`` takes ``(timeout_s)`` or no argument."""
    try:
        params = inspect.signature(fn).parameters
        takes_timeout = len(params) >= 1
    except (TypeError, ValueError):  # builtins / C callables
        takes_timeout = True
    run = fn if takes_timeout else (lambda _timeout_s, _fn=fn: _fn())
    proof(name, scope=scope, expected=expected, description=description or (fn.__doc__ or ""),
          family=_family(getattr(fn, "__module__", None)))(run)
    return REGISTRY[name]


_LOADED: set[str] = set()


def load_all() -> dict[str, ProofCheck]:
    """Import every module of :data:`PROOF_MODULES` (once each); return the registry.

    Registration happens at import (``@proof``), or, if the module defines a function
    ``register()`` (no arguments), by calling it once after the import."""
    for module in PROOF_MODULES:
        if module in _LOADED:
            continue
        before = len(REGISTRY)
        mod = importlib.import_module(module)
        _LOADED.add(module)
        hook = getattr(mod, "register", None)
        registered_at_import = len(REGISTRY) > before
        if (
            not registered_at_import
            and callable(hook)
            and getattr(hook, "__module__", None) == mod.__name__
        ):
            hook()
    return REGISTRY


def run_check(check: ProofCheck, timeout_s: float | None = None) -> ProofRun:
    """Run one check and time it. An exception inside the check is reported as ``unknown``."""
    t0 = time.perf_counter()
    try:
        result, details, cex = check.run(timeout_s)
    except Exception as e:  # a broken encoding must show up in the table, not crash the run
        result, details, cex = "unknown", f"error: {type(e).__name__}: {e}", None
    if not isinstance(details, str):  # tolerate structured details: render them as JSON
        details = json.dumps(details, default=str, sort_keys=True)
    if result not in RESULTS:
        details = f"invalid result {result!r}: {details}"
        result = "unknown"
    return ProofRun(
        name=check.name,
        scope=check.scope,
        expected=check.expected,
        result=result,
        details=details,
        counterexample=cex,
        seconds=time.perf_counter() - t0,
    )


def run_all(only: str | None = None, timeout_s: float | None = None) -> list[ProofRun]:
    """Run every registered check (or only ``only``; KeyError if unknown)."""
    registry = load_all()
    if only is not None:
        return [run_check(registry[only], timeout_s)]
    return [run_check(c, timeout_s) for c in registry.values()]
