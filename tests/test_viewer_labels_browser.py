"""The viewer's cursor and state labels in a real browser (chromium through pytest-playwright,
as ``test_viewer_browser.py``): the state panel names the step whose state it shows, at the end
of the run the last step's, and a file without steps the state at deployment."""

from __future__ import annotations

from pathlib import Path

from properties.counterexample import corpus_files, load_counterexample
from properties.html import render_html
from properties.scenario_kinds import kind_of

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = [p for p in corpus_files(ROOT / "counterexamples") if kind_of(load_counterexample(p).scenario) is None]


def _open(page, tmp_path, cx_path) -> list:
    out = tmp_path / "page.html"
    out.write_text(render_html(load_counterexample(cx_path)), encoding="utf-8")
    errors: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    page.wait_for_selector("#state table")
    return errors


def test_a_file_without_steps_shows_the_deployment_state(page, tmp_path):
    empty = [p for p in CLUSTER if not load_counterexample(p).actions]
    assert empty, "the corpus holds a whole-cluster counterexample violated before any step"
    errors = _open(page, tmp_path, empty[0])
    assert not errors
    pos, stn = page.locator("#pos").inner_text(), page.locator("#stn").inner_text()
    assert "-1" not in pos and "-1" not in stn, (pos, stn)
    assert "deployment" in pos and stn.startswith("at deployment"), (pos, stn)
    assert page.locator("#state tr[data-key]").count() > 5


def test_the_state_label_names_the_step_shown_and_the_end_names_the_last_step(page, tmp_path):
    ended = [p for p in CLUSTER if load_counterexample(p).violation.step == len(load_counterexample(p).actions) > 1]
    assert ended, "the corpus holds a counterexample judged at the end of its run"
    cx = load_counterexample(ended[0])
    n = len(cx.actions)
    assert not _open(page, tmp_path, ended[0])
    assert page.locator("#stn").inner_text() == "after step 0"
    page.keyboard.press("ArrowRight")
    assert page.locator("#stn").inner_text() == "after step 1"
    page.keyboard.press("End")
    assert page.locator("#stn").inner_text() == f"at the end of the run (after step {n - 1})"
    assert page.locator("#pos").inner_text().startswith(f"end of the run (after step {n - 1})")
