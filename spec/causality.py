"""Causality: every disturbance has a cause, every failover restarts exactly Flink's set, and a
source's output says truthfully whether it is idle and how far its event time has come.

A run can recover from a disturbance nobody caused -- a task failed, a deployment declared
missing, a checkpoint aborted, a TaskExecutor disconnected, a leadership revoked, a slot
released -- and still end with exactly-once output and consistent state. The invariants here
judge the disturbances themselves, from what the model records of each one (``Cluster.events``:
an event's second field is the step that appended it; ``Cluster.trace``: the actions taken):

``disturbance_has_cause`` (always): every disturbance the last step recorded is traced to an
injected fault of that step (``FailTask``, ``LoseTaskManager``, ``FailJobManager``) or to the
Flink rule that causes it, checked against what the run recorded:

* a failover (or the job failing when its restart strategy forbids one) to a failure of that
  step: a failed task (exactly the failover's failed set, no lost partition), a lost
  TaskManager, or what the JobMaster noticed on the control plane (a heartbeat timeout, a
  deployment reconciled as missing, a slot the TaskExecutor reported failed or offered anew);
* a checkpoint aborted to its reason: ``CHECKPOINT_EXPIRED`` to a ``CheckpointTimeout`` of that
  checkpoint, ``CHECKPOINT_SUBSUMED`` to a newer checkpoint completed in the step,
  ``JOB_FAILOVER_REGION`` to a failover, restore or JobManager change of the step,
  ``FINALIZE_CHECKPOINT_FAILURE`` to a finalization that failed (shared state unknown to the
  SharedStateRegistry, a completed-checkpoint pointer the HA store rejected), a coordinator
  stop to a stop-with-savepoint or restart; a task's decline to the declining subtask and a
  reason a task gives. An abort without a reason, or with another, has no cause;
* a deployment reconciled as missing (``DefaultExecutionDeploymentReconciler``) to the
  TaskExecutor's reports since its submission: a report showed that execution (that attempt)
  before (it was lost there), or ``heartbeat_timeout`` + 1 reports in a row did not (a pending
  deployment is tolerated that long);
* a TaskExecutor disconnected by heartbeat timeout to more than ``heartbeat_timeout``
  heartbeat intervals since the JobMaster began monitoring it (``registerTaskManager``, on its
  first offer) or a report of it last reached that JobMaster;
* an idle slot released to ``slot_idle_timeout`` heartbeat intervals since it became free;
* a leadership revoked to the process's ZooKeeper session being gone.

``restart_set_exact`` (always): the subtasks a failover restarts are exactly the set the
configured FailoverStrategy of Flink computes for its failed subtasks and lost partitions
(``RestartPipelinedRegionFailoverStrategy`` / ``RestartAllFailoverStrategy``, as the safe
definitions of ``model/failover.py`` compute it) -- not merely a sufficient one
(``restart_set_sufficient`` checks that).

``source_output_active_and_on_time`` (always): on every output channel of a source subtask,
no record follows a ``WatermarkStatus.IDLE`` the source sent until it sent ``ACTIVE`` again
(a source marks its output active before it emits after being idle: FLINK-5017's contract,
which ``SourceFunction.SourceContext`` and ``WatermarkAssignerOperator.processElement``
implement), and no record follows a watermark at or above its timestamp unless its input put it
that late (a record before it in its split is more than ``watermark_out_of_orderness`` later:
``BoundedOutOfOrdernessWatermarks`` then passed it before it was read, as in Flink, which emits
such a record and leaves it to the operators to drop or count as late). What the source sent is
read off the channel: the
consumer's StatusWatermarkValve holds the status and watermark of what it consumed, the
queue what is still in flight.
"""

from __future__ import annotations

from model import actions as A
from model.events import Watermark, WatermarkStatus
from model.failover import RestartAllFailoverStrategy, RestartPipelinedRegionFailoverStrategy
from spec.invariant import Violation, invariant

#: the events a disturbance is recorded as (``Cluster.events``), each with a rule below
DISTURBANCES = frozenset({"task_failed", "task_manager_lost", "job_manager_failover", "failover", "job_failed",
                          "aborted", "cp_missing_deployment", "cp_tm_timeout", "cp_idle_slot_released",
                          "cp_revoked"})
#: what the JobMaster notices on the control plane, each a cause of a failover of the same step
CONTROL_PLANE_FAILURES = frozenset({"cp_tm_timeout", "cp_missing_deployment", "cp_slot_failed", "cp_slot_replaced"})
#: the events of a step in which the running job's pending checkpoints legitimately die
#: (``CheckpointCoordinator.abortPendingCheckpoints`` on a failover, a restore, a JobManager
#: change)
JOB_CHANGES = frozenset({"failover", "restored", "job_manager_failover", "cp_jobmaster_lost", "cp_job_recovered",
                         "rescaled", "rescaled_from_checkpoint"})
#: the reasons a task declines a checkpoint with (``CheckpointBarrierHandler``,
#: ``SubtaskCheckpointCoordinatorImpl``)
TASK_DECLINE_REASONS = frozenset({"CHECKPOINT_DECLINED", "CHECKPOINT_DECLINED_TASK_NOT_READY",
                                  "CHECKPOINT_DECLINED_TASK_CLOSING", "CHECKPOINT_DECLINED_SUBSUMED",
                                  "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER",
                                  "CHECKPOINT_DECLINED_INPUT_END_OF_STREAM"})
#: the actions that stop or resubmit the job: the coordinator stops with them (the kinds that
#: say so, ``ActionKind.stops_job``)
JOB_STOPS = A.JOB_STOPS


def _step_events(cluster) -> list:
    """The events the last step appended, in order."""
    events = cluster.events
    step = cluster.now - 1
    i = len(events)
    while i and events[i - 1][1] == step:
        i -= 1
    return events[i:]


def _ticks_after(cluster, step: int) -> int:
    """Heartbeat intervals (``Tick`` actions) taken after step ``step``, up to the last step."""
    return sum(1 for a in cluster.trace[step + 1:] if type(a) is A.Tick)


# -- the causes, one rule per disturbance: None when the event has its cause ------------------------

def _task_failed(c, action, e, evs):
    if type(action) is A.FailTask and action.subtask == e[2]:
        return None
    return "no FailTask of that subtask was injected in this step"


def _task_manager_lost(c, action, e, evs):
    if type(action) is A.LoseTaskManager and c.task_managers[action.task_manager].id == e[2]:
        return None
    return "no LoseTaskManager of that TaskManager was injected in this step"


def _job_manager_failover(c, action, e, evs):
    if type(action) is A.FailJobManager or any(x[0] == "cp_job_recovered" for x in evs):
        return None
    return "no JobManager failure was injected and no new leader recovered the job in this step"


def _failure_cause(c, action, failed, unavailable, evs):
    if type(action) is A.FailTask:
        if set(failed) == {action.subtask} and not unavailable:
            return None
        return (f"the injected FailTask fails {c.eg.subtasks[action.subtask].name} only, but the failover's failed "
                f"subtasks are {sorted(failed)} with lost partitions {sorted(unavailable)}")
    if any(x[0] == "task_manager_lost" or x[0] in CONTROL_PLANE_FAILURES for x in evs):
        return None
    if not failed and not unavailable and any(x[0] == "checkpoint_failures_exceeded" for x in evs):
        return None  # the CheckpointFailureManager's global failover (more failed checkpoints than tolerable)
    return "no task failed, no TaskManager was lost and the JobMaster noticed no failure in this step"


def _failover(c, action, e, evs):
    return _failure_cause(c, action, e[2], e[3], evs)


def _job_failed(c, action, e, evs):
    return _failure_cause(c, action, (), (), evs) if type(action) is not A.FailTask else None


def _aborted(c, action, e, evs):
    cid, reason, subtask = e[2], e[3], e[4]
    if reason is None:
        return "the abort gives no reason"
    if subtask is not None and subtask >= 0:
        if reason in TASK_DECLINE_REASONS or (reason == "FINALIZE_CHECKPOINT_FAILURE"
                                               and any(x[0] == "finalize_failed" for x in evs)):
            return None
        if reason == "CHECKPOINT_ASYNC_EXCEPTION" and any(x[0] == "snapshot_failed" and x[2:4] == (subtask, cid)
                                                         for x in evs):
            return None  # the injected failure of that task's asynchronous snapshot phase
        return f"subtask {subtask} declined with {reason}, which is no reason a task declines with"
    if reason == "CHECKPOINT_EXPIRED":
        if type(action) is A.CheckpointTimeout and action.checkpoint_id == cid:
            return None
        return "no CheckpointTimeout of that checkpoint was taken in this step"
    if reason == "CHECKPOINT_SUBSUMED":
        if any(x[0] == "completed" and x[2] > cid for x in evs):
            return None
        return "no newer checkpoint completed in this step"
    if reason == "JOB_FAILOVER_REGION":
        if any(x[0] in JOB_CHANGES for x in evs):
            return None
        return "no failover, restore or JobManager change happened in this step"
    if reason == "FINALIZE_CHECKPOINT_FAILURE":
        if any(x[0] in ("finalize_failed", "cp_finalize_failed") or (x[0] == "cp_effect" and x[2] == "store"
                                                                    and not x[6]) for x in evs):
            return None
        return "no finalization failed and the HA store rejected no write in this step"
    if reason in ("CHECKPOINT_COORDINATOR_SUSPEND", "CHECKPOINT_COORDINATOR_SHUTDOWN"):
        if isinstance(action, JOB_STOPS):
            return None
        return "the job was not stopped or resubmitted in this step"
    return f"{reason} is no reason the CheckpointCoordinator aborts a pending checkpoint with"


def _missing_deployment(c, action, e, evs):
    """``cp_missing_deployment(te, subtasks)``: per subtask, the reports of ``te`` since its
    last submission, and whether one showed the execution submitted (that attempt: a report of
    an older attempt still running there shows another execution)."""
    te, missing = e[2], e[3]
    timeout = c.config.heartbeat_timeout
    events = c.events
    end = len(events) - 1
    while events[end] is not e:  # the failover this event caused may redeploy in the same step
        end -= 1
    for s in missing:
        i = end
        while i >= 0 and not (events[i][0] == "cp_submit" and events[i][2] == s):
            i -= 1
        execution = (s, events[i][4]) if i >= 0 else None
        without = 0
        shown = False
        for x in events[i + 1:end]:
            if x[0] == "cp_deployment_report" and x[2] == te:
                if execution in x[4] if execution is not None else any(ex[0] == s for ex in x[4]):
                    shown = True
                else:
                    without += 1
        if not shown and without <= timeout:
            return (f"{c.eg.subtasks[s].name} was declared missing after {without} deployment report(s) of "
                    f"TaskExecutor {te} without it; a pending deployment is tolerated until {timeout + 1} reports "
                    f"in a row (heartbeat_timeout {timeout}) did not show it, and no report showed it before")
    return None


def _tm_timeout(c, action, e, evs):
    te, j = e[2], e[3]
    p = c.cp.jms[j]
    token = p.jobmaster.token if p.jobmaster is not None else p.token
    timeout = c.config.heartbeat_timeout
    since = None
    for x in reversed(c.events):
        if (x[0] in ("cp_deployment_report", "cp_te_connected") and x[2] == te and x[3] == token) or (
                x[0] == "cp_job_recovered" and x[2] == token):
            since = x[1]
            break
    if since is None:
        return None  # nothing recorded to measure from: no judgement (lenient)
    ticks = _ticks_after(c, since)
    if ticks > timeout:
        return None
    return (f"TaskExecutor {te} was disconnected after {ticks} heartbeat interval(s) since its last report reached "
            f"the JobMaster; the heartbeat timeout is {timeout} intervals")


def _idle_slot_released(c, action, e, evs):
    alloc, process = e[4], e[5]
    timeout = c.config.slot_idle_timeout
    for x in reversed(c.events):
        if x[0] == "cp_slot_freed" and x[2] == alloc and x[3] == process:
            ticks = _ticks_after(c, x[1])
            if ticks >= timeout:
                return None
            return (f"allocation {alloc} was released {ticks} heartbeat interval(s) after it became free; "
                    f"slot.idle.timeout is {timeout} intervals")
    return "the released allocation never became free"


def _revoked(c, action, e, evs):
    p = c.cp.jms[e[2]]
    if p.session not in c.cp.store.sessions:
        return None
    if p.session in c.cp.store.suspended and not c.config.zookeeper_tolerate_suspended_connections:
        return None  # Curator's StandardConnectionStateErrorPolicy: SUSPENDED revokes leadership
    return f"JobManager {e[2]}'s ZooKeeper session {p.session} is still alive and connected"


RULES = {"task_failed": _task_failed, "task_manager_lost": _task_manager_lost,
         "job_manager_failover": _job_manager_failover, "failover": _failover, "job_failed": _job_failed,
         "aborted": _aborted, "cp_missing_deployment": _missing_deployment, "cp_tm_timeout": _tm_timeout,
         "cp_idle_slot_released": _idle_slot_released, "cp_revoked": _revoked}
assert set(RULES) == DISTURBANCES


def _jobmasters(c):
    """(process index, JobMaster) of every JobManager process that holds one."""
    return [(j, p.jobmaster) for j, p in enumerate(c.cp.jms) if p.jobmaster is not None]


def free_slot_ages(c) -> list:
    """``(process index, JobMaster, allocation, intervals)`` of every free allocation of a
    JobMaster's pool, in order of process and allocation: the heartbeat intervals (``Tick``
    steps) since it last became free (``cp_slot_freed``), None if no event says it did."""
    jms = _jobmasters(c)
    idle = set()
    for _, jm in jms:
        idle.update(jm.idle)
    if not idle:
        return []
    last: dict = {}
    for x in c.events:
        if x[0] == "cp_slot_freed" and x[2] in idle:
            last[x[3], x[2]] = x[1]  # (process, allocation): two JobMasters may share an id
    out = []
    for j, jm in jms:
        for alloc in sorted(jm.idle):
            at = last.get((j, alloc))
            out.append((j, jm, alloc, None if at is None else _ticks_after(c, at)))
    return out


def free_slot_summary(run) -> tuple:
    """What of the history the idle-slot rules can still read: per free allocation (named by
    its process and its rank among the free ones of that pool, not by its ``AllocationID``:
    the state's fingerprint counts fresh identifiers by rank, ``model.fingerprint.fresh_id``)
    the intervals since it became free, capped at ``slot_idle_timeout``."""
    c = run.cluster
    if c.cp is None:
        return ()
    timeout = c.config.slot_idle_timeout
    ranks: dict = {}
    out = []
    for j, _jm, _alloc, age in free_slot_ages(c):
        rank = ranks[j] = ranks.get(j, -1) + 1
        out.append((j, rank, None if age is None else min(age, timeout)))
    return tuple(out)


def heard_intervals(c) -> list:
    """``(process index, JobMaster, TaskExecutor, intervals)`` of every TaskExecutor connected
    to a JobMaster: the heartbeat intervals (``Tick`` steps) since that JobMaster began
    monitoring it (``cp_te_connected``) or a report of it last reached that JobMaster, or since
    the JobMaster recovered the job; None if no event says when."""
    jms = [(j, jm) for j, jm in _jobmasters(c) if jm.connected]
    if not jms:
        return []
    tokens = {jm.token for _, jm in jms}
    last: dict = {}  # (te, token) -> the step of its last report or connection
    recovered: dict = {}  # token -> the step its JobMaster recovered the job at
    for x in c.events:
        k = x[0]
        if k == "cp_deployment_report" or k == "cp_te_connected":
            if x[3] in tokens:
                last[(x[2], x[3])] = x[1]
        elif k == "cp_job_recovered" and x[2] in tokens:
            recovered[x[2]] = x[1]
    ticks = [0]
    for a in c.trace:
        ticks.append(ticks[-1] + (type(a) is A.Tick))
    out = []
    for j, jm in jms:
        for te in sorted(jm.connected):
            at = max(last.get((te, jm.token), -1), recovered.get(jm.token, -1))
            out.append((j, jm, te, None if at < 0 else ticks[-1] - ticks[min(at + 1, len(ticks) - 1)]))
    return out


def heard_summary(run) -> tuple:
    """What of the history the heartbeat-timeout rules can still read: per (JobManager process,
    connected TaskExecutor) the intervals since its JobMaster last heard of it, only while they
    are at most ``heartbeat_timeout`` (beyond, a timeout has its cause and is due: left out)."""
    c = run.cluster
    if c.cp is None:
        return ()
    hb = c.config.heartbeat_timeout
    return tuple((j, te, n) for j, _jm, te, n in heard_intervals(c) if n is not None and n <= hb)


def causal_history(run) -> tuple:
    """What of the history ``disturbance_has_cause`` can still read (control plane only), in a
    form that does not tell apart two histories every future judgement treats alike:

    * per (JobManager process, connected TaskExecutor): the heartbeat intervals since the
      process's JobMaster began monitoring it or its last report reached that JobMaster, only
      while they are at most ``heartbeat_timeout`` (beyond, a timeout has its cause until the
      next report: left out);
    * per subtask the JobMasters expect somewhere (only those can be declared missing; a new
      expectation comes with a new submission, which starts the count again): per TaskExecutor
      the reports without it since its submission, while at most ``heartbeat_timeout`` and no
      report showed the execution submitted (``"ok"`` after that: the rule no longer counts);
    * per free allocation of a JobMaster's pool (only those can be released as idle): the
      intervals since it became free, capped at ``slot_idle_timeout``. An allocation is named by
      its rank among the free ones of that pool, not by its ``AllocationID``: the state's
      fingerprint counts fresh identifiers by rank (``model.fingerprint.fresh_id``), so runs
      whose states differ only in the values of their ids get one summary.

    Every count is capped where its rule stops telling values apart, and no step number or
    fresh identifier is in it."""
    c = run.cluster
    if c.cp is None:
        return ()
    hb = c.config.heartbeat_timeout
    jms = _jobmasters(c)
    expected = set()
    for _, jm in jms:
        for ex in jm.deployed.values():
            expected.update(e[0] for e in ex)
    submitted: dict = {}
    for x in c.events:
        k = x[0]
        if k == "cp_deployment_report":
            for s, (execution, per_te) in submitted.items():
                n = per_te.get(x[2], 0)
                if n == "ok":
                    continue  # shown once, or past the tolerance: the rule no longer counts
                if execution in x[4] or n >= hb:
                    per_te[x[2]] = "ok"
                else:
                    per_te[x[2]] = n + 1
        elif k == "cp_submit":
            submitted[x[2]] = ((x[2], x[4]), {})
    return (heard_summary(run),
            tuple((s, tuple(sorted(submitted[s][1].items()))) for s in sorted(expected) if s in submitted),
            free_slot_summary(run))


@invariant(
    "disturbance_has_cause",
    kind="always",
    scope="trace",
    concept="failover, checkpoint abort, deployment reconciliation, heartbeat and idle-slot timeouts, leader "
            "election: each only for its cause",
    statement="Every disturbance -- a task failure, a failover, a checkpoint abort, a deployment declared missing, "
    "a TaskExecutor disconnected, an idle slot released, a leadership revoked -- is traced to an injected fault of "
    "its step or to the Flink rule that causes it (a timeout that really elapsed, a newer checkpoint completed, a "
    "stop-with-savepoint); a checkpoint abort gives the reason of its cause.",
    history=causal_history,
)
def disturbance_has_cause(run) -> Violation | None:
    c = run.cluster
    if not c.now:
        return None
    evs = _step_events(c)
    if not evs:
        return None
    action = c.trace[-1]
    for e in evs:
        rule = RULES.get(e[0])
        if rule is None:
            continue
        why = rule(c, action, e, evs)
        if why is not None:
            return Violation(
                invariant="disturbance_has_cause",
                expected={"event": e[0], "cause": "an injected fault or the Flink rule that causes it"},
                actual={"event": [e[0], *e[2:]], "action": repr(action)},
                message=f"{e[0]} {list(e[2:])!r} at step {e[1]} (action {action!r}) has no cause: {why}",
            )
    return None


# -- the restart set -----------------------------------------------------------------------------------

_FLINK_STRATEGIES: dict = {}


def flink_restart_set(eg, strategy: str, failed, unavailable) -> frozenset:
    """The subtasks Flink's FailoverStrategy ``strategy`` restarts for ``failed`` subtasks and
    lost partitions ``unavailable`` (the safe definitions: no seam, no unsafe knob)."""
    key = (id(eg), strategy)
    got = _FLINK_STRATEGIES.get(key)
    if got is None or got[0] is not eg:
        if len(_FLINK_STRATEGIES) > 64:
            _FLINK_STRATEGIES.clear()
        s = RestartAllFailoverStrategy(eg) if strategy == "full" else RestartPipelinedRegionFailoverStrategy(eg)
        got = _FLINK_STRATEGIES[key] = (eg, s)
    return frozenset(got[1].tasks_to_restart(failed, unavailable))


@invariant(
    "restart_set_exact",
    kind="always",
    concept="RestartPipelinedRegionFailoverStrategy / RestartAllFailoverStrategy (getTasksNeedingRestart)",
    statement="A failover restarts exactly the subtasks Flink's configured FailoverStrategy computes for its failed "
    "subtasks and lost partitions: the failed regions, the producers of lost partitions they consume, and every "
    "consumer region of a restarted one (or everything, with restart-all) -- no fewer and no more.",
)
def restart_set_exact(run) -> Violation | None:
    c = run.cluster
    lf = c.delta.failover
    if lf is None:
        return None
    failed, unavailable, restart = lf
    if not failed and not unavailable and any(e[0] == "checkpoint_failures_exceeded" for e in _step_events(c)):
        want = frozenset(range(len(c.tasks)))  # a global failover (SchedulerBase.handleGlobalFailure)
    else:
        want = flink_restart_set(c.eg, c.config.failover_strategy, failed, unavailable)
    if restart == want:
        return None
    names = c.eg.subtasks
    extra, missing = sorted(restart - want), sorted(want - restart)
    return Violation(
        invariant="restart_set_exact",
        expected={"restart": sorted(want)}, actual={"restart": sorted(restart)},
        message=(f"the failover of {[names[s].name for s in sorted(failed)]} (lost partitions {sorted(unavailable)}) "
                 f"restarts {[names[s].name for s in extra]} as well" if extra else
                 f"the failover of {[names[s].name for s in sorted(failed)]} does not restart "
                 f"{[names[s].name for s in missing]}") +
                f" ({c.config.failover_strategy} failover: Flink restarts {[names[s].name for s in sorted(want)]})",
    )


# -- sources: idle means idle, and no record late at the source ------------------------------------------

_SOURCE_ACTIONS = (A.SourceEmit, A.SourceWatermark, A.SourceEnd)

_LATE_IN_INPUT: dict = {}


def late_in_input(job_input, source: str, out_of_orderness: int) -> frozenset:
    """The records of ``source`` that its input puts late: in its split, a record before it has a
    timestamp more than ``out_of_orderness`` above its own (``ts <= max before - ooo - 1``). Only
    such a record can be at or behind a watermark its source sent: the source's watermark is the
    minimum over its unfinished splits of ``BoundedOutOfOrdernessWatermarks``' ``max timestamp -
    ooo - 1`` (``WatermarkOutputMultiplexer``), the record's split was unfinished when the
    watermark was sent (the record was still to be read), and a generator restarted after a
    restore has seen no more of its split than the records before this one."""
    key = (id(job_input), source, out_of_orderness)
    got = _LATE_IN_INPUT.get(key)
    if got is None or got[0] is not job_input:
        if len(_LATE_IN_INPUT) > 64:
            _LATE_IN_INPUT.clear()
        late = set()
        for split in job_input.splits.get(source, ()):
            top = None
            for rec in split:
                if top is not None and rec[2] <= top - out_of_orderness - 1:
                    late.add(rec)
                top = rec[2] if top is None else max(top, rec[2])
        got = _LATE_IN_INPUT[key] = (job_input, frozenset(late))
    return got[1]


def source_output_problem(cluster, task) -> str | None:
    """Why the output channels of source ``task`` break ``source_output_active_and_on_time``
    (None: they do not): walk each pipelined channel from the status and watermark its consumer
    holds for it (what it consumed) through what is still in flight. A record at or behind a
    watermark before it is the source's fault unless its input put it that late
    (``late_in_input``)."""
    net = cluster.net
    reader = task.source
    excused = late_in_input(cluster.job_input, reader.name, reader.out_of_orderness) if reader is not None \
        else frozenset()
    for c in task.plan.output_channels:
        q = net.queues[c]
        if not q:
            continue
        if net.blocking[c]:
            # a blocking partition restored from a checkpoint holds what an earlier attempt
            # wrote (a deliberate difference from Flink, where blocking partitions are not
            # checkpointed): where this attempt's output starts is not recorded
            continue
        consumer = cluster.tasks[net.consumer_of[c]]
        valve = consumer.valve
        local = consumer.plan.local_of.get(c)
        if valve is None or local is None:
            continue
        idle, wm = valve.channel_is_idle(local), valve.channel_watermark(local)
        for x in q:
            t = type(x)
            if t is tuple:
                if idle:
                    return (f"{task.subtask.name} put record {x!r} on channel {c} to {consumer.subtask.name} after "
                            f"telling it IDLE and before telling it ACTIVE again")
                if wm is not None and x[2] <= wm and x not in excused:
                    return (f"{task.subtask.name} put record {x!r} on channel {c} to {consumer.subtask.name} after "
                            f"watermark {wm}: the record is late at the source, and its input did not put it more "
                            f"than {reader.out_of_orderness} (watermark_out_of_orderness) behind a record before it "
                            f"in its split")
            elif t is WatermarkStatus:
                idle = x.idle
            elif t is Watermark:
                wm = x.timestamp if wm is None else max(wm, x.timestamp)
    return None


@invariant(
    "source_output_active_and_on_time",
    kind="always",
    concept="WatermarkStatus (IDLE/ACTIVE) at the source (SourceOperator, WatermarkToDataOutput, FLINK-5017)",
    statement="An idle source subtask emits nothing until it is active again: on each of its output channels no "
    "record follows an IDLE status it sent before it sends ACTIVE; and a record a source emits is late at the source "
    "(follows a watermark at or above its timestamp) only when its input put it late: a record before it in its split "
    "has a timestamp more than the source's watermark_out_of_orderness above its own.",
)
def source_output_active_and_on_time(run) -> Violation | None:
    c = run.cluster
    if not c.now:
        return None
    a = c.trace[-1]
    if type(a) not in _SOURCE_ACTIONS:
        return None
    task = c.tasks[a.subtask]
    why = source_output_problem(c, task)
    if why is None:
        return None
    return Violation(invariant="source_output_active_and_on_time",
                     expected={"source": task.subtask.name, "output": "no record while IDLE, none at or below a "
                               "watermark it sent"},
                     actual={"source": task.subtask.name, "action": repr(a)}, message=why)
