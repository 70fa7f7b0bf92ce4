"""``model.scope`` call by call: a scope's defaults and checks, its refusal of a deployment mode
with the control plane, and the migration helpers' exact answers."""

from __future__ import annotations

import attrs
import pytest

from model.cluster import RuntimeConfig
from model.errors import FlinkspecError
from model.scope import FIELDS, ModelScope, moved_field_problem, split_scope


def test_the_declared_defaults():
    # read from the declaration, so that a wrong default is seen even where it fails validation
    assert [(f.name, f.default) for f in attrs.fields(ModelScope)] == [("control_plane", False),
                                                                       ("channel_capacity", 4)]
    assert attrs.fields(ModelScope).control_plane.default is False


def test_the_default_scope():
    s = ModelScope()
    assert s.control_plane is False and s.channel_capacity == 4 and type(s.channel_capacity) is int
    assert attrs.astuple(s) == (False, 4)
    assert FIELDS == ("control_plane", "channel_capacity")


@pytest.mark.parametrize("cp", [False, True])
@pytest.mark.parametrize("cap", [1, 2, 3, 100])
def test_a_good_scope_is_kept(cp, cap):
    s = ModelScope(control_plane=cp, channel_capacity=cap)
    assert (s.control_plane, s.channel_capacity) == (cp, cap)


@pytest.mark.parametrize("fields, text", [
    (dict(control_plane=1), "control_plane must be true or false, not 1"),
    (dict(control_plane=None), "control_plane must be true or false, not None"),
    (dict(control_plane="yes"), "control_plane must be true or false, not 'yes'"),
    (dict(channel_capacity=0), "channel_capacity must be an int >= 1, not 0"),
    (dict(channel_capacity=-3), "channel_capacity must be an int >= 1, not -3"),
    (dict(channel_capacity="4"), "channel_capacity must be an int >= 1, not '4'"),
    (dict(channel_capacity=True), "channel_capacity must be an int >= 1, not True"),
    (dict(channel_capacity=2.0), "channel_capacity must be an int >= 1, not 2.0"),
])
def test_a_bad_scope_is_refused_with_its_field(fields, text):
    with pytest.raises(FlinkspecError) as e:
        ModelScope(**fields)
    assert str(e.value) == text


@pytest.mark.parametrize("mode", [None, "session", "application"])
def test_a_data_plane_scope_models_every_deployment_mode(mode):
    assert ModelScope().check(RuntimeConfig(deployment_mode=mode)) is None


def test_the_control_plane_models_no_deployment_mode():
    assert ModelScope(control_plane=True).check(RuntimeConfig()) is None
    for mode in ("session", "application"):
        with pytest.raises(FlinkspecError) as e:
            ModelScope(control_plane=True).check(RuntimeConfig(deployment_mode=mode))
        assert str(e.value) == ("deployment_mode and control_plane cannot be combined (the deployment modes "
                                "model their own ResourceManager and JobMasters)")


def test_split_scope():
    assert split_scope({}) == ({}, {})
    assert split_scope({"unaligned": True, "max_concurrent_checkpoints": 2}) == (
        {"unaligned": True, "max_concurrent_checkpoints": 2}, {})
    assert split_scope({"channel_capacity": 3, "unaligned": True, "control_plane": True}) == (
        {"unaligned": True}, {"channel_capacity": 3, "control_plane": True})
    cfg = {"control_plane": False}
    assert split_scope(cfg) == ({}, {"control_plane": False}) and cfg == {"control_plane": False}


TAIL = ("the model's scope now (scenario.scope), not Flink's configuration; "
        "`python tools/migrate_knobs.py FILE...` rewrites such files")


def test_moved_field_problem():
    assert moved_field_problem({}) is None
    assert moved_field_problem({"unaligned": True}) is None
    assert moved_field_problem(["channel_capacity"]) is None
    assert moved_field_problem(None) is None
    assert moved_field_problem({"channel_capacity": 3, "unaligned": True}) == \
        "channel_capacity in the configuration: it is " + TAIL
    assert moved_field_problem({"unaligned": True, "control_plane": True, "channel_capacity": 3}) == \
        "control_plane, channel_capacity in the configuration: they are " + TAIL
