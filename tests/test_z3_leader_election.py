"""spec/z3_leader_election.py: z3 checks of leader election with fencing (2 JobManagers, 1
TaskExecutor, crashes), and the encoding's election rule against the model's ZooKeeper store."""

from __future__ import annotations

import random

import pytest

from model import highavailability as ha
from spec import proofs
from spec.z3_leader_election import CHECKS, Scope, check, check_inductive, leader_of


def test_the_encodings_election_is_the_stores_latch():
    """Random joins, session expiries, suspensions and reconnections of two processes: the
    encoding's rule (the live latch with the smallest sequence number leads, suspended or not;
    sequence numbers count creations; the token is the number + 1; RECONNECTED without the
    tolerate knob resets the latch: a new node at the end of the queue) names the leader
    ``latch_leader`` names, with the token ``token_of`` gives."""
    for seed in range(40):
        rng = random.Random(seed)
        tolerate = seed % 2 == 1
        store = ha.ZooKeeperStore()
        store.create(ha.LATCH, make_parents=True)
        sessions, latches, paths, sids, nseq = [False, False], [0, 0], [None, None], [0, 0], 0
        suspended = [False, False]
        for _ in range(16):
            j = rng.randrange(2)
            if not sessions[j]:
                sids[j] = store.open_session()
                paths[j] = store.create(ha.LATCH + "/latch-", ephemeral=True, sequential=True, session=sids[j])
                sessions[j], latches[j], nseq = True, nseq, nseq + 1
            elif suspended[j] and rng.random() < 0.5:
                store.reconnect(sids[j])
                suspended[j] = False
                if not tolerate:  # LeaderLatch.reset
                    store.delete(paths[j])
                    paths[j] = store.create(ha.LATCH + "/latch-", ephemeral=True, sequential=True, session=sids[j])
                    latches[j], nseq = nseq, nseq + 1
            elif not suspended[j] and rng.random() < 0.5:
                store.suspend(sids[j])
                suspended[j] = True
            else:
                store.expire_session(sids[j])
                sessions[j], suspended[j] = False, False
            assert [sid in store.suspended for sid in sids] == [s and sessions[i] for i, s in enumerate(suspended)]
            lead = leader_of(sessions, latches)
            assert (None if lead is None else paths[lead]) == ha.latch_leader(store)
            if lead is not None:
                assert ha.token_of(ha.latch_leader(store)) == latches[lead] + 1


#: the registered check whose search takes half a minute (a 10-step search with two faults): run
#: in the slow run (and by ``flinkspec prove``/``make check``), the others by default
TOKEN_PER_PROCESS = "leader_fencing_mutant_token_per_process"


class _Runs(dict):
    """name -> the ProofRun of a registered check, run through ``spec.proofs`` when first asked."""

    def __init__(self):
        super().__init__()
        self.registry = proofs.load_all()

    def __missing__(self, name):
        run = self[name] = proofs.run_check(self.registry[name], timeout_s=120)
        return run


@pytest.fixture(scope="module")
def registered():
    return _Runs()


def test_the_design_is_proved_by_induction_and_the_mutations_give_counterexamples(registered):
    assert registered["leader_fencing_inductive"].result == "proved"  # check_inductive(Scope())
    run = registered["leader_fencing_mutant_no_fencing"]  # check(Scope(fencing=False, steps=6))
    assert run.result == "counterexample" and run.counterexample["actions"][-1].startswith("DeliverRpc")
    # a token per process: the invariant is not inductive (two faults break fencing: below, slow)
    assert check_inductive(Scope(token="process"))[0] == "counterexample"


@pytest.mark.slow
def test_a_token_per_process_is_broken_by_two_faults(registered):
    run = registered[TOKEN_PER_PROCESS]  # check(Scope(token="process", steps=10))
    assert run.result == "counterexample", run.details
    faults = [a for a in run.counterexample["actions"] if a.startswith(("CrashJobManager", "ExpireSession"))]
    assert len(faults) >= 2, run.counterexample


def test_suspended_connections_revoked_or_fenced_keep_one_leader_and_tolerated_unfenced_do_not(registered):
    """Fencing holds whether SUSPENDED revokes leadership or is tolerated; with SUSPENDED
    revoking, no two leaders act at once even unfenced; tolerated and unfenced, the search
    finds two leaders acting at once, from one suspension and no other fault: the leader's
    session is LOST while it still leads, the other process is granted, the deposed one acts."""
    assert registered["leader_fencing_tolerate_suspended_inductive"].result == "proved"
    assert registered["leader_exclusion_revoke_on_suspended_inductive"].result == "proved"
    run = registered["leader_exclusion_mutant_tolerate_suspended_no_fencing"]
    assert run.result == "counterexample", run.details
    acts = run.counterexample["actions"]
    assert not any(a.startswith("CrashJobManager") for a in acts), acts
    suspended = [a for a in acts if a.startswith("ConnectionSuspended")]
    assert len(suspended) == 1, acts
    j = suspended[0][len("ConnectionSuspended("):-1]
    other = str(1 - int(j))
    assert acts.index(f"ExpireSession({j})") > acts.index(suspended[0])  # LOST after SUSPENDED
    granted = acts.index(f"LeaderLatchEvent({other})")
    assert granted > acts.index(f"ExpireSession({j})")
    last = acts[-1]
    assert last == f"WriteStore({j})" or (last.startswith("DeliverRpc") and f"SendRpc({j}," in " ".join(acts[granted:]))
    # the same run with SUSPENDED revoking: the proof's scope bounded, nothing found
    unfenced = Scope(fencing=False, goal="exclusion", fault_kinds=("suspend",), faults=1, steps=6)
    assert check(unfenced)[0] == "proved"


def test_what_the_exclusion_proof_leaves_out_has_counterexamples():
    """Why the exclusion proof's scope is what it is: with SUSPENDED tolerated its invariant
    is not inductive; a pause past the session timeout (a living, connected process's session
    expires) makes two leaders act at once whatever the knob; and with SUSPENDED tolerated,
    fencing does not stop a deposed leader's RPC to a TaskExecutor that has not retrieved the
    new leader yet (it stops what fencing is for: RPCs of another leadership than the one
    followed)."""
    no_pause = ("crash", "suspend")
    assert check_inductive(Scope(fencing=False, goal="exclusion", fault_kinds=no_pause, tolerate=True))[0] \
        == "counterexample"
    result, _, cex = check(Scope(fencing=False, goal="exclusion", fault_kinds=("expire",), faults=1, steps=6))
    assert result == "counterexample" and not any(a.startswith("ConnectionSuspended") for a in cex["actions"])
    result, _, cex = check(Scope(tolerate=True, goal="exclusion", fault_kinds=("suspend",), faults=1, steps=8))
    assert result == "counterexample" and cex["actions"][-1].startswith("DeliverRpc"), cex


@pytest.mark.parametrize("name, scope_text, expected", [
    pytest.param(name, scope_text, expected, id=name,
                 marks=[pytest.mark.slow] if name == TOKEN_PER_PROCESS else [])
    for name, scope_text, expected, _scope, _inductive in CHECKS])
def test_every_registered_check_gives_its_expected_result(registered, name, scope_text, expected):
    run = registered[name]
    assert run.result == expected and run.scope == scope_text, (name, run.details)


@pytest.mark.slow
def test_a_token_per_process_needs_two_faults_and_the_design_holds_bounded():
    """Bounded model checking, 10 steps: with one fault the token-per-process mutation keeps
    fencing (its counterexample needs two); the design holds with two."""
    assert check(Scope(token="process", faults=1, steps=10))[0] == "proved"
    assert check(Scope(steps=8))[0] == "proved"
