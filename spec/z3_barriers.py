"""z3: bounded model checking of the checkpoint barrier protocols, cross-checked with the model.

Topology (the same one :func:`model_topology` builds in the Python model)::

    src (1/2) --ch0--\\
                      >-- count (1/1) -> out   (consumer: keyed_aggregate + sink, one task)
    src (2/2) --ch1--/

Each source subtask emits ``records`` records into its FIFO channel (capacity ``capacity``
elements, records and barriers, like ``ModelScope.channel_capacity``); the coordinator
triggers up to ``checkpoints`` checkpoints, one at a time (``max_concurrent_checkpoints=1``),
and the trigger reaches both sources at once (as in ``model/cluster.py``). The consumer's
state is what it counted per channel (``TaskSnapshot.received`` in the model).

Actions (one per step; they map 1:1 onto ``model.actions``)::

    SourceEmit(c)        source of channel c appends its next record      (code c)
    Deliver(c)           consumer takes the head of channel c             (code n + c)
    TriggerCheckpoint()  barrier k+1 at every source, source snapshots     (code 2n)

Modes (``model.cluster.RuntimeConfig``):

* ``aligned`` -- exactly-once, ``SingleCheckpointBarrierHandler`` aligned: a channel is
  blocked from its barrier until barriers arrived on all channels, then the consumer snapshots;
* ``at_least_once`` -- ``CheckpointBarrierTracker``: never blocks, snapshots when barriers
  arrived on all channels;
* ``unaligned`` -- snapshot at the first barrier; the barrier overtakes the records queued
  in the producer's channel (priority event) and those become the producer's *output*
  channel state; records consumed from a channel after the consumer's snapshot and before
  that channel's barrier are *input* channel state; the consumer acknowledges once every
  barrier arrived;
* ``unaligned_no_state`` -- the known-unsafe variant without channel state
  (the seam ``unaligned-drops-channel-state``): nothing is persisted, so the consumer acknowledges
  at the first barrier.

``overtake=False`` keeps unaligned barriers in FIFO order (what Flink does with an aligned
barrier that timed out into an unaligned checkpoint, see ``model/checkpointbarrierhandler``):
then all channel state is on the input side. That variant is checked by z3 only (the model
reaches it through ``AlignmentTimeout``, which the encoding does not have).

Property (``consistent_cut``, as ``spec.checkpoint.cut_violations``): for every completed
checkpoint k and channel c, ``sent_c(producer snapshot k) == received_c(consumer snapshot k)
+ input channel state + output channel state``.

Bound: every execution of this topology has at most ``2*records`` emits, ``2*records``
record deliveries, ``checkpoints`` triggers and ``2*checkpoints`` barrier deliveries, so
``K = 4*records + 3*checkpoints`` steps (18 for 3 records and 2 checkpoints) covers *every*
execution; the check runs depth by depth (1..K) so a counterexample is a shortest one.

Leaves out: watermarks, idleness, EndOfPartition/finished tasks (no ``SourceEnd``),
cancellation markers, failures, alignment timeouts, concurrent checkpoints.
"""

from __future__ import annotations

import random
import time
from typing import Callable, Sequence

import attrs
import z3

from model import actions as A
from model.cluster import ActionNotEnabled, Cluster, JobInput, RuntimeConfig
from model.errors import InvalidArgument
from model.executiongraph import compile_stream_graph
from model.scope import ModelScope
from model.streamgraph import StreamGraphBuilder
from spec import proofs
from spec.checkpoint import cut_violations

__all__ = [
    "MODES",
    "Topology",
    "BState",
    "initial",
    "transition",
    "violation",
    "bmc",
    "decode_action",
    "model_topology",
    "make_cluster",
    "model_cut_violations",
    "replay_in_model",
    "z3_accepts_model_trace",
    "random_model_trace",
    "z3_traces",
    "Disagreement",
    "CHECKS",
]

MODES = ("aligned", "at_least_once", "unaligned", "unaligned_no_state")

#: RuntimeConfig of each mode
MODE_CONFIG = {
    "aligned": dict(checkpointing_mode="exactly_once"),
    "at_least_once": dict(checkpointing_mode="at_least_once"),
    "unaligned": dict(checkpointing_mode="exactly_once", unaligned=True),
    "unaligned_no_state": dict(checkpointing_mode="exactly_once", unaligned=True),
}
#: the seams each mode switches on (the unsafe one: the seam that drops channel state)
MODE_SEAMS = {"unaligned_no_state": ("unaligned-drops-channel-state",)}


@attrs.frozen(slots=True, kw_only=True)
class Topology:
    """The bounded scope: ``channels`` sources feeding one consumer, ``records`` records per
    source, up to ``checkpoints`` checkpoints, ``capacity`` elements per channel."""

    mode: str = "aligned"
    records: int = 3
    checkpoints: int = 2
    capacity: int = 4
    channels: int = 2
    overtake: bool = True

    def __attrs_post_init__(self):
        if self.mode not in MODES:
            raise InvalidArgument(f"Topology: mode must be one of {MODES}, not {self.mode!r}")
        if self.channels < 1 or self.records < 0 or self.checkpoints < 0 or self.capacity < 1:
            raise InvalidArgument(f"{self!r}: needs channels >= 1, records >= 0, checkpoints >= 0, capacity >= 1")

    @property
    def unaligned(self) -> bool:
        return self.mode in ("unaligned", "unaligned_no_state")

    @property
    def keep_state(self) -> bool:
        return self.mode == "unaligned"

    @property
    def full_length(self) -> int:
        """Longest execution: every action kind exhausted."""
        n = self.channels
        return 2 * n * self.records + self.checkpoints + n * self.checkpoints

    @property
    def n_actions(self) -> int:
        return 2 * self.channels + 1

    @property
    def width(self) -> int:
        """Bit width of the counters: every value stays below ``2**(width-1)`` (so signed
        comparisons are exact and nothing wraps)."""
        top = max(self.records + self.checkpoints + self.capacity, self.n_actions, self.checkpoints + 1) + 2
        return top.bit_length() + 1

    def num(self, name: str):
        return z3.BitVec(name, self.width)

    def val(self, v: int):
        return z3.BitVecVal(v, self.width)


class BState:
    """The state after some step, as z3 terms. Per channel ``c`` and checkpoint ``k``
    (1-based; lists are indexed ``[c][k-1]``):

    ``sent[c]``/``recv[c]`` records appended/consumed; ``blocked[c]`` (aligned); ``ntrig``
    the id of the latest triggered checkpoint; ``bpos[c][k]`` records before barrier k in
    c's stream; ``bdone[c][k]`` barrier consumed; ``ssent``/``ocs`` the producer's snapshot
    (records sent, output channel state); ``csnap[k]``, ``crecv[c][k]``, ``ics[c][k]`` the
    consumer's snapshot (taken?, records consumed, input channel state); ``done[k]`` the
    checkpoint completed (every task acknowledged)."""

    FIELDS = ("sent", "recv", "blocked", "ntrig", "bpos", "bdone", "ssent", "ocs", "csnap",
              "crecv", "ics", "done")

    def __init__(self, **kw):
        for f in self.FIELDS:
            setattr(self, f, kw[f])

    @classmethod
    def fresh(cls, topo: Topology, tag: str) -> "BState":
        n, K = topo.channels, topo.checkpoints
        I, B = topo.num, z3.Bool
        return cls(
            sent=[I(f"sent_{c}_{tag}") for c in range(n)],
            recv=[I(f"recv_{c}_{tag}") for c in range(n)],
            blocked=[B(f"blocked_{c}_{tag}") for c in range(n)],
            ntrig=I(f"ntrig_{tag}"),
            bpos=[[I(f"bpos_{c}_{k}_{tag}") for k in range(1, K + 1)] for c in range(n)],
            bdone=[[B(f"bdone_{c}_{k}_{tag}") for k in range(1, K + 1)] for c in range(n)],
            ssent=[[I(f"ssent_{c}_{k}_{tag}") for k in range(1, K + 1)] for c in range(n)],
            ocs=[[I(f"ocs_{c}_{k}_{tag}") for k in range(1, K + 1)] for c in range(n)],
            csnap=[B(f"csnap_{k}_{tag}") for k in range(1, K + 1)],
            crecv=[[I(f"crecv_{c}_{k}_{tag}") for k in range(1, K + 1)] for c in range(n)],
            ics=[[I(f"ics_{c}_{k}_{tag}") for k in range(1, K + 1)] for c in range(n)],
            done=[B(f"done_{k}_{tag}") for k in range(1, K + 1)],
        )

    def flat(self) -> list:
        out = []
        for f in self.FIELDS:
            v = getattr(self, f)
            if isinstance(v, list):
                for x in v:
                    out.extend(x if isinstance(x, list) else [x])
            else:
                out.append(v)
        return out

    def equal(self, other: "BState") -> z3.BoolRef:
        return z3.And([a == b for a, b in zip(self.flat(), other.flat())])


def initial(topo: Topology, s: BState) -> z3.BoolRef:
    """Nothing sent, nothing triggered; every counter 0, every flag false."""
    cs = []
    for v in s.flat():
        cs.append(v == (z3.BoolVal(False) if v.sort() == z3.BoolSort() else 0))
    return z3.And(cs)


def _head_barrier(topo: Topology, s: BState, c: int, k: int) -> z3.BoolRef:
    """Barrier k (1-based) is at the head of channel c."""
    earlier = [s.bdone[c][j - 1] for j in range(1, k)]
    return z3.And(s.ntrig >= k, z3.Not(s.bdone[c][k - 1]), s.bpos[c][k - 1] == s.recv[c], *earlier)


def _length(topo: Topology, s: BState, c: int):
    one, zero = topo.val(1), topo.val(0)
    inflight = [z3.If(z3.And(s.ntrig >= k, z3.Not(s.bdone[c][k - 1])), one, zero)
                for k in range(1, topo.checkpoints + 1)]
    return s.sent[c] - s.recv[c] + z3.Sum(inflight) if inflight else s.sent[c] - s.recv[c]


def _pending(topo: Topology, s: BState) -> z3.BoolRef:
    return z3.Or([z3.And(s.ntrig == k, z3.Not(s.done[k - 1])) for k in range(1, topo.checkpoints + 1)]
                 or [z3.BoolVal(False)])


def enabled(topo: Topology, s: BState, code: int) -> z3.BoolRef:
    """Guard of action ``code`` in state ``s``."""
    n = topo.channels
    if code < n:  # SourceEmit
        c = code
        return z3.And(s.sent[c] < topo.records, _length(topo, s, c) < topo.capacity)
    if code < 2 * n:  # Deliver
        c = code - n
        return z3.And(_length(topo, s, c) > 0, z3.Not(s.blocked[c]))
    return z3.And(s.ntrig < topo.checkpoints, z3.Not(_pending(topo, s)))


def _effect(topo: Topology, s: BState, code: int) -> dict:
    """The next-state terms of action ``code`` (fields not returned stay unchanged)."""
    n, K = topo.channels, topo.checkpoints
    ks = range(1, K + 1)
    if code < n:
        c = code
        sent = list(s.sent)
        sent[c] = s.sent[c] + 1
        return {"sent": sent}
    if code == 2 * n:  # TriggerCheckpoint: barrier ntrig+1 at every source; sources snapshot
        new = s.ntrig + 1
        bpos, ssent, ocs = [], [], []
        for c in range(n):
            queued = s.sent[c] - s.recv[c]
            pos = s.recv[c] if (topo.unaligned and topo.overtake) else s.sent[c]
            out_state = queued if (topo.keep_state and topo.overtake) else topo.val(0)
            bpos.append([z3.If(new == k, pos, s.bpos[c][k - 1]) for k in ks])
            ssent.append([z3.If(new == k, s.sent[c], s.ssent[c][k - 1]) for k in ks])
            ocs.append([z3.If(new == k, out_state, s.ocs[c][k - 1]) for k in ks])
        return {"ntrig": new, "bpos": bpos, "ssent": ssent, "ocs": ocs}
    # Deliver(c)
    c = code - n
    heads = [_head_barrier(topo, s, c, k) for k in ks]
    is_barrier = z3.Or(heads) if heads else z3.BoolVal(False)
    recv = list(s.recv)
    recv[c] = z3.If(is_barrier, s.recv[c], s.recv[c] + 1)
    # input channel state: a record consumed while the consumer's snapshot k is taken and
    # channel c's barrier k has not arrived yet
    ics = [list(row) for row in s.ics]
    if topo.keep_state:
        for k in ks:
            persisting = z3.And(z3.Not(is_barrier), s.csnap[k - 1], z3.Not(s.bdone[c][k - 1]),
                                z3.Not(s.done[k - 1]))
            ics[c][k - 1] = z3.If(persisting, s.ics[c][k - 1] + 1, s.ics[c][k - 1])
    bdone = [list(row) for row in s.bdone]
    for k in ks:
        bdone[c][k - 1] = z3.Or(s.bdone[c][k - 1], heads[k - 1])
    blocked = list(s.blocked)
    csnap = list(s.csnap)
    crecv = [list(row) for row in s.crecv]
    done = list(s.done)
    all_in = [z3.And([bdone[d][k - 1] for d in range(n)]) for k in ks]
    for k in ks:
        h = heads[k - 1]
        if topo.unaligned:
            take = z3.And(h, z3.Not(s.csnap[k - 1]))  # snapshot at the first barrier
            # with channel state the consumer acknowledges once every barrier arrived (the
            # channel state is complete); without, nothing is persisted: it acks at once
            ack = z3.And(h, all_in[k - 1]) if topo.keep_state else take
        else:
            take = z3.And(h, all_in[k - 1])  # snapshot when every barrier arrived
            ack = take
        csnap[k - 1] = z3.Or(s.csnap[k - 1], take)
        for d in range(n):
            crecv[d][k - 1] = z3.If(take, s.recv[d], s.crecv[d][k - 1])
        done[k - 1] = z3.Or(s.done[k - 1], ack)
    if topo.mode == "aligned":
        finish = z3.Or([z3.And(heads[k - 1], all_in[k - 1]) for k in ks]) if heads else z3.BoolVal(False)
        for d in range(n):
            if d == c:
                blocked[d] = z3.If(finish, False, z3.Or(s.blocked[d], is_barrier))
            else:
                blocked[d] = z3.If(finish, False, s.blocked[d])
    return {"recv": recv, "ics": ics, "bdone": bdone, "blocked": blocked, "csnap": csnap,
            "crecv": crecv, "done": done}


def transition(topo: Topology, s: BState, act: z3.ArithRef, t: BState) -> z3.BoolRef:
    """``s --act--> t``: ``act`` is enabled in ``s`` and ``t`` is its effect."""
    # functional form: each variable of t is an if-then-else over the actions that change it
    cur = s.flat()
    nxts = []
    for code in range(topo.n_actions):
        eff = _effect(topo, s, code)
        nxts.append(BState(**{f: eff.get(f, getattr(s, f)) for f in BState.FIELDS}).flat())
    cs = [z3.Or([z3.And(act == code, enabled(topo, s, code)) for code in range(topo.n_actions)])]
    for j, (old, new) in enumerate(zip(cur, t.flat())):
        term = old
        for code in range(topo.n_actions):
            e = nxts[code][j]
            if not e.eq(old):
                term = z3.If(act == code, e, term)
        cs.append(new == term)
    return z3.And(cs)


def violation(topo: Topology, s: BState) -> z3.BoolRef:
    """Some completed checkpoint is not a consistent cut on some channel."""
    bad = []
    for k in range(1, topo.checkpoints + 1):
        for c in range(topo.channels):
            cut = s.crecv[c][k - 1] + s.ics[c][k - 1] + s.ocs[c][k - 1]
            bad.append(z3.And(s.done[k - 1], s.ssent[c][k - 1] != cut))
    return z3.Or(bad) if bad else z3.BoolVal(False)


def decode_action(topo: Topology, code: int):
    """The model action of encoding action ``code`` (channels/sources by encoding index)."""
    n = topo.channels
    if code < n:
        return ("SourceEmit", code)
    if code < 2 * n:
        return ("Deliver", code - n)
    return ("TriggerCheckpoint",)


def encode_action(topo: Topology, a: tuple) -> int:
    n = topo.channels
    if a[0] == "SourceEmit":
        return a[1]
    if a[0] == "Deliver":
        return n + a[1]
    if a[0] == "TriggerCheckpoint":
        return 2 * n
    raise ValueError(f"not an encoded action: {a!r}")


class Unrolling:
    """An incremental unrolling: states ``s[0..i]`` and actions ``act[0..i-1]`` in one solver."""

    def __init__(self, topo: Topology, timeout_s: float | None = None, tag: str = ""):
        self.topo = topo
        self.solver = z3.SolverFor("QF_BV")
        if timeout_s is not None:
            self.solver.set("timeout", int(timeout_s * 1000))
        self.tag = tag
        self.states = [BState.fresh(topo, f"{tag}0")]
        self.acts: list = []
        self.solver.add(initial(topo, self.states[0]))

    def extend(self) -> None:
        i = len(self.acts)
        act = self.topo.num(f"act_{self.tag}{i}")
        t = BState.fresh(self.topo, f"{self.tag}{i + 1}")
        self.solver.add(self.transition_constraint(self.states[i], act, t))
        self.acts.append(act)
        self.states.append(t)

    def transition_constraint(self, s, act, t):
        return transition(self.topo, s, act, t)

    def trace(self, m: z3.ModelRef) -> list[tuple]:
        return [decode_action(self.topo, m.eval(a, model_completion=True).as_long()) for a in self.acts]

    def values(self, m: z3.ModelRef, i: int) -> dict:
        """Concrete values of state ``i`` (lists indexed by channel, then checkpoint-1)."""
        s = self.states[i]

        def ev(x):
            v = m.eval(x, model_completion=True)
            return z3.is_true(v) if v.sort() == z3.BoolSort() else v.as_long()

        out = {}
        for f in BState.FIELDS:
            v = getattr(s, f)
            if isinstance(v, list):
                out[f] = [[ev(y) for y in x] if isinstance(x, list) else ev(x) for x in v]
            else:
                out[f] = ev(v)
        return out


def _violating_checkpoint(topo: Topology, vals: dict) -> tuple[int, int] | None:
    for k in range(1, topo.checkpoints + 1):
        if not vals["done"][k - 1]:
            continue
        for c in range(topo.channels):
            cut = vals["crecv"][c][k - 1] + vals["ics"][c][k - 1] + vals["ocs"][c][k - 1]
            if vals["ssent"][c][k - 1] != cut:
                return k, c
    return None


def bmc(topo: Topology, depth: int | None = None, timeout_s: float | None = None):
    """Check every execution of up to ``depth`` (default: ``topo.full_length``) steps.

    Returns ``("proved", info)``, ``("counterexample", cex)`` or ``("unknown", info)``; a
    counterexample is the shortest: ``{"trace": [...], "step": i, "checkpoint": k,
    "channel": c, "state": values}``. ``info`` records whether checkpoint ``checkpoints``
    completes in some execution (the encoding is not vacuous)."""
    K = topo.full_length if depth is None else depth
    u = Unrolling(topo, timeout_s)
    for i in range(1, K + 1):
        u.extend()
        bad = violation(topo, u.states[i])
        r = u.solver.check(bad)
        if r == z3.sat:
            m = u.solver.model()
            vals = u.values(m, i)
            k, c = _violating_checkpoint(topo, vals)
            return "counterexample", {"trace": u.trace(m), "step": i, "checkpoint": k, "channel": c,
                                      "state": vals}
        if r != z3.unsat:
            return "unknown", {"depth": i, "reason": u.solver.reason_unknown()}
        u.solver.add(z3.Not(bad))  # deeper queries look for a *first* violation only
    # non-vacuity: the last checkpoint completes in some execution of this length
    reach = "n/a"
    if topo.checkpoints:
        reach = str(u.solver.check(z3.Or([s.done[topo.checkpoints - 1] for s in u.states])))
    return "proved", {"depth": K, "last_checkpoint_completes": reach}


# ------------------------------------------------------------------------- the Python model


def model_topology(records: int = 3, channels: int = 2, partitioner: str = "hash"):
    """The same topology in the model: ``src`` (p=channels) --partitioner--> ``count``
    (keyed_aggregate, p=1) --forward, chained--> ``out`` (append sink). Returns
    ``(execution_graph, job_input)``; source subtask ``c`` reads split ``c``."""
    b = StreamGraphBuilder("z3-barriers")
    b.source("src", parallelism=channels)
    if partitioner == "hash":
        b.keyed_aggregate("count", "src", parallelism=1)
    else:
        b.map("count", "src", parallelism=1, partitioner=partitioner)
    b.sink("out", "count", sink_kind="append", parallelism=1)
    eg = compile_stream_graph(b.build())
    splits = tuple(tuple((f"k{c}", 1, i) for i in range(records)) for c in range(channels))
    return eg, JobInput({"src": splits})


def make_cluster(topo: Topology, partitioner: str = "hash", seed: int = 0):
    """A model Cluster of ``topo`` (same mode, capacity, one checkpoint at a time)."""
    eg, job_input = model_topology(topo.records, topo.channels, partitioner)
    cfg = RuntimeConfig(max_concurrent_checkpoints=1, **MODE_CONFIG[topo.mode])
    return Cluster(eg, job_input, cfg, seed=seed, seams=MODE_SEAMS.get(topo.mode, ()),
                   scope=ModelScope(channel_capacity=topo.capacity))


def _wiring(cluster) -> tuple[list[int], list[int]]:
    """(model channel id, producer subtask id) of encoding channel c = consumer gate order."""
    eg = cluster.eg
    consumer = [t for t in cluster.tasks if t.source is None][0]
    chans = list(consumer.plan.input_channels)
    return chans, [eg.channels[c].producer for c in chans]


def to_model_action(cluster, a: tuple):
    chans, producers = _wiring(cluster)
    if a[0] == "SourceEmit":
        return A.SourceEmit(producers[a[1]])
    if a[0] == "Deliver":
        return A.Deliver(chans[a[1]])
    return A.TriggerCheckpoint()


def from_model_action(cluster, a) -> tuple | None:
    chans, producers = _wiring(cluster)
    if type(a) is A.SourceEmit and a.subtask in producers:
        return ("SourceEmit", producers.index(a.subtask))
    if type(a) is A.Deliver and a.channel in chans:
        return ("Deliver", chans.index(a.channel))
    if type(a) is A.TriggerCheckpoint and not a.savepoint:
        return ("TriggerCheckpoint",)
    return None


def model_cut_violations(cluster) -> list[tuple[int, int]]:
    """``(checkpoint, encoding channel)`` pairs where a completed checkpoint of the model is
    not a consistent cut, by ``spec.checkpoint.cut_violations`` on ``cluster.completed``."""
    chans, _ = _wiring(cluster)
    out = []
    for cid in sorted(cluster.completed):
        for b in cut_violations(cluster.eg, cluster.completed[cid]):
            out.append((cid, chans.index(b["channel"]) if b["channel"] in chans else b["channel"]))
    return out


def _observe(cluster, topo: Topology) -> dict:
    """The model's values of the encoding's observable state."""
    chans, producers = _wiring(cluster)
    obs = {
        "sent": [cluster.received[c] + sum(1 for e in cluster.channels[c] if type(e) is tuple) for c in chans],
        "recv": [cluster.received[c] for c in chans],
        "length": [len(cluster.channels[c]) for c in chans],
        "blocked": [bool(cluster.blocked[c]) for c in chans],
        "ntrig": sum(1 for r in cluster.trigger_results if r.ok),
        "completed": sorted(cluster.completed),
    }
    consumer = [t for t in cluster.tasks if t.source is None][0].id
    snaps = {}
    for cid, per in sorted(cluster.completed.items()):
        cs = per[consumer]
        snaps[cid] = {
            "ssent": [per[p].sent[c] for c, p in zip(chans, producers)],
            "ocs": [len(per[p].output_channel_state.get(c, ())) for c, p in zip(chans, producers)],
            "crecv": [cs.received[c] for c in chans],
            "ics": [len(cs.input_channel_state.get(c, ())) for c in chans],
        }
    obs["snapshots"] = snaps
    return obs


def _z3_observe(topo: Topology, vals: dict, u: "Unrolling", m, i: int) -> dict:
    n = topo.channels
    s = u.states[i]
    length = [m.eval(_length(topo, s, c), model_completion=True).as_long() for c in range(n)]
    completed = [k for k in range(1, topo.checkpoints + 1) if vals["done"][k - 1]]
    return {
        "sent": vals["sent"],
        "recv": vals["recv"],
        "length": length,
        "blocked": vals["blocked"],
        "ntrig": vals["ntrig"],
        "completed": completed,
        "snapshots": {k: {f: [vals[f][c][k - 1] for c in range(n)] for f in ("ssent", "ocs", "crecv", "ics")}
                      for k in completed},
    }


@attrs.frozen(slots=True)
class Disagreement:
    """Where the z3 relation and the model part: ``step`` is 1-based (0 = initial state)."""

    step: int
    action: tuple | None
    what: str
    model: object = None
    z3: object = None

    def __str__(self) -> str:
        return f"step {self.step} ({self.action}): {self.what}; model={self.model!r} z3={self.z3!r}"


def z3_accepts_model_trace(topo: Topology, cluster, trace: Sequence[tuple], *,
                           check_enabled_sets: bool = True) -> Disagreement | None:
    """Run ``trace`` (encoding actions) in ``cluster`` (fresh) and in the z3 relation side
    by side. At every step: the action must be enabled in both, the encoded actions enabled
    in both must be the same set (with ``check_enabled_sets``), and the observable state
    (sent/received/length/blocked per channel, triggered and completed checkpoints, and each
    completed checkpoint's snapshot values) must be equal. Returns the first
    :class:`Disagreement`, or None."""
    u = Unrolling(topo, tag="x")
    n_act = topo.n_actions

    def enabled_in_model():
        return sorted(encode_action(topo, e) for e in
                      (from_model_action(cluster, a) for a in cluster.enabled_actions()) if e is not None)

    def enabled_in_z3(i):
        s = u.states[i]
        out = []
        for code in range(n_act):
            u.solver.push()
            u.solver.add(enabled(topo, s, code))
            if u.solver.check() == z3.sat:
                out.append(code)
            u.solver.pop()
        return out

    for i, a in enumerate(list(trace) + [None]):
        if check_enabled_sets:
            em = enabled_in_model()
            ez = enabled_in_z3(i)
            ntrig = sum(1 for r in cluster.trigger_results if r.ok)
            if ntrig >= topo.checkpoints:  # the encoding's bound on checkpoints
                em = [e for e in em if e != 2 * topo.channels]
            if em != ez:
                return Disagreement(i, a, "enabled actions differ",
                                    [decode_action(topo, e) for e in em], [decode_action(topo, e) for e in ez])
        if a is None:
            return None
        code = encode_action(topo, a)
        ma = to_model_action(cluster, a)
        if ma not in cluster.enabled_actions():
            return Disagreement(i + 1, a, "not enabled in the model", None, None)
        u.extend()
        u.solver.add(u.acts[i] == code)
        if u.solver.check() != z3.sat:
            return Disagreement(i + 1, a, "not enabled in the z3 transition relation", None, None)
        cluster.step(ma)
        m = u.solver.model()
        vals = u.values(m, i + 1)
        mo, zo = _observe(cluster, topo), _z3_observe(topo, vals, u, m, i + 1)
        if mo != zo:
            diff = {k: (mo[k], zo[k]) for k in mo if mo[k] != zo.get(k)}
            return Disagreement(i + 1, a, f"states differ in {sorted(diff)}",
                                {k: v[0] for k, v in diff.items()}, {k: v[1] for k, v in diff.items()})
    return None


def replay_in_model(topo: Topology, trace: Sequence[tuple], partitioner: str = "hash", seed: int = 0):
    """Replay a z3 trace in a fresh model cluster. Returns ``(cluster, first)`` where
    ``first`` is ``(step, [(checkpoint, channel), ...])`` for the first step after which the
    model has an inconsistent completed checkpoint (None if never). Raises
    ``model.cluster.ActionNotEnabled`` naming the step if the model refuses an action."""
    cluster = make_cluster(topo, partitioner, seed)
    first = None
    for i, a in enumerate(trace, start=1):
        ma = to_model_action(cluster, a)
        if ma not in cluster.enabled_actions():
            raise ActionNotEnabled(f"step {i}: {ma!r} (z3 action {a}) is not enabled in the model")
        cluster.step(ma)
        bad = model_cut_violations(cluster)
        if bad and first is None:
            first = (i, bad)
    return cluster, first


def random_model_trace(topo: Topology, seed: int, partitioner: str = "hash", max_steps: int = 200) -> list[tuple]:
    """A seeded random run of the model restricted to the encoded action kinds (and to
    ``topo.checkpoints`` triggers); returns it as encoding actions."""
    rng = random.Random(seed)
    cluster = make_cluster(topo, partitioner, seed)
    out: list[tuple] = []
    for _ in range(max_steps):
        ntrig = sum(1 for r in cluster.trigger_results if r.ok)
        cands = []
        for a in cluster.enabled_actions():
            e = from_model_action(cluster, a)
            if e is None or (e[0] == "TriggerCheckpoint" and ntrig >= topo.checkpoints):
                continue
            cands.append((e, a))
        if not cands:
            break
        e, a = cands[rng.randrange(len(cands))]
        cluster.step(a)
        out.append(e)
    return out


def z3_traces(topo: Topology, count: int, depth: int | None = None, seed: int = 0) -> list[list[tuple]]:
    """Up to ``count`` distinct executions of exactly ``depth`` steps (default: the longest)
    drawn from the z3 relation (each new one differs from the earlier ones)."""
    K = topo.full_length if depth is None else depth
    u = Unrolling(topo, tag="t")
    u.solver.set("random_seed", seed)
    for _ in range(K):
        u.extend()
    out = []
    for _ in range(count):
        if u.solver.check() != z3.sat:
            break
        m = u.solver.model()
        codes = [m.eval(a, model_completion=True) for a in u.acts]
        out.append(u.trace(m))
        u.solver.add(z3.Or([a != v for a, v in zip(u.acts, codes)]))
    return out


# ---------------------------------------------------------------------------- checks


def _check(topo: Topology, expected: str, cross_check: bool = True) -> Callable[..., tuple]:
    def run(timeout_s: float | None = None):
        t0 = time.perf_counter()
        result, info = bmc(topo, timeout_s=timeout_s)
        elapsed = time.perf_counter() - t0
        K = topo.full_length
        if result == "proved":
            if info["last_checkpoint_completes"] != "sat":
                return "unknown", f"vacuous: checkpoint {topo.checkpoints} never completes within {K} steps", None
            return result, (f"every execution (<= {K} steps) completes only consistent cuts; checkpoint "
                            f"{topo.checkpoints} is reachable ({elapsed:.2f}s)"), None
        if result != "counterexample":
            return result, f"z3 gave up at depth {info.get('depth')} after {elapsed:.2f}s", None
        cex = {k: v for k, v in info.items() if k != "state"} | {"topology": attrs.asdict(topo)}
        if not cross_check:
            return result, f"{info['step']}-step trace breaks checkpoint {info['checkpoint']} ({elapsed:.2f}s)", cex
        # replay in the Python model: same checkpoint, same channel, same step
        try:
            _cluster, first = replay_in_model(topo, info["trace"])
        except Exception as e:  # noqa: BLE001 - a refused action is a cross-check failure
            return "unknown", f"cross-check failed: {e}", cex
        cex["model_replay"] = {"step": first[0], "violations": first[1]} if first else None
        want = (info["checkpoint"], info["channel"])
        if first is None or first[0] != info["step"] or want not in first[1]:
            return "unknown", (f"cross-check failed: z3 breaks checkpoint {want[0]} on channel {want[1]} "
                               f"at step {info['step']}, the model gives {first}"), cex
        trace = " ".join(_fmt(a) for a in info["trace"])
        return result, (f"{info['step']}-step trace [{trace}] breaks checkpoint {info['checkpoint']} on "
                        f"channel {info['channel']}; the model replays it with the same violation "
                        f"({elapsed:.2f}s)"), cex

    run.__doc__ = f"consistent cut of every completed checkpoint, mode {topo.mode}"
    return run


def _fmt(a: tuple) -> str:
    return {"SourceEmit": "E", "Deliver": "D", "TriggerCheckpoint": "T"}[a[0]] + (str(a[1]) if len(a) > 1 else "")


def _scope(topo: Topology) -> str:
    extra = "" if topo.overtake or not topo.unaligned else ", FIFO unaligned barriers"
    return (f"{topo.channels} sources x {topo.records} records -> 1 consumer, <= {topo.checkpoints} checkpoints, "
            f"capacity {topo.capacity}, all executions (k <= {topo.full_length}){extra}")


_TOPOS = {
    "barriers_aligned_consistent_cut": (Topology(mode="aligned"), "proved"),
    "barriers_unaligned_consistent_cut": (Topology(mode="unaligned"), "proved"),
    "barriers_unaligned_fifo_consistent_cut": (Topology(mode="unaligned", overtake=False), "proved"),
    "barriers_at_least_once_not_a_cut": (Topology(mode="at_least_once"), "counterexample"),
    "barriers_unaligned_no_channel_state_not_a_cut": (Topology(mode="unaligned_no_state"), "counterexample"),
}

#: (name, scope, expected, function)
CHECKS: list[tuple[str, str, str, Callable[..., tuple]]] = [
    (name, _scope(topo), expected, _check(topo, expected, cross_check=topo.overtake))
    for name, (topo, expected) in _TOPOS.items()
]


def register() -> None:
    """Register :data:`CHECKS` in ``spec.proofs``."""
    for name, scope, expected, fn in CHECKS:
        proofs.register(name, scope, expected, fn, f"checkpoint barriers: {fn.__doc__}")
