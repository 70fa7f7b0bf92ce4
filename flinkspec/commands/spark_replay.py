"""``flinkspec spark-replay --runs N [--master URL] [--variant NAME ...] [--swarm/--no-swarm] [--out DIR] [--seed S] [--max-steps K]``.

Runs N seeded random walks of the model on Spark (local[*] by default; any cluster with
``--master``), spread round-robin over the variants (each variant gets the seeds S, S+1, ...).
One row per run is written as Parquet to OUT/runs/variant=NAME/ and a summary per variant is
printed and written to OUT/summary.json. One failing seed per violation signature
(variant, invariant) is re-run in the driver, shrunk and stored under --counterexamples.
By default both go into a new run directory, results/spark-replay-<UTC time>-seed<S>/
(OUT itself, and its counterexamples/); the committed corpus changes only through
`flinkspec corpus update`. Exit 0 when every variant gave its expected verdict, 1
otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from flinkspec.commands import seed
from model.errors import InvalidArgument
from properties.corpus import run_directory
from spark.replay import ENGINES, ReplayPlan, check_destinations, check_variants, format_summary, replay
from spark.session import master_timeout, session, validate_master



def register(subparsers) -> None:
    p = subparsers.add_parser(
        "spark-replay",
        help="randomized replays of the model on Spark: Parquet results, summary, counterexamples",
        description=__doc__.split("\n\n", 1)[1],
    )
    add_run_arguments(p)
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: a new run directory results/spark-replay-<UTC time>-seed<S>/); "
                        "any Hadoop URI on a cluster")
    p.add_argument("--counterexamples", metavar="DIR", default=None,
                   help="where shrunk counterexamples go (default: counterexamples/ in the run directory)")
    p.add_argument("--no-counterexamples", action="store_true",
                   help="do not re-run, shrink or store failing seeds")
    p.add_argument("--no-shrink", action="store_true", help="store failing traces unshrunk")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress line on stderr (default: only when stderr is a terminal)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON line")
    p.add_argument("--report", metavar="OUT.html", default=None,
                   help="also write a self-contained HTML report (per-variant table, goals reached, a viewer page "
                        "per counterexample)")
    p.add_argument("--smoke", action="store_true",
                   help="a short run: an unsafe variant not found yet is reported but does not fail the "
                        "run (a safe variant's violation or an engine error still does)")
    p.set_defaults(func=run)


def add_run_arguments(p) -> None:
    """Arguments shared with ``flinkspec bench spark``."""
    p.add_argument("--runs", metavar="N", type=int, required=True, help="number of runs in total")
    p.add_argument("--master", metavar="URL", default="local[*]",
                   help="Spark master: local[*] (default), local[N], spark://HOST:PORT, yarn, k8s://...")
    p.add_argument("--variant", metavar="NAME", action="append", default=None,
                   help="a model variant to run (repeatable; default: all)")
    p.add_argument("--swarm", action=argparse.BooleanOptionalAction, default=True,
                   help="swarm testing: each run enables a random subset of action kinds (default on)")
    p.add_argument("--seed", metavar="S", type=seed, default=0, help="first seed (default 0)")
    p.add_argument("--max-steps", metavar="K", type=int, default=None,
                   help="random-walk steps of one run before it is drained (default: the variant's own)")
    p.add_argument("--partitions", metavar="P", type=int, default=None,
                   help="Spark partitions of the runs (default: 8 per core)")
    p.add_argument("--engine", choices=("model", "standin"), default="model",
                   help="model (default) or the synthetic stand-in engine (a Spark smoke test)")
    p.add_argument("--conf", metavar="KEY=VALUE", action="append", default=[],
                   help="extra Spark configuration (repeatable)")
    p.add_argument("--master-timeout", metavar="SECONDS", type=float, default=None,
                   help="give up on a cluster master that does not answer or give an executor "
                        "(default 25, or FLINKSPEC_SPARK_MASTER_TIMEOUT)")


def parse_conf(items) -> dict:
    conf = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgument(f"--conf {item!r}: expected KEY=VALUE")
        conf[key.strip()] = value
    return conf


def plan_from_args(args):
    """(engine, plan, master, conf) from parsed arguments; every check happens before Spark starts."""
    master = validate_master(args.master)
    master_timeout(args.master_timeout)
    conf = parse_conf(args.conf)
    try:
        engine = ENGINES[args.engine]()
    except ImportError as e:  # the model's engines are not built yet / broken install
        raise InvalidArgument(f"--engine {args.engine}: not available ({e})") from None
    variants = check_variants(args.variant, engine)
    plan = ReplayPlan(runs=args.runs, variants=variants, seed=args.seed, swarm=args.swarm,
                      max_steps=args.max_steps, partitions=args.partitions)
    return engine, plan, master, conf


def output_paths(args):
    """(run directory or None, OUT, counterexamples directory or None). The counterexamples go
    to --counterexamples DIR, else to OUT/counterexamples when --out names a local folder (what
    a user names is where everything goes), else into the run directory. A new run directory
    under results/ is created only when one of them is left to it (no --out; or an --out on a
    cluster file system, which the driver does not write, without --counterexamples)."""
    want_cx = not args.no_counterexamples
    out_local = args.out is not None and ("://" not in str(args.out) or str(args.out).startswith("file:"))
    run_dir = None
    if args.out is None or (want_cx and args.counterexamples is None and not out_local):
        run_dir = run_directory("spark-replay", args.seed)
    out = args.out if args.out is not None else str(run_dir)
    if not want_cx:
        cx = None
    elif args.counterexamples is not None:
        cx = args.counterexamples
    elif out_local:
        cx = str(Path(str(args.out).removeprefix("file:")) / "counterexamples")
    else:
        cx = str(run_dir / "counterexamples")
    return run_dir, out, cx


def run(args) -> int:
    engine, plan, master, conf = plan_from_args(args)
    run_dir, out, cx_dir = output_paths(args)

    check_destinations(out, cx_dir)  # one line, before Spark starts
    report_out = None
    if args.report:
        from properties.safe_io import check_output_file  # lazy: only with --report; before Spark starts

        report_out = check_output_file(args.report, what="report")
    with session(master, app_name="flinkspec spark-replay", conf=conf, timeout=args.master_timeout) as spark:
        outcome = replay(
            spark, plan, out, engine=engine, counterexamples_dir=cx_dir,
            shrink=not args.no_shrink, progress=args.progress,
        )
    if args.smoke:
        for v in outcome.summary["variants"]:
            if not v["ok"] and v["expected"] != ["pass"] and not v["violations"] and not v["errors"]:
                v["verdict_note"] = "not found yet"
    if report_out is not None:
        from properties.report import write_report  # lazy: matplotlib only with --report

        write_report(report_of(outcome.summary), report_out)
    if args.json:
        print(json.dumps(outcome.summary, sort_keys=True))
    else:
        print(format_summary(outcome.summary))
        print(f"results: {outcome.runs_dir} (Parquet, partitioned by variant)")
        if report_out is not None:
            print(f"report: {report_out}")
        written = [c["path"] for c in outcome.summary.get("counterexamples", []) if c.get("path")]
        if written:
            print(f"counterexamples: {len(written)} file(s) in {cx_dir} — `flinkspec corpus update --from "
                  f"{cx_dir}` merges them into the committed counterexamples/")
    if args.smoke:
        not_found = [v["variant"] for v in outcome.summary["variants"] if v.get("verdict_note")]
        bad = [v["variant"] for v in outcome.summary["variants"] if not v["ok"] and v["variant"] not in not_found]
        if not_found:
            print(f"smoke run: not found yet in {plan.runs} runs (not a failure here; `flinkspec check` "
                  f"searches until found): {', '.join(not_found)}")
        return 1 if bad else 0
    return 0 if outcome.summary["ok"] else 1


def report_of(summary: dict):
    """The Spark replay's summary as a ``properties.report.Report`` (a row per variant; the goals
    as the number of variants whose runs reached each)."""
    from properties.report import Report, Row  # lazy: only with --report

    cx = {c["variant"]: c for c in summary.get("counterexamples", []) if c.get("path")}
    rows = []
    for v in summary["variants"]:
        c = cx.get(v["variant"])
        verdict = "violation: " + ", ".join(v["invariants"]) if v["violations"] else ("error" if v["errors"] else "pass")
        rows.append(Row(name=v["variant"], expected=tuple(v["expected"]), verdict=verdict,
                        as_expected=bool(v["ok"]), unsafe=list(v["expected"]) != ["pass"], runs=v["runs"],
                        steps=v["steps"], seconds=v["cpu_s"] if v["violations"] else None,
                        cx_steps=c["shrunk_steps"] if c else None, counterexample=c["path"] if c else None,
                        extra=(("violating runs", str(v["violations"])), ("errors", str(v["errors"])),
                               ("seed", str(c["seed"]) if c else ""))))
    goals = Counter(g for v in summary["variants"] for g in v["goals"])
    from spec.coverage import GOALS  # lazy: with the report only

    goal_rows = tuple((g, goals.get(g, 0), GOALS[g].statement) for g in GOALS) + tuple(
        (g, goals[g], "") for g in sorted(set(goals) - set(GOALS)))  # an engine's own goals (the stand-in's)
    return Report(title=f"flinkspec spark-replay — {summary['runs']} runs on {summary.get('master', '?')}",
                  summary=f"{summary['runs']} runs, {summary['violations']} violations, {summary['errors']} errors — "
                          f"{'OK' if summary['ok'] else 'FAILED'}", ok=bool(summary["ok"]), rows=tuple(rows),
                  goals=goal_rows, to_find_unit="runs",
                  notes=("goals: the number of variants whose runs reached each coverage goal; time: the CPU "
                         "seconds of the variant's runs (the runs are spread over Spark's workers).",))
