"""Progress lines for long commands: on stderr only, never on stdout.

Every long-running command (``check``, ``prove``, ``explore``, ``spark-replay``, ``conform``,
``verify``) reports what it is doing through one :class:`Reporter`, so a run whose stdout is
piped into a file or a CI log is not silent for minutes. What goes to stdout (tables,
summaries, ``--json`` lines) is never touched: tests and scripts parse it, and it stays
deterministic for a given seed. Progress lines carry the elapsed time, so they go to stderr.

Where the lines go depends on stderr:

* not a terminal (a pipe, a file, a CI log): a plain line ``<label>: <status> (<elapsed>)``
  at most every :data:`DEFAULT_INTERVAL` seconds, and only once the first interval has passed
  (a command that ends sooner prints nothing);
* a terminal: one line redrawn in place (``\\r``) at most every :data:`REDRAW_INTERVAL`
  seconds, erased when the reporter closes. A caller that prints to the same terminal while it
  runs (or has its own terminal display) passes ``redraw=False`` and is then silent on a
  terminal.

``FLINKSPEC_PROGRESS`` (read when a reporter is made) changes that: ``0`` / ``off`` / ``no`` /
``false`` silences every reporter; a positive number of seconds sets the interval of the plain
lines (tests use a small one). ``flinkspec --no-progress COMMAND ...`` sets it to ``off`` for
the command and every process it starts.

A *heartbeat* thread re-prints the last status when nothing was printed for an interval, so
a single long step (a z3 call, a Flink job, a Spark stage) still shows the clock moving.

API::

    from properties.progress import Reporter

    with Reporter("prove") as p:                 # the label starts every line
        for i, check in enumerate(checks, 1):
            p.update(f"check {i}/{len(checks)}: {check.name}")   # cheap: printed when due
            run(check)

    # a hot loop: pass a callable (called only when a line is due) or test ``p.due()`` first
    with Reporter("explore", redraw=False) as p:
        while frontier:
            ...
            p.update(lambda: f"depth {depth}, {len(seen):,} states, {transitions:,} transitions")

    p.note("batch of 10 job(s) in 42s")   # a line printed now, whatever the interval
                                          # (not on a silenced reporter); it becomes the status

``Reporter(label, *, interval=None, stream=None, redraw=True, heartbeat=True, enabled=None)``:
``interval`` overrides the plain-line interval (else ``FLINKSPEC_PROGRESS`` or the default);
``stream`` defaults to ``sys.stderr`` as it is when the reporter is made; ``enabled=False``
makes a silent reporter and ``True`` one that prints even when ``FLINKSPEC_PROGRESS`` is off
(a command's explicit ``--progress`` flag). ``update``/``note``/``due``/``close`` may be
called from one thread (the caller's); the heartbeat only re-prints text already rendered.
A reporter made after a ``fork`` works in the child (each process has its own); the
heartbeat thread of the parent is not copied.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, TextIO

__all__ = ["DEFAULT_INTERVAL", "ENV", "REDRAW_INTERVAL", "Reporter", "format_elapsed", "settings"]

#: the environment variable: ``off`` (or ``0``, ``no``, ``false``) silences; a number of
#: seconds sets the interval between plain lines
ENV = "FLINKSPEC_PROGRESS"
#: seconds between two plain lines when stderr is not a terminal
DEFAULT_INTERVAL = 5.0
#: seconds between two redraws of the line on a terminal
REDRAW_INTERVAL = 0.25

_OFF = frozenset({"0", "off", "no", "false", "none"})


def settings(environ=None) -> tuple[bool, float]:
    """(enabled, plain-line interval) from ``FLINKSPEC_PROGRESS`` (``os.environ`` by default).
    A value that is neither an off word nor a positive number is ignored (the defaults)."""
    raw = (os.environ if environ is None else environ).get(ENV, "").strip().lower()
    if not raw:
        return True, DEFAULT_INTERVAL
    if raw in _OFF:
        return False, DEFAULT_INTERVAL
    try:
        seconds = float(raw)
    except ValueError:
        return True, DEFAULT_INTERVAL
    if not 0 < seconds < float("inf"):
        return True, DEFAULT_INTERVAL
    return True, seconds


def format_elapsed(seconds: float) -> str:
    """``7s``, ``3m05s``, ``1h02m``."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or fake stream: treat as a file
        return False


class Reporter:
    """A throttled status line on stderr (see the module docstring for the rules and API)."""

    def __init__(self, label: str, *, interval: float | None = None, stream: TextIO | None = None,
                 redraw: bool = True, heartbeat: bool = True, enabled: bool | None = None):
        env_on, env_interval = settings()
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = _is_terminal(self.stream)
        on = env_on if enabled is None else enabled
        if self.terminal:
            self.mode = "redraw" if on and redraw else "off"
            self.interval = REDRAW_INTERVAL
        else:
            self.mode = "lines" if on else "off"
            self.interval = interval if interval is not None else env_interval
        self.t0 = time.monotonic()
        self._next = self.t0 + self.interval  # nothing before the first interval has passed
        self._status: str | Callable[[], str] | None = None
        self._text: str | None = None  # the last rendered status
        self._drawn = False  # a redrawn line is on the terminal
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._closed = False
        if self.mode != "off" and heartbeat:
            self._thread = threading.Thread(target=self._beat, name=f"flinkspec-progress-{label}", daemon=True)
            self._thread.start()

    # -- the caller's side ---------------------------------------------------------------------

    @property
    def active(self) -> bool:
        """Whether this reporter prints anything."""
        return self.mode != "off"

    def due(self) -> bool:
        """Whether a line would be printed now (a cheap test for hot loops)."""
        return self.mode != "off" and time.monotonic() >= self._next

    def update(self, status: str | Callable[[], str]) -> None:
        """Set the status (text, or a callable giving it, called only when a line is due);
        print it if a line is due."""
        if self.mode == "off":
            return
        self._status = status
        due = time.monotonic() >= self._next
        if isinstance(status, str):
            self._text = status
        elif due or self._text is None:  # rendered when printed, and once at first (for the heartbeat)
            self._text = str(status())
        if due:
            self._emit()

    def note(self, line: str) -> None:
        """Print ``line`` now as a line of its own (it also becomes the status). On a
        terminal the redrawn line is erased first and drawn again at the next update."""
        if self.mode == "off":
            return
        self._status = self._text = line
        with self._lock:
            self._clear_locked()
            self._write(f"{self.label}: {line}\n")
            self._next = time.monotonic() + self.interval

    def close(self) -> None:
        """Stop the heartbeat and erase the redrawn line (plain lines stay). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with self._lock:
            self._clear_locked()

    def __enter__(self) -> "Reporter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- printing ------------------------------------------------------------------------------

    def line(self) -> str:
        """The status line as printed now: ``<label>: <status> (<elapsed>)``."""
        elapsed = format_elapsed(time.monotonic() - self.t0)
        return f"{self.label}: {self._text} ({elapsed})" if self._text else f"{self.label}: {elapsed}"

    def _emit(self) -> None:
        with self._lock:
            if self._closed or time.monotonic() < self._next:  # the other thread printed it just now
                return
            text = self.line()
            if self.mode == "redraw":
                self._write("\r\x1b[K" + text)
                self._drawn = True
            else:
                self._write(text + "\n")
            self._next = time.monotonic() + self.interval

    def _clear_locked(self) -> None:
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed: progress is best effort, the command goes on
            self.mode = "off"

    def _beat(self) -> None:
        # a grace after each deadline: a caller updating often prints the fresh status itself
        grace = min(self.interval / 2, 1.0)
        while not self._stop.wait(max(0.01, self._next + grace - time.monotonic())):
            if time.monotonic() >= self._next + grace:
                self._emit()
