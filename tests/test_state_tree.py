"""A state is a tree: no mutable part of it is held by two owners (a value representation
cannot hold one object in two places; each such link is an index or a name). Walked over
every reachable object of seven variants' walks: the tasks (held once, in ``Cluster.tasks``),
a two-phase-commit sink's transactions (held by the external system, named by id in the
sink), the network, its channel arrays and each channel's queue (held by ``Cluster.net``; the
record writers and the task's output name channels by id), the outbox, the external system
and the late and skipped-window lists (held by the cluster; a task's chain is handed them with
each call, ``TaskContext``), a chain's nodes (held once, by their predecessor; a task's
``nodes`` are found by walking the chain), a keyed backend's operators (handed to it per call)
and a window operator's assigner (asked through the operator, no bound method kept)."""

from __future__ import annotations

import random
from collections import deque
from types import BuiltinMethodType, FunctionType, MethodType, ModuleType

import pytest

from model import fingerprint as fp
from model.channels import Channels
from model.sinks import Transaction
from model.streamtask import StreamTask
from model.variants import small_scenario, variant
from properties.engines import Run

VARIANTS = ("aligned-2pc", "unaligned-savepoints-2pc", "cp-region-failover", "network-credit-aligned",
            "rocksdb-incremental", "late-window-2pc", "rescale-savepoint")


def owners(state) -> dict:
    """id of each mutable object reachable from ``state`` -> the paths it is reached by (the
    walk of ``model.fingerprint``: frozen values are not followed, a bound method's object is)."""
    seen: dict = {}

    def go(x, path):
        t = type(x)
        if t in fp._PRIMITIVE or t in fp._FRESH or t is FunctionType:
            return
        if t is tuple or t is frozenset:
            for i, e in enumerate(x):
                go(e, path + (i,))
            return
        if fp._VALUE.get(t, None) is None:
            fp._VALUE[t] = fp._is_value_type(t)
        if fp._VALUE[t]:
            return
        if t is MethodType or (t is BuiltinMethodType and x.__self__ is not None
                               and type(x.__self__) is not ModuleType):
            go(x.__self__, path + ("__self__",))
            return
        if t is BuiltinMethodType:
            return
        paths = seen.setdefault(id(x), (x, []))[1]
        paths.append(path)
        if len(paths) > 1:
            return
        if t is list or t is deque:
            for j, e in enumerate(x):
                go(e, path + (j,))
        elif t is dict:
            for k, e in x.items():
                go(k, path + ("key",))
                go(e, path + (repr(k),))
        elif t is set:
            for e in x:
                go(e, path + ("elem",))
        else:
            names, skip, _bags = fp._fields(t, False)
            for n in names:
                go(getattr(x, n, None), path + (n,))
            for n, v in (getattr(x, "__dict__", None) or {}).items():
                if n not in skip:
                    go(v, path + (n,))

    go(state, ())
    return seen


def _shared(state, kinds) -> list:
    return [(type(x).__name__, paths[:2]) for x, paths in owners(state).values()
            if len(paths) > 1 and (isinstance(x, kinds) or any(x is a for a in _arrays(state))
                                   or any(x is q for q in _queues(state))
                                   or x is state.net or x is state.outbox)]


def _arrays(state) -> list:
    net = state.net
    return [getattr(net, n) for n in Channels.__slots__] if isinstance(net, Channels) else []


def _queues(state) -> list:
    """The channels' element queues (held by the network, named by id in the record writers and
    the task's output, which are handed ``Channels.queues`` with each call)."""
    net = state.net
    return list(net.queues) if isinstance(net, Channels) else []


def held_twice(state) -> list:
    """Every mutable part reached by two paths: (its type's name, the first two paths)."""
    return [(type(x).__name__, paths[:2]) for x, paths in owners(state).values() if len(paths) > 1]


@pytest.mark.parametrize("name", VARIANTS)
def test_no_part_of_a_state_has_two_owners(name):
    for seed in range(2):
        run = Run(small_scenario(variant(name), seed))
        rng = random.Random(seed)
        assert held_twice(run.cluster) == []
        for _ in range(40):
            acts = run.enabled_actions()
            if not acts:
                break
            run.step(rng.choice(acts))
            assert held_twice(run.cluster) == [], (name, seed, run.cluster.trace)


def test_the_walk_finds_an_operators_state_a_side_list_or_the_external_system_held_twice():
    """The check has teeth on what the chain once shared: an operator's state held by its task
    and by a list of the task's operators, the cluster's late list held by a keyed operator, the
    external system held by a sink."""
    run = Run(small_scenario(variant("late-window-2pc"), 0))
    c = run.cluster
    task = next(t for t in c.tasks if t.plan.keyed)
    c.__dict__["operators_again"] = list(task.keyed_operators.values())
    c.__dict__["late_again"] = c.late
    c.__dict__["external_again"] = c.external
    kinds = {k for k, _ in held_twice(c)}
    assert {type(c.__dict__["operators_again"][0]).__name__, "list", "ExternalSystem"} <= kinds


def test_the_walk_finds_an_object_held_twice():
    """The check has teeth: a task held a second time (as ``source_tasks`` once was) is found."""
    run = Run(small_scenario(variant("aligned-2pc"), 0))
    c = run.cluster
    c.__dict__["held_again"] = [c.tasks[0]]
    assert ("StreamTask", [("tasks", 0), ("held_again", 0)]) in _shared(c, (StreamTask,))
    c.__dict__["prio"] = c.net.prio  # a channel array held beside the network, as the cluster once did
    assert ("list", [("net", "prio"), ("prio",)]) in _shared(c, (StreamTask,))
    c.__dict__["out"] = [c.net.queues[0]]  # a channel's queue held by a writer, as the writers once did
    assert ("deque", [("net", "queues", 0), ("out", 0)]) in _shared(c, (StreamTask,))
    c.__dict__["link"] = (c.net, c.outbox)  # the network and the outbox held by a task, as tasks once did
    assert {("CreditBasedChannels" if type(c.net).__name__ != "Channels" else "Channels", (("net",), ("link", 0))),
            ("list", (("outbox",), ("link", 1)))} <= {(k, tuple(p)) for k, p in _shared(c, (StreamTask,))}
