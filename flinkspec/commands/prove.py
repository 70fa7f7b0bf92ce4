"""``flinkspec prove [--only NAME ...] [--timeout SECONDS] [--corpus DIR | --no-write]``: run the registered z3 checks.

Prints a table (property, scope, result, expected, time) and the details/counterexample of
each check. Every counterexample the model reproduces (a valve trace replayed on the focused
valve machine, a barrier trace replayed on the whole-cluster model) is also written as a
counterexample file (``properties.z3_files``) into a new run directory under results/ (or
``--corpus DIR``; ``--no-write``: nowhere), for ``flinkspec show`` and ``replay``. A trace
whose property has no registered invariant in the model (the valve's ``progress_aligned_min``)
is reported, not written. Exit 0 when every result is the expected one, 1 when any differs
(a property not proved, a mutation not caught, or z3 ``unknown``), 2 on an unknown
``--only`` name.
"""

from __future__ import annotations

import argparse
import json
import sys

from flinkspec.commands.check import output_directory, written_note
from model.errors import FlinkspecError
from spec.proofs import load_all, run_check


class UnknownProof(FlinkspecError):
    """``--only`` names no registered check."""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "prove",
        help="run the z3 proofs (all parameters) and bounded checks; table of results",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("--only", metavar="NAME", action="append",
                   help="run only this check (repeatable; see the table for names)")
    p.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="z3 timeout per solver call (default: none); a timeout reports 'unknown'",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON instead")
    p.add_argument("--corpus", metavar="DIR", default=None,
                   help="write the counterexamples here (default: a new run directory under results/)")
    p.add_argument("--no-write", action="store_true", help="do not write counterexample files")
    p.set_defaults(func=run, seed=None)


def run(args: argparse.Namespace) -> int:
    if args.timeout is not None and not 0 < args.timeout <= 86_400:  # also refuses nan and inf
        raise FlinkspecError(f"--timeout must be > 0 and at most 86400 seconds, got {args.timeout}")
    registry = load_all()
    unknown = [n for n in args.only or () if n not in registry]
    if unknown:
        raise UnknownProof(
            f"unknown proof(s) {', '.join(map(repr, unknown))}; known: {', '.join(registry)}"
        )
    only = list(dict.fromkeys(args.only or ()))  # in the order given, each once
    checks = [registry[n] for n in only] if only else list(registry.values())
    out = output_directory(args, command="prove")  # a bad --corpus is one line before any check
    runs = _run_checks(checks, args.timeout)
    if out is not None:
        from properties.z3_files import write_z3_counterexamples  # lazy: loads the model's engines

        write_z3_counterexamples(runs, out)
    if args.json:
        print(json.dumps([r.to_dict() for r in runs], indent=2))
    else:
        _print_table(runs)
    print(written_note(out, fresh=out is not None and args.corpus is None), file=sys.stderr if args.json else sys.stdout)
    return 0 if all(r.as_expected for r in runs) else 1


def _run_checks(checks, timeout) -> list:
    """Run ``checks`` in order; a progress line on stderr names the check running (every few
    seconds when stderr is not a terminal, ``properties.progress``)."""
    from properties.progress import Reporter  # lazy: flinkspec.cli imports every command module at start-up

    runs = []
    with Reporter("prove") as rep:
        for i, c in enumerate(checks, 1):
            bad = sum(1 for r in runs if not r.as_expected)
            rep.update(f"check {i}/{len(checks)}: {c.name}" + (f" ({bad} unexpected so far)" if bad else ""))
            runs.append(run_check(c, timeout))
    return runs


def _print_table(runs) -> None:
    from rich.console import Console  # lazy: flinkspec.cli imports every command module at start-up
    from rich.table import Table  # lazy: CLI start-up imports every command module

    console = Console(file=sys.stdout, width=max(160, Console().width), highlight=False)
    table = Table(title="flinkspec prove (z3)")
    table.add_column("property", no_wrap=True)
    table.add_column("scope")
    table.add_column("result", no_wrap=True)
    table.add_column("expected", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    for r in runs:
        style = "green" if r.as_expected else "bold red"
        table.add_row(
            r.name, r.scope, f"[{style}]{r.result}[/]", r.expected, f"{r.seconds:.3f}s"
        )
    console.print(table)
    for r in runs:
        mark = "ok " if r.as_expected else "UNEXPECTED "
        console.print(f"{mark}{r.name}: {r.details}", markup=False, soft_wrap=True)
    bad = [r.name for r in runs if not r.as_expected]
    total = sum(r.seconds for r in runs)
    if bad:
        console.print(f"{len(bad)} of {len(runs)} checks unexpected: {', '.join(bad)} "
                      f"({total:.2f}s)", markup=False)
    else:
        console.print(f"all {len(runs)} checks as expected ({total:.2f}s)", markup=False)
