"""Focused suites: Hypothesis searches of one mechanism, each with its expected verdict.

``FOCUSED[name]`` is a :class:`FocusedSuite`; ``run(profile, seed)`` returns a
``properties.result.SuiteResult``. A suite whose expected verdict names an invariant
passes only if Hypothesis finds (and shrinks) a violation of it.

Each suite is also an entry of ``model.catalog`` (family ``focused/<mechanism>``); its seam
is the call that configures its search: the machine factory (or check function) and the
knobs it is given, e.g. ``make_valve_machine({'flink_40475': True})``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Callable

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hseed
from hypothesis.stateful import run_state_machine_as_test

from model import catalog
from model.catalog import PASS
from model.variants import VARIANTS, Variant
from properties import machines as M
from properties.counterexample import write_counterexample
from properties.engines import replay
from properties.result import SuiteResult

EXAMPLES = {"quick": 120, "thorough": 2000}


@attrs.frozen
class Search:
    """How a focused suite searches: ``make_test(settings, seed, counter)`` returns a callable
    raising ``ViolationFound`` on a violation; ``family`` is the mechanism searched, ``seam``
    the call (with its knobs) that configures the search."""

    make_test: Callable
    family: str
    seam: str


def _call(fn: Callable, *args, **kwargs) -> str:
    """``fn(args, k=v)`` as text, a Variant argument shown by its name."""
    shown = [repr(a.name) if isinstance(a, Variant) else repr(a) for a in args]
    shown += [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{fn.__name__}({', '.join(shown)})"


@attrs.frozen
class FocusedSuite:
    name: str
    description: str
    expected: tuple
    search: Search
    flink_key: str | None = None
    #: max_examples = EXAMPLES[profile] * scale (unsafe suites whose bug needs a longer program)
    scale: int = 1

    @property
    def safe(self) -> bool:
        return self.expected == (PASS,)

    @property
    def family(self) -> str:
        return f"focused/{self.search.family}"

    @property
    def seam(self) -> str:
        return self.search.seam

    @property
    def make_test(self) -> Callable:
        return self.search.make_test

    def run(self, profile: str = "quick", base_seed: int = 0, corpus_dir=None, **_ignored) -> SuiteResult:
        """Run the search. The violation Hypothesis found and shrank (a whole-cluster trace, or
        a focused machine's initialisation and operations) is written to ``corpus_dir`` as a
        counterexample file (engine "hypothesis") that ``flinkspec replay`` and ``show`` read."""
        res = SuiteResult(name=self.name, expected=self.expected)
        st = settings(max_examples=EXAMPLES[profile] * self.scale, deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck), stateful_step_count=40,
                      phases=[Phase.generate, Phase.target, Phase.shrink], print_blob=False,
                      report_multiple_bugs=False)
        t0 = time.perf_counter()
        counter = {"n": 0}
        test = self.make_test(st, base_seed, counter)
        try:
            test()
        except M.ViolationFound as e:
            res.violations[e.violation.invariant] += 1
            res.first_violation = e.violation.to_dict()
            res.first_seed = base_seed
            res.runs_to_find = counter.get("first")
            if corpus_dir is not None and e.scenario is not None:
                res.counterexample = _write_hypothesis_counterexample(self, corpus_dir, e, base_seed)
        except Exception as e:  # an unexpected crash of the model is a failed suite, reported
            if os.environ.get("FLINKSPEC_RAISE_MODEL_CRASHES"):  # mutation testing: a crash is not a kill
                raise
            res.error = f"{type(e).__name__}: {e}"
        res.runs = counter["n"]
        res.seconds = time.perf_counter() - t0
        return res


def _write_hypothesis_counterexample(suite, corpus_dir, e, base_seed):
    """Write Hypothesis' shrunk example -- a whole-cluster trace, or a focused machine's
    initialisation and operations -- with the violation its replay gives (what ``flinkspec
    replay`` reproduces: for a cluster trace an always-invariant the machine judged only at the
    end may fire earlier); None when the replay shows no violation. The file's path."""
    if isinstance(e.scenario, M.FocusedScenario):
        v = M.replay_focused(e.scenario, e.trace)
    else:
        v, _ = replay(e.scenario, e.trace, finish=True)
    if v is None:
        return None
    path = write_counterexample(corpus_dir, variant=suite.name, expected=suite.expected, engine="hypothesis",
                                seed=base_seed, scenario=e.scenario, actions=e.trace, violation=v)
    return str(path)


def _machine_test(family: str, factory, *args) -> Search:
    """A focused suite running the stateful machine ``factory(*args)``."""
    def make(st, base_seed, counter):
        machine = factory(*args)

        class Counted(machine):
            def __init__(self):
                counter["n"] += 1
                super().__init__()

            def teardown(self):
                # Hypothesis calls teardown in a ``finally``: a violation raised by a step is
                # propagating now; one raised by the end-of-run check comes out of it
                if isinstance(sys.exc_info()[1], M.ViolationFound):
                    counter.setdefault("first", counter["n"])
                try:
                    super().teardown()
                except M.ViolationFound:
                    counter.setdefault("first", counter["n"])
                    raise

        def test():
            run_state_machine_as_test(hseed(base_seed)(Counted), settings=st)
        return test
    return Search(make, family, _call(factory, *args))


@contextlib.contextmanager
def _first_violation(counter):
    """Note in ``counter["first"]`` the example that first raised a violation (the runs it
    took to find it, before Hypothesis shrinks)."""
    try:
        yield
    except M.ViolationFound:
        counter.setdefault("first", counter["n"])
        raise


def _valve_test(knobs, target_below: bool = False) -> Search:
    """``target_below``: Hypothesis targets runs with many active channels below the output
    watermark (where the FLINK-7721 mechanism lives)."""
    if target_below:
        return _machine_test("valve", M.make_valve_machine, knobs, True)
    return _machine_test("valve", M.make_valve_machine, knobs)


def _window_test(legacy) -> Search:
    def make(st, base_seed, counter):
        @hseed(base_seed)
        @st
        @given(M.window_assignment_args)
        def test(args):
            counter["n"] += 1
            ts, size, offset, slide = args
            with _first_violation(counter):
                M.check_window_assignment(ts, size, offset, slide, legacy)
        return test
    return Search(make, "window", _call(M.check_window_assignment, legacy=legacy))


def _cluster_test(variant_name) -> Search:
    return _machine_test("hypothesis-cluster", M.make_cluster_machine,
                         VARIANTS[variant_name] if variant_name else None)


def job_hypothesis_suite(v: Variant) -> FocusedSuite:
    """The Hypothesis cluster machine over a user's job (``model.variants.job_variant``): not
    registered, run by ``flinkspec check --job``."""
    return FocusedSuite(f"{v.name} (hypothesis)", f"Hypothesis stateful machine over {v.description}",
                        (PASS,), _machine_test("hypothesis-cluster", M.make_cluster_machine, v))


def _rescaling_test(*seam_names) -> Search:
    def make(st, base_seed, counter):
        @hseed(base_seed)
        @st
        @given(M.rescale_args)
        def test(args):
            counter["n"] += 1
            with _first_violation(counter):
                M.check_rescaling(args, seam_names)
        return test
    return Search(make, "rescaling", _call(M.check_rescaling, **({"seam_names": seam_names} if seam_names else {})))


def _barrier_test(*args) -> Search:
    return _machine_test("barrier-handler", M.make_barrier_handler_machine, *args)


def _coordinator_test(*args) -> Search:
    return _machine_test("coordinator", M.make_coordinator_machine, *args)


FOCUSED: dict[str, FocusedSuite] = {}


def _add(s: FocusedSuite) -> None:
    """Register ``s`` here and in ``model.catalog``."""
    if s.name in FOCUSED:
        raise ValueError(f"focused suite {s.name!r} is declared twice")
    FOCUSED[s.name] = s
    catalog.register(catalog.Entry(
        name=s.name, family=s.family, expected=s.expected, description=s.description, flink_key=s.flink_key,
        seam=s.seam, command=f"flinkspec check --only {s.name}"))


_add(FocusedSuite("valve", "StatusWatermarkValve with the FLINK-40475 fix: strictly increasing, bounded, "
                  "all-idle flush", ("pass",), _valve_test({"flink_40475": True})))
_add(FocusedSuite("valve-FLINK-7728", "valve that only emits IDLE when all inputs go idle (no flush of the max)",
                  ("valve_all_idle_flush",), _valve_test({"flink_40475": True, "flush_on_all_idle": False}),
                  "FLINK-7728"))
_add(FocusedSuite("valve-FLINK-7721", "valve that emits a watermark when no channel is aligned "
                  "(Long.MAX_VALUE)", ("valve_output_bounded", "valve_output_strictly_increasing"),
                  _valve_test({"check_aligned_nonempty": False}, target_below=True), "FLINK-7721",
                  scale=4))  # (3 to 138 examples, median 12, on seeds 54150-54199; 120 did not on seed 54170)
_add(FocusedSuite("window-assigner", "tumbling and sliding event-time window assignment with offsets and "
                  "negative timestamps", ("pass",), _window_test(False)))
_add(FocusedSuite("window-assigner-FLINK-26334", "pre-FLINK-26334 window start formula (Java % on negative "
                  "timestamps)", ("window_contains_timestamp",), _window_test(True), "FLINK-26334"))
_add(FocusedSuite("hypothesis-cluster-aligned-2pc", "Hypothesis stateful machine over the whole cluster: "
                  "aligned exactly-once, 2PC sink, failures", ("pass",), _cluster_test("aligned-2pc")))
_add(FocusedSuite("hypothesis-cluster-any-job", "Hypothesis stateful machine over generated jobs (every "
                  "partitioner, exchange mode, chaining and slot sharing layout), inputs and safe configurations, "
                  "with failures and savepoints", ("pass",), _cluster_test(None)))
_add(FocusedSuite("hypothesis-cluster-at-least-once", "Hypothesis stateful machine over the whole cluster: "
                  "at-least-once with a 2PC sink", ("consistent_cut",), _cluster_test("at-least-once-2pc"),
                  scale=3))  # (1 to 97 examples to find it on seeds 73900-73929; 123 did not on seed 73911)
_add(FocusedSuite("barrier-handler-aligned", "SingleCheckpointBarrierHandler, aligned exactly-once: barriers, "
                  "cancel markers, EndOfPartition (FLIP-147 on/off) on 1-4 channels; blocking, triggers, aborts",
                  ("pass",), _barrier_test("aligned")))
_add(FocusedSuite("barrier-handler-alternating", "SingleCheckpointBarrierHandler with aligned checkpoint timeout "
                  "(alternating aligned/unaligned): timers fire, unaligned snapshots complete after all barriers",
                  ("pass",), _barrier_test("alternating")))
_add(FocusedSuite("barrier-tracker", "CheckpointBarrierTracker (at-least-once): never blocks, triggers once all "
                  "barriers arrived, aborts each checkpoint once", ("pass",), _barrier_test("at_least_once")))
_add(FocusedSuite("barrier-tracker-FLINK-5285", "CheckpointBarrierTracker that re-creates counts for already-aborted "
                  "checkpoints (pre-FLINK-5285): interleaved cancel markers abort a checkpoint again",
                  ("handler_abort_once",), _barrier_test("at_least_once", {"recreate_aborted": True}),
                  "FLINK-5285", scale=3))
_add(FocusedSuite("checkpoint-coordinator", "CheckpointCoordinator alone: checkpoints and savepoints, acks, "
                  "declines, task/region/JobManager failover, timeouts, queued and unqueued requests",
                  ("pass",), _coordinator_test()))
_add(FocusedSuite("checkpoint-coordinator-restore-pending", "CheckpointCoordinator that restores a checkpoint "
                  "which got acknowledgements but never completed", ("coordinator_restore_latest_completed",),
                  _coordinator_test(("restore-pending-checkpoints",)), scale=3))
_add(FocusedSuite("checkpoint-coordinator-FLINK-10354", "CheckpointCoordinator that notifies the tasks when a "
                  "plain savepoint completes", ("coordinator_no_notify_for_savepoint",),
                  _coordinator_test(("FLINK-10354",)), "FLINK-10354", scale=3))
_add(FocusedSuite("rescaling-state-assignment", "StateAssignmentOperation and RoundRobinOperatorStateRepartitioner "
                  "for any old/new parallelism and max parallelism: keyed, SPLIT_DISTRIBUTE, UNION, BROADCAST",
                  ("pass",), _rescaling_test()))
_add(FocusedSuite("rescaling-keygroups-modulo", "restore that hands new subtask i the key groups kg % p' == i "
                  "instead of its KeyGroupRange", ("keygroup_assigned_to_range_owner",), _rescaling_test("keygroups-by-modulo")))
