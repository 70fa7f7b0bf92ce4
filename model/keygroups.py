"""Key groups: how a keyed stream is split into key groups and key groups onto subtasks.

Invariant upheld: for ``0 < p <= maxP <= 32768`` the ranges
``compute_key_group_range_for_operator_index(maxP, p, i)`` for ``i = 0..p-1`` are non-empty,
consecutive and together cover ``[0, maxP)`` exactly once, and
``compute_operator_index_for_key_group(maxP, p, kg) == i`` iff ``kg`` lies in range ``i``
(proved for all parameters in ``spec/z3_keygroups.py``). Every record with a given key goes
to the same key group, whatever the parallelism.

Follows, bit for bit (int32 wraparound, Java truncating ``/`` and ``%``):

- ``org.apache.flink.runtime.state.KeyGroupRangeAssignment`` (same formulas in 1.x and 2.x),
- ``org.apache.flink.runtime.state.KeyGroupRange`` (inclusive ``[start, end]``, the empty
  range ``(0, -1)``, ``of``, ``getIntersection``),
- ``org.apache.flink.util.MathUtils.murmurHash`` / ``bitMix`` / ``roundUpToPowerOfTwo``,
- ``hashCode()`` of ``java.lang.Integer``, ``java.lang.Long``, ``java.lang.String`` (over UTF-16
  code units, so a non-BMP character counts as its surrogate pair) and ``java.lang.Boolean``.

Preconditions are the ones Flink checks, where Flink checks them, and raise
:class:`model.errors.InvalidArgument` with Flink's message (``IllegalArgumentException`` /
``NullPointerException`` / ``ArithmeticException: / by zero`` in Java). Functions that Flink
leaves unchecked (``computeOperatorIndexForKeyGroup``, ``computeKeyGroupForKeyHash``) compute
Java's result even for out-of-bound arguments, wraparound included.

Differs from Flink / leaves out: keys are Python values standing for Java boxed values
(``int`` -> Integer when it fits in int32, else Long; ``str`` -> String; ``bool`` -> Boolean);
no other key type (no tuples/POJOs/Rows, whose hashCode depends on the serializer-side
type) - those raise InvalidArgument. ``int`` arguments that are not Python ints in the int32
range (which Java would not compile) raise InvalidArgument too.
"""

from __future__ import annotations

from typing import Iterator

import attrs

from model.errors import InvalidArgument

__all__ = [
    "DEFAULT_LOWER_BOUND_MAX_PARALLELISM",
    "UPPER_BOUND_MAX_PARALLELISM",
    "KeyGroupRange",
    "EMPTY_KEY_GROUP_RANGE",
    "java_hash_code",
    "java_int_hash_code",
    "java_long_hash_code",
    "java_string_hash_code",
    "compute_key_group_ranges",
    "murmur_hash",
    "bit_mix",
    "round_up_to_power_of_two",
    "assign_to_key_group",
    "assign_key_to_parallel_operator",
    "compute_key_group_for_key_hash",
    "compute_key_group_range_for_operator_index",
    "compute_operator_index_for_key_group",
    "compute_default_max_parallelism",
    "check_parallelism_preconditions",
]

#: ``KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM`` (1 << 7).
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 1 << 7
#: ``KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM`` (1 << 15), inclusive.
UPPER_BOUND_MAX_PARALLELISM = 1 << 15

_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1
_LONG_MIN = -(1 << 63)
_LONG_MAX = (1 << 63) - 1
_M32 = 0xFFFFFFFF


# --------------------------------------------------------------------------------------------
# int32 helpers (Java semantics)
# --------------------------------------------------------------------------------------------


def _i32(x: int) -> int:
    """Wrap an arbitrary Python int to a signed 32-bit value (Java ``(int)`` cast)."""
    x &= _M32
    return x - (1 << 32) if x & 0x80000000 else x


def _jdiv(a: int, b: int) -> int:
    """Java ``int`` division ``a / b``: truncates toward zero; ``/ by zero`` raises."""
    if b == 0:
        raise InvalidArgument("java.lang.ArithmeticException: / by zero")
    q = abs(a) // abs(b)
    q = q if (a >= 0) == (b >= 0) else -q
    return _i32(q)  # only MIN_VALUE / -1 overflows, and wraps to MIN_VALUE like Java


def _jrem(a: int, b: int) -> int:
    """Java ``int`` remainder ``a % b``: takes the sign of the dividend."""
    if b == 0:
        raise InvalidArgument("java.lang.ArithmeticException: / by zero")
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _check_int(name: str, value: object) -> int:
    """An ``int`` parameter of a Flink method: a Python int (not bool) in the int32 range."""
    if type(value) is not int:  # noqa: E721 - bool and other int-likes are refused on purpose
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgument(
                f"{name} must be an int (Java int), got {type(value).__name__} {value!r}"
            )
        value = int(value)
    if not _INT_MIN <= value <= _INT_MAX:
        raise InvalidArgument(f"{name} must fit in a Java int (32 bit), got {value}")
    return value


def _check_argument(condition: bool, message: str) -> None:
    """``Preconditions.checkArgument``."""
    if not condition:
        raise InvalidArgument(message)


# --------------------------------------------------------------------------------------------
# MathUtils
# --------------------------------------------------------------------------------------------


def round_up_to_power_of_two(x: int) -> int:
    """``MathUtils.roundUpToPowerOfTwo`` (int32, arithmetic shifts: 0 -> 0, negatives -> 0,
    values above 2^30 wrap to ``Integer.MIN_VALUE``)."""
    x = _i32(_check_int("x", x) - 1)
    x |= x >> 1
    x |= x >> 2
    x |= x >> 4
    x |= x >> 8
    x |= x >> 16
    return _i32(x + 1)


def bit_mix(code: int) -> int:
    """``MathUtils.bitMix`` (Murmur3's 32-bit finaliser) over an int32, returns an int32."""
    h = code & _M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return _i32(h)


def _murmur_u(code: int) -> int:
    h = (code & _M32) * 0xCC9E2D51 & _M32
    h = ((h << 15) | (h >> 17)) & _M32
    h = h * 0x1B873593 & _M32
    h = ((h << 13) | (h >> 19)) & _M32
    h = (h * 5 + 0xE6546B64) & _M32
    h ^= 4
    # bitMix
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    if h < 0x80000000:
        return h
    if h != 0x80000000:
        return (1 << 32) - h  # -code of a negative int32
    return 0  # Integer.MIN_VALUE


def murmur_hash(code: int) -> int:
    """``MathUtils.murmurHash(int)``: a non-negative int32 (``Integer.MIN_VALUE`` maps to 0)."""
    return _murmur_u(_check_int("code", code))


# --------------------------------------------------------------------------------------------
# java.lang hashCode
# --------------------------------------------------------------------------------------------


def _string_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-le", "surrogatepass")
    # int.from_bytes over pairs is slower than memoryview.cast for long strings
    for unit in memoryview(data).cast("H") if len(data) else ():
        h = (31 * h + unit) & _M32
    return _i32(h)


def java_int_hash_code(value: int) -> int:
    """``Integer.hashCode(int)``: the value itself (must fit in int32)."""
    return _check_int("Integer key", value)


def java_long_hash_code(value: int) -> int:
    """``Long.hashCode(long)``: ``(int)(value ^ (value >>> 32))`` (must fit in int64).

    Differs from :func:`java_int_hash_code` for negative values: ``Long(-1)`` hashes to 0."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"Long key must be an int, got {type(value).__name__} {value!r}")
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise InvalidArgument(f"Long key {value} does not fit in a Java long (64 bit)")
    u = value & 0xFFFFFFFFFFFFFFFF
    return _i32(u ^ (u >> 32))


def java_string_hash_code(value: str) -> int:
    """``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units, int32."""
    if not isinstance(value, str):
        raise InvalidArgument(f"String key must be a str, got {type(value).__name__} {value!r}")
    return _string_hash(value)


def java_hash_code(key: object) -> int:
    """``key.hashCode()`` of the Java boxed value a Python key stands for.

    - ``bool`` -> ``Boolean.hashCode``: 1231 for true, 1237 for false;
    - ``int`` in ``[-2^31, 2^31)`` -> ``Integer.hashCode`` (the value);
    - other ``int`` in ``[-2^63, 2^63)`` -> ``Long.hashCode``: ``(int)(v ^ (v >>> 32))``;
    - ``str`` -> ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units;
    - anything else (``None``, float, bytes, tuple, int beyond int64, ...) -> InvalidArgument.
    """
    if key is None:
        # KeyGroupRangeAssignment: Preconditions.checkNotNull(key, ...)
        raise InvalidArgument("Assigned key must not be null!")
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        v = int(key)
        if _INT_MIN <= v <= _INT_MAX:
            return v
        if _LONG_MIN <= v <= _LONG_MAX:
            return java_long_hash_code(v)
        raise InvalidArgument(
            f"key {v} does not fit in a Java long (64 bit): no java.lang.Integer/Long hashCode"
        )
    if isinstance(key, str):
        return _string_hash(key)
    raise InvalidArgument(
        f"unsupported key type {type(key).__name__} ({key!r}): keys must be int "
        "(java.lang.Integer/Long), str (java.lang.String) or bool (java.lang.Boolean)"
    )


# Cache of key -> murmurHash(key.hashCode()), keyed by (exact type, value) so that 1, True
# and 1.0 never share an entry. Bounded: cleared when it grows past _CACHE_LIMIT entries.
_CACHE_LIMIT = 1 << 17
_murmur_cache: dict[tuple[type, object], int] = {}


def _key_murmur(key: object) -> int:
    t = type(key)
    if t is int or t is str or t is bool:
        ck = (t, key)
        m = _murmur_cache.get(ck)
        if m is None:
            m = _murmur_u(java_hash_code(key))
            if len(_murmur_cache) >= _CACHE_LIMIT:
                _murmur_cache.clear()
            _murmur_cache[ck] = m
        return m
    return _murmur_u(java_hash_code(key))


# --------------------------------------------------------------------------------------------
# KeyGroupRange
# --------------------------------------------------------------------------------------------


def _check_range(instance: "KeyGroupRange", _attr: object, _value: object) -> None:
    start = _check_int("startKeyGroup", instance.start)
    end = _check_int("endKeyGroup", instance.end)
    if start == 0 and end == -1:
        return  # EMPTY_KEY_GROUP_RANGE (Flink builds it with a private constructor)
    _check_argument(start >= 0, f"KeyGroupRange: startKeyGroup must be >= 0, got {start}")
    _check_argument(
        start <= end,
        f"KeyGroupRange: startKeyGroup must be <= endKeyGroup, got [{start}, {end}]",
    )
    _check_argument(_i32(1 + end - start) >= 0, "Potential overflow detected.")


@attrs.frozen(slots=True)
class KeyGroupRange:
    """``KeyGroupRange``: the key groups ``[start, end]``, both inclusive.

    The only empty range is ``KeyGroupRange(0, -1)`` (``EMPTY_KEY_GROUP_RANGE``); any other
    ``start > end`` or ``start < 0`` is refused as Flink's constructor refuses it. Use
    :meth:`of` for Flink's factory that maps ``start > end`` to the empty range.
    """

    start: int = attrs.field(validator=_check_range)
    end: int

    @classmethod
    def of(cls, start: int, end: int) -> "KeyGroupRange":
        """``KeyGroupRange.of``: ``[start, end]`` or the empty range when ``start > end``."""
        start = _check_int("startKeyGroup", start)
        end = _check_int("endKeyGroup", end)
        return cls(start, end) if start <= end else EMPTY_KEY_GROUP_RANGE

    @property
    def number_of_key_groups(self) -> int:
        """``getNumberOfKeyGroups() = 1 + end - start`` (0 for the empty range)."""
        return _i32(1 + self.end - self.start)

    def contains(self, key_group: int) -> bool:
        """``contains(kg)``: ``start <= kg <= end``."""
        return self.start <= key_group <= self.end

    def get_intersection(self, other: "KeyGroupRange") -> "KeyGroupRange":
        """``getIntersection``: ``[max(start), min(end)]`` or ``EMPTY_KEY_GROUP_RANGE``."""
        if not isinstance(other, KeyGroupRange):
            raise InvalidArgument(f"get_intersection needs a KeyGroupRange, got {other!r}")
        start = max(self.start, other.start)
        end = min(self.end, other.end)
        return KeyGroupRange(start, end) if start <= end else EMPTY_KEY_GROUP_RANGE

    def is_empty(self) -> bool:
        return self.number_of_key_groups == 0

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end + 1))

    def __len__(self) -> int:
        return self.number_of_key_groups

    def __contains__(self, key_group: object) -> bool:
        return isinstance(key_group, int) and self.contains(key_group)

    def __str__(self) -> str:
        return f"KeyGroupRange{{startKeyGroup={self.start}, endKeyGroup={self.end}}}"


#: ``KeyGroupRange.EMPTY_KEY_GROUP_RANGE``.
EMPTY_KEY_GROUP_RANGE = KeyGroupRange(0, -1)


# --------------------------------------------------------------------------------------------
# KeyGroupRangeAssignment
# --------------------------------------------------------------------------------------------


def check_parallelism_preconditions(parallelism: int) -> None:
    """``checkParallelismPreconditions``: ``0 < parallelism <= 32768``."""
    parallelism = _check_int("parallelism", parallelism)
    _check_argument(
        0 < parallelism <= UPPER_BOUND_MAX_PARALLELISM,
        f"Operator parallelism not within bounds: {parallelism}",
    )


def compute_default_max_parallelism(parallelism: int) -> int:
    """``computeDefaultMaxParallelism``:
    ``min(max(roundUpToPowerOfTwo(p + p/2), 128), 32768)``, after the parallelism check."""
    check_parallelism_preconditions(parallelism)
    return min(
        max(
            round_up_to_power_of_two(parallelism + parallelism // 2),
            DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
        ),
        UPPER_BOUND_MAX_PARALLELISM,
    )


def compute_key_group_for_key_hash(key_hash: int, max_parallelism: int) -> int:
    """``computeKeyGroupForKeyHash``: ``murmurHash(keyHash) % maxParallelism`` (unchecked,
    Java ``%``; ``max_parallelism == 0`` raises ``/ by zero``)."""
    key_hash = _check_int("keyHash", key_hash)
    max_parallelism = _check_int("maxParallelism", max_parallelism)
    return _jrem(_murmur_u(key_hash), max_parallelism)


def assign_to_key_group(key: object, max_parallelism: int) -> int:
    """``assignToKeyGroup``: ``computeKeyGroupForKeyHash(key.hashCode(), maxParallelism)``;
    ``key != null`` is checked."""
    max_parallelism = _check_int("maxParallelism", max_parallelism)
    if key is None:
        raise InvalidArgument("Assigned key must not be null!")
    return _jrem(_key_murmur(key), max_parallelism)


def compute_operator_index_for_key_group(
    max_parallelism: int, parallelism: int, key_group: int
) -> int:
    """``computeOperatorIndexForKeyGroup``: ``keyGroupId * parallelism / maxParallelism`` in
    int32 arithmetic. Flink checks nothing here (its comment asks for
    ``0 < parallelism <= maxParallelism <= Short.MAX_VALUE``); neither does this."""
    max_parallelism = _check_int("maxParallelism", max_parallelism)
    parallelism = _check_int("parallelism", parallelism)
    key_group = _check_int("keyGroupId", key_group)
    return _jdiv(_i32(key_group * parallelism), max_parallelism)


def assign_key_to_parallel_operator(key: object, max_parallelism: int, parallelism: int) -> int:
    """``assignKeyToParallelOperator``: the subtask index a keyed record is routed to
    (what ``KeyGroupStreamPartitioner`` selects). ``key != null`` is checked; the rest is as
    unchecked as in Flink."""
    if key is None:
        raise InvalidArgument("Assigned key must not be null!")
    if (
        type(max_parallelism) is int
        and type(parallelism) is int
        and 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM
        and 0 <= parallelism <= UPPER_BOUND_MAX_PARALLELISM
    ):
        # Fast path: kg < maxP <= 2^15 and p <= 2^15, so kg * p < 2^30 cannot wrap.
        return (_key_murmur(key) % max_parallelism) * parallelism // max_parallelism
    return compute_operator_index_for_key_group(
        max_parallelism, parallelism, assign_to_key_group(key, max_parallelism)
    )


def compute_key_group_range_for_operator_index(
    max_parallelism: int, parallelism: int, operator_index: int
) -> KeyGroupRange:
    """``computeKeyGroupRangeForOperatorIndex``: the key groups of subtask ``operator_index``:
    ``[ceil(i*maxP/p), floor(((i+1)*maxP-1)/p)]`` as ``(i*maxP + p - 1) / p`` and
    ``((i+1)*maxP - 1) / p`` in int32 arithmetic.

    Checks (as Flink): ``checkParallelismPreconditions`` on parallelism and on maxParallelism,
    then ``maxParallelism >= parallelism``. ``operator_index`` is not checked by Flink; an
    index outside ``[0, p)`` gives whatever the formula and ``KeyGroupRange``'s own checks give.
    """
    check_parallelism_preconditions(parallelism)
    check_parallelism_preconditions(max_parallelism)
    _check_argument(
        max_parallelism >= parallelism,
        "Maximum parallelism must not be smaller than parallelism.",
    )
    i = _check_int("operatorIndex", operator_index)
    start = _jdiv(_i32(_i32(_i32(i * max_parallelism) + parallelism) - 1), parallelism)
    end = _jdiv(_i32(_i32(_i32(i + 1) * max_parallelism) - 1), parallelism)
    # `new KeyGroupRange(start, end)`, the public constructor: (0, -1) is refused there too.
    if start == 0 and end == -1:
        raise InvalidArgument("KeyGroupRange: startKeyGroup must be <= endKeyGroup, got [0, -1]")
    return KeyGroupRange(start, end)


def compute_key_group_ranges(max_parallelism: int, parallelism: int) -> list[KeyGroupRange]:
    """``StateAssignmentOperation.createKeyGroupPartitions``: the ranges of subtasks
    ``0..parallelism-1``."""
    check_parallelism_preconditions(parallelism)
    return [
        compute_key_group_range_for_operator_index(max_parallelism, parallelism, i)
        for i in range(parallelism)
    ]
