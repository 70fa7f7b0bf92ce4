"""Runs one phase of a ``flinkspec conform`` request on a standalone (HA) Flink cluster.

The entry point of ``bin/flink run -d -py tools/flink_trace_job.py REQUEST.json [--phase N]
[--folder DIR]`` (``tools/flink_ha_cluster.py`` submits it so). The client interpreter is
``.venv-flink``'s (``-pyclientexec`` / ``PYFLINK_CLIENT_EXECUTABLE``); the job is built by
``tools/flink_conform_driver.py`` (:func:`build_phase`, with its :func:`_configuration`) and
submitted to the cluster the ``bin/flink`` client runs against (FLINK_CONF_DIR: ZooKeeper HA,
the leading REST endpoint is looked up there). Detached (``-d``): the script prints
``{"job_id": "<hex>"}`` on stdout once the job is submitted and returns without waiting for its
result; attached, it waits for the result.

Differences to a conform run on a MiniCluster:

* every phase is checkpointed (every 100 ms, exactly-once; a phase that would stop with a
  savepoint is not stopped here: ``stop_with_savepoint`` is ignored), the restart strategy is
  fixed-delay (3 attempts, 100 ms) as in the driver's ``_configuration``;
* ``execution.state-recovery.path`` is taken from the optional request key ``restore`` (a
  savepoint or retained checkpoint path), none by default;
* the optional request key ``delay_ms`` (each record sleeps that long in the record-turning map,
  so a short job lasts long enough for a JobManager to be killed while it runs) is read by
  ``build_phase`` itself.

Python functions run in PyFlink's thread mode (the driver's default; ``FLINKSPEC_PYTHON_MODE``
= ``process`` selects the process mode): the TaskManagers' embedded interpreter imports PyFlink
and ``flink_conform_driver`` (the module of the pickled functions) through the PYTHONPATH the
TaskManagers were started with (``.venv-flink``'s site-packages and ``tools/``), which
``flink_ha_cluster.py`` sets; the thread mode needs no Python worker processes (about half
the time per job, and no extra processes to account for when the cluster stops). The job
folder (observations, the FileSink's output, checkpoints) is ``--folder`` (default: beside the
request file).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.environ.get("FLINKSPEC_TOOLS") or HERE
sys.path.insert(0, TOOLS)

import flink_conform_driver as conform  # noqa: E402  (beside this file; the pickled functions live there)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="one phase of a conform request on a Flink cluster")
    ap.add_argument("request", help="the request (JSON file)")
    ap.add_argument("--phase", type=int, default=0)
    ap.add_argument("--folder", default=None, help="the job's folder (default: the request's folder)")
    ap.add_argument("--attached", action="store_true", help="wait for the job's result")
    args = ap.parse_args(argv)
    with open(args.request, encoding="utf-8") as f:
        job = json.load(f)
    folder = os.path.abspath(args.folder or os.path.dirname(os.path.abspath(args.request)))
    os.makedirs(folder, exist_ok=True)

    from pyflink.datastream import StreamExecutionEnvironment
    from pyflink.java_gateway import get_gateway

    jvm = get_gateway().jvm
    cfg = conform._configuration(job, args.phase, folder, job.get("restore"))
    cfg.set_string("execution.checkpointing.interval", conform.CHECKPOINT_INTERVAL)
    env = StreamExecutionEnvironment.get_execution_environment(cfg)
    conform.build_phase(env, job, args.phase, folder, jvm)
    client = env.execute_async(f"{job.get('name', 'conform')}-phase{args.phase}")
    job_id = str(client.get_job_id())
    print(json.dumps({"job_id": job_id}), flush=True)
    if args.attached:
        client._j_job_client.getJobExecutionResult().get()
    return 0


if __name__ == "__main__":
    sys.exit(main())
