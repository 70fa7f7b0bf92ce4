"""Stop-with-savepoint ``--drain`` (``StopWithSavepointAndDrain``, SavepointType TERMINATE): the
sources end their input with MAX_WATERMARK, a synchronous savepoint, then the job is FINISHED
with the results of what it read. Scenario tests of the action, its guard, the reference it is
judged by and the invariant that guards it (``drain_fires_every_window``)."""

from __future__ import annotations

import attrs

from model import actions as A
from model.cluster import Cluster, JobInput, drain_choice
from model.variants import small_scenario, variant
from model.windowing import WindowKeyGroupState
from properties.engines import Run, replay
from spec.checkpoint import drain_fires_every_window
from spec.exactly_once import exactly_once, output_diff

EMIT, DELIVER = A.SourceEmit(subtask=0), A.Deliver(channel=0)


def _scenario(name: str = "drain-savepoint", **env):
    sc = small_scenario(variant(name))
    return attrs.evolve(sc, environment=attrs.evolve(sc.environment, **env)) if env else sc


def _drained(name: str = "drain-savepoint"):
    """The small job's first record read and windowed, then a drain, run to its end."""
    violation, run = replay(_scenario(name), [EMIT, DELIVER, A.StopWithSavepointAndDrain()])
    return violation, run


def test_a_drain_fires_the_open_window_with_what_was_read_and_finishes_the_job():
    sc = _scenario()
    assert sc.job_input.splits["source"] == (((0, 1, 1), (0, 1, 2)),)  # one window [0, 4), two records
    violation, run = _drained()
    c = run.cluster
    assert violation is None
    assert c.job.status == "FINISHED" and c.is_drained() and {t.status for t in c.tasks} == {"FINISHED"}
    # the window [0, 4) fired with the one record read (count 1, at its maxTimestamp 3), committed
    assert [r[:3] for r in c.external.committed] == [(0, 1, 3)]
    assert c.input_read() == JobInput({"source": (((0, 1, 1),),)})
    assert run.job_input == c.input_read() and run.expected.output == {"sink": [(0, 1, 3)]}
    # judged against what was read: against the whole input, the record at 2 would be missing
    assert exactly_once(run) is None
    assert output_diff(run._expected, c)["sink"].describe()
    assert ("drain", 2, 1) in c.events and ("stopped", c.job.savepoint) == next(
        (e[0], e[2]) for e in c.events if e[0] == "stopped")
    # a drained job is globally terminal: it is not restarted from its savepoint
    assert not [a for a in c.enabled_actions() if type(a) is A.RestartFromSavepoint]
    assert drain_choice(c) is None


def test_the_drains_savepoint_holds_no_window_state_and_the_invariant_sees_a_window_left_open():
    violation, run = _drained()
    assert violation is None
    snaps = run.cluster.job.savepoint_snapshots
    assert any("agg" in s.keyed for s in snaps.values())  # the window operator's keyed state is in it
    assert not [st for s in snaps.values() for g in s.keyed.values() for st in g.values()
                if type(st) is WindowKeyGroupState and (st.contents or st.timers)]
    # the same drain without MAX_WATERMARK: the window [0, 4) is in the savepoint, unfired
    violation, run = _drained("drain-without-max-watermark")
    assert violation is not None and violation.invariant == "drain_fires_every_window"
    assert violation.actual["operator"] == "agg" and violation.actual["windows"] == 1
    assert "MAX_WATERMARK did not reach it" in violation.message
    assert run.cluster.external.committed == []
    assert drain_fires_every_window(run) is not None  # judged in the step the savepoint completed


def test_a_drain_is_judged_only_in_the_step_its_savepoint_completes():
    run = Run(_scenario("drain-without-max-watermark"))
    for a in (EMIT, DELIVER, A.StopWithSavepointAndDrain()):
        assert drain_fires_every_window(run) is None
        v = run.step(a)
    assert v is None and run.cluster.job.status == "RUNNING"  # the savepoint waits for the window task
    while run.cluster.job.status == "RUNNING":
        v = run.step(drain_choice(run.cluster))
    assert v is not None and v.invariant == "drain_fires_every_window"
    assert run.cluster.job.status == "FINISHED"


def test_the_drain_guard_names_what_does_not_hold():
    c = Cluster.from_scenario(_scenario())
    assert A.StopWithSavepointAndDrain() in c.enabled_actions()
    c2 = Cluster.from_scenario(_scenario(drain_savepoints=False))
    assert c2.why_not_enabled(A.StopWithSavepointAndDrain()) == \
        "stop-with-savepoint --drain is not enabled (Environment.drain_savepoints)"
    c3 = Cluster.from_scenario(_scenario(savepoints=True))
    assert c3.why_not_enabled(A.StopWithSavepointAndDrain()) == (
        "stop-with-savepoint --drain is not modelled with restarts from savepoints or rescaling "
        "(Environment.savepoints, rescale_from_checkpoints): their restore does not keep a drained source finished")
    for a in (EMIT, DELIVER, EMIT, A.SourceEnd(subtask=0)):
        c.step(a)
    assert c.why_not_enabled(A.StopWithSavepointAndDrain()) == "no source reads any more: the job ends by itself"


def test_a_drain_whose_savepoint_expires_ends_with_a_final_checkpoint_judged_on_what_was_read():
    """Flink: the sources' input ended, the tasks wait for a final checkpoint (FLIP-147), and the
    job finishes with the results of what was read."""
    run = Run(_scenario())
    for a in (EMIT, DELIVER, A.StopWithSavepointAndDrain(), A.CheckpointTimeout(checkpoint_id=1)):
        assert run.step(a) is None
    c = run.cluster
    assert c.job.status == "RUNNING" and c.job.stopping is None
    assert ("stop_with_savepoint_failed", 3, 1, "CHECKPOINT_EXPIRED") in c.events
    assert run.finish() is None
    assert c.is_drained() and [r[:3] for r in c.external.committed] == [(0, 1, 3)]
    assert c.input_read() == JobInput({"source": (((0, 1, 1),),)})


def test_the_kinds_that_stop_the_job_or_trigger_a_checkpoint_are_derived_from_the_registry():
    from properties import validation
    from spec import causality
    assert A.StopWithSavepointAndDrain in causality.JOB_STOPS and A.StopWithSavepoint in causality.JOB_STOPS
    assert A.StopWithSavepointAndDrain in validation.TRIGGERS and A.TriggerCheckpoint in validation.TRIGGERS
    assert A.FailTask not in causality.JOB_STOPS and A.Deliver not in validation.TRIGGERS


def test_a_source_drained_before_a_checkpoint_is_finished_on_restore():
    """FLIP-147: a failover restores a subtask whose snapshot was taken after its input ended
    (``TaskSnapshot.finished``) finished -- it reads nothing more and only ends its input again --
    so the job's output stays the result of what was read before the drain."""
    run = Run(_scenario())
    steps = (EMIT, DELIVER, A.StopWithSavepointAndDrain(), A.CheckpointTimeout(checkpoint_id=1), DELIVER, DELIVER,
             A.TriggerCheckpoint(savepoint=False))
    for a in steps:
        assert run.step(a) is None, a
    c = run.cluster
    assert c.completed_ids == [2] and c.completed[2][0].finished
    assert run.step(A.FailJobManager()) is None  # the global restore from checkpoint 2 commits [0, 4)'s result
    src = c.tasks[0]
    assert src.status == "RUNNING" and src.source.ended and src.source.has_next()
    assert "finished on restore" in c.why_not_enabled(EMIT)
    assert A.SourceEnd(subtask=0) in c.enabled_actions()
    assert c.input_read() == JobInput({"source": (((0, 1, 1),),)})
    assert run.finish() is None
    assert c.is_drained() and [r[:3] for r in c.external.committed] == [(0, 1, 3)]


def test_the_coverage_goal_counts_a_drain_that_commits_windows_of_a_job_with_input_left():
    from spec.coverage import APPLIES

    def reached(actions) -> int:
        run = Run(_scenario())
        for a in actions:
            assert run.step(a) is None
        assert run.finish() is None
        return run.goals["drain_fired_windows"]

    assert APPLIES["drain_fired_windows"](_scenario())
    assert not APPLIES["drain_fired_windows"](_scenario(drain_savepoints=False))
    assert reached([EMIT, DELIVER, A.StopWithSavepointAndDrain()]) == 1
    # the same job read to its end, never drained: its window fires by its own MAX_WATERMARK
    assert reached([EMIT, DELIVER, EMIT]) == 0
