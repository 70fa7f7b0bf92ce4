"""Regenerate docs/conformance.md from the peer-suite data (``tests/peer/*.json``).

Run: .venv/bin/python tools/gen_conformance.py        (``--check``: exit 1 if the page is stale)

``render()`` returns the page: per Flink test class the cases listed, ported, agreeing,
documented differences and skipped (each count computed from the data files and by running
every ported case against the model, with the ``quick`` draws of the randomized cases; the slow
suite runs Flink's full draws), then every skipped case with its reason and every assertion a
ported case leaves out. tests/test_peer.py checks the committed page equals it. The page's
hand-written last part, from the heading :data:`HAND_WRITTEN` to the end (the comparison with a
real Flink MiniCluster, ``flinkspec conform``), is kept as it is.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from properties.peer import load_all, summary

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "conformance.md"
#: the first line of the page's hand-written part (kept by ``render()``)
HAND_WRITTEN = "## Real Flink: `flinkspec conform`"


def hand_written_part() -> str:
    """The page's hand-written last part (from :data:`HAND_WRITTEN` on), or "" if it has none."""
    text = DOC.read_text() if DOC.is_file() else ""
    at = text.find("\n" + HAND_WRITTEN + "\n")
    return text[at + 1:] if at >= 0 else ""


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def render() -> str:
    datas = load_all()
    rows = summary(datas, quick=True)
    lines = [
        "# Conformance: Flink's own unit tests as a peer suite",
        "",
        "Flink's unit tests for the mechanisms the model has are ported as data: each file",
        "`tests/peer/<FlinkTestClass>.json` lists every test method of the class that was reviewed,",
        "with the input sequence and the outcome Flink asserts (copied from the Java test, never",
        "from the model), or the reason it cannot be expressed in the model. `properties/peer.py`",
        "runs each ported case against the model; `tests/test_peer.py` fails on any disagreement",
        "(`flinkspec peer` prints the same table and every disagreement). This page is generated",
        "from the data by `tools/gen_conformance.py`; a test fails when it is stale. The last two sections,",
        "written by hand, compare the model with real Flink 2.3.0: end results of random jobs on a",
        "MiniCluster (`flinkspec conform`), and traces of real runs under faults checked against the model",
        "(`flinkspec trace`, `flinkspec validate`).",
        "",
        "A disagreement is either a model fix (with a regression test) or a documented deliberate",
        "difference (a case marked `difference`, listed below). Cases that draw random inputs in",
        "Flink (`java.util.Random` with a fixed seed) draw the same inputs here through a port of",
        "`java.util.Random`; the default test run uses a prefix of the draws, the slow suite all.",
        "",
        "| Flink test class | reviewed | model | cases | ported | agreeing | documented differences | skipped |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tot = {"cases": 0, "ported": 0, "agreeing": 0, "differences": 0, "skipped": 0}
    for row in rows:
        reviewed = "part (see below)" if row["scope"] else "all"
        lines.append(f"| `{row['flink_class']}` | {reviewed} | {_cell(row['model'])} | {row['cases']} | {row['ported']} | "
                     f"{row['agreeing']} | {row['differences']} | {row['skipped']} |")
        for k in tot:
            tot[k] += row[k]
    lines.append(f"| **total** | | | {tot['cases']} | {tot['ported']} | {tot['agreeing']} | {tot['differences']} | "
                 f"{tot['skipped']} |")
    disagreeing = [(r["flink_class"], d) for r in rows for d in r["disagreeing"]]
    lines += ["", f"Disagreements: {len(disagreeing)}."]
    for cls, d in disagreeing:
        lines.append(f"- `{cls}#{d['case']}`: {_cell('; '.join(d['disagreements']))}")
    fixes = [(d["flink_class"], c) for d in datas for c in d["cases"] if c.get("model_fix")]
    lines += ["", f"Model fixes the peer suite led to: {len(fixes)}."]
    for cls, c in fixes:
        lines.append(f"- `{cls}#{c['name']}`: {_cell(c['model_fix'])}")
    lines += ["", "## Per class", ""]
    for data in datas:
        lines += [f"### `{data['flink_class']}`", "",
                  f"Flink: `{data['flink_path']}` (stored version {_cell(data.get('flink_commit', '?'))}). "
                  f"Model: {_cell(data['model'])}."]
        for key in ("scope", "note"):
            if data.get(key):
                lines.append(f"{key.capitalize()}: {_cell(data[key])}")
        lines.append("")
        skipped = [c for c in data["cases"] if c["status"] == "skipped"]
        partial = [c for c in data["cases"] if c["status"] == "ported" and c.get("not_ported")]
        diffs = [c for c in data["cases"] if c["status"] == "ported" and c.get("difference")]
        if skipped:
            lines.append("Skipped (inexpressible in the model):")
            lines += [f"- `{c['name']}`: {_cell(c['reason'])}" for c in skipped]
            lines.append("")
        if partial:
            lines.append("Ported without some assertions:")
            lines += [f"- `{c['name']}`: not ported: {_cell(c['not_ported'])}" for c in partial]
            lines.append("")
        if diffs:
            lines.append("Documented deliberate differences:")
            lines += [f"- `{c['name']}`: {_cell(c['difference']['why'])}" for c in diffs]
            lines.append("")
    page = "\n".join(lines).rstrip() + "\n"
    tail = hand_written_part()
    return page + ("\n" + tail if tail else "")


def main(argv: list[str]) -> int:
    page = render()
    if "--check" in argv:
        if DOC.read_text() != page:
            print("docs/conformance.md is stale: run .venv/bin/python tools/gen_conformance.py", file=sys.stderr)
            return 1
        return 0
    fd, tmp = tempfile.mkstemp(dir=DOC.parent, prefix=".conformance.", suffix=".md")
    with os.fdopen(fd, "w") as f:
        f.write(page)
    os.replace(tmp, DOC)
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
