"""Entry point of the ``flinkspec`` command.

Each subcommand lives in ``flinkspec/commands/<name>.py`` and exposes
``register(subparsers)`` which adds its parser and sets ``func`` (``args -> exit code``).

Exit codes (``docs/input-validation.md``):

* 0 -- everything as expected;
* 1 -- a verdict: a violation found where none was expected, a counterexample that does not
  reproduce, a suite not as expected;
* 2 -- bad input or usage: a malformed file or argument, a destination that cannot be
  written. One line on stderr, ``flinkspec: error: <file>:<line or field>: <rule>``, long
  values cut to a short prefix;
* 3 -- an internal error of flinkspec (a bug; ``--debug`` shows the traceback);
* 130 -- interrupted (SIGINT or SIGTERM); files being written are left as they were;
* 141 -- stdout was closed early (``flinkspec compile ... | head``): the command stops quietly.

``--debug`` (anywhere on the command line, or ``FLINKSPEC_DEBUG=1``) re-raises every error
with its traceback, for people developing flinkspec.

Long commands print a progress line on stderr (every few seconds when stderr is not a
terminal; ``properties.progress``); stdout never carries it. ``--no-progress`` (anywhere on
the command line, or ``FLINKSPEC_PROGRESS=off``) silences it, also in the processes the
command starts.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import signal
import sys
import threading

import flinkspec.commands

from model.errors import FlinkspecError, shorten_message

#: Subcommand modules, discovered from the package (``--help`` lists them alphabetically):
#: adding a command is adding its module.
COMMANDS = tuple(sorted(m.name for m in pkgutil.iter_modules(flinkspec.commands.__path__)
                        if not m.name.startswith("_")))

EXIT_OK, EXIT_VERDICT, EXIT_USAGE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 3, 130, 141


class UsageError(FlinkspecError):
    """A command line argparse refused (message already names the command)."""


class Interrupted(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like SIGINT's KeyboardInterrupt."""


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error (no usage block) that names the command and points
    at ``--help``; subcommand parsers inherit the class."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        raise UsageError(f"{shorten_message(message)} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="flinkspec",
        description="Verify a Flink-like runtime design against flinkspec's reference model.",
        epilog="Exit codes: 0 ok, 1 a verdict (violation / not reproduced), 2 bad input or usage, "
               "3 internal error, 130 interrupted. See docs/input-validation.md.",
    )
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an error (for developing flinkspec)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress lines on stderr (also FLINKSPEC_PROGRESS=off; by default a line every "
                             "few seconds when stderr is not a terminal)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"flinkspec.commands.{name}").register(sub)
    parser.set_defaults(command_names=tuple(sub.choices))
    return parser


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--debug`` (accepted anywhere before a ``--``), and whether it was there."""
    argv, debug = _split_flag(argv, "--debug")
    return argv, debug or os.environ.get("FLINKSPEC_DEBUG", "") not in ("", "0")


def _split_flag(argv: list[str], flag: str) -> tuple[list[str], bool]:
    """``argv`` without ``flag`` (accepted anywhere before a ``--``), and whether it was there."""
    if "--" in argv:
        i = argv.index("--")
        head, tail = argv[:i], argv[i:]
    else:
        head, tail = argv, []
    return [a for a in head if a != flag] + tail, flag in head


@contextlib.contextmanager
def _progress_off(off: bool):
    """With ``--no-progress``: ``FLINKSPEC_PROGRESS=off`` while the command runs (the reporters
    of ``properties.progress`` and the processes the command starts read it); restored after."""
    if not off:
        yield
        return
    from properties.progress import ENV  # lazy: only with --no-progress

    old = os.environ.get(ENV)
    os.environ[ENV] = "off"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def _error(message: str) -> None:
    try:
        print(f"flinkspec: error: {shorten_message(message)}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed too: nothing left to tell
        pass


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the interpreter's final flush does
    not print 'Exception ignored ... BrokenPipeError'."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a captured stdout has no descriptor
        pass


def _stdout_is_devnull() -> bool:
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError, AttributeError):
        return False


@contextlib.contextmanager
def _sigterm_as_interrupt():
    """SIGTERM raises :class:`Interrupted` in the main thread while the command runs (so
    ``finally`` blocks remove temporary files and stop Spark); the old handler is restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, _frame):
        raise Interrupted(f"signal {signum}")

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


#: set by a command whose last work left a large heap that nobody reads again (``explore``'s
#: search of a million states): the script then ends without the interpreter's teardown, which
#: would free it object by object for many seconds
_EXIT_WITHOUT_TEARDOWN = [False]


def exit_without_teardown() -> None:
    """Ask the ``flinkspec`` script to end without the interpreter's teardown once the command
    returns (its output flushed first). ``main(argv)`` called with arguments (by a program or a
    test) returns as usual."""
    _EXIT_WITHOUT_TEARDOWN[0] = True


def main(argv: list[str] | None = None) -> int:
    script = argv is None
    argv, debug = _split_debug(list(sys.argv[1:] if argv is None else argv))
    argv, no_progress = _split_flag(argv, "--no-progress")
    with _sigterm_as_interrupt(), _progress_off(no_progress):
        try:
            code = _run(argv, debug)
        except KeyboardInterrupt:  # also while the parser was built
            if debug:
                raise
            with contextlib.suppress(OSError, ValueError):
                print("flinkspec: interrupted", file=sys.stderr, flush=True)
            code = EXIT_INTERRUPTED
    if script and _EXIT_WITHOUT_TEARDOWN[0]:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    return code


def _run(argv: list[str], debug: bool) -> int:
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except UsageError as e:
            if debug:
                raise
            _error(str(e))
            return EXIT_USAGE
        except SystemExit as e:  # --help / --version: argparse printed it
            return int(e.code or 0) if not isinstance(e.code, str) else EXIT_USAGE
        if not getattr(args, "func", None):
            _error("a COMMAND is required: " + ", ".join(args.command_names) + " (see `flinkspec --help`)")
            return EXIT_USAGE
        code = args.func(args)
        sys.stdout.flush()
        return int(code or 0)
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE
    except SystemExit as e:  # rich ends a closed pipe with exit(1) after pointing stdout at /dev/null
        if e.code == 1 and _stdout_is_devnull():
            return EXIT_PIPE
        raise
    except KeyboardInterrupt:
        raise
    except FlinkspecError as e:
        if debug:
            raise
        _error(str(e))
        return EXIT_USAGE
    except OSError as e:  # a file system problem not caught closer to the write (disk full, ...)
        if debug:
            raise
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        _error(f"{where}{e.strerror or type(e).__name__}")
        return EXIT_USAGE
    except Exception as e:  # a bug in flinkspec: one line, the traceback only with --debug
        if debug:
            raise
        _error(f"internal error: {type(e).__name__}: {e} -- please report it; "
               f"rerun with --debug for the traceback")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
