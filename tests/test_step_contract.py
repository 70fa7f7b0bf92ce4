"""The step contract every engine relies on (docs/architecture.md, "The step contract").

On states reached by seeded random walks of every variant:

* ``enabled_actions()`` is exactly the candidates whose kind's guard holds, in candidate order;
* ``step(a)`` refuses every candidate that is not enabled (and malformed actions) with
  ``model.errors.ActionNotEnabled``, leaving the state (fingerprint, clock, trace) untouched;
* ``copy()`` is independent: stepping the copy never changes the original, and the same
  steps on both give the same state; it builds what ``copy.deepcopy`` builds (same canonical
  form, no mutable object shared but the static deployment data);
* ``fingerprint()`` is path-independent: actions of two different source subtasks commute
  (every channel has one producer), and both orders give equal fingerprints;
* notifyCheckpointComplete is in flight only to tasks that act on it: delivering it to any
  other task would change nothing.
"""

from __future__ import annotations

import copy
import gc
import random
from collections import deque
from types import MethodType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model import actions as A
from model.cluster import Cluster
from model.errors import ActionNotEnabled
from model.fingerprint import canonical
from model.events import _same
from model.fingerprint import _BESIDE, _is_value_type
from model.variants import generate, variant, variant_names

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def walk(name: str, seed: int, steps: int) -> Cluster:
    """A cluster of ``name``'s scenario for ``seed`` after up to ``steps`` random enabled actions."""
    c = Cluster.from_scenario(generate(variant(name), seed))
    rng = random.Random(f"contract:{name}:{seed}")
    for _ in range(steps):
        acts = c.enabled_actions()
        if not acts:
            break
        c.step(rng.choice(acts))
    return c


def snapshot(c: Cluster) -> tuple:
    return c.fingerprint(), c.now, len(c.trace), repr(c.external.committed)


states = st.tuples(st.sampled_from(variant_names()), st.integers(0, 10_000), st.integers(0, 80))


@SETTINGS
@given(states)
def test_enabled_is_exactly_the_candidates_whose_guard_holds(s):
    c = walk(*s)
    candidates = c.candidate_actions()
    enabled = c.enabled_actions()
    assert enabled == [a for a in candidates if c.why_not_enabled(a) is None]
    assert len(set(enabled)) == len(enabled)


@SETTINGS
@given(states)
def test_step_refuses_what_is_not_enabled_and_leaves_the_state_untouched(s):
    c = walk(*s)
    before = snapshot(c)
    enabled = set(c.enabled_actions())
    refused = [a for a in c.candidate_actions() if a not in enabled]
    refused += [A.Deliver(-1), A.Deliver(10**9), A.Deliver("0"), A.FailTask(10**9), A.SourceEmit(-3),
                A.LoseTaskManager(99), A.NotifyCheckpointComplete(0, 10**6), A.CheckpointTimeout(10**6),
                A.RestartFromSavepoint((("nope", 3),)), A.AlignmentTimeout(10**9)]
    for a in refused:
        with pytest.raises(ActionNotEnabled):
            c.step(a)
        assert snapshot(c) == before, f"refusing {a!r} changed the state"
    # and every enabled action is accepted (on a copy each)
    for a in enabled:
        c.copy().step(a)


@SETTINGS
@given(states, st.integers(0, 2**32))
def test_copy_is_independent_and_equal(s, seed):
    c = walk(*s)
    before = snapshot(c)
    twin = c.copy()
    assert twin.fingerprint() == c.fingerprint()
    rng = random.Random(seed)
    taken = []
    for _ in range(25):
        acts = twin.enabled_actions()
        if not acts:
            break
        a = rng.choice(acts)
        twin.step(a)
        taken.append(a)
    assert snapshot(c) == before, "stepping the copy changed the original"
    for a in taken:
        c.step(a)
    assert c.fingerprint() == twin.fingerprint()
    assert c.external.committed == twin.external.committed


def _mutable_reachable(root, stop: set) -> dict:
    """id -> object for the mutable containers and model objects reachable from ``root``
    (through containers, model objects' fields and bound methods' owners; not through ``stop``,
    nor into what is beside the state and shared by every copy on purpose: a memo of a pure
    function, what the scenario fixes)."""
    out: dict = {}
    todo = [root]
    while todo:
        x = todo.pop()
        t = type(x)
        if id(x) in out or id(x) in stop or (t in _BESIDE and getattr(t, "__deepcopy__", None) is _same):
            continue
        if t in (tuple, frozenset):
            todo.extend(x)
        elif t in (list, set, deque):
            out[id(x)] = x
            todo.extend(x)
        elif t is dict:
            out[id(x)] = x
            todo.extend(x.keys())
            todo.extend(x.values())
        elif t is MethodType:
            todo.append(x.__self__)
        elif isinstance(x, int):
            continue  # the model's int subclasses (AllocationID, ExecutionAttemptID) are immutable
        elif t.__module__.startswith("model.") and not _is_value_type(t) and not isinstance(x, type):
            out[id(x)] = x
            todo.extend(v for v in gc.get_referents(x) if not isinstance(v, type))
    return out


@SETTINGS
@given(states)
def test_copy_builds_what_deepcopy_builds(s):
    c = walk(*s)
    fast = c.copy()
    shared = {id(c.eg), id(c.job_input), id(c.config), id(c.strategy), id(c.task_managers), id(c._ops)}
    shared |= {id(st) for st in c.eg.subtasks}
    memo = {i: obj for i, obj in ((id(o), o) for o in (c.eg, c.job_input, c.config, c.strategy, c.task_managers,
                                                       c._ops, *c.eg.subtasks))}
    slow = copy.deepcopy(c, memo)
    assert canonical(fast) == canonical(slow) == canonical(c)
    assert fast.trace == c.trace and fast.events == c.events
    mine = _mutable_reachable(c, shared)
    common = [repr(type(mine[i])) for i in mine.keys() & _mutable_reachable(fast, shared).keys()]
    assert not common, f"the copy shares mutable state with the original: {common}"
    assert len(mine) > 10


def test_fingerprint_changes_with_the_state():
    c = walk("aligned-2pc", 3, 0)
    seen = {c.fingerprint()}
    for a in [a for a in c.enabled_actions() if isinstance(a, A.SourceEmit)][:1]:
        c.step(a)
        assert c.fingerprint() not in seen


@SETTINGS
@given(states)
def test_actions_of_different_sources_commute_to_the_same_fingerprint(s):
    c = walk(*s)
    by_source: dict = {}
    for a in c.enabled_actions():
        if isinstance(a, (A.SourceEmit, A.SourceWatermark, A.SourceIdle, A.SourceActive)):
            by_source.setdefault(a.subtask, a)
    if len(by_source) < 2:
        return
    a, b = list(by_source.values())[:2]
    ab, ba = c.copy(), c.copy()
    ab.step(a)
    if b not in ab.enabled_actions():
        return
    ab.step(b)
    ba.step(b)
    if a not in ba.enabled_actions():
        return
    ba.step(a)
    assert ab.trace[-2:] != ba.trace[-2:]
    assert ab.fingerprint() == ba.fingerprint()


def test_commuting_sources_are_reached_in_some_state():
    """The commutation property above is not vacuous: some reached state has two sources
    with enabled actions that can be applied in both orders."""
    for seed in range(40):
        c = walk("aligned-2pc", seed, 5)
        sources = {a.subtask for a in c.enabled_actions() if isinstance(a, A.SourceEmit)}
        if len(sources) >= 2:
            return
    pytest.fail("no state with two emitting sources in 40 walks")


def test_time_counts_only_where_time_matters():
    """Without a time-sensitive knob, the same state reached at different steps has one
    fingerprint; with an alignment timeout, the clock is part of the state."""
    c = walk("aligned-2pc", 11, 0)
    assert not c.config.time_sensitive
    later = c.copy()
    later.now += 7
    assert later.fingerprint() == c.fingerprint()
    t = walk("alternating-2pc", 11, 0)
    assert t.config.time_sensitive
    tl = t.copy()
    tl.now += 7
    assert tl.fingerprint() != t.fingerprint()


def test_only_the_tasks_that_act_on_a_completed_checkpoint_are_notified():
    """notifyCheckpointComplete is in flight only to the tasks whose chain or backend acts on
    it (``StreamTask.checkpoint_listener``); to any other task, delivering it would change
    nothing, so the model counts it as delivered at once. Checked on walks of every variant
    for every pending checkpoint and the latest completed one; the check can tell: on some
    listening task a notification does change the state."""
    changed = 0
    for name in variant_names():
        for seed in range(2):
            for steps in (25, 70):
                c = walk(name, seed, steps)
                assert all(c.tasks[tid].checkpoint_listener for tid, _ in c.job.notifications), name
                latest = c.coordinator.store.get_latest_checkpoint_id()
                cids = set(c.coordinator.pending_ids()) | ({latest} if latest is not None else set())
                before = c.fingerprint()
                for t in c.tasks:
                    for cid in cids:
                        d = c.copy()
                        task = d.tasks[t.id]
                        ctx = d.context(task)
                        for node in task.plan.nodes:
                            node.notify_complete(ctx, cid)
                        if task.backend is not None:
                            task.backend.notify_complete(cid)
                        if not t.checkpoint_listener:
                            assert d.fingerprint() == before, f"{name}: {t.id} acts on checkpoint {cid}"
                        elif d.fingerprint() != before:
                            changed += 1
    assert changed >= 10, f"a notification changed a listening task only {changed} times"
