"""``flinkspec show FILE``: a counterexample as numbered steps, with the state that matters
after each step, and the violation explained as expected vs actual."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("show", help="print a counterexample step by step")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--all-state", action="store_true", help="print the state after every step, not only when it changed")
    p.set_defaults(func=run)


def run(args) -> int:
    from properties.counterexample import load_counterexample
    from properties.explain import explain

    cx = load_counterexample(args.file)
    print(explain(cx, all_state=args.all_state))
    return 0
