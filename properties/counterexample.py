"""Counterexample files: one failing run per file, replayable byte for byte.

``counterexamples/<invariant>/<hash>.ndjson``, one JSON object per line (the schemas of the
three kinds of line are published in ``docs/schemas/``):

1. a header: ``{"type": "header", "format": 1, "model_version": ..., "variant": ...,
   "expected_verdict": [...], "engine": ..., "seed": ..., "invariant": ...,
   "scenario": {"graph": ..., "job_input": ..., "config": ..., "environment": ..., "seed": ...}}``
   — the scenario is stored whole, so the file replays without the generator that made it;
   a variant declared in a design file adds ``"design": {"path": ..., "sha256": ...}``, the
   file ``show`` and ``replay`` load again first (``flinkspec.design``);
2. one line per action: ``{"type": "action", "step": i, "action": "Deliver(channel=3)"}``;
3. the violation: ``{"type": "violation", "invariant": ..., "step": ..., "expected": ...,
   "actual": ..., "message": ...}``.

Files are written atomically (``properties.safe_io.write_atomic``: a temporary file in the
same folder, then ``os.replace``);
the name is a hash of the failing run (variant, engine, seed, actions, invariant), so writing
the same counterexample twice is a no-op and names survive additions to the header.
Reading checks everything before any step (``properties.validation``) and raises
:class:`CounterexampleError` naming the file, the line (and field) and the rule broken.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import attrs

from model import MODEL_VERSION
from model.cluster import retired_knob_problem
from model.environment import moved_field_problem
from model.scope import moved_field_problem as moved_to_scope_problem
from model.errors import FlinkspecError
from model.inputfiles import InputError, check_schema, decode_utf8, parse_json, read_input, short, short_text
from model.streamgraph import stream_graph_to_dict
from model.variants import VARIANTS, Scenario
from properties import scenario_kinds, validation
from properties.engines import Run
from properties.safe_io import check_output_dir, write_atomic
from spec.invariant import Violation

FORMAT_VERSION = validation.FORMAT_VERSION


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
        "environment": attrs.asdict(s.environment),
        "scope": attrs.asdict(s.scope),
        "seed": s.seed,
        **({"seams": list(s.seams)} if s.seams else {}),
    }


def scenario_from_dict(d: dict) -> Scenario:
    """The Scenario of a header's ``scenario`` dict, every field checked
    (``properties.validation.scenario_from_dict``; a broken rule raises a FlinkspecError)."""
    return validation.scenario_from_dict(d)


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
        "scenario": scenario_to_dict(scenario) if isinstance(scenario, Scenario) else
        scenario_kinds.kind_of(scenario).to_dict(scenario),
    }
    design = design_of(variant)
    if design is not None:
        header["design"] = design
    lines = [_dumps(header)]
    for i, a in enumerate(actions):
        lines.append(_dumps({"type": "action", "step": i, "action": repr(a)}))
    lines.append(_dumps({"type": "violation", **violation.to_dict()}))
    return "\n".join(lines) + "\n"


def design_of(variant: str) -> dict | None:
    """``{"path", "sha256"}`` of the design file that declared ``variant`` (``Variant.origin``:
    ``flinkspec check --design FILE``), or None for a variant of this package."""
    v = VARIANTS.get(variant)
    if v is None or v.origin is None:
        return None
    return {"path": v.origin, "sha256": hashlib.sha256(Path(v.origin).read_bytes()).hexdigest()}


def write_counterexample(directory, *, variant: str, expected: tuple, engine: str, seed: int,
                         scenario: Scenario, actions, violation: Violation) -> Path:
    """Write atomically to ``directory/<invariant>/<hash>.ndjson``; returns the path.
    An engine not in ``properties.validation.ENGINES`` is refused (a file it wrote would not
    load); a folder that cannot be written is a one-line :class:`OutputError`."""
    if engine not in validation.ENGINES:
        raise FlinkspecError(f"engine {engine!r} is not registered in properties.validation.ENGINES "
                             f"(known: {', '.join(validation.ENGINES)})")
    text = render(variant=variant, expected=expected, engine=engine, seed=seed, scenario=scenario,
                  actions=actions, violation=violation)
    # the name identifies the failing run (variant, engine, seed, actions, invariant), not the
    # file's text, so it stays the same when the header gains a configuration field
    ident = "\n".join([variant, engine, str(seed), violation.invariant] + [repr(a) for a in actions])
    digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
    folder = check_output_dir(Path(directory) / violation.invariant, what="counterexample folder")
    path = folder / f"{digest}.ndjson"
    if path.is_file() and path.read_bytes() == text.encode("utf-8"):
        return path
    write_atomic(path, text, what="counterexample")
    return path


# -- reading -----------------------------------------------------------------------------------

def load_counterexample(path, *, known_variant: bool = False) -> Counterexample:
    """Read and check every line of a counterexample file (``properties.validation``): the
    file (regular, bounded, UTF-8), each line (strict JSON, its schema), the header's names,
    the scenario, and every action's arguments against the scenario -- before any step. Any
    problem raises :class:`CounterexampleError` naming the file, the line (and field) and the
    rule. ``known_variant``: the variant must also be a suite of this flinkspec (``replay``
    and ``show`` ask for it; the corpus tools load a renamed variant's file to remove it).
    The actions' *enabledness* is checked when they are replayed (:func:`check_replay`)."""
    p = str(path)
    try:
        return _load(p, known_variant)
    except CounterexampleError:
        raise
    except InputError as e:
        raise CounterexampleError(str(e)) from None


def _load(p: str, known_variant: bool) -> Counterexample:
    raw = read_input(p, what="counterexample file")
    text = decode_utf8(raw, p)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputError(p, "", "the file is empty (expected a header line, actions and a violation)")
    if len(lines) > validation.MAX_ACTIONS + 2:
        raise InputError(p, "", f"{len(lines)} lines, more than the limit of {validation.MAX_ACTIONS + 2}")
    objs = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise InputError(p, f"{n}", "empty line")
        obj = parse_json(line, p, f"{n}")
        if not isinstance(obj, dict) or "type" not in obj:
            raise InputError(p, f"{n}", "expected an object with a 'type' field")
        objs.append(obj)
    kinds = [o["type"] for o in objs]
    if kinds[0] != "header":
        raise InputError(p, "1", f"the first line must be the header, not {short(kinds[0])}")
    if len(objs) < 2 or kinds[-1] != "violation":
        raise InputError(p, f"{len(lines)}", "the last line must be the violation")
    header = objs[0]
    if header.get("format") != FORMAT_VERSION:
        raise InputError(p, "1: format", f"format version {short(header.get('format'))} is not supported "
                                         f"(this flinkspec reads format {FORMAT_VERSION})")
    try:
        other = scenario_kinds.kind_of_dict(header.get("scenario"))  # a focused scenario, say
    except ValueError as e:
        raise InputError(p, "1: scenario.kind", str(e)) from None
    if other is not None:
        scenario, actions, violation = other.load_lines(p, header, objs, known_variant)
        return Counterexample(path=p, header=header, scenario=scenario, actions=actions, violation=violation)
    scenario_dict = header.get("scenario")
    cfg = scenario_dict.get("config") if isinstance(scenario_dict, dict) else None
    retired = retired_knob_problem(cfg) or moved_field_problem(cfg) or moved_to_scope_problem(cfg)
    if retired:  # (before the schema, which would call the knob only unknown)
        raise InputError(p, "1: scenario.config", retired)
    check_schema(header, validation.schema("header"), p, "1")
    validation.check_header_names(header, p)
    if known_variant:
        validation.check_variant(header, p)
    scenario = validation.scenario_from_dict(header["scenario"], p, "1")
    bounds = validation.id_bounds(scenario)
    actions = []
    triggered = 0
    for n, obj in enumerate(objs[1:-1], 2):
        if obj["type"] != "action":
            raise InputError(p, f"{n}", f"expected an action line, got {short(obj['type'])}")
        check_schema(obj, validation.schema("action"), p, f"{n}")
        if obj["step"] != n - 2:
            raise InputError(p, f"{n}: step", f"action step {obj['step']} out of order (expected {n - 2})")
        try:
            a = validation.parse_action_text(obj["action"])
        except ValueError as e:
            raise InputError(p, f"{n}: action", str(e)) from None
        bad = validation.check_action_ids(a, bounds, triggered, scenario)
        if bad:
            raise InputError(p, f"{n}: action", f"{short(a)}: {bad}")
        if isinstance(a, validation.TRIGGERS):
            triggered += 1
        actions.append(a)
    vd = objs[-1]
    check_schema(vd, validation.schema("violation"), p, f"{len(lines)}")
    violation = Violation.from_dict(vd)
    if violation.invariant != header["invariant"]:
        raise InputError(p, f"{len(lines)}: invariant", f"the violation names {short(violation.invariant)} but "
                                                        f"the header names {short(header['invariant'])}")
    return Counterexample(path=p, header=header, scenario=scenario, actions=tuple(actions),
                          violation=violation)


def check_replay(cx: Counterexample):
    """Replay ``cx`` under the step contract: every action must be enabled at its turn
    (else :class:`CounterexampleError` naming its line and the guard that does not hold).
    Returns the violation the run gives now (None if it gives none); the same as
    ``properties.engines.replay``: stop at the first violation or when the job FAILED,
    else drain and judge. A scenario of another kind replays by its kind's rules."""
    other = scenario_kinds.kind_of(cx.scenario)
    if other is not None:
        try:
            return other.replay(cx.scenario, cx.actions)
        except ValueError as e:
            raise CounterexampleError(f"{short_text(cx.path, 200)}: the actions do not replay: {e}") from None
    run = Run(cx.scenario)
    if run.violation is not None:
        return run.violation
    c = run.cluster
    for i, a in enumerate(cx.actions):
        reason = run.why_not_enabled(a)  # (a kind the scenario does not offer, or a guard)
        if reason is not None:
            raise CounterexampleError(f"{short_text(cx.path, 200)}:{i + 2}: step {i}: {short(a)} is not enabled: "
                                      f"{reason}")
        v = run.step(a)
        if v is not None:
            return v
        if c.status == "FAILED":
            return None
    try:
        return run.finish()
    except FlinkspecError as e:
        raise CounterexampleError(f"{short_text(cx.path, 200)}: the actions do not replay: {e}") from None


def replay_counterexample(cx: Counterexample):
    """Re-execute ``cx``; returns ``(reproduced, violation_now)``: reproduced iff the same
    invariant is violated at the same step. An action that is not enabled at its turn is
    a malformed file (:class:`CounterexampleError`)."""
    v = check_replay(cx)
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
