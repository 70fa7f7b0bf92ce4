"""model.statecopy call by call: each copy function's whole result -- what is a new object,
what is the original itself, what the memo holds afterwards -- the per-class decisions the C
walk takes from this module (``_plain``, ``_slots_of``, ``_copy_info``, ``member_descriptors``),
and copies of real cluster states reached by a short seeded walk."""

from __future__ import annotations

import copy
import os
import random
from collections import deque
from types import BuiltinFunctionType, FunctionType, MemberDescriptorType, MethodType

import attrs
import pytest

from model import fingerprint as F
from model import statecopy as S
from model.events import _same, value


class Base:
    __slots__ = ("a", "__weakref__")


class Mid(Base):
    __slots__ = ("b", "a")  # "a" again: listed once


class Leaf(Mid):
    __slots__ = ("c", "__dict__")


class Node:
    __slots__ = ("name", "items", "link")

    def __init__(self, name, items=None, link=None):
        self.name, self.items, self.link = name, items if items is not None else [], link

    def hello(self):
        return self.name


class Counted:
    """A plain ``__dict__`` class whose ``__init__`` counts: a copy must not call it."""

    made = 0

    def __init__(self, **kw):
        Counted.made += 1
        self.__dict__.update(kw)


class Custom:
    def __init__(self, items):
        self.items = items

    def __deepcopy__(self, memo):
        return Custom(["custom"] + copy.deepcopy(self.items, memo))


class Reduced:
    def __reduce__(self):
        return (Reduced, ())


class Getattribute:
    __slots__ = ("x",)

    def __getattribute__(self, n):
        return object.__getattribute__(self, n)


class Getattr:
    __slots__ = ("x",)

    def __getattr__(self, n):
        raise AttributeError(n)


class Shadowed:
    __slots__ = ("x", "y")


class ShadowedChild(Shadowed):
    x = property(lambda self: 1)


@value
@attrs.frozen(slots=True)
class Val:
    a: int


@attrs.frozen(slots=True)
class Frozen:
    a: object


@attrs.define(slots=True)
class Mutable:
    a: object
    b: object = None


def test_the_walks_tables_and_constants():
    """What the module declares, before any walk fills its caches."""
    assert type(S._SLOTS) is dict and type(S._CUSTOM) is dict and type(S._VALUE_TYPES) is set
    assert S._NEW is object.__new__ and S._set is object.__setattr__
    assert S._BY_TYPE == {tuple: S._copy_tuple, list: S._copy_list, deque: S._copy_deque, dict: S._copy_dict,
                          set: S._copy_set, frozenset: S._copy_frozenset, MethodType: S._copy_method}
    assert S._HEAPTYPE == 1 << 9 and S._ATTRS_SLOT_STATE == frozenset({"slots_getstate", "slots_setstate"})
    assert S._PROTOCOL == ("__deepcopy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__copy__")
    assert (S._VALUE_MARK, S._CUSTOM_MARK) == ("value", "custom")
    # the C walk when it is built, unless the environment says FLINKSPEC_NATIVE=0
    native = S._native is not None and os.environ.get("FLINKSPEC_NATIVE") != "0"
    assert S._impl is (S._native.deep_copy if native else S.py_deep_copy)


def test_the_atomic_types():
    assert S._ATOMIC == frozenset({int, float, str, bool, type(None), bytes, complex, range, type, FunctionType,
                                   BuiltinFunctionType, type(Ellipsis), type(NotImplemented)})


def test_the_slots_of_a_class_in_mro_order_each_once_and_cached():
    S._SLOTS.pop(Leaf, None)
    assert S._slots_of(Leaf) == ("a", "b", "c")
    assert S._SLOTS[Leaf] == ("a", "b", "c")
    S._SLOTS[Leaf] = ("cached",)
    try:
        assert S._slots_of(Leaf) == ("cached",)
    finally:
        S._SLOTS.pop(Leaf)
    assert S._slots_of(Counted) == () and S._slots_of(Node) == ("name", "items", "link")

    class OneString:
        __slots__ = "only"

    assert S._slots_of(OneString) == ("o", "n", "l", "y")  # a string is iterated as CPython's slots are not: as it is


def test_which_classes_are_plain():
    assert S._plain(Node) and S._plain(Leaf) and S._plain(Counted) and S._plain(object)
    assert S._plain(Frozen) and S._plain(Mutable)  # attrs' slot state functions copy only the slots
    assert not S._plain(random.Random)  # a C base
    assert not S._plain(dict) and not S._plain(deque)

    class D(dict):
        pass

    assert not S._plain(D)
    assert not S._plain(Custom) and not S._plain(Reduced) and not S._plain(Val)
    for p in ("__deepcopy__", "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__copy__"):
        k = type("K", (), {p: lambda self, *a: None})
        assert not S._plain(k), p
        assert not S._plain(type("Sub", (k,), {})), p  # customized by a base
    named = type("K", (), {"__getstate__": lambda self: None})
    named.__getstate__.__name__ = "slots_getstate"
    assert S._plain(named)  # attrs' name: its own


def test_the_member_descriptors():
    assert S.member_descriptors(Node, ("name", "link")) == (Node.__dict__["name"], Node.__dict__["link"])
    assert all(type(d) is MemberDescriptorType for d in S.member_descriptors(Leaf, ("a", "b", "c")))
    assert S.member_descriptors(Leaf, ("a",)) == (Mid.__dict__["a"],)  # the subclass's slot serves it
    assert S.member_descriptors(Getattribute, ("x",)) == (None,)
    assert S.member_descriptors(Getattr, ("x",)) == (None,)
    assert S.member_descriptors(type("G", (Getattr,), {"__slots__": ()}), ("x",)) == (None,)
    assert S.member_descriptors(ShadowedChild, ("x", "y")) == (None, Shadowed.__dict__["y"])
    assert S.member_descriptors(Counted, ("missing",)) == (None,)
    assert S.member_descriptors(Node, ()) == ()


def test_what_the_c_walk_is_told_of_each_class():
    assert S._copy_info(Val) == "value" == S._VALUE_MARK
    assert S._copy_info(Custom) == "custom" == S._CUSTOM_MARK and S._copy_info(random.Random) == "custom"
    assert S._copy_info(Node) == (("name", "items", "link"), False,
                                  (Node.__dict__["name"], Node.__dict__["items"], Node.__dict__["link"]))
    assert S._copy_info(Leaf) == (("a", "b", "c"), True, S.member_descriptors(Leaf, ("a", "b", "c")))
    assert S._copy_info(Counted) == ((), True, ())


def test_tuples_are_kept_unless_an_element_changes():
    memo: dict = {}
    t = (1, "a", None, (2, 3), Val(1))
    assert S._copy_tuple(t, memo) is t and S.py_deep_copy(t, memo) is t
    inner = [1]
    t2 = (1, inner)
    c = S._copy_tuple(t2, memo)
    assert c == (1, [1]) and c is not t2 and c[1] is not inner and c[0] == 1
    assert memo.get(id(inner)) is c[1]
    # the last element alone changing is seen too
    t3 = ("x", "y", [2])
    assert S._copy_tuple(t3, {}) is not t3
    assert S._copy_tuple((), {}) == ()


def test_a_list_is_copied_into_the_memo_first():
    inner = [3]
    x = [1, "s", (), (1,), (inner,), inner, None]
    x.append(x)  # a cycle
    memo: dict = {}
    y = S._copy_list(x, memo)
    assert memo.get(id(x)) is y and y[-1] is y
    assert y[:4] == [1, "s", (), (1,)] and y[2] is x[2] and y[3] is x[3] and y[6] is None
    assert y[5] == [3] and y[5] is not inner and y[4][0] is y[5]  # met twice, copied once
    assert len(y) == len(x) == 8 and type(y) is list
    assert set(memo) == {id(x), id(inner)}  # the list's own copies only (no other walk's bookkeeping)
    assert list not in S._CUSTOM
    # empty containers are copied too (only an empty tuple is kept)
    empties = [[], {}, set(), deque(), ()]
    got = S._copy_list(empties, {})
    assert got == empties and all(a is not b for a, b in zip(got[:4], empties[:4])) and got[4] is empties[4]


def test_a_deque_keeps_its_maxlen_and_elements():
    inner = [1]
    x = deque([1, inner, inner, "a"], maxlen=6)
    memo: dict = {}
    y = S._copy_deque(x, memo)
    assert type(y) is deque and y.maxlen == 6 and list(y) == [1, [1], [1], "a"] and memo.get(id(x)) is y
    assert y[1] is y[2] and y[1] is not inner
    u = S._copy_deque(deque([Val(1)]), {})
    assert u.maxlen is None and u[0] is not None
    x2 = deque()
    x2.append(x2)
    y2 = S.py_deep_copy(x2, {})
    assert y2[0] is y2


def test_a_dict_copies_keys_and_values_that_are_not_atomic():
    key = (1, ("k",))
    shared = [1]
    x = {1: "a", key: shared, "s": shared, None: (shared,)}
    x["self"] = x
    memo: dict = {}
    y = S._copy_dict(x, memo)
    assert memo.get(id(x)) is y and y["self"] is y
    assert list(y) == [1, key, "s", None, "self"] and y[1] == "a"
    assert y[key] == [1] and y[key] is not shared and y["s"] is y[key] and y[None][0] is y[key]
    k2 = (1, Frozen(2))
    y2 = S._copy_dict({k2: [1]}, {})
    (ck,) = y2
    assert ck == k2 and ck is not k2 and ck[1] is not k2[1] and y2[ck] == [1]


def test_a_set_and_a_frozenset():
    f1, f2 = Frozen(1), Frozen(2)
    x = {1, "a", f1}
    memo: dict = {}
    y = S._copy_set(x, memo)
    assert type(y) is set and memo.get(id(x)) is y and y == {1, "a", Frozen(1)} and f1 not in {id(e) for e in y}
    assert not any(e is f1 for e in y)
    atomic = frozenset({1, "a", None})
    assert S._copy_frozenset(atomic, {}) is atomic
    mixed = frozenset({1, f2})
    c = S._copy_frozenset(mixed, {})
    assert c == mixed and c is not mixed and not any(e is f2 for e in c)
    t = frozenset({(1, 2)})  # equal, but an element is not atomic: a new frozenset
    assert S._copy_frozenset(t, {}) == t and S._copy_frozenset(t, {}) is not t


def test_a_bound_method_is_rebound_to_the_copy_of_its_owner():
    n = Node("n")
    memo: dict = {}
    m = S._copy_method(n.hello, memo)
    assert type(m) is MethodType and m.__func__ is Node.hello and m.__self__ is memo.get(id(n)) and m.__self__ is not n
    assert m() == "n"
    x = [n, n.hello]
    y = S.py_deep_copy(x, {})
    assert y[1].__self__ is y[0]


def test_the_walk_on_atomic_values_memo_custom_and_plain_objects():
    for a in (1, 2.5, "s", True, None, b"b", 1j, range(3), int, len, test_the_atomic_types, ..., NotImplemented):
        memo: dict = {}
        assert S.py_deep_copy(a, memo) is a and memo == {}
    v = Val(1)
    S._VALUE_TYPES.discard(Val)
    assert S.py_deep_copy(v, {}) is v and Val in S._VALUE_TYPES and Val not in S._CUSTOM
    assert S.py_deep_copy(v, {}) is v
    # the memo: what it maps is the copy
    n = Node("n")
    there = object()
    assert S.py_deep_copy(n, {id(n): there}) is there
    assert S.py_deep_copy([n], {id(n): n})[0] is n
    # a class that customizes copying: copy.deepcopy, with the memo shared, and its copy memoized
    shared = [1]
    c = Custom([shared])
    memo: dict = {}
    got = S.py_deep_copy([shared, c, c], memo)
    assert got[1].items == ["custom", [1]] and got[1].items[1] is got[0] and got[2] is got[1]
    assert memo.get(id(c)) is got[1] and S._CUSTOM.get(Custom) is True
    # a plain object: a new instance without __init__, every slot and __dict__ entry copied
    S._CUSTOM.pop(Counted, None)
    before = Counted.made
    o = Counted(a=[1], b="s", c=n)
    o.d = o
    y = S.py_deep_copy(o, {})
    assert Counted.made == before + 1 and type(y) is Counted and S._CUSTOM.get(Counted) is False
    assert list(vars(y)) == ["a", "b", "c", "d"] and y.a == [1] and y.a is not o.a and y.b == "s" and y.d is y
    assert y.c is not n and y.c.name == "n"


def test_a_slotted_object_with_an_unset_slot_and_a_dict():
    x = Leaf()
    x.a, x.c = [1], "c"  # "b" never set
    x.extra = (x,)
    y = S.py_deep_copy(x, {})
    assert type(y) is Leaf and y is not x and y.a == [1] and y.a is not x.a and y.c == "c"
    assert not hasattr(y, "b") and y.extra[0] is y and vars(y) == {"extra": (y,)}
    m = Mutable([1])
    z = S.py_deep_copy(m, {})
    assert z == m and z is not m and z.a is not m.a and z.b is None
    fz = Frozen((1, [2]))
    fy = S.py_deep_copy(fz, {})
    assert fy == fz and fy is not fz and fy.a[1] is not fz.a[1]


def test_both_walks_agree_with_copy_deepcopy_on_a_graph():
    shared = [1, 2]
    n = Node("root", items=[shared, shared, (shared,), frozenset({Frozen(1)}), Val(3)], link=None)
    n.link = n
    g = {"n": n, "dq": deque([n, shared], maxlen=3), "m": n.hello, "set": {Frozen(2)}, "c": Custom([shared])}
    for walk in (S.py_deep_copy, S._native.deep_copy if S.native_available() else S.py_deep_copy):
        y = walk(g, {})
        ref = copy.deepcopy(g)
        assert F.py_canonical(y) == F.py_canonical(ref)
        assert F.py_canonical(y["n"]) == F.py_canonical(g["n"]) and F.py_canonical(y["dq"]) == F.py_canonical(g["dq"])
        yn = y["n"]
        assert yn.link is yn and yn.items[0] is yn.items[1] and yn.items[2][0] is yn.items[0]
        assert y["dq"][0] is yn and y["dq"][1] is yn.items[0] and y["dq"].maxlen == 3 and y["m"].__self__ is yn
        assert yn.items[4] is n.items[4] and yn.items[0] is not shared
        assert y["c"].items == ["custom", [1, 2]] and y["c"].items[1] is yn.items[0]


def test_switching_the_walks_and_the_dispatch():
    was = S._impl is not S.py_deep_copy
    try:
        assert S.use_native(False) is False and S._impl is S.py_deep_copy
        x = [Node("n")]
        y = S.deep_copy(x, {})
        assert y[0].name == "n" and y[0] is not x[0]
        memo = {id(x[0]): x[0]}
        assert S.deep_copy(x, memo)[0] is x[0]
        assert S.native_available() is (S._native is not None)
        if S.native_available():
            assert S.use_native(True) is True and S._impl is S._native.deep_copy
            y = S.deep_copy(x, {})
            assert y[0].name == "n" and y[0] is not x[0]
            assert S.deep_copy(x, {id(x[0]): x[0]})[0] is x[0]
    finally:
        S.use_native(was)


def _walk(name: str, seed: int, steps: int):
    from model.cluster import Cluster
    from model.variants import small_scenario, variant

    c = Cluster.from_scenario(small_scenario(variant(name)))
    rng = random.Random(seed)
    for _ in range(steps):
        acts = c.enabled_actions()
        if not acts:
            break
        c.step(rng.choice(acts))
    return c


@pytest.mark.parametrize("native", [False, True])
def test_a_copy_of_a_real_cluster_state_is_its_original_and_independent(native):
    was = S._impl is not S.py_deep_copy
    S.use_native(native)
    try:
        c = _walk("aligned-2pc", 3, 12)
        form = F.py_canonical(c)
        ref = copy.deepcopy(c)
        d = c.copy()
        assert F.py_canonical(d) == form == F.py_canonical(ref)
        assert F.fingerprint_of(d) == F.fingerprint_of(c)
        for _ in range(3):
            acts = d.enabled_actions()
            if not acts:
                break
            d.step(acts[0])
            ref.step(acts[0])
            assert F.py_canonical(d) == F.py_canonical(ref)
        assert F.py_canonical(c) == form  # the original untouched
    finally:
        S.use_native(was)


def test_the_per_class_decision_is_asked_once_and_kept():
    S._CUSTOM.pop(Custom, None)
    S._copy_info(Custom)  # (the C walk's question does not fill the Python walk's cache)
    c = Custom([1])
    assert S.py_deep_copy(c, {}).items == ["custom", 1] and S._CUSTOM.get(Custom) is True
    S._CUSTOM[Custom] = False  # decided once: plain (its fields copied, its __deepcopy__ not called)
    try:
        y = S.py_deep_copy(c, {})
        assert type(y) is Custom and y.items == [1] and y.items is not c.items
    finally:
        S._CUSTOM.pop(Custom)


def test_a_protocol_attribute_without_a_name_customizes_copying():
    import functools

    k = type("K", (), {"__reduce_ex__": functools.partial(print)})
    assert not hasattr(k.__dict__["__reduce_ex__"], "__name__")
    assert S._plain(k) is False


def test_the_c_walk_keeps_its_memo_to_itself():
    """The C walk writes the caller's memo only around a class that customizes copying: a
    deque, a list, a plain object are its own."""
    memo: dict = {}
    y = S._native.deep_copy([deque([[1]], maxlen=2), Node("n", items=[[2]])], memo)
    assert memo == {} and y[0].maxlen == 2 and y[0][0] == [1] and y[1].items == [[2]]
    memo = {}
    S._native.deep_copy([Custom([1])], memo)
    assert memo != {}


def test_deep_copy_dispatches_to_the_walk_in_use():
    was = S._impl is not S.py_deep_copy
    x = [Node("n")]
    try:
        S.use_native(False)
        memo: dict = {}
        S.deep_copy(x, memo)
        assert set(memo) == {id(x), id(x[0]), id(x[0].items)}  # the Python walk's memo
        if S.use_native(True):
            memo = {}
            S.deep_copy(x, memo)
            assert memo == {}  # the C walk's own table
    finally:
        S.use_native(was)


def test_the_environment_chooses_the_walk_at_import(monkeypatch):
    """FLINKSPEC_NATIVE=0 at import: the Python walk; unset: the C walk when built. (The module
    is imported again; its caches start empty again.)"""
    import importlib

    try:
        monkeypatch.setenv("FLINKSPEC_NATIVE", "0")
        importlib.reload(S)
        assert S._impl is S.py_deep_copy
        monkeypatch.setenv("FLINKSPEC_NATIVE", "1")
        importlib.reload(S)
        assert S._impl is (S.py_deep_copy if S._native is None else S._native.deep_copy)
    finally:
        monkeypatch.delenv("FLINKSPEC_NATIVE", raising=False)
        importlib.reload(S)
    assert S._impl is (S.py_deep_copy if S._native is None else S._native.deep_copy)
