"""``flinkspec explore``: every interleaving of a small scenario, breadth first.

For each variant: a breadth-first search over every enabled action from the variant's
scenario (``--small``: its smallest scenario, ``model.variants.small_scenario``), states
deduplicated by their fingerprint, every registered always-invariant judged at each new
state and the end-of-run invariants at each drained state (``properties.explore``).

Verdicts: ``violation`` (a shortest counterexample: written to a run directory under
``results/``; ``flinkspec corpus update`` keeps the shortest per variant and invariant),
``verified`` (the whole reachable state space explored: states, transitions, depth),
``bounded`` (a limit stopped the search: what was covered). ``--progress-check`` also checks,
from every reachable state, that the job can still drain without further faults.
``--workers K`` expands each level on K local processes, ``--master URL`` on Spark's
executors (the same result either way); sleep-set partial-order reduction is on unless
``--no-reduce``.

Limits: ``--max-seconds`` (default 600), ``--max-states``, ``--max-depth`` and ``--max-memory``
(default: half the machine's memory; above half of it the frontier's states are kept as their
traces and rebuilt when expanded, past it the search ends). Past ``--spill-memory`` (default: a
quarter of ``--max-memory``) the set of states seen, the level being built and the frontier are
written to a folder made under ``--spill-dir`` (default: the system's temporary folder) and
removed when the search ends; past ``--max-disk`` or on a full disk the search ends;
``--no-spill`` keeps everything in memory. A search ended by a limit, or by
SIGTERM or SIGINT (Ctrl-C) -- within a second or two, with the figures so far, exit 130 --
is ``bounded``. ``--checkpoint DIR`` writes what the search needs to go on into DIR (at the end
of a level every ``--checkpoint-every`` seconds, and when it ends early); ``--resume DIR``
continues it to the counts an uninterrupted search gives.

``--job FILE`` explores a user's job instead (its ``[runtime]`` and ``[input]`` tables,
docs/job-specs.md; ``--seed`` draws the input where ``[input]`` leaves it open), with a
checkpoint budget (``--max-checkpoints``, default 1) that keeps the space finite; nothing may
be violated.

Exit 0 when every verdict is as expected (a safe variant: verified or bounded; a
known-unsafe one: one of its expected invariants violated), 1 otherwise, 2 on bad input, 130
when a signal ended the search.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import threading
from pathlib import Path

import attrs

from flinkspec.commands import count, seed
from model.catalog import RANDOM_WALK_KINDS
from model.errors import FlinkspecError


def register(sub) -> None:
    p = sub.add_parser("explore", help="explore every interleaving of a small scenario (breadth first)",
                       description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("--variant", action="append", metavar="NAME", help="a cluster variant (repeatable)")
    p.add_argument("--all", action="store_true", help="every whole-cluster variant (catalog kinds "
                   f"{', '.join(RANDOM_WALK_KINDS)})")
    p.add_argument("--job", metavar="FILE", help="a job spec with optional [runtime] and [input] tables")
    p.add_argument("--design", metavar="FILE", help="the variants of this design file (docs/designs.md); --variant "
                   "picks among them")
    p.add_argument("--max-checkpoints", type=count, metavar="N", default=None,
                   help="with --job: checkpoints and savepoints a run may trigger (default 1)")
    p.add_argument("--seed", type=seed, default=0, help="the scenario's seed (default 0)")
    p.add_argument("--small", action="store_true", help="the variant's smallest scenario (model.variants.Small)")
    p.add_argument("--failures", type=count, metavar="N", default=None,
                   help="with --small: the small scenario's failure budget instead of the variant's (usually 1; "
                   "e.g. two JobManager crashes: --variant cp-restart-all --small --failures 2)")
    p.add_argument("--max-depth", type=count, metavar="D", help="expand at most D levels")
    p.add_argument("--max-states", type=count, metavar="N", help="stop after N distinct states")
    p.add_argument("--max-seconds", type=float, metavar="S", default=600.0,
                   help="stop a variant's search after S seconds (default 600)")
    p.add_argument("--max-memory", metavar="SIZE",
                   help="stop a search when the process's resident memory passes SIZE (4G, 512M, ...; default: "
                        "half the machine's memory); above half of it the frontier is kept as traces")
    p.add_argument("--frontier", choices=("auto", "runs", "traces"), default="auto",
                   help="how the frontier keeps its states: as runs (fast, tens of KB each), as traces (a few hundred "
                        "bytes each, rebuilt when expanded), or auto: runs up to half of --max-memory (default)")
    p.add_argument("--spill-memory", metavar="SIZE",
                   help="memory for the set of states seen and the level being built before they are written to "
                        "disk (default: a quarter of --max-memory)")
    p.add_argument("--spill-dir", metavar="DIR",
                   help="where the search's spill folder is made (default: the system's temporary folder); it is "
                        "removed when the search ends")
    p.add_argument("--max-disk", metavar="SIZE",
                   help="the most the spill files may hold; past it (or on a full disk) the search ends bounded")
    p.add_argument("--no-spill", action="store_true",
                   help="keep the seen set and the frontier in memory (past --max-memory the search ends bounded)")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="write what each variant's search needs to be resumed into DIR (one file a variant)")
    p.add_argument("--checkpoint-every", type=float, metavar="S", default=60.0,
                   help="with --checkpoint: write at the end of a level once S seconds passed (default 60); "
                        "always when a limit or a signal ends the search")
    p.add_argument("--resume", metavar="DIR",
                   help="resume the searches a --checkpoint DIR holds (the same arguments otherwise); "
                        "goes on writing checkpoints into DIR")
    p.add_argument("--progress-check", action="store_true",
                   help="also check that every reachable state can drain (liveness; small scenarios)")
    p.add_argument("--out", metavar="DIR", help="where counterexamples go (default: a new run directory under results/)")
    p.add_argument("--no-write", action="store_true", help="do not write counterexample files")
    p.add_argument("--json", action="store_true", help="one JSON object per variant on stdout")
    p.add_argument("--workers", type=count, metavar="K",
                   help="expand each level on K local processes, each holding its share of the states (the "
                   "same result as one process); default: in this process")
    p.add_argument("--master", metavar="URL",
                   help="expand each level on this Spark master (local[*], spark://HOST:PORT, yarn, k8s://...)")
    p.add_argument("--master-timeout", type=float, metavar="S",
                   help="seconds a cluster master has to answer and give an executor (default 25)")
    p.add_argument("--no-reduce", action="store_true",
                   help="take every transition (no sleep-set partial-order reduction)")
    p.add_argument("--report", metavar="OUT.html",
                   help="also write a self-contained HTML report (verdict table, time to find and length of each "
                        "shortest counterexample, a viewer page per counterexample)")
    p.set_defaults(func=run)


def _positive(name, value):
    if value is not None and value < 1:
        raise FlinkspecError(f"{name} must be >= 1, not {value}")


def run(args) -> int:
    # the model, the engines and the spec (~0.3 s) are needed here only, not at flinkspec start-up
    from model.variants import generate, small_scenario, variant, variant_names  # start-up: see above
    from properties.explore import Limits, SearchCheckpoint, StopRequest, default_max_memory, explore, parse_bytes  # start-up: see above
    from properties.progress import Reporter  # start-up: see above

    _positive("--max-depth", args.max_depth)
    _positive("--max-states", args.max_states)
    if not args.max_seconds > 0 or args.max_seconds == float("inf"):
        raise FlinkspecError(f"--max-seconds must be a positive finite number, not {args.max_seconds}")
    max_memory = parse_bytes(args.max_memory) if args.max_memory is not None else default_max_memory()
    if args.no_spill and (args.spill_memory or args.spill_dir or args.max_disk):
        raise FlinkspecError("--no-spill goes without --spill-memory, --spill-dir and --max-disk")
    spill_memory = parse_bytes(args.spill_memory) if args.spill_memory is not None else None
    max_disk = parse_bytes(args.max_disk) if args.max_disk is not None else None
    spill_dir = None
    if args.spill_dir is not None:
        from properties.safe_io import check_output_dir  # start-up: flinkspec.cli imports every command module

        spill_dir = str(check_output_dir(Path(args.spill_dir), what="--spill-dir folder"))
    if not args.checkpoint_every > 0:
        raise FlinkspecError(f"--checkpoint-every must be a positive number of seconds, not {args.checkpoint_every}")
    if args.checkpoint is not None and args.resume is not None and Path(args.checkpoint) != Path(args.resume):
        raise FlinkspecError("--resume DIR goes on writing into DIR: give --checkpoint DIR only for a new search")
    if args.max_checkpoints is not None and (args.job is None or args.max_checkpoints < 0):
        raise FlinkspecError("--max-checkpoints N (N >= 0) goes with --job FILE")
    if args.failures is not None and not args.small:
        raise FlinkspecError("--failures N goes with --small (it sets the small scenario's failure budget)")
    if args.design is not None and (args.job is not None or args.all):
        raise FlinkspecError("--design FILE explores the design's variants: it goes without --job and --all")
    if args.design is not None and args.master is not None:
        raise FlinkspecError("--design FILE runs in this process and its --workers; Spark executors cannot load it")
    if (args.job is not None) + args.all + bool(args.variant) + (args.design is not None and not args.variant) != 1:
        raise FlinkspecError("name --variant NAME (repeatable), --all, --job FILE or --design FILE")
    _positive("--workers", args.workers)
    if args.workers is not None and args.master is not None:
        raise FlinkspecError("give --workers K (K local processes) or --master URL (Spark), not both")
    if args.job is not None:
        if args.small:
            raise FlinkspecError("--small shrinks a built-in variant's job; --job FILE explores the file's job as written")
        variants = [_job_variant(args.job, 1 if args.max_checkpoints is None else args.max_checkpoints)]
    else:
        names = variant_names() if args.all else list(dict.fromkeys(args.variant or ()))
        if args.design is not None:
            from flinkspec.design import variants_to_run  # start-up: as above

            names = variants_to_run(args.design, names)  # a bad file or name: one line, before any search
        variants = [variant(n) for n in names]  # an unknown name is one line before any search
        if args.failures is not None:
            variants = [attrs.evolve(v, small=attrs.evolve(v.small, failures=args.failures)) for v in variants]
    report_out = None
    if args.report:
        from properties.safe_io import check_output_file  # start-up: as above; refused before any search

        report_out = check_output_file(args.report, what="report")
    checkpoint_dir = _checkpoint_dir(args.checkpoint or args.resume, args)  # (made only for valid arguments)
    rows: list = []
    limits = Limits(max_depth=args.max_depth, max_states=args.max_states, max_seconds=args.max_seconds,
                    max_memory=max_memory, frontier=args.frontier, spill=not args.no_spill,
                    spill_memory=spill_memory, spill_dir=spill_dir, max_disk=max_disk)
    out_dir_holder: list = [None]
    shrunk = _shrunk_lengths()
    failed = 0
    stop = StopRequest()
    with _levels(args.master, args.workers, args.master_timeout) as make_levels, _signals_stop(stop):
        for v in variants:
            scenario = small_scenario(v, args.seed) if args.small else generate(v, args.seed)
            checkpoint = resume = None
            if checkpoint_dir is not None:
                file = checkpoint_dir / _checkpoint_name(v.name)
                if args.workers in (None, 1) and args.master is None:  # (workers and Spark only resume)
                    checkpoint = SearchCheckpoint(path=file, every=args.checkpoint_every)
                if args.resume is not None:
                    if file.exists():
                        resume = file
                    elif not args.json:
                        print(f"{v.name}: no checkpoint in {checkpoint_dir}: searching from the start", flush=True)
            last = v is variants[-1]
            with Reporter(f"explore {v.name}") as reporter:
                ex = explore(scenario, limits, progress=_progress_printer(reporter), reduce=not args.no_reduce,
                             levels=make_levels(scenario, not args.no_reduce), stop=stop, checkpoint=checkpoint,
                             resume=resume, release=not last)
            if last:  # what the search held is left to the process's exit, not freed object by object
                from flinkspec.cli import exit_without_teardown  # start-up: cli imports this module

                exit_without_teardown()
            failed += _report(args, v, scenario, ex, shrunk, out_dir_holder, rows)
            if stop.reason is not None:
                break
    out_dir = out_dir_holder[0]
    if out_dir is not None and not args.json:
        print(f"counterexamples written to {out_dir} (keep the shortest in the corpus: flinkspec corpus update)")
    if stop.reason is not None:
        if not args.json:
            left = len(variants) - len(rows)
            print(f"stopped by {stop.reason}" + (f"; {left} variant(s) not searched" if left else "")
                  + (f"; resume with --resume {checkpoint_dir}" if checkpoint_dir is not None else ""), flush=True)
        return 130
    if report_out is not None:
        from properties.report import write_report  # start-up: as above (matplotlib only with --report)

        write_report(report_of(rows, failed), report_out)
        if not args.json:
            print(f"report: {report_out}")
    return 1 if failed else 0


def report_of(rows: list, failed: int):
    """The exploration as a ``properties.report.Report`` (a row per variant)."""
    from properties.report import Report, Row  # start-up: flinkspec.cli imports every command module

    out = tuple(Row(name=r["variant"], expected=tuple(r["expected"]),
                    verdict=r["verdict"] + (f" {r['invariant']}" if r["invariant"] else ""),
                    as_expected=r["as_expected"], unsafe=r["expected"] != ["pass"], steps=r["transitions"],
                    seconds=r["seconds"], to_find=r["distinct_states"] if r["verdict"] == "violation" else None,
                    cx_steps=r["counterexample_steps"], counterexample=r["file"],
                    extra=(("distinct states", f"{r['distinct_states']:,}"), ("depth", str(r["depth"])),
                           ("stopped by", r["limit"] or ""),
                           ("random walk's shrunk steps", "" if r["shrunk_steps"] is None else str(r["shrunk_steps"]))))
                for r in rows)
    n = len(rows)
    return Report(title="flinkspec explore — breadth-first search of every interleaving",
                  summary=f"{n - failed}/{n} variants as expected — {'OK' if not failed else 'FAILED'}",
                  ok=not failed, rows=out, to_find_unit="states",
                  notes=("steps = transitions explored; found after = distinct states explored when the shortest "
                         "violation was found; time = the variant's whole search.",))


def _job_variant(path: str, max_checkpoints: int):
    """The variant of a job file with a checkpoint budget (the explored space is finite)."""
    import attrs  # start-up: flinkspec.cli imports every command module

    from model.jobfile import load_job_file  # start-up: as above
    from model.variants import job_variant  # start-up: as above
    from properties.engines import check_judgeable  # start-up: as above

    job = load_job_file(path)
    check_judgeable(job)  # the job's input asks for late records where no judge covers them: one line, exit 2
    job = attrs.evolve(job, environment=attrs.evolve(job.environment, max_checkpoints=max_checkpoints))
    return job_variant(job)


@contextlib.contextmanager
def _levels(master: str | None, workers: int | None, timeout: float | None):
    """What expands the levels: None (this process), ``workers`` local processes, or Spark's
    executors on ``master``."""
    if master is None:
        if workers is None or workers == 1:
            yield lambda scenario, reduce: None
            return
        from properties.explore_workers import ProcessLevels  # start-up: only when asked for

        started: list = []

        def make(scenario, reduce):
            while started:  # the previous variant's workers: its search is over
                started.pop().close()
            started.append(ProcessLevels(scenario, reduce, workers))
            return started[-1]

        try:
            yield make
        finally:
            while started:
                started.pop().close()
        return
    # pyspark and the JVM start only when a Spark search is asked for
    from spark.explore import SparkLevels  # start-up: see above
    from spark.session import session, validate_master  # start-up: see above

    validate_master(master)
    with session(master, app_name="flinkspec explore", timeout=timeout) as spark:
        yield lambda scenario, reduce: SparkLevels(spark, scenario, reduce)


def _report(args, v, scenario, ex, shrunk: dict, out_dir_holder: list, rows: list) -> int:
    """Print the row of one variant's search (and write its counterexample), append it to
    ``rows`` (for ``--report``); 1 if the verdict is not as expected."""
    from properties.explore import check_progress, shortest_file  # start-up: see run

    file = None
    if ex.verdict == "violation" and not args.no_write:
        if out_dir_holder[0] is None:
            out_dir_holder[0] = _out_dir(args)
        file = str(shortest_file(out_dir_holder[0], v, scenario, ex, args.seed))
    progress_note = None
    if args.progress_check and ex.verdict != "violation":
        checked, trace, why = check_progress(scenario)
        progress_note = {"states": checked, "stuck_after": None if trace is None else len(trace), "reason": why}
    invariant = ex.violation.invariant if ex.violation is not None else None
    as_expected = _as_expected(v, ex.verdict, invariant) and (progress_note is None or progress_note["reason"] is None)
    row = {
        "variant": v.name, "expected": list(v.expected), "verdict": ex.verdict, "invariant": invariant,
        "distinct_states": ex.distinct_states, "transitions": ex.transitions, "depth": ex.depth,
        "complete": ex.complete, "seconds": round(ex.seconds, 3), "states_per_s": round(ex.states_per_s, 1),
        "workers": ex.workers, "reduced": ex.reduced, "spilled_bytes": ex.spilled_bytes, "small": args.small, "seed": args.seed, "limit": ex.limit,
        "failures": scenario.environment.max_failures,
        "counterexample_steps": len(ex.trace) if ex.verdict == "violation" else None,
        "decided_after_steps": ex.decided_after,
        "shrunk_steps": shrunk.get((v.name, invariant)) if invariant else None,
        "file": file, "progress_check": progress_note, "as_expected": as_expected,
    }
    rows.append(row)
    if args.json:
        print(json.dumps(row), flush=True)
    else:
        print(_line(row), flush=True)
    return 0 if as_expected else 1


def _as_expected(v, verdict: str, invariant: str | None) -> bool:
    if v.safe:
        return verdict != "violation"
    return verdict == "violation" and invariant in v.expected


def _line(row: dict) -> str:
    head = (f"{row['variant']}: {row['verdict']}" + (f" {row['invariant']}" if row["invariant"] else "")
            + ("" if row["as_expected"] else "  [UNEXPECTED]"))
    if row["variant"].startswith("job:"):  # a user's job (--job): its verdict, not the catalog's expectation
        head = f"job {row['variant'][4:]!r}: " + {
            "violation": f"violation found: {row['invariant']}",
            "verified": "no violation in any reachable state (verified)",
        }.get(row["verdict"], "no violation in the states searched (bounded)")
    cover = (f"{row['distinct_states']:,} states, {row['transitions']:,} transitions, depth {row['depth']}, "
             f"{row['seconds']:.1f} s ({row['states_per_s']:,.0f} states/s)")
    if row["verdict"] == "violation":
        shrunk = row["shrunk_steps"]
        vs = f"; the random walk's shrunk one has {shrunk}" if shrunk is not None else ""
        decided = row.get("decided_after_steps")
        what = (f"counterexample {row['counterexample_steps']} steps (a shortest prefix of {decided} steps "
                f"decides the invariant, the drain policy's {row['counterexample_steps'] - decided} follow)"
                if decided is not None else f"shortest counterexample {row['counterexample_steps']} steps")
        return f"{head} — {what}{vs} — {cover}" + (
            f" — {row['file']}" if row["file"] else "")
    if row.get("spilled_bytes"):
        n = row["spilled_bytes"]
        cover += f"; at most {f'{n / (1 << 20):,.1f} MB' if n >= 1 << 20 else f'{n / 1024:,.0f} KB'} spilled to disk"
    if row["verdict"] == "bounded":
        cover += f"; stopped by {row['limit']}"
    pc = row["progress_check"]
    if pc is not None:
        cover += (f"; every one of {pc['states']:,} states can drain" if pc["reason"] is None
                  else f"; a state {pc['stuck_after']} steps deep cannot drain: {pc['reason']}")
    return f"{head} — {cover}"


def _out_dir(args) -> Path:
    from properties.corpus import run_directory  # start-up: flinkspec.cli imports every command module
    from properties.safe_io import check_output_dir  # start-up: as above

    if args.out:
        return check_output_dir(Path(args.out), what="--out folder")
    return run_directory("explore", args.seed)


def _shrunk_lengths() -> dict:
    """(variant, invariant) -> the number of actions of the committed corpus's random-walk
    counterexample (the shrunk one a check run found), for comparison."""
    from properties.corpus import DEFAULT_CORPUS, stored_lengths  # start-up: see run

    return stored_lengths(DEFAULT_CORPUS, ("random_walk", "spark-replay"))


def _shrunk_steps(v, invariant: str, corpus: dict) -> int | None:
    """The length of the random-walk search's shrunk counterexample for ``v`` and
    ``invariant``: the committed corpus's, else what the quick profile's random walks find and
    shrink now (None if they find nothing for this invariant)."""
    if (v.name, invariant) in corpus:
        return corpus[(v.name, invariant)]
    from properties.suites import run_variant_suite  # start-up: see run

    res = run_variant_suite(v, profile="quick", corpus_dir=None)
    if res.first_violation is None or res.shrunk_to is None:
        return None
    return res.shrunk_to if res.first_violation.get("invariant") == invariant else None


def _progress_printer(reporter):
    """The search's progress (``properties.explore.Progress``) as the reporter's status line."""

    def show(p) -> None:
        reporter.update(lambda: (f"depth {p.depth}, {p.distinct_states:,} states "
                                 f"({p.distinct_states / p.seconds if p.seconds > 0 else 0:,.0f}/s), "
                                 f"frontier {p.frontier:,}, {p.seconds:.0f} s"))
    return show


@contextlib.contextmanager
def _signals_stop(stop):
    """While the searches run, SIGTERM and SIGINT ask the search to stop (``StopRequest``: it
    ends at the next state, bounded, and its figures are printed); a second signal interrupts
    at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    olds = {}

    def handler(signum, _frame):
        name = signal.Signals(signum).name
        if stop.reason is not None:
            raise KeyboardInterrupt(name)
        stop.request(name)

    for sig in (signal.SIGTERM, signal.SIGINT):
        olds[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in olds.items():
            signal.signal(sig, old)


def _checkpoint_dir(path: str | None, args) -> Path | None:
    if path is None:
        return None
    if args.workers not in (None, 1) or args.master is not None:
        if args.checkpoint is not None:
            raise FlinkspecError("--checkpoint DIR is written by the search in one process (no --workers or --master); "
                                 "a search on workers or Spark can --resume from one")
        return Path(path)
    from properties.safe_io import check_output_dir  # start-up: flinkspec.cli imports every command module

    if args.resume is not None and not Path(path).is_dir():
        raise FlinkspecError(f"--resume {path}: no such folder (a folder --checkpoint wrote)")
    return check_output_dir(Path(path), what="--checkpoint folder")


def _checkpoint_name(name: str) -> str:
    """The checkpoint file of a variant's search (a job's name may hold any character)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".checkpoint"


