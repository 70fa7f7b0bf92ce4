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


@pytest.mark.parametrize("seed", CASES)
def test_model_side_gives_the_jobs_output(seed):
    job = generate_job(seed)
    m = model_side(job)
    assert m.failed == (job.fail is not None)
    expected, final = _expected(job)
    for out in (m.reference, m.output):
        if job.keyed.kind == "window":
            assert Counter(out) == expected
        else:
            assert Counter((k, ts) for (k, _v, ts) in out) == expected
    if final is not None:
        assert {k: v for k, (_sub, v) in m.final_keyed.items()} == final
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
    return {"ok": True, "output": [list(r) for r in m.reference], "observations": obs,
            "failed": job.fail is not None, "key_hash": {k: row_key_hash(k) for k in keys},
            "key_group": {k: assign_to_key_group(row_key_hash(k), job.max_parallelism) for k in keys},
            "seconds": 1.0}


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
