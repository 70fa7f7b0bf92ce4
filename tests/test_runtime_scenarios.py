"""Hand-written scenarios for every mechanism of the runtime model (issue 3.10).

Each scenario draws its topology, looks channel and subtask ids up in the ExecutionGraph
(``scenario_util.chan``/``sub``), drives the Cluster with explicit actions (numbered steps)
and asserts what Flink does. The last part runs seeded random walks for every checkpoint
mode and sink kind and compares the drained output with the p=1 oracle.
"""

from __future__ import annotations

import pytest

from model import actions as A
from model.cluster import ActionNotEnabled, JobInput, RuntimeConfig, drain
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
    c = fresh(g, inp, RuntimeConfig(channel_capacity=8))
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
    c = fresh(g, inp, RuntimeConfig(channel_capacity=2))
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
    assert [type(n).__name__ for n in c.tasks[s0].nodes] == ["MapNode", "FilterNode"]
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
    inp = JobInput({"src": ((("a", 1, 11), ("a", 1, 31), ("a", 1, 51)),
                            (("b", 1, 21), ("b", 1, 22), ("b", 1, 45)))})
    c = fresh(g, inp, RuntimeConfig(channel_capacity=8))
    eg = c.eg
    s0, s1, w = sub(eg, "src", 0), sub(eg, "src", 1), sub(eg, "win", 0)
    x, y = chan(eg, ("src", 0), ("win", 0)), chan(eg, ("src", 1), ("win", 0))
    valve = c.tasks[w].valve
    # 1. src0: a@11, wm 10; src1: b@21, wm 20 -> the valve emits min = 10
    _emit_with_watermark(c, s0)
    _emit_with_watermark(c, s1)
    deliver_until_empty(c, x)
    assert valve.last_output_watermark == 10  # y's channel still at MIN? no: min over aligned
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
    # the record b@45 arrived after the output watermark 50 passed its window [40, 50): late
    assert [r[1:] for r in c.late] == [("b", 1, 45)]
    drain(c)
    assert valve.channel_is_aligned(1) or c.tasks[w].status == "FINISHED"


def test_window_fires_when_max_timestamp_reaches_the_watermark():
    """Window [0, 10) has maxTimestamp 9: watermark 8 does not fire it, watermark 9 does.

        src(0) ──hash──► win(0)→out(0)     (tumbling 10, count)
    """
    g = _two_sources_into_one(parallelism=1)
    inp = JobInput({"src": ((("a", 1, 5), ("a", 1, 9), ("a", 1, 10)),)})
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
    inp = JobInput({"src": ((("a", 1, 5),), (("b", 1, 15),))})
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
    inp = JobInput({"src": ((("a", 1, 6),), (("b", 1, 16),), (("c", 1, 21),))})
    # Flink 2.3.0 (the model's default valve)
    c = fresh(g, inp, RuntimeConfig())
    _three_channel_idle_sequence(c)
    w = sub(c.eg, "win", 0)
    assert c.tasks[w].valve.last_output_watermark == 15
    assert c.external.committed_records() == [("a", 1, 9)]
    # FLINK-40475: the same scenario with the fixed valve constructed directly in the task
    c2 = fresh(g, inp, RuntimeConfig())
    t = c2.tasks[w]
    t.valve = StatusWatermarkValve(len(t.input_channels), t, flink_40475=True)
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


class _RecordingContext:
    """The barrier handler's task context, recording what the handler asks for."""

    def __init__(self, n):
        self.barrier_channels = list(range(n))
        self.log = []

    def block(self, ch):
        self.log.append(("block", ch))

    def resume(self, ch):
        self.log.append(("resume", ch))

    def resume_all(self):
        self.log.append(("resume_all",))

    def trigger(self, b, unaligned):
        self.log.append(("trigger", b.id, unaligned))

    def abort(self, cid, reason):
        self.log.append(("abort", cid, reason))

    def start_persisting(self, cid, chans):
        self.log.append(("persist", cid, tuple(chans)))

    def stop_persisting(self, ch):
        self.log.append(("stop_persisting", ch))

    def stop_persisting_all(self):
        self.log.append(("stop_persisting_all",))

    def channel_state_complete(self, cid):
        self.log.append(("channel_state_complete", cid))

    def register_timer(self, cid, deadline):
        self.log.append(("timer", cid, deadline))


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
    h = SingleCheckpointBarrierHandler(ctx, 3, "aligned")
    # 1. barrier 1 on x
    h.process_barrier(CheckpointBarrier(1, 0), 0, 1)
    assert h.pending and h.current_id == 1
    # 2. barrier 2 on y: checkpoint 1 is aborted as subsumed (the task forwards a cancel marker)
    h.process_barrier(CheckpointBarrier(2, 1), 1, 2)
    assert ("abort", 1, DECLINED_SUBSUMED) in ctx.log and h.current_id == 2
    # 3. the late cancel of checkpoint 1 on z: ignored
    n = len(ctx.log)
    h.process_cancellation(1)
    assert ctx.log[n:] == [] and h.pending
    # 4. late barrier 1 on z: obsolete, only resumes z
    h.process_barrier(CheckpointBarrier(1, 0), 2, 3)
    assert ctx.log[n:] == [("resume", 2)]
    # 5. barrier 2 on x and z: checkpoint 2 triggers (aligned)
    h.process_barrier(CheckpointBarrier(2, 1), 0, 4)
    h.process_barrier(CheckpointBarrier(2, 1), 2, 5)
    assert ("trigger", 2, False) in ctx.log and not h.pending


def test_cancel_marker_aborts_alignment_and_late_cancel_is_ignored_in_cluster():
    """A cancel marker of the current checkpoint aborts alignment and unblocks; a later cancel
    of an *older* checkpoint does not touch the newer one.

        srcA(0) ──x──┐
                     ├──► d(0)→out(0)        d = map over the union of srcA and srcB
        srcB(0) ──y──┘                       (end of input on y aborts 1 when FLIP-147 is off)
    """
    b = StreamGraphBuilder("cancel")
    b.source("srcA", parallelism=1)
    b.source("srcB", parallelism=2)
    b.map("m", "srcB", partitioner="rebalance", parallelism=1)
    b.map("d", ["srcA", "m"], partitioner="rebalance", parallelism=1)
    b.sink("out", "d", sink_kind="two_phase_commit", parallelism=1)
    g = b.build()
    inp = JobInput({"srcA": ((("a", 1, 0),),), "srcB": ((("b", 1, 1),), (("c", 1, 2),))})
    c = fresh(g, inp, RuntimeConfig(checkpoints_after_tasks_finish=False, max_concurrent_checkpoints=2))
    aborts = _record_aborts(c)
    eg = c.eg
    a, b0, b1, m, d = (sub(eg, "srcA", 0), sub(eg, "srcB", 0), sub(eg, "srcB", 1),
                       sub(eg, "m", 0), sub(eg, "d", 0))
    x, y = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("m", 0), ("d", 0))
    m0, m1 = chan(eg, ("srcB", 0), ("m", 0)), chan(eg, ("srcB", 1), ("m", 0))
    # 1. srcB(1) emits and ends; checkpoint 1: barriers from srcA, srcB(0)
    c.step(A.SourceEmit(b1))
    c.step(A.SourceEnd(b1))
    c.step(A.TriggerCheckpoint())
    # 2. d aligns on x (blocked)
    c.step(A.Deliver(x))
    assert c.blocked[x]
    # 3. m: barrier 1 on m0 blocks; srcB(1)'s EOP on m1 during alignment aborts 1 (FLIP-147 off):
    #    m forwards CancelCheckpointMarker(1) to d
    c.step(A.Deliver(m0))
    deliver_until_empty(c, m1)
    assert (1, DECLINED_INPUT_END_OF_STREAM, m) in aborts
    assert "cancel1" in kinds(c.channels[y])
    # 4. checkpoint 2 is triggered while d still holds x blocked for 1
    c.step(A.TriggerCheckpoint())
    # 5. d reads y up to the cancel marker: alignment of 1 aborted, x unblocked
    while "cancel1" in kinds(c.channels[y]):
        c.step(A.Deliver(y))
    assert not c.blocked[x]
    assert d not in [t for (_i, _r, t) in aborts if _i == 2]
    # 6. everything drains; checkpoint 2 completes; the output is the oracle's
    drain(c)
    assert 2 in c.completed_ids
    assert oracle_diffs(g, inp, c) == {}
