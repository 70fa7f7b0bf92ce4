"""The event-time judge (spec/declarative.py): late drops justified by the watermark at
arrival, every other record counted once in its window's results, no reference run needed;
idle sources searched on the windowed jobs it covers."""

from __future__ import annotations

import random

import attrs

from model.cluster import JobInput, RuntimeConfig
from model.streamgraph import StreamGraphBuilder
from model.variants import VARIANTS, Scenario, generate, variant
from properties.engines import Run, offered_kinds, random_walk, replay, replay_lenient, shrink
from spec.declarative import event_time_judged, input_disordered, window_result_problems


def job(lateness=0, slide=None, sink_kind="two_phase_commit", aggregate="count"):
    b = StreamGraphBuilder("w")
    src = b.source("source", parallelism=2)
    win = b.window("win", src, size=10, slide=slide, allowed_lateness=lateness, aggregate=aggregate, parallelism=1)
    b.sink("sink", win, sink_kind=sink_kind, parallelism=1)
    return b.build()


INPUT = JobInput({"source": ((("a", 1, 1), ("a", 2, 3)), (("a", 4, 12), ("a", 8, 5)))})


def test_which_jobs_the_judge_covers():
    assert event_time_judged(job()) and event_time_judged(job(lateness=3))
    assert event_time_judged(job(slide=5))  # the windows a sliding window skips are logged (window_skips)
    assert not event_time_judged(job(sink_kind="upsert"))  # an upsert sink keeps one value per key, not per window
    # a run with an idle source is judged on the jobs it covers; no engine offers idleness elsewhere
    assert "SourceIdle" in offered_kinds(Scenario(graph=job(), job_input=INPUT, config=RuntimeConfig(), seed=0))
    assert "SourceIdle" in offered_kinds(Scenario(graph=job(slide=5), job_input=INPUT, config=RuntimeConfig(), seed=0))
    assert "SourceIdle" not in offered_kinds(Scenario(graph=job(sink_kind="upsert"), job_input=INPUT,
                                                      config=RuntimeConfig(), seed=0))


def test_a_sliding_window_skip_excuses_the_record_in_that_window_only():
    g = job(slide=5)
    # size 10, slide 5: ts 1, 3 -> windows [-5, 5) and [0, 10); ts 5 -> [0, 10), [5, 15); ts 12 -> [5, 15), [10, 20)
    full = {"sink": [("a", 2, 4), ("a", 3, 9), ("a", 2, 14), ("a", 1, 19)]}
    assert window_result_problems(g, INPUT, full, []) == []
    # ts 5 skipped by [0, 10) (late there at watermark 9) and taken by [5, 15)
    skip = [("win", "a", 8, 5, 9, 9)]
    short = {"sink": [("a", 2, 4), ("a", 2, 9), ("a", 2, 14), ("a", 1, 19)]}
    assert window_result_problems(g, INPUT, short, [], skips=skip) == []
    (p,) = window_result_problems(g, INPUT, short, [])
    assert "window ending 10" in p and "add up to 2, expected 3" in p
    # the skip excuses no other window: [5, 15) without it is a loss
    (p,) = window_result_problems(g, INPUT, {"sink": [("a", 2, 4), ("a", 2, 9), ("a", 1, 14), ("a", 1, 19)]}, [],
                                  skips=skip)
    assert "window ending 15" in p


def _sliding(seed: int) -> Scenario:
    """late-window-2pc's job for ``seed`` with its window sliding by half its size."""
    sc = generate(variant("late-window-2pc"), seed)
    ops = tuple(attrs.evolve(o, window_slide=max(1, o.window_size // 2)) if o.kind == "window" else o
                for o in sc.graph.operators)
    return attrs.evolve(sc, graph=attrs.evolve(sc.graph, operators=ops).validate())


def _walk(scenario: Scenario, seed: int, steps: int = 300):
    """A seeded random walk over every offered action kind, drained and judged."""
    rng = random.Random(f"sliding:{seed}")
    run = Run(scenario)
    v = run.violation
    while v is None and run.cluster.now < steps:
        acts = run.enabled_actions()
        if not acts:
            break
        v = run.step(rng.choice(acts))
    return (v or run.finish()), run


def test_sliding_windows_with_idle_sources_pass_and_a_window_dropped_for_all_is_caught():
    """A sliding window behind two sources, one of which goes idle: Flink's operator skips only
    the windows that are late for a record. A planted change that drops the record from every
    window once one is late is caught by the judge; the same runs pass without it."""
    from model import seams
    from model.windowing import WindowOperator

    @seams.override("test-sliding-drops-all", WindowOperator, "process_element",
                    "a record one of whose windows is late is dropped from all of them")
    def _drop_all(self, key, value, timestamp, out):
        starts = self._assign(timestamp)
        if len(starts) > 1 and any(st + self._size - 1 + self.allowed_lateness <= self.current_watermark
                                   for st in starts):
            return
        seams.original("test-sliding-drops-all")(self, key, value, timestamp, out)
    try:
        caught = skipped = 0
        for seed in range(120):
            sc = _sliding(seed)
            assert event_time_judged(sc.graph)
            v, run = _walk(sc, seed)
            assert v is None, (seed, v)
            if not run.cluster.window_skips:
                continue
            skipped += 1
            bad = attrs.evolve(sc, config=attrs.evolve(sc.config, bugs=("test-sliding-drops-all",)))
            v_bad, _ = replay_lenient(bad, list(run.cluster.trace))
            caught += v_bad is not None and v_bad.invariant in ("window_results_exactly_once",
                                                                  "committed_output_within_reference")
        assert skipped > 0, "no run skipped a sliding window"
        assert caught > 0, f"the planted change was caught in none of the {skipped} runs that skip a window"
    finally:
        seams.unregister(["test-sliding-drops-all"])


def test_input_later_than_the_watermark_bound_is_disordered():
    g = job()  # watermark_out_of_orderness 0: a record below the largest before it may be late
    assert input_disordered(g, INPUT)
    assert not input_disordered(g, JobInput({"source": ((("a", 1, 1), ("a", 2, 3)),)}))


def test_idle_sources_are_searched_on_judged_windowed_jobs():
    idle_windowed = 0
    for seed in range(40):
        s = generate(VARIANTS["aligned-2pc"], seed)
        r = random_walk("aligned-2pc", seed)
        assert r.verdict == "pass", seed
        if any(o.kind == "window" for o in s.graph.operators):
            assert ("SourceIdle" in r.swarm_kinds) <= event_time_judged(s.graph)
            idle_windowed += "SourceIdle" in r.swarm_kinds
    assert idle_windowed > 0


def test_variant_window_lateness_ignored_is_caught_and_the_safe_twin_survives_the_same_actions():
    """Two sources -> tumbling window with allowed lateness -> sink. One source goes idle, the
    watermark passes the other source's records; such a record arrives after its window fired
    but within the allowed lateness. Ignoring the lateness drops it (late_drop_justified);
    Flink's operator fires the window again with it."""
    for seed in range(400):
        r = random_walk("window-lateness-ignored", seed)
        if r.invariant == "late_drop_justified":
            break
    else:
        raise AssertionError("not found in 400 runs")
    scenario = generate(variant("window-lateness-ignored"), seed)
    actions = shrink(scenario, list(r.actions), "late_drop_justified")
    v, _ = replay(scenario, actions, finish=False)
    assert v is not None and "its window still accepts it" in v.message
    assert any(type(a).__name__ == "SourceIdle" for a in actions)
    safe = attrs.evolve(scenario, config=attrs.evolve(scenario.config, bugs=()))
    v_safe, run = replay_lenient(safe, actions)
    assert v_safe is None and run.timing_dependent


def test_the_append_sink_is_caught_by_the_judge_where_the_reference_cannot_judge():
    """In runs where a source went idle the reference judges no window result; the append
    sink's duplicate is caught there by the judge: while running, a window's committed results
    count a record twice (committed_output_within_reference's bound for such runs), or, once
    drained, they do not add up (window_results_exactly_once)."""
    found = {}
    for seed in range(300):
        r = random_walk("late-window-append", seed)
        if r.verdict != "violation" or not any(type(a).__name__ == "SourceIdle" for a in r.actions):
            continue
        _, run = replay(generate(variant("late-window-append"), seed), r.actions, finish=False)
        if run.timing_dependent:
            found.setdefault(r.invariant, r.violation["message"])
        if "committed_output_within_reference" in found:
            break
    assert set(found) <= {"committed_output_within_reference", "window_results_exactly_once"}, found
    assert "a duplicate: " in found["committed_output_within_reference"]
    assert all(random_walk("late-window-2pc", seed).verdict == "pass" for seed in range(30))


def test_a_timing_dependent_run_is_not_judged_by_the_reference():
    g = job()
    s = Scenario(graph=g, job_input=INPUT, config=RuntimeConfig(), seed=0)
    run = Run(s)
    assert run.expected.disordered and run.timing_dependent
    assert run.finish() is None


# -- unions ------------------------------------------------------------------------------------

def union_jobs():
    """Windows reading sources through maps, filters and a union (covered), and a rolling
    aggregate behind a union (its results depend on the interleaving: not covered)."""
    b = StreamGraphBuilder("union-window")
    a, c = b.source("a", parallelism=2), b.source("c")
    m = b.map("m", c, function="add:3")
    f = b.filter("f", a, function="odd_value")
    w = b.window("w", [f, m], size=4, aggregate="sum", parallelism=2)
    b.sink("out", w, sink_kind="two_phase_commit")
    covered_job = b.build()
    b = StreamGraphBuilder("union-rolling")
    a, c = b.source("a"), b.source("c")
    agg = b.keyed_aggregate("agg", [a, c], aggregate="sum")
    b.sink("out", agg, sink_kind="append")
    return covered_job, b.build()


def test_a_union_is_its_inputs_records_together_and_judged_with_idle_sources():
    from model.jobfile import InputSpec, generate_input  # the job file's input generator, for these graphs
    from model.reference import reference_output  # the model's reference, compared with the spec
    from spec.declarative import covered, disagreement, expected_output

    judged, rolling = union_jobs()
    assert covered(judged) and event_time_judged(judged)
    assert not covered(rolling) and expected_output(rolling, JobInput({})) is None
    for seed in range(20):
        inp = generate_input(judged, InputSpec(records=4, keys=("x", "y")), seed)
        assert disagreement(judged, reference_output(judged, inp), expected_output(judged, inp)) is None, seed
    s = Scenario(graph=judged, job_input=generate_input(judged, InputSpec(records=3, keys=("x",)), 0),
                 config=RuntimeConfig(max_failures=1), seed=0)
    assert "SourceIdle" in offered_kinds(s)


def test_walks_of_a_union_window_job_with_idle_sources_and_failures_pass():
    """Records made late by idleness are dropped in some runs; a two-phase-commit sink keeps
    every window result counted once less those drops, across failures and restores."""
    from model.jobfile import job_file_from_dict  # a job file's dict form, for the union graph
    from model.streamgraph import stream_graph_to_dict  # as above
    from model.variants import job_variant  # as above

    graph, _ = union_jobs()
    job = job_file_from_dict({**stream_graph_to_dict(graph), "runtime": {"max_failures": 1},
                              "input": {"records": 3, "keys": ["x", "y"]}})
    v = job_variant(job)
    idle = late = 0
    for seed in range(80):
        r = random_walk(v, seed)
        assert r.verdict == "pass", (seed, r.violation)
        idle += any(type(a).__name__ == "SourceIdle" for a in r.actions)
        _, run = replay(generate(v, seed), r.actions, finish=False)
        late += bool(run.cluster.late)
    assert idle > 20 and late > 0
