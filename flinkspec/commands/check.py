"""``flinkspec check``: the main verification job.

Runs every suite of the profile — a random-walk search per variant (safe and known-unsafe
configurations of the runtime) and the focused Hypothesis suites — then prints a summary
table: suite, runs, steps, verdict against the expected verdict, time, and the coverage
goals. Exit 0 when every verdict is as expected and every coverage goal was reached, 1
otherwise, 2 on a usage error.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from model.errors import FlinkspecError

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "counterexamples"


def register(sub) -> None:
    p = sub.add_parser("check", help="run the property suites and report verdicts and coverage",
                       description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("--profile", choices=("quick", "thorough"), default="quick",
                   help="quick: seconds to minutes (the main job); thorough: much longer searches")
    p.add_argument("--only", action="append", metavar="SUITE",
                   help="run only this suite (repeatable); `flinkspec check --list` names them")
    p.add_argument("--variant", action="append", metavar="NAME", help="alias of --only for variant suites")
    p.add_argument("--seed", type=int, default=0, help="base seed (runs use seed, seed+1, ...)")
    p.add_argument("--corpus", default=str(DEFAULT_CORPUS),
                   help="where shrunk counterexamples are written (default: the repo's counterexamples/)")
    p.add_argument("--no-write", action="store_true", help="do not write counterexample files")
    p.add_argument("--list", action="store_true", help="list the suites and exit")
    p.set_defaults(func=run)


def run(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from model.variants import VARIANTS
    from properties.focused import FOCUSED
    from properties.suites import run_variant_suite
    from spec.coverage import GOALS

    console = Console(stderr=False, highlight=False, width=None if sys.stdout.isatty() else 150)
    if args.list:
        for name, v in VARIANTS.items():
            console.print(f"{name:36s} expected: {'/'.join(v.expected):40s} {v.description}")
        for name, s in FOCUSED.items():
            console.print(f"{name:36s} expected: {'/'.join(s.expected):40s} {s.description}")
        return 0
    wanted = list(args.only or []) + list(args.variant or [])
    known = list(VARIANTS) + list(FOCUSED)
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise FlinkspecError(f"unknown suite(s) {', '.join(unknown)}; known suites: {', '.join(known)}")
    names = wanted or known
    corpus = None if args.no_write else Path(args.corpus)
    console.print(f"[bold]flinkspec check[/bold] — profile {args.profile}, seed {args.seed}, "
                  f"{len(names)} suite(s). Safe configurations must pass; known-unsafe ones must be caught.")
    results = []
    t_all = time.perf_counter()
    tty = sys.stdout.isatty()
    for i, name in enumerate(names, 1):
        label = f"[{i}/{len(names)}] {name}"
        if tty:
            def progress(done, total, _label=label):
                console.print(f"\r{_label}: run {done}/{total}", end="")
        else:
            progress = None
        if name in VARIANTS:
            r = run_variant_suite(VARIANTS[name], profile=args.profile, base_seed=args.seed,
                                  corpus_dir=corpus, progress=progress)
        else:
            r = FOCUSED[name].run(args.profile, args.seed, corpus_dir=corpus)
        results.append(r)
        mark = "ok" if r.as_expected else "UNEXPECTED"
        extra = ""
        if not r.safe and r.found:
            extra = f" (found after {r.runs} run(s)"
            if r.shrunk_from:
                extra += f", shrunk {r.shrunk_from} -> {r.shrunk_to} steps"
            extra += ")"
        if tty:
            console.print("\r", end="")
        console.print(f"{label}: {r.verdict} [{mark}] in {r.seconds:.1f}s{extra}")
        if not r.as_expected and r.first_violation:
            console.print(f"    first violation (seed {r.first_seed}): {r.first_violation.get('message')}")
        if r.error:
            console.print(f"    error: {r.error}")
        if r.counterexample:
            import os

            shown = os.path.relpath(r.counterexample) if not os.path.relpath(r.counterexample).startswith("..") \
                else r.counterexample
            console.print(f"    counterexample: {shown}")

    table = Table(title=f"flinkspec check — {args.profile} profile, seed {args.seed}")
    for col in ("suite", "runs", "steps", "verdict", "expected", "as expected", "time"):
        table.add_column(col, justify="right" if col in ("runs", "steps", "time") else "left")
    for r in results:
        table.add_row(r.name, str(r.runs), str(r.steps) if r.steps else "-", r.verdict, "/".join(r.expected),
                      "yes" if r.as_expected else "NO", f"{r.seconds:.1f}s")
    console.print(table)

    goals: Counter = Counter()
    for r in results:
        goals.update(r.goals)
    gt = Table(title="coverage goals (sometimes): how often each was reached")
    gt.add_column("goal")
    gt.add_column("runs reaching it", justify="right")
    gt.add_column("statement")
    missing = []
    variant_suites_ran = any(r.name in VARIANTS for r in results)
    for name, g in GOALS.items():
        n = goals.get(name, 0)
        gt.add_row(name, str(n), g.statement)
        if n == 0:
            missing.append(name)
    if variant_suites_ran:
        console.print(gt)
    bad = [r for r in results if not r.as_expected]
    elapsed = time.perf_counter() - t_all
    ok = not bad and (not missing or wanted)
    if bad:
        console.print(f"[bold red]{len(bad)} suite(s) did not reach their expected verdict:[/bold red] "
                      + ", ".join(r.name for r in bad))
    if missing and not wanted:
        console.print("[bold red]coverage goal(s) never reached — the search is blind to:[/bold red] "
                      + ", ".join(missing))
    elif missing and variant_suites_ran:
        console.print("note: goals not reached by the selected suites: " + ", ".join(missing))
    found = sum(1 for r in results if not r.safe and r.found)
    unsafe = sum(1 for r in results if not r.safe)
    safe_ok = sum(1 for r in results if r.safe and r.as_expected)
    safe = sum(1 for r in results if r.safe)
    console.print(f"summary: {safe_ok}/{safe} safe suites passed, {found}/{unsafe} unsafe variants caught, "
                  f"{sum(1 for g in GOALS if goals.get(g))}/{len(GOALS)} coverage goals reached, "
                  f"{elapsed:.1f}s — {'OK' if ok else 'FAILED'}")
    return 0 if ok else 1
