"""A trace divergence as a counterexample file (``properties/tracecounterexample.py``).

A real recorded trace with one event changed is validated with an output folder: the
divergence file holds the model's run of the matched prefix (replayed by ``flinkspec replay``,
the same file byte for byte when validated again) and the trace's events; ``flinkspec show``
(text and ``--html``) shows every observed event in its own lane, the mark at the changed
event. A file whose trace the model can produce after all is not reproduced; malformed files
are one line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flinkspec import cli
from properties.counterexample import load_counterexample, replay_counterexample
from properties.flinktrace import load_trace, render
from properties.tracecounterexample import DIVERGENCE, matched_steps
from properties.tracevalidation import expected_events

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "traces"


def _trace_file(kind: str) -> Path:
    (path,) = sorted(TRACES.glob(kind + "-seed*.ndjson"))
    return path


def _write(path: Path, head: dict, events: list[dict]) -> Path:
    path.write_text(render(head, [{k: v for k, v in e.items() if k != "seq"} for e in events]), encoding="utf-8")
    return path


def _restored_99(tmp_path: Path) -> tuple[Path, int, list]:
    """The TaskManager-loss trace with its restore changed to a checkpoint that never completed."""
    tr = load_trace(_trace_file("taskmanager-loss"))
    events = [json.loads(json.dumps(e)) for e in tr.events]
    at = next(i for i, e in enumerate(events) if e["event"] == "restored")
    assert events[at]["checkpoint"] != 99
    events[at]["checkpoint"] = 99
    assert 99 not in {e.get("checkpoint") for e in events if e["event"] == "checkpoint_completed"}
    return _write(tmp_path / "restored-99.ndjson", tr.header, events), at, events


@pytest.fixture
def main(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # anything written by default goes to ./results/
    return lambda argv: cli.main(argv)


def _divergence_files(folder: Path) -> list[Path]:
    return sorted((folder / DIVERGENCE).glob("*.ndjson"))


def test_a_divergence_is_a_counterexample_file_that_replays_and_shows(main, capsys, tmp_path):
    trace, at, events = _restored_99(tmp_path)
    out = tmp_path / "out"
    assert main(["validate", str(trace), "--out", str(out), "--json"]) == 1
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines[0]["verdict"] == "divergent" and lines[0]["first_unmatched"]["seq"] == at
    (cx_path,) = _divergence_files(out)
    assert lines[0]["counterexample"] == str(cx_path)
    assert json.loads((out / "report.json").read_text())["traces"][0]["counterexample"] == str(cx_path)

    # validated again: the same file, byte for byte
    again = tmp_path / "again"
    assert main(["validate", str(trace), "--out", str(again)]) == 1
    capsys.readouterr()
    (second,) = _divergence_files(again)
    assert second.name == cx_path.name and second.read_bytes() == cx_path.read_bytes()

    # the file: the model's run of the matched prefix and every observed event
    cx = load_counterexample(cx_path, known_variant=True)
    tr = load_trace(trace)
    assert list(cx.scenario.events) == list(tr.events)
    assert cx.violation.expected["seq"] == at and cx.violation.step == len(cx.actions)
    _, matched = matched_steps(tr, cx.actions)
    assert matched == lines[0]["matched"] == cx.scenario.matched
    assert 0 < matched < len(expected_events(tr)[0])
    ok, now = replay_counterexample(cx)
    assert ok and now.expected["seq"] == at
    assert main(["replay", str(cx_path)]) == 0
    assert "reproduced" in capsys.readouterr().out

    # show: the lane holds every observed event, the mark at the changed one
    page = tmp_path / "page.html"
    assert main(["show", str(cx_path), "--html", str(page)]) == 0
    text = capsys.readouterr().out
    lane = text[text.index("observed lane"):text.index("DIVERGENCE")].splitlines()[1:-1]
    assert [int(re.match(r"\s+#(\d+)", ln).group(1)) for ln in lane] == list(range(len(events)))
    marked = [ln for ln in lane if "FIRST EVENT THE MODEL CANNOT PRODUCE" in ln]
    assert len(marked) == 1 and marked[0].split()[0] == f"#{at}" and "checkpoint 99" in marked[0]

    html = page.read_text(encoding="utf-8")
    items = re.findall(r'<li class="obs (\w+)" data-observed="(\d+)"([^>]*)>', html)
    assert [int(seq) for _s, seq, _a in items] == list(range(len(events)))
    first = [int(seq) for _s, seq, a in items if "data-first-unmatched" in a]
    assert first == [at]
    steps_at = [int(m) for _s, _seq, a in items for m in re.findall(r'data-at-step="(\d+)"', a)]
    assert steps_at and all(0 <= s < len(cx.actions) for s in steps_at)
    assert {s for s, _seq, _a in items} >= {"matched", "divergence"}
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1))
    lane_data = data["observed"]
    assert [o["seq"] for o in lane_data] == list(range(len(events)))
    assert [o["seq"] for o in lane_data if o["status"] == "divergence"] == [at]
    # every event the model's run produced is on the lane at the step that produced it
    assert sum(1 for o in lane_data if o["status"] == "matched") >= 1
    assert len(data["steps"]) == len(cx.actions)


def test_a_file_whose_trace_the_model_can_produce_is_not_reproduced(main, capsys, tmp_path):
    trace, at, _events = _restored_99(tmp_path)
    out = tmp_path / "out"
    assert main(["validate", str(trace), "--out", str(out)]) == 1
    capsys.readouterr()
    (cx_path,) = _divergence_files(out)
    real = load_trace(_trace_file("taskmanager-loss")).events[at]
    lines = cx_path.read_text(encoding="utf-8").splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.startswith('{"event":{"checkpoint":99,"event":"restored"'))
    lines[k] = lines[k].replace('"checkpoint":99', f'"checkpoint":{real["checkpoint"]}')
    put_back = tmp_path / "put-back.ndjson"
    put_back.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["replay", str(put_back)]) == 1
    assert "NOT reproduced" in capsys.readouterr().out


def test_a_shared_file_deleted_while_referenced_is_written_with_the_run_before_it(main, capsys, tmp_path):
    """The verdict comes before any search; the file still holds the model's run of the
    events before the deletion."""
    tr = load_trace(_trace_file("rocksdb-incremental"))
    events = [json.loads(json.dumps(e)) for e in tr.events]
    first = next(e for e in events if e["event"] == "checkpoint_files" and e["shared"])
    at = first["seq"] + 1
    events.insert(at, {"event": "shared_file_deleted", "file": first["shared"][0]})
    trace = _write(tmp_path / "deleted.ndjson", tr.header, events)
    out = tmp_path / "out"
    assert main(["validate", str(trace), "--out", str(out)]) == 1
    capsys.readouterr()
    (cx_path,) = _divergence_files(out)
    cx = load_counterexample(cx_path, known_variant=True)
    assert cx.violation.expected["seq"] == at and cx.actions
    _, matched = matched_steps(load_trace(trace), cx.actions)
    assert matched == cx.scenario.matched == sum(1 for e in expected_events(load_trace(trace))[0] if e.seq < at)
    assert replay_counterexample(cx)[0]


def _bad_lines(lines: list[str]) -> list[tuple[str, list[str], str]]:
    head = json.loads(lines[0])
    n_act = sum(1 for ln in lines if ln.startswith('{"action"'))
    obs = next(i for i, ln in enumerate(lines) if ln.startswith('{"event"'))
    out = []
    bad_event = json.loads(lines[obs])
    bad_event["event"]["event"] = "teleported"
    out.append(("event", lines[:obs] + [json.dumps(bad_event)] + lines[obs + 1:], f":{obs + 1}: "))
    no_fault = json.loads(json.dumps(head))
    no_fault["scenario"]["trace"]["fault"] = "meteor-strike"
    out.append(("fault", [json.dumps(no_fault)] + lines[1:], "fault"))
    missing = json.loads(json.dumps(head))
    del missing["scenario"]["trace"]["job"]
    out.append(("header", [json.dumps(missing)] + lines[1:], ":1: "))
    vd = json.loads(lines[-1])
    vd["expected"]["seq"] = 0
    out.append(("seq", lines[:-1] + [json.dumps(vd)], "first unmatched"))
    if n_act:
        out.append(("order", [lines[0], lines[obs]] + lines[1:obs] + lines[obs + 1:], "after the observed lines"))
    gap = json.loads(lines[obs + 1])
    gap["event"]["seq"] += 5
    out.append(("gap", lines[:obs + 1] + [json.dumps(gap)] + lines[obs + 2:], "event.seq"))
    return out


def test_malformed_divergence_files_are_one_clear_line(main, capsys, tmp_path):
    trace, _at, _events = _restored_99(tmp_path)
    out = tmp_path / "out"
    assert main(["validate", str(trace), "--out", str(out)]) == 1
    capsys.readouterr()
    (cx_path,) = _divergence_files(out)
    lines = cx_path.read_text(encoding="utf-8").splitlines()
    for name, bad, says in _bad_lines(lines):
        p = tmp_path / f"bad-{name}.ndjson"
        p.write_text("\n".join(bad) + "\n", encoding="utf-8")
        for cmd in (["show", str(p)], ["replay", str(p)]):
            assert main(cmd) == 2, (name, cmd)
            _o, err = capsys.readouterr()
            assert err.count("\n") == 1 and "Traceback" not in err, (name, err)
            assert says in err, (name, err)


def test_validate_out_arguments(main, capsys, tmp_path):
    trace, _at, _events = _restored_99(tmp_path)
    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    assert main(["validate", str(trace), "--out", str(not_dir)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["validate", str(trace), "--out", str(tmp_path / "o"), "--no-write"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "o").exists()
    # --no-write: nothing written anywhere
    assert main(["validate", str(trace), "--no-write"]) == 1
    capsys.readouterr()
    assert not (tmp_path / "results").exists()
    # by default: under results/, never elsewhere
    assert main(["validate", str(trace)]) == 1
    capsys.readouterr()
    (run,) = (tmp_path / "results").iterdir()
    assert run.name.startswith("validate-") and len(_divergence_files(run)) == 1


def test_corpus_update_skips_a_divergence_without_searching_the_model_again(main, capsys, tmp_path, monkeypatch):
    """A divergence file under results/ is no counterexample of the model's own: ``corpus
    update`` names it as skipped, with the reason, from its header alone (its replay would
    search the model again)."""
    from properties import corpus

    trace, _at, _events = _restored_99(tmp_path)
    out = tmp_path / "validate-run"
    assert main(["validate", str(trace), "--out", str(out)]) == 1
    capsys.readouterr()
    (cx_path,) = _divergence_files(out)
    replayed: list = []
    real = corpus.candidate
    monkeypatch.setattr(corpus, "candidate", lambda p: replayed.append(p) or real(p))
    changes = corpus.update_corpus([out], tmp_path / "corpus", dry_run=True)
    assert replayed == []
    (skip,) = changes.changes
    assert (skip.action, skip.source, skip.reason) == ("skip", str(cx_path), corpus.TRACE_DIVERGENCE)
    assert not (tmp_path / "corpus").exists()
