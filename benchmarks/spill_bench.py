"""The exhaustive search spilled to disk against the search in memory, in one run
(``flinkspec bench spill``).

One variant's small scenario is searched three times, each in a fresh interpreter
(``flinkspec explore --json``), its frontier kept as traces (``--frontier``): in memory with
no memory limit but the default; in memory under ``--max-memory`` (``--no-spill``: it ends
``bounded`` by ``max_memory`` when the search needs more); and under the same ``--max-memory``
with the seen set, the level being built and the frontier spilled past ``--spill-memory``. For
each: the verdict and figures, the search's seconds, the process's CPU seconds and peak
resident memory (``wait4``), the most bytes its spill files held. The spilled search must give
the figures of the unlimited one (states, transitions, depth, drained states, verdict, limit):
``same_figures``, exit 1 if not. ``overhead``: the spilled search's seconds and CPU seconds
over the unlimited one's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: what the spilled search must give as the search in memory does
FIGURES = ("verdict", "invariant", "distinct_states", "transitions", "depth", "counterexample_steps")


def _search(argv: list) -> dict:
    """One ``flinkspec explore --json`` in a fresh interpreter: its row, CPU seconds and peak
    resident memory."""
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen([sys.executable, "-m", "flinkspec", "explore", "--json", "--no-write", *argv],
                             stdout=out, stderr=subprocess.DEVNULL, env=dict(os.environ, FLINKSPEC_PROGRESS="0"))
        _pid, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        lines = out.read().decode().strip().splitlines()
    if not lines:
        raise RuntimeError(f"flinkspec explore {' '.join(argv)} printed nothing (exit {p.returncode})")
    row = json.loads(lines[-1])
    return {"verdict": row["verdict"], "invariant": row["invariant"], "limit": row["limit"],
            "distinct_states": row["distinct_states"], "transitions": row["transitions"], "depth": row["depth"],
            "counterexample_steps": row["counterexample_steps"], "seconds": row["seconds"],
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_resident_mb": round(usage.ru_maxrss / 1024, 1),  # (kilobytes on Linux)
            "spilled_mb": round(row.get("spilled_bytes", 0) / (1 << 20), 2)}


def bench_spill(variant: str, max_memory: str, spill_memory: str | None, frontier: str = "traces",
                max_seconds: float = 3600.0) -> dict:
    base = ["--variant", variant, "--small", "--frontier", frontier, "--max-seconds", f"{max_seconds:g}"]
    whole = _search([*base, "--no-spill"])
    bounded = _search([*base, "--no-spill", "--max-memory", max_memory])
    with tempfile.TemporaryDirectory(prefix="flinkspec-bench-spill-") as d:
        spilled = _search([*base, "--max-memory", max_memory, "--spill-dir", d]
                          + ([] if spill_memory is None else ["--spill-memory", spill_memory]))
        left = list(Path(d).iterdir())
    same = all(spilled[k] == whole[k] for k in FIGURES) and spilled["limit"] == whole["limit"]
    return {
        "variant": variant, "frontier": frontier, "max_memory": max_memory, "spill_memory": spill_memory,
        "in_memory": whole, "in_memory_under_max_memory": bounded, "spilled": spilled,
        "same_figures": same, "spill_files_left": len(left),
        "overhead": round(spilled["seconds"] / whole["seconds"], 2) if whole["seconds"] else None,
        "cpu_overhead": round(spilled["cpu_seconds"] / whole["cpu_seconds"], 2) if whole["cpu_seconds"] else None,
    }
