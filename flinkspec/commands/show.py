"""``flinkspec show FILE``: a counterexample as numbered steps, with the state that matters
after each step, and the violation explained as expected vs actual."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("show", help="print a counterexample step by step")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--all-state", action="store_true", help="print the state after every step, not only when it changed")
    p.add_argument("--html", metavar="OUT", help="also write a self-contained HTML page with per-task swimlanes")
    p.set_defaults(func=run)


def run(args) -> int:
    # lazy: the model runtime and engines (~0.3 s) are needed by this command only, not at flinkspec start-up
    from properties.counterexample import load_counterexample
    from properties.explain import explain  # lazy, as above

    cx = load_counterexample(args.file)
    print(explain(cx, all_state=args.all_state))
    if args.html:
        from properties.html import render_html  # lazy, as above

        out = Path(args.html)
        page = render_html(cx)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".html", dir=out.parent if str(out.parent) else ".")
        with os.fdopen(fd, "w") as f:
            f.write(page)
        os.replace(tmp, out)
        print(f"wrote {out}")
    return 0
