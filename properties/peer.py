"""Flink's own unit tests as a peer suite: their inputs and asserted outcomes as data, run
against the model.

Each file ``tests/peer/<FlinkTestClass>.json`` holds the cases of one Flink test class: every
test method is listed, either ``"status": "ported"`` with the input sequence and what Flink
asserts, or ``"status": "skipped"`` with the reason it cannot be expressed in the model. A case
may name assertions it leaves out (``not_ported``) and a ``note`` on how it was translated.
A file's ``kind`` (or a case's own ``kind``) names the runner in :data:`RUNNERS`; a runner
executes one case against the model and returns the list of disagreements (empty: the model
agrees with what Flink asserts). A case may also carry ``"difference"``: the documented
deliberate difference it exhibits, naming the page section that explains it; such a case
must disagree, exactly with the listed disagreements.

Everything here reads the model; nothing is recorded from it: the expected values in the files
are Flink's (copied from its assertions), never the model's output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from model.channelstaterescaling import (
    SUBTASK_STATE_MAPPERS,
    inflight_data_rescaling_descriptor,
    old_subtasks,
)
from model.checkpointfailuremanager import CheckpointFailureManager, FailJob
from model.checkpointcoordinator import (
    CheckpointAborted,
    CheckpointCompleted,
    CheckpointCoordinator,
    CheckpointProperties,
    CompletedCheckpoint,
    CompletedCheckpointStore,
    PendingCheckpoint,
    CheckpointTriggered,
    CheckpointTriggerFailed,
    NotifyCheckpointAborted,
    NotifyCheckpointComplete,
)
from model.checkpointstorage import CheckpointStorage, KeyedStateHandle
from model.cluster import RuntimeConfig
from model.errors import FlinkspecError, InvalidArgument
from model.eventtime import BoundedOutOfOrdernessWatermarks
from model.failover import RestartPipelinedRegionFailoverStrategy, pipelined_regions
from model.jobgraph import BLOCKING, PIPELINED_BOUNDED, build_job_graph
from model import rpc
from model.jobmaster import JobMaster
from model.keygroups import EMPTY_KEY_GROUP_RANGE, KeyGroupRange, compute_key_group_ranges, \
    compute_operator_index_for_key_group
from model.resourcemanager import FREE, ResourceManager
from model.sharedstateregistry import RESTORE_MODES, SharedStateRegistry
from model.taskexecutor import TaskExecutor
from model.stateassignment import repartition_operator_state
from model.streamgraph import stream_graph_from_dict
from model.watermarkstatus import RecordingValveOutput, StatusWatermarkValve
from model.windowing import RecordingWindowOutput, SlidingEventTimeWindows, TumblingEventTimeWindows, WindowOperator

ROOT = Path(__file__).resolve().parents[1]
PEER_DIR = ROOT / "tests" / "peer"
STATUSES = ("ported", "skipped")


class PeerSpecError(FlinkspecError):
    """A peer-suite data file is malformed (names the file, case and field)."""


# ------------------------------------------------------------------------------------------
# java.util.Random (Flink's randomized tests draw their inputs from it)
# ------------------------------------------------------------------------------------------


class JavaRandom:
    """``java.util.Random``: the 48-bit LCG, ``nextInt(bound)`` exactly as the JDK draws it."""

    _MULT = 0x5DEECE66D
    _MASK = (1 << 48) - 1

    def __init__(self, seed: int):
        self.seed = (seed ^ self._MULT) & self._MASK

    def _next(self, bits: int) -> int:
        self.seed = (self.seed * self._MULT + 0xB) & self._MASK
        r = self.seed >> (48 - bits)
        return r - (1 << 32) if r >= 1 << 31 else r  # Java's (int) cast

    def next_int(self, bound: int) -> int:
        if bound <= 0:
            raise InvalidArgument("bound must be positive")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + m < (1 << 31):
                return r
            u = self._next(31)


# ------------------------------------------------------------------------------------------
# loading
# ------------------------------------------------------------------------------------------


def load_peer_file(path: str | os.PathLike) -> dict:
    """One data file, checked for shape (not for content: the runners check that)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise PeerSpecError(f"{path.name}: cannot read peer data: {e}") from None
    for field in ("flink_class", "flink_path", "kind", "model", "cases"):
        if field not in data:
            raise PeerSpecError(f"{path.name}: missing field {field!r}")
    names = set()
    for i, case in enumerate(data["cases"]):
        name = case.get("name")
        if not isinstance(name, str):
            raise PeerSpecError(f"{path.name}: case #{i} has no name")
        if name in names:
            raise PeerSpecError(f"{path.name}: case {name} is listed twice")
        names.add(name)
        status = case.get("status")
        if status not in STATUSES:
            raise PeerSpecError(f"{path.name}: {name}: status must be one of {STATUSES}, not {status!r}")
        if status == "skipped" and not case.get("reason"):
            raise PeerSpecError(f"{path.name}: {name}: a skipped case needs a reason")
        kind = case.get("kind", data["kind"])
        if status == "ported" and kind not in RUNNERS:
            raise PeerSpecError(f"{path.name}: {name}: unknown kind {kind!r} (one of {sorted(RUNNERS)})")
    return data


def peer_files(directory: str | os.PathLike = PEER_DIR) -> list[Path]:
    return sorted(Path(directory).glob("*.json"))


def load_all(directory: str | os.PathLike = PEER_DIR) -> list[dict]:
    return [load_peer_file(p) for p in peer_files(directory)]


def run_case(data: dict, case: dict, quick: bool = False) -> list[str]:
    """The disagreements of one ported case (empty: the model agrees with Flink). ``quick``:
    a case's ``quick`` fields replace its own (a prefix of Flink's random draws, for the
    default test run; the full draws run in the slow suite and for the conformance page)."""
    kind = case.get("kind", data["kind"])
    if quick and "quick" in case:
        case = {**case, **case["quick"]}
    try:
        return RUNNERS[kind](case)
    except PeerSpecError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise PeerSpecError(f"{data['flink_class']}#{case['name']}: malformed case ({type(e).__name__}: {e})") from None


def case_verdict(data: dict, case: dict, quick: bool = False) -> tuple[str, list[str]]:
    """``("agrees" | "documented difference" | "DISAGREES" | "skipped", disagreements)``.

    A case marked with a ``difference`` must disagree with exactly the listed messages."""
    if case["status"] == "skipped":
        return "skipped", []
    got = run_case(data, case, quick)
    diff = case.get("difference")
    if diff is not None:
        if got == diff["disagreements"]:
            return "documented difference", got
        return "DISAGREES", got or ["documented difference no longer shows: update the data and docs"]
    return ("agrees", []) if not got else ("DISAGREES", got)


def summary(datas: list[dict], quick: bool = False) -> list[dict]:
    """Per Flink test class: ported, agreeing, documented differences, skipped, disagreeing."""
    rows = []
    for data in datas:
        row = {"flink_class": data["flink_class"], "model": data["model"], "scope": data.get("scope"),
               "cases": len(data["cases"]),
               "ported": 0, "agreeing": 0, "differences": 0, "skipped": 0, "disagreeing": []}
        for case in data["cases"]:
            verdict, got = case_verdict(data, case, quick)
            if verdict == "skipped":
                row["skipped"] += 1
                continue
            row["ported"] += 1
            if verdict == "agrees":
                row["agreeing"] += 1
            elif verdict == "documented difference":
                row["differences"] += 1
            else:
                row["disagreeing"].append({"case": case["name"], "disagreements": got})
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------
# runners, one per kind
# ------------------------------------------------------------------------------------------


def _expect(out: list, what: str, got, want) -> None:
    if got != want:
        out.append(f"{what}: Flink asserts {want!r}, the model gives {got!r}")


def _assigner(spec: dict):
    t = spec["type"]
    if t == "tumbling":
        return TumblingEventTimeWindows(spec["size"], spec.get("offset", 0))
    if t == "sliding":
        return SlidingEventTimeWindows(spec["size"], spec["slide"], spec.get("offset", 0))
    raise PeerSpecError(f"unknown assigner type {t!r}")


def run_window_assigner(case: dict) -> list[str]:
    out: list[str] = []
    if "assign" in case:
        a = _assigner(case["assigner"])
        for ts, windows in case["assign"]:
            got = [[w.start, w.end] for w in a.assign_windows(ts)]
            if case.get("any_order"):
                got, windows = sorted(got), sorted(windows)
            _expect(out, f"assignWindows({ts})", got, windows)
    for bad in case.get("invalid", ()):
        try:
            _assigner(bad["assigner"])
        except InvalidArgument as e:
            if bad["error_contains"] not in str(e):
                out.append(f"{bad['assigner']}: Flink's IllegalArgumentException says {bad['error_contains']!r}, "
                           f"the model's error says {str(e)!r}")
        else:
            out.append(f"{bad['assigner']}: Flink rejects it (IllegalArgumentException), the model accepts it")
    return out


def run_bounded_out_of_orderness(case: dict) -> list[str]:
    out: list[str] = []
    g = BoundedOutOfOrdernessWatermarks(case["out_of_orderness"])
    for i, step in enumerate(case["steps"]):
        if "event" in step:
            g.on_event(step["event"])
        elif "emit" in step:
            w = g.on_periodic_emit()
            if step["emit"] is not None:
                _expect(out, f"step {i}: onPeriodicEmit", w, step["emit"])
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


def run_key_group_range(case: dict) -> list[str]:
    out: list[str] = []

    def rng(pair):
        return EMPTY_KEY_GROUP_RANGE if pair == "EMPTY" else KeyGroupRange.of(*pair)

    for a, b, want in case.get("intersections", ()):
        got = rng(a).get_intersection(rng(b))
        _expect(out, f"{a}.getIntersection({b})", got, rng(want))
    for s, e in case.get("basics", ()):
        r = KeyGroupRange.of(s, e)
        n = max(0, e - s + 1)
        _expect(out, f"of({s},{e}).getNumberOfKeyGroups", r.number_of_key_groups, n)
        if n > 0:
            _expect(out, f"of({s},{e}) start/end", (r.start, r.end), (s, e))
            _expect(out, f"of({s},{e}) iteration", list(r), list(range(s, e + 1)))
            if not all(r.contains(i) for i in range(s, e + 1)):
                out.append(f"of({s},{e}) does not contain all of its key groups")
            _expect(out, f"of({s},{e}).contains({s - 1})", r.contains(s - 1), False)
            _expect(out, f"of({s},{e}).contains({e + 1})", r.contains(e + 1), False)
        else:
            _expect(out, f"of({s},{e})", r, EMPTY_KEY_GROUP_RANGE)
    for s, e in case.get("illegal", ()):
        try:
            KeyGroupRange.of(s, e)
        except InvalidArgument:
            pass
        else:
            out.append(f"KeyGroupRange.of({s},{e}): Flink throws IllegalArgumentException, the model accepts it")
    return out


def run_key_group_partitions(case: dict) -> list[str]:
    """``testCreateKeyGroupPartitions``: key group i lies in the range of the subtask
    ``computeOperatorIndexForKeyGroup`` routes it to. Every key group is checked up to a max
    parallelism of 4096; above, each range's first and last key group are checked and the
    ranges must be consecutive from 0 to maxP - 1 (the operator index of a key group,
    ``kg * p / maxP``, never decreases, so the key groups between them follow)."""
    out: list[str] = []
    pairs = [tuple(p) for p in case.get("fixed", ())]
    jr = case.get("java_random")
    if jr:
        r = JavaRandom(jr["seed"])
        for _ in range(jr["count"]):
            max_p = 1 + r.next_int(32767 - 1)
            pairs.append((max_p, 1 + r.next_int(max_p)))
    for max_p, p in pairs:
        ranges = compute_key_group_ranges(max_p, p)
        if max_p <= 4096:
            kgs = range(max_p)
        else:
            kgs = sorted({kg for rg in ranges for kg in (rg.start, rg.end)})
            nxt = 0
            for rg in ranges:
                if rg.start != nxt:
                    out.append(f"maxP={max_p} p={p}: ranges are not consecutive at {rg}")
                nxt = rg.end + 1
            if nxt != max_p:
                out.append(f"maxP={max_p} p={p}: ranges end at {nxt - 1}, not {max_p - 1}")
        for kg in kgs:
            if not ranges[compute_operator_index_for_key_group(max_p, p, kg)].contains(kg):
                out.append(f"maxP={max_p} p={p}: key group {kg} is not in the range of its operator index")
                break
    return out


def _repartition_all(states: dict, old_p: int, new_p: int) -> list[dict]:
    """Every (state name, mode) through the model's repartitioner: SPLIT_DISTRIBUTE names first
    (the start index carried from name to name, as ``RoundRobinOperatorStateRepartitioner``
    does), then UNION, then BROADCAST. ``states``: (name, mode) -> per old subtask: its entries,
    or None when it reported no such state. Returns per new subtask: name -> entries, each
    entry tagged (old subtask, offset)."""
    result: list[dict] = [{} for _ in range(new_p)]
    start = 0
    order = {"split_distribute": 0, "union": 1, "broadcast": 2}
    for name, mode in sorted(states, key=lambda nm: (order[nm[1]], nm[0])):
        per_old = states[(name, mode)]
        tagged = [None if lst is None else [(i, o) for o in lst] for i, lst in enumerate(per_old)]
        if mode == "split_distribute":
            parts, start = repartition_operator_state([lst or [] for lst in tagged], new_p, mode, start)
        else:
            parts, _ = repartition_operator_state(tagged, new_p, mode)
        for i, part in enumerate(parts):
            if part:
                result[i].setdefault(name, []).extend(part)
    return result


def run_operator_state_repartition_property(case: dict) -> list[str]:
    """``testPartitionableStateRepartitioning``: Flink's 10000 random runs (java.util.Random),
    the same three assertions: every old offset lands as often as its mode says (SPLIT_DISTRIBUTE
    once, UNION on every new subtask, BROADCAST ``newP / oldP`` times plus one for the first
    ``newP % oldP`` old subtasks), nothing else arrives, and on a real rescale the number of
    offsets per new subtask differs by at most one."""
    jr = case["java_random"]
    r = JavaRandom(jr["seed"])
    for run in range(jr["runs"]):
        old_p = 1 + r.next_int(9)
        new_p = 1 + r.next_int(9)
        num_named = 1 + r.next_int(9)
        max_parts = 1 + r.next_int(9)
        states: dict = {}
        expected: dict = {}
        expected_total = 0
        for i in range(old_p):
            off = 0
            per_task = {}
            for s in range(num_named - 1):
                offs = []
                for _ in range(1 + r.next_int(max_parts)):
                    offs.append(off)
                    off += 1
                per_task[f"State-{s}"] = ("union" if r.next_int(10) == 0 else "split_distribute", offs)
            if num_named % 2 == 0:
                per_task[f"State-{num_named - 1}"] = ("broadcast", [off + 1, off + 2, off + 3, off + 4])
            for name, (mode, offs) in per_task.items():
                states.setdefault((name, mode), [None] * old_p)[i] = offs
                rep = {"union": new_p, "broadcast": new_p // old_p + (1 if i < new_p % old_p else 0),
                       "split_distribute": 1}[mode]
                if rep > 0:
                    expected_total += rep * len(offs)
                    expected[(i, name)] = sorted(o for o in offs for _ in range(rep))
        new = _repartition_all(states, old_p, new_p)
        actual: dict = {}
        loads = []
        for part in new:
            load = 0
            for name, entries in part.items():
                for (i, o) in entries:
                    actual.setdefault((i, name), []).append(o)
                load += len(entries)
            loads.append(load)
        actual = {k: sorted(v) for k, v in actual.items()}
        if old_p != new_p and max(loads) - min(loads) > 1:
            return [f"run {run} ({old_p} -> {new_p}): partition load differs by {max(loads) - min(loads)} > 1"]
        if sum(loads) != expected_total:
            return [f"run {run} ({old_p} -> {new_p}): {sum(loads)} partitions after repartitioning, "
                    f"Flink expects {expected_total}"]
        if actual != expected:
            return [f"run {run} ({old_p} -> {new_p}): redistributed offsets differ from Flink's expectation"]
    return []


def run_valve(case: dict) -> list[str]:
    out: list[str] = []
    rec = RecordingValveOutput()
    valve = StatusWatermarkValve(case["channels"])
    queue: list = []

    def drain():
        for k, v in rec.events:
            queue.append(v if k == "watermark" else v)
        rec.clear()

    for i, step in enumerate(case["steps"]):
        if "wm" in step:
            ts, ch = step["wm"]
            valve.input_watermark(ts, ch, rec)
        elif "idle" in step:
            valve.input_watermark_status(True, step["idle"], rec)
        elif "active" in step:
            valve.input_watermark_status(False, step["active"], rec)
        elif "pop" in step:
            drain()
            got = queue.pop(0) if queue else None
            _expect(out, f"step {i}: popLastSeenOutput", got, step["pop"])
        elif "channel_wm" in step:
            ch, w = step["channel_wm"]
            _expect(out, f"step {i}: channel {ch} watermark", valve.channel_watermark(ch), w)
        elif "channel_aligned" in step:
            ch, a = step["channel_aligned"]
            _expect(out, f"step {i}: channel {ch} isWatermarkAligned", valve.channel_is_aligned(ch), a)
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


# -- region failover ---------------------------------------------------------------------------


def _topology(case: dict):
    """A TestingSchedulingTopology as the duck-typed ExecutionGraph the model's failover
    functions read: one subtask per vertex, one channel (and one JobEdge) per connect()."""
    names = case["vertices"]
    ids = {n: i for i, n in enumerate(names)}
    rp_type = {"BLOCKING": BLOCKING, "PIPELINED": PIPELINED_BOUNDED}
    channels, edges = [], []
    for k, (a, b, t) in enumerate(case["edges"]):
        if t not in rp_type:
            raise PeerSpecError(f"result partition type {t!r} is not modelled (one of {sorted(rp_type)})")
        edges.append(SimpleNamespace(result_partition_type=rp_type[t]))
        channels.append(SimpleNamespace(id=k, producer=ids[a], consumer=ids[b], job_edge=k, name=f"{a}>{b}"))
    eg = SimpleNamespace(subtasks=[SimpleNamespace(id=i) for i in range(len(names))], channels=channels,
                         job_graph=SimpleNamespace(edges=edges))
    return eg, ids, {c.name: c.id for c in channels}


def run_region_failover(case: dict) -> list[str]:
    out: list[str] = []
    eg, ids, partitions = _topology(case)
    names = case["vertices"]
    strategy = RestartPipelinedRegionFailoverStrategy(eg)
    for f in case["failures"]:
        unavailable = frozenset(partitions[p] for p in f.get("unavailable", ()))
        got = strategy.tasks_to_restart({ids[f["failed"]]}, unavailable)
        _expect(out, f"{f['failed']} fails (unavailable {sorted(f.get('unavailable', ()))})",
                sorted(names[i] for i in got), sorted(f["restarts"]))
    return out


def run_pipelined_regions(case: dict) -> list[str]:
    out: list[str] = []
    eg, ids, _ = _topology(case)
    region_of = {}
    for k, r in enumerate(pipelined_regions(eg)):
        for s in r:
            region_of[s] = k
    for group in case.get("same", ()):
        regions = {region_of[ids[v]] for v in group}
        if len(regions) != 1:
            out.append(f"{group}: Flink asserts one region, the model has {len(regions)}")
    for group in case.get("distinct", ()):
        regions = [region_of[ids[v]] for v in group]
        if len(set(regions)) != len(regions):
            out.append(f"{group}: Flink asserts pairwise distinct regions, the model merges some")
    return out


# -- checkpoint coordinator -------------------------------------------------------------------


_CHECKS = ("pending", "retained", "pending_ids", "retained_ids", "timestamp", "acked", "not_acked", "disposed",
           "fully_acked", "can_be_subsumed", "triggered", "triggered_count", "notified_complete",
           "notified_aborted", "notify_calls", "abort_calls", "completed", "queued", "pending_props",
           "trigger_failures", "fail_job_calls")


def run_coordinator(case: dict) -> list[str]:
    out: list[str] = []
    cfg = case["config"]
    coord = CheckpointCoordinator(
        cfg["trigger"], cfg["ack"], tasks_to_commit=cfg.get("commit"),
        max_concurrent_checkpoints=cfg.get("max_concurrent", 1),
        min_pause_between_checkpoints=cfg.get("min_pause", 0),
        max_retained=cfg.get("max_retained", 1),
        checkpoint_timeout=cfg.get("checkpoint_timeout"),
        unaligned_checkpoints_enabled=cfg.get("unaligned", False),
        queue_requests=cfg.get("queue_requests", False),
        max_queued_requests=cfg.get("max_queued", 1000),
        # ``tolerable``: a CheckpointFailureManager with that threshold (Flink's tests give one
        # whose FailJobCallback throws or counts: its calls are logged as ``fail_job_calls``)
        failure_manager=CheckpointFailureManager(cfg["tolerable"]) if "tolerable" in cfg else None,
    )
    tasks = sorted(set(cfg["trigger"]) | set(cfg["ack"]) | set(cfg.get("commit") or ()))
    seen: dict = {}  # checkpoint id -> PendingCheckpoint (kept after it leaves ``pending``)
    log = {"triggered": {t: [] for t in tasks}, "complete": {t: [] for t in tasks},
           "aborted": {t: [] for t in tasks}, "notify_calls": [], "abort_calls": [], "completed": [],
           "trigger_failures": [], "fail_job_calls": []}

    def effects(effs):
        for e in effs:
            if isinstance(e, CheckpointTriggered):
                for t in e.tasks_to_trigger:
                    log["triggered"].setdefault(t, []).append(e.checkpoint_id)
            elif isinstance(e, NotifyCheckpointComplete):
                log["notify_calls"].append([e.checkpoint_id, e.last_subsumed_checkpoint_id])
                for t in e.tasks:
                    log["complete"].setdefault(t, []).append(e.checkpoint_id)
            elif isinstance(e, NotifyCheckpointAborted):
                log["abort_calls"].append([e.checkpoint_id, e.latest_completed_checkpoint_id])
                for t in e.tasks:
                    log["aborted"].setdefault(t, []).append(e.checkpoint_id)
            elif isinstance(e, CheckpointCompleted):
                log["completed"].append(e.checkpoint_id)
            elif isinstance(e, CheckpointTriggerFailed):
                log["trigger_failures"].append(e.reason)
            elif isinstance(e, FailJob):  # [checkpoint, failing subtask (None: failJob)]
                log["fail_job_calls"].append([e.checkpoint_id, e.subtask])
        seen.update(coord.pending)

    now = 999
    for i, step in enumerate(case["steps"]):
        now = step.get("now", now + 1)
        where = f"step {i}"
        if "trigger" in step:
            kind = step["trigger"]
            res = coord.trigger_checkpoint(now, kind, step.get("periodic", False), force=step.get("force"))
            effects(res.effects)
            if "expect" in step:
                _expect(out, f"{where}: trigger {kind}", res.status, step["expect"])
            if "id" in step and res.checkpoint_id is not None:
                _expect(out, f"{where}: checkpoint id", res.checkpoint_id, step["id"])
            if "reason" in step:
                _expect(out, f"{where}: failure reason", res.reason, step["reason"])
        elif "ack" in step:
            cid, task = step["ack"]
            effects(coord.receive_acknowledge(cid, task, None, now=now))
        elif "decline" in step:
            cid, task, reason = step["decline"]
            effects(coord.receive_decline(cid, task, reason, now=now))
        elif "expire" in step:
            effects(coord.expire_overdue(step["expire"]))
        elif "abort_pending" in step:  # abortPendingCheckpoints(new CheckpointException(reason))
            effects(coord.abort_pending(step["abort_pending"], now=now))
        elif "stop_scheduler" in step:
            effects(coord.stop_checkpoint_scheduler())
        elif "reset" in step:
            for k in ("triggered", "complete", "aborted"):
                log[k] = {t: [] for t in tasks}
        elif "check" in step:
            _check_coordinator(out, where, coord, seen, log, step["check"])
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


def _check_coordinator(out, where, coord, seen, log, check: dict) -> None:
    for key, want in check.items():
        if key not in _CHECKS:
            raise PeerSpecError(f"{where}: unknown check {key!r} (one of {_CHECKS})")
        what = f"{where}: {key}"
        if key == "pending":
            _expect(out, what, coord.num_pending, want)
        elif key == "retained":
            _expect(out, what, len(coord.store), want)
        elif key == "pending_ids":
            _expect(out, what, sorted(coord.pending_ids()), want)
        elif key == "retained_ids":
            _expect(out, what, list(coord.store.checkpoint_ids()), want)
        elif key == "queued":
            _expect(out, what, coord.num_queued_requests, want)
        elif key in ("triggered", "notified_complete", "notified_aborted"):
            src = {"triggered": "triggered", "notified_complete": "complete", "notified_aborted": "aborted"}[key]
            for t, ids in want.items():
                _expect(out, f"{what}[{t}]", log[src].get(int(t), []), ids)
        elif key == "triggered_count":
            for t, n in want.items():
                _expect(out, f"{what}[{t}]", len(log["triggered"].get(int(t), [])), n)
        elif key in ("notify_calls", "abort_calls", "completed", "trigger_failures", "fail_job_calls"):
            _expect(out, what, log[key], want)
        else:  # per pending checkpoint
            for cid, v in want.items():
                cp = seen.get(int(cid))
                if cp is None:
                    out.append(f"{what}[{cid}]: the model never had a pending checkpoint {cid}")
                    continue
                got = {
                    "timestamp": lambda: cp.timestamp,
                    "acked": lambda: len(cp.acknowledged),
                    "not_acked": lambda: len(cp.not_yet_acknowledged),
                    "disposed": lambda: cp.disposed,
                    "fully_acked": lambda: cp.is_fully_acknowledged,
                    "can_be_subsumed": lambda: cp.can_be_subsumed,
                    "pending_props": lambda: {"savepoint": cp.properties.is_savepoint, "forced": cp.properties.forced},
                }[key]()
                _expect(out, f"{what}[{cid}]", got, v)


def run_checkpoint_store(case: dict) -> list[str]:
    """A DefaultCompletedCheckpointStoreTest retention case: the checkpoints the store already
    holds (recovered), then the ones added; the store's checkpoints, in order, out. Entries are
    named (Flink compares the objects; ids repeat between recovered and added ones)."""
    out: list[str] = []
    props = {"checkpoint": CheckpointProperties.for_checkpoint(),
             "savepoint": CheckpointProperties.for_savepoint(False),
             "stop_with_savepoint": CheckpointProperties.for_sync_savepoint(False, False)}
    store = CompletedCheckpointStore(case["retain"])
    for name, cid, kind in case.get("recovered", ()) + case["add"]:
        if kind not in props:
            raise PeerSpecError(f"unknown checkpoint kind {kind!r} (one of {sorted(props)})")
        store.add_checkpoint_and_subsume_oldest_one(CompletedCheckpoint(cid, 0, props[kind], metadata=name))
    _expect(out, "getAllCheckpoints()", [c.metadata for c in store.get_all_checkpoints()], case["retained"])
    return out


_PROPS = {
    "checkpoint": lambda: CheckpointProperties.for_checkpoint(),
    "forced_savepoint": lambda: CheckpointProperties.for_savepoint(True),
    "savepoint": lambda: CheckpointProperties.for_savepoint(False),
    "sync_savepoint": lambda: CheckpointProperties.for_sync_savepoint(True, False),
}


def run_pending_checkpoint(case: dict) -> list[str]:
    """A PendingCheckpointTest case: a PendingCheckpoint with the given properties and tasks
    to acknowledge; acknowledgements (with their TaskAcknowledgeResult) and what Flink asserts."""
    out: list[str] = []
    for i, step in enumerate(case["steps"]):
        if "create" in step:
            kind = step["create"]
            if kind not in _PROPS:
                raise PeerSpecError(f"unknown properties {kind!r} (one of {sorted(_PROPS)})")
            tasks = frozenset(step.get("tasks_to_ack", [0]))
            pc = PendingCheckpoint(checkpoint_id=1, timestamp=0, properties=_PROPS[kind](),
                                   not_yet_acknowledged=set(tasks), metadata=None, is_periodic=True,
                                   tasks_to_commit=tuple(sorted(tasks)))
        elif "ack" in step:
            _expect(out, f"step {i}: acknowledgeTask({step['ack']})", pc.acknowledge_task(step["ack"], None),
                    step["result"])
        elif "can_be_subsumed" in step:
            _expect(out, f"step {i}: canBeSubsumed", pc.can_be_subsumed, step["can_be_subsumed"])
        elif "fully_acked" in step:
            _expect(out, f"step {i}: areTasksFullyAcknowledged", pc.is_fully_acknowledged, step["fully_acked"])
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


# -- state assignment ---------------------------------------------------------------------------


def run_operator_state_rescale(case: dict) -> list[str]:
    """``StateAssignmentOperationTest``'s operator-state cases: per new subtask, how many old
    handles of each state name it gets (``stateInfoCounts``) and how many offsets of each mode
    (``verifyAndCollectStateInfo``)."""
    out: list[str] = []
    old_p = case["old_parallelism"]
    states: dict = {}
    modes = {}
    for name, spec in case["states"].items():
        per_old = [None] * old_p
        for i, offs in spec["offsets"].items():
            per_old[int(i)] = offs
        states[(name, spec["mode"])] = per_old
        modes[name] = spec["mode"]
    for new_p, want in case["rescale"].items():
        new_p = int(new_p)
        new = _repartition_all(states, old_p, new_p)
        counts: dict = {}
        for part in new:
            for name, entries in part.items():
                counts[name] = counts.get(name, 0) + len({i for i, _ in entries})
        _expect(out, f"{old_p} -> {new_p}: stateInfoCounts", counts, want["state_info_counts"])
        for k, part in enumerate(new):
            for name, entries in part.items():
                exp = want["offsets_per_subtask"][modes[name]]
                if len(entries) != exp:
                    out.append(f"{old_p} -> {new_p}: new subtask {k} gets {len(entries)} offsets of "
                               f"{modes[name]} state {name}, Flink asserts {exp}")
    return out


def run_channel_state_assignment(case: dict) -> list[str]:
    """``StateAssignmentOperationTest``'s channel-state cases: which old subtasks' input channel
    state and result subpartition state each new subtask gets (``SubtaskStateMapper``), and the
    ``InflightDataRescalingDescriptor`` of each side."""
    out: list[str] = []
    old_p, new_p = case["old_parallelism"], case["new_parallelism"]
    for gate in case.get("input", ()):
        mapper = gate["downstream_mapper"]
        for k, olds in enumerate(_old_lists(gate["old_subtasks"], new_p)):
            _expect(out, f"input ({mapper}) new subtask {k}: old subtasks", list(old_subtasks(mapper, k, old_p, new_p)), olds)
    for part in case.get("output", ()):
        mapper = part["upstream_mapper"]
        for k, olds in enumerate(_old_lists(part["old_subtasks"], new_p)):
            _expect(out, f"output ({mapper}) new subtask {k}: old subtasks", list(old_subtasks(mapper, k, old_p, new_p)), olds)
    for d in case.get("descriptors", ()):
        got = inflight_data_rescaling_descriptor(
            d["side"], d["subtask"], [(g["own_mapper"], g["other_mapper"]) for g in d["gates"]],
            old_p, new_p, up_old_parallelism=d.get("other_old_parallelism", old_p),
            up_new_parallelism=d.get("other_new_parallelism", new_p))
        want = None if d["expect"] == "NO_RESCALE" else d["expect"]
        _expect(out, f"{d['side']} rescaling descriptor of new subtask {d['subtask']}", got, want)
    return out


def _old_lists(spec, new_p: int) -> list:
    """``"identity"``: new subtask k reads exactly old subtask k."""
    return [[k] for k in range(new_p)] if spec == "identity" else spec


def run_keyed_state_assignment(case: dict) -> list[str]:
    """No old keyed handle: a new key-group range gets no handle."""
    from model.stateassignment import assign_keyed_state  # noqa: PLC0415 - one case only; keeps the top imports to the shared ones
    out: list[str] = []
    got = assign_keyed_state([], case["max_parallelism"], case["new_parallelism"])
    _expect(out, "keyed state handles per new subtask", got, [{} for _ in range(case["new_parallelism"])])
    return out


# -- window operator ------------------------------------------------------------------------------


def run_window_operator(case: dict) -> list[str]:
    """A WindowOperatorTest lateness case: elements and watermarks in; the emitted records
    (key, aggregate, timestamp) and the late side output compared as multisets, the forwarded
    watermarks in order (what ``assertOutputEqualsSorted`` with Flink's comparators checks)."""
    out: list[str] = []
    op = WindowOperator(_assigner(case["assigner"]), case["aggregate"], case["allowed_lateness"], lambda k: 0)
    rec = RecordingWindowOutput()
    watermarks: list = []
    for i, step in enumerate(case["steps"]):
        if "element" in step:
            key, value, ts = step["element"]
            op.process_element(key, value, ts, rec)
        elif "watermark" in step:
            op.advance_watermark(step["watermark"], rec)
            watermarks.append(step["watermark"])  # AbstractStreamOperator forwards it after the timers
        elif "expect" in step:
            want = step["expect"]
            _expect(out, f"step {i}: records", sorted(map(list, rec.records)), sorted(want["records"]))
            _expect(out, f"step {i}: watermarks", watermarks, want["watermarks"])
            if "late" in want:  # (a case without a late OutputTag asserts nothing about dropped elements)
                _expect(out, f"step {i}: late side output", sorted(map(list, rec.late)), sorted(want["late"]))
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


# -- chaining -------------------------------------------------------------------------------------


def run_chaining(case: dict) -> list[str]:
    """A StreamingJobGraphGeneratorTest chaining case: a job spec in; per JobVertex in
    ``getVerticesSortedTopologicallyFromSources`` order the number of operators (and, where the
    test asserts them, the chained operators head first, the parallelism) and the result
    partition type of each JobEdge out."""
    out: list[str] = []
    jg = build_job_graph(stream_graph_from_dict(case["job"]))
    vertices = list(jg.vertices.values())
    _expect(out, "operators per JobVertex (topological order)", [len(v.operators) for v in vertices],
            case["operators_per_vertex"])
    if "chains" in case:
        _expect(out, "chains, head first (isChainStart / isChainEnd)", [list(v.operators) for v in vertices],
                case["chains"])
    if "parallelism_per_vertex" in case:
        _expect(out, "JobVertex parallelism", [v.parallelism for v in vertices], case["parallelism_per_vertex"])
    if "result_partition_types" in case:
        _expect(out, "JobEdge result partition types", [e.result_partition_type for e in jg.edges],
                case["result_partition_types"])
    return out


def run_shared_state_registry(case: dict) -> list[str]:
    """A SharedStateRegistryTest case against ``model.sharedstateregistry.SharedStateRegistry``.

    Steps: ``register [key, checkpoint id]`` (``registerReference``), ``register_restored
    [[keys], checkpoint id, mode]`` (``registerAllAfterRestored``), ``completed id``
    (``checkpointCompleted``), ``unregister lowest id`` (``unregisterUnusedState``; Flink's
    direct executor discards at once: the files the model returns count as discarded),
    ``discarded {key: bool}`` (``isDiscarded()``). A model error in a step is a
    disagreement (Flink asserts the call does not throw)."""
    out: list[str] = []
    reg = SharedStateRegistry()
    discarded: set = set()
    for i, step in enumerate(case["steps"]):
        where = f"step {i}"
        try:
            if "register" in step:
                key, cid = step["register"]
                reg.register_reference(key, cid)
            elif "register_restored" in step:
                keys, cid, mode = step["register_restored"]
                if mode not in RESTORE_MODES:
                    raise PeerSpecError(f"{where}: unknown restore mode {mode!r} (one of {RESTORE_MODES})")
                reg.register_all_after_restored(keys, cid, mode)
            elif "completed" in step:
                reg.checkpoint_completed(step["completed"])
            elif "unregister" in step:
                discarded.update(reg.unregister_unused_state(step["unregister"]))
            elif "discarded" in step:
                for key, want in step["discarded"].items():
                    _expect(out, f"{where}: {key} isDiscarded()", key in discarded, want)
            else:
                raise PeerSpecError(f"unknown step {step!r}")
        except FlinkspecError as e:
            if isinstance(e, PeerSpecError):
                raise
            out.append(f"{where}: Flink asserts {step!r} does not throw, the model raises {e}")
    return out


def run_coordinator_shared_state(case: dict) -> list[str]:
    """A CheckpointCoordinatorTest case about shared state: the model's CheckpointCoordinator
    and CheckpointStorage (with its SharedStateRegistry), wired as ``model.cluster`` wires
    them (an acknowledgement of a pending checkpoint is kept; one nobody waits for is
    discarded; a completion goes to ``CheckpointStorage.complete`` with the store's retained
    ids; an abort discards what the acknowledgements uploaded). Flink's test executors run
    the discards at once: every scheduled delete runs after each step.

    Config as for ``coordinator`` (``max_retained``: the store's size). Steps: ``trigger``
    (as for ``coordinator``); ``ack [id, subtask]`` with ``private`` / ``shared`` file names
    (an ``IncrementalRemoteKeyedStateHandle``'s meta and private files, and its shared
    files; a model handle is either private or shared, so a subtask acknowledges with two);
    ``decline [id, subtask, reason]``; ``expire now`` (the checkpoint canceller fires, with
    ``checkpoint_timeout`` in the config); ``remove_oldest`` (the test store's
    ``removeOldestCheckpoint``: the oldest retained checkpoint is subsumed, then
    ``unregisterUnusedState`` with the lowest remaining non-savepoint id, if any);
    ``restore mode`` (the store shut down and a new registry built from its checkpoints,
    ``SharedStateRegistry.DEFAULT_FACTORY.create(.., checkpoints, mode)``:
    ``registerAllAfterRestored`` of each); ``check`` with ``retained_ids`` and
    ``discarded {file: bool}``. ``runs`` instead of ``steps``: name -> steps, each run on a
    fresh coordinator (a Flink test looping over the restore modes)."""
    if "runs" in case:
        return [f"{name}: {m}" for name, steps in case["runs"].items()
                for m in _run_coordinator_shared_state(case["config"], steps)]
    return _run_coordinator_shared_state(case["config"], case["steps"])


def _run_coordinator_shared_state(cfg: dict, steps: list) -> list[str]:
    out: list[str] = []
    coord = CheckpointCoordinator(
        cfg["trigger"], cfg["ack"], max_concurrent_checkpoints=cfg.get("max_concurrent", 1),
        max_retained=cfg.get("max_retained", 1), queue_requests=cfg.get("queue_requests", False),
        checkpoint_timeout=cfg.get("checkpoint_timeout"))
    storage = CheckpointStorage()
    acks: dict = {}  # checkpoint id -> {(subtask, private|shared): snapshot}
    retained: list = []
    now = 999

    def run_deletes():
        for path in list(storage.scheduled):
            storage.discard(path, now)

    def effects(effs):
        nonlocal retained
        for e in effs:
            if isinstance(e, CheckpointCompleted):
                storage.complete(e.checkpoint_id, acks.pop(e.checkpoint_id, {}), e.properties.is_savepoint,
                                 e.subsumed_from_store, tuple(coord.store.checkpoint_ids()), now)
            elif isinstance(e, CheckpointAborted):
                storage.discard_uploads(acks.pop(e.checkpoint_id, {}).values(), f"aborted checkpoint {e.checkpoint_id}")
        retained = list(coord.store.checkpoint_ids())

    for i, step in enumerate(steps):
        now = step.get("now", now + 1)
        where = f"step {i}"
        if "trigger" in step:
            res = coord.trigger_checkpoint(now, step["trigger"], step.get("periodic", False))
            effects(res.effects)
            if "expect" in step:
                _expect(out, f"{where}: trigger {step['trigger']}", res.status, step["expect"])
            if "id" in step and res.checkpoint_id is not None:
                _expect(out, f"{where}: checkpoint id", res.checkpoint_id, step["id"])
        elif "ack" in step:
            cid, task = step["ack"]
            snaps = {}
            for kind in ("private", "shared"):
                paths = tuple(step.get(kind, ()))
                for p in paths:
                    storage.write(p, ())
                if paths:
                    h = KeyedStateHandle(cid, tuple((p, p) for p in paths), paths, kind == "shared")
                    snaps[(task, kind)] = SimpleNamespace(checkpoint_id=cid, state_handle=h)
            if cid in coord.pending:
                acks.setdefault(cid, {}).update(snaps)
            else:
                storage.discard_uploads(snaps.values(), f"late acknowledgement of checkpoint {cid}")
            effects(coord.receive_acknowledge(cid, task, snaps, now=now))
        elif "decline" in step:
            cid, task, reason = step["decline"]
            effects(coord.receive_decline(cid, task, reason, now=now))
        elif "expire" in step:
            effects(coord.expire_overdue(step["expire"]))
        elif "remove_oldest" in step:
            storage.subsume(retained.pop(0))
            lowest = [c for c in retained if c not in storage.savepoints]
            if lowest:
                storage.schedule_delete(storage.registry.unregister_unused_state(lowest[0]),
                                        "shared state no retained checkpoint uses")
        elif "restore" in step:
            mode = step["restore"]
            if mode not in RESTORE_MODES:
                raise PeerSpecError(f"{where}: unknown restore mode {mode!r} (one of {RESTORE_MODES})")
            storage.registry = SharedStateRegistry()
            for cid in retained:
                shared = [p for h in storage.handles.get(cid, {}).values() if h.shared for p in h.paths]
                storage.registry.register_all_after_restored(shared, cid, mode)
        elif "check" in step:
            for key, want in step["check"].items():
                if key == "retained_ids":
                    _expect(out, f"{where}: retained_ids", retained, want)
                elif key == "discarded":
                    for path, w in want.items():
                        _expect(out, f"{where}: {path} isDisposed()", path in storage.deleted, w)
                else:
                    raise PeerSpecError(f"{where}: unknown check {key!r} (one of ['discarded', 'retained_ids'])")
        else:
            raise PeerSpecError(f"unknown step {step!r}")
        run_deletes()
    return out


# -- slot manager ---------------------------------------------------------------------------------


_SLOT_CHECKS = ("acquired", "slot", "slot_job", "allocated_slots", "registered_task_managers", "registered_slots",
                "free_slots", "free_slots_of", "requested")
#: a heartbeat timeout no TaskExecutor reaches unless a step says so
_NEVER = 10 ** 9


def run_slot_manager(case: dict) -> list[str]:
    """A slot-manager case (``DefaultSlotStatusSyncerTest``, ``FineGrainedSlotManagerTest``)
    against ``model.resourcemanager.ResourceManager``, the model's SlotManager, with equal slots
    (a TaskManager is a number of slots; Flink's resource profiles are left out).

    TaskManagers, jobs and allocations are named as in the Flink test. Steps: ``register tm``
    with ``slots`` (its number of slots) and ``allocated [[slot, allocation, job], ...]`` (its
    registration's SlotReport; the other slots free); ``report tm`` with ``slots [[slot,
    allocation | null, job | null], ...]`` (``reportSlotStatus``: a heartbeat's SlotReport; an
    unregistered ``tm`` is an unknown instance); ``declare job`` with ``slots``
    (``processResourceRequirements``); ``allocate job`` with ``name`` (the syncer's
    ``allocateSlot``: the model's allocation rule run for one more slot of ``job`` with no
    standing requirement, the RequestSlot's allocation named ``name``); ``answer allocation``
    with ``ok`` (the TaskExecutor's answer to that RequestSlot); ``unregister tm``
    (``unregisterTaskManager``: the model unregisters a TaskExecutor when its heartbeats time
    out), with ``unregistered`` (its return value); ``check`` with ``acquired {job: n}``
    (``ResourceTracker.getAcquiredResources``, 0 = empty), ``slot {allocation: PENDING |
    ALLOCATED | null}`` (``getAllocatedOrPendingSlot``), ``slot_job {allocation: job}``,
    ``allocated_slots {tm: n}`` (``TaskManagerInfo.getAllocatedSlots``),
    ``registered_task_managers``, ``registered_slots`` (``getNumberRegisteredSlots``, the
    ``taskSlotsTotal`` gauge), ``free_slots`` (``taskSlotsAvailable``), ``free_slots_of {tm: n}``
    (the TaskManager's available resource, in slots) and ``requested [[tm, job], ...]`` (the
    RequestSlot RPCs sent since the last check)."""
    out: list[str] = []
    sent: list = []
    counter = iter(range(1, _NEVER))
    cp = SimpleNamespace(net=SimpleNamespace(send=sent.append), new_allocation=lambda: rpc.AllocationID(next(counter)))
    rm = ResourceManager(1)
    tms: dict = {}      # TaskManager name -> TaskExecutor index
    allocs: dict = {}   # allocation name -> AllocationID
    seen = 0            # RequestSlot messages reported by a check

    def te(name):
        return tms.setdefault(name, len(tms))

    def alloc(name):
        if name is None:
            return None
        if name not in allocs:
            allocs[name] = rpc.AllocationID(_NEVER + len(allocs))
        return allocs[name]

    def slot_of(name):
        a = allocs.get(name)
        return next(((key, v) for key, v in rm.slots.items() if a is not None and v[0] != FREE and v[1] == a),
                    (None, None))

    def acquired(job):
        return sum(1 for st, _, owner in rm.slots.values() if st != FREE and owner == job)

    for i, step in enumerate(case["steps"]):
        where = f"step {i}"
        if "register" in step:
            t = te(step["register"])
            held = {s: (alloc(a), j) for s, a, j in step.get("allocated", ())}
            report = tuple((s,) + held.get(s, (None, None)) for s in range(step["slots"]))
            rm.on_register(cp, rpc.RegisterTaskExecutor(t, 0, rm.token, report))
        elif "report" in step:
            report = tuple((s, alloc(a), j) for s, a, j in step["slots"])
            rm.on_heartbeat(cp, rpc.HeartbeatResponse("rm", rm.token, te(step["report"]), 0, report))
        elif "declare" in step:
            rm.on_declare(cp, rpc.DeclareResourceRequirements(rm.token, step["declare"], step["slots"]))
        elif "allocate" in step:
            job, before, standing = step["allocate"], len(sent), rm.requirements
            rm.requirements = {**standing, job: acquired(job) + 1}
            rm.check_requirements(cp)
            rm.requirements = standing
            new = [m for m in sent[before:] if isinstance(m, rpc.RequestSlot)]
            if len(new) != 1:
                out.append(f"{where}: allocateSlot({job}): Flink sends one RequestSlot, the model sends {len(new)}")
                continue
            allocs[step["name"]] = new[0].allocation
        elif "answer" in step:
            a = allocs.get(step["answer"])
            req = next((m for m in sent if isinstance(m, rpc.RequestSlot) and m.allocation == a), None)
            if req is None:
                raise PeerSpecError(f"{where}: no RequestSlot of allocation {step['answer']!r} to answer")
            rm.on_answer(cp, rpc.SlotRequestAnswer(req.te, rm.token, req.slot, a, step["ok"]))
        elif "unregister" in step:
            t = te(step["unregister"])
            known = t in rm.registered
            if known:
                rm.missed[t] = _NEVER
            lost = rm.tick(cp, _NEVER - 1) if known else []
            if "unregistered" in step:
                _expect(out, f"{where}: unregisterTaskManager({step['unregister']})", t in lost, step["unregistered"])
        elif "check" in step:
            for key, want in step["check"].items():
                if key not in _SLOT_CHECKS:
                    raise PeerSpecError(f"{where}: unknown check {key!r} (one of {_SLOT_CHECKS})")
                what = f"{where}: {key}"
                if key == "acquired":
                    for job, n in want.items():
                        _expect(out, f"{what}[{job}]", acquired(job), n)
                elif key == "slot":
                    for a, st in want.items():
                        _expect(out, f"{what}[{a}]", slot_of(a)[1] and slot_of(a)[1][0], st)
                elif key == "slot_job":
                    for a, job in want.items():
                        _expect(out, f"{what}[{a}]", slot_of(a)[1] and slot_of(a)[1][2], job)
                elif key == "allocated_slots":
                    for tm, n in want.items():
                        _expect(out, f"{what}[{tm}]", sum(1 for (t, _), v in rm.slots.items()
                                                          if t == tms.get(tm) and v[0] != FREE), n)
                elif key == "registered_task_managers":
                    _expect(out, what, len(rm.registered), want)
                elif key == "registered_slots":
                    _expect(out, what, len(rm.slots), want)
                elif key == "free_slots":
                    _expect(out, what, sum(1 for v in rm.slots.values() if v[0] == FREE), want)
                elif key == "free_slots_of":
                    for tm, n in want.items():
                        _expect(out, f"{what}[{tm}]", sum(1 for (t, _), v in rm.slots.items()
                                                          if t == tms.get(tm) and v[0] == FREE), n)
                else:  # requested
                    by_index = {v: k for k, v in tms.items()}
                    got = [[by_index[m.te], m.job_token] for m in sent[seen:] if isinstance(m, rpc.RequestSlot)]
                    _expect(out, what, got, want)
            seen = len(sent)
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


def run_deployment_reconciliation(case: dict) -> list[str]:
    """A ``DefaultExecutionDeploymentReconcilerTest`` case against ``JobMaster.reconcile``:
    the executions the JobMaster deployed on one TaskExecutor (``DEPLOYED``, or ``PENDING``: no
    report has shown it yet), the TaskExecutor's ``ExecutionDeploymentReport`` (``reported``,
    execution names; a name not deployed is an execution the JobMaster does not know), one
    reconciliation with the model's default heartbeat timeout (``RuntimeConfig.heartbeat_timeout``),
    then what the handler received: ``missing`` / ``unknown`` each ``"empty"`` or
    ``{"contains": [names]}`` (Flink's ``isEmpty()`` / ``contains(...)``)."""
    out: list[str] = []
    names = list(case["deployed"]) + [n for n in case["reported"] if n not in case["deployed"]]
    execution = {n: (i, rpc.ExecutionAttemptID(100 + i)) for i, n in enumerate(names)}
    by_subtask = {i: n for n, (i, _) in execution.items()}
    jm = JobMaster(1, (), [execution[n][1] for n in names])
    te, alloc = 0, rpc.AllocationID(1)
    jm.pool[alloc] = (te, 0, 0)
    jm.deployed[alloc] = tuple(execution[n] for n in case["deployed"])
    for n, state in case["deployed"].items():
        if state not in ("DEPLOYED", "PENDING"):
            raise PeerSpecError(f"{n}: ExecutionDeploymentState must be DEPLOYED or PENDING, not {state!r}")
        if state == "PENDING":
            jm.unconfirmed[execution[n]] = 0
    report = tuple(sorted(execution[n] for n in case["reported"]))
    unknown, missing = jm.reconcile(rpc.HeartbeatResponse("jm", jm.token, te, 0, (report, ())),
                                    RuntimeConfig().heartbeat_timeout)
    got = {"missing": sorted(by_subtask[s] for s in missing), "unknown": sorted(by_subtask[e[0]] for e in unknown)}
    for key in ("missing", "unknown"):
        want = case[key]
        if want == "empty":
            _expect(out, f"{key} executions", got[key], [])
        else:
            absent = [n for n in want["contains"] if n not in got[key]]
            if absent:
                out.append(f"{key} executions: Flink asserts they contain {absent}, the model gives {got[key]}")
    return out


_TABLE_CHECKS = ("allocated", "free", "allocated_slots", "active", "tasks")


def run_task_slot_table(case: dict) -> list[str]:
    """A ``TaskSlotTableImplTest`` case against the slot table of ``model.taskexecutor.TaskExecutor``
    (static slots: ``slots`` of them), driven through the RPCs that change it, with one job
    whose JobMaster is the TaskExecutor's job leader.

    Steps: ``allocate [slot, job, allocation]`` with ``result`` (``allocateSlot``: a
    ``RequestSlot``; true when the TaskExecutor allocated); ``mark_active allocation`` with
    ``result`` (``markSlotActive`` / ``tryMarkSlotActive``: the job leader accepts the offered
    slot; true when it is active); ``free allocation`` (``freeSlot``: the owner's ``FreeSlot``),
    with ``killed`` (the tasks that fail with the slot); ``submit [allocation, task]``
    (``addTask``: ``submitTask`` of one execution, which must be accepted); ``ticks n`` (the
    slot timeout's clock: ``n`` heartbeat intervals, the model's slot timeout being
    ``RuntimeConfig.heartbeat_timeout`` of them; ``"eventually"``: ten slot timeouts' worth); ``check`` with ``allocated [[slot, job,
    allocation, bool]]`` (``isAllocated``), ``free [slots]`` (``isSlotFree``), ``allocated_slots
    {job: [slots]}`` (``getAllocatedSlots``), ``active {job: [allocations]}``
    (``getActiveTaskSlotAllocationIdsPerJob``) and ``tasks {job: [tasks]}`` (``getTasks``)."""
    out: list[str] = []
    sent: list = []
    cp = SimpleNamespace(net=SimpleNamespace(send=sent.append))
    te = TaskExecutor(0, case["slots"])
    te.rm_token = 1
    jobs: dict = {}
    allocs: dict = {}
    tasks: dict = {}
    timeout = RuntimeConfig().heartbeat_timeout

    def job(name):
        return jobs.setdefault(name, 10 + len(jobs))

    def alloc(name):
        return allocs.setdefault(name, rpc.AllocationID(1000 + len(allocs)))

    def task(name):
        return tasks.setdefault(name, (len(tasks), rpc.ExecutionAttemptID(100 + len(tasks))))

    names = {}
    for i, step in enumerate(case["steps"]):
        where = f"step {i}"
        if "allocate" in step:
            slot, j, a = step["allocate"]
            te.job_token = job(j)
            names[alloc(a)] = a
            got = te.on_request_slot(cp, rpc.RequestSlot(0, 1, slot, alloc(a), job(j))) == "allocated"
            if "result" in step:
                _expect(out, f"{where}: allocateSlot({slot}, {j}, {a})", got, step["result"])
        elif "mark_active" in step:
            a = alloc(step["mark_active"])
            te.on_offer_answer(cp, rpc.OfferSlotsAnswer(0, te.job_token, (a,), ()))
            k = te.slot_of(a)
            _expect(out, f"{where}: markSlotActive({step['mark_active']})",
                    k is not None and te.slots[k][2], step["result"])
        elif "free" in step:
            a = alloc(step["free"])
            k = te.slot_of(a)
            owner = te.slots[k][1] if k is not None else te.job_token
            killed = te.on_free_slot(cp, rpc.FreeSlot(0, owner, a))
            if "killed" in step:
                by_execution = {v: n for n, v in tasks.items()}
                _expect(out, f"{where}: tasks failed by freeSlot({step['free']})",
                        sorted(by_execution[e] for e in (killed or ())), sorted(step["killed"]))
        elif "submit" in step:
            a, t = step["submit"]
            m = rpc.SubmitTask(0, te.job_token, alloc(a), (task(t),))
            why = te.submit_allowed(cp, m)
            if why is not None:
                out.append(f"{where}: addTask({t}): Flink adds the task, the model refuses it ({why})")
                continue
            te.on_submit(m)
        elif "ticks" in step:
            n = step["ticks"]
            if n == "eventually":  # Flink waits for the timer ("eventuallySucceeds"): ten timeouts' worth
                n = 10 * (timeout + 1)
            for _ in range(n):
                te.timeout_inactive(timeout)
        elif "check" in step:
            for key, want in step["check"].items():
                if key not in _TABLE_CHECKS:
                    raise PeerSpecError(f"{where}: unknown check {key!r} (one of {_TABLE_CHECKS})")
                what = f"{where}: {key}"
                if key == "allocated":
                    for slot, j, a, w in want:
                        s = te.slots[slot] if 0 <= slot < len(te.slots) else None
                        got = s is not None and s[0] == alloc(a) and s[1] == job(j)
                        _expect(out, f"{what}({slot}, {j}, {a})", got, w)
                elif key == "free":
                    _expect(out, what, [k for k in want if te.slots[k] is None], want)
                elif key == "allocated_slots":
                    for j, w in want.items():
                        _expect(out, f"{what}[{j}]", [k for k, s in enumerate(te.slots) if s is not None and s[1] == job(j)], w)
                elif key == "active":
                    for j, w in want.items():
                        got = sorted(names[s[0]] for s in te.slots if s is not None and s[1] == job(j) and s[2])
                        _expect(out, f"{what}[{j}]", got, sorted(w))
                else:  # tasks
                    by_execution = {v: n for n, v in tasks.items()}
                    for j, w in want.items():
                        got = sorted(by_execution[e] for e in te.deployment_report(job(j)))
                        _expect(out, f"{what}[{j}]", got, sorted(w))
        else:
            raise PeerSpecError(f"unknown step {step!r}")
    return out


#: kind -> runner (the one registry of peer-suite kinds)
RUNNERS: dict[str, Callable[[dict], list[str]]] = {
    "window_assigner": run_window_assigner,
    "bounded_out_of_orderness": run_bounded_out_of_orderness,
    "key_group_range": run_key_group_range,
    "key_group_partitions": run_key_group_partitions,
    "operator_state_repartition_property": run_operator_state_repartition_property,
    "valve": run_valve,
    "region_failover": run_region_failover,
    "pipelined_regions": run_pipelined_regions,
    "coordinator": run_coordinator,
    "checkpoint_store": run_checkpoint_store,
    "pending_checkpoint": run_pending_checkpoint,
    "operator_state_rescale": run_operator_state_rescale,
    "channel_state_assignment": run_channel_state_assignment,
    "keyed_state_assignment": run_keyed_state_assignment,
    "window_operator": run_window_operator,
    "chaining": run_chaining,
    "shared_state_registry": run_shared_state_registry,
    "coordinator_shared_state": run_coordinator_shared_state,
    "slot_manager": run_slot_manager,
    "deployment_reconciliation": run_deployment_reconciliation,
    "task_slot_table": run_task_slot_table,
}
