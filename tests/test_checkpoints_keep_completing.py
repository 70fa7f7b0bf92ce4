"""With no further faults, checkpoints keep completing (spec/checkpoint.py
``checkpoints_keep_completing``), and the unsafe variant it catches."""

from __future__ import annotations

from model.actions import KINDS, CheckpointTimeout, FailTask, TriggerCheckpoint
from model.variants import generate, variant
from properties.engines import Run, random_walk, replay, shrink
from scenario_util import safe_twin
from spec.checkpoint import checkpoints_keep_completing, last_disturbance


def _found():
    for seed in range(80):
        r = random_walk("unchecked-cancellation-id", seed)
        if r.invariant == "checkpoints_keep_completing":
            return seed, r
    raise AssertionError("the search did not find the unsafe variant's violation in 80 runs")


def test_variant_unchecked_cancellation_id_is_caught_and_the_safe_twin_survives_the_same_actions():
    """two_stage job, unaligned checkpoints concurrent with aligned savepoints: an unaligned
    checkpoint's barrier overtakes a savepoint's, the task declines the savepoint as subsumed and
    sends its CancelCheckpointMarker downstream, where the consumer is already aligning the newer
    checkpoint. With the knob the late marker aborts that checkpoint although nothing failed;
    without it the marker is ignored and the checkpoint completes."""
    seed, r = _found()
    scenario = generate(variant("unchecked-cancellation-id"), seed)
    actions = shrink(scenario, list(r.actions), "checkpoints_keep_completing")
    v, _ = replay(scenario, actions, finish=True)
    assert v is not None and v.invariant == "checkpoints_keep_completing"
    assert "CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER" in v.message
    safe = safe_twin(scenario)
    # the safe twin takes the same actions (the deliveries of the markers and declines only the
    # knob produced are not enabled there and are skipped) and every checkpoint completes
    run, skipped = Run(safe), 0
    for a in actions:
        if run.cluster.why_not_enabled(a) is not None:
            skipped += 1
            continue
        assert run.step(a) is None
    assert skipped < len(actions) // 2
    assert run.finish() is None
    assert any(e[0] == "completed" for e in run.cluster.events)


def test_safe_variants_keep_completing_checkpoints():
    for name in ("unaligned-savepoints-2pc", "concurrent-checkpoints-2pc", "cp-region-failover", "alternating-2pc"):
        for seed in range(12):
            r = random_walk(name, seed)
            assert r.verdict == "pass", (name, seed, r.invariant)


def _run(name="aligned-2pc", seed=0):
    return Run(generate(variant(name), seed))


def test_a_checkpoint_aborted_without_a_fault_is_a_violation_and_one_before_a_failure_is_not():
    """Hand-built: trigger a checkpoint, fail a task (the checkpoint is aborted by the
    failover), drain: no violation (the abort had a cause). The same checkpoint expired while
    records can still move (a timeout the search injects: a slow checkpoint) is no violation
    either; expired when nothing can complete it any more (stuck) it is."""
    run = _run()
    run.step(TriggerCheckpoint(savepoint=False))
    failure = next(a for a in run.cluster.enabled_actions() if isinstance(a, FailTask))
    run.step(failure)
    assert last_disturbance(run) == 1
    assert run.finish() is None
    assert checkpoints_keep_completing(run) is None

    run = _run()
    run.step(TriggerCheckpoint(savepoint=False))
    cid = run.cluster.trigger_results[-1].checkpoint_id
    run.step(CheckpointTimeout(checkpoint_id=cid))  # the sources can still emit: a fault
    assert not any(e[0] == "checkpoint_stuck" for e in run.cluster.events)
    assert last_disturbance(run) == 1
    assert run.finish() is None

    run = _run()
    run.step(TriggerCheckpoint(savepoint=False))
    run.cluster.events.append(("checkpoint_stuck", 1, cid))  # as the model records a stuck expiry
    run.step(CheckpointTimeout(checkpoint_id=cid))
    assert last_disturbance(run) == -1
    v = checkpoints_keep_completing(run)
    assert v is not None and v.invariant == "checkpoints_keep_completing" and "CHECKPOINT_EXPIRED" in v.message


def test_flink_17568_stuck_checkpoint_replays_to_the_same_violation():
    """The FLINK-17568 seam defers a snapshot past one more element; when none comes the
    checkpoint is stuck and the drain expires it. The recorded actions (the drain's included)
    replay to the same violation: the expiry is judged by the state it happens in, not by who
    chose it."""
    for seed in range(100, 160):
        r = random_walk("FLINK-17568", seed)
        if r.invariant == "checkpoints_keep_completing":
            break
    else:
        raise AssertionError("no stuck checkpoint in 60 runs of FLINK-17568")
    scenario = generate(variant("FLINK-17568"), seed)
    v, _ = replay(scenario, r.actions, finish=True)
    assert v is not None and v.to_dict() == r.violation
    small = shrink(scenario, list(r.actions), "checkpoints_keep_completing")
    v2, _ = replay(scenario, small, finish=True)
    assert v2 is not None and v2.invariant == "checkpoints_keep_completing"


def test_disturbing_kinds_come_from_the_registry():
    """Failures, timeouts, stops and restarts disturb; moving records and triggering do not."""
    disturbing = {u.name for u in KINDS.values() if u.disturbs}
    assert {"FailTask", "LoseTaskManager", "FailJobManager", "CheckpointTimeout", "StopWithSavepoint",
            "RestartFromSavepoint"} <= disturbing
    assert not {"Deliver", "SourceEmit", "TriggerCheckpoint", "NotifyCheckpointComplete"} & disturbing
