"""spec/z3_barriers.py: bounded model checking of the barrier protocols and its cross-check
with the Python model (model/cluster.py), on::

    src (1/2) --ch0--\\
                      >-- count+out (1/1)
    src (2/2) --ch1--/

z3 traces replay in the model with the same verdict (same step, checkpoint and channel);
seeded random model traces are accepted by the z3 transition relation step by step (same
enabled actions, same observable state); a disagreement names the step where they part.
"""

from __future__ import annotations

import pytest

from model.cluster import ActionNotEnabled
from spec import proofs
from spec import z3_barriers as zb
from spec.z3_barriers import MODES, Topology, bmc, make_cluster, random_model_trace, replay_in_model, \
    z3_accepts_model_trace, z3_traces

E0, E1 = ("SourceEmit", 0), ("SourceEmit", 1)
D0, D1 = ("Deliver", 0), ("Deliver", 1)
T = ("TriggerCheckpoint",)


@pytest.mark.parametrize("mode,overtake", [("aligned", True), ("unaligned", True), ("unaligned", False)])
def test_exactly_once_modes_are_proved_for_every_execution_of_the_small_scope(mode, overtake):
    topo = Topology(mode=mode, records=2, checkpoints=2, overtake=overtake)
    result, info = bmc(topo)
    assert result == "proved", info
    assert info["depth"] == topo.full_length == 14
    assert info["last_checkpoint_completes"] == "sat"  # not vacuous


@pytest.mark.parametrize("mode,shortest", [("at_least_once", 5), ("unaligned_no_state", 3)])
def test_unsafe_modes_give_a_shortest_counterexample_that_the_model_reproduces(mode, shortest):
    topo = Topology(mode=mode)
    result, cex = bmc(topo)
    assert result == "counterexample"
    assert cex["step"] == len(cex["trace"]) == shortest
    _cluster, first = replay_in_model(topo, cex["trace"])
    assert first is not None, "the model does not reproduce z3's violation"
    assert first[0] == cex["step"]
    assert (cex["checkpoint"], cex["channel"]) in first[1]
    # and the step-by-step states agree along the whole trace
    assert z3_accepts_model_trace(topo, make_cluster(topo), cex["trace"]) is None


def test_at_least_once_post_barrier_record_enters_the_snapshot():
    """A record sent after the barrier on the fast channel is counted in checkpoint 1::

        ch0: [B1]            (slow: barrier delivered last)
        ch1: [B1, r]         (fast: barrier, then the post-barrier record r, not blocked)
    """
    trace = [T, E1, D1, D1, D0]
    topo = Topology(mode="at_least_once")
    cluster, first = replay_in_model(topo, trace)
    assert first == (5, [(1, 1)])
    snaps = cluster.completed[1]
    assert sum(s.sent.get(1, 0) for s in snaps.values()) == 0
    assert sum(s.received.get(1, 0) for s in snaps.values()) == 1
    # the aligned handler blocks ch1 after its barrier: the same run is impossible there
    with pytest.raises(ActionNotEnabled, match="step 4"):
        replay_in_model(Topology(mode="aligned"), trace)


def test_unaligned_without_channel_state_loses_the_overtaken_record():
    """The unaligned barrier overtakes r (queued in ch0); r is the output channel state::

        ch0: [r] --trigger--> [B1, r]
    """
    trace = [E0, T, D0]
    _c, lossy = replay_in_model(Topology(mode="unaligned_no_state"), trace)
    assert lossy == (3, [(1, 0)])
    cluster, ok = replay_in_model(Topology(mode="unaligned"), trace + [D1])
    assert ok is None and 1 in cluster.completed
    src = cluster.completed[1][0]
    assert len(src.output_channel_state[0]) == 1


def test_fifo_unaligned_barriers_put_the_channel_state_on_the_input_side():
    """With FIFO unaligned barriers, a record consumed after the snapshot (first barrier on
    ch0) and before ch1's barrier is input channel state; without state it is lost."""
    assert bmc(Topology(mode="unaligned", overtake=False, records=2))[0] == "proved"
    result, cex = bmc(Topology(mode="unaligned_no_state", overtake=False, records=2))
    assert result == "counterexample"


@pytest.mark.parametrize("mode", MODES)
def test_random_model_traces_satisfy_the_z3_transition_relation(mode):
    for seed in range(3):
        for topo in (Topology(mode=mode), Topology(mode=mode, records=4, capacity=2)):
            trace = random_model_trace(topo, seed)
            assert len(trace) == topo.full_length  # restricted runs end with everything delivered
            d = z3_accepts_model_trace(topo, make_cluster(topo, seed=seed), trace)
            assert d is None, f"{mode} seed {seed}: {d}"


@pytest.mark.parametrize("mode", MODES)
def test_z3_executions_replay_in_the_model_with_the_same_verdict(mode):
    topo = Topology(mode=mode, records=2)
    for trace in z3_traces(topo, 2, seed=3):
        assert z3_accepts_model_trace(topo, make_cluster(topo), trace) is None
        _c, first = replay_in_model(topo, trace)
        if mode in ("aligned", "unaligned"):
            assert first is None


def test_rebalance_topology_agrees_too():
    topo = Topology(mode="unaligned")
    trace = random_model_trace(topo, 7, partitioner="rebalance")
    cluster = make_cluster(topo, partitioner="rebalance", seed=7)
    assert z3_accepts_model_trace(topo, cluster, trace) is None


def test_a_disagreement_names_the_step_where_they_part():
    # z3 believes the consumer aligns; the model runs the at-least-once tracker
    trace = [T, E1, D1, D1, D0]
    d = z3_accepts_model_trace(Topology(mode="aligned"), make_cluster(Topology(mode="at_least_once")), trace)
    assert d is not None and d.step == 3 and "blocked" in d.what
    assert "step 3" in str(d)
    # z3 with a smaller channel capacity than the model: the enabled actions differ
    trace = [E0, E0, E0]
    d = z3_accepts_model_trace(Topology(mode="aligned", capacity=2),
                               make_cluster(Topology(mode="aligned", capacity=4)), trace)
    assert d is not None and d.step == 2 and d.what == "enabled actions differ"
    # an unaligned z3 encoding against an aligned model: the barrier position differs
    trace = [E0, T, D0]
    d = z3_accepts_model_trace(Topology(mode="unaligned"), make_cluster(Topology(mode="aligned")), trace,
                               check_enabled_sets=False)
    assert d is not None and d.step == 3


def test_unsafe_checks_are_registered_with_their_expected_verdicts():
    reg = proofs.load_all()
    names = {n: c.expected for n, c in reg.items() if n.startswith("barriers_")}
    assert names == {
        "barriers_aligned_consistent_cut": "proved",
        "barriers_unaligned_consistent_cut": "proved",
        "barriers_unaligned_fifo_consistent_cut": "proved",
        "barriers_at_least_once_not_a_cut": "counterexample",
        "barriers_unaligned_no_channel_state_not_a_cut": "counterexample",
    }
    for name in ("barriers_at_least_once_not_a_cut", "barriers_unaligned_no_channel_state_not_a_cut"):
        run = proofs.run_check(reg[name])
        assert run.as_expected, run
        assert run.counterexample["model_replay"]["step"] == run.counterexample["step"]


@pytest.mark.slow
def test_every_barrier_check_gives_its_expected_result_in_its_full_scope():
    for name, scope, expected, fn in zb.CHECKS:
        result, details, _cex = fn(None)
        assert result == expected, (name, details)
        assert "18" in scope
