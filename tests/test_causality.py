"""Causality (spec/causality.py): every disturbance has a cause, every failover restarts exactly
Flink's set, and a source's output tells the truth about idleness and event time -- each
invariant against the known-unsafe variant only it catches, and the safe twin surviving."""

from __future__ import annotations

import attrs
import pytest

import properties.engines as engines
from model import actions as A
from model.catalog import PASS
from model.events import ACTIVE, IDLE, Watermark
from model.variants import generate, variant
from properties.engines import Run, random_walk
from spec.causality import (
    DISTURBANCES,
    RULES,
    disturbance_has_cause,
    flink_restart_set,
    restart_set_exact,
    source_output_active_and_on_time,
)
from spec.invariant import REGISTRY

SEEDS = range(50)

#: each new invariant and the unsafe variant only it catches (its safe twin: the seams off)
CASES = [
    pytest.param("idle-source-keeps-emitting", "source_output_active_and_on_time", id="idle-source"),
    pytest.param("region-failover-backtracks-available-partitions", "restart_set_exact", id="restart-set"),
    # the control plane's walks are long: 150 of them take ~15 s
    pytest.param("FLINK-18533", "disturbance_has_cause", id="FLINK-18533", marks=pytest.mark.slow),
]


def _walks(v, without: str | None = None) -> dict:
    """seed -> the invariant violated (None: the run passed), with ``without`` not checked."""
    saved = engines.ALWAYS
    if without is not None:
        engines.ALWAYS = tuple(i for i in saved if i.name != without)
    try:
        return {seed: random_walk(v, seed).invariant for seed in SEEDS}
    finally:
        engines.ALWAYS = saved


@pytest.mark.parametrize("name, invariant", CASES)
def test_the_invariant_alone_catches_its_unsafe_variant_on_50_seeds_and_the_safe_twin_survives(name, invariant):
    v = variant(name)
    assert v.expected == (invariant,)
    found = _walks(v)
    caught = [s for s, inv in found.items() if inv is not None]
    assert caught, f"{name}: {invariant} found on none of {len(SEEDS)} seeds"
    assert {found[s] for s in caught} == {invariant}
    # no other invariant catches the variant on the same seeds: only this one sees the bug
    blind = _walks(v, without=invariant)
    assert set(blind.values()) == {None}, {s: inv for s, inv in blind.items() if inv}
    # the safe twin: the same jobs (same name, same seeds) without the seam
    assert v.seams and not v.switches
    twin = attrs.evolve(v, expected=(PASS,), flink_key=None, seams=())
    assert set(_walks(twin).values()) == {None}


def test_the_registry_holds_the_new_invariants_and_every_disturbance_has_a_rule():
    for name in ("disturbance_has_cause", "restart_set_exact", "source_output_active_and_on_time"):
        assert REGISTRY[name].kind == "always" and REGISTRY[name].subject == "run"
    assert set(RULES) == DISTURBANCES


# -- disturbances without a cause, planted into safe runs ---------------------------------------------

def _stepped(name="aligned-2pc", seed=0, steps=6) -> Run:
    run = Run(generate(variant(name), seed))
    for _ in range(steps):
        acts = [a for a in run.enabled_actions() if type(a) in (A.Deliver, A.SourceEmit, A.TriggerCheckpoint)]
        assert run.step(acts[0]) is None
    return run


@pytest.mark.parametrize("event, says", [
    (("aborted", 1, None, None), "gives no reason"),
    (("aborted", 1, "CHECKPOINT_EXPIRED", -1), "no CheckpointTimeout"),
    (("aborted", 1, "CHECKPOINT_SUBSUMED", None), "no newer checkpoint completed"),
    (("aborted", 1, "JOB_FAILOVER_REGION", None), "no failover"),
    (("task_failed", 0), "no FailTask"),
    (("failover", (0,), (), (0,), False), "no task failed"),
    (("task_manager_lost", "tm0"), "no LoseTaskManager"),
])
def test_a_disturbance_without_its_cause_is_a_violation_naming_it(event, says):
    run = _stepped()
    c = run.cluster
    assert disturbance_has_cause(run) is None
    c.events.append((event[0], c.now - 1, *event[1:]))
    v = disturbance_has_cause(run)
    assert v is not None and v.invariant == "disturbance_has_cause"
    assert v.message.startswith(f"{event[0]} ") and says in v.message, v.message
    assert v.actual["event"][0] == event[0]


def test_an_injected_failure_causes_its_failover_and_aborts_and_the_restart_set_is_flinks():
    run = _stepped()
    c = run.cluster
    c.step(A.TriggerCheckpoint())
    victim = next(t.id for t in c.tasks if t.status == "RUNNING")
    c.step(A.FailTask(victim))
    kinds = [e[0] for e in c.events if e[1] == c.now - 1]
    assert {"task_failed", "failover", "aborted"} <= set(kinds)
    assert disturbance_has_cause(run) is None and restart_set_exact(run) is None
    failed, unavailable, restart = c.delta.failover
    assert restart == flink_restart_set(c.eg, "region", failed, unavailable)
    # the same failure, recorded as failing a second subtask too: not what FailTask caused
    i = next(k for k, e in enumerate(c.events) if e[0] == "failover" and e[1] == c.now - 1)
    e = c.events[i]
    c.events[i] = (e[0], e[1], tuple(sorted({*e[2], (victim + 1) % len(c.tasks)})), *e[3:])
    v = disturbance_has_cause(run)
    assert v is not None and "fails" in v.message and "only" in v.message


def test_restart_set_exact_names_the_subtasks_restarted_beyond_flinks_set():
    v = variant("region-failover-backtracks-available-partitions")
    for seed in SEEDS:
        run = Run(generate(v, seed))
        c = run.cluster
        consumers = [t.id for t in c.tasks if t.source is None and t.status == "RUNNING"]
        c.step(A.FailTask(consumers[0]))
        got = restart_set_exact(run)
        if got is not None:
            break
    else:
        raise AssertionError("no failover restarted more than Flink's set")
    failed, unavailable, restart = c.delta.failover
    want = flink_restart_set(c.eg, "region", failed, unavailable)
    assert want < restart
    assert got.expected == {"restart": sorted(want)} and got.actual == {"restart": sorted(restart)}
    extra = [c.eg.subtasks[s].name for s in sorted(restart - want)]
    assert f"restarts {extra} as well" in got.message


# -- sources ---------------------------------------------------------------------------------------------

def _source_run():
    """A late-window job stepped until a source's output channel holds a record."""
    run = Run(generate(variant("late-window-2pc"), 0))
    c = run.cluster
    src = c.source_tasks[0]
    run.step(A.SourceEmit(src.id))
    ch = next(ch for ch in src.plan.output_channels if c.net.queues[ch])
    return run, c, src, ch


def test_a_source_record_after_idle_or_at_a_watermark_it_sent_is_a_violation():
    run, c, src, ch = _source_run()
    assert source_output_active_and_on_time(run) is None
    q = c.net.queues[ch]
    rec = next(x for x in q if type(x) is tuple)
    # IDLE sent before the record: the source emitted while idle
    q.appendleft(IDLE)
    v = source_output_active_and_on_time(run)
    assert v is not None and "after telling it IDLE" in v.message
    # ACTIVE again before the record: fine
    q.popleft()
    q.appendleft(ACTIVE)
    q.appendleft(IDLE)
    assert source_output_active_and_on_time(run) is None
    # a watermark at the record's timestamp before it: the record is late at the source
    q.clear()
    q.extend([Watermark(rec[2]), rec])
    v = source_output_active_and_on_time(run)
    assert v is not None and "late at the source" in v.message
    q.clear()
    q.extend([Watermark(rec[2] - 1), rec])
    assert source_output_active_and_on_time(run) is None


def test_the_idle_variant_sends_records_on_an_idle_channel_the_safe_source_does_not():
    """late-window job, two sources: source 0 goes IDLE and reads on. Its record is queued behind
    the IDLE status on its channel (the safe source cannot emit before it is ACTIVE again)."""
    for knob, emits in ((True, True), (False, False)):
        v = variant("idle-source-keeps-emitting")
        scenario = attrs.evolve(generate(v, 0), seams=("idle-source-keeps-emitting",) if knob else ())
        run = Run(scenario)
        src = run.cluster.source_tasks[0]
        run.step(A.SourceIdle(src.id))
        enabled = A.SourceEmit(src.id) in run.enabled_actions()
        assert enabled == emits
        if emits:
            got = run.step(A.SourceEmit(src.id))
            assert got is not None and got.invariant == "source_output_active_and_on_time"


# -- the control plane's rules ------------------------------------------------------------------------

def test_flink_18533_declares_a_pending_deployment_missing_and_the_safe_reconciliation_waits():
    """The first seed on which the seam is caught: replayed on the safe configuration, the same
    actions (those still enabled) give no disturbance without cause -- the safe JobMaster waits
    heartbeat_timeout + 1 reports before it declares a deployment missing."""
    v = variant("FLINK-18533")
    seed, r = next((s, r) for s in SEEDS for r in [random_walk(v, s)] if r.invariant == "disturbance_has_cause")
    assert "cp_missing_deployment" in r.violation["message"] and "pending deployment" in r.violation["message"]
    safe = attrs.evolve(generate(v, seed), seams=())
    run, taken = Run(safe), 0
    for a in r.actions:
        if run.why_not_enabled(a) is None:
            assert run.step(a) is None  # every invariant, disturbance_has_cause included, holds
            taken += 1
    assert taken > len(r.actions) // 2
    # the safe JobMaster heard the same kind of reports, and took them for pending deployments
    assert any(e[0] == "cp_deployment_report" for e in run.cluster.events)


def _with_free_slot() -> Run:
    """A run of the blocking job stepped until a JobMaster's pool holds a free allocation (its
    producers finished and gave their slot back)."""
    v = variant("cp-blocking-regions")
    for seed in SEEDS:
        actions = random_walk(v, seed).actions
        run = Run(generate(v, seed))
        for a in actions:
            run.step(a)
            if any(p.jobmaster is not None and p.jobmaster.idle for p in run.cluster.cp.jms):
                return run
    raise AssertionError("no walk of cp-blocking-regions freed a slot")


def test_the_history_summary_is_empty_without_the_control_plane_and_capped_with_it():
    run = _stepped()
    assert REGISTRY["disturbance_has_cause"].history(run) == ()
    cp = _with_free_slot()
    c = cp.cluster
    reports, submitted, free = REGISTRY["disturbance_has_cause"].history(cp)
    hb, idle = c.config.heartbeat_timeout, c.config.slot_idle_timeout
    assert reports and free, "the walk reached no connected TaskExecutor or no free slot"
    assert all(0 <= n <= hb for _j, _te, n in reports)
    assert all(n == "ok" or 1 <= n <= hb for _, per_te in submitted for _, n in per_te)
    assert all(n is None or 0 <= n <= idle for _j, _rank, n in free)
    # only what a rule can still read: connected TaskExecutors, expected subtasks, free slots
    jms = {j: p.jobmaster for j, p in enumerate(c.cp.jms) if p.jobmaster is not None}
    assert all(te in jms[j].connected for j, te, _ in reports)
    expected = {e[0] for jm in jms.values() for ex in jm.deployed.values() for e in ex}
    assert {s for s, _ in submitted} <= expected
    assert [(j, r) for j, r, _ in free] == [(j, r) for j, jm in jms.items() for r in range(len(jm.idle))]


def test_the_history_summary_names_no_fresh_identifier():
    """Two runs whose states and histories differ only in the values of their AllocationIDs
    (which the state's fingerprint counts by rank) get one summary: the summary splits no state
    the fingerprint merges."""
    from model.rpc import AllocationID

    cp = _with_free_slot()
    key = REGISTRY["disturbance_has_cause"].history(cp)
    assert key[2], "no free allocation in the summary"
    other = cp.fork()
    c = other.cluster
    shift = 1000

    def renamed(x):
        if isinstance(x, AllocationID):
            return AllocationID(int(x) + shift)
        if isinstance(x, tuple):
            return tuple(renamed(y) for y in x)
        return x

    for p in c.cp.jms:
        if p.jobmaster is not None:
            jm = p.jobmaster
            jm.idle = {renamed(a): n for a, n in jm.idle.items()}
            jm.pool = {renamed(a): v for a, v in jm.pool.items()}
            jm.deployed = {renamed(a): v for a, v in jm.deployed.items()}
    c.events[:] = [renamed(e) for e in c.events]
    assert REGISTRY["disturbance_has_cause"].history(other) == key


# -- out-of-order input: late at the source only by the input's doing ----------------------------------

LATE_INPUT_JOB = """
name = "late-input"
[[operators]]
name = "src"
kind = "source"
[[operators]]
name = "win"
kind = "window"
window_size = 4
aggregate = "count"
[[operators]]
name = "out"
kind = "sink"
sink_kind = "two_phase_commit"
[[edges]]
source = "src"
target = "win"
partitioner = "hash"
[[edges]]
source = "win"
target = "out"
[input]
records = 8
out_of_orderness = 3
"""


def test_a_record_the_input_puts_beyond_the_watermark_bound_is_not_the_sources_fault(monkeypatch):
    """[input] out_of_orderness 3 above the source's watermark_out_of_orderness 0: records are late
    at the source because their input is out of order beyond the bound (Flink's source emits
    them so). No walk is flagged; with nothing excused the same walks are, so the situation is
    reached and the excuse is what passes it."""
    import tomllib

    from model.jobfile import job_file_from_dict
    from model.variants import job_variant
    import spec.causality as causality

    v = job_variant(job_file_from_dict(tomllib.loads(LATE_INPUT_JOB), "late-input.toml"))
    seeds = range(12)
    assert {random_walk(v, s).invariant for s in seeds} == {None}
    monkeypatch.setattr(causality, "late_in_input", lambda *_: frozenset())
    flagged = [s for s in seeds if random_walk(v, s).invariant == "source_output_active_and_on_time"]
    assert flagged, "no walk put a record behind a watermark on a source's channel"


def test_only_records_late_in_their_split_are_excused():
    from model.cluster import JobInput
    from spec.causality import late_in_input

    inp = JobInput(splits={"src": (((0, 0, 5), (0, 1, 3), (0, 2, 1), (0, 3, 9), (0, 4, 6)), ((0, 5, 1),))})
    # bound 1: a record is late when a record before it in its split is more than 1 above it
    assert late_in_input(inp, "src", 1) == {(0, 1, 3), (0, 2, 1), (0, 4, 6)}
    assert late_in_input(inp, "src", 2) == {(0, 2, 1), (0, 4, 6)}
    assert late_in_input(inp, "src", 8) == set()
    assert late_in_input(inp, "other", 0) == set()
