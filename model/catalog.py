"""The catalog: every named configuration of flinkspec, of every kind, in one registry.

A *configuration* is something with a name and an expected verdict that one of the commands
runs: a whole-cluster variant or a focused Hypothesis suite (``flinkspec check``), a z3 check
(``flinkspec prove``), a synthetic stand-in of the Spark pipeline (``flinkspec spark-replay
--engine standin``). Each layer registers its own entries when its module is imported —
``model.variants``, ``properties.focused``, ``spec.proofs``, ``spark.standin`` — and
``properties.catalog.load_catalog()`` imports them all and returns the full list. Everything
that lists configurations (``check --list``, ``docs/variants.md``, the suite names ``check``
accepts) reads it from here.

This module depends on nothing else of flinkspec: ``model`` never imports ``spec`` or
``properties``, so they register *into* it.

Entry format (:class:`Entry`):

* ``name`` — unique across every kind;
* ``family`` — ``"<kind>"`` or ``"<kind>/<mechanism>"``, the kind one of :data:`KINDS`:
  ``cluster/keyed``, ``cluster/blocking``, ``control-plane``, ``state-backend``,
  ``focused/valve``, ``z3/barriers``, ``spark-standin`` ...;
* ``expected`` — ``("pass",)`` for a safe configuration, else what the run must find: the
  invariant names any one of which must be violated (for a z3 check expected to fail:
  ``("counterexample",)``);
* ``flink_key`` — the FLINK issue the entry is about, or None;
* ``seam`` — what the entry switches: the overridden ``Class.method`` of a re-introduced
  bug or unsafe change, the unsafe knob (``RuntimeConfig.checkpointing_mode='at_least_once'``), the knobs a focused
  suite passes to its machine; None when there is nothing to name. May be registered as a
  zero-argument callable, resolved when read (a seam may be registered after the entry);
* ``description``; ``runner`` (the command that runs it) and ``command`` (a command line
  running just this entry); ``scope`` (optional: the parameter scope of a z3 check).
"""

from __future__ import annotations

import json
from typing import Callable

import attrs

PASS = "pass"

@attrs.frozen(slots=True)
class Kind:
    """What entries of one kind have in common: the command that runs them, how
    ``docs/variants.md`` heads their section (``title``; ``column``: what its first column
    calls an entry), whether they are whole-cluster ``model.variants.Variant`` s searched by
    seeded random walks (``random_walks``), and whether their counterexamples go to the
    committed corpus (``corpus``)."""

    runner: str
    title: str
    column: str = "name"
    random_walks: bool = False
    corpus: bool = False


#: kind (first segment of ``family``) -> what it is; the order is the order of every listing
KINDS = {
    "cluster": Kind("check", "Whole-cluster variants (`flinkspec check`: seeded random walks, swarm testing, "
                    "failures)", "variant", random_walks=True, corpus=True),
    "control-plane": Kind("check", "Control-plane variants (`flinkspec check`: random walks over RPC loss, "
                          "crashes, session expiry and leader changes; docs/control-plane.md)", "variant",
                          random_walks=True, corpus=True),
    "state-backend": Kind("check", "State-backend variants (`flinkspec check`: random walks over two-phase "
                          "snapshots, checkpoint storage, subsumption and restores; docs/state-backends.md)",
                          "variant", random_walks=True, corpus=True),
    "focused": Kind("check", "Focused suites (`flinkspec check`: Hypothesis)", "suite", corpus=True),
    "z3": Kind("prove", "z3 checks (`flinkspec prove`)", "check"),
    "spark-standin": Kind("spark-replay --engine standin",
                          "Spark pipeline stand-ins (`flinkspec spark-replay --engine standin`)", "stand-in"),
}

#: the kinds whose entries are whole-cluster variants searched by seeded random walks
RANDOM_WALK_KINDS = tuple(k for k, kind in KINDS.items() if kind.random_walks)


def _family(_instance, _attribute, value: str) -> None:
    kind = value.split("/", 1)[0]
    if kind not in KINDS:
        raise ValueError(f"family {value!r}: kind {kind!r} is not one of {', '.join(KINDS)}")


def _expected(_instance, _attribute, value: tuple) -> None:
    if not isinstance(value, tuple) or not value or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"expected must be a non-empty tuple of names, got {value!r}")
    if PASS in value and value != (PASS,):
        raise ValueError(f"expected {value!r}: 'pass' cannot be combined with invariant names")


@attrs.frozen(slots=True, kw_only=True)
class Entry:
    """One named configuration (see the module docstring for the fields)."""

    name: str
    family: str = attrs.field(validator=_family)
    expected: tuple = attrs.field(converter=tuple, validator=_expected)
    description: str
    flink_key: str | None = None
    #: a string, None, or a zero-argument callable returning one (read through :attr:`seam`)
    seam_of: str | Callable[[], str | None] | None = attrs.field(default=None, alias="seam", eq=False)
    command: str
    scope: str | None = None

    @property
    def kind(self) -> str:
        return self.family.split("/", 1)[0]

    @property
    def runner(self) -> str:
        return KINDS[self.kind].runner

    @property
    def safe(self) -> bool:
        return self.expected == (PASS,)

    @property
    def seam(self) -> str | None:
        return self.seam_of() if callable(self.seam_of) else self.seam_of

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "family": self.family,
            "kind": self.kind,
            "expected": list(self.expected),
            "safe": self.safe,
            "flink_key": self.flink_key,
            "seam": self.seam,
            "description": self.description,
            "runner": self.runner,
            "command": self.command,
            "scope": self.scope,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=False)


#: name -> entry, in registration order (each layer's own order within it)
CATALOG: dict[str, Entry] = {}


def register(entry: Entry) -> Entry:
    """Add ``entry``; a name already registered (by any kind) is an error."""
    old = CATALOG.get(entry.name)
    if old is not None:
        raise ValueError(f"catalog: {entry.name!r} ({entry.family}) is already registered as {old.family}")
    CATALOG[entry.name] = entry
    return entry


def entries(*, kind: str | None = None, runner: str | None = None) -> list[Entry]:
    """The registered entries (only those already imported: see ``properties.catalog``)."""
    return [e for e in CATALOG.values()
            if (kind is None or e.kind == kind) and (runner is None or e.runner == runner)]
