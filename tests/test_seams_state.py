"""model.seams call by call: the registry's whole entry right after ``override``, what
``check``/``conflicts``/``original`` answer, and where a seam's definition is bound while it
acts and after."""

import pytest

from model import seams
from model.errors import FlinkspecError
from model.sharedstateregistry import SharedStateRegistry


@pytest.fixture
def registered():
    """Seams registered by a test, forgotten afterwards."""
    names: list = []
    yield names
    seams.unregister(names)


def test_override_registers_the_whole_entry_and_returns_the_function(registered):
    safe = SharedStateRegistry.__dict__["_may_discard"]

    def _never(self, e):
        return False

    got = seams.override("test-state-never", SharedStateRegistry, "_may_discard", "never discards")(_never)
    registered.append("test-state-never")
    assert got is _never
    s = seams.SEAMS["test-state-never"]
    assert (s.name, s.definition, s.description, s.flink_key, s.origin) == (
        "test-state-never", "SharedStateRegistry._may_discard", "never discards", None, None)
    assert (s.owner, s.attribute, s.installed, s.safe) == (SharedStateRegistry, "_may_discard", _never, safe)
    assert seams.check(["test-state-never"]) == ("test-state-never",)
    assert seams.conflicts(["test-state-never"]) is None
    assert seams.original("test-state-never") is safe
