"""The exhaustive search on several local processes: each level of the breadth-first search
expanded by K forked workers, each holding the states it reached (``flinkspec explore
--workers K``).

``properties.explore.explore`` drives the search level by level; :class:`ProcessLevels` is what
expands a level here (instead of ``LocalLevels`` in one process, or ``spark.explore.SparkLevels``
on Spark's executors). Distributed breadth-first search as in TLC's and SPIN's multi-core
searches, level-synchronous so that the result does not depend on the number of workers:

    driver: the frontier, sorted by trace key      worker w: the runs of the states it owns
      -> each worker: its states' ranks in that order, their merged sleep sets, the new fingerprints
      <- each worker: every new child (fingerprint, (parent rank, repr(action)), sleep set, drained),
                      merged within the worker; the violations; the transitions taken
      driver: one row per fingerprint: the smallest key owns the state (the worker that holds
              that child keeps its run; the others drop theirs), the sleep sets intersected

A child's trace key is its parent's key followed by the action's repr, and a level's parents
are sorted by key with traces of one length, so ``(parent rank, repr(action))`` orders the
children exactly as their whole trace keys do: the states, the smallest trace of each, the
sleep sets, the counts and the counterexample are those of the local search
(``tests/test_explore.py`` compares them), whatever the number of workers. Only fingerprints,
short keys and sleep sets travel between the processes, never a state: a worker keeps the run of
every state it owns and expands it at the next level (no replay, unlike the Spark search, whose
executors hold nothing between levels).

Each worker keeps a copy of the set of fingerprints seen (the driver sends each level's new
ones), so a child already seen is dropped where it was made. The time limit is checked by each
worker after each state it expands, as the local search does.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from multiprocessing.connection import wait

import attrs

from model.errors import FlinkspecError
from properties.explore import Level, expand, replay_trace, to_take, violation_trace

#: how far above its share of a level's work (the actions its states enable) a worker may be
#: before some of its states move (a fraction of the share): a moved state is replayed from its
#: trace, so the workers are kept only roughly even
BALANCE_SLACK = 0.1
#: how often (seconds) a worker tells the driver how far it got in a level (the progress line)
PROGRESS_EVERY = 1.0


@attrs.frozen(slots=True)
class Held:
    """A state of the frontier whose run is held by worker ``worker`` under ``fingerprint``."""

    worker: int
    fingerprint: str
    #: how many actions the state enables (what expanding it costs, roughly)
    actions: int = 1


def _expand_level(scenario, reduce: bool, own: list, held: dict, seen: set, deadline, conn) -> tuple:
    """One level in a worker: the children of the states ``own`` (``(rank, fingerprint, trace,
    sleep)``, by rank: a state held here by its fingerprint, or, with the fingerprint None, one
    rebuilt from its trace -- the root, or a state moved here from another worker). Returns
    ``(transitions, violations, claims, timed_out)`` and leaves ``held`` holding the run of each
    new child claimed."""
    frontier = []
    for rank, fp, trace, sleep in sorted(own, key=lambda e: e[0]):
        if fp is None:
            frontier.append((rank, trace, replay_trace(scenario, trace), sleep, None))
        else:
            t, run, acts = held.pop(fp)
            frontier.append((rank, t, run, sleep, acts))
    for _t, run, _acts in held.values():  # children another worker owns (or already seen)
        run.dispose()
    held.clear()
    level = Level()  # the children claimed, merged by the one rule of the search (Level.add)
    violations: list = []
    transitions = 0
    timed_out = False
    next_progress = time.perf_counter() + PROGRESS_EVERY
    for rank, trace, run, sleep, acts in frontier:
        if violations:
            acts = run.cluster.enabled_actions() if acts is None else acts
            transitions += len(to_take(run.cluster, acts, sleep, reduce))
            continue
        for a, child, v, child_sleep in expand(run, trace, sleep, reduce, consume=True, actions=acts):
            transitions += 1
            t = trace + (a,)
            key = (rank, repr(a))
            if v is not None:
                violations.append((key, violation_trace(t, child), v))
                child.dispose()  # only the trace is kept
                continue
            if violations:
                child.dispose()
                continue
            fp = child.fingerprint()
            if fp in seen:
                child.dispose()
                continue
            have = level.states.get(fp)
            if have is not None and key > have[0]:
                child.dispose()  # a smaller trace reached this state here already: freed now
            else:
                child.keep()  # (Level.add disposes of the run it replaces)
            level.add(fp, key, t, child, child_sleep, have[4] if have is not None else child.cluster.is_drained())
        now = time.perf_counter()
        if now >= next_progress:
            next_progress = now + PROGRESS_EVERY
            conn.send(("progress", len(level.states), transitions))
        if deadline is not None and now > deadline:
            timed_out = True
            break
    claims = []
    for fp, (key, t, child, sleep, drained) in level.states.items():
        acts = child.cluster.enabled_actions()  # kept for the next level; their number weighs the state
        held[fp] = (t, child, acts)
        claims.append((fp, key, sleep, drained, len(acts)))
    return transitions, violations, claims, timed_out


def _worker(conn, scenario, reduce: bool) -> None:
    """A worker's loop: ``("level", own, new_fingerprints, deadline)`` -> ``("done", ...)``;
    ``("stop",)`` ends it. An exception is sent back as ``("error", traceback)``."""
    held: dict = {}
    seen: set = set()
    try:
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                return
            if msg[0] == "give":  # states moved to another worker: their traces, and the runs dropped
                traces = []
                for fp in msg[1]:
                    t, run, _acts = held.pop(fp)
                    run.dispose()
                    traces.append(t)
                conn.send(("traces", traces))
                continue
            _, own, new, deadline = msg
            seen.update(new)
            conn.send(("done",) + _expand_level(scenario, reduce, own, held, seen, deadline, conn))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        return
    except BaseException:  # noqa: BLE001 -- the driver reports it with the worker's traceback
        try:
            conn.send(("error", traceback.format_exc()))
        except (OSError, ValueError):
            pass


class ProcessLevels:
    """Expands each level on ``workers`` forked processes (see the module docstring). The
    processes start at the first level (inside the search, so they inherit its garbage-collector
    settings) and stop at :meth:`close`; use it as a context manager."""

    def __init__(self, scenario, reduce: bool, workers: int):
        if workers < 1:
            raise FlinkspecError(f"the number of workers must be at least 1, not {workers}")
        self.scenario = scenario
        self.reduce = reduce
        self.workers = workers
        self._procs: list = []
        self._conns: list = []

    def __enter__(self) -> "ProcessLevels":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        for _ in range(self.workers):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(theirs, self.scenario, self.reduce), daemon=True,
                            name="flinkspec-explore-worker")
            p.start()
            theirs.close()
            self._procs.append(p)
            self._conns.append(mine)

    def close(self) -> None:
        """Stop the workers (their states are dropped with them)."""
        for c in self._conns:
            try:
                c.send(("stop",))
            except (OSError, ValueError):
                pass
        for p in self._procs:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()
        for c in self._conns:
            c.close()
        self._procs, self._conns = [], []

    def expand(self, frontier: list, seen: set, deadline: float | None, report) -> Level:
        first = not self._procs
        if first:
            self._start()
        own: list = [[] for _ in range(self.workers)]
        new = []
        for rank, (trace, run, sleep) in enumerate(frontier):
            if isinstance(run, Held):
                own[run.worker].append((rank, run.fingerprint, None, sleep, max(run.actions - len(sleep), 1)))
                new.append(run.fingerprint)
            else:  # the root (built again by the worker from the scenario)
                own[rank % self.workers].append((rank, None, trace, sleep, 1))
        if first:
            new = list(seen)
        self._balance(own)
        for w, c in enumerate(self._conns):
            c.send(("level", own[w], new, deadline))
        return self._collect(report)

    def _balance(self, own: list) -> None:
        """Move states from the workers whose share of the level's work (the actions their
        states enable) is too large to those whose share is smaller: a child is owned by the
        worker that made it, so without this the root's worker would keep the whole search. A
        moved state's trace goes to its new worker, which replays it (the states themselves are
        not picklable: the model's functions are closures)."""
        work = [sum(e[4] for e in o) for o in own]
        share = sum(work) / self.workers
        limit = share * (1 + BALANCE_SLACK) + 1
        moving: dict = {}
        for w in range(self.workers):
            while work[w] > limit and own[w]:
                e = own[w].pop()
                work[w] -= e[4]
                moving.setdefault(w, []).append(e)
        for w, entries in moving.items():
            self._conns[w].send(("give", [e[1] for e in entries]))
        for w, entries in moving.items():
            for (rank, _fp, _t, sleep, n), trace in zip(entries, self._recv(w)[1]):
                dst = min(range(self.workers), key=work.__getitem__)
                own[dst].append((rank, None, trace, sleep, n))
                work[dst] += n
        for o in own:
            for i, e in enumerate(o):
                o[i] = e[:4]

    def _recv(self, w: int):
        try:
            msg = self._conns[w].recv()
        except EOFError:
            raise FlinkspecError(f"explore worker {w} ended unexpectedly (exit code "
                                 f"{self._procs[w].exitcode}); the search is incomplete") from None
        if msg[0] == "error":
            raise FlinkspecError(f"explore worker {w} failed:\n{msg[1]}")
        return msg

    def _collect(self, report) -> Level:
        level = Level()
        progress = [(0, 0)] * self.workers
        results: dict = {}
        index = {id(c): w for w, c in enumerate(self._conns)}
        while len(results) < self.workers:
            for c in wait([c for w, c in enumerate(self._conns) if w not in results]):
                w = index[id(c)]
                msg = self._recv(w)
                if msg[0] == "progress":
                    progress[w] = msg[1:]
                    report(sum(p[0] for p in progress), sum(p[1] for p in progress))
                else:
                    results[w] = msg[1:]
        for w in range(self.workers):  # one row per state: the smallest key owns it, the sleep sets intersected
            transitions, violations, claims, timed_out = results[w]
            level.transitions += transitions
            level.violations.extend(violations)
            level.timed_out = level.timed_out or timed_out
            for fp, key, sleep, drained, n in claims:
                level.add(fp, key, None, Held(w, fp, n), sleep, drained)
        report(len(level.states), level.transitions)
        return level
