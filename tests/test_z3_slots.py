"""spec/z3_slots.py: z3's minimal slot count for slot sharing + co-location layouts equals
what the model's scheduler requests (model/slotsharing.py)."""

from __future__ import annotations

import z3
from hypothesis import HealthCheck, given, settings

from model import slotsharing
from model.executiongraph import compile_stream_graph
from model.streamgraph import StreamGraphBuilder
from properties.jobgraphs import stream_graphs
from spec import proofs
from spec.z3_slots import compare, example_graphs, fits_in, generated_graphs, min_slots


def _obeys_rules(eg, assignment) -> list[str]:
    jg = eg.job_graph
    problems = []
    by_slot: dict[int, list] = {}
    for st in eg.subtasks:
        by_slot.setdefault(assignment[st.id], []).append(st)
    for slot, sts in by_slot.items():
        vertices = [s.job_vertex for s in sts]
        if len(vertices) != len(set(vertices)):
            problems.append(f"slot {slot}: two subtasks of one vertex")
        if len({jg.vertices[v].slot_sharing_group for v in vertices}) > 1:
            problems.append(f"slot {slot}: several slot sharing groups")
    for a in eg.subtasks:
        for b in eg.subtasks:
            ga = jg.vertices[a.job_vertex].co_location_group
            if ga is not None and ga == jg.vertices[b.job_vertex].co_location_group \
                    and a.subtask_index == b.subtask_index and assignment[a.id] != assignment[b.id]:
                problems.append(f"{a.name} and {b.name} co-located but apart")
    return problems


def test_co_location_and_two_slot_sharing_groups():
    """::

        src(p=3, ssg a) --hash--> agg(p=2, ssg a, co-location cl) --fwd--> map(p=2, ssg a, cl, HEAD)
                                                                         --rebalance--> out(p=4, ssg b)

    group a needs max(3, 2, 2) = 3 slots, group b 4: 7 slots, and no layout fits in 6.
    """
    b = StreamGraphBuilder("col")
    b.source("src", parallelism=3, slot_sharing_group="a")
    b.keyed_aggregate("agg", "src", parallelism=2, slot_sharing_group="a", co_location_group="cl")
    b.map("m", "agg", parallelism=2, slot_sharing_group="a", co_location_group="cl", chaining_strategy="HEAD")
    b.sink("out", "m", parallelism=4, slot_sharing_group="b")
    eg = compile_stream_graph(b.build())
    lay = min_slots(eg)
    assert lay.slots == 7 and lay.minimal_proved
    assert _obeys_rules(eg, lay.slot_of_subtask) == []
    assert fits_in(eg, 6) == z3.unsat and fits_in(eg, 7) == z3.sat
    assert compare(eg)["agree"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream_graphs(max_operators=5, max_parallelism=4))
def test_z3_minimum_equals_the_schedulers_request(g):
    eg = compile_stream_graph(g)
    row = compare(eg)
    assert row["agree"], row
    lay = min_slots(eg)
    assert _obeys_rules(eg, lay.slot_of_subtask) == []


def test_examples_and_generated_layouts_agree():
    layouts = example_graphs() + generated_graphs(6)
    assert len(layouts) >= 6
    for name, eg in layouts:
        row = compare(eg)
        assert row["agree"], (name, row)


def test_a_wrong_scheduler_is_caught(monkeypatch):
    """A scheduler that requested the *sum* of the parallelisms per group would disagree."""
    def wrong(eg):
        out: dict = {}
        for v in eg.job_graph.vertices.values():
            out[v.slot_sharing_group] = out.get(v.slot_sharing_group, 0) + v.parallelism
        return out

    _, eg = example_graphs()[0]
    assert compare(eg)["agree"]
    monkeypatch.setattr(slotsharing, "required_slots", wrong)
    row = compare(eg)
    assert not row["agree"] and row["required"] > row["z3"]


def test_slots_check_is_registered_and_proved():
    reg = proofs.load_all()
    run = proofs.run_check(reg["slots_minimal"])
    assert run.expected == "proved" and run.result == "proved", run.details
