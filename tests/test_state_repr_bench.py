"""benchmarks/state_repr.py: its correctness checks, not its timings.

Every representation, replaying the changes recorded on real walks, gives back every recorded
view, and its digest is equal exactly for equal views; the checks fail on a representation that
drops a change or whose digest misses a difference; the quick run gives every figure."""

import pytest

from benchmarks import state_repr as sr


@pytest.fixture(scope="module")
def walks():
    return sr.record_walks(("aligned-2pc", "cp-region-failover"), 12, 0)


def test_walks_are_real_and_changing(walks):
    assert {w.variant for w in walks} == {"aligned-2pc", "cp-region-failover"}
    for w in walks:
        assert len(w.views) == len(w.tries) + 1 == len(w.clusters)
        # the recorded changes are what differs between consecutive views: none exactly when equal
        for a, b, ch in zip(w.views, w.views[1:], w.changes):
            assert (ch == []) == sr._eq(a, b)


@pytest.mark.parametrize("rep", sr.representations(), ids=lambda r: r.name)
def test_each_representation_round_trips_and_digests_exactly(rep, walks):
    figures = sr.check(rep, walks)  # raises on a view not given back, or a digest that is not exact
    views = {sr.encode(v) for w in walks for v in w.views}
    assert figures["distinct_views"] == len(views) > 1
    if rep.digest_exact:
        assert figures["fingerprint_collisions"] == figures["fingerprint_splits"] == 0


def test_digest_of_hashcons_is_the_attrs_digest(walks):
    # the two digest-caching representations compute the same Merkle digest independently
    hc, at = sr.HashCons(), sr.Attrs()
    for w in walks:
        for a, b in zip(sr.replay(hc, w), sr.replay(at, w)):
            assert hc.fingerprint(a) == at.fingerprint(b)


def test_check_finds_a_dropped_change(walks):
    class Lossy(sr.Tuples):
        def apply(self, node, trie):  # forgets every leaf replaced in place
            ops = [op for op in trie["ops"] if (op[3] - op[2], len(op[4])) != (1, 1) or type(op[4][0]) is tuple]
            return tuple(sr._patch(list(node), {"sub": trie["sub"], "ops": ops}, self.apply, self.build))

    with pytest.raises(AssertionError, match="does not round-trip"):
        sr.check(Lossy("blake2b"), walks)


def test_check_finds_a_digest_that_misses_a_difference(walks):
    class Blind(sr.HashCons):
        def make(self, kids):  # the digest of a node ignores its leaves
            return sr.Node(kids, sr._digest(b"".join(b"#" + k.digest for k in kids if type(k) is sr.Node)))

    with pytest.raises(AssertionError, match="two views share a fingerprint"):
        sr.check(Blind(intern=False), walks)


def test_quick_run_gives_every_figure():
    fig = sr.bench_state_repr(quick=True, steps=6, repeat=1)
    assert set(fig["representations"]) == {r.name for r in sr.representations()}
    for r in fig["representations"].values():
        assert set(r["by_variant"]) == {"aligned-2pc", "cp-region-failover", "all"}
        for f in r["by_variant"].values():
            assert f["step_us"] > 0 and f["bytes_per_state"] > 0
        assert r["distinct_views"] > 1 and r["estimated_states_per_cpu_s"] > 0
    assert fig["mutable_graph"]["all"]["bytes_per_state"] > 0
    assert fig["hashcons_nodes"]["aligned-2pc"]["nodes_made_per_step"] > 0
    assert fig["shape"]["all"]["steps"] == 12
