"""The exhaustive explorer (properties/explore.py) and `flinkspec explore`.

Small scenarios only: a failure-free aligned-2pc space has a few hundred states."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from flinkspec.cli import main
from model import actions as A
from model.cluster import Cluster, drain_choice
from model.variants import small_scenario, variant, variant_names
from properties.engines import replay
from properties.explore import Limits, _without_cyclic_gc, check_progress, explore

ROOT = Path(__file__).resolve().parents[1]


def _small(name: str, **changes):
    v = variant(name)
    return small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, **changes)))


def _reachable(scenario) -> int:
    """Every state reachable with enabled actions, counted by a plain search of its own (depth
    first, no reduction; states told apart as the explorer does, by ``Run.fingerprint``)."""
    from properties.engines import Run
    root = Run(scenario, track_goals=False)
    seen = {root.fingerprint()}
    stack = [root]
    while stack:
        r = stack.pop()
        for a in r.cluster.enabled_actions():
            d = r.fork()
            d.step(a)
            fp = d.fingerprint()
            if fp not in seen:
                seen.add(fp)
                stack.append(d)
    return len(seen)


@pytest.fixture(scope="module")
def safe_small():
    return _small("aligned-2pc", failures=0)


@pytest.fixture(scope="module")
def safe_result(safe_small):
    return explore(safe_small)


def test_a_safe_small_space_is_verified_and_counts_every_reachable_state(safe_small, safe_result):
    r = safe_result
    assert r.verdict == "verified" and r.complete and r.limit is None
    assert r.distinct_states == _reachable(safe_small)
    assert r.transitions >= r.distinct_states - 1
    assert r.drained_states >= 1  # the end-of-run invariants were judged somewhere


def test_the_search_is_deterministic(safe_small, safe_result):
    again = explore(safe_small)
    assert (again.verdict, again.distinct_states, again.transitions, again.depth) == \
        (safe_result.verdict, safe_result.distinct_states, safe_result.transitions, safe_result.depth)


def test_limits_give_a_bounded_verdict_that_says_which(safe_small, safe_result):
    r = explore(safe_small, Limits(max_states=50))
    assert r.verdict == "bounded" and not r.complete and r.limit == "max_states=50"
    assert 50 <= r.distinct_states < safe_result.distinct_states
    r = explore(safe_small, Limits(max_depth=3))
    assert r.verdict == "bounded" and r.limit == "max_depth=3" and r.depth == 3


def test_an_unsafe_variant_gives_a_shortest_counterexample_that_replays():
    scenario = _small("unaligned-without-channel-state", failures=0)
    r = explore(scenario)
    assert r.verdict == "violation" and r.violation.invariant == "consistent_cut"
    assert r.violation.step == len(r.trace) - 1
    v, _run = replay(scenario, list(r.trace))
    assert v is not None and (v.invariant, v.step) == ("consistent_cut", r.violation.step)
    # shortest: no trace one step shorter violates anything
    shorter = explore(scenario, Limits(max_depth=len(r.trace) - 1))
    assert shorter.verdict == "bounded" and shorter.violation is None


def test_every_reachable_state_of_a_safe_small_scenario_can_drain(safe_small, safe_result):
    checked, trace, why = check_progress(safe_small)
    assert (trace, why) == (None, None)
    assert checked == safe_result.distinct_states


def test_the_checkpoint_budget_bounds_triggers_but_not_the_final_checkpoint():
    scenario = _small("aligned-2pc", failures=0, checkpoints=1)
    c = Cluster.from_scenario(scenario)
    trigger = A.TriggerCheckpoint(False)
    assert c.why_not_enabled(trigger) is None
    c.step(trigger)
    while any(isinstance(a, (A.Deliver, A.NotifyCheckpointComplete)) for a in c.enabled_actions()):
        c.step(next(a for a in c.enabled_actions() if isinstance(a, (A.Deliver, A.NotifyCheckpointComplete))))
    assert c.coordinator.num_pending == 0
    assert "budget" in c.why_not_enabled(trigger)
    # finish the job: the final checkpoint (FLIP-147) is offered once more
    for _ in range(200):
        if c.final_checkpoint_needed():
            break
        c.step(drain_choice(c))
    assert c.final_checkpoint_needed()
    assert c.why_not_enabled(trigger) is None


def test_cli_json_row(capsys):
    rc = main(["explore", "--variant", "unaligned-without-channel-state", "--small", "--json", "--no-write",
               "--max-seconds", "60"])
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and row["as_expected"]
    for field in ("variant", "expected", "verdict", "invariant", "distinct_states", "transitions", "depth",
                  "complete", "seconds", "states_per_s", "workers", "counterexample_steps", "shrunk_steps", "file"):
        assert field in row
    assert row["verdict"] == "violation" and row["invariant"] == "consistent_cut" and row["file"] is None
    assert row["counterexample_steps"] >= 1


@pytest.mark.parametrize("argv, needle", [
    (["explore", "--small"], "--variant"),
    (["explore", "--variant", "no-such-variant", "--small"], "unknown variant"),
    (["explore", "--variant", "aligned-2pc", "--max-states", "0"], "--max-states"),
    (["explore", "--variant", "aligned-2pc", "--max-seconds", "inf"], "--max-seconds"),
    (["explore", "--variant", "aligned-2pc", "--workers", "0"], "--workers"),
    (["explore", "--variant", "aligned-2pc", "--workers", "2", "--master", "local[2]"], "not both"),
    (["explore", "--variant", "aligned-2pc", "--master", "spark://nohost"], "HOST:PORT"),
    (["explore", "--variant", "cp-no-fencing", "--failures", "2"], "goes with --small"),
])
def test_cli_bad_arguments_are_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


# -- partial-order reduction (sleep sets) ------------------------------------------------------

def _walk(name: str, seed: int, steps: int) -> Cluster:
    import random

    from model.variants import generate
    c = Cluster.from_scenario(generate(variant(name), seed))
    rng = random.Random(f"por:{name}:{seed}")
    for _ in range(steps):
        acts = c.enabled_actions()
        if not acts:
            break
        c.step(rng.choice(acts))
    return c


def test_actions_with_disjoint_footprints_commute_on_every_variant():
    """The independence the reduction relies on: whenever two enabled actions have disjoint
    footprints, each stays enabled after the other and both orders reach one state. Checked
    on seeded walks of every variant; it must meet enough independent pairs to mean something."""
    from model.variants import variant_names
    pairs = 0
    for name in variant_names():
        for seed in range(4):
            for steps in (3, 12, 30):
                c = _walk(name, seed, steps)
                if c.config.time_sensitive:
                    continue
                acts = c.enabled_actions()
                fp = {a: A.KINDS[type(a)].footprint(c, a) for a in acts}
                for i, a in enumerate(acts):
                    for b in acts[i + 1:]:
                        if fp[a] is None or fp[b] is None or not fp[a].isdisjoint(fp[b]):
                            continue
                        pairs += 1
                        ab, ba = c.copy(), c.copy()
                        ab.step(a)
                        assert b in ab.enabled_actions(), f"{name}: {a!r} disabled {b!r}"
                        ab.step(b)
                        ba.step(b)
                        assert a in ba.enabled_actions(), f"{name}: {b!r} disabled {a!r}"
                        ba.step(a)
                        assert ab.fingerprint() == ba.fingerprint(), f"{name}: {a!r} and {b!r} do not commute"
    assert pairs >= 100, f"only {pairs} independent pairs met: the check is too weak"


@pytest.mark.parametrize("name, depth", [
    ("aligned-2pc", 3), ("at-least-once-2pc", 3),
    pytest.param("upsert-sink", 4, marks=pytest.mark.slow), pytest.param("unaligned-2pc", 4, marks=pytest.mark.slow),
    pytest.param("at-least-once-2pc", 5, marks=pytest.mark.slow)])
def test_the_reduction_keeps_every_state_and_the_verdict(name, depth):
    """Sleep sets prune transitions, never states: the same distinct states at every depth,
    the same verdict and counterexample length, fewer transitions (on generated scenarios,
    whose parallel subtasks have independent actions)."""
    from model.variants import generate
    sc = generate(variant(name), 1)
    full = explore(sc, Limits(max_depth=depth), reduce=False)
    red = explore(sc, Limits(max_depth=depth), reduce=True)
    assert (red.verdict, red.distinct_states, red.depth) == (full.verdict, full.distinct_states, full.depth)
    assert len(red.trace) == len(full.trace)
    assert (red.violation and red.violation.invariant) == (full.violation and full.violation.invariant)
    assert red.transitions < full.transitions  # and it does prune


def _walked_runs(tag: str, steps: int, every: int):
    """``(variant name, run, its enabled actions)`` every ``every`` steps of seeded walks (seeds
    0-2, at most ``steps`` steps) of every variant. The caller forks what it compares: the walk
    goes on from the run."""
    import random

    from model.variants import generate
    from properties.engines import Run
    for name in variant_names():
        for seed in range(3):
            run = Run(generate(variant(name), seed))
            rng = random.Random(f"{tag}:{name}:{seed}")
            for step in range(steps):
                acts = run.cluster.enabled_actions()
                if not acts:
                    break
                if step % every == 0:
                    yield name, run, acts
                if run.step(rng.choice(acts)) is not None:
                    break


def _verdict(run, v):
    """The invariant a step broke, else, for a drained run, the end-of-run verdict."""
    if v is None and run.cluster.is_drained():
        v = run.finish()
    return v and v.invariant


def test_actions_with_one_outcome_reach_one_state_judged_alike_on_every_variant():
    """What the outcome reduction relies on (``ActionKind.outcome``): two enabled actions with
    one outcome key -- of one kind, or a task failure and a TaskManager loss -- reach states of
    one ``Run.fingerprint`` (the state and the history the invariants read) with the same
    verdict. Checked on seeded walks of every variant; it must meet enough such pairs, of both
    sorts, to mean something."""
    from properties.explore import _OUTCOME_KINDS
    assert _OUTCOME_KINDS, "no kind declares outcomes"
    pairs = across = 0
    for name, run, acts in _walked_runs("outcome", 60, 6):
        c = run.cluster
        by_key: dict = {}
        for a in acts:
            if type(a) in _OUTCOME_KINDS:
                key = A.KINDS[type(a)].outcome(c, a)
                if key is not None:
                    by_key.setdefault(key, []).append(a)
        for same in by_key.values():
            for b in same[1:]:
                ra, rb = run.fork(), run.fork()
                va, vb = ra.step(same[0]), rb.step(b)
                assert ra.fingerprint() == rb.fingerprint(), f"{name}: {same[0]!r} and {b!r} differ"
                assert _verdict(ra, va) == _verdict(rb, vb), f"{name}: {same[0]!r} and {b!r} judged apart"
                pairs += 1
                across += type(b) is not type(same[0])
    assert pairs >= 100, f"only {pairs} pairs of actions with one outcome met: the check is too weak"
    assert across >= 20, f"only {across} pairs of actions of two kinds with one outcome met: the check is too weak"


def test_the_outcome_reduction_keeps_every_state_and_the_shortest_counterexample():
    """Taking one of the task failures that restart the same tasks: the same states, depth,
    verdict and counterexample length as the search that takes every one, fewer transitions
    (a verified and an unsafe small scenario, each with a failure)."""
    from properties import explore as E
    for name in ("aligned-2pc", "append-sink-under-failures"):
        sc = _small(name)
        red = explore(sc)
        kinds = E._OUTCOME_KINDS
        try:
            E._OUTCOME_KINDS = frozenset()
            full = explore(sc)
        finally:
            E._OUTCOME_KINDS = kinds
        assert (red.verdict, red.distinct_states, red.depth, len(red.trace)) == \
               (full.verdict, full.distinct_states, full.depth, len(full.trace)), name
        assert red.transitions < full.transitions, name


_SAME = ("verdict", "distinct_states", "transitions", "depth", "complete", "drained_states", "trace")


@pytest.mark.parametrize("name, workers, changes", [
    ("aligned-2pc", 2, {"failures": 0}), ("aligned-2pc", 3, {}),
    ("unaligned-without-channel-state", 2, {"failures": 0}), ("at-least-once-2pc", 3, {})])
def test_worker_processes_give_the_result_of_one_process(name, workers, changes):
    """``ProcessLevels``: the states, transitions, depth, drained states and counterexample of
    the search in one process, whatever the number of workers (verified and unsafe scenarios)."""
    from properties.explore_workers import ProcessLevels
    sc = _small(name, **changes)
    local = explore(sc)
    with ProcessLevels(sc, True, workers) as levels:
        split = explore(sc, levels=levels)
    assert [getattr(split, f) for f in _SAME] == [getattr(local, f) for f in _SAME]
    assert (split.violation and split.violation.invariant) == (local.violation and local.violation.invariant)
    assert split.workers == workers and local.verdict == ("verified" if variant(name).safe else "violation")


def test_a_worker_expands_a_stolen_state_that_ranks_below_its_violation():
    """A worker that found a violation still expands the states it steals afterwards that rank
    below it: one of them may hold the level's smallest violating trace. (Work stealing hands a
    worker states of any rank once its own are done; skipping them gave, now and then, another
    counterexample than the search in one process.)"""
    from properties.explore import LocalLevels, Watch
    from properties.explore_workers import _LevelWork

    class Recording(LocalLevels):
        frontiers: list = []

        def expand(self, frontier, seen, watch, report):
            self.frontiers.append([(t, s) for t, _run, s in frontier])
            return super().expand(frontier, seen, watch, report)

    class Quiet:  # the driver's end of the pipe: never asks anything
        def poll(self):
            return False

        def send(self, msg):
            pass

    sc = _small("at-least-once-2pc")
    levels = Recording(sc, True)
    local = explore(sc, levels=levels)
    assert local.verdict == "violation"
    entries = [(rank, None, t, s) for rank, (t, s) in enumerate(levels.frontiers[-1])]

    def violations(*batches):
        work = _LevelWork(sc, True, {}, set(), Watch(), Quiet())
        for batch in batches:
            work.run(batch)
        transitions, found, _claims, _stopped = work.finish()
        return transitions, found

    transitions, found = violations(entries)
    bad = sorted({key[0] for key, _t, _v in found})
    first = min(found, key=lambda x: x[0])
    assert first[1] == local.trace
    # a later violating state, expanded first, and the smaller ones stolen after it
    later = [rank for rank, _f, t, s in entries if rank > bad[0] and violations([(rank, None, t, s)])[1]]
    assert later, "the level has a second violating state"
    cut = later[0]
    stolen_transitions, stolen = violations([e for e in entries if e[0] >= cut], [e for e in entries if e[0] < cut])
    assert min(stolen, key=lambda x: x[0])[:2] == first[:2]
    assert stolen_transitions == transitions


def test_a_fingerprint_does_not_depend_on_when_it_was_first_computed():
    """A rescale replaces the graph: a run fingerprinted before the restart and one first
    fingerprinted after it (a state replayed from its trace, as the worker processes and Spark's
    executors rebuild states) get the same fingerprint."""
    sc = _small("rescale-savepoint")
    trace = (A.StopWithSavepoint(), A.Deliver(channel=0), A.Deliver(channel=1),
             A.RestartFromSavepoint(parallelism=(("source", 1), ("agg", 1), ("sink", 1))))
    early, late = Cluster.from_scenario(sc), Cluster.from_scenario(sc)
    for a in trace:
        early.fingerprint()
        early.step(a)
        late.step(a)
    assert early.eg.stream_graph != Cluster.from_scenario(sc).eg.stream_graph  # the restart rescaled
    assert early.fingerprint() == late.fingerprint()


def test_worker_processes_that_move_states_give_the_result_of_one_process():
    """States moved between workers are replayed from their traces: on a rescale scenario (the
    graph changes mid-run) the counts are still those of one process."""
    from properties.explore_workers import ProcessLevels
    sc = _small("rescale-savepoint")
    local = explore(sc, Limits(max_depth=14))  # 8,707 states (a fingerprint of the replaced graph: 8,741)
    with ProcessLevels(sc, True, 2) as levels:
        split = explore(sc, Limits(max_depth=14), levels=levels)
    assert [getattr(split, f) for f in _SAME] == [getattr(local, f) for f in _SAME]


@pytest.mark.parametrize("name", ["aligned-2pc", "at-least-once-2pc"])
def test_states_stolen_by_an_idle_worker_give_the_result_of_one_process(name, monkeypatch):
    """With no balancing before a level, the root's worker would own every state: the other
    worker gets its work only by taking the tail of a busy worker's queue (work stealing). The
    states, transitions, depth, drained states and counterexample are still those of one
    process, and states were stolen."""
    from properties import explore_workers
    monkeypatch.setattr(explore_workers, "BALANCE_SLACK", float("inf"))
    sc = _small(name)
    local = explore(sc)
    with explore_workers.ProcessLevels(sc, True, 2) as levels:
        split = explore(sc, levels=levels)
    assert [getattr(split, f) for f in _SAME] == [getattr(local, f) for f in _SAME]
    assert levels.stolen > 0


def test_worker_processes_stop_at_the_state_limit_like_one_process():
    from properties.explore_workers import ProcessLevels
    sc = _small("aligned-2pc")
    local = explore(sc, Limits(max_states=200))
    with ProcessLevels(sc, True, 2) as levels:
        split = explore(sc, Limits(max_states=200), levels=levels)
    assert split.verdict == local.verdict == "bounded" and split.limit == "max_states=200"
    assert (split.distinct_states, split.transitions, split.depth) == (local.distinct_states, local.transitions,
                                                                         local.depth)


def test_a_failing_worker_is_one_clear_error(monkeypatch):
    """An exception in a worker stops the search with an error that names the worker and
    carries its traceback, never a hang or a silently smaller count."""
    from model.errors import FlinkspecError
    from properties import explore_workers

    def broken(*_a, **_k):
        raise RuntimeError("the model broke here")

    monkeypatch.setattr(explore_workers, "expand", broken)  # the forked workers inherit it
    sc = _small("aligned-2pc", failures=0)
    with explore_workers.ProcessLevels(sc, True, 2) as levels:
        with pytest.raises(FlinkspecError, match=r"explore worker \d failed(.|\n)*the model broke here"):
            explore(sc, levels=levels)


def test_cli_workers_run_local_processes(capsys):
    argv = ["explore", "--variant", "aligned-2pc", "--small", "--json", "--no-write"]
    assert main(argv) == 0
    one = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(argv + ["--workers", "2"]) == 0
    two = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (one["workers"], two["workers"]) == (1, 2)
    assert [two[k] for k in ("verdict", "distinct_states", "transitions", "depth")] == \
        [one[k] for k in ("verdict", "distinct_states", "transitions", "depth")]


def test_the_small_rescale_scenario_moves_its_key_group():
    """The rescale variants' small scenario has one record: its key must lie in a key group that
    the rescale from parallelism 1 to 2 moves to the second subtask (KeyGroupRange by range), and
    that ``kg % p`` would place elsewhere, or the safe twin would verify nothing that the unsafe
    twins (rescale-keygroups-modulo, rescale-unaligned-old-index) get wrong."""
    from model.keygroups import assign_to_key_group, compute_operator_index_for_key_group

    for name in ("rescale-savepoint", "rescale-unaligned-checkpoint", "rescale-keygroups-modulo",
                 "rescale-unaligned-old-index"):
        sc = small_scenario(variant(name))
        (split,) = sc.job_input.splits["source"]
        assert len(split) == 1, name
        key = split[0][0]
        agg = next(o for o in sc.graph.operators if o.name == "agg")
        assert agg.parallelism == 1 and dict(sc.environment.rescale_options)["agg"] == (2,), name
        kg = assign_to_key_group(key, agg.max_parallelism)
        owner = compute_operator_index_for_key_group(agg.max_parallelism, 2, kg)
        assert owner == 1 and kg % 2 != owner, (name, key, kg)


#: the catalog kinds whose small scenarios give the seconds their search ends in (``Small.search_seconds``)
_EXHAUSTIVE_KINDS = ("cluster", "control-plane", "state-backend")


def _exhaustive(safe: bool) -> list:
    return [n for n in variant_names(safe=safe)
            if variant(n).kind in _EXHAUSTIVE_KINDS and variant(n).small.search_seconds is not None]


def test_every_cluster_variant_gives_its_search_budget():
    """Every cluster, control-plane and state-backend variant's small scenario gives the seconds
    its exhaustive search ends in (``Small.search_seconds``), so the slow tests below hold each
    to its verdict in its own time: at least five safe cluster variants are verified completely,
    and every variant without a budget says in docs/exploration.md how far its search got."""
    assert len([n for n in _exhaustive(True) if variant(n).kind == "cluster"]) >= 5
    unbounded = [n for n in variant_names() if variant(n).kind in _EXHAUSTIVE_KINDS
                 and variant(n).small.search_seconds is None]
    page = (ROOT / "docs" / "exploration.md").read_text()
    for n in unbounded:
        assert f"| {n} | bounded |" in page, f"{n}: no budget, and no bounded row in docs/exploration.md"


@pytest.mark.slow
@pytest.mark.parametrize("name", _exhaustive(safe=True))
def test_every_exhaustive_safe_cluster_variant_is_verified(name):
    """The small scenario of every safe cluster and control-plane variant with a budget is
    explored completely within its ``Small.search_seconds`` on the machine's two cores (two
    worker processes), with no violation."""
    from properties.explore_workers import ProcessLevels
    sc = small_scenario(variant(name))
    budget = variant(name).small.search_seconds
    with ProcessLevels(sc, True, 2) as levels:
        ex = explore(sc, Limits(max_seconds=budget), levels=levels)
    assert ex.verdict == "verified", f"{name}: {ex.verdict} after {ex.distinct_states} states ({ex.limit})"


@pytest.mark.slow
@pytest.mark.parametrize("name", _exhaustive(safe=False))
def test_every_unsafe_cluster_variant_is_found_in_its_small_scenario(name):
    """The small scenario of every known-unsafe cluster and control-plane variant with a budget
    exercises its mechanism: the search finds one of the variant's expected invariants within
    its ``Small.search_seconds`` (one process), and the trace replays to it."""
    v = variant(name)
    sc = small_scenario(v)
    ex = explore(sc, Limits(max_seconds=v.small.search_seconds))
    assert ex.verdict == "violation", f"{name}: {ex.verdict} after {ex.distinct_states} states ({ex.limit})"
    assert ex.violation.invariant in v.expected, (name, ex.violation.invariant)
    got, _run = replay(sc, list(ex.trace))
    assert got is not None and got.invariant == ex.violation.invariant


# -- merging runs: the fingerprint must include what the invariants read of the history --------

def _merges(scenario, key, max_states: int, kept: dict):
    """Breadth first over ``scenario`` with runs merged by ``key(run)`` (``kept``: key -> the
    run kept, filled as the search goes): yields ``(kept run, merged run)`` for every run
    merged into one already kept."""
    from properties.engines import Run
    from properties.explore import expand

    root = Run(scenario, track_goals=False)
    kept[key(root)] = root
    frontier = [root]
    while frontier and len(kept) < max_states:
        nxt = []
        for run in frontier:
            for _a, child, v, _s in expand(run):
                if v is not None:
                    continue
                k = key(child)
                if k in kept:
                    yield kept[k], child
                else:
                    kept[k] = child
                    nxt.append(child)
        frontier = nxt


def _merged_verdict_differences(scenario, key, max_states: int, stop_at_first: bool,
                                every: int = 1) -> tuple[int, int, list]:
    """Every ``every``-th run merged into one already kept (``_merges``) is drained, and so is
    the kept one, and their verdicts compared (a merged run must be judged as the kept one
    would be). Returns (states, merges compared, differences)."""

    def verdict(run):
        r = run.fork()
        v = r.violation if r.violation is not None else r.finish()
        return None if v is None else v.invariant

    kept: dict = {}
    merges, diffs = 0, []
    for i, (one, other) in enumerate(_merges(scenario, key, max_states, kept)):
        if i % every:
            continue
        merges += 1
        a, b = verdict(one), verdict(other)
        if a != b:
            diffs.append((a, b, other.cluster.trace))
            if stop_at_first:
                break
    return len(kept), merges, diffs


#: draining both runs of a merge costs far more than finding it: the default run compares every
#: eighth merge (spread over every depth the search reached: merges come breadth first), the
#: slow run every one
_EVERY_MERGE = [pytest.param(8, id="sampled"), pytest.param(1, marks=pytest.mark.slow, id="all")]


def test_the_state_fingerprint_alone_would_merge_runs_that_are_judged_differently():
    """The hole ``Run.fingerprint`` closes: two runs of one cluster state whose histories differ
    (one's checkpoint aborted after a disturbance, the other's without one) drain to different
    verdicts of ``checkpoints_keep_completing``. The default run's sample of the merges (every
    eighth) finds it: the sampled test below has teeth."""
    from model.variants import generate
    states, merges, diffs = _merged_verdict_differences(
        generate(variant("unchecked-cancellation-id"), 3), lambda r: r.cluster.fingerprint(), 600, True,
        _EVERY_MERGE[0].values[0])
    assert diffs, f"no merged pair judged differently among {merges} merges of {states} states"
    assert "checkpoints_keep_completing" in diffs[0][:2]


@pytest.mark.parametrize("name, seed, max_states", [
    # the scenario and bound where the state's fingerprint alone merges runs judged differently
    ("unchecked-cancellation-id", 3, 600),
    ("window-lateness-ignored", 3, 800),  # idle sources: window results judged by the event-time judge
    ("FLINK-17568", 1, 400),
])
@pytest.mark.parametrize("every", _EVERY_MERGE)
def test_runs_merged_by_the_run_fingerprint_are_judged_alike(name, seed, max_states, every):
    from model.variants import generate
    states, merges, diffs = _merged_verdict_differences(
        generate(variant(name), seed), lambda r: r.fingerprint(), max_states, False, every)
    assert merges >= 50 and merges * every > 100, (states, merges)
    assert not diffs, diffs[:2]


# -- merging states: what the fingerprint leaves out must change no step ------------------------

def _merged_steps_differences(scenario, max_states: int) -> tuple[int, int, int, list]:
    """For every run merged by ``Run.fingerprint`` into one already kept (``_merges``), both take
    every enabled action, and the two runs must enable the same actions and reach, by each,
    states of one fingerprint with one verdict (the fingerprint is then a bisimulation on the
    space searched: what it leaves out -- the parts beside the state (history, memos), the
    restarts no restart strategy counts, the values of fresh identifiers -- changes no step). Returns
    (states, merges, merges whose clusters differ in their ``JobState``, differences)."""
    from properties.explore import expand

    def steps(run):
        return {repr(a): (child.fingerprint(), None if v is None else v.invariant)
                for a, child, v, _s in expand(run)}

    kept: dict = {}
    merges, job_merges, diffs = 0, 0, []
    for one, other in _merges(scenario, lambda r: r.fingerprint(), max_states, kept):
        merges += 1
        job_merges += one.cluster.restarts != other.cluster.restarts
        a, b = steps(one), steps(other)
        if a != b:
            diffs.append((one.cluster.trace, other.cluster.trace,
                          sorted(x for x in a.keys() | b.keys() if a.get(x) != b.get(x))))
    return len(kept), merges, job_merges, diffs


@pytest.mark.parametrize("name, max_states", [
    ("unaligned-savepoints-2pc", 250),  # task, TaskManager and JobManager failures (738 merges)
    ("cp-region-failover", 600),  # the control plane: fresh identifiers, heartbeats, a crash (923)
    pytest.param("unaligned-savepoints-2pc", 500, marks=pytest.mark.slow),
    pytest.param("cp-region-failover", 1500, marks=pytest.mark.slow),
    pytest.param("rescale-savepoint", 800, marks=pytest.mark.slow),
    pytest.param("heap-two-phase-snapshots", 800, marks=pytest.mark.slow),
])
def test_runs_merged_by_the_fingerprint_take_the_same_steps(name, max_states):
    states, merges, job_merges, diffs = _merged_steps_differences(small_scenario(variant(name)), max_states)
    assert merges > 100, (states, merges)
    assert not diffs, diffs[:2]
    if name == "unaligned-savepoints-2pc":
        # a task failure and a JobManager failure restore the same state: only the failover
        # count differs, which no restart strategy of this configuration reads
        assert job_merges > 0, (states, merges)


def test_the_failover_count_tells_states_apart_when_a_restart_strategy_counts_it():
    """A task failure (a failover: FixedDelayRestartBackoffTimeStrategy counts it) and a
    JobManager failure (a new JobMaster: its strategy starts from nothing) restore the same
    state; the run's history counts the failover either way, the state only when the strategy
    bounds its attempts."""
    sc = small_scenario(variant("unaligned-savepoints-2pc"))
    bounded = attrs.evolve(sc, config=attrs.evolve(sc.config, restart_attempts=3))
    for scenario, merged in ((sc, True), (bounded, False)):
        task, job_manager = Cluster.from_scenario(scenario), Cluster.from_scenario(scenario)
        task.step(A.FailTask(subtask=0))
        job_manager.step(A.FailJobManager())
        assert (task.restarts, job_manager.restarts) == (1, 0)
        assert (task.job.current_restart_attempt, job_manager.job.current_restart_attempt) == \
            ((0, 0) if merged else (1, 0))
        assert (task.fingerprint() == job_manager.fingerprint()) is merged


@pytest.mark.slow  # every variant's walks, each step replayed without the history (~25 s)
def test_no_step_reads_the_runs_history():
    """The run's history (``model.history.RunHistory``: the trace, the events, the restores,
    the completed checkpoints' snapshots, the failover count) is beside the state. On seeded
    walks of every variant, a cluster whose history is wiped takes the rest of the walk as the
    one that keeps it: the same enabled actions and the same state (fingerprint) at each step.
    What a later step needs of it is state: the savepoint's snapshots (a restart from it
    restores them) are the JobState's, and a task keeps of the checkpoints it acknowledged
    (``StreamTask.acked``) the newest and those still pending, nothing older."""
    import random

    from model.history import RunHistory

    compared = several_acked = 0
    for name, run, _acts in _walked_runs("completed", 150, 30):
        c = run.cluster
        for t in c.tasks:
            if t.acked:
                newest = max(t.acked)
                assert all(cid == newest or cid in c.coordinator.pending for cid in t.acked), (name, t.acked)
                several_acked += len(t.acked) > 1
        if not c.completed and not c.events:
            continue
        keeps, wiped = c.copy(), c.copy()
        wiped.history = RunHistory()
        assert keeps.fingerprint() == wiped.fingerprint(), name
        trail = random.Random(f"trail:{name}:{compared}")
        for _ in range(40):
            acts = keeps.enabled_actions()
            if not acts:
                break
            assert wiped.enabled_actions() == acts, name
            a = trail.choice(acts)
            keeps.step(a)
            wiped.step(a)
            assert keeps.fingerprint() == wiped.fingerprint(), f"{name}: {a!r}"
        compared += 1
    assert compared >= 30, compared
    assert several_acked > 0
    # the savepoint a stopped job restarts from is state
    stopped = Cluster.from_scenario(_small("rescale-savepoint"))
    for a in (A.StopWithSavepoint(), A.Deliver(channel=0), A.Deliver(channel=1)):
        stopped.step(a)
    assert stopped.job.savepoint_snapshots == stopped.completed[stopped.job.savepoint]
    other = stopped.copy()
    other.job.savepoint_snapshots = {}
    assert other.fingerprint() != stopped.fingerprint()



def test_a_doomed_run_is_drained_at_once_and_its_counterexample_replays():
    """unchecked-cancellation-id: a stale CancelCheckpointMarker aborts checkpoint 2 for no cause
    after 6 steps; from then on every fault-free continuation violates checkpoints_keep_completing
    (``Invariant.doomed``), so the search drains that run instead of searching every way to the
    end (past 140,000 states at depth 10 without it)."""
    v = variant("unchecked-cancellation-id")
    sc = small_scenario(v)
    ex = explore(sc, Limits(max_seconds=60))
    assert ex.verdict == "violation" and ex.violation.invariant == "checkpoints_keep_completing"
    assert ex.decided_after == ex.depth == 6 < len(ex.trace)
    got, _run = replay(sc, list(ex.trace))
    assert got is not None and got.invariant == "checkpoints_keep_completing"
    # the prefix alone does not violate anything yet: the drain's steps are part of the counterexample
    got, _run = replay(sc, list(ex.trace[:ex.decided_after]), finish=False)
    assert got is None


@pytest.mark.parametrize("name", ["unchecked-cancellation-id", "unaligned-savepoints-2pc", "concurrent-checkpoints-2pc",
                                  "rocksdb-incremental"])
def test_a_run_doomed_by_its_history_violates_on_the_fault_free_drain(name):
    """``Invariant.doomed`` is a promise: whenever a walk's history summary says an eventually
    invariant is decided, the drain policy (no further fault) from there ends in a violation."""
    from model.variants import generate
    from properties.engines import Run
    import random
    doomed = 0
    for seed in range(6):
        run = Run(generate(variant(name), seed), track_goals=False)
        rng = random.Random(seed)
        for _ in range(60):
            acts = run.cluster.enabled_actions()
            if not acts or run.violation is not None:
                break
            if run.step(rng.choice(acts)) is not None:
                break
            if run.doomed():
                doomed += 1
                d = run.fork()
                assert d.finish() is not None, (name, seed, run.cluster.trace)
    if variant(name).safe:
        assert doomed == 0
    else:
        assert doomed > 0, f"no walk of {name} met a doomed run"


def test_cli_failures_sets_the_small_scenarios_failure_budget(capsys):
    """``--failures 2``: two JobManager crashes; the deposed leader's split brain is still found in
    12 steps, and the row says which budget was searched."""
    assert main(["explore", "--variant", "cp-no-fencing", "--small", "--failures", "2", "--json", "--no-write"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["failures"] == 2 and row["invariant"] == "no_split_brain" and row["counterexample_steps"] == 12


@pytest.mark.slow
def test_leader_election_and_fencing_with_two_job_manager_crashes_is_verified():
    """2 JobManager processes, 1 TaskExecutor, 2 crashes: every interleaving of the small
    control-plane scenario (380,483 states: about 4 minutes on the 2-core machine's two worker
    processes, 9 in one process)."""
    from properties.explore_workers import ProcessLevels
    v = variant("cp-restart-all")
    sc = small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, failures=2)))
    assert sc.environment.max_failures == 2 and sc.config.job_managers == 2 and sc.config.task_managers == 1
    with ProcessLevels(sc, True, 2) as levels:
        ex = explore(sc, Limits(max_seconds=1800), levels=levels)
    assert ex.verdict == "verified", (ex.verdict, ex.distinct_states, ex.depth, ex.limit)


def _cyclic_garbage() -> dict:
    """What a full collection finds unreachable, by type name (the collector is off while the
    caller makes it: ``_without_cyclic_gc``, which also freezes what was alive before, so that a
    collection in a test suite's large process walks only what the test made), freed
    afterwards."""
    import collections
    import gc
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        found = collections.Counter(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.collect()  # (saved, the cycles were kept alive: now they are freed)
    return dict(found)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])
def test_a_state_holds_no_reference_cycle_on_every_variant(seed):
    """A state is a tree of objects, with no reference cycle: a task's valve, barrier handler
    and source reader are handed the task with each call and never hold it (Flink's
    ``StatusWatermarkValve.inputWatermark(watermark, channel, output)``). So reference
    counting frees a state the moment nobody holds it, which a search without the cyclic
    garbage collector (``explore``) relies on: every enabled action, taken on a copy of states
    met on walks of every variant, and the walk's own run, dropped, leave nothing for the
    collector. Breaking it: a valve that keeps its output (the task) leaves every dropped
    copy's tasks in cycles."""
    import random

    from model.variants import generate
    from properties.engines import Run
    def walk(run, name, seed) -> int:
        rng = random.Random(f"cycles:{name}:{seed}")
        taken = 0
        for step in range(40):
            acts = run.cluster.enabled_actions()
            if not acts:
                break
            if step % 5 == 0:
                for a in acts:
                    r = run.fork()
                    r.step(a)
                    del r
                    taken += 1
            if run.step(rng.choice(acts)) is not None:
                break
        return taken

    taken = 0
    with _without_cyclic_gc():
        for name in variant_names():
            run = Run(generate(variant(name), seed))
            # what a first walk compiles and caches (a rescale's job graph: networkx's and
            # the graph compiler's closures) is not a state: walked once on a copy first
            walk(run.fork(), name, seed)
            _cyclic_garbage()
            taken += walk(run, name, seed)
            del run
            left = _cyclic_garbage()
            assert not left, f"{name}: a state held objects in reference cycles: {left}"
    assert taken >= 1000, f"only {taken} actions taken: the check is too weak"


def test_the_reference_cycle_check_finds_a_part_that_holds_its_task():
    """The check above has teeth: a barrier handler that keeps its task (as Flink's holds
    ``toNotifyOnCheckpoint``) makes every task with inputs a cycle, which the collector then
    finds when the run is dropped."""
    from model.checkpointbarrierhandler import SingleCheckpointBarrierHandler
    from model.variants import generate
    from properties.engines import Run
    class Holding(SingleCheckpointBarrierHandler):
        __slots__ = ("task",)

    with _without_cyclic_gc():
        run = Run(generate(variant("aligned-2pc"), 0))
        _cyclic_garbage()
        for t in run.cluster.tasks:
            if type(t.handler) is SingleCheckpointBarrierHandler:
                h = Holding.__new__(Holding)
                for n in SingleCheckpointBarrierHandler.__slots__:
                    setattr(h, n, getattr(t.handler, n))
                t.handler = h
                h.task = t
        del run, t, h
        left = _cyclic_garbage()
    assert left.get("StreamTask", 0) >= 1, left


@pytest.mark.parametrize("name, changes, limits", [
    ("aligned-2pc", {}, Limits()), ("unaligned-without-channel-state", {}, Limits()),
    # (every variant's states are checked for cycles by test_a_state_holds_no_reference_cycle_on_every_variant)
    pytest.param("rescale-source-savepoint", {"records": 1}, Limits(max_states=1500), marks=pytest.mark.slow),
    pytest.param("rescale-unaligned-checkpoint", {}, Limits(max_states=1500), marks=pytest.mark.slow),
    ("cp-region-failover", {}, Limits(max_states=1500))])
def test_a_search_leaves_no_cyclic_garbage(name, changes, limits):
    """A search runs with the cyclic garbage collector off (``explore``): when it ends --
    verified, a violation found, or a limit hit -- it has left in reference cycles only what
    a search that takes no step leaves (compiling the job graph and its reference output,
    once): the runs it dropped or still held are disposed of, and no state is left behind."""
    sc = _small(name, **changes)
    explore(sc, limits)  # (what is computed once per process and cached -- compiled graphs -- is not counted)
    left = {}
    for each in (Limits(max_depth=0), limits, Limits(max_states=40)):
        with _without_cyclic_gc():
            ex = explore(sc, each)
            left[each] = _cyclic_garbage()
        assert "Cluster" not in left[each] and "StreamTask" not in left[each], (name, ex.verdict, left[each])
        assert left[each] == left[Limits(max_depth=0)], \
            f"{name} ({ex.verdict}): the search left objects in reference cycles: {left[each]}"
