"""The explorer's limits, stop requests and checkpoints (properties/explore.py): a frontier kept
as traces gives what a frontier of runs gives, the memory limit ends a search, a signal ends it
with the figures so far, and a search resumed from its checkpoint ends where an uninterrupted one
ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from flinkspec.cli import main
from model.variants import small_scenario, variant
from properties import explore as E
from properties.explore import Limits, SearchCheckpoint, StopRequest, explore, parse_bytes
from properties.explore_workers import ProcessLevels

ROOT = Path(__file__).resolve().parent.parent


def _small(name: str, **changes):
    v = variant(name)
    return small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, **changes)))


def _same(a, b) -> None:
    """Two searches with the same states, counts, depth and verdict (the seconds may differ)."""
    assert (a.verdict, a.distinct_states, a.transitions, a.depth, a.drained_states, a.complete) == \
        (b.verdict, b.distinct_states, b.transitions, b.depth, b.drained_states, b.complete)
    assert a.trace == b.trace
    assert (a.violation.invariant if a.violation else None) == (b.violation.invariant if b.violation else None)


@pytest.fixture(params=[("aligned-2pc", {"failures": 0}), ("append-sink-under-failures", {})],
                ids=["verified", "violation"])
def case(request):
    name, changes = request.param
    sc = _small(name, **changes)
    return sc, explore(sc)


def _memory_reads(monkeypatch, value: int) -> None:
    monkeypatch.setattr(E, "resident_bytes", lambda: value)
    monkeypatch.setattr(E, "MEMORY_EVERY", 0.0)


def test_a_frontier_kept_as_traces_gives_the_search_of_runs(case, monkeypatch):
    sc, whole = case
    # the resident memory reads above half of the limit from the start: every new state is kept
    # as its trace and rebuilt when expanded
    _memory_reads(monkeypatch, 600)
    compact = explore(sc, Limits(max_memory=1000))
    _same(compact, whole)


def test_a_frontier_of_traces_asked_for_gives_the_search_of_runs(case):
    sc, whole = case
    _same(explore(sc, Limits(frontier="traces")), whole)
    _same(explore(sc, Limits(frontier="runs")), whole)


def test_worker_processes_keeping_traces_give_the_search_of_one_process(case, monkeypatch):
    sc, whole = case
    _memory_reads(monkeypatch, 600)  # (inherited by the forked workers)
    with ProcessLevels(sc, True, 2) as levels:
        _same(explore(sc, Limits(max_memory=3000), levels=levels), whole)


def test_the_memory_limit_ends_the_search_bounded(monkeypatch):
    sc = _small("aligned-2pc", failures=0)
    _memory_reads(monkeypatch, 5 << 30)
    r = explore(sc, Limits(max_memory=4 << 30))
    assert r.verdict == "bounded" and not r.complete and r.limit == "max_memory=4G"


def test_a_stop_request_ends_the_search_bounded_with_its_reason():
    sc = _small("aligned-2pc", failures=0)
    stop = StopRequest()
    stop.request("SIGTERM")
    r = explore(sc, stop=stop)
    assert r.verdict == "bounded" and r.limit == "SIGTERM"
    assert 1 <= r.distinct_states < explore(sc).distinct_states


@pytest.mark.parametrize("workers", [1, 2])
def test_a_resumed_search_ends_where_an_uninterrupted_one_ends(case, workers, tmp_path):
    sc, whole = case
    cp = SearchCheckpoint(path=tmp_path / "s.checkpoint", every=0.0)
    first = explore(sc, Limits(max_depth=3), checkpoint=cp)
    assert first.verdict == "bounded" and first.limit == "max_depth=3"
    assert cp.path.exists()
    second = explore(sc, Limits(max_depth=5), checkpoint=cp, resume=cp.path)  # resumed twice
    assert second.depth == 5 or second.verdict != "bounded"
    if workers == 1:
        final = explore(sc, checkpoint=cp, resume=cp.path)
    else:
        with ProcessLevels(sc, True, workers) as levels:
            final = explore(sc, levels=levels, resume=cp.path)
    _same(final, whole)


def test_a_search_stopped_in_a_level_resumes_from_the_level_before(case, tmp_path):
    sc, whole = case
    cp = SearchCheckpoint(path=tmp_path / "s.checkpoint", every=1e9)
    stop = StopRequest()
    calls = []

    def progress(p):  # a signal in the middle of a level
        calls.append(p)
        if p.depth == 4:
            stop.request("SIGINT")

    first = explore(sc, progress=progress, stop=stop, checkpoint=cp)
    if first.verdict != "bounded":  # the violation is shallower than the stop: nothing to resume
        _same(first, whole)
        return
    assert first.limit == "SIGINT"
    _same(explore(sc, checkpoint=cp, resume=cp.path), whole)


def test_a_checkpoint_of_another_scenario_or_damaged_is_one_clear_error(tmp_path):
    sc = _small("aligned-2pc", failures=0)
    cp = SearchCheckpoint(path=tmp_path / "s.checkpoint", every=0.0)
    explore(sc, Limits(max_depth=2), checkpoint=cp)
    with pytest.raises(E.FlinkspecError, match="another scenario"):
        explore(_small("aligned-2pc", failures=1), resume=cp.path)
    with pytest.raises(E.FlinkspecError, match="another scenario"):
        explore(sc, resume=cp.path, reduce=False)
    cp.path.write_bytes(cp.path.read_bytes()[:40])
    with pytest.raises(E.FlinkspecError, match="not a flinkspec search checkpoint"):
        explore(sc, resume=cp.path)


@pytest.mark.parametrize("text,value", [("4G", 4 << 30), ("512m", 512 << 20), ("1.5G", 3 << 29), ("1000", 1000),
                                        ("64KB", 64 << 10)])
def test_memory_sizes(text, value):
    assert parse_bytes(text) == value


@pytest.mark.parametrize("argv,needle", [
    (["--max-memory", "lots"], "not a memory size: 'lots'"),
    (["--max-memory", "0"], "must be positive"),
    (["--checkpoint-every", "0"], "--checkpoint-every must be a positive"),
    (["--workers", "2", "--checkpoint", "{tmp}/c"], "written by the search in one process"),
    (["--resume", "{tmp}/nowhere"], "no such folder"),
])
def test_cli_limits_bad_arguments_are_one_line(argv, needle, capsys, tmp_path):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["explore", "--variant", "aligned-2pc", "--small", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_checkpoint_and_resume(capsys, tmp_path):
    d = tmp_path / "ck"
    args = ["explore", "--variant", "aligned-2pc", "--small", "--json"]
    assert main([*args, "--max-depth", "3", "--checkpoint", str(d)]) == 0
    assert (d / "aligned-2pc.checkpoint").exists()
    capsys.readouterr()
    assert main([*args, "--max-depth", "7", "--resume", str(d)]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert main([*args, "--max-depth", "7"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert resumed["verdict"] == whole["verdict"] and resumed["limit"] == whole["limit"] == "max_depth=7"
    assert (resumed["distinct_states"], resumed["transitions"], resumed["depth"]) == \
        (whole["distinct_states"], whole["transitions"], whole["depth"])


def test_sigterm_ends_the_search_with_its_figures_and_exit_130(tmp_path):
    """A search that would run for minutes gets SIGTERM once it has printed progress: it
    prints its row (bounded, stopped by SIGTERM) and the way to resume, and exits 130."""
    env = dict(os.environ, FLINKSPEC_PROGRESS="0.3")
    cmd = [sys.executable, "-m", "flinkspec", "explore", "--variant", "unaligned-2pc", "--max-seconds", "300",
           "--checkpoint", str(tmp_path / "ck")]
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()  # the first progress line: the search is running
        assert "explore unaligned-2pc" in line, line
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "bounded" in out and "stopped by SIGTERM" in out and "--resume" in out
    assert "Traceback" not in err
    assert (tmp_path / "ck" / "unaligned-2pc.checkpoint").exists()


def test_worker_processes_end_at_their_share_of_the_memory_limit_and_name_the_whole(monkeypatch):
    sc = _small("aligned-2pc", failures=0)
    _memory_reads(monkeypatch, 2 << 30)  # above a third of 4G: each of two workers' share
    with ProcessLevels(sc, True, 2) as levels:
        r = explore(sc, Limits(max_memory=4 << 30), levels=levels)
    assert r.verdict == "bounded" and r.limit == "max_memory=4G"
