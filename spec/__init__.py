"""flinkspec's spec: what must hold of the model.

Invariants are pure named functions (``spec.invariant``), each tagged *always*,
*eventually* or *sometimes*; z3 encodings live in ``spec.z3_*`` modules.
"""
