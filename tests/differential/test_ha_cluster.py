"""A real Flink 2.3.0 session cluster with ZooKeeper HA loses its leading JobManager (SIGKILL).

``tools/flink_ha_cluster.py`` starts ZooKeeper, two JobManagers and two TaskManagers (2 slots
each) on loopback in the test's folder, submits one phase of a small conform job (two splits of
150 records, 3 records per split per checkpoint: ~50 checkpoints of 100 ms), waits for two
completed checkpoints, SIGKILLs the leading JobManager's JVM and waits for the standby to take
over. Asserted: the standby (the other JobManager) became leader; its JobMaster restored the
job from a checkpoint at least as recent as the last one the killed leader logged, and the job
completed checkpoints with greater ids under it; both JobManagers' logs hold the leadership
grants (REST endpoint, ResourceManager, Dispatcher, the job's JobMaster) with distinct leader
session ids; after ``stop()`` no process of the cluster is alive (by pid and ``pgrep -f``).

Needs ``.venv-flink`` (``make flink-env``), Java and Debian's ``zookeeper`` package
(``bash tools/ensure-zookeeper.sh``); without them it FAILS with that instruction (no skip).
About 1 minute.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.flink]

REPO = Path(__file__).resolve().parents[2]


def _harness():
    spec = importlib.util.spec_from_file_location("flinkspec_tools_flink_ha_cluster",
                                                  REPO / "tools" / "flink_ha_cluster.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _request() -> dict:
    split_len = 150
    records = [[f"user-{(s * 7 + i) % 5}", i % 10, i] for s in range(2) for i in range(split_len)]
    return {"id": 1, "name": "ha-failover", "keyed": "agg", "records": records, "splits": 2,
            "split_len": split_len, "cap": 3, "max_parallelism": 8, "out_of_orderness": 3,
            "ops": [{"name": "map", "kind": "map", "function": "add:1"},
                    {"name": "agg", "kind": "keyed_aggregate", "aggregate": "sum"},
                    {"name": "sink", "kind": "sink"}],
            "phases": [{"parallelism": {"source": 2, "map": 2, "agg": 2, "sink": 2},
                        "stop_with_savepoint": False, "fail_at": None}]}


GRANTS = {
    "rest": r"DispatcherRestEndpoint \[.*\] - http://127\.0\.0\.1:\d+ was granted leadership with leaderSessionID=([0-9a-f-]{36})",
    "resource manager": r"ResourceManagerServiceImpl \[.*\] - Resource manager service is granted leadership with session id ([0-9a-f-]{36})\.",
    "dispatcher": r"DefaultDispatcherRunner \[.*\] - DefaultDispatcherRunner was granted leadership with leader id ([0-9a-f-]{36})\.",
}


def test_standby_takes_over_after_the_leader_is_killed(tmp_path):
    ha = _harness()
    try:
        ha.check_environment()
    except ha.ClusterError as e:
        pytest.fail(str(e), pytrace=False)
    cluster = ha.HaCluster(tmp_path / "ha", timeout=120)
    try:
        summary = ha.run_scenario(tmp_path / "ha", _request(), job_timeout=60, cluster=cluster)
    finally:
        cluster.stop()  # idempotent; run_scenario stopped it already unless it failed to start

    # nothing of the cluster is left
    pids = cluster.pids()
    assert len(pids) >= 6  # ZooKeeper, 2 JobManagers, 2 TaskManagers, the client
    assert not [pid for pid in pids if ha._alive(pid)]
    left = subprocess.run(["pgrep", "-f", str(cluster.work)], capture_output=True, text=True).stdout.split()
    assert not left, f"processes with the work folder on their command line: {left}"

    # the standby became leader
    old, new = summary["leaders"]
    assert summary["killed"] == old and new != old, summary
    assert summary["final_state"] == "FINISHED", summary
    job = summary["job_id"]
    logs = {name: Path(p).read_text(errors="replace") for name, p in summary["logs"].items()}
    old_log, new_log = logs[f"jobmanager-{old}"], logs[f"jobmanager-{new}"]

    # leadership grants in both JobManagers' logs, each with its own leader session id
    sessions = {}
    for who, text in (("old", old_log), ("new", new_log)):
        ids = set()
        for what, pattern in GRANTS.items():
            found = re.findall(pattern, text)
            assert found, f"no {what} leadership grant in the {who} leader's log"
            ids.update(found)
        jm = re.findall(rf"JobMasterServiceLeadershipRunner \[.*\] - JobMasterServiceLeadershipRunner for job {job} "
                        r"was granted leadership with leader id ([0-9a-f-]{36})\.", text)
        assert jm, f"no JobMaster leadership grant for job {job} in the {who} leader's log"
        ids.update(jm)
        assert len(ids) == 1, f"the {who} leader's components were granted leadership with several ids: {ids}"
        sessions[who] = ids.pop()
    assert sessions["old"] != sessions["new"]

    # the new JobMaster restored the job from the latest checkpoint and checkpoints went on
    before = [int(x) for x in re.findall(rf"\] - Completed checkpoint (\d+) for job {job}", old_log)]
    assert len(before) >= 2
    restored = re.findall(rf"CheckpointCoordinator \[.*\] - Restoring job {job} from Checkpoint (\d+) ", new_log)
    assert restored, "the new leader's JobMaster restored no checkpoint"
    restored_id = int(restored[0])
    assert restored_id >= max(before)
    after = [int(x) for x in re.findall(rf"\] - Completed checkpoint (\d+) for job {job}", new_log)]
    assert after and min(after) > restored_id >= max(before), (before, restored_id, after)
