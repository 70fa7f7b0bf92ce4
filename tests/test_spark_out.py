"""Where `flinkspec spark-replay` writes, decided before Spark starts (no JVM here): what a user
names is where everything goes; a run directory under results/ only for what is left to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from flinkspec.cli import build_parser
from flinkspec.commands.spark_replay import output_paths


def _paths(tmp_path, monkeypatch, *flags):
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args(["spark-replay", "--runs", "10", *map(str, flags)])
    return output_paths(args)


def test_out_holds_the_counterexamples_and_no_run_directory_is_made(tmp_path, monkeypatch):
    run_dir, out, cx = _paths(tmp_path, monkeypatch, "--out", tmp_path / "replay")
    assert run_dir is None and out == str(tmp_path / "replay")
    assert Path(cx) == tmp_path / "replay" / "counterexamples"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("flags, run_dir_made", [
    ((), True),  # everything into a new run directory
    (("--counterexamples", "CX"), True),  # the Parquet files into the run directory
    (("--out", "O", "--counterexamples", "CX"), False),
    (("--out", "O", "--no-counterexamples"), False),
    (("--out", "hdfs:///flinkspec/replay-1"), True),  # the driver writes the counterexamples locally
])
def test_a_run_directory_only_for_what_is_left_to_it(tmp_path, monkeypatch, flags, run_dir_made):
    flags = [str(tmp_path / f) if f in ("O", "CX") else f for f in flags]
    run_dir, out, cx = _paths(tmp_path, monkeypatch, *flags)
    assert (run_dir is not None) == run_dir_made
    assert (tmp_path / "results").is_dir() == run_dir_made
    if "--counterexamples" in flags:
        assert cx == flags[flags.index("--counterexamples") + 1]
    if run_dir is not None and "--out" not in flags:
        assert out == str(run_dir)
