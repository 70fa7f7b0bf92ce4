"""``flinkspec keygroup KEY... --parallelism P [--max-parallelism M] [--type T] [--ranges]``.

For each key: its Java ``hashCode()``, ``MathUtils.murmurHash`` of it, the key group
(``murmur % maxP``), the operator (subtask) index it is routed to, and that subtask's
``KeyGroupRange``, exactly as Flink's ``KeyGroupRangeAssignment`` computes them.
``--ranges`` prints the ranges of all subtasks. ``--type``: ``auto`` (default: a decimal
integer is an Integer when it fits in 32 bits, else a Long; anything else is a String),
``int``, ``long`` (hashed as ``java.lang.Long`` even when small: ``Long(-1)`` hashes to 0),
``string`` or ``boolean``. Without ``--max-parallelism`` the default Flink derives from the
parallelism (``computeDefaultMaxParallelism``) is used. Bad parameters: one-line error, exit 2.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from model import keygroups as kg
from model.errors import InvalidArgument
from model.inputfiles import short

TYPES = ("auto", "int", "long", "string", "boolean")
_INT_RE = re.compile(r"^[+-]?\d+$")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "keygroup",
        help="key -> hashCode, murmur, key group, subtask, KeyGroupRange (exact to Flink)",
        description=__doc__.split("\n\n")[1],
    )
    p.add_argument("keys", metavar="KEY", nargs="*", help="keys to route")
    p.add_argument("--parallelism", "-p", metavar="P", type=int, required=True)
    p.add_argument(
        "--max-parallelism", "-m", metavar="M", type=int, default=None,
        help="number of key groups (default: computeDefaultMaxParallelism(P))",
    )
    p.add_argument("--type", "-t", choices=TYPES, default="auto", help="Java type of the keys")
    p.add_argument("--ranges", action="store_true", help="print the KeyGroupRange of every subtask")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.set_defaults(func=run)


def _hash(text: str, type_: str) -> tuple[str, int]:
    """(Java type name, hashCode) of the key ``text`` read as ``type_``."""
    if type_ == "string":
        return "String", kg.java_string_hash_code(text)
    if type_ == "boolean":
        low = text.lower()
        if low not in ("true", "false"):
            raise InvalidArgument(f"key {text!r}: a boolean key must be true or false")
        return "Boolean", kg.java_hash_code(low == "true")
    is_int = bool(_INT_RE.match(text))
    if is_int and len(text.lstrip("+-")) > 20:  # beyond a long; int() of thousands of digits would fail
        if type_ in ("auto", "long"):
            raise InvalidArgument(f"key {short(text)}: an integer key must fit in a Java long (64 bit)")
        raise InvalidArgument(f"key {short(text)}: does not fit in a Java int (32 bit); use --type long")
    if type_ == "auto":
        if not is_int:
            return "String", kg.java_string_hash_code(text)
        value = int(text)
        if -(2**31) <= value < 2**31:
            return "Integer", kg.java_int_hash_code(value)
        if -(2**63) <= value < 2**63:
            return "Long", kg.java_long_hash_code(value)
        raise InvalidArgument(f"key {text!r}: an integer key must fit in a Java long (64 bit)")
    if not is_int:
        raise InvalidArgument(f"key {text!r}: not a decimal integer (--type {type_})")
    value = int(text)
    if type_ == "int":
        if not -(2**31) <= value < 2**31:
            raise InvalidArgument(f"key {text!r}: does not fit in a Java int (32 bit); use --type long")
        return "Integer", kg.java_int_hash_code(value)
    if not -(2**63) <= value < 2**63:
        raise InvalidArgument(f"key {text!r}: does not fit in a Java long (64 bit)")
    return "Long", kg.java_long_hash_code(value)


def compute(keys, parallelism: int, max_parallelism: int | None, type_: str = "auto") -> dict:
    """The command's result as data (also what ``--json`` prints)."""
    try:
        kg.check_parallelism_preconditions(parallelism)
        max_p = (
            kg.compute_default_max_parallelism(parallelism)
            if max_parallelism is None
            else max_parallelism
        )
        ranges = kg.compute_key_group_ranges(max_p, parallelism)  # maxP bounds, maxP >= p
    except InvalidArgument as e:
        shown = "default" if max_parallelism is None else max_parallelism
        raise InvalidArgument(
            f"--max-parallelism {shown} --parallelism {parallelism}: {e} "
            f"(need 0 < P <= M <= {kg.UPPER_BOUND_MAX_PARALLELISM})"
        ) from None
    rows = []
    for text in keys:
        java_type, h = _hash(text, type_)
        group = kg.compute_key_group_for_key_hash(h, max_p)
        index = kg.compute_operator_index_for_key_group(max_p, parallelism, group)
        r = ranges[index]
        rows.append({
            "key": text, "type": java_type, "hash_code": h, "murmur": kg.murmur_hash(h),
            "key_group": group, "operator_index": index, "range": [r.start, r.end],
        })
    return {
        "max_parallelism": max_p,
        "max_parallelism_defaulted": max_parallelism is None,
        "parallelism": parallelism,
        "keys": rows,
        "ranges": [[r.start, r.end] for r in ranges],
    }


def run(args: argparse.Namespace) -> int:
    if not args.keys and not args.ranges:
        raise InvalidArgument("give at least one KEY, or --ranges")
    result = compute(args.keys, args.parallelism, args.max_parallelism, args.type)
    if args.json:
        if not args.ranges:
            result.pop("ranges")
        print(json.dumps(result, ensure_ascii=False))
        return 0

    from rich.console import Console  # lazy: rich only for the table output, not at flinkspec start-up
    from rich.table import Table  # lazy, as above

    console = Console(file=sys.stdout, width=max(100, Console().width), highlight=False)
    max_p, p = result["max_parallelism"], result["parallelism"]
    note = " (default for P)" if result["max_parallelism_defaulted"] else ""
    console.print(f"maxParallelism={max_p}{note} parallelism={p}", markup=False)
    if result["keys"]:
        t = Table()
        for col in ("key", "type", "hashCode", "murmurHash", "key group", "subtask", "KeyGroupRange"):
            t.add_column(col, justify="left" if col in ("key", "type", "KeyGroupRange") else "right")
        for row in result["keys"]:
            s, e = row["range"]
            t.add_row(row["key"], row["type"], str(row["hash_code"]), str(row["murmur"]),
                      str(row["key_group"]), str(row["operator_index"]), f"[{s}, {e}]")
        console.print(t)
    if args.ranges:
        t = Table(title="KeyGroupRange per subtask")
        for col in ("subtask", "start", "end", "key groups"):
            t.add_column(col, justify="right")
        for i, (s, e) in enumerate(result["ranges"]):
            t.add_row(str(i), str(s), str(e), str(e - s + 1))
        console.print(t)
    return 0
