"""Rewrite counterexample files written before parts of the configuration moved.

* Unsafe switches of ``RuntimeConfig`` became seams (``model.seams``): a knob at its unsafe
  value is now its seam, at its safe value it is dropped (``model.cluster.RETIRED_KNOBS``,
  ``migrate_config``).
* The seams a run switches on left the configuration (its ``bugs`` list) for the scenario's
  ``seams``; a focused machine's ``bugs`` knob is its ``seams`` knob.
* What the model includes and how coarsely (``control_plane``, ``channel_capacity``) left the
  configuration for the scenario's ``scope`` (``model.scope.ModelScope``).
* The faults and operator actions a run may see, and their budgets (``max_failures``,
  ``max_checkpoints``, ``savepoints``, ...), left ``RuntimeConfig`` for
  ``model.environment.Environment``: they move from the scenario's ``config`` to its
  ``environment`` (``split_config``).

This rewrites each file's header in place (atomically), keeping every other byte; the file's
name (a hash of the run, not of the header) and its replay stay the same. Files that need
nothing are left alone.

    python tools/migrate_knobs.py counterexamples/        # every .ndjson below, recursively
    python tools/migrate_knobs.py FILE.ndjson ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from model.cluster import RETIRED_KNOBS, migrate_config  # noqa: E402  (the repository root is on the path now)
from model.environment import FIELDS as ENVIRONMENT_FIELDS, split_config  # noqa: E402
from model.scope import FIELDS as SCOPE_FIELDS, ModelScope, split_scope  # noqa: E402
from properties.machines import migrate_focused_knobs  # noqa: E402
from properties.safe_io import write_atomic  # noqa: E402


def migrate_file(path: Path) -> bool:
    """Rewrite ``path`` if its header's configuration names a retired knob, its seams or an
    environment field (or a focused machine's knobs a retired knob); True if it did."""
    text = path.read_text(encoding="utf-8")
    first, sep, rest = text.partition("\n")
    header = json.loads(first)
    sc = header.get("scenario") or {}
    cfg = sc.get("config")
    if isinstance(cfg, dict) and any(k in RETIRED_KNOBS or k in ENVIRONMENT_FIELDS or k in SCOPE_FIELDS or k == "bugs"
                                     for k in cfg):
        cfg, names = migrate_config(cfg)
        cfg, scope = split_scope(cfg)
        sc["config"], moved = split_config(cfg)
        sc["environment"] = {**moved, **(sc.get("environment") or {})}
        sc["scope"] = attrs.asdict(ModelScope(**{**scope, **(sc.get("scope") or {})}))
        names = list(sc.get("seams") or ()) + [n for n in names if n not in (sc.get("seams") or ())]
        if names:
            sc["seams"] = names
    elif sc.get("kind") == "focused" and isinstance(sc.get("knobs"), dict) \
            and migrate_focused_knobs(sc.get("machine"), sc["knobs"]) != sc["knobs"]:
        sc["knobs"] = migrate_focused_knobs(sc["machine"], sc["knobs"])
    else:
        return False
    write_atomic(path, json.dumps(header, sort_keys=True, separators=(",", ":")) + sep + rest, what="counterexample")
    return True


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    files: list[Path] = []
    for a in argv:
        p = Path(a)
        files.extend(sorted(p.rglob("*.ndjson")) if p.is_dir() else [p])
    changed = sum(migrate_file(f) for f in files)
    print(f"{changed} of {len(files)} file(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
