"""Failure, recovery, savepoint and rescaling scenarios, and the unsafe variants.

Every scenario draws its topology, drives the Cluster with explicit actions (numbered steps)
and judges the drained run against the p=1 oracle (``model.reference``). Each unsafe variant
is shown to break on an action sequence that the safe configuration survives.
"""

from __future__ import annotations

import pytest

from model import actions as A
from model.cluster import ActionNotEnabled, JobInput, RuntimeConfig, drain
from model.environment import Environment
from model.stateassignment import StateAssignmentError
from model.streamgraph import StreamGraphBuilder
from scenario_util import chan, deliver_until_empty, enabled, fresh, kinds, oracle_diffs, records, sub
from spec.checkpoint import checkpoint_failures_tolerated
from spec.recovery import inflight_on_key_group_owner, inflight_preserved_on_rescale


def _keyed_count_job(sink_kind="two_phase_commit", *, src_p=2, agg_p=3, max_p=10, sink_p=None):
    b = StreamGraphBuilder("keyed")
    b.source("src", parallelism=src_p)
    b.keyed_aggregate("agg", "src", aggregate="count", parallelism=agg_p, max_parallelism=max_p)
    b.sink("out", "agg", sink_kind=sink_kind, parallelism=sink_p or agg_p)
    return b.build()


KEYS = [f"k{i}" for i in range(8)]


def _input(splits=3, per_split=6):
    return JobInput({"src": tuple(
        tuple((KEYS[(s * 5 + i * 3) % len(KEYS)], 1, 10 * s + i) for i in range(per_split))
        for s in range(splits))})


def _step_all(c, kind):
    """Take every currently enabled action of ``kind`` once, in enabled order."""
    for a in enabled(c, kind):
        if a in c.enabled_actions():
            c.step(a)


# ---------------------------------------------------------------------------------------------
# savepoints and rescaling
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["aligned", "unaligned", "alternating"])
def test_stop_with_savepoint_with_records_in_flight_then_restart_equals_oracle(mode):
    """Stop-with-savepoint while records are in flight, then restart with the same parallelism.

        src(0) ──┐ hash  ┌─► agg(0)→out(0)
                 ├───────┤
        src(1) ──┘       └─► agg(1)→out(1)

    A savepoint is always *aligned* in Flink, also when unaligned checkpoints are enabled
    (``SingleCheckpointBarrierHandler.alternating`` handles an aligned barrier by aligning);
    so it has no channel state, which ``rescale_states`` relies on.
    """
    g = _keyed_count_job(src_p=2, agg_p=2)
    inp = _input(splits=2, per_split=6)
    kw = {"aligned": {}, "unaligned": {"unaligned": True},
          "alternating": {"unaligned": True, "aligned_checkpoint_timeout": 100}}[mode]
    c = fresh(g, inp, RuntimeConfig(**kw), environment=Environment(savepoints=True))
    eg = c.eg
    s0, s1 = sub(eg, "src", 0), sub(eg, "src", 1)
    # 1. both sources emit three records each: they wait in the src -> agg channels
    for _ in range(3):
        c.step(A.SourceEmit(s0))
        c.step(A.SourceEmit(s1))
    assert sum(len(records(ch)) for ch in c.channels) == 6
    # 2. stop-with-savepoint: the barrier goes behind the queued records
    c.step(A.StopWithSavepoint())
    # 3. deliver everything (records first, then the aligned barriers) until the job stops
    while c.status == "RUNNING":
        c.step(enabled(c, A.Deliver)[0])
    assert c.status == "STOPPED"
    snaps = c.completed[c.savepoint]
    assert all(not s.input_channel_state and not s.output_channel_state for s in snaps.values())
    # 4. restart from the savepoint and drain: exactly the oracle's output
    c.step(A.RestartFromSavepoint((("src", 2), ("agg", 2), ("out", 2))))
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def _savepoint_and_stop(c):
    """StopWithSavepoint, then deliver (and notify) until the job is STOPPED."""
    c.step(A.StopWithSavepoint())
    while c.status == "RUNNING":
        acts = [a for a in c.enabled_actions() if type(a) in (A.Deliver, A.NotifyCheckpointComplete)]
        c.step(acts[0])
    assert c.status == "STOPPED"
    return c.savepoint


def test_stop_with_savepoint_and_rescale_3_to_2_with_uneven_key_groups():
    """Rescale agg 3 -> 2 with max parallelism 10 (key groups [0,3],[4,6],[7,9] -> [0,4],[5,9])
    and the source 2 -> 3 (its three splits redistributed).

        src(0..1) ──hash──► agg(0..2)→out(0..2)   ==>   src(0..2) ──hash──► agg(0..1)→out(0..1)
    """
    from model.keygroups import compute_key_group_range_for_operator_index

    g = _keyed_count_job(src_p=2, agg_p=3, max_p=10)
    inp = _input(splits=3, per_split=6)
    c = fresh(g, inp, RuntimeConfig(), environment=Environment(savepoints=True, rescale_options=(("agg", (2,)), ("src", (3,)))))
    # 1. read a third of the input and process it
    for _ in range(3):
        for i in range(2):
            c.step(A.SourceEmit(sub(c.eg, "src", i)))
    # 2. stop with a savepoint
    sp = _savepoint_and_stop(c)
    old_kgs = set()
    for snap in c.completed[sp].values():
        old_kgs |= set(snap.keyed.get("agg", {}))
    old_offsets = sorted(e for snap in c.completed[sp].values() for e in snap.operator.get("src", []))
    assert old_kgs and len(old_offsets) == 3
    # 3. restart from it with agg (and its chained sink) at parallelism 2
    assert A.RestartFromSavepoint((("src", 2), ("agg", 2), ("out", 2))) in c.enabled_actions()
    c.step(A.RestartFromSavepoint((("src", 2), ("agg", 2), ("out", 2))))
    eg = c.eg
    assert eg.job_graph.vertices["agg"].parallelism == 2 and eg.job_graph.vertices["agg"].max_parallelism == 10
    new_kgs = []
    for i in range(2):
        op = c.tasks[sub(eg, "agg", i)].keyed_operators["agg"]
        r = compute_key_group_range_for_operator_index(10, 2, i)
        kgs = op.key_groups()
        assert all(r.start <= kg <= r.end for kg in kgs), (i, kgs, r)
        new_kgs.extend(kgs)
    assert sorted(new_kgs) == sorted(old_kgs)  # every key group exactly once, none lost
    # 4. more input, a second savepoint, restart with the source at parallelism 3: its three
    #    splits (SPLIT_DISTRIBUTE list state) are redistributed, each exactly once
    for i in range(2):
        c.step(A.SourceEmit(sub(eg, "src", i)))
    sp = _savepoint_and_stop(c)
    old_offsets = sorted(e for snap in c.completed[sp].values() for e in snap.operator.get("src", []))
    c.step(A.RestartFromSavepoint((("src", 3), ("agg", 2), ("out", 2))))
    eg = c.eg
    per_subtask = [[(s[0], s[2]) for s in c.tasks[sub(eg, "src", i)].source.splits] for i in range(3)]
    assert all(len(x) == 1 for x in per_subtask)
    assert sorted(e for x in per_subtask for e in x) == old_offsets
    # 5. drain: the oracle's output
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_source_splits_after_a_rescale_start_at_subtask_0_whatever_the_sink_state_did():
    """Rescale the source 2 -> 4 and the two-phase-commit sink 3 -> 2 in one restart.

        src(0..1) ──hash──► agg(0..2)→out(0..2)   ==>   src(0..3) ──hash──► agg(0..1)→out(0..1)

    ``StateAssignmentOperation`` repartitions each operator's list state on its own: the
    sink's three transaction entries go to its two new subtasks, and the source's two split
    entries go to new subtasks 0 and 1 (``RoundRobinOperatorStateRepartitioner`` starts at
    subtask 0 for every operator). Real Flink 2.3.0 (``flinkspec conform``, seed 2) read split
    0 in new source subtask 0 and split 1 in subtask 1; the model used to carry the round-robin
    start over from the sink (operators repartitioned in name order: "out" before "src") and
    put them in subtasks 1 and 2.
    """
    g = _keyed_count_job(src_p=2, agg_p=3, max_p=10)
    inp = _input(splits=2, per_split=6)
    c = fresh(g, inp, RuntimeConfig(), environment=Environment(savepoints=True))
    # 1. each source reads two records, then stop with a savepoint (the sink holds state)
    for _ in range(2):
        for i in range(2):
            c.step(A.SourceEmit(sub(c.eg, "src", i)))
    sp = _savepoint_and_stop(c)
    assert all(c.completed[sp][sub(c.eg, "agg", i)].operator.get("out") is not None for i in range(3))
    # 2. restart with the source at 4, agg and its sink at 2 (two groups at once, as Flink can)
    c.restart_from_savepoint((("src", 4), ("agg", 2), ("out", 2)))
    splits = [[(s[0], s[2]) for s in c.tasks[sub(c.eg, "src", i)].source.splits] for i in range(4)]
    assert splits == [[(0, 2)], [(1, 2)], [], []]
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_max_parallelism_mismatch_and_too_high_parallelism_are_clear_errors():
    """A savepoint of agg with explicit max parallelism 10 cannot restore into maxP 20, nor into
    parallelism 12 > 10; the job stays STOPPED."""
    from model.executiongraph import compile_stream_graph
    from model.errors import FlinkspecError
    from model.rescaling import rescale_states

    g = _keyed_count_job(src_p=1, agg_p=2, max_p=10)
    c = fresh(g, _input(splits=1), RuntimeConfig(), environment=Environment(savepoints=True, rescale_options=(("agg", (12,)),)))
    c.step(A.SourceEmit(sub(c.eg, "src", 0)))
    sp = _savepoint_and_stop(c)
    # a parallelism that is not offered is refused
    with pytest.raises(ActionNotEnabled):
        c.step(A.RestartFromSavepoint((("src", 1), ("agg", 3), ("out", 3))))
    # an offered parallelism above the max parallelism: a clear error naming the operator
    with pytest.raises(FlinkspecError, match="agg") as e:
        c.step(A.RestartFromSavepoint((("src", 1), ("agg", 12), ("out", 12))))
    assert "10" in str(e.value)
    assert c.status == "STOPPED"
    other = compile_stream_graph(_keyed_count_job(src_p=1, agg_p=2, max_p=20))
    with pytest.raises(StateAssignmentError, match="Max parallelism mismatch"):
        rescale_states(c.eg, other, c.completed[sp], sp)


# ---------------------------------------------------------------------------------------------
# failures: task, TaskManager, JobManager, restart strategy
# ---------------------------------------------------------------------------------------------


def _pointwise_job():
    b = StreamGraphBuilder("pointwise")
    b.source("src", parallelism=2)
    b.map("m", "src", function="add:1", partitioner="rescale", parallelism=2)
    b.sink("out", "m", sink_kind="two_phase_commit", parallelism=2)
    return b.build()


def _checkpoint_then_more(c, sources):
    """Emit a record per source, complete checkpoint 1 (notifications left undelivered), emit
    another record per source and deliver everything that is enabled."""
    for s in sources:
        c.step(A.SourceEmit(s))
    c.step(A.TriggerCheckpoint())
    while c.coordinator.num_pending:
        c.step(enabled(c, A.Deliver)[0])
    assert c.completed_ids == [1]
    for s in sources:
        c.step(A.SourceEmit(s))
    while enabled(c, A.Deliver):
        c.step(enabled(c, A.Deliver)[0])


@pytest.mark.parametrize("strategy", ["region", "full"])
def test_fail_task_region_failover_restarts_only_its_region(strategy):
    """Pointwise-only job: one pipelined region per subtask chain.

        region 0:  src(0) ──rescale──► m(0)→out(0)
        region 1:  src(1) ──rescale──► m(1)→out(1)

    FailTask(m(0)): region failover restarts {src(0), m(0)} only; restart-all restarts all.
    """
    g = _pointwise_job()
    inp = _input(splits=2, per_split=4)
    c = fresh(g, inp, RuntimeConfig(failover_strategy=strategy), environment=Environment(max_failures=1))
    eg = c.eg
    src = [sub(eg, "src", i) for i in range(2)]
    m = [sub(eg, "m", i) for i in range(2)]
    # 1.-3. checkpoint 1 completes; more records flow
    _checkpoint_then_more(c, src)
    survivors = {t: c.tasks[t] for t in (src[1], m[1])}
    # 4. m(0) fails
    c.step(A.FailTask(m[0]))
    restarted = set(c.restored_from[-1][2])
    assert c.restored_from[-1][1] == 1
    if strategy == "region":
        assert restarted == {src[0], m[0]}
        assert all(c.tasks[t] is task for t, task in survivors.items())
    else:
        assert restarted == set(range(len(eg.subtasks)))
    # 5. drain: exactly the oracle's output
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_fail_task_in_an_all_to_all_job_restarts_everything():
    """Hash edges are all-to-all: every subtask is in one pipelined region.

        src(0..1) ──hash──► agg(0..2)→out(0..2)
    """
    g = _keyed_count_job()
    inp = _input()
    c = fresh(g, inp, RuntimeConfig(), environment=Environment(max_failures=1))
    eg = c.eg
    _checkpoint_then_more(c, [sub(eg, "src", 0), sub(eg, "src", 1)])
    c.step(A.FailTask(sub(eg, "agg", 1)))
    assert set(c.restored_from[-1][2]) == set(range(len(eg.subtasks)))
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_lose_task_manager_fails_its_tasks_and_placement_stays_valid():
    """Two TaskManagers; losing tm0 fails every task in its slots; after the restart the slot
    placement is valid again (slot sharing: one subtask per JobVertex per slot).

        src(0..1) ──hash──► agg(0..2)→out(0..2)        on tm0, tm1
    """
    from spec.placement import check_placement

    g = _keyed_count_job()
    inp = _input()
    c = fresh(g, inp, RuntimeConfig(task_managers=2), environment=Environment(max_failures=1))
    eg = c.eg
    assert check_placement(eg, c.allocation) == []
    lost = set(c.allocation.subtasks_on(c.task_managers[0].id))
    assert lost
    _checkpoint_then_more(c, [sub(eg, "src", 0), sub(eg, "src", 1)])
    c.step(A.LoseTaskManager(0))
    assert lost <= set(c.restored_from[-1][2])
    assert check_placement(c.eg, c.allocation) == []
    assert all(c.allocation.slot_of(t) is not None for t in range(len(eg.subtasks)))
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_job_manager_failover_loses_pending_checkpoints_and_restores_the_store():
    """JobManager failover: checkpoint 2 is pending (its barrier waits in a channel), the
    JobManager fails: 2 is lost, the job restores checkpoint 1 from the store.

        src(0..1) ──hash──► agg(0..2)→out(0..2)
    """
    g = _keyed_count_job()
    inp = _input()
    c = fresh(g, inp, RuntimeConfig(), environment=Environment(max_failures=1))
    eg = c.eg
    srcs = [sub(eg, "src", 0), sub(eg, "src", 1)]
    _checkpoint_then_more(c, srcs)
    offsets_1 = {t: c.completed[1][t].operator["src"] for t in srcs}
    c.step(A.TriggerCheckpoint())
    assert c.coordinator.num_pending == 1
    c.step(A.FailJobManager())
    assert c.coordinator.num_pending == 0 and 2 not in c.completed_ids
    assert c.restored_from[-1][1] == 1 and set(c.restored_from[-1][2]) == set(range(len(eg.subtasks)))
    assert {t: c.tasks[t].source.snapshot_state() for t in srcs} == offsets_1
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_restart_attempts_exhausted_fails_the_job():
    """Fixed-delay restart strategy with 1 attempt: the second failure makes the job FAILED.

        src(0..1) ──rescale──► m(0..1)→out(0..1)
    """
    g = _pointwise_job()
    c = fresh(g, _input(splits=2), RuntimeConfig(restart_attempts=1), environment=Environment(max_failures=3))
    eg = c.eg
    c.step(A.SourceEmit(sub(eg, "src", 0)))
    c.step(A.FailTask(sub(eg, "m", 0)))
    assert c.status == "RUNNING" and c.restarts == 1
    c.step(A.FailTask(sub(eg, "m", 1)))
    assert c.status == "FAILED"
    assert all(t.status != "RUNNING" for t in c.tasks)
    assert c.enabled_actions() == []
    with pytest.raises(ActionNotEnabled):
        c.step(A.SourceEmit(sub(eg, "src", 0)))


# ---------------------------------------------------------------------------------------------
# recovery details: offsets, channel state, two-phase commit
# ---------------------------------------------------------------------------------------------


def _unaligned_job():
    b = StreamGraphBuilder("uc")
    b.source("srcA", parallelism=1)
    b.source("srcB", parallelism=1)
    b.map("m", "srcB", partitioner="rebalance", parallelism=1)
    b.map("d", ["srcA", "m"], function="add:100", partitioner="rebalance", parallelism=1)
    b.sink("out", "d", sink_kind="two_phase_commit", partitioner="rebalance", parallelism=1)
    return b.build()


UC_INPUT = JobInput({"srcA": ((("a", 1, 0), ("a", 2, 5)),), "srcB": ((("b", 1, 1), ("b", 2, 2), ("b", 3, 3)),)})


def _unaligned_checkpoint_with_channel_state(c):
    """Drive ``_unaligned_job`` to a completed unaligned checkpoint 1 whose channel state is
    d: input {y: [b1]}, output {o: [a1']}; m: output {y: [b2]} (see test_runtime_scenarios)."""
    eg = c.eg
    sa, sb = sub(eg, "srcA", 0), sub(eg, "srcB", 0)
    x, y, o = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("m", 0), ("d", 0)), chan(eg, ("d", 0), ("out", 0))
    bm = chan(eg, ("srcB", 0), ("m", 0))
    c.step(A.SourceEmit(sb))          # 1. b1, b2 through m into y
    c.step(A.SourceEmit(sb))
    deliver_until_empty(c, bm)
    c.step(A.SourceEmit(sa))          # 2. a1 -> d -> a1' on o
    c.step(A.Deliver(x))
    c.step(A.TriggerCheckpoint())     # 3. checkpoint 1 (unaligned)
    c.step(A.Deliver(x))              # 4. d snapshots, its barrier overtakes a1'
    c.step(A.Deliver(y))              # 5. d consumes b1 (persisted)
    c.step(A.Deliver(bm))             # 6. m's barrier overtakes b2
    c.step(A.Deliver(y))              # 7. d's barrier on y
    deliver_until_empty(c, o)         # 8. out: a1', barrier -> checkpoint 1 complete
    assert c.completed_ids == [1]
    return x, y, o, bm


def test_restore_rewinds_offsets_and_reinjects_channel_state_before_new_data():
    """After a failure the sources rewind to checkpoint 1's offsets and every channel starts
    with its channel state (the consumer's input part, then the producer's output part);
    new data from the restarted producers queues behind it.

        srcA(0) ───────────x──┐
                              ├──► d(0) ──o──► out(0)
        srcB(0) ──► m(0) ──y──┘
    """
    g = _unaligned_job()
    c = fresh(g, UC_INPUT, RuntimeConfig(unaligned=True), environment=Environment(max_failures=1))
    eg = c.eg
    x, y, o, bm = _unaligned_checkpoint_with_channel_state(c)
    sa, sb, m = sub(eg, "srcA", 0), sub(eg, "srcB", 0), sub(eg, "m", 0)
    # 9. more data after the checkpoint, then d fails (one region: everything restarts)
    c.step(A.SourceEmit(sb))
    deliver_until_empty(c, bm)
    c.step(A.FailTask(sub(eg, "d", 0)))
    assert c.restored_from[-1][1] == 1
    # sources rewound to the checkpointed offsets
    assert c.tasks[sa].source.snapshot_state() == [(0, 1)]
    assert c.tasks[sb].source.snapshot_state() == [(0, 2)]
    # channel state first: y = [b1 (d's input part), b2 (m's output part)], o = [a1']
    assert records(c.channels[y]) == [("b", 1, 1), ("b", 2, 2)]
    assert records(c.channels[o]) == [("a", 101, 0)]
    # 10. new data queues behind it
    c.step(A.SourceEmit(sb))
    c.step(A.Deliver(bm))
    assert records(c.channels[y]) == [("b", 1, 1), ("b", 2, 2), ("b", 3, 3)]
    drain(c)
    assert oracle_diffs(g, UC_INPUT, c) == {}


def test_two_phase_commit_pending_transactions_recommitted_on_restore():
    """Checkpoint 1 completes but notifyCheckpointComplete never reaches the sink before it
    fails: the restore commits the pre-committed transaction (recoverAndCommit) and the
    drained run shows every record exactly once.

        src(0) ──hash──► agg(0)→out(0)
    """
    g = _keyed_count_job(src_p=1, agg_p=1)
    inp = _input(splits=1, per_split=4)
    c = fresh(g, inp, RuntimeConfig(), environment=Environment(max_failures=1))
    eg = c.eg
    s, agg = sub(eg, "src", 0), sub(eg, "agg", 0)
    x = chan(eg, ("src", 0), ("agg", 0))
    # 1. two records, checkpoint 1 completes
    c.step(A.SourceEmit(s))
    c.step(A.SourceEmit(s))
    c.step(A.TriggerCheckpoint())
    deliver_until_empty(c, x)
    assert c.completed_ids == [1] and A.NotifyCheckpointComplete(agg, 1) in c.enabled_actions()
    assert c.external.committed_records() == []
    # 2. the sink task fails before the notification arrives
    c.step(A.FailTask(agg))
    # 3. restore: the pending transaction of checkpoint 1 is committed now
    assert len(c.external.committed_records()) == 2
    assert not [n for n in c.enabled_actions() if isinstance(n, A.NotifyCheckpointComplete)]
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


# ---------------------------------------------------------------------------------------------
# unsafe variants: each breaks on an action sequence that the safe configuration survives
# ---------------------------------------------------------------------------------------------


def _settle(c, max_steps=20_000):
    """The drain policy without its liveness check: deliver, notify, emit, end; once every task
    finished, one final checkpoint at a time while uncommitted sink data is left. (An unsafe
    variant may never drain, e.g. data queued for a finished consumer; ``drain`` would spin.)"""
    order = (A.Deliver, A.NotifyCheckpointComplete, A.SourceActive, A.SourceEmit, A.SourceWatermark, A.SourceEnd)
    for _ in range(max_steps):
        acts = c.enabled_actions()
        chosen = next((a for k in order for a in acts if type(a) is k), None)
        if chosen is not None:
            c.step(chosen)
            continue
        if (all(t.status == "FINISHED" for t in c.tasks) and not c.coordinator.num_pending
                and c._uncommitted_sink_data()):
            done = len(c.completed_ids)
            c.step(A.TriggerCheckpoint())
            if len(c.completed_ids) > done:
                continue
        return


def _same_sequence(g, inp, safe: RuntimeConfig, unsafe: RuntimeConfig, script, seed=0, environment=None,
                   seams: tuple = (), channel_capacity: int | None = None):
    """Run ``script`` on the safe configuration, replay exactly its actions on the unsafe one
    with ``seams`` switched on (both in ``environment``), settle both; return (safe cluster,
    unsafe cluster)."""
    c_safe = fresh(g, inp, safe, seed, environment, channel_capacity=channel_capacity)
    script(c_safe)
    trace = list(c_safe.trace)
    c_unsafe = fresh(g, inp, unsafe, seed, environment, seams=seams, channel_capacity=channel_capacity)
    for a in trace:
        assert a in c_unsafe.enabled_actions(), a
        c_unsafe.step(a)
    _settle(c_safe)
    _settle(c_unsafe)
    assert c_safe.is_drained()
    return c_safe, c_unsafe


def _two_source_window_job(sink_kind="two_phase_commit"):
    b = StreamGraphBuilder("two-src")
    b.source("src", parallelism=2)
    b.window("win", "src", size=10, aggregate="count", parallelism=1)
    b.sink("out", "win", sink_kind=sink_kind, parallelism=1)
    return b.build()


def test_variant_at_least_once_with_two_phase_commit_duplicates_state_effects():
    """At-least-once + two-phase commit: a record behind barrier 1 enters snapshot 1, and the
    restore replays it: its window counts it twice. Exactly-once (unaligned) survives the same
    actions: its snapshot is taken at the first barrier.

        src(0) ─x─┐ hash
                  ├──► win(0)→out(0)       (tumbling 10, count; two-phase-commit sink)
        src(1) ─y─┘
    """
    g = _two_source_window_job()
    inp = JobInput({"src": ((("a", 1, 1),), (("b", 1, 2),))})

    def script(c):
        eg = c.eg
        s0, w = sub(eg, "src", 0), sub(eg, "win", 0)
        x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
        c.step(A.TriggerCheckpoint())   # 1. barrier 1 on empty channels (head == tail)
        c.step(A.SourceEmit(s0))        # 2. a@1 behind barrier 1 on x
        c.step(A.Deliver(x))            # 3. barrier 1 on x (no blocking in either config)
        c.step(A.Deliver(x))            # 4. a@1 processed
        c.step(A.Deliver(y))            # 5. barrier 1 on y: checkpoint 1 completes
        assert c.completed_ids == [1]
        c.step(A.FailTask(w))           # 6. the window task fails: restore checkpoint 1

    safe, unsafe = _same_sequence(
        g, inp, RuntimeConfig(unaligned=True),
        RuntimeConfig(checkpointing_mode="at_least_once"), script, environment=Environment(max_failures=1))
    assert oracle_diffs(g, inp, safe) == {}
    d = oracle_diffs(g, inp, unsafe)["out"]
    assert [(e.key, e.value, e.actual) for e in d.unexpected] == [("a", 2, 1)]   # a counted twice
    assert [(e.key, e.value) for e in d.missing] == [("a", 1)]


def test_variant_unaligned_without_channel_state_loses_records():
    """Unaligned checkpoints that drop their channel state: after the restore the in-flight
    records b1 (d's input cs), b2 (m's output cs) and a1' (d's output cs) are gone.

        srcA(0) ───────────x──┐
                              ├──► d(0) ──o──► out(0)
        srcB(0) ──► m(0) ──y──┘
    """
    g = _unaligned_job()

    def script(c):
        _unaligned_checkpoint_with_channel_state(c)   # 1.-8. checkpoint 1 with channel state
        c.step(A.FailTask(sub(c.eg, "d", 0)))        # 9. d fails

    safe, unsafe = _same_sequence(
        g, UC_INPUT, RuntimeConfig(unaligned=True),
        RuntimeConfig(unaligned=True), script, environment=Environment(max_failures=1),
        seams=("unaligned-drops-channel-state",))
    assert oracle_diffs(g, UC_INPUT, safe) == {}
    d = oracle_diffs(g, UC_INPUT, unsafe)["out"]
    assert sorted((e.key, e.value) for e in d.missing) == [("a", 101), ("b", 101), ("b", 102)]
    assert not d.duplicated and not d.unexpected


def test_variant_append_sink_duplicates_output_after_a_failure():
    """A plain append sink shows records at once; after a restore they are written again.
    The two-phase-commit sink survives the same actions.

        src(0) ──rescale──► m(0)→out(0)
    """
    b = StreamGraphBuilder("append")
    b.source("src", parallelism=1)
    b.map("m", "src", function="add:1", partitioner="rescale", parallelism=1)
    b.sink("out", "m", parallelism=1, sink_kind="two_phase_commit")
    g_2pc = b.build()
    g_append = StreamGraphBuilder  # placeholder, replaced below
    import attrs

    g_append = attrs.evolve(g_2pc, operators=tuple(
        attrs.evolve(o, sink_kind="append") if o.kind == "sink" else o for o in g_2pc.operators))
    inp = JobInput({"src": ((("k", 1, 0), ("k", 2, 1), ("k", 3, 2)),)})

    def script(c):
        eg = c.eg
        s, m = sub(eg, "src", 0), sub(eg, "m", 0)
        x = chan(eg, ("src", 0), ("m", 0))
        c.step(A.SourceEmit(s))          # 1. k=1 processed
        deliver_until_empty(c, x)
        c.step(A.TriggerCheckpoint())    # 2. checkpoint 1 completes
        deliver_until_empty(c, x)
        c.step(A.SourceEmit(s))          # 3. k=2 reaches the sink after the checkpoint
        deliver_until_empty(c, x)
        c.step(A.FailTask(m))            # 4. failure: restore checkpoint 1, k=2 is replayed

    cfg, env = RuntimeConfig(), Environment(max_failures=1)
    safe = fresh(g_2pc, inp, cfg, environment=env)
    script(safe)
    unsafe = fresh(g_append, inp, cfg, environment=env)
    for a in safe.trace:
        unsafe.step(a)
    drain(safe)
    drain(unsafe)
    assert oracle_diffs(g_2pc, inp, safe) == {}
    d = oracle_diffs(g_append, inp, unsafe)["out"]
    assert [(e.key, e.value, e.actual) for e in d.duplicated] == [("k", 3, 2)]


def test_variant_skip_consumer_regions_with_rebalance_behind_a_blocking_exchange():
    """Region failover that skips consumer regions (pre-FLINK-13222 reasoning).

        tm0: src(0) ══rebalance, BLOCKING══╦══► m(0)→out(0)   (tm0)
                                           ╚══► m(1)→out(1)   (tm1)

    Three regions: {src}, {m0}, {m1}. src finishes (its partition is complete); m1 reads its
    whole subpartition and finishes; m0 has read one record. tm0 is lost: m0 fails, src's
    partition is gone. Flink restarts src (producer of the lost partition) and *all* consumer
    regions; the variant restarts only {src, m0}: the re-run src starts its rebalance round
    robin elsewhere (seeded by the attempt), so m0 now gets the records m1 already had, and
    the records m1 would get now are never read -> duplicates and losses.
    """
    b = StreamGraphBuilder("blocking")
    b.source("src", parallelism=1)
    b.map("m", "src", partitioner="rebalance", exchange_mode="blocking", parallelism=2)
    b.sink("out", "m", sink_kind="two_phase_commit", parallelism=2)
    g = b.build()
    inp = JobInput({"src": (tuple((f"k{i}", i, i) for i in range(6)),)})

    def script(c):
        eg = c.eg
        s = sub(eg, "src", 0)
        c0, c1 = chan(eg, ("src", 0), ("m", 0)), chan(eg, ("src", 0), ("m", 1))
        tm0 = c.task_managers[0].id
        assert set(c.allocation.subtasks_on(tm0)) == {s, sub(eg, "m", 0)}
        for _ in range(6):                   # 1. src emits everything and finishes
            c.step(A.SourceEmit(s))
        c.step(A.SourceEnd(s))
        deliver_until_empty(c, c1)           # 2. m1 reads its subpartition and finishes
        assert c.tasks[sub(eg, "m", 1)].status == "FINISHED"
        c.step(A.Deliver(c0))                # 3. m0 reads one record
        c.step(A.LoseTaskManager(0))         # 4. tm0 (src's partition, m0) is lost

    cfg = dict(task_managers=2, failover_strategy="region")
    safe, unsafe = _same_sequence(g, inp, RuntimeConfig(**cfg),
                                  RuntimeConfig(**cfg), script,
                                  environment=Environment(max_failures=1), seams=("skip-consumer-regions",))
    eg = safe.eg
    assert set(safe.restored_from[-1][2]) == set(range(len(eg.subtasks)))
    assert set(unsafe.restored_from[-1][2]) == {sub(eg, "src", 0), sub(eg, "m", 0)}
    assert oracle_diffs(g, inp, safe) == {}
    d = oracle_diffs(g, inp, unsafe)["out"]
    assert d.missing and d.duplicated
    assert not unsafe.is_drained()   # the new records for the finished m1 are never read


def test_variant_restore_pending_checkpoint_that_never_completed():
    """Restoring a checkpoint that never completed: the sources acknowledged checkpoint 1 at
    trigger time (offset after a@0), the window task had not; it fails. The variant restores
    the incomplete 1: the sources skip a@0 while the window task starts empty -> a@0 is lost.
    The safe configuration restores nothing (no completed checkpoint) and replays a@0.

        src(0) ─┐ hash
                ├──► win(0)→out(0)
        src(1) ─┘
    """
    g = _two_source_window_job()
    inp = JobInput({"src": ((("a", 1, 0), ("a", 1, 3)), (("b", 1, 1),))})

    def script(c):
        eg = c.eg
        c.step(A.SourceEmit(sub(eg, "src", 0)))   # 1. a@0 in flight
        c.step(A.TriggerCheckpoint())             # 2. sources acknowledge checkpoint 1
        assert c.coordinator.num_pending == 1
        c.step(A.FailTask(sub(eg, "win", 0)))     # 3. the window task fails before its barrier

    safe, unsafe = _same_sequence(g, inp, RuntimeConfig(),
                                  RuntimeConfig(), script, environment=Environment(max_failures=1),
                                  seams=("restore-pending-checkpoints",))
    assert safe.restored_from[-1][1] is None and unsafe.restored_from[-1][1] == 1
    assert oracle_diffs(g, inp, safe) == {}
    d = oracle_diffs(g, inp, unsafe)["out"]
    assert [(e.key, e.value) for e in d.missing] == [("a", 2)]
    assert [(e.key, e.value) for e in d.unexpected] == [("a", 1)]


def test_variant_modulo_key_group_assignment_on_rescale():
    """Rescale agg 3 -> 2 (max parallelism 10). Records are routed by KeyGroupRange
    ([0,4] -> 0, [5,9] -> 1); the variant restores key group kg on subtask kg % 2, so the
    counts of keys in key groups 1, 3, 6, 8 sit where their keys never arrive: those keys
    count from 0 again.

        src(0) ──hash──► agg(0..2)→out(0..2)   ==>   src(0) ──hash──► agg(0..1)→out(0..1)
    """
    from model.keygroups import assign_to_key_group

    g = _keyed_count_job(src_p=1, agg_p=3, max_p=10)
    inp = _input(splits=1, per_split=12)
    moved = {k for (k, _v, _t) in inp.splits["src"][0] if assign_to_key_group(k, 10) in (1, 3, 6, 8)}
    assert moved, "the input must have a key whose key group moves under modulo"

    def script(c):
        s = sub(c.eg, "src", 0)
        for _ in range(6):                        # 1. half of the input
            c.step(A.SourceEmit(s))
        _savepoint_and_stop(c)                    # 2. stop with a savepoint
        c.step(A.RestartFromSavepoint((("src", 1), ("agg", 2), ("out", 2))))   # 3. rescale

    opts = (("agg", (2,)),)
    safe, unsafe = _same_sequence(g, inp, RuntimeConfig(),
                                  RuntimeConfig(), script, environment=Environment(savepoints=True, rescale_options=opts),
                                  seams=("keygroups-by-modulo",))
    assert oracle_diffs(g, inp, safe) == {}
    d = oracle_diffs(g, inp, unsafe)["out"]
    assert d.missing and {e.key for e in d.missing} <= moved


# ---------------------------------------------------------------------------------------------
# rescaling from unaligned checkpoints (in-flight data)
# ---------------------------------------------------------------------------------------------


def _unaligned_checkpoint_with_inflight(c):
    """6 records in flight to agg(0..2), an unaligned checkpoint whose barriers overtake them
    (they become the source's output channel state), the barriers delivered: checkpoint 1
    completes with all 6 records as in-flight data."""
    eg = c.eg
    s = sub(eg, "src", 0)
    for _ in range(6):
        c.step(A.SourceEmit(s))                   # 1. records queue up in the three channels
    c.step(A.TriggerCheckpoint())                 # 2. unaligned barriers jump ahead of them
    for k in range(3):
        c.step(A.Deliver(chan(eg, ("src", 0), ("agg", k))))   # 3. each agg subtask takes its barrier
    assert c.completed_ids == [1]
    assert sum(len(v) for s in c.completed[1].values() for v in s.output_channel_state.values()) == 6


def test_rescale_from_unaligned_checkpoint_restores_inflight_records_at_their_owner():
    """Resubmit from unaligned checkpoint 1 with agg 3 -> 2: the 6 in-flight records are
    reassigned by SubtaskStateMapper (RANGE on the hash edge, ARBITRARY upstream) and reach the
    new owner of their key group; the drained output equals the failure-free reference.

        src(0) ──hash──► agg(0..2)→out   ==>   src(0) ──hash──► agg(0..1)→out
    """
    g = _keyed_count_job(src_p=1, agg_p=3, max_p=10)
    inp = _input(splits=1, per_split=10)
    cfg = RuntimeConfig(unaligned=True)
    c = fresh(g, inp, cfg, environment=Environment(rescale_from_checkpoints=True, rescale_options=(("agg", (2,)),)),
              channel_capacity=10)
    _unaligned_checkpoint_with_inflight(c)
    act = A.RescaleFromCheckpoint((("src", 1), ("agg", 2), ("out", 2)))
    assert act in c.enabled_actions()
    c.step(act)
    assert c.events[-1][0] == "rescaled_from_checkpoint" and c.events[-1][4] == 6 and c.events[-1][5] == "down"
    run = type("R", (), {"cluster": c})()
    assert inflight_preserved_on_rescale(run) is None and inflight_on_key_group_owner(run) is None
    assert sum(len(q) for q in c.channels) == 6   # the in-flight records wait in the new channels
    assert not any(A.RescaleFromCheckpoint(o) in c.enabled_actions() for o in c.rescale_choices())  # once per run
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_variant_inflight_to_old_subtask_index_loses_and_misroutes_records():
    """The known-unsafe variant hands old agg k's in-flight data to new agg k: old agg 2's
    records are lost (there is no new subtask 2) and records of key groups that moved are
    counted by a subtask that does not own them. The safe configuration survives the same
    actions."""
    g = _keyed_count_job(src_p=1, agg_p=3, max_p=10)
    inp = _input(splits=1, per_split=10)
    opts = (("agg", (2,)),)

    def script(c):
        _unaligned_checkpoint_with_inflight(c)
        c.step(A.RescaleFromCheckpoint((("src", 1), ("agg", 2), ("out", 2))))

    base = dict(unaligned=True)
    safe, unsafe = _same_sequence(g, inp, RuntimeConfig(**base),
                                  RuntimeConfig(**base), script,
                                  environment=Environment(rescale_from_checkpoints=True, rescale_options=opts),
                                  seams=("inflight-by-old-index",), channel_capacity=10)
    assert oracle_diffs(g, inp, safe) == {}
    (_, _, report), = unsafe.channel_rescales
    before = sorted(r for e in report for r in e.before)
    after = sorted(r for e in report for _, r in e.after)
    assert len(after) < len(before)               # old agg 2's in-flight records are gone
    assert oracle_diffs(g, inp, unsafe)["out"].missing


def test_rescale_from_checkpoint_on_a_pointwise_edge_finds_no_inflight_data():
    """A rescale edge (pointwise) cannot carry unaligned barriers (Flink 2.3:
    ``StreamPartitioner.isSupportsUnalignedCheckpoint`` is false): each barrier queues behind
    the data, so the unaligned checkpoint holds no in-flight data of that edge, and a rescale
    from it is offered (``SubtaskStateMapper.UNSUPPORTED`` of the edge is never asked)."""
    b = StreamGraphBuilder("pointwise")
    b.source("src", parallelism=2)
    b.map("m", "src", parallelism=2, partitioner="rescale")
    b.sink("out", "m", parallelism=2)
    g = b.build()
    inp = _input(splits=2, per_split=4)
    cfg = RuntimeConfig(unaligned=True)
    c = fresh(g, inp, cfg, environment=Environment(rescale_from_checkpoints=True, rescale_options=(("m", (1,)),)),
              channel_capacity=10)
    eg = c.eg
    for i in range(2):
        for _ in range(3):
            c.step(A.SourceEmit(sub(eg, "src", i)))
    c.step(A.TriggerCheckpoint())
    for i in range(2):
        ch = chan(eg, ("src", i), ("m", i))
        assert kinds(c.channels[ch]) == ["rec"] * 3 + ["FA1"]  # behind the data, not overtaking it
        deliver_until_empty(c, ch)
    assert c.completed_ids == [1]
    states = c.coordinator.store.get_latest_checkpoint().task_states.values()
    assert all(not s.input_channel_state and not s.output_channel_state for s in states)
    opt = [o for o in c.rescale_choices()[1:] if dict(o)["m"] == 1][0]
    assert c.why_not_enabled(A.RescaleFromCheckpoint(opt)) is None
    c.step(A.RescaleFromCheckpoint(opt))
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_variant_flink_20675_a_failed_asynchronous_snapshot_is_not_counted():
    """FLINK-20675 (the CheckpointFailureManager ignores CHECKPOINT_ASYNC_EXCEPTION)::

        [src → out (two-phase commit)] (p=1), heap state backend, tolerable-failed-checkpoints 0

    1. checkpoint 1: the source's synchronous phase. 2. its asynchronous phase fails: it
    declines checkpoint 1. Safe: one failed checkpoint is more than the 0 tolerated, the job
    fails over globally. FLINK-20675: the decline is not counted, the job runs on, and
    ``checkpoint_failures_tolerated`` names the missed failover."""
    b = StreamGraphBuilder("cfm")
    b.source("src", parallelism=1)
    b.sink("out", "src", sink_kind="two_phase_commit", parallelism=1)
    g = b.build()
    inp = JobInput({"src": (((0, 1, 0),),)})
    base = dict(state_backend="hashmap", tolerable_failed_checkpoints=0)

    def script(c):
        c.step(A.TriggerCheckpoint())
        c.step(A.FailAsyncSnapshot(sub(c.eg, "src", 0), 1))

    safe, unsafe = _same_sequence(g, inp, RuntimeConfig(**base), RuntimeConfig(**base), script,
                                  environment=Environment(max_failures=1), seams=("FLINK-20675",))
    for c, failed_over in ((safe, True), (unsafe, False)):
        kinds_of = [e[0] for e in c.events]
        assert ("aborted", 1, 1, "CHECKPOINT_ASYNC_EXCEPTION", 0) in c.events
        assert ("checkpoint_failures_exceeded" in kinds_of) is failed_over
        assert ("failover" in kinds_of) is failed_over
        verdict = checkpoint_failures_tolerated(type("R", (), {"cluster": c})())
        assert (verdict is None) is failed_over, verdict
    assert "not failed over" in checkpoint_failures_tolerated(type("R", (), {"cluster": unsafe})()).message
