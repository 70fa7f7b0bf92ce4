"""Regression tests: one per class of bad input that once gave a traceback, a wrong exit code,
a hang or a silent overwrite; plus the exit-code contract of the command line (in-process,
and a few real subprocess runs: SIGTERM, a closed pipe, ``--debug``)."""

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

from flinkspec import cli
from flinkspec.cli import main
from model.actions import RpcDeliver
from model.errors import FlinkspecError
from model.inputfiles import InputError, parse_json
from properties.counterexample import CounterexampleError, check_replay, load_counterexample
from properties.safe_io import OutputError, check_output_dir, write_atomic
from properties.timeline import build_timeline
from properties.validation import published_schemas, render_schema

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "counterexamples").glob("*/*.ndjson"))
FLINKSPEC = [sys.executable, "-m", "flinkspec.cli"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *needles: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flinkspec: error: "), err[:600]
    assert "Traceback" not in err and len(lines[0]) < 1_000
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


@pytest.fixture
def cx_lines():
    """The lines of the committed counterexample with the most actions of distinct kinds."""
    best = max(CORPUS, key=lambda p: len({json.loads(x).get("action", "(").split("(")[0]
                                           for x in p.read_text().splitlines()}))
    return best.read_text().splitlines()


def write(tmp_path, lines, name="cx.ndjson") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def edit(line: str, fn) -> str:
    obj = json.loads(line)
    fn(obj)
    return json.dumps(obj)


# -- files: bytes and JSON ---------------------------------------------------------------------

def test_non_utf8_bytes_name_the_line_and_the_byte_offset(tmp_path, capsys, cx_lines):
    p = tmp_path / "cx.ndjson"
    raw = ("\n".join(cx_lines) + "\n").encode()
    at = raw.index(b"\n") + 5  # in line 2
    p.write_bytes(raw[:at] + b"\xff" + raw[at:])
    code, out, err = run(capsys, "replay", p)
    assert code == 2 and out == ""
    one_line_error(err, f"{p}:2:", f"at byte {at}", "not UTF-8")


@pytest.mark.parametrize("depth", [40, 100_000])
def test_deep_nesting_is_refused_without_recursion_error(tmp_path, capsys, cx_lines, depth):
    lines = list(cx_lines)
    lines[0] = lines[0].replace('"seed":', '"seed":' + "[" * depth + "0" + "]" * depth + ',"x":', 1)
    code, _, err = run(capsys, "show", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":1:", "nesting deeper than 32 levels")
    toml = tmp_path / "job.toml"
    toml.write_text("x = " + "[" * depth + "]" * depth + "\n")
    code, _, err = run(capsys, "compile", toml)
    assert code == 2
    one_line_error(err, str(toml), "nesting deeper")


@pytest.mark.parametrize("number, rule", [("9" * 5000, "digits"), ("1e400", "out of range"),
                                          ("Infinity", "no NaN or Infinity"), ("NaN", "no NaN or Infinity"),
                                          (str(2**63), "does not fit in 64 bits")])
def test_huge_numbers_and_infinity_are_refused(tmp_path, capsys, cx_lines, number, rule):
    lines = list(cx_lines)
    lines[0] = lines[0].replace('"channel_capacity":', f'"channel_capacity":{number},"x":', 1)
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":1", rule)


def test_duplicate_keys_and_repeated_keyword_arguments(tmp_path, capsys, cx_lines):
    lines = list(cx_lines)
    lines[0] = lines[0].replace('{"', '{"seed":1,"', 1)
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":1", "duplicate key 'seed'")
    lines = list(cx_lines)
    lines[1] = json.dumps({"type": "action", "step": 0, "action": "SourceEmit(subtask=0, subtask=0)"})
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":2: action", "given twice")


def test_parse_json_rules():
    with pytest.raises(InputError, match="duplicate key 'a'"):
        parse_json('{"a": 1, "a": 2}', "f")
    with pytest.raises(InputError, match="no NaN or Infinity"):
        parse_json("[NaN]", "f")
    assert parse_json('{"a": [1, 2.5, "x", null, true]}', "f") == {"a": [1, 2.5, "x", None, True]}


# -- actions: arguments before any step, enabledness under the step contract --------------------

@pytest.mark.parametrize("action, rule", [
    ("Deliver(channel='3')", "must be an integer"),
    ("Deliver(channel=True)", "must be an integer"),
    ("Deliver(channel=-1)", "must be between 0 and"),
    ("Deliver(channel=99999999999999999999)", "must be between 0 and"),
    ("Deliver(channel=100000)", "channel 100000 does not exist"),
    ("SourceEmit(subtask=5000)", "subtask 5000 does not exist"),
    ("LoseTaskManager(task_manager=7)", "task manager 7 does not exist"),
    ("CheckpointTimeout(checkpoint_id=9)", "checkpoint 9 cannot exist at this step"),
    ("TriggerCheckpoint(savepoint=1)", "must be True or False"),
    ("Deliver(chanel=1)", "has no argument 'chanel'"),
    ("Deliver()", "argument 'channel' is missing"),
    ("Deliver(__import__('os'))", "not a literal value"),
    ("Bogus(x=1)", "unknown action kind 'Bogus'"),
])
def test_action_arguments_are_checked_against_the_scenario_before_any_step(tmp_path, capsys, cx_lines,
                                                                           action, rule):
    lines = list(cx_lines)
    lines[1] = edit(lines[1], lambda o: o.update(action=action))
    for command in ("replay", "show"):
        code, out, err = run(capsys, command, write(tmp_path, lines))
        assert code == 2 and out == "", (command, out[:200])
        one_line_error(err, ":2: action", rule)


def test_the_viewer_refuses_an_rpc_delivery_of_a_message_not_in_flight():
    """The viewer reads what an action names (the RPC at an index) before the step: an index
    past the messages in flight is the replay's error naming the step, not an IndexError."""
    cx = load_counterexample(next(p for p in CORPUS if '"RpcDeliver(index=' in p.read_text()))
    i = next(i for i, a in enumerate(cx.actions) if type(a) is RpcDeliver)
    bad = attrs.evolve(cx, actions=cx.actions[:i] + (RpcDeliver(index=99),) + cx.actions[i + 1:])
    with pytest.raises(FlinkspecError, match=rf"step {i}: RpcDeliver\(index=99\): .*in flight"):
        build_timeline(bad)


def test_show_never_explains_a_step_that_is_not_enabled(tmp_path, capsys, cx_lines):
    """An action with valid arguments that is not enabled at its turn: show prints nothing
    (no half explanation) and names the line and the guard."""
    lines = [cx_lines[0], json.dumps({"type": "action", "step": 0, "action": "Deliver(channel=0)"})]
    lines += [edit(x, lambda o: o.update(step=o["step"] + 1)) for x in cx_lines[1:-1]] + [cx_lines[-1]]
    p = write(tmp_path, lines)  # nothing was sent yet: channel 0 is empty
    code, out, err = run(capsys, "show", p)
    assert code == 2 and out == ""
    one_line_error(err, f"{p}:2: step 0", "is not enabled", "channel 0")
    with pytest.raises(CounterexampleError, match="is not enabled"):
        check_replay(load_counterexample(p))


# -- header, configuration, job input ------------------------------------------------------------

@pytest.mark.parametrize("field, value, rule", [
    ("format", 2, "format version 2 is not supported"),
    ("variant", "no-such-variant", "unknown variant 'no-such-variant'"),
    ("engine", "typewriter", "engine: must be one of"),
    ("expected_verdict", ["no-such-invariant"], "neither 'pass' nor a registered invariant"),
    ("expected_verdict", [], "must have at least 1 item"),
    ("invariant", "no-such-invariant", "unknown invariant"),
    ("seed", "0", "seed: must be an integer"),
])
def test_header_metadata_is_validated(tmp_path, capsys, cx_lines, field, value, rule):
    lines = list(cx_lines)
    lines[0] = edit(lines[0], lambda o: o.update({field: value}))
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":1", rule)


@pytest.mark.parametrize("key, value, rule", [
    ("channel_capacity", 4, "the model's scope now (scenario.scope), not Flink's configuration"),
    ("unaligned", 1, "scenario.config.unaligned: must be true or false"),
    ("task_managers", 100_000, "must be at most 256"),
    ("failover_strategy", "partial", "failover_strategy must be 'region' or 'full'"),
    ("no_such_knob", 1, "unknown key 'no_such_knob'"),
    # the model's scope (scenario.scope)
    ("scope.channel_capacity", "4", "scenario.scope.channel_capacity: must be an integer"),
    ("scope.channel_capacity", 0, "scenario.scope: channel_capacity must be an int >= 1"),
    ("scope.control_plane", 1, "scenario.scope.control_plane: must be true or false"),
    ("scope.no_such_field", 1, "unknown key 'no_such_field'"),
])
def test_configuration_fields_are_typed_and_ranged(tmp_path, capsys, cx_lines, key, value, rule):
    """``key``: a field of the configuration, or ``scope.`` and a field of the model's scope."""
    section, _, key = key.rpartition(".")
    lines = list(cx_lines)
    lines[0] = edit(lines[0], lambda o: o["scenario"][section or "config"].update({key: value}))
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":1", rule)


def test_job_input_records_are_typed(tmp_path, capsys, cx_lines):
    def bad(o):
        ji = o["scenario"]["job_input"]
        src = sorted(ji)[0]
        ji[src][0][0] = [0, "1", 2]

    lines = list(cx_lines)
    lines[0] = edit(lines[0], bad)
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, ":1", "scenario.job_input", "must be an integer, not '1'")


def test_a_violation_step_that_is_a_string_is_bad_input_not_a_verdict(tmp_path, capsys, cx_lines):
    lines = list(cx_lines)
    lines[-1] = edit(lines[-1], lambda o: o.update(step=str(o["step"])))
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2  # was 1: "not reproduced"
    one_line_error(err, f":{len(lines)}: step", "must be an integer")


def test_a_ten_megabyte_name_is_not_echoed(tmp_path, capsys, cx_lines):
    lines = list(cx_lines)
    lines[0] = edit(lines[0], lambda o: o.update(variant="v" * 10_000_000))
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    line = one_line_error(err, ":1: variant", "is 10000000 characters long")
    assert len(line) < 400
    spec = tmp_path / "job.json"
    spec.write_text(json.dumps({"operators": [{"name": "s" * 10_000_000, "kind": "sourcee"}]}))
    code, _, err = run(capsys, "compile", spec)
    assert code == 2 and len(one_line_error(err, str(spec))) < 1_000


# -- writes ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["dir", "/dev/null", "fifo"])
def test_show_html_refuses_a_non_regular_out_and_leaves_it_alone(tmp_path, capsys, target):
    out = {"dir": tmp_path / "d", "fifo": tmp_path / "f", "/dev/null": Path("/dev/null")}[target]
    if target == "dir":
        out.mkdir()
    if target == "fifo":
        os.mkfifo(out)
    code, stdout, err = run(capsys, "show", CORPUS[0], "--html", out)
    assert code == 2 and stdout == ""  # refused before any work
    one_line_error(err, str(out), "exists and is")
    assert out.exists() and not out.is_file() and list(tmp_path.glob(".tmp-*")) == []


def test_unwritable_destinations_are_one_line_errors(tmp_path, capsys):
    code, _, err = run(capsys, "show", CORPUS[0], "--html", "/proc/self/x.html")
    assert code == 2
    one_line_error(err, "/proc/self/x.html", "not writable")
    code, _, err = run(capsys, "spark-replay", "--engine", "standin", "--runs", "5", "--out", "/proc/self/o")
    assert code == 2  # before Spark starts: no Py4JJavaError
    one_line_error(err, "/proc/self/o", "--out folder")
    assert not Path("/proc/self/o").exists()
    for corpus in ("/dev/null", "/proc/self/corpus", ROOT / "examples" / "reference-window-job.toml"):
        code, _, err = run(capsys, "check", "--only", "at-least-once-2pc", "--corpus", corpus)
        assert code == 2  # before any suite runs
        one_line_error(err, str(corpus), "--corpus folder")
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="exists and is not a directory"):
        check_output_dir(tmp_path / "f")  # what a --corpus or --out that is a file gets


def test_write_atomic_leaves_the_old_file_on_interruption(tmp_path, monkeypatch):
    target = tmp_path / "page.html"
    target.write_text("old")

    def interrupted(_src, _dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["page.html"]


# -- Spark masters ---------------------------------------------------------------------------------

@pytest.mark.parametrize("master, rule", [
    ("spark://127.0.0.1:99999", "port '99999' is not a port number"),
    ("spark://bad host:7077", "is not a host name"),
    ("k8s://https://10.0.0.1:6443", "spark.kubernetes.container.image"),
    ("yarn", "HADOOP_CONF_DIR or YARN_CONF_DIR"),
])
def test_bad_masters_are_one_line_before_any_jvm(capsys, tmp_path, monkeypatch, master, rule):
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    t0 = time.perf_counter()
    code, out, err = run(capsys, "spark-replay", "--engine", "standin", "--runs", "5", "--master", master,
                         "--out", tmp_path / "o")
    assert code == 2 and out == "" and time.perf_counter() - t0 < 5
    one_line_error(err, rule)
    assert not (tmp_path / "o").exists()


def test_an_unreachable_master_fails_fast_with_one_line(capsys, tmp_path):
    t0 = time.perf_counter()
    code, _, err = run(capsys, "spark-replay", "--engine", "standin", "--runs", "5",
                       "--master", "spark://127.0.0.1:1", "--out", tmp_path / "o")
    assert code == 2 and time.perf_counter() - t0 < 10
    one_line_error(err, "cannot reach the Spark master 'spark://127.0.0.1:1'", "Connection refused")


# -- the command line's exit codes ------------------------------------------------------------------

def test_usage_errors_are_one_line(capsys):
    for argv in (["nope"], ["compile"], ["keygroup", "k", "-p", "x"], []):
        code, _, err = run(capsys, *argv)
        assert code == 2
        one_line_error(err)


def test_internal_errors_exit_3_with_one_line_and_debug_shows_the_traceback(capsys, monkeypatch):
    import flinkspec.commands.keygroup as kg_cmd

    def boom(*_a, **_k):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(kg_cmd, "compute", boom)
    code, _, err = run(capsys, "keygroup", "k", "-p", "2")
    assert code == 3
    one_line_error(err, "internal error: ZeroDivisionError: boom", "--debug")
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "keygroup", "k", "-p", "2"])
    with pytest.raises(ZeroDivisionError):
        main(["keygroup", "k", "-p", "2", "--debug"])


def test_published_schemas_are_current():
    folder = ROOT / "docs" / "schemas"
    for name, schema in published_schemas().items():
        assert (folder / name).read_text() == render_schema(schema), (
            f"docs/schemas/{name} is stale: run `python -m properties.validation`")


def test_subprocess_closed_pipe_sigterm_and_debug(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # a closed stdout pipe: no message, no traceback
    p = subprocess.Popen(FLINKSPEC + ["keygroup", "--ranges", "-p", "4096"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, cwd=ROOT)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(60) == cli.EXIT_PIPE and err == ""
    # SIGTERM while the command runs: exit 130, one line
    slow = subprocess.Popen(FLINKSPEC + ["check", "--profile", "thorough", "--no-write"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT)
    time.sleep(3)
    slow.send_signal(signal.SIGTERM)
    assert slow.wait(60) == 130
    assert slow.stderr.read().decode().strip().splitlines()[-1] == "flinkspec: interrupted"
    # --debug: the traceback
    r = subprocess.run(FLINKSPEC + ["--debug", "compile", str(tmp_path / "missing.toml")], capture_output=True,
                       env=env, cwd=ROOT, timeout=60)
    assert r.returncode != 0 and b"Traceback" in r.stderr and b"InvalidJobSpec" in r.stderr
    r = subprocess.run(FLINKSPEC + ["compile", str(tmp_path / "missing.toml")], capture_output=True,
                       env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and b"Traceback" not in r.stderr and r.stderr.count(b"\n") == 1


def _children(pid: int) -> list[int]:
    out = subprocess.run(["ps", "--ppid", str(pid), "-o", "pid="], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def test_sigterm_ends_a_check_with_forked_workers_at_once_and_leaves_no_worker(tmp_path):
    """SIGTERM to ``check --workers 2`` while both workers run suites: the command exits 130
    within 2 seconds, and neither worker outlives it (a running suite is not waited for)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(FLINKSPEC + ["check", "--profile", "quick", "--workers", "2", "--no-write"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.2)
        workers = _children(p.pid)
    assert len(workers) >= 2, f"the two workers never started: {workers}"
    time.sleep(1)  # both are inside a suite
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) == cli.EXIT_INTERRUPTED
    assert time.monotonic() - t0 < 2.0
    assert p.stderr.read().decode().strip().splitlines()[-1] == "flinkspec: interrupted"
    time.sleep(0.2)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}")
             and open(f"/proc/{w}/stat").read().split()[2] != "Z"]
    assert alive == [], f"workers outlived the command: {alive}"


# -- focused counterexamples: what the machine's initialisation takes --------------------------

def _focused_files() -> dict:
    """A committed focused file per machine: the first with knobs set, else the first."""
    out: dict = {}
    has_knobs: dict = {}
    for p in CORPUS:
        sc = json.loads(p.read_text().splitlines()[0])["scenario"]
        if sc.get("kind") == "focused":
            knobs = bool(sc.get("knobs", {}).get("knobs", sc.get("knobs")))
            if sc["machine"] not in out or (knobs and not has_knobs[sc["machine"]]):
                out[sc["machine"]], has_knobs[sc["machine"]] = p, knobs
    return out


def test_init_fields_are_the_parameters_of_each_machine():
    """The typed fields checked on load are exactly what each machine's initialisation takes."""
    import inspect

    from properties import machines as M
    starts = {"valve": M.make_valve_machine().start, "coordinator": M.make_coordinator_machine().start,
              "barrier_handler": M.make_barrier_handler_machine("aligned").start}
    for name, fn in starts.items():
        assert list(M.INIT_FIELDS[name]) == [p for p in inspect.signature(fn).parameters if p != "self"], name
    assert set(M.INIT_FIELDS["window"]) | {"legacy"} == set(inspect.signature(M.check_window_assignment).parameters)
    assert set(M.INIT_FIELDS) == set(M.FOCUSED_MACHINES)


def test_focused_init_values_are_typed(tmp_path, capsys):
    """Every init field of every focused machine's corpus file, given a value of the wrong type
    (a flag for a count, a string, an object for a flag, a count out of range), is refused
    with one line naming the field."""
    files = _focused_files()
    assert {"valve", "coordinator", "barrier_handler", "window", "rescaling"} <= set(files)
    tried = 0
    for machine, path in files.items():
        original = path.read_text().splitlines()
        for key, value in json.loads(original[0])["scenario"]["init"].items():
            if type(value) is bool:
                bads = [({"wrong": 1}, "true or false"), (1, "true or false")]
            elif type(value) is int:
                bads = [(True, "an integer"), ("3", "an integer"), (-(1 << 63), "an integer")]
            else:
                bads = [({"wrong": 1}, "")]
            for bad, rule in bads:
                lines = list(original)
                lines[0] = edit(lines[0], lambda o: o["scenario"]["init"].update({key: bad}))
                code, _, err = run(capsys, "replay", write(tmp_path, lines))
                assert code == 2, (machine, key, bad, err)
                one_line_error(err, f"init.{key}", rule)
                tried += 1
    assert tried >= 20


def test_focused_init_fields_must_be_exactly_the_machines(tmp_path, capsys):
    path = _focused_files()["valve"]
    lines = path.read_text().splitlines()
    lines[0] = edit(lines[0], lambda o: o["scenario"]["init"].update({"extra": 1}))
    code, _, err = run(capsys, "replay", write(tmp_path, lines))
    assert code == 2
    one_line_error(err, "needs exactly n", "unknown extra")


def test_focused_knobs_are_typed(tmp_path, capsys):
    """A focused file's knobs are what the machine's factory and the model class it builds take:
    a flag of the wrong type, an unknown knob, an unknown mode or seam, a knob that became a
    seam are one line each."""
    files = _focused_files()
    cases = [("valve", lambda k: k["knobs"].update({next(iter(k["knobs"])): {"wrong": 1}}), "knobs.knobs"),
             ("valve", lambda k: k["knobs"].update({"no_such_knob": True}), "no_such_knob"),
             ("barrier_handler", lambda k: k.update({"mode": "sideways"}), "knobs.mode"),
             ("rescaling", lambda k: k.update({"seams": ["no-such-seam"]}), "no-such-seam"),
             ("rescaling", lambda k: k.update({"assignment": "modulo"}), "migrate_knobs.py"),  # a retired knob
             ("coordinator", lambda k: k.update({"bugs": ["FLINK-10354"]}), "migrate_knobs.py"),  # the knob's old name
             ("coordinator", lambda k: k.update({"bugs": 5}), "migrate_knobs.py"),
             ("coordinator", lambda k: k.update({"seams": "FLINK-10354"}), "knobs.seams"),
             ("coordinator", lambda k: k.update({"seams": ["FLINK-10354", 7]}), "knobs.seams"),
             ("window", lambda k: k.update({"legacy": "yes"}), "knobs.legacy"),
             ("coordinator", lambda k: k.update({"extra": 1}), "extra")]
    for machine, change, needle in cases:
        lines = files[machine].read_text().splitlines()
        lines[0] = edit(lines[0], lambda o: change(o["scenario"]["knobs"]))
        code, _, err = run(capsys, "replay", write(tmp_path, lines))
        assert code == 2, (machine, err)
        one_line_error(err, needle)


@pytest.mark.parametrize("text", ["Deliver(channel=" + "1" * 5000 + ")", "X" * 100_000 + "()", "(" * 100_000,
                                  "Deliver(" + "channel=1, " * 10_000 + ")"])
def test_a_huge_action_text_is_not_echoed(text):
    from model.actions import parse_action
    try:
        parse_action(text)
    except ValueError as e:
        assert len(str(e)) < 600, str(e)[:200]
    else:  # pragma: no cover - every text above is malformed
        pytest.fail("accepted")
