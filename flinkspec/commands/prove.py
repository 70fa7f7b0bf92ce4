"""``flinkspec prove [--only NAME] [--timeout SECONDS]``: run the registered z3 checks.

Prints a table (property, scope, result, expected, time) and the details/counterexample of
each check. Exit 0 when every result is the expected one, 1 when any differs (a property
not proved, a mutation not caught, or z3 ``unknown``), 2 on an unknown ``--only`` name.
"""

from __future__ import annotations

import argparse
import json
import sys

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
    p.add_argument("--only", metavar="NAME", help="run only this check (see the table for names)")
    p.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="z3 timeout per solver call (default: none); a timeout reports 'unknown'",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.timeout is not None and not 0 < args.timeout <= 86_400:  # also refuses nan and inf
        raise FlinkspecError(f"--timeout must be > 0 and at most 86400 seconds, got {args.timeout}")
    registry = load_all()
    if args.only is not None and args.only not in registry:
        raise UnknownProof(
            f"unknown proof {args.only!r}; known: {', '.join(registry)}"
        )
    checks = [registry[args.only]] if args.only else list(registry.values())
    runs = [run_check(c, args.timeout) for c in checks]
    if args.json:
        print(json.dumps([r.to_dict() for r in runs], indent=2))
    else:
        _print_table(runs)
    return 0 if all(r.as_expected for r in runs) else 1


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
