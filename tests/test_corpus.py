"""The committed corpus changes only on purpose: commands write into run directories under
results/, and ``flinkspec corpus update`` merges them, keeping the shortest counterexample per
(variant, invariant), reporting every change and never deleting a file a doc names."""

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest

from flinkspec.cli import main
from model.variants import generate, variant
from properties.corpus import candidate, named_by_docs, plan_update, run_directories, run_directory, update_corpus
from properties.counterexample import corpus_files, load_counterexample, write_counterexample
from properties.engines import random_walk, replay, shrink

ROOT = Path(__file__).resolve().parents[1]
NAME = "at-least-once-2pc"


@pytest.fixture(scope="module")
def failing_walk():
    """A failing walk of at-least-once-2pc: (scenario, its actions up to the violation, the shrunk actions)."""
    v = variant(NAME)
    for seed in range(60):
        r = random_walk(v, seed)
        if r.verdict == "violation":
            sc = generate(v, seed)
            small = shrink(sc, list(r.actions), r.invariant)
            assert len(small) < len(r.actions)
            return seed, sc, list(r.actions), small
    pytest.fail("no violation found")


def _write(directory, failing_walk, actions, name=NAME):
    seed, sc, _, _ = failing_walk
    vio, _ = replay(sc, actions, finish=True)
    return write_counterexample(directory, variant=name, expected=variant(NAME).expected, engine="random_walk",
                                seed=seed, scenario=sc, actions=actions, violation=vio)


def _listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*.ndjson"))


# -- run directories -----------------------------------------------------------------------------

def test_run_directories_are_named_by_command_time_and_seed_and_never_shared(tmp_path):
    now = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc)
    a = run_directory("check", 3, root=tmp_path, now=now)
    b = run_directory("check", 3, root=tmp_path, now=now)
    c = run_directory("explore", None, root=tmp_path, now=now)
    assert a.name == "check-20250304T050607Z-seed3" and b.name == "check-20250304T050607Z-seed3-2"
    assert c.name == "explore-20250304T050607Z"
    assert a.is_dir() and b.is_dir() and not any(a.iterdir())
    with pytest.raises(ValueError, match="command"):
        run_directory("../x", 1, root=tmp_path)


def test_run_directories_lists_folders_holding_counterexamples_at_any_depth(tmp_path, failing_walk):
    _write(tmp_path / "check-1", failing_walk, failing_walk[3])
    _write(tmp_path / "spark-replay-2" / "counterexamples", failing_walk, failing_walk[3])
    (tmp_path / "empty-3").mkdir()
    assert run_directories(tmp_path) == [tmp_path / "check-1", tmp_path / "spark-replay-2" / "counterexamples"]
    assert run_directories(tmp_path / "missing") == []


def test_every_default_output_directory_is_ignored_by_git():
    paths = ["results/check-x/consistent_cut/a.ndjson", "spark-replay-out/runs/x", ".hypothesis/x"]
    got = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    assert got.stdout.split() == paths


# -- the update ----------------------------------------------------------------------------------

def test_update_adds_then_replaces_by_a_shorter_one_and_a_longer_one_changes_nothing(tmp_path, failing_walk):
    _, _, long_actions, short_actions = failing_walk
    long_dir, short_dir, corpus = tmp_path / "run-long", tmp_path / "run-short", tmp_path / "corpus"
    long_file = _write(long_dir, failing_walk, long_actions)
    short_file = _write(short_dir, failing_walk, short_actions)
    docs = tmp_path / "docs-root"
    docs.mkdir()

    ch = update_corpus([long_dir], corpus, dry_run=False, docs_root=docs)
    assert [(c.action, c.relname, c.steps) for c in ch.changes] == \
        [("add", f"{long_file.parent.name}/{long_file.name}", len(long_actions))]
    assert _listing(corpus) == _listing(long_dir)

    plan = update_corpus([short_dir], corpus, dry_run=True, docs_root=docs)
    assert [c.action for c in plan.changes] == ["replace"] and plan.dry_run
    assert _listing(corpus) == _listing(long_dir), "a dry run wrote something"
    assert "dry run: nothing written" in plan.lines()[-1]

    ch = update_corpus([short_dir], corpus, dry_run=False, docs_root=docs)
    (rep,) = ch.changes
    assert (rep.action, rep.replaced_steps, rep.steps) == ("replace", len(long_actions), len(short_actions))
    assert _listing(corpus) == _listing(short_dir)
    assert (corpus / rep.relname).read_bytes() == short_file.read_bytes()

    again = update_corpus([long_dir], corpus, dry_run=False, docs_root=docs)
    assert again.changes == () and again.unchanged == 1 and not again.changed
    assert _listing(corpus) == _listing(short_dir)
    assert not list(corpus.rglob(".tmp-*"))


def test_ties_are_broken_by_name_whatever_the_order_of_the_sources(tmp_path, failing_walk):
    _, _, _, short = failing_walk
    a = _write(tmp_path / "a", failing_walk, short)
    # the same actions under another variant name would be another key; a different seed
    # field gives the same length and a different name
    seed, sc, _, _ = failing_walk
    vio, _ = replay(sc, short, finish=True)
    b = write_counterexample(tmp_path / "b", variant=NAME, expected=variant(NAME).expected, engine="spark-replay",
                             seed=seed, scenario=sc, actions=short, violation=vio)
    assert a.name != b.name
    one = update_corpus([tmp_path / "a", tmp_path / "b"], tmp_path / "c1", dry_run=False, docs_root=tmp_path)
    two = update_corpus([tmp_path / "b", tmp_path / "a"], tmp_path / "c2", dry_run=False, docs_root=tmp_path)
    assert _listing(tmp_path / "c1") == _listing(tmp_path / "c2") == [f"consistent_cut/{min(a.name, b.name)}"]
    assert [c.action for c in one.changes] == [c.action for c in two.changes] == ["add"]


def test_a_file_a_doc_names_is_kept_and_reported(tmp_path, failing_walk):
    _, _, long_actions, short_actions = failing_walk
    corpus = tmp_path / "counterexamples"
    long_file = _write(corpus, failing_walk, long_actions)
    rel = f"counterexamples/{long_file.parent.name}/{long_file.name}"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "walkthrough.md").write_text(f"see `{rel}`\n")
    # a generated page naming every file does not protect it
    (tmp_path / "docs" / "list.md").write_text(f"This page is generated by a tool. `{rel}`\n")
    assert named_by_docs(tmp_path) == {rel: ["docs/walkthrough.md"]}
    _write(tmp_path / "run", failing_walk, short_actions)
    ch = update_corpus([tmp_path / "run"], corpus, dry_run=False, docs_root=tmp_path)
    assert sorted(c.action for c in ch.changes) == ["add", "keep"]
    keep = ch.of("keep")[0]
    assert "docs/walkthrough.md" in keep.reason and "shorter" in keep.reason
    assert long_file.exists() and len(corpus_files(corpus)) == 2


def test_files_that_do_not_replay_or_name_no_variant_are_removed_or_skipped(tmp_path, failing_walk):
    _, _, _, short = failing_walk
    corpus = tmp_path / "corpus"
    good = _write(corpus, failing_walk, short)
    stale = _write(corpus, failing_walk, short, name="a-variant-that-was-renamed")
    broken_src = _write(tmp_path / "run", failing_walk, failing_walk[2])
    lines = broken_src.read_text().splitlines()
    last = json.loads(lines[-1])
    last["step"] += 1  # the recorded violation no longer matches the replay
    broken_src.write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    ch = update_corpus([tmp_path / "run"], corpus, dry_run=False, docs_root=tmp_path, known_variants={NAME})
    assert {(c.action, c.variant) for c in ch.changes} == {("remove", "a-variant-that-was-renamed"), ("skip", NAME)}
    assert "does not replay" in ch.of("skip")[0].reason and "no variant" in ch.of("remove")[0].reason
    assert good.exists() and not stale.exists()


def test_bad_sources_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["corpus", "update", "--from", str(tmp_path / "missing"), "--corpus", str(tmp_path / "c")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["corpus", "update", "--from", str(tmp_path / "empty"), "--corpus", str(tmp_path / "c")]) == 2
    assert "no counterexample files" in capsys.readouterr().err
    assert main(["corpus"]) == 2


def test_corpus_update_cli_reports_each_change(tmp_path, failing_walk, capsys):
    src = _write(tmp_path / "run", failing_walk, failing_walk[3])
    corpus = tmp_path / "corpus"
    assert main(["corpus", "update", "--from", str(tmp_path / "run"), "--corpus", str(corpus), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"add      consistent_cut/{src.name}" in out and "dry run" in out and not corpus.exists()
    assert main(["corpus", "update", "--from", str(tmp_path / "run"), "--corpus", str(corpus)]) == 0
    assert "1 added, 0 replaced, 0 removed, 0 unchanged" in capsys.readouterr().out
    assert load_counterexample(corpus / "consistent_cut" / src.name).variant == NAME


# -- check writes into a run directory -----------------------------------------------------------

def test_check_writes_into_a_run_directory_and_leaves_the_committed_corpus_alone(tmp_path, monkeypatch, capsys):
    before = _listing(ROOT / "counterexamples")
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--only", NAME, "--seed", "1"]) == 0
    out = capsys.readouterr().out
    (run,) = (tmp_path / "results").iterdir()
    assert run.name.startswith("check-") and run.name.endswith("-seed1")
    files = list(run.glob("*/*.ndjson"))
    assert len(files) == 1 and load_counterexample(files[0]).variant == NAME
    assert f"corpus update --from results/{run.name}" in " ".join(out.split())
    assert _listing(ROOT / "counterexamples") == before
    # nothing found, nothing left behind; --no-write writes nowhere
    assert main(["check", "--only", "window-assigner"]) == 0
    assert main(["check", "--only", NAME, "--no-write"]) == 0
    assert len(list((tmp_path / "results").iterdir())) == 1
    assert "counterexamples: not written (--no-write)" in capsys.readouterr().out


def test_a_file_of_equal_length_never_replaces_the_corpus_file(tmp_path, failing_walk):
    """Strictly shorter or nothing: a rerun that finds another counterexample of the same
    length (another hash, whichever sorts first) leaves the corpus as it is."""
    _, _, _, short = failing_walk
    seed, sc, _, _ = failing_walk
    vio, _ = replay(sc, short, finish=True)
    files = [write_counterexample(tmp_path / d, variant=NAME, expected=variant(NAME).expected, engine=engine,
                                  seed=seed, scenario=sc, actions=short, violation=vio)
             for d, engine in (("a", "random_walk"), ("b", "spark-replay"))]
    assert files[0].name != files[1].name
    later, earlier = sorted(files, key=lambda f: f.name, reverse=True)  # the corpus holds the one sorting last
    corpus = tmp_path / "corpus"
    update_corpus([later.parent.parent], corpus, dry_run=False, docs_root=tmp_path)
    ch = update_corpus([earlier.parent.parent], corpus, dry_run=False, docs_root=tmp_path)
    assert not ch.changed and ch.unchanged == 1, ch.lines()
    assert _listing(corpus) == [f"consistent_cut/{later.name}"]


def test_a_pair_left_out_on_purpose_is_skipped_with_its_reason(tmp_path, failing_walk):
    _write(tmp_path / "run", failing_walk, failing_walk[3])
    offered = [candidate(p) for p in (tmp_path / "run").rglob("*.ndjson")]
    changes, _ = plan_update(offered, [], known_variants=None, protected={}, excluded={})
    assert [c.action for c in changes] == ["add"]
    changes, _ = plan_update(offered, [], known_variants=None, protected={},
                             excluded={(NAME, "consistent_cut"): "left out on purpose: a test"})
    assert [(c.action, c.reason) for c in changes] == [("skip", "left out on purpose: a test")]


def test_the_declared_exclusions_name_real_pairs_and_the_corpus_holds_none_of_them():
    """One declared place: every excluded (variant, invariant) names a known suite and a
    registered invariant, and no corpus file is of an excluded pair; the docs point at the
    declaration rather than keep a list of their own."""
    import spec
    from properties.corpus import EXCLUDED
    from properties.validation import known_suites
    from spec.invariant import REGISTRY

    spec.load_all()
    assert EXCLUDED
    for (v, inv), why in EXCLUDED.items():
        assert v in set(known_suites()) and inv in REGISTRY and why
    held = {(load_counterexample(p).variant, load_counterexample(p).invariant)
            for p in corpus_files(ROOT / "counterexamples")}
    assert not held & set(EXCLUDED)
    assert "properties/corpus.py" in (ROOT / "docs" / "exploration.md").read_text()
