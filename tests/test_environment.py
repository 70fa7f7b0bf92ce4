"""The run's Environment (model/environment.py): the faults and operator actions a run may see,
apart from Flink's configuration (RuntimeConfig).

Unit tests of the value and its rules, the counterexample files written before its fields left
RuntimeConfig (refused with the tool named; the tool moves them), and that the environment
decides only which environment actions are offered."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from model import actions as A
from model.cluster import Cluster, RuntimeConfig
from model.environment import FIELDS, Environment, moved_field_problem, split_config
from model.errors import FlinkspecError
from model.variants import VARIANTS, small_scenario, variant
from scenario_util import assert_old_file_refused_then_migrated

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("fields, rule", [
    ({"max_failures": -1}, "max_failures must be an int >= 0"),
    ({"max_failures": 1.5}, "max_failures must be an int >= 0"),
    ({"max_checkpoints": -1}, "max_checkpoints must be an int >= 0 or None"),
    ({"max_idle_periods": -2}, "max_idle_periods must be an int >= 0 or None"),
    ({"max_checkpoint_rescales": -1}, "max_checkpoint_rescales must be an int >= 0"),
    ({"rpc_capacity": 0}, "rpc_capacity must be an int >= 1 or None"),
    ({"dead_letters": "never"}, "dead_letters must be one of"),
    ({"trigger_delivery": "reordered"}, "trigger_delivery must be one of"),
    ({"control_plane_faults": ("RpcLose", "Meteor")}, "control_plane_faults must be a tuple of"),
    ({"control_plane_faults": ["RpcLose"]}, "control_plane_faults must be a tuple of"),
    ({"rescale_options": (("agg", (0,)),)}, "rescale_options must be"),
    ({"rescale_options": (("agg", 2),)}, "rescale_options must be"),
])
def test_a_broken_rule_names_the_field(fields, rule):
    with pytest.raises(FlinkspecError, match=rule):
        Environment(**fields)


def test_the_fields_left_runtime_config_and_split_config_sorts_a_mixed_dict():
    cfg_fields = {f.name for f in attrs.fields(RuntimeConfig)}
    assert not cfg_fields & set(FIELDS)
    cfg, env = split_config({"unaligned": True, "max_failures": 2, "rescale_options": ()})
    assert cfg == {"unaligned": True} and env == {"max_failures": 2, "rescale_options": ()}
    assert moved_field_problem({"unaligned": True}) is None
    why = moved_field_problem({"max_failures": 1, "savepoints": True, "unaligned": True})
    assert "max_failures, savepoints are not Flink configuration" in why and "tools/migrate_knobs.py" in why


def test_the_environment_only_decides_which_environment_actions_are_offered():
    """One scenario under two failure budgets: the same data-plane actions are enabled, and the
    failure actions only where the budget allows them; the two are different states."""
    sc = small_scenario(variant("aligned-2pc"))
    none = Cluster.from_scenario(sc.with_settings(max_failures=0))
    one = Cluster.from_scenario(sc.with_settings(max_failures=1))
    fault_kinds = (A.FailTask, A.LoseTaskManager, A.FailJobManager)
    assert not [a for a in none.enabled_actions() if isinstance(a, fault_kinds)]
    assert [a for a in one.enabled_actions() if isinstance(a, fault_kinds)]
    assert [a for a in none.enabled_actions()] == [a for a in one.enabled_actions() if not isinstance(a, fault_kinds)]
    assert "failure budget" in none.why_not_enabled(A.FailTask(0))
    assert none.fingerprint() != one.fingerprint()  # a budget changes what may happen next


def test_every_variant_keeps_its_budgets_in_the_environment():
    """No variant's configuration holds a field of the environment (there is none to hold), and
    every variant that injects failures says so in its environment."""
    for name, v in VARIANTS.items():
        assert isinstance(v.environment, Environment), name
        sc = small_scenario(v)
        assert sc.environment.max_failures <= v.environment.max_failures, name
        assert sc.environment.max_checkpoints == v.small.checkpoints, name


def test_a_file_written_before_the_move_is_refused_and_the_tool_moves_the_fields(tmp_path):
    def before_the_move(header):
        moved = header["scenario"].pop("environment")
        assert moved["max_failures"] >= 1
        header["scenario"]["config"].update(moved)

    assert_old_file_refused_then_migrated(
        tmp_path, ROOT / "counterexamples" / "restart_set_sufficient" / "adcb4827e33e.ndjson", before_the_move,
        "are not Flink configuration but the run's environment")


def test_a_design_names_each_field_where_it_belongs(tmp_path):
    from flinkspec.design import DesignError, load_design

    design = tmp_path / "d.py"
    design.write_text("from flinkspec.design import variant\n"
                      "variant('env-in-config', 'x', base='aligned-2pc', config={'max_failures': 1})\n")
    with pytest.raises(DesignError, match="it is the run's environment: give it in environment="):
        load_design(design)
    design.write_text("from flinkspec.design import variant\n"
                      "variant('cfg-in-env', 'x', base='aligned-2pc', environment={'unaligned': True})\n")
    with pytest.raises(DesignError, match="environment key 'unaligned' is not an Environment field"):
        load_design(design)
