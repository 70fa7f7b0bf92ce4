"""Named configurations — safe ones and known-unsafe ones — with their expected verdicts.

A :class:`Variant` is a family of scenarios (job shape + input + runtime configuration +
environment) generated from a seed, plus what a search over it must conclude: ``expected="pass"`` for a
safe configuration, or the invariant(s) the search must find violated. Unsafe variants
are how a user knows the suite has teeth: each one re-introduces a setting that is known
to break a guarantee, or a historical Flink bug mechanism (named by its FLINK key).

The jobs are generated, not fixed, so the search stays general: parallelisms, window
sizes, partitioners, keys, disorder and input sizes vary with the seed.

Expected verdicts are invariant *names* (strings): ``model`` never imports ``spec``.

Every variant is also an entry of ``model.catalog`` (family ``Variant.catalog_family``), with
its *seam*: the definition a re-introduced bug overrides (``model.seams``), or the unsafe
knobs it switches (``switches``), e.g. ``RuntimeConfig.checkpointing_mode='at_least_once'``.
"""

from __future__ import annotations

import random

import attrs

from model import catalog, seams
from model.catalog import PASS
from model.cluster import JobInput, RuntimeConfig
from model.environment import Environment, split_config
from model.errors import FlinkspecError, InvalidJobSpec
from model.jobfile import JobFile, generate_input
from model.rescaling import rescale_graph
from model.scope import ModelScope, split_scope
from model.streamgraph import EdgeSpec, OperatorSpec, StreamGraph

DEFAULT_SINK = "two_phase_commit"


@attrs.frozen(slots=True, kw_only=True)
class Scenario:
    """Everything a run needs besides the choice of actions: replayable from a file."""

    graph: StreamGraph
    job_input: JobInput
    config: RuntimeConfig
    seed: int
    #: the faults and operator actions the run may see (``model.environment``)
    environment: Environment = Environment()
    #: the seams the run switches on, by name (``model.seams``): not Flink's configuration but
    #: the changes to the model's definitions a known-unsafe variant or a design makes
    seams: tuple = attrs.field(default=(), converter=tuple)
    #: which mechanisms the run models and how coarsely (``model.scope``)
    scope: ModelScope = ModelScope()

    def __attrs_post_init__(self):
        self.scope.check(self.config)

    def with_settings(self, **fields) -> "Scenario":
        """This scenario with ``fields`` changed: ``seams`` (the seams switched on), each
        ``ModelScope`` field (what is modelled), each ``Environment`` field (the faults and
        operator actions) or else a ``RuntimeConfig`` field (Flink's configuration)."""
        on = fields.pop("seams", self.seams)
        fields, scope = split_scope(fields)
        config, env = split_config(fields)
        return attrs.evolve(self, config=attrs.evolve(self.config, **config),
                            environment=attrs.evolve(self.environment, **env), seams=on,
                            scope=attrs.evolve(self.scope, **scope))


@attrs.frozen(slots=True, kw_only=True)
class Small:
    """The smallest scenario of a variant that still exercises its mechanism, for exhaustive
    exploration (``small_scenario``): ``sources`` source subtasks (one split each) of
    ``records`` records over ``keys``, at most ``checkpoints`` checkpoints/savepoints
    (``Environment.max_checkpoints``) and ``failures`` injected failures."""

    sources: int = 1
    records: int = 1
    keys: tuple = (0, 1)
    checkpoints: int = 1
    failures: int = 1
    #: the job is one subtask (source chained to the sink) whatever the family: for mechanisms
    #: outside the data plane (the control plane's)
    single_task: bool = False
    #: ``RuntimeConfig`` fields set in the small scenario only: ``((field, value), ...)``
    config: tuple = ()
    #: ``Environment`` fields set in the small scenario only: ``((field, value), ...)``
    environment: tuple = ()
    #: ``(size, allowed lateness)``: the keyed operator is a tumbling event-time window of that
    #: size counting per key (the keyed, late-window and state-backend families), instead of a
    #: keyed count
    window: tuple | None = None
    #: per source split, the event times of its records (overrides ``records``): for mechanisms
    #: that need a watermark to pass a window's end, or a negative timestamp
    timestamps: tuple = ()
    #: the seconds within which an exhaustive search of this scenario ends on this project's
    #: 2-core machine, on two worker processes (``explore --workers 2``): a safe variant
    #: verified, a known-unsafe one's violation found. ``tests/test_explore.py`` holds every
    #: variant to its own figure. None where the space is too large for any budget a test can
    #: give (the search is then bounded; docs/exploration.md says which and how far it got).
    search_seconds: float | None = 120.0
    #: how many times the sources may go IDLE (``Environment.max_idle_periods``; None:
    #: unbounded). 0 by default: a source's IDLE/ACTIVE toggles only put WatermarkStatus
    #: elements into the channels, which no checkpointing, failover or sink mechanism depends
    #: on, yet they multiply the interleavings (concurrent-checkpoints-2pc: 10,695 states
    #: without them; with them the search does not finish in 120 s). Variants whose mechanism
    #: involves event time (windows, idleness) keep them.
    idle_periods: int | None = 0
    #: the network family: the keyed operator's parallelism (2: two input gates on one connection)
    network_consumers: int = 1


@attrs.frozen(slots=True, kw_only=True)
class Variant:
    name: str
    description: str
    #: "pass", or the invariant names any one of which the search must find violated.
    expected: tuple = (PASS,)
    family: str = "keyed"
    config: RuntimeConfig = RuntimeConfig()
    #: the faults and operator actions its runs may see (``model.environment``)
    environment: Environment = Environment()
    #: the seams its runs switch on (``model.seams``, ``Scenario.seams``)
    seams: tuple = attrs.field(default=(), converter=tuple)
    #: which mechanisms its runs model and how coarsely (``model.scope``, ``Scenario.scope``)
    scope: ModelScope = ModelScope()
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
    #: a user's job file (``model.jobfile``): the graph and configuration are the file's, the
    #: input is drawn per seed (``job_variant``; such a variant is not registered)
    job: JobFile | None = None
    #: runs of a safe variant in the quick profile when its walks are long (the control
    #: plane's); None: the profile's number
    quick_safe_runs: int | None = None
    #: the design file that declared this variant (``flinkspec check --design FILE``), or None
    #: for the variants of this package
    origin: str | None = None

    @property
    def safe(self) -> bool:
        return self.expected == (PASS,)

    @property
    def kind(self) -> str:
        """The catalog kind (``model.catalog.KINDS``): ``control-plane`` when the control plane
        runs, ``state-backend`` for the storage scenarios, else ``cluster``."""
        if self.scope.control_plane:
            return "control-plane"
        return "state-backend" if self.family == "state_backend" else "cluster"

    @property
    def catalog_family(self) -> str:
        """The catalog family: the kind, and for a plain cluster variant its job family
        (``cluster/keyed``, ``cluster/two-stage`` ...)."""
        return f"cluster/{self.family.replace('_', '-')}" if self.kind == "cluster" else self.kind

    @property
    def seam(self) -> str | None:
        """What this variant switches: the ``Class.method`` each re-introduced bug overrides
        (``model.seams``; a bug whose seam is not registered is named as its knob), then the
        unsafe knobs. None for a variant that switches nothing unsafe."""
        parts = [seams.SEAMS[k].definition for k in self.seams if k in seams.SEAMS]
        pending = tuple(k for k in self.seams if k not in seams.SEAMS)
        if pending:
            parts.append(f"seams={pending!r}")
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


def _blocking_job(rng: random.Random, sink_kind: str, cyclic: bool = True) -> StreamGraph:
    """Sources (own slot sharing group) --rebalance, blocking--> map -> keyBy count -> sink.

    Two TaskManagers: the sources' slots and the rest can live on different ones, so losing
    a TaskManager can lose a finished producer's blocking partition while its consumers run.

    For a third of the seeds the keyed count also reads the sources directly (a pipelined hash
    edge) and the map's output goes to it blocking: the sources' pipelined component and the
    maps' components then form a cycle of blocking channels, which Flink merges into one
    region (``_cyclic_blocking_job``). The choice is drawn from a copy of ``rng``, so the other
    seeds' jobs and inputs are what they were without it.
    """
    probe = random.Random()
    probe.setstate(rng.getstate())
    if cyclic and probe.random() < 1 / 3:
        return _cyclic_blocking_job(sink_kind)
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


def _cyclic_blocking_job(sink_kind: str) -> StreamGraph:
    """Sources --rebalance, blocking--> map --hash, blocking--> keyBy count -> sink, and sources
    --hash--> the keyed count: the sources, the count and the sink are one pipelined component,
    each map subtask one of its own; blocking channels lead from the first to the maps and back,
    so the region graph has a cycle and the whole job is one pipelined region
    (``model.failover.regions_merged_from_cycles``). Its keyed count reads a union, so the
    declarative oracle (``spec.declarative.covered``) leaves it to the reference run."""
    ops = (
        OperatorSpec(name="source", kind="source", parallelism=2, slot_sharing_group="sources",
                     watermark_out_of_orderness=2),
        OperatorSpec(name="map", kind="map", parallelism=2, function="identity"),
        OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=2, aggregate="count"),
        OperatorSpec(name="sink", kind="sink", parallelism=2, sink_kind=sink_kind),
    )
    edges = (
        EdgeSpec(source="source", target="map", partitioner="rebalance", exchange_mode="blocking"),
        EdgeSpec(source="map", target="agg", partitioner="hash", exchange_mode="blocking"),
        EdgeSpec(source="source", target="agg", partitioner="hash"),
        EdgeSpec(source="agg", target="sink", partitioner="forward"),
    )
    return StreamGraph(name="cyclic-blocking-job", operators=ops, edges=edges).validate()


def _staged_job(name: str, sink_kind: str, first: str, ps: int, pm: int, pk: int) -> StreamGraph:
    """source p=``ps`` --``first``--> map p=``pm`` --hash--> keyed count p=``pk`` --rebalance--> sink."""
    ops = (
        OperatorSpec(name="source", kind="source", parallelism=ps, watermark_out_of_orderness=1),
        OperatorSpec(name="map", kind="map", parallelism=pm, function="identity"),
        OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=pk, aggregate="count"),
        OperatorSpec(name="sink", kind="sink", parallelism=1, sink_kind=sink_kind),
    )
    edges = (
        EdgeSpec(source="source", target="map", partitioner=first),
        EdgeSpec(source="map", target="agg", partitioner="hash"),
        EdgeSpec(source="agg", target="sink", partitioner="rebalance"),
    )
    return StreamGraph(name=name, operators=ops, edges=edges).validate()


def _two_stage_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """source p=2 --rebalance--> map p=2 --hash--> keyed count p=1..2 --> sink: barriers reach
    the keyed operator through two independently scheduled upstream tasks."""
    return _staged_job("two-stage-job", sink_kind, "rebalance", 2, 2, rng.choice([1, 2]))


def _pointwise_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """source p=1..2 --rescale--> map p=1..2 --hash--> keyed count p=1..2 --> sink: the rescale
    edge is pointwise, so Flink sends its barriers aligned even for an unaligned checkpoint
    (``StreamEdge.supportsUnalignedCheckpoints`` false), while the hash edge behind it carries
    unaligned ones."""
    ps, pm, pk = rng.choice([1, 2]), rng.choice([1, 2]), rng.choice([1, 2])
    return _staged_job("pointwise-job", sink_kind, "rescale", ps, pm, pk)


def _rescale_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    return _keyed_job(rng, sink_kind, max_parallelism=rng.choice([6, 10, 7]))


def _late_window_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """Two sources --keyBy--> a tumbling event-time window with allowed lateness --> sink: with
    an idle source the watermark passes records of the other, which arrive late but allowed."""
    size = rng.choice([4, 6, 8])
    ops = (
        OperatorSpec(name="source", kind="source", parallelism=2, watermark_out_of_orderness=rng.choice([0, 1])),
        OperatorSpec(name="agg", kind="window", parallelism=rng.choice([1, 2]), aggregate=rng.choice(["count", "sum"]),
                     window_size=size, allowed_lateness=rng.choice([0, size // 2, size])),
        OperatorSpec(name="sink", kind="sink", parallelism=1, sink_kind=sink_kind),
    )
    edges = (EdgeSpec(source="source", target="agg", partitioner="hash"),
             EdgeSpec(source="agg", target="sink", partitioner="rebalance"))
    return StreamGraph(name="late-window-job", operators=ops, edges=edges).validate()


def _rescale_options(graph: StreamGraph, names: tuple) -> tuple:
    """Per operator of ``names``: up to 4 other parallelisms a restore may choose (each one a
    valid job on its own: a forward edge keeps both ends equal)."""
    out = []
    for name in names:
        o = next(o for o in graph.operators if o.name == name)
        top = o.max_parallelism if o.kind != "source" else 4
        options = []
        for p in range(1, (top or 4) + 1):
            if p == o.parallelism:
                continue
            try:
                rescale_graph(graph, {name: p})
            except InvalidJobSpec:
                continue
            options.append(p)
        out.append((name, tuple(options[:4])))
    return tuple(out)


def _state_backend_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """The keyed job (keyed state in every run: a keyed count or a window), stopped with a
    savepoint and restarted from it at the same parallelism (state files, restore modes)."""
    return _keyed_job(rng, sink_kind)


def _network_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """Sources p=2 --hash--> keyed count p=1..2 in a slot sharing group of its own --> sink: on
    two TaskManagers the sources share one and the keyed count the other, so every keyed
    channel is remote and all of them share the one connection between the two TaskManagers
    (network mode: ``model.creditbasedflowcontrol``); with p=2 two input gates share it."""
    pk = rng.choice([1, 2])
    ops = (
        OperatorSpec(name="source", kind="source", parallelism=2, watermark_out_of_orderness=1),
        OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=pk, aggregate="count", slot_sharing_group="agg"),
        OperatorSpec(name="sink", kind="sink", parallelism=pk, sink_kind=sink_kind, slot_sharing_group="agg"),
    )
    edges = (EdgeSpec(source="source", target="agg", partitioner="hash"),
             EdgeSpec(source="agg", target="sink", partitioner="forward"))
    return StreamGraph(name="network-job", operators=ops, edges=edges).validate()


def _deployment_job(rng: random.Random, sink_kind: str) -> StreamGraph:
    """The shape of a deployment mode's jobs (``model.clusterentrypoint``): sources of p=1..2
    rebalanced to a sink of p=1, so a job needs one or two slots (its execution slot sharing
    groups); the job has no records (the deployment modes run no data plane)."""
    p = rng.choice([1, 2])
    ops = (OperatorSpec(name="source", kind="source", parallelism=p, watermark_out_of_orderness=0),
           OperatorSpec(name="sink", kind="sink", parallelism=1, sink_kind=sink_kind))
    return StreamGraph(name="deployment-job", operators=ops,
                       edges=(EdgeSpec(source="source", target="sink", partitioner="rebalance"),)).validate()


FAMILIES = {"keyed": _keyed_job, "blocking": _blocking_job, "rescale": _rescale_job, "two_stage": _two_stage_job,
            # a pointwise (rescale) edge ahead of a keyed one: forced-aligned barriers
            "pointwise": _pointwise_job,
            # as "rescale", and a restore from a savepoint may also change the sources' parallelism
            "rescale_source": _rescale_job,
            # a windowed job with allowed lateness, two sources (idleness makes records late)
            "late_window": _late_window_job,
            "state_backend": _state_backend_job,
            # every keyed channel remote, over one connection (the network stack's variants)
            "network": _network_job,
            # the deployment modes' jobs: one or two slots each, no records
            "deployment": _deployment_job}


def generate(variant: Variant, seed: int) -> Scenario:
    """The scenario of ``variant`` for ``seed`` (deterministic)."""
    if variant.job is not None:
        job = variant.job
        return Scenario(graph=job.graph, job_input=generate_input(job.graph, job.input, seed), config=job.config,
                        seed=seed, environment=job.environment, seams=variant.seams,
                        scope=variant.scope)
    rng = random.Random(f"{variant.name}:{seed}")
    sink_kind = variant.sink_kind
    if variant.family == "keyed":
        graph = _keyed_job(rng, sink_kind, upsert_safe=sink_kind == "upsert")
    elif variant.family == "blocking" and variant.scope.control_plane:
        # the control plane's blocking variants need regions apart (a producer region that
        # finishes and idles its slots, consumers deployed after it): never the cyclic job
        graph = _blocking_job(rng, sink_kind, cyclic=False)
    else:
        graph = FAMILIES[variant.family](rng, sink_kind)
    if variant.family == "deployment":
        src = graph.operators[0]
        return Scenario(graph=graph, job_input=JobInput({"source": tuple(() for _ in range(src.parallelism))}),
                        config=variant.config, seed=seed, environment=variant.environment, seams=variant.seams,
                        scope=variant.scope)
    negative = variant.family == "keyed" and rng.random() < 0.3
    # state backends: fewer records (the storage mechanisms need checkpoints, stops and
    # restarts, not long inputs; short runs keep the walks and their shrinking cheap)
    sizes = dict(min_records=2, max_records=5) if variant.family == "state_backend" else {}
    job_input = _input(rng, graph, max(o.watermark_out_of_orderness for o in graph.operators if o.kind == "source"),
                       negative=negative, **sizes)
    env = variant.environment
    if variant.family in ("rescale", "rescale_source"):
        env = attrs.evolve(env, rescale_options=_rescale_options(
            graph, ("agg", "source") if variant.family == "rescale_source" else ("agg",)))
    return Scenario(graph=graph, job_input=job_input, config=variant.config, seed=seed, environment=env,
                    seams=variant.seams, scope=variant.scope)


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
    if variant.family == "deployment":
        # one slot per source subtask (``sources``): the job's tasks as a slot sees them
        ops = (src, sink)
        edges = (EdgeSpec(source="source", target="sink", partitioner="rebalance"),)
    elif sm.single_task:
        ops = (src, sink)
        edges = (EdgeSpec(source="source", target="sink", partitioner="forward"),)
    elif variant.family in ("keyed", "late_window", "state_backend"):
        if sm.window is not None:
            agg = OperatorSpec(name="agg", kind="window", parallelism=1, aggregate="count", window_size=sm.window[0],
                               allowed_lateness=sm.window[1])
        else:
            agg = OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=1, aggregate="count")
        ops = (src, agg, sink)
        edges = (EdgeSpec(source="source", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="forward"))
    elif variant.family in ("rescale", "rescale_source"):
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
    elif variant.family == "network":
        ops = (src, OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=sm.network_consumers,
                                 aggregate="count", slot_sharing_group="agg"),
               OperatorSpec(name="sink", kind="sink", parallelism=sm.network_consumers, sink_kind=sink_kind,
                            slot_sharing_group="agg"))
        edges = (EdgeSpec(source="source", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="forward"))
    elif variant.family in ("pointwise", "two_stage"):
        # a rescale edge from the source to one map subtask, or a rebalance to two
        pointwise = variant.family == "pointwise"
        ops = (src, OperatorSpec(name="map", kind="map", parallelism=1 if pointwise else 2, function="identity"),
               OperatorSpec(name="agg", kind="keyed_aggregate", parallelism=1, aggregate="count"), sink)
        edges = (EdgeSpec(source="source", target="map", partitioner="rescale" if pointwise else "rebalance"),
                 EdgeSpec(source="map", target="agg", partitioner="hash"),
                 EdgeSpec(source="agg", target="sink", partitioner="forward"))
    else:  # pragma: no cover - _add checks the family
        raise FlinkspecError(f"variant {variant.name!r}: no small scenario for family {variant.family!r}")
    graph = StreamGraph(name="single-task-small" if sm.single_task else f"{variant.family}-small", operators=ops,
                        edges=edges).validate()
    keys = sm.keys
    if sm.timestamps:
        if len(sm.timestamps) != sm.sources:
            raise FlinkspecError(f"variant {variant.name!r}: Small.timestamps has {len(sm.timestamps)} splits for "
                                 f"{sm.sources} source(s)")
        splits = tuple(tuple((keys[(i + j) % len(keys)], 1, ts) for i, ts in enumerate(times))
                       for j, times in enumerate(sm.timestamps))
    else:
        splits = tuple(tuple((keys[(i + j) % len(keys)], 1, i + 1) for i in range(sm.records))
                       for j in range(sm.sources))
    config = attrs.evolve(variant.config, **dict(sm.config))
    env = attrs.evolve(variant.environment, max_failures=min(variant.environment.max_failures, sm.failures),
                       max_checkpoints=sm.checkpoints, max_idle_periods=sm.idle_periods, **dict(sm.environment))
    if variant.family == "rescale":
        env = attrs.evolve(env, rescale_options=(("agg", (2,)),))
    elif variant.family == "rescale_source":
        env = attrs.evolve(env, rescale_options=(("agg", (2,)), ("source", (1, 2))))
    return Scenario(graph=graph, job_input=JobInput({"source": splits}), config=config, seed=seed, environment=env,
                    seams=variant.seams, scope=variant.scope)


_F = dict(max_failures=2)

VARIANTS: dict[str, Variant] = {}


def _add(v: Variant) -> None:
    """Register ``v`` here and in ``model.catalog``."""
    register(v)


def register(v: Variant, command: str | None = None) -> None:
    """Register ``v`` here and in ``model.catalog`` (``command``: how a user runs it alone;
    default ``flinkspec check --only NAME``). A ValueError names what is wrong."""
    if v.family not in FAMILIES:
        raise ValueError(f"variant {v.name!r}: unknown job family {v.family!r}")
    for knob in v.switches:
        default = DEFAULT_SINK if knob == "sink_kind" else getattr(RuntimeConfig(), knob)
        value = v.sink_kind if knob == "sink_kind" else getattr(v.config, knob)
        if value == default:
            raise ValueError(f"variant {v.name!r}: switch {knob!r} is at its default {default!r}")
    if v.name in VARIANTS or v.name in catalog.CATALOG:
        raise ValueError(f"variant {v.name!r} is declared twice" if v.name in VARIANTS else
                         f"variant {v.name!r}: the name is taken by {catalog.CATALOG[v.name].family} "
                         f"{v.name!r} of the catalog")
    VARIANTS[v.name] = v
    catalog.register(catalog.Entry(
        name=v.name, family=v.catalog_family, expected=v.expected,
        description=v.description, flink_key=v.flink_key, seam=lambda: v.seam,  # read when asked: see seam
        command=command or f"flinkspec check --only {v.name}"))


def unregister(names) -> None:
    """Forget the variants ``names`` (a design file that failed to load, or reloaded)."""
    for n in names:
        VARIANTS.pop(n, None)
        catalog.CATALOG.pop(n, None)


# -- safe configurations ---------------------------------------------------------------------
_add(Variant(name="aligned-2pc", description="aligned exactly-once checkpoints, two-phase-commit sink, "
             "region failover, task failures", config=RuntimeConfig(), environment=Environment(**_F)))
_add(Variant(name="aligned-2pc-restart-all", description="as aligned-2pc with restart-all failover and "
             "JobManager failover", config=RuntimeConfig(failover_strategy="full"), environment=Environment(**_F)))
_add(Variant(name="concurrent-checkpoints-2pc", description="aligned exactly-once with two concurrent "
             "checkpoints (subsumption)", config=RuntimeConfig(max_concurrent_checkpoints=2), environment=Environment(**_F), small=Small(checkpoints=2)))
_add(Variant(name="unaligned-2pc", description="unaligned checkpoints with channel state, 2PC sink",
             scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True), environment=Environment(**_F)))
_add(Variant(name="alternating-2pc", description="aligned checkpoints timing out into unaligned ones "
             "(aligned-checkpoint-timeout)", scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, aligned_checkpoint_timeout=4), environment=Environment(**_F)))
_add(Variant(name="unaligned-pointwise-2pc", description="unaligned checkpoints on a job with a pointwise (rescale) "
             "edge, whose barriers Flink sends aligned, ahead of a keyed one; 2PC sink", family="pointwise",
             scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True), environment=Environment(**_F)))
_add(Variant(name="unaligned-barriers-on-pointwise-edges", description="unaligned barriers on the pointwise edge too: "
             "its in-flight data becomes channel state, which Flink could not restore with other parallelisms",
             family="pointwise", scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True),
             environment=Environment(**_F), seams=("unaligned-barriers-on-every-edge",),
             expected=("no_channel_state_on_forced_aligned_edges",)))
#: an aligned savepoint overtaken by an unaligned checkpoint at the keyed operator (two input
#: channels, from two map subtasks): two triggers, and one record -- in flight on one map->agg
#: channel while the barriers pass it -- is enough (FLINK-20645 is found in this scenario, so
#: it exercises the mechanism its safe twin unaligned-savepoints-2pc is verified against)
_SAVEPOINT_OVERTAKEN_SMALL = Small(checkpoints=2, records=1)
#: the same scenario for the safe twin: its whole space is 241,661 states (depth 38), the
#: larger of the catalog's two largest small spaces (cp-two-stage's is the other)
_add(Variant(name="unaligned-savepoints-2pc", description="unaligned checkpoints concurrent with aligned "
             "savepoints through a two-stage job (the safe twin of FLINK-20645)", family="two_stage",
             scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, max_concurrent_checkpoints=2), environment=Environment(trigger_savepoints=True, **_F), small=_SAVEPOINT_OVERTAKEN_SMALL))
_add(Variant(name="upsert-sink", description="idempotent upsert sink keyed like its input, task failures",
             sink_kind="upsert", config=RuntimeConfig(), environment=Environment(**_F)))
_add(Variant(name="blocking-region-failover", description="blocking exchange, pipelined regions, "
             "TaskManager loss (producer regions backtracked, consumers restarted)", family="blocking",
             config=RuntimeConfig(), environment=Environment(**_F)))
#: the smallest rescale scenario: one record of key 0, in key group 2 of 4, which the rescale from
#: parallelism 1 to 2 moves to the second subtask (KeyGroupRange [2, 3]; ``kg % p`` would keep it
#: on the first); a second record of key 1 falls into the same key group and adds interleavings only
_RESCALE_SMALL = Small(records=1, keys=(0, 1, 2, 3))
_add(Variant(name="rescale-savepoint", description="stop-with-savepoint and restart with a new "
             "parallelism (key groups by range)", family="rescale",
             config=RuntimeConfig(), environment=Environment(savepoints=True, max_failures=1), max_steps=500, small=_RESCALE_SMALL))

#: the smallest drain scenario: two records of one key in one tumbling window [0, 4) whose end no
#: watermark passes before the job's input ends; a stop-with-savepoint --drain between them must
#: fire that window with the first record alone (MAX_WATERMARK) and commit it
_DRAIN_SMALL = Small(records=2, keys=(0,), window=(4, 0), checkpoints=2, failures=1)
_add(Variant(name="drain-savepoint", description="stop-with-savepoint --drain: the sources end their input with "
             "MAX_WATERMARK, a synchronous savepoint, then the job is FINISHED with the results of what it read",
             config=RuntimeConfig(), environment=Environment(drain_savepoints=True, **_F), small=_DRAIN_SMALL))
_add(Variant(name="drain-without-max-watermark", description="stop-with-savepoint --drain ends the sources' "
             "partitions without MAX_WATERMARK: the windows still open are in the savepoint, unfired, and the "
             "finished job never emits their results", expected=("drain_fires_every_window",),
             seams=("drain-without-max-watermark",), config=RuntimeConfig(),
             environment=Environment(drain_savepoints=True, **_F), small=_DRAIN_SMALL))

_add(Variant(name="rescale-unaligned-checkpoint", description="unaligned checkpoints; the job is resubmitted "
             "from its latest checkpoint, in-flight data included, with another parallelism (channel state "
             "reassigned by SubtaskStateMapper)", family="rescale",
             scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True), environment=Environment(rescale_from_checkpoints=True, max_failures=1),
             max_steps=500, small=_RESCALE_SMALL))

# -- known-unsafe configurations -------------------------------------------------------------
_add(Variant(name="at-least-once-2pc", description="at-least-once barrier tracking with a two-phase-commit "
             "sink: post-barrier records enter the snapshot", expected=("consistent_cut",),
             switches=("checkpointing_mode",),
             config=RuntimeConfig(checkpointing_mode="at_least_once"), environment=Environment(**_F), small=Small(sources=2)))
_add(Variant(name="unaligned-without-channel-state", description="unaligned checkpoints that drop the "
             "in-flight data", expected=("consistent_cut",),
             seams=("unaligned-drops-channel-state",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True), environment=Environment(**_F)))
_add(Variant(name="append-sink-under-failures", description="a plain append sink: output written before a "
             "failure is written again after the restore", expected=("committed_output_within_reference",
                                                                        "exactly_once", "window_results_exactly_once"),
             sink_kind="append", switches=("sink_kind",), config=RuntimeConfig(), environment=Environment(**_F)))
_add(Variant(name="region-failover-skips-consumers", description="region failover that does not restart "
             "consumer regions, behind a rebalance edge", family="blocking",
             expected=("restart_set_sufficient", "exactly_once", "committed_output_within_reference"),
             seams=("skip-consumer-regions",), config=RuntimeConfig(), environment=Environment(**_F)))
_add(Variant(name="region-failover-backtracks-available-partitions", description="region failover that also "
             "restarts the producers of blocking partitions that are still available: the job recovers with more "
             "restarts than Flink's restart set", family="blocking", expected=("restart_set_exact",),
             seams=("backtrack-every-blocking-input",), config=RuntimeConfig(), environment=Environment(**_F)))
_add(Variant(name="restore-pending-checkpoint", description="restoring the newest checkpoint even if it "
             "never completed", expected=("exactly_once", "committed_output_within_reference",
                                                "window_results_exactly_once"),
             seams=("restore-pending-checkpoints",), config=RuntimeConfig(max_concurrent_checkpoints=2), environment=Environment(**_F),
             small=Small(checkpoints=2)))
_add(Variant(name="rescale-keygroups-modulo", description="rescaling that assigns key groups by kg % p "
             "instead of by range", family="rescale", expected=("keyed_state_on_owner",),
             seams=("keygroups-by-modulo",), config=RuntimeConfig(), environment=Environment(savepoints=True), max_steps=500, small=_RESCALE_SMALL))
_add(Variant(name="rescale-unaligned-old-index", description="a rescale from an unaligned checkpoint that hands "
             "the in-flight data of the rescaled hash exchange to the subtask with the old index",
             family="rescale", expected=("inflight_on_key_group_owner", "inflight_preserved_on_rescale"),
             seams=("inflight-by-old-index",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True), environment=Environment(rescale_from_checkpoints=True),
             max_steps=500, small=_RESCALE_SMALL))
# -- historical bug mechanisms ---------------------------------------------------------------
_add(Variant(name="FLINK-17568", flink_key="FLINK-17568", description="unaligned: the task processes one more "
             "element after the barrier was announced and before it snapshots; a post-barrier record enters "
             "the cut; a snapshot deferred past an element that never comes is never taken, so its checkpoint "
             "expires", expected=("consistent_cut", "checkpoints_keep_completing"),
             seams=("FLINK-17568",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True)))
_add(Variant(name="FLINK-20645", flink_key="FLINK-20645", description="unaligned: a late barrier of an older "
             "checkpoint (an aligned savepoint overtaken by an unaligned checkpoint) switches channel-state "
             "persistence off", expected=("consistent_cut",), family="two_stage",
             seams=("FLINK-20645",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, max_concurrent_checkpoints=2), environment=Environment(trigger_savepoints=True), small=_SAVEPOINT_OVERTAKEN_SMALL))
_add(Variant(name="FLINK-12068", flink_key="FLINK-12068", description="region failover does not backtrack to "
             "the producers of lost blocking partitions", family="blocking",
             expected=("restart_set_sufficient",), seams=("FLINK-12068",), config=RuntimeConfig(), environment=Environment(**_F)))
_add(Variant(name="FLINK-10354", flink_key="FLINK-10354", description="a savepoint's completion commits "
             "two-phase-commit transactions, then a failure restores an older checkpoint: the committed "
             "output is written again", expected=("committed_output_within_reference", "exactly_once",
                                                       "window_results_exactly_once",
                                                       "transactions_follow_two_phase_commit"),
             seams=("FLINK-10354",), config=RuntimeConfig(max_concurrent_checkpoints=2), environment=Environment(trigger_savepoints=True, **_F), small=Small(checkpoints=2)))

# -- the control plane (model/controlplane.py): family "control-plane" ------------------------
_CP_SCOPE = ModelScope(control_plane=True)
_CP_ENV = dict(max_failures=5)
#: the exhaustive scenario of leader election and fencing: 2 JobManager processes, 1 TaskExecutor,
#: a one-subtask job without records, one JobManager crash; heartbeat timeout 1, a heartbeat
#: interval only with no RPC in flight, RPCs in Pekko's per-connection order, a dead leader's
#: RPCs to ResourceManagers and JobMasters dropped at once (docs/control-plane.md)
_CP_SMALL = Small(records=0, checkpoints=0, failures=1, single_task=True,
                  config=(("task_managers", 1), ("heartbeat_timeout", 1)),
                  environment=(("rpc_order", "connection"), ("rpc_capacity", 1), ("dead_letters", "at_once"),
                               ("control_plane_faults", ("CrashJobManager",))))


def _faults(small: Small, *faults: str) -> Small:
    """``small`` with ``faults`` as the only control-plane fault kinds."""
    return attrs.evolve(small, environment=tuple((k, faults if k == "control_plane_faults" else v)
                                                 for k, v in small.environment))


#: the same with lost RPCs as the only fault (a lost slot answer, deployment or heartbeat)
_CP_LOSS_SMALL = _faults(_CP_SMALL, "RpcLose")
#: lost RPCs with the blocking job (its four subtasks, two slot sharing groups, one TaskExecutor)
_CP_BLOCKING_SMALL = attrs.evolve(_CP_LOSS_SMALL, single_task=False)
_add(Variant(name="cp-region-failover", description="the FLIP-6 control plane (leader election with fencing, "
             "ResourceManager/SlotManager, JobMaster/SlotPool, heartbeats, HA store) under lost, duplicated and "
             "reordered RPCs, TaskExecutor and JobManager crashes, session expiry; region failover",
             scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, quick_safe_runs=150, small=_CP_SMALL))
_add(Variant(name="cp-restart-all", description="as cp-region-failover with restart-all failover",
             scope=_CP_SCOPE, config=RuntimeConfig(failover_strategy="full"), environment=Environment(**_CP_ENV), max_steps=350, quick_safe_runs=150, small=_CP_SMALL))
_add(Variant(name="cp-two-stage", description="the control plane with a two-stage job (more slots, more "
             "TaskExecutors' worth of tasks)", family="two_stage", scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, quick_safe_runs=150,
             # five subtasks under lost RPCs: 195,237 states at depth 107, the deepest small space
             small=attrs.evolve(_CP_BLOCKING_SMALL, search_seconds=600.0)))
_add(Variant(name="cp-no-fencing", description="no fencing tokens: a deposed leader's slot answers, deployments, "
             "slot releases and HA writes are accepted", expected=("no_split_brain", "task_in_owned_slot",
                                                          "deployments_agree"),
             seams=("no-fencing",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, small=_CP_SMALL))
_add(Variant(name="cp-checkpoint-counter-in-memory", description="the checkpoint ID counter is kept in the "
             "JobManager's memory (StandaloneCheckpointIDCounter), not in the HA store: a new leader hands out "
             "ids again", expected=("checkpoint_ids_increase",),
             seams=("checkpoint-counter-in-memory",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350,
             small=attrs.evolve(_CP_SMALL, checkpoints=2)))
_add(Variant(name="cp-no-slot-reconciliation", description="the SlotManager ignores the slot reports of "
             "heartbeats: a lost slot-request answer leaves the slot tables disagreeing forever",
             expected=("slot_views_agree",),
             seams=("no-slot-report-reconciliation",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, small=_CP_LOSS_SMALL))
_add(Variant(name="cp-restore-from-memory", description="a new leader restores the latest checkpoint it has in "
             "memory (none, for a fresh process) instead of the HA store's",
             expected=("restore_uses_latest_checkpoint", "exactly_once", "committed_output_within_reference"),
             seams=("restore-from-memory",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350,
             small=attrs.evolve(_CP_SMALL, records=1)))
_add(Variant(name="FLINK-17075", flink_key="FLINK-17075", description="no deployment reconciliation: the "
             "JobMaster ignores the TaskExecutors' ExecutionDeploymentReports, so a lost deployment or a missed "
             "cancellation stays unnoticed", expected=("deployments_agree",),
             seams=("FLINK-17075",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, small=_CP_LOSS_SMALL))
_add(Variant(name="FLINK-18533", flink_key="FLINK-18533", description="pending deployments are not tolerated: "
             "a deployment report that does not show an execution yet (its submission is still in flight) makes "
             "the JobMaster fail it as missing; the job recovers, only the cause of the failover is wrong",
             expected=("disturbance_has_cause",),
             seams=("FLINK-18533",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, small=_CP_SMALL))
_add(Variant(name="cp-blocking-regions", description="the control plane with a blocking exchange: the consumer "
             "region is deployed once its producers finished (lazy from sources), the producers' slots go back "
             "to the pool and are reused or released after slot.idle.timeout", family="blocking",
             scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, quick_safe_runs=30, small=_CP_BLOCKING_SMALL))
_add(Variant(name="cp-eager-blocking-regions", description="every pipelined region deployed at once, the consumers "
             "of blocking partitions before their producers finished (eager scheduling of a batch exchange)",
             family="blocking", expected=("region_deployed_after_blocking_inputs",),
             seams=("eager-scheduling",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, small=_CP_BLOCKING_SMALL))
_add(Variant(name="cp-no-allocated-slot-report-sync", description="the TaskExecutor ignores the JobMaster's "
             "AllocatedSlotReport: a lost freeSlot of an idle slot leaves the slot allocated for the job for ever "
             "(a blocking exchange: a finished producer's slot goes idle while the job runs on)", family="blocking",
             expected=("idle_slots_returned",),
             # its mechanism needs a lost freeSlot and nothing else (ZooKeeper suspensions among
             # every control-plane fault dilute the walks)
             seams=("no-allocated-slot-report-sync",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(control_plane_faults=("RpcLose",), **_CP_ENV),
             max_steps=350, small=_CP_BLOCKING_SMALL))
_add(Variant(name="idle-time-restarted-by-heartbeat", description="a free slot's idle time restarts whenever its "
             "TaskExecutor's heartbeat answer reached the JobMaster: while heartbeats flow, a slot the job no longer "
             "needs is never released (a blocking exchange: a finished producer's slot goes idle while the job runs "
             "on); the output and every view of the slots stay consistent, only the release never comes in time",
             family="blocking", expected=("idle_slot_released_in_time",),
             seams=("idle-time-restarted-by-heartbeat",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350,
             small=_CP_BLOCKING_SMALL))
_add(Variant(name="heartbeat-timeout-one-interval-late", description="the JobMaster declares a silent TaskExecutor "
             "lost one heartbeat interval late (after heartbeat_timeout + 1 intervals without an answer): the job "
             "recovers all the same, only later than the configuration promises",
             expected=("silent_task_executor_disconnected_in_time",),
             seams=("heartbeat-timeout-one-interval-late",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350,
             small=_CP_LOSS_SMALL))
#: ZooKeeper connection states: 2 JobManager processes, 1 TaskExecutor, a one-subtask job, one
#: SUSPENDED connection as the only fault (the session may then be LOST or RECONNECTED)
_CP_SUSPENDED_SMALL = _faults(_CP_SMALL, "ConnectionSuspended")
_add(Variant(name="cp-connection-suspended", description="ZooKeeper connection states as Curator reports them "
             "(SUSPENDED, RECONNECTED, LOST) with Flink's default: a SUSPENDED connection revokes leadership, the "
             "LeaderLatch rejoins on RECONNECTED; the job graph, checkpoint pointers and checkpoint ID counter "
             "survive", scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(control_plane_faults=("ConnectionSuspended",), **_CP_ENV), max_steps=350,
             quick_safe_runs=100, small=_CP_SUSPENDED_SMALL))
_add(Variant(name="cp-tolerate-suspended-connections", description="high-availability.zookeeper.client."
             "tolerate-suspended-connections: a SUSPENDED connection keeps leadership until the session is LOST; "
             "fencing keeps the deposed leader's RPCs and HA writes out",
             scope=_CP_SCOPE, config=RuntimeConfig(zookeeper_tolerate_suspended_connections=True), environment=Environment(control_plane_faults=("ConnectionSuspended",), **_CP_ENV),
             # a leader that keeps acting while SUSPENDED: the space outgrows any test's budget
             max_steps=350, quick_safe_runs=100, small=attrs.evolve(_CP_SUSPENDED_SMALL, search_seconds=None)))
_add(Variant(name="cp-tolerate-suspended-no-fencing", description="a SUSPENDED connection is tolerated and "
             "nothing is fenced: the leader keeps acting while its session is LOST and another process is "
             "granted leadership, so two leaders act at once", expected=("no_split_brain", "task_in_owned_slot",
                                                                      "deployments_agree"),
             seams=("no-fencing",), scope=_CP_SCOPE, config=RuntimeConfig(zookeeper_tolerate_suspended_connections=True), environment=Environment(control_plane_faults=("ConnectionSuspended",), **_CP_ENV),
             max_steps=350, small=_CP_SUSPENDED_SMALL))
_add(Variant(name="FLINK-11813", flink_key="FLINK-11813", description="no JobResultStore: a JobManager failover "
             "after the job finished and before its job graph was cleaned up runs the finished job again",
             expected=("terminal_job_never_reruns",),
             seams=("FLINK-11813",), scope=_CP_SCOPE, config=RuntimeConfig(), environment=Environment(**_CP_ENV), max_steps=350, small=_CP_SMALL))


_add(Variant(name="FLINK-26334", flink_key="FLINK-26334", description="the tumbling window start formula "
             "before FLINK-26334 (Java % on ts - offset + size): elements with negative timestamps land in the "
             "next window; the failure-free reference shares the bug, only the declarative spec sees it",
             expected=("reference_matches_declarative_spec",), seams=("FLINK-26334",), config=RuntimeConfig(), environment=Environment(**_F),
             # the bug needs a timestamp below -size: (-5 - 0 + 4) % 4 is -1 in Java, so the record
             # lands in [-4, 0) instead of [-8, -4)
             small=Small(window=(4, 0), timestamps=((-5,),))))


_add(Variant(name="unchecked-barrier-order", description="barriers taken without comparing their checkpoint "
             "id to the newest one seen: a late barrier of an older checkpoint (an aligned savepoint overtaken by an "
             "unaligned checkpoint) is snapshotted after the newer one", family="two_stage",
             # the late snapshot of the older checkpoint misses what it should hold: when that
             # checkpoint completes, its cut is inconsistent too
             expected=("snapshots_in_checkpoint_order", "consistent_cut"),
             seams=("unchecked-barrier-order",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, max_concurrent_checkpoints=2), environment=Environment(trigger_savepoints=True, **_F),
             small=Small(checkpoints=2, records=2)))


#: the CheckpointCoordinator's trigger RPCs in flight to the sources, reaching them in any order
#: and possibly after their checkpoint was aborted (``Environment.trigger_delivery``)
_TRIGGERS_IN_FLIGHT = dict(trigger_delivery="any_order", trigger_savepoints=True)
_add(Variant(name="delayed-checkpoint-triggers", description="the CheckpointCoordinator's trigger RPCs reach the "
             "sources in any order, also after their checkpoint was aborted: a task ignores a trigger older than "
             "the newest checkpoint it took and cancels one it was told was aborted (two concurrent checkpoints, "
             "savepoints while running)",
             config=RuntimeConfig(max_concurrent_checkpoints=2), environment=Environment(**_TRIGGERS_IN_FLIGHT, **_F),
             small=Small(checkpoints=2)))
_add(Variant(name="unchecked-trigger-order", description="a task takes a checkpoint trigger without comparing its "
             "id to the newest checkpoint it took: a trigger RPC of an older checkpoint that arrives after a newer "
             "one is snapshotted after it", expected=("snapshots_in_checkpoint_order",),
             seams=("unchecked-trigger-order",), config=RuntimeConfig(max_concurrent_checkpoints=2),
             environment=Environment(**_TRIGGERS_IN_FLIGHT, **_F), small=Small(checkpoints=2, failures=0)))


#: an alignment (and its timer) needs a task with two input channels: two source subtasks
#: into the keyed operator (with one input channel nothing is ever aligned)
_ALIGNMENT_SMALL = Small(sources=2)
_add(Variant(name="alignment-timeout-early", description="the aligned-checkpoint timeout's timer is due at once: "
             "an aligned checkpoint turns unaligned before its timeout", expected=("aligned_checkpoint_timeout_honoured",),
             seams=("alignment-timer-immediate",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, aligned_checkpoint_timeout=4), environment=Environment(**_F), small=_ALIGNMENT_SMALL))
_add(Variant(name="alignment-timer-never", description="no alignment timer is registered: an aligned checkpoint "
             "whose alignment stalls never turns unaligned", expected=("aligned_checkpoint_timeout_honoured",),
             seams=("alignment-timer-never",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, aligned_checkpoint_timeout=4), environment=Environment(**_F), small=_ALIGNMENT_SMALL))


#: two sources of one record each, rescaled together with the keyed operator by a stop-with-savepoint;
#: no failure (the mechanism is the restore's redistribution of split offsets; with a failure as
#: well the space is past 90,000 states at depth 12)
#: the rescale-source pair's mechanism is the restore's redistribution of split offsets: a
#: source going idle (offered on their windowed jobs, tumbling or sliding, which the event-time
#: judge covers) only dilutes their walks -- the unsafe one was found at run 391 instead of 123
_NO_IDLE = dict(max_idle_periods=0)
_RESCALE_SOURCE_SMALL = Small(sources=2, records=1, keys=(0, 1, 2, 3), failures=0)
_add(Variant(name="rescale-source-savepoint", description="stop-with-savepoint and restart with a new "
             "parallelism of the keyed operator and of the sources (split offsets redistributed round-robin)",
             family="rescale_source", config=RuntimeConfig(), environment=Environment(savepoints=True, max_failures=1, **_NO_IDLE),
             max_steps=300, small=_RESCALE_SOURCE_SMALL))
_add(Variant(name="rescale-source-state-by-index", description="a rescaled restore that hands new subtask i "
             "old subtask i's split offsets: with fewer source subtasks the other splits are never read again",
             family="rescale_source", expected=("exactly_once", "window_results_exactly_once",
                                               "committed_output_within_reference"),
             seams=("operator-state-by-index",), config=RuntimeConfig(), environment=Environment(savepoints=True, max_failures=1, **_NO_IDLE),
             max_steps=500, small=_RESCALE_SOURCE_SMALL))


#: the late-window family's mechanism is idleness and allowed lateness: source 0 goes idle, so
#: source 1's watermark 4 (after its record at 5; its next record keeps its split open) fires the
#: window [0, 4) before source 0's record at 1 arrives -- late, but within the allowed lateness
#: of 4. One idle period, one failure, no checkpoint before the final one (with a checkpoint as
#: well the two-source space is past 100,000 states at depth 9)
_IDLE_SMALL = Small(sources=2, window=(4, 4), timestamps=((1,), (5, 6)), idle_periods=1, checkpoints=0)
_add(Variant(name="window-lateness-ignored", description="window operators that ignore the allowed lateness: "
             "a record arriving after its window fired (an idle source let the watermark pass it) is dropped "
             "although the window still accepts it", expected=("late_drop_justified",),
             family="late_window",
             seams=("window-lateness-ignored",), config=RuntimeConfig(), environment=Environment(**_F), small=_IDLE_SMALL))
_add(Variant(name="idle-source-keeps-emitting", description="a source that goes IDLE tells its downstream tasks "
             "so but reads on, marking itself ACTIVE only before its next watermark: its records in between travel "
             "on a channel the window operator ignores for event time, so the source itself makes them late, and "
             "their drops look justified",
             expected=("source_output_active_and_on_time",), family="late_window",
             seams=("idle-source-keeps-emitting",), config=RuntimeConfig(), environment=Environment(**_F), small=_IDLE_SMALL))
_add(Variant(name="late-window-2pc", description="a tumbling window with allowed lateness behind two sources that go "
             "idle: late records judged by the event-time judge, without the failure-free reference",
             family="late_window", config=RuntimeConfig(), environment=Environment(**_F), small=_IDLE_SMALL))
_add(Variant(name="late-window-append", description="a plain append sink behind a window with allowed lateness and "
             "idle sources: output written before a failure is written again; in runs with an idle source only "
             "the event-time judge can tell", family="late_window", sink_kind="append", switches=("sink_kind",),
             expected=("window_results_exactly_once", "committed_output_within_reference", "exactly_once"),
             config=RuntimeConfig(), environment=Environment(**_F), small=_IDLE_SMALL))


#: the prefix of a job variant's name (``job_variant``): no registered variant has it
JOB_PREFIX = "job:"


#: the network stack (model.creditbasedflowcontrol): one exclusive buffer per remote channel and
#: one floating buffer per gate, subpartitions of two unsent buffers, two TaskManagers (the
#: sources on one, the keyed count on the other)
_NET = dict(buffers_per_channel=1, floating_buffers_per_gate=1, task_managers=2)
_NET_SCOPE = ModelScope(channel_capacity=2)
#: two sources of one record each into one keyed count: one input gate, two remote channels on
#: one connection, no failure (the buffers and credits multiply the interleavings: the aligned
#: small scenario has 24,584 states in network mode, 1,008 in the coarse mode)
_NETWORK_SMALL = Small(sources=2, records=1, failures=0)
#: the same without floating buffers: the unaligned space stays within the search's budget, and
#: the pre-credit receiver runs out of buffers after one record of the blocked channel
_NETWORK_SMALL_NO_FLOATING = attrs.evolve(_NETWORK_SMALL, config=(("floating_buffers_per_gate", 0),))
_add(Variant(name="network-credit-aligned", description="credit-based flow control (exclusive and floating "
             "buffers, credit, backlog) under aligned checkpoints: a channel blocked by the alignment stops its "
             "own subpartition only", family="network", scope=_NET_SCOPE, config=RuntimeConfig(**_NET), environment=Environment(**_F),
             small=_NETWORK_SMALL))
_add(Variant(name="network-credit-unaligned", description="credit-based flow control under unaligned "
             "checkpoints: the barrier overtakes as a priority event, without credit", family="network",
             scope=_NET_SCOPE, config=RuntimeConfig(unaligned=True, **_NET), environment=Environment(**_F),
             small=_NETWORK_SMALL_NO_FLOATING))
_add(Variant(name="network-pre-credit", description="the network stack before Flink 1.5 (no credit) with "
             "today's blocking alignment: a receiver whose channel is blocked by the alignment runs out of buffers "
             "and stops reading the connection its TaskManager shares with the sender's, so the other channels' "
             "barriers never arrive", family="network",
             expected=("run_drains", "network_stall_confined_to_gate", "checkpoints_keep_completing"),
             seams=("pre-credit-network-stack",), scope=_NET_SCOPE, config=RuntimeConfig(**_NET), environment=Environment(**_F),
             small=_NETWORK_SMALL_NO_FLOATING))
_add(Variant(name="network-buffer-leak", description="a consumed data buffer is never recycled: the channel's "
             "exclusive buffers and the gate's floating buffers run out", family="network",
             expected=("network_buffers_conserved",),
             seams=("network-buffer-never-recycled",), scope=_NET_SCOPE, config=RuntimeConfig(**_NET), environment=Environment(**_F),
             small=_NETWORK_SMALL))
_add(Variant(name="network-send-without-credit", description="the sender writes data buffers without credit: "
             "the receiver gets more buffers than it announced", family="network",
             expected=("credit_never_negative", "received_within_credit"),
             seams=("sender-ignores-credit",), scope=_NET_SCOPE, config=RuntimeConfig(**_NET), environment=Environment(**_F),
             small=_NETWORK_SMALL))

_add(Variant(name="network-add-credit-lost", description="the AddCredit message is lost after the receiver reset its "
             "unannounced credit: the channel's credit never comes back and its data stops for good",
             family="network", expected=("run_drains", "checkpoints_keep_completing"),
             seams=("add-credit-lost",), scope=_NET_SCOPE, config=RuntimeConfig(**_NET), environment=Environment(**_F),
             small=_NETWORK_SMALL))


# -- deployment modes (model/clusterentrypoint.py, docs/deployment.md): family "deployment" ------
#: a session cluster: one TaskExecutor whose two slots the jobs share, jobs submitted over time
_SESSION = dict(deployment_mode="session", task_managers=1, slots_per_task_manager=2)
_SESSION_ENV = dict(job_submissions=3, max_failures=2)
#: three jobs of one slot each on the TaskExecutor's two slots (two run side by side, the third
#: waits; no records: the deployment modes run no data plane), two faults: 1,439 states
_SESSION_SMALL = Small(records=0, checkpoints=0, failures=2, environment=(("job_submissions", 3),))
#: three jobs of one slot each for one slot, two faults: 470 states
_CONTENDED_SMALL = Small(records=0, checkpoints=0, failures=2, environment=(("job_submissions", 3),))
#: an application cluster: an ActiveResourceManager requesting workers of one slot
_APPLICATION = dict(deployment_mode="application", slots_per_task_manager=1)
_APPLICATION_ENV = dict(max_failures=2)
#: a job of two slots (two workers), one fault: 353 states
_APPLICATION_SMALL = Small(sources=2, records=0, checkpoints=0, failures=1)
_add(Variant(name="session-cluster", description="a session cluster: jobs submitted over time to one Dispatcher, "
             "each with its own JobMaster, share the slots of one TaskExecutor; task failures, cancellations and "
             "JobMaster leadership losses of one job touch no other job's tasks or slots", family="deployment",
             config=RuntimeConfig(**_SESSION), environment=Environment(**_SESSION_ENV), small=_SESSION_SMALL))
_add(Variant(name="session-cluster-contended", description="a session cluster with one slot for jobs submitted "
             "over time: a job waits for the slot another job releases, which is freed only once that job's "
             "cancelled task ended", family="deployment",
             config=RuntimeConfig(**(_SESSION | dict(slots_per_task_manager=1))),
             environment=Environment(**_SESSION_ENV), small=_CONTENDED_SMALL))
_add(Variant(name="application-cluster", description="an application cluster with an ActiveResourceManager: "
             "workers requested when the requirements exceed the registered slots, stopped when they do not "
             "register in time, released when idle; the cluster shuts down (and cleans its HA data) when the job is "
             "globally terminal", family="deployment",
             config=RuntimeConfig(**_APPLICATION), environment=Environment(**_APPLICATION_ENV),
             small=_APPLICATION_SMALL))
_add(Variant(name="session-slot-freed-before-tasks-terminated", description="freeSlot frees a slot whose task is "
             "still being cancelled (no RELEASING state): the slot is allocated to the next job while the old "
             "job's task still runs in it", family="deployment", expected=("slot_isolation",),
             seams=("slot-freed-before-tasks-terminated",), config=RuntimeConfig(**(_SESSION | dict(slots_per_task_manager=1))),
             environment=Environment(**_SESSION_ENV), small=_CONTENDED_SMALL))
_add(Variant(name="session-cancel-task-without-job-id", description="cancelTask picks the task by its index "
             "alone, not by its JobID: cancelling or failing one job cancels the task of the same index of another "
             "job sharing the TaskExecutor", family="deployment", expected=("running_job_tasks_run",),
             seams=("cancel-task-without-job-id",), config=RuntimeConfig(**_SESSION),
             environment=Environment(**_SESSION_ENV), small=_SESSION_SMALL))
_add(Variant(name="FLINK-31444", flink_key="FLINK-31444", description="a finished job's slots are allocated to it "
             "again when their release reaches the SlotManager before the job's requirement is cleared, and clearing "
             "the requirement does not reclaim them: the slots stay with the finished job", family="deployment",
             expected=("terminated_job_slots_returned", "run_drains"),
             seams=("FLINK-31444",), config=RuntimeConfig(**_SESSION), environment=Environment(**_SESSION_ENV),
             small=_SESSION_SMALL))
_add(Variant(name="application-rm-ignores-pending-workers", description="the ActiveResourceManager compares the "
             "declared workers with the registered ones only: while a requested worker starts, each check requests "
             "another", family="deployment", expected=("active_rm_pending_workers_within_requirements",),
             seams=("active-rm-ignores-pending-workers",), config=RuntimeConfig(**_APPLICATION),
             environment=Environment(**_APPLICATION_ENV), small=_APPLICATION_SMALL))
_add(Variant(name="FLINK-13554", flink_key="FLINK-13554", description="no timeout for worker registration: a "
             "requested worker that does not register stays pending for ever", family="deployment",
             expected=("active_rm_timeouts_honoured",),
             seams=("FLINK-13554",), config=RuntimeConfig(**_APPLICATION), environment=Environment(**_APPLICATION_ENV),
             small=_APPLICATION_SMALL))
_add(Variant(name="FLINK-19154", flink_key="FLINK-19154", description="the application cluster shuts down and "
             "cleans its HA data when its job only lost its JobMaster (SUSPENDED, not globally terminal): the job "
             "can never be recovered", family="deployment",
             expected=("ha_data_cleaned_only_when_globally_terminal", "application_shutdown_only_when_globally_terminal"),
             seams=("FLINK-19154",), config=RuntimeConfig(**_APPLICATION), environment=Environment(**_APPLICATION_ENV),
             small=_APPLICATION_SMALL))


def job_variant(job: JobFile) -> Variant:
    """The safe variant of a user's job file: every run searches the file's job with its
    configuration (``[runtime]``) and environment (``[environment]``) on an input drawn from the
    run's seed (``[input]``); the random-walk budget grows with the input. Named
    ``job:<job name>``; not registered."""
    records = sum(len(split) for splits in generate(Variant(name="-", description="-", job=job), 0)
                  .job_input.splits.values() for split in splits)
    return Variant(name=f"{JOB_PREFIX}{job.name}", description=f"the job of {job.path}", family="keyed",
                   config=job.config, environment=job.environment, job=job, max_steps=max(400, 25 * records))
# -- state backends and checkpoint storage (model.statebackend, model.checkpointstorage) -------
_SB = dict(max_concurrent_checkpoints=2)
_SB_ENV = dict(savepoints=True, max_failures=2)
#: the state backends' smallest scenario: one record (so there is keyed state to snapshot), two
#: checkpoints or savepoints (an incremental snapshot sharing the first one's files; a
#: stop-with-savepoint and a checkpoint after its restart) and no failure -- the restore the
#: mechanisms need is the restart from the savepoint. With one failure as well the space is past
#: 140,000 states at depth 15; with three checkpoints and two records it was past 65,000 at depth 8
_SB_SMALL = Small(checkpoints=2, records=1, failures=0)
#: shorter walks: a stop-with-savepoint and its restart fit in, and 150 of them stay cheap
_SB_STEPS = 120
_add(Variant(name="heap-two-phase-snapshots", description="HashMapStateBackend: copy-on-write synchronous phase, "
             "asynchronous phase as an action, full snapshot files; stop-with-savepoint and a NO_CLAIM restore",
             family="state_backend", config=RuntimeConfig(state_backend="hashmap", **_SB), environment=Environment(**_SB_ENV),
             # 81,146 states: verified in 50 s on two worker processes (105-120 s in one)
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="rocksdb-incremental", description="RocksDB-like backend with incremental checkpoints: SST "
             "files shared through the SharedStateRegistry, 2 retained checkpoints, a CLAIM restore",
             family="state_backend", config=RuntimeConfig(state_backend="rocksdb", incremental=True, restore_mode="CLAIM", max_retained_checkpoints=2, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="rocksdb-incremental-no-claim", description="RocksDB-like incremental checkpoints, a NO_CLAIM "
             "restore (the first checkpoint after it is full; the user may delete the snapshot afterwards)",
             family="state_backend", config=RuntimeConfig(state_backend="rocksdb", incremental=True, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="heap-snapshot-without-copy-on-write", description="heap snapshots without copy-on-write: the "
             "asynchronous phase reads the live state, so writes after the barrier leak into the snapshot",
             family="state_backend", expected=("snapshot_reflects_synchronous_phase", "incremental_restore_equals_full",
                                               "exactly_once", "committed_output_within_reference"),
             seams=("heap-snapshot-without-copy-on-write",), config=RuntimeConfig(state_backend="hashmap", **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="shared-state-discarded-with-creator", description="incremental checkpoints whose shared files "
             "are discarded when the checkpoint that created them is subsumed, not the last that used them",
             family="state_backend", expected=("retained_checkpoints_restorable", "file_deleted_only_when_unreferenced"),
             seams=("shared-state-discarded-with-creator",), config=RuntimeConfig(state_backend="rocksdb", incremental=True, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="no-claim-first-checkpoint-incremental", description="after a NO_CLAIM restore the first "
             "checkpoint is incremental: it references the user's snapshot, which the user may delete",
             family="state_backend", expected=("retained_checkpoints_restorable",),
             seams=("no-claim-first-checkpoint-incremental",), config=RuntimeConfig(state_backend="rocksdb", incremental=True, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="incremental-reuses-unconfirmed-files", description="an incremental snapshot reuses the files "
             "of the last snapshot taken although its checkpoint never completed; the JobManager discards what an "
             "aborted checkpoint uploaded", family="state_backend",
             expected=("retained_checkpoints_restorable", "file_deleted_only_when_unreferenced",
                       "snapshot_reflects_synchronous_phase"),
             seams=("incremental-reuses-unconfirmed-files",), config=RuntimeConfig(state_backend="rocksdb", incremental=True, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
_add(Variant(name="FLINK-26985", flink_key="FLINK-26985", description="the SharedStateRegistry discards the shared "
             "files of a snapshot restored without claim once no checkpoint uses them", family="state_backend",
             expected=("no_claim_restore_keeps_snapshot", "retained_checkpoints_restorable",
                       "file_deleted_only_when_unreferenced"),
             seams=("FLINK-26985",), config=RuntimeConfig(state_backend="rocksdb", incremental=True, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_SB_SMALL))
#: one checkpoint, one failure: the asynchronous phase of a snapshot fails once
_CFM_SMALL = Small(checkpoints=1, records=1, failures=1)
_add(Variant(name="checkpoint-failure-manager", description="HashMapStateBackend under Flink's default "
             "tolerable-failed-checkpoints 0: a task's failed asynchronous snapshot or an expired checkpoint fails the "
             "job over globally (CheckpointFailureManager)", family="state_backend",
             config=RuntimeConfig(state_backend="hashmap", tolerable_failed_checkpoints=0, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_CFM_SMALL))
_add(Variant(name="FLINK-20675", flink_key="FLINK-20675", description="the CheckpointFailureManager does not count a "
             "task's failed asynchronous snapshot (CHECKPOINT_ASYNC_EXCEPTION): with tolerable-failed-checkpoints 0 "
             "the job is not failed over when a checkpoint is declined so", family="state_backend",
             expected=("checkpoint_failures_tolerated",),
             seams=("FLINK-20675",), config=RuntimeConfig(state_backend="hashmap", tolerable_failed_checkpoints=0, **_SB), environment=Environment(**_SB_ENV),
             max_steps=_SB_STEPS, small=_CFM_SMALL))

_add(Variant(name="unchecked-cancellation-id", description="cancellation markers taken without comparing their "
             "checkpoint id to the one being aligned: a late CancelCheckpointMarker of a subsumed checkpoint aborts "
             "the newer checkpoint a task is aligning (an aligned savepoint subsumed by an unaligned checkpoint "
             "that overtook its barrier), although nothing failed", family="two_stage",
             expected=("checkpoints_keep_completing",),
             seams=("unchecked-cancellation-id",), scope=ModelScope(channel_capacity=3), config=RuntimeConfig(unaligned=True, max_concurrent_checkpoints=2), environment=Environment(trigger_savepoints=True, **_F),
             # the savepoint's alignment needs a map with two input channels (two sources), the stale
             # marker a keyed task with two (two maps); no record and no failure are needed. The
             # abort for no cause decides the invariant (``Invariant.doomed``): found at depth 6
             small=Small(sources=2, checkpoints=2, records=0, failures=0)))


def variant(name: str) -> Variant:
    v = VARIANTS.get(name)
    if v is None:
        raise FlinkspecError(f"unknown variant {name!r}; known variants: {', '.join(VARIANTS)}")
    return v


def variant_names(safe: bool | None = None) -> list[str]:
    return [n for n, v in VARIANTS.items() if safe is None or v.safe == safe]
