"""The catalog of named configurations (``model.catalog``, loaded by ``properties.catalog``),
``flinkspec check --list [--json]``, the generated docs/variants.md, and the steps of the
``check`` pipeline in isolation."""

import ast
import io
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from flinkspec.cli import main
from flinkspec.commands import check
from model import catalog, seams
from model.cluster import RuntimeConfig
from model.errors import FlinkspecError
from model.variants import DEFAULT_SINK, VARIANTS, Variant, _add
from properties import machines
from properties.catalog import check_suites, load_catalog
from properties.focused import FOCUSED
from properties.result import SuiteResult
from spark.standin import STANDIN_VARIANTS
from spec import proofs
from spec.coverage import FLOORS, GOALS

ROOT = Path(__file__).resolve().parents[1]
ENTRIES = load_catalog()
BY_NAME = {e.name: e for e in ENTRIES}
REQUIRED = ("name", "family", "expected", "flink_key", "description", "seam", "runner", "command")
RUNNER_OF_KIND = {"cluster": "check", "control-plane": "check", "state-backend": "check", "focused": "check",
                  "z3": "prove", "spark-standin": "spark-replay --engine standin"}


# -- the catalog -----------------------------------------------------------------------------

@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_every_entry_has_the_required_fields(entry):
    assert isinstance(entry.name, str) and entry.name and entry.name.strip() == entry.name
    assert entry.kind in RUNNER_OF_KIND, entry.family
    assert re.fullmatch(r"[a-z0-9-]+(/[a-z0-9-]+)?", entry.family), entry.family
    assert isinstance(entry.expected, tuple) and entry.expected
    assert entry.expected == ("pass",) or "pass" not in entry.expected
    assert entry.flink_key is None or re.fullmatch(r"FLINK-\d+", entry.flink_key), entry.flink_key
    assert entry.seam is None or (isinstance(entry.seam, str) and entry.seam)
    assert entry.description.strip()
    assert entry.runner == RUNNER_OF_KIND[entry.kind]
    assert entry.command.startswith(f"flinkspec {entry.runner} ") and entry.command.endswith(f" {entry.name}")


def test_every_kind_is_in_the_catalog_once_per_name():
    names = [e.name for e in ENTRIES]
    assert len(names) == len(set(names)), [n for n, c in Counter(names).items() if c > 1]
    # each layer's registry is in the catalog, completely, and nothing else is
    layers = {kind: {n for n, v in VARIANTS.items() if v.kind == kind} for kind in catalog.RANDOM_WALK_KINDS}
    layers |= {"focused": set(FOCUSED), "z3": set(proofs.load_all()), "spark-standin": set(STANDIN_VARIANTS)}
    assert set(layers) == set(catalog.KINDS)
    assert all(layers.values()), {k for k, v in layers.items() if not v}  # every kind has entries
    for kind, names_of_layer in layers.items():
        assert {e.name for e in ENTRIES if e.kind == kind} == names_of_layer, kind
    assert len(ENTRIES) == sum(len(v) for v in layers.values())
    # grouped by kind, in the order of model.catalog.KINDS
    kinds = [e.kind for e in ENTRIES]
    assert kinds == sorted(kinds, key=list(catalog.KINDS).index)


def test_a_name_cannot_be_registered_twice_even_by_another_kind(monkeypatch):
    monkeypatch.setattr(catalog, "CATALOG", dict(catalog.CATALOG))
    dup = catalog.Entry(name="aligned-2pc", family="z3", expected=("pass",), description="x",
                        command="flinkspec prove --only aligned-2pc")
    with pytest.raises(ValueError, match="already registered as cluster/keyed"):
        catalog.register(dup)


@pytest.mark.parametrize("kwargs, message", [
    (dict(family="nope/x"), "kind 'nope'"),
    (dict(expected=()), "non-empty"),
    (dict(expected=("pass", "exactly_once")), "cannot be combined"),
])
def test_entries_are_validated(kwargs, message):
    base = dict(name="x", family="cluster/keyed", expected=("pass",), description="d", command="flinkspec check --only x")
    with pytest.raises(ValueError, match=message):
        catalog.Entry(**(base | kwargs))


def test_entries_agree_with_their_layers():
    for name, v in VARIANTS.items():
        e = BY_NAME[name]
        family = ("control-plane" if v.scope.control_plane else "state-backend" if v.family == "state_backend"
                  else "cluster/" + v.family.replace("_", "-"))
        assert (e.expected, e.flink_key, e.description, e.family) == (v.expected, v.flink_key, v.description, family)
    for name, s in FOCUSED.items():
        e = BY_NAME[name]
        assert (e.expected, e.flink_key, e.description, e.family, e.seam) == (
            s.expected, s.flink_key, s.description, s.family, s.seam)
    for name, p in proofs.load_all().items():
        e = BY_NAME[name]
        assert e.expected == proofs.CATALOG_EXPECTED[p.expected] and e.scope == p.scope
    for name, expected in STANDIN_VARIANTS.items():
        assert BY_NAME[name].expected == expected


def test_flink_keys_of_z3_checks_come_from_their_names_or_scopes():
    assert BY_NAME["valve_pre_flink_7721"].flink_key == "FLINK-7721"
    assert BY_NAME["valve_progress_flink_2_3_0"].flink_key == "FLINK-40475"  # from its scope
    assert BY_NAME["valve_safety"].flink_key is None


def test_model_catalog_is_dependency_free():
    tree = ast.parse((ROOT / "model" / "catalog.py").read_text())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported <= {"__future__", "json", "typing", "attrs"}, imported


def test_focused_and_suites_do_not_import_each_other_both_ways():
    def imports(path):
        tree = ast.parse((ROOT / path).read_text())
        return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}

    assert "properties.suites" not in imports("properties/focused.py")
    assert "properties.focused" in imports("properties/suites.py")


# -- seams -------------------------------------------------------------------------------------

UNSAFE_CLUSTER = [v for v in VARIANTS.values() if not v.safe]


@pytest.mark.parametrize("v", [v for v in UNSAFE_CLUSTER if v.seams], ids=lambda v: v.name)
def test_a_reintroduced_bug_names_the_method_its_seam_overrides(v):
    e = BY_NAME[v.name]
    assert e.flink_key is None or e.flink_key in v.seams
    for key in v.seams:
        assert key in seams.SEAMS, f"{v.name}: no seam registered for {key} (model.seams)"
        seam = seams.SEAMS[key]
        owner, _, name = seam.definition.rpartition(".")  # Class.method or model.module.function
        assert (seam.owner.__name__, seam.attribute) == (owner, name)
        module = seam.owner.__name__ if isinstance(seam.owner, type(seams)) else seam.owner.__module__
        assert module.startswith("model.") and vars(seam.owner)[name] is seam.safe
        assert seam.definition in e.seam.split(", ")
    assert "seams=" not in e.seam


@pytest.mark.parametrize("v", [v for v in UNSAFE_CLUSTER if not v.seams], ids=lambda v: v.name)
def test_an_unsafe_knob_variant_names_the_knob_it_switches(v):
    seam = BY_NAME[v.name].seam
    assert seam, f"{v.name}: an unsafe variant must say what it switches"
    for part in seam.split(", "):
        owner, _, assignment = part.partition(".")
        field, _, value = assignment.partition("=")
        if owner == "OperatorSpec":
            assert field == "sink_kind" and value == repr(v.sink_kind) and v.sink_kind != DEFAULT_SINK
        else:
            assert owner == "RuntimeConfig"
            assert value == repr(getattr(v.config, field)) != repr(getattr(RuntimeConfig(), field))


def test_safe_variants_switch_nothing():
    assert all(BY_NAME[n].seam is None for n, v in VARIANTS.items() if v.safe)


def test_a_switch_at_its_default_is_refused():
    with pytest.raises(ValueError, match="at its default"):
        _add(Variant(name="test-bogus", description="x", expected=("exactly_once",),
                     switches=("checkpointing_mode",)))
    assert "test-bogus" not in VARIANTS and "test-bogus" not in catalog.CATALOG


@pytest.mark.parametrize("name", list(FOCUSED))
def test_focused_seams_name_the_call_that_configures_the_search(name):
    seam = BY_NAME[name].seam
    fn = seam.split("(", 1)[0]
    assert callable(getattr(machines, fn, None)), seam


# -- check --list -------------------------------------------------------------------------------

def test_check_list_json_prints_one_object_per_configuration(capsys):
    assert main(["check", "--list", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(line) for line in lines]
    assert all(isinstance(r, dict) for r in rows)
    for r in rows:
        assert set(REQUIRED) <= set(r), r
        assert isinstance(r["expected"], list) and r["expected"]
        assert r["runner"] == RUNNER_OF_KIND[r["family"].split("/")[0]]
    names = [r["name"] for r in rows]
    assert len(names) == len(set(names))
    assert set(names) == set(VARIANTS) | set(FOCUSED) | set(proofs.load_all()) | set(STANDIN_VARIANTS)
    assert rows[0]["name"] == next(iter(VARIANTS))
    seam_of = {r["name"]: r["seam"] for r in rows}
    assert seam_of["FLINK-17568"] == seams.SEAMS["FLINK-17568"].definition
    assert seam_of["region-failover-skips-consumers"] == "RestartPipelinedRegionFailoverStrategy.consumer_regions"


def test_check_list_prints_a_table_naming_every_entry_and_its_command(capsys):
    assert main(["check", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["name", "family", "run"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == set(BY_NAME)
    assert "flinkspec prove" in rows["valve_safety"] and "flinkspec check" in rows["valve"]
    assert "flinkspec spark-replay --engine standin" in rows["standin-lossy"]


# -- docs/variants.md ---------------------------------------------------------------------------

def test_docs_variants_md_is_generated_from_the_catalog():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_variants_doc", ROOT / "tools" / "gen_variants_doc.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    page = gen.render()
    assert (ROOT / "docs" / "variants.md").read_text() == page, \
        "docs/variants.md is stale: run .venv/bin/python tools/gen_variants_doc.py"
    for e in ENTRIES:
        assert f"| `{e.name}` | `{e.family}` |" in page


# -- the check pipeline, step by step ------------------------------------------------------------

def test_select_suites_rejects_unknown_names_naming_the_known_ones():
    with pytest.raises(FlinkspecError) as info:
        check.select_suites(["aligned-2pc", "no-such-suite"])
    msg = str(info.value)
    assert "no-such-suite" in msg and "known suites: aligned-2pc," in msg and "\n" not in msg
    assert "valve_safety" not in msg  # z3 checks are not check suites


def test_select_suites_points_at_the_command_of_another_kind():
    with pytest.raises(FlinkspecError, match=r"valve_safety is run by `flinkspec prove --only valve_safety`"):
        check.select_suites(["valve_safety"])


def test_select_suites_all_or_the_named_ones_in_order():
    everything = check.select_suites([])
    assert [e.name for e in everything] == list(VARIANTS) + list(FOCUSED) == [e.name for e in check_suites()]
    assert [e.name for e in check.select_suites(["valve", "aligned-2pc"])] == ["valve", "aligned-2pc"]


def _result(name, expected, violations=(), goals=(), error=None):
    return SuiteResult(name=name, expected=expected, runs=3, violations=Counter(violations),
                       goals=Counter(goals), error=error)


def test_judge_verdicts_and_coverage():
    suites = check.select_suites(["aligned-2pc", "at-least-once-2pc"])
    at_floor = {g: FLOORS[g] for g in GOALS}
    ok = [_result("aligned-2pc", ("pass",), goals=at_floor),
          _result("at-least-once-2pc", ("consistent_cut",), violations=["consistent_cut"])]
    j = check.judge(suites, ok, selected=False)
    assert j.ok and j.exit_code == 0 and not j.missing and j.cluster_ran
    assert j.counts == {"safe": 1, "safe_ok": 1, "unsafe": 1, "found": 1, "goals_reached": len(GOALS)}
    # a goal with a floor above 1, reached by one run fewer than it: missing, exit 1
    floored = next(g for g in GOALS if FLOORS[g] > 1)
    short = [_result("aligned-2pc", ("pass",), goals={**at_floor, floored: FLOORS[floored] - 1}), ok[1]]
    j = check.judge(suites, short, selected=False)
    assert j.exit_code == 1 and j.missing == (floored,) and j.counts["goals_reached"] == len(GOALS) - 1
    # an unsafe variant not caught, and a goal never reached in a full run: exit 1
    missed = [_result("aligned-2pc", ("pass",)), _result("at-least-once-2pc", ("consistent_cut",))]
    j = check.judge(suites, missed, selected=False)
    assert j.exit_code == 1 and [r.name for r in j.bad] == ["at-least-once-2pc"]
    assert set(j.missing) == set(GOALS)
    # selected suites: missing goals are only a note
    j = check.judge(suites, [missed[0]], selected=True)
    assert j.ok and j.missing
    # a focused suite alone reaches no goal and shows no goal table
    assert not check.judge(check.select_suites(["valve"]), [_result("valve", ("pass",))], selected=True).cluster_ran


def test_suite_lines_and_summary_render_the_judgement():
    r = _result("at-least-once-2pc", ("consistent_cut",), violations=["consistent_cut"])
    r.shrunk_from, r.shrunk_to, r.counterexample = 18, 14, "/nowhere/x.ndjson"
    assert check.suite_lines("[1/1] at-least-once-2pc", r) == [
        f"[1/1] at-least-once-2pc: violation: consistent_cut [ok] in 0.0s (found after 3 run(s), shrunk 18 -> 14 steps)",
        "    counterexample: /nowhere/x.ndjson"]
    bad = _result("aligned-2pc", ("pass",), error="boom")
    assert check.suite_lines("[2/2] aligned-2pc", bad)[1:] == ["    error: boom"]
    assert "[UNEXPECTED]" in check.suite_lines("x", bad)[0]
    out = io.StringIO()
    j = check.judge(check.select_suites(["at-least-once-2pc", "aligned-2pc"]), [r, bad], selected=True, seconds=1.5)
    check.render_summary(Console(file=out, width=200), j, profile="quick", seed=7)
    text = out.getvalue()
    assert "flinkspec check — quick profile, seed 7" in text and "coverage goals (sometimes)" in text
    assert "1 suite(s) did not reach their expected verdict: aligned-2pc" in text
    assert "summary: 0/1 safe suites passed, 1/1 unsafe variants caught" in text and text.rstrip().endswith("FAILED")


def test_run_suites_runs_each_selected_suite_and_reports_it():
    seen = []
    results = check.run_suites(check.select_suites(["window-assigner-FLINK-26334"]), profile="quick", seed=0,
                               corpus=None, finished=lambda label, r: seen.append((label, r.name)))
    assert seen == [("[1/1] window-assigner-FLINK-26334", "window-assigner-FLINK-26334")]
    assert results[0].as_expected and results[0].found


@pytest.mark.slow  # the suites twice, once on two worker processes (~14 s)
def test_run_suites_with_two_workers_gives_the_results_and_files_of_one(tmp_path):
    names = ["rescaling-keygroups-modulo", "late-window-append", "window-assigner-FLINK-26334", "valve"]
    suites = check.select_suites(names)
    seen = []
    one = check.run_suites(suites, profile="quick", seed=3, corpus=tmp_path / "one")
    two = check.run_suites(suites, profile="quick", seed=3, corpus=tmp_path / "two", workers=2,
                           finished=lambda label, r: seen.append(label))
    assert [r.name for r in two] == names  # catalog order, whatever order they finished in
    assert sorted(seen) == sorted(f"[{i}/4] {n}" for i, n in enumerate(names, 1))
    keep = ("name", "verdict", "runs", "steps", "runs_to_find", "violations", "goals", "shrunk_from", "shrunk_to")
    assert [[getattr(r, k) for k in keep] for r in two] == [[getattr(r, k) for k in keep] for r in one]
    files = {d: {p.relative_to(tmp_path / d): p.read_bytes() for p in (tmp_path / d).rglob("*") if p.is_file()}
             for d in ("one", "two")}
    assert files["one"] and files["one"] == files["two"]


def test_check_exit_codes(capsys):
    assert main(["check", "--no-write", "--only", "window-assigner-FLINK-26334", "--only", "valve"]) == 0
    out = capsys.readouterr().out
    assert "[1/2] window-assigner-FLINK-26334: violation: window_contains_timestamp [ok]" in out
    assert "summary: 1/1 safe suites passed, 1/1 unsafe variants caught" in out and "OK" in out
    assert main(["check", "--variant", "no-such-variant"]) == 2
    assert "unknown suite(s) no-such-variant" in capsys.readouterr().err


def _dying_worker(name, profile, seed, corpus):
    """A stand-in for check's worker: the suite "valve" ends its process without an answer."""
    if name == "valve":
        os._exit(3)
    return _REAL_WORKER(name, profile, seed, corpus)


_REAL_WORKER = check._run_suite_in_worker


def test_a_suite_whose_worker_dies_is_an_error_verdict(monkeypatch):
    monkeypatch.setattr(check, "_run_suite_in_worker", _dying_worker)
    results = check.run_suites(check.select_suites(["valve", "window-assigner-FLINK-26334"]), profile="quick", seed=0,
                               corpus=None, workers=2)
    assert [r.name for r in results] == ["valve", "window-assigner-FLINK-26334"]
    assert results[0].verdict == "error" and "BrokenProcessPool" in results[0].error
    assert not results[0].as_expected
