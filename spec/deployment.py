"""Deployment modes (``model.clusterentrypoint``, ``model.dispatcher``,
``model.activeresourcemanager``): what must hold across the jobs of a session cluster and of
the active ResourceManager and the shutdown of an application cluster
(``RuntimeConfig.deployment_mode``).

Without a deployment mode there is no such state and every invariant here holds trivially.
"""

from __future__ import annotations

from model.clusterentrypoint import needed_pending_workers
from model.dispatcher import GLOBALLY_TERMINAL
from spec.coverage import goal
from spec.invariant import Violation, invariant


def _deployment(run):
    return run.cluster.deployment


def _views(d) -> dict:
    """(worker, slot) -> {view name: job} for every slot some view holds for a job: the
    TaskExecutor's TaskSlotTable, the SlotManager's table, and each job's slot pool."""
    out: dict = {}
    for w, t in d.workers.items():
        for s, v in enumerate(t.slots):
            if v is not None:
                out.setdefault((w, s), {})["task_slot_table"] = v[1]
    for key, v in d.slot_manager.slots.items():
        if v is not None:
            out.setdefault(key, {})["slot_manager"] = v[1]
    for r in d.jobs:
        for _alloc, key in r.pool.items():
            views = out.setdefault(key, {})
            name = f"slot_pool of job {r.index}"
            views[name] = r.index
    return out


@invariant(
    "slot_isolation",
    kind="always",
    concept="TaskSlotTable (TaskSlot.add: a slot holds tasks of the job it is allocated to; freeSlot with tasks "
            "left marks the slot RELEASING)",
    statement="In a deployment mode every task in a TaskExecutor's slot belongs to the job the slot is allocated "
              "to: no task of job A runs in a slot allocated to job B, a free slot holds no task, and no slot holds "
              "tasks of two jobs.",
)
def slot_isolation(run) -> Violation | None:
    d = _deployment(run)
    if d is None:
        return None
    for w in sorted(d.workers):
        t = d.workers[w]
        for s, ts in sorted(t.tasks.items()):
            jobs = sorted({e[0] for e in ts})
            owner = None if t.slots[s] is None else t.slots[s][1]
            if len(jobs) > 1 or jobs[0] != owner:
                held = "free" if owner is None else f"allocated to job {owner}"
                return Violation(invariant="slot_isolation", expected={"slot owner": owner, "tasks of": [owner]},
                                 actual={"worker": int(w), "slot": s, "tasks of jobs": jobs},
                                 message=f"worker {w} slot {s} is {held} but holds tasks of job(s) {jobs}")
    return None


@invariant(
    "slot_allocated_to_one_job",
    kind="always",
    concept="slot allocation across jobs (the SlotManager's table, the TaskExecutor's TaskSlotTable and each "
            "JobMaster's slot pool)",
    statement="In a deployment mode a slot is allocated to at most one job at a time in every view: the "
              "TaskSlotTable, the SlotManager and the jobs' slot pools name the same job for it, and no two slot "
              "pools hold it.",
)
def slot_allocated_to_one_job(run) -> Violation | None:
    d = _deployment(run)
    if d is None:
        return None
    for key, views in sorted(_views(d).items()):
        jobs = sorted(set(views.values()))
        pools = [v for v in views if v.startswith("slot_pool")]
        if len(jobs) > 1 or len(pools) > 1:
            return Violation(invariant="slot_allocated_to_one_job", expected="one job in every view",
                             actual={"worker": int(key[0]), "slot": key[1], "views": views},
                             message=f"worker {key[0]} slot {key[1]} is allocated to jobs {jobs} ({views})")
    return None


@invariant(
    "running_job_tasks_run",
    kind="always",
    concept="isolation of a session cluster's jobs (a JobMaster cancels, fails and frees only its own job's "
            "executions and slots: TaskExecutor.cancelTask, freeSlot, disconnectJobManager by JobID)",
    statement="In a deployment mode every task a RUNNING job's JobMaster deployed runs in the slot it was deployed "
              "to: what happens to another job (a failure, a cancellation, a lost JobMaster) never cancels it.",
)
def running_job_tasks_run(run) -> Violation | None:
    d = _deployment(run)
    if d is None:
        return None
    for r in d.jobs:
        if r.status != "RUNNING":
            continue
        for task, state in enumerate(r.tasks):
            if state != "DEPLOYED":
                continue
            w, s = r.pool[r.task_slot[task]]
            t = d.workers.get(w)
            entries = [] if t is None else [e for e in t.tasks.get(s, ()) if e[:3] == (r.index, task, r.attempt)]
            if [e[3] for e in entries] != ["RUNNING"]:
                return Violation(invariant="running_job_tasks_run", expected="RUNNING",
                                 actual={"job": r.index, "task": task, "worker": int(w), "slot": s,
                                         "at the TaskExecutor": [e[3] for e in entries]},
                                 message=f"job {r.index} runs, but its task {task} in worker {w} slot {s} is "
                                         f"{entries[0][3] if entries else 'gone'}")
    return None


def _terminated_holdings(d) -> list:
    """What globally terminal jobs still hold: slots in any view, and tasks in slots."""
    done = {r.index for r in d.jobs if r.globally_terminal}
    out = []
    for key, views in sorted(_views(d).items()):
        for view, job in sorted(views.items()):
            if job in done:
                out.append(f"worker {key[0]} slot {key[1]} ({view}) held for job {job}")
    for w in sorted(d.workers):
        for s, ts in sorted(d.workers[w].tasks.items()):
            for e in ts:
                if e[0] in done:
                    out.append(f"worker {w} slot {s} runs task {e[1]} of job {e[0]}")
    return out


@invariant(
    "terminated_job_slots_returned",
    kind="eventually",
    concept="a globally terminal job's JobMaster releases its slots (SlotPool close, freeSlot) and the "
            "TaskExecutor frees them once its tasks ended",
    statement="In a deployment mode, once the run is drained no slot is allocated to a globally terminal job in "
              "any view and none of its tasks is left in a slot.",
)
def terminated_job_slots_returned(run) -> Violation | None:
    d = _deployment(run)
    if d is None or not run.cluster.is_drained():
        return None
    held = _terminated_holdings(d)
    if held:
        return Violation(invariant="terminated_job_slots_returned", expected=[], actual=held,
                         message=f"a globally terminal job still holds resources: {held[0]}")
    return None


@invariant(
    "active_rm_pending_workers_within_requirements",
    kind="always",
    concept="ActiveResourceManager.checkResourceDeclarations (pendingWorkerCounter, totalWorkerCounter)",
    statement="In application mode the ActiveResourceManager never has more pending workers than the "
              "SlotManager's unfulfilled requirements need beyond the free slots of the registered workers (in "
              "workers of taskmanager.numberOfTaskSlots slots); registered workers beyond the need are only idle "
              "ones within resourcemanager.taskmanager-timeout (active_rm_timeouts_honoured).",
)
def active_rm_pending_workers_within_requirements(run) -> Violation | None:
    d = _deployment(run)
    if d is None or d.active is None:
        return None
    need = needed_pending_workers(d)
    if len(d.active.pending) > need:
        pending = sorted(int(w) for w in d.active.pending)
        return Violation(invariant="active_rm_pending_workers_within_requirements", expected=f"<= {need} pending",
                         actual={"pending_workers": pending, "needed": need},
                         message=f"{len(pending)} worker(s) pending ({', '.join(f'worker {w}' for w in pending)}), "
                                 f"the requirements need {need}")
    return None


@invariant(
    "active_rm_timeouts_honoured",
    kind="always",
    concept="ActiveResourceManager worker registration timeout (scheduleWorkerRegistrationTimeoutCheck, "
            "resourcemanager.taskmanager-registration.timeout) and idle workers "
            "(resourcemanager.taskmanager-timeout)",
    statement="In application mode a pending worker is resolved -- registered, or stopped once "
              "resourcemanager.taskmanager-registration.timeout passed without its registration -- and a registered "
              "worker without allocated slots is released once it was idle for resourcemanager.taskmanager-timeout: "
              "no pending or idle worker outlives its timeout.",
)
def active_rm_timeouts_honoured(run) -> Violation | None:
    d = _deployment(run)
    if d is None or d.active is None:
        return None
    for w, n in sorted(d.active.pending.items()):
        if n > d.setup.registration_timeout:
            return Violation(invariant="active_rm_timeouts_honoured",
                             expected=f"<= {d.setup.registration_timeout} interval(s) pending",
                             actual={"worker": int(w), "pending for": n},
                             message=f"worker {w} is still pending after {n} heartbeat interval(s) (registration "
                                     f"timeout {d.setup.registration_timeout})")
    for w, n in sorted(d.active.idle.items()):
        if n > d.setup.idle_timeout and w in d.workers:
            return Violation(invariant="active_rm_timeouts_honoured",
                             expected=f"<= {d.setup.idle_timeout} interval(s) idle",
                             actual={"worker": int(w), "idle for": n},
                             message=f"worker {w} is still registered after {n} idle heartbeat interval(s) "
                                     f"(taskmanager-timeout {d.setup.idle_timeout})")
    return None


@invariant(
    "ha_data_cleaned_only_when_globally_terminal",
    kind="always",
    concept="the Dispatcher's per-job HA cleanup and ApplicationDispatcherBootstrap's cluster shutdown "
            "(cleanupHaData only for a globally terminal job)",
    statement="In a deployment mode a job's HA data (its JobGraph in the JobGraphStore) is removed only once the "
              "job is globally terminal (FINISHED, FAILED or CANCELED), and the cluster's HA data is cleaned only "
              "when every job is.",
)
def ha_data_cleaned_only_when_globally_terminal(run) -> Violation | None:
    d = _deployment(run)
    if d is None:
        return None
    disp = d.dispatcher
    for r in d.jobs:
        if r.index not in disp.job_graphs and not r.globally_terminal:
            return Violation(invariant="ha_data_cleaned_only_when_globally_terminal",
                             expected=f"job {r.index}'s JobGraph in the JobGraphStore while it is {r.status}",
                             actual={"job": r.index, "status": r.status, "ha_cleaned": disp.ha_cleaned},
                             message=f"job {r.index} is {r.status} (not globally terminal) but its HA data is gone")
    return None


@invariant(
    "application_shutdown_only_when_globally_terminal",
    kind="always",
    concept="ApplicationDispatcherBootstrap (the application cluster shuts down on the job's globally terminal "
            "result)",
    statement="In application mode the cluster shuts down only once its job is globally terminal.",
)
def application_shutdown_only_when_globally_terminal(run) -> Violation | None:
    d = _deployment(run)
    if d is None or not d.dispatcher.shut_down:
        return None
    for r in d.jobs:
        if not r.globally_terminal:
            return Violation(invariant="application_shutdown_only_when_globally_terminal",
                             expected=f"the job in one of {GLOBALLY_TERMINAL}",
                             actual={"job": r.index, "status": r.status},
                             message=f"the application cluster shut down while job {r.index} is {r.status}")
    return None


# -- coverage goals: the deployment family's walks reach its mechanisms ---------------------------

def _mode(mode: str):
    return lambda scenario: scenario.config.deployment_mode == mode


def _events(new_events, kind: str) -> list:
    return [e for e in new_events if e[0] == kind]


@goal("slot_passed_between_jobs", "SlotManager allocation across a session cluster's jobs",
      "A slot that one job of a session cluster held was allocated to another job.",
      applies=_mode("session"), floor=5)
def slot_passed_between_jobs(run, new_events) -> bool:
    new = _events(new_events, "dm_slot_allocated")  # ("dm_slot_allocated", step, job, worker, slot, allocation)
    if not new:
        return False
    held: dict = {}
    for e in run.cluster.events:
        if e[0] == "dm_slot_allocated" and not any(e is n for n in new):
            held.setdefault((e[3], e[4]), set()).add(e[2])
    return any(held.get((e[3], e[4]), set()) - {e[2]} for e in new)


@goal("releasing_slot_freed", "TaskSlotTable (a RELEASING slot freed when its last task ended)",
      "A slot freed while its task was still being cancelled (RELEASING) was freed, and reported to the "
      "SlotManager, once the task ended.", applies=_mode("session"), floor=5)
def releasing_slot_freed(run, new_events) -> bool:
    return bool(_events(new_events, "dm_releasing_slot_freed"))


@goal("pending_worker_timed_out", "ActiveResourceManager worker registration timeout",
      "A requested worker that had not registered within resourcemanager.taskmanager-registration.timeout was "
      "stopped.", applies=_mode("application"), floor=5)
def pending_worker_timed_out(run, new_events) -> bool:
    return bool(_events(new_events, "dm_worker_registration_timeout"))


@goal("idle_worker_released", "ActiveResourceManager idle workers (resourcemanager.taskmanager-timeout)",
      "A registered worker without allocated slots was released after resourcemanager.taskmanager-timeout.",
      applies=_mode("application"), floor=5)
def idle_worker_released(run, new_events) -> bool:
    return bool(_events(new_events, "dm_idle_worker_released"))
