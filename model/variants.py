"""Named configurations — safe ones and known-unsafe ones — with their expected verdicts.

A :class:`Variant` is a family of scenarios (job shape + input + runtime configuration)
generated from a seed, plus what a search over it must conclude: ``expected="pass"`` for a
safe configuration, or the invariant(s) the search must find violated. Unsafe variants
are how a user knows the suite has teeth: each one re-introduces a setting that is known
to break a guarantee, or a historical Flink bug mechanism (named by its FLINK key).

The jobs are generated, not fixed, so the search stays general: parallelisms, window
sizes, partitioners, keys, disorder and input sizes vary with the seed.

Expected verdicts are invariant *names* (strings): ``model`` never imports ``spec``.

Every variant is also an entry of ``model.catalog`` (family ``cluster/<job family>``), with
its *seam*: the definition a re-introduced bug overrides (``model.seams``), or the unsafe
knobs it switches (``switches``), e.g. ``RuntimeConfig.skip_consumer_regions=True``.
"""

from __future__ import annotations

import random

import attrs

from model import catalog, seams
from model.catalog import PASS
from model.cluster import JobInput, RuntimeConfig
from model.errors import FlinkspecError, InvalidJobSpec
from model.rescaling import rescale_graph
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph

DEFAULT_SINK = "two_phase_commit"


@attrs.frozen(slots=True, kw_only=True)
class Scenario:
    """Everything a run needs besides the choice of actions: replayable from a file."""

    graph: StreamGraph
    job_input: JobInput
    config: RuntimeConfig
    seed: int


@attrs.frozen(slots=True, kw_only=True)
class Small:
    """The smallest scenario of a variant that still exercises its mechanism, for exhaustive
    exploration (``small_scenario``): ``sources`` source subtasks (one split each) of
    ``records`` records over ``keys``, at most ``checkpoints`` checkpoints/savepoints
    (``RuntimeConfig.max_checkpoints``) and ``failures`` injected failures."""

    sources: int = 1
    records: int = 1
    keys: tuple = (0, 1)
    checkpoints: int = 1
    failures: int = 1


@attrs.frozen(slots=True, kw_only=True)
class Variant:
    name: str
    description: str
    #: "pass", or the invariant names any one of which the search must find violated.
    expected: tuple = (PASS,)
    family: str = "keyed"
    config: RuntimeConfig = RuntimeConfig()
    flink_key: str | None = None
    #: random-walk step budget before the run is drained.
    max_steps: int = 400
    #: the sink of the generated jobs ("two_phase_commit", "upsert", "append").
    sink_kind: str = DEFAULT_SINK
    #: the knobs that make this variant unsafe: ``RuntimeConfig`` field names, or
    #: ``"sink_kind"``; each must differ from its default (checked when registered).
    switches: tuple = ()
    #: the variant's smallest scenario, for ``flinkspec explore --small``
    small: Small = Small()

    @property
    def safe(self) -> bool:
        return self.expected == (PASS,)

    @property
    def seam(self) -> str | None:
        """What this variant switches: the ``Class.method`` each re-introduced bug overrides
        (``model.seams``; a bug whose seam is not registered is named as its knob), then the
        unsafe knobs. None for a variant that switches nothing unsafe."""
        parts = [seams.SEAMS[k].definition for k in self.config.bugs if k in seams.SEAMS]
        pending = tuple(k for k in self.config.bugs if k not in seams.SEAMS)
        if pending:
            parts.append(f"RuntimeConfig.bugs={pending!r}")
        for knob in self.switches:
            if knob == "sink_kind":
                parts.append(f"OperatorSpec.sink_kind={self.sink_kind!r}")
            else:
                parts.append(f"RuntimeConfig.{knob}={getattr(self.config, knob)!r}")
        return ", ".join(parts) or None


# -- job families ----------------------------------------------------------------------------

def _records(rng: random.Random, n: int, ooo: int, keys, t0: int = 0) -> tuple:
    """``n`` records with event times increasing with disorder at most ``ooo``."""
    out = []
    t = t0
    for _ in range(n):
        t += rng.randint(0, 3)
        ts = t - rng.randint(0, ooo)
        out.append((rng.choice(keys), rng.randint(1, 9), ts))
    return tuple(out)


def _input(rng, graph: StreamGraph, ooo: int, min_records=3, max_records=8, negative=False) -> JobInput:
    keys = rng.choice([[0, 1, 2], [0, 1, 2, 3, 4], ["a", "b", "c"], [7, 42, -1, 1000]])
    splits = {}
    for o in graph.operators:
        if o.kind == "source":
            n_splits = rng.choice([o.parallelism, o.parallelism + 1])
            t0 = rng.randint(-30, 0) if negative else 0
            splits[o.name] = tuple(
                _records(rng, rng.randint(min_records, max_records), ooo, keys, t0) for _ in range(n_splits))
    return JobInput(splits)


def _keyed_job(rng: random.Random, sink_kind: str, *, max_parallelism=None, upsert_safe=False) -> StreamGraph:
    """source -> [map] -> keyBy -> window | keyed count -> sink, with varied parallelism."""
    ooo = rng.randint(0, 3)
    ps = rng.choice([1, 2, 2])
    ops = [OperatorSpec(name="source", kind="source", parallelism=ps, watermark_out_of_orderness=ooo)]
    edges = []
    prev = "source"
    if rng.random() < 0.4:
        ops.append(OperatorSpec(name="map", kind="map", parallelism=ps, function=rng.choice(["add:1", "double", "identity"])))
        edges.append(EdgeSpec(source="source", target="map", partitioner="forward"))
        prev = "map"
    pk = rng.choice([1, 2, 3])
    if rng.random() < 0.6:
        size = rng.choice([3, 5, 8])
        slide = rng.choice([None, None, max(1, size // 2)])
        ops.append(OperatorSpec(name="agg", kind="window", parallelism=pk, max_parallelism=max_parallelism,
                                aggregate=rng.choice(["count", "sum"]), window_size=size,
                                window_slide=slide, allowed_lateness=rng.choice([0, 0, 2])))
    else:
        ops.append(OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=pk,
                                max_parallelism=max_parallelism, aggregate="count"))
    edges.append(EdgeSpec(source=prev, target="agg", partitioner="hash"))
    pt = rng.choice([1, 2])
    part = "hash" if upsert_safe else rng.choice(["rebalance", "hash", "forward" if pt == pk else "rebalance"])
    ops.append(OperatorSpec(name="sink", kind="sink", parallelism=pt, sink_kind=sink_kind))
    edges.append(EdgeSpec(source="agg", target="sink", partitioner=part))
    return StreamGraph(name="keyed-job", operators=tuple(ops), edges=tuple(edges)).validate()


def _blocking_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """Sources (own slot sharing group) --rebalance, blocking--> map -> keyBy count -> sink.

    Two TaskManagers: the sources' slots and the rest can live on different ones, so losing
    a TaskManager can lose a finished producer's blocking partition while its consumers run.
    """
    ops = (
        OperatorSpec(name="source", kind="source", parallelism=2, slot_sharing_group="sources",
                     watermark_out_of_orderness=2),
        OperatorSpec(name="map", kind="map", parallelism=2, function="identity"),
        OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=2, aggregate="count"),
        OperatorSpec(name="sink", kind="sink", parallelism=2, sink_kind=sink_kind),
    )
    edges = (
        EdgeSpec(source="source", target="map", partitioner="rebalance", exchange_mode="blocking"),
        EdgeSpec(source="map", target="agg", partitioner="hash"),
        EdgeSpec(source="agg", target="sink", partitioner="forward"),
    )
    return StreamGraph(name="blocking-job", operators=ops, edges=edges).validate()


def _two_stage_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """source p=2 --rebalance--> map p=2 --hash--> keyed count p=1..2 --> sink: barriers reach
    the keyed operator through two independently scheduled upstream tasks."""
    ops = (
        OperatorSpec(name="source", kind="source", parallelism=2, watermark_out_of_orderness=1),
        OperatorSpec(name="map", kind="map", parallelism=2, function="identity"),
        OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=rng.choice([1, 2]), aggregate="count"),
        OperatorSpec(name="sink", kind="sink", parallelism=1, sink_kind=sink_kind),
    )
    edges = (
        EdgeSpec(source="source", target="map", partitioner="rebalance"),
        EdgeSpec(source="map", target="agg", partitioner="hash"),
        EdgeSpec(source="agg", target="sink", partitioner="rebalance"),
    )
    return StreamGraph(name="two-stage-job", operators=ops, edges=edges).validate()


def _rescale_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    return _keyed_job(rng, sink_kind, max_parallelism=rng.choice([6, 10, 7]))


FAMILIES = {"keyed": _keyed_job, "blocking": _blocking_job, "rescale": _rescale_job, "two_stage": _two_stage_job}


def generate(variant: Variant, seed: int) -> Scenario:
    """The scenario of ``variant`` for ``seed`` (deterministic)."""
    rng = random.Random(f"{variant.name}:{seed}")
    sink_kind = variant.sink_kind
    if variant.family == "keyed":
        graph = _keyed_job(rng, sink_kind, upsert_safe=sink_kind == "upsert")
    else:
        graph = FAMILIES[variant.family](rng, sink_kind)
    negative = variant.family == "keyed" and rng.random() < 0.3
    job_input = _input(rng, graph, max(o.watermark_out_of_orderness for o in graph.operators if o.kind == "source"),
                       negative=negative)
    config = variant.config
    if variant.family == "rescale":
        keyed = next(o for o in graph.operators if o.name == "agg")
        options = []
        for p in range(1, keyed.max_parallelism + 1):
            if p == keyed.parallelism:
                continue
            try:
                rescale_graph(graph, {"agg": p})
            except InvalidJobSpec:
                continue
            options.append(p)
        config = attrs.evolve(config, rescale_options=(("agg", tuple(options[:4])),))
    return Scenario(graph=graph, job_input=job_input, config=config, seed=seed)


def small_scenario(variant: Variant, seed: int = 0) -> Scenario:
    """The smallest scenario of ``variant``'s job family that still exercises its mechanism
    (``variant.small``): parallelism 1 wherever the mechanism does not need more, a few
    records, a checkpoint budget and a failure budget of at most ``small.failures``, so the
    reachable state space is finite and small enough to explore completely. ``seed`` only
    seeds what the scenario seeds (a rebalance's random start)."""
    sm = variant.small
    sink_kind = variant.sink_kind
    src = OperatorSpec(name="source", kind="source", parallelism=sm.sources, watermark_out_of_orderness=0,
                       slot_sharing_group="sources" if variant.family == "blocking" else None)
    sink = OperatorSpec(name="sink", kind="sink", parallelism=1, sink_kind=sink_kind)
    if variant.family == "keyed":
        ops = (src, OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=1, aggregate="count"), sink)
        edges = (EdgeSpec(source="source", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="forward"))
    elif variant.family == "rescale":
        ops = (src, OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=1, max_parallelism=4,
                                 aggregate="count"), sink)
        edges = (EdgeSpec(source="source", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="rebalance"))
    elif variant.family == "blocking":
        ops = (src, OperatorSpec(name="map", kind="map", parallelism=1, function="identity"),
               OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=1, aggregate="count"), sink)
        edges = (EdgeSpec(source="source", target="map", partitioner="rebalance", exchange_mode="blocking"),
                 EdgeSpec(source="map", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="forward"))
    elif variant.family == "two_stage":
        ops = (src, OperatorSpec(name="map", kind="map", parallelism=2, function="identity"),
               OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=1, aggregate="count"), sink)
        edges = (EdgeSpec(source="source", target="map", partitioner="rebalance"),
                 EdgeSpec(source="map", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="forward"))
    else:  # pragma: no cover - _add checks the family
        raise FlinkspecError(f"variant {variant.name!r}: no small scenario for family {variant.family!r}")
    graph = StreamGraph(name=f"{variant.family}-small", operators=ops, edges=edges).validate()
    keys = sm.keys
    splits = tuple(tuple((keys[(i + j) % len(keys)], 1, i + 1) for i in range(sm.records)) for j in range(sm.sources))
    config = attrs.evolve(variant.config, max_failures=min(variant.config.max_failures, sm.failures),
                          max_checkpoints=sm.checkpoints)
    if variant.family == "rescale":
        config = attrs.evolve(config, rescale_options=(("agg", (2,)),))
    return Scenario(graph=graph, job_input=JobInput({"source": splits}), config=config, seed=seed)


_F = dict(max_failures=2)

VARIANTS: dict[str, Variant] = {}


def _add(v: Variant) -> None:
    """Register ``v`` here and in ``model.catalog``."""
    if v.family not in FAMILIES:
        raise ValueError(f"variant {v.name!r}: unknown job family {v.family!r}")
    for knob in v.switches:
        default = DEFAULT_SINK if knob == "sink_kind" else getattr(RuntimeConfig(), knob)
        value = v.sink_kind if knob == "sink_kind" else getattr(v.config, knob)
        if value == default:
            raise ValueError(f"variant {v.name!r}: switch {knob!r} is at its default {default!r}")
    if v.name in VARIANTS:
        raise ValueError(f"variant {v.name!r} is declared twice")
    VARIANTS[v.name] = v
    catalog.register(catalog.Entry(
        name=v.name, family=f"cluster/{v.family.replace('_', '-')}", expected=v.expected,
        description=v.description, flink_key=v.flink_key, seam=lambda: v.seam,  # read when asked: see seam
        command=f"flinkspec check --only {v.name}"))


# -- safe configurations ---------------------------------------------------------------------
_add(Variant(name="aligned-2pc", description="aligned exactly-once checkpoints, two-phase-commit sink, "
             "region failover, task failures", config=RuntimeConfig(**_F)))
_add(Variant(name="aligned-2pc-restart-all", description="as aligned-2pc with restart-all failover and "
             "JobManager failover", config=RuntimeConfig(failover_strategy="full", **_F)))
_add(Variant(name="concurrent-checkpoints-2pc", description="aligned exactly-once with two concurrent "
             "checkpoints (subsumption)", config=RuntimeConfig(max_concurrent_checkpoints=2, **_F), small=Small(checkpoints=2)))
_add(Variant(name="unaligned-2pc", description="unaligned checkpoints with channel state, 2PC sink",
             config=RuntimeConfig(unaligned=True, channel_capacity=3, **_F)))
_add(Variant(name="alternating-2pc", description="aligned checkpoints timing out into unaligned ones "
             "(aligned-checkpoint-timeout)", config=RuntimeConfig(unaligned=True, aligned_checkpoint_timeout=4,
                                                                 channel_capacity=3, **_F)))
_add(Variant(name="unaligned-savepoints-2pc", description="unaligned checkpoints concurrent with aligned "
             "savepoints through a two-stage job (the safe twin of FLINK-20645)", family="two_stage",
             config=RuntimeConfig(unaligned=True, max_concurrent_checkpoints=2, trigger_savepoints=True,
                                  channel_capacity=3, **_F), small=Small(checkpoints=2, records=2)))
_add(Variant(name="upsert-sink", description="idempotent upsert sink keyed like its input, task failures",
             sink_kind="upsert", config=RuntimeConfig(**_F)))
_add(Variant(name="blocking-region-failover", description="blocking exchange, pipelined regions, "
             "TaskManager loss (producer regions backtracked, consumers restarted)", family="blocking",
             config=RuntimeConfig(**_F)))
_add(Variant(name="rescale-savepoint", description="stop-with-savepoint and restart with a new "
             "parallelism (key groups by range)", family="rescale",
             config=RuntimeConfig(savepoints=True, max_failures=1), max_steps=500, small=Small(records=2, keys=(0, 1, 2, 3))))

_add(Variant(name="rescale-unaligned-checkpoint", description="unaligned checkpoints; the job is resubmitted "
             "from its latest checkpoint, in-flight data included, with another parallelism (channel state "
             "reassigned by SubtaskStateMapper)", family="rescale",
             config=RuntimeConfig(unaligned=True, rescale_from_checkpoints=True, channel_capacity=3, max_failures=1),
             max_steps=500, small=Small(records=2, keys=(0, 1, 2, 3))))

# -- known-unsafe configurations -------------------------------------------------------------
_add(Variant(name="at-least-once-2pc", description="at-least-once barrier tracking with a two-phase-commit "
             "sink: post-barrier records enter the snapshot", expected=("consistent_cut",),
             switches=("checkpointing_mode",),
             config=RuntimeConfig(checkpointing_mode="at_least_once", **_F), small=Small(sources=2)))
_add(Variant(name="unaligned-without-channel-state", description="unaligned checkpoints that drop the "
             "in-flight data", expected=("consistent_cut",), switches=("unaligned_channel_state",),
             config=RuntimeConfig(unaligned=True, unaligned_channel_state=False, channel_capacity=3, **_F)))
_add(Variant(name="append-sink-under-failures", description="a plain append sink: output written before a "
             "failure is written again after the restore", expected=("committed_output_within_reference",
                                                                        "exactly_once"),
             sink_kind="append", switches=("sink_kind",), config=RuntimeConfig(**_F)))
_add(Variant(name="region-failover-skips-consumers", description="region failover that does not restart "
             "consumer regions, behind a rebalance edge", family="blocking",
             expected=("restart_set_sufficient", "exactly_once", "committed_output_within_reference"),
             switches=("skip_consumer_regions",),
             config=RuntimeConfig(skip_consumer_regions=True, **_F)))
_add(Variant(name="restore-pending-checkpoint", description="restoring the newest checkpoint even if it "
             "never completed", expected=("exactly_once", "committed_output_within_reference"),
             switches=("restore_pending_checkpoints",),
             config=RuntimeConfig(restore_pending_checkpoints=True, max_concurrent_checkpoints=2, **_F), small=Small(checkpoints=2)))
_add(Variant(name="rescale-keygroups-modulo", description="rescaling that assigns key groups by kg % p "
             "instead of by range", family="rescale", expected=("keyed_state_on_owner",),
             switches=("keygroup_assignment",),
             config=RuntimeConfig(savepoints=True, keygroup_assignment="modulo"), max_steps=500, small=Small(records=2, keys=(0, 1, 2, 3))))
_add(Variant(name="rescale-unaligned-old-index", description="a rescale from an unaligned checkpoint that hands "
             "the in-flight data of the rescaled hash exchange to the subtask with the old index",
             family="rescale", expected=("inflight_on_key_group_owner", "inflight_preserved_on_rescale"),
             switches=("inflight_assignment",),
             config=RuntimeConfig(unaligned=True, rescale_from_checkpoints=True, inflight_assignment="old_index",
                                  channel_capacity=3),
             max_steps=500, small=Small(records=2, keys=(0, 1, 2, 3))))
# -- historical bug mechanisms ---------------------------------------------------------------
_add(Variant(name="FLINK-17568", flink_key="FLINK-17568", description="unaligned: the task processes one more "
             "element after the barrier was announced and before it snapshots; a post-barrier record enters "
             "the cut", expected=("consistent_cut",),
             config=RuntimeConfig(unaligned=True, bugs=("FLINK-17568",), channel_capacity=3)))
_add(Variant(name="FLINK-20645", flink_key="FLINK-20645", description="unaligned: a late barrier of an older "
             "checkpoint (an aligned savepoint overtaken by an unaligned checkpoint) switches channel-state "
             "persistence off", expected=("consistent_cut",), family="two_stage",
             config=RuntimeConfig(unaligned=True, bugs=("FLINK-20645",), max_concurrent_checkpoints=2,
                                  trigger_savepoints=True, channel_capacity=3), small=Small(checkpoints=2, records=2)))
_add(Variant(name="FLINK-12068", flink_key="FLINK-12068", description="region failover does not backtrack to "
             "the producers of lost blocking partitions", family="blocking",
             expected=("restart_set_sufficient",), config=RuntimeConfig(bugs=("FLINK-12068",), **_F)))
_add(Variant(name="FLINK-10354", flink_key="FLINK-10354", description="a savepoint's completion commits "
             "two-phase-commit transactions, then a failure restores an older checkpoint: the committed "
             "output is written again", expected=("committed_output_within_reference", "exactly_once"),
             switches=("notify_savepoint_complete",),
             config=RuntimeConfig(notify_savepoint_complete=True, trigger_savepoints=True,
                                  max_concurrent_checkpoints=2, **_F), small=Small(checkpoints=2)))


def variant(name: str) -> Variant:
    v = VARIANTS.get(name)
    if v is None:
        raise FlinkspecError(f"unknown variant {name!r}; known variants: {', '.join(VARIANTS)}")
    return v


def variant_names(safe: bool | None = None) -> list[str]:
    return [n for n, v in VARIANTS.items() if safe is None or v.safe == safe]
