"""``model.jobfile`` call by call: each table's whole value right after it is read, the exact
message of each broken rule, the cluster's shape, and the records a seed draws."""

from __future__ import annotations

import copy

import pytest

from model import jobfile
from model.cluster import JobInput, RuntimeConfig
from model.environment import Environment
from model.errors import InvalidJobSpec
from model.inputfiles import INT_MAX, INT_MIN
from model.jobfile import (InputSpec, JobFile, cluster_shape, environment, generate_input, input_spec,
                           job_file_from_dict, load_job_file, required_slots, runtime_config)
from model.streamgraph import stream_graph_from_dict


def job(p: int = 1, **tables) -> dict:
    """A source of parallelism ``p``, a keyed count and a sink, with the tables given."""
    return {"name": "tiny",
            "operators": [{"name": "src", "kind": "source", "parallelism": p},
                          {"name": "count", "kind": "keyed_aggregate", "aggregate": "count", "parallelism": p},
                          {"name": "out", "kind": "sink", "sink_kind": "two_phase_commit", "parallelism": p}],
            "edges": [{"source": "src", "target": "count", "partitioner": "hash"},
                      {"source": "count", "target": "out", "partitioner": "forward"}],
            **tables}


GRAPH = stream_graph_from_dict(job())


def accepted(call, *args):
    """``call``'s answer; a valid input refused is a failed statement, not an error."""
    try:
        return call(*args)
    except InvalidJobSpec as e:
        pytest.fail(f"a valid input refused: {e}")


def refused(call, *args) -> str:
    with pytest.raises(InvalidJobSpec) as e:
        call(*args)
    return str(e.value)


def test_the_declared_bounds_and_defaults():
    assert (jobfile.MAX_TASK_MANAGERS, jobfile.MAX_SLOTS_PER_TASK_MANAGER, jobfile.MAX_RECORDS_PER_SUBTASK,
            jobfile.MAX_KEYS, jobfile.MAX_FAILURES, jobfile.MAX_CONCURRENT) == (256, 1_024, 10_000, 1_000, 100, 100)
    assert (jobfile.DEFAULT_MAX_FAILURES, jobfile.DEFAULT_SLOTS_PER_TASK_MANAGER) == (2, 1)
    assert list(jobfile.RUNTIME_KEYS) == ["checkpointing_mode", "unaligned", "aligned_checkpoint_timeout",
                                          "max_concurrent_checkpoints", "failover_strategy", "task_managers",
                                          "slots_per_task_manager"]
    assert [d for _, d in jobfile.RUNTIME_KEYS.values()] == ["exactly_once", "false", "0", "1", "region",
                                                              "as many as the job needs", "1"]
    assert list(jobfile.ENVIRONMENT_KEYS) == ["max_failures", "trigger_delivery"]
    assert [d for _, d in jobfile.ENVIRONMENT_KEYS.values()] == ["2", "at_once"]
    assert list(jobfile.INPUT_KEYS) == ["records", "keys", "out_of_orderness", "seed"]
    assert jobfile._TABLES == {"runtime": jobfile.RUNTIME_KEYS, "environment": jobfile.ENVIRONMENT_KEYS,
                               "input": jobfile.INPUT_KEYS}
    assert jobfile._KEY_CHOICES == (("a", "b", "c"), ("k0", "k1", "k2", "k3", "k4"), ("user-1", "user-2"))
    assert InputSpec() == InputSpec(records=None, keys=None, out_of_orderness=None, seed=None)


def test_int():
    assert jobfile._int("t", "k", 0, 0) == 0
    assert jobfile._int("t", "k", 5, 0, 5) == 5
    assert jobfile._int("t", "k", INT_MAX, 0) == INT_MAX
    assert jobfile._int("t", "k", INT_MIN, INT_MIN) == INT_MIN
    assert refused(jobfile._int, "t", "k", -1, 0) == "[t] k: must be an integer >= 0, not -1"
    assert refused(jobfile._int, "t", "k", 6, 0, 5) == "[t] k: must be an integer in [0, 5], not 6"
    assert refused(jobfile._int, "t", "k", -1, 0, 5) == "[t] k: must be an integer in [0, 5], not -1"
    assert refused(jobfile._int, "t", "k", True, 0, 5) == "[t] k: must be an integer in [0, 5], not True"
    assert refused(jobfile._int, "t", "k", False, 0) == "[t] k: must be an integer >= 0, not False"
    assert refused(jobfile._int, "t", "k", 1.0, 0) == "[t] k: must be an integer >= 0, not 1.0"
    assert refused(jobfile._int, "t", "k", "1", 0) == "[t] k: must be an integer >= 0, not '1'"
    assert refused(jobfile._int, "t", "k", 0, 1, INT_MAX) == "[t] k: must be an integer >= 1, not 0"


def test_table():
    assert jobfile._table({}, "runtime", jobfile.RUNTIME_KEYS) == {}
    d = {"unaligned": True}
    assert jobfile._table({"runtime": d}, "runtime", jobfile.RUNTIME_KEYS) is d
    assert refused(jobfile._table, {"runtime": 3}, "runtime", jobfile.RUNTIME_KEYS) == (
        "[runtime]: must be a table/object, not 3")
    assert refused(jobfile._table, {"input": [1]}, "input", jobfile.INPUT_KEYS) == (
        "[input]: must be a table/object, not [1]")
    assert refused(jobfile._table, {"runtime": {"max_failures": 1}}, "runtime", jobfile.RUNTIME_KEYS) == (
        "[runtime] max_failures: belongs in [environment], not in [runtime]")
    assert refused(jobfile._table, {"environment": {"seed": 1}}, "environment", jobfile.ENVIRONMENT_KEYS) == (
        "[environment] seed: belongs in [input], not in [environment]")
    assert refused(jobfile._table, {"input": {"unaligned": 1}}, "input", jobfile.INPUT_KEYS) == (
        "[input] unaligned: belongs in [runtime], not in [input]")
    assert refused(jobfile._table, {"environment": {"x": 1}}, "environment", jobfile.ENVIRONMENT_KEYS) == (
        "[environment]: unknown key 'x' (known: max_failures, trigger_delivery)")


def test_environment():
    assert accepted(environment, {}) == Environment(max_failures=2, trigger_delivery="at_once")
    assert accepted(environment, {"environment": {}}) == Environment(max_failures=2, trigger_delivery="at_once")
    assert accepted(environment, {"environment": {"max_failures": 0, "trigger_delivery": "any_order"}}) == Environment(
        max_failures=0, trigger_delivery="any_order")
    assert accepted(environment, {"environment": {"max_failures": 100}}) == Environment(max_failures=100,
                                                                              trigger_delivery="at_once")
    assert refused(environment, {"environment": {"max_failures": 101}}) == (
        "[environment] max_failures: must be an integer in [0, 100], not 101")
    assert refused(environment, {"environment": {"max_failures": -1}}) == (
        "[environment] max_failures: must be an integer in [0, 100], not -1")
    assert refused(environment, {"environment": {"trigger_delivery": "late"}}) == (
        "[environment] trigger_delivery: must be one of at_once, any_order, not 'late'")
    assert refused(environment, {"environment": {"trigger_delivery": None}}) == (
        "[environment] trigger_delivery: must be one of at_once, any_order, not None")
    assert refused(environment, {"environment": 1}) == "[environment]: must be a table/object, not 1"


def config(**kw) -> RuntimeConfig:
    base = dict(checkpointing_mode="exactly_once", unaligned=False, aligned_checkpoint_timeout=None,
                max_concurrent_checkpoints=1, failover_strategy="region", task_managers=1, slots_per_task_manager=1)
    return RuntimeConfig(**{**base, **kw})


def rc(p: int = 1, **runtime) -> RuntimeConfig:
    data = job(p, runtime=runtime)
    return runtime_config(data, stream_graph_from_dict(data))


def ok_rc(p: int = 1, **runtime) -> RuntimeConfig:
    return accepted(lambda: rc(p, **runtime))


def test_runtime_config_defaults_and_each_key():
    assert accepted(runtime_config, {}, GRAPH) == config()
    assert ok_rc() == config()
    assert ok_rc(3) == config(task_managers=3)
    assert ok_rc(3, slots_per_task_manager=2) == config(task_managers=2, slots_per_task_manager=2)
    assert ok_rc(3, slots_per_task_manager=3) == config(task_managers=1, slots_per_task_manager=3)
    assert ok_rc(3, slots_per_task_manager=4) == config(task_managers=1, slots_per_task_manager=4)
    assert ok_rc(checkpointing_mode="at_least_once") == config(checkpointing_mode="at_least_once")
    assert ok_rc(unaligned=True) == config(unaligned=True)
    assert ok_rc(unaligned=True, aligned_checkpoint_timeout=4) == config(unaligned=True, aligned_checkpoint_timeout=4)
    assert ok_rc(unaligned=True, aligned_checkpoint_timeout=0) == config(unaligned=True, aligned_checkpoint_timeout=None)
    assert ok_rc(aligned_checkpoint_timeout=0) == config()
    assert ok_rc(max_concurrent_checkpoints=100) == config(max_concurrent_checkpoints=100)
    assert ok_rc(failover_strategy="full") == config(failover_strategy="full")
    assert ok_rc(task_managers=3) == config(task_managers=3)
    assert ok_rc(task_managers=256) == config(task_managers=256)
    assert ok_rc(2, task_managers=2) == config(task_managers=2)
    assert ok_rc(2, task_managers=1, slots_per_task_manager=2) == config(task_managers=1, slots_per_task_manager=2)
    assert ok_rc(slots_per_task_manager=1024) == config(slots_per_task_manager=1024)
    assert ok_rc(unaligned=False) == config()


def test_runtime_config_refusals():
    cases = [
        (dict(checkpointing_mode="exactly-once"),
         "[runtime] checkpointing_mode: must be one of exactly_once, at_least_once, not 'exactly-once'"),
        (dict(unaligned=1), "[runtime] unaligned: must be a boolean, not 1"),
        (dict(unaligned="true"), "[runtime] unaligned: must be a boolean, not 'true'"),
        (dict(checkpointing_mode="at_least_once", unaligned=True),
         "[runtime] unaligned: unaligned checkpoints need checkpointing_mode 'exactly_once' (Flink refuses them "
         "with at-least-once)"),
        (dict(aligned_checkpoint_timeout=5),
         "[runtime] aligned_checkpoint_timeout: needs unaligned = true (the timeout switches an aligned checkpoint "
         "to unaligned)"),
        (dict(unaligned=True, aligned_checkpoint_timeout=-1),
         "[runtime] aligned_checkpoint_timeout: must be an integer >= 0, not -1"),
        (dict(max_concurrent_checkpoints=0), "[runtime] max_concurrent_checkpoints: must be an integer in [1, 100], "
                                             "not 0"),
        (dict(max_concurrent_checkpoints=101), "[runtime] max_concurrent_checkpoints: must be an integer in "
                                               "[1, 100], not 101"),
        (dict(failover_strategy="restart-all"),
         "[runtime] failover_strategy: must be 'region' or 'full', not 'restart-all'"),
        (dict(slots_per_task_manager=0), "[runtime] slots_per_task_manager: must be an integer in [1, 1024], not 0"),
        (dict(slots_per_task_manager=1025),
         "[runtime] slots_per_task_manager: must be an integer in [1, 1024], not 1025"),
        (dict(task_managers=0), "[runtime] task_managers: must be an integer in [1, 256], not 0"),
        (dict(task_managers=257), "[runtime] task_managers: must be an integer in [1, 256], not 257"),
    ]
    for runtime, message in cases:
        assert refused(lambda: rc(**runtime)) == message, runtime
    assert refused(lambda: rc(3, task_managers=1, slots_per_task_manager=2)) == (
        "[runtime] task_managers: 1 TaskManager(s) x 2 slot(s) = 2 slots, but the job needs 3 (it would wait for "
        "resources forever)")
    assert refused(lambda: rc(3, task_managers=2)) == (
        "[runtime] task_managers: 2 TaskManager(s) x 1 slot(s) = 2 slots, but the job needs 3 (it would wait for "
        "resources forever)")
    assert refused(lambda: runtime_config({"runtime": []}, GRAPH)) == "[runtime]: must be a table/object, not []"


def test_runtime_config_bounds_the_task_managers_a_job_needs(monkeypatch):
    # the limit lowered to 3 (its value is asserted above): small graphs reach it
    monkeypatch.setattr(jobfile, "MAX_TASK_MANAGERS", 3)
    g4 = stream_graph_from_dict(job(4))
    assert refused(runtime_config, {}, g4) == (
        "[runtime] slots_per_task_manager: the job needs 4 slots: with 1 per TaskManager that is 4 "
        "TaskManagers, more than the limit of 3")
    assert accepted(runtime_config, {}, stream_graph_from_dict(job(3))) == config(task_managers=3)
    assert accepted(runtime_config, {"runtime": {"slots_per_task_manager": 2}}, g4) == config(task_managers=2,
                                                                                   slots_per_task_manager=2)
    assert refused(runtime_config, {"runtime": {"task_managers": 4}}, g4) == (
        "[runtime] task_managers: must be an integer in [1, 3], not 4")


def test_cluster_shape():
    assert cluster_shape(3) == (3, 1)
    assert cluster_shape(0) == (1, 1)
    assert cluster_shape(1) == (1, 1)
    assert cluster_shape(3, None, 2) == (2, 2)
    assert cluster_shape(4, None, 2) == (2, 2)
    assert cluster_shape(5, None, 2) == (3, 2)
    assert cluster_shape(3, 5) == (5, 1)
    assert cluster_shape(3, 5, 4) == (5, 4)
    assert cluster_shape(3, 1, 1) == (1, 1)
    assert cluster_shape(3, None, 0) == (1, 0)
    assert cluster_shape(3, None, -1) == (1, -1)
    assert cluster_shape(3, None, 7) == (1, 7)


def test_required_slots():
    assert required_slots(GRAPH) == 1
    assert required_slots(stream_graph_from_dict(job(3))) == 3
    d = job(2)
    d["operators"][2].update(parallelism=4, slot_sharing_group="sinks")
    d["edges"][1]["partitioner"] = "rebalance"
    assert required_slots(stream_graph_from_dict(d)) == 2 + 4
    d["operators"][0]["parallelism"] = 5
    assert required_slots(stream_graph_from_dict(d)) == 5 + 4


def test_input_spec():
    assert accepted(input_spec, {}) == InputSpec()
    assert accepted(input_spec, {"input": {}}) == InputSpec()
    assert accepted(input_spec, {"input": {"records": 0, "keys": ["a"], "out_of_orderness": 0, "seed": 0}}) == InputSpec(
        records=0, keys=("a",), out_of_orderness=0, seed=0)
    assert accepted(input_spec, {"input": {"records": 10_000, "keys": ["x", "y"], "out_of_orderness": 1_000_000,
                                 "seed": INT_MIN}}) == InputSpec(records=10_000, keys=("x", "y"),
                                                                 out_of_orderness=1_000_000, seed=INT_MIN)
    spec = accepted(input_spec, {"input": {"keys": ["b", "a"]}})
    assert spec == InputSpec(keys=("b", "a")) and type(spec.keys) is tuple
    assert accepted(input_spec, {"input": {"seed": INT_MAX}}) == InputSpec(seed=INT_MAX)
    assert accepted(input_spec, {"input": {"seed": -1}}) == InputSpec(seed=-1)
    thousand = [f"k{i}" for i in range(1000)]
    assert accepted(input_spec, {"input": {"keys": thousand}}).keys == tuple(thousand)
    assert accepted(input_spec, {"input": {"keys": ["k" * 200, "x"]}}).keys == ("k" * 200, "x")


def test_input_spec_refusals():
    def msg(**table):
        return refused(input_spec, {"input": table})

    assert msg(records=-1) == "[input] records: must be an integer in [0, 10000], not -1"
    assert msg(records=10_001) == "[input] records: must be an integer in [0, 10000], not 10001"
    assert msg(records=True) == "[input] records: must be an integer in [0, 10000], not True"
    assert msg(keys=[]) == "[input] keys: must be a non-empty list of at most 1000 strings, not []"
    assert msg(keys="ab") == "[input] keys: must be a non-empty list of at most 1000 strings, not 'ab'"
    assert msg(keys=("a",)) == "[input] keys: must be a non-empty list of at most 1000 strings, not ('a',)"
    assert msg(keys=[f"k{i}" for i in range(1001)]) == (
        "[input] keys: must be a non-empty list of at most 1000 strings, not a list of 1001 items")
    assert msg(keys=["a", 1]) == "[input] keys[1]: must be a non-empty string of at most 200 characters, not 1"
    assert msg(keys=[""]) == "[input] keys[0]: must be a non-empty string of at most 200 characters, not ''"
    assert msg(keys=["a", "k" * 201]) == (
        "[input] keys[1]: must be a non-empty string of at most 200 characters, not "
        f"{'k' * 60!r}... (201 characters)")
    assert msg(keys=["a", "b", "b", "a"]) == "[input] keys: 'b' is listed twice"
    assert msg(keys=["a", "b", "a", "b"]) == "[input] keys: 'a' is listed twice"
    assert msg(out_of_orderness=-1) == "[input] out_of_orderness: must be an integer in [0, 1000000], not -1"
    assert msg(out_of_orderness=1_000_001) == (
        "[input] out_of_orderness: must be an integer in [0, 1000000], not 1000001")
    assert msg(seed=True) == f"[input] seed: must be an integer >= {INT_MIN}, not True"
    assert msg(seed=1.5) == f"[input] seed: must be an integer >= {INT_MIN}, not 1.5"
    assert msg(watermarks=3) == "[input]: unknown key 'watermarks' (known: records, keys, out_of_orderness, seed)"


def test_job_file_from_dict():
    data = job(2, runtime={"failover_strategy": "full"}, environment={"max_failures": 1},
               input={"records": 4, "seed": 9})
    before = copy.deepcopy(data)
    f = accepted(job_file_from_dict, data, "my.toml")
    assert f == JobFile(path="my.toml", graph=stream_graph_from_dict(data),
                        config=config(failover_strategy="full", task_managers=2),
                        input=InputSpec(records=4, seed=9),
                        environment=Environment(max_failures=1, trigger_delivery="at_once"))
    assert f.name == "tiny" and data == before
    assert accepted(job_file_from_dict, job()) == JobFile(path="job", graph=GRAPH, config=config(), input=InputSpec(),
                                                environment=Environment(max_failures=2, trigger_delivery="at_once"))
    assert refused(job_file_from_dict, [1], "f.toml") == "f.toml: must be a table/object, not [1]"
    assert refused(job_file_from_dict, None) == "job: must be a table/object, not None"
    assert refused(job_file_from_dict, job(runtime={"unaligned": 2}), "f.toml") == (
        "f.toml: [runtime] unaligned: must be a boolean, not 2")
    assert refused(job_file_from_dict, job(environment={"max_failures": -2}), "f.toml") == (
        "f.toml: [environment] max_failures: must be an integer in [0, 100], not -2")
    assert refused(job_file_from_dict, job(input={"records": -2}), "f.toml") == (
        "f.toml: [input] records: must be an integer in [0, 10000], not -2")
    assert refused(job_file_from_dict, job(400), "f.toml") == (
        "f.toml: job: the job would have up to 160400 channels, more than the model's limit of 100000 (lower the "
        "parallelism of all-to-all edges)")
    big = job(4000)
    assert refused(job_file_from_dict, big, "f.toml") == (
        "f.toml: job: the job has 12000 subtasks, more than the model's limit of 10000")
    bad = job()
    bad["operators"][0]["kind"] = "nope"
    assert refused(job_file_from_dict, bad, "f.toml").startswith("f.toml: operator 'src': ")


TOML = """
name = "tiny"
[[operators]]
name = "src"
kind = "source"
parallelism = 2
[[operators]]
name = "count"
kind = "keyed_aggregate"
aggregate = "count"
parallelism = 2
[[operators]]
name = "out"
kind = "sink"
sink_kind = "two_phase_commit"
parallelism = 2
[[edges]]
source = "src"
target = "count"
partitioner = "hash"
[[edges]]
source = "count"
target = "out"
partitioner = "forward"
"""


def test_load_job_file(tmp_path):
    p = tmp_path / "job.toml"
    p.write_text(TOML + '[runtime]\nslots_per_task_manager = 2\n[environment]\ntrigger_delivery = "any_order"\n'
                        '[input]\nkeys = ["x"]\n')
    f = accepted(load_job_file, p)
    assert f == JobFile(path=str(p), graph=stream_graph_from_dict(job(2)),
                        config=config(task_managers=1, slots_per_task_manager=2), input=InputSpec(keys=("x",)),
                        environment=Environment(max_failures=2, trigger_delivery="any_order"))
    assert accepted(load_job_file, str(p)) == f
    for table, message in [("[runtime]\nunaligned = 2\n", "[runtime] unaligned: must be a boolean, not 2"),
                           ("[environment]\nmax_failures = 101\n",
                            "[environment] max_failures: must be an integer in [0, 100], not 101"),
                           ("[input]\nrecords = -1\n", "[input] records: must be an integer in [0, 10000], not -1")]:
        p.write_text(TOML + table)
        assert refused(load_job_file, p) == f"{p}: {message}"


def test_generate_input_takes_every_value_of_the_spec():
    g = stream_graph_from_dict(job(2))
    spec = InputSpec(records=3, keys=("x", "y"), out_of_orderness=0, seed=5)
    inp = generate_input(g, spec, 123)
    assert isinstance(inp, JobInput) and list(inp.splits) == ["src"]
    splits = inp.splits["src"]
    assert type(splits) is tuple and len(splits) == 2
    for split in splits:
        assert type(split) is tuple and len(split) == 3
        times = [t for _, _, t in split]
        assert times == sorted(times) and times[0] >= 0 and all(b - a <= 3 for a, b in zip(times, times[1:]))
        assert {k for k, _, _ in split} <= {"x", "y"} and all(1 <= v <= 9 for _, v, _ in split)
    # the spec's seed wins over the run's; the run's seed draws when the spec names none
    assert generate_input(g, spec, 999) == inp
    assert generate_input(g, InputSpec(records=3, keys=("x", "y"), out_of_orderness=0), 5) == inp
    assert generate_input(g, InputSpec(records=3, keys=("x", "y"), out_of_orderness=0), 6) != inp
    assert generate_input(g, InputSpec(records=0), 1).splits == {"src": ((), ())}


def test_generate_input_is_the_same_records_for_a_seed():
    # the records one seed draws never change: a counterexample's input is drawn again from it
    g = stream_graph_from_dict(job(2))
    assert generate_input(g, InputSpec(records=5, keys=("a", "b"), out_of_orderness=3), 1).splits == {"src": (
        (("a", 4, 2), ("a", 1, -1), ("b", 3, 4), ("b", 5, 5), ("b", 1, 7)),
        (("a", 9, -1), ("a", 4, 2), ("a", 2, 2), ("a", 7, 1), ("b", 2, 4)))}
    g = stream_graph_from_dict(job(1))
    assert generate_input(g, InputSpec(), 7).splits == {"src": (
        (("k1", 7, 0), ("k4", 6, 0), ("k0", 4, 1), ("k1", 4, 4)),)}


def test_generate_input_lags_by_at_most_the_out_of_orderness():
    d = job(1)
    d["operators"][0]["watermark_out_of_orderness"] = 4
    g = stream_graph_from_dict(d)
    worst = {}
    for seed in range(20):
        for spec, bound in ((InputSpec(records=30), 4), (InputSpec(records=30, out_of_orderness=1), 1),
                            (InputSpec(records=30, out_of_orderness=0), 0)):
            (split,) = generate_input(g, spec, seed).splits["src"]
            assert len(split) == 30
            high = None
            for _, _, ts in split:
                if high is not None:
                    worst[bound] = max(worst.get(bound, 0), high - ts)
                high = ts if high is None else max(high, ts)
    # the source's own bound when the spec names none; the spec's otherwise; each one reached
    assert worst == {4: 4, 1: 1, 0: 0}


def test_generate_input_draws_3_to_8_records_and_the_keys_of_one_choice():
    g = stream_graph_from_dict(job(3))
    counts, keysets = set(), set()
    for seed in range(60):
        splits = generate_input(g, InputSpec(), seed).splits["src"]
        assert len(splits) == 3
        counts |= {len(s) for s in splits}
        keys = frozenset(k for s in splits for k, _, _ in s)
        assert any(keys <= set(c) for c in jobfile._KEY_CHOICES)
        keysets.add(next(c for c in jobfile._KEY_CHOICES if keys <= set(c)))
    assert counts == {3, 4, 5, 6, 7, 8}
    assert keysets == set(jobfile._KEY_CHOICES)


def test_load_job_file_of_a_checked_graph(tmp_path, monkeypatch):
    import model.jobgraph  # load_job_file's graph checks: stood in for, the tables are read as written

    monkeypatch.setattr(model.jobgraph, "load_job_graph", lambda p: type("Loaded", (), {"stream_graph": GRAPH}))
    p = tmp_path / "job.toml"
    p.write_text('[runtime]\nfailover_strategy = "full"\n[environment]\nmax_failures = 0\n[input]\nrecords = 2\n')
    assert accepted(load_job_file, p) == JobFile(
        path=str(p), graph=GRAPH, config=config(failover_strategy="full"), input=InputSpec(records=2),
        environment=Environment(max_failures=0, trigger_delivery="at_once"))
    # a file gone after its graph was checked: the second read's refusal names the file
    gone = tmp_path / "gone.toml"
    assert refused(load_job_file, gone) == f"{gone}: cannot read the job spec: no such file"


def test_generate_input_draws_for_every_source_wherever_it_is_declared():
    d = job(1)
    d["operators"] = [d["operators"][1], d["operators"][0], d["operators"][2]]
    g = stream_graph_from_dict(d)
    assert [o.name for o in g.operators] == ["count", "src", "out"]
    inp = generate_input(g, InputSpec(records=2, keys=("a",)), 0)
    assert list(inp.splits) == ["src"] and [len(s) for s in inp.splits["src"]] == [2]
