"""Canonical fingerprints of model state: equal states, equal fingerprints, whatever path led
there (an explorer deduplicates states by them, as TLC and Stateright do).

``canonical(obj)`` turns an object graph into nested tuples of primitives:

* objects (slotted or not) become ``(class name, field values...)`` over every field except
  those the class lists in ``FINGERPRINT_SKIP`` (history, caches, links to static structure);
* dicts and sets are sorted (by the canonical form of their keys/elements: natural order
  for all-int or all-string keys, else by repr), so insertion order -- which depends on the
  path -- does not count; lists, tuples and deques keep order;
* a mutable object met again becomes a back-reference ``("ref", n)`` numbered in traversal
  order, so shared structure (a channel deque that a task also writes to) counts once and
  cycles end; frozen attrs values (events, barriers, snapshots) count by content only;
* functions and bound methods are named by their qualified name (the model's functions are
  pure, or their state lives in the object a bound method belongs to);
* with ``drop_time``, the fields named in ``TIME_FIELDS`` (logical time and timestamps) are
  left out: for a configuration where time changes nothing (``RuntimeConfig.time_sensitive``)
  two states reached at different steps are the same state.

``fingerprint_of(obj)`` is a BLAKE2b hash (16 bytes, hex) of the canonical form's repr.
"""

from __future__ import annotations

import hashlib
from collections import deque
from types import BuiltinMethodType, FunctionType, MethodType, ModuleType

import attrs

#: field names that hold logical time (the step counter and the timestamps derived from it)
TIME_FIELDS = frozenset({"now", "timestamp", "request_timestamp", "last_completion_time", "failure_times"})

_PRIMITIVE = (int, float, str, bool, type(None), bytes)
_FIELDS: dict = {}


def _fields(cls, drop_time: bool) -> tuple:
    key = (cls, drop_time)
    f = _FIELDS.get(key)
    if f is None:
        names: list[str] = []
        skip: set = set()
        for k in reversed(cls.__mro__):
            skip.update(getattr(k, "FINGERPRINT_SKIP", ()))
            for n in k.__dict__.get("__slots__", ()):
                if n not in names and n != "__weakref__" and n != "__dict__":
                    names.append(n)
        if drop_time:
            skip |= TIME_FIELDS
        f = _FIELDS[key] = (tuple(n for n in names if n not in skip), frozenset(skip))
    return f


_VALUE: dict = {}


def _is_value_type(cls) -> bool:
    """Frozen attrs classes are values (events, barriers, snapshots): compared by content,
    never by identity, so a copied singleton and the original count as the same value."""
    return attrs.has(cls) and getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"


def canonical(obj, drop_time: bool = False):
    memo: dict = {}
    return _canon(obj, drop_time, memo)


def _sorted_keys(keys: list) -> list:
    """``keys`` (canonical forms) in a path-independent order: their natural order when they
    are all ints or all strings (the common case, no repr needed), else by repr."""
    if keys:
        t = type(keys[0])
        if (t is int or t is str) and all(type(k) is t for k in keys):
            return sorted(keys)
    return sorted(keys, key=repr)


def _canon(x, drop_time, memo):
    t = type(x)
    if t in _PRIMITIVE:
        return x
    if t is tuple:
        for e in x:
            if type(e) not in _PRIMITIVE:
                return ("tuple",) + tuple([e if type(e) in _PRIMITIVE else _canon(e, drop_time, memo) for e in x])
        return x
    if t is frozenset:
        return ("frozenset",) + tuple(_sorted_keys([_canon(e, drop_time, memo) for e in x]))
    if t is FunctionType or (t is BuiltinMethodType and (x.__self__ is None or type(x.__self__) is ModuleType)):
        return ("fn", getattr(x, "__qualname__", repr(x)))
    value = _VALUE.get(t)
    if value is None:
        value = _VALUE[t] = _is_value_type(t)
    if not value:
        i = id(x)
        ref = memo.get(i)
        if ref is not None:
            return ("ref", ref)
        memo[i] = len(memo)
    if t is list or t is deque:
        return (t.__name__,) + tuple([e if type(e) in _PRIMITIVE else _canon(e, drop_time, memo) for e in x])
    if t is dict:
        if not x:
            return ("dict",)
        canon_key = {}
        for k, v in x.items():
            canon_key[k if type(k) in _PRIMITIVE else _canon(k, drop_time, memo)] = v
        out = ["dict"]
        for k in _sorted_keys(list(canon_key)):
            v = canon_key[k]
            out.append((k, v if type(v) in _PRIMITIVE else _canon(v, drop_time, memo)))
        return tuple(out)
    if t is set:
        return ("set",) + tuple(_sorted_keys([e if type(e) in _PRIMITIVE else _canon(e, drop_time, memo) for e in x]))
    if t is MethodType or t is BuiltinMethodType:
        owner = x.__self__
        return ("method", x.__name__, _canon(owner, drop_time, memo))
    names, skip = _fields(t, drop_time)
    out = [t.__qualname__]
    for n in names:
        v = getattr(x, n, None)
        out.append(v if type(v) in _PRIMITIVE else _canon(v, drop_time, memo))
    d = getattr(x, "__dict__", None)
    if d:
        for n in sorted(d):
            if n not in skip:
                v = d[n]
                out.append((n, v if type(v) in _PRIMITIVE else _canon(v, drop_time, memo)))
    return tuple(out)


def fingerprint_of(obj, drop_time: bool = False) -> str:
    return hashlib.blake2b(repr(canonical(obj, drop_time)).encode(), digest_size=16).hexdigest()
