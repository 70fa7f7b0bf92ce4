"""Counterexample files: one failing run per file, replayable byte for byte.

``counterexamples/<invariant>/<hash>.ndjson`` (DESIGN.md §6), one JSON object per line:

1. a header: ``{"type": "header", "format": 1, "model_version": ..., "variant": ...,
   "expected_verdict": [...], "engine": ..., "seed": ..., "invariant": ...,
   "scenario": {"graph": ..., "job_input": ..., "config": ..., "seed": ...}}``
   — the scenario is stored whole, so the file replays without the generator that made it;
2. one line per action: ``{"type": "action", "step": i, "action": "Deliver(channel=3)"}``;
3. the violation: ``{"type": "violation", "invariant": ..., "step": ..., "expected": ...,
   "actual": ..., "message": ...}``.

Files are written atomically (a temporary file in the same folder, then ``os.replace``);
the name is a hash of the failing run (variant, engine, seed, actions, invariant), so writing
the same counterexample twice is a no-op and names survive additions to the header.
Reading checks everything and raises :class:`CounterexampleError` naming the file, the
line and the problem.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import attrs

from model import MODEL_VERSION
from model.actions import parse_action
from model.cluster import JobInput, RuntimeConfig
from model.errors import FlinkspecError
from model.streamgraph import stream_graph_from_dict, stream_graph_to_dict
from model.variants import Scenario
from properties.engines import replay
from spec.invariant import Violation

FORMAT_VERSION = 1


class CounterexampleError(FlinkspecError):
    """A counterexample file is malformed or incompatible."""


@attrs.frozen(slots=True, kw_only=True)
class Counterexample:
    path: str
    header: dict
    scenario: Scenario
    actions: tuple
    violation: Violation

    @property
    def variant(self) -> str:
        return self.header.get("variant", "")

    @property
    def invariant(self) -> str:
        return self.violation.invariant


# -- scenario <-> JSON -------------------------------------------------------------------------

def scenario_to_dict(s: Scenario) -> dict:
    return {
        "graph": stream_graph_to_dict(s.graph),
        "job_input": {name: [[list(r) for r in split] for split in splits]
                      for name, splits in s.job_input.splits.items()},
        "config": attrs.asdict(s.config),
        "seed": s.seed,
    }


def _config_from_dict(d: dict) -> RuntimeConfig:
    fields = {f.name for f in attrs.fields(RuntimeConfig)}
    unknown = set(d) - fields
    if unknown:
        raise ValueError(f"unknown configuration key(s) {sorted(unknown)}")
    d = dict(d)
    if "bugs" in d:
        d["bugs"] = tuple(d["bugs"])
    if "rescale_options" in d:
        d["rescale_options"] = tuple((name, tuple(ps)) for name, ps in d["rescale_options"])
    return RuntimeConfig(**d)


def scenario_from_dict(d: dict) -> Scenario:
    unknown = set(d) - {"graph", "job_input", "config", "seed"}
    if unknown:
        raise ValueError(f"unknown scenario key(s) {sorted(unknown)}")
    splits = {}
    for name, sp in d["job_input"].items():
        splits[name] = tuple(tuple((r[0], int(r[1]), int(r[2])) for r in split) for split in sp)
    return Scenario(graph=stream_graph_from_dict(d["graph"]), job_input=JobInput(splits),
                    config=_config_from_dict(d["config"]), seed=int(d["seed"]))


# -- writing -----------------------------------------------------------------------------------

def _dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_default)


def _default(o):
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    return repr(o)


def render(*, variant: str, expected: tuple, engine: str, seed: int, scenario: Scenario, actions,
           violation: Violation) -> str:
    header = {
        "type": "header", "format": FORMAT_VERSION, "model_version": MODEL_VERSION, "variant": variant,
        "expected_verdict": list(expected), "engine": engine, "seed": seed, "invariant": violation.invariant,
        "scenario": scenario_to_dict(scenario),
    }
    lines = [_dumps(header)]
    for i, a in enumerate(actions):
        lines.append(_dumps({"type": "action", "step": i, "action": repr(a)}))
    lines.append(_dumps({"type": "violation", **violation.to_dict()}))
    return "\n".join(lines) + "\n"


def write_counterexample(directory, *, variant: str, expected: tuple, engine: str, seed: int,
                         scenario: Scenario, actions, violation: Violation) -> Path:
    """Write atomically to ``directory/<invariant>/<hash>.ndjson``; returns the path."""
    text = render(variant=variant, expected=expected, engine=engine, seed=seed, scenario=scenario,
                  actions=actions, violation=violation)
    # the name identifies the failing run (variant, engine, seed, actions, invariant), not the
    # file's text, so it stays the same when the header gains a configuration field
    ident = "\n".join([variant, engine, str(seed), violation.invariant] + [repr(a) for a in actions])
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    folder = Path(directory) / violation.invariant
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.ndjson"
    if path.exists() and path.read_text() == text:
        return path
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".ndjson", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


# -- reading -----------------------------------------------------------------------------------

def load_counterexample(path) -> Counterexample:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CounterexampleError(f"{p}: cannot read: {e.strerror or e}") from None
    lines = text.splitlines()
    if not lines:
        raise CounterexampleError(f"{p}: the file is empty (expected a header line, actions and a violation)")
    objs = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise CounterexampleError(f"{p}:{n}: empty line")
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CounterexampleError(f"{p}:{n}: not JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict) or "type" not in obj:
            raise CounterexampleError(f"{p}:{n}: expected an object with a 'type' field")
        objs.append(obj)
    header = objs[0]
    if header["type"] != "header":
        raise CounterexampleError(f"{p}:1: the first line must be the header, not {header['type']!r}")
    fmt = header.get("format")
    if fmt != FORMAT_VERSION:
        raise CounterexampleError(f"{p}:1: format version {fmt!r} is not supported (this flinkspec reads "
                                  f"format {FORMAT_VERSION})")
    for key in ("variant", "engine", "seed", "invariant", "scenario", "expected_verdict"):
        if key not in header:
            raise CounterexampleError(f"{p}:1: the header lacks {key!r}")
    try:
        scenario = scenario_from_dict(header["scenario"])
    except FlinkspecError as e:
        raise CounterexampleError(f"{p}:1: invalid scenario: {e}") from None
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise CounterexampleError(f"{p}:1: invalid scenario: {type(e).__name__}: {e}") from None
    if objs[-1]["type"] != "violation" or len(objs) < 2:
        raise CounterexampleError(f"{p}:{len(lines)}: the last line must be the violation")
    actions = []
    for n, obj in enumerate(objs[1:-1], 2):
        if obj["type"] != "action":
            raise CounterexampleError(f"{p}:{n}: expected an action line, got {obj['type']!r}")
        if obj.get("step") != n - 2:
            raise CounterexampleError(f"{p}:{n}: action step {obj.get('step')!r} out of order (expected {n - 2})")
        try:
            actions.append(parse_action(str(obj.get("action", ""))))
        except ValueError as e:
            raise CounterexampleError(f"{p}:{n}: {e}") from None
    vd = objs[-1]
    try:
        violation = Violation.from_dict(vd)
    except KeyError as e:
        raise CounterexampleError(f"{p}:{len(lines)}: the violation lacks {e}") from None
    if violation.invariant != header["invariant"]:
        raise CounterexampleError(f"{p}:{len(lines)}: the violation names {violation.invariant!r} but the "
                                  f"header names {header['invariant']!r}")
    return Counterexample(path=str(p), header=header, scenario=scenario, actions=tuple(actions),
                          violation=violation)


def replay_counterexample(cx: Counterexample):
    """Re-execute ``cx``; returns ``(reproduced, violation_now)``: reproduced iff the same
    invariant is violated at the same step."""
    try:
        v, _run = replay(cx.scenario, cx.actions, finish=True)
    except FlinkspecError as e:
        raise CounterexampleError(f"{cx.path}: the actions do not replay: {e}") from None
    ok = v is not None and v.invariant == cx.violation.invariant and v.step == cx.violation.step
    return ok, v


def corpus_files(directory) -> list[Path]:
    return sorted(Path(directory).glob("*/*.ndjson"))


def drop_stale(corpus_dir, variant: str, engine: str, keep) -> None:
    """The corpus keeps one counterexample per (variant, engine): remove the others (e.g.
    after a model change made the search find a different, shorter run)."""
    for f in corpus_files(corpus_dir):
        if Path(f) == Path(keep):
            continue
        try:
            cx = load_counterexample(f)
        except CounterexampleError:
            continue
        if cx.variant == variant and cx.header.get("engine") == engine:
            Path(f).unlink()
