"""Engines that drive the one step function, and the judge they share.

* :class:`Run` wraps a :class:`model.cluster.Cluster` built from a :class:`Scenario` and
  checks every *always* invariant after each step, tracks the *sometimes* goals, and applies
  the *eventually* invariants once the run is drained.
* :func:`random_walk` — a seeded random walk with swarm testing: each run enables a random
  subset of the optional action kinds and picks kinds by weight, so that failures stay rare
  and checkpoints, idleness and savepoints each get runs of their own. Used by the check
  command and by the Spark replays.
* :func:`replay` re-executes a recorded action list; :func:`shrink` minimises a failing
  action list by delta debugging (ddmin) while it keeps the same violated invariant.

Everything is deterministic from (variant, seed, swarm, max_steps): the walk's random
choices come from ``random.Random(f"walk:{variant}:{seed}")``, each optional kind's swarm
draw from a stream of its own (:func:`swarm_kinds`: a kind added to the registry shifts no
other draw), and the scenario from ``model.variants.generate``.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections import Counter
from typing import Iterable, Sequence

import attrs

import spec
from model import actions as A
from model.cluster import Cluster, RunStuck, drain_choice
from model.errors import ActionNotEnabled, FlinkspecError, InvalidJobSpec
from model.variants import Scenario, Variant, generate, variant as get_variant
from spec.exactly_once import Expected, idle_judged, run_drains
from spec.invariant import Violation, invariants

spec.load_all()  # every invariant module registers its invariants before the lists below are taken
#: what a run checks: every registered invariant of subject "run", by kind (the registry is
#: the only list; a new invariant is checked by every engine that drives a Run). Taken again
#: by :func:`take_invariants` when a design file registers more.
ALWAYS: tuple = ()
EVENTUALLY: tuple = ()
#: the invariants whose verdict depends on the run's history, not only on its state
#: (``spec.invariant``: their ``history`` summaries are part of ``Run.fingerprint``)
HISTORY: tuple = ()
#: of those, the positions of the eventually invariants a history summary can already decide
DOOMABLE: tuple = ()
GOALS: dict = {}


def take_invariants() -> None:
    """(Re)take the lists above from the registry: at import, and after a design file
    (``flinkspec.design``) registered or removed invariants."""
    global ALWAYS, EVENTUALLY, HISTORY, DOOMABLE, GOALS
    ALWAYS = invariants("run", "always")
    EVENTUALLY = invariants("run", "eventually")
    HISTORY = tuple(i for i in invariants("run") if i.history is not None)
    DOOMABLE = tuple((k, inv) for k, inv in enumerate(HISTORY) if inv.doomed is not None)
    GOALS = {g.name: g for g in invariants("run", "sometimes")}


take_invariants()

#: the action kinds, their swarm switches and weights, from the registry (``model.actions``)
CORE_KINDS = A.CORE_KINDS
SWARM_KINDS = A.SWARM_KINDS
WEIGHTS = A.WEIGHTS

_EXPECTED_CACHE: dict = {}


def expected_for(scenario: Scenario, job_input=None) -> Expected:
    """The reference of ``scenario`` (on ``job_input`` instead of the scenario's, if given),
    computed once."""
    seams = scenario.seams
    job_input = scenario.job_input if job_input is None else job_input
    key = (repr(scenario.graph), repr(job_input), seams)
    exp = _EXPECTED_CACHE.get(key)
    if exp is None:
        if len(_EXPECTED_CACHE) > 256:
            _EXPECTED_CACHE.clear()
        exp = _EXPECTED_CACHE[key] = Expected(scenario.graph, job_input, seams)
    return exp


class Run:
    """One run of a scenario under the judge of the spec: after every step it evaluates every
    registered *always* invariant of subject "run" (each reads the state and what the step
    changed, ``Cluster.delta``) and the *sometimes* goals; ``finish`` drains the run and
    evaluates the *eventually* invariants. The invariants never write into the run."""

    def __init__(self, scenario: Scenario, *, check_always: bool = True, cluster: Cluster | None = None,
                 track_goals: bool = True):
        self.scenario = scenario
        self.cluster = cluster if cluster is not None else Cluster.from_scenario(scenario)
        self._expected = expected_for(scenario)
        #: the action kinds this run may take (``offered_kinds``: the one decision every engine uses)
        self.offered = offered_kinds(scenario)
        self.check_always = check_always
        #: whether ``step`` counts the *sometimes* goals (an exhaustive search does not need them)
        self.track_goals = track_goals
        self.goals: Counter = Counter()
        self.events_seen = len(self.cluster.events)
        #: how much output the external system had committed before the last step (the
        #: cluster does not keep it: it is for the checks, not the runtime)
        self.committed_before = 0
        #: a source went idle in this run (a SourceIdle action was taken): on a windowed job the
        #: window results then depend on timing (``timing_dependent``)
        self.idle_seen = False
        #: why the drain policy found no action (``model.cluster.RunStuck``), read by run_drains
        self.stuck: str | None = None
        self.violation: Violation | None = None
        #: ``history_key()`` of the current step, once computed
        self._history_key: tuple | None = None
        if check_always:
            # the initial deployment (its slot placement, its key groups) is judged too
            self.violation = self._check_always(step=0)

    def fork(self) -> "Run":
        """An independent run from this run's state (``Cluster.copy``), judged the same way; its
        goals start empty."""
        r = Run.__new__(Run)
        r.scenario = self.scenario
        r.cluster = self.cluster.copy()
        r._expected = self._expected
        r.offered = self.offered
        r.check_always = self.check_always
        r.track_goals = self.track_goals
        r.goals = Counter()
        r.events_seen = len(r.cluster.events)
        r.committed_before = self.committed_before
        r.idle_seen = self.idle_seen
        r.violation = self.violation
        r._history_key = self._history_key
        return r

    def dispose(self) -> None:
        """Drop this run's state now (an explorer's successor of a state already seen, or a run
        whose trace is all it keeps): a state holds no reference cycle, so reference counting
        frees it at once, with the cyclic garbage collector off. It must not be used
        afterwards."""
        self.cluster = None

    def history_key(self) -> tuple:
        """What of this run's history the registered invariants can still depend on: each
        history-reading invariant's summary (``Invariant.history``), in registration order."""
        if self._history_key is None:
            self._history_key = tuple(inv.history(self) for inv in HISTORY)
        return self._history_key

    def doomed(self) -> bool:
        """Whether the history summaries already decide an *eventually* invariant
        (``Invariant.doomed``): every continuation without a further disturbance violates it."""
        if not DOOMABLE:
            return False
        key = self.history_key()
        return any(inv.doomed(key[k]) for k, inv in DOOMABLE)

    def fingerprint(self) -> str:
        """The state's fingerprint (``Cluster.fingerprint``) and the history summaries the
        invariants depend on (``history_key``): an explorer merges two runs only when both are
        equal, so that every merged run is judged as the one kept would be."""
        key = repr(self.history_key()).encode()
        return hashlib.blake2b(self.cluster.fingerprint().encode() + b"|" + key, digest_size=16).hexdigest()

    @property
    def job_input(self):
        """The input the run's output must be the result of: the scenario's, or what the
        sources read when a stop-with-savepoint ``--drain`` ended their input early
        (``Cluster.input_read``)."""
        read = self.cluster.input_read()
        return self.scenario.job_input if read is None else read

    @property
    def expected(self) -> Expected:
        """The reference output of :attr:`job_input` (``spec.exactly_once.Expected``)."""
        read = self.cluster.input_read()
        return self._expected if read is None else expected_for(self.scenario, read)

    @property
    def timing_dependent(self) -> bool:
        """Whether this run's window results may depend on timing, so that the failure-free
        reference is no oracle for them: the job's windows are judged by the event-time judge
        (``spec.declarative.event_time_judged``) and a source went idle in the run, or the input
        holds records later than their source's watermark bound."""
        return (self.idle_seen or self.expected.disordered) and self.expected.event_time_judged

    def enabled_actions(self) -> list:
        """The actions an engine may take now: the cluster's enabled actions
        (``Cluster.enabled_actions``) of the kinds the scenario offers (``offered_kinds``), in
        the cluster's order. Every engine chooses among these, so that what one engine finds
        another can reach and judges alike."""
        acts = self.cluster.enabled_actions()
        if len(self.offered) == len(ALL_KINDS):
            return acts
        offered = self.offered
        return [a for a in acts if type(a).__name__ in offered]

    def why_not_enabled(self, action) -> str | None:
        """Why an engine may not take ``action`` now (None if it may): its kind is not offered
        on this scenario (``offered_kinds``), or its guard does not hold
        (``Cluster.why_not_enabled``)."""
        name = type(action).__name__
        if name not in self.offered:
            return (f"{name} is not offered on this job: a windowed job the event-time judge does not cover "
                    f"is searched without idle sources (docs/oracles.md)")
        return self.cluster.why_not_enabled(action)

    @property
    def sink_of_subtask(self) -> dict:
        return self.cluster.sink_owners

    def _check_always(self, step: int) -> Violation | None:
        for inv in ALWAYS:
            v = inv.check(self)
            if v is not None:
                return v.at_step(step)
        return None

    def step(self, action) -> Violation | None:
        """Apply ``action``; return the first violated *always* invariant (or None)."""
        c = self.cluster
        self.committed_before = len(c.external.committed)
        self._history_key = None
        c.step(action)
        if type(action) is A.SourceIdle:
            self.idle_seen = True
        events = c.events
        new_events = events[self.events_seen:] if len(events) > self.events_seen else ()
        self.events_seen = len(events)
        if self.track_goals:
            for name, g in GOALS.items():
                if g.check(self, new_events):
                    self.goals[name] += 1
        if not self.check_always:
            return None
        v = self._check_always(c.now - 1)
        if v is not None:
            self.violation = v
        return v

    def finish(self, max_steps: int = 100_000, *, observe=None) -> Violation | None:
        """Drain the run with the one drain policy (``model.cluster.drain_choice``), checking
        *always* invariants on the way, then apply the *eventually* invariants. ``observe(run,
        action)``, if given, is called before each drain step (as in :func:`replay`)."""
        c = self.cluster
        if c.status == "FAILED":
            return None  # a job that exhausted its restarts has nothing to compare
        for _ in range(max_steps):
            try:
                act = drain_choice(c)
            except RunStuck as e:  # a liveness failure: a violation of its own name, written as a file
                self.stuck = str(e)
                self.violation = run_drains(self).at_step(c.now)
                return self.violation
            if act is None:
                break
            if observe is not None:
                observe(self, act)
            v = self.step(act)
            if v is not None:
                return v
        else:
            raise FlinkspecError(f"the run did not drain within {max_steps} steps (status {c.status}, now {c.now})")
        if not c.is_drained():
            return None
        for inv in EVENTUALLY:
            v = inv.check(self)
            if v is not None:
                self.violation = v.at_step(c.now)
                return self.violation
        return None


@attrs.frozen(slots=True, kw_only=True)
class RunResult:
    seed: int
    variant: str
    verdict: str  # "pass" | "violation"
    invariant: str | None
    steps: int
    goals: tuple
    trace_hash: str
    duration_s: float = attrs.field(eq=False)
    actions: tuple = attrs.field(default=(), eq=False, repr=False)
    violation: dict | None = None
    swarm_kinds: tuple = ()

    def to_row(self) -> dict:
        return {
            "seed": self.seed, "variant": self.variant, "verdict": self.verdict, "invariant": self.invariant,
            "steps": self.steps, "goals": list(self.goals), "trace_hash": self.trace_hash,
            "duration_s": self.duration_s,
        }


#: every registered action kind's name (``model.actions``)
ALL_KINDS = frozenset(k.__name__ for k in A.KINDS)


def offered_kinds(scenario: Scenario) -> frozenset:
    """The action kinds a run of ``scenario`` may take, whichever engine drives it: the random
    walk and the Hypothesis machine (each run switches some optional kinds off on top, swarm
    testing), the explorer (``Run.enabled_actions``), the Spark replays (which run the walk)
    and the replay of a counterexample file (which refuses an action of another kind). The one
    place this is decided, from the scenario's judgement (``spec.exactly_once.Expected``): every
    kind, except ``SourceIdle`` on a job whose run with an idle source the judge cannot judge
    (``Expected.idle_judged``: a windowed job the event-time judge does not cover)."""
    if expected_for(scenario).idle_judged:
        return ALL_KINDS
    return ALL_KINDS - {"SourceIdle"}


def check_judgeable(job) -> None:
    """Refuse a job file (``model.jobfile.JobFile``) whose runs no judge could judge: its
    ``[input] out_of_orderness`` lets records lag a source's watermark bound, so Flink's
    ``WindowOperator`` drops some as late whatever the schedule, on a windowed job the
    event-time judge does not cover (``spec.exactly_once.idle_judged``: the same line as for
    idle sources, ``offered_kinds``), where the reference would call a justified drop a lost
    record. Raises ``InvalidJobSpec`` naming the file, the table and the key."""
    lag = job.input.out_of_orderness
    if lag is None or idle_judged(job.graph):
        return
    late = [o.name for o in job.graph.operators if o.kind == "source" and lag > o.watermark_out_of_orderness]
    if late:
        raise InvalidJobSpec(
            f"{job.path}: [input] out_of_orderness",
            f"{lag} makes records of source(s) {', '.join(repr(n) for n in late)} late, and the event-time judge "
            f"does not cover this job's windows (a window behind a keyed operator or not directly before its "
            f"sink: docs/oracles.md), so no run could be judged; use at most the "
            f"watermark_out_of_orderness of each source")


def trace_hash(actions: Iterable) -> str:
    h = hashlib.sha256()
    for a in actions:
        h.update(repr(a).encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


#: the chance that swarm testing switches an optional action kind on for a run
SWARM_ON = 0.7


def swarm_kinds(variant: str, seed: int, swarm: bool) -> tuple:
    """The optional kinds a walk of ``variant`` for ``seed`` may take: every one without swarm
    testing; with it, each kind is on with probability :data:`SWARM_ON`, drawn from a stream of
    its own (``random.Random(f"swarm:{variant}:{seed}:{kind}")``), so adding, removing or
    renaming one kind changes no other kind's draw and none of the walk's choices."""
    if not swarm:
        return SWARM_KINDS
    return tuple(k for k in SWARM_KINDS if random.Random(f"swarm:{variant}:{seed}:{k}").random() < SWARM_ON)


def random_walk(variant: str | Variant, seed: int, *, swarm: bool = True, max_steps: int | None = None) -> RunResult:
    """A seeded random walk of ``variant``'s scenario for ``seed``, drained and judged."""
    v = get_variant(variant) if isinstance(variant, str) else variant
    t0 = time.perf_counter()
    scenario = generate(v, seed)
    rng = random.Random(f"walk:{v.name}:{seed}")
    run = Run(scenario)
    kinds = (set(CORE_KINDS) | set(swarm_kinds(v.name, seed, swarm))) & run.offered
    c = run.cluster
    budget = v.max_steps if max_steps is None else max_steps
    violation = run.violation
    for _ in range(budget if violation is None else 0):
        acts = [a for a in run.enabled_actions() if type(a).__name__ in kinds]
        if not acts:
            break
        by_kind: dict[str, list] = {}
        for a in acts:
            by_kind.setdefault(type(a).__name__, []).append(a)
        names = sorted(by_kind)
        weights = [WEIGHTS.get(n, 1.0) for n in names]
        kind = rng.choices(names, weights)[0]
        violation = run.step(rng.choice(by_kind[kind]))
        if violation is not None or c.status == "FAILED":
            break
    if violation is None:
        violation = run.finish()
    return RunResult(
        seed=seed, variant=v.name, verdict="pass" if violation is None else "violation",
        invariant=None if violation is None else violation.invariant, steps=c.now,
        goals=tuple(sorted(run.goals)), trace_hash=trace_hash(c.trace),
        duration_s=time.perf_counter() - t0, actions=tuple(c.trace),
        violation=None if violation is None else violation.to_dict(), swarm_kinds=tuple(sorted(kinds)),
    )


def replay(scenario: Scenario, actions: Sequence, *, finish: bool = True,
           observe=None) -> tuple[Violation | None, Run]:
    """Re-execute ``actions`` on ``scenario``; stop at the first violation. With ``finish``,
    a run whose actions end without a violation is drained and judged as the walk was.
    ``observe(run, action)``, if given, is called before each step (the recorded ones and the
    drain policy's), while the state is the one the action is chosen in: a viewer takes its
    snapshots there (``properties.timeline``); it must not change the run."""
    run = Run(scenario)
    if run.violation is not None:
        return run.violation, run
    for i, a in enumerate(actions):
        why = run.why_not_enabled(a) if observe is not None or type(a).__name__ not in run.offered else None
        if why is not None:  # (an observer may read what the action names: checked before it)
            raise FlinkspecError(f"step {i}: {a!r}: {why}")
        if observe is not None:
            observe(run, a)
        try:
            v = run.step(a)
        except ActionNotEnabled as e:
            raise FlinkspecError(f"step {i}: {e}") from None
        if v is not None:
            return v, run
        if run.cluster.status == "FAILED":
            return None, run
    if finish:
        return run.finish(observe=observe), run
    return None, run


def replay_lenient(scenario: Scenario, actions: Sequence, *,
                   max_drain: int = 100_000) -> tuple[Violation | None, Run]:
    """Replay ``actions`` skipping those that are not enabled at their turn (used while
    shrinking: removing one action often disables a later one), then drain (at most
    ``max_drain`` steps: ``Run.finish`` raises FlinkspecError past them) and judge."""
    run = Run(scenario)
    c = run.cluster
    if run.violation is not None:
        return run.violation, run
    for a in actions:
        if run.why_not_enabled(a) is not None:
            continue
        v = run.step(a)
        if v is not None:
            return v, run
        if c.status == "FAILED":
            return None, run
    return run.finish(max_steps=max_drain), run


def _violates(scenario: Scenario, actions: Sequence, invariant: str, max_drain: int = 100_000) -> bool:
    try:
        v, _ = replay_lenient(scenario, actions, max_drain=max_drain)
    except FlinkspecError:  # (ActionNotEnabled is one; so is a drain past max_drain)
        return False
    return v is not None and v.invariant == invariant


#: the shrinker's drain budget per candidate: SHRINK_DRAIN_PER_STEP steps per step of the
#: counterexample it starts from, and never fewer than SHRINK_DRAIN_MIN. A drain that ends
#: ends well within it (the control-plane walks' drains measured at most 194 steps on runs of
#: about 400); a candidate whose drain runs past it counts as not reproducing, as one past
#: ``Run.finish``'s limit did -- but before that limit a drain that never ends (the same step
#: again and again, each dearer than the last as the run's history grows) took minutes to
#: hours per candidate
SHRINK_DRAIN_MIN = 1_000
SHRINK_DRAIN_PER_STEP = 10


def shrink_drain_budget(n_steps: int) -> int:
    """The drain budget of each candidate while shrinking a counterexample of ``n_steps``."""
    return max(SHRINK_DRAIN_MIN, SHRINK_DRAIN_PER_STEP * n_steps)


def shrink(scenario: Scenario, actions: Sequence, invariant: str, *, max_tests: int = 1500) -> list:
    """ddmin over the action list, then one-at-a-time removal: a smaller list whose lenient
    replay (actions not enabled at their turn are skipped; then the run is drained, at most
    :func:`shrink_drain_budget` steps) still violates ``invariant``. Returns the executed
    trace up to the violation, which replays strictly (``replay``) to the same violation."""
    actions = list(actions)
    # first cut: the violation happens at some step; nothing after it is needed
    v, run = replay(scenario, actions, finish=False)
    if v is not None and v.invariant == invariant and v.step is not None:
        actions = actions[: v.step + 1]
    first_cut = list(actions)
    max_drain = shrink_drain_budget(len(first_cut))
    tests = 0
    n = 2
    while len(actions) >= 2 and tests < max_tests:
        chunk = max(1, len(actions) // n)
        reduced = False
        for start in range(0, len(actions), chunk):
            candidate = actions[:start] + actions[start + chunk:]
            tests += 1
            if candidate and _violates(scenario, candidate, invariant, max_drain):
                actions = candidate
                n = max(n - 1, 2)
                reduced = True
                break
            if tests >= max_tests:
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(actions), n * 2)
    # one-at-a-time removal until nothing more can go (1-minimality, within the budget)
    changed = True
    while changed and tests < max_tests:
        changed = False
        for i in range(len(actions) - 1, -1, -1):
            if tests >= max_tests:
                break
            candidate = actions[:i] + actions[i + 1:]
            tests += 1
            if candidate and _violates(scenario, candidate, invariant, max_drain):
                actions = candidate
                changed = True
    # keep exactly the steps executed up to the violation (skipped actions dropped; the drain
    # policy may have supplied the tail)
    v, run = replay_lenient(scenario, actions, max_drain=max_drain)
    if v is not None and v.step is not None:
        actions = list(run.cluster.trace[: v.step + 1])
    # the drain policy may need more steps to reach the violation from the reduced list than
    # the walk did: never return a longer counterexample than the one we started from
    return actions if len(actions) <= len(first_cut) else first_cut
