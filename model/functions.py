"""The deterministic function library for map and filter operators.

Flink runs user code; the model runs *named* functions so that a job spec is data, a
trace is replayable, and the exactly-once oracle can evaluate the same function. A name
is ``"identity"``, ``"negate"``, ``"double"``, ``"add:N"``, ``"mod:N"`` (value modulo N) or
``"rekey_mod:N"`` (key := value mod N) for maps, and ``"all"``, ``"none"``,
``"even_value"``, ``"odd_value"``, ``"value_ge:N"`` for filters.

Map functions take and return ``(key, value)``; filters take ``(key, value)`` and return bool.
"""

from __future__ import annotations

from typing import Callable

from model.errors import InvalidJobSpec

MapFn = Callable[[object, int], tuple]
FilterFn = Callable[[object, int], bool]


def _int_arg(name: str, subject: str) -> int:
    fname, _, arg = name.partition(":")
    try:
        return int(arg)
    except ValueError:
        raise InvalidJobSpec(subject, f"function {name!r} needs an integer argument ({fname}:N)") from None


def map_function(name: str | None, subject: str = "map") -> MapFn:
    name = name or "identity"
    if name == "identity":
        return lambda k, v: (k, v)
    if name == "negate":
        return lambda k, v: (k, -v)
    if name == "double":
        return lambda k, v: (k, 2 * v)
    if name.startswith("add:"):
        n = _int_arg(name, subject)
        return lambda k, v: (k, v + n)
    if name.startswith("mod:"):
        n = _int_arg(name, subject)
        if n <= 0:
            raise InvalidJobSpec(subject, f"function {name!r}: N must be > 0")
        return lambda k, v: (k, v % n)
    if name.startswith("rekey_mod:"):
        n = _int_arg(name, subject)
        if n <= 0:
            raise InvalidJobSpec(subject, f"function {name!r}: N must be > 0")
        return lambda k, v: (v % n, v)
    raise InvalidJobSpec(subject, f"unknown map function {name!r} (known: identity, negate, double, add:N, mod:N, rekey_mod:N)")


def filter_function(name: str | None, subject: str = "filter") -> FilterFn:
    name = name or "all"
    if name == "all":
        return lambda k, v: True
    if name == "none":
        return lambda k, v: False
    if name == "even_value":
        return lambda k, v: v % 2 == 0
    if name == "odd_value":
        return lambda k, v: v % 2 != 0
    if name.startswith("value_ge:"):
        n = _int_arg(name, subject)
        return lambda k, v: v >= n
    raise InvalidJobSpec(subject, f"unknown filter function {name!r} (known: all, none, even_value, odd_value, value_ge:N)")
