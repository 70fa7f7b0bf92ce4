"""A counterexample as an ITF trace (the Informal Trace Format of Apalache and Quint).

ITF is JSON: ``{"#meta": {...}, "vars": [...], "states": [{"#meta": {"index": i}, var: value,
...}, ...]}``, integers as ``{"#bigint": "<digits>"}``, records as JSON objects, maps as
``{"#map": [[key, value], ...]}``; the ``itf-py`` package (``itf_py``) writes and reads it.
State 0 is the deployment, state ``i + 1`` the state after step ``i``
(``properties.timeline.snapshot``). Besides the state's sections (``job``, ``channels``,
``tasks``, ``checkpoints``, ``sinks``, ``keyed_state``) every state has ``action`` (the step's
action text; ``"init"`` for state 0) and ``mbt::actionTaken`` (its action kind, the variable
Quint's model-based testing names the action with), so ITF trace viewers show the step.

A dict becomes a record when every key is an identifier (a record's keys must be), a map
otherwise; lists stay lists (ITF sequences).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

from properties.timeline import build_timeline

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
VARS = ("action", "mbt::actionTaken", "job", "channels", "tasks", "checkpoints", "sinks", "keyed_state")


def _value(v):
    """Plain snapshot data -> what ``itf_py.value_to_json`` serialises as ITF."""
    if isinstance(v, dict):
        if all(isinstance(k, str) and _IDENT.match(k) for k in v):
            return SimpleNamespace(**{k: _value(x) for k, x in v.items()})
        return {k: _value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if v is None:
        return ""
    return v


def itf_trace(cx) -> dict:
    """The ITF JSON object of the whole-cluster counterexample ``cx``."""
    from itf_py import State, Trace, trace_to_json  # lazy: only `show --itf` writes ITF

    tl = build_timeline(cx, alternatives=False)
    states = []
    for i, st in enumerate(tl.states):
        step = tl.steps[i - 1] if i > 0 else None
        values = {"action": step.action if step else "init", "mbt::actionTaken": step.kind if step else "init"}
        values.update({k: _value(x) for k, x in st.items()})
        states.append(State(meta={"index": i}, values=values))
    v = tl.violation
    meta = {
        "format": "ITF",
        "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
        "source": cx.path,
        "description": f"flinkspec counterexample: {v['invariant']} violated at step {v['step']} "
                       f"(variant {tl.header.get('variant')}); state i+1 is the state after step i",
        "violation": v["message"],
    }
    out = trace_to_json(Trace(meta=meta, params=[], vars=list(VARS), states=states, loop=None))
    del out["loop"]  # optional in ITF (the index of a lasso's loop): a counterexample here is a finite trace
    return out
