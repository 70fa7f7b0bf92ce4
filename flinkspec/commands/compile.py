"""``flinkspec compile FILE``: show how a job spec is chained, wired and placed.

Prints the JobGraph (chains), the ExecutionGraph wiring (channels per JobEdge) and the slot
placement on ``--task-managers N`` TaskManagers with ``--slots S`` slots each (default: the
cluster of the file's ``[runtime]`` table, the one ``check --job`` runs the job on: its
``task_managers`` and ``slots_per_task_manager``, else 1 slot each and as many TaskManagers as
the job needs), or ``WAITING_FOR_RESOURCES`` with the figures. ``--json`` prints the same as one JSON document. An invalid spec is a one-line
error and exit code 2.
"""

from __future__ import annotations

import argparse
import json

from model.errors import InvalidArgument
from model.inputfiles import read_json_or_toml, short
from model.executiongraph import ExecutionGraph, build_execution_graph
from model.jobfile import cluster_shape, load_job_file
from model.jobgraph import load_job_graph
from model.slotsharing import SlotAllocation, TaskManager, allocate, required_slots


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compile",
        help="compile a job spec (TOML/JSON) to its JobGraph, ExecutionGraph and slot placement",
        description=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("file", metavar="FILE", help="job spec (.toml or .json)")
    p.add_argument("--task-managers", type=int, default=None, metavar="N",
                   help="number of TaskManagers (default: the file's [runtime] task_managers, else as many "
                        "as the job needs)")
    p.add_argument("--slots", type=int, default=None, metavar="S",
                   help="slots per TaskManager (default: the file's [runtime] slots_per_task_manager, else 1, "
                        "Flink's taskmanager.numberOfTaskSlots)")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)


#: Bounds of the cluster ``compile`` places the job on (each TaskManager and slot is built).
MAX_TASK_MANAGERS = 10_000
MAX_TOTAL_SLOTS = 100_000


def task_managers(n: int, slots: int) -> list[TaskManager]:
    width = len(str(n))
    return [TaskManager(f"tm-{i:0{width}d}", slots) for i in range(1, n + 1)]


def run(args: argparse.Namespace) -> int:
    if args.task_managers is not None and not 1 <= args.task_managers <= MAX_TASK_MANAGERS:
        raise InvalidArgument(f"--task-managers must be between 1 and {MAX_TASK_MANAGERS}, "
                              f"not {short(args.task_managers)}")
    if args.slots is not None and not 0 <= args.slots <= MAX_TOTAL_SLOTS:
        raise InvalidArgument(f"--slots must be between 0 and {MAX_TOTAL_SLOTS}, not {short(args.slots)}")
    load_job_file(args.file)  # the whole file: the graph, and the [runtime] / [input] tables it may hold
    eg = build_execution_graph(load_job_graph(args.file))  # loads, validates and chains once
    required = sum(required_slots(eg).values())
    table = read_json_or_toml(args.file, what="job spec").get("runtime", {})  # valid: load_job_file checked it
    n, slots = cluster_shape(required,
                             table.get("task_managers") if args.task_managers is None else args.task_managers,
                             table.get("slots_per_task_manager") if args.slots is None else args.slots)
    if n * slots > MAX_TOTAL_SLOTS:
        raise InvalidArgument(f"--task-managers {n} x --slots {slots} = {n * slots} slots, more than the "
                              f"limit of {MAX_TOTAL_SLOTS}")
    allocation = allocate(eg, task_managers(n, slots))
    if args.json:
        print(json.dumps(to_json(eg, allocation), indent=2))
    else:
        print(render_text(eg, allocation))
    return 0


def _channel_text(eg: ExecutionGraph, ch) -> str:
    return f"{eg.subtasks[ch.producer].name}[{ch.subpartition}] -> {eg.subtasks[ch.consumer].name}"


def render_text(eg: ExecutionGraph, allocation: SlotAllocation) -> str:
    jg = eg.job_graph
    sg = eg.stream_graph
    lines = [
        f"job {sg.name!r}: {len(sg.operators)} operators, {len(sg.edges)} stream edges -> "
        f"{len(jg.vertices)} job vertices, {len(jg.edges)} job edges, "
        f"{len(eg.subtasks)} subtasks, {len(eg.channels)} channels",
        "",
        "JobGraph (operator chains, topological order):",
    ]
    for v in jg.vertices.values():
        extra = f", co-location {v.co_location_group!r}" if v.co_location_group else ""
        maxp = f"{v.max_parallelism}{'' if v.max_parallelism_configured else ' (default)'}"
        lines.append(
            f"  {v.id}: [{' -> '.join(v.operators)}]  parallelism {v.parallelism}, max parallelism {maxp}, "
            f"slot sharing group {v.slot_sharing_group!r}{extra}"
        )
    lines += ["", "ExecutionGraph wiring (producer[subpartition] -> consumer):"]
    if not jg.edges:
        lines.append("  (no job edges)")
    by_edge: dict[int, list] = {e.index: [] for e in jg.edges}
    for ch in eg.channels:
        by_edge[ch.job_edge].append(ch)
    for e in jg.edges:
        chans = by_edge[e.index]
        lines.append(
            f"  edge #{e.index} {e.source_vertex} -> {e.target_vertex} ({e.source_operator} -> {e.target_operator}): "
            f"{e.partitioner}, {e.distribution}, {e.result_partition_type}, {len(chans)} channels"
            + ("" if e.supports_unaligned_checkpoints else ", barriers always aligned (no unaligned checkpoints)")
        )
        for ch in chans:
            lines.append(f"    channel {ch.id}: {_channel_text(eg, ch)} (gate {ch.gate}, channel {ch.gate_channel})")
    lines.append("")
    req = ", ".join(f"{k!r}: {v}" for k, v in allocation.required_slots.items())
    tms = allocation.task_managers
    lines.append(
        f"Slot placement on {len(tms)} TaskManager(s) x {tms[0].number_of_slots if tms else 0} slots "
        f"(required {allocation.total_required_slots}: {req}; available {allocation.available_slots}):"
    )
    if allocation.is_waiting:
        lines.append(
            f"  WAITING_FOR_RESOURCES: the job needs {allocation.total_required_slots} slots, "
            f"{allocation.available_slots} available"
        )
    else:
        for g, group in enumerate(allocation.groups):
            names = ", ".join(eg.subtasks[s].name for s in group.subtasks)
            lines.append(f"  {allocation.slot_of_group[g]} ({group.slot_sharing_group!r}): {names}")
    return "\n".join(lines)


def to_json(eg: ExecutionGraph, allocation: SlotAllocation) -> dict:
    jg = eg.job_graph
    return {
        "job": eg.stream_graph.name,
        "job_vertices": [
            {
                "id": v.id, "operators": list(v.operators), "parallelism": v.parallelism,
                "max_parallelism": v.max_parallelism, "max_parallelism_configured": v.max_parallelism_configured,
                "slot_sharing_group": v.slot_sharing_group, "co_location_group": v.co_location_group,
                "subtasks": list(eg.subtasks_of(v.id)),
            }
            for v in jg.vertices.values()
        ],
        "job_edges": [
            {
                "index": e.index, "source_vertex": e.source_vertex, "target_vertex": e.target_vertex,
                "source_operator": e.source_operator, "target_operator": e.target_operator,
                "partitioner": e.partitioner, "exchange_mode": e.exchange_mode,
                "distribution": e.distribution, "result_partition_type": e.result_partition_type,
                "supports_unaligned_checkpoints": e.supports_unaligned_checkpoints,
                "channels": [
                    {"id": ch.id, "producer": eg.subtasks[ch.producer].name, "subpartition": ch.subpartition,
                     "consumer": eg.subtasks[ch.consumer].name, "gate": ch.gate, "gate_channel": ch.gate_channel}
                    for ch in eg.channels if ch.job_edge == e.index
                ],
            }
            for e in jg.edges
        ],
        "placement": {
            "state": allocation.state,
            "required_slots": allocation.required_slots,
            "total_required_slots": allocation.total_required_slots,
            "available_slots": allocation.available_slots,
            "task_managers": [{"id": t.id, "slots": t.number_of_slots} for t in allocation.task_managers],
            "slots": [
                {"slot": str(allocation.slot_of_group[g]), "slot_sharing_group": group.slot_sharing_group,
                 "subtasks": [eg.subtasks[s].name for s in group.subtasks]}
                for g, group in enumerate(allocation.groups)
            ] if not allocation.is_waiting else [],
        },
    }
