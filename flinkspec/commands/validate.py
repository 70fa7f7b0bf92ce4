"""``flinkspec validate FILE... [--json]``: can the model do what a recorded real Flink run did?

Reads each trace (recorded by `flinkspec trace`), builds the model's scenario from its header
(the job, its input, Flink's configuration) and searches the model for a run whose observable
events are the trace's in order, with the model's unobservable steps in between (message
deliveries, barriers, records). Per file: consistent; divergent, with the longest matched
prefix, the first event the model cannot produce there and what the model could do instead;
or inconclusive, naming the bound hit. The mapping rules that leave an event out are counted
per file (docs/conformance.md). Each divergence is also written as a counterexample file
(the model's run of the matched prefix and the trace's events: `flinkspec replay` reproduces
it, `flinkspec show` shows the observed events beside the model's steps) into
`--out DIR/trace_divergence/`, beside the report (default: results/validate-<time>/).
Exit 0 when every trace is consistent, 1 when one is divergent or inconclusive, 2 on a
malformed trace or bad arguments.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from model.errors import FlinkspecError


def register(sub) -> None:
    p = sub.add_parser("validate", help="check recorded real Flink traces against the model",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("files", nargs="+", metavar="FILE", help="trace files (.ndjson), or folders holding them")
    p.add_argument("--max-states", type=int, default=200_000, metavar="N",
                   help="model states searched per trace before it is inconclusive (default 200000)")
    p.add_argument("--max-seconds", type=float, default=120.0, metavar="S",
                   help="seconds searched per trace before it is inconclusive (default 120)")
    p.add_argument("--json", action="store_true", help="one JSON object per trace, then a summary line")
    p.add_argument("--out", metavar="DIR",
                   help="the folder of the report (report.json: every verdict with the model's actions to the "
                        "deepest matched point) and of each divergence's counterexample file "
                        "(trace_divergence/<hash>.ndjson); default: a new results/validate-<time>/")
    p.add_argument("--no-write", action="store_true", help="write no report and no counterexample file")
    p.set_defaults(func=run)


def _files(args) -> list[Path]:
    out = []
    for f in args.files:
        p = Path(f)
        if p.is_dir():
            found = sorted(p.glob("*.ndjson"))
            if not found:
                raise FlinkspecError(f"{p}: no trace files (*.ndjson) in this folder")
            out.extend(found)
        else:
            out.append(p)
    return out


def _out_dir(args) -> Path:
    """The folder of the report and the divergence files: ``--out``, or a new run directory."""
    if args.out is not None:
        from properties.safe_io import check_output_dir  # lazy: only a run that writes needs it

        return check_output_dir(args.out, what="output folder")
    from properties.corpus import run_directory  # lazy, as above

    return run_directory("validate", None)


def run(args) -> int:
    if not 1 <= args.max_states <= 100_000_000:
        raise FlinkspecError(f"--max-states {args.max_states}: must be between 1 and 100000000")
    if not 0 < args.max_seconds <= 86_400:
        raise FlinkspecError(f"--max-seconds {args.max_seconds}: must be between 0 and 86400")
    if args.out is not None and args.no_write:
        raise FlinkspecError("--out and --no-write: give one of them (--no-write writes nothing)")
    from properties.flinktrace import load_trace  # lazy: the model runtime loads only here
    from properties.safe_io import check_output_dir  # lazy, as above
    from properties.tracevalidation import CONSISTENT, DIVERGENT, validate  # lazy, as above

    if args.out is not None:
        check_output_dir(args.out, what="output folder", create=False)  # before any search
    files = _files(args)
    traces = [load_trace(f) for f in files]  # every file checked before any search
    out_dir = None
    t0 = time.perf_counter()
    counts: dict = {}
    per_fault: dict = {}
    reports: list = []
    interactive = sys.stderr.isatty()
    for i, tr in enumerate(traces):
        v = validate(tr, max_states=args.max_states, max_seconds=args.max_seconds,
                     progress=(lambda m, _p=tr.path: print(f"  {_p}: {m}", file=sys.stderr, flush=True))
                     if interactive else None)
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
        fault = tr.header["fault"]
        per_fault.setdefault(fault, {}).setdefault(v.verdict, 0)
        per_fault[fault][v.verdict] += 1
        reports.append(dict(v.to_dict(), fault=fault))
        if v.verdict == DIVERGENT and not args.no_write:
            from properties.tracecounterexample import write_divergence  # lazy: only a divergence needs it

            out_dir = out_dir or _out_dir(args)
            reports[-1]["counterexample"] = str(write_divergence(out_dir, tr, v))
        if args.json:
            d = dict(reports[-1])
            d.pop("model_actions")
            print(json.dumps(d, sort_keys=True, default=list))
        else:
            print(f"[{i + 1}/{len(traces)}] {v.verdict.upper():12} {tr.path}: {v.matched}/{v.total} events matched, "
                  f"{v.states} model states, {v.seconds:.1f}s")
            if v.verdict != CONSISTENT:
                if v.reason:
                    print(f"    {v.reason}")
                if v.first_unmatched is not None:
                    print(f"    first event the model cannot produce: #{v.first_unmatched.seq} "
                          f"{v.first_unmatched.describe()}")
                if v.model_could:
                    print("    the model could instead: " + "; ".join(v.model_could[:8]))
                if v.bound:
                    print(f"    bound hit: {v.bound}")
                if "counterexample" in reports[-1]:
                    print(f"    counterexample: {reports[-1]['counterexample']} (flinkspec show / replay)")
        sys.stdout.flush()
    summary = {"traces": len(traces), "seconds": round(time.perf_counter() - t0, 1),
               **{k: counts.get(k, 0) for k in ("consistent", "divergent", "inconclusive")}, "per_fault": per_fault}
    if not args.no_write:
        from properties.safe_io import write_atomic  # lazy, as above

        out = (out_dir or _out_dir(args)) / "report.json"
        write_atomic(out, json.dumps({"summary": summary, "traces": reports}, indent=1, sort_keys=True,
                                     default=list) + "\n", what="validation report")
        summary["report"] = str(out)
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(f"{summary['consistent']}/{len(traces)} consistent, {summary['divergent']} divergent, "
              f"{summary['inconclusive']} inconclusive in {summary['seconds']:.0f}s"
              + (f"; report: {summary['report']}" if "report" in summary else ""))
    return 0 if summary["consistent"] == len(traces) else 1
