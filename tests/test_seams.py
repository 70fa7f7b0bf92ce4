"""model.seams: a seam overrides one definition of the model, only while a run that switches
it on takes a step, and the safe definition is back afterwards."""

import pytest

import model.failover as failover_module
from model import seams
from model.checkpointcoordinator import CheckpointProperties, CompletedCheckpointStore
from model.cluster import Cluster, RuntimeConfig
from model.errors import FlinkspecError
from model.sharedstateregistry import SharedStateRegistry
from model.variants import generate, variant
from scenario_util import assert_old_file_refused_then_migrated


@pytest.fixture
def registered():
    """Seams registered by a test, forgotten afterwards."""
    names: list = []
    yield names
    seams.unregister(names)


def test_a_method_is_replaced_only_inside_the_block(registered):
    @seams.override("test-never-discard", SharedStateRegistry, "_may_discard", "shared files are never discarded")
    def _never(self, e):
        return False
    registered.append("test-never-discard")
    reg = SharedStateRegistry()
    reg.register_all(["a"], 1)
    with seams.active(("test-never-discard",)):
        assert reg.unregister_unused_state(2) == []
    reg.register_all(["b"], 3)
    assert reg.unregister_unused_state(4) == ["b"]  # the safe definition again


def test_a_module_function_is_replaced_where_other_modules_imported_it(registered):
    import model.cluster as cluster_module

    safe = failover_module.failover_strategy
    assert cluster_module.failover_strategy is safe  # imported by name into the cluster module

    @seams.override("test-restart-all", failover_module, "failover_strategy", "every failover restarts the job")
    def _all(eg, name, **kwargs):
        return failover_module.RestartAllFailoverStrategy(eg)
    registered.append("test-restart-all")
    with seams.active(("test-restart-all",)):
        assert failover_module.failover_strategy is _all and cluster_module.failover_strategy is _all
    assert failover_module.failover_strategy is safe and cluster_module.failover_strategy is safe


def test_static_methods_and_properties_keep_their_kind(registered):
    @seams.override("test-forced-checkpoints", CheckpointProperties, "for_checkpoint", "every checkpoint is forced")
    def _forced(forced=False):
        return seams.original("test-forced-checkpoints")(True)
    registered.append("test-forced-checkpoints")
    with seams.active(("test-forced-checkpoints",)):
        assert CheckpointProperties.for_checkpoint().forced
    assert not CheckpointProperties.for_checkpoint().forced


def test_nested_blocks_put_back_what_acted_outside(registered):
    for name in ("test-a", "test-b"):
        seams.override(name, CompletedCheckpointStore, "__len__" if name == "test-a" else "get_latest_checkpoint_id",
                       "a test seam")(lambda self: 42)
        registered.append(name)
    store = CompletedCheckpointStore()
    with seams.active(("test-a",)):
        assert len(store) == 42
        with seams.active(("test-b",)):
            assert len(store) == 0 and store.get_latest_checkpoint_id() == 42
        assert len(store) == 42 and store.get_latest_checkpoint_id() == 0
    assert len(store) == 0


def test_a_run_steps_with_its_seams_and_is_judged_with_the_safe_model(registered):
    calls = []

    @seams.override("test-count-restarts", failover_module.RestartPipelinedRegionFailoverStrategy, "tasks_to_restart",
                    "counts the calls, then decides as Flink does")
    def _counting(self, failed, unavailable_channels=frozenset()):
        calls.append(failed)
        return seams.original("test-count-restarts")(self, failed, unavailable_channels)
    registered.append("test-count-restarts")
    s = generate(variant("aligned-2pc"), 1)
    import attrs
    from model import actions as A

    c = Cluster.from_scenario(attrs.evolve(s, seams=("test-count-restarts",)))
    fail = next(a for a in c.enabled_actions() if isinstance(a, A.FailTask))
    c.step(fail)
    assert calls, "the seam acted in the step"
    strategy = c.strategy
    strategy.tasks_to_restart(frozenset({0}))  # outside a step: the safe definition
    assert len(calls) == 1


def test_bad_seams_are_refused_with_one_line(registered):
    with pytest.raises(seams.SeamError, match="defines no method 'subsum'"):
        seams.override("test-x", CompletedCheckpointStore, "subsum", "typo")
    with pytest.raises(seams.SeamError, match="defined in object"):
        seams.override("test-x", CompletedCheckpointStore, "__hash__", "inherited")
    with pytest.raises(seams.SeamError, match="not a class of the model"):
        seams.override("test-x", dict, "get", "not the model's")
    with pytest.raises(seams.SeamError, match="description"):
        seams.override("test-x", CompletedCheckpointStore, "__len__", " ")
    with pytest.raises(seams.SeamError, match="already registered"):
        seams.override("FLINK-17568", CompletedCheckpointStore, "__len__", "a name taken")(lambda self: 0)


def test_two_seams_of_one_definition_cannot_be_switched_on_together():
    with pytest.raises(FlinkspecError, match="both override JobMaster.reconcile"):
        seams.check(("FLINK-17075", "FLINK-18533"))
    with pytest.raises(FlinkspecError, match="unknown seam"):
        seams.check(("no-such-seam",))
    sc = generate(variant("cp-region-failover"), 0)
    for bad in (("FLINK-17075", "FLINK-18533"), ("no-such-seam",)):  # a run refuses them too
        with pytest.raises(FlinkspecError, match="both override|unknown seam"):
            Cluster.from_scenario(sc.with_settings(seams=bad))
    with pytest.raises(TypeError):
        RuntimeConfig(bugs=("FLINK-17075",))  # seams are the scenario's, not Flink's configuration


def test_a_file_naming_a_retired_knob_is_refused_with_its_seam_and_the_tool_rewrites_it(tmp_path):
    from pathlib import Path

    def before_the_seam(header):
        assert header["scenario"].pop("seams") == ["skip-consumer-regions"]
        header["scenario"]["config"]["bugs"] = []
        header["scenario"]["config"]["skip_consumer_regions"] = True  # as written before the knob was retired

    assert_old_file_refused_then_migrated(
        tmp_path, Path(__file__).resolve().parent.parent / "counterexamples" / "restart_set_sufficient" /
        "adcb4827e33e.ndjson", before_the_seam,
        "skip_consumer_regions=True was an unsafe switch and is the seam 'skip-consumer-regions' now: switch it on")


def test_a_file_whose_configuration_holds_its_seams_is_refused_and_the_tool_moves_them(tmp_path):
    """Before the seams moved to the scenario, a file held them in its configuration's ``bugs``."""
    from pathlib import Path

    def seams_in_the_configuration(header):
        header["scenario"]["config"]["bugs"] = header["scenario"].pop("seams")

    assert_old_file_refused_then_migrated(
        tmp_path, Path(__file__).resolve().parent.parent / "counterexamples" / "restart_set_sufficient" /
        "adcb4827e33e.ndjson", seams_in_the_configuration,
        r"bugs=\['skip-consumer-regions'\] in the configuration: the seams a run switches on are the scenario's")


def test_the_explorers_reduction_sees_the_seams_and_what_the_invariants_judge():
    """The explorer's reduction keys (``Cluster.outcome``, ``Cluster.footprint``) are computed
    with the run's seams, and a failover's key holds the failed tasks' regions (which
    ``restart_set_exact`` judges): with and without the reduction, the shortest counterexample
    of region-failover-backtracks-available-partitions is its first failure."""
    from properties.explore import Limits, explore
    from model.variants import small_scenario

    sc = small_scenario(variant("region-failover-backtracks-available-partitions"))
    for reduce in (True, False):
        ex = explore(sc, Limits(max_seconds=60), reduce=reduce)
        assert (ex.verdict, ex.depth, ex.violation.invariant) == ("violation", 1, "restart_set_exact"), reduce
