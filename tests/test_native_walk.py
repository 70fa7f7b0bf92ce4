"""The C walks (``model._native``) are the Python walks, faster: on the states of every variant
and on hand-made object graphs that reach every case of the walks, ``canonical`` gives the
form ``py_canonical`` gives, ``canonical_bytes`` the bytes ``py_canonical_bytes`` gives (the
form, encoded), and ``deep_copy`` gives a copy that ``py_deep_copy`` would (same canonical form,
same sharing, independent of its original)."""

from __future__ import annotations

import copy
import random
from collections import deque

import attrs
import pytest

from model import fingerprint as F
from model import statecopy as S
from model.cluster import Cluster
from model.events import value
from model.rpc import AllocationID, ExecutionAttemptID
from model.variants import generate, small_scenario, variant, variant_names


def test_the_c_walks_are_built():
    """`pip install -e .` (what `make test` and `make check` run) compiles model/_native.c; the
    explorer's speed depends on it, so a checkout where it is missing is reported here."""
    assert S.native_available(), "model._native is not built: run `pip install -e .` (needs gcc and Python.h)"
    assert F._native is S._native


@pytest.fixture
def native():
    """Both modules on the C walks for the test, restored afterwards."""
    was_f = F._impl is not F.py_canonical
    was_s = S._impl is not S.py_deep_copy
    assert F.use_native(True) and S.use_native(True)
    yield
    F.use_native(was_f)
    S.use_native(was_s)


def _states(name: str, seed: int, n: int):
    """States of a seeded walk of ``name`` (its small scenario for seed 0, else a generated one)."""
    v = variant(name)
    c = Cluster.from_scenario(small_scenario(v) if seed == 0 else generate(v, seed))
    rng = random.Random(seed)
    yield c
    for _ in range(n):
        acts = c.enabled_actions()
        if not acts:
            return
        c.step(rng.choice(acts))
        yield c


@pytest.mark.parametrize("name", variant_names())
def test_the_c_walks_agree_with_the_python_walks_on_every_variant(name, native):
    """On walks of every variant: the C canonical form and bytes are the Python ones (with time
    kept and dropped); a C copy and a Python copy have the original's form; stepping a C copy leaves the
    original's form as it was."""
    checked = 0
    for seed in range(12):
        if seed >= 2 and checked >= 10:
            break  # (a variant whose runs end after a few steps -- an application cluster's -- takes more seeds)
        for c in _states(name, seed, 20):  # 20 steps of the small scenario, 20 of a generated one
            for drop in (False, True):
                assert F._native.canonical(c, drop) == F.py_canonical(c, drop), (name, seed, c.now, drop)
                assert F._native.canonical_bytes(c, drop) == F.py_canonical_bytes(c, drop), (name, seed, c.now, drop)
            dt = not c.config.time_sensitive
            form = F.py_canonical(c, dt)
            S.use_native(True)
            fast = c.copy()
            S.use_native(False)
            slow = c.copy()
            S.use_native(True)
            assert F.py_canonical(fast, dt) == form == F.py_canonical(slow, dt)
            acts = fast.enabled_actions()
            if acts:
                fast.step(acts[0])
                assert F.py_canonical(c, dt) == form, f"{name}: stepping a C copy changed its original"
            checked += 1
    assert checked >= 10


# -- every case of the walks, on hand-made graphs ----------------------------------------------

@F.beside_state
class Beside:
    """Kept beside the state: one form, whatever it holds."""

    __slots__ = ("anything",)

    def __init__(self):
        self.anything = object()


class Node:
    """A mutable slotted object (fields, one beside the state, one multiset)."""

    __slots__ = ("name", "children", "bag", "cache", "link")
    FINGERPRINT_MULTISET = ("bag",)

    def __init__(self, name, children=(), bag=(), link=None):
        self.name = name
        self.children = list(children)
        self.bag = list(bag)
        self.cache = Beside()
        self.link = link

    def hello(self):
        return self.name


class Plain:
    """An object with a ``__dict__``."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


@value
@attrs.frozen(slots=True)
class Val:
    a: int
    b: tuple


class Custom:
    """Customizes copying: the walks hand it to ``copy.deepcopy``."""

    def __init__(self, items):
        self.items = items

    def __deepcopy__(self, memo):
        return Custom(copy.deepcopy(self.items, memo))


def _graph():
    shared = [1, 2]
    leaf = Node("leaf", bag=[Val(2, ()), Val(1, (3,))])
    root = Node("root", children=[leaf, leaf], bag=[3, 1, 2], link=shared)
    leaf.link = root  # a cycle
    p = Plain(z=1, a=shared, m=root.hello, s={3, 1}, fs=frozenset({"b", "a"}))
    return {
        "root": root,
        "plain": p,
        "dq": deque([Val(1, ("x",)), 2], maxlen=5),
        "mixed set": {1, "a", (2, 3)},
        "mixed keys": {1: "x", "k": [1], (1, 2): None, 2.5: shared},
        "ids": [AllocationID(7), AllocationID(3), {AllocationID(9): AllocationID(7)}],
        "fn": [len, _graph, Node.hello],
        "custom": Custom([shared, 1]),
        "tuples": ((), (1, "a"), (shared, 2), frozenset({(1, 2)})),
        "values": (Val(5, (shared_value := Val(6, ())),), shared_value),
        "empty": ({}, [], set(), deque()),
    }


@pytest.mark.parametrize("drop", [False, True])
def test_every_case_of_the_canonical_walk(native, drop):
    g = _graph()
    # a builtin method bound to an object (the model holds none, so the copy walk is not asked
    # to copy one): named with its owner, and a back-reference when met again
    append = g["root"].link.append
    g["builtins"] = [append, append, g["root"].link, [].append, len]
    assert F._native.canonical(g, drop) == F.py_canonical(g, drop)
    assert F._native.canonical_bytes(g, drop) == F.py_canonical_bytes(g, drop)
    assert F.fingerprint_of(g, drop) == (F.use_native(False), F.fingerprint_of(g, drop))[1]


def test_every_case_of_the_copy_walk(native):
    g = _graph()
    fast = S._native.deep_copy(g, {})
    slow = S.py_deep_copy(g, {})
    assert F.py_canonical(fast) == F.py_canonical(slow) == F.py_canonical(g)
    # the same sharing: met twice, copied once; values and atomic elements kept; a cycle kept
    root = fast["root"]
    assert root.children[0] is root.children[1] and root.children[0].link is root
    assert root.link is fast["plain"].a and root.link is not g["root"].link
    assert fast["values"][1] is g["values"][1] and fast["dq"][0] is g["dq"][0]
    assert fast["dq"].maxlen == 5
    assert fast["plain"].m.__self__ is root and fast["plain"].m() == "root"
    assert fast["tuples"][1] is g["tuples"][1] and fast["tuples"][2] is not g["tuples"][2]
    assert fast["custom"].items[0] is root.link  # copy.deepcopy shares the memo
    # independent of its original
    root.children[0].bag.append(9)
    fast["mixed keys"][2.5].append(3)
    assert F.py_canonical(g) == F.py_canonical(slow)


def test_a_memo_entry_is_kept_as_the_copy(native):
    """What the caller pre-maps (``Cluster.copy`` shares the ExecutionGraph so) is used as is."""
    shared = Node("static")
    x = [shared, Node("n", link=shared)]
    y = S._native.deep_copy(x, {id(shared): shared})
    assert y[0] is shared and y[1].link is shared and y[1] is not x[1]


def test_switching_the_walks():
    before = F._impl is not F.py_canonical, S._impl is not S.py_deep_copy
    try:
        assert F.use_native(False) is False and F._impl is F.py_canonical
        assert F._bytes_impl is F.py_canonical_bytes
        assert S.use_native(False) is False and S._impl is S.py_deep_copy
        assert F.use_native(True) is True and S.use_native(True) is True
        assert F._bytes_impl is F._native.canonical_bytes
    finally:
        F.use_native(before[0])
        S.use_native(before[1])


def test_the_fingerprint_ranks_fresh_ids():
    """The fingerprint hashes the canonical bytes with each fresh identifier replaced by its rank:
    renaming the live ids in order keeps it, changing their order or their equalities does not."""
    a, e = AllocationID, ExecutionAttemptID
    fp = F.fingerprint_of
    assert fp({a(9): a(12), "x": [e(40)]}) == fp({a(1): a(2), "x": [e(7)]})
    assert fp((a(1), a(2))) != fp((a(2), a(1)))
    assert fp((a(3), a(3))) != fp((a(3), a(4)))
    assert fp([a(5)]) != fp([e(5)])  # the tag counts


@pytest.mark.parametrize("walk", ["python", "c"])
def test_the_canonical_bytes_tell_apart_what_the_forms_tell_apart(walk):
    """The encoding is injective: forms that differ (in a type, a length, a nesting, a value) give
    different bytes -- also where ``==`` equates them (``1``, ``1.0``, ``True``) -- and a fresh
    identifier's rank is written in its 8-byte slot, not its value."""
    was = F._impl is not F.py_canonical
    F.use_native(walk == "c")
    try:
        distinct = [None, True, False, 0, 1, -1, 1.0, 2 ** 63, -(2 ** 63) - 1, 2 ** 63 - 1, 300, -300, "", "1",
                    "a", "ab", b"a", (), (1,), ((),), (1, 2), ((1,), 2), (1, (2,)), ("a", "b"), ("ab",),
                    "\u27e8A000000000007\u27e9", "\u27e8A00000000007\u27e9", "\ud800", [1], [[1]], {1: 2}, {1},
                    frozenset({1})]
        encoded = [F.canonical_bytes(x) for x in distinct]
        assert len(set(encoded)) == len(distinct)
        assert F.canonical_bytes(AllocationID(7)) == F.canonical_bytes("\u27e8A000000000007\u27e9") == \
            b"@A" + (1).to_bytes(8, "little")
        assert F.encode(F.canonical([AllocationID(9), AllocationID(4)])) == F.canonical_bytes([AllocationID(9), AllocationID(4)])
    finally:
        F.use_native(was)
