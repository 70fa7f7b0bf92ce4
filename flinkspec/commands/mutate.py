"""``flinkspec mutate [--module model/X.py ...] [--budget-s N] [--master URL] [--json]``: mutation testing of the model.

Plants one small bug at a time in a model module (mutmut's mutation operators: a comparison
swapped, a number off by one, a condition negated, an argument dropped, ...) and runs the
module's kill profile -- its unit tests, the focused suites and scenarios of its mechanism and
the safe variants' seeded cluster runs, only those tests that execute the mutated lines (at most
``--tests-per-mutant``, round-robin over the profile's parts), stopping at the first failing
assertion (after a crash only the cheap tests left run),
within a time limit per mutant -- to see whether the suite notices. Each mutant is killed (a test
failed on an assertion or a named invariant violation: the test is named), incompetent (a test
failed on another exception raised on the mutant's own lines: the mutated code could not run;
left out of the score), crashed_in_call (raised later in the very invocation of the mutated
function that ran a mutated line, before it returned: no test code ran in between; left out of
the score too), crashed (a test failed on another exception escaping the model elsewhere,
TypeError, AttributeError, ..., or did not collect, or the run died of a signal or of its memory
limit, ``--max-memory-per-mutant``: the exception, the test and where it was raised are named;
not a kill), survived (its diff
is shown), timeout, or equivalent (triaged by hand in properties/mutants-equivalent.toml with a
reason, never run). ``--judge quick`` judges every killed, crashed or surviving mutant a second
time by the quick check (``flinkspec check --profile quick``, seeded by ``--seed``, at most
``--quick-runs`` walks per cluster suite) of the check suites that execute its lines, and lists
the mutants only the first judge killed (``properties_blind``).
Mutants run in parallel processes (``--workers``, default the number of cores), or as Spark tasks
with ``--master``. The mutant list is deterministic; ``--only ID`` re-runs one mutant,
``--list`` prints the list without running anything. Results go to a new run directory
``results/mutate-<UTC time>/`` (one JSON file per module, and summary.json). Exit 0 when every
module's score reaches ``--min-score`` (and, with ``--only``, when the mutants were killed,
incompetent, crashed in call or equivalent), 1 otherwise, 2 on bad input (an unknown module, an unknown mutant id, a
malformed triage file).
"""

from __future__ import annotations

import json
import os
import sys
import time

from flinkspec.commands import count, seed
from model.errors import InvalidArgument


def register(sub) -> None:
    p = sub.add_parser("mutate", help="mutation testing of the model: how many planted bugs the suite catches",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--module", action="append", default=None, metavar="model/X.py",
                   help="a model module to mutate (repeatable; default: the core modules "
                        "checkpointcoordinator, checkpointbarrierhandler, watermarkstatus, failover, "
                        "stateassignment, keygroups, sinks)")
    p.add_argument("--only", action="append", default=None, metavar="ID",
                   help="run only this mutant (repeatable; its module is taken from the id)")
    p.add_argument("--list", action="store_true", help="list the mutants (id, line, operator) and stop")
    p.add_argument("--budget-s", type=float, default=None, metavar="N",
                   help="wall-clock budget of the whole run; mutants not started by then are reported not_run")
    p.add_argument("--timeout-s", type=float, default=None, metavar="S",
                   help="time limit per mutant (default: 4 x its tests' unmutated time + 10 s)")
    p.add_argument("--kill-tests", action="append", default=None, metavar="PYTEST_ARG",
                   help="judge the mutants with these tests (a file or node id, repeatable) instead of the "
                        "module's kill profile")
    p.add_argument("--tests-per-mutant", type=int, default=None, metavar="N",
                   help="run at most N of the tests that execute a mutant's lines, round-robin over the "
                        "profile's parts (default 30; 0: all of them)")
    p.add_argument("--judge", choices=("unit", "quick"), default="unit",
                   help="unit: the kill profile only (default); quick: also judge every killed, crashed or "
                        "surviving mutant by the quick check of the check suites that execute its lines")
    p.add_argument("--quick-runs", type=count, default=None, metavar="N",
                   help="with --judge quick: at most N random walks per cluster suite (default: the quick "
                        "profile's)")
    p.add_argument("--seed", type=seed, default=0, metavar="N",
                   help="with --judge quick: the suites' base seed (default 0)")
    p.add_argument("--max-memory-per-mutant", default=None, metavar="SIZE",
                   help="address space a mutant's run may take (RLIMIT_AS; 512M, 4G, ...; none: unbounded; "
                        "default 4G): past it the run fails with MemoryError, reported as a crash")
    p.add_argument("--workers", type=count, default=None, metavar="N",
                   help="mutants run at once (default: the number of cores)")
    p.add_argument("--master", default=None, metavar="URL",
                   help="run the mutants as Spark tasks on this master (local[N], spark://HOST:PORT, ...)")
    p.add_argument("--min-score", type=float, default=90.0, metavar="PCT",
                   help="exit 1 when a module's score is below this (default 90)")
    p.add_argument("--equivalents", default=None, metavar="FILE",
                   help="the triage file (default properties/mutants-equivalent.toml)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write the results here instead of a new run directory under results/")
    p.add_argument("--no-write", action="store_true", help="write no result files")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per module, then a summary line (last line)")
    p.set_defaults(func=run)


def _validate(args) -> None:
    for flag, value in (("--budget-s", args.budget_s), ("--timeout-s", args.timeout_s)):
        if value is not None and not value > 0:
            raise InvalidArgument(f"{flag} {value:g}: must be a positive number of seconds")
    if args.tests_per_mutant is not None and not 0 <= args.tests_per_mutant <= 10**9:
        raise InvalidArgument(f"--tests-per-mutant {args.tests_per_mutant}: must be 0 (all) or a count of tests")
    if args.workers is not None and args.workers < 1:
        raise InvalidArgument(f"--workers {args.workers}: must be at least 1")
    if not 0 <= args.min_score <= 100:
        raise InvalidArgument(f"--min-score {args.min_score:g}: must be a percentage 0-100")
    if args.no_write and args.out is not None:
        raise InvalidArgument("--out and --no-write: choose one")
    if args.judge == "quick" and args.master is not None:
        raise InvalidArgument("--judge quick and --master: the quick judge runs locally only")
    if args.judge != "quick" and args.quick_runs is not None:
        raise InvalidArgument("--quick-runs: only with --judge quick")


def _modules(args, M) -> list[str]:
    """The modules to mutate: --module's, the modules of --only's ids, else the core ones."""
    mods = [M.parse_module_arg(m) for m in args.module] if args.module else []
    if args.only:
        for mid in args.only:
            if not M.ID_RE.match(mid):
                raise InvalidArgument(f"--only {mid!r}: not a mutant id (<module>:<10 hex digits>, "
                                      "as `flinkspec mutate --list` prints)")
            mod = M.parse_module_arg(mid.split(":")[0])
            if mod not in mods:
                mods.append(mod)
    return list(dict.fromkeys(mods)) or list(M.TARGET_MODULES)


def run(args) -> int:
    _validate(args)
    from properties import mutation as M  # lazy: the model runtime, libcst and pytest only for this command

    max_memory = (M.MAX_MEMORY_PER_MUTANT if args.max_memory_per_mutant is None
                  else M.parse_size(args.max_memory_per_mutant))
    from properties.safe_io import check_output_dir, write_atomic  # lazy: as above

    modules = _modules(args, M)
    equivalents = M.load_equivalents(args.equivalents or M.EQUIVALENTS_FILE)
    master = None
    if args.master is not None:
        from spark.session import validate_master  # lazy: the Spark helpers only with --master

        master = validate_master(args.master)
    if args.list:
        for mod in modules:
            for m in M.generate(mod):
                tag = " equivalent" if m.id in equivalents else ""
                where = m.function or "(module level)"
                print(f"{m.id}  line {m.line:<4} {m.operator:<38} {where}{tag}")
        return 0
    only = set(args.only) if args.only else None
    if only is not None:
        known = {m.id for mod in modules for m in M.generate(mod)}
        missing = sorted(only - known)
        if missing:
            raise InvalidArgument(f"--only {missing[0]}: no such mutant (the source changed? "
                                  "`flinkspec mutate --list --module ...` lists the current ids)")
    out = None
    if not args.no_write:
        if args.out is not None:
            out = check_output_dir(args.out, what="--out folder")
        else:
            from properties.corpus import run_directory  # lazy: heavy

            out = run_directory("mutate", None)
    workers = args.workers or os.cpu_count() or 1
    deadline = time.monotonic() + args.budget_s if args.budget_s is not None else None

    def note(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def progress(module: str, res, done: int, total: int) -> None:
        extra = ((f" ({res.exception}" + (f" at line {res.raised_at['line']}" if res.raised_at else "") + ")"
                  if res.exception else "") + (f" by {res.killed_by}" if res.killed_by else ""))
        print(f"[{module} {done}/{total}] {res.mutant.id} line {res.mutant.line}: {res.outcome}{extra} "
              f"({res.seconds:.1f} s)", file=sys.stderr, flush=True)

    override = None
    if args.kill_tests:
        for t in args.kill_tests:
            if not (M.ROOT / t.split("::")[0]).is_file():
                raise InvalidArgument(f"--kill-tests {t!r}: no such test file")
        override = M.KillProfile(tuple(args.kill_tests))
    if master is None:
        note(f"importing the model and the kill profiles' tests ({workers} worker(s)) ...")
        M.warm_up([override] if override else [M.kill_profile(m) for m in modules])
    reports = []
    for mod in modules:
        rep = M.mutate_module(mod, workers=workers, deadline=deadline, master=master, equivalents=equivalents,
                              timeout=args.timeout_s, only=only, progress=progress, note=note,
                              profile=override, tests_per_mutant=(M.TESTS_PER_MUTANT if args.tests_per_mutant is None
                                                else args.tests_per_mutant),
                              judge=args.judge, quick_runs=args.quick_runs, seed=args.seed, max_memory=max_memory)
        reports.append(rep)
        if out is not None:
            write_atomic(out / f"{mod}.json", json.dumps(
                {"summary": rep.summary(), "mutants": [r.to_json(with_diff=True) for r in rep.results]},
                indent=1, sort_keys=True) + "\n", what="mutation results")
    summaries = [r.summary() for r in reports]
    below = [s for s in summaries if s["score"] is not None and s["score"] < args.min_score]
    only_bad = [r for rep in reports for r in rep.results if only is not None and r.outcome in ("crashed", "survived", "timeout")]
    total = {"modules": len(summaries), "min_score": args.min_score,
             **{o: sum(s[o] for s in summaries) for o in M.OUTCOMES},
             "below_min_score": [s["module"] for s in below], "workers": workers, "master": master,
             "max_memory_per_mutant": max_memory, "judge": args.judge, **({"quick_runs": args.quick_runs, "seed": args.seed} if args.judge == "quick" else {}),
             "results": str(out) if out is not None else None}
    if out is not None:
        write_atomic(out / "summary.json", json.dumps({"modules": summaries, "total": total}, indent=1,
                                                      sort_keys=True) + "\n", what="mutation summary")
    code = 1 if (below or only_bad) else 0
    if args.json:
        for s in summaries:
            print(json.dumps(s, sort_keys=True))
        print(json.dumps(total, sort_keys=True))
        return code
    _print_table(summaries)
    for rep in reports:
        for r in rep.results:
            if r.outcome in ("incompetent", "crashed_in_call", "crashed", "survived", "timeout"):
                at = f" raised at line {r.raised_at['line']} in {r.raised_at['function']}" if r.raised_at else ""
                at += f", {r.reason}" if r.reason and r.exception else ""
                why = f" ({r.reason})" if r.reason else (f" ({r.exception}{at} in {r.killed_by})" if r.exception else "")
                print(f"\n{r.outcome.upper()} {r.mutant.id} line {r.mutant.line} in "
                      f"{r.mutant.function or 'module level'} [{r.mutant.operator}]{why}")
                print(r.mutant.diff.rstrip("\n"))
        blind = [r for r in rep.results if r.properties_blind]
        if blind:
            print(f"\nproperties blind here ({rep.module}: killed by the kill profile only, the quick check "
                  f"of {', '.join(rep.quick_suites)} did not kill them):")
            for r in blind:
                print(f"  {r.mutant.id} line {r.mutant.line} ({r.quick.outcome}) killed by {r.killed_by}")
    if out is not None:
        print(f"\nresults: {out}")
    if below:
        print(f"below --min-score {args.min_score:g}: {', '.join(s['module'] for s in below)}")
    return code


def _print_table(summaries) -> None:
    head = ("module", "mutants", "killed", "incompetent", "in call", "crashed", "survived", "timeout", "equivalent",
            "not_run", "score %", "with crashes %")
    pct = lambda x: "-" if x is None else f"{x:.1f}"  # noqa: E731
    rows = []
    for s in summaries:
        rows.append((s["module"], s["mutants"], s["killed"], s["incompetent"], s["crashed_in_call"], s["crashed"],
                     s["survived"], s["timeout"], s["equivalent"], s["not_run"], pct(s["score"]),
                     pct(s["score_with_crashes"])))
        if "quick" in s:
            q = s["quick"]
            rows.append(("  quick judge", q["mutants"], q["killed"], q["incompetent"], q["crashed_in_call"],
                         q["crashed"], q["survived"], q["timeout"], "", q["not_run"], pct(q["score"]),
                         pct(q["score_with_crashes"])))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in (head, *rows):
        print("  ".join(str(x).ljust(w) if i == 0 else str(x).rjust(w) for i, (x, w) in enumerate(zip(row, widths))))
