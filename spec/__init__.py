"""flinkspec's spec: what must hold of the model.

Invariants are pure named functions (``spec.invariant``), each tagged *always*,
*eventually* or *sometimes*; z3 encodings live in ``spec.z3_*`` modules.
"""

#: The modules whose import registers invariants; ``load_all`` imports them all, so an
#: engine that asks ``spec.invariant.invariants(...)`` sees every registered one.
INVARIANT_MODULES = ("spec.checkpoint", "spec.exactly_once", "spec.recovery", "spec.coverage",
                     "spec.placement", "spec.watermarks", "spec.focused",
                     "spec.declarative",
                     "spec.statebackend", "spec.controlplane", "spec.causality", "spec.timeliness",
                     "spec.network", "spec.deployment")


def load_all():
    """Import every invariant module; returns ``spec.invariant.REGISTRY``."""
    import importlib  # here, not at module top: importing ``spec`` alone must stay cheap

    for m in INVARIANT_MODULES:
        importlib.import_module(m)
    from spec.invariant import REGISTRY  # after the imports above registered everything

    return REGISTRY
