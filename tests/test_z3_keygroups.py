"""spec/z3_keygroups.py and ``flinkspec prove``: the key-group proofs prove, the mutation
(floor at the range start) yields a z3 counterexample that really fails in Python."""

from __future__ import annotations

import json
import random

import pytest

from flinkspec import cli
from model import keygroups as kg
from spec import proofs
from spec import z3_keygroups as zk


@pytest.fixture
def main(monkeypatch):
    """``flinkspec`` main with only this suite's commands (others may be unbuilt)."""
    monkeypatch.setattr(cli, "COMMANDS", ("prove",))
    return cli.main


def test_encoding_formulas_are_the_model_functions():
    """The z3 encoding's formulas, evaluated on ints, are exactly model/keygroups.py."""
    rng = random.Random(7)
    for _ in range(300):
        max_p = rng.randint(1, kg.UPPER_BOUND_MAX_PARALLELISM)
        p = rng.randint(1, max_p)
        i = rng.randint(0, p - 1)
        r = kg.compute_key_group_range_for_operator_index(max_p, p, i)
        assert zk.FLINK.range_for(max_p, p, i) == (r.start, r.end)
        g = rng.randint(0, max_p - 1)
        assert zk.FLINK.index_for(max_p, p, g) == kg.compute_operator_index_for_key_group(max_p, p, g)


def test_flink_formulas_are_proved_for_all_parameters():
    for name in ("keygroups.partition", "keygroups.operator_index", "keygroups.no_int32_overflow"):
        run = proofs.run_check(proofs.load_all()[name], timeout_s=60)
        assert run.result == "proved", run.details
        assert run.counterexample is None


def test_each_goal_separately_fails_for_some_wrong_formula():
    """The goals are not vacuous: a formula with the end off by one breaks the partition."""
    end_plus_one = zk.attrs.evolve(zk.FLINK, end=lambda i, m, p, div: div((i + 1) * m, p))
    result, _, cex = zk.prove_goals(end_plus_one, zk.PARTITION_GOALS, timeout_s=60)
    assert result == "counterexample"
    assert zk.replay_counterexample(cex, end_plus_one)
    result, _, cex = zk.prove_goals(end_plus_one, zk.INDEX_GOALS, timeout_s=60)
    assert result == "counterexample" and "key_group" in cex


def test_mutant_floor_start_counterexample_fails_in_python():
    result, details, cex = zk.prove_goals(
        zk.FLOOR_START, zk.PARTITION_GOALS + zk.INDEX_GOALS, timeout_s=60, minimize=True
    )
    assert result == "counterexample", details
    max_p, p = cex["max_parallelism"], cex["parallelism"]
    assert 1 <= p <= max_p <= kg.UPPER_BOUND_MAX_PARALLELISM
    problems = zk.replay_counterexample(cex, zk.FLOOR_START)
    assert problems, f"z3's counterexample {cex} does not fail in Python"
    # Independently: with the floor formula some key group has != 1 owner at these parameters.
    ranges = [(i * max_p // p, ((i + 1) * max_p - 1) // p) for i in range(p)]
    owners = [sum(s <= g <= e for s, e in ranges) for g in range(max_p)]
    assert any(n != 1 for n in owners)
    # ...while Flink's own functions are fine at the same parameters.
    assert zk.replay_counterexample(cex, zk.FLINK) == []
    real = kg.compute_key_group_ranges(max_p, p)
    assert [sum(r.contains(g) for r in real) for g in range(max_p)] == [1] * max_p


def test_registered_mutant_check_reports_the_counterexample():
    run = proofs.run_check(proofs.load_all()["keygroups.mutant_floor_start"], timeout_s=60)
    assert run.result == run.expected == "counterexample"
    assert run.counterexample["python_failures"]


@pytest.mark.slow
def test_prove_cli_all_expected_exit_0(main, capsys):
    """Every registered check through the CLI (~40 s; `make check` runs it too). The default run
    judges each check in its own test file (the barrier proofs on their small scope)."""
    assert main(["prove", "--json", "--no-write"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = {r["name"] for r in rows}
    assert {"keygroups.partition", "keygroups.operator_index", "keygroups.no_int32_overflow",
            "keygroups.mutant_floor_start"} <= names
    assert all(r["as_expected"] for r in rows)


def test_prove_cli_table(main, capsys):
    assert main(["prove", "--only", "keygroups.partition", "--no-write"]) == 0
    out = capsys.readouterr().out
    for word in ("property", "scope", "result", "expected", "time", "keygroups.partition", "proved"):
        assert word in out


def test_prove_cli_unknown_name_exit_2_lists_known(main, capsys):
    assert main(["prove", "--only", "no.such.proof"]) == 2
    err = capsys.readouterr().err
    assert "no.such.proof" in err and "keygroups.partition" in err
    assert len(err.strip().splitlines()) == 1


def test_prove_cli_unexpected_result_exit_1(main, capsys, monkeypatch):
    """A check whose result differs from the expected one makes the command exit 1."""
    registry = proofs.load_all()
    fake = proofs.ProofCheck(
        name="test.mutant_that_proves",
        scope="n/a",
        expected="counterexample",
        description="a mutation z3 cannot refute",
        run=lambda timeout: zk.prove_goals(zk.FLINK, zk.PARTITION_GOALS, timeout),
    )
    monkeypatch.setitem(registry, fake.name, fake)
    assert main(["prove", "--only", fake.name]) == 1
    assert "UNEXPECTED" in capsys.readouterr().out


def test_prove_cli_unknown_counts_as_unexpected(main, capsys, monkeypatch):
    registry = proofs.load_all()
    fake = proofs.ProofCheck(
        name="test.broken", scope="n/a", expected="proved", description="raises",
        run=lambda timeout: 1 / 0,
    )
    monkeypatch.setitem(registry, fake.name, fake)
    assert main(["prove", "--only", fake.name, "--json"]) == 1
    (row,) = json.loads(capsys.readouterr().out)
    assert row["result"] == "unknown" and "ZeroDivisionError" in row["details"]


def test_prove_cli_bad_timeout_exit_2(main, capsys):
    assert main(["prove", "--timeout", "0"]) == 2
    assert "--timeout" in capsys.readouterr().err


def test_prove_only_is_repeatable_and_runs_each_named_check_once(main, capsys):
    assert main(["prove", "--only", "keygroups.partition", "--only", "keygroups.operator_index",
                 "--only", "keygroups.partition", "--no-write", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["keygroups.partition", "keygroups.operator_index"]
