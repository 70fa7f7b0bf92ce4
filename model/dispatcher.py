"""The Dispatcher of a session or application cluster: jobs submitted over time, one
JobManagerRunner (with its JobMaster) per job, job results and the HA data of each job.

Invariant upheld: each job has its own JobMaster, slot pool and requirement, so what happens
to one job (a task failure, a cancellation, the loss of its JobMaster's leadership, its end)
changes no other job's tasks or slots; a job's HA data (its JobGraph in the JobGraphStore)
is removed only once the job reached a globally terminal state (FINISHED, FAILED, CANCELED),
and an application cluster shuts down -- cleaning all HA data -- only then.

Follows Flink's ``Dispatcher`` (``submitJob`` persists the JobGraph in the ``JobGraphStore``
and starts a ``JobManagerRunner``: a ``JobMasterServiceLeadershipRunner`` whose JobMaster
runs while it holds the job's leadership), the per-job cleanup of HA data once a job is
globally terminal (``Dispatcher`` with its ``DispatcherResourceCleanerFactory``: FLINK-20695)
and, in application mode, ``ApplicationDispatcherBootstrap``, which submits the application's
job when the cluster starts and shuts the cluster down
(``ClusterEntrypoint.shutDownAsync`` with ``cleanupHaData``) once the job's result is
globally terminal (FLINK-19154: not on a failure of the framework).

A job here is the scenario's job graph in the shape a slot sees it: one *task* per
execution slot sharing group (``model.slotsharing``), each needing one slot of a
TaskExecutor. Its JobMaster (``JobManagerRunner``) declares as many slots as it has tasks,
deploys a task into each slot its pool holds, and ends the job when its tasks end:

* a task finishes (``JobTaskFinished``); when every task finished the job is FINISHED;
* a task fails (``JobTaskFailed``): the job runs with ``restart-strategy: none`` and fails
  (FAILING: its other tasks are cancelled; FAILED once none runs any more);
* the user cancels the job (``CancelJob``): CANCELLING until every task ended, then CANCELED;
* the runner loses the job's leadership (``RevokeJobLeadership``): the JobMaster stops and
  releases its slots at once, whatever still runs in them (the TaskExecutor fails the tasks
  and frees each slot once its tasks ended: ``TaskSlotTable``'s RELEASING state); the job is
  SUSPENDED, not globally terminal, and a new JobMaster recovers it from the JobGraphStore
  when the leadership is granted again (``GrantJobLeadership``).

A globally terminal job's JobMaster releases its slots and withdraws its requirement.

Where the model deliberately differs: the job's tasks are abstract (no records, checkpoints
or the data plane's failover: those are the other modes' scenarios); a failed task fails its
job (no restart strategy); the leader election of each JobManagerRunner is one fault and one
grant (no latch, sessions or fencing: ``model.controlplane`` models those for one job); the
JobResultStore is a map of results (no dirty/clean entries).
"""

from __future__ import annotations

from model import seams

#: the globally terminal job states (``JobStatus.isGloballyTerminalState``)
GLOBALLY_TERMINAL = ("FINISHED", "FAILED", "CANCELED")


class JobManagerRunner:
    """Job ``index``'s runner and JobMaster: ``status`` (RUNNING, FAILING, CANCELLING,
    SUSPENDED, or a globally terminal state), ``attempt`` (the JobMaster's generation: a
    recovered job's tasks are new execution attempts), per task ``tasks[i]`` CREATED (waiting
    for a slot), DEPLOYED or FINISHED, the slot pool ``pool`` (allocation -> (worker, slot))
    and which allocation each deployed task runs in (``task_slot``)."""

    __slots__ = ("index", "status", "attempt", "tasks", "pool", "task_slot")

    def __init__(self, index: int, tasks: int):
        self.index = index
        self.status = "RUNNING"
        self.attempt = 0
        self.tasks: list = ["CREATED"] * tasks
        self.pool: dict = {}
        self.task_slot: dict = {}

    @property
    def globally_terminal(self) -> bool:
        return self.status in GLOBALLY_TERMINAL

    @property
    def required(self) -> int:
        """The slots the JobMaster declares: one per task while the job runs."""
        return len(self.tasks) if self.status == "RUNNING" else 0

    def free_allocations(self) -> list:
        """The pool's allocations no task runs in, in order."""
        used = set(self.task_slot.values())
        return sorted(a for a in self.pool if a not in used)


class ApplicationDispatcherBootstrap:
    """Application mode: what the bootstrap does once the application's job has a result."""

    def shuts_down_on(self, status: str) -> bool:
        """Whether the cluster shuts down (and cleans its HA data) when the job reaches
        ``status``: only on a globally terminal one (FLINK-19154)."""
        return status in GLOBALLY_TERMINAL


class Dispatcher:
    """The Dispatcher's state: ``jobs`` (the runners, by job index), ``job_graphs`` (the
    JobGraphStore: jobs whose HA data exists), ``results`` (the JobResultStore: job -> its
    globally terminal state), and, for an application cluster, whether it was shut down
    (``shut_down``) and its HA data cleaned (``ha_cleaned``)."""

    __slots__ = ("jobs", "job_graphs", "results", "shut_down", "ha_cleaned")

    def __init__(self):
        self.jobs: list = []
        self.job_graphs: set = set()
        self.results: dict = {}
        self.shut_down = False
        self.ha_cleaned = False

    @property
    def bootstrap(self) -> ApplicationDispatcherBootstrap:
        """The application's bootstrap (stateless: one for every run)."""
        return _BOOTSTRAP

    def submit_job(self, tasks: int) -> JobManagerRunner:
        """``submitJob``: persist the JobGraph, start the job's runner (its JobMaster leads at once)."""
        r = JobManagerRunner(len(self.jobs), tasks)
        self.jobs.append(r)
        self.job_graphs.add(r.index)
        return r

    def job_reached_globally_terminal_state(self, r: JobManagerRunner) -> None:
        """The job's result is recorded and its HA data cleaned (FLINK-20695)."""
        self.results[r.index] = r.status
        self.job_graphs.discard(r.index)

    def recoverable(self, r: JobManagerRunner) -> bool:
        """A SUSPENDED job can be recovered by a new JobMaster: its JobGraph is in the store."""
        return r.status == "SUSPENDED" and r.index in self.job_graphs and not self.shut_down

    def shut_down_cluster(self) -> None:
        """``ClusterEntrypoint.shutDownAsync(cleanupHaData=true)``: every job's HA data is removed."""
        self.shut_down = True
        self.ha_cleaned = True
        self.job_graphs.clear()


_BOOTSTRAP = ApplicationDispatcherBootstrap()


@seams.override("FLINK-19154", ApplicationDispatcherBootstrap, "shuts_down_on",
                "the application cluster shuts down and cleans its HA data whenever the job's result future "
                "completes, also when the job only lost its JobMaster (SUSPENDED, not globally terminal): the "
                "job can never be recovered")
def _shuts_down_on_any_result(self, status: str) -> bool:
    return status in GLOBALLY_TERMINAL or status == "SUSPENDED"
