"""Canonical fingerprints of model state: equal states, equal fingerprints, whatever path led
there (an explorer deduplicates states by them, as TLC and Stateright do).

``canonical(obj)`` turns an object graph into nested tuples of primitives:

* objects (slotted or not) become ``(class name, field values...)`` over every field: no class
  lists fields to leave out. What is not state is held in an object of a class marked
  :func:`beside_state` (a run's history, a memo, what the scenario fixes), which is its class
  name alone, whoever holds it; a link to another part of the state (a task's view of the
  network stack) is a back-reference, so it counts once;
  a list field the class names in ``FINGERPRINT_MULTISET`` counts as a multiset (sorted):
  its order carries no meaning (the RPC messages in flight, any of which may be delivered
  next);
* dicts and sets are sorted (by the canonical form of their keys/elements: natural order
  for all-int or all-string keys, else by repr), so insertion order -- which depends on the
  path -- does not count; lists, tuples and deques keep order;
* a mutable object met again becomes a back-reference ``("ref", n)`` numbered in traversal
  order, so shared structure (a channel deque that a task also writes to) counts once and
  cycles end; frozen attrs values (events, barriers, snapshots) count by content only, with
  back-references numbered within the value, so a value's form does not depend on where it is
  met and is computed once per value object (``_VALUE_FORMS``);
* functions and bound methods are named by their qualified name (the model's functions are
  pure, or their state lives in the object a bound method belongs to);
* with ``drop_time``, the fields named in ``TIME_FIELDS`` (logical time and timestamps) are
  left out: for a configuration where time changes nothing (``RuntimeConfig.time_sensitive``)
  two states reached at different steps are the same state;
* *fresh identifiers* -- values of an ``int`` subclass marked with :func:`fresh_id` (the
  control plane's ``AllocationID`` and ``ExecutionAttemptID``) -- count by their rank among
  the identifiers of their class that the state holds, not by their value: a state whose
  live allocations are 7 and 9 is the state whose live allocations are 1 and 2. This is
  sound when the model uses such identifiers only for equality and order, and draws a new
  one above every one it drew before (its counter is left out of the fingerprint): then
  renaming the live identifiers in order maps every behaviour of one state onto the other's
  (a data-independence argument, Wolper 1986). Without it, each heartbeat timeout that
  re-requests slots would make a new state forever, and no control-plane space would be
  finite.

``encode(form)`` writes a form as bytes (an injective encoding; a fresh identifier becomes its
rank among the identifiers of its tag), and ``canonical_bytes(obj)`` is
``encode(canonical(obj))``. ``fingerprint_of(obj)`` is a BLAKE2b hash (16 bytes, hex) of them.

Two implementations of each walk: ``py_canonical`` and ``py_canonical_bytes`` (Python, the
references) and ``model._native.canonical`` and ``model._native.canonical_bytes`` (C,
compiled from ``model/_native.c`` when the package is installed), which take every per-class
decision from this module (``_canon_info``) and name functions as ``_canon`` does. The C
``canonical_bytes`` writes the bytes as it walks: no form is built except where it sorts (dict
keys, set elements, multisets), no serializer runs, and each fresh identifier is written in a
slot that gets its rank when the walk ends. ``canonical`` and ``canonical_bytes`` use the C
walks when they are built, unless the environment sets ``FLINKSPEC_NATIVE=0``; ``use_native``
switches at run time. tests/test_native_walk.py checks that both give the same forms and bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
from collections import deque
from types import BuiltinMethodType, FunctionType, MethodType, ModuleType

import attrs

from model.statecopy import member_descriptors

#: field names that hold logical time (the step counter and the timestamps derived from it)
TIME_FIELDS = frozenset({"now", "timestamp", "request_timestamp", "last_completion_time", "failure_times"})

_PRIMITIVE = (int, float, str, bool, type(None), bytes)
_FIELDS: dict = {}

#: fresh-identifier classes (``fresh_id``) -> their one-letter tag
_FRESH: dict = {}
#: a fresh identifier in a canonical form: tag and value, zero-padded so that string order is
#: numeric order (dict keys and set elements stay sorted by value)
_MARK = re.compile("\u27e8([A-Z])([0-9]{12})\u27e9")


def fresh_id(tag: str):
    """Mark an ``int`` subclass as a fresh identifier with one-letter ``tag`` (see the module
    docstring)."""
    if len(tag) != 1 or not tag.isupper() or tag in _FRESH.values():
        raise ValueError(f"fresh_id tag must be one unused capital letter, not {tag!r}")

    def mark(cls):
        if not issubclass(cls, int):
            raise TypeError(f"{cls.__name__} is not an int subclass")
        _FRESH[cls] = tag
        return cls
    return mark


#: classes whose objects are kept beside a state, never in its view (``beside_state``)
_BESIDE: set = set()


def beside_state(cls):
    """Mark the slotted class ``cls`` as kept beside the state (a run's history): what its
    objects hold is never part of a state's view, so every object of it has one canonical
    form, its class name, wherever it is met. Sound only for what no step reads."""
    if "__slots__" not in cls.__dict__ or cls.__dictoffset__:
        raise TypeError(f"{cls.__name__}: a class kept beside the state must be slotted")
    _BESIDE.add(cls)
    return cls


def _fields(cls, drop_time: bool) -> tuple:
    key = (cls, drop_time)
    f = _FIELDS.get(key)
    if f is None and cls in _BESIDE:
        f = _FIELDS[key] = ((), frozenset(), frozenset())
    if f is None:
        names: list[str] = []
        skip: set = set()
        bags = frozenset(getattr(cls, "FINGERPRINT_MULTISET", ()))  # the most derived class's
        for k in reversed(cls.__mro__):
            for n in k.__dict__.get("__slots__", ()):
                if n not in names and n != "__weakref__" and n != "__dict__":
                    names.append(n)
        if drop_time:
            skip |= TIME_FIELDS
        f = _FIELDS[key] = (tuple(n for n in names if n not in skip), frozenset(skip), bags)
    return f


_VALUE: dict = {}


def _is_value_type(cls) -> bool:
    """Frozen attrs classes are values (events, barriers, snapshots): compared by content,
    never by identity, so a copied singleton and the original count as the same value."""
    return attrs.has(cls) and getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"


def py_canonical(obj, drop_time: bool = False):
    """The canonical form of ``obj`` (see the module docstring), in Python: the reference that
    ``model._native.canonical`` follows."""
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


#: canonical forms of value objects (frozen attrs), per ``drop_time``: ``id -> (object,
#: form)``. The entry keeps the object alive, so its id is not reused while the entry exists;
#: a value never changes (nor do the containers it holds: ``Cluster.copy`` shares values
#: between states on the same assumption), so neither does its form. A value's form numbers
#: its back-references on its own, so it is the same wherever the value is met.
_VALUE_FORMS: tuple = ({}, {})
_VALUE_FORMS_MAX = 200_000
#: the same for the C walk's canonical bytes (``model._native.canonical_bytes``): ``id ->
#: (object, bytes, fresh-identifier slots)``
_VALUE_BYTES: tuple = ({}, {})


def clear_value_caches() -> None:
    """Forget every cached value form and value bytes (they are computed again when met)."""
    for cache in _VALUE_FORMS + _VALUE_BYTES:
        cache.clear()


def _canon(x, drop_time, memo):
    t = type(x)
    if t in _PRIMITIVE:
        return x
    tag = _FRESH.get(t)
    if tag is not None:
        return f"\u27e8{tag}{int(x):012d}\u27e9"
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
    if value:
        forms = _VALUE_FORMS[drop_time]
        e = forms.get(id(x))
        if e is not None and e[0] is x:
            return e[1]
        form = _canon_object(x, t, drop_time, {})  # its own back-references: context-free
        if len(forms) >= _VALUE_FORMS_MAX:
            forms.clear()
        forms[id(x)] = (x, form)
        return form
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
    return _canon_object(x, t, drop_time, memo)


def _canon_object(x, t, drop_time, memo):
    """The canonical form of an object of a class (slots, then ``__dict__``)."""
    names, skip, bags = _fields(t, drop_time)
    out = [t.__qualname__]
    values = [getattr(x, n, None) for n in names]
    if bags:
        for n, v in zip(names, values):
            if n in bags:
                out.append(("multiset",) + tuple(sorted((_canon(e, drop_time, memo) for e in v), key=repr)))
            else:
                out.append(v if type(v) in _PRIMITIVE else _canon(v, drop_time, memo))
    else:
        out += [v if type(v) in _PRIMITIVE else _canon(v, drop_time, memo) for v in values]
    d = getattr(x, "__dict__", None)
    if d:
        for n in sorted(d):
            if n not in skip:
                v = d[n]
                out.append((n, v if type(v) in _PRIMITIVE else _canon(v, drop_time, memo)))
    return tuple(out)


# -- the C walk ---------------------------------------------------------------------------------

try:
    from model import _native
except ImportError:  # not built (a checkout used without `pip install -e .`): the Python walk
    _native = None

#: what ``_canon_info`` tells the C walk about a class
_K_PYTHON, _K_VALUE, _K_OBJECT = 0, 1, 2


def _canon_info(t, drop_time: bool) -> tuple:
    """What ``model._native.canonical`` does with an object of class ``t`` (asked once per class
    and ``drop_time``; primitives, fresh identifiers and the builtin containers it knows itself):
    ``(kind, qualified name, field names, skipped names, multiset fields, has __dict__, member
    descriptors of the fields or None, whether each field is a multiset)``, where kind is the
    Python walk (functions), a value (its form cached), or a mutable object."""
    if t is FunctionType or t is BuiltinMethodType:
        return (_K_PYTHON, "", (), frozenset(), frozenset(), False, (), ())
    names, skip, bags = _fields(t, drop_time)
    value = _VALUE.get(t)
    if value is None:
        value = _VALUE[t] = _is_value_type(t)
    has_dict = t.__dictoffset__ != 0 or any("__dict__" in k.__dict__ for k in t.__mro__)
    return (_K_VALUE if value else _K_OBJECT, t.__qualname__, names, skip, bags, has_dict,
            member_descriptors(t, names), tuple(n in bags for n in names))


def _sort_by_repr(keys: list) -> list:
    return sorted(keys, key=repr)


if _native is not None:
    _native.configure_canonical(_FRESH, {}, {}, _canon_info, _VALUE_FORMS[0], _VALUE_FORMS[1], _VALUE_FORMS_MAX,
                                _sort_by_repr, deque, _VALUE_BYTES[0], _VALUE_BYTES[1])

_impl = py_canonical


def use_native(on: bool) -> bool:
    """Canonicalize (``canonical``, ``canonical_bytes``) with the C walks (``on``, when they are
    built) or the Python ones; returns whether the C walks are now in use."""
    global _impl, _bytes_impl
    native = on and _native is not None
    _impl = _native.canonical if native else py_canonical
    _bytes_impl = _native.canonical_bytes if native else py_canonical_bytes
    return native


def canonical(obj, drop_time: bool = False):
    """The canonical form of ``obj`` (see the module docstring)."""
    return _impl(obj, drop_time)


def encode(form) -> bytes:
    """The canonical bytes of a canonical form, every fresh identifier replaced by its rank (1,
    2, ...) among the identifiers of its tag in the form: an injective encoding (one type byte,
    then fixed-width or length-prefixed contents), so two forms give equal bytes exactly when
    they are equal up to an order-keeping renaming of their fresh identifiers (and, unlike
    ``==``, ``1``, ``1.0`` and ``True`` differ): None, booleans, ints (zigzag varints), floats,
    strings, bytes and tuples (a count, then the elements), each after a type byte, a fresh
    identifier as ``@``, its tag and its rank in 8 bytes. ``model._native.canonical_bytes`` writes these
    bytes while it walks, without building the form."""
    out = bytearray()
    ids: list = []
    _encode(form, out, ids)
    if ids:
        ranks = _ranks(ids)
        for off, tag, v in ids:
            out[off:off + 8] = ranks[tag, v].to_bytes(8, "little")
    return bytes(out)


def _ranks(ids: list) -> dict:
    """``(tag, value) -> rank`` among the distinct values of each tag, from 1."""
    ranks: dict = {}
    count: dict = {}
    for tag, v in sorted({(tag, v) for _, tag, v in ids}):
        ranks[tag, v] = count[tag] = count.get(tag, 0) + 1
    return ranks


def _encode(f, out: bytearray, ids: list) -> None:
    t = type(f)
    if f is None:
        out += b"N"
    elif t is bool:
        out += b"T" if f else b"F"
    elif t is int:
        if -(1 << 63) <= f < 1 << 63:
            out += b"i" + _varint((f << 1) ^ (f >> 63))  # zigzag: small magnitudes, few bytes
        else:
            digits = str(f).encode()
            out += b"I" + _varint(len(digits)) + digits
    elif t is float:
        out += b"f" + struct.pack("<d", f)
    elif t is str:
        m = _MARK.fullmatch(f) if f[:1] == "\u27e8" else None
        if m is not None:  # a fresh identifier: its tag and an 8-byte slot for its rank
            out += b"@" + m.group(1).encode()
            ids.append((len(out), m.group(1), int(m.group(2))))
            out += int(m.group(2)).to_bytes(8, "little")
        else:
            b = f.encode("utf-8", "surrogatepass")
            out += b"s" + _varint(len(b)) + b
    elif t is bytes:
        out += b"b" + _varint(len(f)) + f
    elif t is tuple:
        out += b"(" + _varint(len(f))
        for e in f:
            _encode(e, out, ids)
    else:
        raise TypeError(f"a canonical form holds a {t.__name__}")


def _varint(n: int) -> bytes:
    """``n`` (>= 0) as an unsigned LEB128 varint: 7 bits a byte, low bits first."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def py_canonical_bytes(obj, drop_time: bool = False) -> bytes:
    """``encode(py_canonical(obj, drop_time))``: the reference that
    ``model._native.canonical_bytes`` follows."""
    return encode(py_canonical(obj, drop_time))


_bytes_impl = py_canonical_bytes


def canonical_bytes(obj, drop_time: bool = False) -> bytes:
    """The canonical bytes of ``obj``: ``encode(canonical(obj, drop_time))``."""
    return _bytes_impl(obj, drop_time)


def fingerprint_of(obj, drop_time: bool = False) -> str:
    """The BLAKE2b hash (16 bytes, hex) of the canonical bytes (``canonical_bytes``: fresh
    identifiers ranked)."""
    return hashlib.blake2b(_bytes_impl(obj, drop_time), digest_size=16).hexdigest()


use_native(os.environ.get("FLINKSPEC_NATIVE", "1") != "0")
