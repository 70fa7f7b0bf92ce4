"""Hypothesis stateful machines: thin rules over ``model``, invariants from ``spec``.

* :class:`ClusterMachine` — the whole cluster of a variant's scenario: each rule step picks
  one of the enabled actions (swarm testing: the machine's initialisation switches a random
  subset of the optional action kinds off); every *always* invariant is checked after each
  step; teardown drains the run and applies the exactly-once oracle.
* :class:`ValveMachine` — one StatusWatermarkValve fed watermarks, idle and active statuses.
* :func:`window_assignment_test` — window assigners over timestamps, sizes and offsets.

``make_*`` functions build a machine class for a variant (knobs), so safe and unsafe
configurations are searched by the same machine.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model import actions as A
from model.variants import Variant, generate
from model.watermarkstatus import RecordingValveOutput, StatusWatermarkValve
from model.windowing import SlidingEventTimeWindows, TumblingEventTimeWindows
from properties.engines import CORE_KINDS, SWARM_KINDS, Run
from spec import watermarks as W


class ViolationFound(AssertionError):
    """Raised by a machine when an invariant is violated; carries the violation."""

    def __init__(self, violation, trace=()):
        self.violation = violation
        self.trace = tuple(trace)
        super().__init__(f"[{violation.invariant}] {violation.message}")


def make_cluster_machine(variant: Variant | None, *, max_steps: int = 250):
    """A machine class searching ``variant``'s scenarios (the seed is drawn), or, with
    ``variant=None``, any job, input and safe configuration (``properties.strategies``)."""
    from properties.strategies import scenarios

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

        @initialize(scenario=scenario_strategy, kinds=st.sets(st.sampled_from(SWARM_KINDS)))
        def start(self, scenario, kinds):
            self.run = Run(scenario)
            ClusterMachine.last_scenario = scenario
            self.kinds = set(CORE_KINDS) | set(kinds)
            if any(o.kind == "window" for o in scenario.graph.operators):
                self.kinds.discard("SourceIdle")

        @precondition(lambda self: self.run is not None and self.run.cluster.now < max_steps)
        @rule(data=st.data())
        def act(self, data):
            c = self.run.cluster
            acts = [a for a in c.enabled_actions() if type(a).__name__ in self.kinds]
            if not acts or c.status == "FAILED":
                return
            a = data.draw(st.sampled_from(acts), label="action")
            v = self.run.step(a)
            ClusterMachine.last_trace = tuple(c.trace)
            self.max_pending = max(self.max_pending, c.coordinator.num_pending + sum(c.blocked))
            if v is not None:
                raise ViolationFound(v, c.trace)

        def teardown(self):
            if self.run is None:
                return
            target(float(self.max_pending), label="checkpoints in flight and blocked channels")
            v = self.run.finish()
            ClusterMachine.last_trace = tuple(self.run.cluster.trace)
            if v is not None:
                raise ViolationFound(v, self.run.cluster.trace)

    ClusterMachine.__name__ = f"ClusterMachine[{variant.name if variant else 'any job'}]"
    return ClusterMachine


class _ValveSubject:
    __slots__ = ("valve", "emitted")


def make_valve_machine(knobs: dict | None = None):
    knobs = dict(knobs or {})

    class ValveMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.s = None

        @initialize(n=st.integers(1, 4))
        def start(self, n):
            self.out = RecordingValveOutput()
            self.s = _ValveSubject()
            self.s.valve = StatusWatermarkValve(n, self.out, **knobs)
            self.s.emitted = self.out.watermarks
            self.n = n

        @rule(data=st.data(), wm=st.integers(-5, 30))
        def watermark(self, data, wm):
            ch = data.draw(st.integers(0, self.n - 1), label="channel")
            self.s.valve.input_watermark(wm, ch)

        @rule(data=st.data())
        def idle(self, data):
            self.s.valve.input_watermark_status(True, data.draw(st.integers(0, self.n - 1), label="channel"))

        @rule(data=st.data())
        def active(self, data):
            self.s.valve.input_watermark_status(False, data.draw(st.integers(0, self.n - 1), label="channel"))

        @invariant()
        def spec_holds(self):
            if self.s is None:
                return
            self.s.emitted = self.out.watermarks
            for inv in (W.valve_output_strictly_increasing, W.valve_output_bounded, W.valve_all_idle_flush):
                v = inv.check(self.s)
                if v is not None:
                    raise ViolationFound(v)

    ValveMachine.__name__ = f"ValveMachine{knobs or ''}"
    return ValveMachine


class _WindowSubject:
    __slots__ = ("windows", "timestamp", "size", "offset")


def check_window_assignment(ts: int, size: int, offset: int, slide: int | None, legacy: bool):
    """Assign ``ts``; raise ViolationFound if a window does not contain it."""
    if slide is None:
        assigner = TumblingEventTimeWindows(size, offset, legacy_window_start=legacy)
    else:
        assigner = SlidingEventTimeWindows(size, slide, offset, legacy_window_start=legacy)
    s = _WindowSubject()
    s.windows, s.timestamp, s.size, s.offset = assigner.assign_windows(ts), ts, size, offset
    v = W.window_contains_timestamp.check(s)
    if v is not None:
        raise ViolationFound(v)


def _window_args(size: int, slide: int | None):
    bound = (slide or size) - 1
    return st.tuples(st.integers(-200, 200), st.just(size), st.integers(-bound, bound), st.just(slide))


#: (timestamp, size, offset, slide or None) with |offset| < slide (or size for tumbling windows).
window_assignment_args = st.integers(1, 20).flatmap(
    lambda size: st.one_of(st.none(), st.integers(1, size)).flatmap(lambda slide: _window_args(size, slide)))
