"""The explorer spilled to disk (properties/explore_spill.py): with a memory budget of a few
fingerprints, so that the seen set, the level being built and the frontier are written to disk
at every level, a search gives the states, counts, depths, verdict and counterexample of the
search in memory -- in one process and on worker processes, resumed from a checkpoint or not --
expands the same states in the same order, removes its files however it ends, and ends
``bounded`` when the disk bound is reached or the disk is full."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from flinkspec.cli import main
from model.variants import small_scenario, variant
from properties import explore as E
from properties import explore_spill as S
from properties.explore import Limits, SearchCheckpoint, StopRequest, explore
from properties.explore_workers import ProcessLevels

#: a budget of a few fingerprints and states: every level writes to disk
TINY = 2000


def _small(name: str, **changes):
    v = variant(name)
    return small_scenario(attrs.evolve(v, small=attrs.evolve(v.small, **changes)))


def _figures(r) -> tuple:
    return (r.verdict, r.distinct_states, r.transitions, r.depth, r.drained_states, r.complete, r.trace,
            r.violation.invariant if r.violation else None, r.limit)


@pytest.fixture(params=[("aligned-2pc", {}), ("append-sink-under-failures", {}), ("aligned-2pc", {"failures": 0})],
                ids=["verified", "violation", "verified-no-failure"], scope="module")
def case(request):
    name, changes = request.param
    sc = _small(name, **changes)
    return sc, explore(sc, Limits(spill=False))


@pytest.fixture
def lookups(monkeypatch):
    """How many candidates the searches found on disk (the merge at the end of a level)."""
    found = [0]
    known = S.Lookup.known

    def counted(self, digests):
        out = known(self, digests)
        found[0] += len(out)
        return out

    monkeypatch.setattr(S.Lookup, "known", counted)
    return found


@pytest.mark.parametrize("frontier", ["traces", "runs", "auto"])
def test_a_spilled_search_gives_the_search_in_memory(case, frontier, tmp_path, lookups):
    sc, whole = case
    r = explore(sc, Limits(frontier=frontier, spill_memory=TINY, spill_dir=str(tmp_path)))
    assert _figures(r) == _figures(whole)
    assert r.spilled_bytes > 0 and whole.spilled_bytes == 0
    assert list(tmp_path.iterdir()) == []  # the spill folder is removed


def test_the_merge_at_the_end_of_a_level_drops_states_seen_only_on_disk(lookups):
    """aligned-2pc's small space reaches states again at a later depth: with a tiny budget they
    are no longer in memory, and the search still counts each once (the figures above)."""
    sc = _small("aligned-2pc")
    whole = explore(sc, Limits(spill=False))
    r = explore(sc, Limits(frontier="traces", spill_memory=TINY))
    assert lookups[0] > 0
    assert _figures(r) == _figures(whole)


def test_a_spilled_search_expands_the_same_states_in_the_same_order(case):
    sc, _whole = case
    orders = []
    for limits in (Limits(spill=False), Limits(frontier="traces", spill_memory=TINY)):
        seen = []
        explore(sc, limits, inspect=lambda run: seen.append(run.fingerprint()))
        orders.append(seen)
    assert orders[0] == orders[1] and len(orders[0]) > 1


def test_worker_processes_with_a_spilled_seen_set_give_the_search_of_one_process(case, tmp_path):
    sc, whole = case
    with ProcessLevels(sc, True, 2) as levels:
        r = explore(sc, Limits(frontier="traces", spill_memory=TINY, spill_dir=str(tmp_path)), levels=levels)
    assert _figures(r) == _figures(whole) and r.workers == 2 and r.spilled_bytes > 0
    assert list(tmp_path.iterdir()) == []


def test_a_spilled_search_resumed_from_its_checkpoint_ends_where_an_uninterrupted_one_ends(case, tmp_path):
    sc, whole = case
    cp = SearchCheckpoint(path=tmp_path / "s.checkpoint", every=0.0)
    spilled = Limits(frontier="traces", spill_memory=TINY)
    first = explore(sc, attrs.evolve(spilled, max_depth=3), checkpoint=cp)
    assert first.verdict == "bounded" and first.spilled_bytes > 0
    final = explore(sc, spilled, checkpoint=cp, resume=cp.path)
    assert _figures(final) == _figures(whole)
    # and a checkpoint of a spilled search resumes in memory, and the other way round
    assert _figures(explore(sc, Limits(spill=False), resume=cp.path)) == _figures(whole)
    explore(sc, Limits(spill=False, max_depth=4), checkpoint=cp)
    assert _figures(explore(sc, spilled, resume=cp.path)) == _figures(whole)


@pytest.mark.parametrize("how", ["stop", "max_states", "max_depth", "inspect raises"])
def test_the_spill_files_are_removed_however_the_search_ends(how, tmp_path):
    sc = _small("aligned-2pc")
    limits = Limits(frontier="traces", spill_memory=TINY, spill_dir=str(tmp_path))
    stop = StopRequest()
    kw = {}
    if how == "stop":
        kw["progress"] = lambda p: stop.request("SIGTERM") if p.depth == 5 else None
        kw["stop"] = stop
    elif how == "max_states":
        limits = attrs.evolve(limits, max_states=100)
    elif how == "max_depth":
        limits = attrs.evolve(limits, max_depth=6)
    else:
        def inspect(run):
            if len(run.cluster.trace) == 6:
                raise RuntimeError("inspect")
        kw["inspect"] = inspect
    spilled = []
    real = S.Spill.write

    def write(self, path, chunks):
        spilled.append(path)
        return real(self, path, chunks)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S.Spill, "write", write)
        if how == "inspect raises":
            with pytest.raises(RuntimeError):
                explore(sc, limits, **kw)
        else:
            r = explore(sc, limits, **kw)
            assert r.verdict == "bounded"
    assert spilled  # the search did write to disk before it ended
    assert list(tmp_path.iterdir()) == []


def test_the_disk_bound_ends_the_search_bounded_and_names_it(tmp_path):
    sc = _small("aligned-2pc")
    r = explore(sc, Limits(frontier="traces", spill_memory=TINY, max_disk=3 << 10, spill_dir=str(tmp_path)))
    assert r.verdict == "bounded" and not r.complete and r.limit == "max_disk=3K"
    assert 0 < r.spilled_bytes <= 3 << 10
    assert 1 < r.distinct_states < explore(sc).distinct_states
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_ends_the_search_bounded_and_names_it(tmp_path, monkeypatch):
    sc = _small("aligned-2pc")
    real_open = open
    writes = [0]

    class Full:
        def __init__(self, f):
            self.f = f

        def write(self, data):
            writes[0] += 1
            if writes[0] > 5:
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.f.write(data)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def full_open(path, mode="r", *a, **k):
        f = real_open(path, mode, *a, **k)
        return Full(f) if "w" in mode or "a" in mode else f

    monkeypatch.setattr(S, "open", full_open, raising=False)
    r = explore(sc, Limits(frontier="traces", spill_memory=TINY, spill_dir=str(tmp_path)))
    assert r.verdict == "bounded" and r.limit.startswith("disk full (")
    assert list(tmp_path.iterdir()) == []


def test_the_seen_set_on_disk_holds_every_fingerprint_once_and_finds_exactly_those(tmp_path):
    """Runs written past the budget, merged past ``MAX_RUNS``: iterated, the set gives every
    fingerprint in order; looked up in increasing batches, exactly those on disk are found."""
    rng = random.Random(7)
    spill = S.Spill(S.SEEN_ENTRY * 2 * 50, tmp_path)  # 50 fingerprints in memory
    try:
        seen = S.SeenSet((), spill)
        added = []
        for _ in range(3 * S.MAX_RUNS):  # enough runs to be merged twice
            fps = [f"{rng.getrandbits(128):032x}" for _ in range(rng.randrange(51, 90))]
            seen.update(fps)
            added += fps
            seen.settle()
        assert len(seen.runs) <= S.MAX_RUNS and seen.on_disk == len(added) - len(seen.memory)
        assert list(seen) == sorted(added) and len(seen) == len(added)
        on_disk = set(added) - seen.memory
        queries = sorted({bytes.fromhex(f) for f in rng.sample(added, 200)}
                         | {rng.getrandbits(128).to_bytes(16, "big") for _ in range(200)})
        lookup = seen.lookup()
        found = set()
        for i in range(0, len(queries), 37):
            found |= lookup.known(queries[i:i + 37])
        lookup.close()
        assert found == {q for q in queries if q.hex() in on_disk}
    finally:
        spill.close()
    assert not spill.dir.exists()


def test_cli_spill_options(capsys, tmp_path):
    args = ["explore", "--variant", "aligned-2pc", "--small", "--json", "--frontier", "traces"]
    assert main([*args, "--no-spill"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main([*args, "--spill-memory", "2K", "--spill-dir", str(tmp_path)]) == 0
    spilled = json.loads(capsys.readouterr().out)
    assert whole["spilled_bytes"] == 0 and spilled["spilled_bytes"] > 0
    assert {k: v for k, v in spilled.items() if k not in ("seconds", "states_per_s", "spilled_bytes")} == \
        {k: v for k, v in whole.items() if k not in ("seconds", "states_per_s", "spilled_bytes")}
    assert main([*args, "--spill-memory", "2K", "--max-disk", "3K", "--spill-dir", str(tmp_path)]) == 0
    bounded = json.loads(capsys.readouterr().out)
    assert bounded["verdict"] == "bounded" and bounded["limit"] == "max_disk=3K"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv,needle", [
    (["--no-spill", "--max-disk", "1G"], "--no-spill goes without"),
    (["--spill-memory", "some"], "not a memory size: 'some'"),
    (["--max-disk", "-1"], "must be positive"),
    (["--spill-dir", "/proc/no/such"], "--spill-dir folder"),
])
def test_cli_bad_spill_arguments_are_one_line(argv, needle, capsys):
    assert main(["explore", "--variant", "aligned-2pc", "--small", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def _holds_spilled_files(folder: Path) -> bool:
    """Whether the search has spilled: a folder of ``folder`` holds a file. An entry may be a
    file being written atomically, or vanish while it is read: not yet, then."""
    try:
        return any(f for d in folder.iterdir() if d.is_dir() for f in d.iterdir())
    except OSError:
        return False


def test_sigterm_ends_a_spilling_search_and_removes_its_files(tmp_path):
    """A search spilling at every level gets SIGTERM once its spill folder holds files: it
    prints its row (bounded, stopped by SIGTERM), exits 130 and leaves no file behind."""
    root = Path(__file__).resolve().parent.parent
    env = dict(os.environ, FLINKSPEC_PROGRESS="0.3")
    cmd = [sys.executable, "-m", "flinkspec", "explore", "--variant", "unaligned-2pc", "--max-seconds", "300",
           "--frontier", "traces", "--spill-memory", "20K", "--spill-dir", str(tmp_path)]
    p = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _holds_spilled_files(tmp_path):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "bounded" in out and "stopped by SIGTERM" in out and "spilled to disk" in out
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_spill_folder_that_cannot_be_made_ends_the_search_bounded_when_it_is_needed(tmp_path):
    sc = _small("aligned-2pc")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    # a budget the search never passes: no folder is needed, none is made
    assert _figures(explore(sc, Limits(spill_memory=1 << 30, spill_dir=str(not_a_folder)))) == \
        _figures(explore(sc, Limits(spill=False)))
    r = explore(sc, Limits(spill_memory=TINY, spill_dir=str(not_a_folder)))
    assert r.verdict == "bounded" and r.limit.startswith(f"no spill folder in {not_a_folder}")


def test_the_files_of_a_level_and_of_a_frontier_are_merged_past_a_bound(case, tmp_path, monkeypatch):
    """Each level file and frontier chunk is read at once: past ``MAX_FILES`` they are merged
    into one (a level's records of one state combined by the search's rule), so a budget far
    below a level's size opens few files, with the figures of the search in memory."""
    sc, whole = case
    monkeypatch.setattr(E, "MAX_FILES", 3)
    most = [0]

    def count(_p):
        for d in tmp_path.iterdir():
            names = [f.name for f in d.iterdir()]
            most[0] = max(most[0], sum(n.startswith(("level-", "frontier-")) for n in names))

    r = explore(sc, Limits(frontier="traces", spill_memory=TINY, spill_dir=str(tmp_path)), progress=count)
    assert _figures(r) == _figures(whole)
    assert 0 < most[0] <= 3 + 1  # the frontier's chunks after a level (its level's files are removed)
