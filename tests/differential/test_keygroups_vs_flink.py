"""model/keygroups.py against the real Flink jars (apache-flink 2.3.0 in ``.venv-flink``).

Every case is computed twice, by the model and by Flink's own classes
(``KeyGroupRangeAssignment``, ``MathUtils``, ``Objects.hashCode`` on the boxed key,
``StateAssignmentOperation.createKeyGroupPartitions``), and the two must agree: the same
value, or both an error. Inputs are drawn from a seeded ``random.Random`` plus the edge values
(int32/int64 bounds, 0, -1, non-BMP characters, maxP/p at their bounds).

Needs ``make flink-env``; without it every test fails with that instruction (no skips).
"""

from __future__ import annotations

import random

import pytest

from model import keygroups as kg
from model.errors import InvalidArgument

pytestmark = [pytest.mark.slow, pytest.mark.flink]

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SEED = 20240611


def _model(fn, *args):
    try:
        return fn(*args)
    except InvalidArgument as e:
        return {"error": str(e)}


def _same(model_value, flink_value) -> bool:
    if isinstance(flink_value, dict) and "error" in flink_value:
        return isinstance(model_value, dict) and "error" in model_value
    return model_value == flink_value


def _assert_all_agree(cases, model_values, flink_values, what):
    assert len(model_values) == len(flink_values) == len(cases)
    diffs = [
        (c, m, f) for c, m, f in zip(cases, model_values, flink_values) if not _same(m, f)
    ]
    assert not diffs, f"{what}: {len(diffs)} of {len(cases)} differ, first: {diffs[:5]}"


def _ints(rng, n):
    edges = [0, 1, -1, 2, 42, 127, 128, INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1]
    return edges + [rng.randint(INT_MIN, INT_MAX) for _ in range(n)] + [
        rng.randint(-1000, 1000) for _ in range(n // 4)
    ]


def _longs(rng, n):
    edges = [INT_MAX + 1, INT_MIN - 1, LONG_MIN, LONG_MAX, 2**32, -(2**32), 2**40 + 1]
    out = []
    while len(out) < n:
        v = rng.randint(LONG_MIN, LONG_MAX) if rng.random() < 0.7 else rng.randint(-(2**40), 2**40)
        if not INT_MIN <= v <= INT_MAX:
            out.append(v)
    return edges + out


_ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyz0123456789",
    "äöüßéèñçÅØ€",  # Latin-1 / BMP
    "日本語中文한국어",  # CJK, BMP
    "\U0001F600\U0001F680\U00010348\U0001D11E\U0010FFFF\U00020000",  # non-BMP: surrogate pairs
    "\x00\x7f\uffff\ue000",  # edges of the BMP (no lone surrogates: they cannot cross py4j)
]


def _strings(rng, n):
    out = ["", "a", "hello", "1", "\U0001F600", "a\U0001F600b", "\U0010FFFF" * 3]
    for _ in range(n):
        alphabet = "".join(rng.sample(_ALPHABETS, rng.randint(1, len(_ALPHABETS))))
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))))
    return out


def _max_ps(rng):
    return [1, 2, 3, 10, 127, 128, 129, 1000, 4096, 32767, 32768] + [
        rng.randint(1, 32768) for _ in range(5)
    ]


def test_java_hash_code_of_ints_longs_strings_bools(flink_oracle):
    rng = random.Random(SEED)
    keys = _ints(rng, 1500) + _longs(rng, 1500) + _strings(rng, 1500) + [True, False]
    flink = flink_oracle.call("java_hash_code", keys=keys)
    model = [_model(kg.java_hash_code, k) for k in keys]
    _assert_all_agree(keys, model, flink, "hashCode")


def test_murmur_hash(flink_oracle):
    rng = random.Random(SEED + 1)
    codes = _ints(rng, 3000)
    _assert_all_agree(
        codes,
        [_model(kg.murmur_hash, c) for c in codes],
        flink_oracle.call("murmur_hash", codes=codes),
        "murmurHash",
    )


def test_assign_to_key_group(flink_oracle):
    rng = random.Random(SEED + 2)
    keys = _ints(rng, 300) + _longs(rng, 300) + _strings(rng, 300) + [True, False]
    for max_p in _max_ps(rng):
        _assert_all_agree(
            keys,
            [_model(kg.assign_to_key_group, k, max_p) for k in keys],
            flink_oracle.call("assign_to_key_group", keys=keys, max_parallelism=max_p),
            f"assignToKeyGroup maxP={max_p}",
        )


def test_assign_key_to_parallel_operator(flink_oracle):
    rng = random.Random(SEED + 3)
    keys = _ints(rng, 200) + _longs(rng, 200) + _strings(rng, 200) + [True, False]
    pairs = [(128, 1), (128, 3), (128, 128), (32768, 32768), (32768, 1), (10, 4)]
    for _ in range(10):
        max_p = rng.randint(1, 32768)
        pairs.append((max_p, rng.randint(1, max_p)))
    for max_p, p in pairs:
        _assert_all_agree(
            keys,
            [_model(kg.assign_key_to_parallel_operator, k, max_p, p) for k in keys],
            flink_oracle.call(
                "assign_key_to_parallel_operator", keys=keys, max_parallelism=max_p, parallelism=p
            ),
            f"assignKeyToParallelOperator maxP={max_p} p={p}",
        )


def test_compute_key_group_for_key_hash(flink_oracle):
    rng = random.Random(SEED + 4)
    hashes = _ints(rng, 500)
    for max_p in _max_ps(rng) + [-7, INT_MIN, INT_MAX, 0]:  # unchecked in Flink, 0 -> / by zero
        _assert_all_agree(
            hashes,
            [_model(kg.compute_key_group_for_key_hash, h, max_p) for h in hashes],
            flink_oracle.call("compute_key_group_for_key_hash", hashes=hashes, max_parallelism=max_p),
            f"computeKeyGroupForKeyHash maxP={max_p}",
        )


def test_key_group_ranges_of_all_subtasks(flink_oracle):
    rng = random.Random(SEED + 5)
    pairs = [(128, 3), (10, 4), (32768, 32768), (32768, 32767), (32768, 3), (1, 1), (7, 7)]
    for _ in range(60):
        max_p = rng.randint(1, 32768)
        pairs.append((max_p, rng.randint(1, min(max_p, 2000))))
    for max_p, p in pairs:
        flink = flink_oracle.call("key_group_ranges", max_parallelism=max_p, parallelism=p)
        model = [[r.start, r.end] for r in kg.compute_key_group_ranges(max_p, p)]
        assert model == flink, f"ranges maxP={max_p} p={p}"


def test_key_group_range_for_operator_index_incl_bad_arguments(flink_oracle):
    rng = random.Random(SEED + 6)
    cases = []
    for _ in range(1500):
        max_p = rng.randint(1, 32768)
        p = rng.randint(1, max_p)
        cases.append([max_p, p, rng.randint(0, p - 1)])
    # Flink's precondition failures and the unchecked operator index
    for _ in range(300):
        cases.append([rng.randint(-5, 40000), rng.randint(-5, 40000), rng.randint(-40, 40000)])
    cases += [[128, 3, 3], [128, 3, -1], [128, 1, -1], [10, 4, 100], [32768, 1, INT_MAX],
              [32768, 32768, INT_MIN], [0, 0, 0], [128, 129, 0], [32769, 1, 0]]
    flink = flink_oracle.call("compute_key_group_range_for_operator_index", cases=cases)

    def model(c):
        r = _model(kg.compute_key_group_range_for_operator_index, *c)
        return r if isinstance(r, dict) else [r.start, r.end]

    _assert_all_agree(cases, [model(c) for c in cases], flink, "computeKeyGroupRangeForOperatorIndex")


def test_compute_operator_index_for_key_group_unchecked_wraparound(flink_oracle):
    rng = random.Random(SEED + 7)
    for max_p, p in [(128, 3), (32768, 32768), (10, 4), (7, 1000), (0, 3), (-3, 5), (INT_MAX, INT_MAX)]:
        kgs = list(range(-3, 20)) + [rng.randint(INT_MIN, INT_MAX) for _ in range(200)]
        _assert_all_agree(
            kgs,
            [_model(kg.compute_operator_index_for_key_group, max_p, p, k) for k in kgs],
            flink_oracle.call(
                "compute_operator_index_for_key_group",
                max_parallelism=max_p, parallelism=p, key_groups=kgs,
            ),
            f"computeOperatorIndexForKeyGroup maxP={max_p} p={p}",
        )


def test_compute_default_max_parallelism_every_parallelism(flink_oracle):
    ps = list(range(-2, 32771)) + [INT_MIN, INT_MAX]
    _assert_all_agree(
        ps,
        [_model(kg.compute_default_max_parallelism, p) for p in ps],
        flink_oracle.call("compute_default_max_parallelism", parallelisms=ps),
        "computeDefaultMaxParallelism",
    )


def test_round_up_to_power_of_two(flink_oracle):
    rng = random.Random(SEED + 8)
    xs = _ints(rng, 1000) + [2**k + d for k in range(31) for d in (-1, 0, 1)]
    xs = [x for x in xs if INT_MIN <= x <= INT_MAX]
    _assert_all_agree(
        xs,
        [_model(kg.round_up_to_power_of_two, x) for x in xs],
        flink_oracle.call("round_up_to_power_of_two", values=xs),
        "roundUpToPowerOfTwo",
    )
