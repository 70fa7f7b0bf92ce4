"""``flinkspec trace --runs N [--seed S] [--faults KIND,...] --out DIR``: record real Flink runs under faults.

Runs N random jobs on real Flink 2.3.0 (a MiniCluster with two TaskManagers of two slots each,
or a standalone cluster with ZooKeeper HA; PyFlink in .venv-flink, created on first use), each
with one kind of fault, the kinds in turn (`flinkspec trace --faults list` names every kind
and what it injects). Each run's
events, read from Flink's own log (checkpoints triggered, completed and aborted, task
failures, restart sets, restores), go to one trace file in DIR (written atomically, named by
content). Check them with `flinkspec validate DIR/*.ndjson`. Progress goes to stderr. Exit 0
when every run was recorded, 1 when Flink did not finish one, 2 on bad input or when the
real-Flink environment cannot be created.
"""

from __future__ import annotations

import json
import sys
import time

from model.errors import FlinkspecError

MAX_RUNS = 10_000


def register(sub) -> None:
    p = sub.add_parser("trace", help="record real Flink 2.3.0 runs under faults as trace files",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--runs", type=int, default=None, metavar="N",
                   help="runs to record (default: one per fault kind taken)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="run i uses seed S+i (default 0)")
    p.add_argument("--faults", default=None, metavar="KIND,...",
                   help="fault kinds to take in turn (default: every kind; `--faults list` lists them)")
    p.add_argument("--out", required=False, metavar="DIR", help="folder for the trace files (created)")
    p.add_argument("--batch", type=int, default=8, metavar="B", help="runs per Flink JVM (default 8)")
    p.add_argument("--timeout", type=float, default=180.0, metavar="SECONDS",
                   help="longest a run may take in Flink (default 180)")
    p.add_argument("--keep-work", metavar="DIR", default=None,
                   help="keep Flink's work folders (its log, checkpoints, output) under DIR")
    p.add_argument("--json", action="store_true", help="a JSON summary as the last line of stdout")
    p.set_defaults(func=run)


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args) -> int:
    from properties import flinktrace  # lazy: the model runtime loads only here

    if args.faults == "list":
        for k in flinktrace.FAULT_KINDS.values():
            print(f"{k.name:22} {k.summary}")
        return 0
    kinds = flinktrace.fault_kinds(args.faults)
    if args.out is None:
        raise FlinkspecError("--out DIR is required: the folder the trace files go to")
    if args.runs is None:
        args.runs = len(kinds)
    if not 1 <= args.runs <= MAX_RUNS:
        raise FlinkspecError(f"--runs {args.runs}: must be between 1 and {MAX_RUNS}")
    if not 0 <= args.seed <= 2**40:
        raise FlinkspecError(f"--seed {args.seed}: must be an integer between 0 and 2^40")
    if not 1 <= args.batch <= 100:
        raise FlinkspecError(f"--batch {args.batch}: must be between 1 and 100")
    if not 10 <= args.timeout <= 3600:
        raise FlinkspecError(f"--timeout {args.timeout}: must be between 10 and 3600 seconds")
    from properties.conform import ensure_flink_env  # lazy, as above
    from properties.safe_io import check_output_dir  # lazy, as above

    out = check_output_dir(args.out, what="--out folder")
    keep = None if args.keep_work is None else check_output_dir(args.keep_work, what="--keep-work folder")
    ensure_flink_env(_say)
    t0 = time.perf_counter()
    runs = flinktrace.plan(args.runs, args.seed, kinds)
    done = flinktrace.record(runs, out, batch=args.batch, timeout=args.timeout, progress=_say, keep=keep)
    written = [d for d in done if d.path]
    failed = [d for d in done if d.error]
    per_kind: dict = {}
    for d in done:
        k = per_kind.setdefault(d.run.kind, {"recorded": 0, "failed": 0})
        k["recorded" if d.path else "failed"] += 1
    print(f"{len(written)}/{len(done)} runs recorded into {out} in {time.perf_counter() - t0:.0f}s"
          + (f"; {len(failed)} not finished by Flink (listed above)" if failed else ""))
    for kind, k in per_kind.items():
        print(f"  {kind:22} {k['recorded']} recorded" + (f", {k['failed']} failed" if k["failed"] else ""))
    if args.json:
        print(json.dumps({"runs": len(done), "recorded": len(written), "out": str(out), "per_kind": per_kind,
                          "failed": [{"kind": d.run.kind, "seed": d.run.seed, "error": d.error} for d in failed]},
                         sort_keys=True))
    return 0 if not failed else 1
