"""spec/z3_leader_election.py: z3 checks of leader election with fencing (2 JobManagers, 1
TaskExecutor, crashes), and the encoding's election rule against the model's ZooKeeper store."""

from __future__ import annotations

import random

import pytest

from model import highavailability as ha
from spec import proofs
from spec.z3_leader_election import CHECKS, Scope, check, check_inductive, leader_of


def test_the_encodings_election_is_the_stores_latch():
    """Random joins and session expiries of two processes: the encoding's rule (the live latch
    with the smallest sequence number leads; sequence numbers count creations; the token is the
    number + 1) names the leader ``latch_leader`` names, with the token ``token_of`` gives."""
    for seed in range(40):
        rng = random.Random(seed)
        store = ha.ZooKeeperStore()
        store.create(ha.LATCH, make_parents=True)
        sessions, latches, paths, sids, nseq = [False, False], [0, 0], [None, None], [0, 0], 0
        for _ in range(12):
            j = rng.randrange(2)
            if sessions[j]:
                store.expire_session(sids[j])
                sessions[j] = False
            else:
                sids[j] = store.open_session()
                paths[j] = store.create(ha.LATCH + "/latch-", ephemeral=True, sequential=True, session=sids[j])
                sessions[j], latches[j], nseq = True, nseq, nseq + 1
            lead = leader_of(sessions, latches)
            assert (None if lead is None else paths[lead]) == ha.latch_leader(store)
            if lead is not None:
                assert ha.token_of(ha.latch_leader(store)) == latches[lead] + 1


@pytest.fixture(scope="module")
def registered():
    """name -> the ProofRun of each registered check, run once through ``spec.proofs`` (the
    token-per-process search alone takes seconds)."""
    registry = proofs.load_all()
    return {name: proofs.run_check(registry[name], timeout_s=120) for name, *_ in CHECKS}


def test_the_design_is_proved_by_induction_and_the_mutations_give_counterexamples(registered):
    assert registered["leader_fencing_inductive"].result == "proved"  # check_inductive(Scope())
    run = registered["leader_fencing_mutant_no_fencing"]  # check(Scope(fencing=False, steps=6))
    assert run.result == "counterexample" and run.counterexample["actions"][-1].startswith("DeliverRpc")
    # a token per process: the invariant is not inductive, and two faults break fencing
    assert check_inductive(Scope(token="process"))[0] == "counterexample"
    run = registered["leader_fencing_mutant_token_per_process"]  # check(Scope(token="process", steps=10))
    assert run.result == "counterexample", run.details
    faults = [a for a in run.counterexample["actions"] if a.startswith(("CrashJobManager", "ExpireSession"))]
    assert len(faults) >= 2, run.counterexample


def test_every_registered_check_gives_its_expected_result(registered):
    for name, scope_text, expected, _scope, _inductive in CHECKS:
        run = registered[name]
        assert run.result == expected and run.scope == scope_text, (name, run.details)


@pytest.mark.slow
def test_a_token_per_process_needs_two_faults_and_the_design_holds_bounded():
    """Bounded model checking, 10 steps: with one fault the token-per-process mutation keeps
    fencing (its counterexample needs two); the design holds with two."""
    assert check(Scope(token="process", faults=1, steps=10))[0] == "proved"
    assert check(Scope(steps=8))[0] == "proved"
