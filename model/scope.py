"""The model's scope: which of Flink's mechanisms a run models, and how coarsely.

Neither Flink's configuration (``model.cluster.RuntimeConfig``: each of its fields is a Flink
option, named as Flink names it) nor what the world around the job may do
(``model.environment.Environment``): these are choices of the model itself, as a TLA+ model
chooses the instance of a specification it checks. They are part of a scenario
(``Scenario.scope``), so a counterexample file says which model it was found in.

* ``control_plane`` -- whether the FLIP-6 control plane is modelled (``model/controlplane.py``):
  JobManager processes under leader election, ResourceManager/SlotManager, JobMaster/SlotPool,
  TaskExecutors, RPCs over an unreliable network, heartbeats, the HA store. Off (the default):
  the data plane alone, on slots the runtime always has. Flink always has a control plane; a
  data-plane run is the model's abstraction of one that never fails.
* ``channel_capacity`` -- the coarse channels' capacity, in elements: a producer whose channel
  holds this many elements is back-pressured (one element may overshoot it). Flink counts
  buffers, not elements (``taskmanager.network.memory.buffers-per-channel`` and the floating
  buffers); with ``RuntimeConfig.buffers_per_channel`` set the network stack's buffers and
  credits are modelled instead (``model/creditbasedflowcontrol.py``), and this capacity bounds
  what a producer's output holds unsent. It bounds the state space: the small scenarios of the
  unaligned variants use 3.

Invariant: a scope never changes Flink's rules inside the mechanisms it includes; it decides
which mechanisms are there and how finely back-pressure is counted. A configuration dict that
still holds one of these fields (a file written before they left ``RuntimeConfig``) is refused
with the field to move (:func:`moved_field_problem`); ``tools/migrate_knobs.py`` rewrites such
files.
"""

from __future__ import annotations

import attrs

from model.environment import moved_fields, split_fields
from model.errors import FlinkspecError


@attrs.frozen(slots=True, kw_only=True)
class ModelScope:
    """Which mechanisms a run models and how coarsely (see the module docstring)."""

    control_plane: bool = False
    channel_capacity: int = 4

    def __attrs_post_init__(self):
        if type(self.control_plane) is not bool:
            raise FlinkspecError(f"control_plane must be true or false, not {self.control_plane!r}")
        if type(self.channel_capacity) is not int or self.channel_capacity < 1:
            raise FlinkspecError(f"channel_capacity must be an int >= 1, not {self.channel_capacity!r}")

    def check(self, config) -> None:
        """A FlinkspecError when this scope cannot model ``config`` (a ``RuntimeConfig``): the
        deployment modes model their own ResourceManager and JobMasters, not the control plane's."""
        if self.control_plane and config.deployment_mode is not None:
            raise FlinkspecError("deployment_mode and control_plane cannot be combined (the deployment "
                                 "modes model their own ResourceManager and JobMasters)")


#: the names of the scope's fields (once ``RuntimeConfig`` fields: see ``moved_field_problem``)
FIELDS = tuple(a.name for a in attrs.fields(ModelScope))


def split_scope(cfg: dict) -> tuple[dict, dict]:
    """A ``RuntimeConfig`` dict written before the scope's fields left it, split into (the
    configuration, the scope) dicts."""
    return split_fields(cfg, FIELDS)


def moved_field_problem(cfg) -> str | None:
    """Why the configuration dict ``cfg`` cannot be read as it is (it holds a field of the
    scope), or None."""
    moved = moved_fields(cfg, FIELDS)
    if not moved:
        return None
    return (f"{', '.join(moved)} in the configuration: {'it is' if len(moved) == 1 else 'they are'} the model's "
            f"scope now (scenario.scope), not Flink's configuration; "
            f"`python tools/migrate_knobs.py FILE...` rewrites such files")
