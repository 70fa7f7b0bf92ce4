"""Fixtures of the differential suites: the real Flink oracle (``tools/flink_oracle.py``).

The oracle runs in ``.venv-flink`` (``make flink-env``). When that environment is missing the
suites FAIL (never skip) with the command to run: these suites are marked ``slow`` and ``flink``
so the default test run does not select them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _load_oracle_module():
    spec = importlib.util.spec_from_file_location(
        "flinkspec_tools_flink_oracle", REPO / "tools" / "flink_oracle.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


flink_oracle_module = _load_oracle_module()


class _MissingOracle:
    """Stands in for the oracle when .venv-flink is missing: every call FAILS the test
    (inside the test, so it is reported as a failure, not a setup error or a skip)."""

    def __init__(self, message: str):
        self.message = message

    def call(self, *_args, **_kwargs):
        pytest.fail(self.message, pytrace=False)


@pytest.fixture(scope="session")
def flink_oracle():
    """A running :class:`FlinkOracle` (real Flink jars behind py4j), shared by the session."""
    mod = flink_oracle_module
    if not mod.FLINK_PYTHON.exists():
        yield _MissingOracle(
            f"the real-Flink environment {mod.FLINK_VENV} is missing: run `make flink-env` "
            "first (creates .venv-flink with apache-flink, ~850 MB, ~2 min)"
        )
        return
    oracle = mod.FlinkOracle()
    try:
        oracle.call("ping")
        yield oracle
    finally:
        oracle.close()
