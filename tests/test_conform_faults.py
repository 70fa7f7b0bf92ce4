"""``flinkspec conform --faults``: the fault kinds, the replayed model side and the comparison,
without a JVM.

The replayed model side follows real Flink runs: the committed traces of ``tests/data/traces/``
(recorded by ``flinkspec trace`` on Flink 2.3.0) give the events; the model must take every
step of them, restore the checkpoint Flink restored, and commit the oracle's output. Planted
changes to a trace's restores and to Flink's answer are reported. The runs on real Flink are
``tests/differential/test_conform_vs_flink.py`` (slow, flink).
"""

from __future__ import annotations

import copy
import glob
from pathlib import Path

import pytest

from flinkspec.cli import main
from model.errors import FlinkspecError
from model.keygroups import assign_to_key_group
from properties import conform, conformfaults, flinktrace
from properties.conformfaults import compare_restores, conform_kinds, parse_faults, placed_by_job, replay_side

TRACES = sorted(glob.glob(str(Path(__file__).parent / "data" / "traces" / "*.ndjson")))


def _trace(kind):
    path = next(p for p in TRACES if p.split("/")[-1].startswith(kind + "-seed"))
    t = flinktrace.load_trace(path)
    run = flinktrace.draw_run(t.header["seed"], t.header["fault"])
    assert run.job.describe() == t.header["description"]  # the trace's job is the run's
    return run, [dict(e) for e in t.events]


REPLAYED = [k for k in conform_kinds() if not placed_by_job(k)]


# -- the kinds ---------------------------------------------------------------------------------------


def test_the_kinds_are_the_recorders_registry():
    assert conform_kinds() == tuple(flinktrace.FAULT_KINDS)
    assert parse_faults("all") == conform_kinds()
    mini = parse_faults("minicluster")
    assert mini == tuple(k for k in flinktrace.FAULT_KINDS if flinktrace.FAULT_KINDS[k].setup == "minicluster")
    assert "task-failure" in mini and "jobmanager-loss" not in mini
    assert parse_faults("standalone-ha") == ("jobmanager-loss",)
    assert parse_faults("task-failure, taskmanager-loss") == ("task-failure", "taskmanager-loss")
    with pytest.raises(FlinkspecError, match="unknown fault kind"):
        parse_faults("task-failure,bogus")


def test_every_kind_is_judged_one_way_or_the_other():
    # the job places the fault (a failing record, a stop-with-savepoint, a drain) or Flink's timing does
    assert {k for k in conform_kinds() if placed_by_job(k)} == {
        "task-failure", "rocksdb-incremental", "rescale-up", "rescale-down", "stop-with-savepoint", "drain"}
    # slow records: how many checkpoints complete before the failing record is Flink's timing
    assert set(REPLAYED) == {"taskmanager-loss", "checkpoint-expired", "checkpoint-declined", "claim-restore",
                             "no-claim-restore", "unaligned", "jobmanager-loss"}
    # every replayed kind has a committed real trace to follow
    for k in REPLAYED:
        _trace(k)


def test_faults_list_names_every_kind(capsys):
    assert main(["conform", "--faults", "list"]) == 0
    out = capsys.readouterr().out
    assert [line.split()[0] for line in out.splitlines()] == list(flinktrace.FAULT_KINDS)
    assert "standalone cluster" in next(line for line in out.splitlines() if line.startswith("jobmanager-loss"))


@pytest.mark.parametrize("argv, message", [
    (["--faults", "bogus"], "unknown fault kind"),
    (["--faults", "all,task-failure"], "unknown fault kind"),
    (["--faults", "task-failure", "--seed", str(2**41)], "--seed"),
])
def test_bad_faults_are_one_line_errors(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(conform, "ensure_flink_env", lambda say: (_ for _ in ()).throw(AssertionError("no run")))
    assert main(["conform", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


# -- the replayed model side on real runs ----------------------------------------------------------


@pytest.mark.parametrize("kind", REPLAYED)
def test_the_model_follows_each_real_run_and_restores_what_flink_restored(kind):
    run, events = _trace(kind)
    rep = replay_side(run, events)
    assert rep.differences == ()
    assert compare_restores(rep.restores) == []
    flink_restores = [e for e in events if e["event"] == "restored"] + \
        [e for e in events if e["event"] == "job_submitted" and e["phase"] > 0]
    assert len(rep.restores) == len(flink_restores)
    assert conform.compare_outputs(run.job, "model", rep.side.reference, rep.side.output) == []
    if kind in ("taskmanager-loss", "claim-restore", "no-claim-restore", "unaligned", "jobmanager-loss"):
        assert rep.restores and all(fl is not None for _s, fl, _m in rep.restores)
    assert rep.side.failed == (kind == "unaligned")  # the user function's failure injected where Flink's was


def test_a_restore_of_another_checkpoint_is_reported():
    run, events = _trace("taskmanager-loss")
    restored = next(e for e in events if e["event"] == "restored")
    completed = [e["checkpoint"] for e in events if e["event"] == "checkpoint_completed" and e["seq"] < restored["seq"]]
    assert len(completed) >= 2  # the trace restores its 2nd checkpoint: an earlier one is a planted change
    restored["checkpoint"] = completed[0]
    diffs = compare_restores(replay_side(run, events).restores)
    assert diffs == [f"restore at event {restored['seq']}: Flink restored checkpoint {completed[0]}, "
                     f"the model checkpoint {completed[-1]}"]


def test_a_restore_flink_did_not_make_is_reported():
    # the declined checkpoint with no tolerable failure fails the job over in the model; a Flink
    # that went on without a restore disagrees
    run, events = _trace("checkpoint-declined")
    assert run.decline["tolerable"] == 0
    events = [e for e in events if e["event"] != "restored"]
    diffs = compare_restores(replay_side(run, events).restores)
    assert diffs and all("Flink restored no restore, the model" in d for d in diffs)


def test_a_restore_the_model_does_not_make_is_reported():
    # with one tolerable failure the model does not fail over on one declined checkpoint
    run, events = _trace("checkpoint-declined")
    run = flinktrace.TraceRun(run.seed, run.kind, run.job, run.lose, dict(run.decline, tolerable=1))
    diffs = compare_restores(replay_side(run, events).restores)
    assert diffs and "the model no restore" in diffs[0]


def test_a_step_the_model_cannot_take_is_a_difference():
    run, events = _trace("claim-restore")
    sub = next(e for e in events if e["event"] == "job_submitted" and e["phase"] == 1)
    sub["savepoint"] = 99
    rep = replay_side(run, events)
    assert any("cannot follow Flink's run" in d and "99" in d for d in rep.differences)


# -- judging an answer -----------------------------------------------------------------------------


def _answer(run, rep):
    job = run.job
    keys = sorted({r[0] for s in job.splits for r in s})
    last = len(flinktrace.phases(run)) - 1
    obs = [["final", last, 0, sub, k, v] for k, (sub, v) in (rep.side.final_keyed or {}).items()]
    return {"id": 0, "ok": True, "output": [list(r) for r in rep.side.reference], "observations": obs,
            "failed": False, "key_hash": {k: conform.row_key_hash(k) for k in keys},
            "key_group": {k: assign_to_key_group(conform.row_key_hash(k), job.max_parallelism) for k in keys},
            "seconds": 1.0}


def test_a_faithful_answer_agrees_and_a_lost_record_does_not(monkeypatch):
    run, events = _trace("claim-restore")
    rep = replay_side(run, events)
    good = _answer(run, rep)
    monkeypatch.setattr(conformfaults, "observations", lambda _text, phases: (events, []))
    res = conformfaults.judge(run, good, "")
    assert res.agree, res.result.differences
    assert set(res.compared) == {"output", "keyed state and owners", "restored_from"}
    assert res.restores and all(isinstance(fl, int) and fl == mo for fl, mo in res.restores)
    bad = copy.deepcopy(good)
    bad["output"].pop()
    res = conformfaults.judge(run, bad, "")
    assert not res.agree and "Flink's committed output vs the oracle" in res.result.differences[0]
    if rep.side.final_keyed:
        bad = copy.deepcopy(good)
        bad["observations"][0][5] = -1
        assert any("final keyed state" in d for d in conformfaults.judge(run, bad, "").result.differences)


def test_a_job_placed_kind_is_judged_with_the_runs_configuration(monkeypatch):
    # rocksdb-incremental: the model runs with the state backend (its snapshots' asynchronous
    # phase settles) and restores the checkpoint conform's model side picks
    run = flinktrace.draw_run(5, "rocksdb-incremental")
    seen = {}
    real = conform.model_side

    def spy(job, order=None, config=None):
        seen["config"] = config
        return real(job, order, config)

    monkeypatch.setattr(conform, "model_side", spy)
    m = real(run.job, None, conformfaults.model_config(run))
    assert m.failed and conform.compare_outputs(run.job, "model", m.reference, m.output) == []
    answer = {"id": 0, "ok": True, "output": [list(r) for r in m.reference], "observations": [], "failed": True,
              "key_hash": {}, "key_group": {}, "seconds": 1.0}
    res = conformfaults.judge(run, answer, "")
    assert seen["config"]["state_backend"] == "rocksdb" and seen["config"]["incremental"] is True
    assert "restored_from" in res.compared
    # the log names no restore: Flink restored nothing where the model restored a checkpoint
    assert any("restored no checkpoint" in d for d in res.result.differences) == (m.restored_from is not None)


def test_summary_counts_per_kind():
    run, events = _trace("taskmanager-loss")
    r = conform.RunResult(1, run.job, (), 1.0, False, None)
    bad = conform.RunResult(2, run.job, ("x",), 1.0, False, None)
    s = conformfaults.summary([conformfaults.FaultResult("taskmanager-loss", r, ("output",)),
                               conformfaults.FaultResult("taskmanager-loss", bad, ("restored_from",),
                                                         ((2, 2), (None, None)), seed=7)], 0, 1.0)
    assert s["kinds"] == {"taskmanager-loss": {"runs": 2, "agree": 1, "compared": ["output", "restored_from"],
                                               "restores": 2, "restored_a_checkpoint": 1}}
    assert s["agree"] == 1 and s["disagreements"][0]["fault"] == "taskmanager-loss"
    assert s["disagreements"][0]["seed"] == 7 and s["disagreements"][0]["job_seed"] == 2  # the run's seed replays it


def test_checkpoints_without_a_counterpart_follow_trace_validations_rules():
    ev = [{"event": "job_submitted", "phase": 0},
          {"event": "checkpoint_triggered", "checkpoint": 1}, {"event": "checkpoint_completed", "checkpoint": 1},
          {"event": "checkpoint_triggered", "checkpoint": 2},
          {"event": "checkpoint_aborted", "checkpoint": 2, "reason": "declined",
           "flink_reason": "Checkpoint was declined (tasks not ready)"},
          {"event": "checkpoint_triggered", "checkpoint": 3},
          {"event": "checkpoint_aborted", "checkpoint": 3, "reason": "declined",
           "flink_reason": "Asynchronous task checkpoint failed"},
          {"event": "task_failed", "task": [0, 0]},
          {"event": "checkpoint_triggered", "checkpoint": 4},                 # during the failure, never completed
          {"event": "checkpoint_triggered", "checkpoint": 5}, {"event": "checkpoint_completed", "checkpoint": 5},
          {"event": "restored", "checkpoint": 5},
          {"event": "checkpoint_triggered", "checkpoint": 6}, {"event": "checkpoint_completed", "checkpoint": 6}]
    assert conformfaults.without_counterpart(ev) == {(0, 2), (0, 4)}
