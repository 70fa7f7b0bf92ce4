"""``flinkspec show FILE``: a counterexample as numbered steps, with the state that matters
after each step, and the violation explained as expected vs actual.

The file is validated completely first -- every line, every action's arguments, and a
replay in which every action must be enabled at its turn -- and only then rendered: a bad
file is a one-line error (exit 2), never half an explanation. ``--html OUT`` also writes an
interactive, self-contained page (swimlanes, a step cursor, the state at every step, the
choices not taken, the violation marked); ``--itf OUT`` the trace in the ITF JSON format of
Apalache and Quint (whole-cluster files). Both refuse an OUT that exists and is not a
regular file, and write atomically.
"""

from __future__ import annotations

import json

from model.errors import FlinkspecError


def register(sub) -> None:
    p = sub.add_parser("show", help="print a counterexample step by step",
                       description=__doc__.split("\n\n", 1)[1])
    p.add_argument("file", metavar="FILE")
    p.add_argument("--all-state", action="store_true", help="print the state after every step, not only when it changed")
    p.add_argument("--html", metavar="OUT", help="also write an interactive self-contained HTML page "
                                                  "(swimlanes, step cursor, state panel, the violation marked)")
    p.add_argument("--itf", metavar="OUT", help="also write the trace as ITF JSON (Apalache/Quint trace format)")
    p.add_argument("--design", metavar="FILE", help="the design file of the counterexample's variant, when it is not "
                                                     "at the path the file records")
    p.set_defaults(func=run)


def run(args) -> int:
    # lazy: the model runtime and engines (~0.3 s) are needed by this command only, not at flinkspec start-up
    from properties.counterexample import check_replay, load_counterexample
    from properties.explain import explain  # lazy, as above
    from properties.safe_io import check_output_file, write_atomic  # lazy, as above

    out = check_output_file(args.html, what="HTML page") if args.html else None  # before any work
    itf_out = check_output_file(args.itf, what="ITF trace") if args.itf else None
    from flinkspec.design import load_design_of_counterexample  # lazy, as above

    load_design_of_counterexample(args.file, args.design)  # (a design's variant: its seams and invariants first)
    cx = load_counterexample(args.file, known_variant=True)
    check_replay(cx)  # every action enabled at its turn: only a valid file is rendered
    text = explain(cx, all_state=args.all_state)
    page = itf = None
    if itf_out is not None:
        from properties.scenario_kinds import kind_of  # lazy, as above

        if kind_of(cx.scenario) is not None:
            raise FlinkspecError(f"{args.file}: --itf writes whole-cluster counterexamples (a state per step); "
                                 f"this one is of kind {kind_of(cx.scenario).name}: read it with `flinkspec show`")
        from properties.itf import itf_trace  # lazy, as above

        itf = json.dumps(itf_trace(cx), indent=1, sort_keys=False) + "\n"
    if out is not None:
        from properties.html import render_html  # lazy, as above

        page = render_html(cx)
    print(text)
    if page is not None:
        write_atomic(out, page, what="HTML page")
        print(f"wrote {out}")
    if itf is not None:
        write_atomic(itf_out, itf, what="ITF trace")
        print(f"wrote {itf_out}")
    return 0
