"""``flinkspec conform``: the model side and the comparison, without a JVM.

Job generation is deterministic by seed and keeps the rules the real run depends on; the model's
side of a few seeds gives the output an independent evaluation of the job gives (written here,
not taken from the model); the comparison reports every planted disagreement; the command's
bad input and a real-Flink environment that cannot be created are one-line errors (exit 2).
The run against real Flink is ``tests/differential/test_conform_vs_flink.py`` (slow, flink).
"""

from __future__ import annotations

import copy
import subprocess
from collections import Counter, defaultdict

import attrs
import pytest

from flinkspec.cli import main
from model.keygroups import assign_to_key_group, compute_operator_index_for_key_group
from properties import conform
from properties.conform import (
    compare,
    generate_job,
    judge,
    model_side,
    observed_split_order,
    row_key_hash,
    summary,
)

SEEDS = range(60)


# -- generation --------------------------------------------------------------------------------


def test_generation_is_deterministic_by_seed():
    for s in (0, 7, 122, 10**9):
        assert generate_job(s) == generate_job(s)
        assert generate_job(s).to_dict() == generate_job(s).to_dict()
    assert generate_job(1).to_dict() != generate_job(2).to_dict()


def test_every_fifth_seed_pattern_gives_the_variations():
    jobs = [generate_job(s) for s in range(50)]
    s = summary([conform.RunResult(j.seed, j, (), 0.0, j.fail is not None, None) for j in jobs], 0, 0.0)
    assert s["with_failures"] == 30 and s["rescaled"] == 20 and s["agree"] == 50
    assert s["rescaled_up"] >= 5 and s["rescaled_down"] >= 5
    assert {j.max_parallelism for j in jobs} >= {5, 7, 10}


@pytest.mark.parametrize("seed", SEEDS)
def test_a_generated_job_keeps_the_rules_the_real_run_depends_on(seed):
    job = generate_job(seed)
    splits = job.splits
    assert len(splits) == job.graph.operator("source").parallelism
    assert all(len(s) == job.split_len for s in splits) and job.cap < job.split_len
    ooo = job.out_of_orderness
    for s in splits:  # no record is late for BoundedOutOfOrdernessWatermarks(ooo) of its split
        top = None
        for (_k, _v, ts) in s:
            assert top is None or ts > top - ooo - 1
            top = ts if top is None else max(top, ts)
    pars = job.phase_parallelisms()
    for par in pars:
        assert all(1 <= p <= job.max_parallelism for p in par.values())
        for e in job.graph.edges:  # forward groups keep one parallelism in every phase
            if e.partitioner == "forward":
                assert par[e.source] == par[e.target]
    if job.rescale is not None:
        keyed = job.keyed.name
        assert pars[1][keyed] != pars[0][keyed]
        if job.keyed.kind == "window":
            assert pars[1]["source"] >= pars[0]["source"]
    if job.fail is not None:
        split, offset, cps = job.fail
        start = job.cap if job.rescale is not None else 0
        assert 0 <= split < len(splits) and start + job.cap * cps <= offset < job.split_len


#: Row(key).hashCode() and KeyGroupRangeAssignment.assignToKeyGroup(Row(key), 7), answered by
#: Flink 2.3.0's jars through the gateway (PyFlink's keyBy key is a one-field Row); among them
#: keys whose String.hashCode makes 62 + hash overflow a Java int, and Integer.MIN_VALUE
FLINK_ROW_KEYS = {"a": (159, 4), "b": (160, 5), "c": (161, 6), "user-1": (-836031763, 6), "k0": (3427, 5),
                  "dzgreg\ucff9": (-2147483596, 6), "polygenelubricants": (-2147483586, 0), "": (62, 5)}


def test_row_key_hash_is_what_flink_measured():
    for key, (h, kg) in FLINK_ROW_KEYS.items():
        assert row_key_hash(key) == h, key
        assert assign_to_key_group(row_key_hash(key), 7) == kg, key


# -- the model side against an independent evaluation of the job ------------------------------


def _apply_chain(job, recs):
    """The records after the job's map and filter (evaluated here, by the functions' definitions)."""
    out = []
    for (k, v, ts) in recs:
        keep = True
        for o in job.graph.operators:
            if o.kind == "map":
                f = o.function
                v = {"identity": v, "negate": -v, "double": 2 * v}.get(f) if ":" not in f else \
                    (v + int(f[4:]) if f.startswith("add:") else v % int(f[4:]))
            elif o.kind == "filter":
                f = o.function
                keep = keep and {"all": True, "even_value": v % 2 == 0, "odd_value": v % 2 == 1}.get(
                    f, v >= int(f.split(":")[1]) if ":" in f else None)
        if keep:
            out.append((k, v, ts))
    return out


def _windows(op, ts):
    size, slide, offset = op.window_size, op.window_slide or op.window_size, op.window_offset
    last = ts - (ts - offset) % slide  # Python's % is the floored remainder: the start for any sign
    starts = []
    s = last
    while s > ts - size:
        starts.append(s)
        s -= slide
    return starts


def _expected(job):
    """(exact window results | rolling (key, timestamp) multiset, final value per key)."""
    recs = _apply_chain(job, [r for s in job.splits for r in s])
    op = job.keyed
    if op.kind == "window":
        acc = defaultdict(int)
        for (k, v, ts) in recs:
            for start in _windows(op, ts):
                acc[(k, start + op.window_size - 1)] += 1 if op.aggregate == "count" else v
        return Counter((k, a, mts) for (k, mts), a in acc.items()), None
    final = defaultdict(int)
    for (k, v, _ts) in recs:
        final[k] += 1 if op.aggregate == "count" else v
    return Counter((k, ts) for (k, _v, ts) in recs), dict(final)


def _seeds_of(kind, rescaled, failing, n=2):
    out = []
    for s in SEEDS:
        j = generate_job(s)
        if j.keyed.kind == kind and (j.rescale is not None) == rescaled and (j.fail is not None) == failing:
            out.append(s)
    return out[:n]


CASES = sorted({s for kind in ("window", "keyed_aggregate") for r in (False, True) for f in (False, True)
                for s in _seeds_of(kind, r, f)})


def test_the_sample_covers_every_combination():
    combos = {(generate_job(s).keyed.kind, generate_job(s).rescale is not None, generate_job(s).fail is not None)
              for s in CASES}
    assert len(combos) == 8


def _assert_outputs(job, m, evaluated) -> dict | None:
    """The model side's oracle and output are the independent evaluation of ``evaluated`` (the
    job, or the job on the records it read), and so is the final keyed state; returns that."""
    expected, final = _expected(evaluated)
    for out in (m.reference, m.output):
        if job.keyed.kind == "window":
            assert Counter(out) == expected
        else:
            assert Counter((k, ts) for (k, _v, ts) in out) == expected
    if final is not None:
        assert {k: v for k, (_sub, v) in m.final_keyed.items()} == final
    return final


@pytest.mark.parametrize("seed", CASES)
def test_model_side_gives_the_jobs_output(seed):
    job = generate_job(seed)
    m = model_side(job)
    assert m.failed == (job.fail is not None)
    final = _assert_outputs(job, m, job)
    if final is not None:
        last = job.phase_parallelisms()[-1][job.keyed.name]
        for k, (sub, _v) in m.final_keyed.items():
            kg = assign_to_key_group(row_key_hash(k), job.max_parallelism)
            assert sub == compute_operator_index_for_key_group(job.max_parallelism, last, kg)


@pytest.mark.parametrize("seed", [s for s in CASES if generate_job(s).rescale is not None])
def test_model_side_restores_the_savepoint_of_cap_records_per_split(seed):
    job = generate_job(seed)
    m = model_side(job)
    # every split continues at offset cap, each exactly once
    held = sorted(e for sub in m.restored_splits for e in sub)
    assert held == [(i, job.cap) for i in range(len(job.splits))]
    if job.keyed.kind == "keyed_aggregate":
        first = _apply_chain(job, [r for s in job.splits for r in s[:job.cap]])
        want = defaultdict(int)
        for (k, v, _ts) in first:
            want[k] += 1 if job.keyed.aggregate == "count" else v
        assert {k: v for k, (_s, v) in m.restored_keyed.items()} == dict(want)


def test_source_splits_after_a_rescale_as_flink_redistributed_them():
    # seed 2: source 2 -> 4 and the sink 3 -> 2 in one restart; Flink 2.3.0 read split 0 in new
    # source subtask 0 and split 1 in subtask 1 (RoundRobinOperatorStateRepartitioner per operator)
    job = generate_job(2)
    assert dict(job.rescale)["source"] == 4 and dict(job.rescale)["sink"] == 2
    assert model_side(job).restored_splits == (((0, 3),), ((1, 3),), (), ())
    # with the splits read the other way round in the first phase, the model follows Flink's order
    assert model_side(job, (1, 0)).restored_splits == (((1, 3),), ((0, 3),), (), ())


# -- the comparison ----------------------------------------------------------------------------


def _flink_like(job, m):
    """An answer the driver could give when Flink does what the model predicts."""
    obs = []
    pars = job.phase_parallelisms()
    keyed = job.keyed.name
    if job.rescale is not None:
        for i in range(len(job.splits)):
            obs += [["src", 0, 0, i, i, o] for o in range(job.cap)]
        for sub, splits in enumerate(m.restored_splits):
            obs += [["src", 1, 0, sub, s, off] for (s, off) in splits]
        for k, (sub, v) in (m.restored_keyed or {}).items():
            if job.keyed.kind == "keyed_aggregate":
                obs.append(["touch", 1, 0, sub, k, v])
    for k, (sub, v) in (m.final_keyed or {}).items():
        obs.append(["final", len(pars) - 1, 1, sub, k, v])
    keys = sorted({r[0] for s in job.splits for r in s})
    restores = []
    if job.fail is not None and m.restored_ordinal:
        # Flink's ids are its own (here shifted by 3: checkpoints declined before every task ran)
        done = [3 + i for i in range(1, m.restored_ordinal + 1)]
        restores.append({"phase": len(pars) - 1, "checkpoint": done[-1], "savepoint": False,
                         "completed_before": done})
    elif job.fail is not None and m.restored_from is not None:  # the savepoint the phase started from, again
        restores.append({"phase": len(pars) - 1, "checkpoint": 1, "savepoint": True, "completed_before": []})
    return {"ok": True, "output": [list(r) for r in m.reference], "observations": obs,
            "failed": job.fail is not None, "key_hash": {k: row_key_hash(k) for k in keys},
            "key_group": {k: assign_to_key_group(row_key_hash(k), job.max_parallelism) for k in keys},
            "seconds": 1.0, "restores": restores}


def _rescaled_aggregate_seed():
    return next(s for s in SEEDS if generate_job(s).rescale is not None and generate_job(s).keyed.kind ==
                "keyed_aggregate" and len(generate_job(s).splits) >= 2 and generate_job(s).fail is None)


def test_a_faithful_answer_agrees():
    for s in CASES:
        job = generate_job(s)
        m = model_side(job)
        assert compare(job, m, _flink_like(job, m)) == [], s
        assert judge(job, _flink_like(job, m)).agree, s


def test_every_planted_disagreement_is_reported():
    job = generate_job(_rescaled_aggregate_seed())
    m = model_side(job)
    good = _flink_like(job, m)
    key = next(iter(good["key_group"]))

    def diffs(plant):
        f = copy.deepcopy(good)
        plant(f)
        return "\n".join(compare(job, m, f))

    assert "Flink's committed output vs the oracle" in diffs(lambda f: f["output"].pop())
    assert "1 missing" in diffs(lambda f: f["output"].pop())
    assert "1 unexpected" in diffs(lambda f: f["output"].append(["zz", 1, 1]))
    assert f"key {key!r}: Flink's key group" in diffs(lambda f: f["key_group"].__setitem__(key, (f["key_group"][key] + 1)
                                                                                            % job.max_parallelism))
    assert "Row hash code" in diffs(lambda f: f["key_hash"].__setitem__(key, 0))
    assert "the injected failure happened in Flink" in diffs(lambda f: f.__setitem__("failed", True))
    assert "final keyed state" in diffs(lambda f: next(o for o in f["observations"] if o[0] == "final")
                                        .__setitem__(5, -1))
    p1 = job.phase_parallelisms()[1][job.keyed.name]
    assert "held by subtask" in diffs(lambda f: next(o for o in f["observations"] if o[0] == "final")
                                      .__setitem__(3, (next(o for o in f["observations"] if o[0] == "final")[3] + 1) % p1))
    assert "restored keyed state of key" in diffs(lambda f: next(o for o in f["observations"] if o[0] == "touch")
                                                  .__setitem__(5, 999))
    assert "after the rescale source subtask" in diffs(lambda f: next(o for o in f["observations"]
                                                                      if o[0] == "src" and o[1] == 1).__setitem__(5, 0))
    # the order of a new subtask's splits from different old subtasks is not compared
    down = next(generate_job(s) for s in SEEDS if generate_job(s).rescale is not None
                and any(len(sub) > 1 for sub in model_side(generate_job(s)).restored_splits))
    md = model_side(down)
    answer = _flink_like(down, md)
    src1 = [o for o in answer["observations"] if o[0] == "src" and o[1] == 1]
    rest = [o for o in answer["observations"] if not (o[0] == "src" and o[1] == 1)]
    answer["observations"] = rest + src1[::-1]
    assert compare(down, md, answer) == []
    # the first phase must read one split per source subtask
    bad = copy.deepcopy(good)
    for o in bad["observations"]:
        if o[0] == "src" and o[1] == 0:
            o[4] = 0
    assert observed_split_order(job, bad["observations"]) is None
    assert any("one split per source subtask" in d for d in judge(job, bad).differences)


# a real Flink 2.3.0 log (the conform driver's JVM, two jobs interleaved with their phases): job-0
# fails after checkpoint 1 and restores it; job-2 is restored from its savepoint, then fails in its
# second phase and restores checkpoint 2, the first that phase completed
_LOG = """\
2026-11-28 17:56:26,843 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Triggering checkpoint 1 (type=CheckpointType{name='Checkpoint', sharingFilesStrategy=FORWARD_BACKWARD}) @ 1795888586835 for job 0294118b737b8aadec9347fb6d0126e8.
2026-11-28 17:56:26,967 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Completed checkpoint 1 for job 0294118b737b8aadec9347fb6d0126e8 (7291 bytes, checkpointDuration=124 ms, finalizationTime=8 ms).
2026-11-28 17:56:27,066 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Decline checkpoint 2 by task 1f6cb3f5a3cecf2ad5cbc72c6db6af4c_e5a72f353fc1e6bbf3bd96a41384998c_0_0 of job 0294118b737b8aadec9347fb6d0126e8 at 636d8025-1048-4169-a0c2-2333bef63ce1 @ localhost (dataPort=-1).
2026-11-28 17:56:27,229 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Restoring job 0294118b737b8aadec9347fb6d0126e8 from Checkpoint 1 @ 1795888586835 for 0294118b737b8aadec9347fb6d0126e8 located at file:/tmp/conform-h36/flinkspec-conform-d2s5v941/job-0/checkpoints-0/0294118b737b8aadec9347fb6d0126e8/chk-1.
2026-11-28 17:56:27,528 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Completed checkpoint 4 for job 0294118b737b8aadec9347fb6d0126e8 (8209 bytes, checkpointDuration=39 ms, finalizationTime=10 ms).
2026-11-28 17:56:33,157 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Restoring job 0dbec7c170d207aa2198c7231150f72d from Savepoint 1 @ 0 for 0dbec7c170d207aa2198c7231150f72d located at file:/tmp/conform-h36/flinkspec-conform-d2s5v941/job-2/savepoint-0/savepoint-64ba38-8935b6e19a94.
2026-11-28 17:56:33,370 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Completed checkpoint 2 for job 0dbec7c170d207aa2198c7231150f72d (7150 bytes, checkpointDuration=22 ms, finalizationTime=1 ms).
2026-11-28 17:56:33,501 INFO  org.apache.flink.runtime.checkpoint.CheckpointCoordinator    [] - Restoring job 0dbec7c170d207aa2198c7231150f72d from Checkpoint 2 @ 1795888593347 for 0dbec7c170d207aa2198c7231150f72d located at file:/tmp/conform-h36/flinkspec-conform-d2s5v941/job-2/checkpoints-1/0dbec7c170d207aa2198c7231150f72d/chk-2.
"""


def test_flinks_restores_are_read_from_its_log():
    assert conform.flink_restores(_LOG, 0) == [{"phase": 0, "checkpoint": 1, "savepoint": False,
                                                "completed_before": [1]}]
    # the savepoint a rescaled phase starts from is the harness's choice, not listed
    assert conform.flink_restores(_LOG, 2) == [{"phase": 1, "checkpoint": 2, "savepoint": False,
                                                "completed_before": [2]}]
    # a restart that restores that savepoint again is
    again = _LOG.splitlines()[5].replace("17:56:33,157", "17:56:33,600")
    assert conform.flink_restores(_LOG + again + "\n", 2)[-1] == {"phase": 1, "checkpoint": 1, "savepoint": True,
                                                                   "completed_before": [2]}
    assert conform.flink_restores(_LOG, 1) == []
    assert conform.flink_restores(_LOG, 20) == []  # job-2's path does not name job-20


def _failing_seed(after: int, rescaled: bool):
    return next(s for s in SEEDS if generate_job(s).fail is not None and (generate_job(s).rescale is not None) == rescaled
                and model_side(generate_job(s)).restored_ordinal >= after)


@pytest.mark.parametrize("rescaled", [False, True], ids=["phase-0", "after-a-rescale"])
def test_the_restored_checkpoint_is_compared(rescaled):
    """Flink's restore must be the latest checkpoint completed before it, at the model's
    place among the failing phase's completed checkpoints: a restore of another one is reported."""
    job = generate_job(_failing_seed(2 if not rescaled else 1, rescaled))
    m = model_side(job)
    assert m.failed and m.restored_from is not None and m.restored_ordinal >= 1
    good = _flink_like(job, m)
    assert compare(job, m, good) == []
    phase = len(job.phase_parallelisms()) - 1

    def diffs(plant):
        f = copy.deepcopy(good)
        plant(f)
        return "\n".join(compare(job, m, f))

    def earlier(f):  # one checkpoint fewer had completed when Flink restored
        r = f["restores"][0]
        r["completed_before"].pop()
        if r["completed_before"]:
            r["checkpoint"] = r["completed_before"][-1]
    said = diffs(earlier)
    if m.restored_ordinal > 1:
        assert (f"Flink restored the {conform._nth(m.restored_ordinal - 1)} checkpoint completed in phase {phase}"
                in said and f"the model the {conform._nth(m.restored_ordinal)} checkpoint" in said), said
    else:  # the restored checkpoint is not among those completed
        assert "not the latest it completed" in said, said

    def later(f):  # one more had completed
        r = f["restores"][0]
        r["completed_before"].append(r["checkpoint"] + 1)
        r["checkpoint"] += 1
    assert f"Flink restored the {conform._nth(m.restored_ordinal + 1)} checkpoint completed in phase {phase}" \
        in diffs(later)
    # a restore of a checkpoint that is not the latest completed one
    assert "not the latest it completed" in diffs(lambda f: f["restores"][0]["completed_before"].append(99))
    # no restore at all, or the log not read
    assert "Flink restored no checkpoint" in diffs(lambda f: f.__setitem__("restores", []))
    assert "were not read from its log" in diffs(lambda f: f.pop("restores"))
    # a restore in another phase is not this failure's
    assert "Flink restored no checkpoint" in diffs(lambda f: f["restores"][0].__setitem__("phase", phase + 1))
    # the ids themselves are not compared: Flink's counter counts declined checkpoints too
    assert good["restores"][0]["checkpoint"] != m.restored_from
    r = judge(job, copy.deepcopy(good))
    assert r.agree and r.to_dict()["model_restored_ordinal"] == m.restored_ordinal


def test_a_failure_before_any_checkpoint_restores_none_in_both():
    job = next(generate_job(s) for s in SEEDS if generate_job(s).fail is not None
               and model_side(generate_job(s)).restored_from is None)
    m = model_side(job)
    assert m.failed and m.restored_from is None
    good = _flink_like(job, m)
    assert good["restores"] == [] and compare(job, m, good) == []
    bad = copy.deepcopy(good)
    bad["restores"] = [{"phase": len(job.phase_parallelisms()) - 1, "checkpoint": 1, "savepoint": False,
                        "completed_before": [1]}]
    assert any("the model no checkpoint" in d for d in compare(job, m, bad))


def test_a_failure_before_a_rescaled_phases_first_checkpoint_restores_its_savepoint():
    job = next(generate_job(s) for s in SEEDS if generate_job(s).fail is not None and generate_job(s).rescale
               is not None and model_side(generate_job(s)).restored_ordinal == 0)
    m = model_side(job)
    assert m.failed and m.restored_from is not None  # the savepoint
    good = _flink_like(job, m)
    assert good["restores"][0]["savepoint"] and compare(job, m, good) == []
    bad = copy.deepcopy(good)
    bad["restores"][0]["completed_before"] = [2]
    assert any("not the latest checkpoint" in d for d in compare(job, m, bad))
    bad = copy.deepcopy(good)
    bad["restores"][0].update(savepoint=False, checkpoint=2, completed_before=[2])
    assert any("the model the savepoint phase 1 started from" in d for d in compare(job, m, bad))


def test_a_job_flink_could_not_run_is_a_disagreement():
    job = generate_job(3)
    r = judge(job, {"ok": False, "error": "TimeoutError: job conform-3 phase 0 did not finish before the timeout"})
    assert not r.agree and r.differences == (
        "Flink did not run the job: TimeoutError: job conform-3 phase 0 did not finish before the timeout",)
    line = summary([r], 3, 1.0)
    assert line["agree"] == 0 and line["disagreements"][0]["seed"] == 3


def test_a_rolling_sum_over_several_channels_is_compared_without_its_order():
    job = next(generate_job(s) for s in SEEDS if generate_job(s).keyed.kind == "keyed_aggregate"
               and generate_job(s).keyed.aggregate == "sum" and not conform.order_deterministic(generate_job(s)))
    m = model_side(job)
    swapped = list(m.reference)
    by_key = defaultdict(list)
    for i, (k, _v, _ts) in enumerate(swapped):
        by_key[k].append(i)
    i, j = next(ix[:2] for ix in by_key.values() if len(ix) >= 2)
    (k, vi, ti), (_k, vj, tj) = swapped[i], swapped[j]
    swapped[i], swapped[j] = (k, vi, tj), (k, vj, ti)  # the same values arriving the other way round
    assert conform.compare_outputs(job, "x", m.reference, swapped) == []
    swapped[i] = (k, vi, ti + 1000)
    assert conform.compare_outputs(job, "x", m.reference, swapped)


# -- the command -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (["conform", "--runs", "0"], "--runs 0: must be between 1"),
    (["conform", "--batch", "0"], "--batch 0: must be between 1 and 100"),
    (["conform", "--seed", "-1"], "--seed -1: must be an integer between 0"),
    (["conform", "--timeout", "0"], "--timeout 0.0: must be between 1 and 3600"),
])
def test_bad_arguments_are_one_line_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_a_real_flink_environment_that_cannot_be_created_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(conform, "FLINK_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    monkeypatch.setattr(conform, "FLINK_VENV", tmp_path / "no-venv")
    calls = []

    def offline(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 2, "", "ERROR: Could not find a version that satisfies the "
                                                         "requirement apache-flink (from versions: none)\n")

    monkeypatch.setattr(conform.subprocess, "run", offline)
    assert main(["conform", "--runs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert calls and len(err) == 2
    assert "creating the real-Flink environment" in err[0]
    assert "cannot create" in err[1] and "apache-flink" in err[1] and "network" in err[1]


def test_a_driver_that_dies_answers_every_job_with_its_last_words(tmp_path, monkeypatch):
    script = tmp_path / "driver.py"
    script.write_text("import sys\nsys.stdin.readline()\nsys.stderr.write('java.lang.OutOfMemoryError: heap\\n')\n"
                      "sys.exit(1)\n")
    monkeypatch.setattr(conform, "FLINK_PYTHON", __import__("sys").executable)
    monkeypatch.setattr(conform, "DRIVER", script)
    driver = conform.FlinkDriver(tmp_path, 10.0)
    try:
        answers = list(driver.run([{"id": 1}, {"id": 2}]))
    finally:
        driver.close()
    assert [a["id"] for a in answers] == [1, 2] and not any(a["ok"] for a in answers)
    assert all("the Flink driver exited" in a["error"] and "OutOfMemoryError" in a["error"] for a in answers)
    r = judge(generate_job(4), answers[0])
    assert not r.agree and "OutOfMemoryError" in r.differences[0]


# -- stop-with-savepoint --drain (``conform --drain``) ------------------------------------------


@pytest.mark.parametrize("seed", CASES)
def test_a_drained_jobs_model_side_gives_the_output_of_the_first_cap_records(seed):
    """``--drain``: the same job stopped with stop-with-savepoint --drain once every source
    subtask emitted ``cap`` records: every window of those records fires (MAX_WATERMARK), the
    records after them are never read, and the job ends FINISHED."""
    job = generate_job(seed, drain=True)
    plain = generate_job(seed)
    assert job.drain and job.fail is None and job.rescale is None
    assert (job.graph, job.input, job.cap) == (plain.graph, plain.input, plain.cap)
    m = model_side(job)
    read = attrs.evolve(job, input=conform.JobInput({conform.SOURCE: tuple(s[:job.cap] for s in job.splits)}))
    _assert_outputs(job, m, read)
    req = conform.flink_request(job, 7)
    assert req["phases"] == [{"parallelism": job.phase_parallelisms()[0], "stop_with_savepoint": True,
                              "drain": True, "fail_at": None}]
    assert "stop-with-savepoint --drain after" in job.describe() and job.to_dict()["drain"] is True


def test_a_drained_window_fires_early_in_the_model_where_the_whole_input_would_not():
    """The drain is what the comparison sees: some seed's windows hold records past ``cap``, so
    the drained output differs from the whole input's."""
    differs = [s for s in CASES if generate_job(s).keyed.kind == "window"
               and Counter(model_side(generate_job(s, drain=True)).output) != _expected(generate_job(s))[0]]
    assert differs


def test_drain_and_faults_cannot_be_combined(capsys):
    assert main(["conform", "--drain", "--faults", "all"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--drain and --faults cannot be combined" in err[0]
