"""The control plane (model/controlplane.py) call by call: a small Cluster with
``ModelScope.control_plane`` driven one ControlPlane call at a time -- leader election,
leader retrieval, each RPC's delivery, heartbeat intervals, crashes, ZooKeeper sessions and
connections, checkpoints, the job's end -- with every field of the control plane compared after
each call: the ZooKeeper nodes (data, version, cversion, sequence, owner), sessions and
suspended connections, each JobManager process (its ResourceManager's and JobMaster's every
field), each TaskExecutor's every field, the RPCs in flight, the identifier counters, the
subtasks' states, and the events the call appended.

``Watch.step`` asserts exactly what a call changed (any other field unchanged) and the events
it appended. The job of the first scenario is source -> agg (subtasks 0 and 1, one slot sharing
group) on two TaskExecutors of one slot each, two JobManager processes, heartbeat timeout 2
and slot idle timeout 2 intervals (tests/test_controlplane.py's scenario)."""

from __future__ import annotations

import copy

import attrs
import pytest

from model import highavailability as ha
from model import rpc
from model.cluster import Cluster
from model.controlplane import ControlPlane, Dispatcher, JobManagerProcess, pending_slots, region_inputs
from model.jobmaster import JobMaster
from model.resourcemanager import ResourceManager
from model.taskexecutor import TaskExecutor
from model.variants import Small, small_scenario, variant

GONE = "<absent>"
L0, L1, L2 = (f"{ha.LATCH}/latch-{i:010d}" for i in range(3))


def flat(c) -> dict:
    """Every field of the control plane (and the subtasks' states), one key each."""
    cp = c.cp
    d = {}
    st = cp.store
    for path, n in st.nodes.items():
        d["zk" + path] = (n.data, n.version, n.cversion, n.seq, n.owner)
    d["zk.sessions"] = frozenset(st.sessions)
    d["zk.suspended"] = frozenset(st.suspended)
    d["zk.next_session"] = st.next_session
    for p in cp.jms:
        for f in JobManagerProcess.__slots__:
            v = getattr(p, f)
            if f == "rm":
                d[f"jm{p.index}.rm"] = None if v is None else "rm"
                for g in ResourceManager.__slots__ if v is not None else ():
                    d[f"jm{p.index}.rm.{g}"] = copy.deepcopy(getattr(v, g))
            elif f == "jobmaster":
                d[f"jm{p.index}.jobmaster"] = None if v is None else "jobmaster"
                for g in JobMaster.__slots__ if v is not None else ():
                    d[f"jm{p.index}.jobmaster.{g}"] = copy.deepcopy(getattr(v, g))
            elif f == "memory":
                d[f"jm{p.index}.memory"] = None if v is None else v.checkpoint_id
            elif f != "index":
                d[f"jm{p.index}.{f}"] = v
    for te in cp.tes:
        for f in TaskExecutor.__slots__:
            if f != "index":
                d[f"te{te.index}.{f}"] = copy.deepcopy(getattr(te, f))
    d["net"] = tuple(cp.net.in_flight)
    for f in ("running", "quiet", "started", "max_checkpoint_id", "terminal", "next_allocation", "next_attempt",
              "next_sequence"):
        d[f] = getattr(cp, f)
    d["storage"] = tuple(sorted(cp.storage))
    d["tasks"] = tuple(t.status for t in c.tasks)
    return d


class Watch:
    """The state before a call; ``step`` makes the call and asserts what changed."""

    def __init__(self, c):
        self.c = c
        self.before = flat(c)
        self.n_events = len(c.events)

    def changes(self) -> tuple[dict, list]:
        now = flat(self.c)
        out = {k: now.get(k, GONE) for k in set(now) | set(self.before)
               if self.before.get(k, GONE) != now.get(k, GONE)}
        ev = [e for e in self.c.events[self.n_events:]]
        self.before, self.n_events = now, len(self.c.events)
        return out, ev

    def step(self, call, changes: dict, events=(), kinds=None):
        """``call()``, then exactly ``changes`` (key -> new value) and the appended control-plane
        events ``events`` (``cp_*``; the data plane's own events by kind, ``kinds``, when given)."""
        result = call()
        got, ev = self.changes()
        assert got == changes
        assert [e for e in ev if e[0].startswith("cp_")] == list(events)
        if kinds is not None:
            assert [e[0] for e in ev if not e[0].startswith("cp_")] == list(kinds)
        return result


def cluster(name="cp-region-failover", small=Small(), **settings) -> Cluster:
    sc = small_scenario(attrs.evolve(variant(name), small=small))
    if settings:
        sc = sc.with_settings(**settings)
    return Cluster.from_scenario(sc)


def deliver(c, m):
    """Deliver the RPC ``m`` (the first one equal to it in flight), then the step's end."""
    c.cp.deliver(c, c.cp.net.in_flight.index(m))
    c.cp.after_step(c)


def running_cluster():
    """jm0 leads (leader session 1), both TaskExecutors registered, te0's slot (allocation 1)
    holds both subtasks (attempts 1 and 2), which run; nothing in flight."""
    c = cluster()
    cp = c.cp
    cp.apply_latch_event(c, 0)
    cp.leader_retrieval(c, 0)
    cp.leader_retrieval(c, 1)
    while cp.net.in_flight:
        cp.deliver(c, 0)
        cp.after_step(c)
    assert [t.status for t in c.tasks] == ["RUNNING", "RUNNING"]
    return c


# -- a new control plane ---------------------------------------------------------------------------


def test_a_new_control_plane_has_the_job_graph_stored_and_every_process_in_the_election():
    c = cluster()
    cp = c.cp
    assert (cp.groups, cp.region_inputs, cp.timeout, cp.idle_timeout, cp.dead_letters_at_once) == (
        ((0, 1),), ((), ()), 2, 2, False)
    assert type(cp.net) is rpc.RpcNetwork and isinstance(cp._dispatcher, Dispatcher)
    assert cp.ids.signature == cp._signature()
    assert flat(c) == {
        "zk/": (None, 0, 5, 5, 0),
        "zk/jobgraphs": (None, 0, 1, 1, 0), "zk/jobgraphs/job": ("job", 0, 0, 0, 0),
        "zk/checkpoints": (None, 0, 1, 1, 0), "zk/checkpoints/job": ((), 0, 0, 0, 0),
        "zk/checkpoint-counter": (None, 0, 1, 1, 0), "zk/checkpoint-counter/job": (1, 0, 0, 0, 0),
        "zk/leader": (None, 0, 1, 1, 0), "zk/leader/latch": (None, 0, 2, 2, 0),
        "zk" + L0: (None, 0, 0, 0, 1), "zk" + L1: (None, 0, 0, 0, 2),
        "zk/job-results": (None, 0, 0, 0, 0),
        "zk.sessions": frozenset({1, 2}), "zk.suspended": frozenset(), "zk.next_session": 3,
        **{f"jm{j}.{f}": v for j in (0, 1) for f, v in (("alive", True), ("token", None), ("rm", None),
                                                       ("jobmaster", None), ("memory", None), ("counter", 1))},
        "jm0.session": 1, "jm0.latch": L0, "jm1.session": 2, "jm1.latch": L1,
        **{f"te{i}.{f}": v for i in (0, 1) for f, v in (
            ("alive", True), ("inc", 0), ("rm_token", None), ("registered", False), ("missed_rm", 0),
            ("job_token", None), ("slots", [None]), ("deployed", {}), ("unreported", set()), ("inactive", {}),
            ("missed_jm", 0))},
        "net": (), "running": None, "quiet": 0, "started": False, "max_checkpoint_id": 0, "terminal": False,
        "next_allocation": 1, "next_attempt": 1, "next_sequence": 1, "storage": (), "tasks": ("CREATED", "CREATED"),
    }
    assert c.events == []
    # jm0's latch node leads in ZooKeeper, but no process was granted leadership yet
    assert cp.leader_token() == 1 and cp.leading_process() is None and cp.running_jobmaster() is None
    assert cp.current_attempt(0) is None
    assert [cp.latch_event(c, j) for j in (0, 1)] == ["grant", None]
    assert cp._dispatcher.recoverable(cp)
    assert not cp.settled() and not cp.needs_tick() and not cp.finished()
    assert cp.trigger_gate(c) == "no leading JobMaster runs the job"
    assert cp.job_done_possible(c) == "no leading JobMaster runs the job"
    assert cp.cleanup_possible() == "no leading JobManager"
    assert [cp.retrieval_pending(i) for i in (0, 1)] == [False, False]  # no leader information yet
    assert cp.live_sessions() == {1, 2, None}


def test_the_slots_per_task_executor_the_network_and_the_dead_letters_follow_the_configuration():
    # two slot sharing groups on one TaskExecutor: two slots
    c = cluster("cp-two-stage", small=attrs.evolve(variant("cp-two-stage").small))
    assert c.cp.groups == ((0, 1, 3), (2,)) and [te.slots for te in c.cp.tes] == [[None, None]]
    # taskmanager.numberOfTaskSlots set: that many, unless the groups need more over all TaskExecutors
    assert [te.slots for te in cluster(slots_per_task_manager=3).cp.tes] == [[None] * 3, [None] * 3]
    assert [te.slots for te in cluster("cp-two-stage", small=attrs.evolve(variant("cp-two-stage").small),
                                       slots_per_task_manager=1).cp.tes] == [[None, None]]
    assert [len(te.slots) for te in cluster("cp-two-stage", small=attrs.evolve(variant("cp-two-stage").small),
                                            slots_per_task_manager=1, task_managers=2).cp.tes] == [1, 1]
    assert [len(te.slots) for te in cluster("cp-two-stage", small=attrs.evolve(variant("cp-two-stage").small),
                                            task_managers=3).cp.tes] == [2, 2, 2]
    cp = cluster(rpc_order="connection", dead_letters="at_once", heartbeat_timeout=3, slot_idle_timeout=5).cp
    assert type(cp.net) is rpc.ConnectionOrderedNetwork
    assert (cp.dead_letters_at_once, cp.timeout, cp.idle_timeout) == (True, 3, 5)
    assert len(cluster(job_managers=3).cp.jms) == 3


def test_region_inputs_name_the_producers_of_the_blocking_partitions_a_region_consumes():
    c = cluster("cp-blocking-regions", small=attrs.evolve(variant("cp-blocking-regions").small))
    assert [t.subtask.name for t in c.tasks] == ["source (1/1)", "map (1/1)", "agg (1/1)"]
    assert c.cp.region_inputs == region_inputs(c.eg) == ((), (0,), (0,))
    assert region_inputs(cluster().eg) == ((), ())  # a pipelined job: one region, no inputs


def test_the_identifier_counters_count_up_from_one():
    cp = cluster().cp
    assert [cp.new_attempt(), cp.new_attempt(), cp.new_sequence_number(), cp.new_allocation()] == [1, 2, 1, 1]
    assert (type(cp.new_attempt()), type(cp.new_sequence_number()), type(cp.new_allocation())) == (
        rpc.ExecutionAttemptID, rpc.SequenceNumber, rpc.AllocationID)
    assert (cp.next_attempt, cp.next_sequence, cp.next_allocation) == (4, 3, 3)
    assert (cp.ids.next_attempt, cp.ids.next_sequence, cp.ids.next_allocation) == (4, 3, 3)


# -- leader election, leader retrieval and the first deployment, RPC by RPC --------------------------

D1 = rpc.DeclareResourceRequirements(1, 1, 1, 1)
REG0 = rpc.RegisterTaskExecutor(0, 0, 1, ((0, None, None),))
REG1 = rpc.RegisterTaskExecutor(1, 0, 1, ((0, None, None),))
ACK1 = rpc.RequirementsAcknowledged(1, 1, 1)
RESP0, RESP1 = rpc.RegistrationResponse(0, 1), rpc.RegistrationResponse(1, 1)
REQ = rpc.RequestSlot(0, 1, 0, 1, 1)
ANS = rpc.SlotRequestAnswer(0, 1, 0, 1, True)
OFFER = rpc.OfferSlots(0, 0, 1, ((0, 1),))
ACCEPT = rpc.OfferSlotsAnswer(0, 1, (1,), ())
SUBMIT = rpc.SubmitTask(0, 1, 1, ((0, 1), (1, 2)))


def test_the_first_leader_recovers_the_job_and_deploys_it_rpc_by_rpc():
    c = cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: cp.apply_latch_event(c, 0), {
        "jm0.token": 1, "zk/leader": (None, 0, 2, 2, 0), "zk/leader/info": ((0, 1), 0, 0, 0, 0),
        "jm0.rm": "rm", "jm0.rm.token": 1, "jm0.rm.registered": {}, "jm0.rm.missed": {}, "jm0.rm.slots": {},
        "jm0.rm.requirements": {}, "jm0.rm.declaration_seq": {},
        "jm0.jobmaster": "jobmaster", "jm0.jobmaster.token": 1, "jm0.jobmaster.groups": ((0, 1),),
        "jm0.jobmaster.pool": {}, "jm0.jobmaster.group_slot": {}, "jm0.jobmaster.deployed": {},
        "jm0.jobmaster.attempts": [1, 2], "jm0.jobmaster.pending": {0, 1}, "jm0.jobmaster.connected": {},
        "jm0.jobmaster.missed": {}, "jm0.jobmaster.unconfirmed": {}, "jm0.jobmaster.status": "RUNNING",
        "jm0.jobmaster.idle": {}, "jm0.jobmaster.needed": frozenset({0}), "jm0.jobmaster.declared": 1,
        "jm0.jobmaster.acked": False,
        "net": (D1,), "next_attempt": 3, "next_sequence": 2, "running": 0, "started": True,
    }, [("cp_effect", 0, "store", ha.LEADER_INFO, 1, 1, True), ("cp_leader", 0, 0, 1),
        ("cp_job_recovered", 0, 1, None, None, False, False)])
    assert cp.leader_token() == 1 and cp.leading_process() is cp.jms[0] and cp.running_jobmaster() is cp.jms[0].jobmaster
    assert [cp.current_attempt(s) for s in (0, 1)] == [1, 2]
    assert [cp.latch_event(c, j) for j in (0, 1)] == [None, None]
    assert [cp.retrieval_pending(i) for i in (0, 1)] == [True, True]
    assert cp.live_sessions() == {1, 2, None}
    assert cp._rm(1) is cp.jms[0].rm and cp._rm(2) is None and cp._jm(1) is cp.jms[0] and cp._jm(2) is None
    w.step(lambda: cp.leader_retrieval(c, 0), {"te0.rm_token": 1, "te0.job_token": 1, "net": (D1, REG0)})
    w.step(lambda: cp.leader_retrieval(c, 1), {"te1.rm_token": 1, "te1.job_token": 1, "net": (D1, REG0, REG1)})
    assert [cp.retrieval_pending(i) for i in (0, 1)] == [False, False]
    w.step(lambda: deliver(c, D1), {"jm0.rm.declaration_seq": {1: 1}, "jm0.rm.requirements": {1: 1},
                                    "net": (REG0, REG1, ACK1)})
    w.step(lambda: deliver(c, REG0), {"jm0.rm.missed": {0: 0}, "jm0.rm.registered": {0: 0},
                                      "jm0.rm.slots": {(0, 0): ("PENDING", 1, 1)}, "next_allocation": 2,
                                      "net": (REG1, ACK1, RESP0, REQ)})
    assert pending_slots(cp.jms[0].rm) == 1
    w.step(lambda: deliver(c, REG1), {"jm0.rm.missed": {0: 0, 1: 0}, "jm0.rm.registered": {0: 0, 1: 0},
                                      "jm0.rm.slots": {(0, 0): ("PENDING", 1, 1), (1, 0): ("FREE", None, None)},
                                      "net": (ACK1, RESP0, REQ, RESP1)})
    w.step(lambda: deliver(c, ACK1), {"jm0.jobmaster.acked": True, "net": (RESP0, REQ, RESP1)})
    w.step(lambda: deliver(c, RESP0), {"te0.registered": True, "net": (REQ, RESP1)})
    w.step(lambda: deliver(c, REQ), {"te0.slots": [(1, 1, False)], "net": (RESP1, ANS, OFFER)})
    w.step(lambda: deliver(c, RESP1), {"te1.registered": True, "net": (ANS, OFFER)})
    w.step(lambda: deliver(c, ANS), {"jm0.rm.slots": {(0, 0): ("ALLOCATED", 1, 1), (1, 0): ("FREE", None, None)},
                                     "net": (OFFER,)})
    assert pending_slots(cp.jms[0].rm) == 0
    # the offer is accepted; at the step's end the JobMaster deploys both subtasks into the slot
    w.step(lambda: deliver(c, OFFER), {
        "jm0.jobmaster.connected": {0: 0}, "jm0.jobmaster.missed": {0: 0}, "jm0.jobmaster.pool": {1: (0, 0, 0)},
        "jm0.jobmaster.deployed": {1: ((0, 1), (1, 2))}, "jm0.jobmaster.group_slot": {0: 1},
        "jm0.jobmaster.pending": set(), "jm0.jobmaster.unconfirmed": {(0, 1): 0, (1, 2): 0},
        "net": (ACCEPT, SUBMIT)}, [("cp_te_connected", 0, 0, 1), ("cp_submit", 0, 0, (), 1),
                                   ("cp_submit", 0, 1, (), 2)])
    w.step(lambda: deliver(c, ACCEPT), {"te0.slots": [(1, 1, True)], "net": (SUBMIT,)},
           [("cp_effect", 0, "te0", "offerSlots", 1, 1, True)])
    assert cp.trigger_gate(c) == "source (1/1) is CREATED (not every task runs)"
    w.step(lambda: deliver(c, SUBMIT), {"te0.deployed": {0: ((0, 1), (1, 2))}, "net": (),
                                        "tasks": ("RUNNING", "RUNNING")},
           [("cp_effect", 0, "te0", "submitTask", 1, 1, True)])
    assert cp.trigger_gate(c) is None
    assert cp.job_done_possible(c) == "the job has not finished (tasks run, or output is not committed)"
    assert cp.cleanup_possible() == "the job has not reached a terminal state"
    assert cp.quiet == 0 and not cp.settled() and cp.needs_tick() and not cp.finished()


# -- heartbeats ----------------------------------------------------------------------------------------

HB_RM0, HB_RM1 = rpc.HeartbeatRequest("rm", 1, 0, 0), rpc.HeartbeatRequest("rm", 1, 1, 0)
HB_JM0 = rpc.HeartbeatRequest("jm", 1, 0, 0, (1,))


def test_a_heartbeat_interval_requests_and_answers_then_settles():
    c = running_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: cp.tick(c), {"jm0.jobmaster.missed": {0: 1}, "jm0.rm.missed": {0: 1, 1: 1},
                                "net": (HB_RM0, HB_RM1, HB_JM0), "quiet": 1, "te0.missed_jm": 1,
                                "te0.missed_rm": 1, "te1.missed_rm": 1})
    ans_rm0 = rpc.HeartbeatResponse("rm", 1, 0, 0, ((0, 1, 1),))
    ans_jm0 = rpc.HeartbeatResponse("jm", 1, 0, 0, (((0, 1), (1, 2)), ()))
    w.step(lambda: deliver(c, HB_RM0), {"te0.missed_rm": 0, "net": (HB_RM1, HB_JM0, ans_rm0)})
    w.step(lambda: deliver(c, HB_JM0), {"te0.missed_jm": 0, "net": (HB_RM1, ans_rm0, ans_jm0)})
    w.step(lambda: deliver(c, ans_rm0), {"jm0.rm.missed": {0: 0, 1: 1}, "net": (HB_RM1, ans_jm0)})
    # the deployment report shows both executions: confirmed
    w.step(lambda: deliver(c, ans_jm0), {"jm0.jobmaster.missed": {0: 0}, "jm0.jobmaster.unconfirmed": {},
                                         "net": (HB_RM1,)},
           [("cp_deployment_report", 0, 0, 1, ((0, 1), (1, 2)))])
    w.step(lambda: cp.deliver(c, 0), {"te1.missed_rm": 0, "net": (rpc.HeartbeatResponse("rm", 1, 1, 0, ((0, None, None),)),)})
    w.step(lambda: cp.deliver(c, 0), {"jm0.rm.missed": {0: 0, 1: 0}, "net": ()})
    assert not cp.settled() and cp.needs_tick()
    for quiet in (2, 3):
        cp.tick(c)
        while cp.net.in_flight:
            cp.deliver(c, 0)
            cp.after_step(c)
        assert cp.quiet == quiet
    assert not cp.settled() and cp.needs_tick()
    cp.tick(c)
    cp.net.in_flight.clear()
    assert cp.quiet == 4 and cp.settled() and not cp.needs_tick()
    cp.tick(c)
    assert cp.quiet == 5 and not cp.settled()  # RPCs in flight
    cp.net.in_flight.clear()
    cp.tick(c)
    cp.net.in_flight.clear()
    assert cp.quiet == 5 and cp.settled()  # saturates at heartbeat timeout + 3


def test_silent_task_executors_are_lost_after_the_heartbeat_timeout_on_every_side():
    """te1 (no slot) crashes; nothing is delivered: after heartbeat_timeout + 1 intervals the
    JobMaster disconnects te0 (freeSlot, its subtasks fail over with new attempts), the
    ResourceManager unregisters both, te0 registers again and, its job leader silent, makes
    its slot inactive and offers it again."""
    c = running_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: cp.crash_task_executor(c, 1), {"te1.alive": False, "te1.job_token": None,
                                                  "te1.registered": False, "te1.rm_token": None})
    w.step(lambda: cp.tick(c), {"jm0.jobmaster.missed": {0: 1}, "jm0.rm.missed": {0: 1, 1: 1},
                                "net": (HB_RM0, HB_RM1, HB_JM0), "quiet": 1, "te0.missed_jm": 1, "te0.missed_rm": 1})
    w.step(lambda: cp.tick(c), {"jm0.jobmaster.missed": {0: 2}, "jm0.rm.missed": {0: 2, 1: 2},
                                "net": (HB_RM0, HB_RM1, HB_JM0) * 2, "quiet": 2, "te0.missed_jm": 2,
                                "te0.missed_rm": 2})
    w.step(lambda: cp.tick(c), {
        "jm0.jobmaster.attempts": [3, 4], "jm0.jobmaster.connected": {}, "jm0.jobmaster.deployed": {},
        "jm0.jobmaster.group_slot": {}, "jm0.jobmaster.missed": {}, "jm0.jobmaster.pending": {0, 1},
        "jm0.jobmaster.pool": {}, "jm0.jobmaster.unconfirmed": {},
        "jm0.rm.missed": {}, "jm0.rm.registered": {}, "jm0.rm.slots": {},
        "net": (HB_RM0, HB_RM1, HB_JM0) * 2 + (rpc.FreeSlot(0, 1, 1), rpc.RegisterTaskExecutor(0, 0, 1, ((0, 1, 1),)),
                                               rpc.OfferSlots(0, 0, 1, ((0, 1),))),
        "next_attempt": 5, "quiet": 3, "tasks": ("CREATED", "CREATED"),
        "te0.deployed": {}, "te0.inactive": {1: 0}, "te0.missed_jm": 0, "te0.missed_rm": 3, "te0.registered": False,
        "te0.slots": [(1, 1, False)],
    }, [("cp_tm_timeout", 0, 0, 0, False), ("cp_job_leader_timeout", 0, 0, 1)], kinds=["failover", "restored"])
