"""``flinkspec mutate``: the mutant list (deterministic, stable ids, one node replaced), the
machinery on two planted mutants (an obvious one killed, a triaged equivalent one reported as
such and never run), and bad arguments (one line, exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from properties import mutation as M

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _flinkspec(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "flinkspec.cli", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=300)


def _changed(m) -> tuple[str, str]:
    lines = m.diff.splitlines()
    return (next(l[1:].strip() for l in lines if l.startswith("-") and not l.startswith("---")),
            next(l[1:].strip() for l in lines if l.startswith("+") and not l.startswith("+++")))


def test_mutant_list_is_deterministic_with_unique_ids_and_one_node_replaced():
    a, b = M.generate("failover"), M.generate("failover")
    assert [m.id for m in a] == [m.id for m in b] and len(a) > 50
    assert len({m.id for m in a}) == len(a)
    assert all(M.ID_RE.match(m.id) and m.id.startswith("failover:") for m in a)
    source = M.module_path("failover").read_text()
    for m in a:
        mutated = m.source(source)
        assert mutated != source
        cst.parse_module(mutated)  # still Python
        assert m.diff.count("\n-") >= 1 and m.diff.count("\n+") >= 1
    # an id does not depend on where in the file the mutant is (the hunk's line numbers)
    m = a[10]
    shifted = m.diff.replace("@@ -", "@@ -1").replace(" +", " +1")
    assert M.make_id("failover", shifted) == m.id.split("~")[0]


def test_error_messages_and_annotations_are_not_mutated():
    muts = M.generate("stateassignment")
    assert not [m for m in muts if "raise" in _changed(m)[0] or "Max parallelism mismatch" in m.replacement]


def _pick():
    muts = M.generate("failover")
    obvious = next(m for m in muts if _changed(m) == ("if a != b:", "if a == b:"))
    equivalent = next(m for m in muts if _changed(m) == ('name = "region"', "name = None"))
    return obvious, equivalent


@pytest.mark.slow  # 10-13 s: runs `flinkspec mutate` end to end
def test_the_machinery_kills_an_obvious_mutant_and_reports_a_triaged_equivalent(tmp_path):
    obvious, equivalent = _pick()
    triage = tmp_path / "equivalent.toml"
    triage.write_text(f'["{equivalent.id}"]\nreason = "the class attribute name is never read"\n')
    out = tmp_path / "out"
    r = _flinkspec("mutate", "--only", obvious.id, "--only", equivalent.id, "--kill-tests", "tests/test_failover.py",
                   "--equivalents", str(triage), "--out", str(out), "--workers", "1", "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["killed"] == 1 and summary["equivalent"] == 1 and summary["survived"] == 0
    per_module = json.loads(r.stdout.strip().splitlines()[0])
    assert per_module["module"] == "model/failover.py" and per_module["score"] == 100.0
    results = {m["id"]: m for m in json.loads((out / "failover.json").read_text())["mutants"]}
    assert results[obvious.id]["outcome"] == "killed"
    assert results[obvious.id]["killed_by"].startswith("tests/test_failover.py::")
    assert results[equivalent.id]["outcome"] == "equivalent"
    assert results[equivalent.id]["reason"] == "the class attribute name is never read"
    assert "[failover 1/1]" in r.stderr  # progress on stderr: only the obvious one ran


@pytest.mark.slow  # 10-13 s: runs `flinkspec mutate` end to end
def test_a_surviving_mutant_is_reported_with_its_diff_and_exit_1(tmp_path):
    """The same equivalent mutant, not triaged and judged by a test that cannot see it, survives."""
    _, equivalent = _pick()
    r = _flinkspec("mutate", "--only", equivalent.id, "--kill-tests", "tests/test_failover.py", "--no-write",
                   "--equivalents", str(tmp_path / "none.toml"), "--workers", "1")
    assert r.returncode == 1, r.stderr[-2000:]
    assert f"SURVIVED {equivalent.id}" in r.stdout
    assert '-    name = "region"' in r.stdout and "+    name = None" in r.stdout


@pytest.mark.parametrize("args, message", [
    (["--module", "model/nope.py"], "--module 'model/nope.py': no such model module"),
    (["--module", "../tests/conftest.py"], "no such model module"),
    (["--only", "failover:zz"], "not a mutant id"),
    (["--only", "failover:0123456789"], "no such mutant"),
    (["--workers", "0"], "must be between 1 and"),
    (["--budget-s", "-1"], "--budget-s -1: must be a positive number"),
    (["--kill-tests", "tests/nope.py", "--module", "failover"], "no such test file"),
    (["--max-memory-per-mutant", "lots", "--module", "failover"], "--max-memory-per-mutant 'lots': not a size"),
    (["--max-memory-per-mutant", "1M", "--module", "failover"], "below 64M"),
])
def test_bad_arguments_are_one_line_errors(args, message):
    r = _flinkspec("mutate", *args)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], r.stderr


def test_a_malformed_triage_file_is_one_line_error(tmp_path):
    for text, message in (('["failover:0123456789"]\n', "needs reason"), ("[x\n", "not TOML"),
                          ('["nope"]\nreason = "r"\n', "not a mutant id")):
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        r = _flinkspec("mutate", "--module", "failover", "--list", "--equivalents", str(bad))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr


@pytest.mark.slow  # generates every module's mutants (~30 s)
def test_the_committed_triage_file_is_well_formed_and_names_current_mutants():
    triaged = M.load_equivalents()
    current = {m.id for mod in {k.split(":")[0] for k in triaged} for m in M.generate(mod)}
    assert set(triaged) <= current, sorted(set(triaged) - current)
    assert all(len(reason) > 20 for reason in triaged.values())


@pytest.mark.slow
def test_mutants_run_as_spark_tasks(tmp_path):
    """With --master each mutant is a Spark task: a fresh interpreter on the executor with the
    import hook serving the mutant's source (a JVM start: slow)."""
    obvious, _ = _pick()
    r = _flinkspec("mutate", "--only", obvious.id, "--kill-tests", "tests/test_failover.py", "--master", "local[1]",
                   "--no-write", "--json", "--equivalents", str(tmp_path / "none.toml"))
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["master"] == "local[1]" and summary["killed"] == 1 and summary["survived"] == 0


def _mutant(function):
    return M.Mutant(id="sinks:0000000000", module="sinks", index=1, operator="op", line=5, end_line=5, stmt_line=5,
                    function=function, start=0, end=0, replacement="", diff="")


def test_a_mutant_gets_every_cheap_test_first_and_at_most_the_limit_of_the_others():
    unit = [f"tests/test_sinks.py::t{i}" for i in range(40)]
    slow = [f"tests/test_catalog.py::run{i}" for i in range(10)]
    seconds = {**{t: 0.01 for t in unit}, **{t: 5.0 for t in slow}}
    parts = {**{t: 0 for t in unit}, **{t: 1 for t in slow}}
    base = M.Baseline(tests=tuple(unit + slow), seconds=seconds, lines={5: tuple(unit[:30] + slow[:6])}, failing=(),
                      parts=parts)
    chosen = base.tests_for(_mutant("f"), 4)
    assert chosen == unit[:30] + slow[:4]  # only the tests executing line 5; cheap ones all, first
    # cheap tests of two parts: the first part's all before the second's (not round-robin)
    scen = [f"tests/test_runtime_scenarios.py::s{i}" for i in range(3)]
    two = M.Baseline(tests=tuple(unit[:3] + scen), seconds={t: 0.01 for t in unit[:3] + scen},
                     lines={5: tuple(unit[:3] + scen)}, failing=(), parts={**{t: 0 for t in unit[:3]},
                                                                           **{t: 1 for t in scen}})
    assert two.tests_for(_mutant("f"), 4) == unit[:3] + scen
    assert base.tests_for(_mutant(None), 4) == unit + slow[:4]  # outside a function: every test runs it
    everything = base.tests_for(_mutant(None), 0)  # no limit: round-robin over the parts
    assert sorted(everything) == sorted(unit + slow) and everything[:2] == [unit[0], slow[0]]


def _run_planted(tmp_path, old: str, new: str, tests: list[str]) -> tuple[int, dict]:
    """Run a hand-planted mutant of model/failover.py (``old`` replaced by ``new``) against
    ``tests`` in a fresh interpreter (``python -m properties.mutantrun``): exit code and result."""
    from properties import mutantrun

    source = M.module_path("failover").read_text()
    assert source.count(old) == 1
    spec = {"root": str(ROOT), "module": "model.failover", "path": str(M.module_path("failover")),
            "source": source.replace(old, new), "tests": tests, "result": str(tmp_path / "result.json")}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run([sys.executable, "-m", "properties.mutantrun", str(tmp_path / "spec.json")], cwd=ROOT,
                       env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode in (mutantrun.KILLED, mutantrun.CRASHED, mutantrun.SURVIVED), r.stderr[-2000:]
    return r.returncode, json.loads((tmp_path / "result.json").read_text())


REGION_TEST = "tests/test_failover.py::test_regions_joined_by_a_cycle_of_blocking_channels_are_one_region"


@pytest.mark.slow  # 10-13 s: runs `flinkspec mutate` end to end
def test_a_mutant_breaking_an_assert_is_killed_and_one_raising_typeerror_is_crashed(tmp_path):
    from properties import mutantrun

    # two regions joined by blocking channels no longer get an edge: the test's assert fails
    code, res = _run_planted(tmp_path, "        if a != b:\n            rg.add_edge(a, b)",
                             "        if a == b:\n            rg.add_edge(a, b)", [REGION_TEST])
    assert code == mutantrun.KILLED and res["exception"] == "AssertionError" and res["failed"] == REGION_TEST
    # the same line made to add an int and a str: a TypeError escapes the model, not an assert
    code, res = _run_planted(tmp_path, "        if a != b:\n            rg.add_edge(a, b)",
                             "        if a != b + 'x':\n            rg.add_edge(a, b)", [REGION_TEST])
    assert code == mutantrun.CRASHED and res["exception"] == "TypeError" and res["failed"] == REGION_TEST
    # a mutant the module cannot even be imported with: the test module does not collect
    code, res = _run_planted(tmp_path, "        if a != b:\n            rg.add_edge(a, b)",
                             "        if a != b:\n            rg.add_edge(a, b)\nraise ImportError('planted')",
                             [REGION_TEST])
    assert code == mutantrun.CRASHED and res["exception"] == "collection error"
    assert res["raised_at"] is None  # not even compiled (an IndentationError): raised nowhere in the module
    # a module-level statement raising at import: where is known (a mutant on that line is incompetent)
    code, res = _run_planted(tmp_path, "def _regions(eg)", "raise ImportError('planted')\n\n\ndef _regions(eg)",
                             [REGION_TEST])
    assert code == mutantrun.CRASHED and res["exception"] == "collection error"
    assert res["raised_at"]["function"] == "<module>" and "planted" in res["raised_at"]["message"], res


def test_the_judge_counts_only_assertions_as_kills_and_scores_crashes_apart():
    from properties import mutantrun

    m = _mutant("f")
    job = M.Job(m, "", ("t",), 10.0)
    nowhere = "/nonexistent/result.json"
    assert M._judge(job, mutantrun.KILLED, 1.0, nowhere).outcome == "killed"
    crashed = M._judge(job, mutantrun.CRASHED, 1.0, nowhere)
    assert crashed.outcome == "crashed"
    segv = M._judge(job, -11, 1.0, nowhere)
    assert segv.outcome == "crashed" and segv.exception == "signal 11"
    assert M._judge(job, mutantrun.ERROR, 1.0, nowhere).outcome == "crashed"
    oom = M._judge(job, mutantrun.OUT_OF_MEMORY, 1.0, nowhere)  # the run itself died of its memory limit
    assert (oom.outcome, oom.exception, oom.reason) == ("crashed", "MemoryError", "memory limit (4096 MiB of address space)")
    assert M._judge(job, None, 11.0, nowhere).outcome == "timeout"
    s = M.scores(["killed", "killed", "crashed", "survived", "equivalent"])
    assert (s["score"], s["score_with_crashes"], s["score_with_timeouts"]) == (50.0, 75.0, 50.0)
    # a mutant the unit judge killed and the quick judge did not: the properties are blind there
    blind = M.Result(m, "killed", quick=M.Result(m, "survived"))
    seen = M.Result(m, "killed", quick=M.Result(m, "killed"))
    assert blind.properties_blind and not seen.properties_blind
    assert blind.to_json(with_diff=False)["properties_blind"] is True


def _run_planted_suites(tmp_path, old: str, new: str, suites: list[str]) -> tuple[int, dict]:
    """The quick judge's half: a hand-planted mutant of model/sharedstateregistry.py judged by
    the seeded quick check of ``suites`` (3 walks each) in a fresh interpreter."""
    source = M.module_path("sharedstateregistry").read_text()
    assert source.count(old) == 1
    spec = {"root": str(ROOT), "module": "model.sharedstateregistry", "path": str(M.module_path("sharedstateregistry")),
            "source": source.replace(old, new), "tests": [], "suites": suites, "runs": 3, "seed": 0,
            "result": str(tmp_path / "result.json")}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run([sys.executable, "-m", "properties.mutantrun", str(tmp_path / "spec.json")], cwd=ROOT,
                       env=ENV, capture_output=True, text=True, timeout=300)
    return r.returncode, json.loads((tmp_path / "result.json").read_text())


@pytest.mark.slow
def test_the_quick_judge_kills_by_an_invariant_and_tells_a_crash_apart(tmp_path):
    """Four fresh interpreters running a suite (~20 s): slow; the scoring of its verdicts is in the
    default run (test_the_judge_counts_only_assertions_as_kills_and_scores_crashes_apart)."""
    from properties import mutantrun

    # a shared file's last use taken to be its creator: a retained checkpoint loses a file
    code, res = _run_planted_suites(tmp_path, "        return e.last_used\n", "        return e.created_by\n",
                                    ["rocksdb-incremental"])
    assert code == mutantrun.KILLED and res["failed"] == "rocksdb-incremental", res
    assert res["exception"].startswith("violated ")
    # an entry created without its creator: the first comparison with it raises TypeError
    code, res = _run_planted_suites(tmp_path, "SharedStateEntry(checkpoint_id, checkpoint_id)",
                                    "SharedStateEntry(None, checkpoint_id)", ["rocksdb-incremental"])
    assert code == mutantrun.CRASHED and res["exception"] == "TypeError", res
    # ... raised in another function than the mutated constructor call: a crash, not incompetent
    assert res["raised_at"]["function"] != "SharedStateRegistry.register_reference", res
    assert _judge_planted_suite(tmp_path, code, "SharedStateEntry(checkpoint_id, checkpoint_id)",
                                "SharedStateEntry(None, checkpoint_id)", "SharedStateRegistry.register_reference"
                                ).outcome == "crashed"
    # the mutated line itself raises: incompetent, with its line
    code, res = _run_planted_suites(tmp_path, "        return e.last_used\n", "        return e.last_used + 'x'\n",
                                    ["rocksdb-incremental"])
    assert code == mutantrun.CRASHED and res["exception"] == "TypeError", res
    judged = _judge_planted_suite(tmp_path, code, "        return e.last_used\n", "        return e.last_used + 'x'\n",
                                  "SharedStateRegistry.last_use")
    assert judged.outcome == "incompetent" and judged.raised_at["function"] == "SharedStateRegistry.last_use"
    # the unmutated registry: the suite is as expected
    code, res = _run_planted_suites(tmp_path, "        return e.last_used\n", "        return e.last_used\n",
                                    ["rocksdb-incremental"])
    assert code == mutantrun.SURVIVED and res["failed"] is None, res


def _judge_planted_suite(tmp_path, code: int, old: str, new: str, function: str):
    """The verdict ``flinkspec mutate`` gives the planted registry mutant (``old`` as ``new`` in
    ``function``) whose quick-check run ended with ``code`` and wrote tmp_path/result.json."""
    source = M.module_path("sharedstateregistry").read_text()
    start = source.index(old)
    line = source[:start].count("\n") + 1
    m = M.Mutant(id="sharedstateregistry:0000000000", module="sharedstateregistry", index=1, operator="planted",
                 line=line, end_line=line, stmt_line=line, function=function, start=start, end=start + len(old),
                 replacement=new, diff="")
    job = M.Job(m, m.source(source), ("rocksdb-incremental",), 60.0, suites=True)
    return M._judge(job, code, 1.0, str(tmp_path / "result.json"))


# -- incompetent mutants: a crash raised by the mutated line itself --------------------------------

#: hand-planted mutants of ``_regions`` in model/failover.py, as (old text, new text, qualified
#: name of the function holding it, the run's memory limit in bytes or None): the mutated line
#: itself raises; a ``None`` stored by the mutant raises on a later line of the same call; a
#: ``None`` returned raises in the caller; the mutated line allocates 4 GiB under a 512 MiB limit
PLANTED = {
    "own line": ("if a != b:", "if a != b + 'x':", "_regions", None),
    "later line": ("raw = [frozenset(c) for c in nx.connected_components(g)]", "raw = None", "_regions", None),
    "caller": ("    return merged\n", "    return None\n", "_regions", None),
    "memory": ("if a != b:", "if a != b and len(bytearray(2 ** 32)):", "_regions", 512 * 2**20),
}

_RUN_PLANTED_JOBS = r'''
import json, sys
from properties import mutation as M
planted, test, fresh = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "fresh"
source = M.module_path("failover").read_text()
M.warm_up([M.KillProfile((test,))])
jobs = []
for i, (old, new, function, memory) in enumerate(planted):
    start = source.index(old)
    line = source[:start].count("\n") + 1
    m = M.Mutant(id=f"failover:{i:010d}", module="failover", index=i + 1, operator="planted", line=line,
                 end_line=line + old.count("\n"), stmt_line=line, function=function, start=start,
                 end=start + len(old), replacement=new, diff="")
    jobs.append(M.Job(m, m.source(source), (test,), 120.0, fresh=fresh, max_memory=memory))
results = M.run_local(jobs, workers=1, deadline=None, progress=lambda r: None)
print(json.dumps({r.mutant.index - 1: r.to_json(with_diff=False) for r in results}))
'''


def _judge_planted(names: list[str], *, fresh: bool) -> dict[str, dict]:
    """Run the planted mutants ``names`` against the region test the way ``flinkspec mutate``
    does (a forked child swapping ``_regions``' code in, or a fresh interpreter with the import
    hook) and judge them: each one's result as ``--json`` writes it."""
    planted = [PLANTED[n] for n in names]
    r = subprocess.run([sys.executable, "-c", _RUN_PLANTED_JOBS, json.dumps(planted), REGION_TEST,
                        "fresh" if fresh else "fork"], cwd=ROOT, env=ENV, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    return {n: got[str(i)] for i, n in enumerate(names)}


def _own_line(old: str) -> int:
    return M.module_path("failover").read_text().split(old)[0].count("\n") + 1


def test_a_crash_raised_on_the_mutated_line_is_incompetent_in_its_call_crashed_in_call_elsewhere_crashed():
    """The forked way (the mutated function's code swapped in): a TypeError the mutated line
    raises is incompetent, with its exception and line; a None the mutant stored in a local that
    a later line of the same call trips over is crashed_in_call; a None returned that the caller
    trips over is a crash (not a kill, not left out). Out of memory past the run's limit: a
    crash named MemoryError and the limit, even on the mutated line itself."""
    got = _judge_planted(["own line", "later line", "caller", "memory"], fresh=False)
    own = got["own line"]
    assert own["outcome"] == "incompetent" and own["exception"] == "TypeError", own
    assert own["raised_at"]["line"] == _own_line("if a != b:") and own["raised_at"]["function"] == "_regions"
    assert own["raised_at"]["kind"] == "own line" and own["killed_by"] == REGION_TEST
    later = got["later line"]
    assert later["outcome"] == "crashed_in_call" and later["exception"] == "TypeError", later
    assert later["raised_at"]["function"] == "_regions" and later["raised_at"]["kind"] == "same call"
    assert later["raised_at"]["line"] > _own_line("raw = [frozenset(c)")  # the `for ... in enumerate(raw)`
    caller = got["caller"]
    assert caller["outcome"] == "crashed" and caller["exception"] == "TypeError", caller
    assert caller["raised_at"]["function"] == "pipelined_regions" and "kind" not in caller["raised_at"]
    memory = got["memory"]
    assert memory["outcome"] == "crashed" and memory["exception"] == "MemoryError", memory
    assert memory["reason"] == "memory limit (512 MiB of address space)"
    # incompetent and crashed-in-call mutants are outside the score, like equivalent ones; a
    # crash counts as not killed
    s = M.scores(["killed", "incompetent", "incompetent", "crashed_in_call", "crashed", "survived"])
    assert (s["incompetent"], s["crashed_in_call"]) == (2, 1) and (s["score"], s["score_with_crashes"]) == (33.3, 66.7)


@pytest.mark.slow
def test_the_fresh_interpreter_way_tells_incompetent_from_crashed_too():
    """The same planted mutants, each in a fresh interpreter with the import hook serving the
    mutated module (the way of a mutant outside a function body, and on Spark): ~10 s."""
    got = _judge_planted(["own line", "later line", "caller"], fresh=True)
    assert got["own line"]["outcome"] == "incompetent", got
    assert got["own line"]["raised_at"]["line"] == _own_line("if a != b:")
    assert got["later line"]["outcome"] == "crashed_in_call", got
    assert got["caller"]["outcome"] == "crashed" and got["caller"]["raised_at"]["function"] == "pipelined_regions"


def test_where_a_crash_was_raised_is_the_innermost_frame_in_the_mutated_module():
    from properties import mutantrun

    path = str(M.module_path("failover"))
    src = "def inner(d):\n    return d.pop('k')\n\ndef outer():\n    return inner({})\n"
    code = compile(src, path, "exec")
    ns: dict = {}
    exec(code, ns)
    with pytest.raises(KeyError) as info:
        ns["outer"]()
    e = info.value
    at = mutantrun.raised_at(e, path)
    assert (at["line"], at["function"]) == (2, "inner") and at["message"].startswith("KeyError")
    assert mutantrun.raised_at(e, "/elsewhere.py") is None  # not raised with that module on the stack
    # a runner wrapping the model's error in its own (``from None`` hides it from the report, not
    # from ``__context__``): placed where the model's error was raised
    with pytest.raises(RuntimeError) as wrapped:
        try:
            ns["outer"]()
        except KeyError:
            raise RuntimeError("malformed case") from None
    assert (mutantrun.raised_at(wrapped.value, path)["line"], mutantrun.raised_at(wrapped.value, path)["function"]) \
        == (2, "inner")
    # a group (Hypothesis reporting several errors) is placed only when all were raised at one place
    assert mutantrun.raised_at(ExceptionGroup("two", [e, e]), path)["line"] == 2
    assert mutantrun.raised_at(ExceptionGroup("two", [e, ValueError("x")]), path) is None
    # the judge: on a changed line of the mutated function (or a lambda inside it) only
    m = M.Mutant(id="failover:0000000000", module="failover", index=1, operator="op", line=2, end_line=2,
                 stmt_line=2, function="inner", start=src.index("d.pop"), end=src.index("d.pop") + 10,
                 replacement="d.pop('k')", diff="")
    assert m.raised_itself(src, {"line": 2, "function": "inner"})
    assert m.raised_itself(src, {"line": 2, "function": "inner.<locals>.<lambda>"})
    assert not m.raised_itself(src, {"line": 5, "function": "outer"})
    assert not m.raised_itself(src, {"line": 2, "function": "outer"})
    assert not m.raised_itself(src, None)


_RUN_TESTS = r'''
import json, sys
from properties import mutantrun
nodeids, cheap = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.exit(mutantrun.run_tests(nodeids, sys.argv[3], cheap=cheap))  # quiet: stdout goes nowhere
'''


def test_an_assertion_after_a_crash_still_kills_and_only_cheap_tests_run_after_a_crash(tmp_path):
    """The first test crashes (a TypeError), a later cheap one fails on an assertion: killed by
    the later one. A test after a crash that is not cheap does not run: the crash decides."""
    from properties import mutantrun

    f = tmp_path / "test_planted.py"
    f.write_text("def test_crash():\n    None + 1\n\n\ndef test_ok():\n    pass\n\n\n"
                 "def test_assert():\n    assert 1 == 2\n")
    crash, ok, fails = (f"{f.name}::test_crash", f"{f.name}::test_ok", f"{f.name}::test_assert")  # as pytest names them

    def run(cheap):
        r = subprocess.run([sys.executable, "-c", _RUN_TESTS, json.dumps([crash, ok, fails]), json.dumps(cheap),
                            str(tmp_path / "result.json")], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                           timeout=300)
        return {"code": r.returncode, **json.loads((tmp_path / "result.json").read_text())}

    got = run([crash, ok, fails])
    assert got["code"] == mutantrun.KILLED and got["failed"] == fails and got["exception"] == "AssertionError", got
    assert got["ran"] == 3
    got = run([crash, ok])  # the assertion's test is not cheap: the run ends before it
    assert got["code"] == mutantrun.CRASHED and got["failed"] == crash and got["exception"] == "TypeError", got
    assert got["ran"] == 2


#: a module the planted mutants below break at import: it takes a tag from a registry (taking
#: one twice is refused, as ``fresh_id`` and the seams refuse it), then defines a class
_TAGGED = ('''import registry

TAG = "A"
registry.take(TAG.lower())


class Message:
    """A message."""

    __slots__ = ()
''')
_REGISTRY = "TAKEN = set()\n\n\ndef take(tag):\n    if tag in TAKEN:\n        raise ValueError(f'tag {tag!r} taken')\n" \
            "    TAKEN.add(tag)\n"


def _first_import_verdict(tmp_path, old: str, new: str):
    """Plant ``old`` as ``new`` in ``_TAGGED``, run two test files importing it in a fresh
    interpreter (the import hook's way), and judge the run as ``flinkspec mutate`` does:
    (the run's result, the verdict)."""
    from properties import mutantrun

    (tmp_path / "registry.py").write_text(_REGISTRY)
    (tmp_path / "tagged.py").write_text(_TAGGED)
    for name in ("test_first.py", "test_second.py"):
        (tmp_path / name).write_text("import tagged\n\n\ndef test_it():\n    assert tagged.Message\n")
    start = _TAGGED.index(old)
    mutated = _TAGGED[:start] + new + _TAGGED[start + len(old):]
    line = _TAGGED[:start].count("\n") + 1
    tests = ["test_first.py", "test_second.py"]
    spec = {"root": str(tmp_path), "module": "tagged", "path": str(tmp_path / "tagged.py"), "source": mutated,
            "tests": tests, "result": str(tmp_path / "result.json"), "function": None,
            "span": [start, start + len(new)]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    r = subprocess.run([sys.executable, "-m", "properties.mutantrun", str(tmp_path / "spec.json")], cwd=tmp_path,
                       env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == mutantrun.CRASHED, r.stderr[-2000:]
    res = json.loads((tmp_path / "result.json").read_text())
    m = M.Mutant(id="tagged:0000000000", module="tagged", index=1, operator="planted", line=line, end_line=line,
                 stmt_line=line, function=None, start=start, end=start + len(old), replacement=new, diff="")
    return res, M._judge(M.Job(m, mutated, tuple(tests), 10.0, fresh=True), r.returncode, 1.0,
                         str(tmp_path / "result.json"))


def test_a_module_failing_at_its_first_import_on_the_mutants_lines_is_incompetent_whatever_later_imports_raise(
        tmp_path):
    """``__slots__`` made None: the class statement fails at the first import (the mutated code
    could not run); the second test file imports the half-imported module again, and its
    statements before the class are refused elsewhere (the tag taken twice). The first failure
    decides: incompetent, with its exception and the ``class`` line."""
    res, judged = _first_import_verdict(tmp_path, "__slots__ = ()", "__slots__ = None")
    class_line = _TAGGED[:_TAGGED.index("class Message")].count("\n") + 1
    take_line = _TAGGED[:_TAGGED.index("registry.take")].count("\n") + 1
    # the later import's refusal is a crash raised elsewhere: alone it would be judged crashed
    assert [(c["test"], c["raised_at"]["line"], c["raised_at"]["message"].split(":")[0]) for c in res["crashes"]] \
        == [("test_first.py", class_line, "TypeError"), ("test_second.py", take_line, "ValueError")], res
    assert res["first_import"] == {"ok": False, "exception": "TypeError", "own_lines": True, "test": "test_first.py",
                                   "raised_at": res["crashes"][0]["raised_at"]}, res
    assert (judged.outcome, judged.exception, judged.killed_by) == ("incompetent", "TypeError", "test_first.py")
    assert (judged.raised_at["line"], judged.raised_at["function"], judged.raised_at["kind"]) == \
        (class_line, "<module>", "own line")


def test_a_module_failing_at_its_first_import_on_another_line_is_still_a_crash(tmp_path):
    """The tag made None: the module's next statement trips over it at the first import -- not
    the mutant's own line, so the mutant stays crashed (its None went unjudged elsewhere)."""
    res, judged = _first_import_verdict(tmp_path, 'TAG = "A"', "TAG = None")
    take_line = _TAGGED[:_TAGGED.index("registry.take")].count("\n") + 1
    assert res["first_import"]["own_lines"] is False and res["first_import"]["raised_at"]["line"] == take_line, res
    assert (judged.outcome, judged.exception, judged.raised_at["line"]) == ("crashed", "collection error", take_line)


def test_the_lines_of_a_mutant_whose_import_failure_is_its_own():
    from properties import mutantrun

    src = "import x\n\n\n@dec\nclass A(\n        B):\n    y = 1\n    __slots__ = (\n        'a',)\n    z = 2\n"
    start = src.index("(\n        'a'")
    assert mutantrun.import_lines(src, (start, start + 3)) == {4, 5, 6, 8, 9}
    assert mutantrun.import_lines(src, (src.index("import x"), 8)) == {1}
    assert mutantrun.import_lines(src, None) == frozenset() and mutantrun.import_lines("def (", (0, 1)) == frozenset()


def test_a_test_file_that_does_not_import_is_a_crash_and_the_other_files_tests_still_run(tmp_path):
    """A mutant that breaks a module one profile file imports: that file does not collect (a
    crash), and the tests of the files that did collect still run -- pytest given node ids runs
    none when one names a test of a file that did not import -- so that one of them may kill."""
    from properties import mutantrun

    (tmp_path / "test_broken.py").write_text("raise ImportError('a mutated constant')\n\n\ndef test_x():\n    pass\n")
    (tmp_path / "test_unit.py").write_text("def test_ok():\n    pass\n\n\ndef test_assert():\n    assert 1 == 2\n")
    ids = ["test_broken.py::test_x", "test_unit.py::test_ok", "test_unit.py::test_assert"]
    r = subprocess.run([sys.executable, "-c", _RUN_TESTS, json.dumps(ids), json.dumps(ids), str(tmp_path / "r.json")],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    got = {"code": r.returncode, **json.loads((tmp_path / "r.json").read_text())}
    assert got["code"] == mutantrun.KILLED and got["failed"] == "test_unit.py::test_assert", got
    assert got["ran"] == 2
    assert got["crashes"] == [{"test": "test_broken.py", "exception": "collection error", "raised_at": None}], got
    # the broken file alone: a crash, no test ran
    r = subprocess.run([sys.executable, "-c", _RUN_TESTS, json.dumps(ids[:1]), "[]", str(tmp_path / "r.json")],
                       cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    got = {"code": r.returncode, **json.loads((tmp_path / "r.json").read_text())}
    assert got["code"] == mutantrun.CRASHED and got["failed"] == "test_broken.py" and got["ran"] == 0, got


def test_a_function_whose_products_were_made_at_import_is_not_swapped_but_run_afresh():
    """``model.checkpointstorage._note`` makes the storage's note properties when the class is
    defined: swapping its code in a forked child would leave the properties' accessors as they
    were (every mutant a false survivor), so the swap refuses and the mutant runs in a fresh
    interpreter. A function whose lambdas are made per call (``nest``'s sort key) is swapped."""
    import model.checkpointstorage as cs
    from properties import mutantrun

    source = Path(cs.__file__).read_text()
    mutated = source.replace("lambda self: getattr(self.notes, name)", "lambda self: None")
    assert mutated != source
    with pytest.raises(ValueError, match="made at import"):
        mutantrun.swap_code("model.checkpointstorage", "_note", mutated)
    assert cs.CheckpointStorage().last_change == -1  # untouched
    nest = cs.nest
    mutantrun.swap_code("model.checkpointstorage", "nest", source)  # the same code again: no change
    assert cs.nest is nest and cs.nest({("b", 1): "x", ("a", 2): "y"}) == {"a": {2: "y"}, "b": {1: "x"}}


# -- crashed in call: raised in the invocation that ran the mutated line --------------------------

#: a small module standing for a model module, its mutants planted by hand: each ``# mutant``
#: line is the mutated one (as the mutant's source has it)
SYNTHETIC = """\
class Store:
    def __init__(self):
        self.table = {}
        self.count = 0

    def put(self, k, v):
        self.table = None  # mutant: the put stores None
        return len(self.table)

    def put_later(self, k, v):
        self.table = None  # mutant: the put stores None
        return 1

    def get(self, k):
        return self.table[k]

    def put_through(self, k, v):
        self.table = None  # mutant: the put stores None
        return self.get(k)

    def step(self):
        value = self.count + 1
        self.count = None  # mutant: the step stores None
        return value


    def above(self, xs):
        limit = None  # mutant: a local made None
        return [x for x in xs if x > limit]

    def make_key(self):
        offset = None  # mutant: the key's offset made None
        self.key = lambda x: (
            x + offset)
        return 1


def gen():
    x = None  # mutant: a generator's local made None
    yield 1
    yield x + 1
"""


def _synthetic_mutant(source: str, function: str, nth: int = 0) -> M.Mutant:
    """The ``nth`` ``# mutant`` line in ``function`` of ``source`` as a Mutant (one line)."""
    lines = source.splitlines(keepends=True)
    numbers = [i + 1 for i, l in enumerate(lines) if "# mutant" in l]
    owner = {n: next(l.split("def ")[1].split("(")[0] for l in reversed(lines[:n]) if "def " in l) for n in numbers}
    line = [n for n in numbers if function.endswith(owner[n])][nth]
    start = sum(len(l) for l in lines[:line - 1]) + len(lines[line - 1]) - len(lines[line - 1].lstrip())
    text = lines[line - 1].split("  # mutant")[0].strip()
    return M.Mutant(id="planted_store:0000000000", module="planted_store", index=1, operator="planted", line=line,
                    end_line=line, stmt_line=line, function=function, start=start, end=start + len(text),
                    replacement=text, diff="")


def _traced(path: str, mutant: M.Mutant, call):
    """Run ``call`` against the synthetic module with the mutant's code instrumented as a
    mutant's run instruments it: where in ``path`` its exception was raised, as the run records it."""
    from properties import mutantrun

    ns: dict = {}
    exec(mutantrun.instrument(SYNTHETIC, path, mutant.function, mutant.span), ns)
    before, mutantrun._INSTRUMENTED = mutantrun._INSTRUMENTED, True
    try:
        try:
            call(ns)
        except Exception as e:  # noqa: BLE001 - the planted crash
            return mutantrun.raised_at(e, path)
        raise AssertionError("the planted mutant did not crash")
    finally:
        mutantrun._INSTRUMENTED = before


def test_a_crash_in_the_call_that_ran_the_mutated_line_is_crashed_in_call_and_one_in_a_later_call_crashed(tmp_path):
    """The instrumented mutant marks the invocation of the mutated function that ran the mutated
    statement (a local of that call, set just before it): a None
    stored and dereferenced before that call returns is crashed_in_call; the same None read by
    a later call (another method, the same method called again, a generator resumed) is a
    crash: between the two, the test had the state in hand; read by a function the call itself
    calls, it is crashed_in_call again ("in callee")."""
    path = str(tmp_path / "planted_store.py")

    def verdict(mutant, at):
        info = {"crashes": [{"test": "t", "exception": "TypeError", "raised_at": at}]}
        outcome, crash = M._crash_verdict(M.Job(mutant, SYNTHETIC, ("t",), 10.0), info)
        return outcome, crash["raised_at"]

    put = _synthetic_mutant(SYNTHETIC, "Store.put")
    at = _traced(path, put, lambda ns: ns["Store"]().put("k", 1))
    assert at["function"] == "Store.put" and at["same_call"] is True and at["line"] == put.line + 1
    assert verdict(put, at) == ("crashed_in_call", {**at, "kind": "same call"})

    later = _synthetic_mutant(SYNTHETIC, "Store.put_later")

    def put_then_get(ns):
        s = ns["Store"]()
        s.put_later("k", 1)
        s.get("k")

    at = _traced(path, later, put_then_get)
    assert at["function"] == "Store.get" and at["same_call"] is False and at["in_call"] is False
    assert verdict(later, at)[0] == "crashed"

    # the same None read by a function the mutated invocation calls, before it returns:
    # crashed_in_call, raised in a callee
    through = _synthetic_mutant(SYNTHETIC, "Store.put_through")
    at = _traced(path, through, lambda ns: ns["Store"]().put_through("k", 1))
    assert at["function"] == "Store.get" and at["same_call"] is False and at["in_call"] is True
    assert verdict(through, at) == ("crashed_in_call", {**at, "kind": "in callee"})

    # the mutated method itself, called again: a new invocation (a new frame, perhaps at the
    # address of the first) raises before it runs the mutated line: crashed
    step = _synthetic_mutant(SYNTHETIC, "Store.step")

    def step_twice(ns):
        s = ns["Store"]()
        s.step()
        s.step()

    at = _traced(path, step, step_twice)
    assert at["function"] == "Store.step" and at["line"] == step.line - 1 and at["same_call"] is False
    assert at["in_call"] is False
    assert verdict(step, at)[0] == "crashed"

    # a comprehension of the invocation, run within it, trips over its None: crashed_in_call; a
    # lambda it made, called by a later call, trips over its None: crashed
    above = _synthetic_mutant(SYNTHETIC, "Store.above")
    at = _traced(path, above, lambda ns: ns["Store"]().above([1, 2]))
    assert at["function"] == "Store.above.<locals>.<listcomp>" and at["same_call"] is True
    assert verdict(above, at)[0] == "crashed_in_call"
    key = _synthetic_mutant(SYNTHETIC, "Store.make_key")

    def make_then_use(ns):
        s = ns["Store"]()
        s.make_key()
        s.key(1)

    at = _traced(path, key, make_then_use)
    assert at["function"] == "Store.make_key.<locals>.<lambda>" and at["same_call"] is False
    assert at["in_call"] is False
    assert verdict(key, at)[0] == "crashed"
    # a generator resumed is a new invocation: the caller ran between the two resumptions
    g = _synthetic_mutant(SYNTHETIC, "gen")
    at = _traced(path, g, lambda ns: list(ns["gen"]()))
    assert at["function"] == "gen" and at["same_call"] is False and at["in_call"] is False
    assert verdict(g, at)[0] == "crashed"
    # ... and a mutated statement in a branch, a loop header or an elif gets its mark, on its own line
    from properties import mutantrun

    src = ("def f(xs, k):\n    total = 0\n    for x in xs:\n        if x < k:\n            total += x\n"
           "        elif x == k:\n            total = None\n    return total + 1\n")
    for text, crashes in (("elif x == k:", True), ("total += x", False), ("for x in xs:", True)):
        start = src.index(text)
        m = M.Mutant(id="planted_store:0000000001", module="planted_store", index=1, operator="planted",
                     line=src[:start].count("\n") + 1, end_line=src[:start].count("\n") + 1,
                     stmt_line=src[:start].count("\n") + 1, function="f", start=start, end=start + len(text),
                     replacement=text, diff="")
        ns: dict = {}
        exec(mutantrun.instrument(src, path, "f", m.span), ns)
        mutantrun._INSTRUMENTED = True
        try:
            ns["f"]([2], 2)
        except TypeError as e:
            at = mutantrun.raised_at(e, path)
        finally:
            mutantrun._INSTRUMENTED = False
        assert at["line"] == 8 and at["same_call"] is crashes, (text, at)  # `total += x` did not run


    # a crash in call and one elsewhere among a run's crashing tests: the one elsewhere decides
    in_call = {"test": "a", "exception": "TypeError", "raised_at": {"line": put.line + 1, "function": "Store.put",
                                                                     "same_call": True}}
    elsewhere = {"test": "b", "exception": "TypeError", "raised_at": {"line": 15, "function": "Store.get",
                                                                       "same_call": False}}
    outcome, crash = M._crash_verdict(M.Job(put, SYNTHETIC, ("a", "b"), 10.0), {"crashes": [in_call, elsewhere]})
    assert outcome == "crashed" and crash["test"] == "b"


@pytest.mark.slow  # 10-13 s: runs `flinkspec mutate` end to end
def test_the_fresh_interpreter_way_tells_crashed_in_call_from_crashed_and_bounds_memory(tmp_path):
    """The synthetic module's mutants run as a fresh interpreter runs them (``python -m
    properties.mutantrun``: the import hook serving the instrumented mutated source, the memory
    limit), against a test of their own, and judged: the put's None tripped over in its own call
    is crashed_in_call; the put_later's None tripped over by ``get`` is crashed; a test growing
    past the run's memory limit is crashed with MemoryError and the limit named."""
    from properties import mutantrun

    original = SYNTHETIC.replace("self.table = None  # mutant: the put stores None", "self.table[k] = v")
    (tmp_path / "planted_store.py").write_text(original)
    (tmp_path / "test_planted_store.py").write_text(
        "from planted_store import Store\n\n\n"
        "def test_put():\n    assert Store().put('k', 1) == 1\n\n\n"
        "def test_put_then_get():\n    s = Store()\n    s.put_later('k', 1)\n    assert s.get('k') == 1\n\n\n"
        "def test_grows():\n    held = []\n    while True:\n        held.append(bytearray(2 ** 24))\n\n\n"
        "def test_after():\n    assert Store().count == 1\n")

    def run(function: str, test: str, memory: int | None = None, then: tuple = ()):
        mutant = _synthetic_mutant(SYNTHETIC, function)
        tests = [f"test_planted_store.py::{t}" for t in (test, *then)]
        spec = {"root": str(tmp_path), "module": "planted_store", "path": str(tmp_path / "planted_store.py"),
                "source": SYNTHETIC, "tests": tests, "cheap": tests,
                "result": str(tmp_path / "result.json"), "function": function, "span": list(mutant.span),
                "max_memory": memory}
        (tmp_path / "spec.json").write_text(json.dumps(spec))
        r = subprocess.run([sys.executable, "-m", "properties.mutantrun", str(tmp_path / "spec.json")], cwd=ROOT,
                           env=ENV, capture_output=True, text=True, timeout=120)
        job = M.Job(mutant, SYNTHETIC, tuple(tests), 60.0, max_memory=memory)
        return M._judge(job, r.returncode, 1.0, str(tmp_path / "result.json"))

    in_call = run("Store.put", "test_put")
    assert in_call.outcome == "crashed_in_call" and in_call.exception == "TypeError", in_call
    assert in_call.raised_at["function"] == "Store.put" and in_call.raised_at["kind"] == "same call"
    later = run("Store.put_later", "test_put_then_get")
    assert later.outcome == "crashed" and later.raised_at["function"] == "Store.get", later
    assert later.killed_by == "test_planted_store.py::test_put_then_get"
    grows = run("Store.put", "test_grows", memory=256 * 2**20)
    assert grows.outcome == "crashed" and grows.exception == "MemoryError", grows
    assert grows.reason == "memory limit (256 MiB of address space)"
    # what the test held is let go: a cheap test after it still runs, and its assertion kills
    after = run("Store.put", "test_grows", memory=256 * 2**20, then=("test_after",))
    assert after.outcome == "killed" and after.killed_by == "test_planted_store.py::test_after", after
    assert mutantrun.OUT_OF_MEMORY not in (mutantrun.SURVIVED, mutantrun.KILLED, mutantrun.ERROR, mutantrun.CRASHED)
