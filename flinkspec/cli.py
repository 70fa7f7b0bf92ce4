"""Entry point of the ``flinkspec`` command.

Each subcommand lives in ``flinkspec/commands/<name>.py`` and exposes
``register(subparsers)`` which adds its parser and sets ``func`` (``args -> exit code``).

Exit codes: 0 everything as expected, 1 an unexpected verdict, 2 usage or input error.
A :class:`model.errors.FlinkspecError` becomes a one-line ``flinkspec: error: ...`` and exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import flinkspec.commands

from model.errors import FlinkspecError

#: Subcommand modules, discovered from the package (``--help`` lists them alphabetically):
#: adding a command is adding its module.
COMMANDS = tuple(sorted(m.name for m in pkgutil.iter_modules(flinkspec.commands.__path__)
                        if not m.name.startswith("_")))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flinkspec",
        description="Verify a Flink-like runtime design against flinkspec's reference model.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"flinkspec.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except FlinkspecError as e:
        print(f"flinkspec: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("flinkspec: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
