"""Your design, outside the package: seams, invariants and variants in one Python file.

A Flink developer who proposes a change of the runtime's behaviour writes it in a file of
their own and verifies it with the same engines as the built-in variants::

    flinkspec check --design my_design.py            # seeded random walks of the design's variants
    flinkspec explore --design my_design.py --variant NAME --small
    flinkspec show COUNTEREXAMPLE.ndjson             # the file names its design: loaded again
    flinkspec replay COUNTEREXAMPLE.ndjson

The file uses three functions (docs/designs.md has the worked examples):

* :func:`seam` — decorates the replacement of one definition of the model (a method of a
  model class, or a function of a model module); the change acts only in the runs of the
  variants that switch it on (``model.seams``). :func:`original` is the definition it replaces.
* :func:`invariant` — registers a new invariant (a pure function of a run, ``spec.invariant``):
  *always* (after every step), *eventually* (once the run is drained) or *sometimes* (a
  coverage goal). Once the design is loaded every run of the process is judged by it.
* :func:`variant` — a named configuration: a built-in variant (``base=``) or a job file
  (``job=``), the design's seams switched on, configuration changes, and the expected verdict
  (``"pass"``, or the invariants a search must find violated).

:func:`load_design` executes the file (once per content), registers what it declares and
says what is wrong in one line naming the file, the line and the seam, invariant or variant:
nothing is half-registered. A counterexample of a design's variant records the design's path
and digest, so ``show`` and ``replay`` load it again (``--design FILE`` names another path).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Callable

import attrs

from model import seams as _seams
from model.cluster import RuntimeConfig
from model.environment import FIELDS as ENVIRONMENT_FIELDS
from model.scope import FIELDS as SCOPE_FIELDS
from model.errors import FlinkspecError
from model.jobfile import load_job_file
from model.variants import VARIANTS, Small, job_variant, register, unregister as forget_variants

__all__ = ["seam", "original", "invariant", "variant", "Violation", "Small", "load_design", "Design", "DesignError"]


class DesignError(FlinkspecError):
    """A design file that cannot be loaded: one line naming the file, the line and the rule."""


@attrs.define
class Design:
    """A loaded design file: what it registered."""

    path: str
    sha256: str
    seams: list = attrs.field(factory=list)
    invariants: list = attrs.field(factory=list)
    variants: list = attrs.field(factory=list)
    module: object = None


#: path -> the design loaded from it
_LOADED: dict[str, Design] = {}
#: the design being loaded (its declarations register into it)
_CURRENT: list = []


def _here() -> Design:
    if not _CURRENT:
        raise DesignError("flinkspec.design's functions are used in a design file that flinkspec loads "
                          "(`flinkspec check --design FILE`, or flinkspec.design.load_design(FILE))")
    return _CURRENT[-1]


def seam(name: str, owner, attribute: str, description: str):
    """Decorate the replacement of ``owner.attribute`` (a model class and one of the methods
    defined in its body, or a model module and one of its functions), registered as the seam
    ``name``. The replacement takes the definition's arguments; ``original(name)`` is the safe
    definition, for a change that falls back to it."""
    d = _here()

    def wrap(fn: Callable) -> Callable:
        try:
            _seams.override(name, owner, attribute, description, origin=d.path)(fn)
        except _seams.SeamError as e:
            raise DesignError(f"seam {name!r}: {e}") from None
        d.seams.append(name)
        fn.seam_name = name
        return fn

    return wrap


def original(name: str) -> Callable:
    """The safe definition that seam ``name`` replaces."""
    try:
        return _seams.original(name)
    except _seams.SeamError as e:
        raise DesignError(str(e)) from None


def invariant(name: str, *, kind: str, statement: str, concept: str = "design", scope: str | None = None,
              history: Callable | None = None, doomed: Callable | None = None):
    """Register the decorated ``check(run) -> Violation | None`` as invariant ``name`` of
    subject "run" (``spec.invariant.invariant``: ``kind`` always / eventually / sometimes; a
    check reads ``run.cluster``, the model's state, and never writes into it)."""
    from spec.invariant import REGISTRY, invariant as register  # lazy: the spec layer is loaded with the engines

    d = _here()

    def wrap(fn: Callable):
        if name in REGISTRY:
            raise DesignError(f"invariant {name!r} is already registered: choose another name")
        try:
            inv = register(name, kind=kind, concept=concept, statement=statement, scope=scope,
                           history=history, doomed=doomed)(fn)
        except ValueError as e:
            raise DesignError(str(e)) from None
        d.invariants.append(name)
        return inv

    return wrap


def variant(name: str, description: str, *, base: str | None = None, job: str | None = None, seams=(),
            expected="pass", config: dict | None = None, environment: dict | None = None,
            scope: dict | None = None, small: Small | None = None, max_steps: int | None = None) -> None:
    """Declare the variant ``name``: the built-in variant ``base`` (``flinkspec check --list``)
    or the job file ``job`` (a path relative to the design file), with the ``seams`` switched
    on (their names, or the decorated replacements), the ``RuntimeConfig`` fields of ``config``
    (Flink's configuration), the ``Environment`` fields of ``environment`` (the faults and
    operator actions a run may see, and their budgets) and the ``ModelScope`` fields of
    ``scope`` (which mechanisms are modelled, how coarsely) changed, and the verdict
    ``expected`` of a search: ``"pass"`` or invariant names."""
    from spec.invariant import REGISTRY  # lazy: the spec layer is loaded with the engines

    d = _here()
    what = f"variant {name!r}"
    if (base is None) == (job is None):
        raise DesignError(f"{what}: give exactly one of base= (a built-in variant) and job= (a job file)")
    if base is not None:
        b = VARIANTS.get(base)
        if b is None or b.origin is not None:
            raise DesignError(f"{what}: base {base!r} is not a built-in variant (`flinkspec check --list` names them)")
    else:
        path = Path(job) if Path(job).is_absolute() else Path(d.path).parent / job
        b = job_variant(load_job_file(path))
    names = []
    for s in (seams,) if isinstance(seams, str) or callable(seams) else seams:
        n = getattr(s, "seam_name", s)
        if n not in _seams.SEAMS:
            raise DesignError(f"{what}: {n!r} is not a registered seam (declare it with @seam before the variant)")
        names.append(n)
    exp = (expected,) if isinstance(expected, str) else tuple(expected)
    for e in exp:
        if e != "pass" and e not in REGISTRY:
            raise DesignError(f"{what}: expected invariant {e!r} is not registered")
    fields = attrs.fields_dict(RuntimeConfig)
    for k in config or {}:
        if k not in fields:
            raise DesignError(f"{what}: config key {k!r} is not a RuntimeConfig field"
                              + (" (switch seams with seams=)" if k == "bugs" else
                                 " (it is the run's environment: give it in environment=)"
                                 if k in ENVIRONMENT_FIELDS else
                                 " (it is the model's scope: give it in scope=)" if k in SCOPE_FIELDS else ""))
    for k in environment or {}:
        if k not in ENVIRONMENT_FIELDS:
            raise DesignError(f"{what}: environment key {k!r} is not an Environment field (known: "
                              f"{', '.join(ENVIRONMENT_FIELDS)})")
    for k in scope or {}:
        if k not in SCOPE_FIELDS:
            raise DesignError(f"{what}: scope key {k!r} is not a ModelScope field (known: {', '.join(SCOPE_FIELDS)})")
    try:
        cfg = attrs.evolve(b.config, **(config or {}))
        on = _seams.check(tuple(dict.fromkeys(b.seams + tuple(names))))
        env = attrs.evolve(b.environment, **(environment or {}))
        sco = attrs.evolve(b.scope, **(scope or {}))
        sco.check(cfg)
    except (FlinkspecError, TypeError, ValueError) as e:
        raise DesignError(f"{what}: {e}") from None
    switches = tuple(k for k in b.switches
                     if k == "sink_kind" or getattr(cfg, k) != getattr(RuntimeConfig(), k))
    v = attrs.evolve(b, name=name, description=description, expected=exp, config=cfg, environment=env, scope=sco, seams=on, flink_key=None,
                     switches=switches, origin=d.path, small=small or b.small,
                     max_steps=max_steps or b.max_steps)
    try:
        register(v, command=f"flinkspec check --design {d.path} --only {name}")
    except ValueError as e:
        raise DesignError(str(e)) from None
    d.variants.append(name)


def Violation(*, invariant: str, expected, actual, message: str):  # noqa: N802 (reads as the class it builds)
    """A violation for an invariant's check to return (``spec.invariant.Violation``)."""
    from spec.invariant import Violation as V  # lazy: the spec layer is loaded with the engines

    return V(invariant=invariant, expected=expected, actual=actual, message=message)


# -- loading ------------------------------------------------------------------------------------

def digest_of(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _forget(d: Design) -> None:
    from properties.engines import take_invariants  # lazy: the engines load the whole spec
    from spec.invariant import unregister as forget_invariants  # lazy: as above

    forget_variants(d.variants)
    forget_invariants(d.invariants)
    _seams.unregister(d.seams)
    take_invariants()
    sys.modules.pop(getattr(d.module, "__name__", ""), None)


def _line_of(exc: BaseException, path: str) -> str:
    """``path:LINE`` of the innermost frame of the design file in ``exc``'s traceback."""
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == path:
            line = frame.lineno
    return f"{path}:{line}" if line else path


def load_design(path) -> Design:
    """Load the design file ``path`` (once per content) and return what it registered; a
    problem is one :class:`DesignError` line, and leaves nothing of the file registered."""
    from properties.engines import take_invariants  # lazy: the engines load the spec first

    p = Path(path)
    if not p.is_file():
        raise DesignError(f"{path}: no such design file")
    if p.suffix != ".py":
        raise DesignError(f"{path}: a design file is a Python file (.py)")
    full = os.path.abspath(p)
    try:
        sha = digest_of(full)
    except OSError as e:
        raise DesignError(f"{path}: cannot read the design file: {e.strerror}") from None
    old = _LOADED.get(full)
    if old is not None:
        if old.sha256 == sha:
            return old
        _forget(_LOADED.pop(full))  # the file changed: its new content replaces the old
    d = Design(path=full, sha256=sha)
    name = f"flinkspec_design_{sha[:12]}"
    spec = importlib.util.spec_from_file_location(name, full)
    module = importlib.util.module_from_spec(spec)
    d.module = module
    sys.modules[name] = module
    _CURRENT.append(d)
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        _forget(d)
        raise DesignError(f"{full}:{e.lineno}: syntax error: {e.msg}") from None
    except DesignError as e:
        _forget(d)
        raise DesignError(f"{_line_of(e, full)}: {e}") from None
    except Exception as e:  # the user's code raised: its type, message and line, not a traceback
        _forget(d)
        raise DesignError(f"{_line_of(e, full)}: {type(e).__name__}: {e}") from None
    finally:
        _CURRENT.pop()
    if not d.variants:
        _forget(d)
        raise DesignError(f"{full}: the design declares no variant (flinkspec.design.variant): nothing to verify")
    take_invariants()
    _LOADED[full] = d
    return d


def unload(path=None) -> None:
    """Forget the design loaded from ``path`` (every loaded design when None): its seams,
    invariants and variants are unregistered (a test that loaded one puts the process back)."""
    for full in [os.path.abspath(path)] if path is not None else list(_LOADED):
        d = _LOADED.pop(full, None)
        if d is not None:
            _forget(d)


def variants_to_run(path, requested) -> list[str]:
    """Load the design file ``path`` and return the variants a command runs: ``requested``
    (each must be one of the design's, else one line naming them) or all of the design's."""
    d = load_design(path)
    unknown = [n for n in requested if n not in d.variants]
    if unknown:
        raise DesignError(f"{', '.join(unknown)}: not a variant of {path} (its variants: {', '.join(d.variants)})")
    return list(requested) or list(d.variants)


def design_of_variant(name: str) -> Design | None:
    """The loaded design that declared variant ``name``, if any."""
    return next((d for d in _LOADED.values() if name in d.variants), None)


def load_design_of_counterexample(path, override: str | None = None) -> Design | None:
    """Load the design a counterexample file names in its header (``"design"``), or
    ``override`` (``--design FILE``) instead of the recorded path; None when the file names
    none and no override is given. A header that cannot be read is left to the counterexample
    reader, which names the problem; a design file that changed since the counterexample was
    written is loaded with a warning on stderr (the replay then says whether it still holds)."""
    recorded = None
    try:  # the header only: the counterexample reader checks the whole file afterwards
        with open(path, "rb") as f:
            first = f.readline(1 << 20)
        if b'"design"' in first:
            header = json.loads(first.decode("utf-8"))
            recorded = header.get("design") if isinstance(header, dict) else None
    except (OSError, ValueError, RecursionError):
        pass  # (the counterexample reader names what is wrong with the file)
    if not isinstance(recorded, dict):
        recorded = None
    target = override or (recorded or {}).get("path")
    if not isinstance(target, str) or not target:
        return None
    if override is None and not Path(target).is_file():
        raise DesignError(f"{path}: the counterexample is of a variant of the design file {target}, which is not "
                          f"there: name it with --design FILE")
    d = load_design(target)
    want = (recorded or {}).get("sha256")
    if isinstance(want, str) and want != d.sha256:
        print(f"warning: {target} changed since {path} was written (sha256 {want[:12]}…, now {d.sha256[:12]}…): "
              f"the replay may differ", file=sys.stderr)
    return d
