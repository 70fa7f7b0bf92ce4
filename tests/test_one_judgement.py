"""One judgement for every engine: which actions a scenario offers and how its run is judged
are decided once (``properties.engines.offered_kinds``, ``Run``), so the random walk, the
Hypothesis machine, the explorer, the Spark replays and the replay of a counterexample file
take the same actions and give the same verdict.

The job of two sources unioned into a keyed tumbling-window count: a source goes idle, the
other's watermark fires the window without the idle source's record, which then arrives
late and is dropped (``WindowOperator`` drops an element whose window's maxTimestamp +
allowed lateness is at or below the operator's watermark; ``StatusWatermarkValve`` leaves
an idle channel out of the minimum). That record is late, not lost: the event-time judge
(``late_drop_justified``, ``window_results_exactly_once``) covers the union, so every
engine searches idle sources on this job and none reports the drop as a violation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from scenario_util import chan, sub

from flinkspec.cli import main
from flinkspec.commands import check
from model import actions as A
from model.cluster import RuntimeConfig, drain_choice
from model.environment import Environment
from model.errors import FlinkspecError
from model.jobfile import load_job_file
from model.streamgraph import StreamGraphBuilder
from model.variants import VARIANTS, Scenario, generate, job_variant
from properties.counterexample import CounterexampleError, check_replay, load_counterexample, write_counterexample
from properties.engines import ALL_KINDS, Run, offered_kinds, random_walk, replay
from properties.explore import expand
from properties.machines import make_cluster_machine
from properties.result import SuiteResult
from properties.scenario_kinds import kind_of
from spark.replay import model_write_counterexample
from spec.declarative import event_time_judged
from spec.invariant import Violation

ROOT = Path(__file__).resolve().parents[1]

UNION_WINDOW = """
name = "union-window-{sink}"
[[operators]]
name = "a"
kind = "source"
[[operators]]
name = "b"
kind = "source"
[[operators]]
name = "window"
kind = "window"
aggregate = "count"
window_size = 10
[[operators]]
name = "out"
kind = "sink"
sink_kind = "{sink}"
[[edges]]
source = "a"
target = "window"
partitioner = "hash"
[[edges]]
source = "b"
target = "window"
partitioner = "hash"
[[edges]]
source = "window"
target = "out"
partitioner = "forward"
[environment]
max_failures = {failures}
[input]
records = 1
keys = ["k"]
seed = 1
"""


def union_job(tmp_path, sink: str, failures: int) -> Path:
    p = tmp_path / f"union-{sink}.toml"
    p.write_text(UNION_WINDOW.format(sink=sink, failures=failures))
    return p


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def explorer_verdict(scenario: Scenario, actions) -> object:
    """The verdict the explorer gives the run of ``actions`` (then the drain policy's): each
    action must be one of ``properties.explore.expand``'s successors of the state, and the
    first violation ``expand`` reports is the verdict (None: none)."""
    run = Run(scenario, track_goals=False)
    if run.violation is not None:
        return run.violation
    todo = list(actions)
    while run.cluster.status != "FAILED":
        a = todo.pop(0) if todo else drain_choice(run.cluster)
        if a is None:
            return None
        successors = expand(run)
        (child, v), = [(c, v) for b, c, v, _ in successors if b == a]
        for _, c, _, _ in successors:
            if c is not child:
                c.dispose()
        if v is not None:
            return v
        run = child
    return None


def same_verdict_under_every_engine(scenario: Scenario, actions, invariant: str, tmp_path) -> None:
    """The run of ``actions`` violates ``invariant`` under every engine: each action is one the
    engines may take at its turn (``Run.enabled_actions``: what the walk, the Hypothesis machine
    and the explorer choose among), and the walk's replay (``engines.replay``, also the Spark
    replays'), the explorer (``expand``) and the replay of the written file agree."""
    run = Run(scenario)
    for a in actions:
        if run.violation is not None or run.cluster.status == "FAILED":
            break
        assert a in run.enabled_actions(), (a, run.why_not_enabled(a))
        run.step(a)
    walk, _ = replay(scenario, actions)
    assert walk is not None and walk.invariant == invariant
    assert explorer_verdict(scenario, actions).invariant == invariant
    path = write_counterexample(tmp_path, variant="x", expected=(invariant,), engine="random_walk", seed=0,
                                scenario=scenario, actions=list(actions), violation=walk)
    from_file = check_replay(load_counterexample(path))
    assert (from_file.invariant, from_file.step) == (walk.invariant, walk.step)


# -- the job of a false violation ---------------------------------------------------------------

def test_the_union_window_job_is_judged_with_idle_sources_by_every_engine(tmp_path):
    job = load_job_file(union_job(tmp_path, "two_phase_commit", 0))
    scenario = generate(job_variant(job), 0)
    assert event_time_judged(scenario.graph)
    assert "SourceIdle" in offered_kinds(scenario) and offered_kinds(scenario) == ALL_KINDS


def test_a_record_made_late_by_idleness_is_dropped_and_judged_late_not_lost(tmp_path):
    """The run the explorer used to report as committed_output_within_reference (10 steps): a
    finishes, b goes idle, the window fires with a's record alone and a checkpoint commits
    the count 1; b's record then arrives after the watermark passed its window."""
    job = load_job_file(union_job(tmp_path, "two_phase_commit", 0))
    scenario = generate(job_variant(job), 0)
    run = Run(scenario)
    eg = run.cluster.eg
    a_w, b_w = chan(eg, ("a", 0), ("window", 0)), chan(eg, ("b", 0), ("window", 0))
    steps = [A.SourceEmit(sub(eg, "a", 0)), A.Deliver(a_w), A.SourceEnd(sub(eg, "a", 0)), A.Deliver(a_w),
             A.Deliver(a_w), A.SourceIdle(sub(eg, "b", 0)), A.Deliver(b_w), A.TriggerCheckpoint(), A.Deliver(b_w),
             A.NotifyCheckpointComplete(sub(eg, "window", 0), 1)]
    for a in steps:
        assert a in run.enabled_actions(), (a, run.why_not_enabled(a))
        assert run.step(a) is None
    assert [r[:2] for r in run.cluster.external.committed] == [("k", 1)]  # the window fired without b's record
    assert run.finish() is None
    (name, k, v, ts, watermark), = run.cluster.late  # b's record, dropped as late ...
    assert name == "window" and ts + 0 <= watermark  # ... and justified: its window had passed
    assert [r[:2] for r in run.cluster.external.committed] == [("k", 1)]
    assert explorer_verdict(scenario, steps) is None


def test_check_job_finds_no_violation_in_the_union_window_job(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "check", "--job", union_job(tmp_path, "two_phase_commit", 0), "--no-write")
    flat = " ".join(out.split())
    assert code == 0 and "summary: job 'union-window-two_phase_commit': no violation in " in flat


@pytest.mark.slow
def test_explore_job_finds_none_to_the_depth_of_the_former_false_violation(tmp_path, capsys):
    """To depth 10, where it reported committed_output_within_reference (about 30 s)."""
    path = union_job(tmp_path, "two_phase_commit", 0)
    code, out, _ = run_cli(capsys, "explore", "--job", path, "--no-write", "--json", "--max-depth", "10")
    row = json.loads(out)
    assert code == 0 and row["verdict"] == "bounded" and row["depth"] == 10 and row["invariant"] is None


@pytest.mark.slow
def test_explore_job_verifies_the_union_window_job(tmp_path, capsys):
    """Every reachable state of the job (64 thousand, about two minutes)."""
    code, out, _ = run_cli(capsys, "explore", "--job", union_job(tmp_path, "two_phase_commit", 0), "--no-write",
                           "--json", "--max-seconds", "600")
    row = json.loads(out)
    assert code == 0 and row["verdict"] == "verified"


@pytest.mark.slow
def test_the_append_twin_with_one_failure_duplicates_under_check_and_every_engine(tmp_path, capsys):
    """The same job with a plain append sink and one failure: a window result written before
    the failure is written again by the restarted job. check finds it (about 12 s), and every
    engine judges its counterexamples alike; the explorer's own search needs 15 steps, minutes
    (the test below)."""
    path = union_job(tmp_path, "append", 1)
    out_dir = tmp_path / "cx"
    code, out, _ = run_cli(capsys, "check", "--job", path, "--corpus", out_dir)
    flat = " ".join(out.split())
    assert code == 1 and "summary: job 'union-window-append': violation found: " in flat
    files = sorted(out_dir.glob("*/*.ndjson"))
    assert files
    for f in files:
        cx = load_counterexample(f, known_variant=True)
        assert cx.violation.invariant in ("window_results_exactly_once", "committed_output_within_reference",
                                          "exactly_once")
        assert "add up to" in cx.violation.message or "a duplicate" in cx.violation.message
        same_verdict_under_every_engine(cx.scenario, cx.actions, cx.violation.invariant, tmp_path / f.stem)


@pytest.mark.slow
def test_explore_job_finds_the_append_twins_duplicate(tmp_path, capsys):
    """A shortest run of 15 steps: 117 thousand states, about 5 minutes on a loaded machine."""
    code, out, _ = run_cli(capsys, "explore", "--job", union_job(tmp_path, "append", 1), "--no-write", "--json",
                           "--max-seconds", "1500")
    row = json.loads(out)
    assert code == 1 and row["verdict"] == "violation"
    assert row["invariant"] in ("window_results_exactly_once", "committed_output_within_reference", "exactly_once")


# -- one decision of the actions offered ---------------------------------------------------------

def sliding_job() -> Scenario:
    """A windowed job the event-time judge does not cover: a window that reaches its sink through
    a map (the judge reads window results at the sink), so a run with an idle source has no
    judge."""
    b = StreamGraphBuilder("sliding")
    src = b.source("a", parallelism=2)
    win = b.window("w", src, size=4, slide=2, parallelism=1)
    b.sink("out", b.map("m", win, parallelism=1), sink_kind="upsert", parallelism=1)
    from model.jobfile import InputSpec, generate_input  # the job file's input generator, for this graph

    graph = b.build()
    return Scenario(graph=graph, job_input=generate_input(graph, InputSpec(records=2, keys=("k",), seed=1), 0),
                    config=RuntimeConfig(), environment=Environment(max_failures=1), seed=0)


#: a user's job the event-time judge does not cover: two sources, a window, a map, a sink
UNCOVERED_JOB = """
name = "window-then-map"

[[operators]]
name = "a"
kind = "source"
parallelism = 2

[[operators]]
name = "w"
kind = "window"
parallelism = 1
aggregate = "count"
window_size = 4

[[operators]]
name = "m"
kind = "map"
parallelism = 1

[[operators]]
name = "out"
kind = "sink"
parallelism = 1
sink_kind = "two_phase_commit"

[[edges]]
source = "a"
target = "w"
partitioner = "hash"

[[edges]]
source = "w"
target = "m"
partitioner = "forward"

[[edges]]
source = "m"
target = "out"
partitioner = "forward"
"""


def test_a_kind_not_offered_is_taken_by_no_engine_and_refused_on_replay(tmp_path):
    s = sliding_job()
    assert not event_time_judged(s.graph) and offered_kinds(s) == ALL_KINDS - {"SourceIdle"}
    run = Run(s)
    idle = A.SourceIdle(0)
    assert idle in run.cluster.enabled_actions() and idle not in run.enabled_actions()
    assert "not offered" in run.why_not_enabled(idle)
    # the explorer's successors
    assert not any(type(a) is A.SourceIdle for a, *_ in expand(Run(s)))
    # replay refuses it, naming the step
    with pytest.raises(FlinkspecError, match="step 0: .*SourceIdle is not offered"):
        replay(s, [idle])
    # a counterexample file holding it is one clear error naming the line, not a verdict
    path = write_counterexample(tmp_path, variant="x", expected=("exactly_once",), engine="random_walk", seed=0,
                                scenario=s, actions=[idle], violation=Violation(invariant="exactly_once",
                                                                                expected=1, actual=0, message="-"))
    with pytest.raises(CounterexampleError, match=r":2: step 0: .*SourceIdle is not offered"):
        check_replay(load_counterexample(path))


def test_the_walk_and_the_machine_choose_among_the_offered_actions(monkeypatch, tmp_path):
    # the walk: its kinds are offered ones; on a job the judge does not cover (a user's job file
    # with a window before a map) no run takes SourceIdle, on the variants' jobs some do
    uncovered = tmp_path / "uncovered.toml"
    uncovered.write_text(UNCOVERED_JOB)
    taken = {True: 0, False: 0}
    for v in (VARIANTS["aligned-2pc"], VARIANTS["upsert-sink"], job_variant(load_job_file(uncovered))):
        for seed in range(30):
            s = generate(v, seed)
            r = random_walk(v, seed)
            assert set(r.swarm_kinds) <= offered_kinds(s)
            taken["SourceIdle" in offered_kinds(s)] += sum(type(a) is A.SourceIdle for a in r.actions)
    assert taken[False] == 0 and taken[True] > 0
    assert "SourceIdle" not in offered_kinds(generate(job_variant(load_job_file(uncovered)), 0))
    # the Hypothesis machine: every action it takes is one Run.enabled_actions offered
    steps: list = []
    real_step = Run.step

    def step(self, action):
        steps.append((type(action).__name__, type(action).__name__ in self.offered))
        return real_step(self, action)

    monkeypatch.setattr(Run, "step", step)
    run_state_machine_as_test(make_cluster_machine(VARIANTS["aligned-2pc"]),
                              settings=settings(max_examples=20, stateful_step_count=30, database=None, deadline=None,
                                                suppress_health_check=list(HealthCheck)))
    assert steps and all(ok for _, ok in steps)


# -- a counterexample any engine finds replays to the same verdict under every other --------------

def corpus_files():
    return [f for f in sorted((ROOT / "counterexamples").glob("*/*.ndjson"))
            if kind_of(load_counterexample(f, known_variant=True).scenario) is None]


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_committed_counterexample_has_one_verdict_under_every_engine(path, tmp_path):
    cx = load_counterexample(path, known_variant=True)
    same_verdict_under_every_engine(cx.scenario, cx.actions, cx.violation.invariant, tmp_path)


@pytest.mark.parametrize("variant", ["late-window-append", "append-sink-under-failures", "at-least-once-2pc",
                                     pytest.param("window-lateness-ignored", marks=pytest.mark.slow),
                                     pytest.param("FLINK-17075", marks=pytest.mark.slow)])
def test_walk_counterexamples_of_generated_jobs_have_one_verdict_under_every_engine(variant, tmp_path):
    """Each seed of a variant generates its own job (graph, input); the first few violations
    the walk finds, as found (not shrunk), judged by every engine."""
    v = VARIANTS[variant]
    found = 0
    for seed in range(400):
        r = random_walk(v, seed)
        if r.verdict != "violation":
            continue
        same_verdict_under_every_engine(generate(v, seed), r.actions, r.invariant, tmp_path / str(seed))
        # the Spark replays write what they find through the same replay (pyspark is not needed here)
        path = model_write_counterexample(tmp_path / f"spark{seed}", variant, seed, "spark-replay", r.actions,
                                          r.violation)
        assert check_replay(load_counterexample(path, known_variant=True)).invariant == r.invariant
        found += 1
        if found == 3:
            break
    assert found == 3


# -- the check command's summary ------------------------------------------------------------------

def test_a_selection_of_unsafe_suites_only_says_nothing_of_safe_suites():
    r = SuiteResult(name="cp-no-fencing", expected=("no_split_brain",), runs=3, violations={"no_split_brain": 1})
    line = check.summary_line(check.judge(check.select_suites(["cp-no-fencing"]), [r], selected=True))
    assert "safe suites" not in line and "1/1 unsafe variants caught" in line, line
