"""Per task, snapshots in increasing checkpoint order (spec/checkpoint.py
``snapshots_in_checkpoint_order``) and the unsafe variant it catches."""

from __future__ import annotations

from model.variants import generate, variant
from properties.engines import Run, random_walk, replay, shrink
from scenario_util import assert_safe_twin_takes_the_same_actions, safe_twin


def _found():
    """Every seed of the first 50 whose walk finds the violation, with its walk."""
    found = [(seed, r) for seed in range(50)
             if (r := random_walk("unchecked-barrier-order", seed)).invariant == "snapshots_in_checkpoint_order"]
    assert found, "the search did not find the unsafe variant's violation in 50 runs"
    return found


def _twin_can_follow(scenario, actions) -> bool:
    """Whether the safe twin has each of ``actions`` enabled in turn (where the seam changed what
    a later step may do -- a barrier the safe handler skips keeps a channel blocked -- it cannot)."""
    run = Run(safe_twin(scenario))
    for a in actions:
        if run.cluster.why_not_enabled(a) is not None:
            return False
        run.step(a)
    return True


def test_variant_unchecked_barrier_order_is_caught_and_the_safe_twin_survives_the_same_actions():
    """two_stage job, unaligned checkpoints concurrent with aligned savepoints: the savepoint's
    aligned barrier arrives after the newer unaligned checkpoint's barrier overtook it. With
    the knob the handler snapshots the older checkpoint then; without it the barrier is skipped.
    Every shrunk counterexample replays to the violation; the first one the safe twin can follow
    step by step is followed, and violates nothing."""
    followed = 0
    for seed, r in _found():
        scenario = generate(variant("unchecked-barrier-order"), seed)
        actions = shrink(scenario, list(r.actions), "snapshots_in_checkpoint_order")
        v, _ = replay(scenario, actions, finish=False)
        assert v is not None and v.invariant == "snapshots_in_checkpoint_order"
        assert "took a snapshot of checkpoint" in v.message
        if _twin_can_follow(scenario, actions):
            assert_safe_twin_takes_the_same_actions(scenario, actions)
            followed += 1
            break
    assert followed == 1, "the safe twin could follow none of the counterexamples found"


def test_safe_runs_acknowledge_in_increasing_order():
    for name in ("unaligned-savepoints-2pc", "concurrent-checkpoints-2pc"):
        for seed in range(15):
            assert random_walk(name, seed).verdict == "pass", (name, seed)


def test_a_barrier_of_an_older_or_ended_checkpoint_reaches_tasks_and_changes_no_checkpoint():
    """The coverage goals ``older_barrier_reached_task`` and
    ``barrier_of_ended_checkpoint_reached_task`` are reached on walks with unaligned
    checkpoints and aligned savepoints, and at every state where one holds, delivering that barrier leaves the
    task's barrier handler on its checkpoint, takes no snapshot and sends nothing to the
    CheckpointCoordinator (``SingleCheckpointBarrierHandler`` ignores it)."""
    from model import actions as A  # the goal's states are stepped by hand here
    from model.checkpointbarrierhandler import SingleCheckpointBarrierHandler  # as above
    from model.events import CheckpointBarrier  # as above

    reached = {"older_barrier_reached_task": 0, "barrier_of_ended_checkpoint_reached_task": 0}
    delivered = 0
    for seed in range(24):
        r = random_walk("unaligned-savepoints-2pc", seed)
        for g in reached:
            reached[g] += g in r.goals
        run = Run(generate(variant("unaligned-savepoints-2pc"), seed))
        for a in r.actions:
            c = run.cluster
            for t in c.tasks:
                h = t.handler
                if type(h) is not SingleCheckpointBarrierHandler or t.status != "RUNNING":
                    continue
                for ch in (t.plan.input_channels[i] for i in t.plan.barrier_channels):
                    q = c.net.queues[ch]
                    if not q or type(q[0]) is not CheckpointBarrier or not h.is_obsolete(q[0]):
                        continue
                    if A.Deliver(ch) not in c.enabled_actions():
                        continue
                    # an aligned barrier's channel is resumed; a priority (unaligned) barrier
                    # passes a channel blocked by the current alignment, which stays blocked
                    stays_blocked = c.net.blocked[ch] and q[0].unaligned
                    probe = run.fork()
                    pt = probe.cluster.tasks[t.id]
                    before = (pt.handler.current_id, pt.handler.last_done_id, pt.last_triggered, len(pt.acked))
                    events = len(probe.cluster.events)
                    assert probe.step(A.Deliver(ch)) is None
                    assert (pt.handler.current_id, pt.handler.last_done_id, pt.last_triggered,
                            len(pt.acked)) == before
                    assert not [e for e in probe.cluster.events[events:] if e[0] in ("aborted", "completed")]
                    assert probe.cluster.net.blocked[ch] == stays_blocked
                    delivered += 1
            if run.step(a) is not None:
                break
    assert all(n >= 1 for n in reached.values()), reached
    assert delivered > 0


def test_variant_unchecked_trigger_order_is_caught_and_the_safe_twin_survives_the_same_actions():
    """Trigger RPCs in flight to the sources (``Environment.trigger_delivery = "any_order"``): a
    source gets checkpoint n+1's trigger before checkpoint n's. With the seam it snapshots n
    after n+1 (``snapshots_in_checkpoint_order``); Flink's task ignores the older trigger, and
    the safe twin survives the same actions. The quick profile's search finds it within 50 runs."""
    for seed in range(50):
        r = random_walk("unchecked-trigger-order", seed)
        if r.verdict == "violation":
            break
    assert r.invariant == "snapshots_in_checkpoint_order", "not found in 50 runs"
    scenario = generate(variant("unchecked-trigger-order"), seed)
    actions = shrink(scenario, list(r.actions), "snapshots_in_checkpoint_order")
    v, _ = replay(scenario, actions, finish=False)
    assert v is not None and v.invariant == "snapshots_in_checkpoint_order"
    assert any(type(a).__name__ == "DeliverCheckpointTrigger" for a in actions)
    assert_safe_twin_takes_the_same_actions(scenario, actions)


def test_late_trigger_goals_meet_their_floors_on_the_quick_profile():
    """``older_trigger_reached_task`` and ``aborted_trigger_reached_task`` apply only where the
    trigger RPCs are messages; the quick profile's suites of the variants with that environment
    (run as ``flinkspec check --profile quick`` runs them, base seed 0) reach each at least as
    often as its floor, the safe suite passing and the unsafe one found."""
    from model.variants import VARIANTS  # the catalog, to find every suite the goals apply to
    from properties.suites import run_suite  # the quick profile's suite runner
    from spec.coverage import APPLIES, FLOORS

    goals = ("older_trigger_reached_task", "aborted_trigger_reached_task")
    suites = [n for n, v in VARIANTS.items() if v.environment.trigger_delivery == "any_order"]
    assert "delayed-checkpoint-triggers" in suites and "unchecked-trigger-order" in suites
    reached = dict.fromkeys(goals, 0)
    for name in suites:
        assert all(APPLIES[g](generate(VARIANTS[name], 0)) for g in goals)
        res = run_suite(name, profile="quick", base_seed=0, shrink_found=False)
        assert res.error is None and (res.violations if not VARIANTS[name].safe else not res.violations), name
        for g in goals:
            reached[g] += res.goals.get(g, 0)
    assert all(reached[g] >= FLOORS[g] for g in goals), (reached, {g: FLOORS[g] for g in goals})
    assert not any(APPLIES[g](generate(variant("aligned-2pc"), 0)) for g in goals)


def test_only_snapshots_in_checkpoint_order_catches_unchecked_trigger_order(monkeypatch):
    """The late snapshot of an older checkpoint leaves no other trace the invariants see: with
    ``snapshots_in_checkpoint_order`` taken out of the always-checked list, the walks that find
    the seam pass every other invariant."""
    import properties.engines as E  # its list of always-checked invariants is patched here

    found = [s for s in range(50) if random_walk("unchecked-trigger-order", s).verdict == "violation"]
    assert found, "the seam was not found in 50 runs"
    monkeypatch.setattr(E, "ALWAYS", tuple(i for i in E.ALWAYS if i.name != "snapshots_in_checkpoint_order"))
    assert [random_walk("unchecked-trigger-order", s).verdict for s in found] == ["pass"] * len(found)
