"""State assignment on restore and rescaling.

Invariant upheld: after a restore with parallelism ``p'``, every key group of
``[0, maxParallelism)`` is owned by exactly one new subtask (the one whose
``KeyGroupRange`` contains it) and carries the union of the old subtasks' state for it;
operator list state is redistributed so that every old entry lands in exactly one new
subtask (SPLIT_DISTRIBUTE), in every new subtask (UNION) or as a copy of one old subtask's
entries (BROADCAST).

Follows: ``StateAssignmentOperation`` (``createKeyGroupPartitions``, key-group range
intersection, the max-parallelism preconditions) and ``RoundRobinOperatorStateRepartitioner``
(called per operator: its round-robin start begins at new subtask 0 for every operator).

Deliberate choice where Flink leaves the order open: a new subtask's SPLIT_DISTRIBUTE entries
are listed in old-subtask order; Flink merges them per state handle in a ``HashMap``, so the
order of entries that came from different old subtasks (e.g. the splits a source subtask reads
one after the other) follows the handles' hash codes. Which entries a subtask gets is the same.

Known-unsafe variant (the seam ``keygroups-by-modulo``, overriding
:func:`key_groups_restored_by`): new subtask ``i`` takes the key groups ``kg % p' == i``
instead of its range, while records are still routed by range — so keyed state ends up on a
subtask that never sees its key.

Leaves out: channel-state rescaling (savepoints are aligned, so a rescale from a savepoint
has no channel state), rescaling of incremental state handles (with a state backend,
``model.statebackend``, a rescaled restore re-inserts the values).
"""

from __future__ import annotations

import sys

from model import seams
from model.errors import FlinkspecError
from model.keygroups import compute_key_group_range_for_operator_index


class StateAssignmentError(FlinkspecError):
    """A restore breaks a rule Flink checks (e.g. ``Max parallelism mismatch``)."""


def check_max_parallelism(operator: str, old_max: int, new_max: int, new_parallelism: int,
                          new_max_configured: bool) -> int:
    """The max parallelism the restored operator runs with, or a StateAssignmentError.

    Flink: the checkpoint's max parallelism must be >= the new parallelism; a different
    max parallelism is adopted only when the new one was auto-configured
    (``canRescaleMaxParallelism``), else "Max parallelism mismatch".
    """
    if old_max != new_max:
        if new_max_configured:
            raise StateAssignmentError(
                f"operator '{operator}': Max parallelism mismatch between checkpoint/savepoint state "
                f"({old_max}) and the new program ({new_max}); the new max parallelism was set explicitly")
        new_max = old_max
    if new_parallelism > new_max:
        raise StateAssignmentError(
            f"operator '{operator}': the new parallelism {new_parallelism} is higher than the max "
            f"parallelism {new_max} of the restored state")
    return new_max


def key_groups_for(max_parallelism: int, parallelism: int, index: int) -> list[int]:
    """The key groups of subtask ``index``'s ``KeyGroupRange``."""
    r = compute_key_group_range_for_operator_index(max_parallelism, parallelism, index)
    return list(range(r.start, r.end + 1))


def key_groups_restored_by(max_parallelism: int, parallelism: int, index: int) -> list[int]:
    """The key groups new subtask ``index`` restores: its ``KeyGroupRange``
    (``StateAssignmentOperation.createKeyGroupPartitions``), the groups records are routed to."""
    return key_groups_for(max_parallelism, parallelism, index)


def assign_keyed_state(old_states: list[dict], max_parallelism: int, new_parallelism: int) -> list[dict]:
    """``old_states``: per old subtask, {key group: state}. Returns per new subtask the key
    groups it owns (range intersection)."""
    merged: dict = {}
    for st in old_states:
        for kg, v in st.items():
            if kg in merged:
                raise StateAssignmentError(f"key group {kg} is owned by two old subtasks")
            merged[kg] = v
    out = []
    for i in range(new_parallelism):
        mine = {}
        for kg in key_groups_restored_by(max_parallelism, new_parallelism, i):
            if kg in merged:
                mine[kg] = merged[kg]
        out.append(mine)
    return out


def repartition_split_distribute(old: list[list], new_parallelism: int, start: int = 0) -> tuple[list[list], int]:
    """``RoundRobinOperatorStateRepartitioner`` for one SPLIT_DISTRIBUTE state name.

    ``old[i]`` are old subtask i's entries; they are concatenated in old-subtask order and
    handed out in consecutive runs of ``total // p'`` (+1 for the first ``total % p'`` new
    subtasks visited), visiting new subtasks from ``start``. Returns the new lists and the
    start index for the next state name: the first subtask visited that got no odd entry.
    """
    entries = [e for lst in old for e in lst]
    total = len(entries)
    base, rem = divmod(total, new_parallelism)
    out: list[list] = [[] for _ in range(new_parallelism)]
    pos = 0
    new_start = start
    for i in range(new_parallelism):
        idx = (i + start) % new_parallelism
        n = base
        if rem > 0:
            n += 1
            rem -= 1
        elif rem == 0:
            # out of odd entries: the next state name starts here (fair load balance)
            new_start = idx
            rem -= 1
        out[idx] = entries[pos: pos + n]
        pos += n
    return out, new_start


def repartition_union(old: list[list | None], new_parallelism: int) -> list[list]:
    """UNION: every new subtask gets all entries of all old subtasks (``None``: an old subtask
    that reported no handle of this state)."""
    entries = [e for lst in old if lst is not None for e in lst]
    return [list(entries) for _ in range(new_parallelism)]


def repartition_broadcast(old: list[list | None], new_parallelism: int) -> list[list]:
    """BROADCAST: new subtask i gets the ``i % k``-th of the k copies the old subtasks reported
    (``RoundRobinOperatorStateRepartitioner.repartitionBroadcastState`` indexes the list of
    reported handles, so an old subtask that reported none (``None``) is skipped, not copied as
    empty: ``StateAssignmentOperationTest#testRepartitionBroadcastStateWithNullSubtaskState``)."""
    reported = [lst for lst in old if lst is not None]
    if not reported:
        return [[] for _ in range(new_parallelism)]
    return [list(reported[i % len(reported)]) for i in range(new_parallelism)]


def repartition_operator_state(old: list[list], new_parallelism: int, mode: str = "split_distribute",
                               start: int = 0) -> tuple[list[list], int]:
    """``RoundRobinOperatorStateRepartitioner.repartitionState`` for one state name: with
    unchanged parallelism SPLIT_DISTRIBUTE state keeps its layout (Flink returns the previous
    assignment as is); otherwise ``mode`` picks SPLIT_DISTRIBUTE / UNION / BROADCAST. For UNION
    and BROADCAST an entry of ``old`` may be ``None``: that old subtask reported no handle."""
    if mode == "split_distribute":
        if len(old) == new_parallelism:
            return [list(x) for x in old], start
        return repartition_split_distribute(old, new_parallelism, start)
    if mode == "union":
        return repartition_union(old, new_parallelism), start
    if mode == "broadcast":
        return repartition_broadcast(old, new_parallelism), start
    raise StateAssignmentError(f"unknown operator state distribution mode {mode!r}")


@seams.override("keygroups-by-modulo", sys.modules[__name__], "key_groups_restored_by",
                "a restore hands new subtask i the key groups kg % p == i instead of its KeyGroupRange, "
                "while records are still routed by range")
def _key_groups_by_modulo(max_parallelism: int, parallelism: int, index: int) -> list[int]:
    return [kg for kg in range(max_parallelism) if kg % parallelism == index]
