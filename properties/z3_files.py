"""z3 counterexamples as counterexample files: every failure of ``flinkspec prove`` is a file.

A z3 check expected to fail (a mutation, a historical bug mechanism) ends with a trace in its
own encoding. ``flinkspec prove`` already replays each trace in the model (the cross-check);
this module turns the trace into the one counterexample format, so that ``flinkspec show``
and ``flinkspec replay`` read it like any other failure:

* a ``StatusWatermarkValve`` trace (``spec.z3_valve``: inputs ``("watermark", channel, wm)``,
  ``("idle", channel)``, ``("active", channel)``) becomes a focused ``valve`` scenario with
  the check's valve knobs; each input is the operation of the same name of the focused valve
  machine (``properties.machines``), judged by the registered valve invariants;
* a barrier trace (``spec.z3_barriers``: ``("SourceEmit", c)``, ``("Deliver", c)``,
  ``("TriggerCheckpoint",)`` on the topology the check names) becomes a whole-cluster
  scenario (the model topology of ``spec.z3_barriers.model_topology``) and the model actions
  the cross-check replays, judged by the cluster's invariants (``consistent_cut``).

A file is written only when the model, replaying it, violates a registered invariant: the
header names that invariant as the expected verdict and the z3 check as the variant. A trace
of another encoding is not converted (``counterexample_of`` returns None).
"""

from __future__ import annotations

from pathlib import Path

from model.cluster import Cluster, RuntimeConfig
from model.scope import ModelScope
from model.variants import Scenario
from properties.counterexample import write_counterexample
from properties.engines import replay
from properties.machines import FocusedOp, FocusedScenario, replay_focused

ENGINE = "z3"


def _valve(cex: dict):
    knobs = dict(cex.get("knobs") or {})
    sc = FocusedScenario("valve", {"knobs": knobs}, {"n": int(cex["channels"])})
    ops = []
    for inp in cex["trace"]:
        if inp[0] == "watermark":
            ops.append(FocusedOp("watermark", (("channel", inp[1]), ("wm", inp[2]))))
        else:
            ops.append(FocusedOp(inp[0], (("channel", inp[1]),)))
    return sc, tuple(ops), replay_focused(sc, ops)


def _barriers(cex: dict):
    from spec.z3_barriers import MODE_CONFIG, MODE_SEAMS, Topology, model_topology, to_model_action  # lazy: imports z3

    topo = Topology(**cex["topology"])
    eg, job_input = model_topology(topo.records, topo.channels)
    cfg = RuntimeConfig(max_concurrent_checkpoints=1, **MODE_CONFIG[topo.mode])
    on, scope = MODE_SEAMS.get(topo.mode, ()), ModelScope(channel_capacity=topo.capacity)
    scenario = Scenario(graph=eg.stream_graph, job_input=job_input, config=cfg, seed=0, seams=on, scope=scope)
    cluster = Cluster(eg, job_input, cfg, seed=0, seams=on, scope=scope)
    actions = []
    for a in cex["trace"]:
        ma = to_model_action(cluster, tuple(a))
        cluster.step(ma)
        actions.append(ma)
    violation, _run = replay(scenario, actions)
    return scenario, tuple(actions), violation


def counterexample_of(cex: dict | None):
    """``(scenario, actions, violation)`` of a z3 check's counterexample replayed in the model,
    or None when its encoding has no model counterpart or the model shows no violation."""
    if not isinstance(cex, dict) or "trace" not in cex:
        return None
    if "topology" in cex:
        scenario, actions, violation = _barriers(cex)
    elif "channels" in cex:
        scenario, actions, violation = _valve(cex)
    else:
        return None
    return None if violation is None else (scenario, actions, violation)


def write_z3_counterexamples(runs, directory) -> list[Path]:
    """Write a file for every run of ``runs`` (``spec.proofs.ProofRun``) that found a
    counterexample the model reproduces; returns the paths."""
    paths = []
    for r in runs:
        if r.result != "counterexample":
            continue
        got = counterexample_of(r.counterexample)
        if got is None:
            continue
        scenario, actions, violation = got
        paths.append(write_counterexample(directory, variant=r.name, expected=(violation.invariant,), engine=ENGINE,
                                          seed=0, scenario=scenario, actions=actions, violation=violation))
    return paths
