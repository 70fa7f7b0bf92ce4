"""State assignment on restore (model/stateassignment.py): the max-parallelism rules of
``StateAssignmentOperation`` and ``RoundRobinOperatorStateRepartitioner``'s distribution of
operator list state, against their statements (checked independently here)."""

from __future__ import annotations

import random

import pytest

from model.stateassignment import (StateAssignmentError, check_max_parallelism, repartition_operator_state,
                                   repartition_split_distribute)


def test_max_parallelism_rules():
    # the new parallelism may equal the max parallelism
    assert check_max_parallelism("op", 8, 8, 8, True) == 8
    with pytest.raises(StateAssignmentError, match="higher than the max parallelism 8"):
        check_max_parallelism("op", 8, 8, 9, False)
    # an auto-configured max parallelism gives way to the restored one
    assert check_max_parallelism("op", 16, 128, 4, False) == 16
    with pytest.raises(StateAssignmentError, match="higher than the max parallelism 16"):
        check_max_parallelism("op", 16, 128, 17, False)
    with pytest.raises(StateAssignmentError, match="Max parallelism mismatch"):
        check_max_parallelism("op", 16, 128, 4, True)


def _expected_split(old, p, start):
    """SPLIT_DISTRIBUTE: the entries in old-subtask order, handed out in consecutive runs to the
    new subtasks visited from ``start``; the first ``total % p`` visited get one more; the next
    state name starts at the first subtask visited that got no extra entry."""
    entries = [e for lst in old for e in lst]
    base, extra = divmod(len(entries), p)
    out, pos = [None] * p, 0
    for i in range(p):
        idx = (start + i) % p
        n = base + (1 if i < extra else 0)
        out[idx] = entries[pos:pos + n]
        pos += n
    return out, (start + extra) % p


def test_split_distribute_round_robin_from_the_start_index():
    rng = random.Random(7)
    for _ in range(300):
        old = [[rng.randrange(100) for _ in range(rng.randrange(5))] for _ in range(rng.randrange(1, 5))]
        p = rng.randrange(1, 6)
        start = rng.randrange(p)
        assert repartition_split_distribute(old, p, start) == _expected_split(old, p, start), (old, p, start)
    assert repartition_split_distribute([["a", "b", "c"], ["d", "e"]], 3) == ([["a", "b"], ["c", "d"], ["e"]], 2)


def test_operator_state_modes():
    old = [["a", "b", "c"], ["d", "e"]]
    # a changed parallelism redistributes, from the given start (the default: subtask 0)
    assert repartition_operator_state(old, 3) == _expected_split(old, 3, 0)
    assert repartition_operator_state(old, 3, "split_distribute", 1) == _expected_split(old, 3, 1)
    # an unchanged parallelism keeps the layout and the start
    assert repartition_operator_state(old, 2, "split_distribute", 1) == ([["a", "b", "c"], ["d", "e"]], 1)
    # UNION: every new subtask gets every entry; an old subtask without a handle adds nothing
    assert repartition_operator_state([["a"], None, ["b", "c"]], 2, "union", 1) == ([["a", "b", "c"]] * 2, 1)
    # BROADCAST: copies of the reported lists
    assert repartition_operator_state([["a"], None, ["a"]], 3, "broadcast") == ([["a"]] * 3, 0)
    with pytest.raises(StateAssignmentError, match="unknown operator state distribution mode"):
        repartition_operator_state(old, 3, "nope")
