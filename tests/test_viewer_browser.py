"""The counterexample viewer (``flinkspec show FILE --html``) in a real browser.

pytest-playwright drives the system's headless chromium (``tests/conftest.py`` points it at
Debian's package; ``make test`` installs it when it runs as root). Every corpus file's page is
opened (in the default run, one file per invariant and kind): no console error, the violation marked at the file's violating step, a screenshot at
that step kept in ``test-artifacts/viewer/`` (gitignored); the arrow keys move the cursor and
change the state panel; a page of a trace of more than 200 steps is ready in under 2 s.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from model.variants import generate, variant
from properties.counterexample import corpus_files, load_counterexample, write_counterexample
from properties.engines import random_walk
from properties.html import render_html
from properties.scenario_kinds import kind_of
from spec.invariant import Violation

ROOT = Path(__file__).resolve().parents[1]
CORPUS = corpus_files(ROOT / "counterexamples")
#: a long trace with runs of uneventful steps (a random walk's FLINK-17568 counterexample; the
#: corpus keeps the explorer's 4-step one)
LONG = ROOT / "tests/data/flink-17568-61-steps.ndjson"
#: screenshots kept as test artifacts (the folder is gitignored)
SHOTS = ROOT / "test-artifacts" / "viewer"


def _page_file(tmp_dir: Path, cx_path: Path) -> Path:
    cx = load_counterexample(cx_path, known_variant=True)
    out = tmp_dir / f"{cx_path.parent.name}-{cx_path.stem}.html"
    out.write_text(render_html(cx), encoding="utf-8")
    return out


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """``pages[path]``: the page of the counterexample file ``path``, rendered when first asked for."""
    d = tmp_path_factory.mktemp("viewer")

    class Pages(dict):
        def __missing__(self, path):
            page = self[path] = _page_file(d, path)
            return page
    return Pages()


def _corpus_params() -> list:
    """Every corpus file; the default run opens the first file of each invariant's folder of
    each kind (whole-cluster, focused), the slow run the others too: the pages of one
    invariant's files differ in their steps, not in what the page must render."""
    first: set = set()
    params = []
    for p in CORPUS:
        key = (p.parent.name, kind_of(load_counterexample(p).scenario) is None)
        params.append(p if key not in first else pytest.param(p, marks=pytest.mark.slow))
        first.add(key)
    return params


def _open(page, path: Path, step: int | None = None) -> list:
    """Open ``path`` (at ``#step=step``); returns the list the page's console errors go to."""
    errors: list = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri() + ("" if step is None else f"#step={step}"))
    page.wait_for_selector("#data", state="attached")
    return errors


def _current(page) -> int | None:
    loc = page.locator('[aria-current="step"]')
    return int(loc.get_attribute("data-step")) if loc.count() else None


def test_the_corpus_has_whole_cluster_and_focused_files():
    kinds = {kind_of(load_counterexample(p).scenario) is None for p in CORPUS}
    assert kinds == {True, False}, "the browser tests are meant to open both kinds of page"


@pytest.mark.parametrize("cx_path", _corpus_params(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_corpus_page_no_console_errors_violation_marked_and_screenshot(page, pages, cx_path):
    cx = load_counterexample(cx_path)
    vstep = cx.violation.step
    errors = _open(page, pages[cx_path], vstep)
    n_actions = len(cx.actions)
    steps = page.locator("#steps li[data-step]")
    # one step element per step of the file (+ the end of the run when the violation is judged there)
    assert steps.count() == n_actions + (1 if vstep is not None and vstep == n_actions else 0)
    if vstep is not None and n_actions:
        marked = page.locator("#steps li[data-step][data-violation]")
        assert marked.count() == 1 and int(marked.get_attribute("data-step")) == vstep
        assert _current(page) == vstep, "#step=N opens the page at step N"
        if kind_of(cx.scenario) is None:
            col = page.locator("#lanes .col[data-violation]")
            assert col.count() == 1 and int(col.get_attribute("data-step")) == vstep
            # the state panel marks what the violation concerns (a channel, a checkpoint, a subtask,
            # a slot, a TaskExecutor, a leader session, a state file...)
            assert page.locator("#state tr[data-violation]").count() > 0
    assert page.locator("#violation[data-violation]").count() == 1
    # walk the whole trace with the keyboard (key events dispatched in the page: one round trip)
    page.keyboard.press("Home")
    assert _current(page) in (0, None)
    page.evaluate("n => { for (let i = 0; i < n; i++) document.dispatchEvent("
                  "new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true})); }", n_actions + 1)
    if n_actions:
        assert _current(page) == int(page.get_attribute("#slider", "max"))
    assert errors == [], f"console errors on {cx_path.name}: {errors}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    if vstep is not None and n_actions:
        page.evaluate(f"window.location.hash = '#step={vstep}'")
        page.wait_for_function(f"document.querySelector('[aria-current=step]').dataset.step === '{vstep}'")
    shot = SHOTS / f"{cx_path.parent.name}-{cx_path.stem}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


def test_arrow_keys_move_the_cursor_and_change_the_state_panel(page, pages):
    cx_path = ROOT / "counterexamples/consistent_cut/c8fa398103b1.ndjson"
    errors = _open(page, pages[cx_path])
    assert _current(page) == 0
    state0 = page.inner_text("#state")
    page.keyboard.press("ArrowRight")
    assert _current(page) == 1
    assert page.input_value("#slider") == "1"
    assert "#step=1" in page.url
    state1 = page.inner_text("#state")
    assert state1 != state0
    # step 1 is SourceEmit: the source's offset changed, and the panel highlights exactly that kind of row
    changed = page.locator("#state tr.changed").all_inner_texts()
    assert any("source_offsets" in t for t in changed), changed
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")  # stays at 0
    assert _current(page) == 0
    assert page.inner_text("#state") == state0
    page.click("#next")
    page.click("#next")
    assert _current(page) == 2
    page.keyboard.press("End")
    assert _current(page) == len(load_counterexample(cx_path).actions) - 1
    assert errors == []


def test_filter_hides_a_subtask_lane_and_collapse_keeps_every_step_element(page, pages):
    cx_path = LONG
    _open(page, pages[cx_path])
    n = len(load_counterexample(cx_path).actions)
    assert page.locator("#steps li.folded").count() > 0, "the 61-step trace has runs of uneventful steps"
    assert page.locator("#steps li[data-step]").count() == n
    assert page.locator("#steps li.folded.hide").count() > 0
    page.uncheck("#collapse")
    assert page.locator("#steps li[data-step].hide").count() == 0
    lanes_text = page.inner_text("#lanes")
    assert "sink (2/2)" in lanes_text
    page.click("details.filter summary")
    page.get_by_label("sink (2/2)").uncheck()
    assert "sink (2/2)" not in page.inner_text("#lanes")
    assert page.locator("#steps li.filtered").count() > 0
    # "only what changed": every value row left is changed, removed or concerns the violation
    page.keyboard.press("ArrowRight")
    everything = page.locator("#state tr").count()
    page.check("#onlychanged")
    rows = page.locator("#state tr:not(.sec):not(.grp)")
    assert 0 < rows.count() < everything
    for i in range(rows.count()):
        row = rows.nth(i)
        assert (row.get_attribute("class") in ("changed", "removed")) or row.get_attribute("data-violation") is not None


def test_a_focused_page_shows_what_the_machine_observed_at_each_operation(page, pages):
    cx_path = ROOT / "counterexamples/coordinator_restore_latest_completed/527ae9bbd401.ndjson"
    cx = load_counterexample(cx_path)
    errors = _open(page, pages[cx_path], cx.violation.step)
    assert _current(page) == cx.violation.step == 2
    # the failover restored checkpoint 1, which never completed: the restores row changed at this step
    changed = page.locator("#state tr.changed").all_inner_texts()
    assert any(t.startswith("restores") and "checkpoint_id=1" in t and "complete=False" in t for t in changed), changed
    page.keyboard.press("ArrowLeft")
    assert not any(t.startswith("restores") for t in page.locator("#state tr.changed").all_inner_texts())
    assert errors == []


def _long_counterexample(tmp_path: Path) -> Path:
    """A genuine counterexample of more than 200 steps: the first walk of an unsafe variant that
    violates its invariant after step 199, stored unshrunk."""
    v = variant("cp-no-slot-reconciliation")
    for seed in range(80):
        r = random_walk(v, seed, max_steps=600)
        if r.verdict == "violation" and r.violation["step"] >= 199:
            vio = Violation.from_dict(r.violation)
            return write_counterexample(tmp_path, variant=v.name, expected=v.expected, engine="random_walk", seed=seed,
                                        scenario=generate(v, seed), actions=r.actions[: vio.step + 1], violation=vio)
    raise AssertionError(f"no walk of {v.name} violates after step 199 (seeds 0-79)")


def test_a_200_step_trace_loads_in_under_2_seconds(page, tmp_path):
    cx_path = _long_counterexample(tmp_path)
    cx = load_counterexample(cx_path, known_variant=True)
    assert len(cx.actions) >= 200
    html_path = tmp_path / "long.html"
    html_path.write_text(render_html(cx), encoding="utf-8")
    errors: list = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("about:blank")
    t0 = time.perf_counter()
    page.goto(html_path.as_uri() + f"#step={cx.violation.step}")
    page.wait_for_selector('[aria-current="step"]', state="attached")
    page.wait_for_selector("#lanes svg .col[data-violation]", state="attached")
    seconds = time.perf_counter() - t0
    assert seconds < 2.0, f"the {len(cx.actions)}-step page took {seconds:.2f} s to be ready"
    assert _current(page) == cx.violation.step
    n = len(cx.actions)  # (+ the end of the run when the violation is judged there)
    assert page.locator("#steps li[data-step]").count() == n + (1 if cx.violation.step == n else 0)
    t1 = time.perf_counter()
    for _ in range(20):
        page.keyboard.press("ArrowLeft")
    assert _current(page) == cx.violation.step - 20
    assert errors == []
    print(f"{len(cx.actions)}-step page ready in {seconds:.2f} s; 20 key presses in {time.perf_counter() - t1:.2f} s")
