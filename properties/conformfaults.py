"""``flinkspec conform --faults KIND,...``: conform's end results under the recorder's fault kinds.

The fault kinds are ``flinkspec trace``'s (``properties.flinktrace.FAULT_KINDS``, one registry).
A run of kind K is the recorder's run (:func:`properties.flinktrace.draw_run`: a conform job
whose variation fits K, with K's Flink settings), run by the recorder's driver
(``tools/flink_trace_driver.py``: the same fault injection, a MiniCluster with two
TaskManagers of two slots, Flink's log in one file), which answers the job's end results as the
conform driver does (committed output, observations, key hashes and groups). The model runs
the same job with the run's configuration (``flinktrace.runtime_config``: unaligned
checkpoints, the state backend, retained checkpoints, the claim mode, the tolerable checkpoint
failures), and :func:`judge` compares what the model can judge:

* the committed exactly-once output after the fault and the recovery, against the model's
  oracle (``model.reference.reference_output``: the job at parallelism 1, failure-free), and
  the model's own committed output against it;
* the final keyed state of a rolling aggregate (value and subtask) and the owner of every key
  Flink observed (as ``properties.conform.compare`` does);
* which checkpoint each restore used (``restored_from``).

How the model's run is driven depends on what decides the fault's moment:

* kinds whose fault the job itself places (a user function throws at a chosen record:
  task-failure, rocksdb-incremental; a stop-with-savepoint after ``cap`` records per split:
  rescale-up, rescale-down, stop-with-savepoint) run as ``flinkspec conform`` runs them
  (``properties.conform.model_side``): the model decides on its own which checkpoint the restart
  restores, and its place among the phase's completed checkpoints must be Flink's;
* kinds whose fault comes at a moment of Flink's timing (a TaskManager lost after the first
  completed checkpoint, checkpoints expiring behind slow records, snapshots declined, a job
  cancelled after two checkpoints and resubmitted from the latest retained one, and a user
  function throwing among slow records -- unaligned: a source then reads the ``cap`` records
  of one checkpoint cycle over several checkpoint intervals, and how many checkpoints
  complete before the failing record is Flink's timing) are replayed
  (:func:`replay_side`): the model takes Flink's checkpoints as the log reports them, in order --
  each triggered checkpoint completes, expires or is declined in the model where it did in
  Flink (a declined one by the asynchronous snapshot failing, as the recorder makes it fail) --
  and the fault where Flink restored (a TaskManager loss or the failure of the task reading the
  failing split just before Flink's restore, the resubmission from the checkpoint Flink's
  second job restored). The model decides the rest:
  whether a declined checkpoint fails the job over (its CheckpointFailureManager), which
  checkpoint the failover restores, what the restored job commits. Each Flink restore is
  compared with the model's (the checkpoint the model restored is the one it triggered where
  Flink triggered Flink's); a restore Flink made and the model did not, or the other way round,
  is a difference, and so is a step of Flink's run the model cannot take. A checkpoint that
  reached a task not running (declined as not ready or closing, or whose trigger found no task)
  or that was triggered during a failure and never completed has no counterpart in the model's
  run (trace validation's mapping rules ``trigger-at-a-task-not-running`` and
  ``triggered-during-a-failure``, docs/conformance.md).

jobmanager-loss runs on the recorder's standalone cluster with ZooKeeper HA
(``tools/flink_ha_cluster.py``: two JobManagers, two TaskManagers, the leader killed with
SIGKILL after two completed checkpoints; 55 to 90 s a run), one cluster per run
(:func:`run_ha`); its end results are read from the job's folder in the cluster's work folder,
its events from the processes' logs, and the model replays it with a JobManager failover
(``FailJobManager``) where the standby's JobMaster restored.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

import attrs

from model import actions as A
from model.cluster import Cluster, JobInput, RuntimeConfig, drain
from model.environment import Environment, split_config
from model.errors import FlinkspecError
from model.executiongraph import compile_stream_graph
from model.reference import reference_output, sink_output_by_operator
from properties import conform, flinktrace
from properties.flinklog import observations
from properties.tracevalidation import NOT_RUNNING_DECLINES, NOT_RUNNING_TRIGGER

#: the kinds whose fault the job places itself (judged as plain conform runs)
_JOB_PLACED = ("failure", "rescale")


def conform_kinds() -> tuple[str, ...]:
    """The fault kinds ``conform --faults`` runs: every kind of the recorder's registry."""
    return tuple(flinktrace.FAULT_KINDS)


#: the real set-ups of the registry's kinds (``FaultKind.setup``): ``--faults minicluster`` takes
#: every kind of one
SETUPS = tuple(dict.fromkeys(k.setup for k in flinktrace.FAULT_KINDS.values()))


def parse_faults(spec: str) -> tuple[str, ...]:
    """``--faults KIND,...`` checked against the registry; ``all``: every kind; a set-up's name
    (:data:`SETUPS`: ``minicluster``, ``standalone-ha``): every kind run on it."""
    name = spec.strip()
    if name == "all":
        return conform_kinds()
    if name in SETUPS:
        return tuple(k.name for k in flinktrace.FAULT_KINDS.values() if k.setup == name)
    return flinktrace.fault_kinds(spec)


def placed_by_job(kind: str) -> bool:
    """Whether the kind's fault is placed by the job (a failing record, a stop-with-savepoint, a
    drain)."""
    fk = flinktrace.FAULT_KINDS[kind]
    # with slow records (delay_ms) a source reads its cap records of a cycle over several checkpoint
    # intervals, and checkpoints complete between them: how many completed before the failing
    # record is Flink's timing, not the job's, so such a kind is replayed
    return (fk.failure or fk.rescale is not None or fk.drain) and not fk.lose_task_manager and not fk.decline \
        and not fk.trace.get("cancel_after_checkpoints") and not fk.trace.get("checkpoint_timeout_ms") \
        and not fk.trace.get("delay_ms")


def model_config(run: flinktrace.TraceRun) -> dict:
    """The run's Flink configuration as RuntimeConfig fields, and the faults and savepoints of
    the recorder as Environment fields (the recorder's header), with room for every restore the
    replay may need."""
    return dict(flinktrace.runtime_config(run))


# -- the replayed model side -----------------------------------------------------------------------


@attrs.frozen(slots=True)
class Replayed:
    """The model's side of a replayed run: ``side`` (output, final keyed state, reference), the
    restores compared (``(seq, Flink's checkpoint, the model's)``: the model's as the Flink id
    it stands for, None for none) and the differences found while following Flink's run."""

    side: conform.ModelSide
    restores: tuple
    differences: tuple


_DATA = (A.Deliver, A.SourceWatermark)
_COMPLETE = (A.Deliver, A.SourceWatermark, A.FinishAsyncSnapshot, A.NotifyCheckpointComplete, A.DiscardFile)


def _settle(c: Cluster, kinds) -> None:
    while True:
        for a in c.enabled_actions():
            if type(a) in kinds:
                c.step(a)
                break
        else:
            return


def _emit_round(c: Cluster, cap: int) -> None:
    for t in [t.id for t in c.source_tasks]:
        conform._emit(c, t, cap, None)


def _sources_done(c: Cluster) -> bool:
    return not any(t.source is not None and t.status == "RUNNING" and t.source.has_next() for t in c.tasks)


def _busy_task_manager(c: Cluster) -> int | None:
    return next((i for i in range(len(c.task_managers)) if c.task_manager_busy(i)), None)


def _not_running(e: dict) -> bool:
    """An abort saying the checkpoint reached a task that was not running (trace validation's
    rule trigger-at-a-task-not-running: such a checkpoint has no counterpart in the model)."""
    why = e.get("flink_reason") or ""
    if e["reason"] == "declined":
        return why in NOT_RUNNING_DECLINES
    return e["reason"] == "trigger_failed" and why.startswith(NOT_RUNNING_TRIGGER)


def without_counterpart(events: list[dict]) -> set:
    """``(phase, checkpoint)`` of Flink's checkpoints the model's run does not take, by trace
    validation's mapping rules: trigger-at-a-task-not-running, and triggered-during-a-failure
    (triggered after a task failed or a TaskManager was lost, before the restore, and never
    completed)."""
    out, phase, failing, during = set(), 0, False, set()
    completed = set()
    for e in events:
        kind = e["event"]
        if kind == "job_submitted":
            phase = e["phase"]
        elif kind in ("task_failed", "task_manager_lost", "job_manager_lost"):
            failing = True
        elif kind == "restored":
            out |= during - completed
            failing, during = False, set()
        elif kind == "checkpoint_triggered" and failing:
            during.add((phase, e["checkpoint"]))
        elif kind == "checkpoint_completed":
            completed.add((phase, e["checkpoint"]))
        elif kind == "checkpoint_aborted" and _not_running(e):
            out.add((phase, e["checkpoint"]))
    return out | (during - completed)


def replay_side(run: flinktrace.TraceRun, events: list[dict]) -> Replayed:
    """The model's run of ``run`` following Flink's checkpoints and faults (``events``: the run's
    trace events, ``properties.flinklog.observations``); see the module docstring."""
    job = run.job
    splits = job.splits
    to_int = {k: conform.row_key_hash(k) for s in splits for (k, _v, _t) in s}
    back = {v: k for k, v in to_int.items()}
    model_input = JobInput({conform.SOURCE: tuple(tuple((to_int[k], v, ts) for (k, v, ts) in s) for s in splits)})
    cfg = model_config(run)
    # every restore Flink makes is one the model may make (the budget counts faults, not restores)
    cfg["max_failures"] = max(cfg.get("max_failures", 0), 1) + 2
    cfg, env = split_config(cfg)
    c = Cluster(compile_stream_graph(job.graph), model_input, RuntimeConfig(**cfg), seed=job.seed,
                environment=Environment(**env), scope=conform.UNBOUNDED_CHANNELS)
    declined = set(run.decline["checkpoints"]) if run.decline else set()
    diffs: list[str] = []
    restores: list = []
    ids: dict[int, int | None] = {}     # Flink's checkpoint id -> the model's (this phase; None: not taken)
    back_id: dict[int, int] = {}        # the model's -> Flink's (every phase)
    skip = without_counterpart(events)
    phase = 0
    may_emit = True
    lost = False                        # a TaskManager was lost since the last restore
    jm_lost = False                     # the leading JobManager was lost since the last restore
    task_failed = False                 # a task failed (the injected failure) since the last restore
    injected = False
    model_restores = 0

    def stop(ev, why):
        diffs.append(f"the model cannot follow Flink's run at event {ev['seq']} ({ev['event']}"
                     f"{' ' + str(ev.get('checkpoint')) if ev.get('checkpoint') is not None else ''}): {why}")

    for ev in events:
        e = ev["event"]
        if diffs:
            break
        if e == "job_submitted":
            phase = ev["phase"]
            if ev["phase"] == 0:
                continue
            # a resubmission from the cancelled job's retained checkpoint (the recorder's choice: the
            # latest whose directory holds a _metadata file)
            fid = ev.get("savepoint")
            mid = ids.get(fid)
            # (restored as a Checkpoint in CLAIM mode, as a Savepoint in NO_CLAIM mode: Flink loads an
            # unclaimed snapshot as a savepoint, CheckpointProperties.forUnclaimedSnapshot)
            if ev.get("restored_as") not in ("Checkpoint", "Savepoint") or mid is None:
                stop(ev, f"Flink's job {ev['phase']} started from {ev.get('restored_as')} {fid}, which the model "
                         "did not complete")
                break
            action = A.RestartFromRetainedCheckpoint(mid)
            why = c.why_not_enabled(action)
            try:
                if why is None:
                    c.step(action)
                else:
                    c.restart_from_retained_checkpoint(mid)
                    c.trace.append(action)
            except FlinkspecError as err:
                stop(ev, str(err))
                break
            model_restores = len(c.restored_from)
            restores.append((ev["seq"], fid, back_id.get(c.restored_from[-1][1])))
            ids = {fid: mid}
            may_emit, lost = True, False
        elif e == "checkpoint_triggered":
            if ev.get("savepoint") or (phase, ev["checkpoint"]) in skip:
                continue
            if may_emit:
                _emit_round(c, job.cap)
                may_emit = False
            _settle(c, _DATA)
            action = A.TriggerCheckpoint()
            why = c.why_not_enabled(action)
            if why is not None:
                if _sources_done(c):
                    ids[ev["checkpoint"]] = None  # the model's job is at its end: nothing to take
                    continue
                stop(ev, why)
                break
            before = set(c.coordinator.pending_ids())
            c.step(action)
            new = sorted(set(c.coordinator.pending_ids()) - before)
            if len(new) != 1:
                ids[ev["checkpoint"]] = None  # the model declined it at once (a finished task)
                continue
            ids[ev["checkpoint"]] = new[0]
            back_id[new[0]] = ev["checkpoint"]
        elif e == "checkpoint_completed":
            mid = ids.get(ev["checkpoint"])
            if mid is None:
                continue
            _settle(c, _COMPLETE)
            if mid not in c.completed_ids:
                stop(ev, f"the model's checkpoint {mid} did not complete")
                break
            may_emit = True
        elif e == "checkpoint_aborted":
            mid = ids.get(ev["checkpoint"])
            if mid is None or mid not in c.coordinator.pending:
                continue
            if ev["reason"] == "expired":
                c.step(A.CheckpointTimeout(mid))
            elif ev["reason"] == "declined" and ev["checkpoint"] in declined:
                _settle(c, _DATA)
                ready = [t.id for t in c.tasks if t.status == "RUNNING" and mid in t.backend.ready_ids()]
                if not ready:
                    stop(ev, f"no task of the model has the asynchronous phase of snapshot {mid} to fail")
                    break
                c.step(A.FailAsyncSnapshot(ready[0], mid))
            else:
                # a decline Flink's own timing made (a task closing as its input ends): the model's
                # run takes the checkpoint as its own timing gives it
                _settle(c, _COMPLETE)
        elif e == "task_manager_lost":
            lost = lost or bool(ev.get("tasks"))
        elif e == "job_manager_lost":
            jm_lost = True
        elif e == "task_failed":
            task_failed = task_failed or (job.fail is not None and not lost and not injected)
        elif e == "restored":
            if ev.get("checkpoint") is not None and ev["checkpoint"] not in ids:
                stop(ev, f"Flink restored checkpoint {ev['checkpoint']}, which the model never triggered")
                break
            if jm_lost and len(c.restored_from) == model_restores:
                # the standby's JobMaster recovers the job from the HA store: the model's JobManager
                # failover (pending checkpoints lost, a global restore of the latest completed)
                why = c.why_not_enabled(A.FailJobManager())
                if why is not None:
                    stop(ev, why)
                    break
                c.step(A.FailJobManager())
                jm_lost = False
            elif lost and len(c.restored_from) == model_restores:
                tm = _busy_task_manager(c)
                if tm is None or c.why_not_enabled(A.LoseTaskManager(tm)) is not None:
                    stop(ev, "no TaskManager of the model can be lost now" if tm is None
                         else c.why_not_enabled(A.LoseTaskManager(tm)))
                    break
                c.step(A.LoseTaskManager(tm))
                lost = False
            elif task_failed and len(c.restored_from) == model_restores:
                # the user function throws in the task reading the failing split (the model's
                # subtask i reads split i)
                src = next(t for t in c.source_tasks if t.subtask.subtask_index == job.fail[0])
                if c.why_not_enabled(A.FailTask(src.id)) is not None:
                    stop(ev, c.why_not_enabled(A.FailTask(src.id)))
                    break
                c.step(A.FailTask(src.id))
                task_failed, injected = False, True
            if len(c.restored_from) == model_restores:
                restores.append((ev["seq"], ev.get("checkpoint"), "no restore"))
                continue
            model_restores = len(c.restored_from)
            mid = c.restored_from[-1][1]
            restores.append((ev["seq"], ev.get("checkpoint"), None if mid is None else back_id.get(mid, f"#{mid}")))
            may_emit = True
    if not diffs and len(c.restored_from) > model_restores:
        for _now, mid, _how in c.restored_from[model_restores:]:
            restores.append((None, "no restore", None if mid is None else back_id.get(mid, f"#{mid}")))
    if not diffs:
        try:
            drain(c)
        except FlinkspecError as err:
            diffs.append(f"the model's run does not finish after Flink's events: {err}")
    reference = reference_output(job.graph, model_input)[conform.SINK]
    relabel = lambda recs: tuple((back[k], v, ts) for (k, v, ts) in recs)  # noqa: E731
    final = None
    if job.keyed.kind == "keyed_aggregate":
        final = {back[k]: v for k, v in conform._keyed_state(c, job.keyed.name).items()}
    output = sink_output_by_operator(c)[conform.SINK] if not diffs else ()
    side = conform.ModelSide(reference=relabel(reference), output=relabel(output), restored_keyed=None,
                             restored_splits=None, final_keyed=final, failed=injected,
                             restored_from=None if not c.restored_from else c.restored_from[-1][1])
    return Replayed(side=side, restores=tuple(restores), differences=tuple(diffs))


def compare_restores(restores) -> list[str]:
    """A difference per restore where Flink's checkpoint and the model's differ."""
    out = []
    for seq, flink, model in restores:
        if flink != model:
            where = f"at event {seq}" if seq is not None else "after Flink's last event"
            fl = "no restore" if flink == "no restore" else "no checkpoint" if flink is None else f"checkpoint {flink}"
            mo = "no restore" if model == "no restore" else "no checkpoint" if model is None else f"checkpoint {model}"
            out.append(f"restore {where}: Flink restored {fl}, the model {mo}")
    return out


# -- judging ---------------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class FaultResult:
    """One run of a fault kind: its conform result (:class:`properties.conform.RunResult`) and
    what was compared."""

    kind: str
    result: conform.RunResult
    compared: tuple
    #: the restores compared: ``(Flink's checkpoint, the model's)``, None for none ("no restore":
    #: that side made none)
    restores: tuple = ()
    #: the run's seed (``flinktrace.draw_run``; the job's own seed is ``result.seed``)
    seed: int | None = None

    @property
    def agree(self) -> bool:
        return self.result.agree

    def to_dict(self) -> dict:
        return {**self.result.to_dict(), "fault": self.kind, "compared": list(self.compared),
                "restores": [list(r) for r in self.restores], "seed": self.seed, "job_seed": self.result.seed}


def _two_phase_view(job: conform.ConformJob) -> conform.ConformJob:
    """A resubmitted job seen as two phases of the same parallelisms (so the observations of
    both are placed), without a savepoint's restore to compare."""
    return attrs.evolve(job, rescale=tuple((o.name, o.parallelism) for o in job.graph.operators))


def judge(run: flinktrace.TraceRun, answer: dict, log_text) -> FaultResult:
    """Compare Flink's answer (the trace driver's, with its log ``log_text``; a standalone
    cluster's: its processes' logs by name) with the model."""
    job = run.job
    if not answer.get("ok"):
        r = conform.judge(job, answer)
        return FaultResult(run.kind, r, (), seed=run.seed)
    cfg = model_config(run)
    if placed_by_job(run.kind):
        answer = dict(answer, restores=conform.flink_restores(log_text, answer["id"]))
        r = conform.judge(job, answer, config=cfg)
        compared = ["output", "keyed state and owners"]
        if job.rescale is not None:
            compared.append("restored keyed state and splits")
        restores = ()
        if job.fail is not None:
            compared.append("restored_from")
            phase = len(job.phase_parallelisms()) - 1
            restores = tuple((x["checkpoint"], r.restored_from) for x in answer["restores"] if x["phase"] == phase)
        return FaultResult(run.kind, r, tuple(compared), restores, seed=run.seed)
    try:
        events, _shapes = observations(log_text, phases=len(flinktrace.phases(run)))
    except FlinkspecError as e:
        r = conform.RunResult(job.seed, job, (f"Flink's log is unreadable: {e}",), float(answer.get("seconds", 0.0)),
                              bool(answer.get("failed")), None, answer)
        return FaultResult(run.kind, r, (), seed=run.seed)
    rep = replay_side(run, [dict(e, seq=i) for i, e in enumerate(events)])  # numbered as a trace file numbers them
    view = _two_phase_view(job) if len(flinktrace.phases(run)) > 1 else job
    diffs = list(rep.differences)
    diffs += conform.compare(view, rep.side, answer, restore=False)
    diffs += compare_restores(rep.restores)
    r = conform.RunResult(job.seed, job, tuple(diffs), float(answer.get("seconds", 0.0)), bool(answer.get("failed")),
                          rep.side.restored_from, answer)
    return FaultResult(run.kind, r, ("output", "keyed state and owners", "restored_from"),
                       tuple((fl, mo) for _seq, fl, mo in rep.restores), seed=run.seed)


def _conform_driver():
    """``tools/flink_conform_driver.py`` (stdlib only at import), for its readers of a job's
    folder."""
    import importlib.util  # lazy: only a run on the standalone cluster reads a job folder here

    spec = importlib.util.spec_from_file_location("flink_conform_driver", conform.DRIVER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_ha(run: flinktrace.TraceRun, run_id: int, *, timeout: float, keep: Path | None) -> FaultResult:
    """One run on the standalone cluster with ZooKeeper HA (``tools/flink_ha_cluster.py``, as the
    recorder runs it: the leading JobManager killed after two completed checkpoints), judged
    from its logs and the job's folder (``<work>/jobs/job-<id>-<n>``: committed output and
    observations). Key hashes and groups are not asked of a JVM here (the other kinds compare
    them)."""
    harness = flinktrace._ha_harness()
    work = Path(tempfile.mkdtemp(prefix="flinkspec-conform-ha-", dir=keep)).resolve()
    t0 = time.perf_counter()
    try:
        try:
            harness.check_environment()
            summ = harness.run_scenario(work, flinktrace.driver_request(run, run_id), job_timeout=timeout)
        except (harness.ClusterError, OSError, RuntimeError) as e:
            answer = {"id": run_id, "ok": False, "error": f"HA cluster: {str(e)[:300]}"}
            return FaultResult(run.kind, conform.judge(run.job, answer), (), seed=run.seed)
        logs = {name: Path(q).read_text(encoding="utf-8", errors="replace")
                for name, q in summ["logs"].items() if name.startswith(flinktrace._HA_LOGS) and Path(q).is_file()}
        folders = sorted((work / "jobs").glob(f"job-{run_id}-*"))
        drv = _conform_driver()
        answer = {"id": run_id, "ok": True, "failed": False, "seconds": round(time.perf_counter() - t0, 3),
                  "output": [r for f in folders for r in drv.read_committed(str(f / "out"))],
                  "observations": [o for f in folders if (f / "obs").is_dir()
                                   for o in drv.read_observations(str(f / "obs"))],
                  "final_state": summ.get("final_state"), "killed_job_manager": summ.get("killed")}
        if not str(summ.get("final_state", "")).startswith("FINISHED"):
            answer = dict(answer, ok=False, error=f"the job ended {summ.get('final_state')}, not FINISHED")
            return FaultResult(run.kind, conform.judge(run.job, answer), (), seed=run.seed)
        return judge(run, answer, logs)
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def run_faults(runs: int, seed: int, kinds: tuple[str, ...], *, batch: int = 8, timeout: float = 180.0,
               progress: Callable[[str], None] | None = None, keep: Path | None = None) -> list[FaultResult]:
    """``runs`` runs, the kinds in turn (run i: kind ``kinds[i % len(kinds)]``, the recorder's
    run of seed ``seed + i``), on real Flink through the recorder's driver (or its standalone
    HA cluster) and in the model."""
    say = progress or (lambda _m: None)
    plan = flinktrace.plan(runs, seed, kinds)
    results: list[FaultResult] = []
    for i, r in enumerate(plan):
        if flinktrace.FAULT_KINDS[r.kind].setup == "standalone-ha":
            res = run_ha(r, i, timeout=timeout, keep=keep)
            results.append(res)
            verdict = "agree" if res.agree else f"DISAGREE ({len(res.result.differences)} difference(s))"
            say(f"[{len(results)}/{runs}] {r.kind} seed {r.seed}: {verdict} {res.result.seconds:.1f}s")
            for d in res.result.differences:
                say(f"    {d}")
    plan = [r for r in plan if flinktrace.FAULT_KINDS[r.kind].setup == "minicluster"]
    for b0 in range(0, len(plan), batch):
        chunk = plan[b0:b0 + batch]
        t0 = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix="flinkspec-conform-faults-", dir=keep)).resolve()
        driver = flinktrace.TraceDriver(work, timeout)
        done = False
        try:
            requests = [flinktrace.driver_request(r, b0 + i) for i, r in enumerate(chunk)]
            for r, answer in zip(chunk, driver.run(requests)):
                text = driver.log_slice(answer["log"]) if answer.get("ok") else ""
                res = judge(r, answer, text)
                results.append(res)
                verdict = "agree" if res.agree else f"DISAGREE ({len(res.result.differences)} difference(s))"
                say(f"[{len(results)}/{runs}] {r.kind} seed {r.seed}: {verdict} {res.result.seconds:.1f}s")
                for d in res.result.differences:
                    say(f"    {d}")
            done = True
        finally:
            driver.close(kill=not done)
            if keep is None:
                shutil.rmtree(work, ignore_errors=True)
        say(f"batch of {len(chunk)} run(s) in {time.perf_counter() - t0:.0f}s")
    return results


def summary(results: list[FaultResult], seed: int, seconds: float) -> dict:
    """The ``--json`` last line of a ``--faults`` run: per kind the runs, agreements and what was
    compared."""
    per: dict[str, dict] = {}
    for res in results:
        row = per.setdefault(res.kind, {"runs": 0, "agree": 0, "compared": [], "restores": 0,
                                        "restored_a_checkpoint": 0})
        row["runs"] += 1
        row["agree"] += res.agree
        row["restores"] += len(res.restores)
        row["restored_a_checkpoint"] += sum(isinstance(fl, int) for fl, _mo in res.restores)
        row["compared"] = sorted(set(row["compared"]) | set(res.compared))
    return {"runs": len(results), "agree": sum(r.agree for r in results), "seed": seed,
            "seconds": round(seconds, 1), "kinds": per,
            "disagreements": [{"seed": r.seed, "job_seed": r.result.seed, "fault": r.kind, "job": r.result.job.describe(),
                               "differences": list(r.result.differences)} for r in results if not r.agree]}
