"""Channel-state rescaling: in-flight data of an unaligned checkpoint restored with new parallelisms.

An unaligned checkpoint persists, per subtask, the records still in flight: the consumer's
*input channel state* (records its barrier overtook) and the producer's *result subpartition
state* (records in its output buffers). Restoring such a checkpoint with other parallelisms
must hand every one of those records to a new subtask, and a keyed record to the new owner of
its key group.

Invariant upheld: across a rescale from an unaligned checkpoint no in-flight record is lost or
duplicated, and a record of a hash (keyBy) exchange lands in a channel whose consumer owns its
key group under the new ``KeyGroupRange``s (``spec/recovery.py`` checks both).

Follows (apache/flink):

* ``SubtaskStateMapper`` (``getOldSubtasks``, ``getNewToOldSubtasksMapping``, ``isAmbiguous``):
  ``ARBITRARY`` (round robin), ``FIRST``, ``FULL``, ``RANGE`` (key-group ranges computed with
  ``UPPER_BOUND_MAX_PARALLELISM``: the actual max parallelism cancels out, which
  ``tests/test_channelstaterescaling.py`` checks exhaustively for small ones), ``ROUND_ROBIN`` and
  ``UNSUPPORTED`` ("Cannot rescale the given pointwise partitioner").
* ``RescaleMappings`` (``isIdentity``, ``getAmbiguousTargets``: old subtasks several new ones read).
* ``TaskStateAssignment.getInflightDataGateOrPartitionRescalingDescriptor`` and
  ``createRescalingDescriptor``: per gate (input) or partition (output) the old subtasks whose
  state this subtask reads, the other side's new-to-old mapping (the virtual channels), the
  ambiguous old subtasks (only for an ambiguous mapper), IDENTITY when both mappings are the
  identity or the subtask reads no old subtask, and ``NO_RESCALE`` when every gate is IDENTITY.
* ``StreamPartitioner.getUpstreamSubtaskStateMapper`` / ``getDownstreamSubtaskStateMapper`` of
  each partitioner (:data:`PARTITIONER_MAPPERS`), as in Flink 2.3: ``KeyGroupStreamPartitioner``
  RANGE downstream, ``RebalancePartitioner`` ROUND_ROBIN, forward, rescale and broadcast
  ``UNSUPPORTED`` both ways; upstream ARBITRARY unless the partitioner says otherwise.
* ``RecordFilter`` in ``DemultiplexingRecordDeserializer``: on an ambiguous old subtask a new
  consumer keeps a recovered record only if the partitioner would route it to this subtask.

Record-level rule (:func:`assign_channel_state`): a record persisted for old channel
(upstream ``u`` -> downstream ``d``) goes to every new consumer ``k`` whose downstream mapping
reads ``d``, filtered by the partitioner when ``d`` is ambiguous, into the new channel from the
new upstream subtask that inherits ``u`` (the upstream mapping); input channel state first,
then the producer's output state of that channel, both ahead of anything sent after the restore.

Known-unsafe variant, the seam ``inflight-by-old-index`` (``in_flight_data_stays_in_place``
answers yes): the in-flight data of a rescaled exchange is handed to the subtask with the
*old* index (no mapping, no filter), as if nothing had been rescaled: records of an old
subtask index that no longer exists are lost, and keyed records reach a subtask that does not
own their key group.

Pointwise (forward, rescale) and broadcast edges carry no in-flight data: Flink 2.3 sends their
barriers aligned (``StreamPartitioner.isSupportsUnalignedCheckpoint`` is false for a pointwise
or broadcast partitioner, and ``StreamGraphGenerator`` then disables unaligned checkpoints on
every input edge of the consuming node: ``StreamGraph.supports_unaligned_checkpoints``), so
their UNSUPPORTED mappers are never asked. :func:`assign_channel_state` still raises
UNSUPPORTED's error for in-flight data on such an edge whose parallelism changes (only a seam
that drops the forcing could put data there).

Leaves out: Flink's newest topology-aware pointwise rescaling (``POINTWISE_UPSTREAM``) and the
option to recover output buffers on the downstream task; buffers are records.
"""

from __future__ import annotations

import sys

from model import seams
from model.errors import FlinkspecError
from model.keygroups import (
    UPPER_BOUND_MAX_PARALLELISM,
    assign_key_to_parallel_operator,
    compute_key_group_range_for_operator_index,
    compute_operator_index_for_key_group,
)

#: ``SubtaskStateMapper`` values the model implements.
SUBTASK_STATE_MAPPERS = ("ARBITRARY", "FIRST", "FULL", "RANGE", "ROUND_ROBIN", "UNSUPPORTED")

#: ``SubtaskStateMapper.isAmbiguous()``: several new subtasks may read one old subtask.
AMBIGUOUS_MAPPERS = frozenset({"FULL", "RANGE"})

#: partitioner -> (upstream mapper, downstream mapper), as each ``StreamPartitioner`` returns
#: them (``getUpstreamSubtaskStateMapper`` defaults to ARBITRARY).
PARTITIONER_MAPPERS = {
    "hash": ("ARBITRARY", "RANGE"),
    "rebalance": ("ARBITRARY", "ROUND_ROBIN"),
    "broadcast": ("UNSUPPORTED", "UNSUPPORTED"),
    "forward": ("UNSUPPORTED", "UNSUPPORTED"),
    "rescale": ("UNSUPPORTED", "UNSUPPORTED"),
}

def in_flight_data_stays_in_place(up_old_p: int, up_new_p: int, down_old_p: int, down_new_p: int) -> bool:
    """Whether an edge's in-flight data goes back to the channels it was persisted for, unmapped:
    only when neither end was rescaled (``StateAssignmentOperation`` maps it otherwise)."""
    return up_old_p == up_new_p and down_old_p == down_new_p


@seams.override("inflight-by-old-index", sys.modules[__name__], "in_flight_data_stays_in_place",
                "the in-flight data of a rescaled exchange goes to the subtask with the old index: no mapping, no "
                "filter, as if nothing had been rescaled")
def _in_flight_data_always_in_place(up_old_p: int, up_new_p: int, down_old_p: int, down_new_p: int) -> bool:
    return True

#: the message of ``SubtaskStateMapper.UNSUPPORTED``
UNSUPPORTED_MESSAGE = ("Cannot rescale the given pointwise partitioner. Did you change the partitioner to forward "
                       "or rescale? It may also help to add an explicit shuffle().")


class ChannelStateRescalingError(FlinkspecError):
    """A restore Flink refuses (``UnsupportedOperationException`` of ``SubtaskStateMapper``)."""


def _check_mapper(mapper: str) -> str:
    if mapper not in SUBTASK_STATE_MAPPERS:
        raise FlinkspecError(f"unknown SubtaskStateMapper {mapper!r} (one of {', '.join(SUBTASK_STATE_MAPPERS)})")
    return mapper


def old_subtasks(mapper: str, new_index: int, old_parallelism: int, new_parallelism: int) -> tuple[int, ...]:
    """``SubtaskStateMapper.getOldSubtasks``: the old subtasks new subtask ``new_index`` reads."""
    _check_mapper(mapper)
    if mapper in ("ARBITRARY", "ROUND_ROBIN"):
        return tuple(range(new_index, old_parallelism, new_parallelism))
    if mapper == "FIRST":
        return tuple(range(old_parallelism)) if new_index == 0 else ()
    if mapper == "FULL":
        return tuple(range(old_parallelism))
    if mapper == "RANGE":
        m = UPPER_BOUND_MAX_PARALLELISM
        r = compute_key_group_range_for_operator_index(m, new_parallelism, new_index)
        start = compute_operator_index_for_key_group(m, old_parallelism, r.start)
        end = compute_operator_index_for_key_group(m, old_parallelism, r.end)
        return tuple(range(start, end + 1))
    raise ChannelStateRescalingError(UNSUPPORTED_MESSAGE)


def new_to_old_mapping(mapper: str, old_parallelism: int, new_parallelism: int) -> tuple[tuple[int, ...], ...]:
    """``getNewToOldSubtasksMapping``: ``RescaleMappings`` as new subtask -> old subtasks."""
    return tuple(old_subtasks(mapper, k, old_parallelism, new_parallelism) for k in range(new_parallelism))


def is_identity(mapping: tuple, old_parallelism: int) -> bool:
    """``RescaleMappings.isIdentity``: new subtask i reads exactly old subtask i, for all."""
    return len(mapping) == old_parallelism and all(m == (i,) for i, m in enumerate(mapping))


def ambiguous_targets(mapping: tuple) -> frozenset:
    """``RescaleMappings.getAmbiguousTargets``: old subtasks read by more than one new subtask."""
    seen: set = set()
    twice: set = set()
    for olds in mapping:
        for o in olds:
            (twice if o in seen else seen).add(o)
    return frozenset(twice)


def gate_descriptor(own_mapper: str, other_mapper: str, subtask: int, own_old: int, own_new: int,
                    other_old: int, other_new: int) -> dict:
    """``getInflightDataGateOrPartitionRescalingDescriptor`` of one gate (input: own = the
    downstream mapper, other = the upstream mapper) or partition (output: the reverse)."""
    own = new_to_old_mapping(own_mapper, own_old, own_new)
    other = new_to_old_mapping(other_mapper, other_old, other_new)
    olds = list(own[subtask])
    identity = (is_identity(own, own_old) and is_identity(other, other_old)) or not olds
    return {
        "old_indices": olds,
        "mappings": [list(m) for m in other],
        "ambiguous": sorted(ambiguous_targets(own)) if own_mapper in AMBIGUOUS_MAPPERS else [],
        "type": "IDENTITY" if identity else "RESCALING",
    }


def inflight_data_rescaling_descriptor(side: str, subtask: int, gates, own_old: int, own_new: int, *,
                                       up_old_parallelism: int, up_new_parallelism: int):
    """``TaskStateAssignment.createRescalingDescriptor``: the gate descriptors of ``subtask``'s
    input (``side="input"``) or output side, or None for ``NO_RESCALE`` (every gate IDENTITY).
    ``gates``: per gate (own mapper, other side's mapper)."""
    if side not in ("input", "output"):
        raise FlinkspecError(f"side must be 'input' or 'output', not {side!r}")
    descs = [gate_descriptor(own, other, subtask, own_old, own_new, up_old_parallelism, up_new_parallelism)
             for own, other in gates]
    if all(d["type"] == "IDENTITY" for d in descs):
        return None
    return [{k: d[k] for k in ("old_indices", "mappings", "ambiguous", "type")} for d in descs]


# ------------------------------------------------------------------------------------------
# record level
# ------------------------------------------------------------------------------------------


def edge_mappers(partitioner: str) -> tuple[str, str]:
    """(upstream, downstream) ``SubtaskStateMapper`` of an edge's partitioner."""
    try:
        return PARTITIONER_MAPPERS[partitioner]
    except KeyError:
        raise FlinkspecError(f"no SubtaskStateMapper for partitioner {partitioner!r}") from None


def inheriting_upstream(up_mapper: str, old_up: int, up_old_p: int, up_new_p: int) -> int:
    """The new upstream subtask whose channel carries old upstream ``old_up``'s recovered data
    (the virtual channel's physical channel): the first new subtask that reads ``old_up``."""
    if up_old_p == up_new_p:
        return old_up
    for k in range(up_new_p):
        if old_up in old_subtasks(up_mapper, k, up_old_p, up_new_p):
            return k
    raise ChannelStateRescalingError(f"old upstream subtask {old_up} is read by no new subtask ({up_mapper})")


def keeps(partitioner: str, record, new_consumer: int, max_parallelism: int, new_p: int) -> bool:
    """``RecordFilter``: the partitioner would route ``record`` to ``new_consumer`` (only a hash
    exchange routes by the record; every other partitioner keeps it)."""
    if partitioner != "hash":
        return True
    return assign_key_to_parallel_operator(record[0], max_parallelism, new_p) == new_consumer


def assign_channel_state(records: dict, partitioner: str, up_old_p: int, up_new_p: int, down_old_p: int,
                         down_new_p: int, max_parallelism: int) -> dict:
    """Reassign one edge's in-flight records. ``records``: (old upstream, old downstream) ->
    records (input channel state first, then output channel state). Returns (new upstream, new
    downstream) -> records, in old-channel order. ``max_parallelism``: the downstream's, for
    the filter of a hash exchange."""
    out: dict = {}
    if not any(records.values()):
        return out
    up_mapper, down_mapper = edge_mappers(partitioner)
    if in_flight_data_stays_in_place(up_old_p, up_new_p, down_old_p, down_new_p):
        for (u, d), recs in sorted(records.items()):
            if recs and u < up_new_p and d < down_new_p:
                out.setdefault((u, d), []).extend(recs)
        return out
    down_map = new_to_old_mapping(down_mapper, down_old_p, down_new_p)  # raises UNSUPPORTED (pointwise)
    ambiguous = ambiguous_targets(down_map) if down_mapper in AMBIGUOUS_MAPPERS else frozenset()
    for (u, d), recs in sorted(records.items()):
        if not recs:
            continue
        nu = inheriting_upstream(up_mapper, u, up_old_p, up_new_p)
        for k, olds in enumerate(down_map):
            if d not in olds:
                continue
            kept = [r for r in recs if d not in ambiguous or keeps(partitioner, r, k, max_parallelism, down_new_p)]
            if kept:
                out.setdefault((nu, k), []).extend(kept)
    return out
