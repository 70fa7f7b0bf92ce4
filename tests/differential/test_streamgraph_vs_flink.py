"""The model's StreamGraph and JobGraph against the real Flink 2.3.0 ``StreamGraphGenerator``
and ``StreamingJobGraphGenerator``.

Seeded random job shapes (1-3 sources, 1-4 further operators, each reading one to three
earlier operators through a random partitioner, a union where there are several; slot sharing
groups and chaining on or off in the chaining test) are built twice: as the model's
``StreamGraph`` and, through PyFlink's gateway, with Flink's own DataStream API
(``tools/flink_oracle.py``, ops ``stream_edges`` and ``job_vertices``). For every edge, the
model's ``StreamGraph.supports_unaligned_checkpoints`` must equal Flink's
``StreamEdge.supportsUnalignedCheckpoints()`` and the partitioner the one Flink reports; for
every JobVertex, the chain (head and operators), the parallelism and the vertices sharing its
slot sharing group must be Flink's.

Needs ``make flink-env``; without it every test fails with that instruction (no skips).
"""

from __future__ import annotations

import random

import pytest

from model.jobgraph import build_job_graph
from model.streamgraph import StreamGraphBuilder

pytestmark = [pytest.mark.slow, pytest.mark.flink]

SEED = 2121945
N_JOBS = 60
#: the model's partitioner names as Flink's ``StreamPartitioner.toString()`` prints them
FLINK_NAME = {"forward": "FORWARD", "rescale": "RESCALE", "rebalance": "REBALANCE", "broadcast": "BROADCAST",
              "hash": "HASH"}


def _random_job(rng: random.Random, k: int, chaining: bool = False):
    """A model StreamGraph and the oracle's description of the same job. ``chaining``: the
    shapes favour chains (equal parallelisms, forward edges, single inputs), draw slot sharing
    groups, and chaining is on for two jobs in three."""
    chaining_enabled = chaining and rng.random() < 2 / 3
    b = StreamGraphBuilder(f"shape{k}", chaining_enabled=chaining_enabled)
    ops = []

    def group():
        return rng.choice([None, None, None, "g1", "g2"]) if chaining else None

    def parallelism(like=None):
        return like if like is not None and chaining and rng.random() < 0.7 else rng.choice([1, 2, 3])

    for i in range(rng.randint(1, 3)):
        p = parallelism()
        g = group()
        b.source(f"s{i}", parallelism=p, **({"slot_sharing_group": g} if g else {}))
        ops.append({"name": f"s{i}", "parallelism": p, "inputs": [], "slot_sharing_group": g})
    for j in range(rng.randint(1, 4)):
        name = f"o{j}"
        earlier = [o["name"] for o in ops]
        n_in = 1 if chaining and rng.random() < 0.7 else rng.randint(1, min(3, len(earlier)))
        sources = rng.sample(earlier, n_in)
        p = parallelism(next(o["parallelism"] for o in ops if o["name"] == sources[0]))
        g = group()
        inputs = []
        for src in sources:
            src_p = next(o["parallelism"] for o in ops if o["name"] == src)
            choices = ["rescale", "rebalance", "broadcast", "hash"] + (["forward"] * (6 if chaining else 2)
                                                                       if src_p == p else [])
            inputs.append([src, rng.choice(choices)])
        b.map(name, inputs[0][0], partitioner=inputs[0][1], parallelism=p, **({"slot_sharing_group": g} if g else {}))
        for src, part in inputs[1:]:
            b.connect(src, name, partitioner=part)
        ops.append({"name": name, "parallelism": p, "inputs": inputs, "slot_sharing_group": g})
    consumed = {src for o in ops for src, _ in o["inputs"]}
    for o in [o for o in ops if not o["inputs"] and o["name"] not in consumed]:
        # a source nothing reads is no part of Flink's StreamGraph (only transformations are)
        name = f"t{o['name']}"
        b.map(name, o["name"], partitioner="rebalance", parallelism=1)
        ops.append({"name": name, "parallelism": 1, "inputs": [[o["name"], "rebalance"]], "slot_sharing_group": None})
    return b.build(), ops, chaining_enabled


def test_edges_that_support_unaligned_checkpoints_are_flinks(flink_oracle):
    rng = random.Random(SEED)
    seen_forced = seen_mixed = 0
    for k in range(N_JOBS):
        graph, ops, _ = _random_job(rng, k)
        flink = {(s, t): (part, supports) for s, t, part, supports in flink_oracle.call("stream_edges", operators=ops)}
        model = {(e.source, e.target): (FLINK_NAME[e.partitioner], graph.supports_unaligned_checkpoints(e))
                 for e in graph.edges}
        assert model == flink, f"job {k} ({ops}): model {model} vs Flink {flink}"
        seen_forced += sum(1 for part, supports in model.values() if not supports)
        seen_mixed += sum(1 for (s, t), (part, supports) in model.items()
                          if not supports and part in ("HASH", "REBALANCE"))
    # the draw reaches both rules: pointwise/broadcast edges, and other edges forced by them
    assert seen_forced > 20 and seen_mixed > 5, (seen_forced, seen_mixed)


def test_the_oracle_reports_a_node_with_mixed_inputs_all_forced(flink_oracle):
    """The rule on one hand-made job: a broadcast and a hash input of one node are both forced,
    the node's own rebalance output is not."""
    ops = [{"name": "a", "parallelism": 1, "inputs": []}, {"name": "b", "parallelism": 1, "inputs": []},
           {"name": "d", "parallelism": 2, "inputs": [["a", "broadcast"], ["b", "hash"]]},
           {"name": "out", "parallelism": 1, "inputs": [["d", "rebalance"]]}]
    assert flink_oracle.call("stream_edges", operators=ops) == [
        ["a", "d", "BROADCAST", False], ["b", "d", "HASH", False], ["d", "out", "REBALANCE", True]]


def test_job_vertices_are_flinks(flink_oracle):
    """Operator chains, parallelisms and slot sharing groups of the model's JobGraph
    (``model.jobgraph.build_job_graph``) are Flink's (``StreamingJobGraphGenerator``)."""
    rng = random.Random(SEED + 1)
    chained = shared = 0
    for k in range(N_JOBS):
        graph, ops, chaining_enabled = _random_job(rng, k, chaining=True)
        flink = flink_oracle.call("job_vertices", operators=ops, chaining_enabled=chaining_enabled)
        jg = build_job_graph(graph)
        groups: dict = {}
        for v in jg.vertices.values():
            groups.setdefault(v.slot_sharing_group, []).append(v.id)
        model = sorted([v.id, sorted(v.operators), v.parallelism, sorted(groups[v.slot_sharing_group])]
                       for v in jg.vertices.values())
        assert model == flink, f"job {k} (chaining {chaining_enabled}, {ops}):\nmodel {model}\nFlink {flink}"
        chained += sum(1 for v in model if len(v[1]) > 1)
        shared += sum(1 for v in model if len(v[3]) < len(model))
    assert chained > 10 and shared > 10, (chained, shared)  # the draw reaches chains and separate groups
