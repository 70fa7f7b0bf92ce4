"""``flinkspec conform --runs N [--seed S] [--faults KIND,...|all|list] [--json]``: the model against real Flink 2.3.0.

Draws N random jobs (run i from seed S+i: a source with fixed records, event timestamps and
watermarks, maybe a map and a filter, keyBy with a rolling aggregate in keyed state or a
tumbling/sliding event-time window, an exactly-once sink), runs each on a local Flink
MiniCluster (PyFlink in .venv-flink, created on first use with `make flink-env`) and in the
model, and compares: the committed output after failures and restores against the model's
oracle, and after a stop-with-savepoint and a restart with other parallelisms the key groups
and keyed state each new subtask holds and the source splits (operator list state) each new
source subtask restored. Most runs inject a failure (an operator throws once at a chosen
record after a chosen checkpoint); two in five rescale (up or down, small max parallelism).
With --drain every run is instead stopped with stop-with-savepoint --drain once each source
subtask emitted its first records, and the outputs are compared with the oracle of the records
read.
With --faults the runs take the fault kinds of `flinkspec trace` in turn (`--faults list` names
them; `all`: every kind; `minicluster`: every kind but jobmanager-loss) on a MiniCluster with two TaskManagers (jobmanager-loss: a standalone
cluster with ZooKeeper HA, 55 to 90 s a run), and compare the
committed output after the fault and the recovery with the oracle, the final keyed state and
which checkpoint each restore used. Progress goes to stderr; a report (every run, every
difference) goes to results/. Exit 0 when
every run agrees, 1 on a disagreement, 2 on bad input or when the real-Flink environment
cannot be created.
"""

from __future__ import annotations

import json
import re
import sys
import time

from model.errors import FlinkspecError
from properties.progress import Reporter

MAX_RUNS = 10_000


def register(sub) -> None:
    p = sub.add_parser("conform", help="compare the model with a real Flink 2.3.0 MiniCluster on random jobs",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--runs", type=int, default=10, metavar="N", help="jobs to draw and run (default 10)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="run i uses seed S+i (default 0)")
    p.add_argument("--batch", type=int, default=10, metavar="B",
                   help="jobs per Flink JVM (default 10; each job runs in its own MiniCluster)")
    p.add_argument("--timeout", type=float, default=180.0, metavar="SECONDS",
                   help="longest a job may take in Flink before it counts as a disagreement (default 180)")
    p.add_argument("--keep-work", metavar="DIR", default=None,
                   help="keep Flink's work folder (committed part files, observations, checkpoints, logs) "
                        "under DIR instead of removing it")
    p.add_argument("--faults", default=None, metavar="KIND,...",
                   help="take these fault kinds of `flinkspec trace` in turn (`all`: every kind; `minicluster` or "
                        "`standalone-ha`: every kind run on that set-up; "
                        "`list` lists them; default: conform's own variations, a failing function and "
                        "stop-with-savepoint with a rescale)")
    p.add_argument("--drain", action="store_true",
                   help="stop every run with stop-with-savepoint --drain once each source subtask emitted its first "
                        "records (no failure, no rescale): Flink's committed output and the model's are compared "
                        "with the oracle of the records read")
    p.add_argument("--json", action="store_true", help="a JSON summary as the last line of stdout")
    p.set_defaults(func=run)


def _check(args) -> None:
    if not 1 <= args.runs <= MAX_RUNS:
        raise FlinkspecError(f"--runs {args.runs}: must be between 1 and {MAX_RUNS}")
    if not 0 <= args.seed <= 2**62:
        raise FlinkspecError(f"--seed {args.seed}: must be an integer between 0 and 2^62")
    if not 1 <= args.batch <= 100:
        raise FlinkspecError(f"--batch {args.batch}: must be between 1 and 100")
    if not 1 <= args.timeout <= 3600:
        raise FlinkspecError(f"--timeout {args.timeout}: must be between 1 and 3600 seconds")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _reporting(rep, runs: int):
    """The progress callback of ``run_conform``: each message a line of ``rep`` (stderr), and
    between messages a line every few seconds saying how many runs are judged (a Flink batch
    runs for minutes without a word)."""
    judged = [0]

    def say(message: str) -> None:
        m = _RUN_LINE.match(message)
        if m:
            judged[0] = int(m.group(1))
        rep.note(message)
        rep.update(f"{judged[0]}/{runs} runs judged; Flink is running the next")
    rep.update(f"0/{runs} runs judged; Flink is starting")
    return say


#: the first word of run_conform's line for a judged run: ``[k/n]``
_RUN_LINE = re.compile(r"\[(\d+)/\d+\]")


def _list_faults() -> int:
    from properties import flinktrace  # lazy: the model runtime loads only here

    for k in flinktrace.FAULT_KINDS.values():
        print(f"{k.name:22} {k.summary}" + (" (a standalone cluster per run, 55 to 90 s)"
                                           if k.setup == "standalone-ha" else ""))
    return 0


def _run_faults(args) -> int:
    from properties import conformfaults  # lazy: the model runtime loads only here
    from properties.conform import ensure_flink_env  # lazy, as above
    from properties.corpus import run_directory  # lazy, as above
    from properties.safe_io import check_output_dir, write_atomic  # lazy, as above

    kinds = conformfaults.parse_faults(args.faults)
    if args.seed > 2**40:
        raise FlinkspecError(f"--seed {args.seed}: with --faults must be an integer between 0 and 2^40")
    ensure_flink_env(_say)
    t0 = time.perf_counter()
    keep = None if args.keep_work is None else check_output_dir(args.keep_work, what="--keep-work folder")
    with Reporter("conform") as rep:
        results = conformfaults.run_faults(args.runs, args.seed, kinds, batch=args.batch, timeout=args.timeout,
                                           progress=_reporting(rep, args.runs), keep=keep)
    line = conformfaults.summary(results, args.seed, time.perf_counter() - t0)
    out = run_directory("conform", args.seed)
    report = out / "report.json"
    write_atomic(report, json.dumps({"summary": line, "runs": [r.to_dict() for r in results]}, indent=1) + "\n",
                 what="conform report")
    for d in line["disagreements"]:
        print(f"DISAGREES {d['fault']} seed {d['seed']}: {d['job']}")
        for diff in d["differences"]:
            print(f"    {diff}")
    for kind, row in line["kinds"].items():
        print(f"{kind:22} {row['agree']}/{row['runs']} agree, {row['restores']} restore(s) compared "
              f"(compared: {', '.join(row['compared']) or 'nothing'})")
    print(f"{line['agree']}/{line['runs']} runs agree in {line['seconds']:.0f}s; report: {report}")
    if args.json:
        print(json.dumps(line, sort_keys=True))
    return 0 if line["agree"] == line["runs"] else 1


def run(args) -> int:
    if args.faults is not None and args.faults.strip() == "list":
        return _list_faults()
    _check(args)
    if args.faults is not None:
        if args.drain:
            raise FlinkspecError("--drain and --faults cannot be combined: --drain stops conform's own runs")
        return _run_faults(args)
    from properties.conform import ensure_flink_env, run_conform, summary  # lazy: the model runtime loads only here
    from properties.corpus import run_directory  # lazy, as above
    from properties.safe_io import check_output_dir, write_atomic  # lazy, as above

    ensure_flink_env(_say)
    t0 = time.perf_counter()
    keep = None
    if args.keep_work is not None:
        keep = check_output_dir(args.keep_work, what="--keep-work folder")
    with Reporter("conform") as rep:
        results = run_conform(args.runs, args.seed, batch=args.batch, timeout=args.timeout,
                              progress=_reporting(rep, args.runs), keep=keep, drain=args.drain)
    line = summary(results, args.seed, time.perf_counter() - t0)
    out = run_directory("conform", args.seed)
    report = out / "report.json"
    write_atomic(report, json.dumps({"summary": line, "runs": [r.to_dict() for r in results]}, indent=1) + "\n",
                 what="conform report")
    for d in line["disagreements"]:
        print(f"DISAGREES seed {d['seed']}: {d['job']}")
        for diff in d["differences"]:
            print(f"    {diff}")
    print(f"{line['agree']}/{line['runs']} runs agree ({line['with_failures']} with an injected failure, "
          f"{line['rescaled']} rescaled: {line['rescaled_up']} up, {line['rescaled_down']} down"
          f"{', ' + str(line['drained']) + ' stopped with --drain' if line['drained'] else ''}) "
          f"in {line['seconds']:.0f}s; report: {report}")
    if args.json:
        print(json.dumps(line, sort_keys=True))
    return 0 if line["agree"] == line["runs"] else 1
