"""``flinkspec peer [--class NAME] [--full] [--json]``: Flink's own unit tests, run against the model.

Runs every ported case of the peer suite (``tests/peer/<FlinkTestClass>.json``: the input
sequence and the outcome Flink's test asserts) against the model and prints, per Flink test
class, the cases listed, ported, agreeing, documented differences and skipped, then every
disagreement. ``--full`` runs Flink's full random draws (``java.util.Random``) where the default
runs a prefix; ``--class`` restricts to one class. Exit 0 when every ported case agrees (or
shows exactly its documented difference), 1 on a disagreement, 2 on bad input (a malformed
data file, an unknown class).
"""

from __future__ import annotations

import json

from model.errors import FlinkspecError


def register(sub) -> None:
    p = sub.add_parser("peer", help="run Flink's own unit tests (ported as data) against the model",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--class", dest="flink_class", metavar="NAME", default=None,
                   help="only this Flink test class (e.g. StatusWatermarkValveTest)")
    p.add_argument("--full", action="store_true", help="Flink's full random draws (slower)")
    p.add_argument("--json", action="store_true", help="one JSON object per class, then a summary line")
    p.set_defaults(func=run)


def run(args) -> int:
    from properties.peer import load_all, summary  # lazy: keeps the other commands' start-up light

    datas = load_all()
    if args.flink_class is not None:
        names = [d["flink_class"] for d in datas]
        datas = [d for d in datas if d["flink_class"] == args.flink_class]
        if not datas:
            raise FlinkspecError(f"--class {args.flink_class!r}: no such peer class (one of {', '.join(names)})")
    rows = summary(datas, quick=not args.full)
    bad = sum(len(r["disagreeing"]) for r in rows)
    if args.json:
        for r in rows:
            print(json.dumps(r, sort_keys=True))
        print(json.dumps({"classes": len(rows), "ported": sum(r["ported"] for r in rows),
                          "agreeing": sum(r["agreeing"] for r in rows),
                          "differences": sum(r["differences"] for r in rows),
                          "skipped": sum(r["skipped"] for r in rows), "disagreements": bad}, sort_keys=True))
        return 1 if bad else 0
    width = max(len(r["flink_class"]) for r in rows)
    print(f"{'Flink test class':<{width}}  cases  ported  agreeing  differences  skipped")
    for r in rows:
        print(f"{r['flink_class']:<{width}}  {r['cases']:>5}  {r['ported']:>6}  {r['agreeing']:>8}  "
              f"{r['differences']:>11}  {r['skipped']:>7}")
    for r in rows:
        for d in r["disagreeing"]:
            print(f"DISAGREES {r['flink_class']}#{d['case']}: " + "; ".join(d["disagreements"]))
    print(f"{bad} disagreement(s)")
    return 1 if bad else 0
