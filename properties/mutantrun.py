"""Running one mutant: put its source in place of the model module's, run the kill profile's
tests with pytest, tell whether a test failed.

Two ways to put a mutant in place, both used by ``properties/mutation.py``:

* :func:`swap_code` -- in a process that has already imported the model (a child forked from
  the warm parent): the mutated function's code object replaces the code of the function object
  that everything already refers to (``function.__code__``), so every caller, every class and
  every registry sees the mutant without anything being imported again;
* :func:`install_source` -- in a fresh interpreter, before anything imports the module: an
  import hook serves the mutated source for the module's name. Used for mutants outside a
  function body (a class attribute, a default argument, a module constant), which no code swap
  reaches, and on Spark executors (``python -m properties.mutantrun SPEC.json``).

This module imports only the standard library at its top: in a fresh interpreter nothing of the
model may be imported before the hook is in place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import os
import sys
import time
import types

#: exit codes of a mutant's run (the parent reads them; a signal or a time-out is judged there)
SURVIVED, KILLED, ERROR = 0, 1, 3


class _SourceLoader(importlib.abc.Loader):
    """Executes a module from the mutant's source text instead of its file."""

    def __init__(self, path: str, source: str):
        self.path, self.source = path, source

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = self.path
        exec(compile(self.source, self.path, "exec"), module.__dict__)


class _MutantFinder(importlib.abc.MetaPathFinder):
    """Finds one module name (``model.<name>``) and hands it the mutated source."""

    def __init__(self, fullname: str, path: str, source: str):
        self.fullname, self.path, self.source = fullname, path, source

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.fullname:
            return None
        return importlib.util.spec_from_loader(fullname, _SourceLoader(self.path, self.source), origin=self.path)


def install_source(fullname: str, path: str, source: str) -> None:
    """From now on, importing ``fullname`` executes ``source`` (as if it were the file ``path``).
    The module must not have been imported yet."""
    if fullname in sys.modules:
        raise RuntimeError(f"{fullname} was imported before the mutant's source was installed")
    sys.meta_path.insert(0, _MutantFinder(fullname, path, source))


def _code_by_qualname(code: types.CodeType, qualname: str) -> types.CodeType | None:
    """The code object of the function ``qualname`` compiled inside ``code`` (a module)."""
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_qualname == qualname:
                return const
            found = _code_by_qualname(const, qualname)
            if found is not None:
                return found
    return None


def _function_object(module, qualname: str):
    """The live function object of ``qualname`` (``func`` or ``Class.method``) in ``module``;
    a staticmethod or classmethod is unwrapped."""
    obj = module
    parts = qualname.split(".")
    for part in parts[:-1]:
        obj = getattr(obj, part)
    fn = (vars(obj) if isinstance(obj, type) else obj.__dict__)[parts[-1]]
    return getattr(fn, "__func__", fn)


def swap_code(fullname: str, qualname: str, source: str) -> None:
    """Give the already imported function ``qualname`` of module ``fullname`` the code it has in
    the mutated ``source``. ValueError when that is impossible (the function is not found, or the
    mutant changed what it closes over); the caller then runs the mutant in a fresh interpreter."""
    module = sys.modules.get(fullname) or importlib.import_module(fullname)
    compiled = compile(source, module.__file__, "exec")
    new = _code_by_qualname(compiled, qualname)
    if new is None:
        raise ValueError(f"{qualname}: not found in the mutated source")
    fn = _function_object(module, qualname)
    if not isinstance(fn, types.FunctionType):
        raise ValueError(f"{qualname}: not a plain function")
    fn.__code__ = new  # ValueError if the free variables differ


class _Recorder:
    """pytest plugin: the first failing test (its node id) and how many tests ran."""

    def __init__(self):
        self.failed: str | None = None
        self.ran = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" or report.failed:
            if report.when == "call":
                self.ran += 1
            if report.failed and self.failed is None:
                self.failed = report.nodeid


def run_tests(nodeids: list[str], result_path: str | None, *, quiet: bool = True) -> int:
    """Run ``nodeids`` with pytest, stopping at the first failure; write ``{"failed": nodeid or
    null, "ran": N}`` to ``result_path``; return :data:`KILLED` when a test failed, else
    :data:`SURVIVED` (:data:`ERROR` when pytest could not run them)."""
    import pytest  # here, not at the top: a fresh interpreter must install the hook before pytest loads conftest

    rec = _Recorder()
    args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", "-o", "addopts=",
            *nodeids]
    if quiet:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    rc = pytest.main(args, plugins=[rec])
    outcome = KILLED if rec.failed is not None or rc == 1 else (SURVIVED if rc == 0 else ERROR)
    if result_path:
        with open(result_path, "w") as f:
            json.dump({"failed": rec.failed, "ran": rec.ran, "pytest_rc": int(rc)}, f)
    return outcome


def main(argv: list[str]) -> int:
    """``python -m properties.mutantrun SPEC.json``: SPEC holds ``module`` (``model.<name>``),
    ``path``, ``source`` (the mutant's), ``tests`` (node ids) and ``result`` (a path for the
    outcome). Exit :data:`KILLED`, :data:`SURVIVED` or :data:`ERROR`."""
    with open(argv[0]) as f:
        spec = json.load(f)
    os.chdir(spec["root"])
    sys.path.insert(0, spec["root"])
    install_source(spec["module"], spec["path"], spec["source"])
    t0 = time.perf_counter()
    rc = run_tests(spec["tests"], spec["result"])
    if spec.get("result"):
        with open(spec["result"]) as f:
            res = json.load(f)
        res["seconds"] = round(time.perf_counter() - t0, 3)
        with open(spec["result"], "w") as f:
            json.dump(res, f)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
