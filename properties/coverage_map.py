"""Which engines check the invariants of each subject: the one place that says so.

Every invariant is registered with a *subject* (``spec.invariant.SUBJECTS``) and every engine
checks all registered invariants of the subjects it judges, read from the registry
(``spec.invariant.invariants(subject)``). :data:`ENGINES` maps each subject to those engines,
as ``(label, "module:attribute")`` pairs naming the code that does the checking.
``tests/test_invariant_registry.py`` fails if a registered invariant's subject has no engine
here, if an entry names code that does not exist, and (for the focused subjects) if running
the engine briefly leaves one of the subject's invariants unevaluated.

This module imports nothing: reading the map costs nothing, and resolving an entry
(:func:`resolve`) imports only that engine.
"""

from __future__ import annotations

import importlib

#: subject -> the engines checking every registered invariant of that subject.
ENGINES: dict[str, tuple[tuple[str, str], ...]] = {
    # whole-cluster runs; each judges a ``properties.engines.Run``
    "run": (
        ("random walk", "properties.engines:random_walk"),
        ("Hypothesis cluster machine", "properties.machines:make_cluster_machine"),
        ("Spark replay (random walks on executors)", "spark.replay:replay"),
    ),
    "barrier_handler": (("barrier handler machine", "properties.machines:make_barrier_handler_machine"),),
    "coordinator": (("checkpoint coordinator machine", "properties.machines:make_coordinator_machine"),),
    "rescaling": (("rescaling state assignment check", "properties.machines:check_rescaling"),),
    "valve": (("StatusWatermarkValve machine", "properties.machines:make_valve_machine"),),
    "window": (("window assignment check", "properties.machines:check_window_assignment"),),
    # inside every whole-cluster engine: the run invariant ``placement_valid`` calls
    # ``check_placement`` after every (re)start
    "placement": (("placement check (run invariant placement_valid)", "spec.placement:check_placement"),),
}


def engines_for(subject: str) -> tuple[tuple[str, str], ...]:
    """The engines that check ``subject``'s invariants (empty if none)."""
    return ENGINES.get(subject, ())


def resolve(target: str):
    """The object a ``"module:attribute"`` entry names (imports the module)."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def unchecked(registry) -> list[str]:
    """Names of the invariants in ``registry`` (name -> Invariant) whose subject no engine checks."""
    return [name for name, inv in registry.items() if not engines_for(inv.subject)]
