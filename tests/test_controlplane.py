"""Scenarios of the control plane (model/controlplane.py and the components it composes):
hand-driven runs of the whole Cluster with ModelScope.control_plane, judged by the spec.

The job (model.variants.small_scenario of the keyed family, not the variant's own exhaustive
scenario) is one slot's worth of
subtasks: source -> agg -> sink, on two TaskExecutors of one slot each and two JobManager
processes. Runs are driven by the drain policy (``drain_choice``) plus the faults each test
injects, and judged by ``properties.engines.Run`` (every invariant after every step, the
eventual ones at the end)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from model import actions as A
from model import highavailability as ha
from model import rpc
from model.cluster import Cluster, RuntimeConfig, drain_choice
from model.environment import Environment
from model.variants import Small, generate, small_scenario, variant
from properties.engines import Run


def scenario(**cfg):
    base = small_scenario(attrs.evolve(variant("cp-region-failover"), small=Small()))
    sm = base.with_settings(max_checkpoints=None, max_failures=5, **cfg)
    return sm


def records(n=3):
    sc = scenario()
    splits = {"source": (tuple((k % 2, 1, i + 1) for i, k in enumerate(range(n))),)}
    return splits


def run_of(**cfg) -> Run:
    sc = scenario(**cfg)
    sc = attrs.evolve(sc, job_input=attrs.evolve(sc.job_input, splits=records(4)))
    return Run(sc)


def step_until(run: Run, pred, limit=500):
    """Drain-policy steps until ``pred(cluster)``; returns the violation if one occurs."""
    c = run.cluster
    for _ in range(limit):
        if pred(c):
            return None
        a = drain_choice(c)
        assert a is not None, "drained before the condition held"
        v = run.step(a)
        if v is not None:
            return v
    raise AssertionError("condition not reached")


def do(run: Run, action):
    return run.step(action)


def index_of(c, cls) -> int:
    return next(i for i, m in enumerate(c.cp.net.in_flight) if type(m) is cls)


def all_running(c) -> bool:
    return all(t.status == "RUNNING" for t in c.tasks)


def events(c, kind):
    return [e for e in c.events if e[0] == kind]


def complete_a_checkpoint(run: Run) -> int:
    c = run.cluster
    assert do(run, A.TriggerCheckpoint()) is None
    cid = c.coordinator.next_checkpoint_id - 1
    assert step_until(run, lambda c: cid in c.completed_ids) is None
    return cid


def test_without_the_control_plane_there_is_no_control_plane_state_or_action():
    c = Cluster.from_scenario(generate(variant("aligned-2pc"), 3))
    assert c.cp is None and "cp" not in vars(c)
    kinds = {type(a) for a in c.candidate_actions()}
    assert not any(A.KINDS[k].control_plane for k in kinds)
    assert c.why_not_enabled(A.Tick()) == "the control plane is off (ModelScope.control_plane)"
    assert all(t.status == "RUNNING" for t in c.tasks)  # deployed at once, as before


def test_nothing_runs_before_a_leader_deployed_it_then_the_job_finishes_exactly_once():
    run = run_of()
    c = run.cluster
    assert {t.status for t in c.tasks} == {"CREATED"}
    enabled = c.enabled_actions()
    assert A.LeaderLatchEvent(0) in enabled and A.LeaderLatchEvent(1) not in enabled  # jm0's latch is first
    assert not any(not A.KINDS[type(a)].control_plane for a in enabled)  # no data-plane action yet
    assert step_until(run, all_running) is None
    assert events(c, "cp_leader")[0][2:] == (0, 1)
    jm = c.cp.jms[0].jobmaster
    # every subtask runs in the running JobMaster's slot, as the TaskExecutor says
    assert len(jm.pool) == jm.required == len(c.cp.groups)
    assert run.finish() is None and c.is_drained()
    assert not c.cp.store.exists(ha.JOB_GRAPH) and c.cp.store.get(ha.JOB_RESULT)[0] == "SUCCEEDED"


def test_a_crashed_task_executor_is_noticed_only_by_heartbeat_timeout():
    run = run_of()
    c = run.cluster
    step_until(run, all_running)
    jm = c.cp.jms[0].jobmaster
    te = next(iter(jm.pool.values()))[0]
    assert do(run, A.CrashTaskExecutor(te)) is None
    assert {t.status for t in c.tasks} == {"CANCELED"}  # the tasks died with the process ...
    assert not events(c, "failover")  # ... but nobody knows yet
    timeout = c.config.heartbeat_timeout
    ticks = 0
    while not events(c, "cp_tm_timeout"):
        while c.cp.net.in_flight:
            assert do(run, A.RpcDeliver(0)) is None
        assert do(run, A.Tick()) is None
        ticks += 1
    assert ticks == timeout + 1
    assert events(c, "failover") and events(c, "cp_tm_timeout")[0][2] == te
    assert run.finish() is None and c.is_drained()


def _leader_failover(run: Run, crash: bool = True):
    """jm0 (the leader) crashes (or, ``crash=False``, only its session expires) and jm1 takes over."""
    c = run.cluster
    if crash:
        assert do(run, A.CrashJobManager(0)) is None
    assert do(run, A.ExpireSession(0)) is None
    return do(run, A.LeaderLatchEvent(1))


def test_a_new_leader_restores_the_latest_checkpoint_and_the_counter_from_the_store():
    run = run_of()
    c = run.cluster
    step_until(run, all_running)
    cid = complete_a_checkpoint(run)
    assert c.cp.store.get(ha.CHECKPOINTS)[0] == (cid,)
    assert _leader_failover(run) is None
    rec = events(c, "cp_job_recovered")[-1]
    assert rec[2] == ha.token_of(c.cp.jms[1].latch) and rec[3] == rec[4] == cid
    assert c.coordinator.next_checkpoint_id == cid + 1
    assert {t.status for t in c.tasks} == {"CREATED"}  # the whole job restarts once it has slots
    step_until(run, all_running)
    assert complete_a_checkpoint(run) == cid + 1
    assert run.finish() is None and c.is_drained()


def test_unsafe_in_memory_counter_and_restore_break_on_the_same_failover():
    for cfg, invariant in ((dict(seams=("checkpoint-counter-in-memory",)), "checkpoint_ids_increase"),
                           (dict(seams=("restore-from-memory",)), "restore_uses_latest_checkpoint")):
        run = run_of(**cfg)
        step_until(run, all_running)
        complete_a_checkpoint(run)
        v = _leader_failover(run)
        if v is None:
            step_until(run, all_running)
            assert do(run, A.TriggerCheckpoint()) is not None or run.violation is not None
            v = run.violation
        assert v is not None and v.invariant == invariant, (cfg, v)


def test_a_deposed_leader_cannot_write_the_store_and_without_fencing_it_can():
    for fencing in (True, False):
        run = run_of(seams=() if fencing else ("no-fencing",))
        c = run.cluster
        step_until(run, all_running)
        assert do(run, A.ExpireSession(0)) is None  # jm0 still believes it leads
        assert c.cp.jms[0].token is not None and c.cp.leader_token() != c.cp.jms[0].token
        assert do(run, A.TriggerCheckpoint()) is None
        cid = c.coordinator.next_checkpoint_id - 1
        v = step_until(run, lambda c: any(e[0] in ("completed", "aborted") and e[2] == cid for e in c.events)
                       or run.violation is not None)
        writes = [e for e in events(c, "cp_effect") if e[2] == "store" and e[3] == ha.CHECKPOINTS]
        if fencing:
            assert v is None and not writes[-1][6]
            assert (cid, "FINALIZE_CHECKPOINT_FAILURE") in {(e[2], e[3]) for e in events(c, "aborted")}
            assert not c.job.notifications and cid not in c.completed_ids
            assert run.finish() is None and c.is_drained()
        else:
            assert run.violation is not None and run.violation.invariant == "no_split_brain"


def test_a_rejected_store_write_keeps_the_checkpoints_it_would_have_subsumed():
    # DefaultCompletedCheckpointStoreTest#testAddCheckpointFailedShouldNotRemoveOldOnes: the
    # StateHandleStore is written before the oldest checkpoint is subsumed, so a failed add
    # leaves the store as it was (the model dropped checkpoint 1 from its store as well)
    run = run_of()
    c = run.cluster
    step_until(run, all_running)
    cid1 = complete_a_checkpoint(run)
    assert do(run, A.ExpireSession(0)) is None  # jm0 still believes it leads: its write is refused
    assert do(run, A.TriggerCheckpoint()) is None
    cid = c.coordinator.next_checkpoint_id - 1
    step_until(run, lambda c: any(e[0] == "aborted" and e[2] == cid for e in c.events))
    assert (cid, "FINALIZE_CHECKPOINT_FAILURE") in {(e[2], e[3]) for e in events(c, "aborted")}
    assert c.coordinator.store.checkpoint_ids() == (cid1,) == c.cp.store.get(ha.CHECKPOINTS)[0]


def _finish_job_then_fail_over(seams=()):
    run = run_of(seams=seams)
    c = run.cluster
    step_until(run, lambda c: c.cp.job_done_possible(c) is None)
    assert do(run, A.JobReachedTerminalState()) is None
    return run, _leader_failover(run)


def test_the_job_result_store_keeps_a_finished_job_from_running_again():
    run, v = _finish_job_then_fail_over()
    c = run.cluster
    assert v is None and c.cp.store.get(ha.JOB_RESULT)[0] == "SUCCEEDED"
    assert len(events(c, "cp_job_recovered")) == 1  # only the first leader's
    assert c.why_not_enabled(A.CleanupJob()) is None  # the new leader only cleans up
    assert run.finish() is None and not c.cp.store.exists(ha.JOB_GRAPH)


def test_flink_11813_without_a_job_result_store_the_finished_job_runs_again():
    run, v = _finish_job_then_fail_over(seams=("FLINK-11813",))
    assert v is not None and v.invariant == "terminal_job_never_reruns"
    assert not run.cluster.cp.store.exists(ha.JOB_RESULT)


@pytest.mark.parametrize("bugs", [(), ("FLINK-17075",)])
def test_a_lost_deployment_is_found_by_deployment_reconciliation(bugs):
    run = run_of(seams=bugs)
    c = run.cluster
    step_until(run, lambda c: any(type(m) is rpc.SubmitTask for m in c.cp.net.in_flight))
    assert do(run, A.RpcLose(index_of(c, rpc.SubmitTask))) is None
    v = step_until(run, lambda c: events(c, "cp_missing_deployment") or run.violation is not None, limit=2000)
    if bugs:
        assert v is not None and v.invariant == "deployments_agree"
    else:
        assert v is None and events(c, "failover")
        assert run.finish() is None and c.is_drained()


@pytest.mark.parametrize("reconcile", [True, False])
def test_a_lost_slot_request_answer_is_repaired_by_slot_reports(reconcile):
    run = run_of(seams=() if reconcile else ("no-slot-report-reconciliation",))
    c = run.cluster
    step_until(run, lambda c: any(type(m) is rpc.SlotRequestAnswer for m in c.cp.net.in_flight))
    assert do(run, A.RpcLose(index_of(c, rpc.SlotRequestAnswer))) is None
    v = step_until(run, lambda c: events(c, "cp_pending_slot_reconciled") or run.violation is not None
                   or c.is_drained(), limit=3000)
    if reconcile:
        assert v is None and events(c, "cp_pending_slot_reconciled")
        # the coverage goal of a lost answer masked by a later message counts this step
        assert run.goals["cp_lost_slot_answer_masked_by_slot_report"] == 1
        assert run.finish() is None and c.is_drained()
    else:
        assert v is not None and v.invariant == "slot_views_agree"
        assert run.goals["cp_lost_slot_answer_masked_by_slot_report"] == 0


def test_a_late_slot_request_answer_is_not_a_lost_one():
    """A heartbeat's slot report that overtakes an answer still in flight resolves the PENDING
    slot too (cp_lost_slot_request_answered_by_reconciliation), but nothing was lost: the goal
    of a lost answer masked by a later message is not reached; losing a heartbeat instead of the
    answer does not reach it either."""
    run = run_of()
    c = run.cluster
    step_until(run, lambda c: any(type(m) is rpc.SlotRequestAnswer for m in c.cp.net.in_flight))
    answer = c.cp.net.in_flight[index_of(c, rpc.SlotRequestAnswer)]
    lost_other = False
    for _ in range(3000):
        if events(c, "cp_pending_slot_reconciled") or c.is_drained():
            break
        a = drain_choice(c)
        # keep the answer in flight until the slot report resolved its slot
        if type(a) is A.RpcDeliver and c.cp.net.in_flight[a.index] == answer:
            others = [i for i, m in enumerate(c.cp.net.in_flight) if m != answer]
            if not others:
                a = A.Tick() if A.Tick() in c.enabled_actions() else a
            else:
                a = A.RpcDeliver(others[0])
        if (not lost_other and type(a) is A.RpcDeliver and type(c.cp.net.in_flight[a.index]) is rpc.HeartbeatRequest
                and A.RpcLose(a.index) in c.enabled_actions()):
            a, lost_other = A.RpcLose(a.index), True
        assert run.step(a) is None
    assert lost_other and events(c, "cp_pending_slot_reconciled"), "the slot report did not overtake the answer"
    assert run.goals["cp_lost_slot_request_answered_by_reconciliation"] >= 1
    assert run.goals["cp_lost_slot_answer_masked_by_slot_report"] == 0


def test_copy_and_fingerprint_cover_the_control_plane():
    run = run_of()
    c = run.cluster
    step_until(run, all_running)
    d = c.copy()
    assert d.fingerprint() == c.fingerprint()
    d.step(A.CrashTaskExecutor(0))
    assert d.fingerprint() != c.fingerprint() and c.cp.tes[0].alive and not d.cp.tes[0].alive
    e = c.copy()
    e.cp.store.expire_session(e.cp.jms[1].session)  # a store-only change shows in the fingerprint
    assert e.fingerprint() != c.fingerprint()


def test_a_finished_producer_leaves_both_deployment_views_and_survives_a_job_leader_timeout():
    """A finished execution leaves its TaskExecutor's slot and the JobMaster's deployment
    tracking at once (``TaskSlotTable.removeTask``, ``ExecutionDeploymentTracker.
    stopTrackingDeploymentOf``). The exhaustive search of cp-blocking-regions found this run
    (56 actions) violating ``deployments_agree`` while both views kept finished executions: a
    heartbeat answer is lost, the source finishes, its consumers are deployed into the slot it
    gave back, then the TaskExecutor's job leader times out and it drops every task; the
    JobMaster went on expecting the finished source there, so its deployment reports showed it
    missing for ever. Now the run settles and drains with nothing violated."""
    sc = small_scenario(variant("cp-blocking-regions"))
    d0, tick = A.RpcDeliver(index=0), A.Tick()
    trace = ([A.LeaderLatchEvent(job_manager=0), A.LeaderRetrieval(task_executor=0)] + [d0] * 9 + [tick]
             + [d0, d0, A.RpcDeliver(index=1), A.RpcLose(index=0), tick] + [d0] * 8 + [A.SourceEnd(subtask=0), d0, tick]
             + [d0] * 6 + [tick] + [d0] * 6 + [tick] + ([d0] * 4 + [tick]) * 3 + [d0] * 4)
    run = Run(sc)
    c = run.cluster
    finished_at = None
    for a in trace:
        assert c.why_not_enabled(a) is None, a
        assert run.step(a) is None
        jm = c.cp.running_jobmaster()
        if finished_at is None and c.tasks[0].status == "FINISHED":
            finished_at = c.now
        if finished_at is not None and jm is not None:
            done = (0, jm.attempts[0])
            assert all(done not in ex for ex in jm.deployed.values())
            assert all(done not in ex for te in c.cp.tes for ex in te.deployed.values())
    timeouts = events(c, "cp_job_leader_timeout")
    assert finished_at is not None and timeouts and timeouts[0][1] > finished_at
    assert run.finish() is None and c.is_drained()


# -- dead letters: RPCs of a leader session that is gone for ever ------------------------------

def _dead_letters(c) -> list:
    live = c.cp.live_sessions()
    return [i for i, m in enumerate(c.cp.net.in_flight)
            if rpc.receiver_session(m) is not None and rpc.receiver_session(m)[1] not in live]


def test_a_dead_letter_stays_dead_and_its_delivery_changes_nothing_but_the_network():
    """What makes ``dead_letters="at_once"`` sound: on walks with JobManager crashes and session
    expiries (``on_delivery``), a leader session once gone never comes back, and delivering an
    RPC of such a session changes the state exactly as dropping it from the network does."""
    met = 0
    for seed in range(12):
        sc = generate(variant("cp-region-failover"), seed)
        c = Cluster.from_scenario(sc)
        assert c.environment.dead_letters == "on_delivery"
        rng = __import__("random").Random(seed)
        gone: set = set()
        for _ in range(250):
            live = c.cp.live_sessions()
            assert not (live & gone), f"seed {seed}: session(s) {sorted(live & gone)} came back"
            for p in c.cp.jms:
                if p.latch is not None:
                    gone.update(s for s in range(1, ha.token_of(p.latch)) if s not in live)
            for i in _dead_letters(c):
                if c.why_not_enabled(A.RpcDeliver(i)) is not None:
                    continue  # not deliverable yet (an earlier message of its connection first)
                met += 1
                delivered, dropped = c.copy(), c.copy()
                delivered.step(A.RpcDeliver(i))
                del dropped.cp.net.in_flight[i]
                delivered.now = dropped.now = c.now
                assert delivered.fingerprint() == dropped.fingerprint(), (seed, c.cp.net.in_flight[i])
            acts = c.enabled_actions()
            if not acts:
                break
            c.step(rng.choice(acts))
    assert met > 20, f"the walks met only {met} dead letters"


@pytest.mark.parametrize("name", ["cp-no-fencing", pytest.param("FLINK-11813", marks=pytest.mark.slow),
                                  pytest.param("cp-restore-from-memory", marks=pytest.mark.slow)])
def test_dropping_dead_letters_at_once_keeps_every_verdict_and_shortest_length(name):
    """The same small scenarios with ``on_delivery`` and with ``at_once``: the same verdict and the
    same shortest counterexample length, with fewer states for ``at_once``."""
    from properties.explore import Limits, explore
    sc = small_scenario(variant(name))
    assert sc.environment.dead_letters == "at_once"
    a = explore(sc, Limits(max_seconds=60))
    b = explore(sc.with_settings(dead_letters="on_delivery"), Limits(max_seconds=60))
    assert (a.verdict, a.violation.invariant, a.depth) == (b.verdict, b.violation.invariant, b.depth), name
    assert a.distinct_states < b.distinct_states, name


def test_dead_letters_must_be_named():
    from model.errors import FlinkspecError
    with pytest.raises(FlinkspecError, match="dead_letters must be one of"):
        Environment(dead_letters="never")


# -- ZooKeeper connection states (Curator's ConnectionState) --------------------------------------

@pytest.mark.parametrize("tolerate", [False, True])
def test_a_suspended_connection_revokes_leadership_unless_tolerated(tolerate):
    """Flink's ``ZooKeeperLeaderElectionConnectionHandlingTest``: by default (Curator's
    StandardConnectionStateErrorPolicy) a SUSPENDED connection revokes leadership; with
    ``high-availability.zookeeper.client.tolerate-suspended-connections``
    (``testKeepLeadershipOnSuspendedConnectionIfTolerateSuspendedConnectionsIsEnabled``) the
    leader keeps it through SUSPENDED and RECONNECTED. Either way the job graph, the checkpoint
    pointers and the checkpoint ID counter survive the suspension and the reconnection."""
    run = run_of(zookeeper_tolerate_suspended_connections=tolerate)
    c = run.cluster
    step_until(run, all_running)
    cid = complete_a_checkpoint(run)
    persistent = {path: c.cp.store.get(path) for path in (ha.JOB_GRAPH, ha.CHECKPOINTS, ha.CHECKPOINT_COUNTER)}
    token = c.cp.jms[0].token
    assert do(run, A.ConnectionSuspended(0)) is None
    assert (c.cp.latch_event(c, 0) == "revoke") is not tolerate
    if not tolerate:
        # RECONNECTED waits until the LeaderLatch handled SUSPENDED, and so does LOST
        assert run.why_not_enabled(A.ConnectionReconnected(0)) is not None
        assert run.why_not_enabled(A.ExpireSession(0)) is not None
        assert do(run, A.LeaderLatchEvent(0)) is None and c.cp.jms[0].token is None
    assert do(run, A.ConnectionReconnected(0)) is None
    assert c.cp.jms[0].session in c.cp.store.sessions and not c.cp.connection_suspended(0)
    assert {path: c.cp.store.get(path) for path in persistent} == persistent
    assert c.cp.store.get(ha.CHECKPOINTS)[0] == (cid,)
    assert (c.cp.jms[0].token == token) is tolerate
    assert run.finish() is None and c.is_drained()


def test_a_suspended_leaders_store_write_fails_while_its_job_result_write_does_not():
    """A suspended client reaches no ZooKeeper server (ConnectionLoss); the JobResultStore is a
    file system in Flink (FileSystemJobResultStore)."""
    run = run_of(zookeeper_tolerate_suspended_connections=True)
    c = run.cluster
    step_until(run, all_running)
    assert do(run, A.ConnectionSuspended(0)) is None
    p = c.cp.jms[0]
    assert not c.cp.ha_write(c, p, ha.CHECKPOINTS, (99,))
    assert c.cp.ha_write(c, p, ha.JOB_RESULT, "SUCCEEDED")


def test_the_drain_settles_a_suspended_connection_before_the_final_checkpoint():
    """The leader's connection is SUSPENDED (tolerated) while the job finishes: a final
    checkpoint could not complete (its pointer write to ZooKeeper fails), so the drain policy
    settles the connection first and triggers the checkpoint after. Triggering it while
    suspended, again and again, the run never drained (2,000 steps and counting)."""
    run = run_of(zookeeper_tolerate_suspended_connections=True)
    c = run.cluster
    step_until(run, all_running)
    assert do(run, A.ConnectionSuspended(0)) is None
    start = c.now
    assert run.finish(max_steps=1000) is None and c.is_drained()
    names = [type(a).__name__ for a in c.trace[start:]]
    settled = min(i for i, n in enumerate(names) if n in ("ConnectionReconnected", "ExpireSession"))
    assert "TriggerCheckpoint" not in names[:settled] and "TriggerCheckpoint" in names[settled:]


def test_tolerating_a_suspension_keeps_two_leaders_apart_only_with_fencing():
    """The suspended leader keeps its leadership (tolerated), its session is LOST and the other
    process is granted leadership while jm0 still believes it leads: fencing keeps it out. The
    known-unsafe ``cp-tolerate-suspended-no-fencing`` (the same without fencing) is found by
    exhaustive search: its shortest counterexample is in the corpus."""
    from properties.counterexample import corpus_files, load_counterexample, replay_counterexample  # test-only helper

    run = run_of(zookeeper_tolerate_suspended_connections=True)
    c = run.cluster
    step_until(run, all_running)
    assert do(run, A.ConnectionSuspended(0)) is None
    assert do(run, A.ExpireSession(0)) is None
    assert c.cp.jms[0].token is not None  # jm0 still believes it leads
    assert do(run, A.LeaderLatchEvent(1)) is None and c.cp.jms[1].token is not None
    assert run.finish() is None and c.is_drained()

    corpus = Path(__file__).resolve().parent.parent / "counterexamples"
    found = [cx for cx in map(load_counterexample, corpus_files(corpus))
             if cx.variant == "cp-tolerate-suspended-no-fencing"]
    assert found
    for cx in found:
        ok, v = replay_counterexample(cx)
        assert ok and v.invariant in variant("cp-tolerate-suspended-no-fencing").expected
        assert any(type(a).__name__ == "ConnectionSuspended" for a in cx.actions)
