"""``flinkspec verify``: the README's main job.

1. ``flinkspec check --profile quick``: every suite, verdict vs expected, coverage goals;
2. ``flinkspec prove``: the z3 proofs and bounded model checks;
3. ``flinkspec spark-replay``: a short randomized replay on Spark (local mode);

then one summary table. Exit 0 only when all three are as expected. Counterexamples go to
run directories under results/ (ignored by git), never into the committed corpus.
"""

from __future__ import annotations

import time

from flinkspec.commands import seed
from flinkspec.cli import build_parser

DEFAULT_SPARK_RUNS = 400


def register(sub) -> None:
    p = sub.add_parser("verify", help="the main job: check + prove + a short Spark replay, then a summary",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--profile", choices=("quick", "thorough"), default="quick")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--spark-runs", type=int, default=DEFAULT_SPARK_RUNS,
                   help=f"runs of the Spark replay (default {DEFAULT_SPARK_RUNS}; 0 skips it)")
    p.add_argument("--spark-master", default="local[*]")
    p.add_argument("--out", default=None,
                   help="where the Spark replay writes (default: its own new run directory under results/)")
    p.set_defaults(func=run)


def _section(title: str) -> None:
    print()
    print("=" * 100)
    print(title)
    print("=" * 100, flush=True)


def run(args) -> int:
    parser = build_parser()
    steps = [
        ("check", ["check", "--profile", args.profile, "--seed", str(args.seed)],
         "property suites: safe configurations pass, known-unsafe ones are caught"),
        ("prove", ["prove"], "z3: proofs for all parameters and bounded model checks"),
    ]
    if args.spark_runs:
        out = [] if args.out is None else ["--out", f"{args.out}/spark-replay",
                                           "--counterexamples", f"{args.out}/spark-counterexamples"]
        steps.append(("spark-replay", ["spark-replay", "--runs", str(args.spark_runs), "--master", args.spark_master,
                                       "--seed", str(args.seed), *out, "--smoke"],
                      "randomized replays on Spark, results as Parquet"))
    results = []
    for name, argv, what in steps:
        _section(f"flinkspec {' '.join(argv)}    — {what}")
        t0 = time.perf_counter()
        sub = parser.parse_args(argv)
        try:
            code = int(sub.func(sub) or 0)
        except Exception as e:  # report and go on: the summary must show every part
            print(f"flinkspec {name}: error: {type(e).__name__}: {e}")
            code = 2
        results.append((name, code, time.perf_counter() - t0))
    _section("summary")
    print(f"{'part':16s} {'result':12s} {'time':>8s}")
    for name, code, secs in results:
        print(f"{name:16s} {'as expected' if code == 0 else 'FAILED (exit %d)' % code:12s} {secs:7.1f}s")
    ok = all(code == 0 for _, code, _ in results)
    print("verdict: " + ("every part as expected" if ok else "some part did not give its expected result"))
    return 0 if ok else 1
