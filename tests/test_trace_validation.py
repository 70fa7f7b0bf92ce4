"""Trace validation (``properties/flinklog.py``, ``properties/flinktrace.py``,
``properties/tracevalidation.py``; ``flinkspec validate`` / ``flinkspec trace``).

* the log parser against the committed excerpt of a real Flink 2.3.0 log, every expectation
  derived here from the raw text with this file's own regular expressions;
* every committed real trace validates ``consistent``;
* the validator can fail: one event of a real trace changed gives ``divergent`` at that event;
* the mapping rule "trigger-at-a-task-not-running" leaves a not-ready checkpoint out and binds
  the later ids with a shift;
* ``observe`` on a hand-driven model run;
* malformed trace files and the CLI's exit codes;
* the search is deterministic.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import attrs
import pytest

from flinkspec import cli
from model import actions as A
from model.cluster import Cluster
from model.errors import FlinkspecError
from properties.flinklog import log_lines, observations
from properties.flinktrace import FAULT_KINDS, load_trace, render
from properties.tracevalidation import (CONSISTENT, DIVERGENT, RULES, expected_events, observe, scenario_of,
                                        validate)
from tests.scenario_util import sub

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "traces"
LOG = ROOT / "tests" / "data" / "flink-2.3.0-recorded-runs.log.gz"
TRACE_FILES = sorted(TRACES.glob("*.ndjson"))

#: fault kinds whose committed trace was recorded apart, with a log excerpt of its own run
OWN_EXCERPTS = {"checkpoint-declined": ROOT / "tests" / "data" / "flink-2.3.0-declined-snapshots.log.gz"}

#: search budgets of the mutation tests: each verdict below comes in a few seconds
#: the states bound decides (a verdict must not depend on the machine's load); the seconds
#: bound only stops a search gone wrong
BUDGET = {"max_states": 50_000, "max_seconds": 900.0}


def _trace_file(kind: str) -> Path:
    (path,) = [p for p in TRACE_FILES if p.name.startswith(kind + "-seed")]
    return path


# -- the raw log, read independently of properties/flinklog.py ----------------------------------------

_STAMP = re.compile(r"^\d\d:\d\d:\d\d,\d{3} ")
_R_JOB_RUNNING = re.compile(r"ExecutionGraph \[.*\] - Job (\S+) \(([0-9a-f]{32})\) switched from state CREATED to RUNNING\.")
_R_JOB_END = re.compile(r"ExecutionGraph \[.*\] - Job \S+ \([0-9a-f]{32}\) switched from state \w+ to (FINISHED|FAILED|CANCELED)\.")
_R_TASK_FINISHED = re.compile(r"ExecutionGraph \[.*\] - .* \(\d+/\d+\) \([0-9a-f_]+\) switched from \w+ to FINISHED")
_R_TASK = re.compile(r"ExecutionGraph \[.*\] - .* \((\d+)/(\d+)\) \([0-9a-f]{32}_([0-9a-f]{32})_(\d+)_(\d+)\) switched from")
_R_TRIGGER = re.compile(r"CheckpointCoordinator \[.*\] - Triggering checkpoint (\d+) \(type=")
_R_COMPLETED = re.compile(r"CheckpointCoordinator \[.*\] - Completed checkpoint (\d+) for job")
_R_EXPIRED = re.compile(r"CheckpointCoordinator \[.*\] - Checkpoint (\d+) of job \S+ expired before completing")
_R_RESTARTED = re.compile(r"JobMaster \[.*\] - (\d+) tasks will be restarted to recover the failed task")
_R_DECLINE = re.compile(r"CheckpointCoordinator \[.*\] - Decline checkpoint (\d+) by task")
_R_REASON = re.compile(r"Failure reason: (.*?)\.?$")


#: an earlier recording whose log holds declines by tasks that were not ready (the reason on the
#: stack trace's first line) and the loss of a TaskManager running tasks
DECLINES_LOG = Path(__file__).resolve().parent / "data" / "flink-2.3.0-runs-with-declines.log.gz"
#: the excerpt of the recording that holds the committed traces of the runs restored from a
#: retained checkpoint (CLAIM, NO_CLAIM) and of a stop-with-savepoint with the same parallelisms
#: (the same loggers kept as in LOG), and its number of job phases
RESTORES_LOG = Path(__file__).resolve().parent / "data" / "flink-2.3.0-retained-restores.log.gz"
RESTORES_PHASES = 6


def _raw_text() -> str:
    with gzip.open(LOG, "rt", encoding="utf-8") as f:
        return f.read()


def _raw_phases(text: str) -> list[dict]:
    """Per job (in the order each first switched CREATED -> RUNNING): its name, its timestamped
    lines up to its first task or job reaching FINISHED (Flink's checkpoints past it are not the
    trace's), and every task line of it (for the vertex shapes)."""
    phases: list[dict] = []
    cur = None
    for raw in text.splitlines():
        if not _STAMP.match(raw):
            continue
        m = _R_JOB_RUNNING.search(raw)
        if m and (cur is None or m.group(2) != cur["id"]) and m.group(2) not in {p["id"] for p in phases}:
            cur = {"name": m.group(1), "id": m.group(2), "lines": [], "vertices": {}, "ended": False}
            phases.append(cur)
            continue
        if cur is None:
            continue
        t = _R_TASK.search(raw)
        if t and t.group(5) == "0":
            cur["vertices"].setdefault(t.group(3), int(t.group(2)))
        if cur["ended"]:
            continue
        if _R_TASK_FINISHED.search(raw) or _R_JOB_END.search(raw):
            cur["ended"] = True
            continue
        cur["lines"].append(raw)
    return phases


@pytest.fixture(scope="module")
def raw():
    return _raw_text()


@pytest.fixture(scope="module")
def parsed(raw):
    return observations(raw, phases=9)


def test_log_excerpt_holds_nine_job_phases(raw, parsed):
    events, shapes = parsed
    assert len(_raw_phases(raw)) == 9
    assert len(shapes) == 9
    assert [e["phase"] for e in events if e["event"] == "job_submitted"] == list(range(9))
    # the wrong number of phases is refused, naming both
    with pytest.raises(FlinkspecError, match=r"9 job phase.*8"):
        observations(raw, phases=8)


def test_checkpoint_triggers_and_completions_as_in_the_raw_log(raw, parsed):
    events, _ = parsed
    want = []
    for ph in _raw_phases(raw):
        for line in ph["lines"]:
            for kind, rx in (("checkpoint_triggered", _R_TRIGGER), ("checkpoint_completed", _R_COMPLETED)):
                m = rx.search(line)
                if m:
                    want.append((kind, int(m.group(1))))
    got = [(e["event"], e["checkpoint"]) for e in events
           if e["event"] in ("checkpoint_triggered", "checkpoint_completed")]
    assert sum(1 for k, _ in want if k == "checkpoint_completed") >= 20  # the excerpt is not trivial
    assert sum(1 for e in events if e["event"] == "checkpoint_completed") == \
        sum(1 for k, _ in want if k == "checkpoint_completed")
    assert got == want
    # every completion follows its own trigger in the same phase
    phase, triggered = None, set()
    for e in events:
        if e["event"] == "job_submitted":
            phase, triggered = e["phase"], set()
        elif e["event"] == "checkpoint_triggered":
            triggered.add(e["checkpoint"])
        elif e["event"] == "checkpoint_completed":
            assert e["checkpoint"] in triggered, (phase, e)
    expired = [int(m.group(1)) for ph in _raw_phases(raw) for line in ph["lines"]
               for m in [_R_EXPIRED.search(line)] if m]
    assert expired and [e["checkpoint"] for e in events
                        if e["event"] == "checkpoint_aborted" and e["reason"] == "expired"] == expired


def test_failover_restart_sets_have_flinks_own_count(raw, parsed):
    events, _ = parsed
    counts = [int(m.group(1)) for ph in _raw_phases(raw) for line in ph["lines"]
              for m in [_R_RESTARTED.search(line)] if m]
    failovers = [e for e in events if e["event"] == "failover"]
    assert len(counts) >= 3
    assert len(failovers) == len(counts)
    for ev, n in zip(failovers, counts):
        assert len(ev["restart"]) == n, ev
        assert len({tuple(t) for t in ev["restart"]}) == n  # no task twice
        assert ev["flink_count"] == n


def test_every_task_is_within_its_phases_vertices(raw, parsed):
    events, shapes = parsed
    raw_phases = _raw_phases(raw)
    for ph, shape in zip(raw_phases, shapes):
        # the shapes: one entry per JobVertex, in the order its first attempt appears, with its parallelism
        assert shape["parallelism"] == list(ph["vertices"].values()), ph["name"]
    phase = None
    seen = 0
    for e in events:
        if e["event"] == "job_submitted":
            phase = e["phase"]
            continue
        tasks = [e[k] for k in ("task", "failed_task") if k in e]
        tasks += [t for k in ("restart", "tasks") for t in e.get(k, ())]
        par = shapes[phase]["parallelism"]
        for v, s in tasks:
            seen += 1
            assert 0 <= v < len(par) and 0 <= s < par[v], (phase, e)
    assert seen >= 10


_R_TMS = re.compile(r"MiniCluster \[.*\] - Starting \d+ TaskManager\(s\)")
_R_TM = re.compile(r"TaskManagerRunner \[.*\] - Starting TaskManager with ResourceID: (\S+)")
_R_DEPLOY = re.compile(r"ExecutionGraph \[.*\] - Deploying .* with attempt id [0-9a-f]{32}_([0-9a-f]{32})_(\d+)_\d+ "
                       r"and vertex id \S+ to (\S+) @")
_R_GONE = re.compile(r"ExecutionGraph \[.*\] - .* \(\d+/\d+\) \([0-9a-f]{32}_([0-9a-f]{32})_(\d+)_\d+\) "
                     r"switched from \w+ to (FAILED|CANCELING|CANCELED|FINISHED)")
_R_MARKER = re.compile(r"flinkspec\.trace \[.*\] - flinkspec: TaskManager (\d+) terminated")


def _lost_tasks(raw, parsed):
    """The tasks of a ``task_manager_lost`` event: those deployed (Flink's "Deploying ... to
    RESOURCE") to the TaskManager the marker names (the MiniCluster's start order of its
    "Starting TaskManager with ResourceID" lines) and not yet failed, cancelled or finished."""
    events, _ = parsed
    vertex_pos = [list(ph["vertices"]) for ph in _raw_phases(raw)]
    phase, resources, where, gone, want = -1, [], {}, set(), []
    for line in raw.splitlines():
        if not _STAMP.match(line):
            continue
        if _R_TMS.search(line):
            resources = []
        elif (m := _R_TM.search(line)):
            resources.append(m.group(1))
        elif (m := _R_JOB_RUNNING.search(line)):
            phase += 1
            where, gone = {}, set()
        elif (m := _R_DEPLOY.search(line)):
            where[(m.group(1), int(m.group(2)))] = m.group(3)
            gone.discard((m.group(1), int(m.group(2))))
        elif (m := _R_GONE.search(line)):
            gone.add((m.group(1), int(m.group(2))))
        elif (m := _R_MARKER.search(line)):
            rid = resources[int(m.group(1))]
            want.append(sorted([vertex_pos[phase].index(v), s] for (v, s), r in where.items()
                               if r == rid and (v, s) not in gone))
    got = [e["tasks"] for e in events if e["event"] == "task_manager_lost"]
    return got, want


def test_a_lost_taskmanagers_tasks_are_those_deployed_to_it(raw, parsed):
    """Both real logs (the lost TaskManager ran tasks in each)."""
    with gzip.open(DECLINES_LOG, "rt", encoding="utf-8") as f:
        other = f.read()
    wants = []
    for text, events in ((raw, parsed), (other, observations(other, phases=9))):
        got, want = _lost_tasks(text, events)
        assert want and got == want
        wants += want
    assert all(wants)  # losses of TaskManagers running tasks


def _logged_runs(text: str, parsed) -> dict[int, list[tuple]]:
    """job seed -> per phase of its run, (JobVertex shapes, the parser's events of the phase):
    every phase of the log belongs to one conform run (``conform-<job_seed>-phase<k>``)."""
    events, shapes = parsed
    names = [ph["name"] for ph in _raw_phases(text)]
    runs: dict[int, list[int]] = {}
    for i, n in enumerate(names):
        m = re.fullmatch(r"conform-(\d+)-phase(\d+)", n)
        assert m, n
        runs.setdefault(int(m.group(1)), []).append(i)
        assert int(m.group(2)) == len(runs[int(m.group(1))]) - 1, names
    assert sum(map(len, runs.values())) == len(shapes)
    per_phase: list[list] = [[] for _ in names]
    phase = -1
    for e in events:
        if e["event"] == "job_submitted":
            phase = e["phase"]
        per_phase[phase].append(e)
    return {seed: [(shapes[i], per_phase[i]) for i in idx] for seed, idx in runs.items()}


def test_committed_traces_of_the_logged_runs_are_their_parse(raw, parsed):
    """A committed trace recorded in the run a log excerpt holds (its job's name,
    ``conform-<job_seed>-phase<k>``, is in the log) is the parser's events of that run's phases,
    with the header's JobVertex shapes; and every phase of a log belongs to one conform run."""
    with gzip.open(RESTORES_LOG, "rt", encoding="utf-8") as f:
        restores = f.read()
    logs = [_logged_runs(raw, parsed), _logged_runs(restores, observations(restores, phases=RESTORES_PHASES))]
    assert sum(map(len, logs[0].values())) == 9
    checked = 0
    for path in TRACE_FILES:
        tr = load_trace(path)
        if tr.header["fault"] in OWN_EXCERPTS:
            checked += 1  # its run has an excerpt of its own (test_a_trace_with_its_own_excerpt_is_its_parse)
            continue
        if tr.header.get("setup", "minicluster") != "minicluster":
            continue  # a standalone cluster's logs are not in the excerpts
        found = [runs[tr.header["job_seed"]] for runs in logs if tr.header["job_seed"] in runs]
        assert len(found) == 1, f"{path.name}: its run is not in one log excerpt (record them together)"
        checked += 1
        assert [shape for shape, _ in found[0]] == tr.header["flink_vertices"], path.name
        got = []
        for k, (_shape, events) in enumerate(found[0]):
            got += [dict(e, phase=k) if e["event"] == "job_submitted" else e for e in events]
        assert got == [{k: v for k, v in e.items() if k != "seq"} for e in tr.events], path.name
    assert checked == sum(1 for p in TRACE_FILES if "jobmanager-loss" not in p.name) > 0


@pytest.mark.parametrize("kind", sorted(OWN_EXCERPTS))
def test_a_trace_with_its_own_excerpt_is_its_parse(kind):
    """A committed trace recorded apart is the parser's events of its own run's log excerpt (the
    run's MiniCluster, its JobManager's and the recorder's lines), with the header's shapes."""
    tr = load_trace(_trace_file(kind))
    with gzip.open(OWN_EXCERPTS[kind], "rt", encoding="utf-8") as f:
        text = f.read()
    assert f"conform-{tr.header['job_seed']}-phase0" in text
    events, shapes = observations(text, phases=len(tr.header["phases"]))
    assert shapes == tr.header["flink_vertices"]
    assert events == [{k: v for k, v in e.items() if k != "seq"} for e in tr.events]


def test_continuation_lines_belong_to_their_entry():
    text = ("12:00:00,000 INFO  a.b.C [t] - first\n"
            "java.lang.Exception: boom\n"
            "\tat x.y.Z(Z.java:1)\n"
            "12:00:00,001 WARN  a.b.D [t] - second\n")
    entries = list(log_lines(text))
    assert len(entries) == 2
    assert entries[0][2] == "first\njava.lang.Exception: boom\n\tat x.y.Z(Z.java:1)"
    assert entries[1][:3] == ("WARN", "a.b.D", "second")
    # in a real log: the reason of a decline stands on the stack trace's first line, not on the entry's
    with gzip.open(DECLINES_LOG, "rt", encoding="utf-8") as f:
        raw = f.read()
    parsed = observations(raw, phases=9)
    lines = raw.splitlines()
    reasons = []
    for i, line in enumerate(lines):
        if _R_DECLINE.search(line):
            assert "Failure reason" not in line
            j = i + 1
            while j < len(lines) and not _STAMP.match(lines[j]):
                m = _R_REASON.search(lines[j]) if "Failure reason: " in lines[j] else None
                if m:
                    reasons.append(re.split(r"\.", m.group(1))[0] if m.group(1).count(".") else m.group(1))
                    break
                j += 1
    declined = [e for e in parsed[0] if e["event"] == "checkpoint_aborted" and e["reason"] == "declined"]
    assert declined and len(declined) == len(reasons)
    assert [e["flink_reason"] for e in declined] == reasons
    assert any("not ready" in r for r in reasons)


@pytest.mark.parametrize("text", ["", "\n\n", "garbage\nmore garbage\n\x00\x01",
                                  "12:00:00,000 INFO  a.b.C [t] - nothing of a job\n"])
def test_a_log_without_jobs_is_a_clear_error(text):
    with pytest.raises(FlinkspecError, match=r"the log holds 0 job phase\(s\), the run had 1"):
        observations(text, phases=1)


# -- the committed real traces --------------------------------------------------------------------------


def test_the_committed_traces_are_one_per_fault_kind():
    assert len(TRACE_FILES) >= 7
    faults = [json.loads(p.read_text(encoding="utf-8").splitlines()[0])["fault"] for p in TRACE_FILES]
    assert len(set(faults)) == len(faults)
    assert set(faults) <= set(FAULT_KINDS)


@pytest.mark.parametrize("path", TRACE_FILES, ids=[p.name.split("-seed")[0] for p in TRACE_FILES])
def test_every_committed_trace_is_consistent(path):
    tr = load_trace(path)
    # the state bound decides; the clock only guards (under `-n auto` the files share the cores)
    v = validate(tr, max_states=100_000, max_seconds=300.0)
    assert v.verdict == CONSISTENT, v.to_dict()
    assert v.matched == v.total == len(expected_events(tr)[0])
    assert v.first_unmatched is None
    # every event is either expected or left out by a named rule, never dropped silently
    expected, _ = expected_events(tr)
    assert {e.seq for e in expected} | {o.seq for o in v.omitted} == set(range(len(tr.events)))
    assert all(o.rule in RULES for o in v.omitted)
    assert v.actions  # the model run that produced it


# -- the validator can fail -----------------------------------------------------------------------------


def _write(tmp_path: Path, head: dict, events: list[dict], name: str = "mutated.ndjson") -> Path:
    p = tmp_path / name
    p.write_text(render(head, [{k: v for k, v in e.items() if k != "seq"} for e in events]), encoding="utf-8")
    return p


def _mutated(tmp_path: Path, kind: str, change) -> tuple:
    """The trace of ``kind`` with ``change(events)`` applied (returns the changed event's index),
    written to a file and read back."""
    tr = load_trace(_trace_file(kind))
    events = [json.loads(json.dumps(e)) for e in tr.events]
    at = change(events)
    loaded = load_trace(_write(tmp_path, tr.header, events))
    assert loaded.events[at]["seq"] == at
    return loaded, at


def _first(events, kind):
    return next(i for i, e in enumerate(events) if e["event"] == kind)


def _assert_divergent_at(v, at):
    assert v.verdict == DIVERGENT, v.to_dict()
    assert v.first_unmatched is not None and v.first_unmatched.seq == at, v.to_dict()
    exp_before = v.matched
    assert exp_before < v.total


def test_validation_fails_on_a_restore_of_a_checkpoint_that_never_completed(tmp_path):
    def change(events):
        i = _first(events, "restored")
        events[i]["checkpoint"] = 99
        return i

    tr, at = _mutated(tmp_path, "rocksdb-incremental", change)
    assert 99 not in {e["checkpoint"] for e in tr.events if e["event"] == "checkpoint_completed"}
    v = validate(tr, **BUDGET)
    _assert_divergent_at(v, at)
    assert v.first_unmatched.key == ("restored", 99)
    # the real restore is what the model could do there
    assert any(c.startswith("restored from checkpoint") for c in v.model_could)
    # the matched prefix stops before the failover step
    assert [e.seq for e in expected_events(tr)[0]][v.matched] <= at


@pytest.mark.parametrize("kind", ["rocksdb-incremental", "taskmanager-loss", "checkpoint-declined"])
def test_validation_fails_on_a_restart_set_one_task_short(tmp_path, kind):
    def change(events):
        i = _first(events, "failover")
        assert len(events[i]["restart"]) >= 2
        events[i]["restart"] = events[i]["restart"][:-1]
        return i

    tr, at = _mutated(tmp_path, kind, change)
    v = validate(tr, **BUDGET)
    _assert_divergent_at(v, at)
    assert v.first_unmatched.key[0] == "failover"
    assert [e.seq for e in expected_events(tr)[0]][v.matched] <= at


def test_a_declined_checkpoint_is_compared_with_its_task_and_its_global_failover():
    """The real checkpoint-declined trace: the first task whose asynchronous snapshot failed
    declines, and the CheckpointFailureManager (tolerable-failed-checkpoints 0) fails the job
    over globally; the model does the same by FailAsyncSnapshot of that task."""
    tr = load_trace(_trace_file("checkpoint-declined"))
    assert tr.header["config"]["tolerable_failed_checkpoints"] == 0
    keys = [e.key for e in expected_events(tr)[0]]
    decline = next(k for k in keys if k[0] == "checkpoint_aborted")
    assert len(decline) == 4 and decline[2] == "declined"  # the declining task is compared
    failover = next(k for k in keys if k[0] == "failover")
    assert failover[2] is True and len(failover[1]) == sum(tr.header["flink_vertices"][0]["parallelism"])
    v = validate(tr, **BUDGET)
    assert v.verdict == CONSISTENT, v.to_dict()
    assert any(a.startswith("FailAsyncSnapshot(") for a in map(repr, v.actions))


def test_validation_fails_on_a_global_failover_the_threshold_tolerates(tmp_path):
    """The same trace under tolerable-failed-checkpoints 1 (the header changed): the model's
    CheckpointFailureManager tolerates one declined checkpoint, so Flink's global failover is
    an event it cannot produce there."""
    tr = load_trace(_trace_file("checkpoint-declined"))
    head = json.loads(json.dumps(tr.header))
    head["config"]["tolerable_failed_checkpoints"] = 1
    v = validate(load_trace(_write(tmp_path, head, list(tr.events))), **BUDGET)
    _assert_divergent_at(v, _first(tr.events, "failover"))
    assert v.first_unmatched.key[0] == "failover" and v.first_unmatched.key[2] is True


def test_validation_fails_on_a_declined_checkpoint_followed_by_a_region_failover(tmp_path):
    """The global failover read as a region failover of the declining task: the model's
    manager fails the job over globally, never by region."""
    def change(events):
        i = _first(events, "failover")
        decline = next(e for e in events if e["event"] == "checkpoint_aborted")
        del events[i]["global"]
        events[i]["failed_task"] = decline["task"]
        return i

    tr, at = _mutated(tmp_path, "checkpoint-declined", change)
    v = validate(tr, **BUDGET)
    _assert_divergent_at(v, at)
    assert v.first_unmatched.key[0] == "failover" and v.first_unmatched.key[2] is False


@pytest.mark.parametrize("kind", ["task-failure", "unaligned", "checkpoint-expired"])
def test_validation_fails_on_a_completion_before_its_trigger(tmp_path, kind):
    def change(events):
        i = _first(events, "checkpoint_triggered")
        assert events[i + 1]["event"] in ("checkpoint_completed", "checkpoint_aborted")
        assert events[i + 1]["checkpoint"] == events[i]["checkpoint"]
        events[i], events[i + 1] = events[i + 1], events[i]
        return i

    tr, at = _mutated(tmp_path, kind, change)
    v = validate(tr, **BUDGET)
    _assert_divergent_at(v, at)
    assert v.matched == 0
    assert v.first_unmatched.key[0] in ("checkpoint_completed", "checkpoint_aborted")
    assert "checkpoint 1 triggered" in v.model_could


@pytest.mark.parametrize("where", ["vertex", "subtask"])
def test_validation_fails_on_a_failure_of_a_task_the_job_does_not_have(tmp_path, where):
    shape = load_trace(_trace_file("rocksdb-incremental")).header["flink_vertices"][0]["parallelism"]

    def change(events):
        i = _first(events, "task_failed")
        v, s = events[i]["task"]
        events[i]["task"] = [len(shape), 0] if where == "vertex" else [v, shape[v]]
        return i

    tr, at = _mutated(tmp_path, "rocksdb-incremental", change)
    v = validate(tr, **BUDGET)
    _assert_divergent_at(v, at)
    assert v.first_unmatched.key[0] == "task_failed"
    task = [len(shape), 0] if where == "vertex" else [0, shape[0]]
    assert f"names task {task}, which phase 0's JobGraph does not have" in v.reason, v.reason


@pytest.mark.slow
def test_a_task_the_job_does_not_have_diverges_where_the_exhaustive_search_does(tmp_path, monkeypatch):
    """The search stops at the first run that matches the prefix before an event naming a task
    the job does not have; searching every run instead ends at the same event, same prefix."""
    from properties import tracevalidation
    shape = load_trace(_trace_file("rocksdb-incremental")).header["flink_vertices"][0]["parallelism"]

    def change(events):
        i = _first(events, "task_failed")
        events[i]["task"] = [len(shape), 0]
        return i

    tr, at = _mutated(tmp_path, "rocksdb-incremental", change)
    early = validate(tr, **BUDGET)
    monkeypatch.setattr(tracevalidation, "unknown_task", lambda trace, expected: None)
    exhaustive = validate(tr, **BUDGET)
    assert exhaustive.reason is None and early.reason
    for v in (early, exhaustive):
        _assert_divergent_at(v, at)
    assert (early.matched, early.first_unmatched) == (exhaustive.matched, exhaustive.first_unmatched)
    assert early.states < exhaustive.states


# -- mapping rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["declined", "trigger_failed"])
def test_a_checkpoint_at_a_task_not_running_is_left_out_and_later_ids_shift(tmp_path, how):
    """A checkpoint that a not-ready task declined (or whose trigger failed) is inserted before the
    failure of the real unaligned trace; Flink's later ids shift by one, the model's do not."""
    tr = load_trace(_trace_file("unaligned"))
    events = [json.loads(json.dumps(e)) for e in tr.events]
    at = _first(events, "task_failed")
    new = max(e["checkpoint"] for e in events[:at] if e["event"] == "checkpoint_triggered") + 1
    for e in events[at:]:
        if e["event"] != "restored" and "checkpoint" in e and e["checkpoint"] >= new:
            e["checkpoint"] += 1
    abort = {"event": "checkpoint_aborted", "checkpoint": new, "reason": how,
             "flink_reason": ("Checkpoint was declined (tasks not ready)" if how == "declined"
                              else "TaskManager received a checkpoint request for unknown task")}
    if how == "declined":
        abort["task"] = [0, 0]
    events[at:at] = [{"event": "checkpoint_triggered", "checkpoint": new, "savepoint": False}, abort]
    t2 = load_trace(_write(tmp_path, tr.header, events))
    v = validate(t2, **BUDGET)
    assert v.verdict == CONSISTENT, v.to_dict()
    left = {o.seq: o.rule for o in v.omitted}
    assert left.get(at) == left.get(at + 1) == "trigger-at-a-task-not-running"
    binding = dict(v.binding)
    original = dict(validate(tr, **BUDGET).binding)  # the real trace's own binding (it may shift already)
    assert new not in binding
    later = sorted(f for f in binding if f > new)
    assert later and all(binding[f] == original[f - 1] for f in later)
    assert all(binding[f] == original[f] for f in binding if f < new)
    # without the rule's reason the same checkpoint is expected: an expired one at the same place is not left out
    events[at + 1] = {"event": "checkpoint_aborted", "checkpoint": new, "reason": "expired"}
    t3 = load_trace(_write(tmp_path, tr.header, events, "expired.ndjson"))
    exp, omitted = expected_events(t3)
    assert ("checkpoint_aborted", new, "expired") in [e.key for e in exp]
    assert at not in {o.seq for o in omitted}


# -- observe --------------------------------------------------------------------------------------------


def _step(c: Cluster, action) -> list:
    before = len(c.events)
    c.step(action)
    return observe(c, c.events[before:])


def _complete_checkpoint(c: Cluster) -> list:
    """Take unobservable control steps (deliveries, notifications) until a checkpoint completes."""
    skip = (A.TriggerCheckpoint, A.StopWithSavepoint, A.FailTask, A.LoseTaskManager, A.FailJobManager,
            A.CheckpointTimeout, A.SourceEmit, A.SourceWatermark, A.SourceEnd, A.SourceIdle, A.SourceActive)
    for _ in range(500):
        acts = [a for a in c.enabled_actions() if not isinstance(a, skip)]
        assert acts, "no step left before the checkpoint completed"
        obs = _step(c, acts[0])
        if obs:
            return obs
    raise AssertionError("no checkpoint completed in 500 steps")


def _regions(c: Cluster, pos: dict[str, int]) -> list[frozenset]:
    """The pipelined regions as (vertex position, subtask) sets: the connected components of the
    subtasks joined by channels (every exchange of these jobs is pipelined)."""
    parent = {st.id: st.id for st in c.eg.subtasks}

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for ch in c.eg.channels:
        parent[find(ch.producer)] = find(ch.consumer)
    groups: dict = {}
    for st in c.eg.subtasks:
        groups.setdefault(find(st.id), set()).add((pos[st.job_vertex], st.subtask_index))
    return [frozenset(g) for g in groups.values()]


def test_observe_maps_the_model_steps():
    tr = load_trace(_trace_file("task-failure"))
    shape = tr.header["flink_vertices"][0]["parallelism"]
    c = Cluster.from_scenario(scenario_of(tr))
    ops = [o["name"] for o in tr.header["job"]["operators"]]
    heads = sorted({st.job_vertex for st in c.eg.subtasks}, key=ops.index)
    pos = {name: i for i, name in enumerate(heads)}
    assert [max(st.subtask_index for st in c.eg.subtasks if st.job_vertex == h) + 1 for h in heads] == shape
    regions = _regions(c, pos)

    def region_of(task):
        (r,) = [r for r in regions if task in r]
        return r

    first, last = heads[0], heads[-1]
    assert _step(c, A.TriggerCheckpoint()) == [("checkpoint_triggered", 1, False)]
    assert _complete_checkpoint(c) == [("checkpoint_completed", 1)]
    assert _step(c, A.TriggerCheckpoint()) == [("checkpoint_triggered", 2, False)]
    # a failure of the first vertex's last subtask: the failure, its region's restart set, the
    # restore of the latest completed checkpoint (the pending one is aborted, which Flink does not log)
    failed = (0, shape[0] - 1)
    obs = _step(c, A.FailTask(sub(c.eg, first, shape[0] - 1)))
    assert sorted(obs, key=repr) == sorted([("task_failed", failed), ("failover", region_of(failed), False),
                                            ("restored", 1)], key=repr)
    # the last JobVertex in scheduling order, before any checkpoint: restored from none
    c2 = Cluster.from_scenario(scenario_of(tr))
    failed = (len(shape) - 1, shape[-1] - 1)
    obs = _step(c2, A.FailTask(sub(c2.eg, last, shape[-1] - 1)))
    assert sorted(obs, key=repr) == sorted([("task_failed", failed), ("failover", region_of(failed), False),
                                            ("restored", None)], key=repr)
    # an unobservable step observes nothing
    c3 = Cluster.from_scenario(scenario_of(tr))
    _step(c3, A.TriggerCheckpoint())
    quiet = [a for a in c3.enabled_actions() if isinstance(a, A.Deliver)]
    assert quiet and _step(c3, quiet[0]) == []


# -- bad input ------------------------------------------------------------------------------------------


def _good_lines() -> list[str]:
    return _trace_file("rocksdb-incremental").read_text(encoding="utf-8").splitlines()


def _bad(tmp_path, name, lines=None, data=None) -> Path:
    p = tmp_path / name
    if data is not None:
        p.write_bytes(data)
    else:
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _bad_files(tmp_path) -> list[tuple[Path, str]]:
    """(file, what its error must say beyond the file's name)."""
    good = _good_lines()
    head = json.loads(good[0])
    ev = [json.loads(x) for x in good[1:]]
    out = [(tmp_path / "missing.ndjson", "no such trace file"), (tmp_path, "folder")]
    out.append((_bad(tmp_path, "binary.ndjson", data=b"\xff\xfe\x00\x81garbage"), "UTF-8"))
    out.append((_bad(tmp_path, "empty.ndjson", data=b""), ":1: empty"))
    out.append((_bad(tmp_path, "notjson.ndjson", [good[0], good[1], "{not json"]), ":3: not JSON"))
    out.append((_bad(tmp_path, "format.ndjson", [json.dumps(dict(head, format="other"))] + good[1:]), ":1: "))
    out.append((_bad(tmp_path, "fault.ndjson", [json.dumps(dict(head, fault="meteor-strike"))] + good[1:]),
                ":1: fault: unknown fault kind 'meteor-strike'"))
    out.append((_bad(tmp_path, "event.ndjson", [good[0], good[1], json.dumps(dict(ev[1], event="teleported"))]
                     + good[3:]), ":3:"))
    swapped = [good[0], good[1], good[3], good[2]] + good[4:]
    out.append((_bad(tmp_path, "seq.ndjson", swapped), ":3: seq: 2, expected 1"))
    return out


def test_bad_trace_files_are_one_clear_error(tmp_path):
    for path, says in _bad_files(tmp_path):
        with pytest.raises(FlinkspecError) as e:
            load_trace(path)
        msg = str(e.value)
        assert msg.startswith(str(path)), msg
        assert says in msg, msg
        assert "\n" not in msg
    # the header's format must be the trace format, also when the rest is right
    head = json.loads(_good_lines()[0])
    p = _bad(tmp_path, "format2.ndjson", [json.dumps(dict(head, format="other"))] + _good_lines()[1:])
    with pytest.raises(FlinkspecError, match="flinkspec-trace"):
        load_trace(p)


@pytest.fixture
def main(monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "COMMANDS", ("trace", "validate"))
    monkeypatch.chdir(tmp_path)  # the report goes to ./results/validate-<time>/
    return cli.main


def test_cli_validate_bad_file_exits_2_with_one_line(main, capsys, tmp_path):
    for path, says in _bad_files(tmp_path):
        assert main(["validate", str(path)]) == 2, path
        out, err = capsys.readouterr()
        assert out == ""
        assert err.count("\n") == 1 and err.startswith("flinkspec: error: "), err
        assert "Traceback" not in err
        assert str(path.name) in err
    # a good file then a bad one: nothing is searched before every file is read
    bad = tmp_path / "missing.ndjson"
    assert main(["validate", str(TRACE_FILES[0]), str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "missing.ndjson" in err
    # an empty folder
    empty = tmp_path / "none"
    empty.mkdir()
    assert main(["validate", str(empty)]) == 2
    assert "no trace files" in capsys.readouterr().err
    assert main(["validate", str(TRACE_FILES[0]), "--max-states", "0"]) == 2
    assert "--max-states" in capsys.readouterr().err


def test_cli_validate_the_committed_traces(main, capsys):
    n = len(TRACE_FILES)
    assert main(["validate", str(TRACES)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == n + 1
    assert out[-1].startswith(f"{n}/{n} consistent, 0 divergent, 0 inconclusive")
    for p in TRACE_FILES:
        assert sum(1 for line in out if str(p) in line and "CONSISTENT" in line) == 1


def test_cli_validate_json(main, capsys, tmp_path):
    # one of the committed traces and a divergent copy of it (a trace whose divergence the
    # search rules out at once: a restore of a checkpoint that was never taken)
    good = _trace_file("checkpoint-declined")
    tr = load_trace(good)
    events = [json.loads(json.dumps(e)) for e in tr.events]
    events[_first(events, "restored")]["checkpoint"] = 99
    bad = _write(tmp_path, tr.header, events)
    assert main(["validate", str(good), str(bad), "--json", "--max-seconds", "900"]) == 1
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 3
    first, second, summary = lines
    assert first["file"] == str(good) and first["verdict"] == "consistent"
    assert first["matched"] == first["events"] and first["fault"] == "checkpoint-declined"
    assert second["verdict"] == "divergent" and second["first_unmatched"]["seq"] == _first(events, "restored")
    assert summary["traces"] == 2 and summary["consistent"] == 1 and summary["divergent"] == 1
    assert summary["per_fault"] == {"checkpoint-declined": {"consistent": 1, "divergent": 1}}
    report = json.loads(Path(summary["report"]).read_text(encoding="utf-8"))
    assert [t["verdict"] for t in report["traces"]] == ["consistent", "divergent"]
    # the model's run to the deepest matched point replays through the step function
    from properties.counterexample import validation as cx_validation

    run = Cluster.from_scenario(scenario_of(tr))
    for text in report["traces"][1]["model_actions"]:
        run.step(cx_validation.parse_action_text(text))
    assert report["traces"][1]["model_actions"]


def test_cli_validate_json_per_fault_counts(main, capsys):
    assert main(["validate", *map(str, TRACE_FILES), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == len(TRACE_FILES) + 1
    want: dict = {}
    for p in TRACE_FILES:
        fault = json.loads(p.read_text(encoding="utf-8").splitlines()[0])["fault"]
        want[fault] = want.get(fault, 0) + 1
    assert lines[-1]["per_fault"] == {f: {"consistent": k} for f, k in want.items()}
    assert [x["file"] for x in lines[:-1]] == [str(p) for p in TRACE_FILES]
    assert all(set(x["omitted"]) <= set(RULES) for x in lines[:-1])


def test_cli_trace_fault_kinds(main, capsys, tmp_path):
    assert main(["trace", "--faults", "nope", "--out", str(tmp_path / "x")]) == 2
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "nope" in err and "Traceback" not in err
    for name in FAULT_KINDS:
        assert name in err
    assert not (tmp_path / "x").exists()
    assert main(["trace", "--faults", "list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert listed == list(FAULT_KINDS)


# -- determinism ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["taskmanager-loss", "rescale-up"])
def test_validation_is_deterministic(kind):
    tr = load_trace(_trace_file(kind))
    a = validate(tr, max_states=100_000, max_seconds=300.0)
    b = validate(load_trace(_trace_file(kind)), max_states=100_000, max_seconds=300.0)
    assert a.verdict == b.verdict == CONSISTENT
    assert (a.states, a.actions, a.binding, a.omitted) == (b.states, b.actions, b.binding, b.omitted)
    assert a.to_dict() | {"seconds": 0} == b.to_dict() | {"seconds": 0}


# -- the divergences real traces showed, each a regression test --------------------------------------

REGRESSIONS = Path(__file__).resolve().parent / "data" / "trace-regressions"


def test_a_resubmitted_job_gets_flinks_default_partitioner_for_its_new_parallelisms():
    """Flink generates a resubmitted job's StreamGraph again: an edge the program set no
    partitioner on is forward once both ends have one parallelism (rebalance before), so the
    keyed operator and the sink chain into one JobVertex. The model kept the first phase's
    rebalance (three JobVertices where Flink had two) until ``rescale_graph`` chose again."""
    from model.rescaling import rescale_graph
    from model.streamgraph import StreamGraphBuilder, stream_graph_from_dict, stream_graph_to_dict

    b = StreamGraphBuilder("g")
    src = b.source("source", parallelism=2)
    agg = b.keyed_aggregate("agg", src, aggregate="count", parallelism=3)
    b.sink("sink", agg, parallelism=2)
    d = stream_graph_to_dict(b.build())
    for e in d["edges"]:
        if e["partitioner"] != "hash":
            del e["partitioner"]  # as a program (or a job file) that sets none
    g = stream_graph_from_dict(d)
    assert [e.partitioner for e in g.edges] == ["hash", "rebalance"]
    same = rescale_graph(g, {"agg": 2})
    assert [e.partitioner for e in same.edges] == ["hash", "forward"]
    assert [e.partitioner for e in rescale_graph(same, {"agg": 4}).edges] == ["hash", "rebalance"]
    explicit = rescale_graph(b.build(), {"agg": 2})  # a partitioner the program set stays
    assert [e.partitioner for e in explicit.edges] == ["hash", "rebalance"]
    assert stream_graph_to_dict(same)["edges"][1] == {"source": "agg", "target": "sink", "exchange_mode": "pipelined"}

    tr = load_trace(REGRESSIONS / "rescale-resubmission-default-partitioner.ndjson")
    assert validate(tr, **BUDGET).verdict == CONSISTENT


@pytest.mark.parametrize("name", ["completion-during-the-failover", "completion-during-a-taskmanager-loss"])
def test_a_checkpoint_completing_during_the_failover_is_expected_before_the_failure(name, monkeypatch):
    """Real runs where a checkpoint completed after the failure was reported and before the
    failover (and the restore used it): consistent only through the rule, which moves the
    completion before the failure; without the move the model cannot restore that checkpoint."""
    tr = load_trace(REGRESSIONS / f"{name}.ndjson")
    v = validate(tr, **BUDGET)
    assert v.verdict == CONSISTENT, v.to_dict()
    assert "completion-during-the-failover" in {o.rule for o in v.omitted}
    seqs = [e["seq"] for e in tr.events]
    restored = next(e for e in tr.events if e["event"] == "restored")
    done_at = next(e["seq"] for e in tr.events
                   if e["event"] == "checkpoint_completed" and e["checkpoint"] == restored["checkpoint"])
    start = next(e["seq"] for e in tr.events if e["event"] in ("task_failed", "task_manager_lost"))
    assert start < done_at < restored["seq"] and seqs == sorted(seqs)
    import properties.tracevalidation as tv

    monkeypatch.setattr(tv, "_completions_before_failures", lambda events: list(events))
    without = validate(tr, **BUDGET)
    assert without.verdict == DIVERGENT and without.first_unmatched.key[0] in ("restored", "checkpoint_completed")


# -- checkpoint storage ----------------------------------------------------------------------------


def test_shared_file_markers_are_parsed_from_the_log(raw, parsed):
    """The recorder's storage markers (every completed incremental checkpoint's shared files, each
    shared file deleted) become events, in the log's order, with the files the lines name: a
    deletion up to the phase's end (its first task or job FINISHED, or the job CANCELED), a
    checkpoint's files also after it (the poller noticed them late) until the next phase starts."""
    with gzip.open(RESTORES_LOG, "rt", encoding="utf-8") as f:
        restores = f.read()
    for text, events in ((raw, parsed[0]), (restores, observations(restores, phases=RESTORES_PHASES)[0])):
        want = []
        ended = False
        for line in text.splitlines():
            if re.search(r"ExecutionGraph \[.*\] - Job .* switched from state CREATED to RUNNING", line):
                ended = False
            elif re.search(r"ExecutionGraph \[.*\] - .* (switched from \w+ to FINISHED|switched from state \w+ to "
                           r"(FINISHED|FAILED|CANCELED))", line):
                ended = True
            m = re.search(r"\] - flinkspec: checkpoint (\d+) references shared files \[([^\]]*)\]", line)
            if m:
                want.append(("checkpoint_files", int(m.group(1)), [f for f in m.group(2).split(",") if f]))
            m = re.search(r"\] - flinkspec: shared file (\S+) deleted", line)
            if m and not ended:
                want.append(("shared_file_deleted", m.group(1)))
        got = [(e["event"], e["checkpoint"], e["shared"]) if e["event"] == "checkpoint_files"
               else (e["event"], e["file"]) for e in events if e["event"] in ("checkpoint_files", "shared_file_deleted")]
        assert want and got == want


def test_validation_fails_on_a_shared_file_deleted_while_referenced(tmp_path):
    """A shared file that a retained checkpoint references (state.checkpoints.num-retained = 2)
    deleted: the model's SharedStateRegistry never does it; divergent at that event. Deleting the
    same file once two later checkpoints completed is what the model does too."""
    tr = load_trace(_trace_file("rocksdb-incremental"))
    files = [e for e in tr.events if e["event"] == "checkpoint_files" and e["shared"]]
    assert files, "the real trace names the shared files of its checkpoints"
    first = files[0]

    def change(events):
        i = next(k for k, e in enumerate(events) if e.get("seq") == first["seq"]) + 1
        events.insert(i, {"event": "shared_file_deleted", "file": first["shared"][0]})
        return i

    mutated, at = _mutated(tmp_path, "rocksdb-incremental", change)
    v = validate(mutated, **BUDGET)
    _assert_divergent_at(v, at)
    assert first["shared"][0] in v.reason and "retained" in v.reason
    # at the end of the trace, after every later completion, the file may well be gone: consistent
    # only when two later checkpoints completed (else it is still retained)
    events = [json.loads(json.dumps(e)) for e in tr.events]
    events.append({"event": "shared_file_deleted", "file": first["shared"][0]})
    later = [e for e in tr.events if e["event"] == "checkpoint_completed" and e["checkpoint"] > first["checkpoint"]]
    still = [e["checkpoint"] for e in later][-2:]
    referenced_later = any(first["shared"][0] in e["shared"] for e in tr.events
                           if e["event"] == "checkpoint_files" and e["checkpoint"] in still)
    end = validate(load_trace(_write(tmp_path, tr.header, events, "end.ndjson")), **BUDGET)
    if len(later) >= 2 and not referenced_later:
        assert end.verdict == CONSISTENT, end.to_dict()
    else:
        assert end.verdict == DIVERGENT


# -- restores from a retained checkpoint (CLAIM, NO_CLAIM) ------------------------------------------


def _submission(events) -> int:
    """The index of the second phase's submission (from the retained checkpoint)."""
    return next(i for i, e in enumerate(events) if e["event"] == "job_submitted" and e["phase"] == 1)


@pytest.mark.parametrize("kind", ["claim-restore", "no-claim-restore"])
def test_a_retained_checkpoint_restore_is_recorded_with_its_claim_mode(kind):
    """The real run was cancelled after two completed checkpoints and submitted again from the
    latest; Flink names the restored snapshot by the type the claim mode gave it, and the new
    job's checkpoint ids go on after it."""
    tr = load_trace(_trace_file(kind))
    mode = FAULT_KINDS[kind].trace["claim_mode"]
    assert tr.header["phases"][1]["restore"] == {"snapshot": "retained-checkpoint", "claim_mode": mode}
    events = tr.events
    i = _submission(events)
    before = [e["checkpoint"] for e in events[:i] if e["event"] == "checkpoint_completed"]
    sub_ = events[i]
    assert len(before) >= 2 and sub_["savepoint"] == before[-1]
    assert sub_["restored_as"] == ("Checkpoint" if mode == "CLAIM" else "Savepoint")
    after = [e["checkpoint"] for e in events[i:] if e["event"] == "checkpoint_triggered"]
    assert after and after[0] == sub_["savepoint"] + 1
    assert [e for e in events[i:] if e["event"] == "checkpoint_completed"]  # more checkpoints after it


def test_validation_fails_on_a_submission_from_a_checkpoint_that_never_completed(tmp_path):
    """The second phase submitted from a checkpoint the cancelled job never completed (the one it
    triggered last, or one it never had): the model submits only from a retained checkpoint."""
    tr = load_trace(_trace_file("claim-restore"))
    i = _submission(tr.events)
    completed = {e["checkpoint"] for e in tr.events[:i] if e["event"] == "checkpoint_completed"}
    triggered = [e["checkpoint"] for e in tr.events[:i] if e["event"] == "checkpoint_triggered"]
    for bad in {max(triggered) + 5} | ({triggered[-1]} - completed):
        def change(events, bad=bad):
            events[i]["savepoint"] = bad
            return i

        mutated, at = _mutated(tmp_path, "claim-restore", change)
        v = validate(mutated, **BUDGET)
        _assert_divergent_at(v, at)
        assert v.first_unmatched.key == ("job_submitted", bad, "Checkpoint")
        assert f"checkpoint {bad}, which the cancelled job did not retain" in v.reason


def test_validation_fails_on_a_restore_named_by_the_other_claim_modes_type(tmp_path):
    for kind, other in (("claim-restore", "Savepoint"), ("no-claim-restore", "Checkpoint")):
        def change(events, other=other):
            i = _submission(events)
            events[i]["restored_as"] = other
            return i

        mutated, at = _mutated(tmp_path, kind, change)
        v = validate(mutated, **BUDGET)
        _assert_divergent_at(v, at)
        assert "gives it the type" in v.reason


def test_validation_fails_on_a_no_claim_restored_file_deleted(tmp_path):
    """NO_CLAIM: a shared file of the restored checkpoint deleted after the new job started is
    divergent at that deletion, even at the end of the trace (the new job never discards the
    user's snapshot); the real trace deletes none of them."""
    tr = load_trace(_trace_file("no-claim-restore"))
    i = _submission(tr.events)
    restored = tr.events[i]["savepoint"]
    files = next(e["shared"] for e in tr.events if e["event"] == "checkpoint_files" and e["checkpoint"] == restored)
    assert files
    deleted = {e["file"] for e in tr.events[i:] if e["event"] == "shared_file_deleted"}
    assert deleted and not deleted & set(files)  # the new job deleted files, never the restored ones
    for where in ("next", "end"):
        def change(events, where=where):
            at = i + 1 if where == "next" else len(events)
            events.insert(at, {"event": "shared_file_deleted", "file": files[0]})
            return at

        mutated, at = _mutated(tmp_path, "no-claim-restore", change)
        v = validate(mutated, **BUDGET)
        _assert_divergent_at(v, at) if where == "next" else None
        assert v.verdict == DIVERGENT and v.first_unmatched.seq == at, v.to_dict()
        assert "NO_CLAIM" in v.reason and files[0] in v.reason


def test_claim_the_restored_checkpoint_is_subsumed_like_the_new_jobs(tmp_path):
    """CLAIM: the real new job deleted the restored checkpoint's own files once two of its
    checkpoints completed (the restored one subsumed, SharedStateRegistry); a deletion of one of
    them right after the submission, while the restored checkpoint is retained, is divergent."""
    tr = load_trace(_trace_file("claim-restore"))
    i = _submission(tr.events)
    restored = tr.events[i]["savepoint"]
    files = next(e["shared"] for e in tr.events if e["event"] == "checkpoint_files" and e["checkpoint"] == restored)
    gone = [k for k, e in enumerate(tr.events) if k > i and e["event"] == "shared_file_deleted" and e["file"] in files]
    assert gone, "the new job discarded the claimed checkpoint's files"
    completions = [e["checkpoint"] for e in tr.events[i:gone[0]] if e["event"] == "checkpoint_completed"]
    assert len(completions) >= 2

    def change(events):
        events.insert(i + 1, {"event": "shared_file_deleted", "file": files[0]})
        return i + 1

    mutated, at = _mutated(tmp_path, "claim-restore", change)
    v = validate(mutated, **BUDGET)
    _assert_divergent_at(v, at)
    assert f"retained checkpoint(s) [{restored}]" in v.reason


@pytest.mark.parametrize("mode", ["CLAIM", "NO_CLAIM"])
def test_observe_a_submission_from_a_retained_checkpoint(mode):
    """``Cluster.restart_from_retained_checkpoint`` on the claim-restore trace's job: a new
    coordinator whose store holds the restored checkpoint (CLAIM: owned, subsumed later; NO_CLAIM:
    kept for the user), ids going on after it; observed as the submission Flink logs."""
    tr = load_trace(_trace_file("claim-restore"))
    scenario = scenario_of(tr)
    c = Cluster.from_scenario(attrs.evolve(scenario, config=attrs.evolve(scenario.config, restore_mode=mode)))
    for _ in range(2):
        _step(c, A.TriggerCheckpoint())
        _complete_checkpoint(c)
    assert c.coordinator.store.checkpoint_ids() == (1, 2)
    with pytest.raises(FlinkspecError, match="not retained"):
        c.copy().restart_from_retained_checkpoint(3)
    assert "not retained" in c.why_not_enabled(A.RestartFromRetainedCheckpoint(3))
    # a user's action: no engine is offered it
    assert not any(isinstance(a, A.RestartFromRetainedCheckpoint) for a in c.enabled_actions())
    assert _step(c, A.RestartFromRetainedCheckpoint(2)) == [
        ("job_submitted", 2, "Checkpoint" if mode == "CLAIM" else "Savepoint")]
    assert c.coordinator.store.checkpoint_ids() == (2,) and c.coordinator.next_checkpoint_id == 3
    kept = c.storage.kept(c.coordinator.store.checkpoint_ids())
    assert 2 in kept and (2 in c.storage.owned) == (mode == "CLAIM")
    assert all(t.status == "RUNNING" for t in c.tasks)


def test_validation_fails_on_a_no_claim_restored_file_reused(tmp_path):
    """NO_CLAIM: the new job's first checkpoint is full and later ones build on it, so a
    checkpoint of the new job that references a file of the restored checkpoint is divergent at
    that event; in CLAIM mode the real trace's checkpoints do reference them."""
    tr = load_trace(_trace_file("no-claim-restore"))
    i = _submission(tr.events)
    restored = tr.events[i]["savepoint"]
    files = next(e["shared"] for e in tr.events if e["event"] == "checkpoint_files" and e["checkpoint"] == restored)

    def change(events):
        at = next(k for k in range(i, len(events)) if events[k]["event"] == "checkpoint_files")
        events[at]["shared"] = sorted(set(events[at]["shared"]) | {files[0]})
        return at

    mutated, at = _mutated(tmp_path, "no-claim-restore", change)
    v = validate(mutated, **BUDGET)
    _assert_divergent_at(v, at)
    assert "NO_CLAIM" in v.reason and files[0] in v.reason
    claim = load_trace(_trace_file("claim-restore"))
    j = _submission(claim.events)
    kept = set(next(e["shared"] for e in claim.events
                    if e["event"] == "checkpoint_files" and e["checkpoint"] == claim.events[j]["savepoint"]))
    assert any(set(e["shared"]) & kept for e in claim.events[j:] if e["event"] == "checkpoint_files")


@pytest.mark.slow
def test_a_divergence_after_a_submission_from_a_retained_checkpoint_replays(tmp_path, monkeypatch, capsys):
    """A failure of a task the job does not have, right after the NO_CLAIM submission: divergent
    (every model run of the trace's prefix searched, about 10 s); the counterexample holds
    the user's RestartFromRetainedCheckpoint and replay reproduces it."""
    monkeypatch.chdir(tmp_path)

    def change(events):
        i = _submission(events) + 1
        events.insert(i, {"event": "task_failed", "task": [9, 0], "attempt": 0})
        return i

    mutated, at = _mutated(tmp_path, "no-claim-restore", change)
    out = tmp_path / "out"
    assert cli.main(["validate", mutated.path, "--out", str(out), "--json", "--max-seconds", "900"]) == 1
    first = json.loads(capsys.readouterr().out.splitlines()[0])
    # divergent at the failure or later (rule completion-during-the-failover expects the completion
    # Flink logged after it before it), after the submission was matched
    assert first["verdict"] == DIVERGENT and first["first_unmatched"]["seq"] >= at, first
    submission = next(k for k, x in enumerate(expected_events(mutated)[0]) if x.key[0] == "job_submitted")
    assert first["matched"] > submission
    cx = Path(first["counterexample"])
    restored = load_trace(_trace_file("no-claim-restore")).events[_submission(load_trace(mutated.path).events)]
    assert f"RestartFromRetainedCheckpoint(checkpoint_id={restored['savepoint']})" in cx.read_text(encoding="utf-8")
    assert cli.main(["replay", str(cx)]) == 0
    assert "reproduced" in capsys.readouterr().out
