"""model/keygroups.py: Flink's vectors, partition properties, preconditions.

Vectors come from ``KeyGroupRangeAssignment`` (a straight port of Flink's formulas, matching an independent
data point from apache/flink-agents PR #1024: maxP=128, Long(1) -> 86, String("1") -> 54) and
from the Java language spec (String/Long/Boolean hashCode). The differential suite
tests/differential/test_keygroups_vs_flink.py compares against the real Flink jars.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model import keygroups as kg
from model.errors import FlinkspecError, InvalidArgument
from model.keygroups import EMPTY_KEY_GROUP_RANGE, KeyGroupRange

# ------------------------------------------------------------------------------ vectors


@pytest.mark.parametrize(
    "code, murmur, key_group_128",
    [(0, 593689054, 94), (1, 68075478, 86), (2, 1085422463, 127), (42, 1134849565, 29),
     (-1, 1982413648, 80)],
)
def test_murmur_and_key_group_vectors(code, murmur, key_group_128):
    assert kg.murmur_hash(code) == murmur
    assert kg.compute_key_group_for_key_hash(code, 128) == key_group_128
    assert kg.assign_to_key_group(code, 128) == key_group_128  # Integer(code).hashCode() == code


@pytest.mark.parametrize("s, hash_code, key_group", [("a", 97, 81), ("hello", 99162322, 35)])
def test_string_vectors(s, hash_code, key_group):
    assert kg.java_hash_code(s) == hash_code
    assert kg.assign_to_key_group(s, 128) == key_group


def test_flink_agents_data_point_long_1_and_string_1():
    # Long(1).hashCode() == 1 as well; String "1" hashes to 49.
    assert kg.java_long_hash_code(1) == 1
    assert kg.compute_key_group_for_key_hash(kg.java_long_hash_code(1), 128) == 86
    assert kg.java_hash_code("1") == 49
    assert kg.assign_to_key_group("1", 128) == 54


def test_ranges_vectors():
    assert [kg.compute_key_group_range_for_operator_index(128, 3, i) for i in range(3)] == [
        KeyGroupRange(0, 42), KeyGroupRange(43, 85), KeyGroupRange(86, 127)]
    assert kg.compute_key_group_ranges(10, 4) == [
        KeyGroupRange(0, 2), KeyGroupRange(3, 4), KeyGroupRange(5, 7), KeyGroupRange(8, 9)]


CHANGE_POINTS = [(1, 128), (86, 256), (172, 512), (342, 1024), (684, 2048), (1366, 4096),
                 (2732, 8192), (5462, 16384), (10924, 32768)]


def test_default_max_parallelism_change_points():
    changes = []
    previous = None
    for p in range(1, kg.UPPER_BOUND_MAX_PARALLELISM + 1):
        value = kg.compute_default_max_parallelism(p)
        if value != previous:
            changes.append((p, value))
            previous = value
    assert changes == CHANGE_POINTS
    assert kg.compute_default_max_parallelism(32768) == 32768


def test_constants():
    assert kg.DEFAULT_LOWER_BOUND_MAX_PARALLELISM == 128
    assert kg.UPPER_BOUND_MAX_PARALLELISM == 32768


# ------------------------------------------------------------------------------ hashCode


def test_string_hash_uses_utf16_code_units_for_non_bmp():
    # U+1F600 is the surrogate pair D83D DE00 in UTF-16: 0xD83D*31 + 0xDE00.
    assert kg.java_hash_code("\U0001F600") == 0xD83D * 31 + 0xDE00 == 1772899
    # Not the code point: a code-point hash would be 0x1F600.
    assert kg.java_hash_code("\U0001F600") != 0x1F600
    assert kg.java_hash_code("") == 0


def test_string_hash_wraps_at_32_bits():
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE (a well-known Java example)
    assert kg.java_hash_code("polygenelubricants") == -(2**31)
    s = "x" * 100
    expected = 0
    for ch in s:
        expected = (expected * 31 + ord(ch)) % 2**32
    expected = expected - 2**32 if expected >= 2**31 else expected
    assert kg.java_hash_code(s) == expected


def test_int_long_boolean_hashes():
    assert kg.java_hash_code(2**31 - 1) == 2**31 - 1  # Integer
    assert kg.java_hash_code(-(2**31)) == -(2**31)  # Integer
    assert kg.java_hash_code(2**31) == -(2**31)  # Long: 0x80000000 ^ 0
    assert kg.java_hash_code(2**40 + 1) == 257  # Long: 1 ^ 256
    assert kg.java_hash_code(2**32) == 1  # Long: 0 ^ 1
    assert kg.java_hash_code(-(2**63)) == -(2**31)  # Long.MIN_VALUE
    assert kg.java_hash_code(2**63 - 1) == -(2**31)  # Long.MAX_VALUE: 0x7fffffff ^ 0xffffffff
    assert kg.java_long_hash_code(-1) == 0  # Long(-1) differs from Integer(-1)
    assert kg.java_int_hash_code(-1) == -1
    assert kg.java_hash_code(True) == 1231
    assert kg.java_hash_code(False) == 1237


def test_bool_is_not_confused_with_int_through_the_cache():
    # True == 1 in Python; Flink's Boolean(true) and Integer(1) land in different key groups.
    for order in ([1, True, 1.0], [True, 1]):
        results = {}
        for key in order:
            try:
                results[repr(key)] = kg.assign_to_key_group(key, 128)
            except InvalidArgument:
                results[repr(key)] = "error"
        assert results["1"] == 86
        assert results["True"] == kg.murmur_hash(1231) % 128 != 86
        if "1.0" in results:
            assert results["1.0"] == "error"


@pytest.mark.parametrize(
    "key", [None, 1.0, 0.5, b"ab", (1, 2), [1], {"a": 1}, 2**63, -(2**63) - 1, object()]
)
def test_unsupported_keys_are_clear_errors(key):
    with pytest.raises(InvalidArgument) as e:
        kg.assign_key_to_parallel_operator(key, 128, 4)
    assert isinstance(e.value, FlinkspecError)
    with pytest.raises(InvalidArgument):
        kg.assign_to_key_group(key, 128)
    if key is None:
        assert "must not be null" in str(e.value)
    else:
        with pytest.raises(InvalidArgument):
            kg.java_hash_code(key)


# ------------------------------------------------------------------------------ int32 Java semantics


def test_unchecked_operator_index_wraps_like_java_int():
    # 65536 * 65536 overflows int32 to 0 in Java.
    assert kg.compute_operator_index_for_key_group(1, 65536, 65536) == 0
    # (2^31-1) * 2 wraps to -2; -2 / 3 truncates toward zero -> 0 (floor would give -1).
    assert kg.compute_operator_index_for_key_group(3, 2, 2**31 - 1) == 0
    assert kg.compute_operator_index_for_key_group(3, 1, -7) == -2  # truncation, not floor
    with pytest.raises(InvalidArgument, match="/ by zero"):
        kg.compute_operator_index_for_key_group(0, 3, 1)


def test_key_group_for_hash_uses_java_remainder():
    m = kg.murmur_hash(7)
    assert kg.compute_key_group_for_key_hash(7, -5) == m % 5  # sign of the dividend (>= 0)
    with pytest.raises(InvalidArgument, match="/ by zero"):
        kg.compute_key_group_for_key_hash(7, 0)


def test_murmur_of_extremes_is_non_negative_int32():
    for code in (0, 1, -1, 2**31 - 1, -(2**31)):
        assert 0 <= kg.murmur_hash(code) <= 2**31 - 1
    with pytest.raises(InvalidArgument):
        kg.murmur_hash(2**31)


def test_round_up_to_power_of_two_java_semantics():
    assert [kg.round_up_to_power_of_two(x) for x in (1, 2, 3, 5, 127, 128, 129)] == [
        1, 2, 4, 8, 128, 128, 256]
    assert kg.round_up_to_power_of_two(0) == 0  # (-1 | ...) + 1
    assert kg.round_up_to_power_of_two(-5) == 0
    assert kg.round_up_to_power_of_two(2**30 + 1) == -(2**31)  # wraps


# ------------------------------------------------------------------------------ preconditions


@pytest.mark.parametrize(
    "max_p, p, i, message",
    [
        (128, 0, 0, "Operator parallelism not within bounds: 0"),
        (128, -1, 0, "Operator parallelism not within bounds: -1"),
        (32769, 1, 0, "Operator parallelism not within bounds: 32769"),
        (0, 1, 0, "Operator parallelism not within bounds: 0"),
        (128, 129, 0, "Maximum parallelism must not be smaller than parallelism."),
        (10, 40000, 0, "Operator parallelism not within bounds: 40000"),
    ],
)
def test_range_preconditions(max_p, p, i, message):
    with pytest.raises(InvalidArgument) as e:
        kg.compute_key_group_range_for_operator_index(max_p, p, i)
    assert str(e.value) == message


def test_range_for_unchecked_operator_index_follows_the_formula():
    # Flink does not check the index: i == p gives a range past maxP; i = -1 with p = 1 gives a
    # negative start, which the KeyGroupRange constructor refuses.
    assert kg.compute_key_group_range_for_operator_index(128, 3, 3) == KeyGroupRange(128, 170)
    with pytest.raises(InvalidArgument, match="startKeyGroup must be >= 0"):
        kg.compute_key_group_range_for_operator_index(128, 1, -1)


@pytest.mark.parametrize("p", [0, -1, 32769, 2**31 - 1])
def test_default_max_parallelism_preconditions(p):
    with pytest.raises(InvalidArgument, match=f"Operator parallelism not within bounds: {p}"):
        kg.compute_default_max_parallelism(p)
    with pytest.raises(InvalidArgument):
        kg.check_parallelism_preconditions(p)


@pytest.mark.parametrize("bad", [1.5, "3", None, True, 2**31])
def test_int_parameters_must_be_java_ints(bad):
    with pytest.raises(InvalidArgument):
        kg.compute_key_group_range_for_operator_index(128, bad, 0)
    with pytest.raises(InvalidArgument):
        kg.compute_default_max_parallelism(bad)


# ------------------------------------------------------------------------------ KeyGroupRange


def test_key_group_range_basics():
    r = KeyGroupRange(3, 7)
    assert r.number_of_key_groups == 5 == len(r)
    assert list(r) == [3, 4, 5, 6, 7]
    assert r.contains(3) and r.contains(7) and not r.contains(8) and not r.contains(2)
    assert 5 in r and 9 not in r
    assert eval(repr(r), {"KeyGroupRange": KeyGroupRange}) == r
    assert str(r) == "KeyGroupRange{startKeyGroup=3, endKeyGroup=7}"
    with pytest.raises(AttributeError):
        r.start = 4  # frozen


def test_empty_range_and_intersection():
    assert EMPTY_KEY_GROUP_RANGE == KeyGroupRange(0, -1)
    assert EMPTY_KEY_GROUP_RANGE.number_of_key_groups == 0
    assert list(EMPTY_KEY_GROUP_RANGE) == []
    assert not EMPTY_KEY_GROUP_RANGE.contains(0)
    assert KeyGroupRange(0, 10).get_intersection(KeyGroupRange(5, 20)) == KeyGroupRange(5, 10)
    assert KeyGroupRange(0, 4).get_intersection(KeyGroupRange(5, 20)) is EMPTY_KEY_GROUP_RANGE
    assert KeyGroupRange(0, 4).get_intersection(EMPTY_KEY_GROUP_RANGE) == KeyGroupRange(0, -1)
    assert KeyGroupRange.of(5, 3) is EMPTY_KEY_GROUP_RANGE
    assert KeyGroupRange.of(3, 5) == KeyGroupRange(3, 5)


@pytest.mark.parametrize("start, end", [(-1, 3), (5, 3), (1, 0), (-1, -1)])
def test_key_group_range_constructor_checks(start, end):
    with pytest.raises(InvalidArgument):
        KeyGroupRange(start, end)


def test_key_group_range_of_checks_negative_start():
    with pytest.raises(InvalidArgument, match=">= 0"):
        KeyGroupRange.of(-1, 3)


# ------------------------------------------------------------------------------ properties


@st.composite
def max_p_and_p(draw, upper=kg.UPPER_BOUND_MAX_PARALLELISM):
    max_p = draw(st.one_of(st.integers(1, upper), st.sampled_from([1, 2, 128, upper - 1, upper])))
    max_p = min(max_p, upper)
    p = draw(st.one_of(st.integers(1, max_p), st.sampled_from([1, max_p, max(1, max_p - 1)])))
    return max_p, p


@settings(max_examples=150, deadline=None)
@given(max_p_and_p(upper=1024))
def test_ranges_partition_and_agree_with_operator_index_exhaustively(params):
    """Small maxP: every range and every key group checked."""
    max_p, p = params
    ranges = kg.compute_key_group_ranges(max_p, p)
    assert ranges[0].start == 0 and ranges[-1].end == max_p - 1
    for i, r in enumerate(ranges):
        assert r.number_of_key_groups >= 1
        if i:
            assert r.start == ranges[i - 1].end + 1
        for g in r:
            assert kg.compute_operator_index_for_key_group(max_p, p, g) == i
    assert sum(len(r) for r in ranges) == max_p


@settings(max_examples=300, deadline=None)
@given(max_p_and_p(), st.data())
def test_ranges_partition_sampled_up_to_32768(params, data):
    """Any maxP <= 32768: a drawn subtask, its neighbours and key groups at its edges."""
    max_p, p = params
    i = data.draw(st.integers(0, p - 1))
    r = kg.compute_key_group_range_for_operator_index(max_p, p, i)
    assert 0 <= r.start <= r.end <= max_p - 1
    if i == 0:
        assert r.start == 0
    else:
        assert r.start == kg.compute_key_group_range_for_operator_index(max_p, p, i - 1).end + 1
        assert kg.compute_operator_index_for_key_group(max_p, p, r.start - 1) == i - 1
    if i == p - 1:
        assert r.end == max_p - 1
    else:
        assert kg.compute_operator_index_for_key_group(max_p, p, r.end + 1) == i + 1
    g = data.draw(st.integers(r.start, r.end))
    for key_group in (r.start, g, r.end):
        assert kg.compute_operator_index_for_key_group(max_p, p, key_group) == i
    # sizes differ by at most one
    assert max_p // p <= r.number_of_key_groups <= -(-max_p // p)


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=20), st.booleans()),
    max_p_and_p(),
)
def test_key_routing_is_consistent(key, params):
    max_p, p = params
    group = kg.assign_to_key_group(key, max_p)
    assert 0 <= group < max_p
    index = kg.assign_key_to_parallel_operator(key, max_p, p)
    assert index == kg.compute_operator_index_for_key_group(max_p, p, group)
    assert kg.compute_key_group_range_for_operator_index(max_p, p, index).contains(group)
    assert group == kg.compute_key_group_for_key_hash(kg.java_hash_code(key), max_p)


def test_the_java_int_range_edges():
    """Integer.MIN_VALUE is an int key (Integer.hashCode: itself), one less is a long key
    (Long.hashCode: (int)(v ^ (v >>> 32))); int parameters stop at Integer.MIN_VALUE."""
    assert kg.java_hash_code(-(2**31)) == -(2**31)
    assert kg.java_hash_code(-(2**31) - 1) == kg.java_long_hash_code(-(2**31) - 1) == -(2**31)
    assert kg.java_hash_code(2**31) == kg.java_long_hash_code(2**31) == -(2**31)  # 0x80000000 as an int
    assert kg.java_hash_code(2**31 - 1) == 2**31 - 1
    assert kg.compute_key_group_for_key_hash(-(2**31), 128) == kg.murmur_hash(-(2**31)) % 128
    with pytest.raises(InvalidArgument, match="must fit in a Java int"):
        kg.compute_key_group_for_key_hash(-(2**31) - 1, 128)
    with pytest.raises(InvalidArgument, match="must fit in a Java int"):
        kg.compute_default_max_parallelism(-(2**31) - 1)


def test_murmur_hash_maps_a_mix_of_integer_min_value_to_zero():
    """MathUtils.murmurHash ends with ``code >= 0 ? code : code != MIN_VALUE ? -code : 0``. The
    two codes below mix to 0x80000000 (Integer.MIN_VALUE) and 0x80000001 (found by inverting
    the mix, which is a bijection of 32-bit words)."""
    assert kg.murmur_hash(-2089875627) == 0
    assert kg.murmur_hash(1814469223) == 2**31 - 1  # -(MIN_VALUE + 1)
    assert kg.compute_key_group_for_key_hash(-2089875627, 128) == 0


def test_errors_name_the_parameter():
    with pytest.raises(InvalidArgument, match=r"^x must be an int"):
        kg.round_up_to_power_of_two(1.5)
    with pytest.raises(InvalidArgument, match=r"^code must fit in a Java int"):
        kg.murmur_hash(2**31)
    with pytest.raises(InvalidArgument, match=r"^Integer key must be an int"):
        kg.java_int_hash_code("7")


def test_an_int_subclass_is_taken_as_its_int_value():
    class Code(int):
        pass

    assert kg.compute_key_group_for_key_hash(Code(7), 128) == kg.compute_key_group_for_key_hash(7, 128)
    assert kg.murmur_hash(Code(-3)) == kg.murmur_hash(-3)


def test_long_hash_refuses_what_is_not_a_long():
    for bad in (True, 1.5, "3", None):
        with pytest.raises(InvalidArgument):
            kg.java_long_hash_code(bad)


def test_a_string_with_a_lone_surrogate_hashes_by_its_utf16_code_units():
    """Java strings are UTF-16 code units, unpaired surrogates included: "\\ud800".hashCode()
    is 0xD800, and "a\\udc00".hashCode() is 31 * 97 + 0xDC00."""
    assert kg.java_string_hash_code("\ud800") == 0xD800
    assert kg.java_string_hash_code("a\udc00") == 31 * 97 + 0xDC00
    assert kg.java_string_hash_code("") == 0


def test_an_int_subclass_key_is_routed_as_its_int_value():
    class Code(int):
        pass

    assert kg.assign_to_key_group(Code(7), 128) == kg.assign_to_key_group(7, 128)
    assert kg.assign_key_to_parallel_operator(Code(-9), 128, 3) == kg.assign_key_to_parallel_operator(-9, 128, 3)


def test_an_unsupported_key_is_named_in_the_error():
    with pytest.raises(InvalidArgument, match=r"unsupported key type float \(1\.5\)"):
        kg.assign_to_key_group(1.5, 128)


def test_key_group_range_errors_name_the_bound():
    with pytest.raises(InvalidArgument, match=r"^startKeyGroup must be an int"):
        KeyGroupRange(1.5, 2)
    with pytest.raises(InvalidArgument, match=r"^endKeyGroup must be an int"):
        KeyGroupRange(0, 1.5)
    with pytest.raises(InvalidArgument, match=r"startKeyGroup must be <= endKeyGroup, got \[5, 3\]"):
        KeyGroupRange(5, 3)


def test_key_group_range_refuses_a_size_that_overflows_an_int():
    """KeyGroupRange's constructor: checkArgument(getNumberOfKeyGroups() >= 0, "Potential
    overflow detected."), the number being 1 + end - start in int arithmetic."""
    with pytest.raises(InvalidArgument, match="Potential overflow detected"):
        KeyGroupRange(0, 2**31 - 1)
    assert KeyGroupRange(1, 2**31 - 1).end == 2**31 - 1  # 2^31 - 1 key groups: fits
    assert KeyGroupRange(2**31 - 1, 2**31 - 1).start == 2**31 - 1


@pytest.mark.parametrize("call, name", [
    (lambda: kg.KeyGroupRange.of(1.5, 3), "startKeyGroup"),
    (lambda: kg.KeyGroupRange.of(1, 1.5), "endKeyGroup"),
    (lambda: kg.check_parallelism_preconditions(1.5), "parallelism"),
    (lambda: kg.compute_key_group_for_key_hash(1.5, 128), "keyHash"),
    (lambda: kg.compute_key_group_for_key_hash(7, 1.5), "maxParallelism"),
    (lambda: kg.assign_to_key_group("k", 1.5), "maxParallelism"),
    (lambda: kg.compute_operator_index_for_key_group(1.5, 2, 3), "maxParallelism"),
    (lambda: kg.compute_operator_index_for_key_group(128, 1.5, 3), "parallelism"),
    (lambda: kg.compute_operator_index_for_key_group(128, 2, 1.5), "keyGroupId"),
    (lambda: kg.compute_key_group_range_for_operator_index(128, 2, 1.5), "operatorIndex"),
])
def test_a_bad_int_parameter_is_named_as_flink_names_it(call, name):
    with pytest.raises(InvalidArgument, match=rf"^{name} must be an int"):
        call()


def test_ranges_of_one_key_group():
    assert KeyGroupRange.of(3, 3) == KeyGroupRange(3, 3) and KeyGroupRange.of(4, 3) == EMPTY_KEY_GROUP_RANGE
    assert KeyGroupRange(1, 3).get_intersection(KeyGroupRange(3, 5)) == KeyGroupRange(3, 3)
    assert KeyGroupRange(1, 2).get_intersection(KeyGroupRange(3, 5)) == EMPTY_KEY_GROUP_RANGE


def test_java_string_hash_code_takes_strings_only():
    assert kg.java_string_hash_code("ab") == 31 * 97 + 98
    with pytest.raises(InvalidArgument):
        kg.java_string_hash_code(5)


def _key_in_key_group_at_least(lo: int, max_parallelism: int) -> int:
    return next(k for k in range(10_000) if kg.assign_to_key_group(k, max_parallelism) >= lo)


def test_routing_beyond_the_upper_bound_wraps_like_java_int():
    """assignKeyToParallelOperator = computeOperatorIndexForKeyGroup(maxP, p,
    assignToKeyGroup(key, maxP)), unchecked: with maxP = p = 65536 (above Flink's bound of 2^15),
    keyGroup * p overflows an int for key groups >= 2^15, and the index is negative as in Java."""
    key = _key_in_key_group_at_least(2**15, 65536)
    group = kg.assign_to_key_group(key, 65536)
    wrapped = ((group * 65536 + 2**31) % 2**32 - 2**31) // 65536
    assert wrapped < 0
    assert kg.assign_key_to_parallel_operator(key, 65536, 65536) == wrapped == group - 65536
    assert kg.assign_key_to_parallel_operator(key, 65536, 1) == 0


@pytest.mark.parametrize("max_p, p", [(1.5, 2), (128, 2.0), (0, 1), (True, 1)])
def test_routing_with_a_bad_parallelism_is_refused(max_p, p):
    with pytest.raises(InvalidArgument):
        kg.assign_key_to_parallel_operator("k", max_p, p)


def test_murmur_hash_is_bit_mix_of_the_mixed_code_as_in_math_utils():
    """MathUtils.murmurHash(code): code *= 0xcc9e2d51; rotl 15; *= 0x1b873593; rotl 13;
    code * 5 + 0xe6546b64; ^= 4; bitMix(code); then the sign rule. So bitMix, checked against
    murmurHash (whose values are Flink's, see the vectors above), over many codes."""
    m32 = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m32

    for code in [0, 1, -1, 7, 42, 2**31 - 1, -(2**31), 123456789, -987654321] + list(range(-300, 300, 7)):
        h = (code & m32) * 0xCC9E2D51 & m32
        h = rotl(h, 15) * 0x1B873593 & m32
        h = (rotl(h, 13) * 5 + 0xE6546B64) & m32
        h ^= 4
        h = h - 2**32 if h & 0x80000000 else h
        mixed = kg.bit_mix(h)
        assert -(2**31) <= mixed < 2**31
        expected = mixed if mixed >= 0 else (-mixed if mixed != -(2**31) else 0)
        assert kg.murmur_hash(code) == expected, code
