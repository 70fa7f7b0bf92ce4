"""The active ResourceManager: workers requested from and released to a resource provider.

Invariant upheld: the ActiveResourceManager never has more workers pending than the
SlotManager's unfulfilled requirements need (after the free slots of registered workers),
a pending worker that does not register within ``resourcemanager.taskmanager-registration.timeout``
is stopped, and a registered worker idle for ``resourcemanager.taskmanager-timeout`` is
released.

Follows Flink's ``ActiveResourceManager`` with its ``ResourceManagerDriver`` (Kubernetes,
YARN: ``requestResource`` / ``releaseResource``):

* ``checkResourceDeclarations``: the SlotManager declares how many workers it needs
  (``ResourceAllocator.declareResourceNeeded``); the ActiveResourceManager compares the
  declaration with the workers it counts (``totalWorkerCounter``: pending and registered
  ones) and requests the difference (``requestNewWorker``: the worker is *pending*,
  counted in ``pendingWorkerCounter`` until it registers) or releases the surplus, pending
  workers first (``releaseUnallocatedWorkers``, then the starting ones);
* ``scheduleWorkerRegistrationTimeoutCheck``: a requested worker still unregistered after
  the registration timeout is stopped (``internalStopWorker``) and the declarations are
  checked again (a new worker is requested if it is still needed; FLINK-13554 added the
  timeout);
* ``onWorkerRegistered``: the TaskExecutor registered; it is no longer pending;
* idle workers: the SlotManager's TaskManagerTracker declares a registered worker without
  allocated slots that stayed idle for ``resourcemanager.taskmanager-timeout`` unwanted, and
  the ActiveResourceManager releases it (``releaseResource``).

Where the model deliberately differs: the declaration is computed here from the SlotManager's
table (``needed_pending``: the unfulfilled slots less the free slots of registered workers, in
workers of ``taskmanager.numberOfTaskSlots`` slots); the registration timeout runs from the
request, not from the moment the driver's ``requestResource`` future returned the worker (the
model has no allocated-but-unstarted worker state); time passes in heartbeat intervals
(``DeploymentTick``); start-worker failure rates and their cool-down, worker resource specs
(every worker is alike) and the recovery of a previous attempt's workers are left out.
"""

from __future__ import annotations

from model import seams
from model.events import value
from model.fingerprint import fresh_id


@fresh_id("W")
@value
class ResourceID(int):
    """Flink's ``ResourceID`` of a worker (a TaskExecutor process): unique in the run (each is
    drawn above every one drawn before), compared only for equality and order, so a
    fingerprint counts it by its rank among the live ones (``model.fingerprint.fresh_id``)."""

    __slots__ = ()


class ResourceManagerDriver:
    """The resource provider's side (``ResourceManagerDriver``): a requested worker is started
    by the provider and its TaskExecutor registers (``RegisterWorker``), or never does; a
    released one is stopped. It keeps no state the model needs beyond the
    ActiveResourceManager's pending workers."""

    def request_resource(self, arm, worker: ResourceID) -> None:
        arm.pending[worker] = 0

    def release_resource(self, arm, worker: ResourceID) -> None:
        arm.pending.pop(worker, None)
        arm.idle.pop(worker, None)


class ActiveResourceManager:
    """The ActiveResourceManager's workers (see the module docstring): ``pending`` requested,
    not registered workers -> heartbeat intervals since their request; ``idle`` registered
    workers without allocated slots -> heartbeat intervals they have been idle."""

    __slots__ = ("pending", "idle")

    def __init__(self):
        self.pending: dict = {}
        self.idle: dict = {}

    @property
    def driver(self) -> "ResourceManagerDriver":
        """The resource provider (stateless: one for every run)."""
        return _DRIVER

    def counts_pending_workers(self) -> bool:
        """Whether a declaration is compared with the pending workers too (``totalWorkerCounter``
        counts requested workers from the request on): yes."""
        return True

    def registration_timeout_armed(self) -> bool:
        """Whether a requested worker gets its registration timeout
        (``scheduleWorkerRegistrationTimeoutCheck``): yes."""
        return True

    def check_resource_declarations(self, ep, needed: int) -> tuple[list, list]:
        """``checkResourceDeclarations`` against ``needed`` pending workers (beyond the
        registered ones): request the missing ones, release surplus pending ones (the newest
        first). Returns (workers requested, workers released)."""
        counted = len(self.pending) if self.counts_pending_workers() else 0
        requested, released = [], []
        for _ in range(needed - counted):
            w = ep.new_worker()
            self.driver.request_resource(self, w)
            requested.append(w)
        if counted > needed:
            for w in sorted(self.pending, reverse=True)[:counted - needed]:
                self.driver.release_resource(self, w)
                released.append(w)
        return requested, released

    def on_worker_registered(self, worker: ResourceID) -> None:
        self.pending.pop(worker, None)

    def tick(self, registration_timeout: int, idle_timeout: int, idle_workers) -> tuple[list, list]:
        """One heartbeat interval: pending workers age and those pending for more than the
        registration timeout are stopped; idle registered workers (``idle_workers``) age and
        those idle for more than ``taskmanager-timeout`` intervals are released (as the control
        plane's heartbeat timeout: "more than" the timeout's intervals). Counters saturate one
        past their timeout.
        Returns (pending workers stopped, idle workers released)."""
        timed_out = []
        armed = self.registration_timeout_armed()
        for w in sorted(self.pending):
            self.pending[w] = min(self.pending[w] + 1, registration_timeout + 1)
            if armed and self.pending[w] > registration_timeout:
                timed_out.append(w)
        for w in timed_out:
            self.driver.release_resource(self, w)
        self.idle = {w: n for w, n in self.idle.items() if w in idle_workers}
        released = []
        for w in sorted(idle_workers):
            self.idle[w] = min(self.idle.get(w, 0) + 1, idle_timeout + 1)
            if self.idle[w] > idle_timeout:
                released.append(w)
        for w in released:
            self.driver.release_resource(self, w)
        return timed_out, released

    def ticking(self, registration_timeout: int, idle_timeout: int, idle_workers) -> bool:
        """Whether a heartbeat interval would change anything (a counter below its saturation)."""
        if any(n <= registration_timeout for n in self.pending.values()):
            return True
        return any(self.idle.get(w, 0) <= idle_timeout for w in idle_workers)


_DRIVER = ResourceManagerDriver()


@seams.override("active-rm-ignores-pending-workers", ActiveResourceManager, "counts_pending_workers",
                "the ActiveResourceManager compares the SlotManager's declaration with its registered workers "
                "only: while a requested worker is starting, every check requests another one")
def _pending_workers_ignored(self) -> bool:
    return False


@seams.override("FLINK-13554", ActiveResourceManager, "registration_timeout_armed",
                "no timeout for worker registration: a requested worker that never registers stays pending for "
                "ever, and the ResourceManager never requests a replacement")
def _no_registration_timeout(self) -> bool:
    return False
