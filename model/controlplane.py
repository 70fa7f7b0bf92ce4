"""The FLIP-6 control plane: JobManager processes (Dispatcher, ResourceManager, JobMaster)
under leader election, TaskExecutors, the RPC network and the HA store, wired to the data
plane of the same ``Cluster``.

Invariant upheld: only the leader of the current leader session changes what survives a
failover -- with fencing, an HA write is accepted only from the process whose latch node
leads, and a TaskExecutor accepts a JobMaster's ``submitTask`` / slot answers only from the
job leader it knows -- and a new leader restores the job from the HA store: the job graph,
the checkpoint ID counter and the latest completed checkpoint; a job with a result in the
JobResultStore is never run again.

State (:class:`ControlPlane`, ``Cluster.cp``; None while ``ModelScope.control_plane`` is
off, so a data-plane scenario has no control-plane state or actions):

* ``store``: the :class:`model.highavailability.ZooKeeperStore` (leader latch, leader
  information, JobGraphStore, completed-checkpoint pointers, checkpoint ID counter,
  JobResultStore); ``storage``: the checkpoints' metadata on durable storage (a pointer
  names one);
* ``jms``: the JobManager processes (:class:`JobManagerProcess`): alive or crashed, their ZK
  session and latch node, the leader session they *believe* they hold, their
  ResourceManager (``model.resourcemanager``) and JobMaster (``model.jobmaster``), and their
  in-memory checkpoint knowledge (what the unsafe variants use instead of the store);
* ``tes``: the TaskExecutors (``model.taskexecutor``); ``net``: RPCs in flight
  (``model.rpc``); ``running``: the process whose JobMaster drives the data plane;
  ``quiet``: heartbeat ticks since the last fault (saturating), for "heartbeats have settled".

How the planes meet: a data-plane subtask runs (``RUNNING``) only once a TaskExecutor
accepted the ``submitTask`` of its current execution attempt; a TaskExecutor that dies or
frees a slot kills what runs there (the subtask is ``CANCELED``) and the JobMaster notices
only by heartbeat timeout or deployment reconciliation, then the data plane's failover
(region or restart-all) runs and the restarted subtasks wait for slots again. A checkpoint
is triggered only by a leading, living JobMaster while every subtask runs or finished; a
completed checkpoint is written to the store as a pointer (a rejected write fails its
finalization: ``FINALIZE_CHECKPOINT_FAILURE``, no commit); each checkpoint id is taken from
the ``ZooKeeperCheckpointIDCounter``. A new leader's JobMaster restarts the whole job from
the store's latest checkpoint with a fresh CheckpointCoordinator.

Simplifications (docs/control-plane.md): a crashed JobManager process is started again only
after ZooKeeper expired its old session; one leader election per JobManager process (its
Dispatcher, ResourceManager and JobMaster share the leader session; one token serves as
ResourceManagerId and JobMasterId); one job; slots are equal (no resource profiles);
TaskExecutors are restarted by the environment (``StartTaskExecutor``) rather than
requested from Kubernetes/YARN; the JobResultStore is a node of the same store; HA writes
are fenced by a check that the writer's latch node leads (a ZooKeeper multi-op with a
check), counter increments by versioned compare-and-set only. With
``Environment.dead_letters = "at_once"`` an RPC to a ResourceManager or JobMaster of a
leader session gone for ever is dropped after the step that ended the session instead of
when delivered (its delivery would change nothing; ``discard_dead_letters``).
"""

from __future__ import annotations

from model import highavailability as ha
from model import rpc, seams
from model.rpc import checks_fencing_tokens
from model.failover import channel_is_blocking, pipelined_regions
from model.events import value
from model.fingerprint import beside_state
from model.jobmaster import JobMaster
from model.resourcemanager import PENDING, ResourceManager
from model.slotsharing import compute_execution_slot_sharing_groups
from model.taskexecutor import TaskExecutor


class JobManagerProcess:
    """One JobManager process ``index`` (see the module docstring)."""

    __slots__ = ("index", "alive", "session", "latch", "token", "rm", "jobmaster", "memory", "counter")

    def __init__(self, index: int):
        self.index = index
        self.alive = True
        self.session: int | None = None
        self.latch: str | None = None
        #: the leader session it believes it holds (None: not leader, as far as it knows)
        self.token: int | None = None
        self.rm: ResourceManager | None = None
        self.jobmaster: JobMaster | None = None
        #: in-memory knowledge (lost with the process): the latest checkpoint it completed
        #: and its StandaloneCheckpointIDCounter
        self.memory = None
        self.counter = 1


class Dispatcher:
    """The Dispatcher's part of a failover: it recovers the job from the JobGraphStore unless
    the JobResultStore holds its result, and it writes the result once the job reached a
    globally terminal state (FLIP-194), before the job graph is cleaned up."""

    def write_job_result(self, cp, c, p, status: str) -> None:
        cp.ha_write(c, p, ha.JOB_RESULT, status)

    def recoverable(self, cp) -> bool:
        return cp.store.exists(ha.JOB_GRAPH) and not cp.store.exists(ha.JOB_RESULT)


@seams.override("FLINK-11813", Dispatcher, "write_job_result",
                "no JobResultStore: a job that finished is not recorded, so a JobManager failover before the "
                "job graph is cleaned up recovers and runs the finished job again")
def _write_job_result_flink_11813(self, cp, c, p, status: str) -> None:
    return None


@seams.override("FLINK-17075", JobMaster, "reconcile",
                "no deployment reconciliation: the JobMaster ignores the TaskExecutor's ExecutionDeploymentReport, "
                "so an execution whose deployment was lost (or that was never cancelled) stays unnoticed")
def _reconcile_flink_17075(self, m, timeout) -> tuple:
    return set(), set()


@seams.override("FLINK-18533", JobMaster, "reconcile",
                "pending deployments are not tolerated: an execution submitted to a TaskExecutor whose next "
                "ExecutionDeploymentReport does not show it yet (the submission is still in flight) is failed as "
                "missing at once")
def _reconcile_flink_18533(self, m, timeout) -> tuple:
    expected = set()
    for alloc, v in self.pool.items():
        if v[0] == m.te:
            expected.update(self.deployed.get(alloc, ()))
    reported = set(m.payload[0])
    return reported - expected, {e[0] for e in expected - reported}


@value  # never changed after the deployment: a copy shares it
@beside_state
class ControlPlaneSetup:
    """What the scenario fixes for the control plane (the ExecutionGraph, the configuration and
    the environment, which a fingerprint hashes apart): ``groups`` the slot sharing groups'
    subtasks, ``region_inputs`` per subtask the producers of the blocking partitions its
    pipelined region consumes, ``timeout`` / ``idle_timeout`` the heartbeat and slot idle
    timeouts, ``dead_letters_at_once`` the environment's dead-letter choice, ``dispatcher``.
    Never changed after the deployment: beside the state, shared by every copy."""

    __slots__ = ("groups", "region_inputs", "timeout", "idle_timeout", "dead_letters_at_once", "dispatcher")

    def __init__(self, c):
        cfg = c.config
        self.groups = tuple(g.subtasks for g in compute_execution_slot_sharing_groups(c.eg))
        self.region_inputs = region_inputs(c.eg)
        self.timeout = cfg.heartbeat_timeout
        self.idle_timeout = cfg.slot_idle_timeout
        self.dead_letters_at_once = c.environment.dead_letters == "at_once"
        self.dispatcher = Dispatcher()


@beside_state
class IdCounters:
    """The counters the control plane draws fresh identifiers from (AllocationID,
    ExecutionAttemptID, RPC sequence numbers), and ``signature``, what heartbeats reconcile as
    of the end of the last step (``ControlPlane._signature``). Beside the state: a new
    identifier is above every live one whatever a counter says, and identifiers count by
    their rank among the live ones (``model.fingerprint.fresh_id``); the signature is a
    function of the state."""

    __slots__ = ("next_allocation", "next_attempt", "next_sequence", "signature")

    def __init__(self):
        self.next_allocation = 1
        self.next_attempt = 1
        self.next_sequence = 1
        self.signature = None


def _part(part: str, name: str, writable: bool = False) -> property:
    """``ControlPlane.<name>``: the field ``name`` of its ``part`` (``setup`` or ``ids``)."""
    get = (lambda self: getattr(getattr(self, part), name))
    return property(get, (lambda self, v: setattr(getattr(self, part), name, v)) if writable else None)


class ControlPlane:
    """The control plane's state and mechanisms (see the module docstring). What the scenario
    fixes is its ``setup`` (:class:`ControlPlaneSetup`), the identifier counters its ``ids``
    (:class:`IdCounters`): both beside the state."""

    __slots__ = ("store", "net", "jms", "tes", "running", "quiet", "storage", "started", "max_checkpoint_id",
                 "terminal", "setup", "ids")
    groups = _part("setup", "groups")
    region_inputs = _part("setup", "region_inputs")
    timeout = _part("setup", "timeout")
    idle_timeout = _part("setup", "idle_timeout")
    dead_letters_at_once = _part("setup", "dead_letters_at_once")
    _dispatcher = _part("setup", "dispatcher")
    next_allocation = _part("ids", "next_allocation", writable=True)
    next_attempt = _part("ids", "next_attempt", writable=True)
    next_sequence = _part("ids", "next_sequence", writable=True)
    _sig = _part("ids", "signature", writable=True)

    def __init__(self, c):
        cfg = c.config
        self.setup = ControlPlaneSetup(c)
        self.ids = IdCounters()
        self.store = ha.ZooKeeperStore()
        self.net = rpc.ConnectionOrderedNetwork() if c.environment.rpc_order == "connection" else rpc.RpcNetwork()
        self.running: int | None = None
        self.quiet = 0
        self.storage: dict = {}
        self.started = False
        #: history for the checks (left out of the fingerprint's meaning: it only grows)
        self.max_checkpoint_id = 0
        self.terminal = False
        s = self.store
        # the job was submitted: the Dispatcher persisted its JobGraph (DefaultJobGraphStore)
        s.create(ha.JOB_GRAPH, "job", make_parents=True)
        s.create(ha.CHECKPOINTS, (), make_parents=True)
        s.create(ha.CHECKPOINT_COUNTER, 1, make_parents=True)
        s.create(ha.LATCH, make_parents=True)
        s.create("/job-results", None)
        self.jms = [JobManagerProcess(j) for j in range(cfg.job_managers)]
        for p in self.jms:
            self._join_election(p)
        per_te = len(self.groups) if cfg.slots_per_task_manager is None else cfg.slots_per_task_manager
        per_te = max(per_te, -(-len(self.groups) // cfg.task_managers))
        self.tes = [TaskExecutor(i, per_te) for i in range(cfg.task_managers)]
        self._sig = self._signature()

    # -- small helpers -----------------------------------------------------------------------
    def new_attempt(self) -> rpc.ExecutionAttemptID:
        a = rpc.ExecutionAttemptID(self.next_attempt)
        self.next_attempt += 1
        return a

    def new_sequence_number(self) -> rpc.SequenceNumber:
        a = rpc.SequenceNumber(self.next_sequence)
        self.next_sequence += 1
        return a

    def new_allocation(self) -> rpc.AllocationID:
        a = rpc.AllocationID(self.next_allocation)
        self.next_allocation += 1
        return a

    def leader_token(self) -> int | None:
        """The leader session of the latch node that leads in the store (the truth)."""
        latch = ha.latch_leader(self.store)
        return None if latch is None else ha.token_of(latch)

    def running_jobmaster(self):
        if self.running is None:
            return None
        p = self.jms[self.running]
        return p.jobmaster if p.alive else None

    def current_attempt(self, s: int) -> int | None:
        jm = self.running_jobmaster()
        return None if jm is None else jm.attempts[s]

    def fault(self) -> None:
        self.quiet = 0

    def _join_election(self, p: JobManagerProcess) -> None:
        p.session = self.store.open_session()
        p.latch = self.store.create(ha.LATCH + "/latch-", None, ephemeral=True, sequential=True, session=p.session)

    # -- HA writes ---------------------------------------------------------------------------
    def ha_write(self, c, p: JobManagerProcess, path: str, data, delete: bool = False) -> bool:
        """A leader's write to the store, fenced (``rpc.checks_fencing_tokens``) by a check that its latch node
        leads. Records the effect; returns whether it was accepted."""
        leader = self.leader_token()
        # a client whose connection is SUSPENDED reaches no ZooKeeper server: its write fails
        # (ConnectionLoss) whether or not writes are fenced; the JobResultStore lives on a file
        # system in Flink (FileSystemJobResultStore), so its write does not need the connection
        connected = path == ha.JOB_RESULT or p.session not in self.store.suspended
        accepted = connected and (
            not checks_fencing_tokens() or (p.latch is not None and ha.latch_leader(self.store) == p.latch
                                            and p.session in self.store.sessions))
        c.events.append(("cp_effect", c.now, "store", path, p.token, leader, accepted))
        if not accepted:
            return False
        if delete:
            if self.store.exists(path):
                self.store.delete(path)
        elif self.store.exists(path):
            self.store.set_data(path, data)
        else:
            self.store.create(path, data, make_parents=True)
        return True

    # -- the data plane's hooks ------------------------------------------------------------------
    def trigger_gate(self, c) -> str | None:
        """Why the running JobMaster may not trigger a checkpoint now (None: it may)."""
        jm = self.running_jobmaster()
        if jm is None or self.jms[self.running].token != jm.token:
            return "no leading JobMaster runs the job"
        if jm.status != "RUNNING":
            return "the job reached its terminal state"
        for t in c.tasks:
            if t.status not in ("RUNNING", "FINISHED"):
                return f"{t.subtask.name} is {t.status} (not every task runs)"
        return None

    def checkpoint_id_taken(self, c, cid: int) -> None:
        """The coordinator took ``cid`` from the counter (``getAndIncrement``)."""
        p = self.jms[self.running]
        c.events.append(("cp_checkpoint_id", c.now, cid, self.max_checkpoint_id))
        self.max_checkpoint_id = max(self.max_checkpoint_id, cid)
        p.counter = cid + 1
        if ha.checkpoint_id_counter_in_store():
            # ZooKeeperCheckpointIDCounter: versioned compare-and-set on the shared count
            _, version = self.store.get(ha.CHECKPOINT_COUNTER)
            self.store.set_data(ha.CHECKPOINT_COUNTER, cid + 1, version)

    def checkpoint_completed(self, c, checkpoint) -> bool:
        """Persist a completed checkpoint: its metadata, then its pointer in the store.
        Returns False when the store rejected the pointer (finalization fails)."""
        cid = checkpoint.checkpoint_id
        self.storage[cid] = checkpoint
        p = self.jms[self.running] if self.running is not None else None
        if p is None:
            return False
        ids = tuple(x.checkpoint_id for x in c.coordinator.store.get_all_checkpoints())
        if not self.ha_write(c, p, ha.CHECKPOINTS, ids):
            c.events.append(("cp_finalize_failed", c.now, cid))
            return False
        p.memory = checkpoint
        return True

    def restarted(self, c, restart) -> None:
        """The data plane restarts ``restart`` (failover): the subtasks wait for deployment
        with a new attempt; their old executions are cancelled."""
        for s in restart:
            c.tasks[s].status = "CREATED"
        jm = self.running_jobmaster()
        if jm is None:
            return
        by_alloc: dict = {}
        for alloc, ex in jm.deployed.items():
            old = tuple(e for e in ex if e[0] in restart)
            if old and alloc in jm.pool:
                by_alloc[alloc] = old
        for alloc, old in sorted(by_alloc.items()):
            self.net.send(rpc.CancelTask(jm.pool[alloc][0], jm.token, old))
        jm.fail(self, set(restart))

    def forget_finished(self, c) -> None:
        """A finished execution leaves its TaskExecutor's slot (``TaskSlotTable.removeTask`` when
        the task ends) and the running JobMaster's deployment tracking
        (``ExecutionDeploymentTracker.stopTrackingDeploymentOf`` on a terminal state) at once --
        the model's data plane tells both -- so that the ``ExecutionDeploymentReport`` of a
        TaskExecutor that dropped its tasks (its job leader timed out) never shows a finished
        producer of a blocking exchange as missing while the JobMaster still expects it."""
        jm = self.running_jobmaster()
        if jm is None:
            return
        done = {(s, jm.attempts[s]) for s, t in enumerate(c.tasks) if t.status == "FINISHED"}
        if not done:
            return
        for table in [te.deployed for te in self.tes] + [jm.deployed]:
            for key in [k for k, ex in table.items() if not done.isdisjoint(ex)]:
                keep = tuple(e for e in table[key] if e not in done)
                if keep:
                    table[key] = keep
                else:
                    del table[key]
        for e in done:
            jm.unconfirmed.pop(e, None)

    def executions_died(self, c, executions) -> None:
        """Executions died with their slot or process: a current one's task is CANCELED."""
        for s, a in executions:
            if self.current_attempt(s) == a and c.tasks[s].status == "RUNNING":
                c.tasks[s].status = "CANCELED"

    def deployed(self, c, executions) -> None:
        for s, a in executions:
            if self.current_attempt(s) == a and c.tasks[s].status == "CREATED":
                c.tasks[s].status = "RUNNING"

    # -- scheduling (PipelinedRegionSchedulingStrategy) and idle slots --------------------------
    def schedulable(self, c) -> frozenset:
        """The subtasks that may be deployed: every one of a streaming job; one whose pipelined
        region consumes blocking partitions only once their producers finished."""
        tasks = c.tasks
        return frozenset(s for s, producers in enumerate(self.region_inputs)
                         if all(tasks[p].status == "FINISHED" for p in producers))

    def schedule(self, c) -> None:
        """The running JobMaster follows its job: groups whose subtasks all finished (or are
        not schedulable) give their slots back to the pool, the requirement follows, and
        schedulable subtasks waiting for deployment are submitted once their groups hold slots."""
        jm = self.running_jobmaster()
        if jm is None or jm.status != "RUNNING":
            return
        ready = self.schedulable(c)
        tasks = c.tasks
        needed = frozenset(g for g, subtasks in enumerate(self.groups)
                           if any(s in ready and tasks[s].status != "FINISHED" for s in subtasks))
        if needed != jm.needed:
            for alloc in jm.update_demand(self, needed):
                # with the process: a deposed leader that does not know it yet keeps its own
                # JobMaster, whose allocation ids the new leader's may repeat (ids count by rank)
                c.events.append(("cp_slot_freed", c.now, alloc, self.running))
        idle = set(jm.idle)
        for m in jm.try_deploy(self, ready):
            if m.allocation in idle:
                c.events.append(("cp_idle_slot_reused", c.now, m.allocation))
            for s, attempt in m.subtasks:
                waiting = tuple(p for p in self.region_inputs[s] if tasks[p].status != "FINISHED")
                c.events.append(("cp_submit", c.now, s, waiting, attempt))

    # -- settledness ---------------------------------------------------------------------------
    def _signature(self) -> tuple:
        """What heartbeats reconcile: slot tables, registrations, pools, deployments."""
        return (tuple((te.alive, te.inc, te.registered, te.rm_token, te.job_token, tuple(te.slots),
                       tuple(sorted(te.deployed.items()))) for te in self.tes),
                tuple((p.alive, p.token,
                       None if p.rm is None else (tuple(sorted(p.rm.registered.items())),
                                                  tuple(sorted(p.rm.slots.items())),
                                                  tuple(sorted(p.rm.requirements.items()))),
                       None if p.jobmaster is None else (tuple(sorted(p.jobmaster.pool.items())),
                                                         tuple(sorted(p.jobmaster.deployed.items())),
                                                         tuple(sorted(p.jobmaster.pending)),
                                                         tuple(sorted(p.jobmaster.group_slot.items()))))
                      for p in self.jms), self.running)

    def after_step(self, c) -> None:
        """Called after every step: the running JobMaster follows what the step did to its
        tasks (``schedule``: Flink's JobMaster learns of finished and failed executions from
        ``updateTaskExecutionState``, the model's data plane tells it at once); a change of
        what heartbeats reconcile starts the settling over (``quiet`` = 0), whatever caused it
        (an RPC, a timeout, a failover)."""
        self.forget_finished(c)
        self.schedule(c)
        if self.dead_letters_at_once:
            self.discard_dead_letters()
        sig = self._signature()
        if sig != self._sig:
            self._sig = sig
            self.quiet = 0

    def settled(self) -> bool:
        """Heartbeats have settled: nothing in flight and more than ``heartbeat_timeout`` + 1
        heartbeat intervals since the last fault or change of a slot table, a registration, a
        pool or a deployment (``after_step``)."""
        return not self.net.in_flight and self.quiet > self.timeout + 1

    def needs_tick(self) -> bool:
        """Whether the drain still needs heartbeat intervals (to settle, or to time out)."""
        lead = self.leading_process()
        if lead is None:
            return False
        if self.quiet <= self.timeout + 1:
            return True
        for te in self.tes:
            if te.alive and (lead.rm.registered.get(te.index) != te.inc or not te.registered):
                return True
            if not te.alive and te.index in lead.rm.registered:
                return True
        jm = lead.jobmaster
        if jm is not None:
            for te, inc in jm.targets().items():
                if not self.tes[te].alive or self.tes[te].inc != inc:
                    return True
        return False

    def leading_process(self) -> JobManagerProcess | None:
        """The living process that believes it leads with the store's leader session."""
        tok = self.leader_token()
        for p in self.jms:
            if p.alive and p.token is not None and p.token == tok:
                return p
        return None

    def finished(self) -> bool:
        """The job is cleaned up (its job graph is gone) and no RPC is in flight (a drained
        run also waits until heartbeats have settled: ``Cluster.is_drained``)."""
        return not self.store.exists(ha.JOB_GRAPH) and not self.net.in_flight

    # -- leader election -------------------------------------------------------------------------
    def latch_event(self, c, j: int) -> str | None:
        """What ``LeaderLatchEvent(j)`` would do ("revoke", "rejoin", "grant"), or None."""
        p = self.jms[j]
        if not p.alive:
            return None
        if p.session not in self.store.sessions:
            return "revoke" if p.token is not None else "rejoin"
        if p.session in self.store.suspended:
            # Curator's StandardConnectionStateErrorPolicy counts SUSPENDED as an error state:
            # the LeaderLatch gives leadership up; with tolerate-suspended-connections
            # (SessionConnectionStateErrorPolicy) only LOST is one. Nothing is granted while
            # the connection is down.
            if p.token is not None and not c.config.zookeeper_tolerate_suspended_connections:
                return "revoke"
            return None
        if p.token is None and ha.latch_leader(self.store) == p.latch:
            return "grant"
        return None

    def apply_latch_event(self, c, j: int) -> None:
        p = self.jms[j]
        what = self.latch_event(c, j)
        if what == "revoke":
            self.revoke(c, p)
        elif what == "rejoin":
            self._join_election(p)
        else:
            self.grant(c, p)

    def grant(self, c, p: JobManagerProcess) -> None:
        token = ha.token_of(p.latch)
        p.token = token
        self.quiet = 0
        self.ha_write(c, p, ha.LEADER_INFO, (p.index, token))
        p.rm = ResourceManager(token)
        c.events.append(("cp_leader", c.now, p.index, token))
        if self._dispatcher.recoverable(self):
            self.recover_job(c, p)

    def revoke(self, c, p: JobManagerProcess) -> None:
        """Leadership revoked: the ResourceManager stops, the JobMaster suspends (releases its
        slots; if it ran the job, its CheckpointCoordinator stops)."""
        c.events.append(("cp_revoked", c.now, p.index, p.token))
        p.token = None
        p.rm = None
        if p.jobmaster is not None:
            p.jobmaster.release_all(self)
            p.jobmaster = None
        if self.running == p.index:
            self._stop_running(c)

    def _stop_running(self, c) -> None:
        c.events.append(("cp_jobmaster_lost", c.now, bool(c.job.notifications)))
        self.running = None
        c.job_manager_lost()

    def checkpoint_to_recover(self, p: JobManagerProcess, store_latest):
        """The checkpoint a new leader restores: the latest the HA store holds
        (``DefaultCompletedCheckpointStoreUtils.retrieveCompletedCheckpoints``)."""
        return store_latest

    def recover_job(self, c, p: JobManagerProcess) -> None:
        """The new leader's JobMaster: recover the job graph, the checkpoint ID counter and the
        latest completed checkpoint, restart the whole job from it, ask for slots."""
        store_ids = self.store.get(ha.CHECKPOINTS)[0]
        store_latest = self.storage[max(store_ids)] if store_ids else None
        checkpoint = self.checkpoint_to_recover(p, store_latest)
        next_id = self.store.get(ha.CHECKPOINT_COUNTER)[0] if ha.checkpoint_id_counter_in_store() else p.counter
        commit_in_flight = bool(c.job.notifications)
        was_terminal = self.terminal
        c.events.append(("cp_job_recovered", c.now, p.token, None if checkpoint is None else checkpoint.checkpoint_id,
                         None if store_latest is None else store_latest.checkpoint_id, commit_in_flight, was_terminal))
        jm = p.jobmaster = JobMaster(p.token, self.groups, [self.new_attempt() for _ in c.tasks])
        self.running = p.index
        c.restart_job_from(checkpoint, next_id, fresh=not self.started)
        self.started = True
        jm.declare(self)

    # -- processes -------------------------------------------------------------------------------
    def crash_job_manager(self, c, j: int) -> None:
        p = self.jms[j]
        p.alive = False
        p.token = None
        p.rm = None
        p.jobmaster = None
        p.memory = None
        p.counter = 1
        self.fault()
        if self.running == j:
            self._stop_running(c)

    def start_job_manager(self, c, j: int) -> None:
        p = self.jms[j]
        p.alive = True
        self.fault()
        self._join_election(p)

    def expire_session(self, c, j: int) -> None:
        p = self.jms[j]
        self.store.expire_session(p.session)
        if p.alive:
            self.fault()

    def suspend_connection(self, c, j: int) -> None:
        """JobManager process ``j``'s ZooKeeper connection is SUSPENDED (its session lives on)."""
        p = self.jms[j]
        self.store.suspend(p.session)
        self.fault()

    def connection_suspended(self, j: int) -> bool:
        p = self.jms[j]
        return p.session in self.store.suspended

    def may_lose_session(self, c, j: int) -> bool:
        """Whether the suspended session of living process ``j`` may expire now (LOST). The
        client reports SUSPENDED once it heard nothing for two thirds of the session timeout, the
        server expires the session after the whole timeout: without tolerate-suspended-connections
        the LeaderLatch has revoked leadership before the session can be lost."""
        p = self.jms[j]
        return c.config.zookeeper_tolerate_suspended_connections or p.token is None

    def reconnect(self, c, j: int) -> None:
        """The ZooKeeper connection of process ``j`` is RECONNECTED (same session). Without
        tolerate-suspended-connections the LeaderLatch resets (``LeaderLatch.reset``: its latch node
        is deleted and a new one created, at the end of the queue); with it nothing changes. The
        persistent nodes (job graph, checkpoint pointers, checkpoint ID counter) are untouched."""
        p = self.jms[j]
        self.store.reconnect(p.session)
        if not c.config.zookeeper_tolerate_suspended_connections and p.latch is not None:
            if self.store.exists(p.latch):
                self.store.delete(p.latch)
            p.latch = self.store.create(ha.LATCH + "/latch-", None, ephemeral=True, sequential=True,
                                        session=p.session)

    def crash_task_executor(self, c, i: int) -> None:
        te = self.tes[i]
        self.executions_died(c, te.crash())
        self.net.drop_for_te(i)
        self.fault()

    def start_task_executor(self, c, i: int) -> None:
        self.tes[i].restart()
        self.fault()

    def leader_retrieval(self, c, i: int) -> None:
        _, token = self.store.get(ha.LEADER_INFO)[0]
        self.executions_died(c, self.tes[i].new_leader(self, token))

    def retrieval_pending(self, i: int) -> bool:
        te = self.tes[i]
        if not te.alive or not self.store.exists(ha.LEADER_INFO):
            return False
        token = self.store.get(ha.LEADER_INFO)[0][1]
        return te.rm_token != token or te.job_token != token

    # -- the heartbeat interval ------------------------------------------------------------------
    def tick(self, c) -> None:
        self.quiet = min(self.quiet + 1, self.timeout + 3)
        for p in self.jms:
            if not p.alive:
                continue
            if p.rm is not None:
                p.rm.tick(self, self.timeout)
            jm = p.jobmaster
            if jm is not None:
                for te in jm.tick(self, self.timeout):
                    for alloc in sorted(a for a, v in jm.pool.items() if v[0] == te):
                        self.net.send(rpc.FreeSlot(te, jm.token, alloc))  # disconnectTaskManager
                    failed = jm.lose_task_executor(te)
                    c.events.append(("cp_tm_timeout", c.now, te, p.index, bool(c.coordinator.num_pending)))
                    if self.running == p.index:
                        c.fail_on_control_plane(failed)
                for te, slot, alloc in jm.release_idle_slots(self, self.idle_timeout):
                    c.events.append(("cp_idle_slot_released", c.now, te, slot, alloc, p.index))
                jm.declare(self)
        for te in self.tes:
            if te.alive and te.registered:
                te.missed_rm += 1
                if te.missed_rm > self.timeout:
                    te.registered = False
            if te.alive and te.rm_token is not None and not te.registered:
                self.net.send(rpc.RegisterTaskExecutor(te.index, te.inc, te.rm_token, te.slot_report()))
            if te.alive:
                died = te.job_leader_tick(self.timeout)
                if died is not None:
                    c.events.append(("cp_job_leader_timeout", c.now, te.index, te.job_token))
                    self.executions_died(c, died)
                te.timeout_inactive(self.timeout)
                te.offer(self)

    # -- delivering an RPC -----------------------------------------------------------------------
    def _rm(self, token):
        for p in self.jms:
            if p.alive and p.rm is not None and p.rm.token == token:
                return p.rm
        return None

    def _jm(self, token):
        for p in self.jms:
            if p.alive and p.jobmaster is not None and p.jobmaster.token == token:
                return p
        return None

    def live_sessions(self) -> set:
        """The leader sessions a ResourceManager or JobMaster has or may still get: those of
        the living JobManager processes' latch nodes (granted or not) and of their running
        endpoints. Any other session is gone for ever: a session is its latch node's sequence
        number + 1, and ZooKeeper never hands out a sequence number twice."""
        live = set()
        for p in self.jms:
            if not p.alive:
                continue
            if p.latch is not None:
                live.add(ha.token_of(p.latch))
            live.add(p.token)
            if p.rm is not None:
                live.add(p.rm.token)
            if p.jobmaster is not None:
                live.add(p.jobmaster.token)
        return live

    def discard_dead_letters(self) -> None:
        """``Environment.dead_letters == "at_once"``: drop every RPC in flight to a
        ResourceManager or JobMaster of a leader session that is gone for ever
        (``live_sessions``). ``deliver`` would drop it without a trace whenever it came."""
        fl = self.net.in_flight
        if not fl:
            return
        live = None
        keep = []
        for m in fl:
            route = rpc.receiver_session(m)
            if route is not None:
                if live is None:
                    live = self.live_sessions()
                if route[1] not in live:
                    continue
            keep.append(m)
        if len(keep) != len(fl):
            self.net.in_flight = keep

    def deliver(self, c, i: int) -> None:
        m = self.net.take(i)
        t = type(m)
        route = rpc.receiver_session(m)
        if route is not None and route[0] == "rm":
            rm = self._rm(route[1])
            if rm is None:
                return  # no ResourceManager of that leader session: dropped (fencing)
            if t is rpc.RegisterTaskExecutor:
                if rm.on_register(self, m):
                    c.events.append(("cp_duplicate_registration", c.now, m.te))
            elif t is rpc.DeclareResourceRequirements:
                rm.on_declare(self, m)
            elif t is rpc.SlotRequestAnswer:
                rm.on_answer(self, m)
            else:
                for slot in rm.on_heartbeat(self, m):
                    c.events.append(("cp_pending_slot_reconciled", c.now, slot))
            return
        if route is not None:
            p = self._jm(route[1])
            if p is None:
                return  # no JobMaster of that leader session: dropped (fencing)
            jm = p.jobmaster
            if t is rpc.RequirementsAcknowledged:
                jm.on_acknowledged(m)
                return
            if t is rpc.OfferSlots:
                if p.latch != ha.latch_leader(self.store):
                    c.events.append(("cp_offer_to_deposed", c.now, m.te, p.index))
                if jm.connected.get(m.te) != m.inc:  # registerTaskManager: its heartbeats are monitored from now
                    c.events.append(("cp_te_connected", c.now, m.te, jm.token))
                failed = jm.on_offer(self, m)
                if failed:  # a slot offered under a new allocation: the pool's older one is gone
                    c.events.append(("cp_slot_replaced", c.now, m.te, tuple(sorted(failed))))
                if self.running == p.index and failed:
                    c.fail_on_control_plane(failed)
                return
            if jm.targets().get(m.te) != m.inc:
                return
            jm.missed[m.te] = 0
            # what the JobMaster heard: the heartbeat and reconciliation timeouts are judged by it
            c.events.append(("cp_deployment_report", c.now, m.te, jm.token, tuple(sorted(m.payload[0]))))
            failed = set()
            for alloc in m.payload[1]:
                failed |= jm.fail_slot(alloc)
            if m.payload[1]:
                c.events.append(("cp_slot_failed", c.now, m.te, tuple(m.payload[1])))
            if failed and self.running == p.index:
                c.fail_on_control_plane(failed)
            if m.payload[1]:
                jm.declare(self)
            unknown, missing = jm.reconcile(m, self.timeout)
            if unknown:
                self.net.send(rpc.CancelTask(m.te, jm.token, tuple(sorted(unknown))))
            if missing and self.running == p.index:
                c.events.append(("cp_missing_deployment", c.now, m.te, tuple(sorted(missing))))
                c.fail_on_control_plane(missing)
            return
        # to a TaskExecutor
        te = self.tes[m.te]
        if not te.alive:
            return
        if t is rpc.RegistrationResponse:
            if m.token == te.rm_token:
                te.registered = True
                te.missed_rm = 0
        elif t is rpc.RequestSlot:
            te.on_request_slot(self, m)
        elif t is rpc.OfferSlotsAnswer:
            c.events.append(("cp_effect", c.now, f"te{m.te}", "offerSlots", m.job_token, te.job_token,
                             not checks_fencing_tokens() or m.job_token == te.job_token))
            te.on_offer_answer(self, m)
        elif t is rpc.SubmitTask:
            why = te.submit_allowed(self, m)
            c.events.append(("cp_effect", c.now, f"te{m.te}", "submitTask", m.job_token, te.job_token, why is None))
            if why is None:
                self.executions_died(c, te.on_submit(m))
                self.deployed(c, m.subtasks)
        elif t is rpc.FreeSlot:
            i = te.slot_of(m.allocation)
            owner = None if i is None else te.slots[i][1]
            gone = te.on_free_slot(self, m)
            if gone is not None:
                c.events.append(("cp_effect", c.now, f"te{m.te}", "freeSlot", m.job_token, owner, True))
                self.executions_died(c, gone)
        elif t is rpc.CancelTask:
            gone = te.on_cancel(self, m)
            if gone:
                self.executions_died(c, gone)
        elif t is rpc.HeartbeatRequest:
            if m.inc != te.inc:
                return
            if m.sender == "rm":
                if m.token == te.rm_token:
                    te.missed_rm = 0
                    self.net.send(rpc.HeartbeatResponse("rm", m.token, te.index, te.inc, te.slot_report()))
            elif m.token == te.job_token:
                te.missed_jm = 0
                died, failed_slots, freed = te.on_allocated_slot_report(m.token, m.payload)
                for alloc in freed:
                    c.events.append(("cp_unreported_slot_freed", c.now, m.te, alloc))
                self.executions_died(c, died)
                self.net.send(rpc.HeartbeatResponse("jm", m.token, te.index, te.inc,
                                                    (te.deployment_report(m.token), failed_slots)))

    # -- the job's end -----------------------------------------------------------------------------
    def job_done_possible(self, c) -> str | None:
        jm = self.running_jobmaster()
        if jm is None or jm.status != "RUNNING" or self.jms[self.running].token is None:
            return "no leading JobMaster runs the job"
        if c.job.status == "FAILED":
            return None
        if not c.data_plane_drained():
            return "the job has not finished (tasks run, or output is not committed)"
        return None

    def job_reached_terminal_state(self, c) -> None:
        p = self.jms[self.running]
        p.jobmaster.status = "FINISHED"
        # globally terminal only as the true leader's: a deposed JobMaster's result cannot be
        # recorded, so the next leader legitimately runs the job again from its checkpoint
        if p.latch is not None and ha.latch_leader(self.store) == p.latch and p.session in self.store.sessions:
            self.terminal = True
        c.events.append(("cp_job_terminal", c.now, p.token))
        self._dispatcher.write_job_result(self, c, p, "FAILED" if c.job.status == "FAILED" else "SUCCEEDED")

    def cleanup_possible(self) -> str | None:
        p = self.leading_process()
        if p is None:
            return "no leading JobManager"
        if not self.store.exists(ha.JOB_GRAPH):
            return "the job graph is cleaned up already"
        jm = p.jobmaster
        if jm is not None and jm.status == "FINISHED":
            return None
        if jm is None and self.store.exists(ha.JOB_RESULT):
            return None
        return "the job has not reached a terminal state"

    def cleanup(self, c) -> None:
        p = self.leading_process()
        for path in (ha.JOB_GRAPH, ha.CHECKPOINTS, ha.CHECKPOINT_COUNTER):
            self.ha_write(c, p, path, None, delete=True)
        if p.jobmaster is not None:
            p.jobmaster.release_all(self)
            # the closed JobMaster disconnects from the ResourceManager of its own process,
            # which clears the job's requirement (Flink: JobLeaderIdService / disconnectJobManager)
            p.rm.requirements.pop(p.jobmaster.token, None)
            p.jobmaster = None
        c.events.append(("cp_job_cleaned_up", c.now, p.token))


def region_inputs(eg) -> tuple:
    """Per subtask: the producers of the blocking partitions its pipelined region consumes
    (``model.failover.pipelined_regions``), sorted."""
    region_of = {}
    for i, region in enumerate(pipelined_regions(eg)):
        for s in region:
            region_of[s] = i
    producers: dict = {}
    for ch in eg.channels:
        r = region_of[ch.consumer]
        if channel_is_blocking(eg, ch) and region_of[ch.producer] != r:
            producers.setdefault(r, set()).add(ch.producer)
    return tuple(tuple(sorted(producers.get(region_of[s.id], ()))) for s in eg.subtasks)


def pending_slots(rm: ResourceManager) -> int:
    return sum(1 for st, _, _ in rm.slots.values() if st == PENDING)


@seams.override("restore-from-memory", ControlPlane, "checkpoint_to_recover",
                "a new leader restores the latest checkpoint it has in memory (none, for a fresh process) instead of "
                "the HA store's")
def _checkpoint_in_memory(self, p, store_latest):
    return p.memory


@seams.override("eager-scheduling", ControlPlane, "schedulable",
                "every pipelined region is deployed at once: the consumers of blocking partitions before their "
                "producers finished (eager scheduling of a batch exchange)")
def _every_region_at_once(self, c) -> frozenset:
    return frozenset(range(len(c.tasks)))
