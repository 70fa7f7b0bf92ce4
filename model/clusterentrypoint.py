"""Deployment modes: a session cluster or an application cluster, as the cluster entrypoint
starts them (``RuntimeConfig.deployment_mode``), with the slots of their TaskExecutors.

Invariant upheld: a slot is allocated to one job at a time in every view -- the
TaskExecutor's ``TaskSlotTable``, the SlotManager's table and the jobs' slot pools -- and a
slot holds tasks of the job it is allocated to only (a slot being freed holds its old tasks
until they ended, and is allocated to no one before); a globally terminal job holds no slot.

Follows Flink's ``ClusterEntrypoint`` in its two modes:

* **session** (``SessionClusterEntrypoint``; ``execution.target`` ``remote``,
  ``yarn-session``, ``kubernetes-session``): one Dispatcher and ResourceManager run any
  number of jobs submitted over time (``SubmitJob``), each with its own JobManagerRunner and
  JobMaster (``model.dispatcher``), on a fixed set of TaskExecutors whose slots they share
  (``StandaloneResourceManager``: the TaskExecutors are started by the operator and register
  at once; ``task_managers`` of ``slots_per_task_manager`` slots);
* **application** (``ApplicationClusterEntrypoint``; ``execution.target``
  ``yarn-application``, ``kubernetes-application``, and the deprecated per-job targets,
  whose resource management is the same): the cluster runs one job, submitted when it
  starts, and its ResourceManager is an ``ActiveResourceManager``
  (``model.activeresourcemanager``) that requests workers of ``slots_per_task_manager``
  slots when the requirements exceed the free slots of the registered ones, and releases
  them; the cluster shuts down when the job is globally terminal.

The SlotManager (``FineGrainedSlotManager``'s rule, as ``model.resourcemanager``'s): while a
running job's requirement is not met by the slots allocated to it, the first free slot of a
registered TaskExecutor (by worker, then slot) is allocated to it (``requestSlot``; the
TaskExecutor offers it and the JobMaster accepts it: one step), and the JobMaster deploys a
waiting task into each free slot of its pool (``submitTask``). A TaskExecutor's
``TaskSlotTable`` frees a slot whose tasks still run only once they ended: ``freeSlot`` marks
it RELEASING and fails its tasks (CANCELING); the last one to end (``TaskTerminated``) frees
it and the TaskExecutor tells the ResourceManager (``notifySlotAvailable``).

Where the model deliberately differs: requestSlot, offerSlots, submitTask, freeSlot and
notifySlotAvailable take effect in the step that sends them (``model.controlplane`` models
these RPCs, their loss and reordering, for one job); heartbeats, fencing and the
JobManager's own leader election are left out (a session cluster's Dispatcher and
ResourceManager never fail over here); the data plane of the scenario is not run (its job
graph gives each job its shape). See docs/deployment.md.
"""

from __future__ import annotations

import math

from model import seams
from model.activeresourcemanager import ActiveResourceManager, ResourceID
from model.dispatcher import Dispatcher, JobManagerRunner
from model.events import value
from model.fingerprint import beside_state
from model.rpc import AllocationID
from model.slotsharing import compute_execution_slot_sharing_groups

DEPLOYMENT_MODES = ("session", "application")

ACTIVE, ALLOCATED, RELEASING = "ACTIVE", "ALLOCATED", "RELEASING"
RUNNING, CANCELING = "RUNNING", "CANCELING"


class TaskSlotTable:
    """One TaskExecutor's slots: ``slots[i]`` is None (free) or ``(allocation, job, state)``
    with state ACTIVE (accepted by the job's JobMaster), ALLOCATED (allocated, accepted by no
    JobMaster: inactive) or RELEASING; ``tasks[i]`` the tasks in slot ``i``,
    ``((job, task, attempt, RUNNING or CANCELING), ...)``."""

    __slots__ = ("slots", "tasks")

    def __init__(self, number_of_slots: int):
        self.slots: list = [None] * number_of_slots
        self.tasks: dict = {}

    def slot_of(self, allocation) -> int | None:
        for i, s in enumerate(self.slots):
            if s is not None and s[0] == allocation:
                return i
        return None

    def idle(self) -> bool:
        """No slot allocated and no task left (``TaskExecutor`` is idle for the SlotManager)."""
        return all(s is None for s in self.slots) and not self.tasks

    def allocate(self, slot: int, allocation, job: int, state: str = ACTIVE) -> bool:
        """``allocateSlot``: only a free slot (else ``SlotOccupiedException``); ACTIVE once the
        job's JobMaster accepted its offer (the same step), else ALLOCATED."""
        if self.slots[slot] is not None:
            return False
        self.slots[slot] = (allocation, job, state)
        return True

    def free_inactive_slots(self, job: int) -> list:
        """``freeInactiveSlots``: free the job's slots no JobMaster accepted. Returns their indices."""
        freed = [i for i, v in enumerate(self.slots) if v is not None and v[1] == job and v[2] == ALLOCATED]
        for i in freed:
            self.slots[i] = None
        return freed

    def add_task(self, allocation, job: int, task: int, attempt: int) -> bool:
        """``addTask``: into the ACTIVE slot of ``allocation`` allocated to ``job``."""
        i = self.slot_of(allocation)
        if i is None or self.slots[i][1] != job or self.slots[i][2] != ACTIVE:
            return False
        self.tasks[i] = tuple(sorted(self.tasks.get(i, ()) + ((job, task, attempt, RUNNING),)))
        return True

    def _cancel(self, i: int, job: int | None = None) -> None:
        ts = self.tasks.get(i)
        if ts:
            self.tasks[i] = tuple((j, t, a, CANCELING) if job is None or j == job else (j, t, a, st)
                                  for j, t, a, st in ts)

    def free_slot(self, allocation) -> bool:
        """``freeSlot``: a slot without tasks is freed (returns True); one with tasks is
        RELEASING, its tasks failed (CANCELING), and it is freed when the last ends."""
        i = self.slot_of(allocation)
        if i is None:
            return False
        if not self.tasks.get(i):
            self.slots[i] = None
            self.tasks.pop(i, None)
            return True
        a, job, _ = self.slots[i]
        self.slots[i] = (a, job, RELEASING)
        self._cancel(i)
        return False

    def cancel_task(self, job: int, task: int) -> None:
        """``cancelTask``: the task is CANCELING (its thread ends later: ``TaskTerminated``)."""
        for i, ts in list(self.tasks.items()):
            self.tasks[i] = tuple((j, t, a, CANCELING) if (j, t) == (job, task) else (j, t, a, st)
                                  for j, t, a, st in ts)

    def remove_task(self, slot: int, entry: tuple) -> bool:
        """The task ``entry`` ended (finished, failed, or cancelled): it leaves the slot. A
        RELEASING slot left empty is freed (returns True)."""
        keep = tuple(e for e in self.tasks.get(slot, ()) if e != entry)
        if keep:
            self.tasks[slot] = keep
        else:
            self.tasks.pop(slot, None)
        s = self.slots[slot]
        if not keep and s is not None and s[2] == RELEASING:
            self.slots[slot] = None
            return True
        return False


@seams.override("cancel-task-without-job-id", TaskSlotTable, "cancel_task",
                "cancelTask picks the task by its index in the job graph alone, not by the JobID it belongs to: "
                "cancelling one job's task cancels the task of the same index of every other job on the "
                "TaskExecutor")
def _cancel_task_of_every_job(self, job: int, task: int) -> None:
    for i, ts in list(self.tasks.items()):
        self.tasks[i] = tuple((j, t, a, CANCELING) if t == task else (j, t, a, st) for j, t, a, st in ts)


@seams.override("slot-freed-before-tasks-terminated", TaskSlotTable, "free_slot",
                "freeSlot frees a slot at once although its tasks are still being cancelled (no RELEASING state): "
                "the slot is reported free and may be allocated to another job while the old job's task still "
                "runs in it")
def _free_slot_at_once(self, allocation) -> bool:
    i = self.slot_of(allocation)
    if i is None:
        return False
    self._cancel(i)
    self.slots[i] = None
    return True


class SlotManager:
    """The ResourceManager's SlotManager (see the module docstring): ``slots`` (worker, slot)
    -> None or (allocation, job) for every registered TaskExecutor, ``requirements`` job ->
    slots declared."""

    __slots__ = ("slots", "requirements")

    def __init__(self):
        self.slots: dict = {}
        self.requirements: dict = {}

    def register(self, worker, number_of_slots: int) -> None:
        for s in range(number_of_slots):
            self.slots[(worker, s)] = None

    def unregister(self, worker) -> None:
        for key in [k for k in self.slots if k[0] == worker]:
            del self.slots[key]

    def allocated_to(self, job: int) -> int:
        return sum(1 for v in self.slots.values() if v is not None and v[1] == job)

    def free(self) -> list:
        return sorted(k for k, v in self.slots.items() if v is None)

    def reclaims_inactive_slots(self) -> bool:
        """Whether clearing a job's requirements frees the slots allocated to it that no
        JobMaster accepted (``TaskExecutorGateway.freeInactiveSlots``, FLINK-31444): yes."""
        return True


@seams.override("FLINK-31444", SlotManager, "reclaims_inactive_slots",
                "clearing a finished job's requirements does not reclaim its inactive slots: a slot whose release "
                "reached the SlotManager before the requirement was cleared is allocated to the finished job again "
                "and stays with it")
def _inactive_slots_kept(self) -> bool:
    return False


@value  # never changed after the cluster started: a copy shares it
@beside_state
class DeploymentSetup:
    """What the scenario fixes for the deployment: ``mode``, ``groups`` (each task's subtasks:
    the execution slot sharing groups of the job graph), ``slots_per_worker``,
    ``registration_timeout`` and ``idle_timeout`` (heartbeat intervals) and the number of
    TaskExecutors a session cluster starts with. Beside the state, shared by every copy."""

    __slots__ = ("mode", "groups", "slots_per_worker", "registration_timeout", "idle_timeout", "task_managers")

    def __init__(self, c):
        cfg = c.config
        self.mode = cfg.deployment_mode
        self.groups = tuple(g.subtasks for g in compute_execution_slot_sharing_groups(c.eg))
        self.slots_per_worker = len(self.groups) if cfg.slots_per_task_manager is None else cfg.slots_per_task_manager
        self.registration_timeout = cfg.taskmanager_registration_timeout
        self.idle_timeout = cfg.taskmanager_idle_timeout
        self.task_managers = cfg.task_managers


@beside_state
class DeploymentIds:
    """The counters fresh AllocationIDs and ResourceIDs are drawn from (beside the state: a
    fingerprint counts them by rank, ``model.fingerprint.fresh_id``)."""

    __slots__ = ("next_allocation", "next_worker")

    def __init__(self):
        self.next_allocation = 1
        self.next_worker = 0


class ClusterEntrypoint:
    """The deployment's state (``Cluster.deployment``; see the module docstring): the
    ``dispatcher``, the ``slot_manager``, the registered TaskExecutors' slot tables
    (``workers``: ResourceID -> TaskSlotTable) and, in application mode, the ``active``
    ResourceManager's workers."""

    __slots__ = ("dispatcher", "slot_manager", "workers", "active", "setup", "ids")

    def __init__(self, c):
        self.setup = DeploymentSetup(c)
        self.ids = DeploymentIds()
        self.dispatcher = Dispatcher()
        self.slot_manager = SlotManager()
        self.workers: dict = {}
        self.active = None
        if self.setup.mode == "session":
            for _ in range(self.setup.task_managers):
                self._register(self.new_worker())
        else:
            self.active = ActiveResourceManager()
            # ApplicationDispatcherBootstrap submits the application's job as the cluster starts
            self.submit_job()
        self.after_step(c)

    # -- identifiers -------------------------------------------------------------------------
    def new_worker(self) -> ResourceID:
        w = ResourceID(self.ids.next_worker)
        self.ids.next_worker += 1
        return w

    def new_allocation(self) -> AllocationID:
        a = AllocationID(self.ids.next_allocation)
        self.ids.next_allocation += 1
        return a

    @property
    def mode(self) -> str:
        return self.setup.mode

    @property
    def jobs(self) -> list:
        return self.dispatcher.jobs

    # -- workers -----------------------------------------------------------------------------
    def _register(self, w) -> None:
        self.workers[w] = TaskSlotTable(self.setup.slots_per_worker)
        self.slot_manager.register(w, self.setup.slots_per_worker)

    def register_worker(self, c, w) -> None:
        """A pending worker's TaskExecutor registered (``onWorkerRegistered``)."""
        self.active.on_worker_registered(w)
        self._register(w)
        c.events.append(("dm_worker_registered", c.now, w))

    def _stop_worker(self, w) -> None:
        """The worker is released: its process stops, its slots leave the SlotManager."""
        self.workers.pop(w, None)
        self.slot_manager.unregister(w)

    def idle_workers(self) -> list:
        return sorted(w for w, t in self.workers.items() if t.idle())

    def tick(self, c) -> None:
        """One heartbeat interval of the ActiveResourceManager (``DeploymentTick``)."""
        timed_out, released = self.active.tick(self.setup.registration_timeout, self.setup.idle_timeout,
                                               self.idle_workers())
        for w in timed_out:
            c.events.append(("dm_worker_registration_timeout", c.now, w))
        for w in released:
            self._stop_worker(w)
            c.events.append(("dm_idle_worker_released", c.now, w))

    def ticking(self) -> bool:
        return self.active is not None and not self.dispatcher.shut_down and self.active.ticking(
            self.setup.registration_timeout, self.setup.idle_timeout, self.idle_workers())

    # -- jobs --------------------------------------------------------------------------------
    def submit_job(self) -> JobManagerRunner:
        return self.dispatcher.submit_job(len(self.setup.groups))

    def _tables_running(self, r: JobManagerRunner):
        """(worker, slot, entry) of every task of job ``r`` in a slot, in order."""
        for w in sorted(self.workers):
            t = self.workers[w]
            for s in sorted(t.tasks):
                for e in t.tasks[s]:
                    if e[0] == r.index:
                        yield w, s, e

    def task_finished(self, c, job: int, task: int) -> None:
        r = self.jobs[job]
        for w, s, e in list(self._tables_running(r)):
            if e[1] == task and e[2] == r.attempt and e[3] == RUNNING:
                self.workers[w].remove_task(s, e)
        r.tasks[task] = "FINISHED"
        r.task_slot.pop(task, None)
        if all(t == "FINISHED" for t in r.tasks):
            self._terminal(c, r, "FINISHED")

    def task_failed(self, c, job: int, task: int) -> None:
        """The task fails (its thread ended with an exception); restart-strategy none: the job
        fails, its other tasks are cancelled."""
        r = self.jobs[job]
        for w, s, e in list(self._tables_running(r)):
            if e[1] == task and e[2] == r.attempt and e[3] == RUNNING:
                self.workers[w].remove_task(s, e)
        r.task_slot.pop(task, None)
        r.tasks[task] = "CREATED"
        r.status = "FAILING"
        self._cancel_tasks(r)
        c.events.append(("dm_job_failing", c.now, job, task))
        self._maybe_terminal(c, r)

    def cancel_job(self, c, job: int) -> None:
        r = self.jobs[job]
        r.status = "CANCELLING"
        self._cancel_tasks(r)
        c.events.append(("dm_job_cancelling", c.now, job))
        self._maybe_terminal(c, r)

    def _cancel_tasks(self, r: JobManagerRunner) -> None:
        for w, _s, e in list(self._tables_running(r)):
            if e[3] == RUNNING:
                self.workers[w].cancel_task(r.index, e[1])

    def _maybe_terminal(self, c, r: JobManagerRunner) -> None:
        """A FAILING or CANCELLING job whose tasks all ended is FAILED or CANCELED."""
        if r.status in ("FAILING", "CANCELLING") and not any(
                e[2] == r.attempt for _w, _s, e in self._tables_running(r)):
            self._terminal(c, r, "FAILED" if r.status == "FAILING" else "CANCELED")

    def _release_slots(self, r: JobManagerRunner) -> None:
        """The JobMaster stops: it releases every slot of its pool (``freeSlot``; a slot the
        TaskExecutor freed is free for the SlotManager: ``notifySlotAvailable``) and disconnects
        from the ResourceManager, which clears the job's requirement. The two race (FLINK-31444):
        the model takes the order in which the freed slots reach the SlotManager first, whose
        rule allocates them to the job again (the JobMaster that would accept them is gone:
        they stay inactive); clearing the requirement then frees them
        (``freeInactiveSlots``)."""
        sm = self.slot_manager
        for alloc, (w, s) in sorted(r.pool.items()):
            t = self.workers.get(w)
            if t is not None and t.free_slot(alloc):
                self._slot_available(w, s, alloc)
        r.pool.clear()
        r.task_slot.clear()
        need = sm.requirements.get(r.index, 0) - sm.allocated_to(r.index)
        for w, s in sm.free():
            if need <= 0:
                break
            alloc = self.new_allocation()
            if self.workers[w].allocate(s, alloc, r.index, ALLOCATED):
                sm.slots[(w, s)] = (alloc, r.index)
                need -= 1
        sm.requirements.pop(r.index, None)
        if sm.reclaims_inactive_slots():
            for w in sorted(self.workers):
                for s in self.workers[w].free_inactive_slots(r.index):
                    sm.slots[(w, s)] = None

    def _slot_available(self, w, s: int, alloc) -> None:
        """``notifySlotAvailable``: the SlotManager frees the slot if it still holds that allocation."""
        v = self.slot_manager.slots.get((w, s))
        if v is not None and v[0] == alloc:
            self.slot_manager.slots[(w, s)] = None

    def _terminal(self, c, r: JobManagerRunner, status: str) -> None:
        r.status = status
        self._release_slots(r)
        self.dispatcher.job_reached_globally_terminal_state(r)
        c.events.append(("dm_job_terminal", c.now, r.index, status))
        self._job_result(c, r)

    def _job_result(self, c, r: JobManagerRunner) -> None:
        """Application mode: the bootstrap shuts the cluster down on the job's result."""
        if self.mode == "application" and self.dispatcher.bootstrap.shuts_down_on(r.status):
            self.dispatcher.shut_down_cluster()
            # ActiveResourceManager.deregisterApplication: every worker is stopped
            for w in list(self.workers):
                self._stop_worker(w)
            for w in list(self.active.pending):
                self.active.driver.release_resource(self.active, w)
            self.active.idle.clear()
            c.events.append(("dm_cluster_shut_down", c.now, r.index, r.status))

    def revoke_leadership(self, c, job: int) -> None:
        """The job's JobManagerRunner loses leadership: its JobMaster stops and releases its
        slots at once; the job is SUSPENDED (recoverable from the JobGraphStore)."""
        r = self.jobs[job]
        self._release_slots(r)
        r.status = "SUSPENDED"
        r.tasks = ["CREATED"] * len(r.tasks)
        c.events.append(("dm_job_suspended", c.now, job))
        self._job_result(c, r)

    def grant_leadership(self, c, job: int) -> None:
        """A new JobMaster recovers the SUSPENDED job from the JobGraphStore: new attempts of its tasks."""
        r = self.jobs[job]
        r.status = "RUNNING"
        r.attempt += 1
        c.events.append(("dm_job_recovered", c.now, job))

    def task_terminated(self, c, w, slot: int, entry: tuple) -> None:
        """A CANCELING task's thread ended: it leaves its slot; a RELEASING slot left empty is
        freed and reported to the SlotManager; its job may now be terminal."""
        t = self.workers[w]
        held = t.slots[slot]
        if t.remove_task(slot, entry):
            self._slot_available(w, slot, held[0])
            c.events.append(("dm_releasing_slot_freed", c.now, w, slot, held[1]))
        job, task, attempt, _ = entry
        r = self.jobs[job]
        if attempt == r.attempt and r.tasks[task] == "DEPLOYED":
            r.tasks[task] = "CREATED"
            r.task_slot.pop(task, None)
        self._maybe_terminal(c, r)

    # -- after every step: the SlotManager's rule, deployment, the active RM's declaration ------
    def after_step(self, c) -> None:
        if self.dispatcher.shut_down:
            return
        sm = self.slot_manager
        for r in self.jobs:
            if r.status == "RUNNING":
                sm.requirements[r.index] = r.required
        for r in self.jobs:
            if r.status != "RUNNING":
                continue
            need = r.required - len(r.pool)
            for w, s in sm.free():
                if need <= 0:
                    break
                alloc = self.new_allocation()
                if not self.workers[w].allocate(s, alloc, r.index):
                    continue
                sm.slots[(w, s)] = (alloc, r.index)
                r.pool[alloc] = (w, s)
                need -= 1
                c.events.append(("dm_slot_allocated", c.now, r.index, w, s, alloc))
            free = r.free_allocations()
            for task, state in enumerate(r.tasks):
                if state != "CREATED" or not free:
                    continue
                alloc = free.pop(0)
                w, _s = r.pool[alloc]
                if self.workers[w].add_task(alloc, r.index, task, r.attempt):
                    r.tasks[task] = "DEPLOYED"
                    r.task_slot[task] = alloc
        if self.active is not None:
            requested, released = self.active.check_resource_declarations(self, self.needed_pending_workers())
            for w in requested:
                c.events.append(("dm_worker_requested", c.now, w))
            for w in released:
                c.events.append(("dm_pending_worker_released", c.now, w))

    def needed_pending_workers(self) -> int:
        """The workers the SlotManager's declaration needs beyond the registered ones: the
        running jobs' unfulfilled slots less the free slots of registered workers, in workers."""
        return needed_pending_workers(self)

    # -- the end -----------------------------------------------------------------------------
    def finished(self) -> bool:
        """Session: every submitted job is globally terminal and no task is left in a slot
        (whether their slots came back is ``terminated_job_slots_returned``'s to judge).
        Application: the cluster was shut down."""
        if self.mode == "application":
            return self.dispatcher.shut_down
        if not all(r.globally_terminal for r in self.jobs):
            return False
        return not any(t.tasks for t in self.workers.values())


def needed_pending_workers(ep) -> int:
    """``ep``'s pending workers the declarations justify (see ``ClusterEntrypoint``): pure, the
    spec reads it too."""
    sm = ep.slot_manager
    unfulfilled = sum(max(0, r.required - len(r.pool)) for r in ep.jobs if r.status == "RUNNING")
    deficit = unfulfilled - len(sm.free())
    return max(0, math.ceil(deficit / ep.setup.slots_per_worker)) if deficit > 0 else 0
