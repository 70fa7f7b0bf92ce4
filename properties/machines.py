"""Hypothesis stateful machines: thin rules over ``model``, invariants from ``spec``.

* :class:`ClusterMachine` — the whole cluster of a variant's scenario: each rule step picks
  one of the enabled actions (swarm testing: the machine's initialisation switches a random
  subset of the optional action kinds off); every *always* invariant is checked after each
  step; teardown drains the run and applies the exactly-once oracle.
* :func:`make_valve_machine` — ValveMachine: one StatusWatermarkValve fed watermarks, idle and
  active statuses, and every channel going idle in some order.
* :func:`check_window_assignment` with :data:`window_assignment_args` — window assigners over
  timestamps, sizes and offsets.
* :func:`make_barrier_handler_machine` — BarrierHandlerMachine: one task's
  SingleCheckpointBarrierHandler (aligned / alternating) or CheckpointBarrierTracker
  (at-least-once) fed barriers, cancel markers and EndOfPartition per FIFO channel, newer
  checkpoint ids and alignment timeouts, through a :class:`RecordingBarrierContext`.
* :func:`make_coordinator_machine` — CoordinatorMachine: one CheckpointCoordinator fed
  checkpoint/savepoint triggers, acks, declines, task failures, region and JobManager
  failovers (each followed by a restore) and time.
* :func:`check_rescaling` with :data:`rescale_args` — keyed, SPLIT_DISTRIBUTE, UNION and
  BROADCAST state restored with a new parallelism.

Every focused machine judges one invariant *subject* (``spec.invariant.SUBJECTS``) and checks
**every** registered invariant of it, as listed by ``spec.invariant.invariants(subject)`` at
the time of the check (:func:`judge`): *always* invariants after every step, *eventually* ones
when a machine's run ends (a one-shot check is its own end). No hand-kept list: an invariant
registered with a focused subject is checked by its machine from then on. Subjects are
recordings of what was sent to the mechanism and what it answered (``spec.focused``,
``spec.watermarks``); ``properties.coverage_map`` says which engine checks which subject.

``make_*`` functions build a machine class for a variant (knobs), so safe and unsafe
configurations are searched by the same machine.
"""

from __future__ import annotations

import ast
import inspect
import sys

import attrs

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model import actions as A
from model import seams
from model import stateassignment as SA  # module, not names: tests patch its functions
from model.checkpointbarrierhandler import (
    ALT_WAITING,
    WAITING,
    CheckpointBarrierTracker,
    SingleCheckpointBarrierHandler,
)
from model.cluster import migrate_config
from model.checkpointcoordinator import CheckpointCompleted, CheckpointCoordinator, CheckpointTriggered
from model.events import CheckpointBarrier
from model.inputfiles import short
from model.variants import Variant, generate
from model.watermarkstatus import RecordingValveOutput, StatusWatermarkValve
from model.windowing import SlidingEventTimeWindows, TumblingEventTimeWindows
from properties import scenario_kinds
from properties.engines import CORE_KINDS, SWARM_KINDS, Run
from properties.strategies import scenarios
from spec import load_all
from spec.invariant import Violation
from spec.invariant import invariants as registered_invariants


class ViolationFound(AssertionError):
    """Raised by a machine when an invariant is violated; carries the violation."""

    def __init__(self, violation, trace=(), scenario=None):
        self.violation = violation
        self.trace = tuple(trace)
        self.scenario = scenario
        super().__init__(f"[{violation.invariant}] {violation.message}")


#: The kinds a focused machine checks: *always* after every step, *eventually* when its run
#: ends. No focused machine tracks *sometimes* goals (coverage is a whole-cluster notion).
FOCUSED_KINDS = ("always", "eventually")


def focused_invariants(subject: str) -> tuple:
    """Every registered invariant of ``subject``, from the registry (never a hand-kept list).

    Raises ``ValueError`` if one has a kind no focused machine checks, so that an invariant
    registered for a focused subject can never be silently skipped."""
    load_all()  # every spec module registered before the registry is asked
    invs = registered_invariants(subject)
    odd = [f"{i.name} ({i.kind})" for i in invs if i.kind not in FOCUSED_KINDS]
    if odd:
        raise ValueError(f"no focused machine checks these {subject!r} invariants: {odd}; "
                         f"focused machines check the kinds {FOCUSED_KINDS}")
    return invs


def judge(subject: str, observed, kinds=FOCUSED_KINDS) -> None:
    """Check every registered invariant of ``subject`` whose kind is in ``kinds`` on the
    observation ``observed``, in registration order; raise :class:`ViolationFound` on the
    first violation."""
    for inv in focused_invariants(subject):
        if inv.kind in kinds:
            v = inv.check(observed)
            if v is not None:
                raise ViolationFound(v)


@attrs.frozen(eq=False)
class FocusedScenario:
    """What a focused counterexample replays from: the machine (a key of
    :data:`FOCUSED_MACHINES`), the knobs it was built with, and the values its
    initialisation drew (for a one-shot check: its arguments)."""

    machine: str
    knobs: dict
    init: dict

    def to_dict(self) -> dict:
        return {"kind": "focused", "machine": self.machine, "knobs": dict(self.knobs), "init": dict(self.init)}


@attrs.frozen
class FocusedOp:
    """One step of a focused machine: the operation's name and the values it was given;
    its text (``repr``) is ``name(key=value, ...)`` with Python literals, read back by
    :func:`parse_focused_op`."""

    name: str
    args: tuple  # ((key, value), ...), in the order the rule gave them

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args)})"


def parse_focused_op(text: str) -> FocusedOp:
    """``name(key=literal, ...)`` -> FocusedOp; ValueError naming the problem otherwise."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            raise ValueError
        args = tuple((kw.arg, ast.literal_eval(kw.value)) for kw in node.keywords)
        if any(k is None for k, _ in args):
            raise ValueError
    except (SyntaxError, ValueError):
        raise ValueError(f"not a focused operation (expected name(key=value, ...)): {text!r}") from None
    return FocusedOp(node.func.id, args)


def _plain(value):
    """A drawn value as a JSON-able literal (tuples and sets as sorted or ordered lists)."""
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class FocusedMachine(RuleBasedStateMachine):
    """Base of the focused stateful machines: judges ``SUBJECT``'s registered invariants on
    :meth:`observed` -- the *always* ones after initialisation and every step, the
    *eventually* ones at teardown when the run ended without an error.

    Every step is an operation: a rule draws its values, then calls :meth:`apply`, which
    records ``FocusedOp(name, values)`` and runs ``do_<name>(**values)``. A violation carries
    the recorded initialisation and operations, so it is written as a counterexample file
    and replayed without Hypothesis (:meth:`replay`)."""

    SUBJECT = ""
    #: the key of this machine in FOCUSED_MACHINES; KNOBS: what its factory was given; SEAMS:
    #: the seams (``model.seams``) that act while each operation runs
    MACHINE = ""
    KNOBS: dict = {}
    SEAMS: tuple = ()

    def observed(self):
        """The subject of the invariants, refreshed from the machine; None before ``start``."""
        return None

    def begin(self, **init) -> None:
        """Called first by ``start``: remember what initialisation drew."""
        self.init = {k: _plain(v) for k, v in init.items()}
        self.ops: list = []

    def apply(self, name: str, **values) -> None:
        """Record the operation, then run it (with the machine's seams acting)."""
        self.ops.append(FocusedOp(name, tuple((k, _plain(v)) for k, v in values.items())))
        with seams.active(self.SEAMS):
            getattr(self, f"do_{name}")(**values)

    def scenario(self) -> FocusedScenario:
        return FocusedScenario(self.MACHINE, dict(self.KNOBS), dict(self.init))

    def _judge(self, kinds, step):
        obs = self.observed()
        if obs is None:
            return None
        try:
            judge(self.SUBJECT, obs, kinds)
        except ViolationFound as e:
            return e.violation.at_step(step)
        return None

    def _found(self, v):
        return ViolationFound(v, tuple(self.ops), self.scenario())

    @invariant()
    def spec_holds(self):
        v = self._judge(("always",), len(self.ops) - 1 if self.ops else None)
        if v is not None:
            raise self._found(v)

    def teardown(self):
        # Hypothesis calls teardown in a ``finally``: while a step's exception (a violation, a
        # crash, the end of the example's data) propagates, the run did not end normally and
        # its end state is not judged.
        if sys.exc_info()[0] is not None:
            return
        v = self._judge(("eventually",), len(self.ops))
        if v is not None:
            raise self._found(v)

    def replay(self, init: dict, ops) -> Violation | None:
        """Re-run a recorded initialisation and operations without Hypothesis; the first
        violation, at the step the machine found it (None: the run holds)."""
        self.start(**init)
        v = self._judge(("always",), None)
        for i, op in enumerate(ops):
            if v is not None:
                return v
            self.apply(op.name, **dict(op.args))
            v = self._judge(("always",), i)
        return v or self._judge(("eventually",), len(self.ops))


def record_after_barrier(c, a) -> int:
    """1 if ``a`` delivers a record on a channel whose barrier of a checkpoint still open at
    the consumer was already taken (the records a snapshot's cut must account for: an
    at-least-once tracker lets them into the operator's state, an unaligned snapshot keeps
    them as channel state), else 0. Read-only: a search target, not a judgement."""
    if type(a) is not A.Deliver:
        return 0
    q, i = c.channels[a.channel], a.channel
    pos = c.read_pos[i] if c.blocking[i] else 0
    if len(q) <= pos or type(q[pos]) is not tuple:  # records are plain tuples (model.events)
        return 0
    task = c.tasks[c.consumer_of[i]]
    h, ch = task.handler, task.plan.local_of[i]
    if h is None:
        return 0
    pending = getattr(h, "pending", None)
    if isinstance(pending, list):  # CheckpointBarrierTracker: [id, barrier, aligned channels, aborted, count]
        return int(any(ch in e[2] and not e[3] for e in pending))
    return int(getattr(h, "current_id", -1) >= 0 and ch in getattr(h, "aligned", ()))


def make_cluster_machine(variant: Variant | None, *, max_steps: int = 250):
    """A machine class searching ``variant``'s scenarios (the seed is drawn), or, with
    ``variant=None``, any job, input and safe configuration (``properties.strategies``)."""
    scenario_strategy = (st.integers(0, 10_000).map(lambda seed: generate(variant, seed))
                         if variant is not None else scenarios(safe=True))

    class ClusterMachine(RuleBasedStateMachine):
        last_trace: tuple = ()
        last_scenario = None

        def __init__(self):
            super().__init__()
            self.run = None
            self.kinds = set(CORE_KINDS)
            self.max_pending = 0
            self.after_barrier = 0

        # swarm testing as Groce et al. describe it: each optional kind is on or off by a fair
        # coin per run (``st.sets`` would favour small, often empty sets, and a run without
        # TriggerCheckpoint can never break a checkpoint's cut)
        @initialize(scenario=scenario_strategy,
                    swarm=st.fixed_dictionaries({k: st.booleans() for k in sorted(SWARM_KINDS)}))
        def start(self, scenario, swarm):
            self.run = Run(scenario)
            ClusterMachine.last_scenario = scenario
            self.kinds = (set(CORE_KINDS) | {k for k, on in swarm.items() if on}) & self.run.offered

        @precondition(lambda self: self.run is not None and self.run.cluster.now < max_steps)
        @rule(data=st.data())
        def act(self, data):
            c = self.run.cluster
            acts = [a for a in self.run.enabled_actions() if type(a).__name__ in self.kinds]
            if not acts or c.status == "FAILED":
                return
            a = data.draw(st.sampled_from(acts), label="action")
            self.after_barrier += record_after_barrier(c, a)
            v = self.run.step(a)
            ClusterMachine.last_trace = tuple(c.trace)
            self.max_pending = max(self.max_pending, c.coordinator.num_pending + sum(c.blocked))
            if v is not None:
                raise ViolationFound(v, c.trace, self.run.scenario)

        def teardown(self):
            if self.run is None:
                return
            target(float(self.max_pending), label="checkpoints in flight and blocked channels")
            target(float(self.after_barrier), label="records taken after their channel's barrier")
            v = self.run.finish()
            ClusterMachine.last_trace = tuple(self.run.cluster.trace)
            if v is not None:
                raise ViolationFound(v, self.run.cluster.trace, self.run.scenario)

    ClusterMachine.__name__ = f"ClusterMachine[{variant.name if variant else 'any job'}]"
    return ClusterMachine


class ValveSubject:
    """One valve and what it emitted (the subject of ``spec.watermarks``' valve invariants)."""

    __slots__ = ("valve", "out")

    def __init__(self, valve, out):
        self.valve = valve
        self.out = out

    @property
    def emitted(self) -> list:
        """The watermarks the valve emitted, in order."""
        return self.out.watermarks


def make_valve_machine(knobs: dict | None = None, target_below: bool = False):
    """A machine feeding one StatusWatermarkValve (1-4 channels) watermarks, idle and active
    statuses, and all channels going idle in a drawn order; judges every
    registered ``valve`` invariant."""
    knobs = dict(knobs or {})

    class ValveMachine(FocusedMachine):
        SUBJECT = "valve"

        def __init__(self):
            super().__init__()
            self.s = None

        def observed(self):
            return self.s

        @initialize(n=st.integers(1, 4))
        def start(self, n):
            self.begin(n=n)
            out = RecordingValveOutput()
            self.s = ValveSubject(StatusWatermarkValve(n, **knobs), out)
            self.n = n

        @rule(data=st.data(), wm=st.integers(-5, 30))
        def watermark(self, data, wm):
            self.apply("watermark", channel=data.draw(st.integers(0, self.n - 1), label="channel"), wm=wm)

        def do_watermark(self, channel, wm):
            self.s.valve.input_watermark(wm, channel, self.s.out)

        @rule(data=st.data())
        def idle(self, data):
            self.apply("idle", channel=data.draw(st.integers(0, self.n - 1), label="channel"))

        def do_idle(self, channel):
            self.s.valve.input_watermark_status(True, channel, self.s.out)

        @rule(data=st.data())
        def active(self, data):
            self.apply("active", channel=data.draw(st.integers(0, self.n - 1), label="channel"))

        def do_active(self, channel):
            self.s.valve.input_watermark_status(False, channel, self.s.out)

        @precondition(lambda self: self.s is not None and not self.s.valve.is_idle
                      and len(set(self.s.valve.channel_watermarks)) > 1)
        @rule(data=st.data())
        def all_idle(self, data):
            """Every channel goes idle, in a drawn order (e.g. every upstream source ran out of
            splits), once the channels' watermarks differ: the output must then flush to the
            largest one whatever the order."""
            self.apply("all_idle", order=data.draw(st.permutations(range(self.n)), label="order"))

        def do_all_idle(self, order):
            for ch in order:
                self.s.valve.input_watermark_status(True, ch, self.s.out)

        def apply(self, name, **values):
            super().apply(name, **values)
            v = self.s.valve
            below = sum(1 for a, al in zip(v.channel_idle, v.channel_aligned) if not a and not al)
            self.most_below = max(getattr(self, "most_below", 0), below)

        def teardown(self):
            if self.s is not None and target_below:
                # active channels below the output watermark are where alignment bugs live: the
                # valve must then neither stall nor emit the min over no aligned channel
                target(float(getattr(self, "most_below", 0)), label="active channels not aligned")
            super().teardown()

    ValveMachine.__name__ = f"ValveMachine{knobs or ''}"
    ValveMachine.MACHINE, ValveMachine.KNOBS = "valve", {"knobs": knobs, "target_below": target_below}
    return ValveMachine


class WindowSubject:
    """The windows one element was assigned to (the subject of the ``window`` invariants)."""

    __slots__ = ("windows", "timestamp", "size", "offset")

    def __init__(self, windows, timestamp: int, size: int, offset: int):
        self.windows, self.timestamp, self.size, self.offset = windows, timestamp, size, offset


def check_window_assignment(ts: int, size: int, offset: int, slide: int | None, legacy: bool):
    """Assign ``ts``; raise ViolationFound on the first registered ``window`` invariant that fails
    (one assignment is a whole run: *always* and *eventually* invariants are both checked)."""
    if slide is None:
        assigner = TumblingEventTimeWindows(size, offset, legacy_window_start=legacy)
    else:
        assigner = SlidingEventTimeWindows(size, slide, offset, legacy_window_start=legacy)
    try:
        judge("window", WindowSubject(assigner.assign_windows(ts), ts, size, offset))
    except ViolationFound as e:
        sc = FocusedScenario("window", {"legacy": legacy}, {"ts": ts, "size": size, "offset": offset, "slide": slide})
        raise ViolationFound(e.violation, (), sc) from None


def _window_args(size: int, slide: int | None):
    bound = (slide or size) - 1
    return st.tuples(st.integers(-200, 200), st.just(size), st.integers(-bound, bound), st.just(slide))


#: (timestamp, size, offset, slide or None) with |offset| < slide (or size for tumbling windows).
window_assignment_args = st.integers(1, 20).flatmap(
    lambda size: st.one_of(st.none(), st.integers(1, size)).flatmap(lambda slide: _window_args(size, slide)))


# ---------------------------------------------------------------------------------------------
# Focused machines: one task's barrier handler, the CheckpointCoordinator, rescaling
# ---------------------------------------------------------------------------------------------


class RecordingBarrierContext:
    """The task context a barrier handler talks to, recording what it is asked (the subject of
    ``spec.focused``'s handler invariants). Channels are the task's local input indices.

    ``blocked`` is what the input gate blocks: the machine blocks a channel when it delivers an
    aligned barrier in exactly-once mode (credit-based blocking upstream), the handler resumes
    it. ``log`` holds ("trigger", id, unaligned, covered), ("abort", id, reason) and
    ("complete", id, covered), where ``covered`` = channels that delivered barrier ``id`` or
    their EndOfPartition by then.
    """

    def __init__(self, n: int, mode: str):
        self.mode = mode
        self.num_channels = n
        self.barrier_channels = list(range(n))
        self.bug_20645 = False
        self.blocked: set = set()
        self.closed: set = set()
        self.arrived: dict = {}
        self.log: list = []
        self.timers: dict = {}
        self.waiting = True

    def _covered(self, cid):
        return frozenset(self.arrived.get(cid, ())) | frozenset(self.closed)

    def block(self, ch):
        self.blocked.add(ch)

    def resume(self, ch):
        self.blocked.discard(ch)

    def resume_all(self):
        self.blocked.clear()

    def trigger(self, b, unaligned):
        self.log.append(("trigger", b.id, bool(unaligned), self._covered(b.id)))

    def abort(self, cid, reason):
        self.log.append(("abort", cid, reason))

    def start_persisting(self, cid, chans):
        pass

    def stop_persisting(self, ch):
        pass

    def stop_persisting_all(self):
        pass

    def channel_state_complete(self, cid):
        self.log.append(("complete", cid, self._covered(cid)))

    def register_timer(self, cid, deadline):
        self.timers[cid] = deadline


def _handler_waiting(h) -> bool:
    if not isinstance(h, SingleCheckpointBarrierHandler):
        return not h.pending
    return h.state in (WAITING, ALT_WAITING) and not h.pending


def make_barrier_handler_machine(mode: str, knobs: dict | None = None):
    """A machine driving one task's barrier handler over 1-4 input channels.

    ``mode``: ``"aligned"`` / ``"alternating"`` (SingleCheckpointBarrierHandler) or
    ``"at_least_once"`` (CheckpointBarrierTracker; ``knobs`` go to its constructor). Each
    channel is a FIFO from one producer: it delivers, for increasing checkpoint ids, either
    the barrier or a CancelCheckpointMarker (ids may be skipped), then maybe EndOfPartition;
    a blocked channel delivers nothing. Judges every registered ``barrier_handler`` invariant.
    """
    knobs = dict(knobs or {})

    class BarrierHandlerMachine(FocusedMachine):
        SUBJECT = "barrier_handler"

        def __init__(self):
            super().__init__()
            self.ctx = None

        def observed(self):
            if self.ctx is None:
                return None
            self.ctx.waiting = _handler_waiting(self.h)  # the machine's observation, refreshed
            return self.ctx

        @initialize(n=st.integers(1, 4), flip147=st.booleans(), timeout=st.integers(0, 3),
                    triggered=st.integers(0, 3))
        def start(self, n, flip147, timeout, triggered):
            self.begin(n=n, flip147=flip147, timeout=timeout, triggered=triggered)
            self.n = n
            self.ctx = RecordingBarrierContext(n, mode)
            if mode == "at_least_once":
                self.h = CheckpointBarrierTracker(n, checkpoints_after_tasks_finish=flip147, **knobs)
            else:
                self.h = SingleCheckpointBarrierHandler(
                    n, mode, timeout=timeout if mode == "alternating" else None,
                    checkpoints_after_tasks_finish=flip147, **knobs)
            self.latest = triggered  # newest checkpoint id the coordinator triggered
            self.ts = {i: 0 for i in range(1, triggered + 1)}
            self.last_id = [0] * n
            self.now = 0
            self.late_cancels = 0

        def _free(self):
            c = self.ctx
            return [ch for ch in range(self.n) if ch not in c.closed and ch not in c.blocked]

        def _pick(self, data, ids: bool):
            """A channel that can deliver (and, with ``ids``, the next checkpoint id it carries)."""
            free = self._free()
            if ids:
                free = [ch for ch in free if self.last_id[ch] < self.latest]
            if not free:
                return None, None
            ch = data.draw(st.sampled_from(free), label="channel")
            if not ids:
                return ch, None
            return ch, data.draw(st.integers(self.last_id[ch] + 1, self.latest), label="checkpoint")

        @precondition(lambda self: self.ctx is not None and self.latest < 8)
        @rule()
        def trigger_newer(self):
            self.apply("trigger_newer")

        def do_trigger_newer(self):
            self.now += 1
            self.latest += 1
            self.ts[self.latest] = self.now

        @precondition(lambda self: self.ctx is not None)
        @rule(data=st.data())
        def barrier(self, data):
            ch, cid = self._pick(data, True)
            if ch is not None:
                self.apply("barrier", channel=ch, checkpoint=cid)

        def do_barrier(self, channel, checkpoint):
            ch, cid = channel, checkpoint
            self.last_id[ch] = cid
            self.now += 1
            self.ctx.arrived.setdefault(cid, set()).add(ch)
            if mode != "at_least_once":
                self.ctx.blocked.add(ch)  # an aligned barrier blocks its channel upstream (credit)
            b = CheckpointBarrier(cid, self.ts[cid], timeoutable=(mode == "alternating"))
            self.h.process_barrier(self.ctx, b, ch, self.now)

        @precondition(lambda self: self.ctx is not None)
        @rule(data=st.data())
        def cancel(self, data):
            ch, cid = self._pick(data, True)
            if ch is not None:
                self.apply("cancel", channel=ch, checkpoint=cid)

        def do_cancel(self, channel, checkpoint):
            ch, cid = channel, checkpoint
            self.last_id[ch] = cid
            self.now += 1
            if cid < max(self.last_id):
                self.late_cancels += 1  # another channel already delivered a newer id
            if mode == "at_least_once":
                self.h.process_cancellation(self.ctx, cid, ch)
            else:
                self.h.process_cancellation(self.ctx, cid)

        @precondition(lambda self: self.ctx is not None)
        @rule(data=st.data())
        def end_of_partition(self, data):
            ch, _ = self._pick(data, False)
            if ch is not None:
                self.apply("end_of_partition", channel=ch)

        def do_end_of_partition(self, channel):
            self.now += 1
            self.ctx.closed.add(channel)
            self.h.process_end_of_partition(self.ctx, channel)

        @precondition(lambda self: self.ctx is not None and mode != "at_least_once")
        @rule(data=st.data())
        def alignment_timeout(self, data):
            """The alignment timer of a registered checkpoint fires (a no-op without timers)."""
            timers = sorted(self.ctx.timers)
            cid = data.draw(st.sampled_from(timers), label="timer") if timers else self.latest
            self.apply("alignment_timeout", checkpoint=cid)

        def do_alignment_timeout(self, checkpoint):
            deadline = self.ctx.timers.pop(checkpoint, None)
            if deadline is not None:
                self.now = max(self.now, deadline)
            self.h.on_alignment_timeout(self.ctx, checkpoint)

        def teardown(self):
            if self.ctx is not None:
                target(float(len(self.ctx.log)), label="triggers and aborts")
                target(float(self.late_cancels), label="late cancel markers")
            super().teardown()

    BarrierHandlerMachine.__name__ = f"BarrierHandlerMachine[{mode}{knobs or ''}]"
    BarrierHandlerMachine.MACHINE = "barrier_handler"
    BarrierHandlerMachine.KNOBS = {"mode": mode, "knobs": knobs}
    return BarrierHandlerMachine


class CoordinatorSubject:
    """What a CoordinatorMachine observed (the subject of ``spec.focused``'s coordinator invariants)."""

    def __init__(self, coordinator, tasks_to_ack, max_concurrent):
        self.coordinator = coordinator
        self.tasks_to_ack = frozenset(tasks_to_ack)
        self.max_concurrent = max_concurrent
        self.effects: list = []
        self.kinds: dict = {}
        self.acked: dict = {}
        self.acked_at_completion: dict = {}
        self.restores: list = []

    def record(self, effects):
        for e in effects:
            self.effects.append(e)
            if type(e) is CheckpointTriggered:
                self.kinds[e.checkpoint_id] = e.properties
            elif type(e) is CheckpointCompleted:
                self.acked_at_completion[e.checkpoint_id] = frozenset(self.acked.get(e.checkpoint_id, ()))


def make_coordinator_machine(seam_names: tuple = ()):
    """A machine driving one CheckpointCoordinator: trigger checkpoints and savepoints, acks and
    declines from tasks, task failures, region failover (abort pending), JobManager failover,
    time passing (min pause, checkpoint timeout) and restores. ``seam_names``: the seams that act on
    its operations (e.g. the unsafe ``restore-pending-checkpoints`` / ``FLINK-10354``). Judges
    every registered ``coordinator`` invariant."""
    seam_names = tuple(seam_names)

    class CoordinatorMachine(FocusedMachine):
        SUBJECT = "coordinator"

        def __init__(self):
            super().__init__()
            self.s = None

        def observed(self):
            return self.s

        @initialize(tasks=st.integers(1, 3), max_concurrent=st.integers(1, 3), retained=st.integers(1, 3),
                    min_pause=st.integers(0, 2), timeout=st.one_of(st.none(), st.integers(2, 6)),
                    queue=st.booleans(), unaligned=st.booleans())
        def start(self, tasks, max_concurrent, retained, min_pause, timeout, queue, unaligned):
            self.begin(tasks=tasks, max_concurrent=max_concurrent, retained=retained, min_pause=min_pause,
                       timeout=timeout, queue=queue, unaligned=unaligned)
            self.tasks = list(range(tasks))
            c = CheckpointCoordinator(self.tasks, self.tasks, max_concurrent_checkpoints=max_concurrent,
                                      max_retained=retained, min_pause_between_checkpoints=min_pause,
                                      checkpoint_timeout=timeout, queue_requests=queue,
                                      unaligned_checkpoints_enabled=unaligned)
            self.c = c
            self.now = 0
            self.s = CoordinatorSubject(c, self.tasks, max_concurrent)
            self.in_flight_at_restore = 0

        def _cid(self, data):
            """A pending checkpoint mostly; sometimes a finished or never-used id."""
            ids = sorted(self.c.pending)
            return data.draw(st.sampled_from(ids) if ids and data.draw(st.integers(0, 4), label="stale") else
                             st.integers(1, self.c.next_checkpoint_id), label="checkpoint")

        @precondition(lambda self: self.s is not None)
        @rule(kind=st.sampled_from(("checkpoint", "savepoint", "checkpoint", "stop_with_savepoint")),
              periodic=st.booleans())
        def trigger(self, kind, periodic):
            self.apply("trigger", kind=kind, periodic=periodic)

        def do_trigger(self, kind, periodic):
            self.s.record(self.c.trigger_checkpoint(self.now, kind, periodic).effects)

        @precondition(lambda self: self.s is not None)
        @rule(data=st.data())
        def ack(self, data):
            cid = self._cid(data)
            cp = self.c.pending.get(cid)
            todo = sorted(cp.not_yet_acknowledged) if cp is not None else []
            # mostly a task that still owes its ack; sometimes a duplicate or unknown subtask
            subs = todo if todo and data.draw(st.integers(0, 3), label="owed") else self.tasks + [len(self.tasks)]
            self.apply("ack", checkpoint=cid, subtask=data.draw(st.sampled_from(subs), label="subtask"))

        def do_ack(self, checkpoint, subtask):
            self.s.acked.setdefault(checkpoint, set()).add(subtask)
            self.s.record(self.c.receive_acknowledge(checkpoint, subtask, ("state", checkpoint, subtask),
                                                     now=self.now))

        @precondition(lambda self: self.s is not None and bool(self.c.pending))
        @rule(data=st.data(), every=st.booleans())
        def ack_many(self, data, every):
            """Every task to ack acknowledges one pending checkpoint, or (with more than one
            task) a proper subset of them does -- the state a failure often finds."""
            cid = data.draw(st.sampled_from(sorted(self.c.pending)), label="checkpoint")
            if every or len(self.tasks) == 1:
                subs = list(self.tasks)
            else:
                subs = sorted(data.draw(st.sets(st.sampled_from(self.tasks), min_size=1,
                                                max_size=len(self.tasks) - 1), label="subtasks"))
            self.apply("ack_many", checkpoint=cid, subtasks=subs)

        def do_ack_many(self, checkpoint, subtasks):
            for sub in subtasks:
                self.do_ack(checkpoint, sub)

        @precondition(lambda self: self.s is not None)
        @rule(data=st.data(), failed=st.booleans())
        def decline(self, data, failed):
            """A task declines a checkpoint, or fails (its unacknowledged checkpoints abort)."""
            sub = data.draw(st.sampled_from(self.tasks), label="subtask")
            self.apply("decline", subtask=sub, checkpoint=None if failed else self._cid(data))

        def do_decline(self, subtask, checkpoint):
            if checkpoint is None:
                self.s.record(self.c.fail_unacknowledged_pending_checkpoints_for(subtask))
            else:
                self.s.record(self.c.receive_decline(checkpoint, subtask, now=self.now))

        @precondition(lambda self: self.s is not None)
        @rule(job_manager=st.booleans())
        def failover(self, job_manager):
            """A region/global failover (abort every pending checkpoint) or a JobManager failover
            (pending checkpoints lost), then a restore."""
            self.apply("failover", job_manager=job_manager)

        def do_failover(self, job_manager):
            self._note_in_flight()
            if job_manager:
                self.s.record(self.c.job_manager_failover())
            else:
                self.s.record(self.c.abort_pending("JOB_FAILOVER_REGION", now=self.now))
            self._restore()

        @precondition(lambda self: self.s is not None)
        @rule(dt=st.integers(1, 3))
        def tick(self, dt):
            self.apply("tick", dt=dt)

        def do_tick(self, dt):
            self.now += dt
            self.s.record(self.c.expire_overdue(self.now))

        def teardown(self):
            if self.s is not None:
                target(float(self.in_flight_at_restore), label="acknowledged checkpoints in flight at a failover")
                target(float(sum(1 for p in self.s.kinds.values() if p.is_savepoint)), label="savepoints")
            super().teardown()

        def _note_in_flight(self):
            self.in_flight_at_restore = max(self.in_flight_at_restore,
                                            sum(1 for p in self.c.pending.values() if p.acknowledged))

        def _restore(self):
            done = [e.checkpoint_id for e in self.s.effects
                    if type(e) is CheckpointCompleted and not e.properties.is_savepoint]
            self.s.restores.append((self.c.restore_latest_checkpointed_state(), max(done) if done else None))

    CoordinatorMachine.__name__ = f"CoordinatorMachine{list(seam_names) or ''}"
    CoordinatorMachine.MACHINE, CoordinatorMachine.KNOBS = "coordinator", ({"seams": list(seam_names)} if seam_names else {})
    CoordinatorMachine.SEAMS = seam_names
    return CoordinatorMachine


class RescaleSubject:
    """One restore with new parallelism (the subject of ``spec.focused``'s rescaling invariants)."""

    __slots__ = ("max_parallelism", "old_parallelism", "new_parallelism", "old_keyed", "new_keyed",
                 "old_lists", "new_split", "union_old", "union_new", "broadcast_old", "broadcast_new")


def _rescale_case(draw_maxp):
    return draw_maxp.flatmap(lambda maxp: st.tuples(
        st.just(maxp), st.integers(1, maxp), st.integers(1, maxp),
        st.sets(st.integers(0, maxp - 1), max_size=maxp),
        st.lists(st.lists(st.integers(0, 9), max_size=5), min_size=1, max_size=2)))


#: (maxP, old p, new p, key groups holding state, per state name: list sizes seed) --
#: maxP mostly small (uneven ranges), sometimes Flink's default 128.
rescale_args = _rescale_case(st.one_of(st.integers(1, 24), st.just(128)))


def check_rescaling(args, seam_names: tuple = ()):
    """Snapshot keyed state (by old ranges), list, union and broadcast state with ``old p``,
    restore it with ``new p`` through ``model.stateassignment`` (the seams ``seam_names`` acting on
    the restore, e.g. the unsafe ``keygroups-by-modulo``); raise ViolationFound on the first
    registered ``rescaling`` invariant that fails (one restore is a whole run: *always* and
    *eventually* invariants are both checked)."""
    seam_names = tuple(seam_names)
    maxp, oldp, newp, kgs, sizes = args
    kgs = set(kgs)
    s = RescaleSubject()
    s.max_parallelism, s.old_parallelism, s.new_parallelism = maxp, oldp, newp
    # old keyed state: each old subtask holds the key groups of its own range (what Flink wrote)
    s.old_keyed = []
    for i in range(oldp):
        mine = set(SA.key_groups_for(maxp, oldp, i))
        s.old_keyed.append({kg: ("v", kg) for kg in sorted(kgs & mine)})
    with seams.active(seam_names):
        s.new_keyed = SA.assign_keyed_state(s.old_keyed, maxp, newp)
    # list state: per state name, old subtask i holds sizes[name][i % len] distinct entries
    s.old_lists, s.new_split = [], []
    start = 0
    for name, sz in enumerate(sizes):
        old = [[(name, i, j) for j in range(sz[i % len(sz)] if sz else 0)] for i in range(oldp)]
        new, start = SA.repartition_split_distribute(old, newp, start)
        s.old_lists.append(old)
        s.new_split.append(new)
    s.union_old = s.old_lists[0]
    s.union_new = SA.repartition_union(s.union_old, newp)
    s.broadcast_old = [[("b", i, j) for j in range(2)] for i in range(oldp)]
    s.broadcast_new = SA.repartition_broadcast(s.broadcast_old, newp)
    try:
        judge("rescaling", s)
    except ViolationFound as e:
        sc = FocusedScenario("rescaling", {"seams": list(seam_names)} if seam_names else {}, {"args": _plain(args)})
        raise ViolationFound(e.violation, (), sc) from None


# ---------------------------------------------------------------------------------------------
# Replaying a focused counterexample
# ---------------------------------------------------------------------------------------------


def _stateful(factory):
    def replay(sc: FocusedScenario, ops) -> Violation | None:
        return factory(**sc.knobs)().replay(sc.init, ops)
    replay.factory = factory  # the viewer re-runs the machine step by step (focused_states)
    return replay


def _plain_state(obj, depth: int = 0):
    """What a focused machine observed, as plain data for the viewer: objects by their fields
    (slots or attributes; a leading underscore dropped; callables and the machine's callbacks
    left out), two levels deep, deeper values as short text."""
    if isinstance(obj, (bool, int, float, str)) or obj is None:
        return obj
    if depth >= 2 or isinstance(obj, (list, tuple, set, frozenset, dict)):
        text = repr(sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj)
        return text if len(text) <= 240 else text[:237] + "..."
    names = [n for cls in type(obj).__mro__ for n in getattr(cls, "__slots__", ())] or list(vars(obj))
    out = {}
    for n in dict.fromkeys(names):
        v = getattr(obj, n, None)
        if n in ("ctx", "__weakref__", "__dict__") or callable(v):
            continue
        out[n.lstrip("_")] = _plain_state(v, depth + 1)
    return out


def focused_states(sc: FocusedScenario, ops) -> list:
    """The observed subject after initialisation and after each operation (a one-shot check:
    none), as plain data; the first operation that cannot run ends the list."""
    factory = getattr(FOCUSED_MACHINES[sc.machine], "factory", None)
    if factory is None:
        return []
    m = factory(**sc.knobs)()
    m.start(**sc.init)
    states = [_plain_state(m.observed())]
    for op in ops:
        try:
            m.apply(op.name, **dict(op.args))
        except Exception:  # noqa: BLE001 - the viewer shows what ran; replay_focused reports the error
            break
        states.append(_plain_state(m.observed()))
    return states


def _one_shot(check):
    def replay(sc: FocusedScenario, ops) -> Violation | None:
        if ops:
            raise ValueError(f"the one-shot check {sc.machine!r} takes no operations, got {len(ops)}")
        try:
            check(**sc.knobs, **sc.init)
        except ViolationFound as e:
            return e.violation
        return None
    return replay


#: machine name -> how to replay its counterexamples, ``(FocusedScenario, ops) -> Violation | None``;
#: every focused machine and one-shot check is here (``FocusedMachine.MACHINE`` names the key)
FOCUSED_MACHINES = {
    "valve": _stateful(make_valve_machine),
    "barrier_handler": _stateful(make_barrier_handler_machine),
    "coordinator": _stateful(lambda seams=(): make_coordinator_machine(seams)),
    "window": _one_shot(lambda legacy, ts, size, offset, slide: check_window_assignment(ts, size, offset, slide,
                                                                                          legacy)),
    "rescaling": _one_shot(lambda args, seams=(): check_rescaling(tuple(args), seams)),
}


# What each machine's initialisation takes, checked before a file is replayed: a value of the
# wrong type (a bool for a count, an object for a flag) or out of the range the model accepts
# is refused with its name, instead of replaying into nonsense. The fields must be exactly the
# parameters of the machine's ``start`` (or one-shot check): tests/test_bad_input.py compares them.
_MAX_INT = (1 << 63) - 1


def _int(lo: int, hi: int = _MAX_INT):
    def check(v):
        if type(v) is not int or not lo <= v <= hi:
            return f"an integer in {lo}..{hi}"
        return None
    return check


def _flag(v):
    return None if type(v) is bool else "true or false"


def _optional(check):
    def opt(v):
        return None if v is None else (lambda why: why and f"null or {why}")(check(v))
    return opt


def _rescale_args(v):
    what = "[maxP, old p, new p, [key groups], [[list sizes]]] with 1 <= p <= maxP <= 32768"
    if not isinstance(v, list) or len(v) != 5:
        return what
    maxp, oldp, newp, kgs, sizes = v
    if _int(1, 32768)(maxp) or _int(1, 32768)(oldp) or _int(1, 32768)(newp) or oldp > maxp or newp > maxp:
        return what
    if not isinstance(kgs, list) or any(_int(0, maxp - 1)(k) for k in kgs):
        return what + " (key groups in 0..maxP-1)"
    if (not isinstance(sizes, list) or not 1 <= len(sizes) <= 8
            or any(not isinstance(z, list) or len(z) > 64 or any(_int(0, 1000)(n) for n in z) for z in sizes)):
        return what + " (1 to 8 lists of sizes 0..1000)"
    return None


_SMALL = _int(1, 64)
INIT_FIELDS: dict = {
    "valve": {"n": _SMALL},
    "barrier_handler": {"n": _SMALL, "flip147": _flag, "timeout": _int(0, 10**6), "triggered": _int(0, 10**6)},
    "coordinator": {"tasks": _SMALL, "max_concurrent": _SMALL, "retained": _SMALL, "min_pause": _int(0, 10**6),
                    "timeout": _optional(_int(1, 10**6)), "queue": _flag, "unaligned": _flag},
    "window": {"ts": _int(-(1 << 62), 1 << 62), "size": _int(1, 1 << 40), "offset": _int(-(1 << 40), 1 << 40),
               "slide": _optional(_int(1, 1 << 40))},
    "rescaling": {"args": _rescale_args},
}


def _one_of(*allowed):
    def check(v):
        return None if v in allowed and type(v) is str else "one of " + ", ".join(allowed)
    return check


def _constructor_knobs(*classes):
    """A ``knobs`` object: keyword arguments of ``classes``' constructors, each of the type of
    its default (a flag takes true or false)."""
    params = {}
    for cls in classes:
        for name, p in inspect.signature(cls.__init__).parameters.items():
            if p.default is not inspect.Parameter.empty and type(p.default) in (bool, int):
                params[name] = type(p.default)

    def check(v):
        if not isinstance(v, dict):
            return "an object of " + ", ".join(sorted(params))
        for k, x in v.items():
            if k not in params:
                return f"an object of known knobs ({', '.join(sorted(params))}; {short(k)} is not one)"
            if type(x) is not params[k]:
                return f"an object whose {k!r} is {'true or false' if params[k] is bool else 'an integer'}"
        return None
    return check


def _seam_names(v):
    """A ``seams`` knob: registered seams (``model.seams``), no two overriding one definition."""
    if not isinstance(v, list) or any(type(n) is not str for n in v):
        return "a list of seam names"
    unknown = [n for n in v if n not in seams.SEAMS]
    if unknown:
        return f"a list of registered seams ({short(unknown[0])} is not one)"
    clash = seams.conflicts(v)
    return None if clash is None else f"a list of seams that can act together ({clash})"


#: focused knobs that were ``RuntimeConfig`` unsafe switches and are seams now: machine -> knob
#: -> the ``RuntimeConfig`` fields its value stood for (``model.cluster.RETIRED_KNOBS`` says
#: which seam each becomes)
RETIRED_FOCUSED_KNOBS: dict = {
    "coordinator": {"knobs": lambda v: v if isinstance(v, dict) else {}},
    "rescaling": {"assignment": lambda v: {"keygroup_assignment": v}},
}


def migrate_focused_knobs(machine: str, knobs: dict) -> dict:
    """``knobs`` of a focused counterexample with every retired knob replaced by its seams."""
    retired = RETIRED_FOCUSED_KNOBS.get(machine, {})
    if not isinstance(knobs, dict) or not any(k in retired or k == "bugs" for k in knobs):
        return knobs
    out = {k: v for k, v in knobs.items() if k not in retired}
    old, now = out.pop("bugs", None), out.get("seams")
    names = [n for n in (old if isinstance(old, list) else []) + (now if isinstance(now, list) else [])]
    for k, v in knobs.items():
        if k in retired:
            names += [n for n in migrate_config(retired[k](v))[1] if n not in names]
    if names:
        out["seams"] = names
    return out


KNOB_FIELDS: dict = {
    "valve": {"knobs": _constructor_knobs(StatusWatermarkValve), "target_below": _flag},
    "barrier_handler": {"mode": _one_of("aligned", "alternating", "at_least_once"),
                        "knobs": _constructor_knobs(SingleCheckpointBarrierHandler, CheckpointBarrierTracker)},
    "coordinator": {"seams": _seam_names},
    "window": {"legacy": _flag},
    "rescaling": {"seams": _seam_names},
}


def check_knobs(machine: str, knobs: dict) -> None:
    """ValueError naming the first knob ``machine``'s factory cannot take."""
    fields = KNOB_FIELDS[machine]
    unknown = sorted(set(knobs) - set(fields))
    if unknown:
        raise ValueError(f"the {machine} machine takes the knobs {', '.join(fields)}, not {', '.join(map(short, unknown))}")
    for k, v in knobs.items():
        why = fields[k](v)
        if why is not None:
            raise ValueError(f"'knobs.{k}' of the {machine} machine must be {why}, not {short(v)}")


def check_init(machine: str, init: dict) -> None:
    """ValueError naming the first field of ``init`` that ``machine`` cannot take."""
    fields = INIT_FIELDS[machine]
    missing = [k for k in fields if k not in init]
    unknown = sorted(set(init) - set(fields))
    if missing or unknown:
        raise ValueError(f"the {machine} machine's 'init' needs exactly {', '.join(fields)}"
                         + (f" (missing {', '.join(missing)})" if missing else "")
                         + (f" (unknown {', '.join(unknown)})" if unknown else ""))
    for k, check in fields.items():
        why = check(init[k])
        if why is not None:
            raise ValueError(f"'init.{k}' of the {machine} machine must be {why}, not {short(init[k])}")


def focused_scenario_from_dict(d: dict) -> FocusedScenario:
    """The header's scenario of a focused counterexample; ValueError naming what is wrong."""
    unknown = set(d) - {"kind", "machine", "knobs", "init"}
    if unknown:
        raise ValueError(f"unknown scenario key(s) {sorted(unknown)}")
    if d.get("machine") not in FOCUSED_MACHINES:
        raise ValueError(f"unknown focused machine {d.get('machine')!r} (known: {', '.join(FOCUSED_MACHINES)})")
    if not isinstance(d.get("knobs"), dict) or not isinstance(d.get("init"), dict):
        raise ValueError("'knobs' and 'init' must be objects")
    if migrate_focused_knobs(d["machine"], d["knobs"]) != d["knobs"]:
        raise ValueError(f"the knobs {d['knobs']} were unsafe switches and are seams now (the knob 'seams'); "
                         f"`python tools/migrate_knobs.py FILE...` rewrites such files")
    check_knobs(d["machine"], d["knobs"])
    check_init(d["machine"], d["init"])
    return FocusedScenario(d["machine"], d["knobs"], d["init"])


def replay_focused(sc: FocusedScenario, ops) -> Violation | None:
    """Re-run a focused counterexample: its first violation (None: it holds now)."""
    try:
        return FOCUSED_MACHINES[sc.machine](sc, ops)
    except (TypeError, KeyError, AttributeError, IndexError) as e:  # ops or values the machine cannot take
        raise ValueError(f"the operations do not replay on the {sc.machine} machine: {type(e).__name__}: {e}") \
            from None


# ---------------------------------------------------------------------------------------------
# Focused counterexample files: the "focused" scenario kind
# ---------------------------------------------------------------------------------------------


def _focused_header_schema() -> dict:
    """The header schema of the counterexample format with a focused scenario in place of the
    cluster's: the machine, the knobs its factory took, what its initialisation drew."""
    from properties import validation  # lazy: the schemas (jsonschema) only when a file is read

    header = dict(validation.schema("header"))
    props = dict(header["properties"])
    props["scenario"] = {"type": "object", "additionalProperties": False,
                         "required": ["kind", "machine", "knobs", "init"],
                         "properties": {"kind": {"const": "focused"},
                                        "machine": {"type": "string", "enum": sorted(FOCUSED_MACHINES)},
                                        "knobs": {"type": "object"}, "init": {"type": "object"}}}
    header["properties"] = props
    header["$id"] = header["$id"].replace("header", "focused-header")
    return header


def load_focused_lines(source: str, header: dict, objs: list, known_variant: bool):
    """(scenario, actions, violation) of a focused counterexample's parsed lines, every line
    checked (``model.inputfiles.InputError`` naming the line and the rule)."""
    from model.inputfiles import InputError, check_schema, short  # lazy: only when a file is read
    from properties import validation  # lazy, as above

    check_schema(header, _focused_header_schema(), source, "1")
    validation.check_header_names(header, source)
    if known_variant:
        validation.check_variant(header, source)
    try:
        scenario = focused_scenario_from_dict(header["scenario"])
    except ValueError as e:
        raise InputError(source, "1: scenario", str(e)) from None
    ops = []
    for n, obj in enumerate(objs[1:-1], 2):
        if obj["type"] != "action":
            raise InputError(source, f"{n}", f"expected an action line, got {short(obj['type'])}")
        check_schema(obj, validation.schema("action"), source, f"{n}")
        if obj["step"] != n - 2:
            raise InputError(source, f"{n}: step", f"action step {obj['step']} out of order (expected {n - 2})")
        try:
            ops.append(parse_focused_op(obj["action"]))
        except ValueError as e:
            raise InputError(source, f"{n}: action", str(e)) from None
    check_schema(objs[-1], validation.schema("violation"), source, f"{len(objs)}")
    violation = Violation.from_dict(objs[-1])
    if violation.invariant != header["invariant"]:
        raise InputError(source, f"{len(objs)}: invariant", f"the violation names {short(violation.invariant)} "
                                                            f"but the header names {short(header['invariant'])}")
    return scenario, tuple(ops), violation


def explain_focused(cx, all_state: bool = False) -> str:
    """``flinkspec show`` of a focused counterexample: the mechanism, what initialisation
    drew, the numbered operations, the violation (expected vs actual) and the invariant."""
    from spec.invariant import REGISTRY  # the registry is filled once spec is loaded (above)

    sc, h, rec = cx.scenario, cx.header, cx.violation
    out = [f"counterexample {cx.path}",
           f"  suite {h['variant']} (expected verdict: {' or '.join(h['expected_verdict'])}), engine {h['engine']}, "
           f"seed {h['seed']}, model {h.get('model_version')}",
           f"mechanism: the {sc.machine} focused machine, built with {sc.knobs}",
           "initialisation: " + (", ".join(f"{k}={v!r}" for k, v in sc.init.items()) or "-")]
    if cx.actions:
        out.append("steps:")
        out += [f"{i:4d}. {op!r}" + ("   <- the violation shows here" if rec.step == i else "")
                for i, op in enumerate(cx.actions)]
    else:
        out.append("(a one-shot check: the initialisation is the whole run)")
    now = replay_focused(sc, cx.actions)
    where = "at the end of the run" if rec.step == len(cx.actions) and cx.actions else \
        ("after initialisation" if rec.step is None else f"at step {rec.step}")
    out += ["", f"VIOLATION of {rec.invariant} {where}:", f"  {rec.message}", f"  expected: {rec.expected}",
            f"  actual:   {rec.actual}"]
    inv = REGISTRY.get(rec.invariant)
    if inv is not None:
        out.append(f"  the invariant ({inv.kind}, guards {inv.concept}): {inv.statement}")
    if now is None or now.invariant != rec.invariant or now.step != rec.step:
        out.append("  NOTE: replaying the file now does NOT reproduce this violation")
    return "\n".join(out)


scenario_kinds.register(scenario_kinds.ScenarioKind(
    name="focused", scenario_type=FocusedScenario, load_lines=load_focused_lines,
    to_dict=FocusedScenario.to_dict, replay=replay_focused, explain=explain_focused))
