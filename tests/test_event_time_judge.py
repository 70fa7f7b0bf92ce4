"""The event-time judge (spec/declarative.py): late drops justified by the watermark at
arrival, every other record counted once in its window's results, no reference run needed;
idle sources searched on the windowed jobs it covers."""

from __future__ import annotations

import random

import attrs

from model.cluster import JobInput, RuntimeConfig
from model.environment import Environment
from model.streamgraph import StreamGraphBuilder
from model.variants import VARIANTS, Scenario, generate, variant
from properties.engines import Run, offered_kinds, random_walk, replay, replay_lenient, shrink
from scenario_util import safe_twin
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
    assert event_time_judged(job(sink_kind="upsert"))  # judged through its changelog: every result it wrote
    # a window that reaches its sink through another operator is not covered
    b = StreamGraphBuilder("w")
    win = b.window("win", b.source("source", parallelism=2), size=10, parallelism=1)
    b.sink("sink", b.map("m", win, parallelism=1), parallelism=1)
    through_map = b.build()
    assert not event_time_judged(through_map)
    # a run with an idle source is judged on the jobs it covers; no engine offers idleness elsewhere
    for g in (job(), job(slide=5), job(sink_kind="upsert")):
        assert "SourceIdle" in offered_kinds(Scenario(graph=g, job_input=INPUT, config=RuntimeConfig(), seed=0))
    assert "SourceIdle" not in offered_kinds(Scenario(graph=through_map, job_input=INPUT, config=RuntimeConfig(),
                                                      seed=0))


def test_an_upsert_sink_is_judged_by_every_result_it_wrote():
    """An upsert sink keeps every generation's result in its changelog (nothing is rolled back):
    a window's result written again after a restore is no duplicate; a generation may fire with
    part of the records (the rest in flight, or held back by an idle source) and leave the rest
    to the next. Every record not dropped as late is in some result; none counts more than the
    window's records."""
    g = job(sink_kind="upsert")
    # window [0, 10): ts 1, 3, 5 (values 1, 2, 8); [10, 20): ts 12 (4)
    full = [("a", 3, 9), ("a", 1, 19)]
    assert window_result_problems(g, INPUT, {"sink": full}, []) == []
    again = [("a", 3, 9), ("a", 3, 9), ("a", 1, 19)]  # the window fired again after a restore
    assert window_result_problems(g, INPUT, {"sink": again}, [], restores=1) == []
    (p,) = window_result_problems(g, INPUT, {"sink": again}, [], restores=0)  # without one: twice in one opening
    assert "2 results" in p
    # a partial result, then the whole window; or the window's records split over two generations
    for split in ([("a", 2, 9), ("a", 3, 9)], [("a", 2, 9), ("a", 1, 9)]):
        assert window_result_problems(g, INPUT, {"sink": split + [("a", 1, 19)]}, [], restores=1) == []
    # a record in none of the results, never dropped
    (p,) = window_result_problems(g, INPUT, {"sink": [("a", 2, 9), ("a", 1, 19)]}, [], restores=1)
    assert "window ending 10" in p and "a record is in none of its results" in p
    # ... unless it was dropped as late
    late = [("win", "a", 8, 5, 9)]
    assert window_result_problems(g, INPUT, {"sink": [("a", 2, 9), ("a", 1, 19)]}, late, restores=1) == []
    # no result counts more records than the window has
    (p,) = window_result_problems(g, INPUT, {"sink": [("a", 4, 9), ("a", 3, 9), ("a", 1, 19)]}, [], restores=1)
    assert "a result of 4, more than the count of the window's 3 record(s)" in p
    # the same results into an append sink add up to more than the window's records
    (p,) = window_result_problems(job(), INPUT, {"sink": again}, [], restores=1)
    assert "add up to 6, expected 3" in p


def test_windows_into_an_upsert_sink_with_idle_sources_pass_and_a_lost_record_is_caught():
    """late-window-2pc's jobs with an upsert sink and without allowed lateness: every engine
    takes idle sources on them now, and the walks pass. A planted change that loses records
    which are not late (the window operator ignores an on-time record once a watermark arrived:
    the failure-free reference reads every record before the first watermark, so only the
    event-time judge can see it) is caught by the judge in the same runs."""
    from model import seams
    from model.events import LONG_MIN
    from model.windowing import WindowOperator

    @seams.override("test-window-loses-a-record", WindowOperator, "process_element",
                    "the window operator ignores an on-time record once a watermark arrived")
    def _lose(self, key, value, timestamp, out):
        if self.current_watermark > LONG_MIN and not any(
                st + self._size - 1 + self.allowed_lateness <= self.current_watermark for st in self.assigner.assign_starts(timestamp)):
            return
        seams.original("test-window-loses-a-record")(self, key, value, timestamp, out)
    try:
        idle = caught = 0
        for seed in range(15):  # (nearly every walk with an idle source catches it)
            sc = generate(variant("late-window-2pc"), seed)
            ops = tuple(attrs.evolve(o, sink_kind="upsert") if o.kind == "sink"
                        else attrs.evolve(o, allowed_lateness=0) if o.kind == "window" else o for o in sc.graph.operators)
            sc = attrs.evolve(sc, graph=attrs.evolve(sc.graph, operators=ops).validate())
            assert "SourceIdle" in offered_kinds(sc)
            v, run = _walk(sc, seed)
            assert v is None, (seed, v)
            if not any(type(a).__name__ == "SourceIdle" for a in run.cluster.trace):
                continue
            idle += 1
            bad = attrs.evolve(sc, seams=("test-window-loses-a-record",))
            v_bad, _ = replay_lenient(bad, list(run.cluster.trace))
            caught += v_bad is not None and v_bad.invariant == "window_results_exactly_once"
        assert idle > 0, "no walk took an idle source"
        assert caught > 0, f"the lost record was caught in none of the {idle} runs with an idle source"
    finally:
        seams.unregister(["test-window-loses-a-record"])


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
        starts = self.assigner.assign_starts(timestamp)
        if len(starts) > 1 and any(st + self._size - 1 + self.allowed_lateness <= self.current_watermark
                                   for st in starts):
            return
        seams.original("test-sliding-drops-all")(self, key, value, timestamp, out)
    try:
        caught = skipped = 0
        for seed in range(40):  # (about one walk in six skips a window; six of the first 40 do)
            sc = _sliding(seed)
            assert event_time_judged(sc.graph)
            v, run = _walk(sc, seed)
            assert v is None, (seed, v)
            if not run.cluster.window_skips:
                continue
            skipped += 1
            bad = attrs.evolve(sc, seams=("test-sliding-drops-all",))
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
    safe = safe_twin(scenario)
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
                 config=RuntimeConfig(), environment=Environment(max_failures=1), seed=0)
    assert "SourceIdle" in offered_kinds(s)


def test_walks_of_a_union_window_job_with_idle_sources_and_failures_pass():
    """Records made late by idleness are dropped in some runs; a two-phase-commit sink keeps
    every window result counted once less those drops, across failures and restores."""
    from model.jobfile import job_file_from_dict  # a job file's dict form, for the union graph
    from model.streamgraph import stream_graph_to_dict  # as above
    from model.variants import job_variant  # as above

    graph, _ = union_jobs()
    job = job_file_from_dict({**stream_graph_to_dict(graph), "environment": {"max_failures": 1},
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
