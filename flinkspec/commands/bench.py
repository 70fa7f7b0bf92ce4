"""``flinkspec bench TARGET``: performance figures, printed as one JSON line.

Each target is a sub-subcommand registered by a ``register_<target>(subparsers)`` function
listed in :data:`TARGETS`; :data:`DESCRIPTION` is what ``bench --help`` tells a user.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import time

from flinkspec.commands import seed
from model.errors import InvalidArgument
from spark.replay import ENGINES, ReplayPlan, check_variants, fingerprint, result_frame, run_one
from spark.session import start_session, stop_session


#: ``flinkspec bench --help``
DESCRIPTION = (
    "Measure how fast flinkspec runs on this machine; each target prints one JSON line of figures "
    "(docs/performance.md explains them). model: steps per second of the reference model on a fixed "
    "trace, against a loop that only moves the same records. explore: states per second of the "
    "exhaustive search and the cost of copying, stepping and fingerprinting a state. state-repr: what candidate "
    "immutable representations of the state cost a step and a stored state. spill: the exhaustive search with "
    "its states seen and frontier spilled to disk under a small memory limit, against the search in memory. "
    "spark: the "
    "Spark replay's runs per second with one and two local cores and in a plain 2-process pool, "
    "and whether all three give identical results (exit 1 if not). "
    "`flinkspec bench TARGET --help` lists a target's options."
)


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="performance figures (one JSON line)", description=DESCRIPTION)
    sub = p.add_subparsers(dest="bench_target", metavar="TARGET")
    for register_target in TARGETS:
        register_target(sub)

    def usage(_args) -> int:
        targets = ", ".join(f.__name__.removeprefix("register_").replace("_", "-") for f in TARGETS)
        raise InvalidArgument(f"bench needs a TARGET: {targets} (see `flinkspec bench --help`)")

    p.set_defaults(func=usage)


# --------------------------------------------------------------------------- bench spark

SPARK_MASTERS = ("local[1]", "local[2]")
POOL_PROCESSES = 2


def register_spark(sub) -> None:
    p = sub.add_parser(
        "spark",
        help="replay runs/s at local[1], local[2] and in a plain 2-process pool",
        description=(
            "Runs the same seeds three times: a plain multiprocessing pool of 2 processes, "
            "then Spark at local[1] and local[2] (a fresh session each; session start and a "
            "small warm-up job are timed apart). Every way must give identical results "
            "(same fingerprint over variant, seed, verdict, invariant, steps, trace hash). "
            "Prints one JSON line; exit 1 when the results differ."
        ),
    )
    p.add_argument("--runs", metavar="N", type=int, default=20_000, help="runs (default 20000)")
    p.add_argument("--variant", metavar="NAME", action="append", default=None,
                   help="variant to run (repeatable; default: all)")
    p.add_argument("--swarm", action=argparse.BooleanOptionalAction, default=True,
                   help="switch random action kinds off per run, as `check` does (default: on)")
    p.add_argument("--seed", metavar="S", type=seed, default=0, help="first seed of the runs (default 0)")
    p.add_argument("--max-steps", metavar="K", type=int, default=None,
                   help="random-walk steps per run (default: the variant's own)")
    p.add_argument("--partitions", metavar="P", type=int, default=None,
                   help="partitions / pool chunks (default: 8 per core at local[2], at least 100 runs each)")
    p.add_argument("--engine", choices=("model", "standin"), default="model",
                   help="model: runs of the reference model (default); standin: a synthetic run, fast, "
                        "to time the pipeline itself")
    p.set_defaults(func=run_spark)


def _pool_chunk(job):
    run_fn, swarm, max_steps, chunk = job
    return [run_one(run_fn, variant, seed, swarm, max_steps) for variant, seed in chunk]


def bench_spark(engine, plan, *, masters=SPARK_MASTERS, processes=POOL_PROCESSES) -> dict:
    """The figures of ``flinkspec bench spark`` as a dict."""
    parts = plan.partitions or plan.num_partitions(processes)
    runs = plan.all_runs()
    chunks = [runs[i::parts] for i in range(parts)]  # round-robin, like Spark's range split
    out: dict = {"runs": plan.runs, "engine": engine.name, "variants": list(plan.variants),
                 "seed": plan.seed, "swarm": plan.swarm, "max_steps": plan.max_steps,
                 "partitions": parts}

    # 1. the plain pool first: forked before any JVM exists in this process
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(processes) as pool:
        rows = [r for chunk in pool.map(_pool_chunk, [(engine.run, plan.swarm, plan.max_steps, c)
                                                       for c in chunks], chunksize=1)
                for r in chunk]
    wall = time.perf_counter() - t0
    prints = {"pool2": fingerprint(rows)}
    out["wall_s_pool2"] = round(wall, 3)
    out["runs_per_second_pool2"] = round(plan.runs / wall, 1)

    # 2. Spark at each master, a fresh session each
    warm = ReplayPlan(runs=4 * len(plan.variants), variants=plan.variants, seed=plan.seed,
                      swarm=plan.swarm, max_steps=plan.max_steps)
    for master in masters:
        key = master.replace("[", "").replace("]", "").replace(",", "_").replace("*", "all")
        t0 = time.perf_counter()
        spark = start_session(master, app_name="flinkspec bench spark")
        out[f"session_start_s_{key}"] = round(time.perf_counter() - t0, 2)
        try:
            t0 = time.perf_counter()
            result_frame(spark, warm, engine.run, spark.sparkContext.defaultParallelism).collect()
            out[f"warmup_s_{key}"] = round(time.perf_counter() - t0, 2)
            t0 = time.perf_counter()
            rows = result_frame(spark, plan, engine.run, parts).collect()
            wall = time.perf_counter() - t0
        finally:
            stop_session(spark)
        prints[key] = fingerprint(rows)
        out[f"wall_s_{key}"] = round(wall, 3)
        out[f"runs_per_second_{key}"] = round(plan.runs / wall, 1)

    if "wall_s_local1" in out and "wall_s_local2" in out:
        out["speedup_local2_vs_local1"] = round(out["wall_s_local1"] / out["wall_s_local2"], 3)
        out["spark_over_plain_loop"] = round(out["wall_s_local2"] / out["wall_s_pool2"], 3)
    first = next(iter(prints.values()))
    out["consistent"] = all(fp == first for fp in prints.values())
    out["fingerprint"] = first
    return out


def run_spark(args) -> int:
    try:
        engine = ENGINES[args.engine]()
    except ImportError as e:
        raise InvalidArgument(f"--engine {args.engine}: not available ({e})") from None
    plan = ReplayPlan(runs=args.runs, variants=check_variants(args.variant, engine),
                      seed=args.seed, swarm=args.swarm, max_steps=args.max_steps,
                      partitions=args.partitions)
    figures = bench_spark(engine, plan)
    print(json.dumps(figures, sort_keys=True))
    return 0 if figures["consistent"] else 1


#: ``register_<target>`` functions, in the order ``bench --help`` lists them.
def register_model(sub) -> None:
    p = sub.add_parser(
        "model",
        help="model steps/s on the reference job, against a loop that only moves the same records",
        description=(
            "The reference job (source p=2 -> keyBy -> tumbling window p=3 -> two-phase-commit sink p=2, "
            "--records records, a checkpoint every 500 steps, delivery order drawn from --seed) is run once "
            "to record its steps, then the same steps are timed through the model and, as the floor, as "
            "plain queue operations that only move the records. Prints one JSON line: steps, "
            "steps_per_second, floor_steps_per_second and their ratio."
        ),
    )
    p.add_argument("--records", metavar="N", type=int, default=10_000, help="records of the job (default 10000)")
    p.add_argument("--seed", metavar="S", type=seed, default=7, help="seed of the delivery order (default 7)")
    p.add_argument("--repeat", metavar="K", type=int, default=3,
                   help="timings per measurement; the best is kept (default 3)")
    p.set_defaults(func=run_model)


def run_model(args) -> int:
    # lazy: the model runtime it loads is needed by `bench model` only, not at flinkspec start-up
    from benchmarks.model_bench import bench_model

    if args.records < 2 or args.repeat < 1:
        raise InvalidArgument("--records must be >= 2 and --repeat >= 1")
    print(json.dumps(bench_model(records=args.records, seed=args.seed, repeat=args.repeat)))
    return 0


def register_explore(sub) -> None:
    p = sub.add_parser(
        "explore",
        help="the exhaustive search's states/s and the cost of copying, stepping and fingerprinting a state",
        description=(
            "On a variant's small scenario (the one `flinkspec explore --variant NAME --small` searches): "
            "distinct states and transitions per CPU second of the search (up to --max-states states), "
            "then on --samples sampled states the microseconds to copy a state (against Python's "
            "copy.deepcopy), to take one step and to compute a state's fingerprint. Prints one JSON line."
        ),
    )
    p.add_argument("--variant", metavar="NAME", default="aligned-2pc",
                   help="the variant whose small scenario is searched (default aligned-2pc)")
    p.add_argument("--max-states", metavar="N", type=int, default=3000,
                   help="states the timed search visits at most (default 3000)")
    p.add_argument("--samples", metavar="N", type=int, default=300,
                   help="states the copy, step and fingerprint timings are taken on (default 300)")
    p.add_argument("--seed", metavar="S", type=seed, default=0, help="seed that picks the sampled states (default 0)")
    p.set_defaults(func=run_explore)


def run_explore(args) -> int:
    # lazy: the model and the explorer are needed by `bench explore` only, not at flinkspec start-up
    from benchmarks.explore_bench import bench_explore
    from model.variants import variant  # lazy: as above

    variant(args.variant)  # an unknown name is one line
    if args.max_states < 1 or args.samples < 1:
        raise InvalidArgument("--max-states and --samples must be >= 1")
    print(json.dumps(bench_explore(args.variant, max_states=args.max_states, samples=args.samples, seed=args.seed)))
    return 0


def register_state_repr(sub) -> None:
    p = sub.add_parser(
        "state-repr",
        help="candidate immutable representations of the model's state: microseconds a step, bytes a state",
        description=(
            "Seeded walks of several variants' small scenarios and a generated job record every state's canonical "
            "form and what each step changes; each candidate representation (plain tuples, hash-consed nodes with "
            "cached digests, frozen attrs, pyrsistent, immutables) replays the changes, and is measured beside the "
            "model's own copy and fingerprint: microseconds a step, bytes a kept and a distinct state. Every "
            "representation is checked to give back every state and to digest equal states alike "
            "(docs/architecture.md, \"State as a value\"). Prints one JSON line."
        ),
    )
    p.add_argument("--quick", action="store_true", help="short walks (about 12 s)")
    p.add_argument("--steps", metavar="N", type=int, default=None, help="steps of each walk")
    p.add_argument("--seed", metavar="S", type=seed, default=0, help="seed of the walks (default 0)")
    p.set_defaults(func=run_state_repr)


def run_state_repr(args) -> int:
    # lazy: the benchmark and its optional persistent-map libraries are needed by this target only
    from benchmarks.state_repr import bench_state_repr

    if args.steps is not None and args.steps < 1:
        raise InvalidArgument("--steps must be >= 1")
    print(json.dumps(bench_state_repr(quick=args.quick, steps=args.steps, seed=args.seed)))
    return 0


def register_spill(sub) -> None:
    p = sub.add_parser(
        "spill",
        help="the exhaustive search spilled to disk against the search in memory: same figures, seconds, memory",
        description=(
            "Searches a variant's small scenario three times, each in a fresh process, the frontier kept as "
            "traces: in memory with no memory limit, in memory under --max-memory (it ends bounded when the "
            "search needs more), and under --max-memory with the states seen and the frontier written to disk "
            "past --spill-memory. Prints one JSON line: each search's verdict, states, seconds, CPU seconds, "
            "peak resident memory and spilled megabytes, whether the spilled search gave the figures of the "
            "search in memory (exit 1 if not), and its time over the search in memory's."
        ),
    )
    p.add_argument("--variant", metavar="NAME", default="unaligned-savepoints-2pc",
                   help="the variant whose small scenario is searched (default unaligned-savepoints-2pc)")
    p.add_argument("--max-memory", metavar="SIZE", default="290M",
                   help="the memory limit of the second and third searches (default 290M)")
    p.add_argument("--spill-memory", metavar="SIZE", default="8M",
                   help="memory for the states seen and the level being built before they go to disk (default 8M)")
    p.add_argument("--frontier", choices=("traces", "auto"), default="traces",
                   help="how the frontier keeps its states (default traces: the spilled search writes them to disk)")
    p.set_defaults(func=run_spill)


def run_spill(args) -> int:
    # lazy: the explorer is needed by this target only, not at flinkspec start-up
    from benchmarks.spill_bench import bench_spill
    from model.variants import variant  # lazy: as above
    from properties.explore import parse_bytes  # lazy: as above

    variant(args.variant)  # an unknown name is one line
    parse_bytes(args.max_memory), parse_bytes(args.spill_memory)  # a bad size is one line
    result = bench_spill(args.variant, args.max_memory, args.spill_memory, args.frontier)
    print(json.dumps(result))
    return 0 if result["same_figures"] and not result["spill_files_left"] else 1


TARGETS = (register_spark, register_model, register_explore, register_state_repr, register_spill)
