"""``flinkspec keygroup``: per-key routing and ranges, exact to Flink; bad parameters exit 2."""

from __future__ import annotations

import json

import pytest

from flinkspec import cli


@pytest.fixture
def main(monkeypatch):
    monkeypatch.setattr(cli, "COMMANDS", ("keygroup",))
    return cli.main


def _json(main, capsys, *argv):
    assert main(["keygroup", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_vectors_of_flink_facts(main, capsys):
    out = _json(main, capsys, "1", "a", "hello", "-m", "128", "-p", "3")
    rows = {r["key"]: r for r in out["keys"]}
    assert rows["1"]["type"] == "Integer" and rows["1"]["murmur"] == 68075478
    assert rows["1"]["key_group"] == 86 and rows["1"]["operator_index"] == 2
    assert rows["1"]["range"] == [86, 127]
    assert rows["a"]["hash_code"] == 97 and rows["a"]["key_group"] == 81
    assert rows["a"]["operator_index"] == 1 and rows["a"]["range"] == [43, 85]
    assert rows["hello"]["hash_code"] == 99162322 and rows["hello"]["key_group"] == 35
    assert rows["hello"]["operator_index"] == 0


def test_types(main, capsys):
    rows = _json(main, capsys, "-1", "4294967297", "-m", "128", "-p", "4")["keys"]
    assert [(r["type"], r["hash_code"]) for r in rows] == [("Integer", -1), ("Long", 0)]
    (row,) = _json(main, capsys, "-1", "-t", "long", "-m", "128", "-p", "4")["keys"]
    assert (row["type"], row["hash_code"]) == ("Long", 0)  # Long(-1) != Integer(-1)
    (row,) = _json(main, capsys, "1", "-t", "string", "-m", "128", "-p", "4")["keys"]
    assert (row["type"], row["hash_code"], row["key_group"]) == ("String", 49, 54)
    (row,) = _json(main, capsys, "true", "-t", "boolean", "-m", "128", "-p", "4")["keys"]
    assert row["hash_code"] == 1231


def test_default_max_parallelism_and_ranges(main, capsys):
    out = _json(main, capsys, "--ranges", "-p", "86")
    assert out["max_parallelism"] == 256 and out["max_parallelism_defaulted"]
    assert len(out["ranges"]) == 86 and out["ranges"][0][0] == 0 and out["ranges"][-1][1] == 255
    out = _json(main, capsys, "--ranges", "-m", "10", "-p", "4")
    assert out["ranges"] == [[0, 2], [3, 4], [5, 7], [8, 9]]


def test_table_output(main, capsys):
    assert main(["keygroup", "hello", "-m", "128", "-p", "3", "--ranges"]) == 0
    out = capsys.readouterr().out
    for text in ("hashCode", "murmurHash", "99162322", "1715862179", "[0, 42]", "KeyGroupRange"):
        assert text in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["x", "-m", "10", "-p", "40"], "Maximum parallelism must not be smaller"),
        (["x", "-p", "0"], "Operator parallelism not within bounds: 0"),
        (["x", "-m", "40000", "-p", "3"], "40000"),
        (["x", "-t", "int", "-p", "3"], "not a decimal integer"),
        (["99999999999", "-t", "int", "-p", "3"], "Java int"),
        (["99999999999999999999", "-p", "3"], "Java long"),
        (["maybe", "-t", "boolean", "-p", "3"], "true or false"),
        (["-p", "3"], "KEY"),
    ],
)
def test_bad_parameters_one_line_exit_2(main, capsys, argv, needle):
    assert main(["keygroup", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err
    assert len(err.strip().splitlines()) == 1 and err.startswith("flinkspec: error:")
