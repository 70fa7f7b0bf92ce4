"""``model.clusterentrypoint`` call by call: the TaskSlotTable, the SlotManager and the
ClusterEntrypoint's whole state (every TaskExecutor's slots and tasks, the SlotManager's
table and requirements, every job's runner, the fresh ids, the events) right after each call.

session-cluster: one TaskExecutor (worker 0) of two slots, one-task jobs;
session-cluster-contended: the same with one slot; application-cluster: a job of two tasks
(two execution slot sharing groups) on one-slot workers the ActiveResourceManager requests."""

from __future__ import annotations

from model import clusterentrypoint as ce
from model.cluster import Cluster
from model.clusterentrypoint import (ACTIVE, ALLOCATED, CANCELING, RELEASING, RUNNING, SlotManager, TaskSlotTable,
                                     needed_pending_workers)
from model.variants import small_scenario, variant


def table(t: TaskSlotTable) -> tuple:
    """The table's slots and tasks as they are (a wrong type is a difference, not an error here)."""
    return (t.slots, t.tasks) if isinstance(t, TaskSlotTable) else t


def state(c) -> dict:
    """The entrypoint's whole state; each part as it is, so that a wrong value fails the comparison."""
    d = c.deployment
    workers = {w: table(t) for w, t in d.workers.items()} if isinstance(d.workers, dict) else d.workers
    return {
        "workers": workers,
        "sm": (d.slot_manager.slots, d.slot_manager.requirements),
        "jobs": [(r.index, r.status, r.attempt, r.tasks, r.pool, r.task_slot) for r in d.jobs],
        "ids": (d.ids.next_allocation, d.ids.next_worker),
        "shut_down": d.dispatcher.shut_down,
    }


def cluster(name: str) -> Cluster:
    return Cluster.from_scenario(small_scenario(variant(name)))


def two_jobs_deployed(name: str):
    """``(cluster, deployment, events so far)`` of ``name``'s deployment with two jobs submitted
    and one step's work after them."""
    c = cluster(name)
    d = c.deployment
    d.submit_job()
    d.submit_job()
    d.after_step(c)
    return c, d, len(c.events)


def events(c, start: int = 0) -> list:
    """The deployment's events from ``start`` on (anything not an event of another part is kept)."""
    return [e for e in c.events[start:]
            if not (isinstance(e, tuple) and e and isinstance(e[0], str) and not e[0].startswith("dm_"))]


def test_a_deployment_setup_and_its_ids():
    from types import SimpleNamespace  # a cluster's config and ExecutionGraph alone

    from model.executiongraph import compile_stream_graph  # the job graph the setup reads

    sc = small_scenario(variant("application-cluster"))
    s = ce.DeploymentSetup(SimpleNamespace(config=sc.config, eg=compile_stream_graph(sc.graph)))
    assert (s.mode, s.groups, s.slots_per_worker, s.registration_timeout, s.idle_timeout, s.task_managers) == (
        "application", ((0, 2), (1,)), 1, 1, 1, 2)
    sc = sc.with_settings(slots_per_task_manager=None)
    s = ce.DeploymentSetup(SimpleNamespace(config=sc.config, eg=compile_stream_graph(sc.graph)))
    assert (s.groups, s.slots_per_worker) == (((0, 2), (1,)), 2)
    ids = ce.DeploymentIds()
    assert (ids.next_allocation, ids.next_worker) == (1, 0)


# -- TaskSlotTable -----------------------------------------------------------------------------------

def test_the_declared_names():
    assert ce.DEPLOYMENT_MODES == ("session", "application")
    assert (ACTIVE, ALLOCATED, RELEASING, RUNNING, CANCELING) == ("ACTIVE", "ALLOCATED", "RELEASING", "RUNNING",
                                                                   "CANCELING")
    assert TaskSlotTable.__slots__ == ("slots", "tasks") and SlotManager.__slots__ == ("slots", "requirements")


def test_a_new_task_slot_table():
    t = TaskSlotTable(3)
    assert table(t) == ([None, None, None], {}) and t.idle()
    assert table(TaskSlotTable(0)) == ([], {}) and TaskSlotTable(0).idle()
    assert t.slot_of(7) is None


def test_allocate_and_slot_of():
    t = TaskSlotTable(3)
    assert t.allocate(1, 7, 0) is True
    assert table(t) == ([None, (7, 0, ACTIVE), None], {}) and not t.idle()
    assert t.allocate(2, 8, 1, ALLOCATED) is True
    assert table(t) == ([None, (7, 0, ACTIVE), (8, 1, ALLOCATED)], {})
    assert t.allocate(1, 9, 2) is False
    assert table(t) == ([None, (7, 0, ACTIVE), (8, 1, ALLOCATED)], {})
    assert (t.slot_of(7), t.slot_of(8), t.slot_of(9), t.slot_of(0)) == (1, 2, None, None)
    assert t.allocate(0, 0, 3) is True and t.slot_of(0) == 0


def test_add_task():
    t = TaskSlotTable(2)
    t.allocate(0, 7, 0)
    t.allocate(1, 8, 0, ALLOCATED)
    assert t.add_task(7, 0, 2, 0) is True
    assert table(t) == ([(7, 0, ACTIVE), (8, 0, ALLOCATED)], {0: ((0, 2, 0, RUNNING),)})
    assert t.add_task(7, 0, 1, 1) is True
    assert table(t)[1] == {0: ((0, 1, 1, RUNNING), (0, 2, 0, RUNNING))}, "kept sorted"
    assert t.add_task(8, 0, 0, 0) is False, "an inactive slot takes no task"
    assert t.add_task(7, 1, 0, 0) is False, "another job's task"
    assert t.add_task(9, 0, 0, 0) is False, "no such allocation"
    assert table(t) == ([(7, 0, ACTIVE), (8, 0, ALLOCATED)], {0: ((0, 1, 1, RUNNING), (0, 2, 0, RUNNING))})
    t.slots[0] = (7, 0, RELEASING)
    assert t.add_task(7, 0, 3, 0) is False, "a releasing slot takes no task"


def test_free_inactive_slots():
    t = TaskSlotTable(4)
    t.allocate(0, 7, 0, ALLOCATED)
    t.allocate(1, 8, 0)
    t.allocate(2, 9, 1, ALLOCATED)
    t.allocate(3, 10, 0, ALLOCATED)
    assert t.free_inactive_slots(0) == [0, 3]
    assert table(t) == ([None, (8, 0, ACTIVE), (9, 1, ALLOCATED), None], {})
    assert t.free_inactive_slots(0) == []
    assert t.free_inactive_slots(1) == [2]
    assert table(t) == ([None, (8, 0, ACTIVE), None, None], {})


def test_free_slot():
    t = TaskSlotTable(3)
    t.allocate(0, 7, 0)
    t.allocate(1, 8, 1)
    t.add_task(8, 1, 0, 0)
    t.add_task(8, 1, 1, 0)
    assert t.free_slot(9) is False and table(t) == ([(7, 0, ACTIVE), (8, 1, ACTIVE), None],
                                                   {1: ((1, 0, 0, RUNNING), (1, 1, 0, RUNNING))})
    assert t.free_slot(7) is True
    assert table(t) == ([None, (8, 1, ACTIVE), None], {1: ((1, 0, 0, RUNNING), (1, 1, 0, RUNNING))})
    assert t.free_slot(8) is False
    assert table(t) == ([None, (8, 1, RELEASING), None], {1: ((1, 0, 0, CANCELING), (1, 1, 0, CANCELING))})
    t.allocate(2, 5, 2)
    t.tasks[2] = ()
    assert t.free_slot(5) is True and table(t) == ([None, (8, 1, RELEASING), None],
                                                   {1: ((1, 0, 0, CANCELING), (1, 1, 0, CANCELING))})


def test_cancel_and_cancel_task():
    t = TaskSlotTable(2)
    t.allocate(0, 7, 0)
    t.tasks[0] = ((0, 0, 0, RUNNING), (1, 0, 0, RUNNING), (1, 1, 0, RUNNING))
    t.tasks[1] = ((1, 0, 0, RUNNING),)
    t.cancel_task(1, 0)
    assert t.tasks == {0: ((0, 0, 0, RUNNING), (1, 0, 0, CANCELING), (1, 1, 0, RUNNING)),
                       1: ((1, 0, 0, CANCELING),)}
    t.cancel_task(2, 1)
    assert t.tasks == {0: ((0, 0, 0, RUNNING), (1, 0, 0, CANCELING), (1, 1, 0, RUNNING)),
                       1: ((1, 0, 0, CANCELING),)}
    t._cancel(0, 0)
    assert t.tasks[0] == ((0, 0, 0, CANCELING), (1, 0, 0, CANCELING), (1, 1, 0, RUNNING))
    t._cancel(0)
    assert t.tasks[0] == ((0, 0, 0, CANCELING), (1, 0, 0, CANCELING), (1, 1, 0, CANCELING))
    t._cancel(5)
    assert 5 not in t.tasks


def test_remove_task():
    t = TaskSlotTable(2)
    t.allocate(0, 7, 0)
    t.allocate(1, 8, 0)
    t.add_task(7, 0, 0, 0)
    t.add_task(7, 0, 1, 0)
    t.add_task(8, 0, 2, 0)
    assert t.remove_task(0, (0, 0, 0, RUNNING)) is False
    assert table(t) == ([(7, 0, ACTIVE), (8, 0, ACTIVE)], {0: ((0, 1, 0, RUNNING),), 1: ((0, 2, 0, RUNNING),)})
    assert t.remove_task(0, (0, 9, 0, RUNNING)) is False
    assert table(t) == ([(7, 0, ACTIVE), (8, 0, ACTIVE)], {0: ((0, 1, 0, RUNNING),), 1: ((0, 2, 0, RUNNING),)})
    assert t.remove_task(0, (0, 1, 0, RUNNING)) is False, "an ACTIVE slot stays allocated"
    assert table(t) == ([(7, 0, ACTIVE), (8, 0, ACTIVE)], {1: ((0, 2, 0, RUNNING),)})
    t.free_slot(8)
    assert t.remove_task(1, (0, 2, 0, CANCELING)) is True
    assert table(t) == ([(7, 0, ACTIVE), None], {}) and not t.idle()
    assert t.remove_task(1, (0, 2, 0, CANCELING)) is False, "a free slot: nothing to free"
    t.slots[1] = (9, 0, RELEASING)
    t.tasks[1] = ((0, 3, 0, CANCELING), (0, 4, 0, CANCELING))
    assert t.remove_task(1, (0, 3, 0, CANCELING)) is False and t.slots[1] == (9, 0, RELEASING)
    assert t.tasks == {1: ((0, 4, 0, CANCELING),)}
    assert t.free_slot(7) is True and t.remove_task(1, (0, 4, 0, CANCELING)) is True
    assert table(t) == ([None, None], {}) and t.idle()


def test_idle():
    t = TaskSlotTable(2)
    t.tasks[1] = ((0, 0, 0, CANCELING),)
    assert not t.idle()
    t.tasks.clear()
    t.slots[1] = (7, 0, ALLOCATED)
    assert not t.idle()


def test_the_seams_replacements():
    t = TaskSlotTable(2)
    t.tasks[0] = ((0, 0, 0, RUNNING), (1, 0, 0, RUNNING), (1, 1, 0, RUNNING))
    ce._cancel_task_of_every_job(t, 1, 0)
    assert t.tasks == {0: ((0, 0, 0, CANCELING), (1, 0, 0, CANCELING), (1, 1, 0, RUNNING))}
    t = TaskSlotTable(2)
    t.allocate(1, 7, 0)
    t.add_task(7, 0, 0, 0)
    assert ce._free_slot_at_once(t, 8) is False and table(t) == ([None, (7, 0, ACTIVE)], {1: ((0, 0, 0, RUNNING),)})
    assert ce._free_slot_at_once(t, 7) is True
    assert table(t) == ([None, None], {1: ((0, 0, 0, CANCELING),)})
    assert ce._inactive_slots_kept(SlotManager()) is False
    assert SlotManager().reclaims_inactive_slots() is True


# -- SlotManager ------------------------------------------------------------------------------------

def test_the_slot_manager():
    sm = SlotManager()
    assert (sm.slots, sm.requirements) == ({}, {}) and sm.free() == []
    sm.register(3, 2)
    sm.register(1, 1)
    assert sm.slots == {(3, 0): None, (3, 1): None, (1, 0): None}
    assert sm.free() == [(1, 0), (3, 0), (3, 1)]
    sm.slots[(3, 0)] = (7, 0)
    sm.slots[(1, 0)] = (8, 1)
    assert sm.free() == [(3, 1)]
    assert (sm.allocated_to(0), sm.allocated_to(1), sm.allocated_to(2)) == (1, 1, 0)
    sm.slots[(3, 1)] = (9, 0)
    assert sm.allocated_to(0) == 2 and sm.free() == []
    sm.unregister(3)
    assert sm.slots == {(1, 0): (8, 1)} and sm.allocated_to(0) == 0
    sm.unregister(5)
    assert sm.slots == {(1, 0): (8, 1)}
    sm.register(2, 0)
    assert sm.slots == {(1, 0): (8, 1)}


# -- the session cluster ------------------------------------------------------------------------------

def test_a_new_session_cluster():
    c = cluster("session-cluster")
    d = c.deployment
    assert (d.setup.mode, d.setup.groups, d.setup.slots_per_worker, d.setup.registration_timeout,
            d.setup.idle_timeout, d.setup.task_managers) == ("session", ((0, 1),), 2, 1, 1, 1)
    assert d.mode == "session" and d.active is None and d.jobs == [] and d.jobs is d.dispatcher.jobs
    assert state(c) == {"workers": {0: ([None, None], {})}, "sm": ({(0, 0): None, (0, 1): None}, {}), "jobs": [],
                        "ids": (1, 1), "shut_down": False}
    assert type(next(iter(d.workers))).__name__ == "ResourceID"
    assert events(c) == [] and d.idle_workers() == [0] and not d.ticking()
    assert d.finished() is True and d.needed_pending_workers() == 0


def test_new_ids_count_up():
    c = cluster("session-cluster")
    d = c.deployment
    a, b = d.new_allocation(), d.new_allocation()
    assert (a, b, type(a).__name__) == (1, 2, "AllocationID")
    w = d.new_worker()
    assert (w, type(w).__name__, d.ids.next_worker, d.ids.next_allocation) == (1, "ResourceID", 2, 3)


def test_submit_and_after_step_allocate_and_deploy():
    c = cluster("session-cluster")
    d = c.deployment
    r = d.submit_job()
    assert r is d.jobs[0] and state(c)["jobs"] == [(0, "RUNNING", 0, ["CREATED"], {}, {})]
    d.after_step(c)
    assert state(c) == {"workers": {0: ([(1, 0, ACTIVE), None], {0: ((0, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): (1, 0), (0, 1): None}, {0: 1}),
                        "jobs": [(0, "RUNNING", 0, ["DEPLOYED"], {1: (0, 0)}, {0: 1})],
                        "ids": (2, 1), "shut_down": False}
    assert events(c) == [("dm_slot_allocated", c.now, 0, 0, 0, 1)]
    d.after_step(c)
    assert state(c)["ids"] == (2, 1) and len(events(c)) == 1, "a met requirement allocates nothing"
    d.submit_job()
    d.submit_job()
    d.after_step(c)
    assert state(c) == {"workers": {0: ([(1, 0, ACTIVE), (2, 1, ACTIVE)],
                                        {0: ((0, 0, 0, RUNNING),), 1: ((1, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): (1, 0), (0, 1): (2, 1)}, {0: 1, 1: 1, 2: 1}),
                        "jobs": [(0, "RUNNING", 0, ["DEPLOYED"], {1: (0, 0)}, {0: 1}),
                                 (1, "RUNNING", 0, ["DEPLOYED"], {2: (0, 1)}, {0: 2}),
                                 (2, "RUNNING", 0, ["CREATED"], {}, {})],
                        "ids": (3, 1), "shut_down": False}
    assert d.needed_pending_workers() == 1 and needed_pending_workers(d) == 1
    assert d.idle_workers() == [] and d.finished() is False


def test_a_finished_task_frees_its_slot_for_the_next_job():
    c = cluster("session-cluster")
    d = c.deployment
    for _ in range(3):
        d.submit_job()
    d.after_step(c)
    n = len(c.events)
    d.task_finished(c, 0, 0)
    assert state(c) == {"workers": {0: ([None, (2, 1, ACTIVE)], {1: ((1, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): None, (0, 1): (2, 1)}, {1: 1, 2: 1}),
                        "jobs": [(0, "FINISHED", 0, ["FINISHED"], {}, {}),
                                 (1, "RUNNING", 0, ["DEPLOYED"], {2: (0, 1)}, {0: 2}),
                                 (2, "RUNNING", 0, ["CREATED"], {}, {})],
                        "ids": (4, 1), "shut_down": False}
    assert events(c, n) == [("dm_job_terminal", c.now, 0, "FINISHED")]
    assert d.dispatcher.results == {0: "FINISHED"}
    d.after_step(c)
    assert state(c)["workers"] == {0: ([(4, 2, ACTIVE), (2, 1, ACTIVE)],
                                       {0: ((2, 0, 0, RUNNING),), 1: ((1, 0, 0, RUNNING),)})}
    assert state(c)["jobs"][2] == (2, "RUNNING", 0, ["DEPLOYED"], {4: (0, 0)}, {0: 4})
    assert state(c)["sm"] == ({(0, 0): (4, 2), (0, 1): (2, 1)}, {1: 1, 2: 1})


def test_a_finished_task_of_a_job_of_two_tasks():
    c = cluster("application-cluster")
    d = c.deployment
    for w in list(d.active.pending):
        d.register_worker(c, w)
    d.after_step(c)
    assert state(c)["jobs"] == [(0, "RUNNING", 0, ["DEPLOYED", "DEPLOYED"], {1: (0, 0), 2: (1, 0)}, {0: 1, 1: 2})]
    n = len(c.events)
    d.task_finished(c, 0, 1)
    assert state(c) == {"workers": {0: ([(1, 0, ACTIVE)], {0: ((0, 0, 0, RUNNING),)}), 1: ([(2, 0, ACTIVE)], {})},
                        "sm": ({(0, 0): (1, 0), (1, 0): (2, 0)}, {0: 2}),
                        "jobs": [(0, "RUNNING", 0, ["DEPLOYED", "FINISHED"], {1: (0, 0), 2: (1, 0)}, {0: 1})],
                        "ids": (3, 2), "shut_down": False}
    assert events(c, n) == []
    d.task_finished(c, 0, 0)
    assert state(c) == {"workers": {}, "sm": ({}, {}),
                        "jobs": [(0, "FINISHED", 0, ["FINISHED", "FINISHED"], {}, {})],
                        "ids": (5, 2), "shut_down": True}
    assert events(c, n) == [("dm_job_terminal", c.now, 0, "FINISHED"), ("dm_cluster_shut_down", c.now, 0, "FINISHED")]
    assert d.finished() is True and not d.ticking()
    d.after_step(c)
    assert state(c)["ids"] == (5, 2) and events(c, n)[-1][0] == "dm_cluster_shut_down"


def test_task_finished_removes_only_the_running_task_of_the_current_attempt():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    t = d.workers[0]
    t.tasks[0] = ((0, 0, 0, CANCELING), (0, 0, 0, RUNNING), (0, 0, 1, RUNNING), (1, 0, 0, RUNNING))
    d.jobs[0].attempt = 1
    d.task_finished(c, 0, 0)
    assert table(t) == ([(1, 0, RELEASING), None],
                        {0: ((0, 0, 0, CANCELING), (0, 0, 0, CANCELING), (1, 0, 0, CANCELING))})
    assert state(c)["jobs"] == [(0, "FINISHED", 1, ["FINISHED"], {}, {})]


def test_a_failed_task_fails_its_job_once_every_task_ended():
    c = cluster("application-cluster")
    d = c.deployment
    for w in list(d.active.pending):
        d.register_worker(c, w)
    d.after_step(c)
    n = len(c.events)
    d.task_failed(c, 0, 0)
    assert state(c) == {"workers": {0: ([(1, 0, ACTIVE)], {}), 1: ([(2, 0, ACTIVE)], {0: ((0, 1, 0, CANCELING),)})},
                        "sm": ({(0, 0): (1, 0), (1, 0): (2, 0)}, {0: 2}),
                        "jobs": [(0, "FAILING", 0, ["CREATED", "DEPLOYED"], {1: (0, 0), 2: (1, 0)}, {1: 2})],
                        "ids": (3, 2), "shut_down": False}
    assert events(c, n) == [("dm_job_failing", c.now, 0, 0)]
    d.after_step(c)
    assert state(c)["jobs"][0][3] == ["CREATED", "DEPLOYED"], "a failing job deploys nothing"
    assert state(c)["sm"] == ({(0, 0): (1, 0), (1, 0): (2, 0)}, {0: 2})
    d.task_terminated(c, 1, 0, (0, 1, 0, CANCELING))
    assert state(c) == {"workers": {}, "sm": ({}, {}),
                        "jobs": [(0, "FAILED", 0, ["CREATED", "CREATED"], {}, {})],
                        "ids": (5, 2), "shut_down": True}
    assert events(c, n)[1:] == [("dm_job_terminal", c.now, 0, "FAILED"), ("dm_cluster_shut_down", c.now, 0, "FAILED")]


def test_a_failed_task_of_a_job_alone_in_its_slot_fails_it_at_once():
    c, d, n = two_jobs_deployed("session-cluster")
    d.task_failed(c, 1, 0)
    assert state(c) == {"workers": {0: ([(1, 0, ACTIVE), None], {0: ((0, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): (1, 0), (0, 1): None}, {0: 1}),
                        "jobs": [(0, "RUNNING", 0, ["DEPLOYED"], {1: (0, 0)}, {0: 1}),
                                 (1, "FAILED", 0, ["CREATED"], {}, {})],
                        "ids": (4, 1), "shut_down": False}
    assert events(c, n) == [("dm_job_failing", c.now, 1, 0), ("dm_job_terminal", c.now, 1, "FAILED")]
    assert d.dispatcher.results == {1: "FAILED"}


def test_cancel_job():
    c, d, n = two_jobs_deployed("session-cluster")
    d.cancel_job(c, 0)
    assert state(c) == {"workers": {0: ([(1, 0, ACTIVE), (2, 1, ACTIVE)],
                                        {0: ((0, 0, 0, CANCELING),), 1: ((1, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): (1, 0), (0, 1): (2, 1)}, {0: 1, 1: 1}),
                        "jobs": [(0, "CANCELLING", 0, ["DEPLOYED"], {1: (0, 0)}, {0: 1}),
                                 (1, "RUNNING", 0, ["DEPLOYED"], {2: (0, 1)}, {0: 2})],
                        "ids": (3, 1), "shut_down": False}
    assert events(c, n) == [("dm_job_cancelling", c.now, 0)]
    d.after_step(c)
    assert state(c)["sm"] == ({(0, 0): (1, 0), (0, 1): (2, 1)}, {0: 1, 1: 1}), "a cancelling job declares nothing"
    d.task_terminated(c, 0, 0, (0, 0, 0, CANCELING))
    assert state(c) == {"workers": {0: ([None, (2, 1, ACTIVE)], {1: ((1, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): None, (0, 1): (2, 1)}, {1: 1}),
                        "jobs": [(0, "CANCELED", 0, ["CREATED"], {}, {}),
                                 (1, "RUNNING", 0, ["DEPLOYED"], {2: (0, 1)}, {0: 2})],
                        "ids": (4, 1), "shut_down": False}
    assert events(c, n)[1:] == [("dm_job_terminal", c.now, 0, "CANCELED")]
    assert d.dispatcher.results == {0: "CANCELED"}


def test_cancel_a_job_without_deployed_tasks_cancels_it_at_once():
    c, d, n = two_jobs_deployed("session-cluster-contended")
    d.cancel_job(c, 1)
    assert state(c)["jobs"][1] == (1, "CANCELED", 0, ["CREATED"], {}, {})
    assert events(c, n) == [("dm_job_cancelling", c.now, 1), ("dm_job_terminal", c.now, 1, "CANCELED")]
    assert state(c)["sm"] == ({(0, 0): (1, 0)}, {0: 1})


def test_revoke_and_grant_leadership():
    c, d, n = two_jobs_deployed("session-cluster-contended")
    d.revoke_leadership(c, 0)
    assert state(c) == {"workers": {0: ([(1, 0, RELEASING)], {0: ((0, 0, 0, CANCELING),)})},
                        "sm": ({(0, 0): (1, 0)}, {1: 1}),
                        "jobs": [(0, "SUSPENDED", 0, ["CREATED"], {}, {}),
                                 (1, "RUNNING", 0, ["CREATED"], {}, {})],
                        "ids": (2, 1), "shut_down": False}
    assert events(c, n) == [("dm_job_suspended", c.now, 0)]
    assert d.dispatcher.results == {} and 0 in d.dispatcher.job_graphs
    d.grant_leadership(c, 0)
    assert state(c)["jobs"][0] == (0, "RUNNING", 1, ["CREATED"], {}, {})
    assert events(c, n)[1:] == [("dm_job_recovered", c.now, 0)]
    d.after_step(c)
    assert state(c)["sm"] == ({(0, 0): (1, 0)}, {1: 1, 0: 1})
    m = len(c.events)
    d.task_terminated(c, 0, 0, (0, 0, 0, CANCELING))
    assert state(c) == {"workers": {0: ([None], {})},
                        "sm": ({(0, 0): None}, {1: 1, 0: 1}),
                        "jobs": [(0, "RUNNING", 1, ["CREATED"], {}, {}),
                                 (1, "RUNNING", 0, ["CREATED"], {}, {})],
                        "ids": (2, 1), "shut_down": False}
    assert events(c, m) == [("dm_releasing_slot_freed", c.now, 0, 0, 0)]
    d.after_step(c)
    assert state(c)["workers"] == {0: ([(2, 0, ACTIVE)], {0: ((0, 0, 1, RUNNING),)})}
    assert state(c)["jobs"][0] == (0, "RUNNING", 1, ["DEPLOYED"], {2: (0, 0)}, {0: 2})


def test_revoking_an_application_job_leaves_the_cluster_up():
    c = cluster("application-cluster")
    d = c.deployment
    for w in list(d.active.pending):
        d.register_worker(c, w)
    d.after_step(c)
    d.revoke_leadership(c, 0)
    assert state(c) == {"workers": {0: ([(1, 0, RELEASING)], {0: ((0, 0, 0, CANCELING),)}),
                                    1: ([(2, 0, RELEASING)], {0: ((0, 1, 0, CANCELING),)})},
                        "sm": ({(0, 0): (1, 0), (1, 0): (2, 0)}, {}),
                        "jobs": [(0, "SUSPENDED", 0, ["CREATED", "CREATED"], {}, {})],
                        "ids": (3, 2), "shut_down": False}


def test_a_task_terminated_of_an_older_attempt_keeps_the_new_attempts_task():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    r = d.jobs[0]
    t = d.workers[0]
    t.tasks[0] = ((0, 0, 0, CANCELING), (0, 0, 1, RUNNING))
    r.attempt = 1
    n = len(c.events)
    d.task_terminated(c, 0, 0, (0, 0, 0, CANCELING))
    assert table(t) == ([(1, 0, ACTIVE), None], {0: ((0, 0, 1, RUNNING),)})
    assert state(c)["jobs"] == [(0, "RUNNING", 1, ["DEPLOYED"], {1: (0, 0)}, {0: 1})]
    assert events(c, n) == []
    # the current attempt's deployed task ended: it waits for a slot again
    d.task_terminated(c, 0, 0, (0, 0, 1, RUNNING))
    assert state(c)["jobs"] == [(0, "RUNNING", 1, ["CREATED"], {1: (0, 0)}, {})]
    assert table(t) == ([(1, 0, ACTIVE), None], {})


def test_a_task_terminated_of_a_finished_task_leaves_it_finished():
    c = cluster("application-cluster")
    d = c.deployment
    for w in list(d.active.pending):
        d.register_worker(c, w)
    d.after_step(c)
    r = d.jobs[0]
    r.tasks[1] = "FINISHED"
    d.task_terminated(c, 1, 0, (0, 1, 0, RUNNING))
    assert state(c)["jobs"] == [(0, "RUNNING", 0, ["DEPLOYED", "FINISHED"], {1: (0, 0), 2: (1, 0)}, {0: 1, 1: 2})]


def test_release_slots_after_the_requirement_and_flink_31444():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    r = d.jobs[0]
    d.task_finished(c, 0, 0)
    assert state(c)["workers"] == {0: ([None, None], {})}
    assert state(c)["sm"] == ({(0, 0): None, (0, 1): None}, {})
    # the requirement still declared when the slots come back: they go to the job again, inactive,
    # and are reclaimed once the requirement is cleared
    c2 = cluster("session-cluster")
    d2 = c2.deployment
    d2.submit_job()
    d2.after_step(c2)
    r2 = d2.jobs[0]
    r2.tasks[0] = "FINISHED"
    r2.status = "FINISHED"
    d2.slot_manager.requirements[0] = 2
    d2.workers[0].remove_task(0, (0, 0, 0, RUNNING))
    d2._release_slots(r2)
    assert state(c2)["workers"] == {0: ([None, None], {})}
    assert state(c2)["sm"] == ({(0, 0): None, (0, 1): None}, {})
    assert state(c2)["ids"] == (4, 1), "two allocations drawn for the job's declared two slots"
    assert (r2.pool, r2.task_slot) == ({}, {})


def test_release_slots_keeps_the_inactive_slots_where_the_seam_says_so(monkeypatch):
    monkeypatch.setattr(SlotManager, "reclaims_inactive_slots", ce._inactive_slots_kept)
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    r = d.jobs[0]
    r.status = "FINISHED"
    d.slot_manager.requirements[0] = 2
    d.workers[0].remove_task(0, (0, 0, 0, RUNNING))
    d._release_slots(r)
    assert state(c)["workers"] == {0: ([(2, 0, ALLOCATED), (3, 0, ALLOCATED)], {})}
    assert state(c)["sm"] == ({(0, 0): (2, 0), (0, 1): (3, 0)}, {})


def test_release_slots_of_a_requirement_partly_met():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.submit_job()
    d.after_step(c)
    r = d.jobs[0]
    r.status = "FINISHED"
    d.workers[0].remove_task(0, (0, 0, 0, RUNNING))
    d.slot_manager.requirements[0] = 3
    # the other job holds slot 1: job 0 gets its own slot back only, then loses it
    monkey = d.slot_manager.reclaims_inactive_slots
    assert monkey() is True
    d._release_slots(r)
    assert state(c)["workers"] == {0: ([None, (2, 1, ACTIVE)], {1: ((1, 0, 0, RUNNING),)})}
    assert state(c)["sm"] == ({(0, 0): None, (0, 1): (2, 1)}, {1: 1})
    assert state(c)["ids"] == (4, 1)


def test_release_slots_of_a_worker_gone():
    c = cluster("application-cluster")
    d = c.deployment
    for w in list(d.active.pending):
        d.register_worker(c, w)
    d.after_step(c)
    r = d.jobs[0]
    d._stop_worker(1)
    assert state(c)["workers"] == {0: ([(1, 0, ACTIVE)], {0: ((0, 0, 0, RUNNING),)})}
    assert state(c)["sm"] == ({(0, 0): (1, 0)}, {0: 2})
    r.status = "SUSPENDED"
    d.workers[0].remove_task(0, (0, 0, 0, RUNNING))
    d._release_slots(r)
    assert state(c)["workers"] == {0: ([None], {})}
    assert state(c)["sm"] == ({(0, 0): None}, {})
    assert (r.pool, r.task_slot) == ({}, {})


def test_slot_available():
    c = cluster("session-cluster")
    d = c.deployment
    d.slot_manager.slots[(0, 0)] = (5, 0)
    d.slot_manager.slots[(0, 1)] = (6, 1)
    d._slot_available(0, 0, 6)
    assert d.slot_manager.slots == {(0, 0): (5, 0), (0, 1): (6, 1)}
    d._slot_available(0, 1, 6)
    assert d.slot_manager.slots == {(0, 0): (5, 0), (0, 1): None}
    d._slot_available(0, 1, 6)
    d._slot_available(3, 0, 5)
    assert d.slot_manager.slots == {(0, 0): (5, 0), (0, 1): None}


# -- the application cluster ---------------------------------------------------------------------------

def test_a_new_application_cluster():
    c = cluster("application-cluster")
    d = c.deployment
    assert (d.setup.mode, d.setup.groups, d.setup.slots_per_worker, d.setup.task_managers) == (
        "application", ((0, 2), (1,)), 1, 2)
    assert d.mode == "application" and d.active is not None
    assert state(c) == {"workers": {}, "sm": ({}, {0: 2}),
                        "jobs": [(0, "RUNNING", 0, ["CREATED", "CREATED"], {}, {})],
                        "ids": (1, 2), "shut_down": False}
    assert dict(d.active.pending) == {0: 0, 1: 0} and dict(d.active.idle) == {}
    assert events(c) == [("dm_worker_requested", 0, 0), ("dm_worker_requested", 0, 1)]
    assert d.needed_pending_workers() == 2 and d.finished() is False and d.ticking() is True


def test_register_worker_and_deploy():
    c = cluster("application-cluster")
    d = c.deployment
    n = len(c.events)
    d.register_worker(c, 1)
    assert state(c) == {"workers": {1: ([None], {})}, "sm": ({(1, 0): None}, {0: 2}),
                        "jobs": [(0, "RUNNING", 0, ["CREATED", "CREATED"], {}, {})],
                        "ids": (1, 2), "shut_down": False}
    assert dict(d.active.pending) == {0: 0}
    assert events(c, n) == [("dm_worker_registered", c.now, 1)]
    assert d.needed_pending_workers() == 1
    d.after_step(c)
    assert state(c) == {"workers": {1: ([(1, 0, ACTIVE)], {0: ((0, 0, 0, RUNNING),)})},
                        "sm": ({(1, 0): (1, 0)}, {0: 2}),
                        "jobs": [(0, "RUNNING", 0, ["DEPLOYED", "CREATED"], {1: (1, 0)}, {0: 1})],
                        "ids": (2, 2), "shut_down": False}
    assert events(c, n)[1:] == [("dm_slot_allocated", c.now, 0, 1, 0, 1)]
    assert dict(d.active.pending) == {0: 0}, "the one worker still needed stays pending"


def test_tick_times_out_pending_workers_and_releases_idle_ones():
    c = cluster("application-cluster")
    d = c.deployment
    n = len(c.events)
    d.tick(c)
    assert events(c, n) == []
    d.tick(c)
    assert events(c, n) == [("dm_worker_registration_timeout", c.now, 0),
                            ("dm_worker_registration_timeout", c.now, 1)]
    assert dict(d.active.pending) == {}
    d.after_step(c)
    assert dict(d.active.pending) == {2: 0, 3: 0} and state(c)["ids"] == (1, 4)
    # an idle registered worker is released past the idle timeout
    d.register_worker(c, 2)
    d.register_worker(c, 3)
    assert d.idle_workers() == [2, 3]
    d.workers[2].allocate(0, 9, 0)
    assert d.idle_workers() == [3]
    m = len(c.events)
    d.tick(c)
    d.tick(c)
    assert events(c, m) == [("dm_idle_worker_released", c.now, 3)]
    assert sorted(d.workers) == [2] and state(c)["sm"][0] == {(2, 0): None}


def test_ticking_stops_with_the_cluster():
    c = cluster("application-cluster")
    d = c.deployment
    assert d.ticking() is True
    d.dispatcher.shut_down_cluster()
    assert d.ticking() is False
    assert d.finished() is True, "an application cluster is finished once it was shut down"


def test_job_result_shuts_the_application_cluster_down_only_on_a_terminal_status():
    c = cluster("application-cluster")
    d = c.deployment
    d.register_worker(c, 0)
    r = d.jobs[0]
    n = len(c.events)
    r.status = "SUSPENDED"
    d._job_result(c, r)
    assert state(c)["shut_down"] is False and events(c, n) == [] and sorted(d.workers) == [0]
    r.status = "FAILED"
    d._job_result(c, r)
    assert state(c)["workers"] == {} and state(c)["shut_down"] is True
    assert dict(d.active.pending) == {} and dict(d.active.idle) == {}
    assert events(c, n) == [("dm_cluster_shut_down", c.now, 0, "FAILED")]
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.jobs[0].status = "FINISHED"
    d._job_result(c, d.jobs[0])
    assert state(c)["shut_down"] is False and state(c)["workers"] == {0: ([None, None], {})}


def test_after_step_of_a_shut_down_cluster_does_nothing():
    c = cluster("application-cluster")
    d = c.deployment
    d.dispatcher.shut_down_cluster()
    before, n = state(c), len(c.events)
    d.register_worker(c, 0)
    d.after_step(c)
    assert state(c)["jobs"] == before["jobs"] and state(c)["ids"] == before["ids"]
    assert events(c, n) == [("dm_worker_registered", c.now, 0)]


def test_after_step_releases_surplus_pending_workers():
    c = cluster("application-cluster")
    d = c.deployment
    d.jobs[0].status = "SUSPENDED"
    n = len(c.events)
    d.after_step(c)
    assert events(c, n) == [("dm_pending_worker_released", c.now, 1), ("dm_pending_worker_released", c.now, 0)]
    assert dict(d.active.pending) == {} and state(c)["sm"] == ({}, {0: 2})


def test_needed_pending_workers():
    c = cluster("application-cluster")
    d = c.deployment
    assert needed_pending_workers(d) == 2
    d.register_worker(c, 0)
    assert needed_pending_workers(d) == 1
    d.register_worker(c, 1)
    assert needed_pending_workers(d) == 0
    d.jobs[0].status = "FAILING"
    d.workers.clear()
    d.slot_manager.slots.clear()
    assert needed_pending_workers(d) == 0
    d.jobs[0].status = "RUNNING"
    assert needed_pending_workers(d) == 2
    c2 = cluster("session-cluster")
    d2 = c2.deployment
    for _ in range(5):
        d2.submit_job()
    assert needed_pending_workers(d2) == 2, "5 one-slot jobs less 2 free slots: 3 slots, in workers of 2"
    d2.submit_job()
    assert needed_pending_workers(d2) == 2
    d2.submit_job()
    assert needed_pending_workers(d2) == 3
    for a in (97, 98, 99):
        d2.jobs[0].pool[a] = (0, 0)
    assert needed_pending_workers(d2) == 2, "a pool larger than the requirement counts no negative need"


def test_finished():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    assert d.finished() is False
    d.jobs[0].status = "FINISHED"
    assert d.finished() is False, "a task is still in a slot"
    d.workers[0].tasks.clear()
    assert d.finished() is True
    d.submit_job()
    assert d.finished() is False


def test_the_seams_of_the_module():
    from model.seams import SEAMS  # the registry the module's overrides entered

    got = {n: (SEAMS[n].definition, SEAMS[n].description, SEAMS[n].flink_key, SEAMS[n].origin,
               SEAMS[n].owner, SEAMS[n].attribute)
           for n in ("cancel-task-without-job-id", "slot-freed-before-tasks-terminated", "FLINK-31444")}
    assert got == {
        "cancel-task-without-job-id": (
            "TaskSlotTable.cancel_task",
            "cancelTask picks the task by its index in the job graph alone, not by the JobID it belongs to: "
            "cancelling one job's task cancels the task of the same index of every other job on the TaskExecutor",
            None, None, TaskSlotTable, "cancel_task"),
        "slot-freed-before-tasks-terminated": (
            "TaskSlotTable.free_slot",
            "freeSlot frees a slot at once although its tasks are still being cancelled (no RELEASING state): the "
            "slot is reported free and may be allocated to another job while the old job's task still runs in it",
            None, None, TaskSlotTable, "free_slot"),
        "FLINK-31444": (
            "SlotManager.reclaims_inactive_slots",
            "clearing a finished job's requirements does not reclaim its inactive slots: a slot whose release "
            "reached the SlotManager before the requirement was cleared is allocated to the finished job again and "
            "stays with it",
            "FLINK-31444", None, SlotManager, "reclaims_inactive_slots"),
    }
    assert SEAMS["cancel-task-without-job-id"].installed is ce._cancel_task_of_every_job
    assert SEAMS["slot-freed-before-tasks-terminated"].installed is ce._free_slot_at_once
    assert SEAMS["FLINK-31444"].installed is ce._inactive_slots_kept


def test_the_setup_is_a_value_and_the_setup_and_ids_are_kept_beside_the_state():
    import copy  # only here: the copies of a cluster

    from model import fingerprint  # the classes kept beside the state

    c = cluster("session-cluster")
    d = c.deployment
    assert copy.copy(d.setup) is d.setup and copy.deepcopy(d.setup) is d.setup
    ids = copy.deepcopy(d.ids)
    assert ids is not d.ids and (ids.next_allocation, ids.next_worker) == (1, 1)
    assert {ce.DeploymentSetup, ce.DeploymentIds} <= fingerprint._BESIDE
    assert ce.DeploymentSetup.__slots__ == ("mode", "groups", "slots_per_worker", "registration_timeout",
                                            "idle_timeout", "task_managers")
    assert ce.DeploymentIds.__slots__ == ("next_allocation", "next_worker")
    assert ce.ClusterEntrypoint.__slots__ == ("dispatcher", "slot_manager", "workers", "active", "setup", "ids")
    c2 = c.copy()
    assert c2.deployment.setup is d.setup and c2.deployment.workers is not d.workers


def test_without_slots_per_task_manager_a_worker_has_a_slot_per_execution_slot_sharing_group():
    c = Cluster.from_scenario(small_scenario(variant("application-cluster")).with_settings(slots_per_task_manager=None))
    d = c.deployment
    assert (d.setup.groups, d.setup.slots_per_worker) == (((0, 2), (1,)), 2)
    assert dict(d.active.pending) == {0: 0}, "one worker of two slots for the job's two tasks"
    d.register_worker(c, 0)
    assert state(c)["workers"] == {0: ([None, None], {})} and state(c)["sm"] == ({(0, 0): None, (0, 1): None}, {0: 2})
    c = Cluster.from_scenario(small_scenario(variant("session-cluster")).with_settings(slots_per_task_manager=None))
    assert (c.deployment.setup.slots_per_worker, state(c)["workers"]) == (1, {0: ([None], {})})


def test_a_job_cancelled_before_it_declared_its_requirement_gets_no_slot_back():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.cancel_job(c, 0)
    assert state(c) == {"workers": {0: ([None, None], {})}, "sm": ({(0, 0): None, (0, 1): None}, {}),
                        "jobs": [(0, "CANCELED", 0, ["CREATED"], {}, {})], "ids": (1, 1), "shut_down": False}


def test_a_revoked_job_whose_slot_still_releases_takes_no_free_slot():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    d.revoke_leadership(c, 0)
    # its one slot is still allocated (RELEASING): the requirement of one is met, the free slot 1 stays free
    assert state(c) == {"workers": {0: ([(1, 0, RELEASING), None], {0: ((0, 0, 0, CANCELING),)})},
                        "sm": ({(0, 0): (1, 0), (0, 1): None}, {}),
                        "jobs": [(0, "SUSPENDED", 0, ["CREATED"], {}, {})], "ids": (2, 1), "shut_down": False}


def test_a_finished_jobs_requirement_takes_one_free_slot_again_then_loses_it():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    d.task_finished(c, 0, 0)
    # the requirement of one met by one inactive allocation (id 2), reclaimed: slot 1 was never taken
    assert state(c) == {"workers": {0: ([None, None], {})}, "sm": ({(0, 0): None, (0, 1): None}, {}),
                        "jobs": [(0, "FINISHED", 0, ["FINISHED"], {}, {})], "ids": (3, 1), "shut_down": False}


def test_with_flink_31444_the_finished_job_keeps_one_inactive_slot(monkeypatch):
    monkeypatch.setattr(SlotManager, "reclaims_inactive_slots", ce._inactive_slots_kept)
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    d.task_finished(c, 0, 0)
    assert state(c) == {"workers": {0: ([(2, 0, ALLOCATED), None], {})}, "sm": ({(0, 0): (2, 0), (0, 1): None}, {}),
                        "jobs": [(0, "FINISHED", 0, ["FINISHED"], {}, {})], "ids": (3, 1), "shut_down": False}


def test_each_recovery_is_a_new_attempt():
    c = cluster("session-cluster")
    d = c.deployment
    d.submit_job()
    d.after_step(c)
    for attempt in (1, 2):
        d.revoke_leadership(c, 0)
        d.grant_leadership(c, 0)
        assert state(c)["jobs"] == [(0, "RUNNING", attempt, ["CREATED"], {}, {})]


def test_a_slot_the_task_executor_still_holds_is_passed_over():
    c = cluster("session-cluster")
    d = c.deployment
    d.workers[0].slots[0] = (99, 5, RELEASING)  # (a hand-made stale view: the SlotManager thinks slot 0 free)
    d.submit_job()
    d.after_step(c)
    assert state(c) == {"workers": {0: ([(99, 5, RELEASING), (2, 0, ACTIVE)], {1: ((0, 0, 0, RUNNING),)})},
                        "sm": ({(0, 0): None, (0, 1): (2, 0)}, {0: 1}),
                        "jobs": [(0, "RUNNING", 0, ["DEPLOYED"], {2: (0, 1)}, {0: 2})], "ids": (3, 1),
                        "shut_down": False}
