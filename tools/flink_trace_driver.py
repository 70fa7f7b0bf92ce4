"""Records real Flink runs under faults on a MiniCluster with several TaskManagers (PyFlink).

``flinkspec trace`` (``properties/flinktrace.py``) starts this script with the real-Flink
environment's interpreter (``make flink-env``), its JVM logging with
``tools/flink-trace-log4j2.properties`` into one file, and writes one JSON request per line
to its stdin; for each it answers one JSON line on stdout, in order. A request is a
``flinkspec conform`` job (``tools/flink_conform_driver.py`` builds each phase of it) with a
``trace`` table saying how to run it::

    "trace": {"task_managers": 2, "slots": 2,
              "lose_task_manager": {"after_checkpoints": 1, "task_manager": 0} | null,
              "checkpoint_timeout_ms": null | 200, "delay_ms": 0, "unaligned": false,
              "state_backend": null | "rocksdb", "incremental": false, "num_retained": 1,
              "decline_checkpoints": null | {"checkpoints": [N, ...], "tolerable": 0},
              "claim_mode": null | "CLAIM" | "NO_CLAIM",
              "cancel_after_checkpoints": null | 2}

With ``cancel_after_checkpoints`` the first phase is cancelled (``JobClient.cancel``, as a user
cancels a job) once it completed that many checkpoints, its checkpoints retained on cancellation
(``execution.checkpointing.externalized-checkpoint-retention: RETAIN_ON_CANCELLATION``), and
the next phase is submitted from the latest of them (its ``chk-N`` directory as
``execution.state-recovery.path``, ``execution.state-recovery.claim-mode`` ``claim_mode``),
with the same parallelisms; every phase then shares one checkpoint directory, so the storage
poller sees the restored checkpoint's files beside the new job's, and the inline threshold is 0
so that every SST file is a file whose reuse the poller sees.

Each phase runs in its own MiniCluster (``minicluster.number-of-taskmanagers``, several slots
each). A TaskManager is lost for real: once the phase completed ``after_checkpoints``
checkpoints (counted in the log), ``MiniCluster.terminateTaskManager(i)`` stops it, and
``MiniCluster.startTaskManager()`` starts a replacement with the same slots (Flink's
ResourceManager would ask its resource provider for one; a standalone MiniCluster has none, and
without it the job waits for slots until ``slot.request.timeout``). The MiniCluster is the
private field ``miniCluster`` of the ``MiniClusterJobClient`` that ``execute_async`` returns.
``delay_ms`` (the conform driver's request key) makes the record-turning map sleep per record, so that records queue up in the
network buffers (back-pressure: aligned barriers wait behind them, unaligned ones overtake).

With ``decline_checkpoints`` the tasks' snapshots of the listed checkpoints fail in their
asynchronous phase, for real: once the job is submitted (its id known, long before its first
checkpoint), ``<checkpoint dir>/<job id>/chk-N`` is made a link to an empty directory this
process cannot write into. The CheckpointCoordinator takes it as checkpoint N's location
(``mkdirs`` of an existing directory); each task's ``AsyncCheckpointRunnable`` fails to create
its state file there and declines N with CHECKPOINT_ASYNC_EXCEPTION; the CheckpointFailureManager
(``execution.checkpointing.tolerable-failed-checkpoints``: ``tolerable``) decides whether the
job fails over. ``execution.checkpointing.data-inline-threshold`` is 0 so that every task with
state writes a file (below the threshold Flink keeps the state in the acknowledgement).

The answer: ``{"id", "ok", "log": [first byte, end byte] of the run in the log file, per phase
[start, end], "savepoints": [...], "restored_checkpoints": [the chk-N directories restored],
"lost_task_manager": {...} | null, "failed": bool, "flink_version", "seconds"}`` and the job's
end results as the conform driver gives them (``end_results``: committed output, observations,
key hashes and groups) or ``{"id", "ok": false, "error"}``. The log is the trace (``flinkspec
trace``); ``flinkspec conform --faults`` runs its jobs through this driver and compares the end
results.
"""

from __future__ import annotations

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flink_conform_driver as conform  # noqa: E402  (beside this file; pickled functions live there)


def _log(msg: str) -> None:
    sys.stderr.write(f"[flink-trace] {msg}\n")
    sys.stderr.flush()


def _log_size() -> int:
    path = os.environ.get("FLINKSPEC_TRACE_LOG", "")
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _completed_since(offset: int) -> int:
    """Completed checkpoints the CheckpointCoordinator logged after byte ``offset``."""
    path = os.environ["FLINKSPEC_TRACE_LOG"]
    with open(path, "rb") as f:
        f.seek(offset)
        text = f.read().decode("utf-8", "replace")
    return text.count("] - Completed checkpoint ")


def _mini_cluster(j_client):
    """The MiniCluster behind a MiniClusterJobClient (its private field ``miniCluster``)."""
    cls = j_client.getClass()
    while cls is not None:
        for field in cls.getDeclaredFields():
            if field.getType().getName().endswith(".MiniCluster"):
                field.setAccessible(True)
                return field.get(j_client)
        cls = cls.getSuperclass()
    raise RuntimeError(f"no MiniCluster field in {j_client.getClass().getName()}")


class StoragePoller(threading.Thread):
    """Watches a phase's checkpoint storage (``execution.checkpointing.dir``: ``<job id>/shared``
    and ``<job id>/chk-N/_metadata``) every few milliseconds and logs, through the trace's marker
    logger, which shared files each completed checkpoint's metadata references (a shared file's
    name is in its ``_metadata``: the handles store their paths) and which shared files are
    deleted. Flink does not log either; the marker lines place them among its events (a poll
    later than the change, never earlier)."""

    def __init__(self, base: str, log, previous: "StoragePoller | None" = None):
        super().__init__(daemon=True)
        self.base, self.log = base, log
        self.done = threading.Event()
        # a later phase's poller over the same directory goes on from the previous one's view
        # (the restored checkpoint's files are known, its metadata already reported)
        self.seen_meta: set = set(previous.seen_meta) if previous else set()
        self.shared: set = set(previous.shared) if previous else set()
        self.known: set = set(previous.known) if previous else set()
        #: checkpoint ids whose references were logged
        self.reported: set = set(previous.reported) if previous else set()

    def _poll(self) -> None:
        if not os.path.isdir(self.base):
            return
        jobs = sorted(os.listdir(self.base))
        now: set = set()  # the shared files of every job's directory (UUID names: unique)
        for job in jobs:
            shared_dir = os.path.join(self.base, job, "shared")
            now |= set(os.listdir(shared_dir)) if os.path.isdir(shared_dir) else set()
        self.known |= now
        for job in jobs:
            root = os.path.join(self.base, job)
            for name in sorted(os.listdir(root)) if os.path.isdir(root) else ():
                meta = os.path.join(root, name, "_metadata")
                if not name.startswith("chk-") or (job, name) in self.seen_meta or not os.path.isfile(meta):
                    continue
                try:
                    size = os.path.getsize(meta)
                    time.sleep(0.005)
                    if size == 0 or os.path.getsize(meta) != size:
                        continue  # still being written
                    with open(meta, "rb") as f:
                        data = f.read()
                except OSError:
                    continue
                self.seen_meta.add((job, name))
                refs = sorted(f for f in self.known if f.encode() in data)
                self.reported.add(int(name[4:]))
                self.log.info(f"flinkspec: checkpoint {name[4:]} references shared files [{','.join(refs)}]")
        for gone in sorted(self.shared - now):
            self.log.info(f"flinkspec: shared file {gone} deleted")
        self.shared = now

    def run(self) -> None:
        while not self.done.is_set():
            try:
                self._poll()
            except OSError:
                pass
            time.sleep(0.01)
        self._poll()

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=5)


def _configuration(job: dict, phase_no: int, folder: str, restore):
    cfg = conform._configuration(job, phase_no, folder, restore)
    tr = job["trace"]
    cfg.set_string("minicluster.number-of-taskmanagers", str(tr.get("task_managers", 2)))
    cfg.set_string("taskmanager.numberOfTaskSlots", str(tr.get("slots", 2)))
    cfg.set_string("slot.request.timeout", "30 s")
    if tr.get("checkpoint_timeout_ms"):
        cfg.set_string("execution.checkpointing.timeout", f"{tr['checkpoint_timeout_ms']} ms")
        cfg.set_string("execution.checkpointing.tolerable-failed-checkpoints", "1000")
    if tr.get("unaligned"):
        cfg.set_string("execution.checkpointing.unaligned.enabled", "true")
    if tr.get("decline_checkpoints"):
        cfg.set_string("execution.checkpointing.data-inline-threshold", "0 b")
        cfg.set_string("execution.checkpointing.tolerable-failed-checkpoints",
                       str(int(tr["decline_checkpoints"]["tolerable"])))
    if tr.get("state_backend"):
        cfg.set_string("state.backend.type", tr["state_backend"])
        cfg.set_string("execution.checkpointing.incremental", "true" if tr.get("incremental") else "false")
    cfg.set_string("execution.checkpointing.num-retained", str(tr.get("num_retained", 1)))
    if restore is not None and tr.get("claim_mode"):
        cfg.set_string("execution.state-recovery.claim-mode", tr["claim_mode"])
    if tr.get("cancel_after_checkpoints"):
        cfg.set_string("execution.checkpointing.externalized-checkpoint-retention", "RETAIN_ON_CANCELLATION")
        cfg.set_string("execution.checkpointing.dir", "file://" + _checkpoint_dir(job, folder, phase_no))
        # every SST file a file in storage (below the threshold Flink keeps it inline in the
        # metadata, where the poller cannot tell its reuse by a later checkpoint)
        cfg.set_string("execution.checkpointing.data-inline-threshold", "0 b")
    return cfg


def _checkpoint_dir(job: dict, folder: str, phase_no: int) -> str:
    """A phase's checkpoint directory: its own, or one for every phase of a run that restores a
    retained checkpoint (the poller then sees the restored files beside the new job's)."""
    if job["trace"].get("cancel_after_checkpoints"):
        return os.path.join(folder, "checkpoints")
    return os.path.join(folder, f"checkpoints-{phase_no}")


def _cancel_after_checkpoints(jvm, client, result, job: dict, folder: str, p0: int, poller, deadline: float,
                              what: str) -> str:
    """Cancel the phase once it completed ``cancel_after_checkpoints`` checkpoints whose
    references the storage poller reported; returns the latest retained checkpoint's directory
    (the highest ``chk-N`` with a ``_metadata`` file of the job's directory)."""
    want = job["trace"]["cancel_after_checkpoints"]
    while _completed_since(p0) < want or (poller is not None and len(poller.reported) < want):
        if result.isDone() or time.time() > deadline:
            raise RuntimeError(f"{what} ended before {want} checkpoints completed")
        time.sleep(0.02)
    job_id = str(client._j_job_client.getJobID().toHexString())
    try:
        client.cancel().result()
    except Exception as e:  # the job may be gone already; the result below says how it ended
        _log(f"{what}: cancel: {e}")
    unit = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
    try:
        result.get(max(1, int((deadline - time.time()) * 1000)), unit)
    except Exception as e:  # a cancelled job's result is an exception; only a cancellation is wanted
        if "JobCancellationException" not in str(e) and "cancel" not in str(e).lower():
            raise RuntimeError(f"{what} did not end by cancellation: {conform._java_cause(e)}") from None
    root = os.path.join(_checkpoint_dir(job, folder, 0), job_id)
    done = [int(n[4:]) for n in os.listdir(root)
            if n.startswith("chk-") and os.path.isfile(os.path.join(root, n, "_metadata"))]
    if not done:
        raise RuntimeError(f"{what}: no retained checkpoint in {root}")
    return os.path.join(root, f"chk-{max(done)}")


def _unwritable_dir(folder: str) -> str:
    """An empty directory in which this process cannot create a file: one of its own without
    write permission, or, where permissions do not stop it (root with CAP_DAC_OVERRIDE), an
    empty sysfs directory (sysfs refuses new files to everyone)."""
    own = os.path.join(folder, "unwritable")
    os.makedirs(own, exist_ok=True)
    os.chmod(own, 0o555)
    candidates = [own] + [os.path.join(d, n) for d in ("/sys/class", "/sys/kernel", "/sys/bus")
                          if os.path.isdir(d) for n in sorted(os.listdir(d))]
    for d in candidates:
        try:
            if not os.path.isdir(d) or os.listdir(d):
                continue
            probe = os.path.join(d, "flinkspec-probe")
            with open(probe, "w"):
                pass
            os.unlink(probe)
        except OSError:
            return d
    raise RuntimeError("no empty directory this process cannot write into (tried its own, without write "
                       "permission, and the empty sysfs directories)")


def _fail_snapshots_of(base: str, job_id: str, checkpoints, folder: str) -> None:
    """Make the tasks' state files of ``checkpoints`` unwritable: ``<base>/<job id>/chk-N`` is a
    link to an empty directory nobody may write into (the module docstring)."""
    target = _unwritable_dir(folder)
    root = os.path.join(base, job_id)
    os.makedirs(root, exist_ok=True)
    for n in checkpoints:
        os.symlink(target, os.path.join(root, f"chk-{int(n)}"))


def run_job(job: dict, base: str, jvm, timeout: float) -> dict:
    from pyflink.datastream import StreamExecutionEnvironment

    t0 = time.time()
    folder = os.path.join(base, f"job-{job['id']}")
    os.makedirs(folder, exist_ok=True)
    deadline = t0 + timeout
    tr = job["trace"]
    restore = None
    savepoints, phases, restored = [], [], []
    lost = None
    poller = None
    start = _log_size()
    for phase_no, phase in enumerate(job["phases"]):
        p0 = _log_size()
        env = StreamExecutionEnvironment.get_execution_environment(_configuration(job, phase_no, folder, restore))
        conform.build_phase(env, job, phase_no, folder, jvm)
        what = f"job {job['name']} phase {phase_no}"
        previous, poller = poller if phase_no else None, None
        if tr.get("state_backend") == "rocksdb" and tr.get("incremental"):
            same_dir = previous is not None and previous.base == _checkpoint_dir(job, folder, phase_no)
            poller = StoragePoller(_checkpoint_dir(job, folder, phase_no),
                                   jvm.org.slf4j.LoggerFactory.getLogger("flinkspec.trace"),
                                   previous if same_dir else None)
            poller.start()
        client = env.execute_async(f"{job['name']}-phase{phase_no}")
        j_client = client._j_job_client
        if tr.get("decline_checkpoints") and phase_no == 0:  # (such a run has one phase: its own directory)
            _fail_snapshots_of(os.path.join(folder, "checkpoints-0"), str(j_client.getJobID().toHexString()),
                               tr["decline_checkpoints"]["checkpoints"], folder)
        result = j_client.getJobExecutionResult()
        loss = tr.get("lose_task_manager")
        if loss and phase_no == len(job["phases"]) - 1:
            mc = _mini_cluster(j_client)
            while _completed_since(p0) < loss["after_checkpoints"]:
                if result.isDone() or time.time() > deadline:
                    raise RuntimeError(f"{what} ended before {loss['after_checkpoints']} checkpoints completed")
                time.sleep(0.02)
            # the marker the trace parser reads (properties/flinklog.py): where in Flink's own
            # order of events the loss happened
            jvm.org.slf4j.LoggerFactory.getLogger("flinkspec.trace").info(
                f"flinkspec: TaskManager {int(loss['task_manager'])} terminated")
            mc.terminateTaskManager(int(loss["task_manager"])).get()
            mc.startTaskManager()
            lost = {"task_manager": int(loss["task_manager"]), "phase": phase_no}
        if phase.get("stop_with_savepoint"):
            conform._wait_for_phase_input(job, phase_no, folder, result, deadline)
            restore = conform._stop_with_savepoint(jvm, client, os.path.join(folder, f"savepoint-{phase_no}"),
                                                   deadline, drain=phase.get("drain", False))
            savepoints.append(restore)
        try:
            if phase_no == 0 and tr.get("cancel_after_checkpoints") and len(job["phases"]) > 1:
                restore = _cancel_after_checkpoints(jvm, client, result, job, folder, p0, poller, deadline, what)
                restored.append(restore)
            else:
                conform._wait_finished(jvm, result, client, deadline, what)
        finally:
            if poller is not None:
                poller.stop()
        phases.append([p0, _log_size()])
    return {"id": job["id"], "ok": True, "log": [start, _log_size()], "phases": phases, "savepoints": savepoints,
            "restored_checkpoints": restored, "lost_task_manager": lost, **conform.end_results(job, folder, jvm),
            "seconds": round(time.time() - t0, 3)}


def main() -> int:
    return conform.serve(run_job, on_error=lambda: {"log": [0, _log_size()]})

if __name__ == "__main__":
    sys.exit(main())
