"""The ActiveResourceManager (``model.activeresourcemanager``) call by call: its two tables
(``pending``, ``idle``) and each call's answer compared as a whole right after the call, as
Flink's ``ActiveResourceManager`` with its ``ResourceManagerDriver`` leaves them:
``checkResourceDeclarations`` (requests counted with the pending workers, the surplus pending
ones released newest first), ``onWorkerRegistered``, the registration and idle timeouts
(counters saturating one past their timeout), and whether an interval changes anything."""

from __future__ import annotations

import pytest

from model import activeresourcemanager as amod
from model.activeresourcemanager import ActiveResourceManager, ResourceID, ResourceManagerDriver


class _Ids:
    """What check_resource_declarations draws worker ids from (``ResourceID``s 1, 2, ...)."""

    def __init__(self, start=0):
        self.n = start

    def new_worker(self):
        self.n += 1
        return ResourceID(self.n)


def _state(arm):
    """Copies of both tables (anything but a dict as it is: the comparison then fails on it)."""
    return tuple(dict(t) if isinstance(t, dict) else t for t in (arm.pending, arm.idle))


def test_a_new_active_resource_manager():
    arm = ActiveResourceManager()
    assert _state(arm) == ({}, {}) and type(arm.pending) is dict and type(arm.idle) is dict
    other = ActiveResourceManager()
    assert other.pending is not arm.pending and other.idle is not arm.idle
    assert arm.counts_pending_workers() is True and arm.registration_timeout_armed() is True
    assert ActiveResourceManager.__slots__ == ("pending", "idle")


def test_one_driver_for_every_run():
    assert type(amod._DRIVER) is ResourceManagerDriver
    assert ActiveResourceManager().driver is ActiveResourceManager().driver is amod._DRIVER


def test_the_resource_id_is_an_int_without_a_dict():
    w = ResourceID(4)
    assert w == 4 and not hasattr(w, "__dict__") and ResourceID.__slots__ == ()


def test_the_driver_requests_and_releases():
    arm, d = ActiveResourceManager(), ResourceManagerDriver()
    d.request_resource(arm, 3)
    assert _state(arm) == ({3: 0}, {})
    d.request_resource(arm, 5)
    arm.idle = {7: 2, 8: 1}
    d.release_resource(arm, 3)
    assert _state(arm) == ({5: 0}, {7: 2, 8: 1})
    d.release_resource(arm, 7)  # a registered idle worker, not pending
    assert _state(arm) == ({5: 0}, {8: 1})
    d.release_resource(arm, 9)  # neither
    assert _state(arm) == ({5: 0}, {8: 1})


def test_a_declaration_requests_the_missing_workers():
    arm, ids = ActiveResourceManager(), _Ids()
    assert arm.check_resource_declarations(ids, 0) == ([], [])
    assert _state(arm) == ({}, {})
    assert arm.check_resource_declarations(ids, 2) == ([1, 2], [])
    assert _state(arm) == ({1: 0, 2: 0}, {})
    # the pending workers count: nothing more is requested for the same need
    assert arm.check_resource_declarations(ids, 2) == ([], [])
    assert _state(arm) == ({1: 0, 2: 0}, {}) and ids.n == 2
    arm.pending[1] = 1
    assert arm.check_resource_declarations(ids, 3) == ([3], [])
    assert _state(arm) == ({1: 1, 2: 0, 3: 0}, {})


def test_a_declaration_releases_the_surplus_pending_workers_newest_first():
    arm, ids = ActiveResourceManager(), _Ids()
    arm.check_resource_declarations(ids, 4)
    arm.idle = {9: 1}
    assert arm.check_resource_declarations(ids, 3) == ([], [4])
    assert _state(arm) == ({1: 0, 2: 0, 3: 0}, {9: 1})
    assert arm.check_resource_declarations(ids, 1) == ([], [3, 2])
    assert _state(arm) == ({1: 0}, {9: 1})
    assert arm.check_resource_declarations(ids, 0) == ([], [1])
    assert _state(arm) == ({}, {9: 1})
    assert ids.n == 4


def test_a_registered_worker_is_no_longer_pending():
    arm, ids = ActiveResourceManager(), _Ids()
    arm.check_resource_declarations(ids, 2)
    arm.on_worker_registered(1)
    assert _state(arm) == ({2: 0}, {})
    arm.on_worker_registered(1)  # twice: nothing more
    arm.on_worker_registered(7)
    assert _state(arm) == ({2: 0}, {})


def test_a_pending_worker_ages_and_is_stopped_past_the_registration_timeout():
    arm, ids = ActiveResourceManager(), _Ids()
    arm.check_resource_declarations(ids, 2)
    arm.pending[2] = 1
    assert arm.tick(2, 5, ()) == ([], [])
    assert _state(arm) == ({1: 1, 2: 2}, {})
    assert arm.tick(2, 5, ()) == ([2], [])
    assert _state(arm) == ({1: 2}, {})
    assert arm.tick(2, 5, ()) == ([1], [])
    assert _state(arm) == ({}, {})


def test_pending_workers_time_out_in_order():
    arm = ActiveResourceManager()
    arm.pending = {ResourceID(5): 0, ResourceID(3): 0, ResourceID(4): 3}
    assert arm.tick(0, 5, ()) == ([3, 4, 5], [])
    assert _state(arm) == ({}, {})


class _Unarmed(ActiveResourceManager):
    """As under FLINK-13554: no registration timeout stops a pending worker."""

    def registration_timeout_armed(self):
        return False


def test_a_pending_counter_saturates_one_past_the_timeout():
    arm = _Unarmed()
    arm.pending = {1: 7, 2: 0}
    assert arm.tick(2, 5, ()) == ([], [])
    assert _state(arm) == ({1: 3, 2: 1}, {})
    assert arm.tick(2, 5, ()) == ([], [])
    assert _state(arm) == ({1: 3, 2: 2}, {})
    assert arm.tick(2, 5, ()) == ([], [])
    assert _state(arm) == ({1: 3, 2: 3}, {})


def test_an_idle_worker_ages_and_is_released_past_the_idle_timeout():
    arm = ActiveResourceManager()
    assert arm.tick(5, 1, [8, 6]) == ([], [])
    assert _state(arm) == ({}, {6: 1, 8: 1})
    arm.idle[8] = 0
    assert arm.tick(5, 1, (6, 8)) == ([], [6])
    assert _state(arm) == ({}, {8: 1})
    assert arm.tick(5, 1, {8, 6}) == ([], [8])
    assert _state(arm) == ({}, {6: 1})


def test_a_worker_no_longer_idle_forgets_its_idle_time():
    arm = ActiveResourceManager()
    arm.idle = {1: 1, 2: 1, 3: 0}
    assert arm.tick(5, 3, [2]) == ([], [])
    assert _state(arm) == ({}, {2: 2})
    assert arm.tick(5, 3, [1, 2]) == ([], [])
    assert _state(arm) == ({}, {1: 1, 2: 3})
    assert arm.tick(5, 3, [1, 2]) == ([], [2])
    assert _state(arm) == ({}, {1: 2})


class _Recording(ResourceManagerDriver):
    """A provider that records what it is asked to release and stops nothing."""

    def __init__(self):
        self.released = []

    def release_resource(self, arm, worker):
        self.released.append(worker)


class _KeepsIdle(ActiveResourceManager):
    def __init__(self):
        super().__init__()
        self.recording = _Recording()

    @property
    def driver(self):
        return self.recording


def test_an_idle_counter_saturates_one_past_the_timeout():
    arm = _KeepsIdle()
    arm.idle = {4: 9}
    assert arm.tick(5, 2, [4]) == ([], [4])
    assert _state(arm) == ({}, {4: 3}) and arm.recording.released == [4]
    arm.pending = {6: 9}
    assert arm.tick(1, 2, [4]) == ([6], [4])
    assert _state(arm) == ({6: 2}, {4: 3}) and arm.recording.released == [4, 6, 4]


def test_one_interval_ages_both_tables():
    arm = ActiveResourceManager()
    arm.pending = {10: 0, 11: 1}
    arm.idle = {20: 1}
    assert arm.tick(1, 1, [20, 21]) == ([11], [20])
    assert _state(arm) == ({10: 1}, {21: 1})


@pytest.mark.parametrize("pending, idle, idle_workers, expected", [
    ({}, {}, (), False),
    ({1: 2}, {}, (), True),
    ({1: 3}, {}, (), False),
    ({1: 3, 2: 0}, {}, (), True),
    ({}, {}, (5,), True),
    ({}, {5: 1}, (5,), True),
    ({}, {5: 2}, (5,), False),
    ({}, {5: 0, 6: 2}, (6,), False),
    ({1: 3}, {5: 2}, (5, 6), True),
    ({1: 4}, {5: 3}, (5,), False),
])
def test_ticking_while_a_counter_is_below_its_saturation(pending, idle, idle_workers, expected):
    arm = ActiveResourceManager()
    arm.pending, arm.idle = dict(pending), dict(idle)
    assert arm.ticking(2, 1, idle_workers) is expected
    assert _state(arm) == (pending, idle)


class _IgnoresPending(ActiveResourceManager):
    """As under the seam active-rm-ignores-pending-workers: a declaration is compared with the
    registered workers only."""

    def counts_pending_workers(self):
        return False


def test_without_counting_pending_workers_every_check_requests_the_whole_need():
    arm, ids = _IgnoresPending(), _Ids()
    assert arm.check_resource_declarations(ids, 2) == ([1, 2], [])
    assert _state(arm) == ({1: 0, 2: 0}, {})
    assert arm.check_resource_declarations(ids, 2) == ([3, 4], [])
    assert _state(arm) == ({1: 0, 2: 0, 3: 0, 4: 0}, {})
    assert arm.check_resource_declarations(ids, 0) == ([], [])
    assert _state(arm) == ({1: 0, 2: 0, 3: 0, 4: 0}, {})


def test_a_new_idle_worker_ticks_even_with_an_idle_timeout_of_zero():
    arm = ActiveResourceManager()
    assert arm.ticking(0, 0, (5,)) is True
    arm.idle = {5: 0}
    assert arm.ticking(0, 0, (5,)) is True
    arm.idle = {5: 1}
    assert arm.ticking(0, 0, (5,)) is False
    arm.pending = {6: 0}
    assert arm.ticking(0, 0, (5,)) is True
