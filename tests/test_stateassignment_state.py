"""model.stateassignment call by call: each function's whole answer, written out by hand, as
``StateAssignmentOperation`` and ``RoundRobinOperatorStateRepartitioner`` compute it (the cases of
``StateAssignmentOperationTest`` and ``RoundRobinOperatorStateRepartitionerTest`` style: explicit
expected layouts, never computed by the function under test), and the inputs left unchanged."""

from __future__ import annotations

import pytest

from model import seams
from model import stateassignment as sa
from model.errors import FlinkspecError
from model.stateassignment import (StateAssignmentError, assign_keyed_state, check_max_parallelism, key_groups_for,
                                   key_groups_restored_by, repartition_broadcast, repartition_operator_state,
                                   repartition_split_distribute, repartition_union)


def test_the_error_is_a_flinkspec_error():
    assert issubclass(StateAssignmentError, FlinkspecError)


def test_check_max_parallelism_answers_and_messages():
    assert check_max_parallelism("op", 8, 8, 8, True) == 8
    assert check_max_parallelism("op", 8, 8, 1, False) == 8
    assert check_max_parallelism("op", 16, 128, 16, False) == 16
    assert check_max_parallelism("op", 128, 16, 100, False) == 128
    with pytest.raises(StateAssignmentError) as e:
        check_max_parallelism("map", 16, 128, 4, True)
    assert str(e.value) == ("operator 'map': Max parallelism mismatch between checkpoint/savepoint state (16) and "
                            "the new program (128); the new max parallelism was set explicitly")
    with pytest.raises(StateAssignmentError) as e:
        check_max_parallelism("map", 16, 128, 17, False)
    assert str(e.value) == ("operator 'map': the new parallelism 17 is higher than the max parallelism 16 of the "
                            "restored state")
    with pytest.raises(StateAssignmentError) as e:
        check_max_parallelism("src", 4, 4, 5, True)
    assert str(e.value) == ("operator 'src': the new parallelism 5 is higher than the max parallelism 4 of the "
                            "restored state")


def test_key_group_ranges_written_out():
    # KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(10, 3, i): [0,3] [4,6] [7,9]
    assert [key_groups_for(10, 3, i) for i in range(3)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert [key_groups_restored_by(10, 3, i) for i in range(3)] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert key_groups_for(4, 4, 3) == [3] and key_groups_for(4, 1, 0) == [0, 1, 2, 3]
    with seams.active(("keygroups-by-modulo",)):
        assert [sa.key_groups_restored_by(10, 3, i) for i in range(3)] == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]


def test_a_new_subtask_without_restored_key_groups_gets_an_empty_table():
    assert assign_keyed_state([], 4, 2) == [{}, {}]
    assert assign_keyed_state([{}, {}], 8, 3) == [{}, {}, {}]


def test_assign_keyed_state_by_range_intersection():
    old = [{0: "a", 1: "b", 2: "c"}, {3: "d", 5: "f"}, {7: "h", 9: "j"}]
    frozen = [dict(d) for d in old]
    assert assign_keyed_state(old, 10, 2) == [{0: "a", 1: "b", 2: "c", 3: "d"}, {5: "f", 7: "h", 9: "j"}]
    assert assign_keyed_state(old, 10, 3) == [{0: "a", 1: "b", 2: "c", 3: "d"}, {5: "f"}, {7: "h", 9: "j"}]
    assert assign_keyed_state(old, 10, 1) == [{0: "a", 1: "b", 2: "c", 3: "d", 5: "f", 7: "h", 9: "j"}]
    assert list(assign_keyed_state(old, 10, 1)[0]) == [0, 1, 2, 3, 5, 7, 9]
    assert assign_keyed_state([], 4, 2) == [{}, {}]
    assert old == frozen
    with pytest.raises(StateAssignmentError) as e:
        assign_keyed_state([{1: "a"}, {2: "b", 1: "c"}], 4, 2)
    assert str(e.value) == "key group 1 is owned by two old subtasks"
    with seams.active(("keygroups-by-modulo",)):
        assert sa.assign_keyed_state(old, 10, 2) == [{0: "a", 2: "c"}, {1: "b", 3: "d", 5: "f", 7: "h", 9: "j"}]


def test_split_distribute_layouts_and_next_start_written_out():
    old = [["a", "b", "c"], ["d", "e"]]
    # 5 entries over 3: runs of 2, 2, 1; the next state starts at the first without an odd one
    assert repartition_split_distribute(old, 3) == ([["a", "b"], ["c", "d"], ["e"]], 2)
    assert repartition_split_distribute(old, 3, 1) == ([["e"], ["a", "b"], ["c", "d"]], 0)
    assert repartition_split_distribute(old, 3, 2) == ([["c", "d"], ["e"], ["a", "b"]], 1)
    # an even split: every subtask the same count; the next start is the start itself
    assert repartition_split_distribute([["a", "b"], ["c", "d", "e", "f"]], 3, 1) == (
        [["e", "f"], ["a", "b"], ["c", "d"]], 1)
    assert repartition_split_distribute([["a", "b", "c", "d"]], 2) == ([["a", "b"], ["c", "d"]], 0)
    # fewer entries than subtasks
    assert repartition_split_distribute([["a"], ["b"]], 4) == ([["a"], ["b"], [], []], 2)
    assert repartition_split_distribute([["a"], ["b"]], 4, 3) == ([["b"], [], [], ["a"]], 1)
    assert repartition_split_distribute([[], []], 3, 2) == ([[], [], []], 2)
    # one odd entry short of an even split
    assert repartition_split_distribute([["a", "b", "c", "d"]], 3) == ([["a", "b"], ["c"], ["d"]], 1)
    # scale-out to one subtask
    assert repartition_split_distribute([["a"], ["b", "c"]], 1) == ([["a", "b", "c"]], 0)
    assert old == [["a", "b", "c"], ["d", "e"]]


def test_union_and_broadcast_written_out():
    old = [["a"], None, ["b", "c"]]
    out = repartition_union(old, 3)
    assert out == [["a", "b", "c"], ["a", "b", "c"], ["a", "b", "c"]]
    assert out[0] is not out[1]  # a list per subtask
    assert repartition_union([None, None], 2) == [[], []] and repartition_union([], 1) == [[]]
    b = repartition_broadcast([["x"], None, ["y", "z"]], 5)
    assert b == [["x"], ["y", "z"], ["x"], ["y", "z"], ["x"]]
    assert b[0] is not b[2]
    assert repartition_broadcast([None, None], 3) == [[], [], []]
    assert repartition_broadcast([], 2) == [[], []]
    assert repartition_broadcast([["q"]], 1) == [["q"]]


def test_repartition_operator_state_by_mode():
    old = [["a", "b", "c"], ["d", "e"]]
    same = repartition_operator_state(old, 2, "split_distribute", 1)
    assert same == ([["a", "b", "c"], ["d", "e"]], 1)
    assert same[0][0] is not old[0]
    assert repartition_operator_state(old, 3) == ([["a", "b"], ["c", "d"], ["e"]], 2)
    assert repartition_operator_state(old, 3, "split_distribute", 2) == ([["c", "d"], ["e"], ["a", "b"]], 1)
    assert repartition_operator_state([["a"], None], 3, "union", 2) == ([["a"], ["a"], ["a"]], 2)
    assert repartition_operator_state([None, ["a"]], 2, "broadcast", 1) == ([["a"], ["a"]], 1)
    assert repartition_operator_state([["a"], ["b"]], 2, "union") == ([["a", "b"], ["a", "b"]], 0)
    assert repartition_operator_state([["a"], ["b"]], 2, "broadcast") == ([["a"], ["b"]], 0)
    with pytest.raises(StateAssignmentError) as e:
        repartition_operator_state(old, 3, "nope")
    assert str(e.value) == "unknown operator state distribution mode 'nope'"
