"""Load the whole catalog of named configurations (``model.catalog``).

Each layer registers its own entries when its module is imported; this module imports them
all — ``model.variants`` (cluster variants), ``properties.focused`` (focused suites),
``spec.proofs`` with every z3 module (``spec.proofs.load_all``), ``spark.standin`` (the
synthetic stand-ins of the Spark pipeline) — and returns the entries, grouped by kind in the
order of ``model.catalog.KINDS``, each kind in its registration order.
"""

from __future__ import annotations

from model import catalog
from model import variants  # noqa: F401  (registers the cluster variants)
from model.catalog import Entry
from model.errors import FlinkspecError
from properties import focused  # noqa: F401  (registers the focused suites)
from spark import standin  # noqa: F401  (registers the Spark stand-ins)
from spec import proofs  # proofs.load_all() registers the z3 checks

_KIND_ORDER = {kind: i for i, kind in enumerate(catalog.KINDS)}


def load_catalog() -> list[Entry]:
    """Every registered configuration, cluster variants first, then focused suites, z3
    checks and Spark stand-ins."""
    proofs.load_all()
    return sorted(catalog.CATALOG.values(), key=lambda e: _KIND_ORDER[e.kind])


def check_suites() -> list[Entry]:
    """The entries ``flinkspec check`` runs (cluster variants and focused suites); does not
    import the z3 modules."""
    return catalog.entries(runner="check")


def select(names, entries: list[Entry] | None = None) -> list[Entry]:
    """The entries of ``check_suites()`` named ``names`` (in the order given; all of them if
    ``names`` is empty). An unknown name raises FlinkspecError naming the known suites, and
    the command that runs it if it is a configuration of another kind."""
    suites = entries if entries is not None else check_suites()
    by_name = {e.name: e for e in suites}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        elsewhere = {e.name: e for e in load_catalog() if e.name in unknown}
        hints = "".join(f" ({n} is run by `{elsewhere[n].command}`)" for n in unknown if n in elsewhere)
        raise FlinkspecError(f"unknown suite(s) {', '.join(unknown)}{hints}; "
                             f"known suites: {', '.join(by_name)}")
    return [by_name[n] for n in names] if names else list(suites)
