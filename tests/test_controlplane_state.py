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


def as_is(value):
    """``value()``, or what made it fail (a field of the wrong type), for the comparison to show."""
    try:
        return value()
    except Exception as e:
        return ("<cannot be read>", repr(e))


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
                d[f"jm{p.index}.rm"] = None if v is None else "rm" if type(v) is ResourceManager else repr(v)
                for g in ResourceManager.__slots__ if type(v) is ResourceManager else ():
                    d[f"jm{p.index}.rm.{g}"] = copy.deepcopy(getattr(v, g))
            elif f == "jobmaster":
                d[f"jm{p.index}.jobmaster"] = None if v is None else "jobmaster" if type(v) is JobMaster else repr(v)
                for g in JobMaster.__slots__ if type(v) is JobMaster else ():
                    d[f"jm{p.index}.jobmaster.{g}"] = copy.deepcopy(getattr(v, g))
            elif f == "memory":
                d[f"jm{p.index}.memory"] = None if v is None else getattr(v, "checkpoint_id", repr(v))
            elif f != "index":
                d[f"jm{p.index}.{f}"] = v
    for te in cp.tes:
        for f in TaskExecutor.__slots__:
            if f != "index":
                d[f"te{te.index}.{f}"] = copy.deepcopy(getattr(te, f))
    d["net"] = as_is(lambda: tuple(cp.net.in_flight))
    for f in ("running", "quiet", "started", "max_checkpoint_id", "terminal", "next_allocation", "next_attempt",
              "next_sequence"):
        d[f] = getattr(cp, f)
    d["storage"] = as_is(lambda: tuple(sorted(cp.storage)))
    d["tasks"] = tuple(t.status for t in c.tasks)
    return d


def kind(event):
    """An event's kind (its first field); anything that is not an event is its own kind."""
    return event[0] if isinstance(event, tuple) and event else event


def data_plane(event) -> bool:
    """A data-plane event (``Watch.step`` compares those by kind only): any but ``cp_*``."""
    return isinstance(kind(event), str) and not kind(event).startswith("cp_")


class Watch:
    """The state before a call; ``step`` makes the call and asserts what changed."""

    def __init__(self, c):
        self.c = c
        self.before = flat(c)
        self.n_events = len(c.events)

    def changes(self) -> tuple[dict, list]:
        now = flat(self.c)
        # the fields of a ResourceManager or JobMaster that is gone are not listed: its key is None
        out = {k: now.get(k, GONE) for k in set(now) | set(self.before)
               if self.before.get(k, GONE) != now.get(k, GONE)
               and not (k not in now and now.get(k.rsplit(".", 1)[0], GONE) is None)}
        ev = [e for e in self.c.events[self.n_events:]]
        self.before, self.n_events = now, len(self.c.events)
        return out, ev

    def step(self, call, changes: dict, events=(), kinds=None):
        """``call()``, then exactly ``changes`` (key -> new value) and the appended control-plane
        events ``events`` (``cp_*``; the data plane's own events by kind, ``kinds``, when given)."""
        result = call()
        got, ev = self.changes()
        assert got == changes
        assert [e for e in ev if not data_plane(e)] == list(events)
        if kinds is not None:
            assert [kind(e) for e in ev if data_plane(e)] == list(kinds)
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


# -- HA writes and checkpoints -------------------------------------------------------------------------


def test_ha_writes_are_fenced_by_the_leading_latch_node_and_need_the_connection():
    c = running_cluster()
    cp = c.cp
    p0, p1 = cp.jms
    w = Watch(c)
    # the leader creates, overwrites and deletes a node
    assert w.step(lambda: cp.ha_write(c, p0, "/x", "a"), {"zk/": (None, 0, 6, 6, 0), "zk/x": ("a", 0, 0, 0, 0)},
                  [("cp_effect", 0, "store", "/x", 1, 1, True)]) is True
    assert w.step(lambda: cp.ha_write(c, p0, "/x", "b"), {"zk/x": ("b", 1, 0, 0, 0)},
                  [("cp_effect", 0, "store", "/x", 1, 1, True)]) is True
    assert w.step(lambda: cp.ha_write(c, p0, "/x", None, delete=True), {"zk/": (None, 0, 7, 6, 0), "zk/x": GONE},
                  [("cp_effect", 0, "store", "/x", 1, 1, True)]) is True
    assert w.step(lambda: cp.ha_write(c, p0, "/x", None, delete=True), {},
                  [("cp_effect", 0, "store", "/x", 1, 1, True)]) is True  # nothing to delete
    # a process whose latch node does not lead is refused (its token is its belief: None)
    assert w.step(lambda: cp.ha_write(c, p1, "/x", "c"), {},
                  [("cp_effect", 0, "store", "/x", None, 1, False)]) is False
    # the leader's connection SUSPENDED: its ZooKeeper writes fail, the JobResultStore's does not
    cp.store.suspend(p0.session)
    w.changes()
    assert w.step(lambda: cp.ha_write(c, p0, "/x", "d"), {}, [("cp_effect", 0, "store", "/x", 1, 1, False)]) is False
    assert w.step(lambda: cp.ha_write(c, p0, ha.JOB_RESULT, "SUCCEEDED"),
                  {"zk/job-results": (None, 0, 1, 1, 0), "zk" + ha.JOB_RESULT: ("SUCCEEDED", 0, 0, 0, 0)},
                  [("cp_effect", 0, "store", ha.JOB_RESULT, 1, 1, True)]) is True
    # a leader whose session expired no longer leads, though its latch path is known
    cp.store.reconnect(p0.session)
    cp.store.sessions.discard(p0.session)
    w.changes()
    assert w.step(lambda: cp.ha_write(c, p0, "/x", "e"), {}, [("cp_effect", 0, "store", "/x", 1, 1, False)]) is False
    p1.latch = None
    assert cp.ha_write(c, p1, "/x", "f") is False


def test_checkpoint_ids_and_completed_checkpoints_go_to_the_store():
    from model.checkpointcoordinator import CompletedCheckpoint

    c = running_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: cp.checkpoint_id_taken(c, 1), {"max_checkpoint_id": 1, "jm0.counter": 2,
                                                  "zk/checkpoint-counter/job": (2, 1, 0, 0, 0)},
           [("cp_checkpoint_id", 0, 1, 0)])
    w.step(lambda: cp.checkpoint_id_taken(c, 2), {"max_checkpoint_id": 2, "jm0.counter": 3,
                                                  "zk/checkpoint-counter/job": (3, 2, 0, 0, 0)},
           [("cp_checkpoint_id", 0, 2, 1)])
    # an id below the maximum (a counter in memory handing ids out again) keeps the maximum
    w.step(lambda: cp.checkpoint_id_taken(c, 1), {"jm0.counter": 2, "zk/checkpoint-counter/job": (2, 3, 0, 0, 0)},
           [("cp_checkpoint_id", 0, 1, 2)])
    cp1 = CompletedCheckpoint(1, 0, task_states={})
    c.coordinator.store.add_checkpoint_and_subsume_oldest_one(cp1)
    assert w.step(lambda: cp.checkpoint_completed(c, cp1), {"storage": (1,), "jm0.memory": 1,
                                                            "zk/checkpoints/job": ((1,), 1, 0, 0, 0)},
                  [("cp_effect", 0, "store", ha.CHECKPOINTS, 1, 1, True)]) is True
    # the pointer's write refused (the connection SUSPENDED): finalization fails, memory unchanged
    cp2 = CompletedCheckpoint(2, 0, task_states={})
    cp.store.suspend(cp.jms[0].session)
    w.changes()
    assert w.step(lambda: cp.checkpoint_completed(c, cp2), {"storage": (1, 2)},
                  [("cp_effect", 0, "store", ha.CHECKPOINTS, 1, 1, False), ("cp_finalize_failed", 0, 2)]) is False
    # no JobMaster runs the job: the metadata is written, no pointer
    cp.running = None
    w.changes()
    assert w.step(lambda: cp.checkpoint_completed(c, CompletedCheckpoint(3, 0, task_states={})),
                  {"storage": (1, 2, 3)}) is False


# -- JobManager failover -----------------------------------------------------------------------------


def new_rm(j: int, token: int) -> dict:
    """The fields of process ``j``'s new ResourceManager of leader session ``token``."""
    return {f"jm{j}.rm": "rm", f"jm{j}.rm.token": token, f"jm{j}.rm.registered": {}, f"jm{j}.rm.missed": {},
            f"jm{j}.rm.slots": {}, f"jm{j}.rm.requirements": {}, f"jm{j}.rm.declaration_seq": {}}


def new_jobmaster(j: int, token: int, attempts: list, declared: int) -> dict:
    """The fields of process ``j``'s new JobMaster (the job's two subtasks waiting for a slot)."""
    k = f"jm{j}.jobmaster"
    return {k: "jobmaster", f"{k}.token": token, f"{k}.groups": ((0, 1),), f"{k}.pool": {}, f"{k}.group_slot": {},
            f"{k}.deployed": {}, f"{k}.attempts": attempts, f"{k}.pending": {0, 1}, f"{k}.connected": {},
            f"{k}.missed": {}, f"{k}.unconfirmed": {}, f"{k}.status": "RUNNING", f"{k}.idle": {},
            f"{k}.needed": frozenset({0}), f"{k}.declared": declared, f"{k}.acked": False}


def test_a_crashed_leader_is_replaced_once_its_session_expired():
    from model.checkpointcoordinator import CompletedCheckpoint

    c = running_cluster()
    cp = c.cp
    w = Watch(c)
    cp.quiet = 3
    cp.jms[0].counter, cp.jms[0].memory = 4, CompletedCheckpoint(3, 0, task_states={})
    w.changes()
    # the process's memory is lost with it; its latch node lives until ZooKeeper expires the session
    w.step(lambda: cp.crash_job_manager(c, 0), {"jm0.alive": False, "jm0.jobmaster": None, "jm0.rm": None,
                                                "jm0.token": None, "jm0.memory": None, "jm0.counter": 1,
                                                "quiet": 0, "running": None},
           [("cp_jobmaster_lost", 0, False)], kinds=[])
    assert [cp.latch_event(c, j) for j in (0, 1)] == [None, None]  # jm0's latch node still leads
    assert cp.leading_process() is None and cp.running_jobmaster() is None and not cp.needs_tick()
    assert cp.trigger_gate(c) == "no leading JobMaster runs the job"
    assert cp.live_sessions() == {2, None}
    cp.quiet = 3
    w.changes()
    w.step(lambda: cp.expire_session(c, 0), {"zk.sessions": frozenset({2}), "zk/leader/latch": (None, 0, 3, 2, 0),
                                             "zk" + L0: GONE})  # a dead process: no fault
    assert [cp.latch_event(c, j) for j in (0, 1)] == [None, "grant"]
    # the new leader restarts the whole job (new attempts) and declares its requirement
    w.step(lambda: cp.apply_latch_event(c, 1), {
        **new_rm(1, 2), **new_jobmaster(1, 2, [5, 6], 2), "jm1.token": 2,
        "net": (rpc.DeclareResourceRequirements(2, 2, 1, 2),), "next_attempt": 7, "next_sequence": 3, "running": 1,
        "tasks": ("CREATED", "CREATED"), "zk/leader/info": ((1, 2), 1, 0, 0, 0), "quiet": 0,
    }, [("cp_effect", 0, "store", ha.LEADER_INFO, 2, 2, True), ("cp_leader", 0, 1, 2),
        ("cp_job_recovered", 0, 2, None, None, False, False)], kinds=["job_manager_failover", "restored"])
    assert [cp.retrieval_pending(i) for i in (0, 1)] == [True, True]  # both know the old leader
    # te0 moves to the new leader: its slot of the old JobMaster becomes inactive, offered anew
    w.step(lambda: cp.leader_retrieval(c, 0), {
        "net": (rpc.DeclareResourceRequirements(2, 2, 1, 2), rpc.RegisterTaskExecutor(0, 0, 2, ((0, 1, 1),)),
                rpc.OfferSlots(0, 0, 2, ((0, 1),))),
        "te0.deployed": {}, "te0.job_token": 2, "te0.registered": False, "te0.rm_token": 2,
        "te0.slots": [(1, 1, False)]})
    w.step(lambda: cp.start_job_manager(c, 0), {"jm0.alive": True, "jm0.latch": L2, "jm0.session": 3,
                                                "zk.next_session": 4, "zk.sessions": frozenset({2, 3}),
                                                "zk/leader/latch": (None, 0, 4, 3, 0), "zk" + L2: (None, 0, 0, 0, 3)})
    assert [cp.latch_event(c, j) for j in (0, 1)] == [None, None]
    assert cp.live_sessions() == {2, 3, None}
    cp.quiet = 3
    w.changes()
    w.step(lambda: cp.expire_session(c, 0), {"quiet": 0, "zk.sessions": frozenset({2}), "zk" + L2: GONE,
                                             "zk/leader/latch": (None, 0, 5, 3, 0)})  # a living process: a fault
    assert cp.latch_event(c, 0) == "rejoin"


def test_a_suspended_connection_revokes_leadership_and_the_reconnected_latch_queues_again():
    c = running_cluster()
    cp = c.cp
    w = Watch(c)
    cp.quiet = 3
    w.changes()
    w.step(lambda: cp.suspend_connection(c, 0), {"quiet": 0, "zk.suspended": frozenset({1})})
    assert cp.connection_suspended(0) and not cp.connection_suspended(1)
    assert not cp.may_lose_session(c, 0)  # leadership is revoked before the session can expire
    assert [cp.latch_event(c, j) for j in (0, 1)] == ["revoke", None]
    # revoked: the JobMaster gives its slot back and withdraws its requirement, then stops
    w.step(lambda: cp.apply_latch_event(c, 0), {
        "jm0.jobmaster": None, "jm0.rm": None, "jm0.token": None, "running": None, "next_sequence": 3,
        "net": (rpc.FreeSlot(0, 1, 1), rpc.DeclareResourceRequirements(1, 1, 0, 2))},
        [("cp_revoked", 0, 0, 1), ("cp_jobmaster_lost", 0, False)], kinds=[])
    assert cp.may_lose_session(c, 0) and cp.latch_event(c, 0) is None  # nothing granted while SUSPENDED
    # RECONNECTED: the LeaderLatch resets, its new node queues behind jm1's
    w.step(lambda: cp.reconnect(c, 0), {"jm0.latch": L2, "zk.suspended": frozenset(),
                                        "zk/leader/latch": (None, 0, 4, 3, 0), "zk" + L0: GONE,
                                        "zk" + L2: (None, 0, 0, 0, 1)})
    assert [cp.latch_event(c, j) for j in (0, 1)] == [None, "grant"]
    # a process without a latch node (its session gone) rejoins without a node to delete
    cp.jms[0].latch = None
    cp.reconnect(c, 0)
    assert cp.jms[0].latch is None


def test_with_tolerate_suspended_connections_only_a_lost_session_revokes():
    c = cluster(zookeeper_tolerate_suspended_connections=True)
    cp = c.cp
    cp.apply_latch_event(c, 0)
    w = Watch(c)
    w.step(lambda: cp.suspend_connection(c, 0), {"zk.suspended": frozenset({1})})
    assert cp.may_lose_session(c, 0) and cp.latch_event(c, 0) is None
    w.step(lambda: cp.reconnect(c, 0), {"zk.suspended": frozenset()})  # the latch node stays
    cp.suspend_connection(c, 0)
    w.changes()
    w.step(lambda: cp.expire_session(c, 0), {"zk.sessions": frozenset({2}), "zk.suspended": frozenset(),
                                             "zk/leader/latch": (None, 0, 3, 2, 0), "zk" + L0: GONE})
    assert [cp.latch_event(c, j) for j in (0, 1)] == ["revoke", "grant"]
    w.step(lambda: cp.apply_latch_event(c, 0), {
        "jm0.jobmaster": None, "jm0.rm": None, "jm0.token": None, "running": None, "next_sequence": 3,
        "net": (rpc.DeclareResourceRequirements(1, 1, 1, 1), rpc.DeclareResourceRequirements(1, 1, 0, 2))},
        [("cp_revoked", 0, 0, 1), ("cp_jobmaster_lost", 0, False)], kinds=[])
    assert cp.latch_event(c, 0) == "rejoin"
    w.step(lambda: cp.apply_latch_event(c, 0), {"jm0.latch": L2, "jm0.session": 3, "zk.next_session": 4,
                                                "zk.sessions": frozenset({2, 3}), "zk/leader/latch": (None, 0, 4, 3, 0),
                                                "zk" + L2: (None, 0, 0, 0, 3)})
    assert cp.latch_event(c, 0) is None


# -- delivering RPCs: fencing, reports, reconciliation -------------------------------------------------


def confirmed_cluster():
    """``running_cluster`` after one heartbeat interval delivered: the deployment confirmed."""
    c = running_cluster()
    cp = c.cp
    cp.tick(c)
    while cp.net.in_flight:
        cp.deliver(c, 0)
        cp.after_step(c)
    assert cp.jms[0].jobmaster.unconfirmed == {} and cp.quiet == 1
    return c


def send_and_deliver(c, m):
    c.cp.net.send(m)
    deliver(c, m)


def test_rpcs_to_a_gone_leader_session_or_incarnation_are_dropped():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    for m in (rpc.RegisterTaskExecutor(1, 0, 5, ((0, None, None),)), rpc.DeclareResourceRequirements(5, 5, 1, 9),
              rpc.SlotRequestAnswer(1, 5, 0, 9, True), rpc.HeartbeatResponse("rm", 5, 1, 0, ((0, None, None),)),
              rpc.OfferSlots(1, 0, 5, ((0, 9),)), rpc.RequirementsAcknowledged(5, 5, 1),
              rpc.HeartbeatResponse("jm", 5, 0, 0, ((), ())),
              rpc.HeartbeatResponse("jm", 1, 0, 1, ((), ())),  # an older incarnation's answer
              rpc.HeartbeatResponse("jm", 1, 1, 0, ((), ())),  # not a heartbeat target
              rpc.RegistrationResponse(1, 5), rpc.HeartbeatRequest("rm", 1, 0, 1),
              rpc.HeartbeatRequest("rm", 5, 0, 0), rpc.HeartbeatRequest("jm", 5, 0, 0, (1,)),
              rpc.HeartbeatRequest("jm", 1, 0, 1, (1,))):
        w.step(lambda: send_and_deliver(c, m), {})
    cp.tes[1].alive = False
    cp.tes[1].registered = False
    cp.after_step(c)
    w.changes()
    for m in (rpc.RequestSlot(1, 1, 0, 9, 1), rpc.RegistrationResponse(1, 1)):
        w.step(lambda: send_and_deliver(c, m), {})  # a dead TaskExecutor takes nothing


def test_a_duplicate_registration_and_a_reconciled_pending_slot_are_recorded():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: send_and_deliver(c, REG1), {"net": (RESP1,)}, [("cp_duplicate_registration", 0, 1)])
    cp.net.in_flight.clear()
    cp.jms[0].rm.slots[(1, 0)] = ("PENDING", 7, 1)
    w.changes()
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("rm", 1, 1, 0, ((0, None, None),))),
           {"jm0.rm.slots": {(0, 0): ("ALLOCATED", 1, 1), (1, 0): ("FREE", None, None)}},
           [("cp_pending_slot_reconciled", 0, (1, 0))])


def test_a_deployment_report_cancels_unknown_executions_and_fails_missing_ones():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    cancel = rpc.CancelTask(0, 1, ((0, 99),))
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, (((0, 1), (0, 99), (1, 2)), ()))),
           {"net": (cancel,)}, [("cp_deployment_report", 0, 0, 1, ((0, 1), (0, 99), (1, 2)))])
    # a confirmed execution missing from the report failed at once: the region restarts, and is
    # deployed again into the same slot at the step's end
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, (((0, 1),), ()))), {
        "jm0.jobmaster.attempts": [3, 4], "jm0.jobmaster.deployed": {1: ((0, 3), (1, 4))},
        "jm0.jobmaster.unconfirmed": {(0, 3): 0, (1, 4): 0},
        "net": (cancel, rpc.CancelTask(0, 1, ((0, 1), (1, 2))), rpc.SubmitTask(0, 1, 1, ((0, 3), (1, 4)))),
        "next_attempt": 5, "quiet": 0, "tasks": ("CREATED", "CREATED")},
        [("cp_deployment_report", 0, 0, 1, ((0, 1),)), ("cp_missing_deployment", 0, 0, (1,)),
         ("cp_submit", 0, 0, (), 3), ("cp_submit", 0, 1, (), 4)], kinds=["failover", "restored"])
    # a submission not shown yet is pending: missing only after heartbeat_timeout reports without it
    cp.net.in_flight.clear()
    w.changes()
    for n in (1, 2):
        w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, ((), ()))),
               {"jm0.jobmaster.unconfirmed": {(0, 3): n, (1, 4): n}}, [("cp_deployment_report", 0, 0, 1, ())])
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, (((1, 4),), ()))),
           {"jm0.jobmaster.attempts": [5, 6], "jm0.jobmaster.deployed": {1: ((0, 5), (1, 6))},
            "jm0.jobmaster.unconfirmed": {(0, 5): 0, (1, 6): 0}, "next_attempt": 7,
            "net": (rpc.CancelTask(0, 1, ((0, 3), (1, 4))), rpc.SubmitTask(0, 1, 1, ((0, 5), (1, 6))))},
           [("cp_deployment_report", 0, 0, 1, ((1, 4),)), ("cp_missing_deployment", 0, 0, (0,)),
            ("cp_submit", 0, 0, (), 5), ("cp_submit", 0, 1, (), 6)], kinds=["failover", "restored"])


def test_a_report_of_a_slot_the_task_executor_does_not_hold_fails_it():
    c = confirmed_cluster()
    cp = c.cp
    cp.jms[0].jobmaster.acked = False
    w = Watch(c)
    # the slot fails (its subtasks restart), the requirement is declared again, and the
    # executions the report shows in a slot the JobMaster no longer has are cancelled
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, (((0, 1), (1, 2)), (1,)))), {
        "jm0.jobmaster.attempts": [3, 4], "jm0.jobmaster.declared": 2, "jm0.jobmaster.deployed": {},
        "jm0.jobmaster.group_slot": {}, "jm0.jobmaster.pending": {0, 1}, "jm0.jobmaster.pool": {},
        "net": (rpc.DeclareResourceRequirements(1, 1, 1, 2), rpc.CancelTask(0, 1, ((0, 1), (1, 2)))),
        "next_attempt": 5, "next_sequence": 3, "quiet": 0, "tasks": ("CREATED", "CREATED")},
        [("cp_deployment_report", 0, 0, 1, ((0, 1), (1, 2))), ("cp_slot_failed", 0, 0, (1,))],
        kinds=["failover", "restored"])
    # acknowledged, an empty failure list declares nothing
    cp.jms[0].jobmaster.acked = True
    cp.net.in_flight.clear()
    w.changes()
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, ((), ()))), {},
           [("cp_deployment_report", 0, 0, 1, ())])


def test_a_slot_offered_again_under_a_new_allocation_replaces_the_old_one():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: send_and_deliver(c, rpc.OfferSlots(0, 0, 1, ((0, 5),))), {
        "jm0.jobmaster.attempts": [3, 4], "jm0.jobmaster.deployed": {5: ((0, 3), (1, 4))},
        "jm0.jobmaster.group_slot": {0: 5}, "jm0.jobmaster.pool": {5: (0, 0, 0)},
        "jm0.jobmaster.unconfirmed": {(0, 3): 0, (1, 4): 0},
        "net": (rpc.OfferSlotsAnswer(0, 1, (5,), ()), rpc.SubmitTask(0, 1, 5, ((0, 3), (1, 4)))),
        "next_attempt": 5, "quiet": 0, "tasks": ("CREATED", "CREATED")},
        [("cp_slot_replaced", 0, 0, (0, 1)), ("cp_submit", 0, 0, (), 3), ("cp_submit", 0, 1, (), 4)],
        kinds=["failover", "restored"])
    # not the running JobMaster's: the pool changes, the data plane does not
    cp.running = None
    cp.net.in_flight.clear()
    w.changes()
    w.step(lambda: send_and_deliver(c, rpc.OfferSlots(0, 0, 1, ((0, 6),))), {
        "jm0.jobmaster.deployed": {}, "jm0.jobmaster.group_slot": {}, "jm0.jobmaster.pool": {6: (0, 0, 0)},
        "net": (rpc.OfferSlotsAnswer(0, 1, (6,), ()),)},
        [("cp_slot_replaced", 0, 0, (0, 1))], kinds=[])


def test_an_offer_to_a_deposed_leader_is_recorded():
    c = confirmed_cluster()
    cp = c.cp
    cp.store.expire_session(cp.jms[0].session)
    w = Watch(c)
    w.step(lambda: send_and_deliver(c, rpc.OfferSlots(1, 1, 1, ((0, 5),))), {
        "jm0.jobmaster.connected": {0: 0, 1: 1}, "jm0.jobmaster.missed": {0: 0, 1: 0},
        "net": (rpc.OfferSlotsAnswer(1, 1, (), (5,)),)}, [("cp_offer_to_deposed", 0, 1, 0), ("cp_te_connected", 0, 1, 1)])
    # a TaskExecutor connected with that incarnation already: no new connection
    w.step(lambda: send_and_deliver(c, rpc.OfferSlots(1, 1, 1, ((0, 5),))),
           {"net": (rpc.OfferSlotsAnswer(1, 1, (), (5,)),) * 2}, [("cp_offer_to_deposed", 0, 1, 0)])


def test_free_slot_cancel_task_and_a_refused_submission_on_the_task_executor():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: send_and_deliver(c, rpc.SubmitTask(1, 1, 5, ((0, 7),))), {},
           [("cp_effect", 0, "te1", "submitTask", 1, 1, False)])  # no slot of that allocation
    w.step(lambda: send_and_deliver(c, rpc.SubmitTask(0, 9, 1, ((0, 7),))), {},
           [("cp_effect", 0, "te0", "submitTask", 9, 1, False)])  # not the job leader's
    w.step(lambda: send_and_deliver(c, rpc.FreeSlot(0, 1, 9)), {})  # no such allocation
    w.step(lambda: send_and_deliver(c, rpc.FreeSlot(0, 9, 1)), {})  # not the owner's
    w.step(lambda: send_and_deliver(c, rpc.CancelTask(0, 9, ((0, 1),))), {})
    w.step(lambda: send_and_deliver(c, rpc.CancelTask(0, 1, ((0, 7),))), {})  # not running: nothing dies
    w.step(lambda: send_and_deliver(c, rpc.CancelTask(0, 1, ((0, 1),))),
           {"quiet": 0, "tasks": ("CANCELED", "RUNNING"), "te0.deployed": {0: ((1, 2),)}})
    w.step(lambda: send_and_deliver(c, rpc.FreeSlot(0, 1, 1)),
           {"tasks": ("CANCELED", "CANCELED"), "te0.deployed": {}, "te0.slots": [None]},
           [("cp_effect", 0, "te0", "freeSlot", 1, 1, True)])
    # a submission into an allocated slot of the job leader: the current attempt runs
    c.tasks[0].status = "CREATED"
    cp.tes[0].slots[0] = (1, 1, False)
    w.changes()
    w.step(lambda: send_and_deliver(c, rpc.SubmitTask(0, 1, 1, ((0, 1), (1, 7)))),
           {"tasks": ("RUNNING", "CANCELED"), "te0.deployed": {0: ((0, 1), (1, 7))}, "te0.slots": [(1, 1, True)]},
           [("cp_effect", 0, "te0", "submitTask", 1, 1, True)])
    # replacing an execution of the slot: the old one dies (the current attempt of subtask 0)
    c.tasks[1].status = "CREATED"
    w.changes()
    w.step(lambda: send_and_deliver(c, rpc.SubmitTask(0, 1, 1, ((0, 8), (1, 2)))),
           {"tasks": ("CANCELED", "RUNNING"), "te0.deployed": {0: ((0, 8), (1, 2))}},
           [("cp_effect", 0, "te0", "submitTask", 1, 1, True)])


# -- the data plane's hooks ----------------------------------------------------------------------------


def test_a_restart_cancels_the_old_executions_and_waits_for_deployment_with_new_attempts():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: cp.restarted(c, {1}), {
        "jm0.jobmaster.attempts": [1, 3], "jm0.jobmaster.deployed": {1: ((0, 1),)}, "jm0.jobmaster.pending": {1},
        "net": (rpc.CancelTask(0, 1, ((1, 2),)),), "next_attempt": 4, "tasks": ("RUNNING", "CREATED")})
    # subtask 1's new attempt was never deployed: only subtask 0's execution is cancelled
    w.step(lambda: cp.restarted(c, {0, 1}), {
        "jm0.jobmaster.attempts": [4, 5], "jm0.jobmaster.deployed": {}, "jm0.jobmaster.pending": {0, 1},
        "net": (rpc.CancelTask(0, 1, ((1, 2),)), rpc.CancelTask(0, 1, ((0, 1),))), "next_attempt": 6,
        "tasks": ("CREATED", "CREATED")})
    # an execution in an allocation the pool no longer holds is not cancelled
    cp.net.in_flight.clear()
    jm = cp.jms[0].jobmaster
    jm.deployed = {1: ((0, 4),), 9: ((1, 5),)}
    w.changes()
    w.step(lambda: cp.restarted(c, {0, 1}), {
        "jm0.jobmaster.attempts": [6, 7], "jm0.jobmaster.deployed": {}, "net": (rpc.CancelTask(0, 1, ((0, 4),)),),
        "next_attempt": 8})
    # the cancellation goes to the TaskExecutor that holds the allocation (not to its incarnation)
    cp.net.in_flight.clear()
    jm.pool = {1: (1, 5, 0)}
    jm.deployed = {1: ((0, 6),)}
    w.changes()
    w.step(lambda: cp.restarted(c, {0}), {
        "jm0.jobmaster.attempts": [8, 7], "jm0.jobmaster.deployed": {}, "net": (rpc.CancelTask(1, 1, ((0, 6),)),),
        "next_attempt": 9})
    # no JobMaster runs the job: the subtasks wait all the same
    cp.running = None
    c.tasks[0].status = "RUNNING"
    w.changes()
    w.step(lambda: cp.restarted(c, {0}), {"tasks": ("CREATED", "CREATED")})


def test_executions_die_or_deploy_only_as_the_current_attempt():
    c = confirmed_cluster()
    cp = c.cp
    w = Watch(c)
    w.step(lambda: cp.executions_died(c, {(0, 7), (1, 2)}), {"tasks": ("RUNNING", "CANCELED")})
    w.step(lambda: cp.executions_died(c, {(1, 2)}), {})  # only a running task is cancelled
    c.tasks[1].status = "CREATED"
    w.changes()
    w.step(lambda: cp.deployed(c, {(1, 7)}), {})  # not the current attempt
    w.step(lambda: cp.deployed(c, {(1, 2), (0, 1)}), {"tasks": ("RUNNING", "RUNNING")})
    c.tasks[1].status = "FINISHED"
    w.changes()
    w.step(lambda: cp.deployed(c, {(1, 2)}), {})  # only a task waiting for deployment runs
    cp.running = None
    c.tasks[1].status = "CREATED"
    w.changes()
    w.step(lambda: cp.deployed(c, {(1, 2)}), {})  # no running JobMaster: no current attempt
    w.step(lambda: cp.executions_died(c, {(0, 1)}), {})


def test_a_finished_execution_leaves_the_slot_tables_and_the_deployment_tracking():
    c = running_cluster()
    cp = c.cp
    c.tasks[0].status = "FINISHED"
    w = Watch(c)
    w.step(lambda: cp.forget_finished(c), {"jm0.jobmaster.deployed": {1: ((1, 2),)},
                                           "jm0.jobmaster.unconfirmed": {(1, 2): 0}, "te0.deployed": {0: ((1, 2),)}})
    w.step(lambda: cp.forget_finished(c), {})
    c.tasks[1].status = "FINISHED"
    w.changes()
    w.step(lambda: cp.forget_finished(c), {"jm0.jobmaster.deployed": {}, "jm0.jobmaster.unconfirmed": {},
                                           "te0.deployed": {}})
    # an older attempt of a finished subtask is not the finished execution
    cp.tes[1].deployed = {0: ((0, 9),)}
    w.changes()
    w.step(lambda: cp.forget_finished(c), {})
    cp.running = None
    cp.tes[1].deployed = {0: ((0, 1),)}
    w.changes()
    w.step(lambda: cp.forget_finished(c), {})  # no running JobMaster: nothing is known finished


# -- scheduling: pipelined regions and idle slots -------------------------------------------------------


def bring_up(c):
    """Leader jm0, every TaskExecutor retrieved it, every RPC delivered in order."""
    cp = c.cp
    cp.apply_latch_event(c, 0)
    for i in range(len(cp.tes)):
        cp.leader_retrieval(c, i)
    while cp.net.in_flight:
        cp.deliver(c, 0)
        cp.after_step(c)


def blocking_cluster():
    """source -> map, agg behind a blocking exchange (regions {0}, {1, 2}), one slot sharing
    group, one TaskExecutor of one slot."""
    c = cluster("cp-blocking-regions", small=attrs.evolve(variant("cp-blocking-regions").small))
    bring_up(c)
    return c


def test_a_region_behind_blocking_partitions_is_deployed_once_its_producers_finished():
    c = blocking_cluster()
    cp = c.cp
    assert (cp.timeout, cp.idle_timeout) == (1, 2)
    jm = cp.jms[0].jobmaster
    assert (jm.deployed, jm.pending, [t.status for t in c.tasks]) == ({1: ((0, 1),)}, {1, 2},
                                                                       ["RUNNING", "CREATED", "CREATED"])
    assert cp.schedulable(c) == frozenset({0})
    c.tasks[0].status = "FINISHED"
    assert cp.schedulable(c) == frozenset({0, 1, 2})
    w = Watch(c)
    # the producer finished: it leaves the tables, its consumers are submitted into the group's slot
    w.step(lambda: cp.after_step(c), {
        "jm0.jobmaster.deployed": {1: ((1, 2), (2, 3))}, "jm0.jobmaster.pending": set(),
        "jm0.jobmaster.unconfirmed": {(1, 2): 0, (2, 3): 0}, "net": (rpc.SubmitTask(0, 1, 1, ((1, 2), (2, 3))),),
        "te0.deployed": {}}, [("cp_submit", 0, 1, (), 2), ("cp_submit", 0, 2, (), 3)])
    w.step(lambda: cp.deliver(c, 0), {"net": (), "tasks": ("FINISHED", "RUNNING", "RUNNING"),
                                      "te0.deployed": {0: ((1, 2), (2, 3))}},
           [("cp_effect", 0, "te0", "submitTask", 1, 1, True)])
    for t in c.tasks:
        t.status = "FINISHED"
    w.changes()
    # every subtask finished: the group gives its slot back to the pool (free, idle) and the
    # requirement drops to 0
    w.step(lambda: cp.after_step(c), {
        "jm0.jobmaster.acked": False, "jm0.jobmaster.declared": 2, "jm0.jobmaster.deployed": {},
        "jm0.jobmaster.group_slot": {}, "jm0.jobmaster.idle": {1: 0}, "jm0.jobmaster.needed": frozenset(),
        "jm0.jobmaster.unconfirmed": {}, "net": (rpc.DeclareResourceRequirements(1, 1, 0, 2),),
        "next_sequence": 3, "te0.deployed": {}}, [("cp_slot_freed", 0, 1, 0)])
    # heartbeats answered: after slot.idle.timeout intervals the idle slot is released
    start = len(c.events)
    for _ in range(3):
        cp.tick(c)
        while cp.net.in_flight:
            cp.deliver(c, 0)
            cp.after_step(c)
    report = ("cp_deployment_report", 0, 0, 1, ())
    assert c.events[start:] == [report, ("cp_idle_slot_released", 0, 0, 0, 1, 0),
                                ("cp_effect", 0, "te0", "freeSlot", 1, 1, True), report, report]
    assert (jm.pool, jm.idle, cp.tes[0].slots) == ({}, {}, [None])
    assert cp.jms[0].rm.slots == {(0, 0): ("FREE", None, None)} and cp.jms[0].rm.requirements == {}


def test_an_idle_slot_of_the_pool_is_reused_by_a_restarted_region():
    c = blocking_cluster()
    cp = c.cp
    c.tasks[0].status = "FINISHED"
    cp.after_step(c)
    cp.deliver(c, 0)
    for t in c.tasks:
        t.status = "FINISHED"
    cp.after_step(c)
    cp.net.in_flight.clear()
    assert cp.jms[0].jobmaster.idle == {1: 0}
    c.tasks[1].status = c.tasks[2].status = "CREATED"
    w = Watch(c)
    w.step(lambda: cp.restarted(c, {1, 2}), {"jm0.jobmaster.attempts": [1, 4, 5], "jm0.jobmaster.pending": {1, 2},
                                             "next_attempt": 6})
    w.step(lambda: cp.after_step(c), {
        "jm0.jobmaster.declared": 3, "jm0.jobmaster.deployed": {1: ((1, 4), (2, 5))}, "jm0.jobmaster.group_slot": {0: 1},
        "jm0.jobmaster.idle": {}, "jm0.jobmaster.needed": frozenset({0}), "jm0.jobmaster.pending": set(),
        "jm0.jobmaster.unconfirmed": {(1, 4): 0, (2, 5): 0}, "next_sequence": 4,
        "net": (rpc.DeclareResourceRequirements(1, 1, 1, 3), rpc.SubmitTask(0, 1, 1, ((1, 4), (2, 5))))},
        [("cp_idle_slot_reused", 0, 1), ("cp_submit", 0, 1, (), 4), ("cp_submit", 0, 2, (), 5)])
    # a JobMaster whose job reached its terminal state schedules nothing
    cp.jms[0].jobmaster.status = "FINISHED"
    cp.restarted(c, {1})
    w.changes()
    w.step(lambda: cp.schedule(c), {})


# -- settledness, dead letters -------------------------------------------------------------------------


def test_a_change_of_what_heartbeats_reconcile_restarts_the_settling():
    c = confirmed_cluster()
    cp = c.cp
    base = cp._signature()
    assert base == cp.ids.signature
    cp.quiet = 4
    cp.after_step(c)
    assert cp.quiet == 4  # nothing changed
    # each part of the signature: a change sets quiet to 0 and becomes the new signature
    changes = [
        lambda: setattr(cp.tes[1], "inc", 1), lambda: setattr(cp.tes[1], "registered", False),
        lambda: setattr(cp.tes[1], "rm_token", 7), lambda: setattr(cp.tes[1], "job_token", 7),
        lambda: cp.tes[1].slots.__setitem__(0, (5, 1, False)), lambda: cp.tes[1].deployed.__setitem__(0, ((0, 9),)),
        lambda: setattr(cp.tes[1], "alive", False), lambda: setattr(cp.jms[1], "alive", False),
        lambda: setattr(cp.jms[1], "token", 9), lambda: cp.jms[0].rm.registered.pop(1),
        lambda: cp.jms[0].rm.slots.pop((1, 0)), lambda: cp.jms[0].rm.requirements.clear(),
        lambda: cp.jms[0].jobmaster.pool.__setitem__(9, (1, 0, 0)),
        lambda: cp.jms[0].jobmaster.deployed.__setitem__(9, ((1, 9),)),
        lambda: cp.jms[0].jobmaster.group_slot.__setitem__(1, 9),
        lambda: setattr(cp, "running", None),
        lambda: cp.jms[0].jobmaster.pending.add(1),  # (not running the job: not deployed at the step's end)
    ]
    for change in changes:
        cp.quiet = 4
        change()
        assert cp._signature() != cp.ids.signature
        cp.after_step(c)
        assert cp.quiet == 0 and cp._signature() == cp.ids.signature
    cp.jms[0].jobmaster = None
    cp.quiet = 4
    cp.after_step(c)
    assert cp.quiet == 0
    cp.jms[0].rm = None
    cp.quiet = 4
    cp.after_step(c)
    assert cp.quiet == 0
    # what heartbeats do not reconcile: no restart
    cp.quiet = 4
    cp.tes[0].missed_rm = 1
    cp.tes[0].inactive = {3: 1}
    cp.after_step(c)
    assert cp.quiet == 4


def test_the_drain_needs_heartbeat_intervals_until_registrations_and_connections_agree():
    c = confirmed_cluster()
    cp = c.cp
    lead = cp.jms[0]
    cp.quiet = 3
    assert cp.needs_tick()  # not yet more than heartbeat_timeout + 1 quiet intervals
    cp.quiet = 4
    assert not cp.needs_tick() and cp.settled()
    cp.tes[1].registered = False
    assert cp.needs_tick()
    cp.tes[1].registered = True
    lead.rm.registered[1] = 5
    assert cp.needs_tick()  # registered with another incarnation
    lead.rm.registered[1] = 0
    cp.tes[1].alive = False
    assert cp.needs_tick()  # a dead TaskExecutor still registered
    del lead.rm.registered[1]
    assert not cp.needs_tick()
    cp.tes[0].inc = 1
    assert cp.needs_tick()  # connected to the JobMaster with an older incarnation
    cp.tes[0].inc = 0
    cp.tes[0].alive = False
    del lead.rm.registered[0]
    assert cp.needs_tick()  # a dead TaskExecutor still connected to the JobMaster
    lead.jobmaster.connected.clear()
    assert not cp.needs_tick()
    lead.jobmaster = None
    assert not cp.needs_tick()
    cp.net.send(rpc.RegistrationResponse(0, 1))
    assert not cp.settled()


def test_dead_letters_are_dropped_at_once_when_the_environment_says_so():
    c = cluster(dead_letters="at_once")
    cp = c.cp
    bring_up(c)
    kept = [rpc.RegistrationResponse(0, 1), rpc.RegisterTaskExecutor(1, 0, 2, ()), rpc.OfferSlots(0, 0, 1, ()),
            rpc.RequestSlot(0, 7, 0, 9, 7), rpc.HeartbeatResponse("rm", 1, 0, 0, ())]
    dead = [rpc.RegisterTaskExecutor(1, 0, 7, ()), rpc.HeartbeatResponse("jm", 3, 0, 0, ((), ())),
            rpc.DeclareResourceRequirements(5, 5, 1, 1)]
    cp.net.in_flight = kept[:2] + dead + kept[2:]
    assert cp.live_sessions() == {1, 2, None}
    cp.after_step(c)
    assert cp.net.in_flight == kept
    cp.net.in_flight = [rpc.RegistrationResponse(0, 1)]
    lst = cp.net.in_flight
    cp.discard_dead_letters()
    assert cp.net.in_flight is lst  # nothing dropped: the list stays
    cp.net.in_flight = []
    cp.discard_dead_letters()
    assert cp.net.in_flight == []
    # a session is live while a living process's latch node, belief, ResourceManager or JobMaster has it
    cp.jms[0].rm.token, cp.jms[0].jobmaster.token, cp.jms[0].token = 11, 12, 13
    assert cp.live_sessions() == {1, 2, 11, 12, 13, None}
    cp.jms[1].alive = False
    cp.jms[0].latch = None
    assert cp.live_sessions() == {11, 12, 13}
    # the default environment delivers them (and drops them on delivery)
    c2 = running_cluster()
    c2.cp.net.in_flight = list(dead)
    c2.cp.after_step(c2)
    assert c2.cp.net.in_flight == dead


# -- the job's end -------------------------------------------------------------------------------------

CLEAN = {"zk/checkpoint-counter": (None, 0, 2, 1, 0), "zk/checkpoint-counter/job": GONE,
         "zk/checkpoints": (None, 0, 2, 1, 0), "zk/checkpoints/job": GONE, "zk/jobgraphs": (None, 0, 2, 1, 0),
         "zk/jobgraphs/job": GONE}


def test_the_job_reaches_its_terminal_state_writes_its_result_and_is_cleaned_up():
    c = confirmed_cluster()
    cp = c.cp
    c.data_plane_drained = lambda: True
    assert cp.job_done_possible(c) is None
    w = Watch(c)
    w.step(lambda: cp.job_reached_terminal_state(c), {
        "jm0.jobmaster.status": "FINISHED", "terminal": True, "zk/job-results": (None, 0, 1, 1, 0),
        "zk" + ha.JOB_RESULT: ("SUCCEEDED", 0, 0, 0, 0)},
        [("cp_job_terminal", 0, 1), ("cp_effect", 0, "store", ha.JOB_RESULT, 1, 1, True)])
    assert cp.job_done_possible(c) == "no leading JobMaster runs the job"
    assert cp.trigger_gate(c) == "the job reached its terminal state"
    assert not cp._dispatcher.recoverable(cp)
    assert cp.cleanup_possible() is None
    # the job graph, the checkpoint pointers and the counter deleted; the JobMaster gives its slot
    # back, withdraws its requirement and closes: its process's ResourceManager forgets the job
    w.step(lambda: cp.cleanup(c), {
        **CLEAN, "jm0.jobmaster": None, "jm0.rm.requirements": {}, "next_sequence": 3,
        "net": (rpc.FreeSlot(0, 1, 1), rpc.DeclareResourceRequirements(1, 1, 0, 2))},
        [("cp_effect", 0, "store", ha.JOB_GRAPH, 1, 1, True), ("cp_effect", 0, "store", ha.CHECKPOINTS, 1, 1, True),
         ("cp_effect", 0, "store", ha.CHECKPOINT_COUNTER, 1, 1, True), ("cp_job_cleaned_up", 0, 1)])
    assert cp.cleanup_possible() == "the job graph is cleaned up already"
    assert not cp.finished()
    cp.net.in_flight.clear()
    assert cp.finished()


def test_a_failed_job_is_done_at_once_and_its_result_is_failed():
    c = confirmed_cluster()
    cp = c.cp
    c.job.status = "FAILED"
    assert cp.job_done_possible(c) is None
    w = Watch(c)
    w.step(lambda: cp.job_reached_terminal_state(c), {
        "jm0.jobmaster.status": "FINISHED", "terminal": True, "zk/job-results": (None, 0, 1, 1, 0),
        "zk" + ha.JOB_RESULT: ("FAILED", 0, 0, 0, 0)},
        [("cp_job_terminal", 0, 1), ("cp_effect", 0, "store", ha.JOB_RESULT, 1, 1, True)])


def test_a_deposed_leader_finishing_the_job_records_no_result():
    c = confirmed_cluster()
    cp = c.cp
    c.data_plane_drained = lambda: True
    cp.store.suspend(cp.jms[0].session)
    cp.store.sessions.discard(cp.jms[0].session)
    w = Watch(c)
    # its latch node still leads, its session is gone: not globally terminal, the result refused
    w.step(lambda: cp.job_reached_terminal_state(c), {"jm0.jobmaster.status": "FINISHED"},
           [("cp_job_terminal", 0, 1), ("cp_effect", 0, "store", ha.JOB_RESULT, 1, 1, False)])
    # a process whose latch node does not lead is not globally terminal either
    c2 = confirmed_cluster()
    c2.cp.jms[0].latch = L1
    c2.cp.job_reached_terminal_state(c2)
    assert not c2.cp.terminal
    c2.cp.jms[0].latch = None
    c2.cp.job_reached_terminal_state(c2)
    assert not c2.cp.terminal


def test_cleanup_by_a_new_leader_that_found_the_result():
    c = confirmed_cluster()
    cp = c.cp
    c.data_plane_drained = lambda: True
    cp.job_reached_terminal_state(c)
    cp.crash_job_manager(c, 0)
    cp.expire_session(c, 0)
    cp.apply_latch_event(c, 1)  # the result is stored: the job is not recovered
    assert cp.jms[1].jobmaster is None and cp.running is None
    assert cp.cleanup_possible() is None
    w = Watch(c)
    w.step(lambda: cp.cleanup(c), {**CLEAN},
           [("cp_effect", 0, "store", ha.JOB_GRAPH, 2, 2, True), ("cp_effect", 0, "store", ha.CHECKPOINTS, 2, 2, True),
            ("cp_effect", 0, "store", ha.CHECKPOINT_COUNTER, 2, 2, True), ("cp_job_cleaned_up", 0, 2)])
    assert cp.finished()


# -- a new leader's recovery, the gates, TaskExecutor processes ------------------------------------------


def test_a_new_leader_restores_the_stores_latest_checkpoint_and_continues_the_count():
    from model.checkpointcoordinator import CompletedCheckpoint

    c = confirmed_cluster()
    cp = c.cp
    for cid in (1, 2):
        cp.checkpoint_id_taken(c, cid)
        ck = CompletedCheckpoint(cid, 0, task_states={})
        c.coordinator.store.add_checkpoint_and_subsume_oldest_one(ck)
        assert cp.checkpoint_completed(c, ck)
    assert cp.store.get(ha.CHECKPOINTS)[0] == (2,) and sorted(cp.storage) == [1, 2]
    c.job.notifications[2] = "in flight"
    cp.crash_job_manager(c, 0)
    assert not c.job.notifications  # the notifications died with the JobMaster
    c.job.notifications[2] = "in flight"
    cp.expire_session(c, 0)
    w = Watch(c)
    w.step(lambda: cp.apply_latch_event(c, 1), {
        **new_rm(1, 2), **new_jobmaster(1, 2, [5, 6], 2), "jm1.token": 2,
        "net": (rpc.DeclareResourceRequirements(2, 2, 1, 2),), "next_attempt": 7, "next_sequence": 3, "running": 1,
        "tasks": ("CREATED", "CREATED"), "zk/leader/info": ((1, 2), 1, 0, 0, 0)},
        [("cp_effect", 0, "store", ha.LEADER_INFO, 2, 2, True), ("cp_leader", 0, 1, 2),
         ("cp_job_recovered", 0, 2, 2, 2, True, False)], kinds=["job_manager_failover", "restored"])
    assert c.coordinator.next_checkpoint_id == 3
    assert [x.checkpoint_id for x in c.coordinator.store.get_all_checkpoints()] == [2]
    assert not c.job.notifications


def test_the_checkpoint_and_job_end_gates_need_the_leading_running_jobmaster():
    c = confirmed_cluster()
    cp = c.cp
    p = cp.jms[0]
    assert cp.trigger_gate(c) is None
    p.token = 7  # the process no longer believes in its JobMaster's session
    assert cp.trigger_gate(c) == "no leading JobMaster runs the job"
    p.token = None
    assert cp.job_done_possible(c) == "no leading JobMaster runs the job"
    p.token = 1
    c.tasks[1].status = "FINISHED"
    assert cp.trigger_gate(c) is None  # finished tasks do not hold a checkpoint back
    c.tasks[1].status = "CANCELED"
    assert cp.trigger_gate(c) == "agg (1/1) is CANCELED (not every task runs)"
    p.alive = False
    assert cp.trigger_gate(c) == "no leading JobMaster runs the job"
    assert cp.running_jobmaster() is None and cp.current_attempt(0) is None
    p.alive = True
    p.jobmaster.status = "FINISHED"
    assert cp.job_done_possible(c) == "no leading JobMaster runs the job"
    assert cp.cleanup_possible() is None  # its JobMaster reached the terminal state (no result needed)
    p.jobmaster.status = "RUNNING"
    cp.store.create(ha.JOB_RESULT, "SUCCEEDED")
    assert cp.cleanup_possible() == "the job has not reached a terminal state"  # its own JobMaster runs
    cp.store.delete(ha.JOB_RESULT)
    # cleanup: a leader without a JobMaster and without a result has nothing to clean up yet
    p.jobmaster = None
    assert cp.cleanup_possible() == "the job has not reached a terminal state"
    cp.store.create(ha.JOB_RESULT, "SUCCEEDED")
    assert cp.cleanup_possible() is None


def test_a_crashed_task_executor_loses_its_rpcs_and_its_tasks_and_restarts_as_a_new_incarnation():
    c = confirmed_cluster()
    cp = c.cp
    cp.tick(c)
    cp.net.send(rpc.RegistrationResponse(1, 1))
    cp.quiet = 3
    w = Watch(c)
    kept = (HB_RM1, RESP1)
    # what was sent to te0 is lost; its tasks die, nobody knows yet
    w.step(lambda: cp.crash_task_executor(c, 0), {
        "net": kept, "quiet": 0, "tasks": ("CANCELED", "CANCELED"), "te0.alive": False, "te0.deployed": {},
        "te0.job_token": None, "te0.missed_jm": 0, "te0.missed_rm": 0, "te0.registered": False,
        "te0.rm_token": None, "te0.slots": [None]})
    cp.quiet = 3
    w.changes()
    w.step(lambda: cp.start_task_executor(c, 0), {"te0.alive": True, "te0.inc": 1, "quiet": 0})
    assert not cp.retrieval_pending(1) and cp.retrieval_pending(0)
    reg = rpc.RegisterTaskExecutor(0, 1, 1, ((0, None, None),))
    w.step(lambda: cp.leader_retrieval(c, 0), {"net": kept + (reg,), "te0.job_token": 1, "te0.rm_token": 1})
    # the old incarnation is still the JobMaster's heartbeat target; the new one registers again
    w.step(lambda: cp.tick(c), {"jm0.jobmaster.missed": {0: 2}, "jm0.rm.missed": {0: 2, 1: 2},
                                "net": kept + (reg, HB_RM0, HB_RM1, HB_JM0, reg), "quiet": 1, "te1.missed_rm": 2})
    cp.tes[1].alive = False
    assert not cp.retrieval_pending(1)


def test_a_task_executor_that_lost_its_registration_registers_again_each_interval():
    c = confirmed_cluster()
    cp = c.cp
    cp.net.in_flight.clear()
    cp.tes[1].registered = False
    cp.jms[1].alive = False
    w = Watch(c)
    reg = rpc.RegisterTaskExecutor(1, 0, 1, ((0, None, None),))
    w.step(lambda: cp.tick(c), {"jm0.jobmaster.missed": {0: 1}, "jm0.rm.missed": {0: 1, 1: 1},
                                "net": (HB_RM0, HB_RM1, HB_JM0, reg), "quiet": 2, "te0.missed_jm": 1,
                                "te0.missed_rm": 1})
    w.step(lambda: cp.tick(c), {"jm0.jobmaster.missed": {0: 2}, "jm0.rm.missed": {0: 2, 1: 2},
                                "net": (HB_RM0, HB_RM1, HB_JM0, reg) * 2, "quiet": 3, "te0.missed_jm": 2,
                                "te0.missed_rm": 2})  # an unregistered TaskExecutor counts no missed requests
    # a TaskExecutor that knows no leader does not register
    cp.tes[1].rm_token = None
    cp.net.in_flight.clear()
    cp.tick(c)
    assert reg not in cp.net.in_flight


def test_the_dispatcher_recovers_a_job_without_a_result_and_writes_the_result():
    c = running_cluster()
    cp = c.cp
    d = Dispatcher()
    assert d.recoverable(cp)
    d.write_job_result(cp, c, cp.jms[0], "CANCELED")
    assert cp.store.get(ha.JOB_RESULT) == ("CANCELED", 0) and not d.recoverable(cp)
    cp.store.delete(ha.JOB_RESULT)
    cp.store.delete(ha.JOB_GRAPH)
    assert not d.recoverable(cp)


def test_an_active_slot_missing_from_two_allocated_slot_reports_in_a_row_is_freed():
    c = confirmed_cluster()
    cp = c.cp
    cp.quiet = 3
    w = Watch(c)
    empty = rpc.HeartbeatRequest("jm", 1, 0, 0, ())
    w.step(lambda: send_and_deliver(c, empty), {
        "te0.unreported": {1}, "net": (rpc.HeartbeatResponse("jm", 1, 0, 0, (((0, 1), (1, 2)), ())),)})
    cp.net.in_flight.clear()
    cp.tes[0].missed_jm = 1
    w.changes()
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatRequest("jm", 1, 0, 0, (9,))), {
        "te0.unreported": set(), "te0.slots": [None], "te0.deployed": {}, "te0.missed_jm": 0,
        "tasks": ("CANCELED", "CANCELED"), "quiet": 0,
        "net": (rpc.HeartbeatResponse("jm", 1, 0, 0, ((), (9,))),)}, [("cp_unreported_slot_freed", 0, 0, 1)])


def test_a_jobmaster_not_running_the_job_times_out_a_task_executor_without_failing_tasks():
    c = confirmed_cluster()
    cp = c.cp
    cp.running = None
    cp.net.in_flight.clear()
    for _ in range(3):
        cp.tick(c)
    assert [e for e in c.events if kind(e) == "cp_tm_timeout"] == [("cp_tm_timeout", 0, 0, 0, False)]
    assert [t.status for t in c.tasks] == ["RUNNING", "RUNNING"]  # not the running JobMaster's: no failover
    assert not [e for e in c.events if kind(e) == "failover"]
    assert rpc.FreeSlot(0, 1, 1) in cp.net.in_flight
    # a dead process does nothing in a heartbeat interval
    cp.jms[0].alive = False
    cp.tes[0].alive = cp.tes[1].alive = False
    cp.net.in_flight.clear()
    before = flat(c)
    cp.tick(c)
    assert cp.net.in_flight == [] and {k: v for k, v in flat(c).items() if k != "quiet"} == {
        k: v for k, v in before.items() if k != "quiet"}


def test_the_setup_fields_are_read_only_and_the_identifier_counters_writable():
    """Each of ControlPlane's forwarding properties reads (and, for the counters, writes) its
    own field of ``setup`` or ``ids``; on an instance made without a cluster, so that a property
    that cannot be read fails here, by name, rather than in ``ControlPlane.__init__``."""
    from model.controlplane import IdCounters

    cp = ControlPlane.__new__(ControlPlane)
    cp.setup = type("Setup", (), {})()
    fields = {"groups": "g", "region_inputs": "r", "timeout": "t", "idle_timeout": "i",
              "dead_letters_at_once": "d", "dispatcher": "x"}
    for field, v in fields.items():
        setattr(cp.setup, field, v)
    cp.ids = IdCounters()
    assert (cp.ids.next_allocation, cp.ids.next_attempt, cp.ids.next_sequence, cp.ids.signature) == (1, 1, 1, None)

    def read(name):
        try:
            return getattr(cp, name)
        except Exception as e:  # a property that reads the wrong part or field
            pytest.fail(f"ControlPlane.{name} cannot be read: {e!r}")

    for name, field in (("groups", "groups"), ("region_inputs", "region_inputs"), ("timeout", "timeout"),
                        ("idle_timeout", "idle_timeout"), ("dead_letters_at_once", "dead_letters_at_once"),
                        ("_dispatcher", "dispatcher")):
        assert isinstance(ControlPlane.__dict__.get(name), property), f"ControlPlane.{name} is not a property"
        assert read(name) == fields[field]
        assert ControlPlane.__dict__[name].fset is None, f"ControlPlane.{name} is writable"
    for name, field in (("next_allocation", "next_allocation"), ("next_attempt", "next_attempt"),
                        ("next_sequence", "next_sequence"), ("_sig", "signature")):
        assert isinstance(ControlPlane.__dict__.get(name), property), f"ControlPlane.{name} is not a property"
        assert ControlPlane.__dict__[name].fset is not None, f"ControlPlane.{name} is read-only"
        try:
            setattr(cp, name, 41)
        except Exception as e:
            pytest.fail(f"ControlPlane.{name} cannot be written: {e!r}")
        assert getattr(cp.ids, field) == 41 and read(name) == 41


def test_the_events_say_whether_a_checkpoint_or_a_commit_was_in_flight():
    c = confirmed_cluster()
    cp = c.cp
    c.trigger_checkpoint(False)
    assert c.coordinator.num_pending == 1 and cp.max_checkpoint_id == 1
    cp.net.in_flight.clear()
    for _ in range(3):
        cp.tick(c)
    assert [e for e in c.events if kind(e) == "cp_tm_timeout"] == [("cp_tm_timeout", 0, 0, 0, True)]
    c.job.notifications[1] = "in flight"
    cp.crash_job_manager(c, 0)
    assert [e for e in c.events if kind(e) == "cp_jobmaster_lost"] == [("cp_jobmaster_lost", 0, True)]


def test_a_new_jobmanager_process_and_setup_on_their_own():
    """JobManagerProcess and ControlPlaneSetup made directly (not through a Cluster, whose
    control plane would be made from them first)."""
    from model.controlplane import ControlPlaneSetup

    p = JobManagerProcess(3)
    assert {f: getattr(p, f) for f in JobManagerProcess.__slots__} == {
        "index": 3, "alive": True, "session": None, "latch": None, "token": None, "rm": None, "jobmaster": None,
        "memory": None, "counter": 1}
    sc = small_scenario(attrs.evolve(variant("cp-blocking-regions"), small=variant("cp-blocking-regions").small))
    sc = sc.with_settings(heartbeat_timeout=4, slot_idle_timeout=6, dead_letters="at_once")
    plane = Cluster.from_scenario(sc.with_settings(control_plane=False))  # its ExecutionGraph, no control plane
    assert plane.cp is None
    host = type("Host", (), {"config": sc.config, "eg": plane.eg, "environment": sc.environment})()
    s = ControlPlaneSetup(host)
    assert (s.groups, s.region_inputs, s.timeout, s.idle_timeout, s.dead_letters_at_once) == (
        ((0, 1, 2),), ((), (0,), (0,)), 4, 6, True)
    assert type(s.dispatcher) is Dispatcher
    host.environment = attrs.evolve(sc.environment, dead_letters="on_delivery")
    assert ControlPlaneSetup(host).dead_letters_at_once is False


def test_lookups_and_writes_on_their_edges():
    c = running_cluster()
    cp = c.cp
    # an HA write to a node whose parents do not exist creates them
    assert cp.ha_write(c, cp.jms[0], "/a/b", 5)
    assert cp.store.get("/a/b") == (5, 0) and cp.store.exists("/a")
    # leader retrieval is pending while either the ResourceManager or the job leader is not the leader's
    te = cp.tes[1]
    te.job_token = 7
    assert cp.retrieval_pending(1)
    te.job_token, te.rm_token = 1, 7
    assert cp.retrieval_pending(1)
    te.rm_token = 1
    assert not cp.retrieval_pending(1)
    # only a living process's ResourceManager or JobMaster takes an RPC
    cp.jms[0].alive = False
    assert cp._rm(1) is None and cp._jm(1) is None
    cp.jms[0].alive = True
    assert cp._rm(1) is cp.jms[0].rm and cp._jm(1) is cp.jms[0]
    # the process a JobMaster's RPC reaches is found by the JobMaster's session, not the process's belief
    cp.jms[0].token = None
    assert cp._jm(1) is cp.jms[0] and cp._rm(1) is cp.jms[0].rm


def test_without_any_latch_node_nobody_leads():
    c = cluster()
    cp = c.cp
    cp.expire_session(c, 0)
    cp.expire_session(c, 1)
    assert cp.leader_token() is None
    assert cp.leading_process() is None and not cp.needs_tick()  # token None is not leader session None
    assert cp.cleanup_possible() == "no leading JobManager"
    assert [cp.latch_event(c, j) for j in (0, 1)] == ["rejoin", "rejoin"]
    c = running_cluster()
    c.cp.jms[0].alive = False  # (its latch node still leads, its belief is the leader session)
    assert c.cp.leader_token() == c.cp.jms[0].token == 1 and c.cp.leading_process() is None


def test_with_the_checkpoint_id_counter_in_memory_a_new_leader_counts_from_its_own_memory():
    from model import seams

    for seam, store_count, next_id in (((), 3, 3), (("checkpoint-counter-in-memory",), 1, 7)):
        c = confirmed_cluster()
        cp = c.cp
        with seams.active(seam):
            cp.checkpoint_id_taken(c, 1)
            cp.checkpoint_id_taken(c, 2)
            assert cp.jms[0].counter == 3 and cp.store.get(ha.CHECKPOINT_COUNTER)[0] == store_count
            cp.crash_job_manager(c, 0)
            cp.expire_session(c, 0)
            cp.jms[1].counter = 7  # what the new leader's process counted in memory
            cp.apply_latch_event(c, 1)
        assert c.coordinator.next_checkpoint_id == next_id, seam


def test_a_task_executor_moving_to_a_new_leader_kills_what_a_deposed_jobmaster_still_runs():
    c = running_cluster()
    cp = c.cp
    cp.store.set_data(ha.LEADER_INFO, (1, 2))  # another leader's information; jm0 does not know yet
    w = Watch(c)
    w.step(lambda: cp.leader_retrieval(c, 0), {
        "net": (rpc.RegisterTaskExecutor(0, 0, 2, ((0, 1, 1),)), rpc.OfferSlots(0, 0, 2, ((0, 1),))),
        "te0.deployed": {}, "te0.job_token": 2, "te0.registered": False, "te0.rm_token": 2,
        "te0.slots": [(1, 1, False)], "tasks": ("CANCELED", "CANCELED")})


def test_the_slots_of_a_lost_task_executor_are_freed_on_that_task_executor():
    c = running_cluster()
    cp = c.cp
    jm = cp.jms[0].jobmaster
    jm.pool, jm.connected, jm.missed = {1: (1, 0, 0)}, {1: 0}, {1: 0}  # the slot on te1 (index 1, incarnation 0)
    for _ in range(3):
        cp.tick(c)
    assert rpc.FreeSlot(1, 1, 1) in cp.net.in_flight and jm.pool == {}


def test_a_slot_request_answered_occupied_makes_the_resource_manager_ask_for_another_slot():
    c = confirmed_cluster()
    cp = c.cp
    cp.jms[0].rm.slots[(0, 0)] = ("PENDING", 7, 1)
    w = Watch(c)
    w.step(lambda: send_and_deliver(c, rpc.SlotRequestAnswer(0, 1, 0, 7, False, (9, 5))), {
        "jm0.rm.slots": {(0, 0): ("ALLOCATED", 9, 5), (1, 0): ("PENDING", 2, 1)}, "next_allocation": 3,
        "net": (rpc.RequestSlot(1, 1, 0, 2, 1),), "quiet": 0})


def test_every_failed_slot_of_a_report_fails_its_subtasks_only_for_the_running_jobmaster():
    c = confirmed_cluster()
    cp = c.cp
    cp.running = None  # the JobMaster does not run the job (deposed, not knowing it yet)
    w = Watch(c)
    w.step(lambda: send_and_deliver(c, rpc.HeartbeatResponse("jm", 1, 0, 0, ((), (1, 9)))), {
        "jm0.jobmaster.group_slot": {}, "jm0.jobmaster.pool": {}, "jm0.jobmaster.deployed": {}, "quiet": 0},
        [("cp_deployment_report", 0, 0, 1, ()), ("cp_slot_failed", 0, 0, (1, 9))], kinds=[])
    assert [t.status for t in c.tasks] == ["RUNNING", "RUNNING"]
    c2 = confirmed_cluster()
    send_and_deliver(c2, rpc.HeartbeatResponse("jm", 1, 0, 0, (((0, 1), (1, 2)), (1, 9))))
    assert [kind(e) for e in c2.events if kind(e) == "failover"] == ["failover"]
    assert c2.cp.jms[0].jobmaster.attempts == [3, 4]
