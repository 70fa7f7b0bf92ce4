"""The docs are true and self-contained.

* Every command shown in a shell code block of README.md or docs/*.md is declared below with
  how the test runs it and the exit code the docs state: as written, or on small arguments
  (the same command with a smaller ``--runs``) while the run as written is marked ``slow``,
  or -- for what needs a cluster or is the test suite itself -- parsed only. A new command in
  the docs without a declaration fails the test.
* The glossary names every registered invariant, every RuntimeConfig knob and every FLINK key
  (from the registries), and its generated block is current.
* The job-spec page lists exactly the map and filter functions the code accepts.
* No page points at a file outside the repository or at an issue number.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from flinkspec.cli import build_parser, main
from flinkspec.design import unload as unload_designs

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "tests" / "README.md"]
SHELL = ("sh", "bash", "shell", "console")


def doc_commands() -> list[tuple[str, str]]:
    """(page, command) of every line of every shell code block (continuations joined,
    comments dropped)."""
    out = []
    for page in PAGES:
        for lang, body in re.findall(r"```(\w*)\n(.*?)```", page.read_text(), re.S):
            if lang not in SHELL:
                continue
            for line in re.sub(r"\\\n\s*", " ", body).splitlines():
                cmd = line.split("  #")[0].split(" # ")[0].strip()
                if cmd:
                    out.append((str(page.relative_to(ROOT)), " ".join(cmd.split())))
    return out


#: command as shown -> (how, expected exit code, small arguments for "small")
#:   run: run as written (fast enough for the default run)
#:   small: the default run replaces the listed arguments; the command as written runs in the slow test
#:   parse: needs a cluster / is the test suite itself: the arguments must parse (slow: nothing more)
#:   shell: environment set-up lines of a walkthrough: valid shell syntax
DECLARED = {
    "make check": ("make", 0, None),
    ".venv/bin/flinkspec mutate --list --module model/failover.py": ("run", 0, None),
    # a whole module's mutation run takes many minutes: tests/test_mutate.py runs the machinery on two mutants
    ".venv/bin/flinkspec mutate --module model/failover.py --json": ("parse", 0, None),
    # pytest inside the test run: tests/test_mutate.py runs `mutate --only` in a subprocess
    ".venv/bin/flinkspec mutate --only failover:a072f9f761 --kill-tests tests/test_failover.py": ("parse", 0, None),
    "make test": ("make", 0, None),
    ".venv/bin/flinkspec check --only at-least-once-2pc --seed 3": ("run", 0, None),
    ".venv/bin/flinkspec check --only cp-no-fencing --no-write": ("run", 0, None),
    ".venv/bin/flinkspec check --only network-pre-credit --no-write": ("run", 0, None),
    ".venv/bin/flinkspec check --only FLINK-19154 --no-write": ("run", 0, None),
    ".venv/bin/flinkspec explore --variant session-cluster --small --no-write": ("run", 0, None),
    ".venv/bin/flinkspec corpus update --dry-run": ("run", 0, None),
    ".venv/bin/flinkspec explore --variant unaligned-without-channel-state --small": ("run", 0, None),
    # every variant for up to 120 s each: ~20 minutes; tests/test_explore.py runs the explorer itself
    ".venv/bin/flinkspec explore --all --small --json --max-seconds 120": ("parse", 0, None),
    # two JobManager crashes, about 380,000 states: ~10 minutes (~4 on two workers); tests/test_explore.py
    # runs it as a slow test
    ".venv/bin/flinkspec explore --variant cp-region-failover --small --failures 2": ("parse", 0, None),
    ".venv/bin/flinkspec explore --variant cp-region-failover --small --failures 2 --workers 2": ("parse", 0, None),
    ".venv/bin/flinkspec explore --variant unaligned-without-channel-state --small --workers 2": ("run", 0, None),
    # starts Spark (a JVM): tests/test_spark_replay.py compares the Spark search with the local one
    ".venv/bin/flinkspec explore --variant unaligned-without-channel-state --small --master 'local[2]'":
        ("parse", 0, None),
    ".venv/bin/flinkspec corpus update": ("corpus", 0, None),
    ".venv/bin/flinkspec show counterexamples/consistent_cut/c8fa398103b1.ndjson": ("run", 0, None),
    ".venv/bin/flinkspec replay counterexamples/consistent_cut/c8fa398103b1.ndjson": ("run", 0, None),
    ".venv/bin/flinkspec show counterexamples/consistent_cut/c8fa398103b1.ndjson --html /tmp/cx.html "
    "--itf /tmp/cx.itf.json": ("run", 0, None),
    ".venv/bin/flinkspec check --only at-least-once-2pc --seed 3 --report /tmp/report.html": ("run", 0, None),
    # the small forms do not shrink what they find: tests/test_spark_replay.py shrinks on Spark
    ".venv/bin/flinkspec spark-replay --runs 20000": ("small", 0, {"--runs": "38", "--smoke": None,
                                                                   "--no-shrink": None}),
    ".venv/bin/flinkspec spark-replay --runs 2000 --variant FLINK-17568 --variant aligned-2pc --seed 100":
        ("small", 0, {"--runs": "60"}),
    ".venv/bin/flinkspec spark-replay --runs 500 --master 'local[2]' --variant FLINK-20645 --variant "
    "unaligned-savepoints-2pc --out /tmp/replay --json": ("small", 0, {"--runs": "60", "--smoke": None}),
    ".venv/bin/flinkspec spark-replay --runs 200000 --master spark://HOST:7077 --out hdfs:///flinkspec/replay-1 "
    "--conf spark.driver.host=DRIVER_IP --conf spark.executor.memory=2g": ("parse", 0, None),
    "export SPARK_HOME=$(.venv/bin/python -c 'import pyspark, os; print(os.path.dirname(pyspark.__file__))')":
        ("shell", 0, None),
    "export SPARK_LOCAL_IP=127.0.0.1": ("shell", 0, None),
    "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077 &":
        ("shell", 0, None),
    "$SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker spark://127.0.0.1:7077 --host 127.0.0.1 "
    "--cores 2 --memory 2g &": ("shell", 0, None),
    # the standalone cluster of the lines above: tests/test_spark_cluster.py (slow) runs it
    ".venv/bin/flinkspec spark-replay --runs 2000 --master spark://127.0.0.1:7077 --out /tmp/replay":
        ("parse", 0, None),
    ".venv/bin/flinkspec bench spark --runs 20000": ("small", 0, {"--runs": "40", "--engine": "standin"}),
    # three searches of 241,661 states: ~25 minutes
    ".venv/bin/flinkspec bench spill": ("small", 0, {"--variant": "aligned-2pc", "--max-memory": "1G",
                                                     "--spill-memory": "2K"}),
    ".venv/bin/flinkspec check --job examples/orders-append.toml": ("run", 1, None),
    ".venv/bin/flinkspec check --job examples/orders-2pc.toml": ("run", 0, None),
    # real Flink MiniClusters for ~5 minutes: tests/differential/test_conform_vs_flink.py (slow, flink) runs it
    ".venv/bin/flinkspec conform --runs 50 --json": ("parse", 0, None),
    # real Flink under every fault kind conform runs: tests/differential/test_conform_vs_flink.py (slow, flink)
    # runs one run of each
    ".venv/bin/flinkspec conform --runs 88 --faults minicluster --seed 1000 --json": ("parse", 0, None),
    ".venv/bin/flinkspec conform --runs 8 --faults jobmanager-loss --seed 1000 --json": ("parse", 0, None),
    ".venv/bin/flinkspec conform --faults list": ("run", 0, None),
    # real Flink under every fault kind: tests/differential/test_trace_vs_flink.py (slow, flink) records and
    # validates such a batch
    ".venv/bin/flinkspec trace --runs 12 --out results/traces": ("parse", 0, None),
    ".venv/bin/flinkspec validate results/traces": ("parse", 0, None),
    ".venv/bin/flinkspec validate tests/data/traces": ("run", 0, None),
    ".venv/bin/flinkspec check --design examples/designs/failover-skips-consumer-regions.py --corpus /tmp/design-cx":
        ("run", 0, None),
    ".venv/bin/flinkspec explore --design examples/designs/failover-skips-consumer-regions.py --small --out "
    "/tmp/design-explore": ("run", 0, None),
    ".venv/bin/flinkspec explore --design examples/designs/retain-one-more-checkpoint.py --variant "
    "retain-one-more-aligned --small --no-write": ("run", 0, None),
    ".venv/bin/flinkspec check --design examples/designs/retain-one-more-checkpoint.py --only retain-one-more-aligned "
    "--no-write": ("run", 0, None),
    "make trace-check": ("shell", 0, None),
}

COMMANDS = doc_commands()


def test_every_command_in_the_docs_is_declared_and_every_declaration_is_in_the_docs():
    shown = {cmd for _, cmd in COMMANDS}
    undeclared = sorted(f"{page}: {cmd}" for page, cmd in COMMANDS if cmd not in DECLARED)
    assert not undeclared, "commands in the docs that tests/test_docs.py does not run: " + "; ".join(undeclared)
    assert not sorted(set(DECLARED) - shown), f"declared but no longer in the docs: {sorted(set(DECLARED) - shown)}"


def _argv(cmd: str) -> list[str]:
    words = shlex.split(cmd)
    assert Path(words[0]).name == "flinkspec", cmd
    return words[1:]


def _with(argv: list[str], changes: dict) -> list[str]:
    """``argv`` with option values replaced (an option not present is added; value None = a flag)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in changes:
            i += 1 if changes[argv[i]] is None else 2
            continue
        out.append(argv[i])
        i += 1
    for k, v in changes.items():
        out += [k] if v is None else [k, v]
    return out


def _in_tmp(argv: list[str], tmp: Path) -> list[str]:
    """``argv`` with the docs' temporary paths (``/tmp/...``) moved into ``tmp``."""
    tmp.mkdir(parents=True, exist_ok=True)
    return [str(tmp / a.removeprefix("/tmp/")) if a.startswith("/tmp/") else a for a in argv]


def _run(argv, tmp_path, monkeypatch) -> int:
    """Run ``flinkspec argv`` in-process from a scratch working directory (output there),
    with the docs' /tmp paths redirected into it; relative paths of the repository resolve as
    shown from its root."""
    argv = _in_tmp(argv, tmp_path)
    argv = [str(ROOT / a) if a.startswith(("counterexamples/", "examples/", "tests/data/")) else a for a in argv]
    monkeypatch.chdir(tmp_path)
    try:
        return main(argv)
    finally:
        unload_designs()  # a --design command's seams, invariants and variants are the command's only


@pytest.mark.parametrize("cmd", sorted(DECLARED))
def test_each_documented_command_parses(cmd):
    how = DECLARED[cmd][0]
    if how in ("make", "shell"):
        return
    args = build_parser().parse_args(_argv(cmd))
    assert callable(args.func)


def _run_commands() -> list:
    """The commands run in-process; ``check --job`` on the two example jobs only in the slow run:
    tests/test_check_job.py runs the same two commands in the default run and asserts their exit
    codes (1 for the append sink, 0 for the two-phase-commit fix) and what they print."""
    return [pytest.param(c, marks=pytest.mark.slow) if " check --job examples/" in c else c
            for c in sorted(c for c, d in DECLARED.items() if d[0] == "run")]


@pytest.mark.parametrize("cmd", _run_commands())
def test_documented_commands_exit_as_the_docs_say(cmd, tmp_path, monkeypatch, capsys):
    if "corpus update" in cmd:  # it reads the run directories a check made
        assert _run(["check", "--only", "at-least-once-2pc", "--seed", "3"], tmp_path, monkeypatch) == 0
    before = sorted(p.name for p in (ROOT / "counterexamples").rglob("*.ndjson"))
    assert _run(_argv(cmd), tmp_path, monkeypatch) == DECLARED[cmd][1]
    out = capsys.readouterr().out
    assert sorted(p.name for p in (ROOT / "counterexamples").rglob("*.ndjson")) == before
    if " check --only " in f" {cmd} " and "--no-write" not in cmd:
        assert list((tmp_path / "results").glob("check-*-seed3/consistent_cut/*.ndjson")), out
    if "--no-write" in cmd:
        assert not (tmp_path / "results").exists(), out
        assert ("verified" if " explore " in cmd else "[ok]") in out, out
    if "corpus update --dry-run" in cmd:
        assert "dry run: nothing written" in out


def test_the_corpus_update_of_the_readme_on_a_copy_of_the_corpus(tmp_path, monkeypatch, capsys):
    """`flinkspec corpus update` as the README shows it, with the corpus copied (the test must
    not change the committed one): it merges the check's run directory and reports it."""
    copy = tmp_path / "corpus"
    shutil.copytree(ROOT / "counterexamples", copy)
    assert _run(["check", "--only", "at-least-once-2pc", "--seed", "3"], tmp_path, monkeypatch) == 0
    assert _run(_argv(".venv/bin/flinkspec corpus update") + ["--corpus", str(copy)], tmp_path, monkeypatch) == 0
    out = capsys.readouterr().out
    assert re.search(r"\d+ added, \d+ replaced, \d+ removed, \d+ unchanged", out), out


@pytest.mark.slow
def test_the_documented_commands_leave_a_fresh_clone_as_it_was(tmp_path):
    """Every command of README.md and docs/ in the order the pages show them, as written (the
    long ones on their small arguments), from the root of a fresh clone and with the clone's own
    code: afterwards `git status --porcelain` is empty (outputs go to results/, ignored by git,
    or to the temporary folder a page names; `corpus update` after the README's check finds
    nothing strictly shorter) and no empty run folder is left. Not run here: `make check` (about
    13 minutes on two cores; `corpus update --dry-run` after it is tested in tests/test_corpus.py
    on the files it writes), `make test` (this suite), the lines that set up a Spark cluster, and
    what needs a cluster or real Flink (parsed by the tests above)."""
    import os  # only this test starts subprocesses with an environment of its own

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "PYTHONPATH": str(clone)}
    ran = []
    for cmd in dict.fromkeys(c for _, c in COMMANDS):
        how, code, small = DECLARED[cmd]
        if how not in ("run", "small", "corpus"):
            continue
        argv = _in_tmp(_argv(cmd) if how != "small" else _with(_argv(cmd), small), tmp_path / "tmp")
        got = subprocess.run([sys.executable, "-m", "flinkspec", *argv], cwd=clone, env=env,
                             capture_output=True, text=True)
        assert got.returncode == (0 if how == "corpus" else code), f"{cmd}: {got.stdout[-2000:]}{got.stderr[-2000:]}"
        ran.append(cmd)
    assert any("corpus update" in c for c in ran) and any("--report" in c for c in ran) and len(ran) > 10
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", f"the documented commands changed the clone:\n{status}"
    results = clone / "results"
    empty = [d for d in results.rglob("*") if d.is_dir() and not any(d.iterdir())] if results.is_dir() else []
    assert not empty, f"empty run folders left: {empty}"
    assert (tmp_path / "tmp" / "cx.html").is_file() and (tmp_path / "tmp" / "report.html").is_file()


def _small_argument_commands() -> list:
    """The long commands, on their small arguments; ``bench spark`` only in the slow run: it
    starts two Spark sessions of its own whatever the runs (about 40 s of session start-up;
    the default run's Spark tests start theirs once, and test_spark_replay.py's
    ``test_bench_spark_same_fingerprint_three_ways`` holds the bench to its figures); ``bench
    spill`` too: three fresh interpreters take about 6 s even on the smallest space
    (tests/test_explore_spill.py compares the spilled and in-memory searches in process); the
    ``spark-replay`` commands too (15-35 s each: test_spark_replay.py compares executors and the
    driver on every variant in the default run)."""
    slow = (" bench spark", " bench spill", " spark-replay ")
    return [pytest.param(c, marks=pytest.mark.slow) if any(s in c for s in slow) else c
            for c in sorted(c for c, d in DECLARED.items() if d[0] == "small")]


@pytest.mark.parametrize("cmd", _small_argument_commands())
def test_long_documented_commands_on_small_arguments(cmd, tmp_path, monkeypatch):
    assert _run(_with(_argv(cmd), DECLARED[cmd][2]), tmp_path, monkeypatch) == DECLARED[cmd][1]


@pytest.mark.slow
@pytest.mark.parametrize("cmd", sorted(c for c, d in DECLARED.items() if d[0] == "small"))
def test_long_documented_commands_as_written(cmd, tmp_path, monkeypatch):
    assert _run(_argv(cmd), tmp_path, monkeypatch) == DECLARED[cmd][1]


@pytest.mark.parametrize("target", ["check", "test"])
def test_make_targets_run_the_documented_commands(target):
    """`make check` runs `flinkspec verify`, `make test` the default pytest run (dry run:
    running them here would run this suite inside itself)."""
    got = subprocess.run(["make", "-n", "--always-make", target], cwd=ROOT, capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    want = "flinkspec verify" if target == "check" else 'pytest -m "not slow"'
    assert want in got.stdout


@pytest.mark.slow
def test_make_check_exits_0():
    got = subprocess.run(["make", "check"], cwd=ROOT, capture_output=True, text=True)
    assert got.returncode == 0, got.stdout[-3000:]


def test_every_flinkspec_command_in_the_docs_names_the_installed_script():
    """`flinkspec` alone is not on a new user's PATH: the pages show `.venv/bin/flinkspec`."""
    bare = sorted(f"{page}: {cmd}" for page, cmd in COMMANDS if cmd.split()[0] == "flinkspec")
    assert not bare, bare


def test_shell_lines_are_valid_shell():
    lines = [c for c, d in DECLARED.items() if d[0] == "shell"]
    got = subprocess.run(["bash", "-n"], input="\n".join(lines) + "\n", capture_output=True, text=True)
    assert got.returncode == 0, got.stderr


# -- the glossary, the job-spec page, self-containment -------------------------------------------

def _glossary() -> str:
    return (ROOT / "docs" / "glossary.md").read_text()


def test_the_glossary_names_every_invariant_knob_and_flink_key():
    import spec
    from model import seams
    from model.cluster import RuntimeConfig
    from properties.catalog import load_catalog
    from spec.invariant import REGISTRY

    spec.load_all()
    text = _glossary()
    names = {f"`{n}`" for n in REGISTRY} | {f"`{f.name}`" for f in attrs.fields(RuntimeConfig)}
    keys = {e.flink_key for e in load_catalog() if e.flink_key} | set(seams.known_bugs())
    missing = sorted(n for n in names if n not in text) + sorted(k for k in keys if k not in text)
    assert not missing, f"docs/glossary.md does not name {missing}"


def test_the_glossary_tables_of_the_configuration_and_the_environment_are_exact():
    """One row per field, in the classes' order, none left over from a field that moved or was
    retired (a stale row would tell a user to set a knob the model refuses)."""
    import re

    from model.cluster import RuntimeConfig
    from model.environment import Environment
    from model.scope import ModelScope

    text = _glossary()
    for title, cls in (("## Configuration knobs (`RuntimeConfig`", RuntimeConfig),
                       ("## The environment (`Environment`", Environment),
                       ("## The model's scope (`ModelScope`", ModelScope)):
        section = text.split(title, 1)[1].split("\n## ", 1)[0]
        rows = re.findall(r"^\| `(\w+)` \|", section, re.M)
        assert rows == [f.name for f in attrs.fields(cls)], (title, rows)


def test_the_generated_part_of_the_glossary_is_current():
    got = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_glossary.py"), "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert got.returncode == 0, got.stderr


def test_the_job_spec_page_lists_the_functions_the_code_accepts():
    from model.errors import InvalidJobSpec
    from model.functions import filter_function, map_function

    text = (ROOT / "docs" / "job-specs.md").read_text()
    rows = {m.group(1): re.findall(r"`([a-z_]+(?::N)?)`", m.group(2))
            for m in re.finditer(r"^\| (map|filter) \| (.*) \| `\w+` \|$", text, re.M)}
    assert set(rows) == {"map", "filter"}, rows
    for kind, fn in (("map", map_function), ("filter", filter_function)):
        for name in rows[kind]:
            fn(name.replace(":N", ":3"))  # accepted
        with pytest.raises(InvalidJobSpec) as e:
            fn("no-such-function")
        known = re.search(r"known: ([^)]*)", str(e.value)).group(1).split(", ")
        assert rows[kind] == known, f"{kind}: the page lists {rows[kind]}, the code accepts {known}"
    # a filter is not a map: value_ge is only a filter
    with pytest.raises(InvalidJobSpec):
        map_function("value_ge:3")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_pages_stand_alone(page):
    """No page cites a file outside the repository, a design section or an issue number."""
    text = page.read_text()
    bad = re.findall(r"DESIGN\.md|flink-facts|\.\./shared|§\s*\d|\b[Ii]ssues? #?\d+", text)
    assert not bad, f"{page.name} points outside the repository: {bad}"


SOURCES = sorted(p for d in ("model", "spec", "properties", "flinkspec", "spark", "tools", "benchmarks", "tests")
                 for p in (ROOT / d).rglob("*.py"))


def test_code_stands_alone():
    """No docstring or comment of the code cites a file outside the repository, a design
    section or an issue number (say the fact, or name Flink's class)."""
    pattern = re.compile(r"DESIGN\.md|flink-facts|\.\./shared|§\s*\d|\b[Ii]ssues? #?\d+")
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in SOURCES if p != Path(__file__)
           for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert len(SOURCES) > 50
    assert not bad, f"code points outside the repository: {bad}"


def test_pages_name_only_files_that_exist():
    missing = []
    for page in PAGES:
        for rel in re.findall(r"`((?:docs|tests|tools|model|spec|properties|spark|flinkspec|examples|"
                              r"counterexamples|benchmarks)/[\w./-]+\.(?:py|md|toml|json|ndjson))`", page.read_text()):
            if not (ROOT / rel).exists():
                missing.append(f"{page.name}: {rel}")
    assert not missing, missing



# -- help texts ------------------------------------------------------------------------------

def _subparsers(parser):
    import argparse  # only the help test walks the parser tree

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


@pytest.mark.parametrize("command", ["bench"])
def test_help_speaks_to_a_user(command, capsys):
    """`flinkspec bench --help` and each target's: no names of the code (registration
    functions, module constants, reST markup), and every option says what it does."""
    parser = dict(_subparsers(build_parser()))[command]
    pages = [(command, parser), *((f"{command} {n}", p) for n, p in _subparsers(parser))]
    assert len(pages) > 1
    for name, p in pages:
        text = p.format_help()
        assert not re.search(r"register_|TARGETS|``|Cluster\.\w+", text), f"{name} --help:\n{text}"
        silent = [a.option_strings for a in p._actions if a.option_strings and not a.help]
        assert not silent, f"{name}: options without help: {silent}"
