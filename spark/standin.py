"""A synthetic engine with the interface of ``properties.engines`` (for the pipeline's tests).

The replay pipeline (``spark.replay``) takes its engine as a parameter. This module provides
a small, fast, deterministic stand-in so the pipeline, its retry and determinism guarantees
and the benchmark can be tested without the model (and independently of its changes):

* ``standin_walk(variant, seed, *, swarm=True, max_steps=None)`` -> :class:`StandinResult`
  (the fields of ``properties.engines.RunResult``); a seeded walk over three action kinds.
  ``standin-safe`` never violates anything; ``standin-lossy`` violates ``standin_no_loss``
  when a ``Drop`` follows a completed ``Checkpoint``; ``standin-dup`` violates
  ``standin_exactly_once`` when two ``Replay`` actions of the same offset happen (rarer).
* ``standin_shrink(variant, seed, actions, invariant)`` removes actions one at a time while
  the same invariant is still violated (a 1-minimal trace).
* ``standin_write_counterexample(directory, variant, seed, engine, actions, violation)``
  writes ``<directory>/<invariant>/<hash>.ndjson`` (header line + one action repr per line).
* :class:`FailFirstAttempt` wraps a run function so that every Spark task fails in its first
  attempt (after some runs) -- the retry test.

Nothing here is used by ``flinkspec spark-replay`` unless ``--engine standin`` is given.
The stand-in variants are entries of ``model.catalog`` (family ``spark-standin``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path

import attrs

from model import catalog
from model.errors import InvalidArgument

#: (name, expected verdict, what it does, the rule of ``_check`` that makes it unsafe)
_STANDINS = (
    ("standin-safe", ("pass",), "synthetic engine that never violates anything", None),
    ("standin-lossy", ("standin_no_loss",), "synthetic engine: a Drop after a completed Checkpoint loses a "
     "checkpointed record", "_check: Drop after a completed Checkpoint"),
    ("standin-dup", ("standin_exactly_once",), "synthetic engine: two Replay actions of the same offset emit it "
     "twice (rarer)", "_check: second Replay of an offset"),
)

#: variant -> expected verdict ('pass' or the invariant it must violate)
STANDIN_VARIANTS = {name: expected for name, expected, _what, _seam in _STANDINS}

for _name, _expected, _what, _seam in _STANDINS:
    catalog.register(catalog.Entry(
        name=_name, family="spark-standin", expected=_expected, description=_what, seam=_seam,
        command=f"flinkspec spark-replay --engine standin --runs 300 --variant {_name}"))

KINDS = ("Emit", "Checkpoint", "Drop", "Replay")
#: CPU work per step (iterations of a hash), so a run costs about as much as a small model walk.
WORK_PER_STEP = 40


@attrs.frozen(slots=True)
class Emit:
    offset: int


@attrs.frozen(slots=True)
class Checkpoint:
    checkpoint_id: int


@attrs.frozen(slots=True)
class Drop:
    offset: int


@attrs.frozen(slots=True)
class Replay:
    offset: int


@attrs.frozen(slots=True)
class StandinResult:
    seed: int
    variant: str
    verdict: str
    invariant: str | None
    steps: int
    goals: tuple
    trace_hash: str
    duration_s: float = attrs.field(eq=False)
    actions: tuple = attrs.field(repr=False)
    violation: dict | None = None

    def to_row(self) -> dict:
        return {
            "seed": self.seed,
            "variant": self.variant,
            "verdict": self.verdict,
            "invariant": self.invariant,
            "steps": self.steps,
            "goals": list(self.goals),
            "trace_hash": self.trace_hash,
            "duration_s": self.duration_s,
            "violation": self.violation,
        }


def _check(variant: str, actions) -> tuple[str | None, dict | None, set]:
    """(invariant violated or None, violation dict, goals reached) of an action list."""
    goals: set = set()
    checkpointed = False
    replayed: set = set()
    for i, a in enumerate(actions):
        if isinstance(a, Checkpoint):
            checkpointed = True
            goals.add("checkpoint_completed")
        elif isinstance(a, Drop):
            goals.add("record_dropped")
            if checkpointed and variant == "standin-lossy":
                return "standin_no_loss", {
                    "invariant": "standin_no_loss", "step": i, "expected": "no loss",
                    "actual": f"offset {a.offset} lost", "message": "a checkpointed record was lost",
                }, goals
        elif isinstance(a, Replay):
            goals.add("record_replayed")
            if a.offset in replayed and variant == "standin-dup":
                return "standin_exactly_once", {
                    "invariant": "standin_exactly_once", "step": i, "expected": 1,
                    "actual": 2, "message": f"offset {a.offset} emitted twice",
                }, goals
            replayed.add(a.offset)
    return None, None, goals


def _unknown(variant: str) -> None:
    raise InvalidArgument(f"variant {variant!r}: unknown (known: {', '.join(STANDIN_VARIANTS)})")


def standin_walk(variant: str, seed: int, *, swarm: bool = True, max_steps: int | None = None) -> StandinResult:
    """A seeded walk; same arguments -> identical result (except ``duration_s``)."""
    max_steps = 60 if max_steps is None else max_steps
    if variant not in STANDIN_VARIANTS:
        _unknown(variant)
    t0 = time.perf_counter()
    rng = random.Random(f"{variant}/{seed}/{int(swarm)}")
    if swarm:  # swarm testing: this run enables a random subset of the action kinds
        kinds = [k for k in KINDS if rng.random() < 0.75] or ["Emit"]
    else:
        kinds = list(KINDS)
    weights = {"Emit": 8, "Checkpoint": 1, "Drop": 1, "Replay": 2}
    n = rng.randint(1, max(1, min(max_steps, 60)))
    actions = []
    digest = hashlib.sha256()
    for i in range(n):
        kind = rng.choices(kinds, [weights[k] for k in kinds])[0]
        if kind == "Checkpoint":
            a = Checkpoint(i)
        else:
            a = {"Emit": Emit, "Drop": Drop, "Replay": Replay}[kind](rng.randrange(16))
        actions.append(a)
        h = repr(a).encode()
        for _ in range(WORK_PER_STEP):
            h = hashlib.sha256(h).digest()
        digest.update(h)
        invariant, violation, goals = _check(variant, actions)
        if invariant:
            break
    else:
        invariant, violation, goals = _check(variant, actions)
    return StandinResult(
        seed=seed, variant=variant,
        verdict="violation" if invariant else "pass", invariant=invariant,
        steps=len(actions), goals=tuple(sorted(goals)), trace_hash=digest.hexdigest(),
        duration_s=time.perf_counter() - t0, actions=tuple(actions), violation=violation,
    )


def standin_shrink(variant: str, seed: int, actions, invariant: str) -> list:
    """Remove actions one at a time while ``invariant`` is still violated (1-minimal)."""
    current = list(actions)
    changed = True
    while changed:
        changed = False
        for i in range(len(current)):
            candidate = current[:i] + current[i + 1:]
            if _check(variant, candidate)[0] == invariant:
                current = candidate
                changed = True
                break
    return current


def standin_write_counterexample(directory, variant, seed, engine, actions, violation, **_extra) -> Path:
    """Write ``<directory>/<invariant>/<hash>.ndjson`` atomically; the same trace -> same file."""
    invariant = violation["invariant"] if violation else "unknown"
    lines = [json.dumps({"variant": variant, "seed": seed, "engine": engine,
                         "violation": violation}, sort_keys=True)]
    lines += [json.dumps({"action": repr(a)}) for a in actions]
    text = "\n".join(lines) + "\n"
    name = hashlib.sha256("\n".join(lines[1:] + [variant, invariant]).encode()).hexdigest()[:16]
    target = Path(directory) / invariant / f"{name}.ndjson"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, target)
    return target


class InjectedTaskFailure(RuntimeError):
    """Raised by :class:`FailFirstAttempt`; the pipeline lets it fail the Spark task."""

    fails_task = True


@attrs.frozen
class FailFirstAttempt:
    """``run_fn`` wrapper: in a Spark task's first attempt, fail after ``after`` runs.

    Each failure drops a marker file into ``marker_dir`` so a test can count them.
    """

    run_fn: object
    marker_dir: str
    after: int = 2
    _runs: dict = attrs.field(factory=dict, repr=False, eq=False)  # task attempt id -> runs

    def __call__(self, variant, seed, **kw):
        from pyspark import TaskContext  # lazy: importing spark.standin must not import pyspark

        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0:
            key = ctx.taskAttemptId()
            self._runs[key] = self._runs.get(key, 0) + 1
            if self._runs[key] > self.after:
                marker = Path(self.marker_dir) / f"stage{ctx.stageId()}-part{ctx.partitionId()}"
                marker.write_text(str(ctx.taskAttemptId()))
                raise InjectedTaskFailure(f"injected failure in partition {ctx.partitionId()}")
        return self.run_fn(variant, seed, **kw)
