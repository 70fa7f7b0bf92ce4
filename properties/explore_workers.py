"""The exhaustive search on several local processes: each level of the breadth-first search
expanded by K forked workers, each holding the states it reached (``flinkspec explore
--workers K``).

``properties.explore.explore`` drives the search level by level; :class:`ProcessLevels` is what
expands a level here (instead of ``LocalLevels`` in one process, or ``spark.explore.SparkLevels``
on Spark's executors). Distributed breadth-first search as in TLC's and SPIN's multi-core
searches, level-synchronous so that the result does not depend on the number of workers:

    driver: the frontier, sorted by trace key      worker w: the runs of the states it owns
      -> each worker: its states' ranks in that order, their merged sleep sets, the new fingerprints
      <- an idle worker: "idle"; the driver asks a busy one to give up the last of the states
         it has not expanded yet (work stealing, ``_steal_count``), whose traces go to the idle one
      -> every worker, once all are idle: "finish"
      <- each worker: every new child (fingerprint, (parent rank, repr(action)), sleep set, drained),
                      merged within the worker; the violations; the transitions taken
      driver: one row per fingerprint: the smallest key owns the state (the worker that holds
              that child keeps its run; the others drop theirs), the sleep sets intersected

A child's trace key is its parent's key followed by the action's repr, and a level's parents
are sorted by key with traces of one length, so ``(parent rank, repr(action))`` orders the
children exactly as their whole trace keys do: the states, the smallest trace of each, the
sleep sets, the counts and the counterexample are those of the local search
(``tests/test_explore.py`` compares them), whatever the number of workers. Only fingerprints,
short keys, sleep sets and traces travel between the processes, never a state: a worker keeps the
run of every state it owns and expands it at the next level (no replay, unlike the Spark search,
whose executors hold nothing between levels); only a state moved to another worker is replayed
from its trace there. States move twice: before a level, from a worker whose share of the
level's work (the actions its states enable) is too large (``_balance``: a child is owned by
the worker that made it, so without it the root's worker would keep the whole search); and
during a level, when a worker runs out of states while another is busy (``_collect``): the
estimate is rough (a restart costs many deliveries), and without stealing the idle worker waited
at the level's end for a fifth of the search's time.

Each worker keeps a copy of the set of fingerprints seen (the driver sends each level's new
ones), so a child already seen is dropped where it was made. The limits are checked by each
worker after each state it expands, as the local search does (``explore.Watch``: the deadline,
its share of the memory limit -- above half of it the states it claims are kept as traces and
rebuilt when expanded --); a stop request (a signal to the driver) reaches the workers as a
message. The workers ignore SIGINT: a Ctrl-C on a terminal reaches the whole process group,
and the driver ends the search.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
import traceback
from multiprocessing.connection import wait

import attrs

from model.errors import FlinkspecError
from properties.explore import Level, Rebuilder, expand, to_take, violation_trace

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


#: called with the run of each state a worker expands, before it is expanded (``ProcessLevels(...,
#: inspect=)``; set before the workers fork, so they inherit it): an exception it raises ends
#: the search as a failing worker's does
_INSPECT: list = [None]

#: seconds spent replaying moved states in this worker, and the steps replayed (the cost of a
#: replayed step, for stealing)
_REPLAYED = [0.0, 0]


def _steal_count(left: int, expanded: int, seconds: float, transitions: int, depth: int) -> int:
    """How many of its ``left`` states a busy worker gives an idle one so that both finish
    together: the idle one pays a replay of ``depth`` steps besides each expansion, so of ``left``
    states it takes ``left * e / (r + 2e)``, with ``e`` the seconds of an expansion so far in
    this level (``seconds`` over ``expanded``) and ``r`` a replay's (the seconds of a replayed
    step measured in this worker, or else of a transition -- which costs more than a replayed
    step: a copy and a fingerprint besides it). Half when nothing is measured yet."""
    if expanded == 0 or seconds <= 0:
        return left // 2
    e = seconds / expanded
    step = _REPLAYED[0] / _REPLAYED[1] if _REPLAYED[1] else seconds / max(transitions, 1)
    return int(left * e / (depth * step + 2 * e))


class _LevelWork:
    """One level in a worker: the states it was given, expanded in rank order into one
    ``Level`` (the children it claims, merged by the one rule of the search, ``Level.add``).
    Between two states it answers the driver's request to give the tail of its queue to an idle
    worker (work stealing); when its queue is empty it may be given states stolen from another."""

    def __init__(self, scenario, reduce: bool, held: dict, seen: set, watch, conn):
        self.scenario, self.reduce, self.held, self.seen = scenario, reduce, held, seen
        self.watch, self.conn = watch, conn
        self.rebuild = Rebuilder(scenario)
        #: the states to expand, ``(rank, fingerprint or None, trace, sleep)`` by rank, and how
        #: many of them are done
        self.queue: list = []
        self.done = 0
        self.level = Level()
        self.violations: list = []
        #: the smallest rank of a state whose children hold a violation: the states ranked after
        #: it are counted, not expanded (the level's smallest violation is not among theirs)
        self.first_violation = float("inf")
        self.transitions = 0
        self.stopped: str | None = None
        self.next_progress = time.perf_counter() + PROGRESS_EVERY
        #: the states expanded in this level and the seconds it took (the cost of one, for stealing)
        self.expanded = 0
        self.expand_seconds = 0.0

    def give_tail(self) -> list:
        """The last states not expanded yet (the highest ranks), as ``(rank, trace, sleep)`` for
        another worker to replay: as many as make both finish together, where a state given
        costs the other worker its replay besides its expansion (``_steal_count``); none once
        this worker found a violation (its later states are only counted) or ran out of time."""
        left = len(self.queue) - self.done
        if self.violations or self.stopped or left < 2:
            return []
        _rank, fp, trace, _sleep = self.queue[-1]
        depth = len(self.held[fp][0] if fp is not None else trace)  # (a level's traces are of one length)
        k = _steal_count(left, self.expanded, self.expand_seconds, self.transitions, depth)
        if k < 1:
            return []
        cut = len(self.queue) - k
        tail, self.queue = self.queue[cut:], self.queue[:cut]
        out = []
        for rank, fp, trace, sleep in tail:
            if fp is not None:  # held here: its run is dropped, its trace travels
                trace, run, _acts = self.held.pop(fp)
                if run is not None:
                    run.dispose()
            out.append((rank, trace, sleep))
        return out

    def run(self, entries: list) -> None:
        """Expand ``entries`` (``(rank, fingerprint, trace, sleep)``: a state held here by its
        fingerprint, or, with the fingerprint None, one rebuilt from its trace -- the root, or a
        state moved or stolen from another worker) in rank order, answering requests to steal
        between two states."""
        self.queue, self.done = sorted(entries, key=lambda e: e[0]), 0
        while self.done < len(self.queue) and not self.stopped:
            if self.conn.poll():
                msg = self.conn.recv()
                if msg[0] == "halt":  # a stop request to the driver
                    self.watch.stop.request(msg[1])
                elif msg[0] != "steal":
                    raise RuntimeError(f"unexpected message in a level: {msg[0]!r}")
                else:
                    self.conn.send(("stolen", self.give_tail()))
                continue
            rank, fp, trace, sleep = self.queue[self.done]
            self.done += 1
            start = time.perf_counter()
            self._expand_one(rank, fp, trace, sleep)
            self.expanded += 1
            self.expand_seconds += time.perf_counter() - start
        self.queue, self.done = [], 0

    def _expand_one(self, rank: int, fp, trace: tuple, sleep: frozenset) -> None:
        run = acts = None
        if fp is not None:
            trace, run, acts = self.held.pop(fp)
        if run is None:  # moved, stolen or kept as its trace
            start = time.perf_counter()
            run = self.rebuild.run_of(trace)
            _REPLAYED[0] += time.perf_counter() - start
            _REPLAYED[1] += len(trace)
        level = self.level
        if _INSPECT[0] is not None:
            _INSPECT[0](run)
        if self.violations and rank > self.first_violation:
            # (a state stolen after a violation may rank below it: that one is expanded)
            acts = run.enabled_actions() if acts is None else acts
            self.transitions += len(to_take(run.cluster, acts, sleep, self.reduce))
            run.dispose()
            return
        for a, child, v, child_sleep in expand(run, trace, sleep, self.reduce, consume=True, actions=acts):
            self.transitions += 1
            t = trace + (a,)
            key = (rank, repr(a))
            if v is not None:
                self.violations.append((key, violation_trace(t, child), v))
                self.first_violation = min(self.first_violation, rank)
                child.dispose()  # only the trace is kept
                continue
            if self.violations:
                child.dispose()
                continue
            child_fp = child.fingerprint()
            if child_fp in self.seen:
                child.dispose()
                continue
            have = level.states.get(child_fp)
            if have is not None and key > have[0]:
                child.dispose()  # a smaller trace reached this state here already: freed now
            level.add(child_fp, key, t, child, child_sleep, have[4] if have is not None else child.cluster.is_drained())
        now = time.perf_counter()
        if now >= self.next_progress:
            self.next_progress = now + PROGRESS_EVERY
            self.conn.send(("progress", len(level.states), self.transitions))
        self.stopped = self.watch.check()

    def finish(self) -> tuple:
        """``(transitions, violations, claims, stopped)``; ``held`` is left holding the run of
        each new child claimed, for the next level (or its trace only, its run rebuilt when
        expanded, when memory runs short: ``Watch.compact``)."""
        self.rebuild.close()
        claims = []
        for fp, (key, t, child, sleep, drained) in self.level.states.items():
            acts = child.enabled_actions()  # their number weighs the state
            if self.watch.compact:
                child.dispose()
                self.held[fp] = (t, None, None)
            else:
                self.held[fp] = (t, child, acts)  # kept for the next level
            claims.append((fp, key, sleep, drained, len(acts)))
        return self.transitions, self.violations, claims, self.stopped


def _level(scenario, reduce: bool, own: list, held: dict, seen: set, watch, conn) -> None:
    """One level in a worker: its own states (``own``), then any stolen from another worker
    (``("more", entries)``), until the driver ends the level (``("finish",)``), which is
    answered with ``("done", transitions, violations, claims, stopped)``. A request to steal
    that comes when this worker is idle gets nothing; a stop request then changes nothing."""
    current = {fp for _r, fp, _t, _s in own if fp is not None}
    for fp in [fp for fp in held if fp not in current]:  # children another worker owns (or already seen)
        run = held.pop(fp)[1]
        if run is not None:
            run.dispose()
    work = _LevelWork(scenario, reduce, held, seen, watch, conn)
    work.run(own)
    conn.send(("idle",))
    while True:
        msg = conn.recv()
        if msg[0] == "steal":
            conn.send(("stolen", []))
        elif msg[0] == "halt":
            work.watch.stop.request(msg[1])
        elif msg[0] == "more":
            work.run([(rank, None, trace, sleep) for rank, trace, sleep in msg[1]])
            conn.send(("idle",))
        elif msg[0] == "finish":
            conn.send(("done",) + work.finish())
            return
        else:
            raise RuntimeError(f"unexpected message in a level: {msg[0]!r}")


def _worker(conn, scenario, reduce: bool) -> None:
    """A worker's loop: ``("level", own, new_fingerprints, watch)`` -> ``("done", ...)``;
    ``("stop",)`` ends it. An exception is sent back as ``("error", traceback)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver ends the search (module docstring)
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
                    if run is not None:
                        run.dispose()
                    traces.append(t)
                conn.send(("traces", traces))
                continue
            _, own, new, watch, forget = msg
            if forget:
                seen.clear()
            seen.update(new)
            _level(scenario, reduce, own, held, seen, watch, conn)
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

    #: the frontier's states are held by the workers (the search does not write it to disk)
    holds_states = True

    def __init__(self, scenario, reduce: bool, workers: int, inspect=None):
        if workers < 1:
            raise FlinkspecError(f"the number of workers must be at least 1, not {workers}")
        self.scenario = scenario
        self.reduce = reduce
        self.workers = workers
        #: called in the workers with each state's run before it is expanded (``_INSPECT``)
        self.inspect = inspect
        self._procs: list = []
        self._conns: list = []
        #: how many states idle workers took from busy ones (work stealing), over the search
        self.stolen = 0
        #: the driver's seen set's flushes the workers' copies followed
        self._flushes = 0

    def __enter__(self) -> "ProcessLevels":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        _INSPECT[0] = self.inspect
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

    def expand(self, frontier: list, seen: set, watch, report) -> Level:
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
        # each worker's copy of the seen set: the driver's set in memory; once that was written
        # to disk (``explore_spill.SeenSet``), the copies are emptied too and start again from the
        # frontier's states (a child seen on disk only is dropped by the driver at the level's end)
        forget = seen.flushes != self._flushes
        self._flushes = seen.flushes
        if first or forget:
            new = list(seen.memory) + new
        self._balance(own)
        share = watch.share(self.workers)
        for w, c in enumerate(self._conns):
            c.send(("level", own[w], new, share, forget))
        return self._collect(report, watch)

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

    def _collect(self, report, watch) -> Level:
        """Wait for the level: a worker that runs out of states takes the second half of a busy
        worker's queue (work stealing; the stolen states are replayed from their traces); when
        every worker is idle, each sends what it found, and the driver keeps one row per state
        (the smallest key owns it, the sleep sets intersected)."""
        progress = [(0, 0)] * self.workers
        index = {id(c): w for w, c in enumerate(self._conns)}
        busy = set(range(self.workers))
        thief_of: dict = {}  # a worker asked to give up its tail -> the idle worker that gets it
        dry: set = set()  # workers that had nothing to give since they last got more

        def steal_for(thief: int) -> None:
            victims = [v for v in sorted(busy) if v not in thief_of and v not in dry and v != thief]
            if victims and thief not in thief_of.values():
                # the busy worker that has taken the fewest transitions so far is likely furthest behind
                victim = min(victims, key=lambda v: progress[v][1])
                thief_of[victim] = thief
                self._conns[victim].send(("steal",))

        halted = False
        while busy or thief_of:
            if not halted and watch.stop.reason is not None:  # a signal to the driver: every worker stops
                halted = True
                for c in self._conns:
                    c.send(("halt", watch.stop.reason))
            for c in wait(self._conns, timeout=0.2):
                w = index[id(c)]
                msg = self._recv(w)
                if msg[0] == "progress":
                    progress[w] = msg[1:]
                    report(sum(p[0] for p in progress), sum(p[1] for p in progress))
                elif msg[0] == "idle":
                    busy.discard(w)
                    steal_for(w)
                elif msg[0] == "stolen":
                    thief = thief_of.pop(w)
                    if msg[1]:
                        self.stolen += len(msg[1])
                        busy.add(thief)
                        dry.discard(thief)
                        self._conns[thief].send(("more", msg[1]))
                    else:
                        dry.add(w)
                        steal_for(thief)
                else:
                    raise FlinkspecError(f"explore worker {w} sent {msg[0]!r} during a level")
        for c in self._conns:
            c.send(("finish",))
        level = Level()
        for w in range(self.workers):
            msg = self._recv(w)
            if msg[0] != "done":
                raise FlinkspecError(f"explore worker {w} sent {msg[0]!r} at the end of a level")
            transitions, violations, claims, stopped = msg[1:]
            level.transitions += transitions
            level.violations.extend(violations)
            level.stopped = level.stopped or stopped or (watch.stop.reason if halted else None)
            for fp, key, sleep, drained, n in claims:
                level.add(fp, key, None, Held(w, fp, n), sleep, drained)
        report(len(level.states), level.transitions)
        return level
