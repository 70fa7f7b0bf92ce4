"""Running one mutant: put its source in place of the model module's, run the kill profile's
tests with pytest (or, for the quick judge, the quick check of the suites covering the module),
tell whether a test failed and how.

How a failure is told apart (``run_tests``): a test whose exception is an ``AssertionError``
(an ``assert``, ``pytest.raises`` not raising, ``pytest.fail``, or a named invariant violation:
``properties.machines.ViolationFound`` is one) is a *kill*; any other exception escaping the
model (``TypeError``, ``AttributeError``, ``RecursionError``, ...) or a test module that no
longer imports or collects is a *crash*, reported with the exception's type and the test. Where a
crash was raised is recorded too (``raised_at``: the innermost traceback frame in the mutated
module's file, its line and function): ``properties/mutation.py`` judges a crash raised on the
mutant's own lines *incompetent* (the mutated line could not run). The mutant's code is
instrumented (:func:`instrument`: a local set just before the mutated statement), so
``raised_at`` also tells whether that frame is the invocation of the mutated function that ran
the mutated statement (``"same_call"``), and whether that invocation is on the traceback at all
(``"in_call"``: the exception was raised in a function it called, before it returned): such a
crash is ``crashed_in_call`` there (no test code ran between the mutated line and the
exception); any other crash is a crash. In a fresh interpreter the first import of the mutated
module is watched too (``FIRST_IMPORT``): when it fails on the mutant's own lines (a class
statement whose ``__slots__`` was made ``None``), that first failure is reported as such
(``"first_import"``), and ``properties/mutation.py`` judges the mutant incompetent from it,
whatever a later import of the half-imported module raises elsewhere.

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

import ast
import importlib
import importlib.abc
import importlib.util
import inspect
import json
import os
import sys
import time
import types

#: exit codes of a mutant's run (the parent reads them; a signal or a time-out is judged there):
#: survived, killed by a failing assertion, pytest could not run, crashed (another exception),
#: out of memory (a ``MemoryError`` escaped the run itself: the memory limit, see :func:`limit_memory`)
SURVIVED, KILLED, ERROR, CRASHED, OUT_OF_MEMORY = 0, 1, 3, 4, 5
#: environment variable: when set, ``properties.suites``/``properties.focused`` let a crash of the
#: model escape instead of recording it as the suite's error
RAISE_MODEL_CRASHES = "FLINKSPEC_RAISE_MODEL_CRASHES"


#: how the first import of the mutated module in this process ended (the import hook's: the
#: fresh-interpreter way), None before it ran: ``{"ok": True}``, or ``{"ok": False, "exception":
#: its type, "raised_at": where in the module (:func:`raised_at`), "own_lines": whether it was
#: raised on the mutant's own lines (:func:`import_lines`), "test": the test it failed in}``.
#: A module whose first import failed is half imported: an import again (another test file)
#: runs its statements again and may be refused elsewhere (an id or a seam registered twice);
#: the first failure is the one that tells what the mutant did.
FIRST_IMPORT: dict | None = None


def import_lines(source: str, span: tuple[int, int] | None) -> frozenset:
    """The lines of ``source`` (a mutated module) whose failure at import is the mutant's own:
    the innermost statement holding the replacement (``span``: its character offsets), and the
    header of every class statement around it -- its decorators and its ``class`` line, where
    building the class fails (a ``__slots__`` made ``None``). Empty when the source does not
    parse or ``span`` is None."""
    if span is None:
        return frozenset()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    pos = _offset_to_pos(source, span[0])
    lines: set = set()
    body, inner = tree.body, None
    while body:
        node = next((n for n in body if (n.lineno, n.col_offset) <= pos <= (n.end_lineno, n.end_col_offset)), None)
        if node is None:
            break
        inner = node
        if isinstance(node, ast.ClassDef):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            lines.update(range(first, node.body[0].lineno if node.body else node.end_lineno + 1))
            body = node.body
        else:
            body = None
    if inner is not None and not isinstance(inner, ast.ClassDef):
        lines.update(range(inner.lineno, inner.end_lineno + 1))
    return frozenset(lines)


def _import_failure(exc: BaseException, path: str, own: frozenset) -> dict:
    """``FIRST_IMPORT`` for an import of ``path`` that raised ``exc``: raised on the mutant's own
    lines when the innermost frame of ``path`` on the traceback runs the module's own statements
    (its body or a class body, not a function it called) on one of the lines ``own``."""
    at = raised_at(exc, path)
    frame_code = None
    tb = exc.__traceback__
    target = os.path.realpath(path)
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) == target:
            frame_code = tb.tb_frame.f_code
        tb = tb.tb_next
    statements = frame_code is not None and not frame_code.co_flags & inspect.CO_OPTIMIZED
    return {"ok": False, "exception": type(exc).__name__, "raised_at": at,
            "own_lines": bool(at and statements and at["line"] in own)}


class _SourceLoader(importlib.abc.Loader):
    """Executes a module from the mutant's source text instead of its file; records how its
    first execution ended (``FIRST_IMPORT``)."""

    def __init__(self, path: str, source: str, code: types.CodeType | None = None, own: frozenset = frozenset()):
        self.path, self.source, self.code, self.own = path, source, code, own

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        global FIRST_IMPORT
        module.__file__ = self.path
        try:
            exec(self.code or compile(self.source, self.path, "exec"), module.__dict__)
        except BaseException as e:
            if FIRST_IMPORT is None:
                FIRST_IMPORT = _import_failure(e, self.path, self.own)
            raise
        if FIRST_IMPORT is None:
            FIRST_IMPORT = {"ok": True}


class _MutantFinder(importlib.abc.MetaPathFinder):
    """Finds one module name (``model.<name>``) and hands it the mutated source."""

    def __init__(self, fullname: str, path: str, source: str, code: types.CodeType | None = None,
                 own: frozenset = frozenset()):
        self.fullname, self.path, self.source, self.code, self.own = fullname, path, source, code, own

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.fullname:
            return None
        return importlib.util.spec_from_loader(fullname, _SourceLoader(self.path, self.source, self.code, self.own),
                                               origin=self.path)


def install_source(fullname: str, path: str, source: str, code: types.CodeType | None = None,
                   span: tuple[int, int] | None = None) -> None:
    """From now on, importing ``fullname`` executes ``source`` (as if it were the file ``path``),
    or ``code``, the compiled ``source`` (instrumented: :func:`instrument`); ``span``, the
    replacement's character offsets in ``source``, tells the mutant's own lines should the
    first import fail (``FIRST_IMPORT``). The module must not have been imported yet."""
    if fullname in sys.modules:
        raise RuntimeError(f"{fullname} was imported before the mutant's source was installed")
    sys.meta_path.insert(0, _MutantFinder(fullname, path, source, code, import_lines(source, span)))


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


def swap_code(fullname: str, qualname: str, source: str, code: types.CodeType | None = None) -> None:
    """Give the already imported function ``qualname`` of module ``fullname`` the code it has in
    the mutated ``source`` (or in ``code``, the compiled ``source``, instrumented). ValueError
    when that is impossible (the function is not found, or the mutant changed what it closes
    over); the caller then runs the mutant in a fresh interpreter."""
    module = sys.modules.get(fullname) or importlib.import_module(fullname)
    compiled = code or compile(source, module.__file__, "exec")
    new = _code_by_qualname(compiled, qualname)
    if new is None:
        raise ValueError(f"{qualname}: not found in the mutated source")
    fn = _function_object(module, qualname)
    if not isinstance(fn, types.FunctionType):
        raise ValueError(f"{qualname}: not a plain function")
    if _made_at_import(module, fn.__code__):
        raise ValueError(f"{qualname}: functions it made at import (a property's accessors) keep its old code")
    fn.__code__ = new  # ValueError if the free variables differ


def _made_at_import(module, code: types.CodeType) -> bool:
    """Whether a function of ``module``'s namespace or of one of its classes (a property's
    accessors, a static or class method) was made by a call of ``code`` -- its code is one of
    the functions ``code`` defines: a factory called at import, whose products a swap of its
    own code would not reach."""
    nested, todo = set(), [code]
    while todo:
        for const in todo.pop().co_consts:
            if isinstance(const, types.CodeType):
                nested.add(const)
                todo.append(const)
    if not nested:
        return False
    values = list(vars(module).values())
    values += [v for cls in values if isinstance(cls, type) and cls.__module__ == module.__name__
               for v in vars(cls).values()]
    for v in values:
        for f in (v.fget, v.fset, v.fdel) if isinstance(v, property) else (getattr(v, "__func__", v),):
            if getattr(f, "__code__", None) in nested:
                return True
    return False


def limit_memory(max_bytes: int | None) -> None:
    """Bound this process's address space (``RLIMIT_AS``, the soft limit) to ``max_bytes``: an
    allocation past it raises ``MemoryError`` instead of growing until the machine swaps. None:
    no bound. Never raises the limit above the hard one."""
    if not max_bytes:
        return
    import resource  # lazy: POSIX only, and only a mutant's child sets a limit

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = max_bytes if hard == resource.RLIM_INFINITY else min(max_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


#: the local a mutant's instrumented code sets, in the invocation of the mutated function, just
#: before the statement holding the mutated code runs (see :func:`instrument`)
MARK = "__flinkspec_ran_mutant__"
#: whether this process runs instrumented code: :func:`raised_at` then tells ``"same_call"``
_INSTRUMENTED = False


def _offset_to_pos(source: str, offset: int) -> tuple[int, int]:
    """A character offset of ``source`` as ``(line, column)`` the way ``ast`` counts them (lines
    from 1, columns in UTF-8 bytes)."""
    line = source.count("\n", 0, offset) + 1
    line_start = source.rfind("\n", 0, offset) + 1
    return line, len(source[line_start:offset].encode())


def _innermost_statement(root: ast.AST, first: tuple[int, int], last: tuple[int, int]):
    """``(body list, index, owner)`` of the innermost statement under ``root`` whose source span
    holds ``first``..``last``, and the function (``def`` or ``lambda``) it belongs to; None."""
    best = None
    todo = [(root, root)]
    while todo:
        node, owner = todo.pop()
        for name, value in ast.iter_fields(node):
            if not isinstance(value, list):
                continue
            for i, child in enumerate(value):
                if not isinstance(child, ast.stmt):
                    continue
                if (child.lineno, child.col_offset) <= first and last <= (child.end_lineno, child.end_col_offset):
                    best = (value, i, owner)
                    todo.append((child, child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else owner))
        for child in ast.iter_child_nodes(node):  # statements inside handlers, match cases, ...
            if not isinstance(child, ast.stmt) and not isinstance(child, ast.expr):
                todo.append((child, owner))
    return best


def _is_generator(func: ast.AST) -> bool:
    """``func`` yields or awaits (its own body, not a nested function's): its frame is resumed."""
    todo = list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return isinstance(func, ast.AsyncFunctionDef)


def instrument(source: str, path: str, qualname: str | None, span: tuple[int, int]) -> types.CodeType:
    """The mutated module ``source`` compiled (as the file ``path``) with one statement added: in
    the function ``qualname``, just before the innermost statement holding the mutated code
    (``span``: its character offsets in ``source``), ``__flinkspec_ran_mutant__ = True`` -- a
    local of that invocation, on the same line, so that every line number stays. The frame of a
    crash then tells whether this very invocation ran the mutated statement (:func:`raised_at`):
    a call's locals are its own, a later call starts without the local. Whatever the mutated
    statement is -- a simple statement, or a compound one whose header holds the mutant (an
    ``if``'s or ``elif``'s test, a loop's, a ``with``'s items: evaluated first when the statement
    runs) -- the mark comes before it. Not added (the source compiled as it is) for a mutant
    outside a function body (``qualname`` None) or in a generator or coroutine: its frame is
    resumed after its caller ran, so one frame is not one invocation there."""
    tree = ast.parse(source, path)
    func = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == qualname:
            func = node
        elif isinstance(node, ast.ClassDef) and qualname and qualname.startswith(node.name + "."):
            func = next((m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                         and f"{node.name}.{m.name}" == qualname), func)
    found = None
    if func is not None:
        found = _innermost_statement(func, _offset_to_pos(source, span[0]), _offset_to_pos(source, span[0]))
    if found is not None and not _is_generator(found[2]):
        body, i, _ = found
        mark = ast.Assign(targets=[ast.Name(MARK, ast.Store())], value=ast.Constant(True))
        body.insert(i, ast.copy_location(mark, body[i]))
        ast.fix_missing_locations(tree)
    return compile(tree, path, "exec")


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions of a group (Hypothesis reporting several), recursively; else ``[exc]``."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in _leaves(e)]
    return [exc]


def raised_at(exc: BaseException | None, path: str | None) -> dict | None:
    """Where in the file ``path`` (the mutated module) ``exc`` was raised: the innermost frame of
    its traceback whose code comes from that file (or, when none does, of the exception it was
    raised from or while handling), as ``{"line": N, "function": qualified name, "message": the
    exception's text, shortened}``, and when the mutant's code is instrumented ``"same_call"``:
    whether that frame is the invocation that ran the mutated statement (:func:`instrument`), and
    ``"in_call"``: whether that invocation is on the traceback at all (the exception was raised in
    it or in a function it called, before it returned);
    None when no frame is in that file (the exception was raised elsewhere without the module
    on the stack) or there is no exception.
    A group answers only when every one of its exceptions was raised at the same place."""
    if exc is None or not path:
        return None
    target = os.path.realpath(path)
    places = []
    for leaf in _leaves(exc):
        where, e, seen = None, leaf, 0
        # an exception raised while handling another (a runner wrapping the model's TypeError in
        # its own error, pytest wrapping an ImportError): the one it was raised from, if the
        # module is not on its own traceback
        while where is None and e is not None and seen < 5:
            tb = e.__traceback__
            marked = []  # qualified names of the frames on this traceback that ran the mutated statement
            while tb is not None:
                code = tb.tb_frame.f_code
                if code.co_filename == path or os.path.realpath(code.co_filename) == target:
                    where = {"line": tb.tb_lineno, "function": code.co_qualname,
                             "message": f"{type(e).__name__}: {e}"[:200]}
                    if _INSTRUMENTED:
                        if MARK in tb.tb_frame.f_locals:
                            marked.append(code.co_qualname)
                        where["same_call"] = _same_call(code, marked, tb.tb_frame)
                        # a frame further out that ran the mutated statement: the exception went
                        # through that invocation, so it was raised before the invocation returned
                        where["in_call"] = bool(marked)
                tb = tb.tb_next
            e, seen = e.__cause__ or e.__context__, seen + 1
        if where is None:
            return None
        places.append(where)
    if not places or any((p["line"], p["function"]) != (places[0]["line"], places[0]["function"]) for p in places):
        return None
    if "same_call" in places[0]:
        places[0]["same_call"] = all(p["same_call"] for p in places)
        places[0]["in_call"] = all(p["in_call"] for p in places)
    return places[0]


def _same_call(code: types.CodeType, marked: list, frame) -> bool:
    """The frame of ``code`` (the innermost so far in the mutated module) belongs to an
    invocation that ran the mutated statement: it ran it itself, or it is a comprehension, a
    generator expression or a lambda of such an invocation called while that invocation was
    still running (it is further out on the same traceback: the exception went through it)."""
    if MARK in frame.f_locals:
        return True
    return code.co_name.startswith("<") and any(code.co_qualname == f"{q}.<locals>.{code.co_name}" for q in marked)


def _is_assertion(exc: BaseException | None) -> bool:
    """A failing assertion: ``AssertionError`` (``ViolationFound`` is one), pytest's own
    ``Failed`` (``pytest.fail``, ``pytest.raises`` that did not raise), or a group of
    exceptions (Hypothesis reporting several) all of which are assertions."""
    if exc is None:
        return False
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_assertion(e) for e in exc.exceptions)
    return isinstance(exc, AssertionError) or type(exc).__name__ == "Failed"


class _Recorder:
    """pytest plugin: the test that decides (the first failing on an assertion, else the first
    failing at all: its node id), its exception's type, whether it is an assertion and where in
    the mutated module (``module_file``) it was raised, and how many tests ran. It stops the run
    at the first failing assertion; after a crash the run goes on through the ``cheap`` tests
    that follow (one of them may still fail on an assertion) and stops at the first other one."""

    def __init__(self, module_file: str | None = None, cheap=(), result_path: str | None = None):
        self.module_file, self.result_path = module_file, result_path
        self.cheap = frozenset(cheap)
        self.failed: str | None = None
        self.exception: str | None = None
        self.assertion = False
        self.raised_at: dict | None = None
        self.crashes: list[dict] = []  # every crashing test: its node id, exception type and raised_at
        self.out_of_memory = False  # the last test ran out of memory: release it before the next
        self.internal_memory_error = False  # pytest itself ran out of memory
        self.ran = 0
        self.session = None
        self.next_of: dict = {}

    def _first(self, nodeid: str, exc: BaseException | None, what: str | None = None) -> None:
        if FIRST_IMPORT is not None and not FIRST_IMPORT["ok"] and "test" not in FIRST_IMPORT:
            FIRST_IMPORT["test"] = nodeid  # the first failure after the import's: the test it failed in
        assertion = what is None and _is_assertion(exc)
        exception = what or (type(exc).__name__ if exc is not None else None)
        place = None if assertion else raised_at(exc, self.module_file)
        # every crashing test, once: its failed report comes first without the exception, which
        # pytest_exception_interact then names (an assertion there: not a crash after all)
        self.crashes = [c for c in self.crashes if c["test"] != nodeid or c["exception"] is not None]
        if not assertion and not any(c["test"] == nodeid for c in self.crashes):
            self.crashes.append({"test": nodeid, "exception": exception, "raised_at": place})
        if (self.failed is None or (self.failed == nodeid and self.exception is None)
                or (assertion and not self.assertion)):  # an assertion after a crash decides: a kill
            self.failed = nodeid
            self.exception = exception
            self.assertion = assertion
            self.raised_at = place

    def pytest_sessionstart(self, session):
        self.session = session

    def pytest_collection_finish(self, session):
        items = [it.nodeid for it in session.items]
        self.next_of = dict(zip(items, items[1:] + [None]))

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.out_of_memory:
            self._release_memory()
        if self.failed is None or self.session is None:
            return
        nxt = self.next_of.get(nodeid)
        if self.assertion or nxt is None or nxt not in self.cheap:
            self.session.shouldstop = "killed" if self.assertion else "crashed, and no cheap test is left"

    def _release_memory(self) -> None:
        """After a test ran out of memory (the run's limit): let go of what it held -- reachable
        from the traceback pytest keeps in ``sys.last_traceback`` -- so that the cheap tests
        still to come can run; when that frees too little, write the result and end the run
        here (the crash decides)."""
        import gc  # lazy: only after a MemoryError

        self.out_of_memory = False
        sys.last_type = sys.last_value = sys.last_traceback = None
        gc.collect()
        try:
            bytearray(64 * 2**20)  # room for pytest and a cheap test again
        except MemoryError:
            try:
                _write_result(self.result_path, self, None)
            except MemoryError:
                os._exit(OUT_OF_MEMORY)
            os._exit(CRASHED)

    def pytest_exception_interact(self, node, call, report):
        # pytest calls it after the failed report was logged: it names the exception
        exc = call.excinfo.value if call.excinfo else None
        if isinstance(exc, MemoryError):
            import traceback  # lazy: only after a MemoryError

            traceback.clear_frames(exc.__traceback__)
            self.out_of_memory = True
        collecting = getattr(report, "when", None) == "collect"  # a CollectReport: the module did not import
        self._first(report.nodeid or node.nodeid, exc, "collection error" if collecting else None)

    def pytest_internalerror(self, excrepr, excinfo):
        # pytest itself failed: out of memory (the run's limit) is the run's crash
        if isinstance(excinfo.value, MemoryError):
            self.internal_memory_error = True

    def pytest_collectreport(self, report):
        if report.failed:
            self._first(report.nodeid, None, "collection error")

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            self.ran += 1
        if report.failed:
            self._first(report.nodeid, None)


def run_tests(nodeids: list[str], result_path: str | None, *, quiet: bool = True,
              module_file: str | None = None, cheap=()) -> int:
    """Run ``nodeids`` with pytest, stopping at the first failing assertion, or after a crash at
    the first test not in ``cheap`` (the cheap tests after a crash still run: one may fail on an
    assertion); write ``{"failed": nodeid or null, "exception": its type's name, "raised_at":
    where in ``module_file`` (the mutated module) a crash was raised (see :func:`raised_at`),
    "crashes": every crashing test as ``{"test", "exception", "raised_at"}``, "ran": N}`` to
    ``result_path``; return :data:`KILLED` when a test failed on an assertion,
    :data:`CRASHED` when none did and one failed on another exception or a test module did not
    collect (the tests of the files that did collect still run: pytest runs none when a node id
    names a test of a file that did not import, so they are run again without those),
    :data:`SURVIVED` when all passed (:data:`ERROR` when pytest could not run them,
    :data:`OUT_OF_MEMORY` when pytest itself ran out of memory and no assertion had failed)."""
    import pytest  # here, not at the top: a fresh interpreter must install the hook before pytest loads conftest

    rec = _Recorder(module_file, cheap, result_path)
    # a suite run inside a test re-raises a crash of the model instead of recording it as the
    # suite's error, so that the test fails with the crash and not with an assertion on the result
    os.environ[RAISE_MODEL_CRASHES] = "1"
    # no traceback text: only the exceptions are read (formatting hundreds of crashes costs seconds);
    # a test module that does not collect is a crash, and the other modules' tests still run
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", "--tb=no",
            "--continue-on-collection-errors", "-o", "addopts=", *nodeids]
    if quiet:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    rc = pytest.main(args, plugins=[rec])
    if rc == pytest.ExitCode.USAGE_ERROR and rec.ran == 0:
        # a node id of a test file that did not import is "not found": pytest then runs no test
        # at all. The collection error is recorded (a crash); the other files' tests still run.
        broken = {c["test"] for c in rec.crashes if c["exception"] == "collection error"}
        rest = [n for n in nodeids if n.split("::")[0] not in broken]
        if broken and rest and len(rest) < len(nodeids):
            rc = pytest.main(args[:-len(nodeids)] + rest, plugins=[rec])
    if rec.internal_memory_error and not rec.assertion:
        outcome = OUT_OF_MEMORY
    elif rec.failed is not None:
        outcome = KILLED if rec.assertion else CRASHED
    else:
        outcome = SURVIVED if rc == 0 else (CRASHED if rc == 1 else ERROR)
    _write_result(result_path, rec, int(rc))
    return outcome


def _write_result(result_path: str | None, rec: _Recorder, rc: int | None) -> None:
    if rec.failed is not None:
        rec.exception = rec.exception or "a failure without an exception"
    if result_path:
        res = {"failed": rec.failed, "exception": rec.exception, "raised_at": rec.raised_at,
               "crashes": rec.crashes, "ran": rec.ran, "pytest_rc": rc}
        if FIRST_IMPORT is not None and not FIRST_IMPORT["ok"]:
            res["first_import"] = FIRST_IMPORT
        with open(result_path, "w") as f:
            json.dump(res, f)


def run_suites(names: list[str], result_path: str | None, *, runs: int | None, base_seed: int,
               module_file: str | None = None) -> int:
    """The quick judge: run the check suites ``names`` (``flinkspec check --profile quick``, at
    most ``runs`` random walks per safe cluster suite, seeds from ``base_seed``, nothing shrunk or
    written), stopping at the first one not as expected; write ``{"failed": suite, "exception":
    the invariant or exception, "raised_at": where in ``module_file`` a crash was raised, "ran":
    N}``. :data:`KILLED` when a suite judged an invariant violated (a safe suite's violation, or
    an unsafe suite no longer finding its expected one only), :data:`CRASHED` when the model
    raised (the suite's error), else :data:`SURVIVED`."""
    from model.variants import VARIANTS  # lazy: in a fresh interpreter only after the hook is installed
    from properties.focused import FOCUSED  # lazy: as above
    from properties.suites import run_variant_suite  # lazy: as above

    # a crash of the model escapes the suite (instead of being recorded as its error, a text),
    # so that where it was raised is known
    os.environ[RAISE_MODEL_CRASHES] = "1"
    outcome, failed, what, ran, at = SURVIVED, None, None, 0, None
    for name in names:
        try:
            if name in VARIANTS:
                v = VARIANTS[name]  # ``runs`` bounds a safe suite; an unsafe one searches as the profile does
                res = run_variant_suite(v, profile="quick", base_seed=base_seed, max_runs=runs if v.safe else None,
                                        shrink_found=False)
            else:
                res = FOCUSED[name].run("quick", base_seed)
        except Exception as e:  # noqa: BLE001 - a crash escaping the suite is the mutant's crash
            outcome, failed, what, at = CRASHED, name, type(e).__name__, raised_at(e, module_file)
            break
        ran += 1
        if res.error:
            # "seed N: TypeError: ..." (a random walk) or "TypeError: ..." (a focused suite)
            parts = [p.strip() for p in res.error.split(":")]
            outcome, failed, what = CRASHED, name, parts[1] if parts[0].startswith("seed ") else parts[0]
            break
        if not res.as_expected:
            outcome, failed = KILLED, name
            what = ("violated " + ", ".join(sorted(res.violations))) if res.violations else "expected violation not found"
            break
    if result_path:
        res = {"failed": failed, "exception": what, "raised_at": at, "ran": ran}
        if FIRST_IMPORT is not None and not FIRST_IMPORT["ok"]:
            res["first_import"] = {**FIRST_IMPORT, "test": FIRST_IMPORT.get("test", failed)}
        with open(result_path, "w") as f:
            json.dump(res, f)
    return outcome


def main(argv: list[str]) -> int:
    """``python -m properties.mutantrun SPEC.json``: SPEC holds ``module`` (``model.<name>``),
    ``path``, ``source`` (the mutant's), ``tests`` (node ids) or ``suites`` (check suites, with
    ``runs`` and ``seed``: the quick judge) and ``result`` (a path for the outcome); optionally
    ``max_memory`` (bytes: :func:`limit_memory`), ``function`` and ``span`` (the mutated
    function and the replacement's character offsets in ``source``: :func:`instrument`). Exit :data:`KILLED`, :data:`CRASHED`,
    :data:`SURVIVED`, :data:`ERROR` or :data:`OUT_OF_MEMORY`."""
    with open(argv[0]) as f:
        spec = json.load(f)
    os.chdir(spec["root"])
    sys.path.insert(0, spec["root"])
    global _INSTRUMENTED
    code = None
    if spec.get("span") is not None:
        code = instrument(spec["source"], spec["path"], spec.get("function"), tuple(spec["span"]))
        _INSTRUMENTED = True
    install_source(spec["module"], spec["path"], spec["source"], code,
                   tuple(spec["span"]) if spec.get("span") is not None else None)
    limit_memory(spec.get("max_memory"))
    t0 = time.perf_counter()
    try:
        if spec.get("suites") is not None:
            rc = run_suites(spec["suites"], spec["result"], runs=spec.get("runs"), base_seed=spec.get("seed", 0),
                            module_file=spec["path"])
        else:
            rc = run_tests(spec["tests"], spec["result"], module_file=spec["path"], cheap=spec.get("cheap", ()))
    except MemoryError:  # the run itself out of memory (the limit), not only a test
        return OUT_OF_MEMORY
    except Exception:  # noqa: BLE001 - pytest's own failure: never an exit code read as a kill
        return ERROR
    if spec.get("result"):
        with open(spec["result"]) as f:
            res = json.load(f)
        res["seconds"] = round(time.perf_counter() - t0, 3)
        with open(spec["result"], "w") as f:
            json.dump(res, f)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
