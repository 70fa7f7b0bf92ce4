"""``model/sharedstateregistry.py`` in isolation: Flink's ``SharedStateRegistryImpl`` rules at their
boundaries (``registerReference`` keeps the newest user, ``unregisterUnusedState`` removes only
entries last used *below* the lowest retained checkpoint, files created by a checkpoint up to
``highestNotClaimedCheckpointID`` are never deleted, ``checkpointCompleted`` confirms only the
entries that checkpoint used last). The whole-cluster behaviour is in tests/test_statebackend.py
and the scenario files."""

from __future__ import annotations

from model.sharedstateregistry import RESTORE_MODES, SharedStateEntry, SharedStateRegistry


def test_register_reference_keeps_the_creator_and_advances_the_last_user_only_forward():
    reg = SharedStateRegistry()
    reg.register_reference("f", 3)
    e = reg.entries["f"]
    assert (e.created_by, e.last_used, e.confirmed) == (3, 3, False)
    reg.register_reference("f", 5)  # a placeholder: checkpoint 5 reuses the file
    assert (e.created_by, e.last_used) == (3, 5)
    reg.register_reference("f", 4)  # an older checkpoint registering late: Math.max keeps 5
    assert (e.created_by, e.last_used) == (3, 5)
    assert reg.entries["f"] is e  # a registered key keeps its entry


def test_an_entry_last_used_by_the_lowest_retained_checkpoint_stays():
    reg = SharedStateRegistry()
    reg.register_all(["b", "a"], 4)
    assert reg.unregister_unused_state(4) == [] and set(reg.entries) == {"a", "b"}
    assert reg.unregister_unused_state(5) == ["a", "b"]  # path order, both below 5 now
    assert reg.entries == {}


def test_files_created_up_to_the_highest_unclaimed_checkpoint_are_never_deleted():
    reg = SharedStateRegistry()
    assert reg.highest_not_claimed == -1  # nothing restored: every unused file may go
    reg.register_all(["zero"], 0)
    assert reg.unregister_unused_state(1) == ["zero"]
    reg.register_all_after_restored(["restored"], 7, "NO_CLAIM")
    assert reg.highest_not_claimed == 7
    reg.register_all_after_restored(["older"], 6, "NO_CLAIM")  # never lowered
    assert reg.highest_not_claimed == 7
    reg.register_all(["at"], 7)
    reg.register_all(["after"], 8)
    # created by 7 (== highestNotClaimedCheckpointID): kept; created by 8: deleted
    assert reg.unregister_unused_state(9) == ["after"]
    assert reg.entries == {}
    reg.register_all_after_restored(["claimed"], 9, "CLAIM")
    assert reg.highest_not_claimed == 7  # a claimed restore hands its files to Flink


def test_checkpoint_completed_confirms_only_the_entries_that_checkpoint_used_last():
    reg = SharedStateRegistry()
    reg.register_all(["a", "b"], 1)
    reg.register_all(["b"], 2)
    reg.checkpoint_completed(1)
    assert (reg.entries["a"].confirmed, reg.entries["b"].confirmed) == (True, False)
    reg.checkpoint_completed(2)
    assert reg.entries["b"].confirmed is True


def test_restore_modes_and_reprs():
    assert RESTORE_MODES == ("CLAIM", "NO_CLAIM")  # RecoveryClaimMode of Flink 2.x (LEGACY removed)
    e = SharedStateEntry(2, 5)
    assert repr(e) == "SharedStateEntry(created_by=2, last_used=5)"
    reg = SharedStateRegistry()
    reg.register_reference("f", 1)
    assert repr(reg) == ("SharedStateRegistry({'f': SharedStateEntry(created_by=1, last_used=1)}, "
                         "highest_not_claimed=-1)")


def test_a_new_registry_is_empty_and_has_claimed_everything():
    reg = SharedStateRegistry()
    assert reg.entries == {} and reg.highest_not_claimed == -1


def test_a_new_entry_is_created_and_last_used_by_its_checkpoint_and_not_confirmed():
    reg = SharedStateRegistry()
    reg.register_reference("f", 3)
    assert type(reg.entries["f"]) is SharedStateEntry
    assert (reg.entries["f"].created_by, reg.entries["f"].last_used, reg.entries["f"].confirmed) == (3, 3, False)


def test_a_key_already_registered_keeps_its_entry_and_creator():
    """``registerReference`` of a known key (a placeholder, or the entries a restore registered)
    only advances ``lastUsedCheckpointID``: the entry and its creator stay."""
    reg = SharedStateRegistry()
    e = SharedStateEntry(2, 2)
    reg.entries["f"] = e
    reg.register_reference("f", 5)
    assert reg.entries["f"] is e and (e.created_by, e.last_used) == (2, 5)


def test_register_all_registers_every_path_for_the_checkpoint():
    reg = SharedStateRegistry()
    reg.register_all(["b", "a"], 4)
    assert {p: (e.created_by, e.last_used) for p, e in reg.entries.items()} == {"a": (4, 4), "b": (4, 4)}
    reg.register_all([], 5)
    assert len(reg.entries) == 2


def test_the_files_of_a_restored_checkpoint_are_registered_by_its_id():
    for mode in RESTORE_MODES:
        reg = SharedStateRegistry()
        reg.register_all_after_restored(["x", "y"], 6, mode)
        assert {p: (e.created_by, e.last_used) for p, e in reg.entries.items()} == {"x": (6, 6), "y": (6, 6)}, mode


class _RecordingRegistry(SharedStateRegistry):
    """A registry whose calls to its own overridable steps are recorded: ``register_all`` (what
    ``registerAllAfterRestored`` hands ``registerAll``) and the two seam hooks ``last_use`` and
    ``_may_discard`` (what ``unregisterUnusedState`` asks them about). The stand-ins record and
    answer without looking at what they are given; the test asserts after the call returned."""

    def __init__(self, last_used=None, creators=None):
        super().__init__()
        self.calls = []
        self._last_used = last_used or {}
        self._creators = creators or {}

    def register_all(self, paths, checkpoint_id):
        self.calls.append(("register_all", paths, checkpoint_id))

    def last_use(self, e):
        self.calls.append(("last_use", e))
        return self._last_used.get(id(e), 0)

    def _may_discard(self, e):
        self.calls.append(("_may_discard", e))
        return self._creators.get(id(e), 0) > self.highest_not_claimed


def test_a_restore_hands_register_all_the_checkpoints_files_and_id():
    """``registerAllAfterRestored(checkpoint, mode)`` registers the checkpoint's state with
    ``registerAll(checkpoint.getOperatorStates().values(), checkpoint.getCheckpointID())``."""
    for mode in RESTORE_MODES:
        reg = _RecordingRegistry()
        paths = ["x", "y"]
        reg.register_all_after_restored(paths, 6, mode)
        assert reg.calls == [("register_all", paths, 6)], mode
        assert reg.calls[0][1] is paths, mode


def test_unregister_unused_state_asks_the_hooks_about_each_entry_in_path_order():
    """``unregisterUnusedState``: every entry's last use is compared with the lowest retained
    checkpoint, and only an entry below it is asked whether its file may be discarded."""
    a, b = SharedStateEntry(1, 1), SharedStateEntry(2, 5)
    reg = _RecordingRegistry(last_used={id(a): 1, id(b): 5}, creators={id(a): 1, id(b): 2})
    reg.entries.update({"b": b, "a": a})
    assert reg.unregister_unused_state(3) == ["a"]
    assert reg.calls == [("last_use", a), ("_may_discard", a), ("last_use", b)]
    assert all(c[1] is e for c, e in zip(reg.calls, (a, a, b)))
    assert reg.entries == {"b": b}
