"""``model.catalog`` call by call: the kinds as written, an entry's fields, validators and
dictionary, and ``register`` / ``entries`` on a catalog of their own (the shared one untouched)."""

from __future__ import annotations

import json

import attrs

import pytest

from model import catalog
from model.catalog import KINDS, PASS, RANDOM_WALK_KINDS, Entry, Kind, entries, register


def test_pass():
    assert PASS == "pass"


def test_a_kinds_defaults():
    k = Kind("run", "Title")
    assert (k.runner, k.title, k.column, k.random_walks, k.corpus) == ("run", "Title", "name", False, False)
    assert k.random_walks is False and k.corpus is False


def test_the_kinds():
    assert list(KINDS) == ["cluster", "control-plane", "state-backend", "focused", "z3", "spark-standin"]
    assert KINDS == {
        "cluster": Kind("check", "Whole-cluster variants (`flinkspec check`: seeded random walks, swarm testing, "
                        "failures)", "variant", True, True),
        "control-plane": Kind("check", "Control-plane variants (`flinkspec check`: random walks over RPC loss, "
                              "crashes, session expiry and leader changes; docs/control-plane.md)", "variant",
                              True, True),
        "state-backend": Kind("check", "State-backend variants (`flinkspec check`: random walks over two-phase "
                              "snapshots, checkpoint storage, subsumption and restores; docs/state-backends.md)",
                              "variant", True, True),
        "focused": Kind("check", "Focused suites (`flinkspec check`: Hypothesis)", "suite", False, True),
        "z3": Kind("prove", "z3 checks (`flinkspec prove`)", "check", False, False),
        "spark-standin": Kind("spark-replay --engine standin",
                              "Spark pipeline stand-ins (`flinkspec spark-replay --engine standin`)", "stand-in",
                              False, False),
    }
    assert RANDOM_WALK_KINDS == ("cluster", "control-plane", "state-backend")


def _entry(**kw):
    base = dict(name="x", family="cluster/keyed", expected=("pass",), description="d",
                command="flinkspec check --only x")
    return Entry(**(base | kw))


def _accepted(**kw):
    """An entry the catalog must accept: its refusal (the validators' ValueError) is a failed
    statement of what the catalog takes, not a crash."""
    try:
        return _entry(**kw)
    except ValueError as refused:
        pytest.fail(f"a good entry was refused: {refused}")


@pytest.mark.parametrize("family, kind", [("cluster", "cluster"), ("cluster/keyed", "cluster"),
                                          ("cluster/keyed/deep", "cluster"), ("z3/barriers", "z3"),
                                          ("control-plane", "control-plane"), ("spark-standin/x/y", "spark-standin")])
def test_a_family_of_a_known_kind(family, kind):
    e = _accepted(family=family)
    assert e.family == family and e.kind == kind and e.runner == KINDS[kind].runner


@pytest.mark.parametrize("family, text", [
    ("nope/x", "family 'nope/x': kind 'nope' is not one of cluster, control-plane, state-backend, focused, z3, "
               "spark-standin"),
    ("keyed/cluster", "family 'keyed/cluster': kind 'keyed' is not one of cluster, control-plane, state-backend, "
                      "focused, z3, spark-standin"),
    ("", "family '': kind '' is not one of cluster, control-plane, state-backend, focused, z3, spark-standin"),
    ("cluster keyed", "family 'cluster keyed': kind 'cluster keyed' is not one of cluster, control-plane, "
                      "state-backend, focused, z3, spark-standin"),
])
def test_a_family_of_an_unknown_kind_is_refused(family, text):
    with pytest.raises(ValueError) as e:
        _entry(family=family)
    assert str(e.value) == text


@pytest.mark.parametrize("expected", [("pass",), ["pass"], ("exactly_once",), ("a", "b"), ("counterexample",)])
def test_good_expectations(expected):
    e = _accepted(expected=expected)
    assert e.expected == tuple(expected) and type(e.expected) is tuple
    assert e.safe is (tuple(expected) == ("pass",))


@pytest.mark.parametrize("expected, text", [
    ((), "expected must be a non-empty tuple of names, got ()"),
    (("",), "expected must be a non-empty tuple of names, got ('',)"),
    (("a", ""), "expected must be a non-empty tuple of names, got ('a', '')"),
    (("a", 3), "expected must be a non-empty tuple of names, got ('a', 3)"),
    ((3,), "expected must be a non-empty tuple of names, got (3,)"),
    (("pass", "exactly_once"), "expected ('pass', 'exactly_once'): 'pass' cannot be combined with invariant names"),
    (("exactly_once", "pass"), "expected ('exactly_once', 'pass'): 'pass' cannot be combined with invariant names"),
    (("pass", "pass"), "expected ('pass', 'pass'): 'pass' cannot be combined with invariant names"),
])
def test_bad_expectations_are_refused(expected, text):
    with pytest.raises(ValueError) as e:
        _entry(expected=expected)
    assert str(e.value) == text


def test_the_declared_seam_field():
    # read from the declaration: the layers register entries with ``seam=`` at import
    f = attrs.fields(Entry).seam_of
    assert (f.alias, f.default, f.eq) == ("seam", None, False)
    assert [a.name for a in attrs.fields(Entry)] == ["name", "family", "expected", "description", "flink_key",
                                                     "seam_of", "command", "scope"]


def test_an_entrys_defaults_and_seam():
    e = _entry()
    assert (e.flink_key, e.seam_of, e.seam, e.scope) == (None, None, None, None)
    assert _entry(seam="A.b").seam == "A.b"
    assert _entry(seam=lambda: "C.d").seam == "C.d"
    assert _entry(seam=lambda: None).seam is None
    # the seam is not part of an entry's equality
    assert _entry(seam="A.b") == _entry(seam="E.f")


def test_to_dict_and_to_json():
    e = _entry(name="v", family="z3/barriers", expected=["counterexample"], description="a check",
               flink_key="FLINK-1", seam=lambda: "X.y", command="flinkspec prove --only v", scope="n <= 3")
    d = {"name": "v", "family": "z3/barriers", "kind": "z3", "expected": ["counterexample"], "safe": False,
         "flink_key": "FLINK-1", "seam": "X.y", "description": "a check", "runner": "prove",
         "command": "flinkspec prove --only v", "scope": "n <= 3"}
    assert e.to_dict() == d
    assert list(e.to_dict()) == list(d)
    assert type(e.to_dict()["expected"]) is list
    assert e.to_json() == json.dumps(d)
    assert list(json.loads(e.to_json())) == list(d)
    s = _entry()
    assert s.to_dict()["safe"] is True and s.to_dict()["runner"] == "check" and s.to_dict()["expected"] == ["pass"]


def test_register_and_entries_on_a_catalog_of_their_own(monkeypatch):
    assert type(catalog.CATALOG) is dict
    own: dict = {}
    monkeypatch.setattr(catalog, "CATALOG", own)
    assert entries() == []
    a = _entry(name="a")
    assert register(a) is a
    assert own == {"a": a}
    b = _entry(name="b", family="z3", command="flinkspec prove --only b")
    c = _entry(name="c", family="focused/valve", command="flinkspec check --only c")
    register(b)
    register(c)
    assert list(own) == ["a", "b", "c"] and own["b"] is b
    assert entries() == [a, b, c]
    assert entries(kind="cluster") == [a]
    assert entries(kind="z3") == [b]
    assert entries(runner="check") == [a, c]
    assert entries(runner="prove") == [b]
    assert entries(kind="focused", runner="check") == [c]
    assert entries(kind="focused", runner="prove") == []
    assert entries(kind="state-backend") == []
    with pytest.raises(ValueError) as e:
        register(_entry(name="b", family="cluster/keyed"))
    assert str(e.value) == "catalog: 'b' (cluster/keyed) is already registered as z3"
    assert own == {"a": a, "b": b, "c": c} and own["b"] is b
