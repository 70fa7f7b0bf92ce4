"""The viewer's data (``properties.timeline``), the page's static hooks (``properties.html``) and
the ITF export (``flinkspec show FILE --itf``), without a browser (``test_viewer_browser.py``
drives the pages in chromium)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from itf_py import trace_from_json

from flinkspec.cli import main
from properties.counterexample import corpus_files, load_counterexample
from properties.engines import replay
from properties.html import render_html
from properties.scenario_kinds import kind_of
from properties.timeline import build_timeline, concerns, flatten

ROOT = Path(__file__).resolve().parents[1]
WALK = ROOT / "counterexamples/consistent_cut/c8fa398103b1.ndjson"  # the walk-through of docs/
CLUSTER = [p for p in corpus_files(ROOT / "counterexamples") if kind_of(load_counterexample(p).scenario) is None]


def test_timeline_has_a_state_per_step_and_the_final_state_is_the_replays():
    cx = load_counterexample(WALK)
    tl = build_timeline(cx)
    assert len(tl.steps) == len(cx.actions) and len(tl.states) == len(cx.actions) + 1
    assert [s.action for s in tl.steps] == [repr(a) for a in cx.actions]
    assert tl.violation_step == cx.violation.step == 13 and tl.reproduced
    _, run = replay(cx.scenario, cx.actions)
    assert tl.states[-1]["checkpoints"]["completed"] == list(run.cluster.completed_ids) == [1]
    # step 0 triggers checkpoint 1: barrier 1 goes into both of the source's channels
    after0 = tl.states[1]
    assert after0["channels"]["ch0"]["in_flight"] == ["barrier 1"] == after0["channels"]["ch1"]["in_flight"]
    assert "checkpoint 1" in after0["checkpoints"]["pending"]
    assert tl.states[0]["checkpoints"]["pending"] == {}
    # step 13 (the violation) completes checkpoint 1 (the docs' walk-through)
    assert tl.steps[13].completed == (1,)
    assert set(tl.concerns) >= {"ch2", "cp1"}


def test_enabled_alternatives_are_the_enabled_actions_not_taken():
    cx = load_counterexample(WALK)
    tl = build_timeline(cx)
    _, run = replay(cx.scenario, cx.actions[:5], finish=False)
    enabled = [repr(a) for a in run.cluster.enabled_actions()]
    alts = [a for a, _ in tl.steps[5].alternatives]
    assert repr(cx.actions[5]) in enabled and repr(cx.actions[5]) not in alts
    assert sorted(alts + [repr(cx.actions[5])]) == sorted(enabled)


def test_uneventful_steps_are_only_record_moves():
    cx = load_counterexample(ROOT / "tests/data/flink-17568-61-steps.ndjson")
    tl = build_timeline(cx)
    quiet = [s for s in tl.steps if not s.eventful]
    assert quiet, "a 61-step trace has uneventful steps"
    assert all(s.kind in ("Deliver", "SourceEmit") and not s.completed for s in quiet)
    assert all(s.mark["shape"] == "record" for s in quiet if s.kind == "Deliver")
    assert any(s.kind == "TriggerCheckpoint" for s in tl.steps if s.eventful)


@pytest.mark.parametrize("cx_path", CLUSTER, ids=lambda p: p.stem)
def test_every_corpus_violation_concerns_an_element_the_page_marks(cx_path):
    cx = load_counterexample(cx_path)
    tl = build_timeline(cx)
    assert tl.reproduced
    assert tl.concerns, f"{cx_path.name}: the violation names nothing the page can mark"
    page = render_html(cx)
    steps = re.findall(r'<li class="[^"]*" data-step="(\d+)"', page)
    n = len(cx.actions)
    assert [int(s) for s in steps] == list(range(len(steps))) and len(steps) in (n, n + 1)
    marked = re.findall(r'data-step="(\d+)"[^>]*data-violation', page)
    assert marked == [str(cx.violation.step)]


def test_concerns_of_a_restart_set_name_the_subtask_left_out():
    cx = load_counterexample(ROOT / "counterexamples/restart_set_sufficient/adcb4827e33e.ndjson")
    tl = build_timeline(cx)
    assert "task2" in tl.concerns  # expected restart [1, 2], actual [1]
    assert "task1" not in concerns(cx.violation.__class__(invariant="x", expected={"restart": [1]},
                                                          actual={"restart": [1]}, message=""),
                                   _eg(cx))


def _eg(cx):
    _, run = replay(cx.scenario, (), finish=False)
    return run.cluster.eg


def test_flatten_keeps_every_leaf_with_its_path():
    flat = flatten({"a": {"b": [1, 2], "c": {}}, "d": True})
    assert flat == {"a › b": "[1, 2]", "a › c": "-", "d": "yes"}


def test_the_page_is_self_contained():
    page = render_html(load_counterexample(WALK))
    assert page.startswith("<!doctype html>")
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page), "the page loads nothing"
    urls = set(re.findall(r"https?://[^\s\"'<)]+", page))
    assert urls == {"http://www.w3.org/2000/svg"}, urls
    assert "</script" not in page.split('<script type="application/json" id="data">')[1].split("</script>")[0]


def test_focused_pages_list_the_operations(tmp_path, capsys):
    (cx_path,) = (ROOT / "counterexamples/handler_abort_once").glob("*.ndjson")  # a focused suite's file
    out = tmp_path / "f.html"
    assert main(["show", str(cx_path), "--html", str(out)]) == 0
    page = out.read_text()
    cx = load_counterexample(cx_path)
    assert len(re.findall(r'data-step="\d+"', page)) == len(cx.actions)
    assert re.search(rf'data-step="{cx.violation.step}"[^>]*data-violation', page)


def test_show_itf_writes_an_itf_trace_that_reads_back(tmp_path, capsys):
    out = tmp_path / "trace.itf.json"
    assert main(["show", str(WALK), "--itf", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    raw = json.loads(out.read_text())
    assert raw["#meta"]["format"] == "ITF" and "loop" not in raw
    # integers are ITF big integers, records plain objects, non-identifier keys a #map
    assert raw["states"][0]["job"]["step"] == {"#bigint": "0"}
    assert "#map" in raw["states"][0]["tasks"]
    trace = trace_from_json(raw)
    cx = load_counterexample(WALK)
    assert len(trace.states) == len(cx.actions) + 1
    assert [s.meta["index"] for s in trace.states] == list(range(len(cx.actions) + 1))
    assert trace.states[0].values["action"] == "init"
    assert [s.values["action"] for s in trace.states[1:]] == [repr(a) for a in cx.actions]
    assert [s.values["mbt::actionTaken"] for s in trace.states[1:]] == [type(a).__name__ for a in cx.actions]
    after0 = trace.states[1].values
    assert list(after0["channels"].ch0.in_flight) == ["barrier 1"]
    assert after0["job"].step == 1
    last = trace.states[-1].values
    assert list(last["checkpoints"].completed) == [1]
    assert last["tasks"]["sink (1/1)"].status == "RUNNING"


def test_show_itf_refuses_a_focused_file_in_one_line(tmp_path, capsys):
    cx_path = ROOT / "counterexamples/valve_all_idle_flush/afa43872e876.ndjson"
    assert main(["show", str(cx_path), "--itf", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--itf writes whole-cluster counterexamples" in err and "\n" not in err
    assert not (tmp_path / "x.json").exists()


@pytest.fixture(scope="module")
def slot_views_walk(tmp_path_factory) -> Path:
    """A counterexample of cp-no-slot-reconciliation found by ``check`` (a seeded random walk of
    the variant's scenario, with two TaskExecutors; the corpus keeps the explorer's shorter one
    of the small scenario, with one)."""
    d = tmp_path_factory.mktemp("slot-views")
    assert main(["check", "--only", "cp-no-slot-reconciliation", "--seed", "0", "--workers", "1",
                 "--corpus", str(d)]) == 0
    files = sorted(d.rglob("*.ndjson"))
    assert len(files) == 1 and files[0].parent.name == "slot_views_agree", files
    return files[0]


def test_control_plane_components_have_lanes_and_rpc_arrows_run_sender_to_receiver(slot_views_walk):
    cx = load_counterexample(slot_views_walk)
    tl = build_timeline(cx)
    ids = [c["id"] for c in tl.components]
    assert ids == ["jm0", "jm1", "te0", "te1", "ha"]
    delivered = [s for s in tl.steps if s.kind == "RpcDeliver"]
    assert delivered
    for s in delivered:  # the sender is None when no process holds its leader session any more
        assert s.mark["lane"] in ids and s.mark.get("from_lane") in ids + [None], s.action
        if "HeartbeatResponse(receiver='rm'" in s.description:  # a TaskExecutor answers the ResourceManager
            assert s.mark["from_lane"].startswith("te") and s.mark["lane"].startswith("jm")
        if "RequestSlot(" in s.description:  # the ResourceManager asks a TaskExecutor
            assert s.mark["from_lane"].startswith("jm") and s.mark["lane"].startswith("te")
    assert sum(s.mark.get("from_lane") is not None for s in delivered) > len(delivered) // 2
    assert all(s.mark["lane"] == f"jm{s.action.split('=')[1].rstrip(')')}"
               for s in tl.steps if s.kind in ("CrashJobManager", "StartJobManager"))


def test_control_plane_violation_marks_its_slot_and_not_the_other_slots(slot_views_walk):
    cx = load_counterexample(slot_views_walk)
    tl = build_timeline(cx)
    assert "slot:te0/0" in tl.concerns and "slot:te0/1" not in tl.concerns
    last = flatten(tl.states[cx.violation.step + 1])
    # the three views of the slot are rows of the state panel; the SlotManager's disagrees with the TaskExecutor's
    assert last["control_plane › slots › slot te0/0 › task_executor"] == "FREE"
    assert last["control_plane › slots › slot te0/0 › slot_manager (jm0)"].startswith("allocation ")
    page = render_html(cx)
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1)
    refs = json.loads(data)["state"]["refs"]
    marked = {k for k, r in refs.items() if set(r) & set(tl.concerns)}
    assert "control_plane › slots › slot te0/0 › task_executor" in marked
    assert not any("slot te0/1" in k for k in marked)


def test_storage_files_are_rows_and_deletes_are_in_the_storage_lane():
    cx = load_counterexample(ROOT / "counterexamples/file_deleted_only_when_unreferenced/7dcdfa0ac839.ndjson")
    tl = build_timeline(cx)
    assert [c["id"] for c in tl.components] == ["storage"]
    assert "file:shared/g0a0s1-0@1" in tl.concerns
    end = flatten(tl.states[-1])
    assert end["storage › files › shared/g0a0s1-0@1"] == "deleted by the job"
    discards = [s for s in tl.steps if s.kind == "DiscardFile"]
    assert discards and all(s.mark["lane"] == "storage" for s in discards)


def _no_step_cluster_files():
    return [p for p in CLUSTER if not load_counterexample(p).actions]


def test_a_page_without_steps_speaks_of_the_deployment_not_of_step_minus_one():
    """A counterexample violated at deployment (no action taken: FLINK-26334's declarative
    spec differs before any step) shows the state it starts from; nothing says "step -1"."""
    files = _no_step_cluster_files()
    assert files, "the corpus holds a whole-cluster counterexample violated before any step"
    for path in files:
        page = render_html(load_counterexample(path))
        assert "step -1" not in page
        assert "expected vs actual output at deployment" in page
        data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
                          .group(1).replace("<\\/", "</"))
        assert data["steps"] == [] and data["end"]
        assert len(data["state"]["values"]) == 1 and data["state"]["keys"], "the deployment's state is shown"
        assert data["zero"].startswith("at deployment")


@pytest.mark.parametrize("name, words", [("at-least-once-2pc", "(checkpoint, at-least-once, not aligned)"),
                                         ("aligned-2pc", "(checkpoint, aligned)")])
def test_a_delivered_barrier_is_described_by_the_scenarios_checkpointing_mode(name, words):
    """Under at-least-once a CheckpointBarrierTracker counts barriers and never aligns: the
    step's description says so, and says "aligned" only where the barriers are aligned."""
    from model.actions import Deliver, TriggerCheckpoint, kind_of as action_kind  # only this test steps a cluster
    from model.cluster import Cluster  # as above
    from model.events import CheckpointBarrier  # as above
    from model.variants import generate, variant  # as above

    c = Cluster.from_scenario(generate(variant(name), 0))
    c.step(TriggerCheckpoint(savepoint=False))
    chans = [a for a in c.enabled_actions() if type(a) is Deliver
             and isinstance(c.net.head(a.channel), CheckpointBarrier)]
    assert chans, "the trigger puts a barrier at the head of a source's channel"
    text = action_kind(chans[0]).describe(c, chans[0])
    assert words in text, text
