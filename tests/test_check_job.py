"""``flinkspec check --job FILE`` and ``explore --job FILE``: a user's own job, its [runtime] and
[input] tables (defaults, rules), the verdicts and exit codes on the example jobs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import attrs
import pytest

from flinkspec.cli import main
from model.cluster import RuntimeConfig
from model.environment import Environment
from model.errors import InvalidJobSpec
from model.jobfile import generate_input, job_file_from_dict, load_job_file
from model.variants import generate, job_variant
from properties.counterexample import load_counterexample, replay_counterexample
from properties.engines import check_judgeable

ROOT = Path(__file__).resolve().parents[1]
APPEND = ROOT / "examples" / "orders-append.toml"
TWO_PC = ROOT / "examples" / "orders-2pc.toml"

TINY = """
name = "tiny"
[[operators]]
name = "src"
kind = "source"
[[operators]]
name = "count"
kind = "keyed_aggregate"
aggregate = "count"
[[operators]]
name = "out"
kind = "sink"
sink_kind = "{sink}"
[[edges]]
source = "src"
target = "count"
partitioner = "hash"
[[edges]]
source = "count"
target = "out"
partitioner = "forward"
"""


def write(tmp_path, text: str, name: str = "job.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the tables --------------------------------------------------------------------------------

def test_without_tables_the_runtime_takes_flinks_defaults(tmp_path):
    job = load_job_file(write(tmp_path, TINY.format(sink="two_phase_commit")))
    c = job.config
    assert (c.checkpointing_mode, c.unaligned, c.aligned_checkpoint_timeout, c.max_concurrent_checkpoints,
            c.failover_strategy) == ("exactly_once", False, None, 1, "region")
    # taskmanager.numberOfTaskSlots = 1, and as many TaskManagers as the job's 1 slot needs
    assert (c.slots_per_task_manager, c.task_managers) == (1, 1)
    # the search's fault budget when [environment] names none, triggers reaching the sources at once
    assert job.environment.max_failures == 2 and job.environment.trigger_delivery == "at_once"


def test_runtime_table_sets_the_configuration(tmp_path):
    text = TINY.format(sink="two_phase_commit") + """
[runtime]
unaligned = true
aligned_checkpoint_timeout = 4
max_concurrent_checkpoints = 2
failover_strategy = "full"
task_managers = 3
slots_per_task_manager = 2
[environment]
max_failures = 0
trigger_delivery = "any_order"
"""
    job = load_job_file(write(tmp_path, text))
    c = job.config
    assert c.barrier_mode == "alternating" and c.aligned_checkpoint_timeout == 4
    assert job.environment.trigger_delivery == "any_order"
    assert (c.max_concurrent_checkpoints, c.failover_strategy, job.environment.max_failures, c.task_managers,
            c.slots_per_task_manager) == (2, "full", 0, 3, 2)


@pytest.mark.parametrize("table, rule", [
    ('[runtime]\ncheckpointing_mode = "exactly-once"', "[runtime] checkpointing_mode: must be one of"),
    ('[runtime]\ncheckpointing_mode = "at_least_once"\nunaligned = true', "[runtime] unaligned: unaligned checkpoints need"),
    ("[runtime]\naligned_checkpoint_timeout = 5", "[runtime] aligned_checkpoint_timeout: needs unaligned = true"),
    ("[environment]\nmax_failures = -1", "[environment] max_failures: must be an integer in [0, 100]"),
    # the fault budget is the run's environment, not Flink's configuration
    ("[runtime]\nmax_failures = 1", "[runtime] max_failures: belongs in [environment], not in [runtime]"),
    ("[environment]\nunaligned = true", "[environment] unaligned: belongs in [runtime], not in [environment]"),
    ("[environment]\nmax_checkpoints = 1", "[environment]: unknown key 'max_checkpoints'"),
    ('[environment]\ntrigger_delivery = "late"', "[environment] trigger_delivery: must be one of at_once, any_order"),
    ("[runtime]\nmax_concurrent_checkpoints = 0", "[runtime] max_concurrent_checkpoints: must be an integer"),
    ('[runtime]\nfailover_strategy = "restart-all"', "[runtime] failover_strategy: must be 'region' or 'full'"),
    ("[runtime]\nunaligned = 1", "[runtime] unaligned: must be a boolean"),
    ("[runtime]\nrestart_delay = 3", "[runtime]: unknown key 'restart_delay'"),
    ('[input]\nkeys = ["a", "a"]', "[input] keys: 'a' is listed twice"),
    ("[input]\nkeys = []", "[input] keys: must be a non-empty list"),
    ("[input]\nkeys = [1, 2]", "[input] keys[0]: must be a non-empty string"),
    ("[input]\nrecords = -1", "[input] records: must be an integer in [0, 10000]"),
    ("[input]\nseed = true", "[input] seed: must be an integer"),
    ("[input]\nwatermarks = 3", "[input]: unknown key 'watermarks'"),
    ('runtime = "fast"', "key 'runtime' must be a table"),
])
def test_a_broken_rule_is_one_line_naming_the_file_the_table_and_the_rule(tmp_path, capsys, table, rule):
    p = write(tmp_path, table + "\n" + TINY.format(sink="two_phase_commit")) if table.startswith("runtime =") \
        else write(tmp_path, TINY.format(sink="two_phase_commit") + table + "\n")
    code, out, err = run(capsys, "check", "--job", p, "--no-write")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flinkspec: error: ") and "Traceback" not in err
    assert str(p) in lines[0] and rule in lines[0], lines[0]


SLIDING = TINY.replace('kind = "keyed_aggregate"', 'kind = "window"\nwindow_size = 4\nwindow_slide = 2')
#: the sliding window reaches its sink through a map: the event-time judge reads window results
#: at the sink, so it does not cover this job
WINDOW_MAP = SLIDING.replace('[[operators]]\nname = "out"', '[[operators]]\nname = "m"\nkind = "map"\n'
                             '[[operators]]\nname = "out"').replace(
    'source = "count"\ntarget = "out"', 'source = "count"\ntarget = "m"\npartitioner = "forward"\n'
    '[[edges]]\nsource = "m"\ntarget = "out"')


@pytest.mark.parametrize("command", ["check", "explore"])
def test_late_input_on_windows_no_judge_covers_is_refused_before_any_search(tmp_path, capsys, command):
    """[input] out_of_orderness above a source's watermark bound makes records late whatever
    the schedule; behind a window that reaches its sink through another operator no judge
    tells a justified drop from a lost record."""
    p = write(tmp_path, WINDOW_MAP.format(sink="upsert") + "[input]\nout_of_orderness = 3\n")
    code, out, err = run(capsys, command, "--job", p, "--no-write")
    assert code == 2 and out == "" and "Traceback" not in err
    (line,) = err.splitlines()
    assert f"{p}: [input] out_of_orderness: 3 makes records of source(s) 'src' late" in line
    # within the bound, or directly into a sink the event-time judge covers (tumbling or
    # sliding windows, a two-phase-commit or upsert sink), the job runs
    ok = write(tmp_path, WINDOW_MAP.format(sink="upsert") + "[input]\nout_of_orderness = 0\n", "ok.toml")
    sliding = write(tmp_path, SLIDING.format(sink="two_phase_commit") + "[input]\nout_of_orderness = 3\n",
                    "sliding.toml")
    upsert = write(tmp_path, SLIDING.format(sink="upsert") + "[input]\nout_of_orderness = 3\n", "upsert.toml")
    tumbling = write(tmp_path, SLIDING.replace("window_slide = 2", "").format(sink="two_phase_commit")
                     + "[input]\nout_of_orderness = 3\n", "tumbling.toml")
    for f in (ok, sliding, upsert, tumbling):
        check_judgeable(load_job_file(f))


def test_too_few_slots_is_refused_before_any_search(tmp_path, capsys):
    text = TINY.replace('kind = "source"', 'kind = "source"\nparallelism = 3').format(sink="append")
    text += "[runtime]\ntask_managers = 1\nslots_per_task_manager = 2\n"
    code, _, err = run(capsys, "check", "--job", write(tmp_path, text), "--no-write")
    assert code == 2 and "[runtime] task_managers: 1 TaskManager(s) x 2 slot(s) = 2 slots, but the job needs 3" in err


def test_a_bad_stream_graph_keeps_its_rule(tmp_path, capsys):
    code, _, err = run(capsys, "check", "--job", write(tmp_path, TINY.format(sink="exactly_once")), "--no-write")
    assert code == 2 and "unknown sink kind" in err and "Traceback" not in err


def test_job_takes_no_suite_selection(capsys):
    code, _, err = run(capsys, "check", "--job", APPEND, "--only", "aligned-2pc", "--no-write")
    assert code == 2 and "--job FILE" in err


# -- the input ---------------------------------------------------------------------------------

def test_input_is_drawn_per_seed_unless_the_table_fixes_it(tmp_path):
    job = load_job_file(write(tmp_path, TINY.format(sink="append") + "[input]\nrecords = 5\nkeys = [\"x\", \"y\"]\n"))
    a, b = generate_input(job.graph, job.input, 1), generate_input(job.graph, job.input, 2)
    assert a == generate_input(job.graph, job.input, 1) and a != b
    for inp in (a, b):
        (split,) = inp.splits["src"]
        assert len(split) == 5 and {k for k, _, _ in split} <= {"x", "y"}
    fixed = attrs.evolve(job, input=attrs.evolve(job.input, seed=7))
    assert generate_input(fixed.graph, fixed.input, 1) == generate_input(fixed.graph, fixed.input, 2)


def test_generated_event_times_lag_by_at_most_the_out_of_orderness():
    job = load_job_file(APPEND)
    for seed in range(20):
        for split in generate_input(job.graph, job.input, seed).splits["orders"]:
            top = None
            for _, _, ts in split:
                if top is not None:
                    assert ts >= top - 2
                top = ts if top is None else max(top, ts)
        assert len(generate_input(job.graph, job.input, seed).splits["orders"]) == 2  # one split per subtask


def test_the_job_variant_runs_the_files_job_and_configuration():
    job = load_job_file(TWO_PC)
    v = job_variant(job)
    assert v.name == "job:orders-2pc" and v.safe
    s = generate(v, 3)
    assert s.graph == job.graph and s.config == job.config and s.environment == job.environment and s.seed == 3


def test_the_dict_form_checks_the_same_rules():
    with pytest.raises(InvalidJobSpec, match=r"\[environment\] max_failures"):
        job_file_from_dict({"operators": [{"name": "s", "kind": "source"}], "environment": {"max_failures": "2"}})
    job = job_file_from_dict({"operators": [{"name": "s", "kind": "source"}]})
    assert job.config == RuntimeConfig(task_managers=1, slots_per_task_manager=1)
    assert job.environment == Environment(max_failures=2)


# -- the verdicts ------------------------------------------------------------------------------

def test_the_plain_append_sink_duplicates_output_exit_1_invariant_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "check", "--job", APPEND)
    assert code == 1
    assert "committed_output_within_reference" in out and "a duplicate" in out
    assert "summary: job 'orders-append': violation found: committed_output_within_reference" in out
    assert "UNEXPECTED" not in out and "violation found: committed_output_within_reference (in run" in out
    _assert_lists_the_goals_that_apply(APPEND, out)
    # the closing hint names what reads the files; the corpus holds the catalog's variants only
    flat = " ".join(out.split())  # (the console wraps long lines)
    assert "flinkspec show FILE" in flat and "flinkspec replay FILE" in flat and "corpus update" not in flat
    (run_dir,) = (tmp_path / "results").glob("check-job-orders-append-*-seed0")
    files = sorted(run_dir.glob("*/*.ndjson"))
    assert files
    for f in files:
        cx = load_counterexample(f, known_variant=True)
        assert cx.variant.startswith("job:orders-append")
        ok, _ = replay_counterexample(cx)
        assert ok
    # the hint works: `flinkspec replay FILE` reproduces the file's verdict
    code, out, err = run(capsys, "replay", files[0])
    assert code == 0, out + err
    header = json.loads(files[0].read_text().splitlines()[0])
    assert header["scenario"]["graph"]["name"] == "orders-append"


@pytest.mark.slow  # the whole quick profile of a job (~17 s); the append sink's exit 1 runs by default
def test_the_two_phase_commit_fix_passes_exit_0(capsys):
    code, out, _ = run(capsys, "check", "--job", TWO_PC, "--no-write")
    assert code == 0
    summary = next(line for line in out.splitlines() if line.startswith("summary:"))
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│ job:")]
    assert len(rows) == 2 and all(r[3] == "no violation" for r in rows)
    runs = sum(int(r[1]) for r in rows)
    assert runs > 0 and f"summary: job 'orders-2pc': no violation in {runs:,} runs, " in summary, summary
    assert "UNEXPECTED" not in out and "expected" not in out.split("coverage goals")[0]
    _assert_lists_the_goals_that_apply(TWO_PC, out)


def _applying(job) -> tuple:
    from model.variants import generate, job_variant
    from spec.coverage import goals_applying_to

    return tuple(goals_applying_to(generate(job_variant(load_job_file(job)), 0)))


def _assert_lists_the_goals_that_apply(job, out: str) -> None:
    """``check --job``'s output lists exactly the coverage goals that apply to the job, and its
    summary counts them."""
    applying = _applying(job)
    listed = re.findall(r"^│ (\w+) +│ +\d+ │", out, re.M)
    assert listed == list(applying)
    flat = " ".join(out.split())
    assert f"/{len(applying)} coverage goals that apply to the job reached" in flat


def test_the_coverage_goals_that_apply_to_a_job_leave_out_the_mechanisms_it_does_not_use():
    """orders-2pc and orders-append: aligned checkpoints, no unaligned ones, no state backend,
    no control plane, no savepoints: none of those mechanisms' goals applies. (That ``check
    --job`` lists exactly these is asserted on its runs: the append job's by default, the
    two-phase-commit job's in the slow run.)"""
    from spec.coverage import GOALS

    for job in (TWO_PC, APPEND):
        applying = _applying(job)
        assert 0 < len(applying) < len(GOALS)
        assert not any(g.startswith("cp_") or "unaligned" in g or "claim" in g for g in applying)


def test_explore_job_finds_the_shortest_duplicate_and_verifies_the_fix(tmp_path, capsys):
    tiny = TINY + "[environment]\nmax_failures = 1\n[input]\nrecords = 1\nkeys = [\"a\"]\nseed = 1\n"
    code, out, _ = run(capsys, "explore", "--job", write(tmp_path, tiny.format(sink="append"), "a.toml"),
                       "--no-write", "--json")
    row = json.loads(out)
    assert code == 1 and row["verdict"] == "violation" and row["variant"] == "job:tiny"
    assert row["invariant"] in ("committed_output_within_reference", "exactly_once")
    fixed = tiny.replace("max_failures = 1", "max_failures = 0").format(sink="two_phase_commit")
    code, out, _ = run(capsys, "explore", "--job", write(tmp_path, fixed, "b.toml"), "--no-write", "--json")
    row = json.loads(out)
    assert code == 0 and row["verdict"] == "verified" and row["distinct_states"] > 1


def test_explore_job_refuses_small_and_a_variant_together(capsys):
    code, _, err = run(capsys, "explore", "--job", APPEND, "--variant", "aligned-2pc")
    assert code == 2 and "--job FILE" in err
    code, _, err = run(capsys, "explore", "--job", APPEND, "--small")
    assert code == 2 and "--small" in err


def test_compile_reads_a_job_file_with_its_tables(capsys):
    code, out, _ = run(capsys, "compile", APPEND)
    assert code == 0 and "job 'orders-append'" in out


def test_the_job_spec_page_documents_every_key_of_every_table():
    import re

    from model.jobfile import ENVIRONMENT_KEYS, INPUT_KEYS, RUNTIME_KEYS

    text = (ROOT / "docs" / "job-specs.md").read_text()
    for title, keys in (("`[runtime]`:", RUNTIME_KEYS), ("`[environment]` (not Flink options", ENVIRONMENT_KEYS),
                        ("`[input]` (one split per source subtask):", INPUT_KEYS)):
        table = text.split(title, 1)[1].split("\n\n", 2)[1]
        rows = re.findall(r"^\| `(\w+)` \|", table, re.M)
        assert rows == list(keys), (title, rows)
