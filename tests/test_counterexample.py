"""Counterexample files: the committed corpus replays, bad files give clear errors, writing is
atomic and idempotent, and the CLI's replay/show/check exit codes."""

import json
from pathlib import Path

import pytest

from flinkspec.cli import main
from model.variants import generate, variant
from properties.counterexample import (
    CounterexampleError,
    corpus_files,
    load_counterexample,
    replay_counterexample,
    scenario_from_dict,
    scenario_to_dict,
    write_counterexample,
)
from properties.engines import random_walk, replay

CORPUS = Path(__file__).resolve().parents[1] / "counterexamples"
FILES = corpus_files(CORPUS)


def test_the_corpus_is_not_empty():
    # one shrunk counterexample per unsafe random-walk variant
    from model.variants import VARIANTS

    variants = {load_counterexample(f).variant for f in FILES}
    unsafe = {n for n, v in VARIANTS.items() if not v.safe}
    assert unsafe <= variants, f"no corpus file for {sorted(unsafe - variants)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_file_reproduces_its_verdict(path):
    cx = load_counterexample(path)
    ok, v = replay_counterexample(cx)
    assert ok, f"{path}: recorded {cx.violation.invariant}@{cx.violation.step}, now {v}"
    assert cx.invariant in cx.header["expected_verdict"]


def _a_counterexample(tmp_path):
    v = variant("at-least-once-2pc")
    for seed in range(60):
        r = random_walk(v, seed)
        if r.verdict == "violation":
            sc = generate(v, seed)
            vio, _ = replay(sc, r.actions, finish=True)
            return write_counterexample(tmp_path, variant=v.name, expected=v.expected, engine="random_walk",
                                        seed=seed, scenario=sc, actions=r.actions, violation=vio)
    pytest.fail("no violation found")


def test_write_is_idempotent_and_leaves_no_temporary_files(tmp_path):
    p1 = _a_counterexample(tmp_path)
    p2 = _a_counterexample(tmp_path)
    assert p1 == p2
    assert not list(tmp_path.rglob(".tmp-*"))
    assert p1.parent.name == load_counterexample(p1).invariant


def test_scenario_round_trip():
    sc = generate(variant("rescale-savepoint"), 4)
    assert scenario_from_dict(json.loads(json.dumps(scenario_to_dict(sc)))) == sc


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda lines: [], "empty"),
        (lambda lines: ["{not json"] + lines[1:], ":1 column 2: malformed JSON"),
        (lambda lines: [lines[0].replace('"format":1', '"format":99')] + lines[1:], "format version 99"),
        (lambda lines: lines[:1] + [lines[1].replace('"action":"', '"action":"Bogus')] + lines[2:], ":2: action: unknown action kind 'Bogus"),
        (lambda lines: lines[:-1], "the last line must be the violation"),
        (lambda lines: lines[:1] + lines[2:], ":2: step: action step 1 out of order"),
        (lambda lines: lines[:-1] + [lines[-1].replace('"invariant":"consistent_cut"', '"invariant":"x"')],
         "header names"),
        (lambda lines: [lines[0].replace('"scenario":{', '"scenario":{"bogus":1,')] + lines[1:],
         ":1: scenario: unknown key 'bogus'"),
    ],
)
def test_malformed_files_name_the_file_line_and_problem(tmp_path, mutate, message):
    good = _a_counterexample(tmp_path)
    lines = good.read_text().splitlines()
    bad = tmp_path / "bad.ndjson"
    bad.write_text("\n".join(mutate(lines)) + ("\n" if mutate(lines) else ""))
    with pytest.raises(CounterexampleError) as info:
        load_counterexample(bad)
    assert str(bad) in str(info.value)
    assert message in str(info.value)


def test_cli_replay_show_and_exit_codes(tmp_path, capsys):
    good = _a_counterexample(tmp_path)
    assert main(["replay", str(good)]) == 0
    assert "reproduced" in capsys.readouterr().out
    assert main(["show", str(good)]) == 0
    out = capsys.readouterr().out
    assert "VIOLATION of consistent_cut" in out and "steps:" in out
    # a file whose recorded step differs no longer reproduces: exit 1
    lines = good.read_text().splitlines()
    last = json.loads(lines[-1])
    last["step"] = last["step"] + 1000
    tampered = tmp_path / "tampered.ndjson"
    tampered.write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    assert main(["replay", str(tampered)]) == 1
    # malformed input: exit 2 with a one-line error
    broken = tmp_path / "broken.ndjson"
    broken.write_text("nope\n")
    assert main(["replay", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "broken.ndjson:1" in err and "Traceback" not in err
    assert main(["replay", str(tmp_path / "missing.ndjson")]) == 2


def test_cli_check_selected_suites(capsys, tmp_path):
    assert main(["check", "--only", "at-least-once-2pc", "--only", "window-assigner-FLINK-26334",
                 "--corpus", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2/2 unsafe variants caught" in out
    assert list(tmp_path.rglob("*.ndjson")), "the shrunk counterexample was not written"
    assert main(["check", "--only", "no-such-suite"]) == 2


def test_show_writes_a_self_contained_html_page(tmp_path, capsys):
    good = _a_counterexample(tmp_path)
    out = tmp_path / "cx.html"
    assert main(["show", str(good), "--html", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!doctype html>") and "<svg" in page
    assert "consistent_cut" in page and 'src="' not in page and "https://" not in page


def test_docs_name_existing_counterexample_files():
    """The walk-through in docs/ names a corpus file: it must exist and be the one described."""
    import re

    root = Path(__file__).resolve().parents[1]
    for doc in (root / "docs").glob("*.md"):
        for rel in set(re.findall(r"counterexamples/[a-z_]+/[0-9a-f]{12}\.ndjson", doc.read_text())):
            assert (root / rel).exists(), f"{doc.name} names {rel}, which is not in the corpus"
    walk = (root / "docs" / "reading-a-counterexample.md").read_text()
    rel = re.search(r"counterexamples/[a-z_]+/[0-9a-f]{12}\.ndjson", walk).group(0)
    assert load_counterexample(root / rel).variant == "at-least-once-2pc"
