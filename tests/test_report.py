"""Run reports (``--report OUT.html`` of ``flinkspec check`` and ``flinkspec explore``; the
Spark replay's is tested in ``test_spark_replay.py``): the suite table, the coverage goals as
an inline SVG plot, time to find and counterexample length per unsafe suite, and a viewer page
per counterexample, linked."""

from __future__ import annotations

import re
from pathlib import Path

from flinkspec.cli import main
from properties.counterexample import load_counterexample
from spec.coverage import GOALS


def _links(page: str, base: Path) -> list[Path]:
    return [base / h for h in re.findall(r'<a href="([^"]+\.html)"', page)]


def _self_contained(page: str) -> None:
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)=', page)
    assert not re.search(r'(href|src)="https?://', page)


def test_check_report_has_the_table_goals_plot_and_linked_counterexample_pages(tmp_path, capsys):
    out = tmp_path / "r" / "check.html"
    out.parent.mkdir()
    code = main(["check", "--only", "at-least-once-2pc", "--only", "window-assigner-FLINK-26334",
                 "--corpus", str(tmp_path / "cx"), "--report", str(out)])
    assert code == 0
    assert f"report: {out}" in capsys.readouterr().out
    page = out.read_text()
    _self_contained(page)
    assert re.findall(r'<tr data-suite="([^"]+)"', page) == ["at-least-once-2pc", "window-assigner-FLINK-26334"]
    assert "2/2 unsafe variants caught" in page
    # a whole-cluster suite ran: every registered coverage goal is a row, and the plot is inline SVG
    assert set(re.findall(r'<tr data-goal="([^"]+)"', page)) == set(GOALS)
    assert re.search(r'<figure id="goals-plot"><svg', page) and re.search(r'<figure id="unsafe-plot"><svg', page)
    links = _links(page, out.parent)
    files = sorted((tmp_path / "cx").rglob("*.ndjson"))
    assert len(links) == len(files) == 2
    for link in links:
        assert link.is_file() and link.parent.name == "check-counterexamples"
        viewer = link.read_text()
        assert 'id="violation" data-violation' in viewer
    # the row's counterexample length is the file's
    cluster_file = next(f for f in files if load_counterexample(f).variant == "at-least-once-2pc")
    n = len(load_counterexample(cluster_file).actions)
    assert re.search(rf'<tr data-suite="at-least-once-2pc".*?>{n} steps</a>', page)


def test_check_report_refuses_a_directory_before_running(tmp_path, capsys):
    assert main(["check", "--only", "aligned-2pc", "--report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "report" in err and err.count("\n") == 1


def test_explore_report(tmp_path, capsys):
    out = tmp_path / "explore.html"
    code = main(["explore", "--variant", "unaligned-without-channel-state", "--small", "--out", str(tmp_path / "cx"),
                 "--report", str(out), "--max-seconds", "60"])
    assert code == 0
    page = out.read_text()
    _self_contained(page)
    assert re.findall(r'<tr data-suite="([^"]+)"', page) == ["unaligned-without-channel-state"]
    assert "violation consistent_cut" in page and "found after (states)" in page
    (link,) = _links(page, tmp_path)
    assert link.is_file()
    (f,) = (tmp_path / "cx").rglob("*.ndjson")
    assert f"{len(load_counterexample(f).actions)} steps</a>" in page


def _x_tick_labels(svg: str) -> list[str]:
    axis = svg[svg.index('<g id="matplotlib.axis_1">'):svg.index('<g id="matplotlib.axis_2">')]
    return re.findall(r"<text[^>]*>([^<]*)</text>", axis)


def test_the_goals_plot_labels_every_decade_of_its_log_axis():
    """The log axis of runs per goal is labelled at 0 and at each power of ten up to the
    largest count, in plain numbers (not only "0" and "10^0")."""
    from properties.report import decade_ticks, goals_plot

    svg = goals_plot((("never", 0), ("once", 1), ("often", 250), ("some", 17)))
    assert _x_tick_labels(svg) == ["0", "1", "10", "100", "1,000", "runs reaching the goal"], _x_tick_labels(svg)
    assert decade_ticks(0) == [0, 1, 10] and decade_ticks(10) == [0, 1, 10] and decade_ticks(11) == [0, 1, 10, 100]
