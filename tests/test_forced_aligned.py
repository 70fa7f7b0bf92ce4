"""Edges that cannot carry unaligned checkpoints: Flink 2.3 sends their barriers aligned.

``StreamPartitioner.isSupportsUnalignedCheckpoint`` is false for the pointwise partitioners
(forward, rescale) and for broadcast; ``StreamGraphGenerator.generate`` then clears
``StreamEdge.supportsUnalignedCheckpoints`` on every input edge of the consuming node, and
``RecordWriterOutput.broadcastEvent`` turns a barrier of an unaligned (or timeoutable)
checkpoint on such an edge into a FORCED_ALIGNED one behind the data
(``CheckpointOptions.withUnalignedUnsupported``). The consumer aligns it and then takes the
checkpoint as configured (``withUnalignedSupported`` in
``SubtaskCheckpointCoordinatorImpl.checkpointState``): its own outputs get unaligned barriers.

The job of the scenarios:

    srcA(0) ──broadcast──► d(0), d(1)  ─rebalance─► out(0)
    srcB(0) ──hash──────►  d(0), d(1)

d has a broadcast input, so *both* its inputs are forced aligned; d -> out is not.
"""

from __future__ import annotations

import attrs
import pytest

from model.cluster import drain_choice
from model.events import CheckpointBarrier
from model.jobgraph import build_job_graph
from model.streamgraph import PARTITIONERS, StreamGraphBuilder, UNALIGNED_UNSUPPORTED_PARTITIONERS
from tests.scenario_util import A, Environment, JobInput, RuntimeConfig, chan, deliver_until_empty, drain, fresh, kinds, \
    oracle_diffs, records, sub


def _job(broadcast: bool = True):
    b = StreamGraphBuilder("forced")
    b.source("srcA", parallelism=1)
    b.source("srcB", parallelism=1)
    b.map("d", "srcA", partitioner="broadcast" if broadcast else "rebalance", parallelism=2)
    b.connect("srcB", "d", partitioner="hash")
    b.sink("out", "d", sink_kind="two_phase_commit", partitioner="rebalance", parallelism=1)
    return b.build()


INPUT = JobInput({"srcA": ((("a", 1, 0),),), "srcB": ((("b", 1, 1),),)})


def _edge_support(g) -> dict:
    return {(e.source_operator, e.target_operator): e.supports_unaligned_checkpoints for e in build_job_graph(g).edges}


def test_every_input_of_a_node_with_a_pointwise_or_broadcast_input_is_forced_aligned():
    assert _edge_support(_job()) == {("srcA", "d"): False, ("srcB", "d"): False, ("d", "out"): True}
    assert _edge_support(_job(broadcast=False)) == {("srcA", "d"): True, ("srcB", "d"): True, ("d", "out"): True}
    # each partitioner alone, on a non-chained edge (chaining is off so that forward stays an edge)
    for p in PARTITIONERS:  # each partitioner alone, on an edge that chaining off keeps an edge
        b = StreamGraphBuilder("one", chaining_enabled=False)
        b.source("s", parallelism=2)
        b.map("m", "s", partitioner=p, parallelism=2)
        assert _edge_support(b.build()) == {("s", "m"): p not in UNALIGNED_UNSUPPORTED_PARTITIONERS}, p
    assert set(UNALIGNED_UNSUPPORTED_PARTITIONERS) == {"forward", "rescale", "broadcast"}


def _start(config):
    g = _job()
    c = fresh(g, INPUT, config)
    eg = c.eg
    sa, sb = sub(eg, "srcA", 0), sub(eg, "srcB", 0)
    c.step(A.SourceEmit(sa))
    c.step(A.SourceEmit(sb))
    c.step(A.TriggerCheckpoint())
    return g, c


def test_unaligned_checkpoint_barrier_goes_behind_the_data_then_unaligned_again_downstream():
    g, c = _start(RuntimeConfig(unaligned=True))
    eg = c.eg
    d0 = sub(eg, "d", 0)
    x0, x1 = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("srcA", 0), ("d", 1))
    y0, y1 = chan(eg, ("srcB", 0), ("d", 0)), chan(eg, ("srcB", 0), ("d", 1))
    o0 = chan(eg, ("d", 0), ("out", 0))
    # 1. the sources' barriers are FORCED_ALIGNED and queue behind the records they follow
    assert kinds(c.channels[x0]) == kinds(c.channels[x1]) == ["rec", "FA1"]
    assert sorted([kinds(c.channels[y0]), kinds(c.channels[y1])]) == [["FA1"], ["rec", "FA1"]]
    fa = c.channels[x0][-1]
    assert fa == CheckpointBarrier(1, fa.timestamp, forced_aligned=True)
    # 2. d(0) forwards srcA's record, then aligns: the forced barrier blocks its channel
    c.step(A.Deliver(x0))
    assert kinds(c.channels[o0]) == ["rec"]
    c.step(A.Deliver(x0))
    assert c.net.blocked[x0] and c.tasks[d0].handler.pending
    assert c.tasks[d0].persisting == {}  # aligned: nothing is persisted as input channel state
    # 3. the last forced barrier completes the alignment; d(0) takes the checkpoint unaligned:
    #    its barrier to out overtakes what d(0) already sent
    deliver_until_empty(c, y0)
    assert kinds(c.channels[o0])[0] == "UC1" and "rec" in kinds(c.channels[o0])
    assert c.channels[o0][0] == CheckpointBarrier(1, fa.timestamp, unaligned=True)
    overtaken = tuple(records(c.channels[o0]))
    # 4. the completed checkpoint: d(0)'s overtaken output as output channel state, no input
    #    channel state anywhere (its inputs were aligned), and nothing for the forced edges
    while 1 not in c.completed_ids:
        c.step(drain_choice(c))
    states = c.coordinator.store.get_latest_checkpoint().task_states
    forced_channels = {x0, x1, y0, y1}
    for snap in states.values():
        assert snap.input_channel_state == {}
        assert forced_channels.isdisjoint(snap.output_channel_state)
    assert states[d0].output_channel_state[o0] == overtaken
    drain(c)
    assert oracle_diffs(g, INPUT, c) == {}


def test_without_a_forced_edge_the_same_barrier_overtakes_the_data():
    """The contrast: with rebalance instead of broadcast, every edge supports unaligned
    checkpoints and the sources' barriers are priority events at the head."""
    g = _job(broadcast=False)
    c = fresh(g, INPUT, RuntimeConfig(unaligned=True))
    eg = c.eg
    c.step(A.SourceEmit(sub(eg, "srcA", 0)))
    c.step(A.TriggerCheckpoint())
    heads = [kinds(c.channels[chan(eg, ("srcA", 0), ("d", k))]) for k in (0, 1)]
    assert sorted(heads) == [["UC1"], ["UC1", "rec"]]


def test_timeoutable_barrier_is_forced_aligned_and_never_times_out():
    """With an aligned-checkpoint timeout the sources send timeoutable barriers; on a forced edge
    they arrive FORCED_ALIGNED (``isTimeoutable()`` false): no alignment timer, and d's own
    barrier downstream is timeoutable again."""
    g, c = _start(RuntimeConfig(unaligned=True, aligned_checkpoint_timeout=1))
    eg = c.eg
    d0 = sub(eg, "d", 0)
    x0, y0 = chan(eg, ("srcA", 0), ("d", 0)), chan(eg, ("srcB", 0), ("d", 0))
    o0 = chan(eg, ("d", 0), ("out", 0))
    assert kinds(c.channels[x0]) == ["rec", "FA1"]
    deliver_until_empty(c, x0)
    assert c.tasks[d0].handler.pending and c.tasks[d0].timer is None
    for _ in range(5):  # time passes: a timeoutable alignment would have turned unaligned by now
        c.now += 1
    assert not [a for a in c.enabled_actions() if type(a).__name__ == "AlignmentTimeout"]
    deliver_until_empty(c, y0)
    out_barrier = [e for e in c.channels[o0] if isinstance(e, CheckpointBarrier)]
    assert out_barrier == [CheckpointBarrier(1, out_barrier[0].timestamp, timeoutable=True)]
    drain(c)
    assert 1 in c.completed_ids and oracle_diffs(g, INPUT, c) == {}


def test_savepoint_barrier_is_unchanged_on_a_forced_edge():
    """A savepoint is aligned already (``needsChannelState()`` false): ``withUnalignedUnsupported``
    leaves it as it is."""
    g = _job()
    c = fresh(g, INPUT, RuntimeConfig(unaligned=True), environment=Environment(trigger_savepoints=True))
    eg = c.eg
    c.step(A.SourceEmit(sub(eg, "srcA", 0)))
    c.step(A.TriggerCheckpoint(savepoint=True))
    x0 = chan(eg, ("srcA", 0), ("d", 0))
    assert kinds(c.channels[x0]) == ["rec", "AC1"]
    assert c.channels[x0][-1].savepoint and not c.channels[x0][-1].forced_aligned


@pytest.mark.parametrize("b", [CheckpointBarrier(3, 7, unaligned=True), CheckpointBarrier(3, 7, timeoutable=True)])
def test_with_unaligned_unsupported(b):
    assert b.with_unaligned_unsupported() == CheckpointBarrier(3, 7, forced_aligned=True)
    aligned = CheckpointBarrier(3, 7)
    assert aligned.with_unaligned_unsupported() is aligned


def _judged_until_completed(c, tamper=None):
    """Step ``c`` with the drain policy until checkpoint 1 completes; return what
    ``no_channel_state_on_forced_aligned_edges`` says right after that step."""
    from types import SimpleNamespace

    from spec.checkpoint import no_channel_state_on_forced_aligned_edges

    if tamper is not None:
        tamper(c)
    while 1 not in c.completed_ids:
        c.step(drain_choice(c))
    return no_channel_state_on_forced_aligned_edges(SimpleNamespace(cluster=c))


def test_the_invariant_holds_on_forced_edges_and_names_channel_state_found_there():
    """Safe: nothing to report. With the sources' outputs no longer forced (their barriers
    overtake the data, as before Flink disabled unaligned checkpoints on such edges), the
    overtaken record becomes output channel state of a broadcast edge, and the invariant names
    the channel and the edge."""
    g, safe = _start(RuntimeConfig(unaligned=True))
    assert _judged_until_completed(safe) is None

    def unforce(c):  # re-emit checkpoint 1's barriers as a runtime without the forcing would have
        for t in c.tasks:
            t.plan = attrs.evolve(t.plan, forced_aligned_outputs=frozenset())

    g = _job()
    c = fresh(g, INPUT, RuntimeConfig(unaligned=True))
    unforce(c)
    eg = c.eg
    c.step(A.SourceEmit(sub(eg, "srcA", 0)))
    c.step(A.TriggerCheckpoint())
    x0 = chan(eg, ("srcA", 0), ("d", 0))
    assert kinds(c.channels[x0]) == ["UC1", "rec"]
    v = _judged_until_completed(c)
    assert v is not None and v.invariant == "no_channel_state_on_forced_aligned_edges"
    assert "srcA -> d (broadcast)" in v.message and "output channel state" in v.message
