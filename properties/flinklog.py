"""What a real Flink run reported, read from its log: the observations of a trace.

``flinkspec trace`` records real Flink 2.3.0 runs with ``tools/flink-trace-log4j2.properties``
(``time level logger [thread] - message``); :func:`observations` turns the log of one run into
the trace's events, in the order Flink logged them. Only what Flink itself reports is used,
and only what the model can judge (``docs/conformance.md``, "Trace validation"):

========================  =================================================================
event                     Flink's log line (logger)
========================  =================================================================
``job_submitted``         a job's first "switched from state CREATED to RUNNING"
                          (``ExecutionGraph``), with the snapshot it was submitted with
                          (``CheckpointCoordinator`` "Restoring job J from Savepoint N" /
                          "from Checkpoint N": ``restored_as``, the type the claim mode gave
                          the snapshot, CLAIM a checkpoint's, NO_CLAIM an unclaimed
                          snapshot's, which Flink names "Savepoint")
``checkpoint_triggered``  "Triggering checkpoint N (type=...)" (``CheckpointCoordinator``)
``checkpoint_completed``  "Completed checkpoint N for job J"
``checkpoint_aborted``    "Checkpoint N of job J expired before completing." (``expired``);
                          "Decline checkpoint N by task T" (``declined``); "Triggering
                          Checkpoint N for job J failed due to ..." (``trigger_failed``)
``task_failed``           "T (i/p) (attempt id) switched from S to FAILED" (``ExecutionGraph``)
``failover``              "K tasks will be restarted to recover the failed task A"
                          (``JobMaster``), the restart set being the subtasks whose next
                          attempt is created after it (``CREATED to SCHEDULED``, attempt > 0);
                          "K tasks will be restarted to recover from a global failure."
                          (``global``: e.g. the CheckpointFailureManager's threshold exceeded)
``restored``              "Restoring job J from Checkpoint N" / "No checkpoint found during
                          restore." after a failover or a new leader's recovery
``task_manager_lost``     the recorder's own marker line (logger ``flinkspec.trace``),
                          logged just before ``MiniCluster.terminateTaskManager``; its
                          tasks: those "Deploying ... to <resource id>" put there and
                          still running (the resource ids in "Starting TaskManager with
                          ResourceID" order)
``job_manager_lost``      the HA harness's marker, logged when it killed the leader
``leader_granted``        "JobMasterServiceLeadershipRunner for job J was granted leadership"
``checkpoint_files``      the recorder's marker: the shared files (RocksDB's incremental
                          SST files) a completed checkpoint's ``_metadata`` references (also
                          when the poller noticed it after the phase ended)
``shared_file_deleted``   the recorder's marker: a shared file gone from checkpoint storage
========================  =================================================================

A task is ``[vertex, subtask]``: the JobVertex's position in the order the ExecutionGraph
schedules its vertices (topological, as ``model.executiongraph`` numbers them) and the subtask
index. A phase's observations end at its first task or job that reaches FINISHED: past it
Flink's periodic trigger races with tasks that finish ("TaskManager received a checkpoint
request for unknown task"), which the model's atomic trigger does not have (a documented
difference). Nothing here reads wall times: the trace keeps only the order.
"""

from __future__ import annotations

import re

from model.errors import FlinkspecError

_LINE = re.compile(r"^(\d\d:\d\d:\d\d,\d{3}) (\w+)\s+(\S+) \[(.*?)\] - (.*)$")
_ATTEMPT = r"([0-9a-f]{32})_([0-9a-f]{32})_(\d+)_(\d+)"
_SWITCH = re.compile(r"^(.*) \((\d+)/(\d+)\) \(" + _ATTEMPT + r"\) switched from (\w+) to (\w+)")
_JOB_SWITCH = re.compile(r"^Job .* \(([0-9a-f]{32})\) switched from state (\w+) to (\w+)\.")
_TRIGGER = re.compile(r"^Triggering checkpoint (\d+) \(type=(\w+)\{name='([^']*)'")
_COMPLETED = re.compile(r"^Completed checkpoint (\d+) for job")
_EXPIRED = re.compile(r"^Checkpoint (\d+) of job [0-9a-f]+ expired before completing")
_DECLINE = re.compile(r"^Decline checkpoint (\d+) by task " + _ATTEMPT)
_TRIGGER_FAILED = re.compile(r"^Triggering Checkpoint (\d+) for job [0-9a-f]+ failed due to (.*)")
_RESTARTED = re.compile(r"^(\d+) tasks will be restarted to recover the failed task " + _ATTEMPT)
_RESTARTED_GLOBAL = re.compile(r"^(\d+) tasks will be restarted to recover from a global failure")
_RESTORE = re.compile(r"^Restoring job [0-9a-f]+ from (Checkpoint|Savepoint) (\d+) @")
_NO_RESTORE = "No checkpoint found during restore."
_MARKER = re.compile(r"^flinkspec: TaskManager (\d+) terminated")
_JM_KILLED = re.compile(r"^flinkspec: JobManager (\d+) killed")
_FILES = re.compile(r"^flinkspec: checkpoint (\d+) references shared files \[([^\]]*)\]")
_FILE_DELETED = re.compile(r"^flinkspec: shared file (\S+) deleted")
_GRANTED = re.compile(r"^JobMasterServiceLeadershipRunner for job ([0-9a-f]{32}) was granted leadership with leader id ([0-9a-f-]+)")
_TM_STARTED = re.compile(r"^Starting TaskManager with ResourceID: (\S+)")
_TMS_STARTING = re.compile(r"^Starting (\d+) TaskManager\(s\)")
_DEPLOYING = re.compile(r"^Deploying .* with attempt id " + _ATTEMPT + r" and vertex id \S+ to (\S+) @")
_FAILURE_REASON = re.compile(r"Failure reason: ([^.\n]*)")
#: a decline's cause when the line names no failure reason: the CheckpointException of its stack
#: trace ("Asynchronous task checkpoint failed.": CHECKPOINT_ASYNC_EXCEPTION's message)
_DECLINE_CAUSE = re.compile(r"CheckpointException: ([^\n]*?)\.?$", re.M)

#: the loggers that the recorders write their own markers with (the MiniCluster driver; the HA
#: cluster harness, tools/flink_ha_cluster.py)
MARKER_LOGGERS = ("flinkspec.trace", "flinkspec.ha.HaCluster")


def log_lines(text: str, source: str = ""):
    """``(level, logger, message, time, source)`` per log entry (continuation lines, e.g. a
    stack trace, are appended to their entry's message)."""
    entry = None
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m:
            if entry is not None:
                yield tuple(entry)
            entry = [m.group(2), m.group(3), m.group(5), m.group(1), source]
        elif entry is not None:
            entry[2] += "\n" + raw
    if entry is not None:
        yield tuple(entry)


def merged_lines(logs: dict[str, str]):
    """The entries of several processes' logs (``name -> text``) in time order (a stable
    merge: entries of one millisecond keep each file's order, files in name order). The
    processes of a recorded run share one machine's clock; a run never spans midnight (the
    recorder's runs last minutes)."""
    entries = []
    for k, name in enumerate(sorted(logs)):
        for i, e in enumerate(log_lines(logs[name], name)):
            entries.append((e[3], k, i, e))
    entries.sort(key=lambda x: (x[0], x[1], x[2]))
    return [e[3] for e in entries]


def _short(logger: str) -> str:
    return logger.rsplit(".", 1)[-1]


class _Phase:
    """The observations of one phase (one Flink job) while it is read."""

    def __init__(self, number: int):
        self.number = number
        self.vertices: list[str] = []          # Flink JobVertex ids in scheduling order
        self.parallelism: dict[str, int] = {}
        self.events: list[dict] = []
        self.ended = False
        self.restart: list | None = None        # the failover whose new attempts are being collected
        self.initial_restore_seen = False
        self.location: dict[tuple, str] = {}    # task -> the TaskManager resource it was deployed to
        self.live: set[tuple] = set()           # tasks deployed and not yet failed or cancelled
        self.restored_savepoint = None

    def task(self, vertex_id: str, subtask: int) -> list:
        """``[vertex position, subtask]`` of a task of this phase."""
        if vertex_id not in self.vertices:
            raise FlinkspecError(f"phase {self.number}: task of an unknown JobVertex {vertex_id} in the log")
        return [self.vertices.index(vertex_id), subtask]


def observations(logs, *, phases: int = 1) -> tuple[list[dict], list[dict]]:
    """The events of one recorded run's log and, per phase, its JobVertices as
    ``{"parallelism": [p, ...]}`` in scheduling order. ``logs``: the text of one log (a
    MiniCluster's JVM), or ``name -> text`` for the processes of a standalone cluster (merged
    in time order, :func:`merged_lines`).

    A phase is one Flink job (a job id): it begins with its first "switched from state CREATED
    to RUNNING"; a later such line of the same job is its recovery by a new JobMaster leader
    (a new ExecutionGraph of the same JobVertices), not a new phase."""
    entries = merged_lines(logs) if isinstance(logs, dict) else list(log_lines(logs))
    events: list[dict] = []
    shapes: list[dict] = []
    phase: _Phase | None = None
    phase_of_job: dict[str, _Phase] = {}
    pending_restore = None
    resources: list[str] = []     # TaskManager resource ids by index (a MiniCluster's start order)
    for level, logger, msg, _time, source in entries:
        name = _short(logger)
        if logger in MARKER_LOGGERS:
            m = _MARKER.match(msg)
            if m and phase is not None and not phase.ended:
                i = int(m.group(1))
                if i >= len(resources):
                    raise FlinkspecError(f"the log says TaskManager {i} terminated, but names {len(resources)} "
                                         "TaskManager(s) started (\"Starting TaskManager with ResourceID\")")
                rid = resources[i]
                tasks = sorted(list(t) for t in phase.live if phase.location.get(t) == rid)
                events.append({"event": "task_manager_lost", "task_manager": i, "tasks": tasks})
                continue
            m = _FILES.match(msg)
            if m and phase is not None:
                # a completed checkpoint's references, noticed by the poller after its phase
                # ended (a cancellation right after the completion): still that phase's
                files = [f for f in m.group(2).split(",") if f]
                events.append({"event": "checkpoint_files", "checkpoint": int(m.group(1)), "shared": files})
                continue
            if phase is None or phase.ended:
                continue
            m = _JM_KILLED.match(msg)
            if m:
                events.append({"event": "job_manager_lost", "job_manager": int(m.group(1))})
                continue
            m = _FILE_DELETED.match(msg)
            if m:
                events.append({"event": "shared_file_deleted", "file": m.group(1)})
            continue
        if name == "MiniCluster":
            if _TMS_STARTING.match(msg):
                resources = []
            continue
        if name == "TaskManagerRunner":
            m = _TM_STARTED.match(msg)
            if m:
                resources.append(m.group(1))
            continue
        if name == "CheckpointCoordinator":
            m = _RESTORE.match(msg)
            if m and (phase is None or phase.ended):
                # a new job's restore of the snapshot it was submitted with: a savepoint, or a
                # retained checkpoint (Flink names it by the properties the claim mode gave it)
                pending_restore = (int(m.group(2)), m.group(1))
                continue
        if name == "ExecutionGraph":
            m = _JOB_SWITCH.match(msg)
            if m:
                job_id, old, new = m.group(1), m.group(2), m.group(3)
                if old == "CREATED" and new == "RUNNING":
                    if job_id not in phase_of_job:
                        if phase is not None:
                            _close(phase, events, shapes)
                        phase = phase_of_job[job_id] = _Phase(len(phase_of_job))
                        phase.restored_savepoint = None if pending_restore is None else pending_restore[0]
                        submitted = {"event": "job_submitted", "phase": phase.number,
                                     "savepoint": phase.restored_savepoint}
                        if pending_restore is not None:
                            submitted["restored_as"] = pending_restore[1]
                        pending_restore = None
                        events.append(submitted)
                    else:  # a new leader's JobMaster recovers the job: a new ExecutionGraph
                        phase = phase_of_job[job_id]
                        phase.live.clear()
                elif phase is not None and new in ("FINISHED", "FAILED", "CANCELED"):
                    phase.ended = True
                continue
            if phase is None or phase.ended:
                continue
            m = _DEPLOYING.match(msg)
            if m:
                phase.location[(m.group(2), int(m.group(3)))] = m.group(5)
                continue
            m = _SWITCH.match(msg)
            if m:
                vertex, subtask, attempt = m.group(5), int(m.group(6)), int(m.group(7))
                old, new = m.group(8), m.group(9)
                key = (vertex, subtask)
                if old == "CREATED":
                    if attempt == 0 and vertex not in phase.vertices:
                        phase.vertices.append(vertex)
                        phase.parallelism[vertex] = int(m.group(3))
                    elif attempt > 0 and phase.restart is not None:
                        phase.restart["restart"].append(phase.task(vertex, subtask))
                    continue
                if new == "RUNNING":
                    phase.live.add(tuple(phase.task(vertex, subtask)))
                    phase.location[tuple(phase.task(vertex, subtask))] = phase.location.get(key)
                elif new in ("FAILED", "CANCELING", "CANCELED"):
                    phase.live.discard(tuple(phase.task(vertex, subtask)))
                if new == "FAILED":
                    events.append({"event": "task_failed", "task": phase.task(vertex, subtask), "attempt": attempt})
                elif new == "FINISHED":
                    phase.ended = True
            continue
        if phase is None or phase.ended:
            continue
        if name == "CheckpointCoordinator":
            m = _TRIGGER.match(msg)
            if m:
                savepoint = m.group(2) == "SavepointType"
                events.append({"event": "checkpoint_triggered", "checkpoint": int(m.group(1)), "savepoint": savepoint})
                continue
            m = _COMPLETED.match(msg)
            if m:
                events.append({"event": "checkpoint_completed", "checkpoint": int(m.group(1))})
                continue
            m = _EXPIRED.match(msg)
            if m:
                events.append({"event": "checkpoint_aborted", "checkpoint": int(m.group(1)), "reason": "expired"})
                continue
            m = _DECLINE.match(msg)
            if m:
                why = _FAILURE_REASON.search(msg) or _DECLINE_CAUSE.search(msg)
                events.append({"event": "checkpoint_aborted", "checkpoint": int(m.group(1)), "reason": "declined",
                               "task": phase.task(m.group(3), int(m.group(4))),
                               "flink_reason": why.group(1).strip() if why else None})
                continue
            m = _TRIGGER_FAILED.match(msg)
            if m:
                cause = m.group(2).split("\n", 1)[0]
                cause = cause.split("Exception: ", 1)[-1].strip()
                events.append({"event": "checkpoint_aborted", "checkpoint": int(m.group(1)),
                               "reason": "trigger_failed", "flink_reason": cause[:400] or None})
                continue
            m = _RESTORE.match(msg)
            if m or msg.startswith(_NO_RESTORE):
                recovering = bool(events) and events[-1]["event"] in ("job_manager_lost", "leader_granted")
                if not phase.initial_restore_seen and phase.restart is None and not recovering:
                    phase.initial_restore_seen = True  # the job's start, not a failover
                    continue
                events.append({"event": "restored", "checkpoint": int(m.group(2)) if m else None})
            continue
        if name == "JobMaster":
            m = _RESTARTED.match(msg)
            if m:
                _end_restart(phase)
                phase.initial_restore_seen = True
                phase.restart = {"event": "failover", "failed_task": phase.task(m.group(3), int(m.group(4))),
                                 "restart": [], "flink_count": int(m.group(1))}
                events.append(phase.restart)
                continue
            m = _RESTARTED_GLOBAL.match(msg)
            if m:
                _end_restart(phase)
                phase.initial_restore_seen = True
                phase.restart = {"event": "failover", "global": True, "restart": [], "flink_count": int(m.group(1))}
                events.append(phase.restart)
            continue
        if name == "JobMasterServiceLeadershipRunner":
            m = _GRANTED.match(msg)
            if m and phase_of_job.get(m.group(1)) is phase:
                events.append({"event": "leader_granted", "process": source or None, "leader_id": m.group(2)})
    if phase is not None:
        _close(phase, events, shapes)
    if len(shapes) != phases:
        raise FlinkspecError(f"the log holds {len(shapes)} job phase(s), the run had {phases}")
    return events, shapes


def _end_restart(phase: _Phase) -> None:
    if phase.restart is not None:
        phase.restart["restart"].sort()
        phase.restart = None


def _close(phase: _Phase, events: list, shapes: list) -> None:
    _end_restart(phase)
    shapes.append({"parallelism": [phase.parallelism[v] for v in phase.vertices]})
