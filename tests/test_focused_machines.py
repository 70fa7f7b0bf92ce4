"""Focused Hypothesis suites (barrier handler, barrier tracker, coordinator, rescaling) and the
invariants of ``spec/focused.py`` they check.

    machine rules ──► model/ (one handler, one coordinator, state assignment) ──► recorded subject
                                                                                   │
                                                        spec/focused.py invariants ◄┘

* every safe suite passes and every unsafe suite finds its own invariant (quick profile, seed 0);
* each invariant, on hand-built subjects: holds on a correct one, fails on a wrong one;
* the CheckpointBarrierTracker follows Flink's per-channel counting (small hand-driven runs);
* the machines have teeth: a handler or coordinator broken on purpose is caught.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hseed
from hypothesis.stateful import run_state_machine_as_test

from model import stateassignment as SA
from model.checkpointbarrierhandler import (
    DECLINED_ON_CANCELLATION_BARRIER,
    CheckpointBarrierTracker,
    SingleCheckpointBarrierHandler,
)
from model.checkpointcoordinator import (
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointCoordinator,
    CheckpointProperties,
    CheckpointTriggered,
    CompletedCheckpoint,
    NotifyCheckpointComplete,
)
from model.events import CheckpointBarrier
from properties import machines as M
from properties.focused import FOCUSED
from spec import focused as F
from spec.invariant import invariants

SAFE = ["barrier-handler-aligned", "barrier-handler-alternating", "barrier-tracker", "checkpoint-coordinator",
        "rescaling-state-assignment"]
UNSAFE = {
    "barrier-tracker-FLINK-5285": "handler_abort_once",
    "checkpoint-coordinator-restore-pending": "coordinator_restore_latest_completed",
    "checkpoint-coordinator-FLINK-10354": "coordinator_no_notify_for_savepoint",
    "rescaling-keygroups-modulo": "keygroup_assigned_to_range_owner",
}


# ---------------------------------------------------------------------------------------------
# the suites
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SAFE)
def test_safe_focused_suite_passes(name):
    r = FOCUSED[name].run("quick", 0)
    assert r.error is None
    assert r.verdict == "pass" and r.as_expected, r.first_violation
    assert r.runs >= 100  # the search really ran


@pytest.fixture(scope="module")
def unsafe_run(tmp_path_factory):
    """``unsafe_run(name)``: the unsafe suite's quick run from seed 0, its counterexample written
    to a folder of its own; each suite is searched once for the tests below (a search takes
    seconds)."""
    runs: dict = {}

    def get(name):
        if name not in runs:
            runs[name] = FOCUSED[name].run("quick", 0, corpus_dir=tmp_path_factory.mktemp(name))
        return runs[name]
    return get


@pytest.mark.parametrize("name", sorted(UNSAFE))
def test_unsafe_focused_suite_finds_its_violation(name, unsafe_run):
    r = unsafe_run(name)
    assert r.error is None
    assert r.as_expected, (r.verdict, r.first_violation)
    assert set(r.violations) == {UNSAFE[name]}
    assert r.first_violation["invariant"] == UNSAFE[name]


UNSAFE_ALL = sorted(n for n, s in FOCUSED.items() if not s.safe)


@pytest.mark.parametrize("name", UNSAFE_ALL)
def test_every_unsafe_focused_suite_writes_a_file_that_replays_to_its_violation(name, unsafe_run, capsys):
    """Every failure is a file: the shrunk example is written in the one counterexample format,
    and `flinkspec replay` / `show` reproduce the same invariant at the same step."""
    from flinkspec.cli import main
    from properties.counterexample import load_counterexample, replay_counterexample

    r = unsafe_run(name)
    assert r.as_expected and r.counterexample, (name, r.verdict)
    cx = load_counterexample(r.counterexample, known_variant=True)
    assert cx.variant == name and cx.header["engine"] == "hypothesis"
    assert cx.violation.invariant == r.first_violation["invariant"]
    ok, now = replay_counterexample(cx)
    assert ok, (cx.violation, now)
    assert main(["replay", r.counterexample]) == 0
    assert main(["show", r.counterexample]) == 0
    out = capsys.readouterr().out
    assert f"VIOLATION of {cx.violation.invariant}" in out and "NOTE" not in out
    assert r.runs_to_find is not None and 1 <= r.runs_to_find <= r.runs


def test_a_focused_file_that_no_longer_reproduces_is_reported(tmp_path, capsys, unsafe_run):
    """Replay is a real check: the same operations on the safe machine give no violation."""
    import json

    from flinkspec.cli import main

    r = unsafe_run("checkpoint-coordinator-restore-pending")
    path = tmp_path / "changed.ndjson"  # a changed copy: the run's own file stays for the other tests
    lines = Path(r.counterexample).read_text().splitlines()
    header = json.loads(lines[0])
    header["scenario"]["knobs"] = {}  # the safe coordinator (no seam)
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    assert main(["replay", str(path)]) == 1
    assert "NOT reproduced" in capsys.readouterr().out


@pytest.mark.parametrize("mutate, message", [
    (lambda h, ops: (h["scenario"].update(machine="nope"), ops)[1], "scenario.machine: must be one of"),
    (lambda h, ops: (h["scenario"].update(kind="nope"), ops)[1], "unknown scenario kind 'nope'"),
    (lambda h, ops: ["not an op"], "not a focused operation"),
    (lambda h, ops: ["frobnicate(x=1)"], "do not replay"),
])
def test_malformed_focused_files_are_one_line_errors(mutate, message, tmp_path, capsys, unsafe_run):
    import json

    from flinkspec.cli import main

    r = unsafe_run("checkpoint-coordinator-restore-pending")
    path = tmp_path / "changed.ndjson"  # a changed copy: the run's own file stays for the other tests
    objs = [json.loads(line) for line in Path(r.counterexample).read_text().splitlines()]
    header = objs[0]
    ops = mutate(header, [o["action"] for o in objs[1:-1]])
    lines = [json.dumps(header)] + [json.dumps({"type": "action", "step": i, "action": a}) for i, a in enumerate(ops)]
    path.write_text("\n".join(lines + [json.dumps(objs[-1])]) + "\n")
    assert main(["replay", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow  # every stateful suite twice (~15 s)
def test_stateful_suites_are_reproducible_from_their_seed():
    a = FOCUSED["barrier-tracker-FLINK-5285"].run("quick", 3)
    b = FOCUSED["barrier-tracker-FLINK-5285"].run("quick", 3)
    assert (a.runs, a.first_violation) == (b.runs, b.first_violation)


# ---------------------------------------------------------------------------------------------
# barrier handler invariants on hand-built subjects
# ---------------------------------------------------------------------------------------------


def _hs(mode="aligned", n=2, blocked=(), arrived=None, log=(), waiting=False):
    return NS(mode=mode, num_channels=n, blocked=set(blocked), arrived=arrived or {}, log=list(log), waiting=waiting)


ALL2 = frozenset({0, 1})


def test_blocked_until_settled():
    # barrier 3 arrived on channel 0, nothing triggered or aborted: channel 0 must be blocked
    assert F.handler_blocked_until_settled(_hs(blocked={0}, arrived={3: {0}})) is None
    v = F.handler_blocked_until_settled(_hs(blocked=set(), arrived={3: {0}}))
    assert v is not None and v.invariant == "handler_blocked_until_settled" and "channel(s) [0]" in v.message
    # an abort of a newer checkpoint (cancel marker 4) ends the alignment of 3
    assert F.handler_blocked_until_settled(_hs(arrived={3: {0}}, log=[("abort", 4, "x")])) is None
    # the tracker never aligns
    assert F.handler_blocked_until_settled(_hs(mode="at_least_once", arrived={3: {0}})) is None


def test_trigger_after_all_barriers():
    ok = [("trigger", 1, False, ALL2), ("trigger", 2, True, frozenset({0})), ("complete", 2, ALL2)]
    assert F.handler_trigger_after_all_barriers(_hs(log=ok)) is None
    early = F.handler_trigger_after_all_barriers(_hs(log=[("trigger", 1, False, frozenset({1}))]))
    assert early is not None and "channel(s) [0]" in early.message
    twice = F.handler_trigger_after_all_barriers(_hs(log=[("trigger", 1, False, ALL2)] * 2))
    assert twice is not None and "2 times" in twice.message
    # unaligned: the snapshot may be early, the channel state may not complete early
    v = F.handler_trigger_after_all_barriers(_hs(log=[("trigger", 2, True, frozenset({0})),
                                                      ("complete", 2, frozenset({0}))]))
    assert v is not None and "channel state" in v.message


def test_triggers_increasing():
    assert F.handler_triggers_increasing(_hs(log=[("trigger", 1, False, ALL2), ("trigger", 3, False, ALL2)])) is None
    v = F.handler_triggers_increasing(_hs(log=[("trigger", 3, False, ALL2), ("abort", 4, "x"),
                                              ("trigger", 2, False, ALL2)]))
    assert v is not None and v.actual == 2
    # not required of the at-least-once tracker (its task drops out-of-order barriers)
    assert F.handler_triggers_increasing(_hs(mode="at_least_once", log=[("trigger", 3, False, ALL2),
                                                                        ("trigger", 2, False, ALL2)])) is None


def test_abort_once():
    assert F.handler_abort_once(_hs(log=[("abort", 1, "a"), ("abort", 2, "a"), ("trigger", 3, False, ALL2)])) is None
    v = F.handler_abort_once(_hs(log=[("abort", 1, "a"), ("abort", 2, "a"), ("abort", 1, "b")]))
    assert v is not None and v.actual["checkpoint"] == 1
    v = F.handler_abort_once(_hs(log=[("trigger", 1, False, ALL2), ("abort", 1, "a")]))
    assert v is not None and "after the task took its aligned snapshot" in v.message
    # an unaligned snapshot may still be aborted (its channel state is incomplete)
    assert F.handler_abort_once(_hs(log=[("trigger", 1, True, frozenset({0})), ("abort", 1, "a")])) is None


def test_unblocked_when_waiting():
    assert F.handler_unblocked_when_waiting(_hs(blocked={0}, waiting=False)) is None
    assert F.handler_unblocked_when_waiting(_hs(blocked=set(), waiting=True)) is None
    assert F.handler_unblocked_when_waiting(_hs(blocked={1}, waiting=True)).actual == [1]
    assert F.handler_unblocked_when_waiting(_hs(mode="at_least_once", blocked={0})) is not None


# ---------------------------------------------------------------------------------------------
# coordinator invariants on hand-built subjects
# ---------------------------------------------------------------------------------------------

CP = CheckpointProperties.for_checkpoint()
SP = CheckpointProperties.for_savepoint()
SYNC = CheckpointProperties.for_sync_savepoint()


class _Store:
    def __init__(self, ids, latest=None):
        self.ids = tuple(ids)
        self.latest = latest

    def checkpoint_ids(self):
        return self.ids

    def get_latest_checkpoint(self):
        return self.latest


def _cs(effects=(), store_ids=(), latest=None, pending=None, acked=None, tasks=(0, 1), kinds=None, restores=(),
        max_concurrent=1):
    coord = NS(store=_Store(store_ids, latest), pending=pending or {})
    return NS(coordinator=coord, effects=list(effects), acked_at_completion=acked or {}, tasks_to_ack=frozenset(tasks),
              kinds=kinds if kinds is not None else F.triggered_kinds(effects), restores=list(restores),
              max_concurrent=max_concurrent)


def _trig(cid, p=CP):
    return CheckpointTriggered(cid, cid, p, (0, 1))


def _done(cid, p=CP, added=True, subsumed=()):
    return CheckpointCompleted(cid, cid, p, added, subsumed)


def test_completed_ids_increasing():
    ok = [_trig(1), _trig(2, SP), _trig(3), _done(1), _done(3), _done(2, SP, False)]
    assert F.coordinator_completed_ids_increasing(_cs(ok)) is None
    v = F.coordinator_completed_ids_increasing(_cs([_trig(1), _trig(2), _done(2), _done(1)]))
    assert v is not None and v.actual == 1


def test_complete_only_when_all_acked():
    full = {1: frozenset({0, 1})}
    assert F.coordinator_complete_only_when_all_acked(_cs([_trig(1), _done(1)], acked=full)) is None
    v = F.coordinator_complete_only_when_all_acked(_cs([_trig(1), _done(1)], acked={1: frozenset({1})}))
    assert v is not None and "subtask(s) [0]" in v.message


def test_savepoints_outside_store():
    ok = _cs([_trig(1), _trig(2, SP), _done(1), _done(2, SP, False)], store_ids=(1,))
    assert F.coordinator_savepoints_outside_store(ok) is None
    assert F.coordinator_savepoints_outside_store(_cs([_trig(2, SP), _done(2, SP, False)], store_ids=(2,))) is not None
    subsumed = _cs([_trig(1, SP), _trig(2), _done(2), CheckpointAborted(1, 1, "CHECKPOINT_SUBSUMED", None)], store_ids=(2,))
    v = F.coordinator_savepoints_outside_store(subsumed)
    assert v is not None and "subsumed" in v.message
    added = F.coordinator_savepoints_outside_store(_cs([_trig(2, SP), _done(2, SP, True)]))
    assert added is not None


def test_store_latest_is_newest():
    c1 = CompletedCheckpoint(1, 1)
    c3 = CompletedCheckpoint(3, 3)
    effects = [_trig(1), _trig(2, SP), _trig(3), _done(1), _done(3), _done(2, SP, False)]
    assert F.coordinator_store_latest_is_newest(_cs(effects, (1, 3), c3)) is None
    v = F.coordinator_store_latest_is_newest(_cs(effects, (1,), c1))
    assert v is not None and (v.expected, v.actual) == (3, 1)
    assert F.coordinator_store_latest_is_newest(_cs([], (), None)) is None
    assert F.coordinator_store_latest_is_newest(_cs([], (1,), c1)) is not None


def test_pending_within_max_concurrent():
    pend = {1: NS(properties=CP), 2: NS(properties=SP)}
    # a forced savepoint may run beside checkpoint 1 with max concurrent 1
    assert F.coordinator_pending_within_max_concurrent(_cs(pending=pend, max_concurrent=1)) is None
    pend[3] = NS(properties=CP)
    v = F.coordinator_pending_within_max_concurrent(_cs(pending=pend, max_concurrent=2))
    assert v is not None and v.actual == {"checkpoint": 3, "older": [1, 2]}
    assert F.coordinator_pending_within_max_concurrent(_cs(pending=pend, max_concurrent=3)) is None


def test_notify_only_completed():
    ok = [_trig(1), _done(1), NotifyCheckpointComplete(1, 1, -1, (0, 1))]
    assert F.coordinator_notify_only_completed(_cs(ok)) is None
    early = [_trig(1), NotifyCheckpointComplete(1, 1, -1, (0, 1)), _done(1)]
    assert F.coordinator_notify_only_completed(_cs(early)) is not None
    twice = ok + [NotifyCheckpointComplete(1, 1, -1, (0, 1))]
    assert "twice" in F.coordinator_notify_only_completed(_cs(twice)).message


def test_no_notify_for_savepoint():
    sync = [_trig(1, SYNC), _done(1, SYNC, False), NotifyCheckpointComplete(1, 1, -1, (0,))]
    assert F.coordinator_no_notify_for_savepoint(_cs(sync)) is None
    plain = [_trig(1, SP), _done(1, SP, False), NotifyCheckpointComplete(1, 1, -1, (0,))]
    assert F.coordinator_no_notify_for_savepoint(_cs(plain)).actual == {"savepoint": 1}


def test_restore_latest_completed():
    assert F.coordinator_restore_latest_completed(_cs(restores=[(None, None), (CompletedCheckpoint(2, 2), 2)])) is None
    assert F.coordinator_restore_latest_completed(_cs(restores=[(CompletedCheckpoint(1, 1), 2)])) is not None
    v = F.coordinator_restore_latest_completed(_cs(restores=[(CompletedCheckpoint(3, 3, complete=False), 3)]))
    assert v is not None and "never completed" in v.message


# ---------------------------------------------------------------------------------------------
# rescaling invariants on hand-built subjects
# ---------------------------------------------------------------------------------------------


def _rs(**kw):
    base = dict(max_parallelism=4, old_parallelism=2, new_parallelism=3,
                old_keyed=[{0: "a", 1: "b"}, {2: "c", 3: "d"}],
                new_keyed=[{0: "a", 1: "b"}, {2: "c"}, {3: "d"}],  # ranges for p=3, maxP=4: [0,1] [2] [3]
                old_lists=[[["x", "y"], ["z"]]], new_split=[[["x"], ["y"], ["z"]]],
                union_old=[["x", "y"], ["z"]], union_new=[["x", "y", "z"]] * 3,
                broadcast_old=[["b0"], ["b1"]], broadcast_new=[["b0"], ["b1"], ["b0"]])
    base.update(kw)
    return NS(**base)


def test_rescaling_invariants_hold_on_a_correct_restore():
    s = _rs()
    registered = invariants("rescaling")
    assert len(registered) == 5
    assert [inv.check(s) for inv in registered] == [None] * len(registered)


def test_keygroup_owner_and_preservation_fail_on_wrong_restores():
    modulo = _rs(new_keyed=[{0: "a", 3: "d"}, {1: "b"}, {2: "c"}])  # kg % 3
    v = F.keygroup_assigned_to_range_owner(modulo)
    assert v is not None and v.expected == {"key_group": 3, "subtask": 2}
    assert F.keyed_state_preserved(modulo) is None  # nothing lost: only misplaced
    lost = F.keyed_state_preserved(_rs(new_keyed=[{0: "a", 1: "b"}, {2: "c"}, {}]))
    assert lost is not None and "lost [3]" in lost.message
    dup = F.keyed_state_preserved(_rs(new_keyed=[{0: "a", 1: "b"}, {2: "c", 1: "b"}, {3: "d"}]))
    assert dup is not None and dup.actual == {"key_group": 1, "owners": [0, 1]}
    changed = F.keyed_state_preserved(_rs(new_keyed=[{0: "a", 1: "B"}, {2: "c"}, {3: "d"}]))
    assert changed is not None and "changed [1]" in changed.message


def test_list_state_invariants_fail_on_wrong_restores():
    unbalanced = F.split_distribute_exact_and_balanced(_rs(new_split=[[["x", "y"], [], ["z"]]]))
    assert unbalanced is not None and unbalanced.actual == [2, 0, 1]
    dup = F.split_distribute_exact_and_balanced(_rs(new_split=[[["x"], ["y", "x"], ["z"]]]))
    assert dup is not None and "['x']" in dup.message
    assert F.union_state_to_all(_rs(union_new=[["x", "y", "z"], ["x", "y"], ["x", "y", "z"]])) is not None
    assert F.broadcast_state_copied(_rs(broadcast_new=[["b0"], ["b1"], ["b1"]])) is not None


# ---------------------------------------------------------------------------------------------
# CheckpointBarrierTracker: Flink's per-channel counting
# ---------------------------------------------------------------------------------------------


def _tracker(n, **knobs):
    ctx = M.RecordingBarrierContext(n, "at_least_once")
    return ctx, CheckpointBarrierTracker(n, **knobs)


def _barrier(ctx, h, cid, ch):
    ctx.arrived.setdefault(cid, set()).add(ch)
    h.process_barrier(ctx, CheckpointBarrier(cid, 0), ch, 0)


def _eop(ctx, h, ch):
    ctx.closed.add(ch)
    h.process_end_of_partition(ctx, ch)


def test_tracker_end_of_partition_after_a_barrier_on_the_same_channel_counts_once():
    """Two channels x=0, y=1 (FLIP-147 on):

        x: B1, EOP ─┐
                    ├──► tracker     checkpoint 1 waits for y; B1 on y triggers it
        y: ····· B1 ┘
    """
    ctx, h = _tracker(2)
    _barrier(ctx, h, 1, 0)
    _eop(ctx, h, 0)
    assert ctx.log == []
    _barrier(ctx, h, 1, 1)
    assert ctx.log == [("trigger", 1, False, frozenset({0, 1}))]
    assert F.handler_trigger_after_all_barriers(ctx) is None


def test_tracker_cancel_then_end_of_partition_then_cancel_aborts_once():
    """x: C1, EOP; then y: C1 (the trailing marker of an aborted checkpoint) -> one abort."""
    ctx, h = _tracker(2)
    h.process_cancellation(ctx, 1, 0)
    _eop(ctx, h, 0)
    h.process_cancellation(ctx, 1, 1)
    assert ctx.log == [("abort", 1, DECLINED_ON_CANCELLATION_BARRIER)]


def test_tracker_without_flip147_aborts_pending_on_end_of_partition():
    ctx, h = _tracker(2, checkpoints_after_tasks_finish=False)
    _barrier(ctx, h, 1, 0)
    _eop(ctx, h, 1)
    assert [e[:2] for e in ctx.log] == [("abort", 1)] and not h.pending


def test_flink_5285_knob_aborts_a_checkpoint_twice_on_interleaved_cancels():
    """x: C1, C2; y: C1 (trailing). Fixed tracker: aborts 1 and 2 once each; the pre-FLINK-5285
    mechanism re-creates an aborted entry for 1 and aborts it again."""
    for knob, expected in ((False, [1, 2]), (True, [1, 2, 1])):
        ctx, h = _tracker(2, recreate_aborted=knob)
        h.process_cancellation(ctx, 1, 0)
        h.process_cancellation(ctx, 2, 0)
        h.process_cancellation(ctx, 1, 1)
        assert [e[1] for e in ctx.log if e[0] == "abort"] == expected
        assert (F.handler_abort_once(ctx) is None) is (not knob)


def test_tracker_can_trigger_an_older_checkpoint_after_a_newer_one_as_flink_does():
    """x: B1, EOP; y: B2 (one open channel: fast path triggers 2, 1's entry stays), EOP -> 1
    completes and triggers. Flink's task drops it (SubtaskCheckpointCoordinatorImpl: "Out of
    order checkpoint barrier"), so ``handler_triggers_increasing`` does not apply to the tracker."""
    ctx, h = _tracker(2)
    _barrier(ctx, h, 1, 0)
    _eop(ctx, h, 0)
    _barrier(ctx, h, 2, 1)
    _eop(ctx, h, 1)
    assert [e[1] for e in ctx.log if e[0] == "trigger"] == [2, 1]
    assert F.handler_triggers_increasing(ctx) is None
    assert F.handler_trigger_after_all_barriers(ctx) is None


# ---------------------------------------------------------------------------------------------
# the machines have teeth
# ---------------------------------------------------------------------------------------------

_SETTINGS = settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                     stateful_step_count=30, phases=[Phase.generate, Phase.shrink], print_blob=False)


def _search(machine):
    try:
        run_state_machine_as_test(hseed(0)(machine), settings=_SETTINGS)
    except M.ViolationFound as e:
        return e.violation.invariant
    return None


def test_aligned_machine_catches_a_handler_that_does_not_resume_after_the_snapshot(monkeypatch):
    def finish_without_resume(self, ctx, b):
        self.aligned.clear()
        self.last_done_id = self.current_id
        ctx.trigger(b, False)
        self.state = self._start_state()

    monkeypatch.setattr(SingleCheckpointBarrierHandler, "_finish_aligned", finish_without_resume)
    assert _search(M.make_barrier_handler_machine("aligned")) == "handler_unblocked_when_waiting"


def test_aligned_machine_catches_a_handler_that_miscounts_its_channels(monkeypatch):
    real = SingleCheckpointBarrierHandler.__init__

    def one_short(self, num_channels, mode, **kw):
        real(self, max(1, num_channels - 1), mode, **kw)

    monkeypatch.setattr(SingleCheckpointBarrierHandler, "__init__", one_short)
    assert _search(M.make_barrier_handler_machine("aligned")) == "handler_trigger_after_all_barriers"


def test_coordinator_machine_catches_a_decider_without_the_concurrency_limit(monkeypatch):
    monkeypatch.setattr(CheckpointCoordinator, "_decide_unqueued", lambda self, req, now: None)
    assert _search(M.make_coordinator_machine()) == "coordinator_pending_within_max_concurrent"


def test_rescaling_property_catches_a_lossy_split_distribute(monkeypatch):
    real = SA.repartition_split_distribute

    def drop_last(old, p, start=0):
        out, nxt = real(old, p, start)
        for lst in reversed(out):
            if lst:
                lst.pop()
                break
        return out, nxt

    monkeypatch.setattr(SA, "repartition_split_distribute", drop_last)
    with pytest.raises(M.ViolationFound) as e:
        M.check_rescaling((8, 2, 3, {1, 5}, [[2, 1]]))
    assert e.value.violation.invariant == "split_distribute_exact_and_balanced"
    M.check_rescaling((8, 2, 3, {1, 5}, [[]]))  # nothing to lose: holds
