"""``flinkspec compile``: output and error handling, called in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flinkspec import cli

EXAMPLES = Path(__file__).parent.parent / "examples"
REF = str(EXAMPLES / "reference-window-job.toml")


@pytest.fixture
def run(monkeypatch, capsys):
    # only this command's module: the test must not depend on other subcommands
    monkeypatch.setattr(cli, "COMMANDS", ("compile",))

    def _run(*argv):
        code = cli.main(["compile", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return _run


def test_text_output_shows_chains_wiring_and_placement(run):
    code, out, err = run(REF, "--task-managers", "2", "--slots", "2")
    assert code == 0 and err == ""
    assert "window: [window]  parallelism 3, max parallelism 128 (default)" in out
    assert "edge #0 source -> window (source -> window): hash, ALL_TO_ALL, PIPELINED_BOUNDED, 6 channels" in out
    assert "channel 5: source (2/2)[2] -> window (3/3) (gate 0, channel 1)" in out
    assert "tm-1/0 ('default'): source (1/2), window (1/3), sink (1/2)" in out
    assert "tm-2/0 ('default'): window (3/3)" in out


def test_chained_example(run):
    code, out, _ = run(str(EXAMPLES / "sliding-window-chain.json"))
    assert code == 0
    assert "clicks: [clicks -> valid]" in out and "per-minute: [per-minute -> out]" in out
    assert "4 TaskManager(s) x 1 slots" in out  # no [runtime]: 1 slot each (Flink's default), as many as needed


def test_waiting_for_resources(run):
    code, out, _ = run(REF, "--task-managers", "1", "--slots", "2")
    assert code == 0
    assert "WAITING_FOR_RESOURCES: the job needs 3 slots, 2 available" in out


def test_json_output(run):
    code, out, _ = run(str(EXAMPLES / "pipeline-features.toml"), "--json", "--task-managers", "3", "--slots", "3")
    assert code == 0
    doc = json.loads(out)
    assert [v["id"] for v in doc["job_vertices"]] == ["src", "rules", "enrich", "agg", "store", "audit"]
    assert doc["job_vertices"][0]["operators"] == ["src", "parse"]
    fan_out = doc["job_edges"][0]
    assert (fan_out["partitioner"], fan_out["distribution"], len(fan_out["channels"])) == ("rescale", "POINTWISE", 4)
    # a rescale input forces every input edge of its consumer aligned (Flink's StreamGraphGenerator)
    by_target: dict = {}
    for e in doc["job_edges"]:
        by_target.setdefault(e["target_operator"], []).append(e)
    for target, edges in by_target.items():
        forced = any(e["partitioner"] in ("forward", "rescale", "broadcast") for e in edges)
        assert [e["supports_unaligned_checkpoints"] for e in edges] == [not forced] * len(edges), target
    assert not fan_out["supports_unaligned_checkpoints"] and any(e["supports_unaligned_checkpoints"]
                                                                 for e in doc["job_edges"])
    assert doc["placement"]["state"] == "ALLOCATED" and doc["placement"]["total_required_slots"] == 9
    placed = sorted(s for slot in doc["placement"]["slots"] for s in slot["subtasks"])
    assert len(placed) == len(set(placed)) == 14


@pytest.mark.parametrize(
    "text,expected",
    [
        ('[[operators]]\nname = "s"\nkind = "source"\nparallelism = 2\n'
         '[[operators]]\nname = "m"\nkind = "map"\nparallelism = 3\n'
         '[[edges]]\nsource = "s"\ntarget = "m"\npartitioner = "forward"\n',
         "edge 's' -> 'm': forward partitioning does not allow change of parallelism"),
        ('[[operators]]\nname = "s"\nkind = "source"\n[[operators]]\nname = "w"\nkind = "window"\n'
         'aggregate = "count"\nwindow_size = 5\n[[edges]]\nsource = "s"\ntarget = "w"\npartitioner = "rebalance"\n',
         "edge 's' -> 'w': keyed operator 'w'"),
        ("[[operators]\n", "malformed TOML"),
        # the co-location rule is checked on the chains; the error still names the file
        ('[[operators]]\nname = "s"\nkind = "source"\nslot_sharing_group = "x"\nco_location_group = "c"\n'
         '[[operators]]\nname = "m"\nkind = "map"\nslot_sharing_group = "y"\nco_location_group = "c"\n'
         '[[edges]]\nsource = "s"\ntarget = "m"\n',
         "operator 'm': co-location group 'c' spans different slot sharing groups ('s' is in 'x', 'm' is in 'y')"
         " (Flink: Cannot co-locate operators from different slot sharing groups)"),
    ],
)
def test_invalid_spec_is_one_line_and_exit_2(run, tmp_path, text, expected):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    code, out, err = run(str(f))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"flinkspec: error: {f}:")
    assert expected in err


def test_missing_file_and_bad_arguments(run, tmp_path):
    code, _, err = run(str(tmp_path / "missing.toml"))
    assert code == 2 and "cannot read" in err and err.count("\n") == 1
    code, _, err = run(REF, "--task-managers", "0")
    assert code == 2 and "--task-managers must be between 1 and" in err


JOB_FILES = sorted([*EXAMPLES.glob("*.toml"), *EXAMPLES.glob("*.json")])


@pytest.mark.parametrize("path", JOB_FILES, ids=lambda p: p.name)
def test_compile_places_a_file_on_the_cluster_check_job_runs_it_on(run, path):
    """One file, one cluster: without flags `compile` places the job on the TaskManagers x slots
    of its [runtime] table (or that table's defaults), the ones `check --job` prints and the
    model's Cluster is built with."""
    from model.cluster import Cluster  # the model's placement, for this test only
    from model.jobfile import load_job_file  # as above
    from model.variants import generate, job_variant  # as above

    code, out, _ = run(str(path), "--json")
    assert code == 0
    tms = json.loads(out)["placement"]["task_managers"]
    cfg = load_job_file(path).config
    assert (len(tms), {t["slots"] for t in tms}) == (cfg.task_managers, {cfg.slots_per_task_manager})
    cluster = Cluster.from_scenario(generate(job_variant(load_job_file(path)), 0))
    assert [t.number_of_slots for t in cluster.task_managers] == [t["slots"] for t in tms]


def test_compile_takes_the_runtime_tables_cluster_and_flags_override_it(run, tmp_path):
    spec = tmp_path / "job.toml"
    spec.write_text((EXAMPLES / "reference-window-job.toml").read_text()
                    + "\n[runtime]\ntask_managers = 2\nslots_per_task_manager = 2\n")
    code, out, _ = run(str(spec))
    assert code == 0 and "Slot placement on 2 TaskManager(s) x 2 slots" in out
    code, out, _ = run(str(spec), "--slots", "3")
    assert code == 0 and "Slot placement on 2 TaskManager(s) x 3 slots" in out
    code, out, _ = run(str(spec), "--task-managers", "1")
    assert code == 0 and "WAITING_FOR_RESOURCES: the job needs 3 slots, 2 available" in out
