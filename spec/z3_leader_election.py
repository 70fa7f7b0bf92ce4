"""z3: bounded model checking of leader election with fencing (2 JobManagers, 1 TaskExecutor,
up to 2 faults, ZooKeeper connection states) -- the control plane's election as ``model/highavailability.py`` and
``model/controlplane.py`` run it, abstracted to what fencing depends on.

The transition system (one action per step, unrolled ``K`` steps):

* two JobManager processes, each alive or crashed, with a ZooKeeper session that is live or
  expired and, while it is live, an ephemeral sequential latch node (``LeaderLatch``): the
  process whose node has the smallest sequence number leads (``latch_leader``); sequence
  numbers count the latch parent's creations, so none is ever used twice (what the
  differential test against a real ZooKeeper checks of ``ZooKeeperStore``);
* a process's ``LeaderLatchEvent`` is granted when its node leads and its connection is up
  (its leader session id -- the fencing token -- is the node's sequence number + 1,
  ``token_of``, and it writes the leader information), revoked when its session expired, or
  rejoins the election; ``CrashJobManager`` loses its memory (a crashed process's session
  expires later, then it may start again and rejoin); ``ExpireSession`` of a living,
  connected process is the split-brain fault (a pause longer than the session timeout): the
  process still believes it leads until its latch event;
* ZooKeeper connection states as Curator reports them: ``ConnectionSuspended`` (the
  connection is lost, the session and its latch node live on; a fault), then either
  ``ConnectionReconnected`` (the same session) or ``ExpireSession`` (LOST, not a fault of its
  own). By default (``Scope.tolerate`` false, Curator's ``StandardConnectionStateErrorPolicy``)
  the LeaderLatch revokes leadership on SUSPENDED, before the session can be LOST (the client
  reports SUSPENDED after two thirds of the session timeout) and before RECONNECTED, which
  resets the latch (a new node, at the end of the queue). With
  ``high-availability.zookeeper.client.tolerate-suspended-connections``
  (``SessionConnectionStateErrorPolicy``) only LOST revokes and RECONNECTED changes nothing. A
  suspended client's writes to the store fail, fenced or not;
* a process that believes it leads sends fenced RPCs to the TaskExecutor (up to ``M`` in
  flight, delivered in any order) and writes the HA store; the TaskExecutor retrieves the
  leader information and accepts an RPC only if it carries the token it retrieved
  (``FencedRpcEndpoint``); the store accepts a write only from the process whose latch node
  leads (a ZooKeeper multi-op with a check).

Faults (a crash, a suspension, or the session expiry of a living, connected process; a scope
chooses which, ``Scope.fault_kinds``) are bounded by ``F``. A ghost
*epoch* numbers the leaderships (the grants); a message and a write carry the epoch of the
leadership that made them, the TaskExecutor the epoch of the leader information it read.

Two properties:

* **fencing** (no split brain, ``goal="fencing"``): no accepted RPC comes from another
  leadership than the one the TaskExecutor follows, and no accepted HA write from a
  leadership other than the latest grant;
* **exclusion** (no two leaders act at once, ``goal="exclusion"``): no write of a deposed
  leadership is accepted, and no RPC of a leadership that a living process still believes
  it holds is accepted once a later leadership was granted. An RPC of a revoked or crashed
  leadership still in flight is not an act of two leaders at once (only fencing keeps it
  out), and a TaskExecutor that has not retrieved the new leader yet still takes the
  deposed one's fenced RPCs: exclusion is what the revocation on SUSPENDED buys, fencing what
  the tokens buy.

Two ways to check them:

* bounded model checking (:func:`check`): the relation unrolled ``K`` steps over bit-vectors,
  at most ``F`` faults; a violation is a counterexample (its actions are reported);
* induction (:func:`check_inductive`): an invariant (:func:`invariant`,
  :func:`exclusion_invariant`) holds initially, is preserved by every action from every
  state where it holds, and implies the property -- so it holds for every length and any
  number of faults. This is how the design is proved: bounded model checking of an unsat
  unrolling is slow in z3 (a minute for ten steps), the induction takes a fraction of a
  second.

Proved: fencing with SUSPENDED revoking and with it tolerated, under every fault; exclusion
with SUSPENDED revoking and no fencing at all, under crashes and suspensions (not a pause past
the session timeout, which leaves a connected process leading after its session expired
whatever the knob). Tolerating SUSPENDED without fencing has a counterexample: the leader's
connection is suspended, its session is LOST, the other process is granted leadership, and the
deposed leader -- still leading by its LeaderLatch, whose LOST it has not handled -- writes the
store.

Mutations that must give counterexamples: no fencing (the TaskExecutor and the store accept
everything; one crash suffices), and a fencing token per *process* instead of per
leadership (a ``ResourceManagerId`` derived from the process): a process that crashed, lost
leadership and won it back reuses its old token, so an RPC of its first leadership, still in
flight, is accepted in its second -- which needs **two** crashes; with one the mutation is
proved safe, which is why the scope has two.

The election's semantics are tied to the model by ``tests/test_z3_leader_election.py``
(random join / expiry / suspend / reconnect sequences: the encoding's leader and token are
``latch_leader`` and ``token_of`` of a ``ZooKeeperStore``). The exhaustive exploration of the model itself
(``flinkspec explore --variant cp-region-failover --small``) covers one crash; see
docs/control-plane.md.
"""

from __future__ import annotations

import attrs
import z3

from spec import proofs

__all__ = ["Scope", "check", "check_inductive", "invariant", "leader_of", "CHECKS", "register"]

J = 2  # JobManager processes
K = 14  # steps unrolled
M = 2  # RPCs in flight at most


@attrs.frozen(slots=True, kw_only=True)
class Scope:
    steps: int = K
    faults: int = 2
    slots: int = M
    #: the TaskExecutor and the store check the fencing token / the writer's latch
    fencing: bool = True
    #: "leadership" (token = latch sequence number + 1) or "process" (the mutation: token = process index + 1)
    token: str = "leadership"
    #: ``high-availability.zookeeper.client.tolerate-suspended-connections``: a SUSPENDED
    #: connection keeps leadership until the session is LOST (default false: it revokes)
    tolerate: bool = False
    #: the faults the run may take (each counts against ``faults``): "crash" (CrashJobManager),
    #: "expire" (ExpireSession of a living, connected process: a pause longer than the session
    #: timeout), "suspend" (ConnectionSuspended)
    fault_kinds: tuple[str, ...] = ("crash", "expire", "suspend")
    #: the property: "fencing" (no accepted effect of a leadership other than the receiver's
    #: current one) or "exclusion" (no two leaders act at once)
    goal: str = "fencing"


def leader_of(sessions: list, latches: list) -> int | None:
    """The process whose live latch node has the smallest sequence number (or None): the
    encoding's election rule in plain Python (tested against ``model.highavailability``)."""
    live = [(latches[j], j) for j in range(len(sessions)) if sessions[j]]
    return min(live)[1] if live else None


def _actions(scope: Scope) -> list[tuple]:
    """The actions of ``scope``: the connection states only with suspensions among its faults
    (without, they are never enabled: leaving them out keeps the unrolling small)."""
    m = scope.slots
    connection = ["ConnectionSuspended", "ConnectionReconnected"] if "suspend" in scope.fault_kinds else []
    acts = []
    for j in range(J):
        acts += [("ExpireSession", j), ("CrashJobManager", j), ("StartJobManager", j), ("LeaderLatchEvent", j),
                 ("WriteStore", j)] + [(name, j) for name in connection]
        acts += [("SendRpc", j, i) for i in range(m)]
    acts += [("LeaderRetrieval",)] + [("DeliverRpc", i) for i in range(m)] + [("Idle",)]
    return acts


#: width of the bit-vectors that hold sequence numbers, tokens, epochs and counters: every
#: value of a run of ``K`` steps fits (each step adds at most 1 to any of them)
WIDTH = 6


def _int(name: str):
    return z3.BitVec(name, WIDTH)


def _state(k: int, m: int, i=_int) -> dict:
    """The variables of state ``k``: bit-vectors for bounded model checking (``i=z3.Int``
    for the induction, where no bound holds)."""
    b = z3.Bool
    s = {"nseq": i(f"nseq_{k}"), "grants": i(f"grants_{k}"), "faults": i(f"faults_{k}"),
         "info_tok": i(f"info_tok_{k}"), "info_ep": i(f"info_ep_{k}"), "te_tok": i(f"te_tok_{k}"),
         "te_ep": i(f"te_ep_{k}"), "bad": b(f"bad_{k}")}
    for j in range(J):
        s[f"alive{j}"], s[f"sess{j}"], s[f"susp{j}"] = b(f"alive{j}_{k}"), b(f"sess{j}_{k}"), b(f"susp{j}_{k}")
        s[f"latch{j}"], s[f"tok{j}"], s[f"ep{j}"] = i(f"latch{j}_{k}"), i(f"tok{j}_{k}"), i(f"ep{j}_{k}")
    for n in range(m):
        s[f"on{n}"], s[f"mtok{n}"], s[f"mep{n}"] = b(f"on{n}_{k}"), i(f"mtok{n}_{k}"), i(f"mep{n}_{k}")
    return s


def _const(s: dict, v: int):
    """``v`` in the sort of the state's numbers."""
    n = s["nseq"]
    return z3.BitVecVal(v, n.size()) if z3.is_bv(n) else z3.IntVal(v)


def _zero(s: dict):
    return _const(s, 0)


def _leads(s: dict, j: int):
    others = [z3.Or(z3.Not(s[f"sess{o}"]), s[f"latch{j}"] < s[f"latch{o}"]) for o in range(J) if o != j]
    return z3.And(s[f"sess{j}"], *others)


def _still_leads(s: dict, ep):
    """A living process still believes it holds leadership ``ep``."""
    return z3.Or(*[z3.And(s[f"alive{j}"], s[f"tok{j}"] != 0, s[f"ep{j}"] == ep) for j in range(J)])


def _step(s: dict, t: dict, act, scope: Scope, acts: list) -> list:
    """``act`` (an Int) chooses the action from ``s`` to ``t``."""
    out = []
    for a_index, a in enumerate(acts):
        upd: dict = {"bad": z3.BoolVal(False)}
        guard = z3.BoolVal(True)
        kind = a[0]
        if kind == "ExpireSession":
            j = a[1]
            alive, susp = s[f"alive{j}"], s[f"susp{j}"]
            # a crashed process's session expires as a matter of course; a suspended one's once
            # its LeaderLatch handled SUSPENDED (LOST: the suspension was the fault); a living,
            # connected process's is a fault of its own (a pause longer than the session timeout)
            paused = z3.And(alive, z3.Not(susp), s["faults"] < scope.faults) if "expire" in scope.fault_kinds \
                else z3.BoolVal(False)
            lost = z3.And(alive, susp, z3.BoolVal(True) if scope.tolerate else s[f"tok{j}"] == 0)
            guard = z3.And(s[f"sess{j}"], z3.Or(z3.Not(alive), lost, paused))
            upd[f"sess{j}"] = z3.BoolVal(False)
            upd[f"susp{j}"] = z3.BoolVal(False)
            upd["faults"] = z3.If(z3.And(alive, z3.Not(susp)), s["faults"] + 1, s["faults"])
        elif kind == "CrashJobManager":
            j = a[1]
            guard = z3.And(s[f"alive{j}"], s["faults"] < scope.faults, z3.BoolVal("crash" in scope.fault_kinds))
            upd.update({f"alive{j}": z3.BoolVal(False), f"tok{j}": _zero(s), "faults": s["faults"] + 1})
        elif kind == "StartJobManager":
            j = a[1]
            guard = z3.And(z3.Not(s[f"alive{j}"]), z3.Not(s[f"sess{j}"]))
            upd.update({f"alive{j}": z3.BoolVal(True), f"sess{j}": z3.BoolVal(True), f"latch{j}": s["nseq"],
                        "nseq": s["nseq"] + 1, f"tok{j}": _zero(s)})
        elif kind == "ConnectionSuspended":
            j = a[1]
            guard = z3.And(s[f"alive{j}"], s[f"sess{j}"], z3.Not(s[f"susp{j}"]), s["faults"] < scope.faults,
                           z3.BoolVal("suspend" in scope.fault_kinds))
            upd.update({f"susp{j}": z3.BoolVal(True), "faults": s["faults"] + 1})
        elif kind == "ConnectionReconnected":
            j = a[1]
            # Curator delivers connection states in order: without the knob the LeaderLatch has
            # revoked leadership on SUSPENDED before RECONNECTED, and then resets (a new latch
            # node at the end of the queue); with it nothing changes
            handled = z3.BoolVal(True) if scope.tolerate else s[f"tok{j}"] == 0
            guard = z3.And(s[f"alive{j}"], s[f"sess{j}"], s[f"susp{j}"], handled)
            upd[f"susp{j}"] = z3.BoolVal(False)
            if not scope.tolerate:
                upd.update({f"latch{j}": s["nseq"], "nseq": s["nseq"] + 1})
        elif kind == "LeaderLatchEvent":
            j = a[1]
            alive, sess, tok, susp = s[f"alive{j}"], s[f"sess{j}"], s[f"tok{j}"], s[f"susp{j}"]
            # SUSPENDED revokes like LOST unless it is tolerated (Curator's
            # StandardConnectionStateErrorPolicy vs SessionConnectionStateErrorPolicy); nothing is
            # granted while the connection is down
            suspended_revokes = z3.BoolVal(False) if scope.tolerate else z3.And(sess, susp)
            revoke = z3.And(z3.Or(z3.Not(sess), suspended_revokes), tok != 0)
            rejoin = z3.And(z3.Not(sess), tok == 0)
            grant = z3.And(tok == 0, _leads(s, j), z3.Not(susp))
            guard = z3.And(alive, z3.Or(revoke, rejoin, grant))
            new_tok = s[f"latch{j}"] + 1 if scope.token == "leadership" else _const(s, j + 1)
            upd[f"tok{j}"] = z3.If(revoke, _zero(s), z3.If(grant, new_tok, tok))
            upd[f"sess{j}"] = z3.If(rejoin, True, sess)
            upd[f"latch{j}"] = z3.If(rejoin, s["nseq"], s[f"latch{j}"])
            upd["nseq"] = z3.If(rejoin, s["nseq"] + 1, s["nseq"])
            upd["grants"] = z3.If(grant, s["grants"] + 1, s["grants"])
            upd[f"ep{j}"] = z3.If(grant, s["grants"] + 1, s[f"ep{j}"])
            upd["info_tok"] = z3.If(grant, new_tok, s["info_tok"])
            upd["info_ep"] = z3.If(grant, s["grants"] + 1, s["info_ep"])
        elif kind == "WriteStore":
            j = a[1]
            guard = z3.And(s[f"alive{j}"], s[f"tok{j}"] != 0)
            # a suspended client reaches no ZooKeeper server: its write fails, fenced or not
            accepted = z3.And(z3.Not(s[f"susp{j}"]), z3.BoolVal(True) if not scope.fencing else _leads(s, j))
            upd["bad"] = z3.And(accepted, s[f"ep{j}"] != s["grants"])
        elif kind == "SendRpc":
            j, n = a[1], a[2]
            guard = z3.And(s[f"alive{j}"], s[f"tok{j}"] != 0, z3.Not(s[f"on{n}"]))
            upd.update({f"on{n}": z3.BoolVal(True), f"mtok{n}": s[f"tok{j}"], f"mep{n}": s[f"ep{j}"]})
        elif kind == "LeaderRetrieval":
            guard = z3.And(s["info_tok"] != 0, s["info_ep"] != s["te_ep"])
            upd.update({"te_tok": s["info_tok"], "te_ep": s["info_ep"]})
        elif kind == "DeliverRpc":
            n = a[1]
            guard = s[f"on{n}"]
            accepted = z3.BoolVal(True) if not scope.fencing else s[f"mtok{n}"] == s["te_tok"]
            upd[f"on{n}"] = z3.BoolVal(False)
            if scope.goal == "fencing":
                upd["bad"] = z3.And(accepted, s[f"mep{n}"] != s["te_ep"])
            else:  # the sender still believes it leads, and a later leadership was granted
                upd["bad"] = z3.And(accepted, s[f"mep{n}"] != s["grants"], _still_leads(s, s[f"mep{n}"]))
        upd["bad"] = z3.Or(s["bad"], upd["bad"])  # sticky: the last state tells
        frame = [t[v] == upd.get(v, s[v]) for v in s]
        out.append(z3.Implies(act == a_index, z3.And(guard, *frame)))
    out.append(z3.And(act >= 0, act < len(acts)))
    return out


def _initial(s: dict, scope: Scope) -> list:
    cs = [s["nseq"] == J, s["grants"] == 0, s["faults"] == 0, s["info_tok"] == 0, s["info_ep"] == 0,
          s["te_tok"] == 0, s["te_ep"] == 0, z3.Not(s["bad"])]
    for j in range(J):  # every process joined the election at start, in index order
        cs += [s[f"alive{j}"], s[f"sess{j}"], z3.Not(s[f"susp{j}"]), s[f"latch{j}"] == j, s[f"tok{j}"] == 0,
               s[f"ep{j}"] == 0]
    for n in range(scope.slots):
        cs += [z3.Not(s[f"on{n}"]), s[f"mtok{n}"] == 0, s[f"mep{n}"] == 0]
    return cs


def check(scope: Scope, timeout_s: float | None = None) -> tuple[str, str, dict | None]:
    """Unroll up to ``scope.steps`` steps, asking after each whether the state can be bad
    (``bad`` is sticky); ``proved`` if none can (unsat), else the shortest counterexample's
    actions."""
    acts = _actions(scope)
    states = [_state(0, scope.slots)]
    solver = z3.Solver()
    if timeout_s is not None:
        solver.set("timeout", int(timeout_s * 1000))
    solver.add(*_initial(states[0], scope))
    act_vars = []
    for k in range(scope.steps):
        nxt = _state(k + 1, scope.slots)
        act = z3.Int(f"act_{k}")  # an index into the action list
        act_vars.append(act)
        solver.add(*_step(states[-1], nxt, act, scope, acts))
        states.append(nxt)
        r = solver.check(nxt["bad"])  # the shortest counterexample first
        if r != z3.unsat:
            break
    if r == z3.sat:
        model = solver.model()
        first = next(k for k in range(1, len(states)) if z3.is_true(model.eval(states[k]["bad"])))
        trace = [_render(acts[model.eval(a).as_long()]) for a in act_vars[:first]]
        trace = [a for a in trace if a != "Idle()"]
        return ("counterexample", f"{len(trace)} steps: " + ", ".join(trace), {"actions": trace})
    if r == z3.unknown:
        return ("unknown", f"z3 gave up: {solver.reason_unknown()}", None)
    return ("proved", f"no execution of <= {scope.steps} steps with <= {scope.faults} faults "
                      f"({J} JobManagers, 1 TaskExecutor, <= {scope.slots} RPCs in flight) breaks "
                      f"{'fencing' if scope.goal == 'fencing' else 'exclusion'}", None)


def _holders(s: dict, m: int) -> list:
    """Every (active, token, epoch) the state holds: the processes that believe they lead,
    the RPCs in flight, the TaskExecutor's leader, the leader information."""
    out = [(s[f"tok{j}"] != 0, s[f"tok{j}"], s[f"ep{j}"]) for j in range(J)]
    out += [(s[f"on{n}"], s[f"mtok{n}"], s[f"mep{n}"]) for n in range(m)]
    out += [(s["te_tok"] != 0, s["te_tok"], s["te_ep"]), (s["info_tok"] != 0, s["info_tok"], s["info_ep"])]
    return out


def invariant(s: dict, m: int, tolerate: bool = False):
    """The inductive strengthening of "no split brain" (the design's, token per leadership):

    * a token names one leadership: two holders of one token hold one epoch;
    * every token held is at most ``nseq`` and every epoch at most ``grants``, so a grant's
      new token (a live latch's sequence number + 1) and new epoch are fresh: no holder
      holds the token of a live latch not granted yet (without ``tolerate``: of a connected
      one -- a leader revoked on SUSPENDED keeps its latch node until RECONNECTED resets it,
      and its RPCs, still in flight, carry that node's token);
    * live latches are distinct and below ``nseq``; a crashed process believes nothing;
    * a process that believes it leads with a live session holds the leading latch, its
      token is that latch's, and its epoch is the latest grant."""
    hs = _holders(s, m)
    cs = [s["nseq"] >= J, s["grants"] >= 0, z3.Not(s["bad"])]
    for active, tok, ep in hs:
        cs.append(z3.Implies(active, z3.And(tok >= 1, tok <= s["nseq"], ep >= 1, ep <= s["grants"])))
    for a in range(len(hs)):
        for b in range(a + 1, len(hs)):
            (pa, ta, ea), (pb, tb, eb) = hs[a], hs[b]
            cs.append(z3.Implies(z3.And(pa, pb, ta == tb), ea == eb))
    for j in range(J):
        sess, tok, latch = s[f"sess{j}"], s[f"tok{j}"], s[f"latch{j}"]
        cs += [z3.Implies(sess, z3.And(latch >= 0, latch < s["nseq"])),
               z3.Implies(z3.Not(s[f"alive{j}"]), tok == 0),
               z3.Implies(z3.And(sess, tok != 0), z3.And(_leads(s, j), tok == latch + 1, s[f"ep{j}"] == s["grants"]))]
        fresh = z3.And(s[f"alive{j}"], sess, tok == 0, *([] if tolerate else [z3.Not(s[f"susp{j}"])]))
        for active, htok, _ in hs:
            cs.append(z3.Implies(z3.And(fresh, active), htok != latch + 1))
        for o in range(j + 1, J):
            cs.append(z3.Implies(z3.And(sess, s[f"sess{o}"]), latch != s[f"latch{o}"]))
    return z3.And(*cs)


def exclusion_invariant(s: dict, m: int):
    """The inductive strengthening of "no two leaders act at once" with leadership revoked on
    SUSPENDED and no pause beyond the session timeout: a process that believes it leads is
    alive, its session lives, its latch node leads and its epoch is the latest grant; live
    latches are distinct and below ``nseq`` (a new node never overtakes a living one)."""
    cs = [s["nseq"] >= J, s["grants"] >= 0, z3.Not(s["bad"])]
    for j in range(J):
        sess, tok, latch = s[f"sess{j}"], s[f"tok{j}"], s[f"latch{j}"]
        cs += [z3.Implies(sess, z3.And(latch >= 0, latch < s["nseq"])),
               z3.Implies(z3.Not(s[f"alive{j}"]), tok == 0),
               z3.Implies(tok != 0, z3.And(sess, _leads(s, j), s[f"ep{j}"] == s["grants"]))]
        for o in range(j + 1, J):
            cs.append(z3.Implies(z3.And(sess, s[f"sess{o}"]), latch != s[f"latch{o}"]))
    return z3.And(*cs)


def _invariant_of(scope: Scope):
    if scope.goal == "exclusion":
        return exclusion_invariant
    return lambda s, m: invariant(s, m, scope.tolerate)


def _goal_text(scope: Scope) -> str:
    return "fencing holds" if scope.goal == "fencing" else "no two leaders act at once"


def check_inductive(scope: Scope, timeout_s: float | None = None) -> tuple[str, str, dict | None]:
    """The goal for every length and any number of faults (of ``scope.fault_kinds``): the
    goal's invariant (:func:`invariant`, :func:`exclusion_invariant`) holds initially and
    after every action from any state where it holds, and no action from such a state breaks
    the goal (unbounded integers: no bit-vector bound applies)."""
    acts = _actions(scope)
    inv = _invariant_of(scope)
    s0, s, t = (_state(k, scope.slots, z3.Int) for k in ("i0", "i", "i1"))
    act = z3.Int("act_i")
    unbounded = attrs.evolve(scope, faults=10**9)
    for what, claim in (("initially", z3.Implies(z3.And(*_initial(s0, scope)), inv(s0, scope.slots))),
                        ("after every action", z3.Implies(z3.And(inv(s, scope.slots),
                                                                 *_step(s, t, act, unbounded, acts)),
                                                          inv(t, scope.slots)))):
        solver = z3.Solver()
        if timeout_s is not None:
            solver.set("timeout", int(timeout_s * 1000))
        solver.add(z3.Not(claim))
        r = solver.check()
        if r == z3.sat:
            m = solver.model()
            action = _render(acts[m.eval(act).as_long()]) if what != "initially" else None
            return ("counterexample", f"the invariant does not hold {what}" + (f" ({action})" if action else ""),
                    {"action": action})
        if r == z3.unknown:
            return ("unknown", f"z3 gave up ({what}): {solver.reason_unknown()}", None)
    return ("proved", f"inductive invariant: {_goal_text(scope)} for every length and any number of "
                      f"{_faults_text(scope)} ({J} JobManagers, 1 TaskExecutor, <= {scope.slots} RPCs in flight)",
            None)


def _faults_text(scope: Scope) -> str:
    names = {"crash": "crashes", "expire": "session expiries", "suspend": "suspensions"}
    return ", ".join(names[k] for k in scope.fault_kinds) + " (SUSPENDED " + \
        ("tolerated)" if scope.tolerate else "revokes)")


def _render(a: tuple) -> str:
    return f"{a[0]}({', '.join(str(x) for x in a[1:])})"


def _check_of(scope: Scope, inductive: bool = False):
    def run(timeout_s=None):
        return (check_inductive if inductive else check)(scope, timeout_s)
    run.__doc__ = (f"leader election + {'fencing' if scope.goal == 'fencing' else 'one leader acting at a time'}, "
                   f"{'every length' if inductive else f'{scope.steps} steps'}, "
                   f"{'any number of' if inductive else f'<= {scope.faults}'} fault(s), "
                   f"{'fenced' if scope.fencing else 'unfenced'}, token per {scope.token}, SUSPENDED "
                   f"{'tolerated' if scope.tolerate else 'revokes'}")
    return run


#: the faults of the exclusion proof: crashes and suspensions, no pause past the session timeout
#: (a living, connected process's session expiring leaves it leading until its latch event,
#: whatever the knob: only fencing keeps its acts out -- the test shows the counterexample)
_NO_PAUSE = ("crash", "suspend")

#: (name, scope, expected, the scope to check, by induction)
CHECKS: list[tuple[str, str, str, Scope, bool]] = [
    ("leader_fencing_inductive", f"{J} JobManagers, 1 TaskExecutor, every length, any number of crashes, "
     "session expiries and suspensions, SUSPENDED revokes (inductive invariant)", "proved", Scope(), True),
    ("leader_fencing_tolerate_suspended_inductive", f"{J} JobManagers, 1 TaskExecutor, every length, any number "
     "of crashes, session expiries and suspensions, SUSPENDED tolerated (inductive invariant)", "proved",
     Scope(tolerate=True), True),
    ("leader_exclusion_revoke_on_suspended_inductive", f"{J} JobManagers, 1 TaskExecutor, every length, any "
     "number of crashes and suspensions, SUSPENDED revokes, no fencing, one leader acting at a time "
     "(inductive invariant)", "proved", Scope(fencing=False, goal="exclusion", fault_kinds=_NO_PAUSE), True),
    ("leader_fencing_mutant_no_fencing", f"{J} JobManagers, 1 TaskExecutor, <= 2 crashes, k<=6, no fencing",
     "counterexample", Scope(fencing=False, steps=6), False),
    ("leader_fencing_mutant_token_per_process", f"{J} JobManagers, 1 TaskExecutor, <= 2 crashes, k<=10, "
     "token per process", "counterexample", Scope(token="process", steps=10, fault_kinds=("crash", "expire")), False),
    ("leader_exclusion_mutant_tolerate_suspended_no_fencing", f"{J} JobManagers, 1 TaskExecutor, <= 1 "
     "suspension, k<=6, SUSPENDED tolerated, no fencing, one leader acting at a time", "counterexample",
     Scope(tolerate=True, fencing=False, goal="exclusion", fault_kinds=("suspend",), faults=1, steps=6), False),
]


def register() -> None:
    """Register :data:`CHECKS` in ``spec.proofs``."""
    for name, scope_text, expected, scope, inductive in CHECKS:
        run = _check_of(scope, inductive)
        proofs.register(name, scope_text, expected, run, f"LeaderLatch + FencedRpcEndpoint: {run.__doc__}")
