"""``flinkspec check``: the main verification job.

Runs every suite of the profile — a random-walk search per variant (safe and known-unsafe
configurations of the runtime) and the focused Hypothesis suites — then prints a summary
table: suite, runs, steps, verdict against the expected verdict, time, and the coverage
goals. Exit 0 when every suite run gives its expected verdict and, for a full run, every
coverage goal was reached by at least its floor of runs (``spec.coverage.FLOORS``; with --only/--variant the goals are reported, not judged: a
selection of suites need not reach them); 1 otherwise; 2 on a usage error. A shrunk
counterexample of each unsafe suite is written to a fresh run directory under results/
(printed at the end; --corpus DIR writes elsewhere, --no-write nowhere); the committed
corpus changes only through `flinkspec corpus update`.

The command is a pipeline of named steps: :func:`select_suites` (which catalog entries) ->
:func:`run_suites` (one line per suite as it finishes) -> :func:`judge` (verdicts and
coverage, as data) -> :func:`render_summary` (tables and summary line) -> exit code.
``--list [--json]`` prints the whole catalog instead: every configuration, also those run by
``flinkspec prove`` and ``flinkspec spark-replay --engine standin``.

``--job FILE`` verifies a user's own job instead of the catalog (:func:`run_job`): the job
spec with its ``[runtime]`` and ``[input]`` tables (docs/job-specs.md) is searched by seeded
random walks with fault injection and by the Hypothesis cluster machine, judged by every
registered invariant. The output speaks of the job: each search ends with "violation found:
<invariant>" (its message, its counterexample) or "no violation in N runs, M steps", and the
coverage goals listed are those that apply to the job (``spec.coverage.goals_applying_to``:
reported, not judged, as one job need not reach them all). Exit 0 when nothing was violated,
1 when a violation was found (the invariant is named), 2 on a bad job spec (the rule broken).
The counterexamples go to a run directory named after the job (variant ``job:<job name>``),
for ``flinkspec show`` and ``flinkspec replay`` (the corpus holds the catalog's variants, not
a user's job).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import re
import signal
import sys
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable

from flinkspec.commands import count, seed
from model.catalog import RANDOM_WALK_KINDS
from model.errors import FlinkspecError
from spec.coverage import FLOORS, GOALS, below_floor, goals_applying_to

# properties.catalog / properties.suites (Hypothesis, the engines, every registered suite:
# ~0.25 s) and rich are imported inside the steps below, not here: flinkspec.cli imports every
# command module at start-up, and the other commands do not need them.


def register(sub) -> None:
    p = sub.add_parser("check", help="run the property suites and report verdicts and coverage",
                       description=__doc__.split("\n\n")[1] if __doc__ else None)
    p.add_argument("--profile", choices=("quick", "thorough"), default="quick",
                   help="quick: seconds to minutes (the main job); thorough: much longer searches")
    p.add_argument("--only", action="append", metavar="SUITE",
                   help="run only this suite (repeatable); `flinkspec check --list` names them")
    p.add_argument("--variant", action="append", metavar="NAME", help="alias of --only for variant suites")
    p.add_argument("--seed", type=seed, default=0, help="base seed (runs use seed, seed+1, ...)")
    p.add_argument("--workers", type=count, default=1, metavar="K",
                   help="run K suites at once in forked processes (default 1). Each suite's verdict, runs and "
                        "counterexample are the same as with one worker; the per-suite lines print as suites "
                        "finish, the summary table in catalog order")
    p.add_argument("--corpus", metavar="DIR", default=None,
                   help="write shrunk counterexamples into DIR (default: a new run directory "
                        "results/check-<UTC time>-seed<N>/; the committed counterexamples/ changes only "
                        "through `flinkspec corpus update`)")
    p.add_argument("--no-write", action="store_true", help="do not write counterexample files")
    p.add_argument("--list", action="store_true",
                   help="list every named configuration (suites, z3 checks, Spark stand-ins) and exit")
    p.add_argument("--json", action="store_true", help="with --list: one JSON object per line")
    p.add_argument("--report", metavar="OUT.html",
                   help="also write a self-contained HTML report: the suite table, coverage goals as bars, time "
                        "to find and counterexample length per unsafe suite, a viewer page per counterexample")
    p.add_argument("--job", metavar="FILE",
                   help="verify this job spec (.toml/.json, with optional [runtime] and [input] tables) instead "
                        "of the built-in variants")
    p.add_argument("--design", metavar="FILE",
                   help="verify the variants of this design file (a Python file of seams, invariants and variants: "
                        "docs/designs.md) instead of the built-in ones; --only picks among them")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.list:
        ignored = [flag for flag, given in (("--report", args.report), ("--job", args.job), ("--only", args.only),
                                            ("--variant", args.variant)) if given]
        if ignored:  # --list runs nothing: a flag that asks for a run is a mistake, not a silent no-op
            raise FlinkspecError(f"--list prints the catalog and runs nothing: drop {', '.join(ignored)}")
        return list_catalog(json_lines=args.json)
    if args.job is not None:
        if args.design is not None:
            raise FlinkspecError("--job FILE and --design FILE are two runs: a design's variant names its job (job=)")
        return run_job(args)
    requested = list(args.only or []) + list(args.variant or [])
    design = args.design
    if design is not None:
        from flinkspec.design import variants_to_run  # lazy: heavy, see the note at the top

        requested = variants_to_run(design, requested)  # a bad file or name: one line, before any suite
    suites = select_suites(requested)
    report_out = None
    if args.report:
        from properties.safe_io import check_output_file  # lazy: only with --report; refused before any suite

        report_out = check_output_file(args.report, what="report")
    console = _console()
    if design is None:
        console.print(f"[bold]flinkspec check[/bold] — profile {args.profile}, seed {args.seed}, "
                      f"{len(suites)} suite(s). Safe configurations must pass; known-unsafe ones must be caught.")
    else:
        console.print(f"[bold]flinkspec check --design[/bold] {args.design} — profile {args.profile}, seed "
                      f"{args.seed}, {len(suites)} variant(s): each must end with its expected verdict.")
    t0 = time.perf_counter()
    out = output_directory(args, command="check" if design is None else f"check-design-{_slug(Path(args.design).stem)}")
    results = run_suites(suites, profile=args.profile, seed=args.seed, corpus=out, workers=args.workers,
                         **_live_output(console))
    verdict = judge(suites, results, selected=bool(requested), seconds=time.perf_counter() - t0)
    render_summary(console, verdict, profile=args.profile, seed=args.seed)
    if report_out is not None:
        from properties.report import write_report  # lazy: matplotlib only with --report

        write_report(report_of(verdict, profile=args.profile, seed=args.seed), report_out)
        console.print(f"report: {report_out}")
    console.print(written_note(out, fresh=args.corpus is None, job=design is not None))
    return verdict.exit_code


def report_of(verdict: Judgement, *, profile: str, seed: int):
    """The run as a ``properties.report.Report``: a row per suite, the goals if a cluster suite ran."""
    from properties.report import Report, Row  # lazy: see report_out above

    rows = tuple(Row(name=r.name, expected=tuple(r.expected), verdict=r.verdict, as_expected=r.as_expected,
                     unsafe=not r.safe, runs=r.runs, steps=r.steps, seconds=r.seconds,
                     to_find=r.runs_to_find if not r.safe and r.found else None,
                     cx_steps=r.shrunk_to if r.shrunk_to is not None else _steps_of(r.counterexample),
                     counterexample=r.counterexample,
                     extra=(("shrunk from", str(r.shrunk_from) if r.shrunk_from else ""),))
                 for r in verdict.results)
    goals = tuple((g, verdict.goals.get(g, 0), GOALS[g].statement) for g in verdict.goal_names) \
        if verdict.cluster_ran else ()
    return Report(title=f"flinkspec check — {profile} profile, seed {seed}", summary=summary_line(verdict),
                  ok=verdict.ok, rows=rows, goals=goals, to_find_unit="runs", notes=(TERMS,))


def _steps_of(path) -> int | None:
    """The number of action lines of a counterexample file (None: no file)."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return sum(1 for line in f if '"type":"action"' in line)
    except OSError:
        return None


def run_job(args) -> int:
    """``check --job FILE``: search the user's job; exit 0 (nothing violated), 1 (a violation,
    named), 2 (a bad spec: raised as an InvalidJobSpec before any search)."""
    from model.jobfile import load_job_file  # lazy: see the note at the top
    from model.variants import generate, job_variant  # lazy, as above
    from properties.engines import check_judgeable  # lazy, as above
    from properties.suites import run_job_suites  # lazy, as above

    if args.only or args.variant:
        raise FlinkspecError("--job FILE searches the job of FILE: it takes no --only/--variant")
    job = load_job_file(args.job)  # every rule broken: one line, exit 2, before any search
    check_judgeable(job)  # (as above: a job no judge covers)
    v = job_variant(job)
    console = _console()
    cfg = job.config
    console.print(f"[bold]flinkspec check --job[/bold] {job.path}: job {job.name!r}, profile {args.profile}, "
                  f"seed {args.seed} — {cfg.barrier_mode} checkpoints, {cfg.failover_strategy} failover, "
                  f"up to {job.environment.max_failures} failure(s) per run, {cfg.task_managers} TaskManager(s) x "
                  f"{cfg.slots_per_task_manager} slot(s). Nothing may be violated.")
    t0 = time.perf_counter()
    out = output_directory(args, command=f"check-job-{_slug(job.name)}")
    results = run_job_suites(v, profile=args.profile, base_seed=args.seed, corpus_dir=out,
                             **_live_output(console, job=True))
    verdict = judge_job(results, job=job.name, goal_names=goals_applying_to(generate(v, args.seed)),
                        seconds=time.perf_counter() - t0)
    render_summary(console, verdict, profile=args.profile, seed=args.seed)
    console.print(written_note(out, fresh=args.corpus is None, job=True))
    return verdict.exit_code


def _slug(name: str) -> str:
    """A job name as a run-directory name part: lower-case letters, digits and '-'."""
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    return s or "job"


def judge_job(results, *, job: str, goal_names: tuple, seconds: float = 0.0) -> "Judgement":
    """The verdict of a ``--job`` run: every search must pass; the coverage goals that apply to
    the job (``goal_names``) are reported (a single job need not reach every one), not judged."""
    goals: Counter = Counter()
    for r in results:
        goals.update(r.goals)
    return Judgement(results=tuple(results), goals=goals, goal_names=tuple(goal_names),
                     missing=tuple(g for g in goal_names if goals.get(g, 0) == 0), cluster_ran=True, selected=True,
                     seconds=seconds, job=job)


def output_directory(args, *, command: str = "check") -> Path | None:
    """Where this run writes counterexamples: None (``--no-write``), ``--corpus DIR``, or a
    new run directory under results/ (``results/<command>-<UTC time>-seed<N>/``)."""
    if args.no_write:
        return None
    if args.corpus is not None:
        from properties.safe_io import check_output_dir  # lazy, as below; a bad folder is one line before any suite

        return check_output_dir(args.corpus, what="--corpus folder")
    from properties.corpus import run_directory  # lazy: heavy, see the note at the top

    return run_directory(command, args.seed)


def written_note(out: Path | None, *, fresh: bool, job: bool = False) -> str:
    """The closing line: where the counterexamples went and what reads them (for the catalog's
    suites, how they reach the corpus; a user's job, ``job``, is no corpus material:
    ``corpus update`` keeps files of the catalog's variants only). An empty fresh run
    directory (nothing found) is removed."""
    if out is None:
        return "counterexamples: not written (--no-write)"
    files = sorted(out.glob("*/*.ndjson")) if out.is_dir() else []
    if fresh and not files:
        try:
            out.rmdir()
        except OSError:
            pass
        return "counterexamples: none found, nothing written"
    shown = os.path.relpath(out)
    shown = str(out) if shown.startswith("..") else shown
    if job:
        return (f"counterexamples: {len(files)} file(s) in {shown} — `flinkspec show FILE` explains one step by "
                f"step; `flinkspec replay FILE` runs it again and checks its verdict")
    return (f"counterexamples: {len(files)} file(s) in {shown} — `flinkspec show FILE` reads one; "
            f"`flinkspec corpus update --from {shown}` merges them into the committed counterexamples/")


# -- steps -------------------------------------------------------------------------------------

def select_suites(names: list[str]) -> list:
    """The catalog entries ``check`` runs: those named (in order), or all of them. An unknown
    name raises FlinkspecError (exit 2) naming the known suites."""
    from properties.catalog import select  # lazy: heavy, see the note at the top

    return select(names)


def run_suites(suites, *, profile: str, seed: int, corpus: Path | None, workers: int = 1,
               progress: Callable[[str, int, int], None] | None = None,
               finished: Callable[[str, object], None] | None = None) -> list:
    """Run each suite; ``progress(label, done, total)`` during a random-walk suite and
    ``finished(label, result)`` after each one. Returns the ``SuiteResult`` list, in the order
    of ``suites``. ``workers`` > 1: that many suites at once, each in a process forked from
    this one (a suite depends only on its name, profile and seed, so its result is the same;
    ``finished`` is called as suites end, ``progress`` not at all)."""
    from properties.suites import run_suite  # lazy: heavy, see the note at the top

    labels = [f"[{i}/{len(suites)}] {entry.name}" for i, entry in enumerate(suites, 1)]
    if workers > 1 and len(suites) > 1:
        return _run_suites_forked(suites, labels, profile=profile, seed=seed, corpus=corpus, workers=workers,
                                  finished=finished)
    results = []
    for label, entry in zip(labels, suites):
        on_progress = None if progress is None else (lambda done, total, _l=label: progress(_l, done, total))
        r = run_suite(entry.name, profile=profile, base_seed=seed, corpus_dir=corpus, progress=on_progress)
        results.append(r)
        if finished is not None:
            finished(label, r)
    return results


def _worker_signals() -> None:
    """A forked worker ends on SIGTERM at once (the parent's handler, inherited by the fork,
    would raise an interrupt that the pool's worker loop catches and outlives), and ignores
    SIGINT: a Ctrl-C on a terminal reaches the whole process group, and the parent ends the
    workers itself."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _end_workers(pool: ProcessPoolExecutor) -> None:
    """Terminate the pool's worker processes (the executor has no public way to stop a
    running task: ``shutdown`` only waits for it) and reap them."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(5)


def _run_suite_in_worker(name: str, profile: str, seed: int, corpus: Path | None):
    from properties.suites import run_suite  # lazy: heavy, see the note at the top

    return run_suite(name, profile=profile, base_seed=seed, corpus_dir=corpus)


def _run_suites_forked(suites, labels, *, profile, seed, corpus, workers, finished) -> list:
    results: list = [None] * len(suites)
    pool = ProcessPoolExecutor(max_workers=min(workers, len(suites)), mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_signals)
    ended = False
    try:
        pending = {pool.submit(_run_suite_in_worker, entry.name, profile, seed, corpus): i
                   for i, entry in enumerate(suites)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=pending.get):
                i = pending.pop(future)
                try:
                    results[i] = future.result()
                except Exception as e:  # the worker died (or the suite raised): an error verdict, not a traceback
                    from properties.result import SuiteResult  # lazy: heavy, see the note at the top

                    results[i] = SuiteResult(name=suites[i].name, expected=tuple(suites[i].expected),
                                             error=f"{type(e).__name__}: {e}")
                if finished is not None:
                    finished(labels[i], results[i])
        ended = True
    finally:  # interrupted or failed: cancel what has not started, end the running workers now
        if not ended:
            _end_workers(pool)
        pool.shutdown(wait=True, cancel_futures=True)
    return results


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What a check run concluded (plain data; :func:`render_summary` prints it)."""

    results: tuple
    #: coverage goal -> runs reaching it, over every result
    goals: Counter
    #: every coverage goal, and those reached by fewer runs than their floor (a job's: by none)
    goal_names: tuple
    missing: tuple
    #: a whole-cluster variant suite ran (only those reach coverage goals)
    cluster_ran: bool
    #: suites were named (--only): missing goals are a note, not a failure
    selected: bool
    seconds: float = 0.0
    #: the job of a ``--job`` run (its name), else None
    job: str | None = None

    @property
    def bad(self) -> list:
        return [r for r in self.results if not r.as_expected]

    @property
    def counts(self) -> dict:
        """safe / safe_ok (passed) / unsafe / found (caught) suites, goals reached."""
        rs = self.results
        return {"safe": sum(1 for r in rs if r.safe), "safe_ok": sum(1 for r in rs if r.safe and r.as_expected),
                "unsafe": sum(1 for r in rs if not r.safe), "found": sum(1 for r in rs if not r.safe and r.found),
                "goals_reached": sum(1 for g in self.goal_names if g not in self.missing)}

    @property
    def ok(self) -> bool:
        """Every verdict as expected, and (for a full run) every coverage goal reached."""
        return not self.bad and (not self.missing or self.selected)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def judge(suites, results, *, selected: bool, seconds: float = 0.0) -> Judgement:
    """Judge ``results`` (one per entry of ``suites``): verdicts against the expected ones,
    coverage goals reached. ``selected``: suites were named (--only), so missing goals are a
    note, not a failure."""
    goals: Counter = Counter()
    for r in results:
        goals.update(r.goals)
    return Judgement(results=tuple(results), goals=goals, goal_names=tuple(GOALS),
                     missing=below_floor(goals),
                     cluster_ran=any(e.kind in RANDOM_WALK_KINDS for e in suites), selected=selected, seconds=seconds)


# -- rendering ---------------------------------------------------------------------------------

def job_verdict(r, *, short: bool = False) -> str:
    """A search of a user's job, as its verdict for the job: "violation found: <invariant>"
    (with ``short`` only that) or "no violation in N runs, M steps" (a Hypothesis search counts
    no steps), or "error"."""
    if r.error:
        return "error"
    if r.violations:
        what = "violation found: " + ", ".join(sorted(r.violations))
        if short:
            return what
        what += f" (in run {r.runs_to_find or r.runs}"
        if r.shrunk_from:
            what += f"; its {r.shrunk_from} steps shrunk to {r.shrunk_to}"
        return what + ")"
    if short:
        return "no violation"
    return f"no violation in {r.runs:,} runs" + (f", {r.steps:,} steps" if r.steps else "")


def job_suite_lines(label: str, r) -> list[str]:
    """The lines printed when a search of a user's job finishes: its verdict for the job, and
    for a violation the invariant's message and the counterexample file."""
    lines = [f"{label}: {job_verdict(r)} in {r.seconds:.1f}s"]
    if r.violations and r.first_violation:
        lines.append(f"    {r.first_violation.get('message')}")
    return lines + _error_and_file_lines(r)


def _error_and_file_lines(r) -> list[str]:
    """A finished search's error, if any, and its counterexample file (relative when inside the
    working directory)."""
    lines = []
    if r.error:
        lines.append(f"    error: {r.error}")
    if r.counterexample:
        rel = os.path.relpath(r.counterexample)
        lines.append(f"    counterexample: {r.counterexample if rel.startswith('..') else rel}")
    return lines


def suite_lines(label: str, r) -> list[str]:
    """The lines printed when a suite finishes: verdict, and what to look at if any."""
    extra = ""
    if r.violations and (not r.safe and r.found or r.name.startswith("job:")):
        extra = f" (found after {r.runs_to_find or r.runs} run(s)"
        if r.shrunk_from:
            extra += f", shrunk {r.shrunk_from} -> {r.shrunk_to} steps"
        inv = r.first_violation.get("invariant") if r.first_violation else None
        shortest = _shortest().get((r.name, inv))
        if shortest is not None:
            extra += f"; shortest {shortest} steps (flinkspec explore)"
        extra += ")"
    lines = [f"{label}: {r.verdict} [{'ok' if r.as_expected else 'UNEXPECTED'}] in {r.seconds:.1f}s{extra}"]
    if not r.as_expected and r.first_violation:
        lines.append(f"    first violation (seed {r.first_seed}): {r.first_violation.get('message')}")
    return lines + _error_and_file_lines(r)


_SHORTEST: list = []


def _shortest() -> dict:
    """(variant, invariant) -> the length of the explorer's shortest counterexample in the
    committed corpus (read once)."""
    if not _SHORTEST:
        from properties.corpus import DEFAULT_CORPUS, stored_lengths  # start-up: flinkspec.cli imports every command module

        _SHORTEST.append(stored_lengths(DEFAULT_CORPUS, ("explore",)))
    return _SHORTEST[0]


def render_summary(console, verdict: Judgement, *, profile: str, seed: int) -> None:
    """The results table, the coverage goals (if a variant suite ran) and the summary line."""
    from rich.table import Table  # lazy: rich is only needed once check runs (CLI start-up)

    job = verdict.job is not None
    table = Table(title=f"flinkspec check — {f'job {verdict.job!r}, ' if job else ''}{profile} profile, seed {seed}")
    cols = ("search", "runs", "steps", "verdict", "time") if job else \
        ("suite", "runs", "steps", "verdict", "expected", "as expected", "time")
    for col in cols:
        table.add_column(col, justify="right" if col in ("runs", "steps", "time") else "left")
    for r in verdict.results:
        if job:
            table.add_row(r.name, str(r.runs), str(r.steps) if r.steps else "-", job_verdict(r, short=True),
                          f"{r.seconds:.1f}s")
        else:
            table.add_row(r.name, str(r.runs), str(r.steps) if r.steps else "-", r.verdict, "/".join(r.expected),
                          "yes" if r.as_expected else "NO", f"{r.seconds:.1f}s")
    console.print(table)
    if job and not verdict.goal_names:
        console.print("coverage goals: none of the registered goals applies to this job's configuration")
    elif verdict.cluster_ran:
        console.print(_goals_table(verdict))
    if job:
        if verdict.missing:
            console.print("note: goals that apply to this job but no run reached: " + ", ".join(verdict.missing))
        console.print(JOB_TERMS)
        console.print(summary_line(verdict))
        return
    if verdict.bad:
        console.print(f"[bold red]{len(verdict.bad)} suite(s) did not reach their expected verdict:[/bold red] "
                      + ", ".join(r.name for r in verdict.bad))
    if verdict.missing and not verdict.selected:
        console.print("[bold red]coverage goal(s) reached by fewer runs than their floor — the search is blind "
                      "to:[/bold red] " + ", ".join(f"{g} ({verdict.goals.get(g, 0)} of {FLOORS[g]} run(s))"
                                                     for g in verdict.missing))
    elif verdict.missing and verdict.cluster_ran:
        console.print("note: goals not reached by the selected suites: " + ", ".join(verdict.missing))
    console.print(TERMS)
    console.print(summary_line(verdict))


#: what the words of the output mean (printed under the table)
TERMS = ("terms: runs = seeded random walks (cluster variants) or Hypothesis examples (focused suites) "
         "a suite ran; steps = actions taken over all its runs; \"found after N run(s)\" = the Nth run "
         "violated an expected invariant (an unsafe suite stops there); \"shrunk A -> B steps\" = that "
         "run had A actions up to its violation, the counterexample written has B (delta debugging keeps "
         "only the actions the violation needs); \"shortest N steps\" = no run of the variant's small "
         "scenario violates that invariant in fewer actions (the breadth-first search of flinkspec "
         "explore, stored in the corpus).")


#: what the words of a ``--job`` run's output mean
JOB_TERMS = ("terms: runs = seeded random walks of the job (the first search) or Hypothesis examples "
             "(the second); steps = actions the walks took; \"its A steps shrunk to B\" = the violating run "
             "had A actions, its counterexample keeps the B the violation needs (delta debugging).")


def summary_line(verdict: Judgement) -> str:
    """The last line: counts, the coverage rule that applied, time, OK/FAILED."""
    n = verdict.counts
    if verdict.job is not None:
        found = sorted({inv for r in verdict.results for inv in r.violations})
        errors = [r.name for r in verdict.results if r.error]
        runs = sum(r.runs for r in verdict.results)
        steps = sum(r.steps for r in verdict.results)
        what = ("violation found: " + ", ".join(found)) if found else ("error in " + ", ".join(errors) if errors
                                                                         else f"no violation in {runs:,} runs, "
                                                                              f"{steps:,} steps")
        goals = (f"{n['goals_reached']}/{len(verdict.goal_names)} coverage goals that apply to the job reached, "
                 f"reported not judged" if verdict.goal_names else "no coverage goal applies to the job")
        return (f"summary: job {verdict.job!r}: {what} ({len(verdict.results)} searches; {goals}), "
                f"{verdict.seconds:.1f}s — {'OK' if verdict.ok else 'FAILED'}")
    parts = []
    if n["safe"]:
        parts.append(f"{n['safe_ok']}/{n['safe']} safe suites passed")
    if n["unsafe"]:
        parts.append(f"{n['found']}/{n['unsafe']} unsafe variants caught")
    if verdict.cluster_ran:
        goals = f"{n['goals_reached']}/{len(verdict.goal_names)} coverage goals reached"
        parts.append(goals + (" (not judged: suites were selected)" if verdict.selected else ""))
    parts.append(f"{verdict.seconds:.1f}s")
    return f"summary: {', '.join(parts)} — {'OK' if verdict.ok else 'FAILED'}"


def _goals_table(verdict: Judgement):
    from rich.table import Table  # lazy: rich is only needed once check runs (CLI start-up)

    title = "coverage goals that apply to this job" if verdict.job is not None else "coverage goals"
    gt = Table(title=f"{title} (sometimes): how often each was reached")
    gt.add_column("goal")
    gt.add_column("runs reaching it", justify="right")
    gt.add_column("statement")
    for name in verdict.goal_names:
        gt.add_row(name, str(verdict.goals.get(name, 0)), GOALS[name].statement)
    return gt


def list_catalog(*, json_lines: bool = False) -> int:
    """Every catalog entry, one line each: a table with a header, or JSON objects (``--json``)."""
    from properties.catalog import load_catalog  # lazy: heavy, see the note at the top

    entries = load_catalog()
    if json_lines:
        lines = [e.to_json() for e in entries]
    else:
        rows = [("name", "family", "run by", "FLINK key", "expected", "what it is [seam]")]
        rows += [(e.name, e.family, f"flinkspec {e.runner}", e.flink_key or "-", "/".join(e.expected),
                  e.description + (f" [seam: {e.seam}]" if e.seam else "")) for e in entries]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        lines = ["  ".join([c.ljust(w) for c, w in zip(r, widths)] + [r[-1]]) for r in rows]
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:  # `flinkspec check --list | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _console():
    from rich.console import Console  # lazy: rich is only needed once check runs (CLI start-up)

    return Console(stderr=False, highlight=False, width=None if sys.stdout.isatty() else 150)


def _live_output(console, *, job: bool = False) -> dict:
    """``progress``/``finished`` callbacks printing to ``console`` (progress only on a tty);
    ``job``: the searches of a user's job (``job_suite_lines``)."""
    from rich.markup import escape  # lazy: rich is only needed once check runs (CLI start-up)

    tty = sys.stdout.isatty()

    def progress(label, done, total):
        console.print(f"\r{escape(label)}: run {done}/{total}", end="")

    def finished(label, r):
        if tty:
            console.print("\r", end="")
        for line in (job_suite_lines if job else suite_lines)(label, r):
            console.print(escape(line))

    return {"progress": progress if tty else None, "finished": finished}
