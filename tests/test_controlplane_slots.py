"""Idle slots, scheduling of blocking regions, declarations and the TaskExecutor's job-leader
heartbeat in the control plane (model/jobmaster.py, model/taskexecutor.py,
model/controlplane.py), and the state-space reductions that make it explorable
(model/fingerprint.py: fresh ids by rank, the network as a multiset).

Runs are hand-driven through ``Cluster.step`` with the drain policy plus the faults each test
injects, and judged by ``properties.engines.Run``."""

from __future__ import annotations

import attrs
import pytest

from model import actions as A
from model import rpc
from model.cluster import Cluster, drain_choice
from model.fingerprint import canonical, canonical_bytes
from model.variants import Small, small_scenario, variant
from properties.engines import Run


def _scenario(name: str, **cfg):
    """The variant's small job (its family's, with two records), budgets lifted, ``cfg`` set."""
    sc = small_scenario(attrs.evolve(variant(name), small=Small(records=2)))
    return sc.with_settings(max_checkpoints=None, max_failures=5, **cfg)


def step_until(run: Run, pred, limit=3000):
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


def events(c, kind):
    return [e for e in c.events if e[0] == kind]


def in_flight(c, cls):
    return [i for i, m in enumerate(c.cp.net.in_flight) if type(m) is cls]


# -- idle slots ---------------------------------------------------------------------------------

def test_an_idle_slot_is_released_after_the_timeout_and_free_in_all_three_views():
    """A finished group's slot goes back to the SlotPool; after slot_idle_timeout heartbeat
    intervals (and only while the pool holds more than it needs) the JobMaster releases it:
    freeSlot to the TaskExecutor, whose next slot report frees it in the SlotManager."""
    run = Run(_scenario("cp-blocking-regions", slot_idle_timeout=3))
    c = run.cluster
    assert step_until(run, lambda c: events(c, "cp_slot_freed")) is None
    freed = events(c, "cp_slot_freed")[0][2]
    jm = c.cp.running_jobmaster()
    assert freed in jm.pool and freed in jm.idle and freed not in jm.group_slot.values()
    ticks_before = len([a for a in c.trace if type(a) is A.Tick])
    assert step_until(run, lambda c: events(c, "cp_idle_slot_released") or events(c, "cp_idle_slot_reused")) is None
    if events(c, "cp_idle_slot_reused"):  # the consumer region took it first: free slots are reserved first
        assert events(c, "cp_idle_slot_reused")[0][2] == freed
        return
    ticks = len([a for a in c.trace if type(a) is A.Tick]) - ticks_before
    assert ticks >= 3
    _, _, te, slot, alloc, _jm = events(c, "cp_idle_slot_released")[0]
    assert alloc == freed and alloc not in jm.pool
    assert step_until(run, lambda c: c.cp.settled()) is None
    assert c.cp.tes[te].slots[slot] is None or c.cp.tes[te].slots[slot][0] != alloc
    lead = c.cp.leading_process()
    assert lead.rm.slots[(te, slot)][1] != alloc
    assert run.finish() is None and c.is_drained()


@pytest.mark.parametrize("sync", [True, False])
def test_a_lost_free_slot_is_repaired_by_the_allocated_slot_report(sync):
    """The freeSlot of an idle slot is lost: the TaskExecutor frees the slot once two
    AllocatedSlotReports no longer name it (syncSlotsWithSnapshotFromJobMaster); without that
    sync it stays allocated for the job, and ``idle_slots_returned`` says so once settled."""
    run = Run(_scenario("cp-blocking-regions", seams=() if sync else ("no-allocated-slot-report-sync",),
                        slot_idle_timeout=1))
    c = run.cluster
    assert step_until(run, lambda c: events(c, "cp_idle_slot_released")) is None
    alloc = events(c, "cp_idle_slot_released")[0][4]
    i = next(i for i in in_flight(c, rpc.FreeSlot) if c.cp.net.in_flight[i].allocation == alloc)
    assert run.step(A.RpcLose(i)) is None
    v = step_until(run, lambda c: events(c, "cp_unreported_slot_freed") or run.violation is not None or c.is_drained())
    if sync:
        assert v is None and events(c, "cp_unreported_slot_freed")[0][3] == alloc
        assert run.finish() is None and c.is_drained()
    else:
        assert v is not None and v.invariant == "idle_slots_returned"


# -- scheduling of blocking regions ---------------------------------------------------------------

@pytest.mark.parametrize("scheduling", ["region", "eager"])
def test_a_consumer_region_is_deployed_once_its_blocking_producers_finished(scheduling):
    run = Run(_scenario("cp-blocking-regions", seams=("eager-scheduling",) if scheduling == "eager" else ()))
    c = run.cluster
    producers = {p for ps in c.cp.region_inputs for p in ps}
    assert producers  # the blocking exchange's producers (the sources)
    v = step_until(run, lambda c: run.violation is not None or c.is_drained())
    submitted = [e[2] for e in events(c, "cp_submit")]
    consumers = [s for s in range(len(c.tasks)) if c.cp.region_inputs[s]]
    if scheduling == "region":
        assert v is None and run.finish() is None and c.is_drained()
        first_consumer = min(i for i, e in enumerate(c.events) if e[0] == "cp_submit" and e[2] in consumers)
        finished = [i for i, e in enumerate(c.events) if e[0] == "cp_submit" and e[2] in producers]
        assert finished and all(i < first_consumer for i in finished)
        assert set(submitted) >= set(consumers)
    else:
        assert v is not None and v.invariant == "region_deployed_after_blocking_inputs"


def _two_groups(**cfg):
    """The blocking small job with the consumers in a slot sharing group of their own (else
    they inherit the sources' group, as Flink's StreamGraphGenerator does)."""
    sc = _scenario("cp-blocking-regions", **cfg)
    ops = tuple(attrs.evolve(o, slot_sharing_group="default") if o.name == "map" else o for o in sc.graph.operators)
    return attrs.evolve(sc, graph=attrs.evolve(sc.graph, operators=ops).validate())


def test_lazy_scheduling_runs_a_batch_job_in_one_slot_by_reusing_the_producers_slot():
    """Two slot sharing groups (the sources' and the rest): the consumer region takes the
    sources' slot once they finished, so the job never holds more than one slot; eager
    scheduling holds two."""
    held = {}
    for scheduling in ("region", "eager"):
        run = Run(_two_groups(task_managers=1, seams=("eager-scheduling",) if scheduling == "eager" else ()))
        c = run.cluster
        assert len(c.cp.groups) == 2
        most = 0
        while True:
            jm = c.cp.running_jobmaster()
            most = max(most, 0 if jm is None else len(jm.pool))
            a = drain_choice(c)
            if a is None:
                break
            v = run.step(a)
            assert v is None or scheduling == "eager"
        held[scheduling] = most
        if scheduling == "region":
            assert run.finish() is None and c.is_drained() and events(c, "cp_idle_slot_reused")
    assert held == {"region": 1, "eager": 2}


# -- declarations and the TaskExecutor's job-leader heartbeat -----------------------------------------

def test_a_lost_declaration_is_retried_until_acknowledged():
    run = Run(_scenario("cp-region-failover"))
    c = run.cluster
    assert step_until(run, lambda c: in_flight(c, rpc.DeclareResourceRequirements)) is None
    assert run.step(A.RpcLose(in_flight(c, rpc.DeclareResourceRequirements)[0])) is None
    jm = c.cp.running_jobmaster()
    assert not jm.acked
    assert step_until(run, lambda c: c.cp.running_jobmaster().acked) is None
    assert c.cp.leading_process().rm.requirements == {jm.token: jm.required}
    assert run.finish() is None and c.is_drained()


def test_a_stale_declaration_does_not_overwrite_a_newer_one():
    run = Run(_scenario("cp-region-failover"))
    c = run.cluster
    assert step_until(run, lambda c: all(t.status == "RUNNING" for t in c.tasks)) is None
    rm = c.cp.leading_process().rm
    jm = c.cp.running_jobmaster()
    old = rpc.DeclareResourceRequirements(rm.token, jm.token, 7, rpc.SequenceNumber(0))
    c.cp.net.send(old)
    assert run.step(A.RpcDeliver(len(c.cp.net.in_flight) - 1)) is None
    assert rm.requirements == {jm.token: jm.required}  # declaration 0 is older than the one taken


def test_a_submission_into_a_slot_whose_offer_answer_was_lost_marks_it_active():
    """The JobMaster accepted the offered slots but its answer is lost: the TaskExecutor still
    holds them allocated and inactive when the deployments arrive. ``TaskExecutor.submitTask``
    accepts them (``TaskSlotTable.tryMarkSlotActive`` marks an allocated slot active), so the
    job runs with no failed deployment and no failover."""
    run = Run(_scenario("cp-region-failover"))
    c = run.cluster
    assert step_until(run, lambda c: in_flight(c, rpc.OfferSlotsAnswer)) is None
    lost = set()
    for i in reversed(in_flight(c, rpc.OfferSlotsAnswer)):
        lost.update(c.cp.net.in_flight[i].accepted)
        assert run.step(A.RpcLose(i)) is None
    assert lost
    inactive = [(te.index, s[0]) for te in c.cp.tes for s in te.slots if s is not None and s[0] in lost]
    assert inactive and all(not s[2] for te in c.cp.tes for s in te.slots if s is not None and s[0] in lost)
    assert step_until(run, lambda c: all(t.status == "RUNNING" for t in c.tasks)) is None
    submits = [e for e in events(c, "cp_effect") if e[3] == "submitTask"]
    assert submits and all(e[6] for e in submits), submits
    for te, alloc in inactive:
        i = c.cp.tes[te].slot_of(alloc)
        if i is not None and c.cp.tes[te].deployed.get(i):
            assert c.cp.tes[te].slots[i][2], "a slot running tasks is active"
    assert c.restarts == 0
    assert run.finish() is None and c.is_drained()


def test_a_task_executor_disconnects_a_silent_job_leader_and_offers_its_slots_again():
    """The JobMaster times the TaskExecutor out and its freeSlots are lost: the TaskExecutor
    hears no more heartbeats, disconnects the job leader after the timeout (its slots turn
    inactive and are offered again) and the job goes on."""
    run = Run(_scenario("cp-region-failover"))
    c = run.cluster
    assert step_until(run, lambda c: all(t.status == "RUNNING" for t in c.tasks)) is None
    jm = c.cp.running_jobmaster()
    te = next(iter(jm.pool.values()))[0]
    ticks = 0
    while not events(c, "cp_tm_timeout"):  # the TaskExecutor's answers are lost
        for i in reversed(range(len(c.cp.net.in_flight))):
            m = c.cp.net.in_flight[i]
            if type(m) is rpc.HeartbeatResponse and m.te == te and m.receiver == "jm":
                assert run.step(A.RpcLose(i)) is None
            elif type(m) is not rpc.HeartbeatRequest or m.sender != "jm":
                assert run.step(A.RpcDeliver(i)) is None
        assert run.step(A.Tick()) is None
        ticks += 1
        assert ticks < 10
    for i in reversed(in_flight(c, rpc.FreeSlot)):
        assert run.step(A.RpcLose(i)) is None
    assert step_until(run, lambda c: events(c, "cp_job_leader_timeout")) is None
    assert events(c, "cp_job_leader_timeout")[0][2] == te
    assert run.finish() is None and c.is_drained()


# -- the reductions that make the control plane explorable ---------------------------------------------

def test_fresh_ids_count_by_rank_and_the_network_as_a_multiset():
    assert canonical_bytes({rpc.AllocationID(9): rpc.AllocationID(12)}) == \
        canonical_bytes({rpc.AllocationID(1): rpc.AllocationID(2)})
    assert canonical_bytes((rpc.AllocationID(2), rpc.AllocationID(1))) != \
        canonical_bytes((rpc.AllocationID(1), rpc.AllocationID(2)))
    # the same run with ids drawn from higher counters is the same state
    sc = _scenario("cp-region-failover")
    a, b = Cluster.from_scenario(sc), Cluster.from_scenario(sc)
    b.cp.next_allocation, b.cp.next_attempt, b.cp.next_sequence = 40, 70, 90
    for _ in range(60):
        act = drain_choice(a)
        a.step(act)
        b.step(act)
        assert a.fingerprint() == b.fingerprint()
    assert repr(canonical(a)) != repr(canonical(b))  # the raw ids differ
    # the order of the messages in flight does not count ("any" order)
    d = a.copy()
    d.cp.net.in_flight.reverse()
    assert len(a.cp.net.in_flight) < 2 or d.cp.net.in_flight != a.cp.net.in_flight
    assert d.fingerprint() == a.fingerprint()


def test_per_connection_order_delivers_one_connections_messages_in_sending_order():
    net = rpc.ConnectionOrderedNetwork()
    m1, m2 = rpc.SubmitTask(0, 1, rpc.AllocationID(1), ()), rpc.FreeSlot(0, 1, rpc.AllocationID(1))
    hb = rpc.HeartbeatRequest("rm", 1, 0, 0)
    for m in (m1, hb, m2):
        net.send(m)
    assert [rpc.connection(m) for m in net.in_flight] == sorted(rpc.connection(m) for m in net.in_flight)
    first_jm = net.in_flight.index(m1)
    assert net.deliverable(first_jm) and not net.deliverable(net.in_flight.index(m2))
    assert net.deliverable(net.in_flight.index(hb))
