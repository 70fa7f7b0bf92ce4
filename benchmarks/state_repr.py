"""Immutable representations of the model's state, measured on the real state shapes.

The question: if a state were an immutable value (a tree of frozen parts sharing what a step
leaves alone), which representation would make a transition cheapest -- building the next
state and its fingerprint -- and a stored state smallest? Measured, not argued.

1. **Real states.** Seeded random walks of several variants (``Cluster.from_scenario`` of
   each variant's small scenario, an action drawn uniformly from ``enabled_actions()``), and
   at each step the state's *view*: ``model.fingerprint.canonical`` of what
   ``Cluster.fingerprint`` hashes (the state; its history is beside it; time dropped unless the
   configuration is time-sensitive), with every fresh identifier replaced by its rank, so
   that two views are equal exactly when their canonical bytes are (checked against
   ``canonical_bytes`` at every step). A view is nested tuples of primitives: the shape a value
   representation must hold.
2. **What a step changes.** The old and new views are diffed into *changes*: a splice of a
   tuple node's children (``kids[start:stop] = items``; a leaf replaced is a splice of one, a
   deque's append or popleft a splice at an end), at a path of child indices from the root.
   Map-like parts (``('dict', (k, v), ...)``) are diffed a second time by key (set or delete
   a key, descend by key) for the representations that hold them as maps.
3. **Representations**, each able to build a value from a view, apply a step's changes
   (a new value sharing every part the changes leave alone), give a fingerprint, and give
   the view back:

   * ``tuples``: plain nested tuples; the fingerprint recomputed from the whole tree, either
     Python's ``hash`` (64 bits) or BLAKE2b (16 bytes) of the tree serialized by ``marshal``
     (format 2: no back-references, type-exact, deterministic for equal trees);
   * ``hashcons``: a frozen ``__slots__`` node holding its children and a 16-byte BLAKE2b
     digest computed at construction from its children's digests (a Merkle tree: a step
     hashes only the nodes on its changed paths), interned by digest so equal parts are one
     object across all states; ``hashcons-nointern`` the same without the intern table, and
     ``hashcons-nointern+pyhash`` with Python's 64-bit ``hash`` in place of BLAKE2b (not
     exact: what the digest's hashing costs, by difference);
   * ``attrs``: a frozen slotted attrs class per (model class, arity) for the model's objects
     and one for containers, updated with ``attrs.evolve``, the same digest cached in a field
     (computed in ``__attrs_post_init__``);
   * ``pyrsistent``: ``PVector`` nodes, ``PMap`` for the map-like parts;
   * ``immutables``: tuples, ``immutables.Map`` (a HAMT in C) for the map-like parts;
     the last two have no cached digest: their fingerprint walks the value (Python's ``hash``,
     or the view rebuilt and hashed);
   * ``mutable graph`` (reference): today's ``Cluster.copy`` (``model.statecopy``) and
     ``Cluster.fingerprint`` on the same states.

4. **Figures, in one run** (CPU time, best of ``repeat``): microseconds per replayed step
   (the step's changes applied, then the fingerprint), split into update and fingerprint;
   bytes per stored state when every state of the walks is kept (``tracemalloc``: the
   memory the representation allocates, structural sharing included; primitives are shared
   with the recorded views and not counted, for every representation alike), also per
   distinct view (a walk revisits states, a search stores each once; an interning
   representation pays nothing for a revisit); for the hash-consed nodes, the nodes a step
   makes and the time of their digests against BLAKE2b alone on the same bytes; the
   explorer's time per state estimated from today's profile with its copy and fingerprint
   share scaled by the ratio measured here on aligned-2pc's states; and the
   correctness checks: each representation gives every recorded view back after replaying the
   changes, and its digests are equal exactly for equal views.

Run ``.venv/bin/python -m benchmarks.state_repr [--quick] [--json]``; ``bench_state_repr``
returns the figures as a dict.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import marshal
import os
import random
import statistics
import sys
import time
import tracemalloc

import attrs

from model.cluster import Cluster
from model.fingerprint import _MARK, _sorted_keys, canonical, canonical_bytes, encode
from model.variants import generate, small_scenario, variant

#: the variants walked by default: the explorer's reference (aligned-2pc) and one of each
#: family of mechanisms (unaligned checkpoints with savepoints, the control plane, the state
#: backends, rescaling, event-time windows)
VARIANTS = ("aligned-2pc", "unaligned-savepoints-2pc", "cp-region-failover", "rocksdb-incremental",
            "rescale-savepoint", "late-window-2pc")
QUICK_VARIANTS = ("aligned-2pc", "cp-region-failover")

#: canonical tags of containers (every other string head of a node names a model class)
CONTAINER_TAGS = frozenset({"dict", "list", "tuple", "set", "frozenset", "deque", "multiset", "ref", "method", "fn"})


# --------------------------------------------------------------------------- recording


def _rank_fresh(form):
    """``form`` with every fresh identifier replaced by its rank among those of its tag (as
    ``model.fingerprint.encode`` ranks them): equal forms <=> equal canonical bytes."""
    found: set = set()

    def collect(f):
        for e in f:
            if type(e) is tuple:
                collect(e)
            elif type(e) is str and e[:1] == "\u27e8" and _MARK.fullmatch(e):
                found.add((e[1], int(e[2:-1])))

    collect(form)
    if not found:
        return form
    ranks: dict = {}
    count: dict = {}
    for tag, v in sorted(found):
        count[tag] = count.get(tag, 0) + 1
        ranks[f"\u27e8{tag}{v:012d}\u27e9"] = f"\u27e8{tag}{count[tag]:012d}\u27e9"

    def rename(f):
        return tuple(rename(e) if type(e) is tuple else ranks.get(e, e) if type(e) is str else e for e in f)
    return rename(form)


def view_of(c: Cluster):
    """The view of ``c`` that ``Cluster.fingerprint`` hashes, as a canonical form with fresh
    identifiers ranked (the scenario's own key, constant along a walk, left out)."""
    obj = c
    drop = not c.config.time_sensitive
    form = _rank_fresh(canonical(obj, drop_time=drop))
    assert encode(form) == canonical_bytes(obj, drop_time=drop), "the ranked view is not the canonical bytes"
    return form


def _eq(a, b) -> bool:
    """Strict equality of canonical forms (``1``, ``True`` and ``1.0`` differ)."""
    if a is b:
        return True
    if type(a) is not type(b) or a != b:
        return False
    return type(a) is not tuple or marshal.dumps(a, 2) == marshal.dumps(b, 2)


def _splice_or_recurse(old: tuple, new: tuple, path: tuple, out: list, keyed: bool) -> None:
    if keyed and old[:1] == ("dict",) and new[:1] == ("dict",):
        om = {e[0]: e[1] for e in old[1:]}
        nm = {e[0]: e[1] for e in new[1:]}
        for k in om:
            if k not in nm:
                out.append(("del", path, k))
        for k, v in nm.items():
            if k in om and _eq(om[k], v):
                continue
            if k in om and type(om[k]) is tuple and type(v) is tuple:
                _splice_or_recurse(om[k], v, path + (Key(k),), out, keyed)
            else:
                out.append(("set", path, k, v))
        return
    n = min(len(old), len(new))
    if len(old) == len(new):
        if n > 3 and _eq(old[0], new[0]) and _eq(old[2:], new[1:-1]):
            # a queue's first element removed and one appended (a deque's popleft and append)
            out.append(("splice", path, n, n, (new[-1],)))
            out.append(("splice", path, 1, 2, ()))
            return
        for i in range(n):
            a, b = old[i], new[i]
            if _eq(a, b):
                continue
            if type(a) is tuple and type(b) is tuple:
                _splice_or_recurse(a, b, path + (i,), out, keyed)
            else:
                out.append(("splice", path, i, i + 1, (b,)))
        return
    p = 0
    while p < n and _eq(old[p], new[p]):
        p += 1
    s = 0
    while s < n - p and _eq(old[-1 - s], new[-1 - s]):
        s += 1
    out.append(("splice", path, p, len(old) - s, new[p:len(new) - s]))


@attrs.frozen
class Key:
    """A step of a path into a map-like part: the entry of key ``k``."""
    k: object


def diff(old: tuple, new: tuple, keyed: bool = False) -> list:
    """The changes that turn view ``old`` into view ``new``: ``("splice", path, start, stop,
    items)``, and with ``keyed`` for map-like parts ``("set", path, key, value)`` and
    ``("del", path, key)``; a path is a tuple of child indices (and ``Key`` steps when
    ``keyed``)."""
    out: list = []
    if not _eq(old, new):
        _splice_or_recurse(old, new, (), out, keyed)
    return out


def trie_of(changes: list) -> dict:
    """The changes grouped by path: ``{"sub": {step: trie}, "ops": [op, ...]}``, so that an
    update rebuilds each node on the changed paths once."""
    root: dict = {"sub": {}, "ops": []}
    for op in changes:
        node = root
        for step in op[1]:
            node = node["sub"].setdefault(step, {"sub": {}, "ops": []})
        node["ops"].append(op)
    return root


@attrs.frozen
class Walk:
    variant: str
    seed: int
    views: tuple  # the view at each state, the initial one first
    tries: tuple  # per step: the index-space changes, grouped (``trie_of``)
    keyed_tries: tuple  # per step: the same with map-like parts changed by key
    changes: tuple  # per step: the index-space changes (for the statistics)
    clusters: tuple  # per state: a copy of the cluster (the mutable graph's reference)


def record_walks(names, steps: int, seed: int, generated: bool = False, keep_clusters: bool = True) -> list[Walk]:
    """Seeded walks of about ``steps`` steps per variant (a walk that reaches a state with no
    enabled action ends there, and the next one starts with the next seed)."""
    walks = []
    for name in names:
        taken = 0
        s = seed
        while taken < steps:
            sc = generate(variant(name), s) if generated else small_scenario(variant(name), s)
            c = Cluster.from_scenario(sc)
            rng = random.Random(s)
            views = [view_of(c)]
            clusters = [c.copy()] if keep_clusters else []
            while taken < steps:
                acts = c.enabled_actions()
                if not acts:
                    break
                c.step(rng.choice(acts))
                views.append(view_of(c))
                if keep_clusters:
                    clusters.append(c.copy())
                taken += 1
            if len(views) > 1:
                ch = [diff(a, b) for a, b in zip(views, views[1:])]
                walks.append(Walk(name + (" (generated)" if generated else ""), s, tuple(views), tuple(trie_of(x) for x in ch),
                                  tuple(trie_of(diff(a, b, keyed=True)) for a, b in zip(views, views[1:])),
                                  tuple(ch), tuple(clusters)))
            s += 1
    return walks


# --------------------------------------------------------------------------- shape statistics


def _nodes(form, depth=0, acc=None):
    """(nodes, leaves, max depth, max fan-out, largest map-like part) of a view."""
    if acc is None:
        acc = [0, 0, 0, 0, 0]
    acc[0] += 1
    acc[2] = max(acc[2], depth)
    acc[3] = max(acc[3], len(form))
    if form[:1] == ("dict",):
        acc[4] = max(acc[4], len(form) - 1)
    for e in form:
        if type(e) is tuple:
            _nodes(e, depth + 1, acc)
        else:
            acc[1] += 1
    return acc


def _rebuilt(changes: list) -> int:
    """Nodes that a path-copying update rebuilds for ``changes``: the distinct nodes on the
    changed paths (the root included)."""
    seen = set()
    for op in changes:
        path = op[1]
        for i in range(len(path) + 1):
            seen.add(path[:i])
    return len(seen)


def _is_obj_head(h) -> bool:
    return type(h) is str and h[:1].isupper() and h not in CONTAINER_TAGS


def _field_pairs_rebuilt(view: tuple, changes: list) -> int:
    """Of the nodes ``_rebuilt`` counts, the ``(field name, value)`` pairs of an object with a
    ``__dict__`` (``Cluster`` and others): a node a record with the fields in slots would not
    have."""
    seen = set()
    for op in changes:
        node, parent = view, None
        for i, step in enumerate(op[1]):
            parent, node = node, node[step]
            if (op[1][:i + 1] not in seen and len(node) == 2 and type(node[0]) is str
                    and _is_obj_head(parent[0])):
                seen.add(op[1][:i + 1])
    return len(seen)


def _cluster_fields_changed(view: tuple, changes: list) -> tuple:
    """(fields of the ``Cluster`` that the changes touch, fields it has): the view is
    ``('tuple', read_later, ('Cluster', (name, value), ...))``."""
    return len({op[1][1] for op in changes if len(op[1]) >= 2 and op[1][0] == 2}), len(view[2]) - 1


def _at(form, path):
    for step in path:
        form = form[step]
    return form


def _refs(form) -> int:
    """Back-references (``('ref', n)``: an object met again in the walk) in a view: the
    mutable graph's aliasing, which a value cannot have."""
    return (form[:1] == ("ref",)) + sum(_refs(e) for e in form if type(e) is tuple)


def _size(form) -> int:
    return sum(_size(e) if type(e) is tuple else 1 for e in form) + 1


def shape_stats(walks: list[Walk]) -> dict:
    shapes = [_nodes(v) for w in walks for v in w.views]
    ops = [len(ch) for w in walks for ch in w.changes]
    rebuilt = [_rebuilt(ch) for w in walks for ch in w.changes]
    new_parts = [sum(_size(x) if type(x) is tuple else 1 for op in ch for x in op[4]) for w in walks for ch in w.changes]
    depths = [len(op[1]) for w in walks for ch in w.changes for op in ch]
    nodes = [s[0] for s in shapes]
    views_bytes = [len(encode(v)) for w in walks for v in w.views]
    refs = [_refs(v) for w in walks for v in w.views]
    ref_changes = [sum(1 for op in ch if _at(v, op[1])[:1] == ("ref",)
                       or any(type(x) is tuple and x[:1] == ("ref",) for x in op[4]))
                   for w in walks for v, ch in zip(w.views, w.changes)]
    pairs = [_field_pairs_rebuilt(v, ch) for w in walks for v, ch in zip(w.views, w.changes)]
    fields = [_cluster_fields_changed(v, ch) for w in walks for v, ch in zip(w.views, w.changes)]

    def q(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else 0
    return {
        "states": len(shapes), "distinct_views": len(set(map(encode, (v for w in walks for v in w.views)))),
        "steps": len(ops),
        "nodes_median": q(nodes, 0.5), "nodes_max": max(nodes), "leaves_median": q([s[1] for s in shapes], 0.5),
        "depth_max": max(s[2] for s in shapes), "fanout_max": max(s[3] for s in shapes),
        "map_entries_max": max(s[4] for s in shapes),
        "view_bytes_median": q(views_bytes, 0.5),
        "changes_per_step_median": q(ops, 0.5), "changes_per_step_p90": q(ops, 0.9), "changes_per_step_max": max(ops),
        "change_depth_median": q(depths, 0.5),
        "nodes_rebuilt_per_step_median": q(rebuilt, 0.5), "nodes_rebuilt_per_step_p90": q(rebuilt, 0.9),
        "nodes_rebuilt_per_step_max": max(rebuilt),
        "new_parts_per_step_median": q(new_parts, 0.5), "new_parts_per_step_p90": q(new_parts, 0.9),
        "refs_per_view_median": q(refs, 0.5), "steps_renumbering_a_ref": sum(1 for r in ref_changes if r),
        "field_pairs_of_rebuilt": round(sum(pairs) / max(1, sum(rebuilt)), 3),
        "cluster_fields_changed_per_step_median": q([f[0] for f in fields], 0.5),
        "cluster_fields_changed_per_step_p90": q([f[0] for f in fields], 0.9),
        "cluster_fields": max(f[1] for f in fields) if fields else 0,
        "rebuilt_fraction_median": round(statistics.median(r / n for r, n in zip(rebuilt, nodes[1:])), 4)
        if rebuilt else 0,
    }


# --------------------------------------------------------------------------- representations


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def _tuple_copy(f):
    return tuple([_tuple_copy(e) if type(e) is tuple else e for e in f])


def _patch(kids: list, trie: dict, apply, build) -> list:
    """``kids`` (a node's children, as a list) with ``trie``'s changes made: descents by
    ``apply``, splices with new children from ``build`` (last first, so that earlier indices
    hold)."""
    for i, sub in trie["sub"].items():
        kids[i] = apply(kids[i], sub)
    ops = trie["ops"]
    if len(ops) == 1:
        op = ops[0]
        kids[op[2]:op[3]] = [build(x) if type(x) is tuple else x for x in op[4]]
    elif ops:
        for op in sorted(ops, key=lambda o: o[2], reverse=True):
            kids[op[2]:op[3]] = [build(x) if type(x) is tuple else x for x in op[4]]
    return kids


class Tuples:
    """Plain nested tuples; ``fingerprint`` recomputes from the whole tree."""
    name = "tuples"
    keyed = False

    def __init__(self, fingerprint: str = "blake2b"):
        self.name = f"tuples+{fingerprint}"
        self.fingerprint = self._hash if fingerprint == "hash" else self._blake
        self.digest_exact = fingerprint != "hash"

    build = staticmethod(_tuple_copy)

    def apply(self, node, trie):
        return tuple(_patch(list(node), trie, self.apply, self.build))

    @staticmethod
    def _hash(v):
        return hash(v)

    @staticmethod
    def _blake(v):
        return _digest(marshal.dumps(v, 2))

    @staticmethod
    def to_form(v):
        return v

    def reset(self):
        pass


_LEAF_CODE: dict = {}


def _leaf_code(x) -> bytes:
    """A leaf's self-delimiting, type-exact encoding (``marshal`` format 2), cached."""
    key = (type(x), x)
    code = _LEAF_CODE.get(key)
    if code is None:
        code = _LEAF_CODE[key] = marshal.dumps(x, 2)
    return code


class Node:
    """A hash-consed node: children (nodes or primitives) and the BLAKE2b digest of their
    codes (a child node's code is ``#`` and its digest; a primitive's, its marshal bytes:
    self-delimiting, so the concatenation is injective and equal digests mean equal trees,
    up to a BLAKE2b collision)."""
    __slots__ = ("kids", "digest")

    def __init__(self, kids: tuple, digest: bytes):
        self.kids = kids
        self.digest = digest


def _node_digest(kids: tuple) -> bytes:
    codes = _LEAF_CODE
    return _digest(b"".join([b"#" + k.digest if type(k) is Node else codes.get((type(k), k)) or _leaf_code(k) for k in kids]))


class HashCons:
    keyed = False

    def __init__(self, intern: bool = True, pyhash: bool = False):
        self.intern = intern
        self.name = ("hashcons" if intern else "hashcons-nointern") + ("+pyhash" if pyhash else "")
        self.table: dict = {}
        self.digest_exact = not pyhash
        if pyhash:
            self.make = self._make_pyhash

    def reset(self):
        self.table = {}

    def make(self, kids: tuple) -> Node:
        d = _node_digest(kids)
        if not self.intern:
            return Node(kids, d)
        n = self.table.get(d)
        if n is None:
            n = self.table[d] = Node(kids, d)
        return n

    def _make_pyhash(self, kids: tuple) -> Node:
        """The node with Python's 64-bit ``hash`` of its children's hashes as its digest
        (not exact: ``1``, ``True`` and ``1.0`` hash alike; a collision in 2**32 states is
        likely): what the digest's hashing costs, by difference."""
        return Node(kids, hash(tuple([k.digest if type(k) is Node else k for k in kids])))

    def build(self, form) -> Node:
        return self.make(tuple([self.build(e) if type(e) is tuple else e for e in form]))

    def apply(self, node: Node, trie) -> Node:
        return self.make(tuple(_patch(list(node.kids), trie, self.apply, self.build)))

    @staticmethod
    def fingerprint(v: Node) -> bytes:
        return v.digest

    def to_form(self, v):
        return tuple([self.to_form(e) if type(e) is Node else e for e in v.kids])


def _attrs_post_init(self):
    object.__setattr__(self, "digest", _node_digest_attrs(self))


def _node_digest_attrs(o) -> bytes:
    return _digest(b"".join([b"#" + k.digest if hasattr(k, "digest") else _leaf_code(k) for k in o.kids_()]))


@attrs.frozen(slots=True, eq=False)
class Seq:
    """A container node (list, dict, tuple, ...) in the attrs representation: its children
    (the tag first) and the digest of them (the hash-consed node's scheme)."""
    kids: tuple
    digest: bytes = attrs.field(init=False, default=b"")

    def kids_(self):
        return self.kids

    __attrs_post_init__ = _attrs_post_init


class _Obj:
    """The base of the attrs representation's model classes: the digest computed when an
    instance is made (``attrs.evolve`` makes one through ``__init__``)."""
    __slots__ = ()
    TAG = ""
    NAMES: tuple = ()

    def kids_(self):
        return (self.TAG,) + tuple([getattr(self, f) for f in self.NAMES])

    __attrs_post_init__ = _attrs_post_init


class Attrs:
    """A frozen slotted attrs class per (model class, arity) -- fields ``f1 ..`` -- and
    ``Seq`` for containers; updated with ``attrs.evolve``; the digest cached in a field."""
    name = "attrs+evolve"
    keyed = False
    digest_exact = True

    def __init__(self):
        self.classes: dict = {}

    def reset(self):
        pass

    def cls(self, tag: str, n: int):
        key = (tag, n)
        c = self.classes.get(key)
        if c is None:
            names = tuple(f"f{i}" for i in range(1, n))
            c = attrs.make_class(
                tag, {**{f: attrs.field() for f in names}, "digest": attrs.field(init=False, default=b"")},
                bases=(_Obj,), frozen=True, slots=True, eq=False)
            c.TAG, c.NAMES = tag, names
            self.classes[key] = c
        return c

    @staticmethod
    def _is_obj(form) -> bool:
        h = form[0] if form else None
        return type(h) is str and h[:1].isupper() and h not in CONTAINER_TAGS

    def make(self, kids: tuple):
        if self._is_obj(kids):
            return self.cls(kids[0], len(kids))(*kids[1:])
        return Seq(kids)

    def build(self, form):
        return self.make(tuple([self.build(e) if type(e) is tuple else e for e in form]))

    def apply(self, node, trie):
        if type(node) is not Seq:
            ops = trie["ops"]
            if all(op[3] - op[2] == 1 == len(op[4]) and op[2] >= 1 for op in ops) and 0 not in trie["sub"]:
                changes = {f"f{i}": self.apply(getattr(node, f"f{i}"), sub) for i, sub in trie["sub"].items()}
                for op in ops:
                    x = op[4][0]
                    changes[f"f{op[2]}"] = self.build(x) if type(x) is tuple else x
                return attrs.evolve(node, **changes)
            return self.make(tuple(_patch(list(node.kids_()), trie, self.apply, self.build)))
        return attrs.evolve(node, kids=tuple(_patch(list(node.kids), trie, self.apply, self.build)))

    @staticmethod
    def fingerprint(v) -> bytes:
        return v.digest

    def to_form(self, v):
        return tuple([self.to_form(e) if hasattr(e, "digest") else e for e in v.kids_()])


class MapRepr:
    """Sequences as ``seq`` nodes, map-like parts as persistent maps (``pyrsistent`` PVector and
    PMap, or tuples and ``immutables.Map``); no cached digest: the fingerprint walks the value
    (``hash``) or rebuilds the view and hashes it (``blake2b``)."""
    keyed = True

    def __init__(self, lib: str, fingerprint: str = "hash"):
        self.lib = lib
        self.name = f"{lib}+{fingerprint}"
        self.digest_exact = fingerprint != "hash"
        if lib == "pyrsistent":
            import pyrsistent  # optional (the bench extra): only this prototype needs it

            self.seq_type = type(pyrsistent.pvector())
            self.map_type = type(pyrsistent.pmap())
            self.seq = pyrsistent.pvector
            self.map = pyrsistent.pmap
            self.delete = "remove"
        else:
            import immutables  # optional (the bench extra): only this prototype needs it

            self.seq_type = tuple
            self.map_type = immutables.Map
            self.seq = tuple
            self.map = immutables.Map
            self.delete = "delete"
        self.fingerprint = self._hash if fingerprint == "hash" else self._blake

    def reset(self):
        pass

    def build(self, form):
        if form[:1] == ("dict",):
            return self.map({k: self.build(v) if type(v) is tuple else v for k, v in form[1:]})
        return self.seq([self.build(e) if type(e) is tuple else e for e in form])

    def apply(self, node, trie):
        if type(node) is self.map_type:
            m = node
            for step, sub in trie["sub"].items():
                m = m.set(step.k, self.apply(m[step.k], sub))
            for op in trie["ops"]:
                if op[0] == "del":
                    m = getattr(m, self.delete)(op[2])
                else:
                    v = op[3]
                    m = m.set(op[2], self.build(v) if type(v) is tuple else v)
            return m
        if self.seq_type is not tuple and not trie["ops"]:
            v = node
            for i, sub in trie["sub"].items():
                v = v.set(i, self.apply(v[i], sub))
            return v
        return self.seq(_patch(list(node), trie, self.apply, self.build))

    def to_form(self, v):
        if type(v) is self.map_type:
            entries = {k: self.to_form(x) if type(x) in (self.seq_type, self.map_type) else x for k, x in v.items()}
            return ("dict",) + tuple((k, entries[k]) for k in _sorted_keys(list(entries)))
        return tuple([self.to_form(e) if type(e) in (self.seq_type, self.map_type) else e for e in v])

    @staticmethod
    def _hash(v):
        return hash(v)

    def _blake(self, v):
        return _digest(marshal.dumps(self.to_form(v), 2))


def representations(with_maps: bool = True) -> list:
    reps = [Tuples("hash"), Tuples("blake2b"), HashCons(True), HashCons(False), HashCons(False, pyhash=True), Attrs()]
    if with_maps:
        for lib in ("pyrsistent", "immutables"):
            reps += [MapRepr(lib, "hash"), MapRepr(lib, "blake2b")]
    return reps


# --------------------------------------------------------------------------- measuring


def replay(rep, walk: Walk) -> list:
    """Every state of ``walk`` as values of ``rep``: the first built from its view, each next
    one by applying the step's changes to the one before."""
    tries = walk.keyed_tries if rep.keyed else walk.tries
    v = rep.build(walk.views[0])
    out = [v]
    for t in tries:
        v = rep.apply(v, t)
        out.append(v)
    return out


def check(rep, walks: list[Walk]) -> dict:
    """The correctness of ``rep`` on the recorded walks: every replayed value gives its view
    back, and (for an exact digest) equal digests exactly for equal views. Raises
    AssertionError on a failure; returns the counts."""
    truth: dict = {}
    by_digest: dict = {}
    collisions = splits = 0
    for w in walks:
        for i, v in enumerate(replay(rep, w)):
            form = rep.to_form(v)
            assert _eq(form, w.views[i]), f"{rep.name}: {w.variant} seed {w.seed} state {i} does not round-trip"
            key = encode(w.views[i])
            fp = rep.fingerprint(v)
            if truth.setdefault(key, fp) != fp:
                splits += 1  # one view, two fingerprints
            if by_digest.setdefault(fp, key) != key:
                collisions += 1  # one fingerprint, two views
    if rep.digest_exact:
        assert splits == 0, f"{rep.name}: a view has two fingerprints"
        assert collisions == 0, f"{rep.name}: two views share a fingerprint"
    return {"distinct_views": len(truth), "fingerprint_splits": splits, "fingerprint_collisions": collisions}


def _cpu(fn, repeat: int) -> float:
    """The best CPU seconds of ``repeat`` calls of ``fn``, the cyclic garbage collector off (as
    every search runs)."""
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
    finally:
        if enabled:
            gc.enable()
    return best


def time_rep(rep, walks: list[Walk], repeat: int) -> dict:
    """CPU microseconds per step: applying the step's changes (``update_us``) and the new
    value's fingerprint (``fingerprint_us``)."""
    steps = sum(len(w.tries) for w in walks)
    firsts = []
    for w in walks:
        rep.reset()
        firsts.append(rep.build(w.views[0]))
    values: list = []

    def updates():
        values.clear()
        for w, v in zip(walks, firsts):
            apply = rep.apply
            for t in (w.keyed_tries if rep.keyed else w.tries):
                v = apply(v, t)
                values.append(v)

    def fingerprints():
        fp = rep.fingerprint
        for v in values:
            fp(v)

    upd = _cpu(updates, repeat)
    fps = _cpu(fingerprints, repeat)
    return {"update_us": round(upd / steps * 1e6, 2), "fingerprint_us": round(fps / steps * 1e6, 2),
            "step_us": round((upd + fps) / steps * 1e6, 2)}


def _drain_freelists() -> list:
    """Objects that take every free tuple, list and dict CPython keeps for reuse: an object
    taken from such a free list is not a new allocation, so ``tracemalloc`` would not count
    it (after a timing loop has freed thousands of tuples, most of a representation's tuples
    would be missed). Keep the result alive while measuring."""
    return [tuple(range(n)) for n in range(1, 21) for _ in range(2100)] + [[] for _ in range(100)] + \
        [{} for _ in range(100)]


def memory_rep(rep, walks: list[Walk]) -> dict:
    """Bytes allocated per state when every state of the walks is kept (the first state's
    full tree included; interning tables included)."""
    rep.reset()
    hold = _drain_freelists()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = [replay(rep, w) for w in walks]
    total = tracemalloc.get_traced_memory()[0] - base
    first = 0
    tracemalloc.stop()
    del hold
    rep.reset()
    hold = _drain_freelists()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    one = rep.build(walks[0].views[0])
    first = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del one, hold
    states = sum(len(k) for k in kept)
    distinct = len({encode(v) for w in walks for v in w.views})
    del kept
    rep.reset()
    # a walk revisits states; a search stores each distinct state once: with interning a
    # revisit costs nothing, so its cost per distinct view is what a search's store would pay
    return {"bytes_per_state": round(total / states), "bytes_per_distinct_view": round(total / distinct),
            "bytes_first_state": first}


def node_costs(walks: list[Walk], repeat: int) -> dict:
    """Where a hash-consed step's time goes: the nodes it makes, and per step the CPU
    microseconds of their digests (the children's codes joined and hashed) and of BLAKE2b
    alone on the same bytes (what a compiled node constructor could not save)."""
    made: list = []

    class Recording(HashCons):
        on = False

        def make(self, kids):
            if self.on:
                made.append(kids)
            return HashCons.make(self, kids)

    rep = Recording()
    for w in walks:
        rep.on = False
        v = rep.build(w.views[0])  # a first state is not a step
        rep.on = True
        for t in w.tries:
            v = rep.apply(v, t)
    steps = sum(len(w.tries) for w in walks)
    kids_list = made
    joined = [b"".join([b"#" + k.digest if type(k) is Node else _leaf_code(k) for k in kids]) for kids in kids_list]
    digest_s = _cpu(lambda: [_node_digest(k) for k in kids_list], repeat)
    blake_s = _cpu(lambda: [_digest(b) for b in joined], repeat)
    return {"nodes_made_per_step": round(len(kids_list) / steps, 1),
            "digest_us_per_step": round(digest_s / steps * 1e6, 2),
            "blake2b_only_us_per_step": round(blake_s / steps * 1e6, 2),
            "digest_us_per_node": round(digest_s / max(1, len(kids_list)) * 1e6, 3),
            "mean_bytes_hashed_per_node": round(sum(map(len, joined)) / max(1, len(joined)), 1)}


def reference(walks: list[Walk], repeat: int) -> dict:
    """Today's mutable graph on the same states: ``Cluster.copy`` and ``Cluster.fingerprint``
    per state (CPU microseconds), and bytes per state when a copy of every state is kept."""
    clusters = [c for w in walks for c in w.clusters]
    for c in clusters:
        c.fingerprint()  # the scenario key and the value caches, as in a search
    copy_s = _cpu(lambda: [c.copy() for c in clusters], repeat)
    fp_s = _cpu(lambda: [c.fingerprint() for c in clusters], repeat)
    hold = _drain_freelists()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = [c.copy() for c in clusters]
    total = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    n = len(kept)
    del kept, hold
    return {"copy_us": round(copy_s / n * 1e6, 2), "fingerprint_us": round(fp_s / n * 1e6, 2),
            "step_us": round((copy_s + fp_s) / n * 1e6, 2), "bytes_per_state": round(total / n)}


#: today's per-state profile of the search on aligned-2pc --small (share of the ~280 CPU
#: microseconds of an explored state spent copying, and computing the canonical form and hash)
TODAY_US_PER_STATE = 280.0
TODAY_COPY_FP_SHARE = 0.14 + 0.25


def _weighted(per: dict, by_variant: dict) -> dict:
    """The per-step CPU figures over all walks, from the per-variant ones (weighted by steps)
    and the bytes per state (weighted by states)."""
    steps = {n: sum(len(w.tries) for w in ws) for n, ws in by_variant.items()}
    states = {n: sum(len(w.views) for w in ws) for n, ws in by_variant.items()}
    out = {}
    for k in per[next(iter(by_variant))]:
        if k.endswith("_us"):
            out[k] = round(sum(per[n][k] * steps[n] for n in by_variant) / sum(steps.values()), 2)
        elif k in ("bytes_per_state", "bytes_per_distinct_view"):
            out[k] = round(sum(per[n][k] * states[n] for n in by_variant) / sum(states.values()))
    return out


def bench_state_repr(quick: bool = False, steps: int | None = None, seed: int = 0, repeat: int | None = None,
                     names=None, with_maps: bool = True, generated: bool = True) -> dict:
    """The figures (see the module docstring) as a dict."""
    names = tuple(names or (QUICK_VARIANTS if quick else VARIANTS))
    steps = steps or (40 if quick else 400)
    repeat = repeat or (1 if quick else 3)
    walks = record_walks(names, steps, seed)
    if generated and not quick:
        walks += record_walks(("aligned-2pc",), steps, seed, generated=True)
    out: dict = {"variants": list(names) + (["aligned-2pc (generated)"] if generated and not quick else []),
                 "steps_per_variant": steps, "seed": seed, "repeat": repeat,
                 "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
                 "shape": {}, "representations": {}}
    for name in out["variants"]:
        out["shape"][name] = shape_stats([w for w in walks if w.variant == name])
    out["shape"]["all"] = shape_stats(walks)
    by_variant = {name: [w for w in walks if w.variant == name] for name in out["variants"]}
    out["mutable_graph"] = {name: reference(ws, repeat) for name, ws in by_variant.items()}
    out["mutable_graph"]["all"] = _weighted(out["mutable_graph"], by_variant)
    out["hashcons_nodes"] = {name: node_costs(ws, repeat) for name, ws in by_variant.items()}
    for rep in representations(with_maps):
        r = check(rep, walks)
        per = {name: {**time_rep(rep, ws, repeat), **memory_rep(rep, ws)} for name, ws in by_variant.items()}
        per["all"] = {**_weighted(per, by_variant), **memory_rep(rep, walks)}
        for name, f in per.items():
            ref = out["mutable_graph"][name]
            f["step_speedup_vs_mutable_graph"] = round(ref["step_us"] / f["step_us"], 2)
            f["memory_ratio_vs_mutable_graph"] = round(ref["bytes_per_state"] / f["bytes_per_state"], 1)
        r["by_variant"] = per
        # the explorer on aligned-2pc --small: today's ~280 us per state with its copy +
        # fingerprint share scaled by the ratio measured here on aligned-2pc's states (the rest
        # -- step, invariants, enabled actions, the search's own work -- unchanged)
        if "aligned-2pc" in per:
            ratio = per["aligned-2pc"]["step_us"] / out["mutable_graph"]["aligned-2pc"]["step_us"]
            est = TODAY_US_PER_STATE * (1 - TODAY_COPY_FP_SHARE) + TODAY_US_PER_STATE * TODAY_COPY_FP_SHARE * ratio
            r["estimated_explorer_us_per_state"] = round(est, 1)
            r["estimated_states_per_cpu_s"] = round(1e6 / est)
        out["representations"][rep.name] = r
    out["estimated_states_per_cpu_s_if_copy_and_fingerprint_were_free"] = round(
        1e6 / (TODAY_US_PER_STATE * (1 - TODAY_COPY_FP_SHARE)))
    return out


def _table(fig: dict) -> str:
    lines = [f"variants: {', '.join(fig['variants'])}; {fig['steps_per_variant']} steps each; "
             f"repeat {fig['repeat']}; load average {fig['load_average']}"]
    for name, sh in fig["shape"].items():
        lines.append(f"shape {name}: " + ", ".join(f"{k} {v}" for k, v in sh.items()))
    for name, n in fig["hashcons_nodes"].items():
        lines.append(f"hashcons nodes {name}: " + ", ".join(f"{k} {v}" for k, v in n.items()))
    groups = list(fig["mutable_graph"])
    head = f"{'representation':26} {'group':24} {'update':>8} {'fingerpr':>8} {'step us':>8} {'B/state':>8} " \
           f"{'x speed':>7} {'x mem':>6} {'B/distinct':>10}"
    lines.append(head)
    for g in groups:
        m = fig["mutable_graph"][g]
        lines.append(f"{'mutable graph (today)':26} {g:24} {m['copy_us']:>8} {m['fingerprint_us']:>8} "
                     f"{m['step_us']:>8} {m['bytes_per_state']:>8}")
    for name, r in fig["representations"].items():
        for g in groups:
            f = r["by_variant"][g]
            lines.append(f"{name:26} {g:24} {f['update_us']:>8} {f['fingerprint_us']:>8} {f['step_us']:>8} "
                         f"{f['bytes_per_state']:>8} {f['step_speedup_vs_mutable_graph']:>7} "
                         f"{f['memory_ratio_vs_mutable_graph']:>6} {f.get('bytes_per_distinct_view', ''):>10}")
        lines.append(f"{name:26} distinct views {r['distinct_views']}, fingerprint collisions "
                     f"{r['fingerprint_collisions']}, splits {r['fingerprint_splits']}; explorer estimate "
                     f"{r.get('estimated_explorer_us_per_state')} us/state = {r.get('estimated_states_per_cpu_s')} states/s")
    lines.append("explorer with copy + fingerprint free: "
                 f"{fig['estimated_states_per_cpu_s_if_copy_and_fingerprint_were_free']} states/s")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.state_repr", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="two variants, 40 steps each, one timing (a smoke run)")
    p.add_argument("--steps", type=int, default=None, help="steps recorded per variant (default 400; 40 with --quick)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first walk (default 0)")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = p.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        print("--steps must be >= 1", file=sys.stderr)
        return 2
    fig = bench_state_repr(quick=args.quick, steps=args.steps, seed=args.seed)
    print(json.dumps(fig) if args.json else _table(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
