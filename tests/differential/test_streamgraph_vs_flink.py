"""Which StreamEdges can carry unaligned checkpoints: the model against the real Flink 2.3.0
``StreamGraphGenerator``.

Seeded random job shapes (1-3 sources, 1-4 further operators, each reading one to three
earlier operators through a random partitioner, a union where there are several) are built
twice: as the model's ``StreamGraph`` and, through PyFlink's gateway, with Flink's own
DataStream API (``tools/flink_oracle.py``, op ``stream_edges``). For every edge, the model's
``StreamGraph.supports_unaligned_checkpoints`` must equal Flink's
``StreamEdge.supportsUnalignedCheckpoints()``, and the partitioner must be the one Flink
reports.

Needs ``make flink-env``; without it every test fails with that instruction (no skips).
"""

from __future__ import annotations

import random

import pytest

from model.streamgraph import StreamGraphBuilder

pytestmark = [pytest.mark.slow, pytest.mark.flink]

SEED = 2121945
N_JOBS = 60
#: the model's partitioner names as Flink's ``StreamPartitioner.toString()`` prints them
FLINK_NAME = {"forward": "FORWARD", "rescale": "RESCALE", "rebalance": "REBALANCE", "broadcast": "BROADCAST",
              "hash": "HASH"}


def _random_job(rng: random.Random, k: int):
    """A model StreamGraph and the oracle's description of the same job."""
    b = StreamGraphBuilder(f"shape{k}", chaining_enabled=False)
    ops = []
    for i in range(rng.randint(1, 3)):
        p = rng.choice([1, 2, 3])
        b.source(f"s{i}", parallelism=p)
        ops.append({"name": f"s{i}", "parallelism": p, "inputs": []})
    for j in range(rng.randint(1, 4)):
        p = rng.choice([1, 2, 3])
        name = f"o{j}"
        earlier = [o["name"] for o in ops]
        inputs = []
        for src in rng.sample(earlier, rng.randint(1, min(3, len(earlier)))):
            src_p = next(o["parallelism"] for o in ops if o["name"] == src)
            choices = ["rescale", "rebalance", "broadcast", "hash"] + (["forward"] * 2 if src_p == p else [])
            inputs.append([src, rng.choice(choices)])
        b.map(name, inputs[0][0], partitioner=inputs[0][1], parallelism=p)
        for src, part in inputs[1:]:
            b.connect(src, name, partitioner=part)
        ops.append({"name": name, "parallelism": p, "inputs": inputs})
    return b.build(), ops


def test_edges_that_support_unaligned_checkpoints_are_flinks(flink_oracle):
    rng = random.Random(SEED)
    seen_forced = seen_mixed = 0
    for k in range(N_JOBS):
        graph, ops = _random_job(rng, k)
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
