"""Progress lines (properties/progress.py) and the commands that print them.

The reporter's rules on their own (plain lines on a stream that is not a terminal, at most one
per interval and none before the first; a redrawn line on a terminal, erased at the end;
``FLINKSPEC_PROGRESS`` silencing it or setting the interval; a status rendered only when
printed), then each long command on a stderr that is not a terminal: its progress lines
appear on stderr with a small interval, and its stdout is what it is without them.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from flinkspec import cli
from properties import progress as P

ROOT = Path(__file__).resolve().parents[1]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- the reporter ------------------------------------------------------------------------------

def test_settings_from_the_environment():
    assert P.settings({}) == (True, P.DEFAULT_INTERVAL)
    for off in ("0", "off", "OFF", "no", "false"):
        assert P.settings({P.ENV: off}) == (False, P.DEFAULT_INTERVAL)
    assert P.settings({P.ENV: "0.25"}) == (True, 0.25)
    for ignored in ("soon", "-1", "inf", "nan"):
        assert P.settings({P.ENV: ignored}) == (True, P.DEFAULT_INTERVAL), ignored


def test_elapsed_format():
    assert [P.format_elapsed(s) for s in (0.4, 59.9, 60, 185, 3600 + 125)] == ["0s", "59s", "1m00s", "3m05s", "1h02m"]


def test_plain_lines_at_most_one_per_interval_and_none_before_the_first(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)
    out = io.StringIO()
    with P.Reporter("job", stream=out, interval=0.2, heartbeat=False) as rep:
        rep.update("starting")
        assert out.getvalue() == "" and not rep.due()  # a command ending now prints nothing
        t0 = time.monotonic()
        n = 0
        while time.monotonic() - t0 < 1.0:
            n += 1
            rep.update(f"item {n}")
            time.sleep(0.005)
    lines = out.getvalue().splitlines()
    assert 2 <= len(lines) <= 5, lines  # ~1.0 s / 0.2 s, though the loop updated ~200 times
    assert all(re.fullmatch(r"job: item \d+ \(\d+s\)", line) for line in lines), lines
    assert "\r" not in out.getvalue()


def test_a_callable_status_is_rendered_only_when_printed(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)
    out = io.StringIO()
    calls = []

    def status():
        calls.append(1)
        return f"{len(calls)} renders"
    with P.Reporter("hot", stream=out, interval=0.1, heartbeat=False) as rep:
        t0 = time.monotonic()
        updates = 0
        while time.monotonic() - t0 < 0.5:
            rep.update(status)
            updates += 1
    assert updates > 100 and len(calls) <= 1 + out.getvalue().count("\n") < 10


def test_the_heartbeat_reprints_during_a_long_step(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)
    out = io.StringIO()
    with P.Reporter("z3", stream=out, interval=0.05) as rep:
        rep.update("check 1/1: slow")
        time.sleep(0.5)  # one long call: no update meanwhile
    lines = out.getvalue().splitlines()
    # on a loaded machine the heartbeat may beat before the first update: it then prints the
    # label and the clock alone (`Reporter.line` without a status), never another status
    while lines and re.fullmatch(r"z3: \d+s", lines[0]):
        lines.pop(0)
    assert len(lines) >= 3 and set(re.sub(r" \(\d+s\)$", "", x) for x in lines) == {"z3: check 1/1: slow"}, lines
    n = len(out.getvalue().splitlines())
    time.sleep(0.2)
    assert len(out.getvalue().splitlines()) == n  # closed: the heartbeat stopped


def test_a_note_is_printed_at_once_and_silenced_reporters_print_nothing(monkeypatch):
    out = io.StringIO()
    monkeypatch.delenv(P.ENV, raising=False)
    with P.Reporter("conform", stream=out, interval=60) as rep:
        rep.note("[1/3] seed 0: agree")
    assert out.getvalue() == "conform: [1/3] seed 0: agree\n"
    monkeypatch.setenv(P.ENV, "off")
    quiet = io.StringIO()
    with P.Reporter("conform", stream=quiet, interval=0.01) as rep:
        assert not rep.active
        rep.note("x")
        rep.update("y")
        time.sleep(0.05)
    assert quiet.getvalue() == ""
    forced = io.StringIO()
    with P.Reporter("spark-replay", stream=forced, interval=0.01, enabled=True) as rep:  # --progress
        rep.note("x")
    assert forced.getvalue() == "spark-replay: x\n"


def test_on_a_terminal_one_line_is_redrawn_and_erased(monkeypatch):
    monkeypatch.setenv(P.ENV, "30")  # the interval of plain lines: not the terminal's
    tty = Tty()
    with P.Reporter("explore", stream=tty) as rep:
        assert rep.mode == "redraw" and rep.interval == P.REDRAW_INTERVAL
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.8:
            rep.update(lambda: "depth 3")
            time.sleep(0.01)
    text = tty.getvalue()
    assert text.count("\r\x1b[K") >= 2 and "\n" not in text and "explore: depth 3" in text
    assert text.endswith("\r\x1b[K")  # nothing left on the terminal's line
    quiet = Tty()
    with P.Reporter("check: x", stream=quiet, redraw=False) as rep:  # the caller draws the terminal itself
        rep.update("run 1/2")
        time.sleep(0.4)
    assert quiet.getvalue() == ""


def test_a_closed_stream_ends_the_reporting_not_the_command(monkeypatch):
    monkeypatch.delenv(P.ENV, raising=False)
    out = io.StringIO()
    rep = P.Reporter("x", stream=out, interval=0.01, heartbeat=False)
    out.close()
    time.sleep(0.02)
    rep.update("still running")
    assert not rep.active
    rep.close()


# -- the commands, stderr not a terminal -------------------------------------------------------

def _flinkspec(args, *, progress: str, timeout=300) -> subprocess.CompletedProcess:
    env = {**_env(), P.ENV: progress}
    return subprocess.run([sys.executable, "-m", "flinkspec", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def _env() -> dict:
    import os  # the environment of the test run, for the subprocesses

    return {k: v for k, v in os.environ.items() if k != P.ENV}


def _mask_times(text: str) -> str:
    return re.sub(r"\d+\.\d+s\b", "T", text)  # 0.123s, 12.5s


def test_prove_prints_progress_on_stderr_and_the_same_stdout():
    args = ["prove", "--only", "valve_pre_flink_7728", "--only", "keygroups.operator_index", "--no-write", "--json"]
    on, off = _flinkspec(args, progress="0.02"), _flinkspec(args, progress="off")
    assert on.returncode == off.returncode == 0, (on.stderr, off.stderr)
    assert "prove: check 1/2: valve_pre_flink_7728" in on.stderr, on.stderr
    assert "prove: check 2/2: keygroups.operator_index" in on.stderr, on.stderr
    assert "prove:" not in off.stderr and "prove:" not in on.stdout

    def results(out):  # what the checks say, without their timings
        return [{k: _mask_times(v) if isinstance(v, str) else v for k, v in r.items() if k != "seconds"}
                for r in json.loads(out)]
    assert results(on.stdout) == results(off.stdout)


def test_check_prints_progress_on_stderr_and_the_same_stdout(monkeypatch, capsys):
    args = ["check", "--only", "FLINK-26334", "--only", "rescale-keygroups-modulo", "--no-write"]
    outs = {}
    for setting in ("0.02", "off"):
        monkeypatch.setenv(P.ENV, setting)
        assert cli.main(args) == 0
        outs[setting] = capsys.readouterr()
    on, off = outs["0.02"], outs["off"]
    assert re.search(r"^check: FLINK-26334: run \d+/600, [\d,]+ steps \(\d+s\)$", on.err, re.M), on.err
    assert re.search(r"^check: rescale-keygroups-modulo: violation of keyed_state_on_owner at run \d+; shrinking its "
                     r"\d+ steps", on.err, re.M), on.err
    assert "check: " not in off.err and "check: FLINK" not in on.out
    assert _mask_times(on.out) == _mask_times(off.out)


def test_no_progress_flag_silences_every_reporter_and_is_undone_after(monkeypatch, capsys):
    monkeypatch.setenv(P.ENV, "0.01")
    assert cli.main(["--no-progress", "prove", "--only", "valve_pre_flink_7728", "--no-write"]) == 0
    err = capsys.readouterr().err
    assert "prove:" not in err
    import os  # the variable the flag set for the command only

    assert os.environ[P.ENV] == "0.01"


def test_conform_reports_while_flink_runs(monkeypatch, capsys, tmp_path):
    """The command's progress without a JVM: run_conform replaced by one whose jobs take time."""
    import properties.conform as C  # patched below
    import properties.corpus as corpus  # patched below: the report goes to tmp_path
    from flinkspec.commands import conform

    def fake_run_conform(runs, seed, *, batch, timeout, progress, keep, drain):
        assert drain is False  # (conform's own runs, not --drain)
        for i in range(runs):
            time.sleep(0.15)  # "Flink" runs a job
            progress(f"[{i + 1}/{runs}] seed {seed + i}: agree 0.1s")
        return []
    monkeypatch.setattr(C, "ensure_flink_env", lambda say: None)
    monkeypatch.setattr(C, "run_conform", fake_run_conform)
    monkeypatch.setattr(C, "summary", lambda results, seed, secs: {
        "runs": 2, "agree": 2, "with_failures": 0, "rescaled": 0, "rescaled_up": 0, "rescaled_down": 0, "drained": 0,
        "seconds": secs, "disagreements": []})
    monkeypatch.setattr(corpus, "run_directory", lambda command, seed: tmp_path)
    monkeypatch.setenv(P.ENV, "0.03")
    assert cli.main(["conform", "--runs", "2"]) == 0
    out, err = capsys.readouterr()
    assert "conform: [1/2] seed 0: agree 0.1s\n" in err and "conform: [2/2] seed 1: agree 0.1s\n" in err
    assert re.search(r"^conform: 0/2 runs judged; Flink is starting \(\d+s\)$", err, re.M), err
    assert re.search(r"^conform: 1/2 runs judged; Flink is running the next \(\d+s\)$", err, re.M), err
    assert out.startswith("2/2 runs agree") and "conform:" not in out and out.count("\n") == 1, out


def test_verify_holds_no_progress_in_the_part_it_runs_beside(monkeypatch, capsys):
    """prove beside check: its output is held and printed on verify's stdout, so its progress
    is off there; verify itself says on stderr that it waits for it."""
    from flinkspec.commands import verify

    monkeypatch.setenv(P.ENV, "0.02")
    part = verify._Beside(["prove", "--only", "valve_pre_flink_7728", "--no-write"])
    code, _ = part.finish()
    out, err = capsys.readouterr()
    assert code == 0 and "all 1 checks as expected" in out
    assert "prove:" not in out and "prove:" not in err
    assert re.search(r"^verify: waiting for prove \(run beside check\), ", err, re.M), err


def test_spark_replay_progress_lines_without_a_terminal(monkeypatch):
    """A fake status tracker (the Spark side is tested in test_spark_replay.py): the poller's
    status reaches stderr as plain lines; ``--no-progress`` (enabled=False) prints nothing."""
    from spark import replay as R

    class Tracker:
        def __init__(self):
            self.done = 0

        def getJobIdsForGroup(self, group):
            return [1]

        def getJobInfo(self, job):
            return type("J", (), {"stageIds": [0]})()

        def getStageInfo(self, sid):
            self.done = min(8, self.done + 1)
            return type("S", (), {"numTasks": 8, "numCompletedTasks": self.done})()

    sc = type("SC", (), {"statusTracker": lambda self, t=Tracker(): t})()
    monkeypatch.setattr(R, "PROGRESS_INTERVAL", 0.01)
    monkeypatch.setenv(P.ENV, "0.05")
    err = io.StringIO()
    with R.Progress(sc, "g", 800, 8, stream=err):
        time.sleep(0.4)
    assert re.search(r"^spark-replay: 8/8 tasks, ~800/800 runs, ~\d+ runs/s \(\d+s\)$", err.getvalue(), re.M), \
        err.getvalue()
    quiet = io.StringIO()
    with R.Progress(sc, "g", 800, 8, stream=quiet, enabled=False):
        time.sleep(0.1)
    assert quiet.getvalue() == ""


def test_reporters_in_threads_do_not_mix_lines(monkeypatch):
    """The heartbeat and the caller print under one lock: every line is whole."""
    monkeypatch.delenv(P.ENV, raising=False)
    out = io.StringIO()
    with P.Reporter("t", stream=out, interval=0.001) as rep:
        def work():  # updates until both threads have printed lines (at most 10 s)
            i, deadline = 0, time.monotonic() + 10
            while out.getvalue().count("\n") < 200 and time.monotonic() < deadline:
                rep.update(f"step {i}")
                i += 1
        th = threading.Thread(target=work)
        th.start()
        th.join()
    # (a heartbeat before the thread's first update prints the elapsed time alone: "t: 0s")
    lines = out.getvalue().splitlines()
    assert len(lines) >= 200 and all(re.fullmatch(r"t: step \d+ \(\d+s\)|t: \d+s", x) for x in lines), lines[:5]
