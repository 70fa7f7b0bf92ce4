"""What a real Flink run reported, read from its log: the observations of a trace.

``flinkspec trace`` records real Flink 2.3.0 runs with ``tools/flink-trace-log4j2.properties``
(``time level logger [thread] - message``); :func:`observations` turns the log of one run into
the trace's events, in the order Flink logged them. Only what Flink itself reports is used,
and only what the model can judge (``docs/conformance.md``, "Trace validation"):

========================  =================================================================
event                     Flink's log line (logger)
========================  =================================================================
``job_submitted``         the first ``CREATED to SCHEDULED`` of a phase (``ExecutionGraph``);
                          with the savepoint it restored (``CheckpointCoordinator``
                          "Restoring job J from Savepoint N")
``checkpoint_triggered``  "Triggering checkpoint N (type=...)" (``CheckpointCoordinator``)
``checkpoint_completed``  "Completed checkpoint N for job J"
``checkpoint_aborted``    "Checkpoint N of job J expired before completing." (``expired``);
                          "Decline checkpoint N by task T" (``declined``); "Triggering
                          Checkpoint N for job J failed due to ..." (``trigger_failed``)
``task_failed``           "T (i/p) (attempt id) switched from S to FAILED" (``ExecutionGraph``)
``failover``              "K tasks will be restarted to recover the failed task A"
                          (``JobMaster``), the restart set being the subtasks whose next
                          attempt is created after it (``CREATED to SCHEDULED``, attempt > 0)
``restored``              "Restoring job J from Checkpoint N" / "No checkpoint found during
                          restore." after a failover
``task_manager_lost``     the recorder's own marker line (logger ``flinkspec.trace``),
                          logged just before ``MiniCluster.terminateTaskManager``
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
_RESTORE = re.compile(r"^Restoring job [0-9a-f]+ from (Checkpoint|Savepoint) (\d+) @")
_NO_RESTORE = "No checkpoint found during restore."
_MARKER = re.compile(r"^flinkspec: TaskManager (\d+) terminated")
_FAILURE_REASON = re.compile(r"Failure reason: ([^.\n]*)")

#: the logger that the recorder writes its own markers with
MARKER_LOGGER = "flinkspec.trace"


def log_lines(text: str):
    """``(level, logger, message)`` per log entry (continuation lines, e.g. a stack trace,
    are appended to their entry's message)."""
    entry = None
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if m:
            if entry is not None:
                yield entry
            entry = [m.group(2), m.group(3), m.group(5)]
        elif entry is not None:
            entry[2] += "\n" + raw
    if entry is not None:
        yield entry


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

    def task(self, vertex_id: str, subtask: int) -> list:
        if vertex_id not in self.vertices:
            raise FlinkspecError(f"phase {self.number}: task of an unknown JobVertex {vertex_id} in the log")
        return [self.vertices.index(vertex_id), subtask]


def observations(text: str, *, phases: int = 1) -> tuple[list[dict], list[dict]]:
    """The events of one recorded run's log (``text``: every phase, in order) and, per phase,
    its JobVertices as ``{"parallelism": [p, ...]}`` in scheduling order.

    A phase begins with the first ``CREATED to SCHEDULED`` of a new job id."""
    events: list[dict] = []
    shapes: list[dict] = []
    phase: _Phase | None = None
    job_ids: list[str] = []
    pending_restore = None
    for level, logger, msg in log_lines(text):
        name = _short(logger)
        if name == "CheckpointCoordinator" and phase is None:
            m = _RESTORE.match(msg)
            if m and m.group(1) == "Savepoint":
                pending_restore = int(m.group(2))
            continue
        if name == "ExecutionGraph":
            m = _SWITCH.match(msg)
            if m:
                job_id, vertex, subtask, attempt = m.group(4), m.group(5), int(m.group(6)), int(m.group(7))
                old, new = m.group(8), m.group(9)
                if job_id not in job_ids:
                    job_ids.append(job_id)
                    if phase is not None:
                        _close(phase, events, shapes)
                    phase = _Phase(len(job_ids) - 1)
                    phase.restored_savepoint = pending_restore
                    pending_restore = None
                    events.append({"event": "job_submitted", "phase": phase.number,
                                   "savepoint": phase.restored_savepoint})
                if phase.ended:
                    continue
                if attempt == 0 and old == "CREATED":
                    if vertex not in phase.vertices:
                        phase.vertices.append(vertex)
                    phase.parallelism[vertex] = int(m.group(3))
                    continue
                if new == "FAILED":
                    events.append({"event": "task_failed", "task": phase.task(vertex, subtask), "attempt": attempt})
                elif new == "FINISHED":
                    phase.ended = True
                elif old == "CREATED" and attempt > 0 and phase.restart is not None:
                    phase.restart["restart"].append(phase.task(vertex, subtask))
                continue
            m = _JOB_SWITCH.match(msg)
            if m and phase is not None and not phase.ended and m.group(3) in ("FINISHED", "FAILED", "CANCELED"):
                phase.ended = True
            continue
        if phase is None or phase.ended:
            if phase is not None and name == "CheckpointCoordinator":
                m = _RESTORE.match(msg)
                if m and m.group(1) == "Savepoint":
                    pending_restore = int(m.group(2))
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
                why = _FAILURE_REASON.search(msg)
                events.append({"event": "checkpoint_aborted", "checkpoint": int(m.group(1)), "reason": "declined",
                               "task": phase.task(m.group(3), int(m.group(4))),
                               "flink_reason": why.group(1).strip() if why else None})
                continue
            m = _TRIGGER_FAILED.match(msg)
            if m:
                why = _FAILURE_REASON.search(msg)
                events.append({"event": "checkpoint_aborted", "checkpoint": int(m.group(1)),
                               "reason": "trigger_failed", "flink_reason": why.group(1).strip() if why else None})
                continue
            m = _RESTORE.match(msg)
            if m or msg.startswith(_NO_RESTORE):
                if not phase.initial_restore_seen and phase.restart is None:
                    phase.initial_restore_seen = True  # the job's start, not a failover
                    continue
                events.append({"event": "restored", "checkpoint": int(m.group(2)) if m else None})
                continue
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
        if logger == MARKER_LOGGER:
            m = _MARKER.match(msg)
            if m:
                events.append({"event": "task_manager_lost", "task_manager": int(m.group(1))})
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
