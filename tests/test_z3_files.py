"""z3 counterexamples become counterexample files (``properties.z3_files``; written by
``flinkspec prove``) that ``replay`` and ``show`` read like any other failure."""

from __future__ import annotations

import pytest

from flinkspec.cli import main
from properties.counterexample import load_counterexample, replay_counterexample
from properties.z3_files import counterexample_of, write_z3_counterexamples
from spec.proofs import load_all, run_check

CHECKS = load_all()


@pytest.mark.parametrize("name, invariant", [
    ("valve_pre_flink_7728", "valve_all_idle_flush"),
    ("valve_pre_flink_7721", "valve_output_bounded"),
    ("barriers_at_least_once_not_a_cut", "consistent_cut"),
    ("barriers_unaligned_no_channel_state_not_a_cut", "consistent_cut"),
])
def test_a_z3_counterexample_is_a_file_that_replays_to_the_same_step(tmp_path, name, invariant):
    run = run_check(CHECKS[name], None)
    assert run.result == "counterexample"
    [path] = write_z3_counterexamples([run], tmp_path)
    cx = load_counterexample(path, known_variant=True)
    assert cx.header["engine"] == "z3" and cx.header["variant"] == name
    assert cx.violation.invariant == invariant
    # the model's step (0-based) is the z3 trace's violating input (1-based)
    assert cx.violation.step == run.counterexample["step"] - 1
    ok, now = replay_counterexample(cx)
    assert ok, now
    assert main(["replay", str(path)]) == 0 and main(["show", str(path)]) == 0


def test_a_property_without_a_registered_invariant_is_not_written(tmp_path):
    # a trace z3 found for valve_progress_flink_2_3_0: Flink 2.3.0's valve stalls
    # (progress_aligned_min), which no registered invariant of the model's valve states
    trace = [["watermark", 0, 99], ["idle", 2], ["idle", 0], ["watermark", 1, 1], ["active", 2], ["idle", 1],
             ["active", 0]]
    cex = {"channels": 3, "trace": trace, "step": 7, "property": "progress_aligned_min", "knobs": {}}
    assert counterexample_of(cex) is None


@pytest.mark.slow  # the bounded search to k=16 takes tens of seconds
def test_the_registered_progress_counterexample_of_flink_2_3_0_is_not_written(tmp_path):
    run = run_check(CHECKS["valve_progress_flink_2_3_0"], None)
    assert run.result == "counterexample"
    if run.counterexample["property"] == "progress_aligned_min":  # z3 may also return an all-idle-flush trace
        assert write_z3_counterexamples([run], tmp_path) == []


def test_prove_writes_into_the_given_folder_and_no_write_writes_nothing(tmp_path, capsys):
    assert main(["prove", "--only", "valve_pre_flink_7728", "--corpus", str(tmp_path / "out")]) == 0
    assert len(list((tmp_path / "out").glob("*/*.ndjson"))) == 1
    assert "1 file(s)" in capsys.readouterr().out
    assert main(["prove", "--only", "valve_pre_flink_7728", "--no-write"]) == 0
    assert "not written (--no-write)" in capsys.readouterr().out
