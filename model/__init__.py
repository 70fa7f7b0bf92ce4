"""flinkspec's executable reference model of the Apache Flink runtime.

One module per runtime mechanism, named with Flink's term. ``model`` never imports
``spec`` or ``properties``: invariants live in ``spec``, engines in ``properties``.
"""

MODEL_VERSION = "0.1.0"
