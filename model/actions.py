"""Actions, and the one registry of action kinds.

Every nondeterministic choice of a run is an action: a frozen, slotted attrs value whose repr
is valid Python (``Deliver(channel=3)``), so a trace is a list of reprs that
:func:`parse_action` reads back.

Each action *kind* is one registered unit (:class:`ActionKind`) that says, in one place:

* ``candidates(c)`` -- the actions of this kind that can be formed over the state's ids
  (every channel, every source subtask, every pending checkpoint...), enabled or not;
* ``guard(c, a)``   -- the kind's only guard: ``None`` when ``a`` is enabled, else the reason
  it is not (a sentence). A kind writes it in two parts, ``precondition(c)`` (what does not
  depend on the action's ids: "the job runs", "failures are left") and ``admits(c, a)``;
  ``guard`` is always the two together, and ``enabled(c)`` evaluates the precondition once. ``Cluster.enabled_actions`` is exactly the candidates whose guard
  holds, and ``Cluster.step`` refuses every other action with ``ActionNotEnabled``;
* ``apply(c, a)``   -- what the action does (never re-checks the guard);
* ``describe(c, a)`` and ``mark(c, a)`` -- how a counterexample shows it (text, HTML lane);
* ``weight``        -- how often a random walk picks the kind, relative to the others;
* ``optional``      -- whether swarm testing may switch the kind off for a run;
* ``drain``         -- its priority in the one drain policy (``model.cluster.drain_choice``),
  lower first; ``None`` if draining never picks it; ``drains(c, a)`` narrows that further.

``KINDS`` (in registration order) is the registry; the cluster's ``enabled_actions``, its
dispatch, the engines' swarm lists, the drain order and the renderers are all generated
from it. Adding an action kind = one action class + one unit here (+ the mechanism it
drives, in its own module) + its tests.

The units read the cluster through its public state (``tasks``, ``net``, ``coordinator``,
``job``, ``config``) and call its mechanisms (``c.trigger_checkpoint(...)``...), or, for the
hot path (``Deliver``, ``SourceEmit``), apply the action themselves; they import nothing from
``model.cluster``.
"""

from __future__ import annotations

import ast
from typing import Iterable

import attrs

from model.events import CheckpointBarrier, Watermark, value
from model.inputfiles import short, short_text
from model.streamtask import FINISHED, RUNNING, TRIGGER_ABORTED, TRIGGER_OLDER


# -- the action values -------------------------------------------------------------------------

@attrs.frozen(slots=True)
class Deliver:
    """The consumer of ``channel`` takes the channel's head element and processes it."""

    channel: int


@attrs.frozen(slots=True)
class SourceEmit:
    """Source subtask ``subtask`` reads its next record and pushes it through its chain."""

    subtask: int


@attrs.frozen(slots=True)
class SourceWatermark:
    """Source subtask ``subtask`` runs its periodic watermark emission."""

    subtask: int


@attrs.frozen(slots=True)
class SourceIdle:
    """Source subtask ``subtask`` marks itself idle (WatermarkStatus.IDLE)."""

    subtask: int


@attrs.frozen(slots=True)
class SourceActive:
    """Source subtask ``subtask`` becomes active again (WatermarkStatus.ACTIVE)."""

    subtask: int


@attrs.frozen(slots=True)
class SourceEnd:
    """Source subtask ``subtask`` has read everything: emits MAX_WATERMARK and EndOfPartition."""

    subtask: int


@attrs.frozen(slots=True)
class TriggerCheckpoint:
    """The CheckpointCoordinator triggers a checkpoint (or a savepoint)."""

    savepoint: bool = False


@attrs.frozen(slots=True)
class CheckpointTimeout:
    """Pending checkpoint ``checkpoint_id`` expires (the coordinator's checkpoint timeout)."""

    checkpoint_id: int


@attrs.frozen(slots=True)
class NotifyCheckpointComplete:
    """The notifyCheckpointComplete RPC of ``checkpoint_id`` reaches subtask ``subtask``."""

    subtask: int
    checkpoint_id: int


@attrs.frozen(slots=True)
class DeliverCheckpointTrigger:
    """The triggerCheckpoint RPC of ``checkpoint_id`` in flight to subtask ``subtask`` reaches it
    (only with ``Environment.trigger_delivery == "any_order"``)."""

    subtask: int
    checkpoint_id: int


@attrs.frozen(slots=True)
class AlignmentTimeout:
    """The aligned-checkpoint timeout timer of subtask ``subtask`` fires."""

    subtask: int


@attrs.frozen(slots=True)
class FailTask:
    """Subtask ``subtask`` fails (an exception in the task)."""

    subtask: int


@attrs.frozen(slots=True)
class LoseTaskManager:
    """TaskManager ``task_manager`` is lost with every task in its slots."""

    task_manager: int


@attrs.frozen(slots=True)
class FailJobManager:
    """The JobManager fails over: pending checkpoints are lost, the job restores globally."""


@attrs.frozen(slots=True)
class StopWithSavepoint:
    """Stop-with-savepoint: a synchronous savepoint, then the job stops."""


@attrs.frozen(slots=True)
class StopWithSavepointAndDrain:
    """Stop-with-savepoint ``--drain`` (``flink stop --drain``, SavepointType TERMINATE): the
    sources end their input (MAX_WATERMARK: every window fires), a synchronous savepoint, then
    the job is FINISHED."""


@attrs.frozen(slots=True)
class RestartFromSavepoint:
    """Restart a stopped job from its savepoint with new parallelisms ``((operator, p), ...)``."""

    parallelism: tuple = ()


@attrs.frozen(slots=True)
class RescaleFromCheckpoint:
    """Cancel the job and resubmit it from its latest completed checkpoint (aligned or
    unaligned, with its in-flight data) with new parallelisms ``((operator, p), ...)``."""

    parallelism: tuple = ()


@attrs.frozen(slots=True)
class RestartFromRetainedCheckpoint:
    """The user cancels the running job and submits it again, with the same parallelisms,
    from its retained checkpoint ``checkpoint_id`` in ``RuntimeConfig.restore_mode``
    (``Cluster.restart_from_retained_checkpoint``)."""

    checkpoint_id: int = 0


# -- the registry ------------------------------------------------------------------------------

class ActionKind:
    """One kind of action. Subclasses set ``action`` and override what differs."""

    action: type
    weight: float = 1.0
    optional: bool = True
    drain: int | None = None
    #: whether the kind belongs to the control plane (offered only with
    #: ``ModelScope.control_plane``: a data-plane run never even forms its candidates)
    control_plane: bool = False
    #: whether the kind belongs to the deployment modes (offered only with
    #: ``RuntimeConfig.deployment_mode``, and then alone: ``model.clusterentrypoint``)
    deployment: bool = False
    #: HTML swimlane mark: "dot", "square" or "cross", and its color
    shape: str = "dot"
    color: str = "#7b3fb5"
    #: a step of this kind only moves records (the viewer collapses runs of such steps; a
    #: delivery is one when its mark's shape is "record")
    moves_records: bool = False
    #: a step of this kind disturbs checkpointing (a failure, a lost message, a timeout, a stop
    #: or restart of the job): checkpoints pending at that moment may legitimately never
    #: complete (spec/checkpoint.py ``checkpoints_keep_completing`` judges the ones after it)
    disturbs: bool = False
    #: a step of this kind stops or resubmits the job (the operator's stop-with-savepoint, a
    #: restart from a savepoint or retained checkpoint): the CheckpointCoordinator may abort
    #: the pending checkpoints with CHECKPOINT_COORDINATOR_SUSPEND or _SHUTDOWN in it
    stops_job: bool = False
    #: a step of this kind may trigger a checkpoint or savepoint (one more checkpoint id may
    #: exist after it: a counterexample file's checkpoint ids are checked against them)
    triggers_checkpoint: bool = False

    @property
    def name(self) -> str:
        return self.action.__name__

    def candidates(self, c) -> Iterable:
        return (self.action(),)

    def precondition(self, c) -> str | None:
        """The part of the guard that does not depend on the action's ids (None: holds)."""
        return None

    def admits(self, c, a) -> str | None:
        """The part of the guard about ``a`` itself (None: ``a`` is admitted)."""
        return None

    def guard(self, c, a) -> str | None:
        """The kind's one guard: its precondition, then whether it admits ``a``."""
        return self.precondition(c) or self.admits(c, a)

    def apply(self, c, a) -> None:  # pragma: no cover - every kind overrides it
        raise NotImplementedError

    def enabled(self, c) -> list:
        """The candidates whose guard holds (the precondition is evaluated once)."""
        if self.precondition(c) is not None:
            return []
        admits = self.admits
        return [a for a in self.candidates(c) if admits(c, a) is None]

    def drains(self, c, a) -> bool:
        """Whether the drain policy may pick this enabled action (only asked when ``drain``
        is not None)."""
        return True

    def footprint(self, c, a) -> frozenset | None:
        """The parts of the runtime the enabled action ``a`` reads or writes in state ``c``, when
        they are local (one task, the channels it takes from and writes to, the shared side
        outputs it may append to); None when it may reach anything (the coordinator, the job,
        other tasks through messages). Two actions with disjoint footprints commute and
        neither disables the other: an explorer's partial-order reduction relies on it
        (tests/test_explore.py checks it on every variant's walks)."""
        return None

    def outcome(self, c, a):
        """A key for what the enabled action ``a`` does in state ``c`` when another enabled
        action -- of this kind or another -- may do exactly the same: two with one key reach one
        state (one fingerprint, one history for the invariants) and are judged alike. Keys are
        compared across kinds, so a key names what it stands for (``failover_outcome``). None:
        its outcome is its own. An explorer takes only the first of the actions with one
        outcome (tests/test_explore.py checks the claim on every variant's walks)."""
        return None

    def describe(self, c, a) -> str:
        return repr(a)

    def mark(self, c, a) -> dict:
        """How the HTML swimlanes show ``a`` (before it is applied): ``lane`` (the action's
        subtask, or None for the coordinator's lane), ``shape`` and ``color``."""
        return {"lane": getattr(a, "subtask", None), "shape": self.shape, "color": self.color}


#: action class -> its unit, in registration order.
KINDS: dict[type, ActionKind] = {}


def register(unit_cls: type) -> type:
    unit = unit_cls()
    if unit.action in KINDS:
        raise ValueError(f"action kind {unit.name} is registered twice")
    KINDS[unit.action] = unit
    value(unit.action)  # actions are frozen values: a copy of a state shares them
    return unit_cls


def kind_of(action) -> ActionKind | None:
    return KINDS.get(type(action))


def _is_id(x, n: int) -> bool:
    return type(x) is int and 0 <= x < n


def _name(c, tid) -> str:
    return c.eg.subtasks[tid].name


def _elem(e, barrier_mode: str = "aligned") -> str:
    """A channel element in words; a barrier's alignment as its subtask handles it
    (``RuntimeConfig.barrier_mode``: under at-least-once a CheckpointBarrierTracker only
    counts barriers and never blocks an input, Flink's ``AlignmentType.AT_LEAST_ONCE``)."""
    if type(e) is tuple:
        return f"record(key={e[0]!r}, value={e[1]!r}, ts={e[2]})"
    if isinstance(e, CheckpointBarrier):
        kind = "savepoint" if e.savepoint else "checkpoint"
        how = ("unaligned" if e.unaligned
               else "at-least-once, not aligned" if barrier_mode == "at_least_once"
               else "forced aligned: its edge cannot carry unaligned barriers" if e.forced_aligned else "aligned")
        return f"barrier {e.id} ({kind}, {how})"
    return repr(e)


# interned candidate actions (frozen values: one object per id is enough)
_DELIVER: list = []
_INTERNED: dict = {}


def _interned(cls, *args):
    key = (cls, args)
    a = _INTERNED.get(key)
    if a is None:
        if len(_INTERNED) > 100_000:
            _INTERNED.clear()
        a = _INTERNED[key] = cls(*args)
    return a


def _delivers(n: int) -> list:
    while len(_DELIVER) < n:
        _DELIVER.append(Deliver(len(_DELIVER)))
    return _DELIVER[:n]


def task_footprint(task, channel) -> frozenset:
    """What processing one record or watermark in ``task`` (taken from ``channel``, or emitted
    by its source) can touch: the task, the channel, its output channels, and the shared
    side outputs its chain writes to -- the external system for a sink, the late-records list
    for a window operator."""
    parts = {("task", task.id)}
    if channel is not None:
        parts.add(("channel", channel))
    for o in task.plan.output_channels:
        parts.add(("channel", o))
    parts.update(task.plan.side_outputs)
    return frozenset(parts)


@register
class DeliverKind(ActionKind):
    action = Deliver
    weight = 12.0
    optional = False
    drain = 0

    def candidates(self, c):
        return _delivers(len(c.net.queues))

    def admits(self, c, a):
        net = c.net
        ch = a.channel
        try:  # _is_id, inlined: the hot path
            q = net.queues[ch]
        except (IndexError, TypeError):
            return f"there is no channel {ch!r}"
        if type(ch) is not int or ch < 0:
            return f"there is no channel {ch!r}"
        if not q:
            return f"channel {ch} is empty"
        if net.blocked[ch] and not net.prio[ch]:
            return f"channel {ch} is blocked by checkpoint alignment"
        if net.blocking[ch]:
            if c.tasks[net.producer_of[ch]].status != FINISHED:
                return f"blocking channel {ch} is consumable only once its producer finished"
            if net.read_pos[ch] >= len(q):
                return f"blocking channel {ch} has been read to its end"
        if net.network and net.remote[ch] and not net.arrived[ch]:
            return f"channel {ch}'s next buffer has not crossed the network (SendBuffer)"
        task = c.tasks[net.consumer_of[ch]]
        if task.status != RUNNING:
            return f"consumer task {task.subtask.name} is {task.status}"
        cap = c.scope.channel_capacity
        if net.network:
            if net.backpressured(task.plan.barrier_outputs, cap):
                return f"consumer task {task.subtask.name} is back-pressured (an output subpartition is full)"
            return None
        queues = net.queues
        for out in task.plan.barrier_outputs:  # back-pressure (Cluster.outputs_free, inlined: the hot path)
            if len(queues[out]) >= cap:
                return f"consumer task {task.subtask.name} is back-pressured (an output channel is full)"
        return None

    guard = admits  # no precondition: the guard is admits itself (one call on the hot path)

    def apply(self, c, a):
        """The consumer takes the head element and processes it (``StreamOneInputProcessor``):
        a record goes through the chain (and into the unaligned channel state being persisted),
        anything else to ``TaskContext.process_event``."""
        net = c.net
        ch = a.channel
        task = c.tasks[net.consumer_of[ch]]
        if net.blocking[ch]:
            e = net.take(ch)
        else:  # Channels.take, inlined for the pipelined case (the hot path)
            if net.prio[ch]:
                net.prio[ch] -= 1
            e = net.queues[ch].popleft()
            if net.network and net.remote[ch]:
                net.consumed(ch, e)  # its network buffer is recycled
        if type(e) is tuple:
            net.received[ch] += 1
            if task.persisting and task.plan.local_of[ch] in task.persisting:
                task.input_cs[ch].append(e)
            task.plan.head.process(c.context(task), e[0], e[1], e[2])
            if task.deferred:
                c.context(task).run_deferred()
        else:
            c.context(task).process_event(e, ch, c.now)

    def footprint(self, c, a):
        """A record or a watermark is processed inside the consumer's chain (state, timers,
        its output channels, a sink's writer); any other element (a barrier, a status, the
        end of a partition) may reach the coordinator or the job: no footprint."""
        net = c.net
        ch = a.channel
        e = net.queues[ch][net.read_pos[ch]] if net.blocking[ch] else net.queues[ch][0]
        if type(e) is not tuple and type(e) is not Watermark:
            return None
        task = c.tasks[net.consumer_of[ch]]
        if task.deferred:
            return None  # the next element takes the deferred snapshot (a message to the coordinator)
        return task_footprint(task, ch)

    def describe(self, c, a):
        ch = c.eg.channels[a.channel]
        return (f"{_name(c, ch.consumer)} takes {_elem(c.net.head(a.channel), c.config.barrier_mode)} from channel {a.channel} "
                f"(from {_name(c, ch.producer)})")

    def mark(self, c, a):
        ch = c.eg.channels[a.channel]
        head = c.net.head(a.channel)
        what = "barrier" if isinstance(head, CheckpointBarrier) else "watermark" if isinstance(head, Watermark) \
            else "record" if type(head) is tuple else "event"
        color = {"barrier": "#c77c02", "watermark": "#888", "record": "#2a6fdb"}.get(what, "#7b3fb5")
        return {"lane": ch.consumer, "from_lane": ch.producer, "shape": what, "color": color}


class _SourceKind(ActionKind):
    """A source subtask's action: candidates are the source subtasks."""

    #: whether the kind is disabled by back-pressure (a full output channel)
    needs_free_output = True
    #: whether the kind ends the source's input (the one kind a source whose input already
    #: ended -- finished on restore -- may take)
    ends_input = False
    color = "#1b9e3e"

    def candidates(self, c):
        act = self.action
        return [act(t.id) for t in c.source_tasks]

    def admits(self, c, a):
        tid = a.subtask
        tasks = c.tasks
        if type(tid) is not int or not 0 <= tid < len(tasks) or tasks[tid].source is None:
            return f"subtask {tid!r} is not a source subtask"
        t = tasks[tid]
        if t.status != RUNNING:
            return f"{t.subtask.name} is {t.status}"
        if t.source.ended and not self.ends_input:
            return (f"{t.subtask.name}'s input ended (stop-with-savepoint --drain): restored from a snapshot "
                    f"taken after, it is finished on restore and only ends its input again (FLIP-147)")
        if self.needs_free_output:
            cap = c.scope.channel_capacity
            if c.net.network:
                if c.net.backpressured(t.plan.barrier_outputs, cap):
                    return f"{t.subtask.name} is back-pressured (an output subpartition is full)"
            else:
                queues = c.net.queues
                for out in t.plan.barrier_outputs:  # back-pressure (Cluster.outputs_free, inlined: the hot path)
                    if len(queues[out]) >= cap:
                        return f"{t.subtask.name} is back-pressured (an output channel is full)"
        return self.source_guard(t.source)

    guard = admits  # no precondition

    def source_guard(self, src) -> str | None:  # pragma: no cover - overridden
        raise NotImplementedError



@register
class SourceEmitKind(_SourceKind):
    action = SourceEmit
    weight = 6.0
    optional = False
    drain = 3
    moves_records = True

    def source_guard(self, src):
        if src.current >= len(src.splits):  # not SourceReader.has_next(), inlined: the hot path
            return "the source has no record left to emit"
        if src.wm_output.is_idle:
            return "the source is idle"
        return None

    def apply(self, c, a):
        t = c.tasks[a.subtask]
        rec = t.source.next_record()
        t.plan.head.process(c.context(t), rec[0], rec[1], rec[2])

    def footprint(self, c, a):
        """A source emits inside its own chain."""
        return task_footprint(c.tasks[a.subtask], None)

    def describe(self, c, a):
        src = c.tasks[a.subtask].source
        s = src.splits[src.next_split()] if src.has_next() else None
        if s is None:
            return f"{_name(c, a.subtask)} reads nothing (no record left)"
        return f"{_name(c, a.subtask)} reads {_elem(s[1][s[2]], c.config.barrier_mode)} (split {s[0]}, offset {s[2]})"


@register
class SourceWatermarkKind(_SourceKind):
    action = SourceWatermark
    weight = 2.0
    drain = 4
    color = "#888"

    def source_guard(self, src):
        if src.current_watermark() <= src.wm_output.max_watermark_so_far:
            return "the generator's watermark does not advance"
        return None

    def apply(self, c, a):
        c.source_watermark(c.tasks[a.subtask])

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} emits watermark {c.tasks[a.subtask].source.current_watermark()}"


@register
class SourceIdleKind(_SourceKind):
    action = SourceIdle
    weight = 0.4
    color = "#bbb"

    def precondition(self, c):
        budget = c.environment.max_idle_periods
        if budget is not None and c.job.idle_periods >= budget:
            return f"the sources went idle {c.job.idle_periods} time(s): max_idle_periods is {budget}"
        return None

    def admits(self, c, a):
        return self.precondition(c) or _SourceKind.admits(self, c, a)

    guard = admits  # the budget, then the source's own guard

    def source_guard(self, src):
        return "the source is idle already" if src.wm_output.is_idle else None

    def apply(self, c, a):
        t = c.tasks[a.subtask]
        t.source.wm_output.mark_idle(c.context(t))
        if c.environment.max_idle_periods is not None:  # counted only under a budget: an unbounded
            c.job.idle_periods += 1                 # run's IDLE/ACTIVE toggles return to one state

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} goes IDLE"


@register
class SourceActiveKind(_SourceKind):
    action = SourceActive
    weight = 1.0
    drain = 2
    needs_free_output = False
    color = "#5a5"

    def source_guard(self, src):
        return None if src.wm_output.is_idle else "the source is active already"

    def apply(self, c, a):
        t = c.tasks[a.subtask]
        t.source.wm_output.mark_active(c.context(t))

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} becomes ACTIVE again"


@register
class SourceEndKind(_SourceKind):
    action = SourceEnd
    weight = 1.0
    optional = False
    drain = 5
    color = "#000"
    ends_input = True

    def source_guard(self, src):
        return "the source has records left" if src.has_next() and not src.ended else None

    def apply(self, c, a):
        c.source_end(c.tasks[a.subtask])

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} has read everything: MAX_WATERMARK and EndOfPartition"


@register
class TriggerCheckpointKind(ActionKind):
    """Offered while the job runs, no stop-with-savepoint is in progress, fewer than
    ``max_concurrent_checkpoints`` are pending, and there is something to checkpoint: a
    running source, or (FLIP-147's final checkpoint) finished tasks whose two-phase-commit
    sinks still hold uncommitted output. The coordinator may still decline it (min pause)."""

    action = TriggerCheckpoint
    triggers_checkpoint = True
    weight = 1.0
    drain = 7
    shape = "square"
    color = "#c77c02"

    def candidates(self, c):
        if c.environment.trigger_savepoints:
            return (TriggerCheckpoint(False), TriggerCheckpoint(True))
        return (TriggerCheckpoint(False),)

    def admits(self, c, a):
        if type(a.savepoint) is not bool:
            return f"savepoint must be True or False, not {a.savepoint!r}"
        if a.savepoint and not c.environment.trigger_savepoints:
            return "savepoints while running are not enabled (Environment.trigger_savepoints)"
        return None

    def precondition(self, c):
        if c.job.status != RUNNING:
            return f"the job is {c.job.status}"
        if c.cp is not None:
            why = c.cp.trigger_gate(c)
            if why is not None:
                return why
        if c.job.stopping is not None:
            return "a stop-with-savepoint is in progress"
        if c.coordinator.num_pending >= c.config.max_concurrent_checkpoints:
            return "max_concurrent_checkpoints checkpoints are pending"
        if c.checkpoint_budget_spent():
            return "the checkpoint budget (Environment.max_checkpoints) is spent"
        if not any(t.status == RUNNING for t in c.source_tasks) and not c.final_checkpoint_needed():
            return "no source runs and no sink waits for a final checkpoint"
        return None

    def drains(self, c, a):
        if c.cp is not None and c.cp.leading_process() is not c.cp.jms[c.cp.running]:
            return False  # a deposed JobMaster's checkpoint cannot finish: settle the leadership first
        if c.cp is not None and c.cp.connection_suspended(c.cp.running):
            # nor can one whose pointer the leader cannot write to ZooKeeper (a SUSPENDED
            # connection, tolerated): triggered again and again it would never drain; settle
            # the connection first (ConnectionReconnected or LOST)
            return False
        return not a.savepoint and c.final_checkpoint_needed()

    def apply(self, c, a):
        c.trigger_checkpoint(a.savepoint)

    def describe(self, c, a):
        return (f"the CheckpointCoordinator triggers {'a savepoint' if a.savepoint else 'checkpoint'} "
                f"{c.coordinator.next_checkpoint_id}")



@register
class CheckpointTimeoutKind(ActionKind):
    disturbs = True
    action = CheckpointTimeout
    weight = 0.1
    drain = 8
    shape = "square"
    color = "#c77c02"

    def candidates(self, c):
        return [CheckpointTimeout(cid) for cid in c.coordinator.pending_ids()]

    def precondition(self, c):
        return None if c.job.status == RUNNING else f"the job is {c.job.status}"

    def admits(self, c, a):
        if a.checkpoint_id not in c.coordinator.pending:
            return f"checkpoint {a.checkpoint_id!r} is not pending"
        return None

    def apply(self, c, a):
        if self.stuck(c):
            c.events.append(("checkpoint_stuck", c.now, a.checkpoint_id))
        c.expire_checkpoint(a.checkpoint_id)

    def stuck(self, c) -> bool:
        """Nothing that could still complete a checkpoint can happen: no action of a kind the
        drain policy takes before expiring checkpoints is enabled (no record, barrier or
        notification can move; triggering another checkpoint does not help this one). The drain
        expires only such a checkpoint; an expiry then is no fault injected but the sign that the
        checkpoint can never complete."""
        return not any(u.drain < self.drain and u.action is not TriggerCheckpoint and u.enabled(c)
                       for u in DRAIN_ORDER)

    def describe(self, c, a):
        return f"checkpoint {a.checkpoint_id} expires"



@register
class NotifyCheckpointCompleteKind(ActionKind):
    action = NotifyCheckpointComplete
    weight = 2.0
    optional = False
    drain = 1

    def candidates(self, c):
        return [_interned(NotifyCheckpointComplete, t, cid) for (t, cid) in c.job.notifications]

    def admits(self, c, a):
        if (a.subtask, a.checkpoint_id) not in c.job.notifications:
            return "no such notification is in flight"
        return None

    def apply(self, c, a):
        c.notify_checkpoint_complete(a.subtask, a.checkpoint_id)

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} learns that checkpoint {a.checkpoint_id} completed (sinks commit)"


@register
class DeliverCheckpointTriggerKind(ActionKind):
    """Offered while the job runs, for every trigger RPC in flight to a running task
    (``StreamTask.triggers``), in any order: ``TaskContext.trigger_checkpoint`` takes, ignores
    or cancels it as Flink's ``SubtaskCheckpointCoordinatorImpl.checkpointState`` does."""

    action = DeliverCheckpointTrigger
    weight = 1.0
    optional = False
    drain = 1
    shape = "square"
    color = "#c77c02"

    def candidates(self, c):
        return [_interned(DeliverCheckpointTrigger, t.id, b.id) for t in c.tasks if t.triggers for b in t.triggers]

    def precondition(self, c):
        return None if c.job.status == RUNNING else f"the job is {c.job.status}"

    def admits(self, c, a):
        if not _is_id(a.subtask, len(c.tasks)):
            return f"there is no subtask {a.subtask!r}"
        t = c.tasks[a.subtask]
        if t.status != RUNNING:
            return f"subtask {a.subtask} is {t.status}"
        if not any(b.id == a.checkpoint_id for b in t.triggers):
            return f"no trigger of checkpoint {a.checkpoint_id!r} is in flight to subtask {a.subtask}"
        return None

    def footprint(self, c, a):
        # a trigger the task ignores changes only the task; one it cancels also puts a
        # CancelCheckpointMarker into its output channels; one it takes acknowledges to the
        # CheckpointCoordinator (anything)
        t = c.tasks[a.subtask]
        verdict = t.trigger_verdict(a.checkpoint_id)
        if verdict == TRIGGER_OLDER:
            return frozenset({("task", t.id)})
        if verdict == TRIGGER_ABORTED:
            return frozenset({("task", t.id), *(("channel", o) for o in t.plan.output_channels)})
        return None

    def apply(self, c, a):
        c.deliver_checkpoint_trigger(a.subtask, a.checkpoint_id)

    def describe(self, c, a):
        # what the task knows, and what Flink's task does with it (a seam may do otherwise: the
        # description is the safe model's)
        t = c.tasks[a.subtask]
        cid = a.checkpoint_id
        if cid <= t.last_triggered:
            what = (f"already took checkpoint {t.last_triggered} (Flink's task ignores an older trigger: no snapshot, "
                    f"no decline)")
        elif cid in t.aborted_triggers:
            what = (f"was told that checkpoint {cid} was aborted (Flink's task takes no snapshot and sends a "
                    f"CancelCheckpointMarker downstream)")
        else:
            what = "takes its snapshot and sends the barrier downstream"
        return f"the trigger of checkpoint {cid} reaches {_name(c, a.subtask)}, which {what}"


@register
class AlignmentTimeoutKind(ActionKind):
    action = AlignmentTimeout
    weight = 1.0
    drain = 6

    def candidates(self, c):
        return [AlignmentTimeout(t.id) for t in c.tasks if t.timer is not None]

    def admits(self, c, a):
        if not _is_id(a.subtask, len(c.tasks)):
            return f"there is no subtask {a.subtask!r}"
        t = c.tasks[a.subtask]
        if t.timer is None or t.handler is None or not t.handler.timer_due(c.now, t.timer[1]):
            return "no alignment timer is due"
        return None

    def apply(self, c, a):
        c.alignment_timeout(c.tasks[a.subtask])

    def describe(self, c, a):
        return f"the aligned-checkpoint timeout of {_name(c, a.subtask)} fires: it switches to an unaligned checkpoint"


def failover_outcome(c, failed: set, unavailable: frozenset) -> tuple:
    """The outcome key of a failure that runs a failover (``Cluster._failover``): the
    failover strategy's restart set, the lost blocking partitions and the pipelined regions of
    the failed tasks. The restarted tasks are restored from the latest completed checkpoint,
    and nothing after the step depends on which tasks of a region failed or on what failed
    them -- a task or its TaskManager: the failed tasks are history (an event, and the step's
    delta, whose judges read the restart set, the lost partitions, and -- to compute the restart
    set Flink's strategy gives, ``restart_set_exact`` -- the failed tasks' regions), and a lost
    TaskManager is replaced at once. So a task failure and a TaskManager loss with one key
    reach one state, judged alike."""
    region_of = getattr(c.strategy, "region_of", None)
    regions = frozenset(region_of[s] for s in failed) if region_of is not None else ()
    return "failover", frozenset(c.strategy.tasks_to_restart(failed, unavailable)), unavailable, regions


class _FailureKind(ActionKind):
    """A failure: offered while the job runs and the failure budget (max_failures) lasts."""

    disturbs = True

    def precondition(self, c):
        if not c.failures_left():
            return "no failure may be injected now (the job is not running or the failure budget is spent)"
        return None


@register
class FailTaskKind(_FailureKind):
    action = FailTask
    weight = 0.25
    shape = "cross"
    color = "#d00"

    def candidates(self, c):
        return [_interned(FailTask, t.id) for t in c.tasks]

    def admits(self, c, a):
        if not _is_id(a.subtask, len(c.tasks)) or c.tasks[a.subtask].status != RUNNING:
            return f"subtask {a.subtask!r} is not running"
        return None

    def apply(self, c, a):
        c.fail_task(a.subtask)

    def outcome(self, c, a):
        """A failover's outcome (:func:`failover_outcome`) of the one failed task."""
        return failover_outcome(c, {a.subtask}, frozenset())

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} FAILS"



@register
class LoseTaskManagerKind(_FailureKind):
    action = LoseTaskManager
    weight = 0.15
    shape = "square"
    color = "#d00"

    def candidates(self, c):
        return [_interned(LoseTaskManager, i) for i in range(len(c.task_managers))]

    def precondition(self, c):
        if c.cp is not None:
            return "with the control plane a TaskExecutor crashes (CrashTaskExecutor) and is noticed by heartbeat"
        return _FailureKind.precondition(self, c)

    def admits(self, c, a):
        if not _is_id(a.task_manager, len(c.task_managers)):
            return f"there is no TaskManager {a.task_manager!r}"
        if not c.task_manager_busy(a.task_manager):
            return f"TaskManager {c.task_managers[a.task_manager].id} runs no task"
        return None

    def apply(self, c, a):
        c.lose_task_manager(a.task_manager)

    def outcome(self, c, a):
        """A failover's outcome (:func:`failover_outcome`) of the tasks the loss fails, when it
        fails any (else its own: the TaskManager is replaced and nothing restarts)."""
        failed, unavailable = c.task_manager_loss(a.task_manager)
        return failover_outcome(c, failed, unavailable) if failed else None

    def describe(self, c, a):
        return f"TaskManager tm{a.task_manager} is LOST"



@register
class FailJobManagerKind(_FailureKind):
    action = FailJobManager
    weight = 0.08
    shape = "square"
    color = "#d00"

    def precondition(self, c):
        if c.cp is not None:
            return "with the control plane a JobManager crashes (CrashJobManager) and a new leader is elected"
        return _FailureKind.precondition(self, c)

    def apply(self, c, a):
        c.fail_job_manager()

    def describe(self, c, a):
        return "the JobManager FAILS OVER"



@register
class StopWithSavepointKind(ActionKind):
    disturbs = True
    stops_job = True
    triggers_checkpoint = True
    action = StopWithSavepoint
    weight = 0.1
    shape = "square"
    color = "#c77c02"
    #: what offers the kind (``Environment``)
    enabled_by = "savepoints"

    def precondition(self, c):
        if not getattr(c.environment, self.enabled_by):
            return f"{self.what} is not enabled (Environment.{self.enabled_by})"
        if c.cp is not None:
            return f"{self.what} is not modelled with the control plane"
        job = c.job
        if job.status != RUNNING or job.stopping is not None or job.savepoint is not None:
            return f"{self.what} is not possible now"
        if c.checkpoint_budget_spent():
            return "the checkpoint budget (Environment.max_checkpoints) is spent"
        return None

    what = "stop-with-savepoint"

    def apply(self, c, a):
        c.stop_with_savepoint()

    def describe(self, c, a):
        return f"stop-with-savepoint: a synchronous savepoint {c.coordinator.next_checkpoint_id}, then the job stops"


@register
class StopWithSavepointAndDrainKind(StopWithSavepointKind):
    """Offered as stop-with-savepoint is, where ``Environment.drain_savepoints`` allows it, while
    a source still reads (``--drain`` of a job whose sources all ended is its normal end). Not
    together with restarts from a savepoint or rescaling from a checkpoint: a failover restores a
    drained source finished (``Cluster._restore_task``, FLIP-147), their rescaled restore does
    not."""

    action = StopWithSavepointAndDrain
    enabled_by = "drain_savepoints"
    what = "stop-with-savepoint --drain"
    color = "#7a4a00"

    def precondition(self, c):
        env = c.environment
        if env.savepoints or env.rescale_from_checkpoints:
            return (f"{self.what} is not modelled with restarts from savepoints or rescaling (Environment.savepoints, "
                    f"rescale_from_checkpoints): their restore does not keep a drained source finished")
        return StopWithSavepointKind.precondition(self, c) or (
            None if any(t.status == RUNNING and not t.source.ended for t in c.source_tasks)
            else "no source reads any more: the job ends by itself")

    def apply(self, c, a):
        c.stop_with_savepoint(drain=True)

    def describe(self, c, a):
        return (f"stop-with-savepoint --drain: the sources end their input (MAX_WATERMARK), a synchronous "
                f"savepoint {c.coordinator.next_checkpoint_id}, then the job is FINISHED")



@register
class RestartFromSavepointKind(ActionKind):
    """Offered when the job stopped with a savepoint: the current parallelisms first (the
    drain policy takes that one), then each option of ``Environment.rescale_options``."""

    disturbs = True
    stops_job = True

    action = RestartFromSavepoint
    weight = 5.0
    optional = False
    drain = 9
    shape = "square"
    color = "#c77c02"

    def candidates(self, c):
        if c.job.status != "STOPPED":
            return ()
        return [RestartFromSavepoint(o) for o in c.rescale_choices()]

    def precondition(self, c):
        if c.job.status != "STOPPED" or c.job.savepoint is None:
            return "the job is not stopped with a savepoint"
        return None

    def admits(self, c, a):
        if not isinstance(a.parallelism, tuple) or a.parallelism not in c.rescale_choices():
            return (f"{a.parallelism!r} is not one of the offered parallelisms {c.rescale_choices()} "
                    "(Environment.rescale_options)")
        return None

    def drains(self, c, a):
        return a.parallelism == c.rescale_choices()[0]

    def apply(self, c, a):
        c.restart_from_savepoint(a.parallelism)

    def describe(self, c, a):
        return "the job restarts from its savepoint with parallelism " + ", ".join(f"{n}={p}" for n, p in a.parallelism)



@attrs.frozen(slots=True)
class FinishAsyncSnapshot:
    """The asynchronous phase of subtask ``subtask``'s snapshot ``checkpoint_id`` runs (state
    files written), then the task acknowledges (``AsyncCheckpointRunnable``)."""

    subtask: int
    checkpoint_id: int


@attrs.frozen(slots=True)
class FailAsyncSnapshot:
    """The asynchronous phase of subtask ``subtask``'s snapshot ``checkpoint_id`` fails (a state
    file cannot be written): the task declines the checkpoint with CHECKPOINT_ASYNC_EXCEPTION
    and runs on; the CheckpointFailureManager decides whether the job fails over."""

    subtask: int
    checkpoint_id: int


@attrs.frozen(slots=True)
class DiscardFile:
    """A scheduled asynchronous delete of the state file ``path`` runs."""

    path: str


@attrs.frozen(slots=True)
class ReleaseRestoredSnapshot:
    """The user deletes the snapshot the job restored in NO_CLAIM mode (allowed once a
    checkpoint of the restored job completed)."""


# The state-backend kinds are never switched off by swarm testing (``optional=False``): a run
# without a state backend has no candidates of them, and its random walk stays as it was.

@register
class FinishAsyncSnapshotKind(ActionKind):
    """Offered (with ``RuntimeConfig.state_backend``) while the job runs, for every snapshot
    whose synchronous phase is done and that its task would acknowledge now."""

    action = FinishAsyncSnapshot
    weight = 3.0
    optional = False
    drain = 1
    shape = "square"
    color = "#c77c02"

    def candidates(self, c):
        if c.storage is None:
            return ()
        return [_interned(FinishAsyncSnapshot, t.id, cid) for t in c.tasks for cid in t.backend.ready_ids()]

    def precondition(self, c):
        if c.storage is None:
            return "no state backend is modelled (RuntimeConfig.state_backend)"
        return None if c.job.status == RUNNING else f"the job is {c.job.status}"

    def admits(self, c, a):
        if not _is_id(a.subtask, len(c.tasks)):
            return f"there is no subtask {a.subtask!r}"
        t = c.tasks[a.subtask]
        if t.status not in (RUNNING, FINISHED):
            return f"{t.subtask.name} is {t.status}"
        if a.checkpoint_id not in t.backend.ready_ids():
            return f"{t.subtask.name} has no snapshot {a.checkpoint_id!r} waiting for its asynchronous phase"
        return None

    def apply(self, c, a):
        c.finish_async_snapshot(c.tasks[a.subtask], a.checkpoint_id)

    def describe(self, c, a):
        return f"{_name(c, a.subtask)} finishes the asynchronous phase of snapshot {a.checkpoint_id} and acknowledges"


@register
class FailAsyncSnapshotKind(_FailureKind):
    """A fault: offered (with ``RuntimeConfig.state_backend``) while the failure budget lasts,
    for every snapshot of a pending checkpoint whose synchronous phase is done and whose
    asynchronous phase has not run (the candidates of FinishAsyncSnapshot). A failure of the
    synchronous phase fails the task (``StreamTask.triggerCheckpointOnBarrier``): that is
    FailTask. Never switched off by swarm testing, like the other state-backend kinds."""

    action = FailAsyncSnapshot
    weight = 0.25
    optional = False
    shape = "cross"
    color = "#d00"

    def candidates(self, c):
        if c.storage is None:
            return ()
        return [_interned(FailAsyncSnapshot, t.id, cid) for t in c.tasks for cid in t.backend.ready_ids()]

    def precondition(self, c):
        if c.storage is None:
            return "no state backend is modelled (RuntimeConfig.state_backend): a snapshot has no asynchronous phase"
        return _FailureKind.precondition(self, c)

    def admits(self, c, a):
        if not _is_id(a.subtask, len(c.tasks)):
            return f"there is no subtask {a.subtask!r}"
        t = c.tasks[a.subtask]
        if t.status != RUNNING:
            return f"{t.subtask.name} is {t.status}"
        if a.checkpoint_id not in t.backend.ready_ids():
            return f"{t.subtask.name} has no snapshot {a.checkpoint_id!r} waiting for its asynchronous phase"
        if a.checkpoint_id not in c.coordinator.pending:
            return f"checkpoint {a.checkpoint_id!r} is not pending"
        return None

    def apply(self, c, a):
        c.fail_async_snapshot(c.tasks[a.subtask], a.checkpoint_id)

    def describe(self, c, a):
        return (f"the asynchronous phase of {_name(c, a.subtask)}'s snapshot {a.checkpoint_id} FAILS: "
                "it declines the checkpoint (CHECKPOINT_ASYNC_EXCEPTION)")


@register
class DiscardFileKind(ActionKind):
    action = DiscardFile
    weight = 1.0
    optional = False
    drain = 10
    shape = "cross"
    color = "#888"

    def candidates(self, c):
        if c.storage is None:
            return ()
        return [_interned(DiscardFile, p) for p in c.storage.scheduled]

    def precondition(self, c):
        return "no state backend is modelled (RuntimeConfig.state_backend)" if c.storage is None else None

    def admits(self, c, a):
        if a.path not in c.storage.scheduled:
            return f"no delete of {a.path!r} is scheduled"
        return None

    def apply(self, c, a):
        c.discard_file(a.path)

    def mark(self, c, a):
        return {"lane": STORAGE_LANE, "shape": self.shape, "color": self.color}

    def describe(self, c, a):
        return f"the state file {a.path} is deleted ({c.storage.scheduled[a.path]})"
# -- the control plane (model/controlplane.py): offered only with ModelScope.control_plane ---

@attrs.frozen(slots=True)
class RpcDeliver:
    """The RPC message at position ``index`` of the network's in-flight list is delivered."""

    index: int


@attrs.frozen(slots=True)
class RpcLose:
    """The RPC message at position ``index`` in flight is lost."""

    index: int


@attrs.frozen(slots=True)
class RpcDuplicate:
    """The RPC message at position ``index`` in flight is duplicated (a second copy in flight)."""

    index: int


@attrs.frozen(slots=True)
class Tick:
    """One heartbeat interval passes: heartbeat requests are sent, silent peers time out."""


@attrs.frozen(slots=True)
class LeaderLatchEvent:
    """JobManager process ``job_manager``'s LeaderLatch learns what the store says: it is
    granted leadership, loses it (its session expired), or joins the election again."""

    job_manager: int


@attrs.frozen(slots=True)
class LeaderRetrieval:
    """TaskExecutor ``task_executor``'s leader retrieval reads a new leader from the store."""

    task_executor: int


@attrs.frozen(slots=True)
class CrashJobManager:
    """JobManager process ``job_manager`` crashes (its memory is lost; its ZK session lives on
    until it expires)."""

    job_manager: int


@attrs.frozen(slots=True)
class StartJobManager:
    """A crashed JobManager process ``job_manager`` is started again and joins the election."""

    job_manager: int


@attrs.frozen(slots=True)
class ConnectionSuspended:
    """JobManager process ``job_manager`` loses its ZooKeeper connection (Curator's
    ``ConnectionState.SUSPENDED``): its session, and its latch node, may still live."""

    job_manager: int


@attrs.frozen(slots=True)
class ConnectionReconnected:
    """The suspended ZooKeeper connection of JobManager process ``job_manager`` is back with the
    same session (Curator's ``ConnectionState.RECONNECTED``)."""

    job_manager: int


@attrs.frozen(slots=True)
class ExpireSession:
    """ZooKeeper expires the session of JobManager process ``job_manager`` (Curator's
    ``ConnectionState.LOST``; its ephemeral latch node is deleted); a living process does not
    know it yet."""

    job_manager: int


@attrs.frozen(slots=True)
class CrashTaskExecutor:
    """TaskExecutor ``task_executor`` crashes with every task in its slots."""

    task_executor: int


@attrs.frozen(slots=True)
class StartTaskExecutor:
    """A crashed TaskExecutor ``task_executor`` is started again (a new incarnation)."""

    task_executor: int


@attrs.frozen(slots=True)
class JobReachedTerminalState:
    """The running JobMaster's job reached a globally terminal state: the Dispatcher writes
    its result to the JobResultStore."""


@attrs.frozen(slots=True)
class CleanupJob:
    """The leading Dispatcher cleans the finished job up: job graph, checkpoint pointers and
    counter leave the store; the JobMaster releases its slots."""


#: the swimlane of the HA store and of checkpoint storage (``component_lanes``)
HA_LANE, STORAGE_LANE = "ha", "storage"


def component_lanes(c) -> tuple:
    """The swimlanes of ``c``'s components beside its subtasks, ``{"id", "name"}`` each: one per
    JobManager process (``jm<j>``: its ResourceManager, Dispatcher and JobMaster), one per
    TaskExecutor (``te<i>``) and the HA store when the control plane runs; checkpoint storage
    with a state backend. The ids are the ``lane`` / ``from_lane`` of the kinds' marks."""
    out = []
    if c.deployment is not None:
        out.append({"id": DEPLOYMENT_RM_LANE, "name": "ResourceManager"})
        out += [{"id": f"job{r.index}", "name": f"job {r.index}"} for r in c.deployment.jobs]
    if c.cp is not None:
        out += [{"id": f"jm{p.index}", "name": f"JobManager {p.index}"} for p in c.cp.jms]
        out += [{"id": f"te{t.index}", "name": f"TaskExecutor {t.index}"} for t in c.cp.tes]
        out.append({"id": HA_LANE, "name": "HA store"})
    if c.storage is not None:
        out.append({"id": STORAGE_LANE, "name": "checkpoint storage"})
    return tuple(out)


def rpc_lanes(cp, m) -> tuple:
    """(sender lane, receiver lane) of the RPC message ``m``: a TaskExecutor's lane, or the
    lane of the JobManager process whose ResourceManager / JobMaster holds the message's
    leader session (None when no process holds it any more)."""
    def process(token, role):
        for p in cp.jms:
            owner = p.rm if role == "rm" else p.jobmaster
            if owner is not None and owner.token == token:
                return f"jm{p.index}"
        return None
    te = f"te{m.te}" if hasattr(m, "te") else None
    name = type(m).__name__
    if name in ("RegisterTaskExecutor", "SlotRequestAnswer"):
        return te, process(m.token, "rm")
    if name in ("RegistrationResponse", "RequestSlot"):
        return process(m.token, "rm"), te
    if name == "DeclareResourceRequirements":
        return process(m.job_token, "jm"), process(m.token, "rm")
    if name == "OfferSlots":
        return te, process(m.job_token, "jm")
    if name == "HeartbeatRequest":
        return process(m.token, m.sender), te
    if name == "HeartbeatResponse":
        return te, process(m.token, m.receiver)
    return process(m.job_token, "jm"), te  # OfferSlotsAnswer, SubmitTask, FreeSlot, CancelTask


class _ControlPlaneKind(ActionKind):
    control_plane = True
    optional = False
    color = "#555"

    def precondition(self, c):
        return None if c.cp is not None else "the control plane is off (ModelScope.control_plane)"

    #: the action is a notification of the HA services (drawn as an arrow from their lane)
    from_ha = False

    def mark(self, c, a):
        m = {"lane": self.lane(c, a), "shape": self.shape, "color": self.color}
        return m | {"from_lane": HA_LANE} if self.from_ha else m

    def lane(self, c, a):
        """The component lane (``component_lanes``) the action happens in; None: the
        coordinator's lane (a clock tick, the job's terminal state)."""
        return None


@register
class ReleaseRestoredSnapshotKind(ActionKind):
    action = ReleaseRestoredSnapshot
    weight = 0.5
    optional = False
    shape = "cross"
    color = "#d00"

    def candidates(self, c):
        if c.storage is None or c.storage.restored is None:
            return ()
        return (ReleaseRestoredSnapshot(),)

    def precondition(self, c):
        st = c.storage
        if st is None or st.restored is None:
            return "the job did not restore a snapshot"
        if st.restored[1] != "NO_CLAIM":
            return f"the job owns the snapshot it restored ({st.restored[1]} mode)"
        if st.released:
            return "the restored snapshot was deleted already"
        if not st.completed_since_restore:
            return "no checkpoint completed since the restore (the job may still need the snapshot)"
        return None

    def apply(self, c, a):
        c.release_restored_snapshot()

    def describe(self, c, a):
        return f"the user deletes snapshot {c.storage.restored[0]} (restored in NO_CLAIM mode)"
class _InFlightKind(_ControlPlaneKind):
    def mark(self, c, a):
        sender, receiver = rpc_lanes(c.cp, c.cp.net.in_flight[a.index])
        if receiver is None:  # addressed to a leader session no process holds: shown at the sender
            return {"lane": sender, "shape": self.shape, "color": self.color}
        return {"lane": receiver, "from_lane": sender, "shape": self.shape, "color": self.color}

    def candidates(self, c):
        if c.cp is None:
            return ()
        return [_interned(self.action, i) for i in range(len(c.cp.net.in_flight))]

    def admits(self, c, a):
        if not _is_id(a.index, len(c.cp.net.in_flight)):
            return f"there is no RPC message in flight at position {a.index!r}"
        return None

    def describe(self, c, a):
        return f"{self.verb} {c.cp.net.in_flight[a.index]!r}"


@register
class RpcDeliverKind(_InFlightKind):
    action = RpcDeliver
    weight = 10.0
    drain = 10
    verb = "deliver"

    def admits(self, c, a):
        why = _InFlightKind.admits(self, c, a)
        if why is None and not c.cp.net.deliverable(a.index):
            why = (f"an earlier message of the same connection is in flight (Environment.rpc_order="
                   f"{c.environment.rpc_order!r})")
        return why

    def drains(self, c, a):
        return a.index == 0  # the drain delivers the oldest message (of the first connection)

    def apply(self, c, a):
        c.cp.deliver(c, a.index)


class _ControlPlaneFault(_ControlPlaneKind):
    """A control-plane fault: counted against ``max_failures`` like the data plane's."""

    disturbs = True

    shape = "cross"
    color = "#d00"

    #: a fault kind ``Environment.control_plane_faults`` may leave out
    cp_fault = True

    def precondition(self, c):
        if c.cp is None:
            return "the control plane is off (ModelScope.control_plane)"
        return _fault_refused(self, c)

    def apply(self, c, a):
        c.job.failures += 1
        c.cp.fault()
        self.fault(c, a)


def _fault_refused(kind, c) -> str | None:
    """Why a control-plane fault of ``kind`` may not be injected now (None: it may)."""
    if not c.failures_left():
        return "no failure may be injected now (the job is not running or the failure budget is spent)"
    allowed = c.environment.control_plane_faults
    if allowed is not None and kind.name not in allowed:
        return f"{kind.name} is not among Environment.control_plane_faults {allowed!r}"
    return None


class _NetworkFault(_InFlightKind, _ControlPlaneFault):
    """A fault of the network: a message lost or duplicated."""

    precondition = _ControlPlaneFault.precondition
    apply = _ControlPlaneFault.apply


@register
class RpcLoseKind(_NetworkFault):
    action = RpcLose
    weight = 0.1
    verb = "lose"

    def fault(self, c, a):
        c.events.append(("cp_rpc_lost", c.now, c.cp.net.take(a.index)))


@register
class RpcDuplicateKind(_NetworkFault):
    action = RpcDuplicate
    weight = 0.05
    verb = "duplicate"

    def fault(self, c, a):
        c.cp.net.send(c.cp.net.in_flight[a.index])


@register
class TickKind(_ControlPlaneKind):
    action = Tick
    weight = 0.3
    drain = 18
    shape = "square"

    def candidates(self, c):
        return (Tick(),) if c.cp is not None else ()

    def precondition(self, c):
        why = _ControlPlaneKind.precondition(self, c)
        capacity = c.environment.rpc_capacity
        if why is None and capacity is not None and len(c.cp.net.in_flight) >= capacity:
            why = (f"{len(c.cp.net.in_flight)} RPCs are in flight (Environment.rpc_capacity={capacity}): "
                   "the next heartbeat interval waits")
        return why

    def drains(self, c, a):
        return c.cp.needs_tick()

    def apply(self, c, a):
        c.cp.tick(c)

    def describe(self, c, a):
        return "a heartbeat interval passes"


class _JobManagerKind(_ControlPlaneKind):
    def lane(self, c, a):
        return f"jm{a.job_manager}"

    def candidates(self, c):
        if c.cp is None:
            return ()
        return [_interned(self.action, j) for j in range(len(c.cp.jms))]

    def admits(self, c, a):
        if not _is_id(a.job_manager, len(c.cp.jms)):
            return f"there is no JobManager process {a.job_manager!r}"
        return self.process_guard(c, c.cp.jms[a.job_manager])


class _TaskExecutorKind(_ControlPlaneKind):
    def lane(self, c, a):
        return f"te{a.task_executor}"

    def candidates(self, c):
        if c.cp is None:
            return ()
        return [_interned(self.action, i) for i in range(len(c.cp.tes))]

    def admits(self, c, a):
        if not _is_id(a.task_executor, len(c.cp.tes)):
            return f"there is no TaskExecutor {a.task_executor!r}"
        return self.te_guard(c, c.cp.tes[a.task_executor])


@register
class LeaderLatchEventKind(_JobManagerKind):
    action = LeaderLatchEvent
    weight = 2.0
    drain = 11
    color = "#06c"
    from_ha = True

    def process_guard(self, c, p):
        return None if c.cp.latch_event(c, p.index) else f"nothing changed for the latch of jm{p.index}"

    def apply(self, c, a):
        c.cp.apply_latch_event(c, a.job_manager)

    def describe(self, c, a):
        return f"jm{a.job_manager}'s LeaderLatch: {c.cp.latch_event(c, a.job_manager)}"


@register
class LeaderRetrievalKind(_TaskExecutorKind):
    action = LeaderRetrieval
    weight = 2.0
    drain = 12
    color = "#06c"
    from_ha = True

    def te_guard(self, c, te):
        return None if c.cp.retrieval_pending(te.index) else f"te{te.index} knows the current leader"

    def apply(self, c, a):
        c.cp.leader_retrieval(c, a.task_executor)

    def describe(self, c, a):
        return f"te{a.task_executor} retrieves the new leader"


@register
class CrashJobManagerKind(_JobManagerKind, _ControlPlaneFault):
    action = CrashJobManager
    weight = 0.05
    precondition = _ControlPlaneFault.precondition
    apply = _ControlPlaneFault.apply

    def process_guard(self, c, p):
        return None if p.alive else f"jm{p.index} is not running"

    def fault(self, c, a):
        c.cp.crash_job_manager(c, a.job_manager)

    def describe(self, c, a):
        return f"JobManager process jm{a.job_manager} CRASHES"


@register
class StartJobManagerKind(_JobManagerKind):
    action = StartJobManager
    weight = 1.0
    drain = 14

    def process_guard(self, c, p):
        if p.alive:
            return f"jm{p.index} runs"
        if p.session in c.cp.store.sessions:
            return f"the ZooKeeper session of the crashed jm{p.index} has not expired yet"
        return None

    def apply(self, c, a):
        c.cp.start_job_manager(c, a.job_manager)

    def describe(self, c, a):
        return f"JobManager process jm{a.job_manager} starts again"


@register
class ConnectionSuspendedKind(_JobManagerKind, _ControlPlaneFault):
    action = ConnectionSuspended
    weight = 0.05
    precondition = _ControlPlaneFault.precondition
    apply = _ControlPlaneFault.apply

    def process_guard(self, c, p):
        if not p.alive:
            return f"jm{p.index} is not running"
        if p.session not in c.cp.store.sessions:
            return f"jm{p.index} has no live ZooKeeper session"
        if c.cp.connection_suspended(p.index):
            return f"the ZooKeeper connection of jm{p.index} is SUSPENDED already"
        return None

    def fault(self, c, a):
        c.cp.suspend_connection(c, a.job_manager)

    def describe(self, c, a):
        return f"the ZooKeeper connection of jm{a.job_manager} is SUSPENDED"


@register
class ConnectionReconnectedKind(_JobManagerKind):
    action = ConnectionReconnected
    weight = 1.0
    drain = 13
    color = "#06c"
    from_ha = True

    def process_guard(self, c, p):
        if not p.alive or not c.cp.connection_suspended(p.index):
            return f"the ZooKeeper connection of jm{p.index} is not SUSPENDED"
        if c.cp.latch_event(c, p.index) == "revoke":
            # Curator delivers connection states in order: the LeaderLatch handles SUSPENDED
            # (revoking leadership unless it is tolerated) before RECONNECTED
            return f"jm{p.index}'s LeaderLatch has not handled SUSPENDED yet"
        return None

    def apply(self, c, a):
        c.cp.reconnect(c, a.job_manager)

    def describe(self, c, a):
        return f"the ZooKeeper connection of jm{a.job_manager} is RECONNECTED"


@register
class ExpireSessionKind(_JobManagerKind):
    """A crashed process's session expires as a matter of course (ZooKeeper's session timeout),
    and so does a suspended one's once its LeaderLatch handled SUSPENDED (LOST); a living,
    connected process's session expiring is a fault (a long pause)."""

    disturbs = True

    action = ExpireSession
    weight = 0.08
    drain = 13
    shape = "cross"
    color = "#d00"
    cp_fault = True

    def process_guard(self, c, p):
        if p.session not in c.cp.store.sessions:
            return f"jm{p.index} has no live ZooKeeper session"
        if not p.alive:
            return None
        if c.cp.connection_suspended(p.index):
            if not c.cp.may_lose_session(c, p.index):
                return f"jm{p.index}'s LeaderLatch has not handled SUSPENDED yet"
            return None
        return _fault_refused(self, c)

    def drains(self, c, a):
        p = c.cp.jms[a.job_manager]
        return not p.alive

    def apply(self, c, a):
        p = c.cp.jms[a.job_manager]
        if p.alive and not c.cp.connection_suspended(p.index):
            c.job.failures += 1  # the suspension it follows counted already
        c.cp.expire_session(c, a.job_manager)

    def describe(self, c, a):
        return f"the ZooKeeper session of jm{a.job_manager} EXPIRES (LOST)"


@register
class CrashTaskExecutorKind(_TaskExecutorKind, _ControlPlaneFault):
    action = CrashTaskExecutor
    weight = 0.05
    precondition = _ControlPlaneFault.precondition
    apply = _ControlPlaneFault.apply

    def te_guard(self, c, te):
        return None if te.alive else f"te{te.index} is not running"

    def fault(self, c, a):
        c.cp.crash_task_executor(c, a.task_executor)

    def describe(self, c, a):
        return f"TaskExecutor te{a.task_executor} CRASHES"


@register
class StartTaskExecutorKind(_TaskExecutorKind):
    action = StartTaskExecutor
    weight = 1.0
    drain = 15

    def te_guard(self, c, te):
        return None if not te.alive else f"te{te.index} runs"

    def apply(self, c, a):
        c.cp.start_task_executor(c, a.task_executor)

    def describe(self, c, a):
        return f"TaskExecutor te{a.task_executor} starts again"


@register
class JobReachedTerminalStateKind(_ControlPlaneKind):
    action = JobReachedTerminalState
    weight = 2.0
    drain = 16

    def candidates(self, c):
        return (JobReachedTerminalState(),) if c.cp is not None else ()

    def precondition(self, c):
        return _ControlPlaneKind.precondition(self, c) or c.cp.job_done_possible(c)

    def drains(self, c, a):
        return not c.cp.needs_tick()  # the drain settles heartbeats first: settled states are judged with a JobMaster

    def apply(self, c, a):
        c.cp.job_reached_terminal_state(c)

    def describe(self, c, a):
        return "the job reached its globally terminal state: the Dispatcher records its result"


@register
class CleanupJobKind(_ControlPlaneKind):
    action = CleanupJob
    weight = 0.05
    drain = 17

    def candidates(self, c):
        return (CleanupJob(),) if c.cp is not None else ()

    def precondition(self, c):
        return _ControlPlaneKind.precondition(self, c) or c.cp.cleanup_possible()

    def drains(self, c, a):
        return not c.cp.needs_tick()  # as JobReachedTerminalState: settle first

    def apply(self, c, a):
        c.cp.cleanup(c)

    def describe(self, c, a):
        return "the leading Dispatcher cleans the job up (job graph, checkpoints, counter; slots released)"


@register
class RescaleFromCheckpointKind(ActionKind):
    """Offered while the job runs, with ``Environment.rescale_from_checkpoints``, once a
    checkpoint completed: each parallelism of ``Environment.rescale_options`` other than the
    current one, unless Flink would refuse the restore (in-flight data on a rescaled pointwise
    edge). Not optional, so adding it leaves swarm testing's draws unchanged."""

    disturbs = True
    stops_job = True

    action = RescaleFromCheckpoint
    weight = 2.0
    optional = False
    shape = "square"
    color = "#9c4f00"

    def candidates(self, c):
        if not c.environment.rescale_from_checkpoints:
            return ()
        return [RescaleFromCheckpoint(o) for o in c.rescale_choices()[1:]]

    def precondition(self, c):
        env = c.environment
        if not env.rescale_from_checkpoints:
            return "Environment.rescale_from_checkpoints is off"
        if c.job.status != RUNNING or c.job.stopping is not None:
            return "the job is not running (or is stopping with a savepoint)"
        if c.job.checkpoint_rescales >= env.max_checkpoint_rescales:
            return f"the run already rescaled from a checkpoint {env.max_checkpoint_rescales} time(s)"
        if c.coordinator.store.get_latest_checkpoint() is None:
            return "no completed checkpoint to restore"
        return None

    def admits(self, c, a):
        if not isinstance(a.parallelism, tuple) or a.parallelism not in c.rescale_choices()[1:]:
            return (f"{a.parallelism!r} is not one of the offered new parallelisms {c.rescale_choices()[1:]} "
                    "(Environment.rescale_options)")
        return c.checkpoint_rescale_refusal(a.parallelism)

    def apply(self, c, a):
        c.rescale_from_checkpoint(a.parallelism)

    def describe(self, c, a):
        cp = c.coordinator.store.get_latest_checkpoint()
        return (f"the job is resubmitted from checkpoint {cp.checkpoint_id if cp else '?'} with parallelism "
                + ", ".join(f"{n}={p}" for n, p in a.parallelism))


@register
class RestartFromRetainedCheckpointKind(ActionKind):
    """A user's action that no engine is offered (no candidates): ``flinkspec validate`` takes
    it where a recorded run was cancelled and submitted from a retained checkpoint, and a
    replay of its counterexample checks the guard. Not optional, so swarm testing's draws stay
    unchanged. Not offered because two of its outcomes break invariants for reasons outside the
    model's runtime: a restore of a retained checkpoint older than one whose transactions the
    sink already committed aborts them again (``transactions_follow_two_phase_commit``: the
    user re-runs committed output), and with two retained checkpoints the user's deletion of
    a NO_CLAIM snapshot (``ReleaseRestoredSnapshot``, allowed once a checkpoint of the new job
    completed) may come while the store still lists it (``retained_checkpoints_restorable``)."""

    disturbs = True
    stops_job = True

    action = RestartFromRetainedCheckpoint
    optional = False
    shape = "square"
    color = "#c77c02"

    def candidates(self, c):
        return ()

    def precondition(self, c):
        if c.job.status != RUNNING or c.job.stopping is not None:
            return "the job is not running (or is stopping with a savepoint)"
        return None

    def admits(self, c, a):
        retained = c.coordinator.store.checkpoint_ids()
        if a.checkpoint_id not in retained:
            return f"checkpoint {a.checkpoint_id!r} is not retained (retained: {list(retained)})"
        return None

    def apply(self, c, a):
        c.restart_from_retained_checkpoint(a.checkpoint_id)

    def describe(self, c, a):
        return (f"the user cancels the job and submits it from retained checkpoint {a.checkpoint_id} "
                f"({c.config.restore_mode})")


# -- the network stack's credit-based flow control (model.creditbasedflowcontrol) -----------------

@attrs.frozen(slots=True)
class SendBuffer:
    """The next buffer of ``channel``'s subpartition crosses the network to its remote input
    channel, with the sender's backlog (network mode only)."""

    channel: int


@attrs.frozen(slots=True)
class AnnounceCredit:
    """``channel``'s remote input channel announces its unannounced credit (``AddCredit``)."""

    channel: int


class _NetworkKind(ActionKind):
    """A kind offered only in network mode (``RuntimeConfig.buffers_per_channel``): over the
    remote channels. Not optional, so swarm testing's draws stay unchanged; in the coarse mode
    it forms no candidates, so those runs take the steps they took before it existed."""

    optional = False
    drain = 0  # with Deliver: without them no buffer reaches a remote consumer
    moves_records = True
    color = "#0f8b8d"

    def candidates(self, c):
        net = c.net
        if not net.network:
            return ()
        act = self.action
        return [act(ch) for ch in range(len(net.queues)) if net.remote[ch]]

    def admits(self, c, a):
        net = c.net
        ch = a.channel
        if not net.network or not _is_id(ch, len(net.queues)) or not net.remote[ch]:
            return f"there is no remote channel {ch!r} (network mode only)"
        if c.job.status != RUNNING:
            return "the job is not running"
        return self.network_guard(net, ch)

    guard = admits  # no precondition

    def network_guard(self, net, ch) -> str | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def mark(self, c, a):
        ch = c.eg.channels[a.channel]
        return {"lane": ch.consumer, "from_lane": ch.producer, "shape": "dot", "color": self.color}


@register
class SendBufferKind(_NetworkKind):
    action = SendBuffer
    weight = 12.0

    def network_guard(self, net, ch):
        return net.sender_refusal(ch)

    def apply(self, c, a):
        c.net.send(a.channel)

    def describe(self, c, a):
        net = c.net
        ch = c.eg.channels[a.channel]
        e = net.queues[a.channel][net.arrived[a.channel]]
        return (f"{_name(c, ch.producer)} sends {_elem(e, c.config.barrier_mode)} over channel {a.channel} "
                f"to {_name(c, ch.consumer)} (credit {net.credit[a.channel]}, backlog after it "
                f"{max(net.backlog(a.channel) - 1, 0)})")


@register
class AnnounceCreditKind(_NetworkKind):
    action = AnnounceCredit
    weight = 6.0
    moves_records = False

    def network_guard(self, net, ch):
        if not net.credit_based:
            return "the pre-credit network stack announces no credit"
        if net.unannounced[ch] <= 0:
            return f"channel {ch} has no unannounced credit"
        return None

    def apply(self, c, a):
        c.net.announce(a.channel)

    def describe(self, c, a):
        ch = c.eg.channels[a.channel]
        return (f"{_name(c, ch.consumer)} announces {c.net.unannounced[a.channel]} credit(s) for channel "
                f"{a.channel} to {_name(c, ch.producer)} (AddCredit)")


# -- the deployment modes (model/clusterentrypoint.py): offered only with RuntimeConfig.deployment_mode --

@attrs.frozen(slots=True)
class SubmitJob:
    """A job is submitted to the session cluster's Dispatcher (``Dispatcher.submitJob``)."""


@attrs.frozen(slots=True)
class JobTaskFinished:
    """Task ``task`` of job ``job`` finishes."""

    job: int
    task: int


@attrs.frozen(slots=True)
class JobTaskFailed:
    """Task ``task`` of job ``job`` fails (the job fails: restart-strategy none)."""

    job: int
    task: int


@attrs.frozen(slots=True)
class CancelJob:
    """The user cancels job ``job``."""

    job: int


@attrs.frozen(slots=True)
class RevokeJobLeadership:
    """Job ``job``'s JobManagerRunner loses its leadership: its JobMaster stops (the job is SUSPENDED)."""

    job: int


@attrs.frozen(slots=True)
class GrantJobLeadership:
    """Job ``job``'s JobManagerRunner is granted leadership again: a new JobMaster recovers the job."""

    job: int


@attrs.frozen(slots=True)
class TaskTerminated:
    """The cancelled task ``(job, task, attempt)`` in slot ``slot`` of worker ``worker`` ends."""

    worker: int
    slot: int
    job: int
    task: int
    attempt: int


@attrs.frozen(slots=True)
class RegisterWorker:
    """The resource provider started pending worker ``worker`` and its TaskExecutor registers."""

    worker: int


@attrs.frozen(slots=True)
class DeploymentTick:
    """One heartbeat interval of the ActiveResourceManager: registration and idle timeouts."""


#: the ResourceManager's swimlane in a deployment mode (``component_lanes``)
DEPLOYMENT_RM_LANE = "rm"


class _DeploymentKind(ActionKind):
    deployment = True
    optional = False
    color = "#2a6f97"

    def precondition(self, c):
        d = c.deployment
        if d is None:
            return "no deployment mode (RuntimeConfig.deployment_mode)"
        if d.dispatcher.shut_down:
            return "the application cluster was shut down"
        return None

    def mark(self, c, a):
        job = getattr(a, "job", None)
        return {"lane": DEPLOYMENT_RM_LANE if job is None else f"job{job}", "shape": self.shape, "color": self.color}


class _JobKind(_DeploymentKind):
    """An action on job ``a.job`` (and, with ``per_task``, its task ``a.task``)."""

    per_task = False
    #: the job statuses the action needs
    statuses = ("RUNNING",)

    def candidates(self, c):
        d = c.deployment
        if d is None:
            return ()
        if self.per_task:
            return [_interned(self.action, r.index, t) for r in d.jobs for t in range(len(r.tasks))]
        return [_interned(self.action, r.index) for r in d.jobs]

    def admits(self, c, a):
        jobs = c.deployment.jobs
        if not _is_id(a.job, len(jobs)):
            return f"there is no job {a.job!r}"
        r = jobs[a.job]
        if r.status not in self.statuses:
            return f"job {a.job} is {r.status}"
        if self.per_task:
            if not _is_id(a.task, len(r.tasks)):
                return f"job {a.job} has no task {a.task!r}"
            if r.tasks[a.task] != "DEPLOYED":
                return f"task {a.task} of job {a.job} is {r.tasks[a.task]}, not running"
        return self.job_guard(c, r, a)

    def job_guard(self, c, r, a):
        return None


class _DeploymentFault(_JobKind):
    """A fault or an operator action on a job: counted against ``max_failures``."""

    disturbs = True
    shape = "cross"
    color = "#d00"

    def precondition(self, c):
        why = _DeploymentKind.precondition(self, c)
        if why is None and not c.failures_left():
            why = "no failure may be injected now (the failure budget is spent)"
        return why

    def apply(self, c, a):
        c.job.failures += 1
        self.fault(c, a)


@register
class SubmitJobKind(_DeploymentKind):
    action = SubmitJob
    weight = 1.0

    def candidates(self, c):
        return (SubmitJob(),) if c.deployment is not None else ()

    def precondition(self, c):
        why = _DeploymentKind.precondition(self, c)
        if why is None:
            d = c.deployment
            if d.mode != "session":
                why = "an application cluster runs the one job it started with"
            elif len(d.jobs) >= c.environment.job_submissions:
                why = f"{len(d.jobs)} job(s) submitted (Environment.job_submissions={c.environment.job_submissions})"
        return why

    def apply(self, c, a):
        r = c.deployment.submit_job()
        c.events.append(("dm_job_submitted", c.now, r.index))

    def describe(self, c, a):
        return f"job {len(c.deployment.jobs)} is submitted to the Dispatcher"

    def mark(self, c, a):
        return {"lane": f"job{len(c.deployment.jobs)}", "shape": "square", "color": self.color}


@register
class JobTaskFinishedKind(_JobKind):
    action = JobTaskFinished
    per_task = True
    weight = 1.0
    drain = 23

    def apply(self, c, a):
        c.deployment.task_finished(c, a.job, a.task)

    def describe(self, c, a):
        return f"task {a.task} of job {a.job} finishes"


@register
class JobTaskFailedKind(_DeploymentFault):
    action = JobTaskFailed
    per_task = True
    weight = 0.3

    def fault(self, c, a):
        c.deployment.task_failed(c, a.job, a.task)

    def describe(self, c, a):
        return f"task {a.task} of job {a.job} fails (the job fails: restart-strategy none)"


@register
class CancelJobKind(_DeploymentFault):
    action = CancelJob
    weight = 0.3
    color = "#b5651d"

    def fault(self, c, a):
        c.deployment.cancel_job(c, a.job)

    def describe(self, c, a):
        return f"the user cancels job {a.job}"


@register
class RevokeJobLeadershipKind(_DeploymentFault):
    action = RevokeJobLeadership
    weight = 0.3

    def fault(self, c, a):
        c.deployment.revoke_leadership(c, a.job)

    def describe(self, c, a):
        return f"job {a.job}'s JobManagerRunner loses leadership: its JobMaster stops and releases its slots"


@register
class GrantJobLeadershipKind(_JobKind):
    action = GrantJobLeadership
    statuses = ("SUSPENDED",)
    weight = 0.3  # (a leaderless while in which heartbeat intervals pass: idle workers are released)
    drain = 21

    def job_guard(self, c, r, a):
        if not c.deployment.dispatcher.recoverable(r):
            return f"job {a.job}'s JobGraph is not in the JobGraphStore"
        return None

    def apply(self, c, a):
        c.deployment.grant_leadership(c, a.job)

    def describe(self, c, a):
        return f"job {a.job}'s JobManagerRunner is granted leadership: a new JobMaster recovers the job"


@register
class TaskTerminatedKind(_DeploymentKind):
    action = TaskTerminated
    weight = 2.0
    drain = 20

    def candidates(self, c):
        d = c.deployment
        if d is None:
            return ()
        return [TaskTerminated(w, s, *e[:3]) for w in sorted(d.workers) for s, ts in sorted(d.workers[w].tasks.items())
                for e in ts if e[3] == "CANCELING"]

    def admits(self, c, a):
        t = c.deployment.workers.get(a.worker)
        if t is None:
            return f"there is no registered worker {a.worker!r}"
        if (a.job, a.task, a.attempt, "CANCELING") not in t.tasks.get(a.slot, ()):
            return f"no cancelled task {a.task} of job {a.job} (attempt {a.attempt}) in slot {a.slot} of worker {a.worker}"
        return None

    def apply(self, c, a):
        c.deployment.task_terminated(c, a.worker, a.slot, (a.job, a.task, a.attempt, "CANCELING"))

    def describe(self, c, a):
        return f"the cancelled task {a.task} of job {a.job} (attempt {a.attempt}) in worker {a.worker}/slot {a.slot} ends"


@register
class RegisterWorkerKind(_DeploymentKind):
    action = RegisterWorker
    weight = 1.0
    drain = 22

    def candidates(self, c):
        d = c.deployment
        if d is None or d.active is None:
            return ()
        return [RegisterWorker(w) for w in sorted(d.active.pending)]

    def admits(self, c, a):
        if c.deployment.active is None or a.worker not in c.deployment.active.pending:
            return f"worker {a.worker!r} is not pending"
        return None

    def apply(self, c, a):
        c.deployment.register_worker(c, a.worker)

    def describe(self, c, a):
        return f"the requested worker {a.worker} starts and its TaskExecutor registers"

    def mark(self, c, a):
        return {"lane": DEPLOYMENT_RM_LANE, "shape": "square", "color": self.color}


@register
class DeploymentTickKind(_DeploymentKind):
    action = DeploymentTick
    weight = 1.0
    drain = 24
    shape = "square"

    def candidates(self, c):
        return (DeploymentTick(),) if c.deployment is not None else ()

    def precondition(self, c):
        why = _DeploymentKind.precondition(self, c)
        if why is None and not c.deployment.ticking():
            why = "no timeout of the ActiveResourceManager is running"
        return why

    def apply(self, c, a):
        c.deployment.tick(c)

    def describe(self, c, a):
        return "a heartbeat interval of the ActiveResourceManager passes"


# -- views generated from the registry ------------------------------------------------------

ACTION_TYPES = tuple(KINDS)
ACTIONS_BY_NAME = {t.__name__: t for t in ACTION_TYPES}
#: every action kind's name, in registration order
ACTION_KINDS = tuple(t.__name__ for t in ACTION_TYPES)
#: kinds a run always has (without them nothing progresses or drains)
CORE_KINDS = tuple(u.name for u in KINDS.values() if not u.optional)
#: kinds swarm testing switches on or off per run
SWARM_KINDS = tuple(u.name for u in KINDS.values() if u.optional)
#: relative weight of picking an action of each kind (then uniform within the kind)
WEIGHTS = {u.name: u.weight for u in KINDS.values()}
#: the data plane's kinds, and every kind (a cluster without the control plane uses the first)
DATA_UNITS = tuple(u for u in KINDS.values() if not u.control_plane and not u.deployment)
ALL_UNITS = tuple(u for u in KINDS.values() if not u.deployment)
#: the deployment modes' kinds (a cluster with ``RuntimeConfig.deployment_mode`` uses them alone)
DEPLOYMENT_UNITS = tuple(u for u in KINDS.values() if u.deployment)
#: the control plane's fault kinds (``Environment.control_plane_faults`` names a subset)
CONTROL_PLANE_FAULTS = tuple(u.name for u in KINDS.values() if getattr(u, "cp_fault", False))
#: the action types that stop or resubmit the job (``ActionKind.stops_job``)
JOB_STOPS = tuple(t for t, u in KINDS.items() if u.stops_job)
#: the action types after which one more checkpoint id may exist (``ActionKind.triggers_checkpoint``)
CHECKPOINT_TRIGGERS = tuple(t for t, u in KINDS.items() if u.triggers_checkpoint)
#: the drain policy's order of kinds
DRAIN_ORDER = tuple(u for u in sorted((u for u in KINDS.values() if u.drain is not None), key=lambda u: u.drain))


def parse_action(text: str):
    """Parse an action's repr (``"Deliver(channel=3)"``) without ``eval``.

    Raises ValueError with the reason when the text is not a known action.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"not an action: {short(text)} ({e.msg})") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"not an action: {short(text)} (nested too deeply)") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not an action: {short(text)}")
    cls = ACTIONS_BY_NAME.get(node.func.id)
    if cls is None:
        raise ValueError(f"unknown action {short(node.func.id)} in {short(text)}")
    names = [k.arg for k in node.keywords]
    if len(set(names)) != len(names) or None in names:
        raise ValueError(f"repeated or ** keyword arguments in {short(text)}")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        return cls(*args, **kwargs)
    except (ValueError, TypeError, RecursionError) as e:
        raise ValueError(f"bad arguments in {short(text)}: {short_text(str(e))}") from None
