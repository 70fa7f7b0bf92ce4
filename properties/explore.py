"""Bounded exhaustive exploration: every interleaving of a small scenario, breadth first.

From the scenario's initial deployment, every enabled action of every reachable state is
taken (the step contract: ``Cluster.enabled_actions``, ``step``, ``copy``) and states are
deduplicated by ``Run.fingerprint()``: ``Cluster.fingerprint()`` (a canonical hash of the
state; history and, unless the configuration is time-sensitive, the logical clock are left
out) with the summaries of history that the history-reading invariants declare
(``spec.invariant``: which checkpoints triggered since the last disturbance are still open,
whether a source went idle, how many restores there were), so that two runs merged into one
state get the same verdict on every continuation. Every new state is
judged like a random walk's states, through :class:`properties.engines.Run`: every registered
*always* invariant of the run after the step that reached it, and, when the state is drained
(``Cluster.is_drained``), every *eventually* invariant.

The search is level-synchronous: depth ``d`` is finished before depth ``d + 1`` starts, and of
the traces that reach one state at one depth the one kept is the smallest (its actions'
reprs compared as a list). So the states, the counts and the counterexample do not depend
on the order in which a level was expanded -- locally or split over workers.

Verdicts:

* ``violation`` -- the violating state of smallest trace at the smallest depth: no shorter
  counterexample exists (every shallower state was judged);
* ``verified``  -- the whole reachable state space was explored and judged;
* ``bounded``   -- a limit (``max_depth``, ``max_states``, ``max_seconds``, ``max_memory``) or a
  stop request (a signal, :class:`StopRequest`) stopped the search first: the result names it
  and says what was covered.

Memory: a frontier state is kept as its run while the process's resident memory is below half
of ``Limits.max_memory`` (``Limits.frontier``: or always as a run, or always as a trace); above
it, new states are kept as their traces only (a few hundred
bytes each instead of the run's tens of kilobytes) and rebuilt when expanded
(:class:`Rebuilder`: the frontier is expanded in trace order, so it keeps the runs of the last
rebuilt state's ancestors and steps each ancestor once). The states, counts and counterexample
do not depend on which states were kept how. When the resident memory passes the limit itself
the search ends, ``bounded`` by ``max_memory``.

Spilling (``properties.explore_spill``, as TLC's disk-based fingerprint set and state queue):
past ``Limits.spill_memory`` (default a quarter of ``max_memory``; ``Limits.spill=False``: never)
the set of fingerprints seen, the level being built and the frontier go to files in a folder
made for the search (under ``Limits.spill_dir``), removed when it ends, however it ends. The
seen set keeps a set in memory up to half the budget, then writes it out as a sorted run of
16-byte fingerprints; a child not in the set in memory is kept as a *candidate*, and at the end
of its level the candidates, in fingerprint order, are looked up in the runs by one forward
pass over each (``_settle``): those found are dropped as if they had been found in memory. The
level being built (its states kept as traces) is written in fingerprint order past the other
half of the budget and merged back at the level's end by the one rule (``merged``); the next
frontier, once larger than the budget, is written in sorted chunks of trace keys and read back
merged, in key order, as the next level is expanded. So every state is judged when a step
reaches it, as before; the states, counts, depths and counterexample do not depend on what was
spilled (nor on the workers: a worker's copy of the seen set follows the set in memory, and the
driver drops the candidates found on disk). Past ``Limits.max_disk``, or on a full disk, the
search ends ``bounded`` (``max_disk=...``, ``disk full (...)``). The frontier of a search on
worker processes stays with the workers (its states are theirs), and one kept as runs
(``frontier="runs"``) stays in memory; a checkpoint holds the fingerprints on disk too.
Measured (``flinkspec bench spill``, docs/exploration.md): unaligned-savepoints-2pc ``--small``
under ``max_memory`` 290M, where the search in memory ends ``bounded`` at 172,555 states, verifies
its 241,661 states with the same figures, 1.17 times the CPU time of the search in memory.

Resuming: ``checkpoint`` (a :class:`SearchCheckpoint`) writes, at the end of a level and at
most every ``every`` seconds, and when a limit or a stop request ends the search, what the
search needs to go on -- the fingerprints seen, the frontier's traces and sleep sets, the
counts -- atomically into one file; ``resume`` reads it back, and the search continues to the
states, counts and verdict of a search that was never interrupted (only the seconds differ).

The space is finite because every environment action has a budget in the scenario's
environment: failures (``Environment.max_failures``), checkpoints and savepoints
(``Environment.max_checkpoints``); records, splits and watermarks are finite.

Reductions (:func:`expand`): sleep sets over ``ActionKind.footprint``, and one action of
several with one outcome (``ActionKind.outcome``, :func:`to_take`): the same states at the
same depths, fewer transitions. A level is expanded by ``LocalLevels`` (this process), by
``properties.explore_workers.ProcessLevels`` (K forked processes) or by
``spark.explore.SparkLevels`` (Spark executors); all three give the same result.

Left out: symmetry reduction (the small scenarios have no symmetry: see docs/exploration.md);
the *eventually* invariants are judged on drained states, and :func:`check_progress` checks
that every reachable state can still drain.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import heapq
import os
import pickle
import time
import zlib
from pathlib import Path
from typing import Callable

import attrs

from model import actions as A
from model.cluster import Cluster, drain_choice
from model.errors import FlinkspecError
from model.variants import Scenario, Variant, small_scenario
from properties.engines import Run
from properties.explore_spill import (
    BLOCK, MAX_FILES, SeenSet, Spill, SpilledFrontier, SpillLimit, merge_files, read_records, write_records)
from properties.safe_io import write_atomic


@attrs.frozen(slots=True, kw_only=True)
class Limits:
    """When to stop: the deepest level to expand, the most distinct states, the wall time, the
    process's resident memory in bytes (see the module docstring); how the frontier keeps
    its states: ``"auto"`` (as runs while the resident memory is below half of ``max_memory``,
    then as traces), ``"runs"`` or ``"traces"`` (always so: a trace costs a few hundred bytes and
    a rebuild, a run tens of kilobytes); and when and where the search spills to disk, and how
    much it may write there (the module docstring, "Spilling")."""

    max_depth: int | None = None
    max_states: int | None = None
    max_seconds: float | None = None
    max_memory: int | None = None
    frontier: str = attrs.field(default="auto", validator=attrs.validators.in_(("auto", "runs", "traces")))
    #: bytes the seen set in memory and the level being built may take (half each) before they
    #: are written to disk (``properties.explore_spill``); None: a quarter of ``max_memory``
    spill_memory: int | None = None
    #: False: nothing is written to disk (past ``max_memory`` the search ends ``bounded``)
    spill: bool = True
    #: the folder in which the search's spill folder is made (None: the system's temporary folder)
    spill_dir: str | None = None
    #: bytes the spill files may hold; past it the search ends ``bounded`` (``max_disk=...``)
    max_disk: int | None = None

    def spill_budget(self) -> int | None:
        """The memory budget of the spill (``spill_memory``), None when the search does not spill."""
        if not self.spill:
            return None
        if self.spill_memory is not None:
            return self.spill_memory
        return None if self.max_memory is None else self.max_memory // 4


def default_max_memory() -> int:
    """Half of the machine's physical memory (the search's default ``max_memory``)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):  # not a POSIX system that tells it
        return 4 << 30


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """This process's resident memory (Linux ``/proc/self/statm``; elsewhere the peak, from
    ``getrusage``)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except OSError:
        import resource  # not Linux: only then

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class StopRequest:
    """A request to end a search early, set by a signal handler (``request("SIGTERM")``): the
    search ends at the next state it expands, ``bounded``, its limit the reason given."""

    __slots__ = ("reason",)

    def __init__(self):
        self.reason: str | None = None

    def request(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason


#: how often (seconds) a level expander reads the resident memory
MEMORY_EVERY = 0.25


class Watch:
    """What ends a level early, checked after each state a level expander expands: the
    deadline, a :class:`StopRequest`, the memory limit. ``compact`` tells the expander to keep
    new states as traces only (the resident memory passed half of ``max_memory``). A worker
    process gets a copy (``share``: its part of the memory limit); a stop request reaches it
    as a message."""

    def __init__(self, deadline: float | None = None, max_memory: int | None = None,
                 stop: StopRequest | None = None, max_seconds: float | None = None, frontier: str = "auto"):
        self.deadline = deadline
        self.max_memory = max_memory
        self.max_seconds = max_seconds
        self.stop = stop if stop is not None else StopRequest()
        self.frontier = frontier
        self.compact = frontier == "traces"
        self._next_memory = 0.0
        #: the memory limit as the search reports it (a worker's share reports the whole limit)
        self.memory_limit = None if max_memory is None else f"max_memory={format_bytes(max_memory)}"

    def share(self, workers: int) -> "Watch":
        w = Watch(self.deadline, None if self.max_memory is None else self.max_memory // (workers + 1),
                  None, self.max_seconds, self.frontier)
        w.compact = self.compact
        w.memory_limit = self.memory_limit
        return w

    def check(self) -> str | None:
        """The limit that ends the level now, else None."""
        if self.stop.reason is not None:
            return self.stop.reason
        now = time.perf_counter()
        if self.deadline is not None and now > self.deadline:
            return f"max_seconds={self.max_seconds:g}" if self.max_seconds is not None else "max_seconds"
        if self.max_memory is not None and now >= self._next_memory:
            self._next_memory = now + MEMORY_EVERY
            rss = resident_bytes()
            if rss > self.max_memory:
                return self.memory_limit
            if rss > self.max_memory // 2 and self.frontier == "auto":
                self.compact = True
        return None


def format_bytes(n: int) -> str:
    """``4G``, ``512M``, ``1536K`` or bytes: the largest unit that gives a whole number."""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def parse_bytes(text: str) -> int:
    """``4G``, ``512M``, ``100K`` or a number of bytes; a clear error for anything else."""
    t = text.strip().upper().removesuffix("B")
    shift = {"K": 10, "M": 20, "G": 30, "T": 40}.get(t[-1:], 0)
    number = t[:-1] if shift else t
    try:
        value = float(number)
    except ValueError:
        raise FlinkspecError(f"not a memory size: {text!r} (say e.g. 4G, 512M or a number of bytes)") from None
    if not value > 0 or value == float("inf"):
        raise FlinkspecError(f"a memory size must be positive, not {text!r}")
    return int(value * (1 << shift))


@attrs.frozen(slots=True, kw_only=True)
class Progress:
    """What a progress display shows, after each level and every few hundred states."""

    depth: int
    distinct_states: int
    transitions: int
    frontier: int
    seconds: float


@attrs.frozen(slots=True, kw_only=True)
class Exploration:
    """The result of one search. ``trace`` (the counterexample's actions) and ``violation``
    are set iff ``verdict == "violation"``; ``limit`` names the limit that stopped a bounded
    search."""

    verdict: str
    distinct_states: int
    transitions: int
    depth: int
    complete: bool
    seconds: float
    drained_states: int
    trace: tuple = ()
    violation: object = None
    limit: str | None = None
    #: how many processes expanded the levels, and whether sleep sets pruned transitions
    workers: int = 1
    reduced: bool = False
    #: the most bytes the search's spill files held at once (0: nothing was written to disk)
    spilled_bytes: int = 0

    @property
    def decided_after(self) -> int | None:
        """For a counterexample that ends with the drain policy's steps (a run whose history
        already decided an eventually invariant, ``Run.doomed``): the length of its searched
        prefix -- no shorter prefix decides a violation -- else None (the whole trace is a
        shortest one)."""
        if self.verdict != "violation" or len(self.trace) <= self.depth:
            return None
        return self.depth

    @property
    def states_per_s(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0


def _key(trace: tuple) -> tuple:
    return tuple(repr(a) for a in trace)


def _independent(fa, fb) -> bool:
    return fa is not None and fb is not None and fa.isdisjoint(fb)


#: the action classes whose kind may give two actions one outcome (``ActionKind.outcome``)
_OUTCOME_KINDS = frozenset(cls for cls, kind in A.KINDS.items()
                           if type(kind).outcome is not A.ActionKind.outcome)


def to_take(c: Cluster, acts: list, sleep: frozenset, reduce: bool) -> list:
    """The enabled actions ``acts`` of ``c`` that a search takes: those not in ``sleep``; with
    ``reduce``, of several actions with one outcome (``ActionKind.outcome``, compared across
    kinds: they reach one state, judged alike) only the first."""
    if not reduce:
        return [a for a in acts if a not in sleep] if sleep else list(acts)
    out = []
    outcomes = set()
    for a in acts:
        if a in sleep:
            continue
        cls = type(a)
        if cls in _OUTCOME_KINDS:
            key = c.outcome(a)
            if key is not None:
                if key in outcomes:
                    continue
                outcomes.add(key)
        out.append(a)
    return out


def expand(run: Run, trace: tuple = (), sleep: frozenset = frozenset(), reduce: bool = False,
           consume: bool = False, actions: list | None = None):
    """The successors of ``run``'s state: ``(action, child_run, violation, child_sleep)`` for
    each enabled action not in ``sleep``, in ``enabled_actions`` order. ``child_run`` judges a
    copy; ``violation`` is the first *always* invariant the step broke, else (a drained child)
    the first *eventually* invariant, else None. With ``consume`` the last successor is
    ``run`` itself, stepped (one copy fewer per state; the caller no longer needs ``run``).

    With ``reduce`` (sleep sets, Godefroid 1996): the child reached by ``a`` sleeps on every
    action of ``sleep`` and every action taken before ``a`` here that is independent of ``a``
    (disjoint ``ActionKind.footprint``): that interleaving is reached through the other order
    at the same depth. Without it every child's sleep set is empty. Also with ``reduce``, of
    several actions with one outcome only the first is taken (``to_take``): the others reach
    the same child at the same depth. ``actions``: the state's ``enabled_actions()``, when the
    caller has them already."""
    c = run.cluster
    acts = run.enabled_actions() if actions is None else actions  # the kinds the scenario offers
    taken = to_take(c, acts, sleep, reduce)
    reduce = reduce and not c.config.time_sensitive
    if reduce:
        fp = {a: c.footprint(a) for a in acts}
    if consume and not taken:
        run.dispose()  # nothing to take: the caller no longer needs it
        return []
    out = []
    done: list = []
    last = taken[-1] if consume and taken else None
    for a in taken:
        child = run if a is last else run.fork()
        v = child.step(a)
        if v is None:
            if child.cluster.is_drained():
                v = child.finish()
            elif child.doomed():
                child, v = _drain_doomed(child)
        child_sleep = frozenset()
        if reduce:
            fa = fp[a]
            if fa is not None:
                child_sleep = frozenset(b for b in (*sleep, *done) if b in fp and _independent(fa, fp[b]))
            done.append(a)
        out.append((a, child, v, child_sleep))
    return out


def _drain_doomed(run: Run):
    """A run whose history already decides an *eventually* invariant (``Run.doomed``): drained
    by the drain policy, on a copy. Returns ``(the drained copy, its violation)`` -- the copy's
    trace is the counterexample -- or ``(run, None)`` when the drain ended without one (it
    took a disturbing step), and the search goes on from ``run``."""
    d = run.fork()
    v = d.finish()
    if v is None:
        d.dispose()
        return run, None
    run.dispose()
    return d, v


def replay_trace(scenario: Scenario, trace: tuple) -> Run:
    """The run that ``trace`` reaches from the scenario, for a search that rebuilds a frontier
    state instead of keeping it (Spark's executors, a state moved between worker processes).
    The invariants are not judged again on the way: the levels before judged every prefix."""
    run = Run(scenario, check_always=False, track_goals=False)
    for a in trace:
        run.step(a)
    run.check_always = True
    return run


def violation_trace(trace: tuple, child: Run) -> tuple:
    """The counterexample of a violation met at ``child``, reached by ``trace``: the trace
    itself, or, for a doomed run drained at once (``_drain_doomed``), the trace and the drain's
    steps after it."""
    return trace + tuple(child.cluster.trace[len(trace):])


@attrs.define(slots=True)
class Level:
    """What expanding one level gave: the new states (fingerprint -> smallest trace key, that
    trace, the state's run -- or where a worker process holds it, ``explore_workers.Held``, or
    None: kept as its trace only --, its sleep set, whether it is drained), the violating
    transitions (key, trace, violation), how many transitions were taken, and the limit that
    stopped the expansion (``Watch.check``), if one did."""

    states: dict = attrs.field(factory=dict)
    violations: list = attrs.field(factory=list)
    transitions: int = 0
    stopped: str | None = None
    #: with a spill (``explore_spill.Spill``): the files the states were written to (``flush``),
    #: in fingerprint order each, and how many records they hold
    spill: object = None
    files: list = attrs.field(factory=list)
    spilled: int = 0

    def add(self, fp: str, key: tuple, trace: tuple, run, sleep: frozenset, drained: bool) -> None:
        """A state reached at this level: the smallest trace represents it (the other's run, if
        this process holds it, is disposed); a state reached by several traces sleeps only on
        what every one of them sleeps on."""
        have = self.states.get(fp)
        if have is None:
            self.states[fp] = (key, trace, run, sleep, drained)
        elif key < have[0]:
            _drop(have[2])
            self.states[fp] = (key, trace, run, sleep & have[3], drained)
        else:
            _drop(run)
            self.states[fp] = have[:3] + (have[3] & sleep, have[4])

    def drop(self) -> None:
        """Dispose of the runs this level holds (a search that ends with it), and remove its files."""
        for entry in self.states.values():
            _drop(entry[2])
        self.remove_files()

    def remove_files(self) -> None:
        for path, size in self.files:
            self.spill.remove(path, size)
        self.files = []

    def full(self) -> bool:
        """Whether the states in memory are more than the spill's budget (then :meth:`flush`)."""
        return self.spill is not None and len(self.states) > self.spill.level_budget

    def flush(self) -> None:
        """Write the states in memory to a file, in fingerprint order, as their traces (their
        runs disposed: rebuilt when expanded), and forget them; :func:`merged` reads them back."""
        states = self.states

        def records():
            for fp in sorted(states):
                key, trace, _run, sleep, drained = states[fp]
                yield fp, key, trace, sleep, drained

        self.files.append(write_records(self.spill, "level", records()))  # (past the disk bound: kept as it was)
        for entry in states.values():
            _drop(entry[2])
        self.spilled += len(states)
        self.states = {}
        if len(self.files) > MAX_FILES:  # one file of them, each state once
            self.files = [merge_files(self.spill, "level", self.files, _first, lambda stream: (
                (fp, k, t, z, d) for fp, k, t, _r, z, d in _grouped((r[0], r[1], r[2], None, r[3], r[4])
                                                                     for r in stream)))]

    def size(self) -> int:
        """The states this level reached so far (a state written to a file and reached again
        counts twice: for progress only)."""
        return len(self.states) + self.spilled


def merged(level: Level):
    """The new states of ``level``, each once, in fingerprint order: its files and its states in
    memory merged, of the records of one state the smallest key keeping it, the sleep sets
    intersected (``Level.add``'s rule). Yields ``(fp, key, trace, run, sleep, drained)``."""
    sources = [((fp, k, t, None, z, d) for fp, k, t, z, d in read_records(path)) for path, _b in level.files]
    states = level.states
    sources.append((fp, *states[fp]) for fp in sorted(states))
    return _grouped(heapq.merge(*sources, key=lambda r: r[0]) if len(sources) > 1 else sources[0])


def _first(record):
    return record[0]


def _grouped(stream):
    have = None
    for r in stream:
        if have is None:
            have = r
        elif r[0] != have[0]:
            yield have
            have = r
        elif r[1] < have[1]:
            _drop(have[3])
            have = r[:4] + (r[4] & have[4], r[5])
        else:
            _drop(r[3])
            have = have[:4] + (have[4] & r[4], have[5])
    if have is not None:
        yield have


def _drop(run) -> None:
    """Dispose of ``run`` if it is a run this process holds (not a worker's ``Held``, or None)."""
    if type(run) is Run:
        run.dispose()


class Rebuilder:
    """Rebuilds the runs of frontier states kept as traces only, expanded in trace order. It
    keeps the runs of the last rebuilt state's ancestors (one per depth), so that the next
    state -- a sibling, or a cousin sharing a longer or shorter prefix -- costs one step per
    action below the prefix the two share: over a level, each ancestor is stepped once.
    The invariants are not judged on the way (the levels before judged every prefix); the
    rebuilt run judges its children as the kept run would have."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.trace: tuple = ()
        self.runs: list = []  # runs[i]: the run of trace[:i]

    def run_of(self, trace: tuple) -> Run:
        """A new run of the state ``trace`` reaches (the caller owns it)."""
        if not self.runs:
            self.runs.append(Run(self.scenario, check_always=False, track_goals=False))
        if not trace:
            run = self.runs[0].fork()
        else:
            parent = len(trace) - 1
            k = 0
            limit = min(parent, len(self.runs) - 1)
            mine = self.trace
            while k < limit and (mine[k] is trace[k] or mine[k] == trace[k]):
                k += 1
            for r in self.runs[k + 1:]:
                r.dispose()
            del self.runs[k + 1:]
            for i in range(k, parent):
                child = self.runs[i].fork()
                child.step(trace[i])
                self.runs.append(child)
            self.trace = trace[:parent]
            run = self.runs[parent].fork()
            run.step(trace[parent])
        run.check_always = True
        return run

    def close(self) -> None:
        """Dispose of the runs kept."""
        for r in self.runs:
            r.dispose()
        self.runs, self.trace = [], ()


class LocalLevels:
    """Expands a level in this process (the frontier's states are kept as runs, or as their
    traces when memory runs short: ``Watch.compact``)."""

    workers = 1

    def __init__(self, scenario: Scenario, reduce: bool, inspect: Callable[[Run], None] | None = None):
        self.scenario = scenario
        self.reduce = reduce
        #: called with each frontier state's run before it is expanded (``explore(inspect=...)``)
        self.inspect = inspect

    def expand(self, frontier: list, seen: set, watch: Watch, report) -> Level:
        """The frontier is sorted by trace key and its traces are of one length, so every child
        of a frontier state has a smaller key than every child of a later one: once a state's
        children hold a violation, the level's smallest violating trace is among them. The later
        states' transitions are then counted (the level's transitions, as a search that takes
        them all reports) but not taken, and no child of the level is fingerprinted any more
        (the search ends with this level)."""
        # with a spill, the level being built is written to disk past its budget once its
        # states are kept as traces (not with a frontier of runs: a run is not written)
        level = Level(spill=seen.spill if watch.frontier != "runs" else None)
        rebuild = Rebuilder(self.scenario)
        try:
            self._expand(frontier, seen, watch, report, level, rebuild)
        except SpillLimit as e:  # the level cannot be written: the search ends as at a limit
            level.stopped = e.reason
        finally:
            rebuild.close()
        return level

    def _expand(self, frontier, seen, watch, report, level, rebuild) -> None:
        # a child's key is its parent's rank in the frontier and its action's repr: the
        # frontier is sorted by trace key, so these order the children as their whole traces'
        # keys would (``_key``), without the repr of every action of every trace
        for rank, (trace, run, sleep) in enumerate(frontier):
            if run is None:
                run = rebuild.run_of(trace)
            else:
                frontier[rank] = (trace, None, sleep)  # the run is consumed here (its trace stays)
            if self.inspect is not None:
                self.inspect(run)
            if level.violations:
                level.transitions += len(to_take(run.cluster, run.enabled_actions(), sleep, self.reduce))
                run.dispose()
                continue
            for a, child, v, child_sleep in expand(run, trace, sleep, self.reduce, consume=True):
                level.transitions += 1
                if v is not None:
                    level.violations.append(((rank, repr(a)), violation_trace(trace + (a,), child), v))
                    child.dispose()  # only the trace is kept
                    continue
                if level.violations:
                    child.dispose()
                    continue
                fp = child.fingerprint()
                if fp in seen:
                    child.dispose()  # freed now
                    continue
                drained = child.cluster.is_drained()
                if watch.compact:
                    child.dispose()  # kept as its trace: rebuilt when expanded
                    child = None
                level.add(fp, (rank, repr(a)), trace + (a,), child, child_sleep, drained)
            if level.full() and watch.compact:
                level.flush()
            report(level.size(), level.transitions)
            level.stopped = watch.check()
            if level.stopped is not None:
                break


@contextlib.contextmanager
def _without_cyclic_gc():
    """The search runs with the cyclic garbage collector switched off. Each transition
    allocates a copy of the state's object graph (a few hundred objects), and a collection
    walks every object allocated since the last one that is still alive -- every state kept
    for the next level, once or twice: with the collector on, a quarter to a third of a large
    search's CPU went to it (``flinkspec bench explore``). Nothing the search drops needs the collector:
    a state holds no reference cycle (a task's valve, barrier handler and source reader are
    handed the task per call, never hold it), so reference counting frees every copy the
    search drops (tests/test_explore.py checks that a search leaves no cyclic garbage). What is
    alive before the search (modules, the scenario, the caller's data) is frozen out of the
    collections until it ends; garbage is collected first, or a previous search's cyclic
    garbage would be frozen with it and kept through this one. A caller that switched the
    collector off already manages it: nothing is collected or frozen then."""
    if not gc.isenabled():
        yield
        return
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        if _LEFT_TO_THE_CALLER:  # a search's runs left for a process about to exit: frozen with
            gc.freeze()          # the rest, or the next full collection would walk every one
        else:
            gc.unfreeze()
        gc.enable()


#: what searches with ``release=False`` left (see ``explore``)
_LEFT_TO_THE_CALLER: list = []


@attrs.frozen(slots=True, kw_only=True)
class SearchCheckpoint:
    """Where a search writes what it needs to be resumed (one file, written atomically), and
    how often: at the end of a level when ``every`` seconds passed since the last write, and
    when a limit or a stop request ends the search."""

    path: Path
    every: float = 60.0


#: the checkpoint file's format (a file of another format is refused, not misread); format 1
#: (the fingerprints as a list of hex strings) is still read
CHECKPOINT_FORMAT = "flinkspec-explore-checkpoint/2"
_READ_FORMATS = ("flinkspec-explore-checkpoint/1", CHECKPOINT_FORMAT)


def scenario_digest(scenario: Scenario, reduce: bool) -> str:
    """What a checkpoint must have been written for: the scenario (its graph, input, runtime
    configuration and seed, as its repr says) and the reduction."""
    return hashlib.blake2b(f"{scenario!r}|reduce={reduce}".encode(), digest_size=16).hexdigest()


def write_checkpoint(cp: SearchCheckpoint, scenario: Scenario, reduce: bool, *, depth: int, transitions: int,
                     drained: int, seconds: float, seen, frontier) -> None:
    """Write the search's state at a level boundary (``frontier``: ``(trace, run, sleep)``, the
    runs left out; ``seen``: a :class:`SeenSet`, its fingerprints on disk as well, 16 bytes
    each) atomically to ``cp.path``."""
    body = {"format": CHECKPOINT_FORMAT, "scenario": scenario_digest(scenario, reduce), "depth": depth,
            "transitions": transitions, "drained": drained, "seconds": seconds,
            "seen": b"".join(seen.digests()), "frontier": [(t, z) for t, _r, z in frontier]}
    write_atomic(cp.path, zlib.compress(pickle.dumps(body, protocol=pickle.HIGHEST_PROTOCOL), 3),
                 what="search checkpoint")


def read_checkpoint(path: Path, scenario: Scenario, reduce: bool) -> dict:
    """The search state a checkpoint file holds, checked to belong to ``scenario`` (one clear
    error otherwise); its ``seen`` as hex fingerprints."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise FlinkspecError(f"cannot read the search checkpoint {path}: {e.strerror or e}") from None
    try:
        body = pickle.loads(zlib.decompress(data))
    except Exception:  # noqa: BLE001 -- any damage to the file is one clear error
        raise FlinkspecError(f"{path}: not a flinkspec search checkpoint (damaged or another kind of file)") from None
    if not isinstance(body, dict) or body.get("format") not in _READ_FORMATS:
        raise FlinkspecError(f"{path}: not a flinkspec search checkpoint of format {CHECKPOINT_FORMAT}")
    if body.get("scenario") != scenario_digest(scenario, reduce):
        raise FlinkspecError(f"{path}: the checkpoint was written by the search of another scenario "
                             "(another variant, job, seed, budget or --no-reduce): resume it with the same arguments")
    if isinstance(body["seen"], bytes):
        raw = body["seen"]
        body["seen"] = (raw[i:i + 16].hex() for i in range(0, len(raw), 16))
    return body


def explore(scenario: Scenario, limits: Limits = Limits(), *,
            progress: Callable[[Progress], None] | None = None, reduce: bool = True,
            levels=None, stop: StopRequest | None = None, checkpoint: SearchCheckpoint | None = None,
            resume: Path | None = None, inspect: Callable[[Run], None] | None = None,
            release: bool = True) -> Exploration:
    """Breadth-first search over every interleaving of ``scenario`` (see the module docstring).
    ``reduce``: sleep-set partial-order reduction (same states, same depths, fewer
    transitions); ``levels``: what expands a level (default :class:`LocalLevels`; the process
    search passes ``properties.explore_workers.ProcessLevels``, the Spark search
    ``spark.explore.SparkLevels``); ``stop``: set by a signal handler to end the search
    (``bounded``, the reason as its limit); ``checkpoint``: write the search's state to resume it
    (the search in this process only: the other expanders keep the traces where the states
    are); ``resume``: a checkpoint file to go on from; ``inspect``: called with the run of each
    state before it is expanded, in this process (``properties.contract``: the step contract at
    every reachable state), or it raises; ``release=False``: the runs held when the search ends
    are left to the caller, not disposed of one by one: a process about to exit (after a bounded
    search of a million states, disposing takes many seconds) keeps them referenced and ends
    without the interpreter's teardown. With a spill budget (``Limits.spill_budget``) the seen
    set and the frontier go to disk past it (``properties.explore_spill``); the files are
    removed when the search ends, however it ends."""
    live: dict = {}
    if inspect is not None:
        if levels is not None:
            raise FlinkspecError("inspect= runs in this process: it goes without levels=")
        levels = LocalLevels(scenario, reduce, inspect)
    if checkpoint is not None and levels is not None and not isinstance(levels, LocalLevels):
        raise FlinkspecError("a search checkpoint is written by the search in one process (not with worker processes "
                             "or Spark); such a search can resume from one")
    budget = limits.spill_budget()
    spill = None
    if budget is not None:
        spill = Spill(budget, limits.spill_dir, limits.max_disk,
                      None if limits.max_disk is None else f"max_disk={format_bytes(limits.max_disk)}")
    with _without_cyclic_gc():
        try:
            return _explore(scenario, limits, progress, reduce, levels, live, stop, checkpoint, resume, spill)
        finally:  # the runs still held when the search ended (it stopped early) are disposed of
            if not release:  # kept referenced: dropped here, they would be freed one by one
                _LEFT_TO_THE_CALLER.append(live.copy())
                live.clear()
            if isinstance(live.get("frontier"), list):  # (a frontier on disk holds no run)
                for _t, run, _z in live["frontier"]:
                    _drop(run)
            if live.get("level") is not None:
                live["level"].drop()
            if spill is not None:  # every file of the search, wherever it ended
                spill.close()


def _settle(level: Level, seen: SeenSet, keep: bool, traces: bool):
    """The end of a level: its new states -- each once, those already seen at an earlier level
    (on disk: ``fp in seen`` asked the set in memory only) dropped -- added to ``seen`` and, in
    trace-key order, made the next frontier: ``(frontier, new states, drained states)``. With
    ``keep`` False only counted. With ``traces`` (the frontier may be kept as traces) a frontier
    larger than the spill's budget is written to disk (``SpilledFrontier``)."""
    spill = seen.spill
    if spill is None or (not level.files and not seen.runs and len(level.states) <= spill.level_budget):
        new, drained = len(level.states), sum(1 for e in level.states.values() if e[4])
        if not keep:
            return None, new, drained
        seen.update(level.states)
        seen.settle()
        return [(t, r, z) for (_k, t, r, z, _d) in sorted(level.states.values(), key=lambda x: x[0])], new, drained
    lookup = seen.lookup()
    adder = seen.adder() if keep else None
    chunks: list = []
    buf: list = []
    new = drained = 0
    stream = merged(level)
    level.states = {}  # (the runs are in the stream now)
    size = min(BLOCK, spill.level_budget)  # (the candidates looked up at a time)
    try:
        batch: list = []
        for r in stream:
            batch.append(r)
            if len(batch) == size:
                new, drained = _settle_batch(batch, lookup, adder, buf, chunks, spill, traces, new, drained)
                batch = []
        if batch:
            new, drained = _settle_batch(batch, lookup, adder, buf, chunks, spill, traces, new, drained)
    finally:
        lookup.close()
    level.remove_files()
    if not keep:
        return None, new, drained
    adder.close()
    seen.settle()
    if not chunks:
        buf.sort(key=lambda x: x[0])
        return [(t, r, z) for _k, t, r, z in buf], new, drained
    chunks.append(_chunk(spill, buf))
    return SpilledFrontier(spill, chunks, new), new, drained


def _settle_batch(batch, lookup, adder, buf, chunks, spill, traces, new, drained):
    """A batch of ``_settle``'s stream (in fingerprint order): those found on disk dropped, the
    others counted and, unless only counted, added to the seen set and the next frontier."""
    digests = [bytes.fromhex(r[0]) for r in batch]
    known = lookup.known(digests) if lookup.cursors else ()
    for d, (fp, key, trace, run, sleep, is_drained) in zip(digests, batch):
        if known and d in known:
            _drop(run)
            continue
        new += 1
        drained += is_drained
        if adder is None:
            _drop(run)
            continue
        adder.add(fp)
        buf.append((key, trace, run, sleep))
        if traces and len(buf) > spill.level_budget:
            chunks.append(_chunk(spill, buf))
            buf.clear()
            if len(chunks) > MAX_FILES:
                chunks[:] = [merge_files(spill, "frontier", chunks, _first)]
    return new, drained


def _chunk(spill: Spill, buf: list) -> tuple:
    """``buf``'s states written to the frontier's next chunk in key order, their runs disposed."""
    buf.sort(key=lambda x: x[0])
    for e in buf:
        _drop(e[2])
    return write_records(spill, "frontier", ((k, t, z) for k, t, _r, z in buf))


def _explore(scenario, limits, progress, reduce, levels, live: dict, stop, checkpoint, resume, spill) -> Exploration:
    """The search; ``live`` is kept holding the frontier and the level being expanded (what
    the caller disposes of when it ends)."""
    t0 = time.perf_counter()
    levels = levels if levels is not None else LocalLevels(scenario, reduce)
    deadline = t0 + limits.max_seconds if limits.max_seconds is not None else None
    watch = Watch(deadline, limits.max_memory, stop, limits.max_seconds, limits.frontier)
    # the frontier may be written to disk as traces (not when asked for runs, nor when worker
    # processes hold its states)
    traces = limits.frontier != "runs" and not getattr(levels, "holds_states", False)
    before = 0.0  # seconds spent before a resume
    if resume is not None:
        body = read_checkpoint(resume, scenario, reduce)
        seen = SeenSet((), spill)
        frontier = [(t, None, z) for t, z in body["frontier"]]
        transitions, drained, depth, before = body["transitions"], body["drained"], body["depth"], body["seconds"]
        try:
            adder = seen.adder()  # (the checkpoint's fingerprints are sorted)
            for fp in body["seen"]:
                adder.add(fp)
            adder.close()
            del body
            if spill is not None and traces and len(frontier) > spill.level_budget:  # (in key order: its index)
                n = len(frontier)
                frontier = SpilledFrontier(spill, [write_records(spill, "frontier", (
                    (i, t, z) for i, (t, _r, z) in enumerate(frontier)))], n)
        except SpillLimit as e:
            raise FlinkspecError(f"{resume}: the checkpoint's search does not fit the spill's disk ({e.reason}): "
                                 "resume it with more --max-disk or --spill-memory") from None
    else:
        root = Run(scenario, track_goals=False)
        if root.violation is not None:
            return Exploration(verdict="violation", distinct_states=1, transitions=0, depth=0, complete=False,
                               seconds=time.perf_counter() - t0, drained_states=0, trace=(),
                               violation=root.violation, workers=levels.workers, reduced=reduce)
        seen = SeenSet({root.fingerprint()}, spill)
        frontier = [((), root, frozenset())]
        transitions = 0
        drained = 1 if root.cluster.is_drained() else 0
        depth = 0
    live["frontier"] = frontier
    next_report = [500]
    written = [time.perf_counter()]

    def elapsed() -> float:
        return before + time.perf_counter() - t0

    def save() -> None:
        """The state at this level boundary (``seen``, ``frontier``, the counts), if asked for."""
        if checkpoint is not None:
            write_checkpoint(checkpoint, scenario, reduce, depth=depth, transitions=transitions, drained=drained,
                             seconds=elapsed(), seen=seen, frontier=frontier)
            written[0] = time.perf_counter()

    def result(verdict, *, complete, limit=None, trace=(), violation=None, more=0):
        return Exploration(verdict=verdict, distinct_states=len(seen) + more, transitions=transitions, depth=depth,
                           complete=complete, seconds=elapsed(), drained_states=drained, trace=trace,
                           violation=violation, limit=limit, workers=levels.workers, reduced=reduce,
                           spilled_bytes=0 if spill is None else spill.peak_disk)

    def report(new_states: int, level_transitions: int) -> None:
        """What a level expander calls as it goes: the new states and transitions of the level so far."""
        if progress is not None and len(seen) + new_states >= next_report[0]:
            next_report[0] = len(seen) + new_states + 500
            progress(Progress(depth=depth + 1, distinct_states=len(seen) + new_states,
                              transitions=transitions + level_transitions, frontier=len(frontier), seconds=elapsed()))

    while frontier:
        if limits.max_depth is not None and depth >= limits.max_depth:
            save()
            return result("bounded", complete=False, limit=f"max_depth={limits.max_depth}")
        if checkpoint is not None and time.perf_counter() - written[0] >= checkpoint.every:
            save()
        level = live["level"] = levels.expand(frontier, seen, watch, report)
        if level.stopped is not None and (not level.violations or levels.workers > 1):
            # (several workers stop where each is: a violation found is then not known to be the
            # level's smallest)
            save()  # the boundary before this level: the level is expanded again on resume
            transitions += level.transitions
            _f, new, _d = _settle(level, seen, False, traces)  # (counted only: nothing is written)
            return result("bounded", complete=False, limit=level.stopped, more=new)
        transitions += level.transitions
        depth += 1
        if level.violations:  # (the smallest: a level stopped early ends only after whole states, in rank order)
            _k, t, v = min(level.violations, key=lambda x: x[0])
            return result("violation", complete=False, trace=t, violation=v)
        counted = len(seen)
        try:
            new_frontier, _new, new_drained = _settle(level, seen, True, traces)
        except SpillLimit as e:  # the seen set or the frontier cannot be written: the figures are
            depth -= 1           # those of the boundary before the level (no checkpoint is written:
            transitions -= level.transitions  # the seen set is part written; the last one stands)
            return result("bounded", complete=False, limit=e.reason, more=counted - len(seen))
        drained += new_drained
        if isinstance(frontier, SpilledFrontier):
            frontier.close()
        frontier = live["frontier"] = new_frontier
        live["level"] = None
        if progress is not None:
            progress(Progress(depth=depth, distinct_states=len(seen), transitions=transitions,
                              frontier=len(frontier), seconds=elapsed()))
        if limits.max_states is not None and len(seen) >= limits.max_states and frontier:
            save()
            return result("bounded", complete=False, limit=f"max_states={limits.max_states}")
    depth = max(depth - 1, 0)  # the last level added no new state
    return result("verified", complete=True)


def check_progress(scenario: Scenario, max_states: int = 200_000) -> tuple[int, tuple | None, str | None]:
    """Liveness on a small scenario: from every reachable state, with no further fault and
    no checkpoint budget, the job can drain (every record processed, every checkpoint
    completed or aborted, output committed). Checked by running the one drain policy
    (``model.cluster.drain_choice``) from each state; a state whose drain passes through a
    state already shown to drain is done. Returns ``(states checked, trace to a state that
    cannot drain or None, the reason)``."""
    root = Cluster.from_scenario(scenario)
    good: set[str] = set()
    seen = {root.fingerprint(): ()}
    frontier = [((), root)]
    while frontier:
        nxt = []
        for trace, c in frontier:
            why = _drains(c, good)
            if why is not None:
                return len(seen), trace, why
            for a in c.enabled_actions():
                child = c.copy()
                child.step(a)
                fp = child.fingerprint()
                if fp not in seen:
                    seen[fp] = trace + (a,)
                    nxt.append((trace + (a,), child))
            if len(seen) > max_states:
                raise FlinkspecError(f"the progress check stopped at {max_states} states (raise max_states)")
        frontier = nxt
    return len(seen), None, None


def _drains(c: Cluster, good: set) -> str | None:
    d = c.without_budgets()
    path = []
    for _ in range(100_000):
        fp = d.fingerprint()
        if fp in good:
            break
        path.append(fp)
        try:
            act = drain_choice(d)
        except FlinkspecError as e:
            return str(e)
        if act is None:
            if not d.is_drained() and d.job.stopping is None and d.status == "RUNNING":
                return f"the drain policy stops at step {d.now} with the run not drained"
            break
        d.step(act)
    else:
        return "the drain did not end within 100,000 steps"
    good.update(path)
    return None


def shortest_file(path_dir: Path, variant: Variant, scenario: Scenario, ex: Exploration, seed: int) -> Path:
    """Write the counterexample of ``ex`` (a violation) into ``path_dir`` (atomically, named by
    content, in the one counterexample format)."""
    # properties.counterexample imports properties.validation, which builds the JSON Schemas
    # from every registry: not needed by a search that finds nothing
    from properties.counterexample import write_counterexample
    return write_counterexample(path_dir, variant=variant.name, expected=variant.expected, engine="explore",
                                seed=seed, scenario=scenario, actions=list(ex.trace), violation=ex.violation)
