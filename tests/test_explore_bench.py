"""`flinkspec bench explore` on small arguments: it runs to its JSON figures, and the
fingerprint it compares against (the canonical form serialized by ``marshal``, fresh
identifiers ranked in the bytes) tells the sampled states apart exactly as
``Cluster.fingerprint`` does. Its timings are not checked (docs/performance.md holds them)."""

from __future__ import annotations

import pytest

from benchmarks import explore_bench as B


def test_the_marshal_fingerprint_equates_exactly_the_states_the_fingerprint_equates():
    states = [s[0] for s in B._sample_states("unaligned-savepoints-2pc", 60, 0)]
    by_fp: dict = {}
    by_marshal: dict = {}
    for i, c in enumerate(states):
        by_fp.setdefault(c.fingerprint(), set()).add(i)
        by_marshal.setdefault(B._marshal_fingerprint(c), set()).add(i)
    assert sorted(map(sorted, by_fp.values())) == sorted(map(sorted, by_marshal.values()))
    assert len(by_fp) > 10  # the sample holds distinct states


@pytest.mark.slow  # ~9 s: every search of the benchmark, small; the marshal fingerprint above runs by default
def test_bench_explore_gives_its_figures_on_small_arguments():
    row = B.bench_explore("aligned-2pc", max_states=80, samples=4, repeat=1, workers_variant="aligned-2pc",
                          gc_max_states=150)
    assert row["verdict"] == "bounded" and row["distinct_states"] >= 80
    for key in ("states_per_cpu_s", "copy_us", "fingerprint_us", "fingerprint_marshal_us", "step_us",
                "gc_distinct_states", "bytes_per_state_frontier_traces"):
        assert row[key] > 0, (key, row)
