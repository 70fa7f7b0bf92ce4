"""``model.clusterentrypoint``'s names, in a file that imports nothing else of the model: a wrong
value here breaks every module that builds a deployment at import (``model.variants``), so the
files that import those do not collect; this one still does."""

from __future__ import annotations

from model import clusterentrypoint as ce


def test_the_deployment_modes_and_states():
    assert ce.DEPLOYMENT_MODES == ("session", "application")
    assert (ce.ACTIVE, ce.ALLOCATED, ce.RELEASING, ce.RUNNING, ce.CANCELING) == (
        "ACTIVE", "ALLOCATED", "RELEASING", "RUNNING", "CANCELING")
