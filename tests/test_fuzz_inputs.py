"""Fuzzing every command that reads a file or an argument with malformed input.

Hypothesis mutates valid inputs -- the committed counterexamples, the example job specs,
valid argument vectors -- into inputs that break exactly one rule, one class at a time
(truncation, invalid UTF-8, wrong types, deep nesting, huge numbers, unknown keys,
duplicate keys, ids out of range, bad action arguments, non-regular or unwritable OUT
targets, bad argument values), and runs ``flinkspec`` in-process on each. Every input must
give exit code 2 and exactly one line on stderr (``flinkspec: error: ...``, short), no
traceback, within a time bound (a hang fails the test), and leave every existing file as it
was (and create no OUT file).

The default run tries a few hundred inputs (seconds); the ``long`` profile (marked slow,
``make test-slow``) tries more than 2,000. The inputs tried, by class, are printed at the end
of the run (``fuzz inputs tried``).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flinkspec.cli import main
from properties.counterexample import load_counterexample
from properties.validation import id_bounds

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "counterexamples").glob("*/*.ndjson"))
EXAMPLES = sorted((ROOT / "examples").glob("*.toml"))
#: a hang: any single command taking longer than this fails the test
HANG_SECONDS = 60
#: the longest error line accepted (a 10 MB value must never be echoed)
MAX_ERROR_LINE = 1_000

#: inputs tried, by class (printed at the end of the run), and what went wrong, by kind
TRIED: Counter = Counter()
PROBLEMS: Counter = Counter()
SLOWEST: list = [0.0]

PROFILES = [pytest.param(30, id="default"), pytest.param(260, id="long", marks=pytest.mark.slow)]


@pytest.fixture(scope="module", autouse=True)
def report_counts(request):
    yield
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if not TRIED:
        return
    lines = [f"fuzz inputs tried: {sum(TRIED.values())} in total; tracebacks {PROBLEMS['traceback']}, "
             f"hangs {PROBLEMS['hang']}, wrong exit codes {PROBLEMS['exit code']}, other failures "
             f"{PROBLEMS['other']}; slowest {SLOWEST[0]:.2f} s; by class:"]
    lines += [f"  {cls:40s} {n:6d}" for cls, n in sorted(TRIED.items())]
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print("\n" + "\n".join(lines), flush=True)


class Hang(Exception):
    pass


def _alarm(_signum, _frame):
    raise Hang(f"a command ran longer than {HANG_SECONDS} s")


def run(argv) -> tuple[int, str, str]:
    """``flinkspec ARGV`` in-process: (exit code, stdout, stderr); a hang raises Hang."""
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    SLOWEST[0] = max(SLOWEST[0], time.perf_counter() - t0)
    return code, out.getvalue(), err.getvalue()


def snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (and its kind) with a hash of its content."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st_ = os.lstat(p)
        if stat.S_ISREG(st_.st_mode):
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[str(p)] = stat.S_IFMT(st_.st_mode)
    return out


def assert_bad_input(cls: str, argv, folder: Path, *, allowed=(2,), out_path: Path | None = None) -> int:
    """Run ``argv``; exit code in ``allowed`` (2 unless the mutation may leave the input
    valid), a code-2 run has one short error line and no traceback, ``folder`` is unchanged,
    ``out_path`` (if given) not created."""
    before = snapshot(folder)
    existed = out_path is not None and os.path.lexists(out_path)
    TRIED[cls] += 1
    try:
        code, out, err = run(argv)
    except Hang:
        PROBLEMS["hang"] += 1
        raise
    if "Traceback" in err or "Traceback" in out or code == 3:
        PROBLEMS["traceback"] += 1
    elif code not in allowed:
        PROBLEMS["exit code"] += 1
    assert "Traceback" not in err and "Traceback" not in out, (cls, argv[:3], err[:500])
    assert code in allowed, (cls, code, err[:500])
    if code == 2 and (len(err.splitlines()) != 1 or len(err) > MAX_ERROR_LINE):
        PROBLEMS["other"] += 1
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("flinkspec: error: "), (cls, err[:800])
        assert len(lines[0]) <= MAX_ERROR_LINE, (cls, len(lines[0]))
        assert "internal error" not in lines[0], (cls, lines[0])
    assert snapshot(folder) == before, f"{cls}: an existing file changed"
    if out_path is not None and not existed:
        assert not os.path.lexists(out_path), f"{cls}: {out_path} was created"
    return code


# ----------------------------------------------------------------------------- counterexamples

COMMANDS = ("replay", "show", "show --html", "show --itf")


def _argv(command: str, path: Path, folder: Path) -> tuple[list, Path | None]:
    """The command line; for ``show --html`` an OUT that is new, or (by the input's hash)
    an existing page that must be left as it was."""
    if command in ("show --html", "show --itf"):
        out = folder / ("page.html" if command == "show --html" else "trace.itf.json")
        if int(hashlib.sha256(path.name.encode()).hexdigest(), 16) % 2:
            out.write_text("an existing page that a failed command must leave alone\n")
        return ["show", path, command.split()[1], out], out
    return [command, path], None


@contextlib.contextmanager
def fresh(work: Path):
    """A new folder for one input (so the unchanged-files check reads only its files)."""
    d = Path(tempfile.mkdtemp(dir=work))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def bases():
    """(file name, lines) of every committed counterexample."""
    assert CORPUS, "no committed counterexamples to mutate"
    return [(p.name, p.read_text().splitlines()) for p in CORPUS]


@pytest.fixture(scope="module")
def cluster_bases(bases):
    """The whole-cluster counterexamples (their scenario has no ``kind``): the action, header
    and job-input mutations below are about the cluster's format."""
    out = [(n, lines) for n, lines in bases if "kind" not in json.loads(lines[0])["scenario"]]
    assert out
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


def _write(folder: Path, data: bytes) -> Path:
    p = folder / f"m-{hashlib.sha256(data).hexdigest()[:12]}.ndjson"
    p.write_bytes(data)
    return p


def _walk(obj, path=()):
    """Every (path, value) in a JSON value."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _walk(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _walk(v, path + (i,))


def _set(obj, path, value):
    if not path:
        return value
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return obj


#: fields whose value may be anything (a mutation there may stay valid)
_FREE = ("expected", "actual")


def _fields(lines):
    """(line index, path) of every value of the file except the free ones and the line's 'type'."""
    out = []
    for i, line in enumerate(lines):
        for path, _v in _walk(json.loads(line)):
            if path and path[0] not in _FREE and path != ("type",):
                out.append((i, path))
    return out


@st.composite
def mutated_counterexample(draw, bases, cls: str):
    name, lines = draw(st.sampled_from(bases))
    text = "\n".join(lines) + "\n"
    raw = text.encode()
    if cls == "truncation":
        cut = draw(st.integers(0, len(raw) - 2))
        return raw[:cut]
    if cls == "invalid UTF-8":
        pos = draw(st.integers(0, len(raw)))
        bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\x80abc", b"\xf8\x88\x80"]))
        return raw[:pos] + bad + raw[pos:]
    objs = [json.loads(x) for x in lines]
    if cls in ("wrong types", "deep nesting", "huge numbers"):
        i, path = draw(st.sampled_from(_fields(lines)))
        if cls == "wrong types":
            value = draw(st.sampled_from([{"wrong": 1}, 1.5, [1.5], [[{"x": None}]]]))
            objs[i] = _set(objs[i], path, value)
            return "\n".join(json.dumps(o) for o in objs).encode() + b"\n"
        if cls == "deep nesting":
            depth = draw(st.sampled_from([40, 200, 5_000, 100_000]))
            opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
            marker = "\x00MARK\x00"
            objs[i] = _set(objs[i], path, marker)
            body = "\n".join(json.dumps(o) for o in objs)
            return body.replace(json.dumps(marker), opener * depth + "1" + closer * depth).encode() + b"\n"
        number = draw(st.sampled_from(["1" * 25, "-" + "9" * 4000, "1e400", "-1e999", "NaN", "Infinity",
                                       "-Infinity", str(2**63), str(-(2**63) - 1), "9" * 100_000]))
        marker = "\x00MARK\x00"
        objs[i] = _set(objs[i], path, marker)
        return "\n".join(json.dumps(o) for o in objs).replace(json.dumps(marker), number).encode() + b"\n"
    if cls == "unknown keys":
        i, path = draw(st.sampled_from([(i, p) for i, o in enumerate(objs) for p, v in _walk(o)
                                        if isinstance(v, dict) and not (p and p[0] in _FREE)
                                        and not (len(p) >= 3 and p[-2] == "job_input")]))
        target = objs[i]
        for p in path:
            target = target[p]
        if path[-1:] == ("job_input",):  # its keys are source names: an unknown one is not a source
            target["no-such-source"] = []
        else:
            target[draw(st.sampled_from(["colour", "Type", "format2", "x" * 5_000, ""]))] = 1
        return "\n".join(json.dumps(o) for o in objs).encode() + b"\n"
    if cls == "duplicate keys":
        i = draw(st.integers(0, len(lines) - 1))
        keys = re.findall(r'"([A-Za-z_]+)":', lines[i])
        key = draw(st.sampled_from(keys))
        pos = lines[i].index(f'"{key}":')
        lines = list(lines)
        lines[i] = lines[i][:pos] + f'"{key}": 0, ' + lines[i][pos:]
        return ("\n".join(lines) + "\n").encode()
    raise AssertionError(cls)


FILE_CLASSES = ("truncation", "invalid UTF-8", "wrong types", "deep nesting", "huge numbers", "unknown keys",
                "duplicate keys")


@pytest.mark.parametrize("budget", PROFILES)
@pytest.mark.parametrize("cls", FILE_CLASSES)
def test_mutated_counterexample_files(bases, work, cls, budget):
    @settings(max_examples=budget, suppress_health_check=list(HealthCheck), deadline=None, database=None)
    @given(data=mutated_counterexample(bases, cls), command=st.sampled_from(COMMANDS))
    def check(data, command):
        with fresh(work) as d:
            path = _write(d, data)
            argv, out = _argv(command, path, d)
            assert_bad_input(f"counterexample: {cls}", argv, d, out_path=out)

    check()


# ------------------------------------------------------------------------ action arguments

_KINDS = ("Deliver", "SourceEmit", "SourceWatermark", "SourceIdle", "SourceActive", "SourceEnd",
          "CheckpointTimeout", "AlignmentTimeout", "FailTask", "LoseTaskManager")


@st.composite
def bad_action(draw, bounds):
    """An action text that cannot be valid: a wrong type, an id out of range, a repeated,
    unknown or missing argument, not a call, or an unknown kind."""
    kind = draw(st.sampled_from(_KINDS + ("NotifyCheckpointComplete", "TriggerCheckpoint", "FailJobManager",
                                          "RestartFromSavepoint", "Bogus")))
    field = {"Deliver": "channel", "CheckpointTimeout": "checkpoint_id", "LoseTaskManager": "task_manager",
             "NotifyCheckpointComplete": "subtask", "TriggerCheckpoint": "savepoint",
             "RestartFromSavepoint": "parallelism"}.get(kind, "subtask")
    limit = {"channel": bounds["channel"], "task_manager": bounds["task_manager"],
             "checkpoint_id": 200_000}.get(field, bounds["subtask"])
    wrong = draw(st.sampled_from([
        "'3'", "3.0", "None", "True" if field != "savepoint" else "3", "(1, 2)", "[1]", "-1",
        str(limit + draw(st.integers(0, 10**6))) if field not in ("savepoint", "parallelism") else "'x'",
        str(2**31), str(10**30), "1" * 5_000, "1e999", "x", "__import__('os')", "-" * 301 + "1",
        "(" * 300 + "1" + ")" * 300]))
    shape = draw(st.sampled_from(["value", "repeated", "unknown", "positional+kw", "stars", "text"]))
    if kind == "Bogus":
        return f"Bogus({field}=1)"
    if shape == "repeated" and kind not in ("FailJobManager",):
        return f"{kind}({field}=0, {field}=0)"
    if shape == "unknown":
        return f"{kind}(chanel=1)"
    if shape == "positional+kw" and kind not in ("FailJobManager",):
        return f"{kind}(0, {field}=0)"
    if shape == "stars":
        return f"{kind}(**{{'{field}': 0}})"
    if shape == "text":
        return draw(st.sampled_from(["", "Deliver", "Deliver(channel=", "lambda: 0", "Deliver(channel=1)()",
                                     "Deliver(channel=1) + 1", "x" * 100_000, "Deliver(\x00)",
                                     "NotifyCheckpointComplete(subtask=0)"]))
    if kind == "FailJobManager":
        return f"FailJobManager({wrong})"
    if kind == "NotifyCheckpointComplete":
        return f"NotifyCheckpointComplete(subtask={wrong}, checkpoint_id=1)"
    return f"{kind}({field}={wrong})"


@pytest.mark.parametrize("budget", PROFILES)
def test_bad_action_arguments(cluster_bases, work, budget):
    bases = cluster_bases
    scenarios = {}
    for p in CORPUS:
        if any(p.name == n for n, _ in bases):
            scenarios[p.name] = id_bounds(load_counterexample(p).scenario)

    @settings(max_examples=3 * budget, suppress_health_check=list(HealthCheck), deadline=None, database=None)
    @given(data=st.data(), command=st.sampled_from(COMMANDS))
    def check(data, command):
        name, lines = data.draw(st.sampled_from(bases))
        bounds = scenarios[name]
        lines = list(lines)
        i = data.draw(st.integers(1, max(1, len(lines) - 2))) if len(lines) > 2 else None
        text = data.draw(bad_action(bounds))
        if i is None:  # no action line: insert one
            lines.insert(1, json.dumps({"type": "action", "step": 0, "action": text}))
        else:
            obj = json.loads(lines[i])
            obj["action"] = text
            lines[i] = json.dumps(obj)
        with fresh(work) as d:
            path = _write(d, ("\n".join(lines) + "\n").encode())
            argv, out = _argv(command, path, d)
            assert_bad_input("counterexample: bad action argument", argv, d, out_path=out)

    check()


# ----------------------------------------------------------------------- header and scenario

#: (path in the header, bad values): each breaks a rule of the header or of the scenario
HEADER_RULES = [
    (("format",), [2, 0, "1", True, None]),
    (("variant",), ["no-such-variant", "", "x" * 10_000, 3]),
    (("engine",), ["no-such-engine", "", 1]),
    (("expected_verdict",), [[], ["no-such-invariant"], "pass", [1], ["pass", "pass"]]),
    (("invariant",), ["no-such-invariant", ""]),
    (("seed",), ["0", 1.0, True, 2**64]),
    (("scenario", "seed"), ["0", False, -(2**64)]),
    (("scenario", "config", "channel_capacity"), [0, -1, "4", True, 10**12]),
    (("scenario", "config", "task_managers"), [0, 10**6, 2.0]),
    (("scenario", "config", "checkpointing_mode"), ["exactly-twice", 1]),
    (("scenario", "seams"), [["FLINK-0"], "FLINK-10354", [1], ["FLINK-17075", "FLINK-18533"]]),
    (("scenario", "config", "bugs"), [["FLINK-10354"]]),
    (("scenario", "config", "unaligned"), [1, "true", None]),
    (("scenario", "environment", "max_failures"), [-1, 1.5]),
    (("scenario", "environment", "rescale_options"), [[["no-such-op", [2]]], [["agg", [0]]], [["agg"]]]),
    (("scenario", "config", "max_failures"), [1]),
    (("scenario", "job_input"), [[], {"no-such-source": []}]),
    (("scenario", "graph", "operators"), [[], [{"name": "s"}]]),
    (("scenario", "graph", "operators", 0, "parallelism"), [0, -3, 40_000, "2", True]),
    (("scenario", "graph", "operators", 0, "name"), ["", "x" * 10_000_0]),
    (("scenario", "graph", "edges"), [[{"source": "x", "target": "y"}]]),
]


@pytest.mark.parametrize("budget", PROFILES)
def test_bad_header_fields(cluster_bases, work, budget):
    bases = cluster_bases
    @settings(max_examples=budget, suppress_health_check=list(HealthCheck), deadline=None, database=None)
    @given(data=st.data(), command=st.sampled_from(COMMANDS))
    def check(data, command):
        name, lines = data.draw(st.sampled_from(bases))
        path_, values = data.draw(st.sampled_from(HEADER_RULES))
        header = json.loads(lines[0])
        value = data.draw(st.sampled_from(values))
        if path_[:2] == ("scenario", "job_input") and isinstance(value, dict):
            value = {**header["scenario"]["job_input"], **value}
        header = _set(header, path_, value)
        text = "\n".join([json.dumps(header)] + list(lines[1:])) + "\n"
        with fresh(work) as d:
            path = _write(d, text.encode())
            argv, out = _argv(command, path, d)
            assert_bad_input("counterexample: header field", argv, d, out_path=out)

    check()


@pytest.mark.parametrize("budget", PROFILES)
def test_bad_job_input_records(cluster_bases, work, budget):
    bases = cluster_bases
    @settings(max_examples=budget, suppress_health_check=list(HealthCheck), deadline=None, database=None)
    @given(data=st.data())
    def check(data):
        name, lines = data.draw(st.sampled_from(bases))
        header = json.loads(lines[0])
        ji = header["scenario"]["job_input"]
        src = data.draw(st.sampled_from(sorted(ji)))
        record = data.draw(st.sampled_from([[0, "1", 2], [0, 1], [0, 1, 2, 3], [None, 1, 2], [0, 1.5, 2],
                                            [0, 1, True], [[0], 1, 2], "record", [0, 1, 2**70], [{"k": 1}, 1, 1]]))
        ji[src] = [[record] + (ji[src][0] if ji[src] else [])] + ji[src][1:]
        with fresh(work) as d:
            path = _write(d, ("\n".join([json.dumps(header)] + list(lines[1:])) + "\n").encode())
            assert_bad_input("counterexample: job input record", ["replay", path], d)

    check()


# --------------------------------------------------------------------------- OUT targets


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    """OUT paths --html must refuse, and the valid counterexample to show."""
    d = tmp_path_factory.mktemp("targets")
    (d / "dir").mkdir()
    os.mkfifo(d / "fifo")
    os.symlink(d / "dir", d / "link-to-dir")
    os.symlink(d / "missing-target", d / "dangling")
    return d, [d / "dir", "/dev/null", d / "fifo", d / "link-to-dir", d / "dangling",
               d / "no-such-folder" / "page.html", "/proc/self/page.html", d / "dir" / "sub" / "x.html"]


#: commands that write an OUT file: each must refuse a non-regular or unwritable OUT before it
#: runs anything (a search with --report refuses before the search)
OUT_COMMANDS = {
    "show --html": lambda good: ["show", good, "--html", "OUT"],
    "show --html --all-state": lambda good: ["show", good, "--html", "OUT", "--all-state"],
    "show --itf": lambda good: ["show", good, "--itf", "OUT"],
    "check --report": lambda good: ["check", "--only", "at-least-once-2pc", "--no-write", "--report", "OUT"],
    "explore --report": lambda good: ["explore", "--variant", "at-least-once-2pc", "--small", "--report", "OUT"],
}


@pytest.mark.parametrize("budget", PROFILES)
def test_show_html_refuses_non_regular_or_unwritable_targets(targets, budget):
    folder, outs = targets
    good = CORPUS[0]
    assert load_counterexample(good)  # valid: only the OUT is wrong

    @settings(max_examples=max(8, budget // 3), suppress_health_check=list(HealthCheck), deadline=None,
              database=None)
    @given(out=st.sampled_from(outs), command=st.sampled_from(sorted(OUT_COMMANDS)))
    def check(out, command):
        argv = [x if x != "OUT" else out for x in OUT_COMMANDS[command](good)]
        code = assert_bad_input(f"{command}: non-regular/unwritable OUT", argv, folder, out_path=None)
        assert code == 2

    check()
    assert stat.S_ISFIFO(os.stat(folder / "fifo").st_mode)  # the FIFO is still a FIFO
    assert not os.path.exists(folder / "dangling")  # nothing was written through the link


# ------------------------------------------------------------------------------- job specs


@st.composite
def mutated_job_spec(draw, cls: str):
    base = json.loads(json.dumps(_toml(draw(st.sampled_from(EXAMPLES)))))
    text = json.dumps(base)
    if cls == "truncation":
        return ".json", text[:draw(st.integers(0, len(text) - 1))].encode()
    if cls == "invalid UTF-8":
        pos = draw(st.integers(0, len(text)))
        return draw(st.sampled_from([".json", ".toml"])), text[:pos].encode() + b"\xff\xfe" + text[pos:].encode()
    paths = [p for p, _v in _walk(base) if p]
    if cls == "wrong types":
        path = draw(st.sampled_from(paths))
        return ".json", json.dumps(_set(base, path, draw(st.sampled_from([{"w": 1}, 1.5, [[1.5]]])))).encode()
    if cls == "deep nesting":
        depth = draw(st.sampled_from([40, 1_000, 100_000]))
        if draw(st.booleans()):
            return ".toml", ("x = " + "[" * depth + "]" * depth + "\n").encode()
        return ".json", ('{"name": ' + "[" * depth + "]" * depth + "}").encode()
    if cls == "huge numbers":
        path = draw(st.sampled_from([p for p, v in _walk(base) if type(v) is int]))
        number = draw(st.sampled_from(["1" * 25, "9" * 5_000, "1e999", "NaN", "-Infinity", str(2**64)]))
        body = json.dumps(_set(base, path, "\x00M\x00")).replace(json.dumps("\x00M\x00"), number)
        if draw(st.booleans()) and number in ("1" * 25, "9" * 5_000, "NaN", "-Infinity"):
            toml_number = {"NaN": "nan", "-Infinity": "-inf"}.get(number, number)
            return ".toml", f'name = "j"\n[[operators]]\nname = "s"\nkind = "source"\nparallelism = {toml_number}\n'.encode()
        return ".json", body.encode()
    if cls == "unknown keys":
        path = draw(st.sampled_from([p for p, v in _walk(base) if isinstance(v, dict)] + [()]))
        target = base
        for p in path:
            target = target[p]
        target[draw(st.sampled_from(["colour", "Kind", "y" * 5_000]))] = 1
        return ".json", json.dumps(base).encode()
    if cls == "duplicate keys":
        keys = re.findall(r'"([a-z_]+)":', text)
        key = draw(st.sampled_from(keys))
        pos = text.index(f'"{key}":')
        return ".json", (text[:pos] + f'"{key}": 0, ' + text[pos:]).encode()
    if cls == "too large":
        p = draw(st.integers(400, 5_000))
        ops = [{"name": "s", "kind": "source", "parallelism": p},
               {"name": "k", "kind": "keyed_aggregate", "aggregate": "count", "parallelism": p}]
        return ".json", json.dumps({"operators": ops, "edges": [{"source": "s", "target": "k",
                                                                 "partitioner": "hash"}]}).encode()
    raise AssertionError(cls)


def _toml(path: Path) -> dict:
    import tomllib  # only the job-spec fuzzing reads TOML

    return tomllib.loads(path.read_text())


#: every command that reads a job spec (a rejected spec is rejected before any search)
JOB_COMMANDS = {
    "compile": lambda path: ["compile", path],
    "check --job": lambda path: ["check", "--job", path, "--no-write"],
    "explore --job": lambda path: ["explore", "--job", path, "--max-states", "50"],
}


@pytest.mark.parametrize("budget", PROFILES)
@pytest.mark.parametrize("cls", FILE_CLASSES + ("too large",))
def test_mutated_job_specs(work, cls, budget):
    @settings(max_examples=budget, suppress_health_check=list(HealthCheck), deadline=None, database=None)
    @given(spec=mutated_job_spec(cls), json_out=st.booleans(), command=st.sampled_from(sorted(JOB_COMMANDS)))
    def check(spec, json_out, command):
        ext, data = spec
        with fresh(work) as d:
            path = d / f"job{ext}"
            path.write_bytes(data)
            argv = JOB_COMMANDS[command](path) + (["--json"] if json_out else [])
            assert_bad_input(f"job spec: {cls}", argv, d)

    check()


# ---------------------------------------------------------------------------- arguments

_HUGE = ["9" * 30, "-" + "9" * 30, "1" * 5_000]


@st.composite
def bad_argv(draw, command: str, spec: Path):
    if command == "compile":
        flag = draw(st.sampled_from(["--task-managers", "--slots"]))
        value = draw(st.sampled_from(["0", "-1", "x", "1.5", "", "10001" if flag == "--task-managers" else "100001",
                                      *_HUGE]))
        if flag == "--slots" and value == "0":
            value = "-1"
        return ["compile", spec, flag, value]
    if command == "keygroup":
        p = draw(st.sampled_from(["0", "-1", "32769", "x", *_HUGE]))
        rest = draw(st.sampled_from([[], ["-m", "0"], ["-m", "40000"], ["-t", "int"], ["-t", "nope"]]))
        keys = draw(st.lists(st.text(max_size=20).filter(lambda k: not k.startswith("-")), max_size=3))
        return ["keygroup", *keys, "key", "-p", p, *rest]
    if command == "keygroup-types":
        t, key = draw(st.sampled_from([("int", "x"), ("int", "99999999999"), ("long", "1" * 30), ("boolean", "maybe"),
                                       ("long", "1.5"), ("int", "1" * 5_000)]))
        return ["keygroup", key, "-p", "3", "-t", t]
    if command == "spark-replay":
        base = ["spark-replay", "--engine", "standin", "--runs", "5"]
        case = draw(st.sampled_from(["master", "runs", "seed", "timeout", "conf", "variant", "partitions",
                                     "max-steps"]))
        if case == "master":
            host = draw(st.sampled_from(["127.0.0.1", "localhost", "host", "bad host", "-x", "a..b", "", "[::1"]))
            port = draw(st.sampled_from(["0", "65536", "99999", "-1", "x", "", "7077" if host in (
                "bad host", "-x", "a..b", "", "[::1") else "0"]))
            master = draw(st.sampled_from([f"spark://{host}:{port}", f"spark://{host}", "lokal[2]", "local[0]",
                                           "local[x]", "mesos://h:5050", "", "k8s://", "yarn-cluster",
                                           "local[2" + "]" * 3, "spark://" + "h" * 100_000 + ":1",
                                           f"spark://127.0.0.1:7077,{host}:{port}"]))
            return base + ["--master", master]
        if case == "runs":
            return ["spark-replay", "--engine", "standin", "--runs", draw(st.sampled_from(
                ["0", "-5", "x", "1.5", str(10**12), *_HUGE]))]
        if case == "seed":
            return base + ["--seed", draw(st.sampled_from([str(2**63), str(-(2**63) - 1), "x", *_HUGE]))]
        if case == "timeout":
            return base + ["--master", "spark://127.0.0.1:7077", "--master-timeout",
                           draw(st.sampled_from(["0", "-1", "nan", "inf", "x", "1e9"]))]
        if case == "conf":
            return base + ["--conf", draw(st.sampled_from(["novalue", "=x", " =1", ""]))]
        if case == "variant":
            return base + ["--variant", draw(st.sampled_from(["nope", "x" * 100_000, ""]))]
        if case == "partitions":
            return base + ["--partitions", draw(st.sampled_from(["0", "-1", str(10**9)]))]
        return base + ["--max-steps", draw(st.sampled_from(["0", "-1", str(10**12)]))]
    if command == "explore":
        base = ["explore", "--variant", "at-least-once-2pc", "--small"]
        case = draw(st.sampled_from(["workers", "master", "depth", "states", "seconds", "variant", "seed", "combo"]))
        if case == "workers":
            return base + ["--workers", draw(st.sampled_from(["0", "-1", "x", "1.5", *_HUGE]))]
        if case == "master":
            return base + ["--master", draw(st.sampled_from(["lokal[2]", "local[0]", "spark://h:99999", "spark://:1",
                                                              "yarn", "k8s://", "", "spark://" + "h" * 100_000]))]
        if case == "depth":
            return base + ["--max-depth", draw(st.sampled_from(["0", "-1", "x", *_HUGE]))]
        if case == "states":
            return base + ["--max-states", draw(st.sampled_from(["0", "-5", "1e3", *_HUGE]))]
        if case == "seconds":
            return base + ["--max-seconds", draw(st.sampled_from(["0", "-1", "nan", "inf", "x"]))]
        if case == "variant":
            return ["explore", "--variant", draw(st.sampled_from(["nope", "x" * 100_000, ""])), "--small"]
        if case == "seed":
            return base + ["--seed", draw(st.sampled_from([str(2**64), "-1" + "0" * 30, "x"]))]
        return draw(st.sampled_from([["explore"], ["explore", "--all", "--variant", "aligned-2pc"],
                                     base + ["--workers", "2", "--master", "local[2]"],
                                     ["explore", "--job", spec, "--small"], ["explore", "--job", "/dev/null"]]))
    if command == "check":
        return draw(st.sampled_from([
            ["check", "--seed", "x"], ["check", "--seed", str(2**64)], ["check", "--seed", "1" * 5_000],
            ["check", "--only", "x" * 100_000], ["check", "--variant", "nope"], ["check", "--job", "/dev/null"],
            ["check", "--job", "/no/such/job.toml"], ["check", "--job", spec, "--only", "aligned-2pc"],
            ["check", "--profile", "nope"], ["check", "--list", "--report", "/dev/null"]]))
    if command == "peer":
        return draw(st.sampled_from([["peer", "--class", "NoSuchTest"], ["peer", "--class", ""],
                                     ["peer", "--class", "x" * 100_000], ["peer", "--nope"]]))
    if command == "corpus":
        return draw(st.sampled_from([["corpus"], ["corpus", "nope"], ["corpus", "update", "/no/such/run-dir"],
                                     ["corpus", "update", "/dev/null"], ["corpus", "update", spec]]))
    if command == "prove":
        return ["prove", "--timeout", draw(st.sampled_from(["0", "-1", "nan", "inf", "x"]))]
    if command == "usage":
        return draw(st.sampled_from([["nope"], ["compile"], ["replay"], ["show"], ["keygroup"], ["bench"],
                                     ["spark-replay"], ["compile", spec, "--nope"], ["check", "--profile", "x"],
                                     ["check", "--only", "no-such-suite"], ["replay", "/no/such/file.ndjson"],
                                     ["show", "/dev/null"], ["replay", "/proc"], ["compile", "/dev/null"],
                                     ["check", "--only", "at-least-once-2pc", "--corpus", "/dev/null"],
                                     ["check", "--only", "at-least-once-2pc", "--corpus", "/proc/self/corpus"],
                                     ["check", "--only", "at-least-once-2pc", "--corpus", spec]]))
    raise AssertionError(command)


ARG_COMMANDS = ("compile", "keygroup", "keygroup-types", "spark-replay", "explore", "check", "peer", "corpus",
                "prove", "usage")


@pytest.mark.parametrize("budget", PROFILES)
@pytest.mark.parametrize("command", ARG_COMMANDS)
def test_bad_arguments(work, command, budget):
    spec = ROOT / "examples" / "reference-window-job.toml"

    @settings(max_examples=budget, suppress_health_check=list(HealthCheck), deadline=None, database=None)
    @given(argv=bad_argv(command, spec))
    def check(argv):
        with fresh(work) as d:
            if argv[0] == "spark-replay":
                argv = argv + ["--out", d / "spark-out", "--no-counterexamples"]
            assert_bad_input(f"arguments: {command}", argv, d, out_path=d / "spark-out")

    check()
