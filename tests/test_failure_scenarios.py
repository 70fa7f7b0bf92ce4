"""Failure, recovery, savepoint and rescaling scenarios (issue 4.7), and the unsafe variants.

Every scenario draws its topology, drives the Cluster with explicit actions (numbered steps)
and judges the drained run against the p=1 oracle (``model.reference``). Each unsafe variant
is shown to break on an action sequence that the safe configuration survives.
"""

from __future__ import annotations

import pytest

from model import actions as A
from model.cluster import ActionNotEnabled, JobInput, RuntimeConfig, drain
from model.stateassignment import StateAssignmentError
from model.streamgraph import StreamGraphBuilder
from scenario_util import chan, deliver_until_empty, enabled, fresh, kinds, oracle_diffs, records, sub


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
    c = fresh(g, inp, RuntimeConfig(savepoints=True, **kw))
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
