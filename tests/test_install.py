"""Installing the project: `make`'s editable install of a fresh clone into a new virtual
environment, as the README's two commands do on first use (slow: a venv and a build)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_an_editable_install_of_a_clone_warns_of_nothing_and_imports_the_clone(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    got = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-v", "--disable-pip-version-check",
                          "--no-deps", "-e", str(clone)], capture_output=True, text=True)
    out = got.stdout + got.stderr
    assert got.returncode == 0, out[-3000:]
    # setuptools' finder-based editable install warns of folders named like the packages
    assert "same\n" not in out and "name as your package" not in out, out[-3000:]
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import model, spec, properties, flinkspec, spark;"
                            "print(model.__file__, flinkspec.__file__)"], capture_output=True, text=True, cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert all(Path(p).is_relative_to(clone) for p in where.stdout.split()), where.stdout
