"""The invariant registry is what the engines check, all of it.

    spec/*.py ──@invariant(subject=…)──► REGISTRY ──invariants(subject)──► engines
                                                                            │
              properties/coverage_map.py: subject ──► the engines checking it ◄┘

* every invariant is well formed: a concept, a statement, a known kind, subject and scope;
* statically, every registered invariant's subject is checked by some engine (the coverage
  map), and every engine the map names exists;
* dynamically, each focused engine, run briefly with every registered invariant replaced by a
  recording spy, evaluates every invariant of its subject (so none is left out by a hand-kept
  list), and the run-level engine evaluates every placement invariant;
* invariants are pure: on every state those runs reach, evaluating an invariant twice leaves
  its subject unchanged and gives the same result both times.
"""

from __future__ import annotations

import enum
import functools
import types
from collections import Counter, defaultdict
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.stateful import run_state_machine_as_test

from model.executiongraph import compile_stream_graph
from model.slotsharing import TaskManager, allocate
from model.streamgraph import load_stream_graph
from properties import coverage_map
from properties import machines as M
from properties.engines import random_walk
from spec import load_all
from spec.invariant import KINDS, REGISTRY, SCOPES, SUBJECTS, Invariant, invariants
from spec.placement import check_placement

load_all()

EXAMPLES = Path(__file__).parent.parent / "examples"
FOCUSED_SUBJECTS = tuple(s for s in coverage_map.ENGINES if s != "run")

# ---------------------------------------------------------------------------------------------
# every invariant is well formed
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_invariant_is_well_formed(name):
    inv = REGISTRY[name]
    assert isinstance(inv, Invariant) and inv.name == name
    assert inv.concept.strip(), f"{name}: empty concept"
    assert inv.statement.strip(), f"{name}: empty statement"
    assert inv.kind in KINDS and inv.subject in SUBJECTS and inv.scope in SCOPES
    assert callable(inv.check)


def test_focused_subjects_hold_their_invariants():
    """The invariant modules of the focused engines registered each invariant with its
    subject (the whole-run ones of ``spec.checkpoint`` & co. keep subject ``run``)."""
    by_subject = Counter(inv.subject for inv in REGISTRY.values() if inv.subject != "run")
    assert by_subject == {"placement": 5, "barrier_handler": 5, "coordinator": 8, "rescaling": 5, "valve": 3,
                          "window": 1}
    modules = {inv.check.__module__ for inv in REGISTRY.values() if inv.subject == "run"}
    assert not modules & {"spec.focused", "spec.watermarks", "spec.placement"}


# ---------------------------------------------------------------------------------------------
# statically: every registered invariant is checked by an engine
# ---------------------------------------------------------------------------------------------


def test_every_registered_invariant_is_checked_by_some_engine():
    assert set(coverage_map.ENGINES) <= set(SUBJECTS)
    assert coverage_map.unchecked(REGISTRY) == [], "invariants no engine checks (add the engine to the map)"


@pytest.mark.parametrize("subject", sorted(coverage_map.ENGINES))
def test_the_engines_the_map_names_exist(subject):
    engines = coverage_map.engines_for(subject)
    assert engines
    for label, target in engines:
        assert label and callable(coverage_map.resolve(target)), target


def test_an_invariant_of_an_unmapped_subject_is_reported(monkeypatch):
    monkeypatch.delitem(coverage_map.ENGINES, "valve")
    assert coverage_map.unchecked(REGISTRY) == [i.name for i in invariants("valve")]


# ---------------------------------------------------------------------------------------------
# dynamically: each engine evaluates every invariant of its subject, purely
# ---------------------------------------------------------------------------------------------

_BRIEF = settings(max_examples=12, derandomize=True, database=None, deadline=None, stateful_step_count=12,
                  suppress_health_check=list(HealthCheck), phases=[Phase.generate], print_blob=False)


_CALLABLES = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def _snapshot(obj, _path=()):
    """A plain, comparable picture of everything reachable from ``obj`` (attributes, slots,
    containers in their order); a callable or class is pictured by its name."""
    if obj is None or isinstance(obj, (bool, int, float, str, bytes, enum.Enum)):
        return obj
    if isinstance(obj, _CALLABLES):
        return ("<callable>", getattr(obj, "__qualname__", repr(obj)))
    if id(obj) in _path:
        return ("<cycle>", type(obj).__name__)
    path = _path + (id(obj),)
    if isinstance(obj, dict):
        return ("dict", [(_snapshot(k, path), _snapshot(v, path)) for k, v in obj.items()])
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [_snapshot(x, path) for x in obj])
    if isinstance(obj, (set, frozenset)):
        return (type(obj).__name__, sorted((_snapshot(x, path) for x in obj), key=repr))
    fields = {}
    for cls in type(obj).__mro__:
        for slot in cls.__dict__.get("__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                fields[slot] = _snapshot(getattr(obj, slot), path)
    for k, v in getattr(obj, "__dict__", {}).items():
        fields[k] = _snapshot(v, path)
    return (type(obj).__qualname__, fields)


class Spy:
    """Replaces every registered invariant by one that records its evaluations and, on each,
    evaluates the real check twice, recording an impurity if the subject changed or the two
    results differ."""

    def __init__(self):
        self.called: dict[str, set] = defaultdict(set)
        self.evaluations: Counter = Counter()
        self.impure: list[str] = []

    def wrap(self, inv: Invariant) -> Invariant:
        real = inv.check

        def check(subject):
            self.called[inv.subject].add(inv.name)
            self.evaluations[inv.subject] += 1
            before = _snapshot(subject)
            first = real(subject)
            between = _snapshot(subject)
            second = real(subject)
            if between != before or _snapshot(subject) != before:
                self.impure.append(f"{inv.name} wrote into its subject ({type(subject).__name__})")
            if first != second:
                self.impure.append(f"{inv.name} gave {first!r}, then {second!r} on the same subject")
            return first

        return attrs.evolve(inv, check=check)


def _stateful(factory, *args):
    def run():
        run_state_machine_as_test(factory(*args), settings=_BRIEF)
    return run


def _window():
    @_BRIEF
    @given(M.window_assignment_args)
    def test(args):
        ts, size, offset, slide = args
        M.check_window_assignment(ts, size, offset, slide, False)
    test()


def _rescaling():
    @_BRIEF
    @given(M.rescale_args)
    def test(args):
        M.check_rescaling(args)
    test()


def _placement():
    eg = compile_stream_graph(load_stream_graph(EXAMPLES / "pipeline-features.toml"))
    assert check_placement(eg, allocate(eg, [TaskManager("tm", 9)])) == []
    # and through the run-level engine: placement_valid checks the placement after each start
    assert random_walk("aligned-2pc", 0).verdict == "pass"


#: focused subject -> brief runs of the engines that check it (safe configurations: nothing fails)
RUNS = {
    "barrier_handler": (_stateful(M.make_barrier_handler_machine, "aligned"),
                        _stateful(M.make_barrier_handler_machine, "alternating"),
                        _stateful(M.make_barrier_handler_machine, "at_least_once")),
    "coordinator": (_stateful(M.make_coordinator_machine),),
    "rescaling": (_rescaling,),
    "valve": (_stateful(M.make_valve_machine, {"flink_40475": True}),),
    "window": (_window,),
    "placement": (_placement,),
}


@pytest.fixture(scope="module")
def spied():
    """Run every focused engine briefly with the whole registry spied on: subject -> Spy."""
    out = {}
    for subject, runs in RUNS.items():
        spy = out[subject] = Spy()
        with pytest.MonkeyPatch.context() as mp:  # the registry is restored after each subject
            for name, inv in list(REGISTRY.items()):
                if inv.subject != "run":  # whole-run invariants are the run engines' (and their tests')
                    mp.setitem(REGISTRY, name, spy.wrap(inv))
            for run in runs:
                run()
    return out


def test_every_focused_subject_has_a_brief_run():
    assert set(RUNS) == set(FOCUSED_SUBJECTS)


@pytest.mark.parametrize("subject", FOCUSED_SUBJECTS)
def test_engine_evaluates_every_invariant_of_its_subject(spied, subject):
    want = {inv.name for inv in invariants(subject)}
    assert want, f"no invariant registered for {subject!r}"
    missing = sorted(want - spied[subject].called[subject])
    assert not missing, f"the {subject} engine never evaluated {missing}"


@pytest.mark.parametrize("subject", FOCUSED_SUBJECTS)
def test_engine_judges_only_its_own_subject(spied, subject):
    assert set(spied[subject].called) == {subject}


@pytest.mark.parametrize("subject", FOCUSED_SUBJECTS)
def test_invariants_are_pure(spied, subject):
    spy = spied[subject]
    assert spy.evaluations[subject] >= len(invariants(subject))
    assert spy.impure == []


def test_the_purity_check_catches_an_invariant_that_writes_into_its_subject():
    @attrs.define
    class Subject:
        seen: list

    def memo(s):
        s.seen.append(1)  # the kind of write an invariant must not do

    spy = Spy()
    inv = spy.wrap(Invariant(name="memo", kind="always", concept="c", statement="s", subject="valve", check=memo))
    assert inv.check(Subject([])) is None
    assert spy.impure == ["memo wrote into its subject (Subject)"]
