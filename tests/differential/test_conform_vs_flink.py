"""``flinkspec conform`` against the real Flink 2.3.0 jars (apache-flink in ``.venv-flink``).

Fifty random jobs (seeds 1000..1049: thirty with an injected failure under exactly-once
checkpointing, twenty stopped with a savepoint and restarted with other parallelisms, up and
down) run on local MiniClusters and in the model; every one must agree: the committed output
against the model's oracle, the key groups and the keyed state each subtask holds, the source
splits each rescaled source subtask restored. A model with the round-robin start of operator
list state carried over from one operator to the next (the model's behaviour before the fix)
disagrees with Flink on the source splits of seed 2.

Every fault kind of the recorder (``conform --faults all``: on MiniClusters with two TaskManagers,
jobmanager-loss on a standalone cluster with ZooKeeper HA) agrees once each.

Needs ``make flink-env``; without it every test fails with that instruction (no skips, and the
tests do not install it).
"""

from __future__ import annotations

import pytest

from model import rescaling
from properties import conform
from properties.conform import run_conform, summary

pytestmark = [pytest.mark.slow, pytest.mark.flink]

SEED = 1000
RUNS = 50


def _need_flink():
    if conform.flink_env_missing():
        pytest.fail(f"the real-Flink environment {conform.FLINK_VENV} is missing: run `make flink-env` first "
                    "(creates .venv-flink with apache-flink, ~850 MB, ~2 min)", pytrace=False)


def test_fifty_random_jobs_with_failures_and_rescales_agree_with_real_flink():
    _need_flink()
    results = run_conform(RUNS, SEED, batch=10)
    line = summary(results, SEED, 0.0)
    assert line["runs"] == RUNS
    assert line["with_failures"] >= 30 and line["failures_injected"] == line["with_failures"]
    assert line["rescaled"] >= 10 and line["rescaled_up"] >= 1 and line["rescaled_down"] >= 1
    assert line["disagreements"] == [], line["disagreements"]
    # the runs compared something: committed output in almost every run (a map and a filter may
    # remove every record, as double -> odd_value in seed 1032), and after every rescale the
    # records each new source subtask read
    assert sum(bool(r.flink["output"]) for r in results) >= RUNS - 5
    for r in results:
        assert r.flink.get("ok"), r.seed
        if r.job.rescale is not None:
            assert any(o[0] == "src" and o[1] == 1 for o in r.flink["observations"]), r.seed


def test_real_flink_catches_the_old_round_robin_start_of_operator_list_state(monkeypatch):
    """Seed 2 rescales the source 2 -> 4 and the sink 3 -> 2 at once: Flink repartitions each
    operator's list state from new subtask 0; the model once carried the start over from the
    sink's state to the source's."""
    _need_flink()
    real = rescaling.repartition_operator_state
    carried = {"start": 0}

    def carry_over(old, new_p, mode="split_distribute", start=0):
        parts, nxt = real(old, new_p, mode, carried["start"])
        carried["start"] = nxt
        return parts, nxt

    monkeypatch.setattr(rescaling, "repartition_operator_state", carry_over)
    (result,) = run_conform(1, 2)
    assert not result.agree
    assert any("after the rescale source subtask" in d for d in result.differences), result.differences


def test_drained_jobs_agree_with_real_flink_and_a_drain_without_max_watermark_does_not(monkeypatch):
    """``conform --drain``: jobs stopped with stop-with-savepoint --drain once every source subtask
    emitted its first records (seeds 2000..2011): Flink's committed output and the model's agree
    with the oracle of the records read -- every window of them fired. A model whose drain ends
    the sources' input without MAX_WATERMARK (the seam drain-without-max-watermark's behaviour)
    disagrees with Flink on the windowed jobs whose windows hold records."""
    _need_flink()
    results = run_conform(12, 2000, batch=12, drain=True)
    line = summary(results, 2000, 0.0)
    assert line["runs"] == line["drained"] == 12
    assert line["disagreements"] == [], line["disagreements"]
    windowed = [r for r in results if r.job.keyed.kind == "window" and r.flink["output"]]
    assert len(windowed) >= 2, [r.seed for r in results]
    from model.cluster import Cluster

    def without_max_watermark(self, t):
        t.source.ended = True
        self.context(t).finish()

    monkeypatch.setattr(Cluster, "end_input_for_drain", without_max_watermark)
    for r in windowed:
        again = conform.judge(r.job, r.flink)
        assert not again.agree and any("the model's committed output vs the oracle" in d
                                       for d in again.differences), again.differences


def test_every_fault_kind_conform_runs_agrees_with_real_flink():
    """``conform --faults all``: one run of every fault kind of the recorder's ``FAULT_KINDS``
    (MiniClusters with two TaskManagers; jobmanager-loss on the standalone HA cluster, ~70 s);
    the committed output after the fault and the recovery, the final keyed state and every
    restore agree."""
    _need_flink()
    from properties import conformfaults  # lazy: only this test runs the recorder's driver

    kinds = conformfaults.conform_kinds()
    results = conformfaults.run_faults(len(kinds), 3000, kinds, batch=6)
    line = conformfaults.summary(results, 3000, 0.0)
    assert sorted(line["kinds"]) == sorted(kinds)
    assert line["disagreements"] == [], line["disagreements"]
    for res in results:
        assert res.result.flink.get("ok"), (res.kind, res.result.flink.get("error"))
        assert "output" in res.compared, res.kind
    # the faults happened: a TaskManager lost, a failure injected where the kind injects one
    by_kind = {res.kind: res for res in results}
    assert by_kind["taskmanager-loss"].result.flink["lost_task_manager"] is not None
    for k in ("task-failure", "unaligned", "rocksdb-incremental"):
        assert by_kind[k].result.flink_failed, k
    # the standby JobManager's JobMaster restored a checkpoint, and the model the same one
    assert by_kind["jobmanager-loss"].restores and all(isinstance(fl, int) and fl == mo
                                                       for fl, mo in by_kind["jobmanager-loss"].restores)
