"""``flinkspec verify``: the README's main job.

1. ``flinkspec check --profile quick``: every suite, verdict vs expected, coverage goals;
2. ``flinkspec prove``: the z3 proofs and bounded model checks;
3. ``flinkspec spark-replay``: a short randomized replay on Spark (local mode);

then one summary table. Exit 0 only when all three are as expected. Counterexamples go to
run directories under results/ (ignored by git), never into the committed corpus.

On a machine with two or more cores, ``check`` runs one suite per core at once
(``check --workers``, the same verdicts as one at a time) and ``prove`` runs in another
process beside it; prove's output is held and printed in its place after ``check``'s.

Progress lines go to stderr (``properties.progress``): each part's own, and while verify
waits for the part run beside check, how long it has run (that part's own progress is
silenced: its output is held and printed later).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time

from flinkspec.commands import seed
from flinkspec.cli import build_parser
from properties.progress import ENV, Reporter, format_elapsed

DEFAULT_SPARK_RUNS = 400


def register(sub) -> None:
    p = sub.add_parser("verify", help="the main job: check + prove + a short Spark replay, then a summary",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--profile", choices=("quick", "thorough"), default="quick")
    p.add_argument("--seed", type=seed, default=0)
    p.add_argument("--spark-runs", type=int, default=DEFAULT_SPARK_RUNS,
                   help=f"runs of the Spark replay (default {DEFAULT_SPARK_RUNS}; 0 skips it)")
    p.add_argument("--spark-master", default="local[*]")
    p.add_argument("--out", default=None,
                   help="where the Spark replay writes (default: its own new run directory under results/)")
    p.set_defaults(func=run)


def _section(title: str) -> None:
    print()
    print("=" * 100)
    print(title)
    print("=" * 100, flush=True)


class _Beside:
    """A part run by a second ``flinkspec`` process while this one runs another: its output
    (stdout and stderr) is kept in a temporary file until ``finish`` prints it."""

    def __init__(self, argv: list[str]):
        self.out = tempfile.TemporaryFile()
        self.t0 = time.perf_counter()
        self.seconds = None
        self.name = argv[0]
        # its progress lines would land in the held output, then on verify's stdout: silenced
        env = {**os.environ, ENV: "off"}
        self.proc = subprocess.Popen([sys.executable, "-m", "flinkspec", *argv], stdout=self.out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.waiter = threading.Thread(target=self._wait, daemon=True)
        self.waiter.start()

    def _wait(self) -> None:
        self.proc.wait()
        self.seconds = time.perf_counter() - self.t0

    def finish(self) -> tuple[int, float]:
        """Wait for the process, print what it printed; its exit code and wall seconds."""
        if self.waiter.is_alive():
            with Reporter("verify") as rep:
                while self.waiter.is_alive():
                    rep.update(f"waiting for {self.name} (run beside check), "
                               f"{format_elapsed(time.perf_counter() - self.t0)} since it started")
                    self.waiter.join(0.2)
        self.waiter.join()
        self.out.seek(0)
        sys.stdout.write(self.out.read().decode("utf-8", "replace"))
        sys.stdout.flush()
        self.out.close()
        return self.proc.returncode, self.seconds

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()


def run(args) -> int:
    parser = build_parser()
    cores = os.cpu_count() or 1
    steps = [
        ("check", ["check", "--profile", args.profile, "--seed", str(args.seed), "--workers", str(cores)],
         "property suites: safe configurations pass, known-unsafe ones are caught"),
        ("prove", ["prove"], "z3: proofs for all parameters and bounded model checks"),
    ]
    if args.spark_runs:
        out = [] if args.out is None else ["--out", f"{args.out}/spark-replay",
                                           "--counterexamples", f"{args.out}/spark-counterexamples"]
        steps.append(("spark-replay", ["spark-replay", "--runs", str(args.spark_runs), "--master", args.spark_master,
                                       "--seed", str(args.seed), *out, "--smoke"],
                      "randomized replays on Spark, results as Parquet"))
    beside = {}
    if cores >= 2:  # z3 beside check's suites
        beside["prove"] = _Beside(["prove"])
    results = []
    try:
        for name, argv, what in steps:
            _section(f"flinkspec {' '.join(argv)}    — {what}")
            if name in beside:
                code, secs = beside.pop(name).finish()
                results.append((f"{name} (beside check)", code, secs))
                continue
            t0 = time.perf_counter()
            sub = parser.parse_args(argv)
            try:
                code = int(sub.func(sub) or 0)
            except Exception as e:  # report and go on: the summary must show every part
                print(f"flinkspec {name}: error: {type(e).__name__}: {e}")
                code = 2
            results.append((name, code, time.perf_counter() - t0))
    finally:
        for part in beside.values():  # interrupted before its turn
            part.stop()
    _section("summary")
    print(f"{'part':22s} {'result':16s} {'time':>8s}")
    for name, code, secs in results:
        print(f"{name:22s} {'as expected' if code == 0 else 'FAILED (exit %d)' % code:16s} {secs:7.1f}s")
    ok = all(code == 0 for _, code, _ in results)
    print("verdict: " + ("every part as expected" if ok else "some part did not give its expected result"))
    return 0 if ok else 1
