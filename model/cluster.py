"""The cluster state and the one step function every engine drives.

``Cluster.from_scenario(scenario)`` (or ``Cluster(execution_graph, job_input, config, seed, environment)``)
deploys a compiled job. The action kinds of ``model.actions`` are the only way the state
changes:

* ``candidate_actions()`` -- every action the registered kinds can form over the state's ids,
  enabled or not; ``enabled_actions()`` -- exactly those whose kind's guard holds, in a
  deterministic order (registration order of the kinds, then ids);
* ``step(a)`` -- applies an enabled action; any other raises ``model.errors.ActionNotEnabled``
  with the guard's reason and leaves the state untouched. No mechanism re-checks a guard;
* ``copy()`` -- an independent copy; ``fingerprint()`` -- a canonical hash of the state
  (``model.fingerprint``): equal states have equal fingerprints, whatever path led there.

A *trace* (configuration + seed + actions) replays to an identical state: nothing in here
reads a clock or an unseeded random source.

The state is data, in parts: ``net`` (``model.channels.Channels``: every channel), ``tasks``
(``model.streamtask.StreamTask``: chains, valves, barrier handlers, sources, sinks; a task
changes only its own state and the channels, and tells the cluster what else must happen as
messages in ``outbox`` -- ``model.messages`` -- which ``step`` delivers after the action),
``coordinator`` (``model.checkpointcoordinator.CheckpointCoordinator``), ``external`` (the
outside world the sinks write to, ``model.sinks.ExternalSystem``), ``job`` (:class:`JobState`:
status, attempts, failures, stop-with-savepoint and the savepoint's snapshots, in-flight
notifications). ``delta`` says what the last step changed (for the spec's incremental checks).
What happened on the way -- ``trace``, ``events``, ``restored_from``, the completed
checkpoints' snapshots (``completed``) -- is the run's history (``history``,
``model.history.RunHistory``), kept beside the state: no step reads it.

Follows: the Flink runtime's components named in each module. Time is logical: ``now``
counts the steps taken; a barrier's timestamp is the step at which the CheckpointCoordinator
triggered it, and the aligned checkpoint timeout is measured in steps.

Deliberate differences from Flink: the trigger RPC reaches every running source at once
(one step), unless ``Environment.trigger_delivery`` is "any_order" (then each is a message to
its task, ``StreamTask.triggers``, delivered by ``DeliverCheckpointTrigger``); a finished task acknowledges a checkpoint immediately with its final state
(FLIP-147 without the "finished on restore" bookkeeping); the coordinator's periodic
scheduler is replaced by the ``TriggerCheckpoint`` action, which an engine chooses; once
every task finished, a final checkpoint lets two-phase-commit sinks commit (FLIP-147's
final checkpoint, without the tasks waiting for it); the notifyCheckpointComplete RPC, which
Flink sends to every task of the checkpoint (``CheckpointPlan.getTasksToCommitTo``), is in
flight only to the tasks that act on it (``StreamTask.checkpoint_listener``: a two-phase-commit
sink, a RocksDB backend) -- to any other it changes nothing, so it counts as delivered at once
(which only removes interleavings of no-op deliveries). The state is mutated in place (speed);
``copy()`` is there for engines that branch.
"""

from __future__ import annotations

import random
from typing import Iterable

import attrs

from model import actions as A
from model import seams, sinks, slotsharing
from model.scope import ModelScope
from model.seams import check as seams_check
from model.channels import Channels
from model.creditbasedflowcontrol import CreditBasedChannels
from model.checkpointbarrierhandler import CheckpointBarrierTracker, SingleCheckpointBarrierHandler
from model.checkpointfailuremanager import CheckpointFailureManager, FailJob
from model.checkpointstorage import CheckpointStorage, flatten
from model.sharedstateregistry import RESTORE_MODES
from model.statebackend import BACKENDS, make_backend, restored_files_are_the_base
from model.controlplane import ControlPlane
from model.clusterentrypoint import DEPLOYMENT_MODES, ClusterEntrypoint
from model.checkpointcoordinator import (
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointCoordinator,
    CompletedCheckpoint,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
)
from model.errors import ActionNotEnabled, FlinkspecError
from model.environment import Environment
from model.eventtime import BoundedOutOfOrdernessWatermarks, WatermarkToDataOutput
from model.events import LONG_MAX, CheckpointBarrier
from model.executiongraph import compile_stream_graph
from model.failover import failover_strategy
from model.fingerprint import beside_state, fingerprint_of
from model.history import RunHistory
from model.functions import filter_function, map_function
from model.jobgraph import BLOCKING
from model.messages import AcknowledgeCheckpoint, DeclineCheckpoint, TaskFinished
from model.keygroups import assign_key_to_parallel_operator, assign_to_key_group
from model.rescaling import channel_rescale_refusal, rescale_channel_states, rescale_graph, rescale_states
from model.statecopy import deep_copy
from model.streamtask import (
    FINISHED,
    RUNNING,
    barriers_forced_aligned,
    BroadcastPartitioner,
    Discard,
    Fanout,
    FilterNode,
    ForwardPartitioner,
    KeyedNode,
    KeyGroupStreamPartitioner,
    MapNode,
    RebalancePartitioner,
    SinkNode,
    SourceReader,
    StreamTask,
    TaskContext,
    TaskOutput,
    TaskPlan,
)
from model.watermarkstatus import StatusWatermarkValve
from model.windowing import (
    KeyedAggregateOperator,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    WindowOperator,
)

__all__ = ["ActionNotEnabled", "Cluster", "JobInput", "JobState", "RuntimeConfig", "StepDelta", "drain",
           "drain_choice", "enabled_actions", "step"]

CHECKPOINTING_MODES = ("exactly_once", "at_least_once")


#: ``RuntimeConfig`` fields that were unsafe switches and are seams now: field -> (the unsafe
#: value it had, the seam that value stands for), or ({unsafe value: seam}, None). A configuration that still names one (a
#: counterexample file written before) is refused with the seam to switch on instead;
#: :func:`migrate_config` rewrites it (``tools/migrate_knobs.py``).
RETIRED_KNOBS = {
    "skip_consumer_regions": (True, "skip-consumer-regions"),
    "backtrack_every_blocking_input": (True, "backtrack-every-blocking-input"),
    "copy_on_write": (False, "heap-snapshot-without-copy-on-write"),
    "discard_shared_by_creator": (True, "shared-state-discarded-with-creator"),
    "no_claim_full_first_checkpoint": (False, "no-claim-first-checkpoint-incremental"),
    "reuse_unconfirmed_uploads": (True, "incremental-reuses-unconfirmed-files"),
    "operator_state_by_index": (True, "operator-state-by-index"),
    "window_lateness_ignored": (True, "window-lateness-ignored"),
    "idle_source_keeps_emitting": (True, "idle-source-keeps-emitting"),
    "unchecked_barrier_order": (True, "unchecked-barrier-order"),
    "unchecked_cancellation_id": (True, "unchecked-cancellation-id"),
    "alignment_timer": ({"immediate": "alignment-timer-immediate", "never": "alignment-timer-never"}, None),
    "inflight_assignment": ({"old_index": "inflight-by-old-index"}, None),
    "fencing": (False, "no-fencing"),
    "checkpoint_id_counter_ha": (False, "checkpoint-counter-in-memory"),
    "restore_from_ha_store": (False, "restore-from-memory"),
    "slot_report_reconciliation": (False, "no-slot-report-reconciliation"),
    "allocated_slot_report_sync": (False, "no-allocated-slot-report-sync"),
    "scheduling": ({"eager": "eager-scheduling"}, None),
    "unaligned_channel_state": (False, "unaligned-drops-channel-state"),
    "restore_pending_checkpoints": (True, "restore-pending-checkpoints"),
    "keygroup_assignment": ({"modulo": "keygroups-by-modulo"}, None),
    "notify_savepoint_complete": (True, "FLINK-10354"),
}


def migrate_config(cfg: dict) -> tuple[dict, list]:
    """``cfg`` (a ``RuntimeConfig`` as a dict) without what left the configuration, and the
    seams that stood in it, in order: each retired knob at its unsafe value becomes its seam (at
    its safe value it is dropped), and the ``bugs`` list the configuration held before the
    seams moved to the scenario (``Scenario.seams``) is moved out whole."""
    out = {k: v for k, v in cfg.items() if k not in RETIRED_KNOBS and k != "bugs"}
    names = list(cfg.get("bugs") or ())
    names += [n for k, v in cfg.items() if k in RETIRED_KNOBS for n in [_retired_seam(k, v)] if n and n not in names]
    return out, names


def retired_knob_problem(cfg) -> str | None:
    """Why the configuration dict ``cfg`` cannot be read as it is (it names a retired knob, or
    the seams it held before they moved to the scenario), or None."""
    if not isinstance(cfg, dict):
        return None
    fix = "`python tools/migrate_knobs.py FILE...` rewrites such files"
    for k, v in cfg.items():
        if k in RETIRED_KNOBS:
            seam = _retired_seam(k, v)
            what = f"is the seam {seam!r} now: switch it on (scenario.seams)" if seam else "is gone: drop it"
            return f"{k}={v!r} was an unsafe switch and {what}; {fix}"
    if "bugs" in cfg:
        return (f"bugs={cfg['bugs']!r} in the configuration: the seams a run switches on are the scenario's "
                f"now (scenario.seams), not Flink's configuration; {fix}")
    return None


def _retired_seam(knob: str, value) -> str | None:
    """The seam the retired ``knob`` at ``value`` stands for (None: its safe value)."""
    unsafe, seam = RETIRED_KNOBS[knob]
    if isinstance(unsafe, dict):  # a knob with several unsafe values: value -> seam
        return unsafe.get(value) if isinstance(value, str) else None
    return seam if value == unsafe else None


@attrs.frozen(slots=True, kw_only=True)
class RuntimeConfig:
    """Flink's configuration of a run. Defaults are Flink's defaults where Flink has one. What
    the world around the job may do to it (faults, operator actions, their budgets) is not
    here but in the run's ``model.environment.Environment``.

    ``unaligned`` with ``aligned_checkpoint_timeout=None`` is pure unaligned; with a timeout
    it is Flink's "alternating" aligned-then-unaligned mode (barriers are timeoutable).
    """

    checkpointing_mode: str = "exactly_once"
    unaligned: bool = False
    aligned_checkpoint_timeout: int | None = None
    max_concurrent_checkpoints: int = 1
    min_pause_between_checkpoints: int = 0
    max_retained_checkpoints: int = 1
    #: ``execution.checkpointing.tolerable-failed-checkpoints``: how many consecutive checkpoint
    #: failures of a counted reason the CheckpointFailureManager tolerates before it fails the
    #: job over globally (``model.checkpointfailuremanager``). Flink's default is 0; the model's is
    #: None, Flink's UNLIMITED_TOLERABLE_FAILURE_NUMBER (no manager: an expired or declined
    #: checkpoint never fails the job over), as the model was before the manager was modelled, so
    #: that a CheckpointTimeout stays no failover in every scenario that does not set it.
    tolerable_failed_checkpoints: int | None = None
    #: ``taskmanager.network.memory.buffers-per-channel``: the exclusive buffers of each remote
    #: input channel. Set, it switches on the network stack's credit-based flow control
    #: (``model.creditbasedflowcontrol``: buffers, credits and backlog per channel); None (the
    #: default; Flink's default is 2) keeps the coarse channels whose capacity counts elements,
    #: whose smaller state spaces every other mechanism's searches rely on.
    buffers_per_channel: int | None = None
    #: ``taskmanager.network.memory.floating-buffers-per-gate``: the floating buffers each input
    #: gate's LocalBufferPool shares among its remote channels (network mode only).
    floating_buffers_per_gate: int = 8
    checkpoints_after_tasks_finish: bool = True
    failover_strategy: str = "region"
    #: restart strategy: "fixed-delay" (``restart_attempts``), "failure-rate"
    #: (``failure_rate_max_failures`` within ``failure_rate_interval`` steps) or "none".
    restart_strategy: str = "fixed-delay"
    #: fixed-delay: restarts allowed before the job is FAILED (None = unbounded).
    restart_attempts: int | None = None
    failure_rate_max_failures: int = 3
    failure_rate_interval: int = 100
    task_managers: int = 2
    #: slots per TaskManager; None = just enough for the job (ceil(required / task_managers)).
    slots_per_task_manager: int | None = None
    # -- state backends and checkpoint storage (model.statebackend, model.checkpointstorage) --
    #: ``state.backend.type``: "hashmap" or "rocksdb" switch on two-phase snapshots (the
    #: asynchronous phase is the FinishAsyncSnapshot action), state files in a DFS, the
    #: SharedStateRegistry and asynchronous deletes; None (the default) keeps the model's
    #: instant snapshots without files.
    state_backend: str | None = None
    #: ``execution.checkpointing.incremental`` (RocksDB only).
    incremental: bool = False
    #: ``execution.state-recovery.claim-mode`` of a restart from a savepoint: CLAIM or NO_CLAIM.
    restore_mode: str = "NO_CLAIM"
    # -- the control plane (model/controlplane.py; ModelScope.control_plane switches it on) --
    #: JobManager processes contending for leadership (control plane only).
    job_managers: int = 2
    #: heartbeat intervals (Tick actions) without an answer after which a peer is lost.
    heartbeat_timeout: int = 2
    #: ``high-availability.zookeeper.client.tolerate-suspended-connections`` (default false):
    #: false -- Curator's StandardConnectionStateErrorPolicy: a SUSPENDED connection revokes
    #: leadership (the LeaderLatch resets on RECONNECTED); true -- ZooKeeperUtils installs a
    #: SessionConnectionStateErrorPolicy: leadership is kept until the session is LOST.
    zookeeper_tolerate_suspended_connections: bool = False
    #: ``slot.idle.timeout`` in heartbeat intervals (Flink: 50 s, five of its 10 s heartbeat
    #: intervals; here as many intervals as ``heartbeat_timeout``'s default): a free slot of the
    #: SlotPool idle this long, and not needed, is released to its TaskExecutor.
    slot_idle_timeout: int = 2
    # -- deployment modes (model/clusterentrypoint.py, docs/deployment.md) --
    #: the cluster the jobs run on: None (the default: one job on TaskExecutors the
    #: environment provides, as before), "session" (``SessionClusterEntrypoint``: jobs
    #: submitted over time share a fixed set of TaskExecutors; Flink's ``execution.target``
    #: ``remote``, ``yarn-session`` or ``kubernetes-session``) or "application"
    #: (``ApplicationClusterEntrypoint``: one job, an ActiveResourceManager requesting and
    #: releasing workers, the cluster shut down when the job is globally terminal;
    #: ``execution.target`` ``yarn-application`` or ``kubernetes-application``, and the
    #: deprecated per-job targets). Set, the jobs are the deployment's (``model.dispatcher``)
    #: and the data plane is not run.
    deployment_mode: str | None = None
    #: ``resourcemanager.taskmanager-registration.timeout`` in heartbeat intervals (Flink: 5 min):
    #: a requested worker not registered by then is stopped (application mode).
    taskmanager_registration_timeout: int = 1
    #: ``resourcemanager.taskmanager-timeout`` in heartbeat intervals (Flink: 30 s): a registered
    #: worker idle this long is released (application mode).
    taskmanager_idle_timeout: int = 1

    def __attrs_post_init__(self):
        if self.checkpointing_mode not in CHECKPOINTING_MODES:
            raise FlinkspecError(f"checkpointing_mode must be one of {CHECKPOINTING_MODES}, not {self.checkpointing_mode!r}")
        if self.unaligned and self.checkpointing_mode != "exactly_once":
            raise FlinkspecError("unaligned checkpoints need checkpointing_mode 'exactly_once' (Flink: FLINK-18403)")
        if self.buffers_per_channel is not None and (type(self.buffers_per_channel) is not int
                                                     or self.buffers_per_channel < 1):
            raise FlinkspecError(f"buffers_per_channel must be an int >= 1 or None (the coarse channels), "
                                 f"not {self.buffers_per_channel!r}")
        if type(self.floating_buffers_per_gate) is not int or self.floating_buffers_per_gate < 0:
            raise FlinkspecError(f"floating_buffers_per_gate must be an int >= 0, not {self.floating_buffers_per_gate!r}")
        if self.max_concurrent_checkpoints < 1:
            raise FlinkspecError("max_concurrent_checkpoints must be >= 1")
        if self.tolerable_failed_checkpoints is not None and (
                type(self.tolerable_failed_checkpoints) is not int or self.tolerable_failed_checkpoints < 0):
            raise FlinkspecError(f"tolerable_failed_checkpoints must be an int >= 0 or None (unlimited), "
                                 f"not {self.tolerable_failed_checkpoints!r}")
        if self.failover_strategy not in ("region", "full"):
            raise FlinkspecError(f"failover_strategy must be 'region' or 'full', not {self.failover_strategy!r}")
        if self.restart_strategy not in ("fixed-delay", "failure-rate", "none"):
            raise FlinkspecError(f"restart_strategy must be 'fixed-delay', 'failure-rate' or 'none', "
                                 f"not {self.restart_strategy!r}")
        if self.failure_rate_max_failures < 1 or self.failure_rate_interval < 1:
            raise FlinkspecError("failure-rate restart strategy: max failures and interval must be >= 1")
        if self.task_managers < 1:
            raise FlinkspecError("task_managers must be >= 1")
        if self.state_backend not in (None,) + BACKENDS:
            raise FlinkspecError(f"state_backend must be one of {BACKENDS} or None, not {self.state_backend!r}")
        if self.incremental and self.state_backend != "rocksdb":
            raise FlinkspecError("incremental checkpoints need state_backend 'rocksdb'")
        if self.restore_mode not in RESTORE_MODES:
            raise FlinkspecError(f"restore_mode must be one of {RESTORE_MODES}, not {self.restore_mode!r}")
        if self.job_managers < 1:
            raise FlinkspecError(f"job_managers must be >= 1, not {self.job_managers}")
        if self.heartbeat_timeout < 1:
            raise FlinkspecError(f"heartbeat_timeout must be >= 1, not {self.heartbeat_timeout}")
        if self.slot_idle_timeout < 1:
            raise FlinkspecError(f"slot_idle_timeout must be >= 1, not {self.slot_idle_timeout}")
        if self.deployment_mode is not None:
            if self.deployment_mode not in DEPLOYMENT_MODES:
                raise FlinkspecError(f"deployment_mode must be one of {DEPLOYMENT_MODES} or None, "
                                     f"not {self.deployment_mode!r}")
            if self.slots_per_task_manager is not None and (type(self.slots_per_task_manager) is not int
                                                            or self.slots_per_task_manager < 1):
                raise FlinkspecError(f"slots_per_task_manager must be an int >= 1 or None, "
                                     f"not {self.slots_per_task_manager!r}")
        for knob in ("taskmanager_registration_timeout", "taskmanager_idle_timeout"):
            v = getattr(self, knob)
            if type(v) is not int or v < 1:
                raise FlinkspecError(f"{knob} must be an int >= 1, not {v!r}")

    @property
    def barrier_mode(self) -> str:
        if self.checkpointing_mode == "at_least_once":
            return "at_least_once"
        if not self.unaligned:
            return "aligned"
        return "unaligned" if self.aligned_checkpoint_timeout is None else "alternating"

    @property
    def timeoutable_barriers(self) -> bool:
        return self.barrier_mode == "alternating"

    @property
    def time_sensitive(self) -> bool:
        """Whether logical time changes what can happen next (an alignment timeout, a minimum
        pause between checkpoints, a failure-rate restart strategy). If not, the fingerprint
        leaves out ``now`` and the timestamps, so states reached at different steps are equal."""
        return (self.aligned_checkpoint_timeout is not None or self.min_pause_between_checkpoints > 0
                or self.restart_strategy == "failure-rate")


@attrs.frozen(slots=True)
class JobInput:
    """The records of every source: ``splits[source_name]`` is a tuple of splits, each a
    tuple of ``(key, value, timestamp)`` records. Split ``j`` is read by subtask ``j % p``."""

    splits: dict = attrs.field(factory=dict)


@attrs.define(slots=True)
class JobState:
    """What the JobMaster knows of the job besides its tasks and checkpoints.

    ``status``: RUNNING, STOPPED (stop-with-savepoint done), FINISHED (stop-with-savepoint
    ``--drain`` done) or FAILED (restarts exhausted);
    ``attempt`` counts (re)deployments; ``failures`` the injected failures (bounded by
    ``max_failures``); ``current_restart_attempt`` FixedDelayRestartBackoffTimeStrategy's count
    of restarts, kept only when the strategy bounds them (``restart_attempts``: unbounded, the
    count changes nothing, and the model leaves it out; the run's history counts every
    failover); ``stopping`` the id of a stop-with-savepoint in progress; ``savepoint`` the
    savepoint a STOPPED job stopped with and ``savepoint_snapshots`` its snapshots per subtask
    (what a restart from it restores); ``generation`` counts rescalings; ``notifications`` the notifyCheckpointComplete
    RPCs in flight to the tasks that act on them: ``(subtask, checkpoint_id)`` -> how many, in
    the order they were sent; ``failure_times`` the failure-rate
    strategy's queue; ``checkpoints_triggered`` the trigger requests (for ``max_checkpoints``)."""

    status: str = RUNNING
    attempt: int = 0
    failures: int = 0
    current_restart_attempt: int = 0
    stopping: int | None = None
    savepoint: int | None = None
    savepoint_snapshots: dict | None = None
    generation: int = 0
    notifications: dict = attrs.field(factory=dict)
    failure_times: list = attrs.field(factory=list)
    checkpoints_triggered: int = 0
    #: RescaleFromCheckpoint restores done (bounded by ``max_checkpoint_rescales``)
    checkpoint_rescales: int = 0
    #: SourceIdle actions taken (bounded by ``max_idle_periods``)
    idle_periods: int = 0


@beside_state
@attrs.define(slots=True)
class StepDelta:
    """What the last step changed, for checks that only need to look at the change:
    checkpoints that completed, a failover it ran, whether it (re)deployed tasks or changed
    the slot allocation. ``step`` is the step it belongs to (-1: the initial deployment)."""

    #: (beside the state, ``model.fingerprint.beside_state``: it says how the state came to be)

    step: int = -1
    completed: list = attrs.field(factory=list)
    failover: tuple | None = None
    redeployed: bool = False
    allocation_changed: bool = False
    #: the snapshots the JobMaster received in this step, in order: (subtask, checkpoint id)
    acked: list = attrs.field(factory=list)


#: the delta of a step that changed none of the above
NO_CHANGE = StepDelta(step=-2)


class Cluster:
    """The whole runtime state of one job run (see the module docstring). Every attribute is
    in its fingerprint but the parts kept beside the state (``history``, the last step's
    ``delta``); what is derived from the ExecutionGraph and the configuration (the failover
    strategy, the operators by name) is read through properties, not held."""

    def __init__(self, execution_graph, job_input: JobInput, config: RuntimeConfig | None = None, seed: int = 0,
                 environment: Environment | None = None, seams: tuple = (), scope: ModelScope | None = None):
        self.eg = execution_graph
        self.job_input = job_input
        self.config = config or RuntimeConfig()
        #: which mechanisms this run models and how coarsely (``model.scope``)
        self.scope = scope or ModelScope()
        self.scope.check(self.config)
        #: the seams this run switches on, by name (``model.seams``): each overrides one
        #: definition of the model -- a re-introduced Flink bug (its FLINK key), a known-unsafe
        #: change, or a user's design (``flinkspec.design``); they act in its steps
        self.seams = seams_check(seams)
        #: the faults and operator actions this run may see (``model.environment``)
        self.environment = environment or Environment()
        self.seed = seed
        self._start(execution_graph)

    @seams.within
    def _start(self, execution_graph) -> None:
        """The initial deployment (the seams the configuration switches on act in it too)."""
        self.now = 0
        #: what happened in the run (``model.history``): beside the state, never read by a step
        self.history = RunHistory()
        self.external = sinks.ExternalSystem()
        self.late: list = []
        #: the windows a sliding window skipped as late for an element another window took
        #: (``ChainOutput.skip_window``): what ``window_results_exactly_once`` excuses
        self.window_skips: list = []
        self.job = JobState()
        self.acks: dict[int, dict] = {}
        self.sink_owners: dict[int, str] = {}
        self.declines: list = []
        self.outbox: list = []  # the tasks' messages of the current step (empty between steps)
        #: the CheckpointFailureManager's FailJob of the current step and the attempt it was
        #: decided in (None between steps): the JobMaster's main thread runs it after the step
        self.job_failure = None
        self._delta = StepDelta(step=0)
        #: the DFS and the SharedStateRegistry (model.checkpointstorage); None without a state backend
        self.storage = None if self.config.state_backend is None else CheckpointStorage()
        self.coordinator = self._new_coordinator(execution_graph)
        self._check_input()
        self._install(execution_graph)
        #: the control plane (model.controlplane), or None: a data-plane run has none (and its
        #: fingerprint has no such field)
        if self.scope.control_plane:
            self.cp = ControlPlane(self)
            for t in self.tasks:
                t.status = "CREATED"  # deployed by a JobMaster once it holds slots
        #: the deployment mode's cluster (model.clusterentrypoint), or None (and no such field)
        if self.config.deployment_mode is not None:
            self.deployment = ClusterEntrypoint(self)
        if self.environment.savepoints:
            # the ExecutionGraphs a restart from a savepoint may deploy, compiled now rather than
            # inside a step (a compile leaves its own graphs to the cyclic garbage collector,
            # which the explorer leaves off)
            for parallelism in self.rescale_choices():
                try:
                    _rescaled_eg(execution_graph.stream_graph, parallelism)
                except FlinkspecError:
                    pass  # (a restart with these parallelisms fails, with this error, when it is taken)
        self._delta.step = -1  # what the deployment changed is the "last step" until the first

    @classmethod
    def from_scenario(cls, scenario) -> "Cluster":
        """Deploy ``scenario`` (``model.variants.Scenario``: graph, job input, config, environment,
        seed, seams, scope)."""
        return cls(compile_stream_graph(scenario.graph), scenario.job_input, scenario.config, seed=scenario.seed,
                   environment=scenario.environment, seams=scenario.seams, scope=scenario.scope)

    # -- the network's channel arrays, for readers (``net`` holds them: read through, never a
    # second reference in the state) --------------------------------------------------------------
    channels = property(lambda self: self.net.queues)
    prio = property(lambda self: self.net.prio)
    blocked = property(lambda self: self.net.blocked)
    received = property(lambda self: self.net.received)
    read_pos = property(lambda self: self.net.read_pos)
    blocking = property(lambda self: self.net.blocking)
    consumer_of = property(lambda self: self.net.consumer_of)
    producer_of = property(lambda self: self.net.producer_of)

    @property
    def source_tasks(self) -> list:
        """The source subtasks' tasks, in subtask order (derived: a task is held once, in
        ``tasks``)."""
        return [t for t in self.tasks if t.source is not None]

    def input_read(self) -> JobInput | None:
        """What the sources read, when some source subtask ended its input before reading all
        of it (stop-with-savepoint ``--drain``): the job input with every split cut at its
        reader's offset -- the input the job's output must then be the result of. None when no
        source ended early (a source restarted by a failover reads on, and is not counted)."""
        tasks = [t for t in self.tasks if t.source is not None]
        if not any(t.source.ended and t.source.has_next() for t in tasks):
            return None
        read = {name: list(splits) for name, splits in self.job_input.splits.items()}
        for t in tasks:
            src = t.source
            for split_id, records, offset, _gen in src.splits:
                read[src.name][split_id] = tuple(records[:offset])
        return JobInput({name: tuple(splits) for name, splits in read.items()})

    #: the control plane (an instance attribute only when it is on)
    cp = None
    #: the deployment mode's cluster (an instance attribute only when a mode is set)
    deployment = None

    @property
    def _units(self) -> tuple:
        """The action kinds of this cluster: the data plane's, every kind but the deployment
        modes' with the control plane, the deployment modes' alone in a deployment mode."""
        if self.deployment is not None:
            return A.DEPLOYMENT_UNITS
        return A.DATA_UNITS if self.cp is None else A.ALL_UNITS

    # -- the run's history, for readers (``history`` holds it) ---------------------------------
    trace = property(lambda self: self.history.trace)
    events = property(lambda self: self.history.events)
    restored_from = property(lambda self: self.history.restored_from)
    trigger_results = property(lambda self: self.history.trigger_results)
    completed_ids = property(lambda self: self.history.completed_ids)
    completed = property(lambda self: self.history.completed)
    channel_rescales = property(lambda self: self.history.channel_rescales)
    #: the failovers so far
    restarts = property(lambda self: self.history.failovers)

    # -- the job's status, for readers (the JobState holds it) ---------------------------------
    status = property(lambda self: self.job.status)
    stopping = property(lambda self: self.job.stopping)
    savepoint = property(lambda self: self.job.savepoint)
    notifications = property(lambda self: self.job.notifications)
    attempt = property(lambda self: self.job.attempt)
    failures = property(lambda self: self.job.failures)
    generation = property(lambda self: self.job.generation)

    # -- the contract ----------------------------------------------------------------------------
    @seams.within
    def candidate_actions(self) -> list:
        """Every action the registered kinds form over the current state's ids, enabled or not."""
        out = []
        for unit in self._units:
            out.extend(unit.candidates(self))
        return out

    @seams.within
    def enabled_actions(self) -> list:
        """Exactly the candidate actions whose kind's guard holds."""
        out = []
        for unit in self._units:
            out.extend(unit.enabled(self))
        return out

    @seams.within
    def why_not_enabled(self, action) -> str | None:
        """None if ``action`` is enabled, else the reason it is not."""
        unit = A.KINDS.get(type(action))
        if unit is None:
            return f"{action!r} is not an action of any registered kind"
        return unit.guard(self, action)

    @seams.within
    def footprint(self, action):
        """``ActionKind.footprint`` of the enabled ``action`` (with the configuration's seams:
        a search's reduction must see what the step will do)."""
        return A.KINDS[type(action)].footprint(self, action)

    @seams.within
    def outcome(self, action):
        """``ActionKind.outcome`` of the enabled ``action`` (with the configuration's seams, as
        ``footprint``)."""
        return A.KINDS[type(action)].outcome(self, action)

    @seams.within
    def step(self, action) -> None:
        """Apply ``action`` if it is enabled; else raise ActionNotEnabled (the state is untouched)."""
        try:
            guard, apply = _GUARD_AND_APPLY[type(action)]
        except KeyError:
            raise ActionNotEnabled(f"{action!r} is not an action of any registered kind") from None
        why = guard(self, action)
        if why is not None:
            raise ActionNotEnabled(f"{action!r}: {why}")
        apply(self, action)
        if self.outbox:
            self.deliver_messages()
        if self.job_failure is not None:
            self._fail_job_on_checkpoint_failures()
        if self.cp is not None:
            self.cp.after_step(self)
        if self.deployment is not None:
            self.deployment.after_step(self)
        self._forget_acknowledgements()
        self.now += 1
        self.history.trace.append(action)

    def _forget_acknowledgements(self) -> None:
        """Keep of each task's acknowledged checkpoints (``StreamTask.acked``) what a later step
        reads: the newest (a snapshot taken after a newer checkpoint's is out of order) and those
        still pending (a finished task acknowledges the others). Within one deployment of a
        task the coordinator's checkpoint ids only grow, so no other one is pending later (a
        JobManager failover, after which an unsafe counter may hand an id out again, redeploys
        every task)."""
        pending = None
        for t in self.tasks:
            acked = t.acked
            if len(acked) > 1:
                if pending is None:
                    pending = self.coordinator.pending
                newest = max(acked)
                keep = {c for c in acked if c == newest or c in pending}
                if len(keep) != len(acked):
                    t.acked = keep

    def checkpoint_budget_spent(self) -> bool:
        """Whether ``max_checkpoints`` forbids another trigger request (the final checkpoint
        of a finished job gets one more)."""
        budget = self.environment.max_checkpoints
        if budget is None:
            return False
        return self.job.checkpoints_triggered >= budget + (1 if self.final_checkpoint_needed() else 0)

    def without_budgets(self) -> "Cluster":
        """A copy whose environment has no checkpoint budget (``max_checkpoints=None``): what
        the state would do if the environment let the job go on (a progress check drains it)."""
        c = self.copy()
        c.environment = attrs.evolve(self.environment, max_checkpoints=None)
        return c

    def copy(self) -> "Cluster":
        """An independent copy: stepping one never changes the other. The ExecutionGraph, the
        job input, the configuration and the environment (immutable) are shared."""
        memo = {id(self.eg): self.eg, id(self.job_input): self.job_input, id(self.config): self.config,
                id(self.environment): self.environment, id(self.task_managers): self.task_managers}
        for st in self.eg.subtasks:
            memo[id(st)] = st
        memo[id(self.history)] = self.history.copy()  # (its entries are immutable: new lists of them)
        return deep_copy(self, memo)

    def fingerprint(self) -> str:
        """A canonical hash of the state (``model.fingerprint``): the run's history and the last
        step's delta are beside the state, and ``now`` and timestamps are left out unless
        ``config.time_sensitive``. The ExecutionGraph, the job input, the configuration and the
        environment are frozen values: the walk computes each one's form once and reads it
        afterwards."""
        return fingerprint_of(self, drop_time=not self.config.time_sensitive)

    @property
    def strategy(self):
        """The configured FailoverStrategy of the current ExecutionGraph (derived, cached)."""
        return _failover_strategy(self.eg, self.config, self.seams)

    @property
    def _ops(self) -> dict:
        """The job's operators by name."""
        return {o.name: o for o in self.eg.stream_graph.operators}

    # -- deployment --------------------------------------------------------------------------------
    def _new_coordinator(self, execution_graph) -> CheckpointCoordinator:
        all_ids = [s.id for s in execution_graph.subtasks]
        cfg = self.config
        return CheckpointCoordinator(
            tasks_to_trigger=all_ids,
            tasks_to_ack=all_ids,
            max_concurrent_checkpoints=cfg.max_concurrent_checkpoints,
            min_pause_between_checkpoints=cfg.min_pause_between_checkpoints,
            max_retained=cfg.max_retained_checkpoints,
            failure_manager=None if cfg.tolerable_failed_checkpoints is None
            else CheckpointFailureManager(cfg.tolerable_failed_checkpoints),
        )

    def _install(self, execution_graph, restored=None, keep_base: bool = True) -> None:
        """Deploy every subtask of ``execution_graph`` (fresh, or from ``restored``)."""
        self.eg = execution_graph
        blocking = [execution_graph.job_graph.edges[ch.job_edge].result_partition_type == BLOCKING
                    for ch in execution_graph.channels]
        cfg = self.config
        if cfg.buffers_per_channel is None:
            net = self.net = Channels(execution_graph.channels, blocking)
        else:  # the network stack's buffers and credits (model.creditbasedflowcontrol)
            net = self.net = CreditBasedChannels(
                execution_graph.channels, blocking, [g.channels for gates in execution_graph.input_gates for g in gates],
                cfg.buffers_per_channel, cfg.floating_buffers_per_gate, cfg.checkpointing_mode == "exactly_once")
        required = sum(slotsharing.required_slots(execution_graph).values())
        cfg = self.config
        per_tm = cfg.slots_per_task_manager or -(-required // cfg.task_managers)
        self.task_managers = tuple(slotsharing.TaskManager(f"tm{i}", per_tm) for i in range(cfg.task_managers))
        self.allocation = slotsharing.allocate(execution_graph, self.task_managers)
        self._write_delta().allocation_changed = True
        if net.network:
            net.place(self._task_manager_of)
        self.tasks: list[StreamTask] = [None] * len(execution_graph.subtasks)  # type: ignore[list-item]
        for st in execution_graph.subtasks:
            self.tasks[st.id] = self._deploy(st)
        if restored is not None:
            self._restore_tasks(set(range(len(self.tasks))), restored, keep_base)
        ids = [s.id for s in execution_graph.subtasks]
        self.coordinator.update_tasks(ids, ids)
    # -- deployment -------------------------------------------------------------------------
    def _check_input(self) -> None:
        sg = self.eg.stream_graph
        sources = {o.name for o in sg.operators if o.kind == "source"}
        unknown = set(self.job_input.splits) - sources
        if unknown:
            raise FlinkspecError(f"job input names unknown source(s) {sorted(unknown)}; sources are {sorted(sources)}")

    def _deploy(self, st) -> StreamTask:
        """Build subtask ``st``'s plan, its OperatorChain (every operator of the JobVertex gets a
        node whose output is its chained successors plus the result partitions it produces), and
        its state: the stateful operators' (a keyed operator, a sink writer) and the rebalancing
        record writers' first positions, at the slots their nodes name."""
        eg = self.eg
        sg = eg.stream_graph
        ops = self._ops
        vertex = eg.job_graph.vertices[st.job_vertex]
        in_vertex = set(vertex.operators)
        out_channels: list[int] = []
        partition_outputs: dict[str, list] = {}
        operators: list = []
        next_channel: list[int] = []
        for part in eg.partitions[st.id]:
            edge = eg.job_graph.edges[part.job_edge]
            partition_outputs.setdefault(edge.source_operator, []).append(self._record_writer(st, part, next_channel))
            out_channels.extend(part.channels)
        chained: dict[str, list[str]] = {}
        for e in sg.edges:
            if e.source in in_vertex and e.target in in_vertex:
                chained.setdefault(e.source, []).append(e.target)
        nodes: dict[str, object] = {}

        def build(name):
            if name in nodes:
                return nodes[name]
            spec = ops[name]
            kind = spec.kind
            outs = [build(t) for t in chained.get(name, ())] + partition_outputs.get(name, [])
            nxt = outs[0] if len(outs) == 1 else (Fanout(outs) if outs else Discard())
            if kind == "source":
                node = nxt
            elif kind == "map":
                node = MapNode(name, map_function(spec.function, f"operator '{name}'"))
            elif kind == "filter":
                node = FilterNode(name, filter_function(spec.function, f"operator '{name}'"))
            elif kind in ("keyed_aggregate", "window"):
                operators.append(self._keyed_operator(spec, vertex.max_parallelism))
                node = KeyedNode(name, len(operators) - 1, kind == "window")
            elif kind == "sink":
                operators.append(self._sink(spec, st))
                node = SinkNode(name, len(operators) - 1)
            else:  # pragma: no cover - validate() rejects unknown kinds
                raise FlinkspecError(f"operator '{name}': unknown kind {kind!r}")
            if kind != "source" and kind != "sink":
                node.link(nxt)
            nodes[name] = node
            return node

        head_name = vertex.operators[0]
        head = build(head_name)
        build = None  # noqa: F841 -- the recursive closure refers to itself: a reference cycle
        op_nodes = [nodes[n] for n in vertex.operators if ops[n].kind != "source"]
        input_channels = [c for gate in eg.input_gates[st.id] for c in gate.channels]
        output = TaskOutput(out_channels, [c for c in out_channels if not self.blocking[c]])
        edges = eg.job_graph.edges
        unsupported = frozenset(c for c in out_channels if barriers_forced_aligned(edges[eg.channels[c].job_edge]))
        plan = TaskPlan.build(self.net.blocking, head, op_nodes, output, input_channels, out_channels, unsupported)
        task = StreamTask(self.config, st, plan, operators, next_channel, None)
        if self.storage is not None:
            task.backend = make_backend(self.config, f"g{self.job.generation}a{self.job.attempt}s{st.id}")
        head_spec = ops[head_name]
        if head_spec.kind == "source":
            splits = self.job_input.splits.get(head_spec.name, ())
            ooo = head_spec.watermark_out_of_orderness
            mine = [[j, tuple(s), 0, BoundedOutOfOrdernessWatermarks(ooo)]
                    for j, s in enumerate(splits) if j % st.parallelism == st.subtask_index]
            task.source = SourceReader(head_spec.name, mine, ooo, self._source_output())
        else:
            task.valve = StatusWatermarkValve(len(input_channels))
            task.handler = self._barrier_handler(len(plan.barrier_channels))
        return task

    def _barrier_handler(self, n):
        cfg = self.config
        mode = cfg.barrier_mode
        if mode == "at_least_once":
            return CheckpointBarrierTracker(n, checkpoints_after_tasks_finish=cfg.checkpoints_after_tasks_finish)
        # with unaligned checkpoints enabled Flink always builds the *alternating* handler
        # (InputProcessorUtil.createCheckpointBarrierHandler): unaligned checkpoint barriers take
        # its timeout path at once, savepoints (always aligned) are aligned by it
        return SingleCheckpointBarrierHandler(
            n, "aligned" if mode == "aligned" else "alternating", timeout=cfg.aligned_checkpoint_timeout,
            checkpoints_after_tasks_finish=cfg.checkpoints_after_tasks_finish)

    def _keyed_operator(self, spec, max_parallelism):
        cache: dict = {}

        def key_group_of(key, _m=max_parallelism, _c=cache):
            kg = _c.get(key)
            if kg is None:
                kg = _c[key] = assign_to_key_group(key, _m)
            return kg

        if spec.kind == "keyed_aggregate":
            return KeyedAggregateOperator(spec.aggregate, key_group_of)
        if spec.window_slide is None or spec.window_slide == spec.window_size:
            assigner = TumblingEventTimeWindows(spec.window_size, spec.window_offset)
        else:
            assigner = SlidingEventTimeWindows(spec.window_size, spec.window_slide, spec.window_offset)
        return WindowOperator(assigner, spec.aggregate, spec.allowed_lateness, key_group_of)

    def _source_output(self) -> "WatermarkToDataOutput":
        """The output of a source subtask's reader (``SourceOperator``'s ``WatermarkToDataOutput``:
        once it marked itself idle the source emits nothing until it is active again)."""
        return WatermarkToDataOutput()

    def _sink(self, spec, st):
        """The sink writer of subtask ``st``. Its owner id (transaction owner and the subtask
        recorded with each committed record) is unique across rescalings."""
        owner = self.job.generation * 100_000 + st.id
        self.sink_owners[owner] = spec.name
        return sinks.make_sink(spec.sink_kind, self.external, owner, None)

    def _record_writer(self, st, part, next_channel: list):
        """The ``RecordWriterOutput`` of result partition ``part`` of ``st``, with its partitioner;
        a rebalancing one's first position is appended to ``next_channel`` (the task's state), at
        the slot the writer names."""
        chans = tuple(part.channels)
        n = len(chans)
        kind = part.partitioner
        if n == 1 or kind == "forward":
            return ForwardPartitioner(chans)
        if kind == "broadcast":
            return BroadcastPartitioner(chans)
        if kind == "hash":
            maxp = part.consumer_max_parallelism
            return KeyGroupStreamPartitioner(chans, lambda k, _m=maxp, _n=n: assign_key_to_parallel_operator(k, _m, _n))
        if kind == "rebalance":
            # RebalancePartitioner: a random start (seeded by the run), then round robin
            rng = random.Random(f"{self.seed}:{self.job.attempt}:{st.id}:{part.job_edge}")
            next_channel.append(rng.randrange(n))
        else:
            next_channel.append(-1)  # RescalePartitioner: round robin from 0
        return RebalancePartitioner(chans, len(next_channel) - 1)

    @property
    def delta(self) -> StepDelta:
        """What the last step changed (the initial deployment, before any step)."""
        d = self._delta
        return d if d.step == self.now - 1 else NO_CHANGE

    @property
    def new_completed(self) -> list:
        """The checkpoints the last step completed."""
        return self.delta.completed

    def _write_delta(self) -> StepDelta:
        """The current step's delta, for a mechanism to record a change in. Every write goes
        through here: a step that changes nothing of it costs nothing."""
        d = self._delta
        if d.step != self.now:
            d = self._delta = StepDelta(step=self.now)
        return d

    # -- the tasks' messages (model.messages), as the JobMaster receives them ---------------------
    def deliver_messages(self) -> None:
        """Deliver what the tasks sent (``outbox``), in the order they sent it; a message handled
        here may make a task send more, which is delivered after it."""
        box = self.outbox
        i = 0
        while i < len(box):
            m = box[i]
            i += 1
            t = type(m)
            if t is AcknowledgeCheckpoint:
                self._acknowledge(self.tasks[m.subtask], m.snapshot)
            elif t is DeclineCheckpoint:
                self.declines.append((m.subtask, m.checkpoint_id, self.job.attempt))
                self._effects(self.coordinator.receive_decline(m.checkpoint_id, m.subtask, m.reason))
            elif t is TaskFinished:
                self._task_finished(self.tasks[m.subtask])
            else:  # pragma: no cover - every message class is handled above
                raise TypeError(f"unknown task message {m!r}")
        box.clear()

    def _acknowledge(self, task: StreamTask, snap) -> None:
        cid = snap.checkpoint_id
        task.acked.add(cid)
        self._write_delta().acked.append((task.id, cid))
        if cid in self.coordinator.pending:
            self.acks.setdefault(cid, {})[task.id] = snap
            if self.storage is not None and self._finalize_fails(cid, task.id):
                return
        elif self.storage is not None:  # nobody waits for it: discardSubtaskState
            self.storage.discard_uploads((snap,), f"late acknowledgement of checkpoint {cid}")
        self._effects(self.coordinator.receive_acknowledge(cid, task.id, snap, now=self.now))

    def _effects(self, effects) -> None:
        """Apply the CheckpointCoordinator's effects."""
        job = self.job
        failed_finalization = None
        for e in effects or ():
            if isinstance(e, CheckpointCompleted):
                cid = e.checkpoint_id
                if self.cp is not None and not self._persist_completed(cid, e.subsumed_from_store):
                    failed_finalization = cid
                    continue
                self.completed_ids.append(cid)
                self.completed[cid] = self.acks.pop(cid, {})
                if self.storage is not None:
                    freed = self.storage.complete(cid, self.completed[cid], e.properties.is_savepoint,
                                                  e.subsumed_from_store, tuple(self.coordinator.store.checkpoint_ids()),
                                                  self.now)
                    if freed:
                        self.events.append(("shared_state_unused", self.now, cid, freed))
                self._write_delta().completed.append(cid)
                self.events.append(("completed", self.now, cid, e.properties.is_savepoint))
                if job.stopping == cid:
                    self._stop_after_savepoint(cid, drained=e.properties.kind == "stop_with_savepoint_drain")
            elif isinstance(e, CheckpointAborted):
                self.events.append(("aborted", self.now, e.checkpoint_id, e.reason, e.subtask))
                if self.storage is not None:
                    self._discard_acked(e.checkpoint_id)
                if job.stopping == e.checkpoint_id:
                    # stop-with-savepoint failed: the job keeps running (as in Flink)
                    job.stopping = None
                    self.events.append(("stop_with_savepoint_failed", self.now, e.checkpoint_id, e.reason))
            elif isinstance(e, FailJob):
                if self.job_failure is None:
                    self.job_failure = (e, job.attempt)
            elif isinstance(e, NotifyCheckpointAborted):
                tasks = self.tasks
                for tid in e.tasks:
                    t = tasks[tid]
                    if t.triggers and any(b.id == e.checkpoint_id for b in t.triggers):
                        # it would change nothing elsewhere: only a task still waiting for the
                        # checkpoint's trigger remembers it (abortedCheckpointIds)
                        t.notify_checkpoint_aborted(e.checkpoint_id)
            elif isinstance(e, NotifyCheckpointComplete):
                if e.checkpoint_id == failed_finalization:
                    continue
                sent = job.notifications
                tasks = self.tasks
                for tid in e.tasks:
                    if not tasks[tid].checkpoint_listener:
                        continue  # it would change nothing there: delivered at once
                    key = (tid, e.checkpoint_id)
                    sent[key] = sent.get(key, 0) + 1

    def _task_finished(self, task: StreamTask) -> None:
        """FLIP-147: a task that finished acknowledges, with its final state, the pending
        checkpoints whose barriers never reached it (its EndOfPartitions stand for them);
        one its handler already saw (aligned, aborted or skipped as obsolete) is not acked.
        A trigger still in flight to it dies: its acknowledgement stands for it."""
        task.triggers = ()
        h = task.handler
        for cid in self.coordinator.pending_ids():
            if h is not None and h.has_seen(cid):
                continue
            if cid not in task.acked and cid in self.coordinator.pending_ids():
                self._acknowledge_finished(task, cid)

    # -- state backends and checkpoint storage (only with RuntimeConfig.state_backend) ----------
    def _acknowledge_finished(self, task: StreamTask, cid: int) -> None:
        """A finished task acknowledges with its final state: both phases at once."""
        snap = self.context(task).take_snapshot(cid)
        if task.backend is not None:
            snap = task.backend.async_phase(cid, self.storage, self._is_savepoint(cid), task.keyed_operators)
        self._acknowledge(task, snap)

    def _finalize_fails(self, cid: int, tid: int) -> bool:
        """The acknowledgement of ``tid`` would complete checkpoint ``cid``, but registering its
        shared state fails (a placeholder the SharedStateRegistry does not know): the
        checkpoint fails instead (FINALIZE_CHECKPOINT_FAILURE)."""
        p = self.coordinator.pending[cid]
        if p.not_yet_acknowledged != {tid} or p.properties.is_savepoint:
            return False
        unknown = self.storage.unknown_placeholders(self.acks[cid].values())
        if not unknown:
            return False
        self.events.append(("finalize_failed", self.now, cid, unknown))
        for t_id, snap in self.acks[cid].items():
            if set(snap.state_handle.placeholders) & set(unknown):
                # Flink would fail every later checkpoint the same way until its
                # CheckpointFailureManager fails the job; here that backend's next snapshot is full
                self.tasks[t_id].backend.confirmed = None
        self._effects(self.coordinator.receive_decline(cid, tid, "FINALIZE_CHECKPOINT_FAILURE"))
        return True

    def _is_savepoint(self, cid: int) -> bool:
        p = self.coordinator.pending.get(cid)
        return p is not None and p.properties.is_savepoint

    def finish_async_snapshot(self, task: StreamTask, cid: int) -> None:
        """The asynchronous phase of ``task``'s snapshot ``cid`` (``AsyncCheckpointRunnable``):
        write the files, then acknowledge."""
        snap = task.backend.async_phase(cid, self.storage, self._is_savepoint(cid), task.keyed_operators)
        self.outbox.append(AcknowledgeCheckpoint(task.id, cid, snap))

    def fail_async_snapshot(self, task: StreamTask, cid: int) -> None:
        """The asynchronous phase of ``task``'s snapshot ``cid`` fails
        (``AsyncCheckpointRunnable.handleExecutionException``): nothing was uploaded, the task
        declines with CHECKPOINT_ASYNC_EXCEPTION and runs on."""
        self.job.failures += 1
        del task.backend.pending[cid]
        self.events.append(("snapshot_failed", self.now, task.id, cid))
        self.outbox.append(DeclineCheckpoint(task.id, cid, "CHECKPOINT_ASYNC_EXCEPTION"))

    def _fail_job_on_checkpoint_failures(self) -> None:
        """Run the CheckpointFailureManager's FailJob of this step: a global failover
        (``failGlobal``; for a task's decline ``failGlobalIfExecutionIsStillRunning``: only if
        the declining attempt still runs)."""
        (e, attempt), self.job_failure = self.job_failure, None
        if self.job.status != RUNNING:
            return
        if e.subtask is not None and (self.job.attempt != attempt or self.tasks[e.subtask].status != RUNNING):
            return
        self.events.append(("checkpoint_failures_exceeded", self.now, e.checkpoint_id, e.reason, e.subtask))
        self._failover(set(), frozenset(), everything=True)

    def _discard_acked(self, cid: int) -> None:
        """Checkpoint ``cid`` was aborted: discard what its acknowledged snapshots uploaded, and
        cancel the asynchronous phases that cannot acknowledge any more."""
        self.storage.discard_uploads(self.acks.pop(cid, {}).values(), f"aborted checkpoint {cid}")
        for t in self.tasks:
            entry = t.backend.pending.get(cid)
            if entry is not None and not entry[2]:
                del t.backend.pending[cid]

    def _restore_backend(self, task: StreamTask, snap, keep_base: bool) -> dict:
        """Restore ``task``'s keyed state backend from ``snap``'s state handle (the files)."""
        h = snap.state_handle
        keyed = task.backend.restore(h, self.storage, snap.keyed, keep_base)
        if h is not None:
            missing = self.storage.materialize(h)[1]
            same = flatten(keyed) == flatten(snap.keyed)
            self.storage.note_restore(self.now, (task.id, snap.checkpoint_id, same, missing))
        return keyed

    @staticmethod
    def _savepoint_handles(restored, snaps: dict, old_eg, new_eg):
        """With unchanged subtasks a savepoint restore keeps each task's state handle (native
        format); a rescaled one restores the values."""
        if [s.name for s in old_eg.subtasks] != [s.name for s in new_eg.subtasks]:
            return restored
        ts = {sid: attrs.evolve(s, state_handle=snaps[sid].state_handle) for sid, s in restored.task_states.items()}
        return attrs.evolve(restored, task_states=ts)

    def discard_file(self, path: str) -> None:
        self.storage.discard(path, self.now)
        self.events.append(("file_deleted", self.now, path))

    def release_restored_snapshot(self) -> None:
        paths = self.storage.release_restored(self.now)
        self.events.append(("snapshot_released", self.now, self.storage.restored[0], paths))

    # -- what the guards ask --------------------------------------------------------------------
    def _task_manager_of(self, subtask: int):
        """The TaskManager of ``subtask``'s slot under the current allocation, or None."""
        slot = self.allocation.slot_of_subtask[subtask]
        return None if slot is None else slot.task_manager

    def outputs_free(self, task: StreamTask) -> bool:
        """Back-pressure: a task starts on its next element only while every pipelined output
        channel has a free buffer (blocking partitions are written to disk, unbounded)."""
        cap = self.scope.channel_capacity
        if self.net.network:  # only the unsent buffers count (model.creditbasedflowcontrol)
            return not self.net.backpressured(task.plan.barrier_outputs, cap)
        queues = self.net.queues
        for c in task.plan.barrier_outputs:
            if len(queues[c]) >= cap:
                return False
        return True

    def failures_left(self) -> bool:
        return self.job.status == RUNNING and self.job.failures < self.environment.max_failures

    def task_manager_busy(self, i: int) -> bool:
        """Whether TaskManager ``i`` runs a task (cached per slot allocation)."""
        alloc = self.allocation
        busy = _TM_BUSY.get(id(alloc))
        if busy is None or busy[0] is not alloc:
            if len(_TM_BUSY) > 4096:
                _TM_BUSY.clear()
            busy = _TM_BUSY[id(alloc)] = (alloc, [bool(alloc.subtasks_on(tm.id)) for tm in self.task_managers])
        return busy[1][i]

    def final_checkpoint_needed(self) -> bool:
        """Every task finished, no checkpoint is pending, no completion notification is in
        flight (it would commit), and a two-phase-commit sink still holds output that only
        another checkpoint can commit."""
        return (not self.coordinator.num_pending and not self.job.notifications
                and all(t.status == FINISHED for t in self.tasks) and self._uncommitted_sink_data())

    def rescale_choices(self) -> list[tuple]:
        """The RestartFromSavepoint parallelisms offered: the current ones and, per operator in
        ``environment.rescale_options``, each listed parallelism."""
        sg = self.eg.stream_graph
        current = tuple((o.name, o.parallelism) for o in sg.operators)
        # a forward edge needs equal parallelisms: an operator rescales together with every
        # operator forward-connected to it (e.g. a keyed operator and its chained sink)
        forward: dict[str, list[str]] = {}
        for e in sg.edges:
            if e.partitioner == "forward":
                forward.setdefault(e.source, []).append(e.target)
                forward.setdefault(e.target, []).append(e.source)
        out = [current]
        for name, ps in self.environment.rescale_options:
            group, todo = {name}, [name]
            while todo:
                for n in forward.get(todo.pop(), ()):
                    if n not in group:
                        group.add(n)
                        todo.append(n)
            for p in ps:
                opt = tuple((n, p if n in group else q) for n, q in current)
                if opt not in out:
                    out.append(opt)
        return out

    # -- mechanisms the action kinds apply (their guards hold; Deliver and SourceEmit, the hot
    # path, are applied by their units directly) ---------------------------------------------------
    def context(self, task: StreamTask) -> TaskContext:
        """A call into ``task``, with the network and the outbox this cluster owns (made per
        call, kept by nobody)."""
        return TaskContext(task, self.net, self.outbox, self.external, self.late, self.window_skips)

    def source_watermark(self, t: StreamTask) -> None:
        src = t.source
        src.wm_output.emit_watermark(src.current_watermark(), self.context(t))

    def source_end(self, t: StreamTask) -> None:
        src = t.source
        ctx = self.context(t)
        src.wm_output.mark_active(ctx)
        src.wm_output.emit_watermark(LONG_MAX, ctx)
        src.ended = True
        ctx.finish()

    def trigger_checkpoint(self, savepoint: bool) -> None:
        self.job.checkpoints_triggered += 1
        res = self.coordinator.trigger_checkpoint(self.now, "savepoint" if savepoint else "checkpoint")
        self.trigger_results.append(res)
        self._effects(res.effects)
        if not res.ok:
            return  # declined (e.g. the minimum pause): the request fails, as in Flink
        cid = res.checkpoint_id
        if self.cp is not None:
            self.cp.checkpoint_id_taken(self, cid)
        unaligned = self.config.barrier_mode == "unaligned" and not savepoint
        barrier = CheckpointBarrier(cid, self.now, savepoint=savepoint, unaligned=unaligned)
        self.events.append(("triggered", self.now, cid, savepoint))
        if savepoint:
            self.events.append(("savepoint_triggered", self.now, cid))
        in_flight = self.environment.trigger_delivery == "any_order"
        for t in self.tasks:
            if t.status == FINISHED:
                self._acknowledge_finished(t, cid)
            elif t.status == RUNNING and not t.plan.barrier_channels:
                # sources, and tasks fed only by blocking partitions, are triggered directly
                # (Execution.triggerCheckpoint: an RPC to the task's TaskExecutor)
                if in_flight:
                    t.triggers = t.triggers + (barrier,)
                    continue
                self.context(t).trigger_checkpoint(barrier)
                self.deliver_messages()

    def deliver_checkpoint_trigger(self, subtask: int, checkpoint_id: int) -> str:
        """The trigger RPC of ``checkpoint_id`` in flight to ``subtask`` reaches it
        (``TaskContext.trigger_checkpoint``); returns what the task did with it."""
        t = self.tasks[subtask]
        barrier = next(b for b in t.triggers if b.id == checkpoint_id)
        t.triggers = tuple(b for b in t.triggers if b is not barrier)
        newest, notified = t.last_triggered, checkpoint_id in t.aborted_triggers
        verdict = self.context(t).trigger_checkpoint(barrier)
        self.events.append(("trigger_delivered", self.now, subtask, checkpoint_id, newest, notified, verdict))
        self.deliver_messages()
        return verdict

    def expire_checkpoint(self, checkpoint_id: int) -> None:
        if self.storage is not None:
            self._discard_acked(checkpoint_id)
        self.acks.pop(checkpoint_id, None)
        self._effects(self.coordinator.receive_decline(checkpoint_id, -1, "CHECKPOINT_EXPIRED", now=self.now))

    def notify_checkpoint_complete(self, subtask: int, checkpoint_id: int) -> None:
        sent = self.job.notifications
        key = (subtask, checkpoint_id)
        if sent[key] == 1:
            del sent[key]
        else:
            sent[key] -= 1
        task = self.tasks[subtask]
        ctx = self.context(task)
        for node in task.plan.nodes:
            node.notify_complete(ctx, checkpoint_id)
        if task.backend is not None:
            task.backend.notify_complete(checkpoint_id)

    def alignment_timeout(self, t: StreamTask) -> None:
        cid = t.timer[0]
        t.timer = None
        t.handler.on_alignment_timeout(self.context(t), cid)

    # -- failures and recovery ------------------------------------------------------------------
    def fail_task(self, subtask: int) -> None:
        self.job.failures += 1
        self.events.append(("task_failed", self.now, subtask))
        self._failover({subtask}, frozenset())

    def task_manager_loss(self, i: int) -> tuple[set, frozenset]:
        """What losing TaskManager ``i`` fails: ``(failed subtasks, unavailable channels)``. Its
        running subtasks fail; the blocking partitions it holds are gone, and running consumers
        that still read one fail with a PartitionNotFoundException."""
        lost = set(self.allocation.subtasks_on(self.task_managers[i].id))
        unavailable = frozenset(c for c in range(len(self.channels))
                                if self.blocking[c] and self.producer_of[c] in lost)
        failed = {t for t in lost if self.tasks[t].status == RUNNING}
        failed |= {self.consumer_of[c] for c in unavailable if self.tasks[self.consumer_of[c]].status == RUNNING}
        return failed, unavailable

    def lose_task_manager(self, i: int) -> None:
        tm_id = self.task_managers[i].id
        failed, unavailable = self.task_manager_loss(i)
        self.job.failures += 1
        self.events.append(("task_manager_lost", self.now, tm_id))
        if not failed:
            self.events.append(("task_manager_replaced", self.now, tm_id))
            return
        self._failover(failed, unavailable)

    def fail_job_manager(self) -> None:
        self.job.failures += 1
        self.events.append(("job_manager_failover", self.now))
        self._effects(self.coordinator.job_manager_failover())
        self.acks.clear()
        self.job.notifications.clear()
        self._restart(frozenset(range(len(self.tasks))), self.coordinator.restore_latest_checkpointed_state())

    # -- what the control plane asks of the data plane (model.controlplane) ------------------------
    def _persist_completed(self, cid: int, subsumed: tuple = ()) -> bool:
        """A completed checkpoint goes to the HA store; if the store rejects it (a deposed
        leader), finalization fails: the coordinator forgets it and nobody is notified, and the
        checkpoints its addition ``subsumed`` stay in the store
        (``DefaultCompletedCheckpointStore.addCheckpointAndSubsumeOldestOne`` writes the
        StateHandleStore before it subsumes: a failed add removes nothing)."""
        store = self.coordinator.store
        checkpoint = next((x for x in store.get_all_checkpoints() if x.checkpoint_id == cid), None)
        if checkpoint is None:  # a savepoint: not kept in the store
            checkpoint = CompletedCheckpoint(cid, self.now, task_states=dict(self.acks.get(cid, {})))
        if self.cp.checkpoint_completed(self, checkpoint):
            return True
        kept = [self.cp.storage[s] for s in subsumed if s in self.cp.storage]
        store._checkpoints = kept + [x for x in store.get_all_checkpoints() if x.checkpoint_id != cid]
        self.acks.pop(cid, None)
        self.events.append(("aborted", self.now, cid, "FINALIZE_CHECKPOINT_FAILURE", None))
        return False

    def job_manager_lost(self) -> None:
        """The JobMaster that ran the job is gone (crashed or revoked): its pending checkpoints
        and its in-flight completion notifications die with it; the tasks run on."""
        self._effects(self.coordinator.job_manager_failover())
        self.acks.clear()
        self.job.notifications.clear()

    def fail_on_control_plane(self, subtasks) -> None:
        """The JobMaster noticed that ``subtasks`` are gone (heartbeat timeout, deployment
        reconciliation): they fail, and the failover strategy decides what restarts. A
        finished producer's blocking partitions are gone with them."""
        lost = set(subtasks)
        unavailable = frozenset(c for c in range(len(self.channels))
                                if self.blocking[c] and self.producer_of[c] in lost
                                and self.tasks[self.producer_of[c]].status != FINISHED)
        failed = {t for t in lost if self.tasks[t].status != FINISHED}
        failed |= {self.consumer_of[c] for c in unavailable if self.tasks[self.consumer_of[c]].status != FINISHED}
        if failed and self.job.status == RUNNING:
            self._failover(failed, unavailable)

    def restart_job_from(self, checkpoint, next_checkpoint_id: int, fresh: bool) -> None:
        """A new leader's JobMaster starts the job: a fresh CheckpointCoordinator that knows
        ``checkpoint`` (the one it recovered) and takes ids from ``next_checkpoint_id``, then
        every subtask restarts from ``checkpoint`` (``fresh``: the first start; the initial
        deployment stands)."""
        self._effects(self.coordinator.job_manager_failover())
        self.acks.clear()
        self.job.notifications.clear()
        self.coordinator = self._new_coordinator(self.eg)
        if checkpoint is not None:
            self.coordinator.store.add_checkpoint_and_subsume_oldest_one(checkpoint)
        self.coordinator.next_checkpoint_id = next_checkpoint_id
        if fresh:
            self.cp.restarted(self, frozenset())
            return
        self.events.append(("job_manager_failover", self.now))
        self._restart(frozenset(range(len(self.tasks))), checkpoint)

    def _failover(self, failed: set, unavailable: frozenset, everything: bool = False) -> None:
        """Restart what the failover strategy says for ``failed`` (``everything``: a global
        failover, ``SchedulerBase.handleGlobalFailure``: every task restarts)."""
        job = self.job
        self.history.failovers += 1
        cfg = self.config
        if cfg.restart_strategy == "fixed-delay" and cfg.restart_attempts is not None:
            job.current_restart_attempt += 1  # (unbounded, the count changes nothing: left out)
        if not self._can_restart():
            job.status = "FAILED"
            self.events.append(("job_failed", self.now, self.history.failovers - 1))
            for t in self.tasks:
                if t.status == RUNNING:
                    t.status = "CANCELED"
            return
        restart = frozenset(range(len(self.tasks))) if everything \
            else self.strategy.tasks_to_restart(failed, unavailable)
        during_alignment = any(self.blocked) or any(t.persisting for t in self.tasks)
        self._write_delta().failover = (frozenset(failed), frozenset(unavailable), frozenset(restart))
        self.events.append(("failover", self.now, tuple(sorted(failed)), tuple(sorted(unavailable)),
                            tuple(sorted(restart)), during_alignment))
        self._effects(self.coordinator.abort_pending("JOB_FAILOVER_REGION", now=self.now))
        self.acks.clear()
        self._restart(restart, self.coordinator.restore_latest_checkpointed_state())

    def _can_restart(self) -> bool:
        """The RestartBackoffTimeStrategy after ``notifyFailure`` (the failure is counted):
        FixedDelayRestartBackoffTimeStrategy (``currentRestartAttempt <= maxAttempts``),
        FailureRateRestartBackoffTimeStrategy (a full queue of the last N failure times whose
        oldest lies more than the interval back) or NoRestartBackoffTimeStrategy."""
        cfg = self.config
        if cfg.restart_strategy == "none":
            return False
        if cfg.restart_strategy == "fixed-delay":
            return cfg.restart_attempts is None or self.job.current_restart_attempt <= cfg.restart_attempts
        q = self.job.failure_times
        if len(q) >= cfg.failure_rate_max_failures:
            q.pop(0)
        q.append(self.now)
        if len(q) >= cfg.failure_rate_max_failures:
            return self.now - q[0] > cfg.failure_rate_interval
        return True

    def _restart(self, restart: frozenset, checkpoint) -> None:
        """Cancel and redeploy the subtasks in ``restart`` and restore them from ``checkpoint``."""
        job = self.job
        job.attempt += 1
        self._write_delta().redeployed = True
        self.restored_from.append((self.now, None if checkpoint is None else checkpoint.checkpoint_id,
                                   tuple(sorted(restart))))
        self.events.append(("restored", self.now, None if checkpoint is None else checkpoint.checkpoint_id,
                            tuple(sorted(restart))))
        for key in [k for k in job.notifications if k[0] in restart]:
            del job.notifications[key]
        if self.storage is not None and any(self.tasks[t].backend.pending for t in restart):
            self.events.append(("failure_between_snapshot_phases", self.now))
        if job.stopping is not None and job.stopping not in self.coordinator.pending:
            job.stopping = None  # the stop-with-savepoint was aborted by the failover
        for c in range(len(self.channels)):
            if self.consumer_of[c] in restart or self.producer_of[c] in restart:
                if self.blocking[c] and self.producer_of[c] not in restart:
                    continue  # the partition survives; the restarted consumer re-reads it
                self.net.reset(c)
        for tid in restart:
            self.tasks[tid].status = "CANCELED"
        eg = self.eg
        for tid in sorted(restart):
            self.tasks[tid] = self._deploy(eg.subtasks[tid])
        allocation = slotsharing.allocate(eg, self.task_managers, previous=self.allocation)
        if allocation != self.allocation:  # (an unchanged placement was judged when it was made)
            self.allocation = allocation
            self._write_delta().allocation_changed = True
            if self.net.network:
                self.net.place(self._task_manager_of)
        self._restore_tasks(set(restart), checkpoint)
        if self.cp is not None:
            self.cp.restarted(self, restart)

    def _restore_tasks(self, restart: set, checkpoint, keep_base: bool = True) -> None:
        """Restore state of the freshly deployed subtasks in ``restart``: keyed state, source
        offsets, sink transactions, channel state (input part, then output part) and the
        channel bookkeeping; blocking partitions are re-read from the restored position."""
        states = {} if checkpoint is None else dict(checkpoint.task_states)
        for tid in sorted(restart):
            task = self.tasks[tid]
            snap = states.get(tid)
            if snap is None:
                continue
            self._restore_task(task, snap, keep_base)
        for c in range(len(self.channels)):
            cons, prod = self.consumer_of[c], self.producer_of[c]
            psnap = states.get(prod)
            if self.blocking[c] and prod in restart and psnap is not None:
                # the restored producer's partition is complete again up to its snapshot
                self.channels[c].extend(psnap.partition.get(c, ()))
            if cons not in restart:
                continue  # (only with the unsafe seam skip-consumer-regions: it reads on at read_pos)
            csnap = states.get(cons)
            received = csnap.received.get(c, 0) if csnap is not None else 0
            self.received[c] = received
            ch = self.channels[c]
            if self.blocking[c]:
                # re-read the partition from just after the records the consumer's state reflects
                pos = 0
                seen = 0
                while seen < received and pos < len(ch):
                    if type(ch[pos]) is tuple:
                        seen += 1
                    pos += 1
                self.read_pos[c] = pos
                continue
            if csnap is not None:
                ch.extend(csnap.input_channel_state.get(c, ()))
            if psnap is not None and prod in restart:
                ch.extend(psnap.output_channel_state.get(c, ()))

    def _restore_task(self, task: StreamTask, snap, keep_base: bool = True) -> None:
        src = task.source
        if src is not None and src.name in snap.operator:
            # the subtask reads exactly the splits of its restored split state
            records = self.job_input.splits.get(src.name, ())
            src.assign([[sid, tuple(records[sid]), off, BoundedOutOfOrdernessWatermarks(src.out_of_orderness)]
                        for (sid, off) in snap.operator[src.name]])
            if snap.finished and src.has_next():
                # a snapshot taken after a drain ended the source's input early: the subtask is
                # finished on restore (FLIP-147, TaskStateSnapshot.isTaskDeployedAsFinished) and
                # only ends its input again (SourceEnd); one that had read everything ends at once
                # anyway, from the end of its splits
                src.ended = True
        keyed = snap.keyed
        if task.backend is not None:
            keyed = self._restore_backend(task, snap, keep_base)
        for name, op in task.keyed_operators.items():
            op.restore_state(keyed.get(name, {}))
        for name, sink in task.sink_writers.items():
            state = snap.operator.get(name)
            if state is not None:
                sink.initialize_state(self.external, state)

    # -- savepoints and rescaling --------------------------------------------------------------
    @seams.within
    def stop_with_savepoint(self, drain: bool = False) -> None:
        """The operator's stop-with-savepoint: a synchronous savepoint (``SavepointType``
        SUSPEND), whose completion stops the job. With ``drain`` (``flink stop --drain``,
        SavepointType TERMINATE) every running source first ends its input
        (:meth:`end_input_for_drain`), so that every window fires and every record read reaches
        the sinks before the savepoint; its completion ends the job FINISHED."""
        job = self.job
        job.checkpoints_triggered += 1
        res = self.coordinator.trigger_checkpoint(self.now, "stop_with_savepoint_drain" if drain else "stop_with_savepoint")
        self._effects(res.effects)
        if not res.ok:
            self.events.append(("savepoint_declined", self.now, res.reason))
            return
        cid = res.checkpoint_id
        job.stopping = cid
        self.events.append(("triggered", self.now, cid, True))
        self.events.append(("stop_with_savepoint", self.now, cid))
        if drain:
            self.events.append(("drain", self.now, cid))
            for t in self.source_tasks:
                if t.status == RUNNING and not t.source.ended:
                    self.end_input_for_drain(t)
            self.deliver_messages()
        barrier = CheckpointBarrier(cid, self.now, savepoint=True, unaligned=False)
        for t in self.tasks:
            if t.status == FINISHED:
                self._acknowledge_finished(t, cid)
            elif t.status == RUNNING and not t.plan.barrier_channels:
                self.context(t).trigger(barrier, False)
                self.deliver_messages()
                if job.stopping is None:
                    return

    def end_input_for_drain(self, t: StreamTask) -> None:
        """Stop-with-savepoint ``--drain`` at a source subtask (``SourceOperator.stop(DRAIN)``,
        then ``StreamTask.endData(DRAIN)``): the source reads no more and ends its input as a
        bounded source does at its end -- MAX_WATERMARK (``advanceToEndOfEventTime``), so that
        every window downstream fires, then the end of its partitions. The model ends the
        partitions at once; Flink sends EndOfData first and EndOfPartition once the savepoint
        completed (a drained savepoint is not restored here, so the difference is not seen)."""
        self.source_end(t)

    def _stop_after_savepoint(self, cid: int, drained: bool = False) -> None:
        """The synchronous savepoint completed: commit (notifyCheckpointComplete reaches every
        task before it stops), then the job is STOPPED -- or, after ``--drain``, FINISHED
        (globally terminal: not restarted from its savepoint here)."""
        job = self.job
        job.stopping = None
        job.savepoint = cid
        job.savepoint_snapshots = self.completed.get(cid)
        for (tid, ncid) in list(job.notifications):  # each in-flight notification once
            if ncid <= cid:
                task = self.tasks[tid]
                ctx = self.context(task)
                for node in task.plan.nodes:
                    node.notify_complete(ctx, ncid)
        job.notifications.clear()
        for t in self.tasks:
            for sink in t.sink_writers.values():
                sink.close(self.external)
            if t.status == RUNNING:
                t.status = "STOPPED"
        for ch in self.channels:
            ch.clear()
        job.status = "FINISHED" if drained else "STOPPED"
        self.events.append(("stopped", self.now, cid))

    @seams.within
    def restart_from_savepoint(self, parallelism: tuple) -> None:
        job = self.job
        old_eg = self.eg
        snaps = job.savepoint_snapshots
        new_eg = _rescaled_eg(old_eg.stream_graph, tuple(parallelism))
        restored = rescale_states(old_eg, new_eg, snaps, job.savepoint)
        sp = job.savepoint
        job.notifications.clear()
        self.acks.clear()
        # a new job: a fresh CheckpointCoordinator whose store starts with the (rescaled)
        # savepoint (CheckpointCoordinator.restoreSavepoint, NO_CLAIM)
        self.coordinator = self._new_coordinator(new_eg)
        self.coordinator.restore_savepoint(CompletedCheckpoint(sp, self.now, task_states=dict(restored.task_states)),
                                           claim_mode=self.config.restore_mode)
        job.status = RUNNING
        job.attempt += 1
        job.generation += 1
        job.savepoint = None
        job.savepoint_snapshots = None
        self._write_delta().redeployed = True
        self.events.append(("rescaled", self.now, sp, tuple(parallelism)))
        self.restored_from.append((self.now, sp, ("rescale",) + tuple(parallelism)))
        keep_base = True
        if self.storage is not None:
            restored = self._savepoint_handles(restored, snaps, old_eg, new_eg)
            self.storage.restore_from(sp, self.config.restore_mode, shared=self.config.state_backend == "rocksdb",
                                      step=self.now)
            self.events.append(("restored_with_claim_mode", self.now, sp, self.config.restore_mode))
            keep_base = restored_files_are_the_base(self.config.restore_mode)
        self._install(new_eg, restored, keep_base)

    def checkpoint_rescale_refusal(self, parallelism: tuple) -> str | None:
        """Why RescaleFromCheckpoint(parallelism) cannot run (None: it can): no completed
        checkpoint to restore, or one Flink would refuse to rescale (in-flight data on a
        rescaled pointwise edge, ``channel_rescale_refusal``)."""
        cp = self.coordinator.store.get_latest_checkpoint()
        if cp is None:
            return "no completed checkpoint to restore"
        return channel_rescale_refusal(self.eg, _rescaled_eg(self.eg.stream_graph, parallelism), cp.task_states)

    @seams.within
    def rescale_from_checkpoint(self, parallelism: tuple) -> None:
        """Cancel the job and resubmit it from its latest completed checkpoint with new
        parallelisms (``flink run -s <checkpoint>``): keyed and operator state as from a
        savepoint (``rescale_states``), in-flight data of an unaligned checkpoint reassigned by
        ``rescale_channel_states`` and restored ahead of new data into the new input channels."""
        job = self.job
        old_eg = self.eg
        cp = self.coordinator.store.get_latest_checkpoint()
        cid = cp.checkpoint_id
        snaps = cp.task_states
        new_eg = _rescaled_eg(old_eg.stream_graph, parallelism)
        restored = rescale_states(old_eg, new_eg, snaps, cid)
        placed, report = rescale_channel_states(old_eg, new_eg, snaps)
        for c, recs in placed.items():
            restored.task_states[new_eg.channels[c].consumer].input_channel_state[c] = tuple(recs)
        for t in self.tasks:
            if t.status == RUNNING:
                t.status = "CANCELED"
        job.notifications.clear()
        job.stopping = None
        self.acks.clear()
        self.coordinator = self._new_coordinator(new_eg)
        self.coordinator.restore_savepoint(CompletedCheckpoint(cid, self.now, task_states=dict(restored.task_states)))
        job.attempt += 1
        job.generation += 1
        job.checkpoint_rescales += 1
        self._write_delta().redeployed = True
        inflight = sum(len(r.before) for r in report)
        old_p = dict((o.name, o.parallelism) for o in old_eg.stream_graph.operators)
        direction = "up" if any(p > old_p[n] for n, p in parallelism) else (
            "down" if any(p < old_p[n] for n, p in parallelism) else "same")
        self.channel_rescales.append((self.now, cid, report))
        self.events.append(("rescaled_from_checkpoint", self.now, cid, tuple(parallelism), inflight, direction))
        self.restored_from.append((self.now, cid, ("rescale",) + tuple(parallelism)))
        self._install(new_eg, restored)

    def restart_from_retained_checkpoint(self, checkpoint_id: int) -> None:
        """The user cancels the running job and submits it again, with the same parallelisms,
        from its retained checkpoint ``checkpoint_id`` (``execution.state-recovery.path``; a
        cancelled job's checkpoints stay with
        ``execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION``)
        in ``RuntimeConfig.restore_mode`` (``execution.state-recovery.claim-mode``).

        The new job has a new JobMaster: a fresh CheckpointCoordinator whose store starts with
        the restored checkpoint and whose id counter goes on after it, and a fresh
        SharedStateRegistry (``CheckpointCoordinator.restoreSavepoint``). CLAIM gives the
        checkpoint the job's own checkpoint properties: it is retained, subsumed and discarded
        like the new job's checkpoints. NO_CLAIM loads it as an unclaimed snapshot
        (``CheckpointProperties.forUnclaimedSnapshot``) that the new job never discards, and
        its first checkpoint is full (``forceFullSnapshot``: ``CheckpointType.FULL_CHECKPOINT``
        until a checkpoint completes). The cancelled job's other retained checkpoints stay in
        storage, nobody's to discard."""
        job = self.job
        if job.status != RUNNING or job.stopping is not None:
            raise FlinkspecError(f"restart_from_retained_checkpoint: the job is {job.status}, not running")
        cp = next((c for c in self.coordinator.store.get_all_checkpoints() if c.checkpoint_id == checkpoint_id), None)
        if cp is None:
            raise FlinkspecError(f"restart_from_retained_checkpoint: checkpoint {checkpoint_id} is not retained "
                                 f"(retained: {list(self.coordinator.store.checkpoint_ids())})")
        mode = self.config.restore_mode
        for t in self.tasks:
            if t.status == RUNNING:
                t.status = "CANCELED"
        job.notifications.clear()
        self.acks.clear()
        self.coordinator = self._new_coordinator(self.eg)
        restored = self.coordinator.restore_savepoint(
            CompletedCheckpoint(checkpoint_id, self.now, task_states=dict(cp.task_states)), claim_mode=mode)
        job.attempt += 1
        job.generation += 1
        self._write_delta().redeployed = True
        self.events.append(("resubmitted_from_checkpoint", self.now, checkpoint_id, mode))
        self.restored_from.append((self.now, checkpoint_id, ("resubmit", mode)))
        keep_base = True
        if self.storage is not None:
            self.storage.new_job()
            self.storage.restore_from(checkpoint_id, mode, shared=False, step=self.now)
            self.events.append(("restored_with_claim_mode", self.now, checkpoint_id, mode))
            keep_base = restored_files_are_the_base(mode)
        self._install(self.eg, restored, keep_base)

    # -- whole runs -------------------------------------------------------------------------
    def is_drained(self) -> bool:
        """Every task finished, nothing in flight, and every sink's output committed (in a
        deployment mode: the deployment's end, ``ClusterEntrypoint.finished``)."""
        if self.deployment is not None:
            return self.deployment.finished()
        if any(t.status != FINISHED for t in self.tasks):
            return False
        if self.job.notifications or self.coordinator.num_pending or self.net.in_flight():
            return False
        if self.storage is not None and (self.storage.busy or any(t.backend.pending for t in self.tasks)
                                         or self.job.status == "STOPPED"):
            # with asynchronous phases every task may finish before a stop-with-savepoint
            # completes: the stopped job is not the end, its restart from the savepoint is
            return False
        if self._uncommitted_sink_data():
            return False
        return self.cp is None or (self.cp.finished() and self.cp.settled())

    def data_plane_drained(self) -> bool:
        """The data plane's part of :meth:`is_drained` (every task finished, nothing in flight,
        everything committed)."""
        if any(t.status != FINISHED for t in self.tasks):
            return False
        if self.job.notifications or self.coordinator.num_pending or self.net.in_flight():
            return False
        return not self._uncommitted_sink_data()

    def _uncommitted_sink_data(self) -> bool:
        """A live two-phase-commit sink still holds written records that are not committed
        (transactions of failed attempts that nobody will commit are not counted: the external
        system times them out)."""
        for t in self.tasks:
            for sink in t.sink_writers.values():
                if getattr(sink, "pending_commit", None):
                    return True
                cur = getattr(sink, "current", None)
                if cur is not None and self.external.transactions[cur].records:
                    return True
        return False


_RESCALED_EG: dict = {}
_STRATEGIES: dict = {}


class _IdleSourceReadingOn(WatermarkToDataOutput):
    """Known unsafe (the seam ``idle-source-keeps-emitting``): ``markIdle`` sends IDLE
    downstream but the source does not consider itself idle: it reads on, and sends ACTIVE
    only before its next watermark (``told_idle``: IDLE was sent and ACTIVE not yet)."""

    __slots__ = ("told_idle",)

    def __init__(self):
        super().__init__()
        self.told_idle = False

    def mark_idle(self, output) -> None:
        if not self.told_idle:
            output.emit_watermark_status(True)
            self.told_idle = True

    def mark_active(self, output) -> None:
        if self.told_idle:
            output.emit_watermark_status(False)
            self.told_idle = False

    def emit_watermark(self, ts: int, output) -> bool:
        if ts > self.max_watermark_so_far:
            self.mark_active(output)
        return super().emit_watermark(ts, output)


#: ``Cluster.task_manager_busy``'s cache: id of a slot allocation -> (the allocation, busy per
#: TaskManager); the allocation is kept so that its id is not reused while the entry exists
_TM_BUSY: dict = {}


def _failover_strategy(eg, config: RuntimeConfig, seams: tuple):
    """The configured FailoverStrategy of ``eg`` (cached: it is static -- a copy of a state
    shares it -- and computing the pipelined regions on every redeployment of a rescaled
    job would be repeated work, and leave a graph with reference cycles behind)."""
    key = (eg, config.failover_strategy, seams)  # (a seam may change what is built)
    strategy = _STRATEGIES.get(key)
    if strategy is None:
        if len(_STRATEGIES) > 64:
            _STRATEGIES.clear()
        strategy = _STRATEGIES[key] = failover_strategy(eg, config.failover_strategy)
    return strategy


def _rescaled_eg(stream_graph, parallelism: tuple):
    """The ExecutionGraph of ``stream_graph`` with ``parallelism`` (cached: the
    RescaleFromCheckpoint guard asks for it on every step it is offered, and a rescale that
    compiled its own would leave a graph with reference cycles behind each state it drops)."""
    key = (stream_graph, parallelism)
    eg = _RESCALED_EG.get(key)
    if eg is None:
        if len(_RESCALED_EG) > 64:
            _RESCALED_EG.clear()
        eg = _RESCALED_EG[key] = compile_stream_graph(rescale_graph(stream_graph, dict(parallelism)))
    return eg


#: action class -> (its kind's guard, its apply), bound once (``step`` is the hot path)
_GUARD_AND_APPLY = {t: (u.guard, u.apply) for t, u in A.KINDS.items()}


def enabled_actions(cluster: Cluster) -> list:
    return cluster.enabled_actions()


def step(cluster: Cluster, action) -> Cluster:
    cluster.step(action)
    return cluster


class RunStuck(FlinkspecError):
    """No enabled action drains the run although it is not at its end (a liveness failure of
    the model or of a variant: ``spec.exactly_once.run_drains`` turns it into a violation)."""


def drain_choice(cluster: Cluster):
    """The one drain policy, as a single choice: the first enabled action of the kinds with a
    drain priority (``model.actions.DRAIN_ORDER``: finish the data, commit, then a final
    checkpoint, then expire what can no longer complete, then restart a stopped job at its
    parallelism) that the kind lets the drain take. None when the run is drained, or when it
    cannot drain further (a stop-with-savepoint in progress, or every task finished with data
    left for a consumer that already finished). Raises :class:`RunStuck` when the run is stuck."""
    if cluster.is_drained():
        return None
    for unit in A.DRAIN_ORDER:
        if cluster.deployment is not None and not unit.deployment:
            continue  # (a deployment mode runs no data plane)
        for a in unit.enabled(cluster):
            if unit.drains(cluster, a):
                return a
    if cluster.deployment is None and (cluster.job.stopping is not None
                                       or all(t.status == FINISHED for t in cluster.tasks)):
        return None
    why = cluster.net.stall() if cluster.net.network else None  # a network connection not read
    raise RunStuck(f"the run is stuck after {cluster.now} steps: no action drains it further"
                   + (f" ({why})" if why else ""))


def drain(cluster: Cluster, max_steps: int = 1_000_000) -> None:
    """Run ``cluster`` to the end with the drain policy (no failures). Raises FlinkspecError if
    the run does not drain within ``max_steps`` or cannot drain."""
    for _ in range(max_steps):
        act = drain_choice(cluster)
        if act is None:
            if cluster.is_drained():
                return
            raise FlinkspecError(f"the run cannot drain after {cluster.now} steps (status {cluster.job.status})")
        cluster.step(act)
    raise FlinkspecError(f"the run did not drain within {max_steps} steps")


@seams.override("drain-without-max-watermark", Cluster, "end_input_for_drain",
                "stop-with-savepoint --drain stops the sources and ends their partitions without MAX_WATERMARK: "
                "no window downstream fires before the savepoint, whose completion finishes the job")
def _end_input_without_max_watermark(self, t: StreamTask) -> None:
    t.source.ended = True
    self.context(t).finish()


@seams.override("idle-source-keeps-emitting", Cluster, "_source_output",
                "a source that marked itself idle sends IDLE downstream but reads on: its records follow the IDLE "
                "status, and it sends ACTIVE only before its next watermark")
def _source_output_reading_on(self) -> _IdleSourceReadingOn:
    return _IdleSourceReadingOn()
