"""Hand-written scenarios for every mechanism of the runtime model.

Each scenario draws its topology, looks channel and subtask ids up in the ExecutionGraph
(``scenario_util.chan``/``sub``), drives the Cluster with explicit actions (numbered steps)
and asserts what Flink does. The last part runs seeded random walks for every checkpoint
mode and sink kind and compares the drained output with the p=1 oracle.
"""

from __future__ import annotations

import pytest

from model import actions as A
from model.cluster import ActionNotEnabled, JobInput, RuntimeConfig, drain
from model.environment import Environment
from model.checkpointbarrierhandler import (
    DECLINED_INPUT_END_OF_STREAM,
    DECLINED_ON_CANCELLATION_BARRIER,
    DECLINED_SUBSUMED,
    SingleCheckpointBarrierHandler,
)
from model.checkpointcoordinator import CheckpointAborted
from model.events import LONG_MIN, CancelCheckpointMarker, CheckpointBarrier
from model.sinks import COMMITTED, PRECOMMITTED
from model.streamgraph import StreamGraphBuilder
from model.watermarkstatus import StatusWatermarkValve
from scenario_util import (
    RecordingTask,
    chan, deliver_until_empty, enabled, fresh, kinds, oracle_diffs, random_walk, records, replay, sub,
)


def _record_aborts(c):
    """Wrap ``c._effects`` to collect CheckpointAborted effects (id, reason, subtask)."""
    aborts = []
    orig = c._effects

    def effects(es):
        for e in es or ():
            if isinstance(e, CheckpointAborted):
                aborts.append((e.checkpoint_id, e.reason, e.subtask))
        orig(es)

    c._effects = effects
    return aborts


def _two_sources_into_one(kind="window", sink_kind="append", **src):
    """Two source subtasks, keyBy, one keyed subtask with its sink chained."""
    b = StreamGraphBuilder("fan-in")
    b.source("src", parallelism=src.pop("parallelism", 2), **src)
    if kind == "window":
        b.window("win", "src", size=10, aggregate="count", parallelism=1)
    else:
        b.keyed_aggregate("win", "src", aggregate="count", parallelism=1)
    b.sink("out", "win", sink_kind=sink_kind, parallelism=1)
    return b.build()


# ---------------------------------------------------------------------------------------------
# sources: splits, offsets, per-split watermark generators
# ---------------------------------------------------------------------------------------------


def test_source_reads_its_splits_in_order_with_offsets_and_per_split_watermarks():
    """One source subtask reads two splits; watermarks come from one generator per split.

        split 0: a@10, b@12 ┐
                            ├─► src(0) ──hash──► win(0)→out(0)
        split 1: c@5,  d@30 ┘

    The subtask's watermark is the min over its *unfinished* splits (WatermarkOutputMultiplexer),
    so finishing split 0 at ts 12 does not make split 1's c@5 late.
    """
    g = _two_sources_into_one(parallelism=1, watermark_out_of_orderness=1)
    inp = JobInput({"src": ((("a", 1, 10), ("b", 1, 12)), (("c", 1, 5), ("d", 1, 30)))})
    c = fresh(g, inp, RuntimeConfig(), channel_capacity=8)
    eg = c.eg
    s = sub(eg, "src", 0)
    ch = chan(eg, ("src", 0), ("win", 0))
    src = c.tasks[s].source
    # 1. two records of split 0: offsets advance, split 1 untouched
    c.step(A.SourceEmit(s))
    c.step(A.SourceEmit(s))
    assert src.snapshot_state() == [(0, 2), (1, 0)]
    assert records(c.channels[ch]) == [("a", 1, 10), ("b", 1, 12)]
    # 2. split 0 is finished, split 1 has seen nothing: its generator holds the watermark at MIN
    assert src.current_watermark() == LONG_MIN
    assert A.SourceWatermark(s) not in c.enabled_actions()
    # 3. c@5 from split 1: watermark = 5 - 1 - 1 = 3 (a single generator would say 12 - 2 = 10)
    c.step(A.SourceEmit(s))
    assert src.current_watermark() == 3
    c.step(A.SourceWatermark(s))
    assert kinds(c.channels[ch])[-1] == "wm3"
    # 4. the same watermark is not emitted twice
    assert A.SourceWatermark(s) not in c.enabled_actions()
    # 5. the checkpointed offsets are the split offsets
    c.step(A.TriggerCheckpoint())
    assert c.acks[1][s].operator["src"] == [(0, 2), (1, 1)]
    # 6. end of input: SourceEnd only once every split is read
    assert A.SourceEnd(s) not in c.enabled_actions()
    c.step(A.SourceEmit(s))
    assert A.SourceEnd(s) in c.enabled_actions()
    drain(c)
    assert oracle_diffs(g, inp, c) == {}
    assert not c.late


def test_splits_are_assigned_round_robin_to_source_subtasks():
    """Split j is read by source subtask j % p.

        splits 0,1,2 ─► src(0) reads 0 and 2, src(1) reads 1
    """
    g = _two_sources_into_one(parallelism=2)
    inp = JobInput({"src": tuple(((f"s{j}", 1, j),) for j in range(3))})
    c = fresh(g, inp, RuntimeConfig())
    s0, s1 = sub(c.eg, "src", 0), sub(c.eg, "src", 1)
    assert [sp[0] for sp in c.tasks[s0].source.splits] == [0, 2]
    assert [sp[0] for sp in c.tasks[s1].source.splits] == [1]


# ---------------------------------------------------------------------------------------------
# channels, back-pressure, chaining
# ---------------------------------------------------------------------------------------------


def test_fifo_channel_and_back_pressure_block_the_producer():
    """A full channel blocks its producer; a consumer whose output is full is not delivered to.

        src(0) ──rebalance──► m(0) ──rebalance──► out(0)       (capacity 2 per channel)
    """
    b = StreamGraphBuilder("bp")
    b.source("src", parallelism=1)
    b.map("m", "src", function="add:1", partitioner="rebalance", parallelism=1)
    b.sink("out", "m", sink_kind="append", partitioner="rebalance", parallelism=1)
    g = b.build()
    inp = JobInput({"src": (tuple(("k", i, i) for i in range(6)),)})
    c = fresh(g, inp, RuntimeConfig(), channel_capacity=2)
    eg = c.eg
    s, m = sub(eg, "src", 0), sub(eg, "m", 0)
    c_in, c_out = chan(eg, ("src", 0), ("m", 0)), chan(eg, ("m", 0), ("out", 0))
    # 1. two records fill src -> m: SourceEmit disappears (and SourceIdle/SourceWatermark too)
    c.step(A.SourceEmit(s))
    c.step(A.SourceEmit(s))
    assert not [a for a in c.enabled_actions() if getattr(a, "subtask", None) == s]
    with pytest.raises(ActionNotEnabled):
        c.step(A.SourceEmit(s))
    # 2. FIFO: the consumer gets them in order
    c.step(A.Deliver(c_in))
    assert A.SourceEmit(s) in c.enabled_actions()
    c.step(A.SourceEmit(s))
    c.step(A.Deliver(c_in))
    assert records(c.channels[c_out]) == [("k", 1, 0), ("k", 2, 1)]
    # 3. m's output is full now: m is back-pressured, Deliver(src -> m) is not enabled
    assert A.Deliver(c_in) not in c.enabled_actions()
    # 4. the sink drains one record: m may process again
    c.step(A.Deliver(c_out))
    assert A.Deliver(c_in) in c.enabled_actions()
    assert c.external.committed_records() == [("k", 1, 0)]
    drain(c)
    assert [r[1] for r in c.external.committed_records()] == [1, 2, 3, 4, 5, 6]


def test_chained_operators_run_in_one_task_without_channels():
    """Forward edges between equal parallelisms chain: src→map→filter is one task.

        src(i)→m(i)→f(i) ──hash──► agg(0)→out(0)        (p = 2, then 1)
    """
    b = StreamGraphBuilder("chain")
    b.source("src", parallelism=2)
    b.map("m", "src", function="add:1", parallelism=2)
    b.filter("f", "m", function="even_value", parallelism=2)
    b.keyed_aggregate("agg", "f", aggregate="sum", parallelism=1)
    b.sink("out", "agg", sink_kind="append", parallelism=1)
    g = b.build()
    inp = JobInput({"src": ((("a", 1, 0), ("a", 2, 1)), (("b", 3, 2),))})
    c = fresh(g, inp, RuntimeConfig())
    eg = c.eg
    assert [v.operators for v in eg.job_graph.vertices.values()] == [("src", "m", "f"), ("agg", "out")]
    assert len(eg.subtasks) == 3 and len(eg.channels) == 2
    s0 = sub(eg, "src", 0)
    ch = chan(eg, ("src", 0), ("agg", 0))
    # 1. a=1 is mapped to 2 (even: passes), a=2 to 3 (odd: filtered) inside the source task
    c.step(A.SourceEmit(s0))
    c.step(A.SourceEmit(s0))
    assert records(c.channels[ch]) == [("a", 2, 0)]
    assert [type(n).__name__ for n in c.tasks[s0].plan.nodes] == ["MapNode", "FilterNode"]
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


# ---------------------------------------------------------------------------------------------
# watermarks: StatusWatermarkValve inside a task, window firing, the all-idle flush
# ---------------------------------------------------------------------------------------------


def _emit_with_watermark(c, s):
    c.step(A.SourceEmit(s))
    c.step(A.SourceWatermark(s))


def test_valve_in_a_task_min_over_channels_idle_excluded_and_returning_below_output():
    """The window task's valve: min over active aligned channels; an idle channel is excluded;
    a channel that comes back below the output watermark stays unaligned until it catches up.

        src(0) ─┐ hash
                ├────► win(0)→out(0)     (out-of-orderness 0: watermark = max ts - 1)
        src(1) ─┘
    """
    g = _two_sources_into_one(parallelism=2)
    # the last record of each split keeps the split (and its watermark generator) alive
    inp = JobInput({"src": ((("a", 1, 11), ("a", 1, 31), ("a", 1, 51), ("a", 1, 99)),
                            (("b", 1, 21), ("b", 1, 22), ("b", 1, 45), ("b", 1, 99)))})
    c = fresh(g, inp, RuntimeConfig(), channel_capacity=8)
    eg = c.eg
    s0, s1, w = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "win", 0)
    x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
    valve = c.tasks[w].valve
    # 1. src0: a@11, wm 10; src1: b@21, wm 20 -> the valve emits min = 10
    _emit_with_watermark(c, s0)
    _emit_with_watermark(c, s1)
    deliver_until_empty(c, x)
    assert valve.last_output_watermark == LONG_MIN  # y is active and aligned at MIN
    deliver_until_empty(c, y)
    assert valve.last_output_watermark == 10
    # 2. src1 goes idle: excluded; src0 advances to 30 -> output 30 (not held back by 20)
    c.step(A.SourceIdle(s1))
    deliver_until_empty(c, y)
    assert valve.channel_is_idle(1)
    _emit_with_watermark(c, s0)
    deliver_until_empty(c, x)
    assert valve.last_output_watermark == 30
    # 3. src1 returns (ACTIVE) with watermark 21 < 30: unaligned, the output does not go back
    c.step(A.SourceActive(s1))
    _emit_with_watermark(c, s1)          # b@22 -> wm 21
    deliver_until_empty(c, y)
    assert not valve.channel_is_idle(1) and not valve.channel_is_aligned(1)
    assert valve.last_output_watermark == 30
    # 4. src0 to 50: min over *aligned* channels (only src0) = 50
    _emit_with_watermark(c, s0)
    deliver_until_empty(c, x)
    assert valve.last_output_watermark == 50
    # 5. src1 catches up (wm 44 < 50 stays unaligned), then the final MAX realigns it
    _emit_with_watermark(c, s1)
    deliver_until_empty(c, y)
    assert not valve.channel_is_aligned(1)
    # b@22 and b@45 arrived after the output watermark (30, then 50) passed the ends of their
    # windows [20, 30) and [40, 50): both are late (side output), a consequence of idleness
    assert [r[1:4] for r in c.late] == [("b", 1, 22), ("b", 1, 45)]
    assert all(r[3] <= r[4] for r in c.late)  # each drop logged with the watermark that made it late
    drain(c)
    out = c.external.committed_records()
    assert ("b", 1, 29) in out and ("b", 2, 29) not in out and ("b", 1, 49) not in out


def test_window_fires_when_max_timestamp_reaches_the_watermark():
    """Window [0, 10) has maxTimestamp 9: watermark 8 does not fire it, watermark 9 does.

        src(0) ──hash──► win(0)→out(0)     (tumbling 10, count)
    """
    g = _two_sources_into_one(parallelism=1)
    inp = JobInput({"src": ((("a", 1, 5), ("a", 1, 9), ("a", 1, 10), ("a", 1, 30)),)})
    c = fresh(g, inp, RuntimeConfig())
    s, ch = sub(c.eg, "src", 0), chan(c.eg, ("src", 0), ("win", 0))
    # 1. a@5 and a@9: the watermark 8 does not reach maxTimestamp 9
    c.step(A.SourceEmit(s))
    c.step(A.SourceEmit(s))
    c.step(A.SourceWatermark(s))
    deliver_until_empty(c, ch)
    assert c.external.committed_records() == []
    # 2. a@10: watermark 9 == maxTimestamp -> fires (a, 2, 9) before the watermark is forwarded
    c.step(A.SourceEmit(s))
    c.step(A.SourceWatermark(s))
    deliver_until_empty(c, ch)
    assert c.external.committed_records() == [("a", 2, 9)]
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_window_fired_by_the_all_idle_flush():
    """When the last active channel goes idle the valve flushes the max watermark (FLINK-7728).

        src(0) ─┐ hash
                ├────► win(0)→out(0)
        src(1) ─┘

    src0 at watermark 4, src1 at 14 -> output 4. src1 idles (its 14 is not the output: no new
    min); then src0 idles with watermark == output, so Flink 2.3.0 flushes max = 14 and window
    [0, 10) (maxTimestamp 9) fires although no source ended.
    """
    g = _two_sources_into_one(parallelism=2)
    inp = JobInput({"src": ((("a", 1, 5), ("a", 1, 50)), (("b", 1, 15), ("b", 1, 50)))})
    c = fresh(g, inp, RuntimeConfig())
    eg = c.eg
    s0, s1, w = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "win", 0)
    x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
    # 1. both sources emit one record and their watermark
    _emit_with_watermark(c, s0)
    _emit_with_watermark(c, s1)
    deliver_until_empty(c, x)
    deliver_until_empty(c, y)
    assert c.tasks[w].valve.last_output_watermark == 4
    # 2. src1 idle: no change
    c.step(A.SourceIdle(s1))
    deliver_until_empty(c, y)
    assert c.tasks[w].valve.last_output_watermark == 4 and c.external.committed_records() == []
    # 3. src0 idle: all idle -> flush 14 -> window [0, 10) of key a fires; IDLE goes downstream
    c.step(A.SourceIdle(s0))
    deliver_until_empty(c, x)
    assert c.tasks[w].valve.last_output_watermark == 14
    assert c.external.committed_records() == [("a", 1, 9)]
    assert c.tasks[w].valve.is_idle


def _three_channel_idle_sequence(c, valve_check=None):
    """src0 wm 5, src1 wm 15, src2 wm 20; src0 idles (output 15), returns below (unaligned);
    src2 idles, src1 idles, src0 idles last while unaligned."""
    eg = c.eg
    s = [sub(eg, "src", i) for i in range(3)]
    ch = [chan(eg, ("src", i), ("win", 0)) for i in range(3)]
    for i in range(3):
        _emit_with_watermark(c, s[i])
        deliver_until_empty(c, ch[i])
    steps = [(A.SourceIdle, 0), (A.SourceActive, 0), (A.SourceIdle, 2), (A.SourceIdle, 1), (A.SourceIdle, 0)]
    for kind, i in steps:
        c.step(kind(s[i]))
        deliver_until_empty(c, ch[i])


def test_all_idle_flush_skipped_by_flink_2_3_0_and_done_with_flink_40475():
    """In 2.3.0 the all-idle flush is guarded by ``channel wm == output``; when the last
    channel to go idle came back below the output (unaligned), the flush is skipped.

        src(0) ─┐
        src(1) ─┼─hash─► win(0)→out(0)       a@6 (wm 5), b@16 (wm 15), c@21 (wm 20)
        src(2) ─┘

    1. src0 idles: output = min(15, 20) = 15, window [0,10) of a fires.
    2. src0 active again at 5 < 15: unaligned.  3. src2 idles, src1 idles (no aligned left).
    4. src0 idles last: 2.3.0 does not flush (5 != 15): window [10,20) of b never fires
       before end of input. With FLINK-40475's fix the max 20 is flushed and it fires.
    """
    g = _two_sources_into_one(parallelism=3)
    inp = JobInput({"src": tuple(((k, 1, t), (k, 1, 50)) for k, t in (("a", 6), ("b", 16), ("c", 21)))})
    # Flink 2.3.0 (the model's default valve)
    c = fresh(g, inp, RuntimeConfig())
    _three_channel_idle_sequence(c)
    w = sub(c.eg, "win", 0)
    assert c.tasks[w].valve.last_output_watermark == 15
    assert c.external.committed_records() == [("a", 1, 9)]
    # FLINK-40475: the same scenario with the fixed valve constructed directly in the task
    c2 = fresh(g, inp, RuntimeConfig())
    t = c2.tasks[w]
    t.valve = StatusWatermarkValve(len(t.plan.input_channels), flink_40475=True)
    _three_channel_idle_sequence(c2)
    assert t.valve.last_output_watermark == 20
    assert c2.external.committed_records() == [("a", 1, 9), ("b", 1, 19)]
    # both still produce the oracle's output at end of input (the MAX watermark fires the rest)
    drain(c)
    drain(c2)
    assert oracle_diffs(g, inp, c) == {} and oracle_diffs(g, inp, c2) == {}


# ---------------------------------------------------------------------------------------------
# aligned exactly-once
# ---------------------------------------------------------------------------------------------


def test_aligned_alignment_blocks_the_channel_until_all_barriers_arrived():
    """Aligned: after barrier 1 on channel x, x is blocked (its Deliver is not enabled) until
    barrier 1 arrived on y; then the task snapshots, forwards the barrier and unblocks.

        src(0) ─x─┐ hash
                  ├──► agg(0) ──rebalance──► out(0)
        src(1) ─y─┘
    """
    b = StreamGraphBuilder("align")
    b.source("src", parallelism=2)
    b.keyed_aggregate("agg", "src", aggregate="count", parallelism=1)
    b.sink("out", "agg", sink_kind="two_phase_commit", partitioner="rebalance", parallelism=1)
    g = b.build()
    inp = JobInput({"src": ((("a", 1, 0), ("a", 1, 1)), (("a", 1, 2), ("a", 1, 3)))})
    c = fresh(g, inp, RuntimeConfig())
    eg = c.eg
    s0, s1, agg = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "agg", 0)
    x, y, o = chan(eg, ("src", 0), ("agg", 0)), chan(eg, ("src", 1), ("agg", 0)), chan(eg, ("agg", 0), ("out", 0))
    # 1. src1 emits one record, checkpoint 1 is triggered, then both sources emit once more
    c.step(A.SourceEmit(s1))
    c.step(A.TriggerCheckpoint())
    c.step(A.SourceEmit(s0))
    c.step(A.SourceEmit(s1))
    assert kinds(c.channels[x]) == ["AC1", "rec"] and kinds(c.channels[y]) == ["rec", "AC1", "rec"]
    # 2. barrier 1 on x: x is blocked, its post-barrier record waits
    c.step(A.Deliver(x))
    assert A.Deliver(x) not in c.enabled_actions() and c.blocked[x]
    with pytest.raises(ActionNotEnabled):
        c.step(A.Deliver(x))
    # 3. y's pre-barrier record is processed, then barrier 1 on y completes the alignment
    c.step(A.Deliver(y))
    c.step(A.Deliver(y))
    assert not c.blocked[x] and A.Deliver(x) in c.enabled_actions()
    snap = c.acks[1][agg]
    assert [st.values for st in snap.keyed["agg"].values()] == [(("a", 1),)]
    # the barrier went downstream behind agg's output record
    assert kinds(c.channels[o]) == ["rec", "AC1"]
    c.step(A.Deliver(o))
    c.step(A.Deliver(o))
    assert 1 in c.completed_ids


def test_end_of_partition_during_alignment_counts_as_the_barrier():
    """FLIP-147: a channel whose EndOfPartition arrives during alignment stands for its barrier.

        src(0) ─x─┐
                  ├──► agg(0)→out(0)
        src(1) ─y─┘   (src1 finished before checkpoint 1; its EOP is still queued on y)

    With ``checkpoints_after_tasks_finish=False`` the same EOP aborts the checkpoint
    (CHECKPOINT_DECLINED_INPUT_END_OF_STREAM).
    """
    g = _two_sources_into_one(kind="agg", sink_kind="two_phase_commit")
    inp = JobInput({"src": ((("a", 1, 0),), (("b", 1, 1),))})
    for flip147 in (True, False):
        c = fresh(g, inp, RuntimeConfig(checkpoints_after_tasks_finish=flip147))
        aborts = _record_aborts(c)
        eg = c.eg
        s0, s1, agg = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "win", 0)
        x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
        # 1. src1 emits its record and ends: [rec, wmMAX, EOP] wait on y
        c.step(A.SourceEmit(s1))
        c.step(A.SourceEnd(s1))
        assert kinds(c.channels[y])[-1] == "EOP"
        # 2. checkpoint 1: src1 is FINISHED and acknowledges at once, src0 sends barrier 1
        c.step(A.TriggerCheckpoint())
        assert kinds(c.channels[x]) == ["AC1"]
        # 3. barrier 1 on x blocks x; agg waits for y
        c.step(A.Deliver(x))
        assert c.blocked[x] and c.coordinator.num_pending == 1
        # 4. y: record, MAX watermark, EOP
        deliver_until_empty(c, y)
        if flip147:
            assert 1 in c.completed_ids and not aborts and not c.blocked[x]
        else:
            assert aborts == [(1, DECLINED_INPUT_END_OF_STREAM, agg)] and not c.blocked[x]
        drain(c)
        assert oracle_diffs(g, inp, c) == {}


class _RecordingContext(RecordingTask):
    """The barrier handler's task context, recording what the handler asks for (triggers by
    checkpoint id)."""

    def __init__(self, n):
        super().__init__(n)
        self.bug_20645 = False

    def trigger(self, b, unaligned):
        self.log.append(("trigger", b.id, unaligned))


def test_aligned_barrier_n_plus_1_before_n_completes_subsumes_n():
    """Aligned handler of a task with three channels x, y, z (max concurrent checkpoints 2):

        ─x─┐
        ─y─┼──► task       barrier 1 on x; barrier 2 on y (y's producer never got trigger 1,
        ─z─┘               e.g. it declined TASK_NOT_READY) -> 1 is aborted as SUBSUMED

    With FIFO channels and every running source triggered at once this ordering cannot arise
    inside the Cluster (a skipped barrier always leaves a CancelCheckpointMarker), so it is
    driven on SingleCheckpointBarrierHandler directly. A late cancel of checkpoint 1 and a late
    barrier 1 afterwards are ignored; checkpoint 2 completes.
    """
    ctx = _RecordingContext(3)
    h = SingleCheckpointBarrierHandler(3, "aligned")
    # 1. barrier 1 on x
    h.process_barrier(ctx, CheckpointBarrier(1, 0), 0, 1)
    assert h.pending and h.current_id == 1
    # 2. barrier 2 on y: checkpoint 1 is aborted as subsumed (the task forwards a cancel marker)
    h.process_barrier(ctx, CheckpointBarrier(2, 1), 1, 2)
    assert ("abort", 1, DECLINED_SUBSUMED) in ctx.log and h.current_id == 2
    # 3. the late cancel of checkpoint 1 on z: ignored
    n = len(ctx.log)
    h.process_cancellation(ctx, 1)
    assert ctx.log[n:] == [] and h.pending
    # 4. late barrier 1 on z: obsolete, only resumes z
    h.process_barrier(ctx, CheckpointBarrier(1, 0), 2, 3)
    assert ctx.log[n:] == [("resume", 2)]
    # 5. barrier 2 on x and z: checkpoint 2 triggers (aligned)
    h.process_barrier(ctx, CheckpointBarrier(2, 1), 0, 4)
    h.process_barrier(ctx, CheckpointBarrier(2, 1), 2, 5)
    assert ("trigger", 2, False) in ctx.log and not h.pending


def test_cancel_marker_aborts_alignment_and_unblocks():
    """A CancelCheckpointMarker of the checkpoint being aligned aborts the alignment.

        srcA(0) ──────────────x──┐
                                 ├──► d(0)→out(0)      d = map over the union of srcA and m
        srcB(0) ─┐               │
                 ├──► m(0) ───y──┘                     (FLIP-147 off: an EOP during
        srcB(1) ─┘                                      alignment aborts the checkpoint)
    """
    b = StreamGraphBuilder("cancel")
    b.source("srcA", parallelism=1)
    b.source("srcB", parallelism=2)
    b.map("m", "srcB", partitioner="rebalance", parallelism=1)
    b.map("d", ["srcA", "m"], partitioner="rebalance", parallelism=1)
    b.sink("out", "d", sink_kind="two_phase_commit", parallelism=1)
    g = b.build()
    inp = JobInput({"srcA": ((("a", 1, 0),),), "srcB": ((("b", 1, 1),), (("c", 1, 2),))})
    c = fresh(g, inp, RuntimeConfig(checkpoints_after_tasks_finish=False))
    aborts = _record_aborts(c)
    eg = c.eg
    b1, m, d = sub(eg, "srcB", 1), sub(eg, "m", 0), sub(eg, "d", 0)
    x, y = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("m", 0), ("d", 0))
    m0, m1 = chan(eg, ("srcB", 0), ("m", 0)), chan(eg, ("srcB", 1), ("m", 0))
    # 1. srcB(1) emits and ends; checkpoint 1: barriers from srcA and srcB(0)
    c.step(A.SourceEmit(b1))
    c.step(A.SourceEnd(b1))
    c.step(A.TriggerCheckpoint())
    # 2. d aligns on x (blocked)
    c.step(A.Deliver(x))
    assert c.blocked[x] and c.tasks[d].handler.pending
    # 3. m: barrier 1 on m0 blocks m0; srcB(1)'s EOP on m1 during alignment aborts 1 at m,
    #    which forwards CancelCheckpointMarker(1) to d
    c.step(A.Deliver(m0))
    deliver_until_empty(c, m1)
    assert aborts == [(1, DECLINED_INPUT_END_OF_STREAM, m)]
    assert kinds(c.channels[y])[-1] == "cancel1"
    # 4. d reads y up to the cancel marker: d's alignment of 1 is aborted and x unblocked
    while "cancel1" in kinds(c.channels[y]):
        c.step(A.Deliver(y))
    assert not c.blocked[x] and not c.tasks[d].handler.pending and c.tasks[d].handler.current_id == 1
    # 5. everything drains; a later checkpoint commits the output, which is the oracle's
    drain(c)
    assert 1 not in c.completed_ids and c.completed_ids
    assert oracle_diffs(g, inp, c) == {}


def test_unaligned_barrier_n_plus_1_before_n_subsumes_and_late_cancel_is_ignored():
    """Unaligned barriers overtake, so barrier 2 can reach a task before barrier 1 arrived on
    all its channels: 1 is aborted as subsumed and a CancelCheckpointMarker(1) is forwarded;
    downstream, that cancel arrives *after* barrier 2 and must not abort checkpoint 2.

        srcA(0) ──x──┐
                     ├──► d(0) ──o──┐
        srcB(0) ─► m(0) ─y─┘        ├──► out(0)      (max concurrent checkpoints 2)
        srcC(0) ───────────────z────┘
    """
    b = StreamGraphBuilder("subsume")
    b.source("srcA", parallelism=1)
    b.source("srcB", parallelism=1)
    b.source("srcC", parallelism=1)
    b.map("m", "srcB", partitioner="rebalance", parallelism=1)
    b.map("d", ["srcA", "m"], partitioner="rebalance", parallelism=1)
    b.sink("out", ["d", "srcC"], sink_kind="two_phase_commit", partitioner="rebalance", parallelism=1)
    g = b.build()
    inp = JobInput({"srcA": ((("a", 1, 0),),), "srcB": ((("b", 1, 1),),), "srcC": ((("c", 1, 2),),)})
    c = fresh(g, inp, RuntimeConfig(unaligned=True, max_concurrent_checkpoints=2))
    aborts = _record_aborts(c)
    eg = c.eg
    d, out = sub(eg, "d", 0), sub(eg, "out", 0)
    x, o = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("d", 0), ("out", 0))
    # 1. two checkpoints in flight: unaligned barriers 1 and 2 at the head of every source channel
    c.step(A.TriggerCheckpoint())
    c.step(A.TriggerCheckpoint())
    assert c.coordinator.num_pending == 2 and A.TriggerCheckpoint() not in c.enabled_actions()
    assert kinds(c.channels[x]) == ["UC1", "UC2"]
    # 2. d gets barrier 1 on x: snapshot at once (unaligned), barrier 1 overtakes into o
    c.step(A.Deliver(x))
    assert c.tasks[d].handler.pending and kinds(c.channels[o]) == ["UC1"]
    # 3. barrier 2 on x before barrier 1 on y: 1 is subsumed, the cancel marker is forwarded
    c.step(A.Deliver(x))
    assert aborts == [(1, DECLINED_SUBSUMED, d)]
    assert kinds(c.channels[o]) == ["UC1", "UC2", "cancel1"]
    # 4. out: barrier 1, then barrier 2 (subsumes 1 locally), then the late cancel of 1:
    #    ignored, checkpoint 2 stays pending at out (z has not delivered its barrier 2 yet)
    deliver_until_empty(c, o)
    h = c.tasks[out].handler
    assert h.current_id == 2 and h.pending
    assert [a for a in aborts if a[0] == 2] == []
    # 5. drain: checkpoint 2 completes, the output is the oracle's
    drain(c)
    assert 2 in c.completed_ids and 1 not in c.completed_ids
    assert oracle_diffs(g, inp, c) == {}


# ---------------------------------------------------------------------------------------------
# at-least-once, unaligned, alignment timeout
# ---------------------------------------------------------------------------------------------


def test_at_least_once_tracker_never_blocks_and_post_barrier_records_enter_the_snapshot():
    """CheckpointBarrierTracker: barrier 1 on x does not block x; a record behind it on x is
    processed before barrier 1 arrives on y, so it is part of snapshot 1 although the source's
    offset in snapshot 1 is before it (a restore replays it: duplicated state effects).

        src(0) ─x─┐ hash
                  ├──► agg(0)→out(0)       (count per key)
        src(1) ─y─┘
    """
    g = _two_sources_into_one(kind="agg", sink_kind="two_phase_commit")
    inp = JobInput({"src": ((("a", 1, 0),), (("b", 1, 1),))})
    c = fresh(g, inp, RuntimeConfig(checkpointing_mode="at_least_once"))
    eg = c.eg
    s0, agg = sub(eg, "src", 0), sub(eg, "win", 0)
    x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
    # 1. checkpoint 1 on empty channels; then src0 emits a@0 behind its barrier
    c.step(A.TriggerCheckpoint())
    assert c.acks[1][s0].operator["src"] == [(0, 0)]
    c.step(A.SourceEmit(s0))
    assert kinds(c.channels[x]) == ["AC1", "rec"]
    # 2. barrier 1 on x: no blocking
    c.step(A.Deliver(x))
    assert not c.blocked[x] and A.Deliver(x) in c.enabled_actions()
    # 3. the post-barrier record is processed
    c.step(A.Deliver(x))
    # 4. barrier 1 on y: the snapshot now holds a's count although a@0 is after the cut
    c.step(A.Deliver(y))
    keyed = c.acks[1][agg].keyed["win"] if 1 in c.acks else c.completed[1][agg].keyed["win"]
    assert [st.values for st in keyed.values()] == [(("a", 1),)]


def _consistent_cut_errors(eg, snaps) -> list:
    """Per pipelined channel: sent(producer) == received(consumer) + |input cs| + |output cs|."""
    errors = []
    for ch in eg.channels:
        p, q = snaps[ch.producer], snaps[ch.consumer]
        sent = p.sent[ch.id]
        got = q.received[ch.id] + len(q.input_channel_state.get(ch.id, ())) + len(p.output_channel_state.get(ch.id, ()))
        if sent != got:
            errors.append((ch.id, sent, got))
    return errors


def _unaligned_job():
    b = StreamGraphBuilder("uc")
    b.source("srcA", parallelism=1)
    b.source("srcB", parallelism=1)
    b.map("m", "srcB", partitioner="rebalance", parallelism=1)
    b.map("d", ["srcA", "m"], function="add:100", partitioner="rebalance", parallelism=1)
    b.sink("out", "d", sink_kind="two_phase_commit", partitioner="rebalance", parallelism=1)
    return b.build()


def test_unaligned_snapshot_with_records_on_both_sides_of_the_barrier():
    """d's unaligned snapshot persists the input it consumes before y's barrier (input channel
    state) and the output its barrier overtakes (output channel state).

        srcA(0) ───────────x──┐
                              ├──► d(0) ──o──► out(0)
        srcB(0) ──► m(0) ──y──┘

    1. srcB emits b1, b2; m forwards both into y.   2. srcA emits a1; d turns it into a1' on o.
    3. checkpoint 1: barrier at the head of x.       4. d: barrier on x -> snapshot, barrier
       overtakes a1' on o (output cs = [a1']).      5. d consumes b1 from y (input cs).
    6. m gets its barrier (after b1, b2 went out): its barrier overtakes b2 on y (m's output cs).
    7. barrier on y: d's channel state is complete. 8. out gets the barrier: checkpoint 1 done.
    """
    g = _unaligned_job()
    inp = JobInput({"srcA": ((("a", 1, 0), ("a", 2, 5)),), "srcB": ((("b", 1, 1), ("b", 2, 2), ("b", 3, 3)),)})
    c = fresh(g, inp, RuntimeConfig(unaligned=True))
    eg = c.eg
    sa, sb, d = sub(eg, "srcA", 0), sub(eg, "srcB", 0), sub(eg, "d", 0)
    x, y, o = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("m", 0), ("d", 0)), chan(eg, ("d", 0), ("out", 0))
    bm = chan(eg, ("srcB", 0), ("m", 0))
    # 1.
    c.step(A.SourceEmit(sb))
    c.step(A.SourceEmit(sb))
    deliver_until_empty(c, bm)
    assert records(c.channels[y]) == [("b", 1, 1), ("b", 2, 2)]
    # 2.
    c.step(A.SourceEmit(sa))
    c.step(A.Deliver(x))
    assert records(c.channels[o]) == [("a", 101, 0)]
    # 3.
    c.step(A.TriggerCheckpoint())
    # 4.
    c.step(A.Deliver(x))
    assert kinds(c.channels[o]) == ["UC1", "rec"]
    # 5.
    c.step(A.Deliver(y))
    # 6. m's barrier (srcB's barrier is at the head of bm)
    c.step(A.Deliver(bm))
    assert kinds(c.channels[y]) == ["UC1", "rec"]
    # 7. + 8.
    c.step(A.Deliver(y))
    deliver_until_empty(c, o)
    assert 1 in c.completed_ids
    snaps = c.completed[1]
    assert snaps[d].input_channel_state == {y: (("b", 1, 1),)}
    assert snaps[d].output_channel_state == {o: (("a", 101, 0),)}
    assert snaps[sub(eg, "m", 0)].output_channel_state == {y: (("b", 2, 2),)}
    assert _consistent_cut_errors(eg, snaps) == []
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


def test_alignment_timeout_switches_to_unaligned():
    """Aligned with alignment timeout ("alternating"): x is blocked by barrier 1 while y still
    holds two records; when the timer is due, AlignmentTimeout makes the snapshot unaligned,
    unblocks x and persists y's records up to y's barrier as input channel state.

        src(0) ─x─┐ hash
                  ├──► agg(0)→out(0)        (aligned_checkpoint_timeout = 5 steps)
        src(1) ─y─┘
    """
    g = _two_sources_into_one(kind="agg", sink_kind="two_phase_commit")
    inp = JobInput({"src": ((("a", 1, 0), ("a", 1, 1), ("a", 1, 2)), (("b", 1, 3), ("b", 1, 4)))})
    c = fresh(g, inp, RuntimeConfig(unaligned=True, aligned_checkpoint_timeout=5), channel_capacity=8)
    eg = c.eg
    s0, s1, agg = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "win", 0)
    x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
    # 1. src1 emits b@3, b@4; checkpoint 1 (aligned, timeoutable barriers at the tails)
    c.step(A.SourceEmit(s1))
    c.step(A.SourceEmit(s1))
    c.step(A.TriggerCheckpoint())
    trigger_time = c.now - 1
    # 2. barrier 1 on x: x blocked, the alignment timer is registered
    c.step(A.Deliver(x))
    assert c.blocked[x] and c.tasks[agg].timer == (1, trigger_time + 5)
    # 3. time passes (src0 emits behind its barrier) until the timer is due
    while A.AlignmentTimeout(agg) not in c.enabled_actions():
        assert c.now < trigger_time + 5
        c.step(A.SourceEmit(s0))
    assert c.now == trigger_time + 5
    # 4. timeout: unaligned snapshot now, x unblocked, y persisted until its barrier
    c.step(A.AlignmentTimeout(agg))
    assert not c.blocked[x] and A.Deliver(x) in c.enabled_actions()
    deliver_until_empty(c, y)
    assert 1 in c.completed_ids
    assert c.completed[1][agg].input_channel_state == {y: (("b", 1, 3), ("b", 1, 4))}
    assert _consistent_cut_errors(eg, c.completed[1]) == []
    drain(c)
    assert oracle_diffs(g, inp, c) == {}


# ---------------------------------------------------------------------------------------------
# coordinator and two-phase commit
# ---------------------------------------------------------------------------------------------


def test_coordinator_concurrency_store_subsumption_and_commit_only_after_notify():
    """Two-phase commit: records become visible only when NotifyCheckpointComplete reaches the
    sink; a notification of checkpoint 2 commits checkpoint 1's transaction too; the store keeps
    only the latest checkpoint (num-retained 1).

        src(0) ──hash──► agg(0)→out(0)     (keyed count, two-phase-commit sink)
    """
    g = _two_sources_into_one(kind="agg", sink_kind="two_phase_commit", parallelism=1)
    inp = JobInput({"src": ((("a", 1, 0), ("b", 1, 1), ("c", 1, 2)),)})
    c = fresh(g, inp, RuntimeConfig())
    eg = c.eg
    s, agg = sub(eg, "src", 0), sub(eg, "win", 0)
    x = chan(eg, ("src", 0), ("win", 0))
    # 1. a@0 processed, checkpoint 1 triggered: no second trigger while it is pending (max 1)
    c.step(A.SourceEmit(s))
    c.step(A.TriggerCheckpoint())
    assert A.TriggerCheckpoint() not in c.enabled_actions()
    # 2. the barrier reaches agg: snapshot, pre-commit of the transaction holding (a, 1)
    deliver_until_empty(c, x)
    assert c.completed_ids == [1]
    assert [t.status for t in c.external.uncommitted_transactions(agg)] == [PRECOMMITTED, "OPEN"]
    assert c.external.committed_records() == []
    assert A.NotifyCheckpointComplete(agg, 1) in c.enabled_actions()
    # 3. b@1, checkpoint 2 completes too; notifications of 1 are still undelivered
    c.step(A.SourceEmit(s))
    c.step(A.TriggerCheckpoint())
    deliver_until_empty(c, x)
    assert c.completed_ids == [1, 2] and c.coordinator.store.checkpoint_ids() == (2,)
    assert c.external.committed_records() == []
    # 4. notify 2 reaches the sink: both pre-committed transactions commit, in order
    c.step(A.NotifyCheckpointComplete(agg, 2))
    assert c.external.committed_records() == [("a", 1, 0), ("b", 1, 1)]
    assert [t.status for t in c.external.uncommitted_transactions(agg)] == ["OPEN"]
    # 5. the late notify of 1 commits nothing more
    c.step(A.NotifyCheckpointComplete(agg, 1))
    assert len(c.external.committed_records()) == 2
    drain(c)
    assert oracle_diffs(g, inp, c) == {}
    assert all(t.status == COMMITTED for t in c.external.transactions.values() if t.records)


# ---------------------------------------------------------------------------------------------
# failure-free random runs equal the oracle, for every checkpoint mode and sink kind
# ---------------------------------------------------------------------------------------------

MODES = {
    "aligned": {},
    "at_least_once": {"checkpointing_mode": "at_least_once"},
    "unaligned": {"unaligned": True},
    "alternating": {"unaligned": True, "aligned_checkpoint_timeout": 3},
}
SINKS = ("two_phase_commit", "upsert", "append")


def _random_job(sink_kind, *, rolling=False):
    """src(p=2, 3 splits, out-of-orderness 2) → map → keyBy → window or count (p=3) → sink (p=2).

        src(0)→m(0) ─┐ hash  ┌─► agg(0) ─┐ rebalance
                     ├───────┼─► agg(1) ─┼──────────► out(0), out(1)
        src(1)→m(1) ─┘       └─► agg(2) ─┘

    Upsert sinks (and ``rolling``) get a rolling count whose final value per key is
    order-independent; the others a tumbling event-time window (sum).
    """
    b = StreamGraphBuilder(f"random-{sink_kind}")
    b.source("src", parallelism=2, watermark_out_of_orderness=2)
    b.map("m", "src", function="add:1", parallelism=2)
    if sink_kind == "upsert" or rolling:
        b.keyed_aggregate("agg", "m", aggregate="count", parallelism=3)
    else:
        b.window("agg", "m", size=10, aggregate="sum", parallelism=3)
    b.sink("out", "agg", sink_kind=sink_kind, partitioner="rebalance", parallelism=2)
    return b.build()


def _random_input(seed, splits=3, n=10):
    import random

    rng = random.Random(seed)
    out = []
    for _ in range(splits):
        t, recs = 0, []
        for _ in range(n):
            t += rng.randint(-2, 4)  # out of order by at most 2 (the generators' bound)
            recs.append((f"k{rng.randint(0, 4)}", rng.randint(0, 9), t))
        out.append(tuple(recs))
    return JobInput({"src": tuple(out)})


@pytest.mark.parametrize("sink_kind", SINKS)
@pytest.mark.parametrize("mode", list(MODES))
def test_failure_free_random_run_equals_the_oracle(mode, sink_kind):
    """Seeded random choice over *all* enabled actions, then ``drain``: the oracle's output."""
    g = _random_job(sink_kind)
    for seed in range(4):
        inp = _random_input(seed)
        c = fresh(g, inp, RuntimeConfig(max_concurrent_checkpoints=2, **MODES[mode]), seed, channel_capacity=2)
        random_walk(c, seed, 250)
        drain(c)
        assert c.is_drained()
        if sink_kind == "two_phase_commit":
            assert c.completed_ids, "two-phase commit needs a completed checkpoint to show output"
        assert oracle_diffs(g, inp, c) == {}, (mode, sink_kind, seed)


@pytest.mark.parametrize("mode", list(MODES))
def test_failure_free_random_run_with_rolling_count_and_two_phase_commit(mode):
    """A rolling count whose key arrives over two channels: the (count, timestamp) pairing is
    order-dependent, the (key, count) multiset is not (``comparison_mode`` = rolling_count)."""
    g = _random_job("two_phase_commit", rolling=True)
    for seed in range(3):
        inp = _random_input(seed)
        c = fresh(g, inp, RuntimeConfig(**MODES[mode]), seed, channel_capacity=2)
        random_walk(c, seed, 250)
        drain(c)
        assert oracle_diffs(g, inp, c) == {}, (mode, seed)


# ---------------------------------------------------------------------------------------------
# traces: determinism and action reprs
# ---------------------------------------------------------------------------------------------


def _state(c):
    return (
        list(c.external.committed), list(c.external.upsert_log),
        [list(ch) for ch in c.channels], list(c.completed_ids), c.now,
        [t.status for t in c.tasks], sorted((t.id, t.status) for t in c.external.transactions.values()),
    )


@pytest.mark.parametrize("mode", list(MODES))
def test_trace_replays_to_an_identical_state_and_actions_round_trip(mode):
    """The same configuration + seed + action list gives the same state on a fresh Cluster
    (rebalance starts are seeded; failures and restarts included); every action's repr parses
    back to an equal action."""
    g = _random_job("two_phase_commit")
    inp = _random_input(7)
    cfg, env = RuntimeConfig(**MODES[mode]), Environment(max_failures=2)
    c = fresh(g, inp, cfg, seed=11, environment=env, channel_capacity=2)
    trace = random_walk(c, 11, 400)
    assert any(type(a) in (A.FailTask, A.LoseTaskManager, A.FailJobManager) for a in trace)
    again = replay(g, inp, cfg, 11, trace, env, channel_capacity=2)
    assert _state(again) == _state(c)
    reparsed = [A.parse_action(repr(a)) for a in trace]
    assert reparsed == trace
    assert _state(replay(g, inp, cfg, 11, reparsed, env, channel_capacity=2)) == _state(c)


def test_every_action_type_round_trips_through_its_repr():
    samples = [A.Deliver(3), A.SourceEmit(0), A.SourceWatermark(1), A.SourceIdle(2), A.SourceActive(2),
               A.SourceEnd(0), A.TriggerCheckpoint(), A.TriggerCheckpoint(savepoint=True),
               A.NotifyCheckpointComplete(4, 2), A.AlignmentTimeout(5), A.FailTask(1), A.LoseTaskManager(0),
               A.FailJobManager(), A.StopWithSavepoint(), A.RestartFromSavepoint((("src", 2), ("agg", 3)))]
    for t in A.ACTION_TYPES:
        if not any(type(s) is t for s in samples):
            samples.append(t(*[0 for f in __import__("attrs").fields(t)]))
    assert {type(s) for s in samples} == set(A.ACTION_TYPES)
    for s in samples:
        assert A.parse_action(repr(s)) == s
    with pytest.raises(ValueError):
        A.parse_action("Explode(1)")


def test_step_refuses_a_not_enabled_action_without_changing_the_state():
    """``step`` raises ActionNotEnabled for an action ``enabled_actions`` does not offer, and
    leaves the state as it was (an engine may try replaying a shrunk trace).

        src(0) ──rebalance──► m(0) ──rebalance──► out(0)      (capacity 1)
    """
    b = StreamGraphBuilder("refuse")
    b.source("src", parallelism=1)
    b.map("m", "src", partitioner="rebalance", parallelism=1)
    b.sink("out", "m", sink_kind="append", partitioner="rebalance", parallelism=1)
    g = b.build()
    inp = JobInput({"src": ((("k", 1, 0), ("k", 2, 1)),)})
    c = fresh(g, inp, RuntimeConfig(), channel_capacity=1)
    eg = c.eg
    s = sub(eg, "src", 0)
    c_in = chan(eg, ("src", 0), ("m", 0))
    c.step(A.SourceEmit(s))           # src -> m full
    c.step(A.Deliver(c_in))           # m -> out full
    c.step(A.SourceEmit(s))           # src -> m full again; m is back-pressured
    before = _state(c)
    for a in (A.SourceEmit(s), A.SourceWatermark(s), A.SourceIdle(s), A.Deliver(c_in), A.SourceEnd(s),
              A.AlignmentTimeout(sub(eg, "m", 0))):
        assert a not in c.enabled_actions()
        with pytest.raises(ActionNotEnabled):
            c.step(a)
        assert _state(c) == before, a


# ---------------------------------------------------------------------------------------------
# checkpoint trigger RPCs in flight (Environment.trigger_delivery = "any_order")
# ---------------------------------------------------------------------------------------------

def _triggers_in_flight(max_failures: int = 0):
    """Two source subtasks -> keyBy -> one count subtask with its two-phase-commit sink chained;
    aligned checkpoints, two may be pending; the trigger RPCs reach the sources as messages::

        src0 --\\
                +--> win+out
        src1 --/
    """
    g = _two_sources_into_one(kind="agg", sink_kind="two_phase_commit")
    inp = JobInput({"src": ((("a", 1, 1), ("b", 1, 2)), (("c", 1, 3),))})
    c = fresh(g, inp, RuntimeConfig(max_concurrent_checkpoints=2),
              environment=Environment(trigger_delivery="any_order", max_failures=max_failures))
    return g, inp, c


def test_a_trigger_rpc_reaches_its_source_only_when_delivered():
    """1. TriggerCheckpoint: checkpoint 1 is pending, no barrier is anywhere yet, each source
    holds the trigger in flight. 2. its delivery to src0 takes src0's snapshot and puts the
    barrier into src0's channel only."""
    g, _inp, c = _triggers_in_flight()
    eg = c.eg
    s0, s1, w = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "win", 0)
    c.step(A.TriggerCheckpoint())
    assert c.coordinator.pending_ids() == (1,)
    assert [b.id for b in c.tasks[s0].triggers] == [1] and [b.id for b in c.tasks[s1].triggers] == [1]
    assert all(not [k for k in kinds(q) if k.startswith(("AC", "UC"))] for q in c.channels)
    c.step(A.DeliverCheckpointTrigger(s0, 1))
    assert c.tasks[s0].triggers == () and c.tasks[s0].last_triggered == 1
    assert kinds(c.channels[chan(eg, ("src", 0), ("win", 0))]) == ["AC1"]
    assert kinds(c.channels[chan(eg, ("src", 1), ("win", 0))]) == []
    assert s0 in c.coordinator.pending[1].acknowledged and w not in c.coordinator.pending[1].acknowledged


def test_an_older_trigger_after_a_newer_one_is_ignored_as_flink_ignores_it():
    """SubtaskCheckpointCoordinatorImpl.checkpointState: ``lastCheckpointId >= id`` -> "Out of
    order checkpoint barrier (aborted previously?)": no snapshot, no barrier, no
    CancelCheckpointMarker and no decline.

    1-2. two checkpoints triggered; 3. src0 gets checkpoint 2's trigger first (snapshot, barrier 2);
    4. then checkpoint 1's: ignored (src0 stays on 2, its channel holds barrier 2 only, checkpoint 1
    is still pending and declined by nobody). The drained run is exact; checkpoint 2 completes
    and subsumes checkpoint 1."""
    g, inp, c = _triggers_in_flight()
    eg = c.eg
    s0 = sub(eg, "src", 0)
    aborts = _record_aborts(c)
    c.step(A.TriggerCheckpoint())
    c.step(A.TriggerCheckpoint())
    c.step(A.DeliverCheckpointTrigger(s0, 2))
    acked = set(c.tasks[s0].acked)
    assert c.tasks[s0].trigger_verdict(1) == "older"
    c.step(A.DeliverCheckpointTrigger(s0, 1))
    t = c.tasks[s0]
    assert t.last_triggered == 2 and t.acked == acked and t.out_of_order is None
    ch = c.channels[chan(eg, ("src", 0), ("win", 0))]
    assert [e.id for e in ch if isinstance(e, CheckpointBarrier)] == [2]
    assert not [e for e in ch if isinstance(e, CancelCheckpointMarker)]
    assert c.coordinator.pending_ids() == (1, 2) and not c.declines and not aborts
    assert c.events[-1][0] == "trigger_delivered" and c.events[-1][2:] == (s0, 1, 2, False, "older")
    drain(c)
    assert 2 in c.completed_ids and 1 not in c.completed_ids
    assert (1, "CHECKPOINT_SUBSUMED") in [(cid, reason) for cid, reason, _s in aborts]
    assert oracle_diffs(g, inp, c) == {}


def test_a_trigger_of_a_checkpoint_notified_aborted_is_cancelled_downstream():
    """SubtaskCheckpointCoordinatorImpl.notifyCheckpoint(ABORT) records a checkpoint the task has
    not triggered (``abortedCheckpointIds``), and checkpointState then takes no snapshot: it
    sets ``lastCheckpointId`` and broadcasts a CancelCheckpointMarker, and declines nothing.

    1. checkpoint 1 triggered; 2. it expires: src0, whose trigger is still in flight, is told;
    3. the trigger reaches src0: no snapshot, a CancelCheckpointMarker 1 downstream; 4. the
    count task takes the marker and sends nothing the coordinator counts. Checkpoint 2 then
    completes as usual."""
    g, inp, c = _triggers_in_flight()
    eg = c.eg
    s0, s1 = sub(eg, "src", 0), sub(eg, "src", 1)
    c.step(A.TriggerCheckpoint())
    c.step(A.CheckpointTimeout(1))
    assert c.tasks[s0].aborted_triggers == (1,) and c.tasks[s1].aborted_triggers == (1,)
    c.step(A.DeliverCheckpointTrigger(s0, 1))
    t = c.tasks[s0]
    assert t.last_triggered == 1 and t.aborted_triggers == () and not t.acked
    ch = chan(eg, ("src", 0), ("win", 0))
    assert kinds(c.channels[ch]) == ["cancel1"]
    assert c.events[-1][2:] == (s0, 1, -1, True, "aborted")
    events = len(c.events)
    c.step(A.Deliver(ch))
    # the count task aborts checkpoint 1 on the marker and declines it: the coordinator no
    # longer knows it, so nothing is aborted again
    assert not [e for e in c.events[events:] if e[0] == "aborted"] and not c.coordinator.pending_ids()
    c.step(A.TriggerCheckpoint())
    for s in (s0, s1):
        for b in list(c.tasks[s].triggers):
            c.step(A.DeliverCheckpointTrigger(s, b.id))
    drain(c)
    assert 2 in c.completed_ids
    assert oracle_diffs(g, inp, c) == {}


def test_an_abort_notification_is_not_recorded_once_the_task_took_a_newer_checkpoint():
    """"only record checkpoints that have not triggered on task side": src0 took checkpoint 2,
    then checkpoint 1 expires while its trigger is in flight to src0: nothing is recorded, and
    its trigger is ignored as older."""
    _g, _inp, c = _triggers_in_flight()
    s0 = sub(c.eg, "src", 0)
    c.step(A.TriggerCheckpoint())
    c.step(A.TriggerCheckpoint())
    c.step(A.DeliverCheckpointTrigger(s0, 2))
    c.step(A.CheckpointTimeout(1))
    assert c.tasks[s0].aborted_triggers == ()
    assert c.tasks[s0].trigger_verdict(1) == "older"


def test_triggers_in_flight_die_with_the_attempt_and_at_once_none_is_ever_in_flight():
    """A restarted source is a new attempt: the RPCs to the old one are gone (its TaskExecutor
    no longer knows that attempt). With the default delivery the trigger reaches every source in
    the step that triggers it."""
    _g, _inp, c = _triggers_in_flight(max_failures=1)
    s0 = sub(c.eg, "src", 0)
    c.step(A.TriggerCheckpoint())
    c.step(A.FailTask(s0))
    assert c.tasks[s0].triggers == () and not enabled(c, A.DeliverCheckpointTrigger)
    g, inp, _c = _triggers_in_flight()
    d = fresh(g, inp, RuntimeConfig(max_concurrent_checkpoints=2))
    d.step(A.TriggerCheckpoint())
    assert all(t.triggers == () for t in d.tasks) and d.tasks[s0].last_triggered == 1
    assert not enabled(d, A.DeliverCheckpointTrigger)


def test_an_ignored_or_cancelled_trigger_commutes_with_the_other_sources_steps():
    """DeliverCheckpointTrigger's footprint: a trigger the task ignores (older) changes only the
    task, one it cancels (notified aborted) the task and its output channels; either commutes
    with the other source's records, which an explorer's sleep sets rely on."""
    _g, _inp, c = _triggers_in_flight()
    s0, s1 = sub(c.eg, "src", 0), sub(c.eg, "src", 1)
    c.step(A.TriggerCheckpoint())
    c.step(A.TriggerCheckpoint())
    c.step(A.DeliverCheckpointTrigger(s0, 2))
    older = A.DeliverCheckpointTrigger(s0, 1)
    unit = A.KINDS[A.DeliverCheckpointTrigger]
    assert unit.footprint(c, older) == frozenset({("task", s0)})
    assert unit.footprint(c, A.DeliverCheckpointTrigger(s1, 1)) is None  # taken: it acknowledges
    d = c.copy()
    d.step(A.CheckpointTimeout(2))
    cancelled = A.DeliverCheckpointTrigger(s1, 2)
    assert unit.footprint(d, cancelled) == frozenset(
        {("task", s1), ("channel", chan(d.eg, ("src", 1), ("win", 0)))})
    for state, a in ((c, older), (d, cancelled)):
        emit = A.SourceEmit(s1 if a is older else s0)
        assert unit.footprint(state, a).isdisjoint(A.KINDS[A.SourceEmit].footprint(state, emit))
        ab, ba = state.copy(), state.copy()
        ab.step(a)
        ab.step(emit)
        ba.step(emit)
        ba.step(a)
        assert ab.fingerprint() == ba.fingerprint()
