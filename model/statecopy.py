"""Copying model state: ``copy.deepcopy``'s meaning, without its generic machinery.

An explorer copies the cluster once per transition (``Cluster.copy``), so the copy is on the
hot path of every exhaustive search. ``deep_copy(x, memo)`` returns what
``copy.deepcopy(x, memo)`` returns for the object graphs the model builds -- the same
sharing (an object met twice is copied once), the same identities for what ``memo``
pre-maps -- but dispatches on the exact type once per object instead of going through
``__reduce_ex__``, ``copyreg`` and ``__setstate__``:

* primitives, functions, classes and *values* (classes marked by ``model.events.value``
  or any class whose ``__deepcopy__`` is ``model.events._same``) are returned as they are;
* tuples and frozensets are rebuilt only if an element changes; lists, deques (with their
  ``maxlen``), dicts and sets element by element;
* a bound method is rebound to the copy of its owner;
* any other object of a plain Python class: a new instance of the same class
  (``object.__new__``, no ``__init__``) with every slot and ``__dict__`` entry copied (what a
  state holds that never changes -- a task's plan -- is a value, shared); a class that
  customizes copying or pickling, or is not a Python class, is left to ``copy.deepcopy``.

Invariant (tested on every variant's random walks): a copy has the same fingerprint as its
original, and stepping one never changes the other.

Two implementations of the one walk: ``py_deep_copy`` (Python, the reference) and
``model._native.deep_copy`` (C, compiled from ``model/_native.c`` when the package is
installed), which takes every per-class decision from this module (``_copy_info``) and hands
the classes that customize copying back to ``copy.deepcopy``. ``deep_copy`` uses the C walk
when it is built, unless the environment sets ``FLINKSPEC_NATIVE=0``; ``use_native`` switches
at run time (the benchmarks compare the two in one run). tests/test_native_walk.py checks that
both give the same copies.
"""

from __future__ import annotations

import copy as _copy
import os
from collections import deque
from types import BuiltinFunctionType, FunctionType, MemberDescriptorType, MethodType

from model.events import _same

_ATOMIC = frozenset({int, float, str, bool, type(None), bytes, complex, range, type, FunctionType,
                     BuiltinFunctionType, type(Ellipsis), type(NotImplemented)})

_SLOTS: dict = {}
_NEW = object.__new__
_set = object.__setattr__


def _slots_of(cls) -> tuple:
    s = _SLOTS.get(cls)
    if s is None:
        names: list[str] = []
        for k in reversed(cls.__mro__):
            for n in k.__dict__.get("__slots__", ()):
                if n not in names and n not in ("__weakref__", "__dict__"):
                    names.append(n)
        s = _SLOTS[cls] = tuple(names)
    return s


def _copy_tuple(x, memo):
    y = tuple([py_deep_copy(e, memo) for e in x])
    for a, b in zip(x, y):
        if a is not b:
            return y
    return x


def _copy_list(x, memo):
    y: list = []
    memo[id(x)] = y
    for e in x:
        t = type(e)
        y.append(e if t in _ATOMIC or (t is tuple and not e) else py_deep_copy(e, memo))
    return y


def _copy_deque(x, memo):
    y = deque(maxlen=x.maxlen)
    memo[id(x)] = y
    for e in x:
        y.append(e if type(e) in _ATOMIC else py_deep_copy(e, memo))
    return y


def _copy_dict(x, memo):
    y: dict = {}
    memo[id(x)] = y
    for k, v in x.items():
        y[k if type(k) in _ATOMIC else py_deep_copy(k, memo)] = v if type(v) in _ATOMIC else py_deep_copy(v, memo)
    return y


def _copy_set(x, memo):
    y: set = set()
    memo[id(x)] = y
    for e in x:
        y.add(e if type(e) in _ATOMIC else py_deep_copy(e, memo))
    return y


def _copy_frozenset(x, memo):
    y = frozenset(py_deep_copy(e, memo) for e in x)
    return x if y == x and all(type(e) in _ATOMIC for e in x) else y


def _copy_method(x, memo):
    return MethodType(x.__func__, py_deep_copy(x.__self__, memo))


_BY_TYPE = {tuple: _copy_tuple, list: _copy_list, deque: _copy_deque, dict: _copy_dict, set: _copy_set,
            frozenset: _copy_frozenset, MethodType: _copy_method}
_VALUE_TYPES: set = set()
_CUSTOM: dict = {}


_HEAPTYPE = 1 << 9
#: attrs gives slotted classes a ``__getstate__``/``__setstate__`` that just read and write
#: the slots: copying the slots is the same
_ATTRS_SLOT_STATE = frozenset({"slots_getstate", "slots_setstate"})
_PROTOCOL = ("__deepcopy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__copy__")


def _plain(t) -> bool:
    """Whether every class of ``t``'s MRO but ``object`` is a Python class holding its state in
    slots or ``__dict__`` and none customizes copying or pickling: then a new instance with
    copied fields is what ``copy.deepcopy`` would build. Anything else (C types such as
    ``random.Random``, a class with ``__reduce__``) is left to ``copy.deepcopy``."""
    for k in t.__mro__[:-1]:
        if not k.__flags__ & _HEAPTYPE:
            return False
        for p in _PROTOCOL:
            f = k.__dict__.get(p)
            if f is not None and getattr(f, "__name__", "") not in _ATTRS_SLOT_STATE:
                return False
    return t.__mro__[-1] is object


def py_deep_copy(x, memo: dict):
    """``copy.deepcopy(x, memo)`` for model state (see the module docstring), in Python: the
    reference that ``model._native.deep_copy`` follows."""
    t = type(x)
    if t in _ATOMIC or t in _VALUE_TYPES:
        return x
    i = id(x)
    y = memo.get(i, memo)
    if y is not memo:
        return y
    f = _BY_TYPE.get(t)
    if f is not None:
        return f(x, memo)
    custom = _CUSTOM.get(t)
    if custom is None:
        if getattr(t, "__deepcopy__", None) is _same:
            _VALUE_TYPES.add(t)
            return x
        custom = _CUSTOM[t] = not _plain(t)
    if custom:
        y = _copy.deepcopy(x, memo)
        memo[i] = y
        return y
    y = _NEW(t)
    memo[i] = y
    for n in _slots_of(t):
        try:
            v = getattr(x, n)
        except AttributeError:
            continue
        _set(y, n, v if type(v) in _ATOMIC else py_deep_copy(v, memo))
    d = getattr(x, "__dict__", None)
    if d is not None:
        yd = y.__dict__
        for n, v in d.items():
            yd[n] = v if type(v) in _ATOMIC else py_deep_copy(v, memo)
    return y


# -- the C walk ---------------------------------------------------------------------------------

try:
    from model import _native
except ImportError:  # not built (a checkout used without `pip install -e .`): the Python walk
    _native = None

_VALUE_MARK = "value"
_CUSTOM_MARK = "custom"


def _copy_info(t) -> object:
    """What ``model._native.deep_copy`` does with an object of class ``t`` (asked once per
    class): return it (a value), hand it to ``copy.deepcopy`` (a class that customizes
    copying), or copy its slots (``(slots, has __dict__, their member descriptors)``)."""
    if getattr(t, "__deepcopy__", None) is _same:
        return _VALUE_MARK
    if not _plain(t):
        return _CUSTOM_MARK
    slots = _slots_of(t)
    return (slots, t.__dictoffset__ != 0, member_descriptors(t, slots))


def member_descriptors(t, names: tuple) -> tuple:
    """For each of ``names``, the member descriptor (``__slots__`` entry) that serves it on
    instances of ``t``, if reading and writing it directly is what ``getattr`` and
    ``object.__setattr__`` do (no ``__getattribute__`` or ``__getattr__`` of the class's own,
    the name not shadowed by a property); else None (the C walks then go through ``getattr``)."""
    if t.__getattribute__ is not object.__getattribute__ or any("__getattr__" in k.__dict__ for k in t.__mro__):
        return (None,) * len(names)
    out = []
    for n in names:
        d = next((k.__dict__[n] for k in t.__mro__ if n in k.__dict__), None)
        out.append(d if type(d) is MemberDescriptorType else None)
    return tuple(out)


if _native is not None:
    _native.configure_copy(frozenset(_ATOMIC), {}, _copy_info, _copy.deepcopy, deque, _VALUE_MARK, _CUSTOM_MARK)

_impl = py_deep_copy


def use_native(on: bool) -> bool:
    """Copy with the C walk (``on``, when it is built) or the Python one; returns whether the C
    walk is now in use."""
    global _impl
    _impl = _native.deep_copy if on and _native is not None else py_deep_copy
    return _impl is not py_deep_copy


def native_available() -> bool:
    return _native is not None


def deep_copy(x, memo: dict):
    """``copy.deepcopy(x, memo)`` for model state (see the module docstring). ``memo`` pre-maps
    ``id(original) -> copy`` (what the copy shares, or replaces). (The C walk keeps its memo in
    a table of its own, and writes ``memo`` only around a class that customizes copying.)"""
    if _impl is py_deep_copy:
        return py_deep_copy(x, memo)
    return _native.deep_copy(x, memo)


use_native(os.environ.get("FLINKSPEC_NATIVE", "1") != "0")
