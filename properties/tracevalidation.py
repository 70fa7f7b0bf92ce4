"""Trace validation: can the model do what a real Flink run did?

The method of TLA+ trace validation (Cirstea, Kuppe, Loillier, Merz, *Validating Traces of
Distributed Programs Against TLA+ Specifications*, 2024): a trace recorded from the real
system (``properties/flinktrace.py``) is a sequence of observations; the model is searched for
a run whose observable events are the trace's, in order, with any number of the model's
unobservable steps (deliveries, barriers, records, watermarks, notifications) in between.

* :func:`expected_events` maps the trace's events to the model's observations, applying the
  **mapping rules** (:data:`RULES`, each one a documented simplification of the model or a
  fact Flink does not report; ``docs/conformance.md``). Every event a rule leaves out is
  listed with the rule's name: nothing is dropped silently.
* :func:`observe` maps the events a model step appended to ``Cluster.events`` to the same
  observations. The events of one step are matched as a set (the model takes the step at once;
  Flink logs its parts from several threads in an order it does not guarantee): the only
  partial order used.
* :func:`validate` searches: depth first, over the model's one step function
  (``Cluster.enabled_actions`` / ``Cluster.step``), every state kept once per (fingerprint,
  position in the trace, checkpoint-id binding); actions that bring the next observations are
  tried first, and only data-free runs are taken where data independence holds
  (:func:`data_free_reason`). Verdicts: ``consistent`` (a model run produces the whole trace),
  ``divergent`` (the search exhausted the model's runs: the longest matched prefix, the first
  event the model cannot produce there, and what it could do instead; or the search matched
  the prefix before an event that names a task the job does not have -- a vertex or subtask
  index outside that phase's JobGraph, :func:`unknown_task` --, which no run continues past,
  so the first run to match the prefix decides; or a shared file deleted
  while a retained checkpoint references it, or a file of a snapshot restored in NO_CLAIM mode
  deleted or reused, :func:`referenced_file_deleted`),
  ``inconclusive`` (a bound hit first, named).

Checkpoint ids are compared through a bijection that keeps their order: a Flink id is bound to
the model's id the first time both appear in matched events, and must stay bound to it (the
model's counter and Flink's agree unless a rule left a checkpoint out; then the ids shift, and
identity is what is compared). A restored checkpoint is the one bound to the restored id.
Tasks are ``(JobVertex position, subtask index)`` in both: the model's ExecutionGraph numbers
vertices in the same topological order as Flink's scheduler; the trace's header gives each
phase's vertex parallelisms and the model's graph must have the same.

What a user does is not searched: the restart of a stopped job from its savepoint with the
next phase's parallelisms is applied when the trace's next event is that phase's submission
(``Cluster.restart_from_savepoint``, as ``flinkspec conform`` does it); so is the cancellation
of a running job and its submission from a retained checkpoint in the header's claim mode
(``Cluster.restart_from_retained_checkpoint``), for each checkpoint the model's store retains
(the trace says which one Flink restored).
"""

from __future__ import annotations

import time
from collections import Counter

import attrs

from model import actions as A
from model.cluster import Cluster, JobInput, RuntimeConfig
from model.environment import Environment, split_config
from model.errors import FlinkspecError
from model.streamgraph import stream_graph_from_dict
from model.variants import Scenario
from properties.flinktrace import Trace

#: the verdicts, with their exit codes
CONSISTENT, DIVERGENT, INCONCLUSIVE = "consistent", "divergent", "inconclusive"

#: Flink's decline reasons that mean "the checkpoint reached a task that was not running"
NOT_RUNNING_DECLINES = ("Checkpoint was declined (tasks not ready)", "Checkpoint was declined (task is closing)")
#: what a failed trigger RPC says when its task is gone from the TaskManager
#: (``TaskExecutor.triggerCheckpoint``)
NOT_RUNNING_TRIGGER = "TaskManager received a checkpoint request for unknown task"
#: the message of CHECKPOINT_ASYNC_EXCEPTION, with which a task declines when the asynchronous
#: phase of its snapshot fails (``AsyncCheckpointRunnable``): the declining task is compared
ASYNC_SNAPSHOT_DECLINE = "Asynchronous task checkpoint failed"


def _not_running(e: dict) -> bool:
    """Whether an abort says the checkpoint reached a task that was not running."""
    why = e.get("flink_reason") or ""
    if e["reason"] == "declined":
        return why in NOT_RUNNING_DECLINES
    return e["reason"] == "trigger_failed" and why.startswith(NOT_RUNNING_TRIGGER)


@attrs.frozen(slots=True)
class Rule:
    name: str
    statement: str


#: the mapping rules, by name (docs/conformance.md lists them with their reasons)
RULES = {r.name: r for r in (
    Rule("first-submission", "the first job submission is the model's initial deployment"),
    Rule("trigger-at-a-task-not-running",
         "a checkpoint that Flink triggered while a task was failing, finishing or not yet running, and that "
         "such a task declined (CHECKPOINT_DECLINED_TASK_NOT_READY / _TASK_CLOSING) or whose trigger RPC failed, "
         "has no counterpart in the model: the model's trigger is atomic with the JobMaster's view of its "
         "tasks, and a task failure is noticed in the step it happens"),
    Rule("failures-of-a-lost-taskmanager",
         "the tasks Flink reports FAILED between a TaskManager's loss and the failover are the loss's "
         "failures: the model's LoseTaskManager fails them in one step (the restart set is compared)"),
    Rule("loss-of-an-idle-taskmanager",
         "the loss of a TaskManager that runs no task of the job changes nothing (Flink restarts nothing; the "
         "ResourceManager's replacement offers the same slots): the model's LoseTaskManager is offered only for a "
         "TaskManager that runs a task"),
    Rule("triggered-during-a-failure",
         "a checkpoint triggered after a TaskManager or the JobManager was lost and before the failover or "
         "recovery that follows, and that never completes, has no counterpart: Flink notices the loss later "
         "(a heartbeat, a closed connection), the model in the step it happens"),
    Rule("completion-during-the-failover",
         "a checkpoint that completes after a task failed (or a TaskManager was lost) and before the failover: "
         "the failed tasks had acknowledged it, the others' acknowledgements arrive while Flink cancels the "
         "tasks and waits out the restart back-off (it aborts pending checkpoints only when it restores). The "
         "model fails over in the step of the failure, so its completion is expected just before the failure"),
    Rule("checkpoint-storage-by-invariant",
         "the shared files of checkpoint storage are compared through the model's rule, not by name (Flink names "
         "them by UUID, the model by task and checkpoint): a shared file is discarded only when no retained "
         "checkpoint references it (SharedStateRegistry); a deletion of a file that one of the last "
         "state.checkpoints.num-retained completed checkpoints references is an event the model cannot produce"),
    Rule("leadership",
         "leader grants are recorded but not compared here: the data-plane model's FailJobManager restores the "
         "latest completed checkpoint without an election (the control-plane model has the election)"),
    Rule("completion-lost-with-the-leader",
         "a checkpoint the new leader restores, which the killed leader triggered but did not live to log as "
         "completed, did complete (the new leader found it in the HA store): its completion is expected just "
         "before the loss"),
)}


@attrs.frozen(slots=True)
class Expected:
    """One observation the model must produce: ``key`` is the comparable tuple, ``seq`` the
    trace event it comes from."""

    key: tuple
    seq: int

    def describe(self) -> str:
        return describe_key(self.key)


@attrs.frozen(slots=True)
class Omitted:
    seq: int
    event: str
    rule: str


#: how each observation reads (its key: the kind, then the fields)
_DESCRIBE = {
    "checkpoint_triggered": lambda k: f"{'savepoint' if k[2] else 'checkpoint'} {k[1]} triggered",
    "checkpoint_completed": lambda k: f"checkpoint {k[1]} completed",
    "checkpoint_aborted": lambda k: f"checkpoint {k[1]} aborted ({k[2]}"
                                    + (f" by task {list(k[3])}: its asynchronous snapshot failed)" if len(k) > 3 else ")"),
    "task_failed": lambda k: f"task {list(k[1])} failed",
    "failover": lambda k: f"{'global ' if k[2] else ''}failover restarting {sorted(list(t) for t in k[1])}",
    "restored": lambda k: "restored from " + ("no checkpoint" if k[1] is None else f"checkpoint {k[1]}"),
    "task_manager_lost": lambda k: "a TaskManager lost",
    "job_manager_lost": lambda k: "the JobManager lost",
    "job_submitted": lambda k: f"job resubmitted from snapshot {k[1]} (restored as a {k[2]})",
    "shared_file_deleted": lambda k: f"shared file {k[1]} deleted",
    "checkpoint_files": lambda k: f"checkpoint {k[1]}'s shared files",
}


def describe_key(key: tuple) -> str:
    f = _DESCRIBE.get(key[0])
    return f(key) if f is not None else repr(key)


# -- the trace's side -----------------------------------------------------------------------------


def expected_events(trace: Trace) -> tuple[list[Expected], list[Omitted]]:
    """The observations the model must produce, and the events the mapping rules leave out
    (or, for ``completion-lost-with-the-leader``, add: listed too, as ``inferred ...``)."""
    events = trace.events
    not_running = {e["checkpoint"] for e in events if e["event"] == "checkpoint_aborted" and _not_running(e)}
    completed = {e["checkpoint"] for e in events if e["event"] == "checkpoint_completed"}
    # the failure windows: from a loss to the failover (a TaskManager) or the restore (the JobManager)
    during_failure: set = set()
    lost_completions: dict[int, int] = {}  # seq of a JobManager loss -> the checkpoint whose completion it hid
    window = None
    triggered_before: set = set()
    for k, e in enumerate(events):
        kind = e["event"]
        if kind == "task_manager_lost" and e.get("tasks", [None]):
            window = "failover"
        elif kind == "job_manager_lost":
            window = "restored"
            nxt = next((x for x in events[k + 1:] if x["event"] == "restored"), None)
            if nxt is not None and nxt["checkpoint"] is not None and nxt["checkpoint"] not in completed \
                    and nxt["checkpoint"] in triggered_before:
                lost_completions[e["seq"]] = nxt["checkpoint"]
        elif kind == window:
            window = None
        elif kind == "checkpoint_triggered":
            triggered_before.add(e["checkpoint"])
            if window is not None and e["checkpoint"] not in completed:
                during_failure.add(e["checkpoint"])
    events = _completions_before_failures(events)
    expected, omitted = [], []
    in_loss = False
    first = True
    for e in events:
        if e.get("_moved"):
            omitted.append(Omitted(e["seq"], "checkpoint_completed (moved before the failure)",
                                   "completion-during-the-failover"))
            e = {k: v for k, v in e.items() if k != "_moved"}
        kind, seq = e["event"], e["seq"]
        if kind == "job_submitted":
            if first:
                first = False
                omitted.append(Omitted(seq, kind, "first-submission"))
                continue
            if e["savepoint"] is None:
                raise FlinkspecError(f"{trace.path}: event {seq}: a later phase must restore a savepoint")
            # traces recorded before ``restored_as`` was read restored savepoints only, which
            # Flink's restore names "Savepoint"
            expected.append(Expected(("job_submitted", e["savepoint"], e.get("restored_as", "Savepoint")), seq))
        elif kind in ("checkpoint_triggered", "checkpoint_completed", "checkpoint_aborted"):
            if e["checkpoint"] in not_running:
                omitted.append(Omitted(seq, kind, "trigger-at-a-task-not-running"))
                continue
            if e["checkpoint"] in during_failure:
                omitted.append(Omitted(seq, kind, "triggered-during-a-failure"))
                continue
            if kind == "checkpoint_triggered":
                expected.append(Expected((kind, e["checkpoint"], e["savepoint"]), seq))
            elif kind == "checkpoint_completed":
                expected.append(Expected((kind, e["checkpoint"]), seq))
            elif e["reason"] == "declined" and e.get("flink_reason") == ASYNC_SNAPSHOT_DECLINE and "task" in e:
                expected.append(Expected((kind, e["checkpoint"], e["reason"], tuple(e["task"])), seq))
            else:
                expected.append(Expected((kind, e["checkpoint"], e["reason"]), seq))
        elif kind == "task_failed":
            if in_loss:
                omitted.append(Omitted(seq, kind, "failures-of-a-lost-taskmanager"))
                continue
            expected.append(Expected((kind, tuple(e["task"])), seq))
        elif kind == "failover":
            in_loss = False
            expected.append(Expected((kind, frozenset(tuple(t) for t in e["restart"]), bool(e.get("global"))), seq))
        elif kind == "restored":
            expected.append(Expected((kind, e["checkpoint"]), seq))
        elif kind == "task_manager_lost":
            if not e.get("tasks", [None]):
                omitted.append(Omitted(seq, kind, "loss-of-an-idle-taskmanager"))
                continue
            in_loss = True
            expected.append(Expected((kind,), seq))
        elif kind == "job_manager_lost":
            if seq in lost_completions:
                cid = lost_completions[seq]
                omitted.append(Omitted(seq, "inferred checkpoint_completed", "completion-lost-with-the-leader"))
                expected.append(Expected(("checkpoint_completed", cid), seq))
            expected.append(Expected(("job_manager_lost",), seq))
        elif kind == "leader_granted":
            omitted.append(Omitted(seq, kind, "leadership"))
        elif kind in ("checkpoint_files", "shared_file_deleted"):
            omitted.append(Omitted(seq, kind, "checkpoint-storage-by-invariant"))
        else:  # the schema admits no other kind
            raise FlinkspecError(f"{trace.path}: event {seq}: unknown event {kind!r}")
    return expected, omitted


def _completions_before_failures(events) -> list:
    """The trace's events with each completion between a failure's start (a task failed, a
    TaskManager running tasks lost) and its failover moved just before that start, when its
    trigger came before it (rule ``completion-during-the-failover``); moved ones are marked."""
    out = list(events)
    k = 0
    while k < len(out):
        e = out[k]
        start = e["event"] == "task_failed" or (e["event"] == "task_manager_lost" and e.get("tasks", [None]))
        if not start:
            k += 1
            continue
        triggered = {x["checkpoint"] for x in out[:k] if x["event"] == "checkpoint_triggered"}
        end = next((j for j in range(k + 1, len(out)) if out[j]["event"] == "failover"), len(out))
        moved = [x for x in out[k + 1:end] if x["event"] == "checkpoint_completed" and x["checkpoint"] in triggered]
        if moved:
            rest = [x for x in out[k:end] if x not in moved]
            out[k:end] = [dict(x, _moved=True) for x in moved] + rest
            k += len(moved)
        k = next((j for j in range(k + 1, len(out)) if out[j]["event"] == "failover"), len(out)) + 1
    return out


def referenced_file_deleted(trace: Trace, retained: int) -> tuple[dict, str] | None:
    """The first ``shared_file_deleted`` event of a file the model's job keeps, with the
    reason; None if there is none. The model's SharedStateRegistry never deletes such a file:

    * a file that a retained checkpoint references (the last ``retained`` completed
      checkpoints, by the trace's ``checkpoint_files``);
    * after a submission from a retained checkpoint (the header's ``phases[i].restore``) in
      CLAIM mode, the restored checkpoint is the new job's first retained checkpoint (subsumed
      like the others); in NO_CLAIM mode a file it references is the user's: the new job
      never deletes it, and none of its checkpoints references it (returned too: the
      ``checkpoint_files`` event that does).
    After a savepoint restore the new job's checkpoints start the count afresh."""
    completed: list[int] = []
    refs: dict[int, set] = {}
    users_files: dict[str, int] = {}   # file -> the checkpoint restored in NO_CLAIM mode that references it
    savepoints = {e["checkpoint"] for e in trace.events if e["event"] == "checkpoint_triggered" and e["savepoint"]}
    phases = trace.header["phases"]
    for e in trace.events:
        kind = e["event"]
        if kind == "job_submitted":
            restore = phases[e["phase"]].get("restore") if e["phase"] < len(phases) else None
            if restore and restore.get("snapshot") == "retained-checkpoint" and e["savepoint"] is not None:
                cid = e["savepoint"]
                if restore["claim_mode"] == "CLAIM":
                    completed = [cid]
                else:
                    completed = []
                    users_files.update((f, cid) for f in refs.get(cid, ()))
            else:
                completed, refs = [], {}
        elif kind == "checkpoint_completed" and e["checkpoint"] not in savepoints:
            completed.append(e["checkpoint"])
        elif kind == "checkpoint_files":
            refs[e["checkpoint"]] = set(e["shared"])
            reused = sorted(set(e["shared"]) & set(users_files))
            if reused:
                return e, (f"checkpoint {e['checkpoint']} of the job submitted in NO_CLAIM mode references shared "
                           f"file(s) {reused} of the restored checkpoint {users_files[reused[0]]}: the model's first "
                           "checkpoint after a NO_CLAIM restore is full (forceFullSnapshot, "
                           "CheckpointType.FULL_CHECKPOINT) and later ones build on it, never on the user's files")
        elif kind == "shared_file_deleted":
            if e["file"] in users_files:
                return e, (f"shared file {e['file']} of checkpoint {users_files[e['file']]}, which the job was "
                           "submitted from in NO_CLAIM mode, deleted: the new job never discards the files of a "
                           "snapshot it did not claim (CheckpointProperties.forUnclaimedSnapshot, "
                           "SharedStateRegistry.registerAllAfterRestored)")
            users = [c for c in completed[-retained:] if e["file"] in refs.get(c, ())]
            if users:
                return e, (f"shared file {e['file']} deleted while retained checkpoint(s) {users} reference it "
                           f"(state.checkpoints.num-retained = {retained}): the model's SharedStateRegistry "
                           "discards a shared file only when no retained checkpoint references it")
    return None


def restore_not_retained(trace: Trace, retained: int) -> tuple[dict, str] | None:
    """The first submission from a retained checkpoint that the model cannot make, with the
    reason; None if there is none. The model's job is submitted only from a checkpoint its
    CompletedCheckpointStore retains (the last ``retained`` completed checkpoints of the
    cancelled job: ``Cluster.restart_from_retained_checkpoint``), and its restore names the
    snapshot by the type the claim mode gives it (:func:`restored_as`). Decided here from the
    trace alone (the model's completed checkpoints are the trace's, in order), so that such a
    trace is ``divergent`` at once rather than after every run of the phase before it."""
    completed: list[int] = []
    phases = trace.header["phases"]
    for e in trace.events:
        kind = e["event"]
        if kind == "checkpoint_completed":
            completed.append(e["checkpoint"])
        elif kind == "checkpoint_triggered" and e["savepoint"]:
            completed = [c for c in completed if c != e["checkpoint"]]
        elif kind == "job_submitted":
            restore = phases[e["phase"]].get("restore") if e["phase"] < len(phases) else None
            if restore and restore.get("snapshot") == "retained-checkpoint":
                keep = completed[-retained:]
                if e["savepoint"] not in keep:
                    return e, (f"phase {e['phase']} was submitted from checkpoint {e['savepoint']}, which the "
                               f"cancelled job did not retain (its last {retained} completed checkpoints: {keep})")
                want = restored_as(restore["claim_mode"])
                if e.get("restored_as", "Savepoint") != want:
                    return e, (f"phase {e['phase']} restored checkpoint {e['savepoint']} in "
                               f"{restore['claim_mode']} mode as a {e.get('restored_as', 'Savepoint')}: that mode "
                               f"gives it the type {want}")
            completed = []
    return None


def scenario_of(trace: Trace) -> Scenario:
    """The model's scenario of the trace: its job, its input (keys as Flink's ``Row(key)``
    hash codes, as ``flinkspec conform`` runs them), its configuration, and search bounds that
    Flink's run had too (no idleness: the job declares none)."""
    h = trace.header
    try:
        graph = stream_graph_from_dict(h["job"])
    except FlinkspecError as e:
        raise FlinkspecError(f"{trace.path}: header: job: {e}") from None
    sources = [o.name for o in graph.operators if o.kind == "source"]
    key_hash = h["key_hash"]
    splits = {}
    for name in sources:
        if name not in h["input"]:
            raise FlinkspecError(f"{trace.path}: header: input: no records for source {name!r}")
        try:
            splits[name] = tuple(tuple((key_hash[k], v, ts) for k, v, ts in split) for split in h["input"][name])
        except KeyError as e:
            raise FlinkspecError(f"{trace.path}: header: key_hash: no hash code for key {e.args[0]!r}") from None
    # the header's config holds the run's Flink configuration and, as Environment fields, what
    # the recorder did to it (the faults it injected, whether it took savepoints)
    cfg, env = split_config(h["config"])
    fields = {f.name for f in attrs.fields(RuntimeConfig)}
    unknown = sorted(set(cfg) - fields)
    if unknown:
        raise FlinkspecError(f"{trace.path}: header: config: unknown RuntimeConfig field(s) {unknown}")
    try:
        config = RuntimeConfig(**cfg)
        environment = Environment(**env, max_idle_periods=0)
    except (FlinkspecError, TypeError) as e:
        raise FlinkspecError(f"{trace.path}: header: config: {e}") from None
    return Scenario(graph=graph, job_input=JobInput(splits), config=config, seed=h["seed"], environment=environment)


# -- the model's side -----------------------------------------------------------------------------


def _task_of(eg):
    order: dict[str, int] = {}
    for st in eg.subtasks:
        order.setdefault(st.job_vertex, len(order))
    return {st.id: (order[st.job_vertex], st.subtask_index) for st in eg.subtasks}


def vertex_parallelisms(eg) -> list[int]:
    seen: dict[str, int] = {}
    for st in eg.subtasks:
        seen[st.job_vertex] = st.parallelism
    return list(seen.values())


def restored_as(claim_mode: str) -> str:
    """The type Flink names a snapshot by when a new job restores it in ``claim_mode``
    ("Restoring job J from Checkpoint N" / "Savepoint N"): CLAIM gives it the job's checkpoint
    properties, NO_CLAIM ``CheckpointProperties.forUnclaimedSnapshot`` (a savepoint type)."""
    return "Checkpoint" if claim_mode == "CLAIM" else "Savepoint"


def observe(c: Cluster, new_events) -> list[tuple]:
    """The observations of the events one model step appended (``Cluster.events``)."""
    out = []
    task = None
    for e in new_events:
        kind = e[0]
        if kind == "triggered":
            out.append(("checkpoint_triggered", e[2], bool(e[3])))
        elif kind == "completed":
            out.append(("checkpoint_completed", e[2]))
        elif kind == "aborted":
            reason = e[3]
            if reason == "CHECKPOINT_EXPIRED":
                out.append(("checkpoint_aborted", e[2], "expired"))
            elif reason.startswith("CHECKPOINT_DECLINED"):
                out.append(("checkpoint_aborted", e[2], "declined"))
            elif reason == "CHECKPOINT_ASYNC_EXCEPTION":
                task = task or _task_of(c.eg)
                out.append(("checkpoint_aborted", e[2], "declined", task[e[4]]))
            # aborts at a failover, a subsumption or a suspension: Flink logs none of them at INFO
        elif kind in ("task_failed", "failover"):
            task = task or _task_of(c.eg)
            if kind == "task_failed":
                out.append(("task_failed", task[e[2]]))
            else:
                # a failover with no failed task is global (the CheckpointFailureManager's)
                out.append(("failover", frozenset(task[t] for t in e[4]), not e[2]))
        elif kind == "restored":
            out.append(("restored", e[2]))
        elif kind == "task_manager_lost":
            out.append(("task_manager_lost",))
        elif kind == "job_manager_failover":
            out.append(("job_manager_lost",))
        elif kind == "rescaled":
            out.append(("job_submitted", e[2], restored_as(c.config.restore_mode)))
        elif kind == "resubmitted_from_checkpoint":
            out.append(("job_submitted", e[2], restored_as(e[3])))
    return out


_ID_AT = {"checkpoint_triggered": 1, "checkpoint_completed": 1, "checkpoint_aborted": 1, "restored": 1,
          "job_submitted": 1}


def _unify(model: tuple, flink: tuple, binding: dict) -> dict | None:
    """``binding`` extended so that ``model`` matches ``flink`` (None if it cannot)."""
    if model[0] != flink[0] or len(model) != len(flink):
        return None
    i = _ID_AT.get(model[0])
    for k in range(1, len(model)):
        if k != i and model[k] != flink[k]:
            return None
    if i is None:
        return binding
    m, f = model[i], flink[i]
    if m is None or f is None:
        return binding if m is f else None
    if f in binding:
        return binding if binding[f] == m else None
    if m in binding.values():
        return None
    # order-preserving: a later Flink id binds a later model id
    for fb, mb in binding.items():
        if (fb < f) != (mb < m):
            return None
    new = dict(binding)
    new[f] = m
    return new


def match(observed: list[tuple], expected: list[Expected], binding: dict) -> dict | None:
    """``observed`` (one step's) against ``expected`` as multisets under ``binding``."""
    if len(observed) != len(expected):
        return None
    if not observed:
        return binding

    def go(i, used, b):
        if i == len(observed):
            return b
        for j, ex in enumerate(expected):
            if j in used:
                continue
            nb = _unify(observed[i], ex.key, b)
            if nb is not None:
                r = go(i + 1, used | {j}, nb)
                if r is not None:
                    return r
        return None

    return go(0, frozenset(), binding)


# -- the search -----------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class Verdict:
    verdict: str
    path: str
    matched: int
    total: int
    states: int
    seconds: float
    first_unmatched: Expected | None = None
    model_could: tuple = ()
    bound: str | None = None
    reason: str | None = None
    omitted: tuple = ()
    actions: tuple = ()
    binding: tuple = ()

    def to_dict(self) -> dict:
        d = {"file": self.path, "verdict": self.verdict, "matched": self.matched, "events": self.total,
             "states": self.states, "seconds": round(self.seconds, 3),
             "omitted": Counter(o.rule for o in self.omitted)}
        if self.first_unmatched is not None:
            d["first_unmatched"] = {"seq": self.first_unmatched.seq, "event": self.first_unmatched.describe()}
        if self.model_could:
            d["model_could"] = list(self.model_could)
        if self.bound:
            d["bound"] = self.bound
        if self.reason:
            d["reason"] = self.reason
        d["omitted"] = dict(sorted(d["omitted"].items()))
        d["model_actions"] = [repr(a) for a in self.actions]
        return d


#: unobservable action kinds in the order the search tries them (the kinds that trigger a
#: checkpoint first, ``ActionKind.triggers_checkpoint``; barriers and notifications move the
#: checkpoints the trace talks of; records last: none is observed)
_PREFERENCE = (*A.CHECKPOINT_TRIGGERS, A.FailTask, A.LoseTaskManager, A.CheckpointTimeout,
               A.FailAsyncSnapshot,
               A.NotifyCheckpointComplete, A.Deliver, A.AlignmentTimeout, A.SourceWatermark, A.SourceEmit)


def _rank(a) -> int:
    t = type(a)
    for i, k in enumerate(_PREFERENCE):
        if t is k:
            return i
    return len(_PREFERENCE)


#: what a step of these action kinds always observes, whatever else it does: an action whose
#: observation is not among the next expected ones cannot match, so it is not taken (a pure
#: shortcut: without it the step would be taken and refused by the match)
_ALWAYS_OBSERVES = {
    A.FailTask: lambda c, a, task: ("task_failed", task[a.subtask]),
    A.LoseTaskManager: lambda c, a, task: ("task_manager_lost",),
    A.FailJobManager: lambda c, a, task: ("job_manager_lost",),
    **{t: (lambda c, a, task: "checkpoint_triggered") for t in A.CHECKPOINT_TRIGGERS},
    A.CheckpointTimeout: lambda c, a, task: "checkpoint_aborted",
    A.FailAsyncSnapshot: lambda c, a, task: "checkpoint_aborted",
}
#: the most observations one step makes (a failover: the failure, the restart set, aborts, the restore)
_WINDOW = 8


def _cannot_match(c, a, window_keys: set, window_kinds: set, task) -> bool:
    f = _ALWAYS_OBSERVES.get(type(a))
    if f is None:
        return False
    need = f(c, a, task)
    return need not in (window_kinds if isinstance(need, str) else window_keys)


@attrs.frozen(slots=True)
class _Resubmit:
    """The user's restart of the stopped job from its savepoint with the phase's parallelisms."""

    phase: int
    parallelism: tuple


def _priority(c, a, nxt: Expected, task) -> int:
    """Lower first: an action whose sure observation is the next expected event, then the
    preferred kinds (:data:`_PREFERENCE`)."""
    f = _ALWAYS_OBSERVES.get(type(a))
    if f is not None:
        need = f(c, a, task)
        if need == nxt.key or need == nxt.key[0]:
            return -1
    return _rank(a)


def _restores_retained_checkpoint(trace: Trace, phase: int) -> bool:
    """Whether the trace's phase ``phase`` was submitted from a retained checkpoint of the
    cancelled phase before it (the header's ``phases[i].restore``)."""
    ph = trace.header["phases"]
    restore = ph[phase].get("restore") if phase < len(ph) else None
    return bool(restore) and restore.get("snapshot") == "retained-checkpoint"


def _shape_error(trace: Trace, c: Cluster, phase: int) -> str | None:
    shapes = trace.header["flink_vertices"]
    if phase >= len(shapes):
        return None
    want, have = shapes[phase]["parallelism"], vertex_parallelisms(c.eg)
    if want != have:
        return (f"phase {phase}: Flink's JobGraph has vertices with parallelisms {want}, the model's {have} "
                "(the chaining differs)")
    return None


#: the action kinds that move data (records, watermarks, the end of input, idleness): a search of
#: data-free runs leaves them out (:func:`data_free_reason`)
DATA_KINDS = (A.SourceEmit, A.SourceWatermark, A.SourceEnd, A.SourceIdle, A.SourceActive)


def data_free_reason(scenario: Scenario) -> str | None:
    """Why the search may NOT be restricted to data-free runs (None: it may).

    The observations compare checkpoints, failures, restart sets and restores, never records,
    state or output. Take any model run producing them and delete every action that moves
    data (:data:`DATA_KINDS`) and every delivery of a record or watermark: what remains is a
    model run with the same observations, provided that (a) no task finishes (a trace ends
    before the first task of Flink's finishes, and a run that never ends its input matches
    whatever one that did matched, finished tasks only acknowledging at once), (b) no knob
    makes logical time matter (``RuntimeConfig.time_sensitive``: deleting steps moves time),
    and (c) no exchange is blocking (a blocking partition is consumed once its producer
    finished). A barrier then reaches the head of its channel sooner, never later; a
    checkpoint that did not complete may still not complete (its barrier waits); the failover
    strategy and the coordinator read no data. Under (a)-(c) the data-free runs produce every
    observation sequence the model can produce, so exhausting them decides the trace
    (data independence, as Wolper's for protocols that only move data)."""
    if scenario.config.time_sensitive:
        return "a knob makes logical time matter (RuntimeConfig.time_sensitive)"
    if any(e.exchange_mode == "blocking" for e in scenario.graph.edges):
        return "the job has a blocking exchange"
    return None


def _tasks_named(key: tuple) -> tuple:
    """The tasks ``(vertex, subtask)`` an observation names."""
    kind = key[0]
    if kind == "task_failed":
        return (key[1],)
    if kind == "failover":
        return tuple(sorted(key[1]))
    if kind == "checkpoint_aborted" and len(key) == 4:
        return (key[3],)
    return ()


def unknown_task(trace: Trace, expected: list[Expected]) -> tuple[int, str] | None:
    """``(position, reason)`` of the first expected observation naming a task that its phase's
    JobGraph does not have (the header's vertex parallelisms): no run of the model makes it,
    whatever it did before, so no run matches past it. None if every task named exists."""
    shapes = trace.header["flink_vertices"]
    phase = 0
    for i, x in enumerate(expected):
        if x.key[0] == "job_submitted":
            phase += 1
        if phase >= len(shapes):
            return None  # a phase without a recorded shape: _shape_error names it
        shape = shapes[phase]["parallelism"]
        for v, s in _tasks_named(x.key):
            if not (0 <= v < len(shape) and 0 <= s < shape[v]):
                return i, (f"event {x.seq} ({x.describe()}) names task [{v}, {s}], which phase {phase}'s JobGraph "
                           f"does not have (its vertices' parallelisms: {shape}): no run of the model produces it")
    return None


def _culprit(expected: list[Expected], pos: int, tried) -> Expected:
    """The first expected event at ``pos`` that no refused step could have produced, kind and
    fields alike (checkpoint ids under the binding of the step): where a step of several failed, the one that
    differs. ``expected[pos]`` when every one of them could."""
    for ex in expected[pos:pos + _WINDOW]:
        if not any(_unify(o, ex.key, b) is not None for obs, b in tried for o in obs):
            return ex
    return expected[pos]


def validate(trace: Trace, *, max_states: int = 200_000, max_seconds: float = 120.0,
             progress=None) -> Verdict:
    """Search the model for a run producing ``trace``'s observations (see the module docstring)."""
    t0 = time.perf_counter()
    expected, omitted = expected_events(trace)
    scenario = scenario_of(trace)
    root = Cluster.from_scenario(scenario)
    data_free = data_free_reason(scenario) is None
    deleted = restore_not_retained(trace, scenario.config.max_retained_checkpoints) \
        or referenced_file_deleted(trace, scenario.config.max_retained_checkpoints)
    if deleted is not None:
        e, why = deleted
        before = sum(1 for x in expected if x.seq < e["seq"])
        return Verdict(DIVERGENT, trace.path, before, len(expected), 0, time.perf_counter() - t0,
                       first_unmatched=next((x for x in expected if x.seq == e["seq"]),
                                            Expected((e["event"], e.get("file", e.get("checkpoint"))), e["seq"])),
                       reason=why, omitted=tuple(omitted))
    total = len(expected)
    shape = _shape_error(trace, root, 0)
    if shape:
        return Verdict(DIVERGENT, trace.path, 0, total, 1, time.perf_counter() - t0,
                       first_unmatched=expected[0] if expected else None, reason=shape, omitted=tuple(omitted))
    phases = [tuple((n, p) for n, p in ph["parallelism"].items()) for ph in trace.header["phases"]]
    unknown = unknown_task(trace, expected)
    seen: set = set()
    # the stack holds edges, stepped when taken (most are never taken once a run is found):
    # (parent state, action or None for the root, its position, its binding)
    stack: list = [(root, None, 0, ())]
    best = (0, None)            # (position, a state there)
    could: dict[int, set] = {}  # position -> observations the model could make there instead
    tried: dict[int, list] = {}  # position -> the observation lists (and bindings) of the steps refused there
    states = 0
    bound = None
    while stack:
        parent, a, pos, binding = stack.pop()
        if a is None:
            c = parent
        else:
            c = parent.copy()
            before = len(c.events)
            if isinstance(a, _Resubmit):
                from properties.conform import _restart_from_savepoint  # lazy: conform loads the Flink harness
                _restart_from_savepoint(c, a.parallelism)
                shape = _shape_error(trace, c, a.phase)
                if shape:
                    return Verdict(DIVERGENT, trace.path, pos, total, states, time.perf_counter() - t0,
                                   first_unmatched=expected[pos], reason=shape, omitted=tuple(omitted))
            else:
                c.step(a)
            obs = observe(c, c.events[before:])
            if obs:
                bdict = dict(binding)
                nb = match(obs, expected[pos:pos + len(obs)], bdict)
                if nb is None:
                    could.setdefault(pos, set()).update(describe_key(o) for o in obs)
                    tried.setdefault(pos, []).append((obs, bdict))
                    continue
                pos, binding = pos + len(obs), tuple(sorted(nb.items()))
        if pos == total:
            return Verdict(CONSISTENT, trace.path, total, total, states, time.perf_counter() - t0,
                           omitted=tuple(omitted), actions=tuple(c.trace), binding=binding)
        if unknown is not None and pos == unknown[0]:
            # no run matches past this position: the first run to reach it has the longest prefix
            return Verdict(DIVERGENT, trace.path, pos, total, states + 1, time.perf_counter() - t0,
                           first_unmatched=expected[pos], reason=unknown[1], omitted=tuple(omitted),
                           actions=tuple(c.trace))
        key = (c.fingerprint(), pos, binding)
        if key in seen:
            continue
        seen.add(key)
        states += 1
        if pos > best[0] or best[1] is None:
            best = (pos, c)
        if states >= max_states:
            bound = f"--max-states {max_states}"
            break
        if time.perf_counter() - t0 > max_seconds:
            bound = f"--max-seconds {max_seconds:g}"
            break
        if progress is not None and states % 256 == 0:
            progress(f"{states} states, {best[0]}/{total} events matched")
        edges = []
        nxt = expected[pos]
        if nxt.key[0] == "job_submitted":
            # the user's resubmission: not the model's choice
            phase = sum(1 for e in expected[:pos + 1] if e.key[0] == "job_submitted")
            if phase < len(phases):
                if _restores_retained_checkpoint(trace, phase):
                    if c.job.status == "RUNNING" and c.job.stopping is None:
                        # whichever checkpoint the store retains: the trace says which one Flink
                        # restored (a user's action no engine is offered, so not among enabled_actions)
                        edges.extend((-1, A.RestartFromRetainedCheckpoint(cid))
                                     for cid in c.coordinator.store.checkpoint_ids())
                elif c.job.status == "STOPPED" and c.job.savepoint is not None:
                    edges.append((-1, _Resubmit(phase, phases[phase])))
        window = expected[pos:pos + _WINDOW]
        window_keys = {e.key for e in window}
        window_kinds = {e.key[0] for e in window}
        task = _task_of(c.eg)
        for act in c.enabled_actions():
            if data_free and type(act) in DATA_KINDS:
                continue
            if _cannot_match(c, act, window_keys, window_kinds, task):
                continue
            edges.append((_priority(c, act, nxt, task), act))
        # the stack pops the last first: the edge that should bring the next event first, then
        # the preferred unobservable kinds
        edges.sort(key=lambda e: -e[0])
        for _p, act in edges:
            stack.append((c, act, pos, binding))
    seconds = time.perf_counter() - t0
    pos = best[0]
    deepest = tuple(best[1].trace) if best[1] is not None else ()
    if bound is None:
        return Verdict(DIVERGENT, trace.path, pos, total, states, seconds,
                       first_unmatched=_culprit(expected, pos, tried.get(pos, ())),
                       model_could=tuple(sorted(could.get(pos, ()))), omitted=tuple(omitted), actions=deepest)
    return Verdict(INCONCLUSIVE, trace.path, pos, total, states, seconds,
                   first_unmatched=expected[pos] if pos < total else None, bound=bound, omitted=tuple(omitted),
                   actions=deepest)
