"""``model.environment`` call by call: the Environment's defaults, every field's rule with its
boundary values accepted and its exact refusal, and the migration helpers' exact answers."""

from __future__ import annotations

import attrs
import pytest

from model.environment import (DEAD_LETTERS, FIELDS, RPC_ORDERS, TRIGGER_DELIVERY, Environment, moved_field_problem,
                               moved_fields, split_config, split_fields)
from model.errors import FlinkspecError

CP_FAULTS = ("RpcLose", "RpcDuplicate", "CrashJobManager", "ConnectionSuspended", "ExpireSession", "CrashTaskExecutor")


def test_the_choices():
    assert DEAD_LETTERS == ("on_delivery", "at_once")
    assert TRIGGER_DELIVERY == ("at_once", "any_order")
    assert RPC_ORDERS == ("any", "connection")


def test_the_declared_defaults():
    # read from the declaration, so that a wrong default is seen even where it fails validation
    assert {f.name: f.default for f in attrs.fields(Environment)} == {
        "max_failures": 0, "control_plane_faults": None, "max_checkpoints": None, "savepoints": False,
        "trigger_savepoints": False, "drain_savepoints": False, "rescale_from_checkpoints": False, "max_checkpoint_rescales": 1,
        "rescale_options": (), "max_idle_periods": None, "rpc_order": "any", "rpc_capacity": None,
        "dead_letters": "on_delivery", "trigger_delivery": "at_once", "job_submissions": 0}
    assert all(type(f.default) is type(v) for f, v in zip(attrs.fields(Environment), (
        0, None, None, False, False, False, False, 1, (), None, "any", None, "on_delivery", "at_once", 0)))


def test_the_default_environment():
    e = Environment()
    assert attrs.asdict(e) == {
        "max_failures": 0, "control_plane_faults": None, "max_checkpoints": None, "savepoints": False,
        "trigger_savepoints": False, "drain_savepoints": False, "rescale_from_checkpoints": False, "max_checkpoint_rescales": 1,
        "rescale_options": (), "max_idle_periods": None, "rpc_order": "any", "rpc_capacity": None,
        "dead_letters": "on_delivery", "trigger_delivery": "at_once", "job_submissions": 0}
    assert e.savepoints is False and e.trigger_savepoints is False and e.rescale_from_checkpoints is False
    assert e.drain_savepoints is False
    assert FIELDS == ("max_failures", "control_plane_faults", "max_checkpoints", "savepoints", "trigger_savepoints",
                      "drain_savepoints", "rescale_from_checkpoints", "max_checkpoint_rescales", "rescale_options", "max_idle_periods",
                      "rpc_order", "rpc_capacity", "dead_letters", "trigger_delivery", "job_submissions")


@pytest.mark.parametrize("fields", [
    dict(max_failures=0), dict(max_failures=3),
    dict(max_checkpoints=0), dict(max_checkpoints=2), dict(max_checkpoints=None),
    dict(max_idle_periods=0), dict(max_idle_periods=1), dict(max_idle_periods=None),
    dict(max_checkpoint_rescales=0), dict(max_checkpoint_rescales=2),
    dict(rpc_capacity=1), dict(rpc_capacity=5), dict(rpc_capacity=None),
    dict(job_submissions=0), dict(job_submissions=2),
    dict(rpc_order="any"), dict(rpc_order="connection"),
    dict(dead_letters="on_delivery"), dict(dead_letters="at_once"),
    dict(trigger_delivery="at_once"), dict(trigger_delivery="any_order"),
    dict(control_plane_faults=()), dict(control_plane_faults=("RpcLose",)), dict(control_plane_faults=CP_FAULTS),
    dict(control_plane_faults=("ExpireSession", "RpcLose")),
    dict(rescale_options=()), dict(rescale_options=(("agg", (1,)),)),
    dict(rescale_options=(("agg", (1, 3)), ("map", (2,)))), dict(rescale_options=(("agg", ()),)),
])
def test_a_good_field_is_kept(fields):
    e = Environment(**fields)
    for k, v in fields.items():
        assert getattr(e, k) == v


@pytest.mark.parametrize("fields, text", [
    (dict(max_failures=-1), "max_failures must be an int >= 0, not -1"),
    (dict(max_failures=None), "max_failures must be an int >= 0, not None"),
    (dict(max_failures=True), "max_failures must be an int >= 0, not True"),
    (dict(max_failures=1.0), "max_failures must be an int >= 0, not 1.0"),
    (dict(max_checkpoints=-1), "max_checkpoints must be an int >= 0 or None, not -1"),
    (dict(max_checkpoints="2"), "max_checkpoints must be an int >= 0 or None, not '2'"),
    (dict(max_checkpoints=False), "max_checkpoints must be an int >= 0 or None, not False"),
    (dict(max_idle_periods=-1), "max_idle_periods must be an int >= 0 or None, not -1"),
    (dict(max_idle_periods=2.0), "max_idle_periods must be an int >= 0 or None, not 2.0"),
    (dict(max_checkpoint_rescales=-1), "max_checkpoint_rescales must be an int >= 0, not -1"),
    (dict(max_checkpoint_rescales=None), "max_checkpoint_rescales must be an int >= 0, not None"),
    (dict(rpc_capacity=0), "rpc_capacity must be an int >= 1 or None, not 0"),
    (dict(rpc_capacity=-2), "rpc_capacity must be an int >= 1 or None, not -2"),
    (dict(rpc_capacity="3"), "rpc_capacity must be an int >= 1 or None, not '3'"),
    (dict(job_submissions=-1), "job_submissions must be an int >= 0, not -1"),
    (dict(job_submissions="1"), "job_submissions must be an int >= 0, not '1'"),
    (dict(rpc_order="fifo"), "rpc_order must be one of ('any', 'connection'), not 'fifo'"),
    (dict(dead_letters="never"), "dead_letters must be one of ('on_delivery', 'at_once'), not 'never'"),
    (dict(trigger_delivery="reordered"), "trigger_delivery must be one of ('at_once', 'any_order'), not 'reordered'"),
    (dict(control_plane_faults=("RpcLose", "Meteor")), f"control_plane_faults must be a tuple of {CP_FAULTS}, "
                                                       "not ('RpcLose', 'Meteor')"),
    (dict(control_plane_faults=["RpcLose"]), f"control_plane_faults must be a tuple of {CP_FAULTS}, not ['RpcLose']"),
    (dict(control_plane_faults="RpcLose"), f"control_plane_faults must be a tuple of {CP_FAULTS}, not 'RpcLose'"),
    (dict(rescale_options=[("agg", (1,))]), "rescale_options must be ((operator name, (parallelism >= 1, ...)), ...), "
                                            "not [('agg', (1,))]"),
    (dict(rescale_options=(("agg", (0,)),)), "rescale_options must be ((operator name, (parallelism >= 1, ...)), "
                                             "...), not (('agg', (0,)),)"),
    (dict(rescale_options=(("agg", (2, -1)),)), "rescale_options must be ((operator name, (parallelism >= 1, "
                                                "...)), ...), not (('agg', (2, -1)),)"),
    (dict(rescale_options=(("agg", 2),)), "rescale_options must be ((operator name, (parallelism >= 1, ...)), ...), "
                                          "not (('agg', 2),)"),
    (dict(rescale_options=(("agg", [2]),)), "rescale_options must be ((operator name, (parallelism >= 1, ...)), "
                                            "...), not (('agg', [2]),)"),
    (dict(rescale_options=((1, (2,)),)), "rescale_options must be ((operator name, (parallelism >= 1, ...)), ...), "
                                         "not ((1, (2,)),)"),
    (dict(rescale_options=(("agg", (2,), 3),)), "rescale_options must be ((operator name, (parallelism >= 1, "
                                                "...)), ...), not (('agg', (2,), 3),)"),
    (dict(rescale_options=(("agg",),)), "rescale_options must be ((operator name, (parallelism >= 1, ...)), ...), "
                                        "not (('agg',),)"),
    (dict(rescale_options=(["agg", (2,)],)), "rescale_options must be ((operator name, (parallelism >= 1, ...)), "
                                             "...), not (['agg', (2,)],)"),
    (dict(rescale_options=(("agg", (True,)),)), "rescale_options must be ((operator name, (parallelism >= 1, "
                                                "...)), ...), not (('agg', (True,)),)"),
    (dict(rescale_options=(("a", (1,)), ("b", (0,)))), "rescale_options must be ((operator name, (parallelism >= 1, "
                                                       "...)), ...), not (('a', (1,)), ('b', (0,)))"),
])
def test_a_bad_field_is_refused_with_its_rule(fields, text):
    with pytest.raises(FlinkspecError) as e:
        Environment(**fields)
    assert str(e.value) == text


def test_split_fields_and_moved_fields():
    cfg = {"a": 1, "b": 2, "c": 3}
    assert split_fields(cfg, ("b", "c", "z")) == ({"a": 1}, {"b": 2, "c": 3})
    assert split_fields(cfg, ()) == ({"a": 1, "b": 2, "c": 3}, {})
    assert split_fields({}, ("a",)) == ({}, {})
    assert cfg == {"a": 1, "b": 2, "c": 3}
    assert moved_fields(cfg, ("c", "a")) == ["a", "c"]
    assert moved_fields(cfg, ("z",)) == []
    assert moved_fields(["a", "b"], ("a",)) == []
    assert moved_fields(None, ("a",)) == []


def test_split_config():
    assert split_config({"unaligned": True, "max_failures": 2, "rpc_order": "connection"}) == (
        {"unaligned": True}, {"max_failures": 2, "rpc_order": "connection"})
    assert split_config({"unaligned": True}) == ({"unaligned": True}, {})
    assert split_config({"max_checkpoints": None}) == ({}, {"max_checkpoints": None})


TAIL = ("not Flink configuration but the run's environment (the scenario's \"environment\"); "
        "`python tools/migrate_knobs.py FILE...` rewrites such files")


def test_moved_field_problem():
    assert moved_field_problem({}) is None
    assert moved_field_problem({"unaligned": True}) is None
    assert moved_field_problem("max_failures") is None
    assert moved_field_problem({"max_failures": 1, "unaligned": True}) == "max_failures is " + TAIL
    assert moved_field_problem({"savepoints": True, "unaligned": True, "max_failures": 1}) == \
        "savepoints, max_failures are " + TAIL
