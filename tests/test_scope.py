"""The model's scope (``model.scope.ModelScope``): which mechanisms a run models and how
coarsely -- neither Flink's configuration nor the run's environment."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from model.cluster import Cluster, RuntimeConfig
from model.environment import Environment
from model.errors import FlinkspecError
from model.scope import FIELDS, ModelScope, moved_field_problem, split_scope
from model.variants import VARIANTS, generate, variant
from scenario_util import assert_old_file_refused_then_migrated

ROOT = Path(__file__).resolve().parent.parent


def test_runtime_config_holds_none_of_the_scope_nor_the_environment():
    config = {f.name for f in attrs.fields(RuntimeConfig)}
    assert not config & set(FIELDS)
    assert not config & {f.name for f in attrs.fields(Environment)}
    assert "bugs" not in config and "seams" not in config


@pytest.mark.parametrize("fields, words", [
    (dict(channel_capacity=0), "channel_capacity must be an int >= 1, not 0"),
    (dict(channel_capacity="4"), "channel_capacity must be an int >= 1"),
    (dict(control_plane=1), "control_plane must be true or false, not 1"),
])
def test_a_bad_scope_is_refused_in_one_line(fields, words):
    with pytest.raises(FlinkspecError) as e:
        ModelScope(**fields)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_with_settings_sends_each_field_where_it_belongs():
    sc = generate(variant("aligned-2pc"), 0).with_settings(
        channel_capacity=2, control_plane=True, max_failures=3, max_concurrent_checkpoints=2, seams=("FLINK-17075",))
    assert sc.scope == ModelScope(control_plane=True, channel_capacity=2)
    assert sc.environment.max_failures == 3 and sc.config.max_concurrent_checkpoints == 2
    assert sc.seams == ("FLINK-17075",)
    c = Cluster.from_scenario(sc)
    assert c.cp is not None and c.scope.channel_capacity == 2


def test_the_control_plane_variants_are_those_whose_scope_models_it():
    cp = {n for n, v in VARIANTS.items() if v.scope.control_plane}
    assert cp and all(n.startswith("cp-") or VARIANTS[n].kind == "control-plane" for n in cp)
    assert {n for n, v in VARIANTS.items() if v.kind == "control-plane"} == cp


def test_a_configuration_naming_a_scope_field_is_refused_with_where_it_went():
    assert moved_field_problem({"unaligned": True}) is None
    why = moved_field_problem({"channel_capacity": 3, "control_plane": True, "unaligned": True})
    assert "channel_capacity, control_plane in the configuration" in why and "scenario.scope" in why
    assert "tools/migrate_knobs.py" in why
    assert split_scope({"channel_capacity": 3, "unaligned": True}) == ({"unaligned": True}, {"channel_capacity": 3})


def test_a_file_written_before_the_scope_is_refused_and_the_tool_moves_it(tmp_path):
    """A counterexample written when the scope's fields were in the configuration."""
    def scope_in_the_configuration(header):
        header["scenario"]["config"].update(header["scenario"].pop("scope"))

    assert_old_file_refused_then_migrated(
        tmp_path, ROOT / "counterexamples" / "no_split_brain" / sorted(
            p.name for p in (ROOT / "counterexamples" / "no_split_brain").glob("*.ndjson"))[0],
        scope_in_the_configuration, r"channel_capacity, control_plane in the configuration")
