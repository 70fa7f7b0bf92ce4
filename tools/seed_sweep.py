"""Seed sweep: does every suite of ``flinkspec check`` reach its expected verdict on every base seed?

Runs the suites of a profile (default: quick, every suite ``flinkspec check`` runs) for each
base seed of a range, in-process, without shrinking or writing counterexamples (the search
is what is measured), and appends one JSON line per (suite, seed) to ``--out``. A
random-walk suite with base seed S runs the walks S, S+1, ...; the sweep runs each walk
once and judges every base seed from the same walks (exactly what ``flinkspec check
--seed S`` concludes, far cheaper than re-running overlapping seeds). A sweep can
be interrupted and resumed: pairs already in ``--out`` are skipped. Then it prints, per
suite: seeds tried, seeds as expected, and for an unsafe suite the worst case (most runs to
its first violation) and the seeds that missed; then, per coverage goal that the suites reach
on some base seed, on how many base seeds they reach it.

Run:
    .venv/bin/python tools/seed_sweep.py --seeds 0-49 --out results/seed-sweep.ndjson
    .venv/bin/python tools/seed_sweep.py --seeds 0-49 --out results/seed-sweep.ndjson --report
    .venv/bin/python tools/seed_sweep.py --seeds 0-9 --only FLINK-20645 --out /tmp/s.ndjson

Exit 0 when every (suite, seed) of the range gave its expected verdict, 1 otherwise, 2 on a
usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from model.catalog import KINDS


def parse_seeds(text: str) -> list[int]:
    """``"0-49"`` or ``"3,7,10-12"`` -> the seeds, in order, without duplicates."""
    seeds: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            rng = range(int(lo), int(hi) + 1) if sep else range(int(lo), int(lo) + 1)
        except ValueError:
            raise SystemExit(f"seed_sweep: --seeds {text!r}: expected e.g. 0-49 or 3,7,10-12") from None
        seeds += [s for s in rng if s not in seeds]
    return seeds


def load_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def row_of(result, *, seed: int, profile: str) -> dict:
    """One (suite, seed) outcome as a JSON-able row."""
    return {"suite": result.name, "seed": seed, "profile": profile, "expected": list(result.expected),
            "verdict": result.verdict, "as_expected": result.as_expected, "runs": result.runs,
            "runs_to_find": result.runs_to_find, "seconds": round(result.seconds, 2), "error": result.error,
            "goals": sorted(result.goals)}


def cluster_result(v, base_seed: int, profile: str, walk):
    """What ``run_variant_suite(v, profile=profile, base_seed=base_seed)`` concludes, from
    ``walk(seed)`` (a cached ``random_walk(v, seed)``): the same loop, without shrinking."""
    from properties.result import SuiteResult  # lazy: loaded once the arguments are valid
    from properties.suites import PROFILES  # lazy, as above

    prof = PROFILES[profile]
    total = prof["safe_runs"] if v.safe else prof["unsafe_max_runs"]
    if profile == "quick" and v.safe and v.quick_safe_runs is not None:  # as run_variant_suite
        total = min(total, v.quick_safe_runs)
    res = SuiteResult(name=v.name, expected=v.expected)
    t0 = time.perf_counter()
    for i in range(total):
        r = walk(base_seed + i)
        res.runs += 1
        res.steps += r.steps
        res.goals.update(r.goals)
        if r.verdict == "violation":
            res.violations[r.invariant] += 1
            if res.first_violation is None:
                res.first_violation, res.first_seed, res.runs_to_find = r.violation, base_seed + i, i + 1
            if not v.safe:
                break
    res.seconds = time.perf_counter() - t0
    return res


def report(rows: list[dict], suites: list[str], seeds: list[int]) -> tuple[list[str], bool]:
    """The table (lines) over ``rows`` restricted to ``suites`` x ``seeds``, and whether every
    pair of the range ran and was as expected."""
    latest = {(r["suite"], r["seed"]): r for r in rows}
    lines = [f"{'suite':42s} {'seeds':>5s} {'ok':>5s} {'worst runs-to-find':>18s} {'mean':>7s} {'max runs':>8s}  misses"]
    all_ok = True
    for name in suites:
        got = [latest[(name, s)] for s in seeds if (name, s) in latest]
        ok = [r for r in got if r["as_expected"]]
        found = [r["runs_to_find"] for r in got if r["runs_to_find"] is not None]
        unsafe = bool(got) and got[0]["expected"] != ["pass"]
        worst = f"{max(found)} (seed {max(got, key=lambda r: r['runs_to_find'] or 0)['seed']})" \
            if unsafe and found else "-"
        mean = f"{sum(found) / len(found):.1f}" if unsafe and found else "-"
        misses = ",".join(str(r["seed"]) for r in got if not r["as_expected"]) or "-"
        lines.append(f"{name:42s} {len(got):5d} {len(ok):5d} {worst:>18s} {mean:>7s} "
                     f"{max((r['runs'] for r in got), default=0):8d}  {misses}")
        all_ok &= len(got) == len(seeds) and len(ok) == len(got)
    # coverage goals: a goal some base seed's suites reach must be reached on every base seed
    # (what ``flinkspec check --seed S`` judges); rows written before goals were kept have none
    per_seed = {s: set().union(*(latest[(n, s)].get("goals", ()) for n in suites if (n, s) in latest))
                for s in seeds}
    reached = set().union(*per_seed.values()) if per_seed else set()
    for goal in sorted(reached):
        missed = [s for s in seeds if goal not in per_seed[s]]
        lines.append(f"goal {goal:38s} reached on {len(seeds) - len(missed)}/{len(seeds)} seeds"
                     + (f"  missed: {','.join(map(str, missed))}" if missed else ""))
        all_ok &= not missed
    return lines, all_ok


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="seed_sweep", description=__doc__.split("\n\n")[1])
    p.add_argument("--seeds", default="0-49", help="base seeds: 0-49 (default) or 3,7,10-12")
    p.add_argument("--profile", choices=("quick", "thorough"), default="quick")
    p.add_argument("--only", action="append", metavar="SUITE", help="only this suite (repeatable)")
    p.add_argument("--kind", choices=[k for k, kind in KINDS.items() if kind.runner == "check"],
                   help="only the suites of this kind")
    p.add_argument("--out", default="results/seed-sweep.ndjson", help="rows are appended here (resumable)")
    p.add_argument("--report", action="store_true", help="only print the table of what --out holds")
    args = p.parse_args(argv)
    seeds = parse_seeds(args.seeds)
    # lazy: the suites (Hypothesis, the model) are only needed once the arguments are valid
    from model.errors import FlinkspecError
    from model.variants import VARIANTS  # lazy, as above
    from properties.catalog import select  # lazy, as above
    from properties.engines import random_walk  # lazy, as above
    from properties.suites import run_suite  # lazy, as above

    try:
        suites = [e.name for e in select(args.only or []) if args.kind in (None, e.kind)]
    except FlinkspecError as e:
        print(f"seed_sweep: {e}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not args.report:
        done = {(r["suite"], r["seed"]) for r in load_rows(out) if r.get("profile") == args.profile}
        t0 = time.perf_counter()
        walks: dict = {}

        def walk_of(v):
            def walk(seed):
                key = (v.name, seed)
                if key not in walks:  # only what the judgement reads: a trace per walk is too big to keep
                    r = random_walk(v, seed)
                    walks[key] = SimpleNamespace(verdict=r.verdict, invariant=r.invariant, steps=r.steps,
                                                 violation=r.violation, goals=r.goals)
                return walks[key]
            return walk

        for seed in seeds:
            for name in suites:
                if (name, seed) in done:
                    continue
                if name in VARIANTS:
                    r = cluster_result(VARIANTS[name], seed, args.profile, walk_of(VARIANTS[name]))
                else:
                    r = run_suite(name, profile=args.profile, base_seed=seed, shrink_found=False)
                row = row_of(r, seed=seed, profile=args.profile)
                with open(out, "a") as f:  # one line per pair: an interrupted sweep loses one pair at most
                    f.write(json.dumps(row, sort_keys=True) + "\n")
                    f.flush()
                    os.fsync(f.fileno())
                print(f"[{time.perf_counter() - t0:7.0f}s] seed {seed} {name}: {r.verdict} "
                      f"{'ok' if r.as_expected else 'UNEXPECTED'} runs {r.runs} to-find {r.runs_to_find}",
                      flush=True)
    rows = [r for r in load_rows(out) if r.get("profile") == args.profile]
    lines, ok = report(rows, suites, seeds)
    print(f"seed sweep, profile {args.profile}, seeds {args.seeds} ({len(seeds)}), from {out}:")
    print("\n".join(lines))
    print("every (suite, seed) as expected" if ok else "NOT every (suite, seed) ran and was as expected")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
