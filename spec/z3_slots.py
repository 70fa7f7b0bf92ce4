"""z3: the minimal number of slots for a slot sharing + co-location layout, against the scheduler.

For an ExecutionGraph, z3 assigns every subtask a slot ``slot[s] in [0, #subtasks)`` under
Flink's placement rules (``SlotSharingExecutionSlotAllocator``, ``LocalInputPreferredSlotSharingStrategy``):

* a slot holds at most one subtask per JobVertex (``LocalInputPreferredSlotSharingStrategy``:
  once an execution vertex of V joins a group, the group is no longer available to V);
* a slot holds subtasks of one slot sharing group only;
* subtask ``i`` of every JobVertex of a co-location group shares one slot
  (``CoLocationGroupImpl.getLocationConstraint(i)``);

and ``z3.Optimize`` minimises the number of slots used. Because slots are interchangeable,
"number of slots used" equals ``max(slot) + 1`` after relabelling, which is the objective
given to z3 (``slot[s_t] <= t`` breaks the relabelling symmetry). The optimum is then
*proved* minimal by a second, plain solver call: no layout fits in one slot fewer (unsat).

It is compared with what the model's scheduler asks for (``model/slotsharing.py``):
``required_slots`` (the AdaptiveScheduler's ``calculateRequiredSlots``: sum over slot sharing
groups of the max parallelism), the number of execution slot sharing groups the
``LocalInputPreferredSlotSharingStrategy`` builds (one slot request each in the default
scheduler), and the slots ``allocate`` actually occupies on a TaskManager with enough slots.
All four must be equal; the registry entry ``slots_minimal`` checks this on the example
job specs and a fixed set of generated layouts.

Leaves out: resource profiles (every slot fits every group), slot request failures.
"""

from __future__ import annotations

import glob
import os
import time

import attrs
import z3

from model import slotsharing
from model.executiongraph import ExecutionGraph, build_execution_graph, compile_stream_graph
from model.jobgraph import load_job_graph
from spec import proofs

__all__ = ["SlotLayout", "min_slots", "fits_in", "scheduler_slots", "compare", "example_graphs",
           "generated_graphs", "CHECKS", "register"]


@attrs.frozen(slots=True)
class SlotLayout:
    """z3's optimum: ``slots`` used and ``slot_of_subtask`` (subtask id -> slot index);
    ``minimal_proved`` says the unsat check for ``slots - 1`` succeeded."""

    slots: int
    slot_of_subtask: tuple[int, ...]
    minimal_proved: bool


def _constraints(eg: ExecutionGraph, slot: list) -> list:
    jg = eg.job_graph
    cs = []
    n = len(eg.subtasks)
    for t, v in enumerate(slot):
        cs.append(v >= 0)
        cs.append(v <= t)  # symmetry breaking: the t-th subtask opens at most slot t
    for vid in jg.vertices:
        ids = eg.subtasks_of(vid)
        if len(ids) > 1:
            cs.append(z3.Distinct([slot[s] for s in ids]))
    ssg = [jg.vertices[st.job_vertex].slot_sharing_group for st in eg.subtasks]
    for a in range(n):
        for b in range(a + 1, n):
            if ssg[a] != ssg[b]:
                cs.append(slot[a] != slot[b])
    # co-location: subtask i of every vertex of the group in one slot
    col: dict[tuple[str, int], list[int]] = {}
    for st in eg.subtasks:
        g = jg.vertices[st.job_vertex].co_location_group
        if g is not None:
            col.setdefault((g, st.subtask_index), []).append(st.id)
    for members in col.values():
        for s in members[1:]:
            cs.append(slot[s] == slot[members[0]])
    return cs


def fits_in(eg: ExecutionGraph, slots: int, timeout_s: float | None = None) -> z3.CheckSatResult:
    """Is there a layout of ``eg`` in ``slots`` slots? (sat / unsat / unknown)"""
    slot = [z3.Int(f"slot_{s}") for s in range(len(eg.subtasks))]
    solver = z3.Solver()
    if timeout_s is not None:
        solver.set("timeout", int(timeout_s * 1000))
    solver.add(_constraints(eg, slot))
    solver.add([v < slots for v in slot])
    return solver.check()


def min_slots(eg: ExecutionGraph, timeout_s: float | None = None) -> SlotLayout | None:
    """z3's minimal layout of ``eg`` (None if z3 gives up)."""
    n = len(eg.subtasks)
    slot = [z3.Int(f"slot_{s}") for s in range(n)]
    top = z3.Int("max_slot")
    opt = z3.Optimize()
    if timeout_s is not None:
        opt.set("timeout", int(timeout_s * 1000))
    opt.add(_constraints(eg, slot))
    opt.add([v <= top for v in slot])
    opt.minimize(top)
    if opt.check() != z3.sat:
        return None
    m = opt.model()
    assignment = tuple(m.eval(v, model_completion=True).as_long() for v in slot)
    used = len(set(assignment))
    proved = used == 0 or fits_in(eg, used - 1, timeout_s) == z3.unsat
    return SlotLayout(slots=used, slot_of_subtask=assignment, minimal_proved=proved)


def scheduler_slots(eg: ExecutionGraph) -> dict[str, int]:
    """What the model's scheduler asks for: ``required`` (sum of max parallelism per slot
    sharing group), ``groups`` (execution slot sharing groups) and ``allocated`` (slots
    occupied by ``allocate`` on one TaskManager with ``required`` slots)."""
    required = sum(slotsharing.required_slots(eg).values())
    groups = slotsharing.compute_execution_slot_sharing_groups(eg)
    alloc = slotsharing.allocate(eg, [slotsharing.TaskManager("tm0", max(required, len(groups)))])
    return {"required": required, "groups": len(groups),
            "allocated": len(alloc.used_slots()) if not alloc.is_waiting else -1}


def compare(eg: ExecutionGraph, timeout_s: float | None = None) -> dict:
    """z3's minimum next to the scheduler's figures; ``agree`` when all are equal and z3's
    minimum is proved."""
    lay = min_slots(eg, timeout_s)
    sched = scheduler_slots(eg)
    z = None if lay is None else lay.slots
    agree = lay is not None and lay.minimal_proved and all(v == z for v in sched.values())
    return {"z3": z, "minimal_proved": None if lay is None else lay.minimal_proved, **sched, "agree": agree}


# ---------------------------------------------------------------------------- layouts

def example_graphs(root: str | None = None) -> list[tuple[str, ExecutionGraph]]:
    """The job specs of ``examples/`` (TOML and JSON), compiled."""
    root = root or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*.toml")) + glob.glob(os.path.join(root, "*.json"))):
        out.append((os.path.basename(path), build_execution_graph(load_job_graph(path))))
    return out


def generated_graphs(count: int = 12, *, max_operators: int = 6, max_parallelism: int = 4,
                     seed: int = 0) -> list[tuple[str, ExecutionGraph]]:
    """``count`` layouts drawn by ``properties.jobgraphs.stream_graphs`` with Hypothesis
    derandomised and seeded (the same graphs for one Hypothesis version), compiled."""
    # Hypothesis (with properties.jobgraphs ~0.35 s to import) is needed only to draw these
    # layouts, so `flinkspec prove --only <another check>` and importing this module skip it.
    from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

    from properties.jobgraphs import stream_graphs  # Hypothesis strategies: lazy, as above

    graphs: list = []

    @hseed(seed)
    @settings(max_examples=count * 3, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(stream_graphs(max_operators=max_operators, max_parallelism=max_parallelism))
    def collect(g):
        if len(graphs) < count and g not in graphs:
            graphs.append(g)

    collect()
    return [(f"generated-{i}", compile_stream_graph(g)) for i, g in enumerate(graphs)]


def _check_layouts(layouts_fn):
    def run(timeout_s: float | None = None):
        t0 = time.perf_counter()
        rows = {}
        colocated = shared_groups = 0
        for name, eg in layouts_fn():
            rows[name] = compare(eg, timeout_s)
            rows[name]["subtasks"] = len(eg.subtasks)
            vs = eg.job_graph.vertices.values()
            colocated += any(v.co_location_group is not None for v in vs)
            shared_groups += len({v.slot_sharing_group for v in vs}) > 1
        elapsed = time.perf_counter() - t0
        bad = {n: r for n, r in rows.items() if not r["agree"]}
        if any(r["z3"] is None or not r["minimal_proved"] for r in bad.values()):
            return "unknown", f"z3 gave up on {sorted(bad)} ({elapsed:.2f}s)", {"layouts": rows}
        if bad:
            n, r = sorted(bad.items())[0]
            return "counterexample", (f"{len(bad)} of {len(rows)} layouts disagree, e.g. {n}: z3 minimum "
                                      f"{r['z3']}, scheduler {r['required']} required / {r['groups']} groups / "
                                      f"{r['allocated']} allocated ({elapsed:.2f}s)"), {"layouts": rows}
        total = sum(r["subtasks"] for r in rows.values())
        return "proved", (f"{len(rows)} layouts ({total} subtasks; {colocated} with co-location, "
                          f"{shared_groups} with several slot sharing groups): z3's proved minimum = required slots = "
                          f"execution slot sharing groups = allocated slots ({elapsed:.2f}s)"), None

    run.__doc__ = "minimal slots (z3 Optimize, minimality proved) equal the scheduler's request"
    return run


def _fixed_layouts() -> list[tuple[str, ExecutionGraph]]:
    return example_graphs() + generated_graphs(12)


CHECKS = [
    ("slots_minimal", "examples/*.toml|json + 12 seeded generated layouts (<= 6 operators, p <= 4)",
     "proved", _check_layouts(_fixed_layouts)),
]


def register() -> None:
    """Register :data:`CHECKS` in ``spec.proofs``."""
    for name, scope, expected, fn in CHECKS:
        proofs.register(name, scope, expected, fn, f"slot sharing: {fn.__doc__}")
