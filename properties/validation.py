"""Validation of counterexample files: the schema, the header's names, and every action's
arguments against the scenario, before any step is taken.

The file is read by ``model.inputfiles`` (regular file, size, UTF-8, strict JSON per line)
and then checked here, in this order:

1. each line against its JSON Schema (:func:`counterexample_schemas`, published in
   ``docs/schemas/``): the header (format version, variant, engine, expected verdict,
   invariant, seed, the scenario: job spec, job input, configuration), the action lines,
   the violation line;
2. the header's names against the registries (:func:`check_header_names`): the engine one
   of :data:`ENGINES`, every expected verdict ``pass`` or a registered invariant, the
   invariant registered; for ``replay`` and ``show`` also the variant a known suite
   (:func:`check_variant`);
3. the scenario (:func:`scenario_from_dict`): the job spec's Flink rules, the model's size
   bounds, the job input's sources, the configuration's own rules;
4. every action (:func:`parse_action_text`, :func:`check_action_ids`): a known kind,
   arguments by the names of the kind's fields (no repeated keyword, no unknown one, none
   missing), each of its type (an ``int`` is an int, never a bool) and in its range (ids
   that exist in the scenario: channels, subtasks, TaskManagers, checkpoints triggered so
   far; operator names and parallelisms of a rescale).

Only then does the model replay the actions, each of which must be enabled when its turn
comes (``Cluster.step``'s contract). ``flinkspec show`` renders a file only after all of it.

Why JSON Schema (``jsonschema``) rather than attrs + cattrs structuring: the schema is a
document other tools can read and validate against without flinkspec, its errors carry the
path of the field, and it is generated here from the same registries the code uses (the job
spec's field tables, ``RuntimeConfig``'s attrs fields), so it cannot drift from them
(``tests/test_bad_input.py`` checks the published copies).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import attrs

from model import actions as A, seams
from model.cluster import JobInput, RuntimeConfig
from model.environment import Environment
from model.scope import ModelScope
from model.errors import FlinkspecError, InvalidJobSpec
from model.inputfiles import (
    InputError, check_schema, int_schema, short, string_schema,
)
from model.streamgraph import (
    MAX_NAME, UPPER_BOUND_MAX_PARALLELISM, check_execution_size, execution_size, job_spec_schema,
    stream_graph_from_dict,
)
from model.variants import JOB_PREFIX, Scenario

FORMAT_VERSION = 1

#: The engines that write counterexamples (``write_counterexample`` refuses any other name).
ENGINES = {
    "random_walk": "a seeded random walk (flinkspec check)",
    "hypothesis": "a Hypothesis state machine (flinkspec check, focused and cluster suites)",
    "spark-replay": "a random walk run on Spark (flinkspec spark-replay)",
    "explore": "an exhaustive exploration of the state space",
    "z3": "a z3 counterexample of flinkspec prove, replayed in the model",
    "trace-validation": "a trace of real Flink the model cannot produce (flinkspec validate; "
                        "properties/tracecounterexample.py)",
}

#: Bounds of a counterexample's scenario (the model builds every subtask and channel and
#: the replay drains every record): smaller than a job spec's, a counterexample is small.
MAX_SCENARIO_SUBTASKS = 1_000
MAX_SCENARIO_CHANNELS = 10_000
MAX_RECORDS = 100_000
MAX_SPLITS = 1_000
MAX_ACTIONS = 100_000
#: Longest action text (``RestartFromSavepoint`` with many operators is the longest kind).
MAX_ACTION_TEXT = 2_000
#: Resource bounds of the configuration (each TaskManager and slot is built).
CONFIG_MAXIMUM = {"task_managers": 256, "slots_per_task_manager": 1_024}
#: Largest id an action may name (ids are list positions or checkpoint counters).
MAX_ID = 2**31 - 1

SCHEMA_ID = "https://flinkspec.invalid/schemas/"


# -- schemas -----------------------------------------------------------------------------------

def _config_field_schema(f, owner: str = "RuntimeConfig") -> dict:
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if f.name == "control_plane_faults":
        return {"anyOf": [{"type": "array", "maxItems": len(A.CONTROL_PLANE_FAULTS), "uniqueItems": True,
                           "items": {"type": "string", "enum": list(A.CONTROL_PLANE_FAULTS)}}, {"type": "null"}]}
    if f.name == "rescale_options":
        return {"type": "array", "maxItems": 1_000, "items": {
            "type": "array", "prefixItems": [string_schema(MAX_NAME), {
                "type": "array", "maxItems": 1_000, "items": int_schema(1, UPPER_BOUND_MAX_PARALLELISM)}],
            "minItems": 2, "maxItems": 2}}
    integer = int_schema(0, CONFIG_MAXIMUM.get(f.name, MAX_ID))
    simple = {"int": integer, "bool": {"type": "boolean"}, "str": string_schema(MAX_NAME)}
    if t in simple:
        return simple[t]
    if t.endswith(" | None") and t[:-7] in simple:
        return {"anyOf": [simple[t[:-7]], {"type": "null"}]}
    raise TypeError(f"{owner}.{f.name}: no schema for the type {t!r} (add it to properties/validation.py)")


def config_schema() -> dict:
    """The configuration: ``RuntimeConfig``'s fields, each optional (a missing one takes its
    default), no other key."""
    return {"type": "object", "additionalProperties": False,
            "properties": {f.name: _config_field_schema(f) for f in attrs.fields(RuntimeConfig)}}


def environment_schema() -> dict:
    """The environment: ``Environment``'s fields, each optional (a missing one takes its
    default), no other key."""
    return {"type": "object", "additionalProperties": False,
            "properties": {f.name: _config_field_schema(f, "Environment") for f in attrs.fields(Environment)}}


def scope_schema() -> dict:
    """The model's scope: ``ModelScope``'s fields, each optional (a missing one takes its
    default), no other key."""
    return {"type": "object", "additionalProperties": False,
            "properties": {f.name: _config_field_schema(f, "ModelScope") for f in attrs.fields(ModelScope)}}


def job_input_schema() -> dict:
    record = {"type": "array", "minItems": 3, "maxItems": 3, "prefixItems": [
        {"anyOf": [int_schema(), string_schema(MAX_NAME) | {"minLength": 0}]}, int_schema(), int_schema()]}
    return {"type": "object", "maxProperties": 1_000, "propertyNames": string_schema(MAX_NAME),
            "additionalProperties": {"type": "array", "maxItems": MAX_SPLITS,
                                     "items": {"type": "array", "maxItems": MAX_RECORDS, "items": record}}}


def counterexample_schemas() -> dict[str, dict]:
    """The JSON Schemas of a counterexample's three kinds of line: ``header``, ``action``,
    ``violation`` (the files of ``docs/schemas/``)."""
    name = string_schema(MAX_NAME)
    graph = {k: v for k, v in job_spec_schema().items() if not k.startswith("$") and k != "title"}
    header = {
        "type": "object", "additionalProperties": False,
        "required": ["type", "format", "model_version", "variant", "expected_verdict", "engine", "seed",
                     "invariant", "scenario"],
        "properties": {
            "type": {"const": "header"},
            "format": {"const": FORMAT_VERSION},
            "model_version": string_schema(50),
            "variant": name,
            "expected_verdict": {"type": "array", "minItems": 1, "maxItems": 100, "uniqueItems": True,
                                 "items": name},
            "engine": {"type": "string", "enum": list(ENGINES)},
            "seed": int_schema(),
            "invariant": name,
            "scenario": {"type": "object", "additionalProperties": False,
                         "required": ["graph", "job_input", "config", "environment", "seed"],
                         "properties": {"graph": graph, "job_input": job_input_schema(),
                                        "config": config_schema(), "environment": environment_schema(),
                                        "scope": scope_schema(), "seed": int_schema(),
                                        # the seams the run switches on (model.seams): none when absent
                                        "seams": {"type": "array", "maxItems": 100, "uniqueItems": True,
                                                  "items": string_schema(MAX_NAME)}}},
            # a variant declared in a design file (flinkspec.design): the file show and replay load
            "design": {"type": "object", "additionalProperties": False, "required": ["path", "sha256"],
                       "properties": {"path": string_schema(4096),
                                      "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}},
        },
    }
    action = {
        "type": "object", "additionalProperties": False, "required": ["type", "step", "action"],
        "properties": {"type": {"const": "action"}, "step": int_schema(0, MAX_ACTIONS),
                       "action": {"type": "string", "minLength": 1, "maxLength": MAX_ACTION_TEXT}},
    }
    violation = {
        "type": "object", "additionalProperties": False,
        "required": ["type", "invariant", "step", "expected", "actual", "message"],
        "properties": {"type": {"const": "violation"}, "invariant": name,
                       "step": {"anyOf": [int_schema(0, MAX_ACTIONS + 100_000), {"type": "null"}]},
                       "expected": {}, "actual": {}, "message": {"type": "string", "maxLength": 100_000}},
    }
    out = {}
    for kind, body in (("header", header), ("action", action), ("violation", violation)):
        out[kind] = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                     "$id": f"{SCHEMA_ID}counterexample-{kind}.schema.json",
                     "title": f"flinkspec counterexample file: the {kind} line", **body}
    return out


def published_schemas() -> dict[str, dict]:
    """File name -> schema, as published in ``docs/schemas/``."""
    from properties import tracecounterexample  # lazy: the trace divergence files' schemas import this module

    out = {"job-spec.schema.json": job_spec_schema()}
    for kind, schema in counterexample_schemas().items():
        out[f"counterexample-{kind}.schema.json"] = schema
    out["counterexample-trace-header.schema.json"] = tracecounterexample.header_schema()
    out["counterexample-observed.schema.json"] = tracecounterexample.observed_schema()
    return out


def render_schema(schema: dict) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_schemas(folder) -> list[Path]:
    """(Re)write the published schemas into ``folder`` (``python -m properties.validation``)."""
    from properties.safe_io import write_atomic  # lazy: only the schema writer needs it

    return [write_atomic(Path(folder) / name, render_schema(s), what="schema")
            for name, s in published_schemas().items()]


_SCHEMAS: dict[str, dict] = {}


def schema(kind: str) -> dict:
    if not _SCHEMAS:
        _SCHEMAS.update(counterexample_schemas())
    return _SCHEMAS[kind]


# -- header names ------------------------------------------------------------------------------

def known_suites() -> tuple[str, ...]:
    """Names a counterexample's ``variant`` may have: the suites ``flinkspec check`` runs and
    the z3 checks of ``flinkspec prove`` (whose counterexamples ``properties.z3_files`` writes)."""
    from properties.catalog import check_suites, load_catalog  # lazy: loads every suite (~0.2 s), only for a file

    return tuple(e.name for e in check_suites()) + tuple(e.name for e in load_catalog() if e.kind == "z3")


def check_variant(header: dict, source: str) -> None:
    """The variant is a suite of this flinkspec, or a user's job (``job:<name>``, written by
    ``flinkspec check --job``: its scenario is stored whole). (Asked by ``replay`` and
    ``show``; the corpus tools load a file of a renamed variant to remove it.)"""
    if header["variant"].startswith(JOB_PREFIX) and len(header["variant"]) > len(JOB_PREFIX):
        return
    suites = known_suites()
    if header["variant"] not in suites:
        raise InputError(source, "1: variant", f"unknown variant {short(header['variant'])} (known: "
                                               f"{', '.join(suites)})")


def check_header_names(header: dict, source: str) -> None:
    """The expected verdicts and the invariant name registered invariants."""
    from spec.invariant import REGISTRY  # lazy: the invariant registry is filled by the engines' import

    for i, ev in enumerate(header["expected_verdict"]):
        if ev != "pass" and ev not in REGISTRY:
            raise InputError(source, f"1: expected_verdict[{i}]",
                             f"{short(ev)} is neither 'pass' nor a registered invariant")
    if header["invariant"] not in REGISTRY:
        raise InputError(source, "1: invariant", f"unknown invariant {short(header['invariant'])} "
                                                 f"(registered: {', '.join(sorted(REGISTRY))})")


# -- scenario ----------------------------------------------------------------------------------

def scenario_from_dict(d: dict, source: str = "scenario", where: str = "") -> Scenario:
    """The Scenario of a header's ``scenario`` (already schema-valid, or checked here);
    every rule broken raises :class:`InputError`."""
    check_schema(d, schema("header")["properties"]["scenario"], source, where, prefix=("scenario",))
    at = f"{where}: " if where else ""
    try:
        graph = stream_graph_from_dict(d["graph"])
        check_execution_size(graph, "job", max_subtasks=MAX_SCENARIO_SUBTASKS, max_channels=MAX_SCENARIO_CHANNELS)
    except InvalidJobSpec as e:
        raise InputError(source, f"{at}scenario.graph", str(e)) from None
    sources = {o.name for o in graph.operators if o.kind == "source"}
    splits = {}
    total = 0
    for name, sp in d["job_input"].items():
        if name not in sources:
            raise InputError(source, f"{at}scenario.job_input", f"{short(name)} is not a source operator of the "
                                                                f"job (sources: {', '.join(sorted(sources))})")
        total += sum(len(s) for s in sp)
        splits[name] = tuple(tuple((r[0], r[1], r[2]) for r in split) for split in sp)
    if total > MAX_RECORDS:
        raise InputError(source, f"{at}scenario.job_input", f"{total} records, more than the limit of {MAX_RECORDS}")
    cfg = dict(d["config"])
    env = dict(d["environment"])
    if env.get("control_plane_faults") is not None:
        env["control_plane_faults"] = tuple(env["control_plane_faults"])
    if "rescale_options" in env:
        ops = graph.operators_by_name()
        for i, (name, ps) in enumerate(env["rescale_options"]):
            if name not in ops:
                raise InputError(source, f"{at}scenario.environment.rescale_options[{i}]",
                                 f"{short(name)} is not an operator of the job")
        env["rescale_options"] = tuple((name, tuple(ps)) for name, ps in env["rescale_options"])
    try:
        config = RuntimeConfig(**cfg)
    except FlinkspecError as e:
        raise InputError(source, f"{at}scenario.config", str(e)) from None
    try:
        environment = Environment(**env)
    except FlinkspecError as e:
        raise InputError(source, f"{at}scenario.environment", str(e)) from None
    try:
        scope = ModelScope(**d.get("scope", {}))  # (absent: the default scope)
    except FlinkspecError as e:
        raise InputError(source, f"{at}scenario.scope", str(e)) from None
    try:
        scope.check(config)
    except FlinkspecError as e:
        raise InputError(source, f"{at}scenario", str(e)) from None
    try:
        on = seams.check(d.get("seams", ()))
    except FlinkspecError as e:
        raise InputError(source, f"{at}scenario.seams", str(e)) from None
    return Scenario(graph=graph, job_input=JobInput(splits), config=config, seed=d["seed"], environment=environment,
                    seams=on, scope=scope)


# -- actions -----------------------------------------------------------------------------------

def _literal(node, text: str):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        raise ValueError(f"an argument is not a literal value in {short(text)}") from None


def parse_action_text(text: str):
    """The action a line's text names, without ``eval``: a registered kind
    (``model.actions.ACTIONS_BY_NAME``) called with literal arguments, by position or by
    the names of its fields, none repeated, unknown or missing, each of its field's type.
    Raises ValueError with the rule broken (the caller adds the file and line)."""
    if len(text) > MAX_ACTION_TEXT:
        raise ValueError(f"the action text is {len(text)} characters, more than the limit of {MAX_ACTION_TEXT}")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ValueError(f"not an action: {short(text)} ({getattr(e, 'msg', None) or type(e).__name__})") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not an action: {short(text)} (expected Kind(argument=value, ...))")
    cls = A.ACTIONS_BY_NAME.get(node.func.id)
    if cls is None:
        raise ValueError(f"unknown action kind {short(node.func.id)} (known: {', '.join(A.ACTIONS_BY_NAME)})")
    fields = attrs.fields(cls)
    names = [f.name for f in fields]
    kind = cls.__name__
    if len(node.args) > len(fields):
        raise ValueError(f"{kind} takes {len(fields)} argument(s), {len(node.args)} given")
    values: dict = {}
    for f, arg in zip(fields, node.args):
        values[f.name] = _literal(arg, text)
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"{kind}: ** arguments are not allowed")
        if kw.arg not in names:
            raise ValueError(f"{kind} has no argument {short(kw.arg)} (its arguments: {', '.join(names) or 'none'})")
        if kw.arg in values:
            raise ValueError(f"{kind}: argument {kw.arg!r} is given twice")
        values[kw.arg] = _literal(kw.value, text)
    for f in fields:
        if f.name not in values:
            if f.default is attrs.NOTHING:
                raise ValueError(f"{kind}: argument {f.name!r} is missing")
            continue
        rule = _argument_rule(f, values[f.name])
        if rule:
            raise ValueError(f"{kind}: argument {f.name!r} {rule}")
    return cls(**values)


def _argument_rule(f, value) -> str | None:
    """What is wrong with ``value`` for the action field ``f`` (None: its type and static range hold)."""
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if t == "int":
        if type(value) is not int:
            return f"must be an integer, not {short(value)}"
        if not 0 <= value <= MAX_ID:
            return f"must be between 0 and {MAX_ID}, not {short(value)}"
        return None
    if t == "bool":
        return None if type(value) is bool else f"must be True or False, not {short(value)}"
    if t == "str":  # DiscardFile.path: a state file's path
        if type(value) is not str or not value or len(value) > MAX_NAME or not value.isprintable():
            return f"must be a non-empty printable string of at most {MAX_NAME} characters, not {short(value)}"
        return None
    if t == "tuple":  # RestartFromSavepoint.parallelism: ((operator, parallelism), ...)
        if type(value) is not tuple or not all(
                type(p) is tuple and len(p) == 2 and type(p[0]) is str and type(p[1]) is int
                and 1 <= p[1] <= UPPER_BOUND_MAX_PARALLELISM for p in value):
            return (f"must be a tuple of (operator name, parallelism between 1 and "
                    f"{UPPER_BOUND_MAX_PARALLELISM}) pairs, not {short(value)}")
        return None
    return f"has a type flinkspec cannot check ({t}); the action kind needs a rule in properties/validation.py"


def id_bounds(scenario: Scenario) -> dict[str, int]:
    """Upper bounds (exclusive) of the ids an action may name, from the scenario alone:
    subtasks and channels of the largest ExecutionGraph a rescale may give, TaskManagers."""
    graph = scenario.graph
    options = dict(scenario.environment.rescale_options)
    if options:
        ops = tuple(attrs.evolve(o, parallelism=max((o.parallelism, *options.get(o.name, ()))))
                    for o in graph.operators)
        graph = attrs.evolve(graph, operators=ops)
    subtasks, channels = execution_size(graph)
    return {"channel": channels, "subtask": subtasks, "task_manager": scenario.config.task_managers}


def check_action_ids(action, bounds: dict[str, int], checkpoints_triggered: int, scenario: Scenario) -> str | None:
    """What id of ``action`` cannot exist in the scenario (None: all can)."""
    for f in attrs.fields(type(action)):
        v = getattr(action, f.name)
        if f.name in bounds and not v < bounds[f.name]:
            what = f.name.replace("_", " ")
            return f"{what} {v} does not exist (the scenario has {bounds[f.name]} {what}s at most)"
        if f.name == "checkpoint_id" and not 1 <= v <= checkpoints_triggered:
            return (f"checkpoint {v} cannot exist at this step ({checkpoints_triggered} checkpoint(s) "
                    "triggered before it)")
        if f.name == "parallelism":
            ops = scenario.graph.operators_by_name()
            for name, p in v:
                if name not in ops:
                    return f"{short(name)} is not an operator of the job"
    return None


#: Actions after which one more checkpoint id may exist (the kinds that say so).
TRIGGERS = A.CHECKPOINT_TRIGGERS


if __name__ == "__main__":  # pragma: no cover - `python -m properties.validation [FOLDER]`
    import sys

    target = sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parents[1] / "docs" / "schemas")
    Path(target).mkdir(parents=True, exist_ok=True)
    for p in write_schemas(target):
        print(f"wrote {p}")
