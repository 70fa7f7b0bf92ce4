"""``flinkspec verify`` runs ``prove`` in a second process beside ``check``
(flinkspec/commands/verify.py ``_Beside``): its output is held and printed in its turn, its
exit code judged; an interrupted verify leaves no process behind."""

from __future__ import annotations

import subprocess
import sys

from flinkspec.commands.verify import _Beside


def test_a_part_beside_prints_its_output_in_its_turn_and_returns_its_exit_code(capsys):
    part = _Beside(["keygroup", "a", "--max-parallelism", "128", "--parallelism", "2"])
    assert capsys.readouterr().out == ""  # nothing printed before its turn
    code, secs = part.finish()
    out = capsys.readouterr().out
    direct = subprocess.run([sys.executable, "-m", "flinkspec", "keygroup", "a", "--max-parallelism", "128",
                             "--parallelism", "2"], capture_output=True, text=True)
    assert code == 0 and secs > 0 and out == direct.stdout + direct.stderr and "a" in out


def test_a_failing_part_beside_reports_its_exit_code(capsys):
    code, _ = _Beside(["keygroup", "a", "--max-parallelism", "0", "--parallelism", "2"]).finish()
    assert code == 2 and "flinkspec: error:" in capsys.readouterr().out


def test_stop_ends_a_part_still_running():
    part = _Beside(["check", "--profile", "thorough", "--no-write"])
    part.stop()
    assert part.proc.returncode is not None and part.proc.returncode != 0
