"""The ExecutionGraph (model/executiongraph.py) field by field: every Subtask, InputChannel,
ResultPartition and InputGate of small graphs asserted whole, the lookups, and the pointwise
ranges against ``EdgeManagerBuildUtil.connectPointwise``'s own loops for every pair of
parallelisms up to 8."""

import networkx as nx
import pytest

from model.executiongraph import (InputChannel, InputGate, ResultPartition, Subtask, build_execution_graph,
                                  compile_stream_graph, pointwise_consumers, pointwise_producers)
from model.jobgraph import compile_job_graph
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph


def _connect_pointwise(p, c):
    """``connectPointwise``: consumer -> producers and producer -> consumers, by Flink's loops."""
    producers = {i: [] for i in range(c)}
    consumers = {k: [] for k in range(p)}
    if p == c:
        for i in range(p):
            producers[i].append(i)
            consumers[i].append(i)
    elif p > c:
        for index in range(c):
            start, end = index * p // c, (index + 1) * p // c
            for k in range(start, end):
                producers[index].append(k)
                consumers[k].append(index)
    else:
        for partition_num in range(p):
            start = (partition_num * c + p - 1) // p
            end = ((partition_num + 1) * c + p - 1) // p
            for i in range(start, end):
                consumers[partition_num].append(i)
                producers[i].append(partition_num)
    return producers, consumers


@pytest.mark.parametrize("p", range(1, 9))
def test_pointwise_ranges_are_connect_pointwise(p):
    for c in range(1, 9):
        producers, consumers = _connect_pointwise(p, c)
        for i in range(c):
            assert list(pointwise_producers(p, c, i)) == producers[i], (p, c, i)
        for k in range(p):
            assert list(pointwise_consumers(p, c, k)) == consumers[k], (p, c, k)


def _job(p, c, partitioner, mode="pipelined", maxp=None):
    ops = (OperatorSpec(name="up", kind="source", parallelism=p),
           OperatorSpec(name="down", kind="map", parallelism=c, max_parallelism=maxp))
    return compile_stream_graph(StreamGraph(name="w", operators=ops, edges=(
        EdgeSpec(source="up", target="down", partitioner=partitioner, exchange_mode=mode),)))


def test_the_graph_keeps_its_job_graph_and_stream_graph():
    ops = (OperatorSpec(name="up", kind="source", parallelism=2), OperatorSpec(name="down", kind="map", parallelism=2))
    sg = StreamGraph(name="k", operators=ops, edges=(EdgeSpec(source="up", target="down", partitioner="hash"),))
    jg = compile_job_graph(sg)
    eg = build_execution_graph(jg)
    assert (eg.stream_graph, eg.job_graph, type(eg.graph)) == (jg.stream_graph, jg, nx.MultiDiGraph)
    assert eg.first_subtask == {"up": 0, "down": 2}
    assert sorted(eg.graph.edges(keys=True)) == [(0, 2, 0), (0, 3, 2), (1, 2, 1), (1, 3, 3)]


def test_a_fan_out_graph_whole():
    """up (p=2) --rescale--> down (p=3, maxP 7): up0 feeds down0, down1; up1 feeds down2."""
    eg = _job(2, 3, "rescale", maxp=7)
    assert (eg.stream_graph.name, type(eg.job_graph).__name__, type(eg.graph).__name__) == \
        ("w", "JobGraph", "MultiDiGraph")
    assert eg.subtasks == (
        Subtask(id=0, job_vertex="up", subtask_index=0, parallelism=2),
        Subtask(id=1, job_vertex="up", subtask_index=1, parallelism=2),
        Subtask(id=2, job_vertex="down", subtask_index=0, parallelism=3),
        Subtask(id=3, job_vertex="down", subtask_index=1, parallelism=3),
        Subtask(id=4, job_vertex="down", subtask_index=2, parallelism=3),
    )
    assert eg.channels == (
        InputChannel(id=0, job_edge=0, producer=0, consumer=2, subpartition=0, gate=0, gate_channel=0),
        InputChannel(id=1, job_edge=0, producer=0, consumer=3, subpartition=1, gate=0, gate_channel=0),
        InputChannel(id=2, job_edge=0, producer=1, consumer=4, subpartition=0, gate=0, gate_channel=0),
    )
    assert eg.partitions == (
        (ResultPartition(job_edge=0, producer=0, partitioner="rescale", channels=(0, 1),
                         consumer_max_parallelism=7, blocking=False),),
        (ResultPartition(job_edge=0, producer=1, partitioner="rescale", channels=(2,),
                         consumer_max_parallelism=7, blocking=False),),
        (), (), (),
    )
    assert eg.input_gates == (
        (), (),
        (InputGate(job_edge=0, consumer=2, channels=(0,)),),
        (InputGate(job_edge=0, consumer=3, channels=(1,)),),
        (InputGate(job_edge=0, consumer=4, channels=(2,)),),
    )
    assert eg.first_subtask == {"up": 0, "down": 2}
    assert sorted(eg.graph.nodes) == [0, 1, 2, 3, 4]
    assert sorted(eg.graph.edges(keys=True)) == [(0, 2, 0), (0, 3, 1), (1, 4, 2)]
    assert repr(eg) == "<ExecutionGraph 'w': 5 subtasks, 3 channels>"
    assert eg.stream_graph.name == "w" and eg.job_graph.stream_graph is eg.stream_graph


def test_a_fan_in_blocking_graph_whole():
    """up (p=3) --rescale, blocking--> down (p=2): down0 reads up0, down1 reads up1 and up2."""
    eg = _job(3, 2, "rescale", mode="blocking")
    assert [(c.id, c.producer, c.consumer, c.subpartition, c.gate, c.gate_channel) for c in eg.channels] == [
        (0, 0, 3, 0, 0, 0), (1, 1, 4, 0, 0, 0), (2, 2, 4, 0, 0, 1)]
    assert [p for s in range(3) for p in eg.partitions[s]] == [
        ResultPartition(job_edge=0, producer=k, partitioner="rescale", channels=(k,),
                        consumer_max_parallelism=128, blocking=True) for k in range(3)]
    assert eg.input_gates[3] == (InputGate(job_edge=0, consumer=3, channels=(0,)),)
    assert eg.input_gates[4] == (InputGate(job_edge=0, consumer=4, channels=(1, 2)),)
    assert eg.subtasks_of("up") == (0, 1, 2) and eg.subtasks_of("down") == (3, 4)


def test_all_to_all_channels_by_consumer_then_producer():
    eg = _job(2, 2, "hash", maxp=16)
    assert [(c.id, c.producer, c.consumer, c.subpartition, c.gate, c.gate_channel) for c in eg.channels] == [
        (0, 0, 2, 0, 0, 0), (1, 1, 2, 0, 0, 1), (2, 0, 3, 1, 0, 0), (3, 1, 3, 1, 0, 1)]
    assert [p.channels for s in (0, 1) for p in eg.partitions[s]] == [(0, 2), (1, 3)]
    assert [g.channels for s in (2, 3) for g in eg.input_gates[s]] == [(0, 1), (2, 3)]
    assert eg.channels_of_edge(0) == eg.channels and eg.channels_of_edge(1) == ()


def test_two_edges_into_one_consumer_and_the_lookups():
    """a (p=1) --rebalance--> k (p=2) <--hash-- b (p=2): gate 0 from edge 0, gate 1 from edge 1."""
    ops = (OperatorSpec(name="a", kind="source", parallelism=1), OperatorSpec(name="b", kind="source", parallelism=2),
           OperatorSpec(name="k", kind="map", parallelism=2))
    eg = compile_stream_graph(StreamGraph(name="two", operators=ops, edges=(
        EdgeSpec(source="a", target="k", partitioner="rebalance"),
        EdgeSpec(source="b", target="k", partitioner="hash"))))
    k0, k1 = eg.subtasks_of("k")
    a0 = eg.subtask_id("a", 0)
    b0, b1 = eg.subtask_id("b", 0), eg.subtask_id("b", 1)
    assert [(g.job_edge, [eg.channels[c].producer for c in g.channels]) for g in eg.input_gates[k0]] == \
        [(0, [a0]), (1, [b0, b1])]
    assert [(ch.gate, ch.gate_channel) for g in eg.input_gates[k1] for ch in map(eg.channels.__getitem__, g.channels)] \
        == [(0, 0), (1, 0), (1, 1)]
    assert [ch.id for ch in eg.channels_of_edge(1)] == [c for s in (k0, k1) for c in eg.input_gates[s][1].channels]
    assert len(eg.channels_of_edge(0)) == 2 and all(ch.job_edge == 0 for ch in eg.channels_of_edge(0))
    for bad in (-1, 2):
        with pytest.raises(IndexError, match=rf"'k' has subtasks 0..1, not {bad}"):
            eg.subtask_id("k", bad)
    assert eg.subtask_id("k", 0) == k0 and eg.subtask_id("k", 1) == k1
    assert eg.subtasks[k1].name == "k (2/2)" and eg.subtasks[a0].name == "a (1/1)"


def test_a_single_vertex_graph_whole():
    """A job of one vertex (source and sink chained, p=3): three subtasks, no channel."""
    ops = (OperatorSpec(name="src", kind="source", parallelism=3),
           OperatorSpec(name="out", kind="sink", parallelism=3, sink_kind="upsert"))
    eg = compile_stream_graph(StreamGraph(name="one", operators=ops, edges=(
        EdgeSpec(source="src", target="out", partitioner="forward"),)))
    (vid,) = eg.job_graph.vertices
    assert eg.first_subtask == {vid: 0}
    assert eg.subtasks_of(vid) == (0, 1, 2) and eg.subtask_id(vid, 2) == 2
    assert [(s.id, s.subtask_index, s.parallelism) for s in eg.subtasks] == [(0, 0, 3), (1, 1, 3), (2, 2, 3)]
    assert eg.channels == () and eg.partitions == ((), (), ()) and eg.input_gates == ((), (), ())
    assert repr(eg) == "<ExecutionGraph 'one': 3 subtasks, 0 channels>"


def test_three_inputs_give_gates_zero_one_two():
    """a, b, c (p=1 each) --rebalance--> k (p=2): k's gates 0, 1, 2 in JobEdge order."""
    ops = tuple(OperatorSpec(name=n, kind="source", parallelism=1) for n in "abc") + (
        OperatorSpec(name="k", kind="map", parallelism=2),)
    eg = compile_stream_graph(StreamGraph(name="three", operators=ops, edges=tuple(
        EdgeSpec(source=n, target="k", partitioner="rebalance") for n in "abc")))
    for s in eg.subtasks_of("k"):
        assert [g.job_edge for g in eg.input_gates[s]] == [0, 1, 2]
        assert [(eg.channels[c].gate, eg.channels[c].gate_channel) for g in eg.input_gates[s] for c in g.channels] \
            == [(0, 0), (1, 0), (2, 0)]
