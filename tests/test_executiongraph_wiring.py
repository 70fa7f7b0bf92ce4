"""ExecutionGraph wiring: EdgeManagerBuildUtil.connectPointwise / connectAllToAll and
VertexInputInfoComputationUtils.computeConsumedSubpartitionRange (static graphs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from model.executiongraph import compile_stream_graph
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph
from properties.jobgraphs import stream_graphs


def two_vertex_job(p, c, partitioner, mode="pipelined", maxp=None):
    ops = (OperatorSpec(name="up", kind="source", parallelism=p),
           OperatorSpec(name="down", kind="map", parallelism=c, max_parallelism=maxp))
    return compile_stream_graph(StreamGraph(name="w", operators=ops, edges=(
        EdgeSpec(source="up", target="down", partitioner=partitioner, exchange_mode=mode),)))


def wiring(eg):
    """{(producer index, subpartition): consumer index} and consumer -> producers in gate order."""
    st = eg.subtasks
    by_sub = {(st[ch.producer].subtask_index, ch.subpartition): st[ch.consumer].subtask_index for ch in eg.channels}
    gates = {}
    for s in eg.subtasks_of("down"):
        (gate,) = eg.input_gates[s]
        gates[st[s].subtask_index] = [st[eg.channels[c].producer].subtask_index for c in gate.channels]
    return by_sub, gates


def test_pointwise_one_to_one():
    """
        up0 ─► down0
        up1 ─► down1        forward, p 3 -> 3: channel i connects up i to down i, subpartition 0
        up2 ─► down2
    """
    by_sub, gates = wiring(two_vertex_job(3, 3, "rescale"))
    assert by_sub == {(0, 0): 0, (1, 0): 1, (2, 0): 2}
    assert gates == {0: [0], 1: [1], 2: [2]}


def test_pointwise_fan_in_3_to_2():
    """
        up0 ─────► down0          consumer i reads producers [i*3/2, (i+1)*3/2):
        up1 ──┐                   down0: [0, 1) = {0};  down1: [1, 3) = {1, 2}
        up2 ──┴──► down1          each producer has one subpartition (0)
    """
    by_sub, gates = wiring(two_vertex_job(3, 2, "rescale"))
    assert gates == {0: [0], 1: [1, 2]}
    assert by_sub == {(0, 0): 0, (1, 0): 1, (2, 0): 1}


def test_pointwise_fan_in_5_to_2():
    """
        up0, up1       ──► down0      down0: [0*5/2, 1*5/2) = [0, 2)
        up2, up3, up4  ──► down1      down1: [1*5/2, 2*5/2) = [2, 5)
    """
    by_sub, gates = wiring(two_vertex_job(5, 2, "rescale"))
    assert gates == {0: [0, 1], 1: [2, 3, 4]}
    assert all(sub == 0 for (_, sub) in by_sub)


def test_pointwise_fan_out_2_to_3():
    """
        up0 ──[0]──► down0     producer k feeds [ceil(k*3/2), ceil((k+1)*3/2)):
            └─[1]──► down1     up0: [0, 2) = {0, 1};  up1: [2, 3) = {2}
        up1 ──[0]──► down2     consumer i reads subpartition i % (number of consumers of its producer)
    """
    by_sub, gates = wiring(two_vertex_job(2, 3, "rescale"))
    assert by_sub == {(0, 0): 0, (0, 1): 1, (1, 0): 2}
    assert gates == {0: [0], 1: [0], 2: [1]}


def test_pointwise_fan_out_2_to_5():
    """
        up0 ──[0]► down0, [1]► down1, [2]► down2      up0: [0, ceil(5/2)=3)
        up1 ──[1]► down3, [0]► down4                  up1: [3, 5); 3 % 2 = 1, 4 % 2 = 0
    Flink's static-graph subpartition choice (consumerSubtaskIndex % numConsumers) makes
    down3 read subpartition 1 and down4 subpartition 0.
    """
    eg = two_vertex_job(2, 5, "rescale")
    by_sub, gates = wiring(eg)
    assert by_sub == {(0, 0): 0, (0, 1): 1, (0, 2): 2, (1, 1): 3, (1, 0): 4}
    assert gates == {0: [0], 1: [0], 2: [0], 3: [1], 4: [1]}
    up1 = eg.subtask_id("up", 1)
    (part,) = eg.partitions[up1]
    assert [eg.subtasks[eg.channels[c].consumer].subtask_index for c in part.channels] == [4, 3]


@pytest.mark.parametrize("partitioner", ["hash", "rebalance", "broadcast"])
def test_all_to_all_2_to_3(partitioner):
    """
        up0 ─┬─[0]► down0      every producer has one subpartition per consumer:
             ├─[1]► down1      subpartition j feeds consumer j; each consumer's gate lists
             └─[2]► down2      the producers in index order
        up1 ─┴─ (same)
    """
    eg = two_vertex_job(2, 3, partitioner, maxp=64)
    by_sub, gates = wiring(eg)
    assert by_sub == {(k, j): j for k in range(2) for j in range(3)}
    assert gates == {j: [0, 1] for j in range(3)}
    for s in eg.subtasks_of("up"):
        (part,) = eg.partitions[s]
        assert part.partitioner == partitioner and part.consumer_max_parallelism == 64 and not part.blocking
        assert [eg.channels[c].subpartition for c in part.channels] == [0, 1, 2]
    assert eg.graph.number_of_edges() == 6


def test_dense_numbering_and_lookup():
    """
        up (p=2) ──rebalance, blocking──► down (p=3)
    subtasks 0,1 are up, 2..4 are down; channels numbered by consumer then gate channel.
    """
    eg = two_vertex_job(2, 3, "rebalance", mode="blocking")
    assert [(s.id, s.job_vertex, s.subtask_index) for s in eg.subtasks] == [
        (0, "up", 0), (1, "up", 1), (2, "down", 0), (3, "down", 1), (4, "down", 2)]
    assert eg.subtasks_of("down") == (2, 3, 4) and eg.subtask_id("down", 2) == 4
    assert [(c.id, c.producer, c.consumer, c.gate_channel) for c in eg.channels] == [
        (0, 0, 2, 0), (1, 1, 2, 1), (2, 0, 3, 0), (3, 1, 3, 1), (4, 0, 4, 0), (5, 1, 4, 1)]
    assert all(p.blocking for s in (0, 1) for p in eg.partitions[s])
    assert eg.subtasks[3].name == "down (2/3)"
    with pytest.raises(IndexError):
        eg.subtask_id("down", 3)


def test_two_inputs_give_two_gates_in_job_edge_order():
    """
        a (p=2) ──hash──────┐
                            ├──► k (keyed, p=2): gate 0 from a (edge 0), gate 1 from b (edge 1)
        b (p=1) ──hash──────┘
    """
    ops = (OperatorSpec(name="a", kind="source", parallelism=2), OperatorSpec(name="b", kind="source"),
           OperatorSpec(name="k", kind="keyed_aggregate", parallelism=2, aggregate="sum"))
    eg = compile_stream_graph(StreamGraph(operators=ops, edges=(
        EdgeSpec(source="a", target="k", partitioner="hash"), EdgeSpec(source="b", target="k", partitioner="hash"))))
    for s in eg.subtasks_of("k"):
        g0, g1 = eg.input_gates[s]
        assert (g0.job_edge, g1.job_edge) == (0, 1)
        assert [eg.subtasks[eg.channels[c].producer].job_vertex for c in g0.channels] == ["a", "a"]
        assert [eg.channels[c].gate for c in g1.channels] == [1]


@settings(max_examples=150, deadline=None)
@given(stream_graphs())
def test_wiring_properties_of_generated_graphs(g):
    eg = compile_stream_graph(g)
    jg = eg.job_graph
    assert [ch.id for ch in eg.channels] == list(range(len(eg.channels)))
    assert [s.id for s in eg.subtasks] == list(range(len(eg.subtasks)))
    assert eg.graph.number_of_edges() == len(eg.channels)
    for e in jg.edges:
        p, c = jg.vertices[e.source_vertex].parallelism, jg.vertices[e.target_vertex].parallelism
        chans = eg.channels_of_edge(e.index)
        assert len(chans) == (p * c if e.distribution == "ALL_TO_ALL" else max(p, c))
        # every producer feeds >= 1 consumer, every consumer reads >= 1 producer, no pair twice
        assert {eg.subtasks[ch.producer].subtask_index for ch in chans} == set(range(p))
        assert {eg.subtasks[ch.consumer].subtask_index for ch in chans} == set(range(c))
        assert len({(ch.producer, ch.consumer) for ch in chans}) == len(chans)
        for k in eg.subtasks_of(e.source_vertex):
            (part,) = [x for x in eg.partitions[k] if x.job_edge == e.index]
            assert [eg.channels[i].subpartition for i in part.channels] == list(range(len(part.channels)))
            assert all(eg.channels[i].producer == k for i in part.channels)
            if e.distribution == "POINTWISE":  # producers feed contiguous consumer ranges
                cons = sorted(eg.subtasks[eg.channels[i].consumer].subtask_index for i in part.channels)
                assert cons == list(range(cons[0], cons[0] + len(cons)))
    for s in range(len(eg.subtasks)):
        gates = eg.input_gates[s]
        assert [g_.job_edge for g_ in gates] == sorted(g_.job_edge for g_ in gates)
        for gi, gate in enumerate(gates):
            assert [(eg.channels[c].gate, eg.channels[c].gate_channel) for c in gate.channels] == [
                (gi, j) for j in range(len(gate.channels))]
            producers = [eg.channels[c].producer for c in gate.channels]
            assert producers == sorted(producers)
        assert [p.job_edge for p in eg.partitions[s]] == sorted(p.job_edge for p in eg.partitions[s])
