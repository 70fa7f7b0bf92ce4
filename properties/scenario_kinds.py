"""Scenario kinds: what a counterexample file replays on, besides the whole cluster.

Every counterexample file has one format (``properties.counterexample``): a header with a
``scenario``, one line per action, the violation. Without a ``kind`` the scenario is a
whole cluster (job graph, input, RuntimeConfig; actions from ``model.actions``), read by
``properties.counterexample`` itself. A scenario with a ``kind`` is read, replayed and shown
by the :class:`ScenarioKind` registered under that name here:

* ``focused`` -- one mechanism driven by a focused machine or checked once (valve, window
  assigner, barrier handler, CheckpointCoordinator, state assignment on rescaling); actions
  are operation texts ``name(key=value, ...)``; registered by ``properties.machines``.
* ``trace`` -- a recorded run of real Flink that the model cannot produce (``flinkspec
  validate``): the trace's header and events, and the model's run of the longest matched
  prefix; registered by ``properties.tracecounterexample``.

:func:`kind_named` imports the modules that register kinds on first use
(:data:`KIND_MODULES`), so reading a file never depends on what the caller imported.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

import attrs

#: the modules that register scenario kinds (imported on the first lookup)
KIND_MODULES = ("properties.machines", "properties.tracecounterexample")


@attrs.frozen
class ScenarioKind:
    name: str
    #: the Python type of this kind's scenarios (the writer finds the kind by it)
    scenario_type: type
    #: (source, header, parsed line objects, known_variant) -> (scenario, actions, violation);
    #: checks every line, raising ``model.inputfiles.InputError`` naming the line and the rule
    load_lines: Callable[[str, dict, list, bool], tuple]
    #: scenario -> header["scenario"] (JSON-able, with "kind")
    to_dict: Callable[[Any], dict]
    #: (scenario, actions) -> the first violation of the replay, or None; ValueError when the
    #: actions cannot be replayed
    replay: Callable[[Any, tuple], Any]
    #: (counterexample, all_state) -> the text ``flinkspec show`` prints
    explain: Callable[[Any, bool], str]
    #: counterexample -> the page ``flinkspec show --html`` writes (None: the focused page,
    #: ``properties.html.render_focused``)
    html: Callable[[Any], str] | None = None


KINDS: dict[str, ScenarioKind] = {}


def register(kind: ScenarioKind) -> ScenarioKind:
    if kind.name in KINDS and KINDS[kind.name] is not kind:
        raise ValueError(f"scenario kind {kind.name!r} is registered twice")
    KINDS[kind.name] = kind
    return kind


def _load_all() -> None:
    for module in KIND_MODULES:
        importlib.import_module(module)


def kind_named(name: str) -> ScenarioKind:
    """The kind called ``name``; ValueError naming the known kinds."""
    if name not in KINDS:
        _load_all()
    if name not in KINDS:
        raise ValueError(f"unknown scenario kind {name!r} (known: {', '.join(sorted(KINDS))})")
    return KINDS[name]


def kind_of_dict(d) -> ScenarioKind | None:
    """The kind of a header's scenario object; None for a whole-cluster scenario (no ``kind``)."""
    if not isinstance(d, dict) or "kind" not in d:
        return None
    return kind_named(str(d["kind"]))


def kind_of(scenario) -> ScenarioKind | None:
    """The kind of a scenario object, by its type; None for a whole-cluster Scenario."""
    _load_all()
    for kind in KINDS.values():
        if isinstance(scenario, kind.scenario_type):
            return kind
    return None
