"""The peer suite: Flink's own unit tests (tests/peer/*.json) run against the model.

Every ported case must agree with what Flink asserts (with a prefix of Flink's random draws in
the default run, all of them in the slow run); every runner must be able to disagree (each kind
is run once on a case whose expectation was changed, or against a broken model function);
malformed data gives a one-line error; docs/conformance.md is generated from the data.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from model import seams, stateassignment
from properties import peer
from properties.peer import PEER_DIR, JavaRandom, PeerSpecError, case_verdict, load_all, load_peer_file, run_case

ROOT = Path(__file__).resolve().parents[1]
DATAS = load_all()
PORTED = [(d, c) for d in DATAS for c in d["cases"] if c["status"] == "ported"]


def _id(dc) -> str:
    return f"{dc[0]['flink_class']}#{dc[1]['name']}"


@pytest.mark.parametrize("data_case", PORTED, ids=[_id(dc) for dc in PORTED])
def test_ported_case_agrees_with_flink(data_case):
    data, case = data_case
    verdict, got = case_verdict(data, case, quick=True)
    assert verdict in ("agrees", "documented difference"), got


@pytest.mark.slow
@pytest.mark.parametrize("data_case", [dc for dc in PORTED if "quick" in dc[1]],
                         ids=[_id(dc) for dc in PORTED if "quick" in dc[1]])
def test_ported_case_agrees_with_flinks_full_random_draws(data_case):
    data, case = data_case
    verdict, got = case_verdict(data, case, quick=False)
    assert verdict in ("agrees", "documented difference"), got


def test_every_class_lists_cases_and_every_skip_has_a_reason():
    assert len(DATAS) >= 10
    for d in DATAS:
        assert d["cases"], d["flink_class"]
        for c in d["cases"]:
            assert c["status"] != "skipped" or len(c["reason"]) > 20, (d["flink_class"], c["name"])


# -- every runner can disagree ----------------------------------------------------------------


def _case(cls: str, name: str) -> tuple[dict, dict]:
    for d in DATAS:
        if d["flink_class"] == cls:
            for c in d["cases"]:
                if c["name"] == name:
                    return d, copy.deepcopy(c)
    raise AssertionError(f"no case {cls}#{name}")


def _wrong_window_assigner():
    d, c = _case("TumblingEventTimeWindowsTest", "testWindowAssignment")
    c["assign"][0][1][0][1] += 1
    return d, c


def _wrong_bounded():
    d, c = _case("BoundedOutOfOrdernessWatermarksTest", "testWatermarkAfterEvent")
    c["steps"][-1]["emit"] += 1
    return d, c


def _wrong_key_group_range():
    d, c = _case("KeyGroupRangeTest", "testKeyGroupIntersection")
    c["intersections"][0][2] = [3, 8]
    return d, c


def _wrong_valve():
    d, c = _case("StatusWatermarkValveTest", "testMultipleInputIncreasingWatermarks")
    c["steps"][9]["pop"] = 11
    return d, c


def _wrong_region_failover():
    d, c = _case("RestartPipelinedRegionFailoverStrategyTest", "testRegionFailoverForRegionInternalErrors")
    c["failures"][0]["restarts"] = ["v1", "v4"]
    return d, c


def _wrong_pipelined_regions():
    d, c = _case("SchedulingPipelinedRegionComputeUtilTest", "testTwoComponentsViaBlockingExchange")
    c["same"] = [["a1", "c1"]]
    return d, c


def _wrong_coordinator():
    d, c = _case("CheckpointCoordinatorTest", "testSavepointsAreNotSubsumed")
    c["steps"][-1]["check"]["notify_calls"] = [[3, -1], [6, -1]]
    return d, c


def _wrong_checkpoint_store():
    d, c = _case("DefaultCompletedCheckpointStoreTest", "testAtLeastOneCheckpointRetained")
    c["retained"] = ["sp3"]
    return d, c


def _wrong_pending_checkpoint():
    d, c = _case("PendingCheckpointTest", "testSyncSavepointCannotBeSubsumed")
    c["steps"][1]["can_be_subsumed"] = True
    return d, c


def _wrong_operator_state_rescale():
    d, c = _case("StateAssignmentOperationTest", "testRepartitionUnionState")
    c["rescale"]["3"]["state_info_counts"]["t-4"] = 2
    return d, c


def _wrong_channel_state():
    d, c = _case("StateAssignmentOperationTest", "testChannelStateAssignmentUpscaling")
    c["descriptors"][3]["expect"][0]["ambiguous"] = [1]
    return d, c


def _wrong_window_operator():
    d, c = _case("WindowOperatorTest", "testSideOutputDueToLatenessSliding")
    c["steps"][-1]["expect"]["records"][2][1] = 4
    return d, c


def _wrong_chaining():
    d, c = _case("StreamingJobGraphGeneratorTest", "testChainingOfOperatorsWithDifferentMaxParallelism[false]")
    c["operators_per_vertex"] = [3, 1]
    return d, c


def _wrong_shared_state_registry():
    d, c = _case("SharedStateRegistryTest", "testRegistryNormal")
    c["steps"][-1]["discarded"]["first"] = False
    return d, c


def _wrong_coordinator_shared_state():
    d, c = _case("CheckpointCoordinatorTest", "testSharedStateRegistrationOnRestore")
    c["runs"]["NO_CLAIM"][-3]["check"]["discarded"]["shared-0-kg0-1"] = True
    return d, c


def _wrong_slot_manager():
    d, c = _case("DefaultSlotStatusSyncerTest", "testSlotStatusProcessing")
    c["steps"][-1]["check"]["slot"]["allocationId3"] = None
    return d, c


def _wrong_deployment_reconciliation():
    d, c = _case("DefaultExecutionDeploymentReconcilerTest", "testPendingDeployments")
    c["missing"] = {"contains": ["missingId"]}
    return d, c


def _wrong_task_slot_table():
    d, c = _case("TaskSlotTableImplTest", "testMarkSlotActiveDeactivatesSlotTimeout")
    c["steps"][-1]["check"]["active"]["jobId"] = []
    return d, c


def _broken_key_group_partitions(monkeypatch):
    monkeypatch.setattr(peer, "compute_operator_index_for_key_group", lambda m, p, kg: min(p - 1, (kg + 1) * p // m))
    d, c = _case("CheckpointCoordinatorTest", "testCreateKeyGroupPartitions")
    return d, c


def _broken_repartition_property(monkeypatch):
    real = peer.repartition_operator_state

    def drop_one(old, new_p, mode="split_distribute", start=0):
        parts, nxt = real(old, new_p, mode, start)
        if mode == "union" and parts and parts[0]:
            parts[0] = parts[0][1:]
        return parts, nxt
    monkeypatch.setattr(peer, "repartition_operator_state", drop_one)
    return _case("CheckpointCoordinatorTest", "testPartitionableStateRepartitioning")


def _broken_keyed_state_assignment(monkeypatch):
    monkeypatch.setattr(stateassignment, "assign_keyed_state", lambda states, m, p, a="range": [{0: None}] * p)
    return _case("StateAssignmentOperationTest", "assigningStateHandlesCanNotBeNull")


#: kind -> how to make its runner disagree (a wrong expectation, or a broken model function)
WRONG = {
    "window_assigner": lambda mp: _wrong_window_assigner(),
    "bounded_out_of_orderness": lambda mp: _wrong_bounded(),
    "key_group_range": lambda mp: _wrong_key_group_range(),
    "key_group_partitions": _broken_key_group_partitions,
    "operator_state_repartition_property": _broken_repartition_property,
    "valve": lambda mp: _wrong_valve(),
    "region_failover": lambda mp: _wrong_region_failover(),
    "pipelined_regions": lambda mp: _wrong_pipelined_regions(),
    "coordinator": lambda mp: _wrong_coordinator(),
    "checkpoint_store": lambda mp: _wrong_checkpoint_store(),
    "pending_checkpoint": lambda mp: _wrong_pending_checkpoint(),
    "operator_state_rescale": lambda mp: _wrong_operator_state_rescale(),
    "channel_state_assignment": lambda mp: _wrong_channel_state(),
    "keyed_state_assignment": _broken_keyed_state_assignment,
    "window_operator": lambda mp: _wrong_window_operator(),
    "chaining": lambda mp: _wrong_chaining(),
    "shared_state_registry": lambda mp: _wrong_shared_state_registry(),
    "coordinator_shared_state": lambda mp: _wrong_coordinator_shared_state(),
    "slot_manager": lambda mp: _wrong_slot_manager(),
    "deployment_reconciliation": lambda mp: _wrong_deployment_reconciliation(),
    "task_slot_table": lambda mp: _wrong_task_slot_table(),
}


def test_every_runner_kind_has_a_disagreement_test():
    assert set(WRONG) == set(peer.RUNNERS)


@pytest.mark.parametrize("kind", sorted(WRONG))
def test_runner_reports_a_disagreement(kind, monkeypatch):
    data, case = WRONG[kind](monkeypatch)
    got = run_case(data, case, quick=True)
    assert got, f"{kind}: a wrong expectation (or a broken model) went unnoticed"
    assert all("Flink" in m or "not in the range" in m or "differ" in m or "Flink expects" in m for m in got), got


def test_slot_manager_cases_find_the_unreconciled_slot_table():
    # the known-unsafe SlotManager that ignores the SlotReports of heartbeats disagrees with
    # DefaultSlotStatusSyncerTest wherever Flink asserts what a report changes
    d = next(d for d in DATAS if d["flink_class"] == "DefaultSlotStatusSyncerTest")
    with seams.active(["no-slot-report-reconciliation"]):
        got = {c["name"]: run_case(d, c) for c in d["cases"] if c["status"] == "ported"}
    assert got["testSlotStatusProcessing"] and got["testFreeSlot"] and got["testAllocationUpdatesIgnoredIfSlotFreed"]
    assert not got["testSlotAllocationSucceeds"]


@pytest.mark.parametrize("bug, caught_by", [
    ("FLINK-18533", {"testPendingDeployments"}),
    ("FLINK-17075", {"testMissingDeployments", "testUnknownDeployments", "testMissingAndUnknownDeployments",
                     "testPendingDeployments"}),
])
def test_deployment_reconciler_cases_find_the_known_reconciliation_bugs(bug, caught_by):
    # the JobMaster that fails a pending deployment at once (FLINK-18533) and the one that ignores
    # the ExecutionDeploymentReport (FLINK-17075) each disagree with Flink's reconciler tests
    d = next(d for d in DATAS if d["flink_class"] == "DefaultExecutionDeploymentReconcilerTest")
    with seams.active([bug]):
        got = {c["name"] for c in d["cases"] if run_case(d, c)}
    assert got == caught_by


def test_documented_difference_must_show_exactly():
    d, c = _case("StatusWatermarkValveTest", "testSingleInputIncreasingWatermarks")
    c["difference"] = {"why": "x", "disagreements": ["something else"]}
    verdict, got = case_verdict(d, c)
    assert verdict == "DISAGREES" and got


# -- bad data -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mutate, needle", [
    (lambda d: d.pop("kind"), "missing field 'kind'"),
    (lambda d: d["cases"][0].update(status="maybe"), "status must be one of"),
    (lambda d: d["cases"][0].update(status="skipped", reason=""), "needs a reason"),
    (lambda d: d["cases"].append(dict(d["cases"][0])), "listed twice"),
    (lambda d: d["cases"][0].update(kind="nope"), "unknown kind 'nope'"),
])
def test_malformed_peer_file_gives_one_line_error(tmp_path, mutate, needle):
    d = json.loads((PEER_DIR / "StatusWatermarkValveTest.json").read_text())
    mutate(d)
    f = tmp_path / "Bad.json"
    f.write_text(json.dumps(d))
    with pytest.raises(PeerSpecError) as e:
        load_peer_file(f)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_unparseable_peer_file(tmp_path):
    f = tmp_path / "Bad.json"
    f.write_text("{not json")
    with pytest.raises(PeerSpecError, match="cannot read peer data"):
        load_peer_file(f)


def test_unknown_check_is_refused():
    d, c = _case("CheckpointCoordinatorTest", "testMaxConcurrentAttempts1")
    c["steps"][1]["check"]["pendnig"] = 1
    with pytest.raises(PeerSpecError, match="unknown check 'pendnig'"):
        run_case(d, c)


def test_malformed_case_names_class_and_case():
    d, c = _case("BoundedOutOfOrdernessWatermarksTest", "testWatermarkAfterEvent")
    del c["out_of_orderness"]
    with pytest.raises(PeerSpecError, match="BoundedOutOfOrdernessWatermarksTest#testWatermarkAfterEvent: malformed case"):
        run_case(d, c)


# -- java.util.Random ----------------------------------------------------------------------------


def test_java_random_draws_what_the_jvm_draws():
    # printed by a JVM: new Random(42) nextInt(10) x10, new Random(1234) nextInt(100) x5, and the
    # first (maxParallelism, parallelism) pairs of CheckpointCoordinatorTest#testCreateKeyGroupPartitions
    r = JavaRandom(42)
    assert [r.next_int(10) for _ in range(10)] == [0, 3, 8, 4, 0, 5, 5, 8, 9, 3]
    r = JavaRandom(1234)
    assert [r.next_int(100) for _ in range(5)] == [28, 33, 33, 20, 10]
    r = JavaRandom(1234)
    pairs = []
    for _ in range(4):
        m = 1 + r.next_int(32766)
        pairs.append((m, 1 + r.next_int(m)))
    assert pairs == [(32613, 16656), (32268, 1285), (11415, 1834), (20018, 15954)]


# -- docs and CLI ---------------------------------------------------------------------------------


def test_conformance_page_is_generated_from_the_data():
    spec = importlib.util.spec_from_file_location("gen_conformance", ROOT / "tools" / "gen_conformance.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (ROOT / "docs" / "conformance.md").read_text() == mod.render(), (
        "docs/conformance.md is stale: run .venv/bin/python tools/gen_conformance.py")


def _flinkspec(*args):
    return subprocess.run([sys.executable, "-m", "flinkspec.cli", *args], cwd=ROOT, capture_output=True, text=True)


def test_peer_cli_json_summary():
    r = _flinkspec("peer", "--class", "StatusWatermarkValveTest", "--json")
    assert r.returncode == 0, r.stderr
    last = json.loads(r.stdout.strip().splitlines()[-1])
    assert last["disagreements"] == 0 and last["ported"] == 13 and last["agreeing"] == 13


def test_peer_cli_unknown_class():
    r = _flinkspec("peer", "--class", "NoSuchTest")
    assert r.returncode == 2
    assert "no such peer class" in r.stderr and "Traceback" not in r.stderr
