"""The Environment of a run: what the world around the job may do to it, and how often.

A run of the model is the runtime (``RuntimeConfig``: Flink's own configuration, each knob as
Flink names it) driven by an environment that injects faults and takes operator actions. The
environment is not Flink's: it is the part of a scenario that makes the set of runs finite and
chooses which disturbances a search considers, as the constants of a TLA+ model bound its
environment. Every action of an environment kind is offered only while its budget lasts:

* ``max_failures`` -- failure actions a run may inject (FailTask, LoseTaskManager,
  FailJobManager and every control-plane fault); 0 = failure-free runs;
* ``control_plane_faults`` -- the control-plane fault kinds offered (names of action kinds:
  RpcLose, RpcDuplicate, CrashJobManager, ConnectionSuspended, ExpireSession,
  CrashTaskExecutor); None = all of them;
* ``max_checkpoints`` -- checkpoints and savepoints (stop-with-savepoint included) the
  CheckpointCoordinator may be asked to trigger; one more is allowed for the final checkpoint
  once every task finished (FLIP-147); None = unbounded;
* ``savepoints`` -- whether the operator's stop-with-savepoint and restart-from-savepoint
  (with ``rescale_options``) are offered; ``trigger_savepoints`` -- whether a savepoint
  while the job runs (TriggerCheckpoint(savepoint=True)) is; ``drain_savepoints`` -- whether the
  operator's stop-with-savepoint ``--drain`` (StopWithSavepointAndDrain: the job ends FINISHED)
  is;
* ``rescale_from_checkpoints`` -- whether RescaleFromCheckpoint (cancel, resubmit from the
  latest completed checkpoint with another parallelism) is offered, at most
  ``max_checkpoint_rescales`` times;
* ``rescale_options`` -- the parallelisms a restart with rescaling may choose, per operator
  name: ``((name, (p, ...)), ...)``;
* ``max_idle_periods`` -- how many times the sources may go IDLE (SourceIdle); None =
  unbounded. Each IDLE/ACTIVE toggle puts a WatermarkStatus into the channels, so without a
  bound the toggles multiply the interleavings;
* ``rpc_order`` -- which RPC the network may deliver next: "any" (every message may overtake
  every other) or "connection" (Pekko's order, Flink's transport: one sender's messages to
  one receiver arrive in sending order; different connections overtake each other). "any" is
  a superset of Pekko's behaviours: what it adds is the network's doing, not Flink's;
* ``rpc_capacity`` -- RPCs in flight at which the next heartbeat interval (Tick) waits; None =
  unbounded. Each Tick sends heartbeats, so without a bound the messages in flight, and the
  control plane's state space, grow without end;
* ``dead_letters`` -- what becomes of an RPC to a ResourceManager or JobMaster whose leader
  session is gone for ever: "on_delivery" (it stays in flight until an RpcDeliver drops it,
  as Pekko sends a message to a stopped endpoint to its dead letters) or "at_once" (dropped
  after the step that ended the session). The deliveries "at_once" leaves out change
  nothing, so both reach the same states less those letters and give the same verdicts;
  "at_once" has far fewer interleavings to explore;
* ``job_submissions`` -- how many jobs may be submitted to a session cluster (SubmitJob;
  ``RuntimeConfig.deployment_mode = "session"``);
* ``trigger_delivery`` -- how the CheckpointCoordinator's ``triggerCheckpoint`` RPCs reach the
  tasks it triggers (the sources): "at_once" (in the step that triggers the checkpoint, at
  every such task) or "any_order" (one message per task, each delivered by its own
  DeliverCheckpointTrigger step, in any order among the checkpoints, before or after the
  checkpoint was aborted: ``model.streamtask.TaskContext.trigger_checkpoint`` says what a task
  does with a late one). "at_once" reaches a subset of "any_order"'s states.

Invariant: an Environment never changes what the runtime does with an action it took; it only
decides which environment actions are offered. A configuration dict that still holds one of
these fields in ``RuntimeConfig`` (a file written before they moved here) is refused with the
field to move (:func:`moved_field_problem`); ``tools/migrate_knobs.py`` rewrites such files.
"""

from __future__ import annotations

import attrs

from model.errors import FlinkspecError

DEAD_LETTERS = ("on_delivery", "at_once")
TRIGGER_DELIVERY = ("at_once", "any_order")
RPC_ORDERS = ("any", "connection")


@attrs.frozen(slots=True, kw_only=True)
class Environment:
    """The faults and operator actions a run may see (see the module docstring)."""

    max_failures: int = 0
    control_plane_faults: tuple | None = None
    max_checkpoints: int | None = None
    savepoints: bool = False
    trigger_savepoints: bool = False
    drain_savepoints: bool = False
    rescale_from_checkpoints: bool = False
    max_checkpoint_rescales: int = 1
    rescale_options: tuple = ()
    max_idle_periods: int | None = None
    rpc_order: str = "any"
    rpc_capacity: int | None = None
    dead_letters: str = "on_delivery"
    trigger_delivery: str = "at_once"
    job_submissions: int = 0

    def __attrs_post_init__(self):
        from model.actions import CONTROL_PLANE_FAULTS  # here: the action kinds import the runtime, which imports this

        if type(self.max_failures) is not int or self.max_failures < 0:
            raise FlinkspecError(f"max_failures must be an int >= 0, not {self.max_failures!r}")
        if self.max_checkpoints is not None and (type(self.max_checkpoints) is not int or self.max_checkpoints < 0):
            raise FlinkspecError(f"max_checkpoints must be an int >= 0 or None, not {self.max_checkpoints!r}")
        if self.max_idle_periods is not None and (type(self.max_idle_periods) is not int or self.max_idle_periods < 0):
            raise FlinkspecError(f"max_idle_periods must be an int >= 0 or None, not {self.max_idle_periods!r}")
        if type(self.max_checkpoint_rescales) is not int or self.max_checkpoint_rescales < 0:
            raise FlinkspecError(f"max_checkpoint_rescales must be an int >= 0, not {self.max_checkpoint_rescales!r}")
        if self.rpc_capacity is not None and (type(self.rpc_capacity) is not int or self.rpc_capacity < 1):
            raise FlinkspecError(f"rpc_capacity must be an int >= 1 or None, not {self.rpc_capacity!r}")
        if type(self.job_submissions) is not int or self.job_submissions < 0:
            raise FlinkspecError(f"job_submissions must be an int >= 0, not {self.job_submissions!r}")
        if self.rpc_order not in RPC_ORDERS:
            raise FlinkspecError(f"rpc_order must be one of {RPC_ORDERS}, not {self.rpc_order!r}")
        if self.dead_letters not in DEAD_LETTERS:
            raise FlinkspecError(f"dead_letters must be one of {DEAD_LETTERS}, not {self.dead_letters!r}")
        if self.trigger_delivery not in TRIGGER_DELIVERY:
            raise FlinkspecError(f"trigger_delivery must be one of {TRIGGER_DELIVERY}, not {self.trigger_delivery!r}")
        if self.control_plane_faults is not None:
            unknown = sorted(set(self.control_plane_faults) - set(CONTROL_PLANE_FAULTS)) \
                if isinstance(self.control_plane_faults, tuple) else None
            if unknown is None or unknown:
                raise FlinkspecError(f"control_plane_faults must be a tuple of {CONTROL_PLANE_FAULTS}, "
                                     f"not {self.control_plane_faults!r}")
        if not isinstance(self.rescale_options, tuple) or not all(
                isinstance(o, tuple) and len(o) == 2 and isinstance(o[0], str) and isinstance(o[1], tuple)
                and all(type(p) is int and p >= 1 for p in o[1]) for o in self.rescale_options):
            raise FlinkspecError(f"rescale_options must be ((operator name, (parallelism >= 1, ...)), ...), "
                                 f"not {self.rescale_options!r}")


#: the names of the Environment's fields (once ``RuntimeConfig`` fields: see ``moved_field_problem``)
FIELDS = tuple(a.name for a in attrs.fields(Environment))


def split_fields(cfg: dict, fields) -> tuple[dict, dict]:
    """``cfg`` (a dict) split into (what is not one of ``fields``, what is): a configuration
    written before some of its fields left it for another part of the scenario."""
    return ({k: v for k, v in cfg.items() if k not in fields}, {k: v for k, v in cfg.items() if k in fields})


def moved_fields(cfg, fields) -> list:
    """The keys of the configuration dict ``cfg`` that are ``fields`` (none when ``cfg`` is not a dict)."""
    return [k for k in cfg if k in fields] if isinstance(cfg, dict) else []


def split_config(cfg: dict) -> tuple[dict, dict]:
    """A ``RuntimeConfig`` dict written before the environment's fields left it, split into
    (the configuration, the environment) dicts."""
    return split_fields(cfg, FIELDS)


def moved_field_problem(cfg) -> str | None:
    """Why the configuration dict ``cfg`` cannot be read as it is (it holds a field of the
    Environment), or None."""
    moved = moved_fields(cfg, FIELDS)
    if not moved:
        return None
    return (f"{', '.join(moved)} {'is' if len(moved) == 1 else 'are'} not Flink configuration but the run's "
            f"environment (the scenario's \"environment\"); `python tools/migrate_knobs.py FILE...` rewrites "
            f"such files")
