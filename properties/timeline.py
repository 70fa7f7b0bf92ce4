"""A counterexample as data a viewer steps through: every step with the state after it.

:func:`build_timeline` replays a whole-cluster counterexample through the one step function
(``properties.engines.replay``, the recorded actions and then the drain policy's, exactly as
``flinkspec replay`` runs them) and, before each step, records what an explorer of the run
wants to see:

* the step itself -- the action, its kind's description and swimlane mark (both from the
  action-kind registry, ``model.actions``), whether it was supplied by the drain policy;
* the actions that were *enabled* at that point and not taken (the run's other choices);
* the state *after* the step (:func:`snapshot`): channels (elements in flight, blocked,
  records received), tasks (status, valve watermarks, barrier handler, source offsets, the
  checkpoint trigger RPCs in flight to it),
  checkpoints (pending with who acknowledged, completed), sinks (transactions, committed
  output), keyed state per key group, the job (status, attempt, failures);
* what the violation concerns (:func:`concerns`: channel, checkpoint, key group, subtask,
  record, key), and the expected vs actual output per sink at the end (:func:`output_table`).

Everything here is plain data (dicts, lists, strings, numbers); ``properties.html`` renders
it and ``properties.itf`` writes it as an ITF trace. Nothing here changes the run.
"""

from __future__ import annotations

import re
from collections import Counter

import attrs

from model import actions as A
from model.events import LONG_MAX, LONG_MIN, CancelCheckpointMarker, CheckpointBarrier, EndOfPartitionEvent, \
    Watermark, WatermarkStatus
from model.reference import sink_output_by_operator
from properties.engines import replay
from spec.exactly_once import canonical

#: runs of at least this many uneventful steps are collapsed by the viewer
COLLAPSE_AT = 4


@attrs.frozen(kw_only=True)
class Step:
    index: int
    action: str
    kind: str
    description: str
    #: the swimlane mark (``ActionKind.mark``): lane, from_lane, shape, color
    mark: dict
    #: the enabled actions not taken here: (action, description)
    alternatives: tuple
    #: supplied by the drain policy after the file's actions
    drained: bool
    #: checkpoint ids that completed with this step
    completed: tuple
    #: the subtask lane that acts in this step (empty: the coordinator's lane)
    lanes: tuple
    #: True unless only records moved and no checkpoint, failure or status changed
    eventful: bool


@attrs.frozen(kw_only=True)
class Timeline:
    title: str
    header: dict
    job: dict
    #: one lane per subtask: {"id", "name", "vertex"}
    lanes: tuple
    #: one lane per component beside the subtasks (``model.actions.component_lanes``):
    #: JobManager processes, TaskExecutors, the HA store, checkpoint storage — {"id", "name"}
    components: tuple
    #: {"id", "producer", "consumer", "blocking", "partitioner"}
    channels: tuple
    steps: tuple
    #: states[0] is the initial deployment, states[i + 1] the state after step i
    states: tuple
    violation: dict
    #: the step the violation is marked at (== len(steps) when it is judged at the run's end)
    violation_step: int | None
    concerns: tuple
    #: expected vs actual output per sink (at the last state)
    output: tuple
    #: the run ended (drained or stopped) rather than stopping at an always-invariant's violation
    ended: bool
    reproduced: bool


# -- state -------------------------------------------------------------------------------------

def _ts(t: int) -> str:
    if t == LONG_MIN:
        return "-inf"
    if t == LONG_MAX:
        return "+inf"
    return str(t)


def element_text(e) -> str:
    """A channel element in a few characters."""
    if type(e) is tuple:
        return f"({e[0]!r}, {e[1]!r}, @{e[2]})"
    if isinstance(e, CheckpointBarrier):
        return f"barrier {e.id}" + (" savepoint" if e.savepoint else "") + (" unaligned" if e.unaligned else "")
    if isinstance(e, Watermark):
        return f"watermark {_ts(e.timestamp)}"
    if isinstance(e, WatermarkStatus):
        return "IDLE" if e.idle else "ACTIVE"
    if isinstance(e, CancelCheckpointMarker):
        return f"cancel {e.checkpoint_id}"
    if isinstance(e, EndOfPartitionEvent):
        return "EndOfPartition"
    return repr(e)


def _handler_text(h) -> str | None:
    if h is None:
        return None
    if hasattr(h, "aligned"):  # SingleCheckpointBarrierHandler
        text = f"{h.state}"
        if h.current_id >= 0:
            text += f", checkpoint {h.current_id}, barriers from inputs {sorted(h.aligned)}"
        return text
    pending = getattr(h, "pending", None)  # CheckpointBarrierTracker
    if pending:
        return "tracking " + ", ".join(f"checkpoint {e[0]}: inputs {sorted(e[2])}" + (" (aborted)" if e[3] else "")
                                       for e in pending)
    return "idle"


def _keyed_state(task) -> dict:
    out = {}
    for name, op in task.keyed_operators.items():
        per_kg = {}
        for kg, st in op.snapshot_state().items():
            if hasattr(st, "contents"):  # WindowKeyGroupState
                parts = [f"{k!r} [{w.start},{w.end}) = {a!r}" for k, w, a in st.contents]
                if st.timers:
                    parts.append("timers " + ", ".join(f"{ts}" for ts, _k, _w in st.timers))
            else:  # KeyedAggregateKeyGroupState
                parts = [f"{k!r} = {v!r}" for k, v in st.values]
            per_kg[f"kg {kg}"] = "; ".join(parts) or "-"
        out[name] = per_kg
    return out


def _slot_text(view) -> str:
    """A slot as a component sees it: ``FREE``, or its allocation and owning JobMasterId."""
    if view is None or view[0] in (None, "FREE"):
        return "FREE"
    return f"allocation {view[1]} of JobMaster session {view[2]}" if view[0] == "ALLOCATED" else str(view)


def _control_plane(cp, names: list) -> dict:
    """The control plane's components (``model.controlplane``): each JobManager process with
    its ResourceManager and JobMaster, each slot as the SlotManager, the TaskExecutor and the
    SlotPool see it (the three views ``slot_views_agree`` compares), each TaskExecutor, the RPC
    messages in flight and the HA store's nodes."""
    jms = {}
    for p in cp.jms:
        d = {"alive": p.alive, "leader_latch": p.latch or "-",
             "leader_session": "-" if p.token is None else f"session {p.token}"}
        if p.rm is not None:
            d["resource_manager"] = {"session": f"session {p.rm.token}",
                                     "registered": [f"te{t} (incarnation {i})" for t, i in sorted(p.rm.registered.items())],
                                     "requirements": [f"JobMaster session {j}: {n} slot(s)"
                                                      for j, n in sorted(p.rm.requirements.items())]}
        jm = p.jobmaster
        if jm is not None:
            d["job_master"] = {"session": f"session {jm.token}", "status": jm.status,
                               "slot_pool": [f"allocation {a} in te{i}/{slot}"
                                             for a, (i, _inc, slot) in sorted(jm.pool.items())],
                               "waiting_for_deployment": [names[t] for t in sorted(jm.pending) if t < len(names)]}
        jms[f"jm{p.index}"] = d
    slots = {}
    for te in cp.tes:
        for slot, view in enumerate(te.slots):
            row = {"task_executor": "FREE" if view is None else
                   f"allocation {view[0]} of JobMaster session {view[1]}" + ("" if view[2] else " (inactive)")}
            for p in cp.jms:
                if p.alive and p.rm is not None:
                    row[f"slot_manager (jm{p.index})"] = _slot_text(p.rm.slots.get((te.index, slot)))
                if p.alive and p.jobmaster is not None:
                    held = [a for a, (i, _inc, s) in p.jobmaster.pool.items() if (i, s) == (te.index, slot)]
                    row[f"slot_pool (jm{p.index})"] = ", ".join(f"allocation {a}" for a in sorted(held)) or "-"
            slots[f"slot te{te.index}/{slot}"] = row
    tes = {}
    for te in cp.tes:
        tes[f"te{te.index}"] = {
            "alive": te.alive, "incarnation": te.inc, "registered": te.registered,
            "resource_manager": "-" if te.rm_token is None else f"session {te.rm_token}",
            "job_leader": "-" if te.job_token is None else f"session {te.job_token}",
            "deployed": [f"slot {s}: " + ", ".join(names[t] if t < len(names) else str(t) for t, _a in ex)
                         for s, ex in sorted(te.deployed.items())]}
    store = {}
    for path, node in sorted(cp.store.nodes.items()):
        if path == "/":
            continue
        store[path] = f"{node.data!r} (version {node.version}" + (f", ephemeral of session {node.owner})"
                                                                   if node.owner else ")")
    return {"job_managers": jms, "slots": slots, "task_executors": tes,
            "rpc_in_flight": [repr(m) for m in cp.net.in_flight], "ha_store": store}


def _deployment(d, names: list) -> dict:
    """A deployment mode's cluster (``model.clusterentrypoint``, docs/deployment.md): each job
    apart (its status, JobMaster attempt, tasks with the subtasks they hold, slot pool), each
    worker's slots with the job they are allocated to and the tasks in them, the SlotManager,
    the ActiveResourceManager's workers and the Dispatcher's HA data."""
    groups = d.setup.groups
    jobs = {}
    for r in d.jobs:
        jobs[f"job {r.index}"] = {
            "status": r.status, "job_master_attempt": r.attempt,
            "tasks": [f"task {t} ({', '.join(names[s] for s in groups[t] if s < len(names))}): {state}"
                      for t, state in enumerate(r.tasks)],
            "slot_pool": [f"allocation {a} in worker {w}/slot {s}" for a, (w, s) in sorted(r.pool.items())],
            "requirement": d.slot_manager.requirements.get(r.index, 0),
            "job_graph_in_ha_store": r.index in d.dispatcher.job_graphs,
            "result": d.dispatcher.results.get(r.index, "-")}
    workers = {}
    for w in sorted(d.workers):
        t = d.workers[w]
        workers[f"worker {w}"] = {
            f"slot {i}": ("FREE" if v is None else f"allocation {v[0]} of job {v[1]}" +
                          (" (RELEASING)" if v[2] == "RELEASING" else "")) +
                         "".join(f"; job {j} task {k} attempt {a} {st}" for j, k, a, st in t.tasks.get(i, ()))
            for i, v in enumerate(t.slots)}
    out = {"mode": d.mode, "jobs": jobs, "workers": workers,
           "slot_manager": {f"worker {w}/slot {s}": "FREE" if v is None else f"allocation {v[0]} of job {v[1]}"
                            for (w, s), v in sorted(d.slot_manager.slots.items())},
           "dispatcher": {"shut_down": d.dispatcher.shut_down, "ha_data_cleaned": d.dispatcher.ha_cleaned}}
    if d.active is not None:
        out["active_resource_manager"] = {
            "pending_workers": [f"worker {w} ({n} interval(s) pending)" for w, n in sorted(d.active.pending.items())],
            "idle_workers": [f"worker {w} ({n} interval(s) idle)" for w, n in sorted(d.active.idle.items())]}
    return out


def _storage(st) -> dict:
    """Checkpoint storage (``model.checkpointstorage``): every file (existing, scheduled for
    deletion, deleted and by whom), the SharedStateRegistry's entries, and which snapshots
    the job keeps or was given."""
    files = {}
    for path in sorted(set(st.files) | set(st.deleted)):
        if path in st.files:
            files[path] = "exists" + (f", delete scheduled: {st.scheduled[path]}" if path in st.scheduled else "")
        else:
            files[path] = f"deleted by the {st.deleted[path]}"
    registry = {path: f"created by checkpoint {e.created_by}, last used by checkpoint {e.last_used}"
                for path, e in sorted(st.registry.entries.items())}
    snapshots = {f"checkpoint {cid}": {"files": [p for h in hs.values() for p in h.paths],
                                       "savepoint": cid in st.savepoints, "owned_by_the_job": cid in st.owned}
                 for cid, hs in sorted(st.handles.items())}
    return {"files": files, "shared_state_registry": registry, "snapshots": snapshots,
            "restored": "-" if st.restored is None else
            f"checkpoint {st.restored[0]} in {st.restored[1]} mode" + (" (released by the user)" if st.released else "")}


def snapshot(run) -> dict:
    """The state of ``run``'s cluster as nested plain data (sections -> names -> fields)."""
    c = run.cluster
    eg = c.eg
    net = c.net
    names = [s.name for s in eg.subtasks]
    channels = {}
    for ch in eg.channels:
        i = ch.id
        q = net.queues[i]
        items = list(q)[net.read_pos[i]:] if net.blocking[i] else list(q)
        channels[f"ch{i}"] = {
            "route": f"{names[ch.producer]} -> {names[ch.consumer]}",
            "in_flight": [element_text(e) + (" (priority)" if j < net.prio[i] else "") for j, e in enumerate(items)],
            "blocked": bool(net.blocked[i]),
            "received": net.received[i],
        }
        if net.network and net.remote[i]:  # the network stack's buffers and credits (docs/network.md)
            channels[f"ch{i}"]["network"] = net.buffers(i)
    tasks = {}
    keyed = {}
    for t in c.tasks:
        d = {"status": t.status}
        if t.valve is not None:
            d["output_watermark"] = _ts(t.valve.last_output_watermark)
            d["input_watermarks"] = [_ts(w) + (" idle" if idle else "")
                                     for w, idle in zip(t.valve.channel_watermarks, t.valve.channel_idle)]
        if t.source is not None:
            d["source_offsets"] = [f"split {s[0]}: {s[2]}/{len(s[1])}" for s in t.source.splits]
            d["source_idle"] = bool(t.source.wm_output.is_idle)
        h = _handler_text(t.handler)
        if h is not None:
            d["barrier_handler"] = h
        if t.triggers or t.aborted_triggers:
            # trigger RPCs in flight (Environment.trigger_delivery "any_order"): what decides
            # whether the task takes, ignores or cancels each one when it arrives
            d["triggers_in_flight"] = [f"checkpoint {b.id}" for b in t.triggers]
            d["newest_checkpoint_taken"] = t.last_triggered
            if t.aborted_triggers:
                d["notified_aborted"] = [f"checkpoint {x}" for x in t.aborted_triggers]
        if t.persisting:
            d["persisting_channel_state"] = [f"ch{t.plan.input_channels[i]}" for i in sorted(t.persisting)]
        tasks[names[t.id]] = d
        ks = _keyed_state(t)
        if ks:
            keyed[names[t.id]] = ks
    coord = c.coordinator
    pending = {}
    for cid, p in coord.pending.items():
        pending[f"checkpoint {cid}"] = {
            "savepoint": bool(p.properties.is_savepoint),
            "acknowledged": [names[s] for s in sorted(p.acknowledged)],
            "waiting_for": [names[s] for s in sorted(p.not_yet_acknowledged)],
        }
    txns = {}
    for tid, txn in sorted(c.external.transactions.items()):
        # a sink writer's owner id is generation * 100000 + subtask id (Cluster._sink)
        gen, sid = divmod(tid.owner, 100_000)
        owner = (names[sid] if sid < len(names) else f"subtask {sid}") + (f" gen {gen}" if gen else "")
        txns[f"{owner} #{tid.seq}"] = {
            "status": txn.status,
            "checkpoint": txn.checkpoint_id if txn.checkpoint_id is not None else -1,
            "records": [element_text(r) for r in txn.records],
        }
    committed = {name: [element_text(r) for r in recs] for name, recs in sink_output_by_operator(c).items()}
    out = {
        "job": {"status": c.status, "step": c.now, "attempt": c.attempt, "failures": c.failures,
                "restarts": c.restarts},
        "channels": channels,
        "tasks": tasks,
        "checkpoints": {"pending": pending, "completed": list(c.completed_ids),
                        "next_id": coord.next_checkpoint_id},
        "sinks": {"transactions": txns, "committed": committed},
        "keyed_state": keyed,
    }
    if c.cp is not None:
        out["control_plane"] = _control_plane(c.cp, names)
    if c.deployment is not None:  # the jobs of a session cluster apart (docs/deployment.md)
        out["deployment"] = _deployment(c.deployment, names)
    if c.storage is not None:
        out["storage"] = _storage(c.storage)
    return out


def _text(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]" if v else "-"
    return str(v)


def flatten(state: dict) -> dict:
    """``{"section › name › field": text}`` in the snapshot's order (lists become one text)."""
    out = {}

    def walk(prefix, v):
        if isinstance(v, dict) and v:
            for k, x in v.items():
                walk(f"{prefix} › {k}" if prefix else str(k), x)
        elif isinstance(v, dict):
            out[prefix] = "-"
        else:
            out[prefix] = _text(v)
    walk("", state)
    return out


# -- what the violation concerns ---------------------------------------------------------------

def _refs_of_value(key: str, v, names: dict, out: set) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _refs_of_value(k, x, names, out)
        return
    if key == "channel" and type(v) is int:
        out.add(f"ch{v}")
    elif key in ("checkpoint", "savepoint", "checkpoint_id") and type(v) is int:
        out.add(f"cp{v}")
    elif key == "key_group" and type(v) is int:
        out.add(f"kg{v}")
    elif key == "subtask":
        if type(v) is int:
            out.add(f"task{v}")
        elif isinstance(v, str) and v in names:
            out.add(f"task{names[v]}")
    elif key == "record" and isinstance(v, list) and len(v) == 3:
        out.add("rec:" + element_text(tuple(v)))
        out.add(f"key:{v[0]!r}")
    elif key in ("missing", "duplicated", "unexpected") and isinstance(v, list):
        for e in v:
            if isinstance(e, dict) and "key" in e:
                out.add(f"key:{e['key']!r}")
    elif key == "sink" and isinstance(v, str):
        out.add(f"sink:{v}")
    elif key == "task_executor" and type(v) is int:
        out.add(f"te:te{v}")


#: a state file's path (``model.checkpointstorage``: ``shared/...``, ``chk-<id>/...``, ``sp-<id>/...``)
FILE_PATH = re.compile(r"\b((?:shared|chk-\d+|sp-\d+)/[\w@.-]+)")


def component_refs(text: str) -> set:
    """The control-plane and storage element ids ``text`` names: ``slot:te<i>/<s>`` (a slot:
    not its whole TaskExecutor), ``te:te<i>``, ``session:<n>`` (a leader session, i.e. a ResourceManagerId / JobMasterId),
    ``cp<n>`` (``checkpoint id <n>``), ``file:<path>``."""
    out = set()
    for te, slot in re.findall(r"\bte(\d+)/(\d+)\b", text) + re.findall(r"'te(\d+)', (\d+)", text):
        out.add(f"slot:te{te}/{slot}")
    out.update(f"te:te{t}" for t in re.findall(r"\bte(\d+)\b(?!/)", text))
    out.update(f"session:{n}" for n in re.findall(r"\b(?:leader session|JobMaster(?: session)?) (\d+)", text))
    out.update(f"cp{n}" for n in re.findall(r"\bcheckpoint id (\d+)", text))
    out.update(f"file:{p}" for p in FILE_PATH.findall(text))
    return out


def deployment_refs(actual, msg: str) -> set:
    """The deployment mode's element ids (docs/deployment.md) a violation names: ``job:<n>`` (a
    job of the session), ``slot:w<w>/<s>`` (a slot of worker ``w``), ``worker:<w>``, and the
    ActiveResourceManager's ``workers:pending`` / ``workers:idle``."""
    out = set()
    if isinstance(actual, dict):
        job, w, s = actual.get("job"), actual.get("worker"), actual.get("slot")
        if type(job) is int:
            out.add(f"job:{job}")
        if type(w) is int:
            out.add(f"worker:{w}" if type(s) is not int else f"slot:w{w}/{s}")
        if "pending_workers" in actual or "pending for" in actual:  # the ActiveResourceManager's workers
            out.add("workers:pending")
        if "idle for" in actual:
            out.add("workers:idle")
        out.update(f"worker:{x}" for x in actual.get("pending_workers", ()) if type(x) is int)
    out.update(f"job:{n}" for n in re.findall(r"\bjob\(?s?\)? (\d+)", msg))
    out.update(f"slot:w{w}/{s}" for w, s in re.findall(r"\bworker (\d+) slot (\d+)", msg))
    out.update(f"worker:{w}" for w in re.findall(r"\bworker (\d+)\b(?! slot)", msg))
    return out


def concerns(violation, eg) -> tuple:
    """The ids of the elements the violation names: ``ch<N>``, ``cp<N>``, ``kg<N>``,
    ``task<N>``, ``rec:<record>``, ``key:<key>``, ``sink:<operator>`` and the components'
    (:func:`component_refs`), from its expected and actual values and its message; for a restart set, the subtasks that should have restarted
    and did not."""
    names = {s.name: s.id for s in eg.subtasks}
    out: set = set()
    for part in (violation.expected, violation.actual):
        if isinstance(part, dict):
            for k, v in part.items():
                _refs_of_value(k, v, names, out)
    exp, act = violation.expected, violation.actual
    if isinstance(exp, dict) and isinstance(act, dict) and isinstance(exp.get("restart"), list) \
            and isinstance(act.get("restart"), list):
        out.update(f"task{t}" for t in set(exp["restart"]) - set(act["restart"]) if type(t) is int)
    msg = violation.message or ""
    out.update(component_refs(" ".join(str(x) for x in (exp, act, msg))))
    out.update(deployment_refs(act, msg))
    if type(exp) is int and "checkpoint" in msg:  # e.g. the latest checkpoint a restore should have used
        out.add(f"cp{exp}")
    out.update(f"cp{m}" for m in re.findall(r"\b(?:checkpoint|savepoint) (\d+)", msg))
    out.update(f"ch{m}" for m in re.findall(r"\bchannel (\d+)", msg))
    for name, sid in names.items():
        if name in msg:
            out.add(f"task{sid}")
    return tuple(sorted(out))


def state_refs(path: str, names: dict) -> tuple:
    """The element ids a flattened state path is about (to mark the ones the violation concerns);
    ``names``: subtask name -> id."""
    refs = []
    parts = path.split(" › ")
    if len(parts) >= 3 and parts[0] == "sinks" and parts[1] == "committed":
        refs.append(f"sink:{parts[2]}")
    for p in parts:
        p = re.sub(r" #\d+\Z", "", p)  # a transaction "sink (1/1) #0" belongs to its subtask
        if re.fullmatch(r"ch\d+", p):
            refs.append(p)
        elif p in names:
            refs.append(f"task{names[p]}")
        elif p.startswith("checkpoint ") and p[11:].isdigit():
            refs.append(f"cp{p[11:]}")
        elif p.startswith("kg ") and p[3:].isdigit():
            refs.append(f"kg{p[3:]}")
        elif re.fullmatch(r"slot te\d+/\d+", p):
            refs.append(f"slot:{p[5:]}")
        elif re.fullmatch(r"te\d+", p):
            refs.append(f"te:{p}")
        elif FILE_PATH.fullmatch(p):
            refs.append(f"file:{p}")
    if parts[0] == "deployment":  # a deployment mode's jobs, workers and slots (deployment_refs)
        for i, p in enumerate(parts):
            if re.fullmatch(r"job \d+", p):
                refs.append(f"job:{p[4:]}")
            elif re.fullmatch(r"worker \d+", p):
                slot = parts[i + 1] if i + 1 < len(parts) else ""
                refs.append(f"slot:w{p[7:]}/{slot[5:]}" if re.fullmatch(r"slot \d+", slot) else f"worker:{p[7:]}")
            elif re.fullmatch(r"worker \d+/slot \d+", p):
                w, s = re.findall(r"\d+", p)
                refs.append(f"slot:w{w}/{s}")
            elif p in ("pending_workers", "idle_workers"):
                refs.append(f"workers:{p[:-8]}")
    return tuple(refs)


# -- expected vs actual output ------------------------------------------------------------------

def _record_text(r) -> str:
    """A record as the sink's comparison sees it: the fields it ignores (None) left out."""
    r = tuple(r)
    if len(r) == 3 and r[2] is None:
        return f"({r[0]!r})" if r[1] is None else f"({r[0]!r}, {r[1]!r})"
    return element_text(r)


def output_table(run) -> tuple:
    """Per sink operator: the reference output (the same job at p=1 without failures) and the
    committed output of ``run`` now, as rows ``{"record", "expected", "actual"}`` counted as
    multisets, differences first."""
    expected = run.expected.output
    actual = sink_output_by_operator(run.cluster)
    tables = []
    for name in sorted(expected):
        mode = run.expected.modes.get(name, "multiset")
        got = actual.get(name, [])
        if mode == "upsert":  # an upsert sink is judged by its final table: the last write per key
            got = list({k: (k, v, ts) for k, v, ts in got}.values())
        e = Counter(_record_text(r) for r in canonical(expected[name], mode))
        a = Counter(_record_text(r) for r in canonical(got, mode))
        rows = [{"record": r, "expected": e.get(r, 0), "actual": a.get(r, 0)} for r in sorted(set(e) | set(a))]
        rows.sort(key=lambda row: (row["expected"] == row["actual"], row["record"]))
        tables.append({"sink": name, "mode": mode, "rows": rows,
                       "expected_count": sum(e.values()), "actual_count": sum(a.values())})
    return tuple(tables)


# -- the timeline ------------------------------------------------------------------------------

def _lanes_of(mark: dict) -> tuple:
    """The subtask that acts in a step (a delivery's consumer; none for the coordinator's actions)."""
    return () if mark.get("lane") is None else (mark["lane"],)


def build_timeline(cx, *, alternatives: bool = True, replay_with=None) -> Timeline:
    """Replay the whole-cluster counterexample ``cx`` (already checked by
    ``properties.counterexample.check_replay``) and record every step and state.
    ``replay_with(observe)``, if given, runs the file's steps instead of
    ``properties.engines.replay`` and returns ``(violation now, run)`` (a trace divergence's
    run: ``properties.tracecounterexample``)."""
    steps: list = []
    states: list = []
    file_len = len(cx.actions)

    def observe(run, a):
        c = run.cluster
        states.append(snapshot(run))  # the state after the previous step (or the deployment)
        if steps:
            _close_previous(run)
        unit = A.kind_of(a)
        i = len(steps)
        mark = unit.mark(c, a)
        alts = ()
        if alternatives:
            alts = tuple((repr(b), A.kind_of(b).describe(c, b)) for b in c.enabled_actions() if b != a)
        steps.append({"index": i, "action": repr(a), "kind": unit.name, "description": unit.describe(c, a),
                      "mark": mark, "alternatives": alts, "drained": i >= file_len,
                      "completed_before": len(c.completed_ids), "status_before": c.status,
                      "failures_before": c.failures})

    def _close_previous(run):
        s = steps[-1]
        c = run.cluster
        s["completed"] = tuple(c.completed_ids[s.pop("completed_before"):])
        status, failures = s.pop("status_before"), s.pop("failures_before")
        s["changed_status"] = c.status != status or c.failures != failures

    if replay_with is not None:
        v_now, run = replay_with(observe)
    else:
        v_now, run = replay(cx.scenario, cx.actions, finish=True, observe=observe)
    states.append(snapshot(run))
    if steps:
        _close_previous(run)
    eg = run.cluster.eg
    out_steps = []
    for s in steps:
        mark = s["mark"]
        quiet = A.KINDS[A.ACTIONS_BY_NAME[s["kind"]]].moves_records or mark.get("shape") == "record"
        eventful = not quiet or bool(s["completed"] or s["changed_status"])
        out_steps.append(Step(index=s["index"], action=s["action"], kind=s["kind"], description=s["description"],
                              mark=mark, alternatives=s["alternatives"], drained=s["drained"],
                              completed=tuple(s["completed"]), lanes=_lanes_of(mark), eventful=eventful))
    rec = cx.violation
    reproduced = v_now is not None and v_now.invariant == rec.invariant and v_now.step == rec.step
    vstep = rec.step
    if vstep is not None and vstep > len(out_steps):
        vstep = len(out_steps)
    g = cx.scenario.graph
    job = {
        "operators": [{"name": o.name, "kind": o.kind, "parallelism": o.parallelism} for o in g.operators],
        "edges": [{"source": e.source, "target": e.target, "partitioner": e.partitioner,
                   "exchange_mode": e.exchange_mode} for e in g.edges],
        "config": _config_text(cx.scenario),
    }
    lanes = tuple({"id": s.id, "name": s.name, "vertex": s.job_vertex, "index": s.subtask_index,
                   "parallelism": s.parallelism} for s in eg.subtasks)
    part_of = {}
    for parts in eg.partitions:
        for p in parts:
            for chid in p.channels:
                part_of[chid] = p
    chans = tuple({"id": ch.id, "producer": ch.producer, "consumer": ch.consumer,
                   "blocking": bool(part_of[ch.id].blocking) if ch.id in part_of else False,
                   "partitioner": part_of[ch.id].partitioner if ch.id in part_of else ""} for ch in eg.channels)
    h = cx.header
    return Timeline(
        title=f"{rec.invariant} — {h.get('variant', '')}", header={k: h.get(k) for k in (
            "variant", "engine", "seed", "model_version", "expected_verdict", "invariant")} | {"path": cx.path},
        job=job, lanes=lanes, components=A.component_lanes(run.cluster), channels=chans, steps=tuple(out_steps), states=tuple(states),
        violation=rec.to_dict(), violation_step=vstep, concerns=concerns(rec, eg), output=output_table(run),
        ended=run.cluster.is_drained() or run.cluster.status != "RUNNING",
        reproduced=reproduced)


def _config_text(scenario) -> str:
    cfg = scenario.config
    parts = [f"{cfg.barrier_mode} checkpoints", f"failover {cfg.failover_strategy}",
             f"max concurrent {cfg.max_concurrent_checkpoints}", f"channel capacity {scenario.scope.channel_capacity}"]
    if scenario.environment.max_failures:
        parts.append(f"max failures {scenario.environment.max_failures}")
    if scenario.seams:
        parts.append("seams " + ", ".join(scenario.seams))
    return ", ".join(parts)
