"""``flinkspec replay FILE...``: re-execute counterexample files.

Exit 0 when every file reproduces its recorded verdict (the same invariant violated at the
same step), 1 when one does not, 2 when a file is malformed or incompatible (checked before
any step: ``docs/input-validation.md``) or an action is not enabled at its turn. Every file
is validated before the first one is replayed.
"""

from __future__ import annotations

from pathlib import Path

from model.errors import FlinkspecError
from model.inputfiles import short_text


def register(sub) -> None:
    p = sub.add_parser("replay", help="replay counterexample files and check they reproduce their verdict")
    p.add_argument("files", nargs="+", metavar="FILE", help="a .ndjson counterexample, or a folder of them")
    p.add_argument("--design", metavar="FILE", help="the design file of the counterexamples' variants, when it is "
                                                     "not at the path the files record")
    p.set_defaults(func=run)


def _expand(files) -> list[Path]:
    out = []
    for f in files:
        p = Path(f)
        if p.is_dir():
            found = sorted(q for q in p.rglob("*.ndjson") if not q.name.startswith(".tmp-"))
            if not found:
                raise FlinkspecError(f"{short_text(str(p), 200)}: no .ndjson counterexample files in this folder")
            out.extend(found)
        else:
            out.append(p)  # load_counterexample says what is wrong with it, if anything
    return out


def run(args) -> int:
    # lazy: the model runtime and engines (~0.3 s) are needed by this command only, not at flinkspec start-up
    from properties.counterexample import load_counterexample, replay_counterexample

    from flinkspec.design import load_design_of_counterexample  # lazy, as above

    paths = _expand(args.files)
    for path in paths:  # a design's variant: its seams and invariants are registered first
        load_design_of_counterexample(path, args.design)
    loaded = [load_counterexample(path, known_variant=True) for path in paths]  # all valid before any replay
    failed = 0
    for cx in loaded:
        path = cx.path
        ok, v = replay_counterexample(cx)
        rec = cx.violation
        if ok:
            print(f"{path}: reproduced — {rec.invariant} at step {rec.step} ({len(cx.actions)} actions)")
        else:
            failed += 1
            now = "no violation" if v is None else f"{v.invariant} at step {v.step}"
            print(f"{path}: NOT reproduced — recorded {rec.invariant} at step {rec.step}, now {now}")
    return 1 if failed else 0
