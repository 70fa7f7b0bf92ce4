"""The code base's import structure, checked statically (``ast``/``tokenize``; nothing is imported).

Over the project's packages (``PACKAGES``):

(a) no import cycles between project modules, counting module-level imports only (those run
    when a module is imported: at the top, in class bodies, under ``if``/``try``; not inside
    functions, not under ``if TYPE_CHECKING:``);
(b) ``model`` never imports ``spec`` or ``properties``, anywhere (also inside functions, also
    by ``importlib.import_module("...")``): the model is what the spec and the engines judge;
(c) an import inside a function body carries a comment saying why: on the import's own line,
    or as a comment line directly above it. A linter directive alone (``# noqa: ...``) is not
    a reason. Legitimate reasons: a heavy or optional module kept lazy (rich, pyspark, z3,
    Hypothesis, the model runtime in a CLI command), a cycle that cannot be broken otherwise.
    Everything else belongs at the top of the module.

Each failure lists every offender as ``path:line`` with the import, so it can be fixed directly.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from functools import cache
from pathlib import Path

import attrs
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("model", "spec", "properties", "flinkspec", "spark", "benchmarks")
#: packages ``model`` must never import
MODEL_MUST_NOT_IMPORT = ("spec", "properties")


@attrs.frozen
class Import:
    """One import statement's target module (absolute name; one per imported name)."""

    module: str  # the importing module
    path: str  # its file, relative to ROOT
    line: int
    target: str  # absolute dotted name as written (``from a import b`` -> ``a.b`` if that is a module, else ``a``)
    text: str  # the statement, for messages
    in_function: bool
    type_checking_only: bool
    dynamic: bool = False  # importlib.import_module("...") / __import__("...")

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def project_modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            if "__pycache__" not in f.parts:
                out[_module_name(f)] = f
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    mods = project_modules()
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:  # relative: resolve against the importing module's package
        pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            pkg = pkg.rpartition(".")[0]
        base = f"{pkg}.{base}" if base else pkg
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in mods else base)
    return out


def _dynamic_target(node: ast.Call) -> str | None:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    if name in ("import_module", "__import__") and node.args:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return None


@cache
def source(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@cache
def imports_of(module: str) -> tuple[Import, ...]:
    path = project_modules()[module]
    src = source(path)
    rel = str(path.relative_to(ROOT))
    lines = src.splitlines()
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                text = " ".join(l.strip() for l in lines[child.lineno - 1:child.end_lineno])
                for target in _targets(module, path, child):
                    out.append(Import(module, rel, child.lineno, target, text, in_function, type_checking))
            elif isinstance(child, ast.Call) and (target := _dynamic_target(child)) is not None:
                out.append(Import(module, rel, child.lineno, target, lines[child.lineno - 1].strip(),
                                  in_function, type_checking, dynamic=True))
            visit(
                child,
                in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                type_checking or (isinstance(child, ast.If) and _is_type_checking(child.test)),
            )

    visit(ast.parse(src, filename=rel), False, False)
    return tuple(out)


def all_imports() -> list[Import]:
    return [imp for m in project_modules() for imp in imports_of(m)]


def _project_target(name: str) -> str | None:
    """The project module an import loads (its longest known prefix), or None."""
    mods = project_modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def module_level_graph() -> nx.DiGraph:
    """Project modules; an edge a -> b for every module-level (runtime) import of b by a,
    with ``where`` = the first such import's ``path:line``."""
    g = nx.DiGraph()
    g.add_nodes_from(project_modules())
    for imp in all_imports():
        if imp.in_function or imp.type_checking_only or imp.dynamic:
            continue
        target = _project_target(imp.target)
        if target is None or target == imp.module or g.has_edge(imp.module, target):
            continue
        g.add_edge(imp.module, target, where=imp.where)
    return g


# ------------------------------------------------------------------------------------------
# (a) no import cycles
# ------------------------------------------------------------------------------------------


def test_the_scan_sees_the_project():
    mods = project_modules()
    for m in ("model.streamgraph", "model.jobgraph", "spec.invariant", "properties.engines", "flinkspec.cli",
              "flinkspec.commands.compile", "spark.replay", "benchmarks.model_bench"):
        assert m in mods, m
    g = module_level_graph()
    assert g.has_edge("model.jobgraph", "model.streamgraph")
    assert g.has_edge("model.executiongraph", "model.jobgraph")


def test_no_import_cycles_between_project_modules():
    g = module_level_graph()
    problems = []
    for scc in sorted((sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)):
        cycle = nx.find_cycle(g.subgraph(scc))
        path = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
        edges = ", ".join(f"{u} -> {v} at {g.edges[u, v]['where']}" for u, v in cycle)
        problems.append(f"cycle {path} (modules in the cycle: {', '.join(scc)}); imports: {edges}")
    assert not problems, "module-level import cycles:\n  " + "\n  ".join(problems)


def test_streamgraph_does_not_import_jobgraph():
    """StreamGraph validation works on the StreamGraph alone; chaining (and the co-location
    rule, which needs it) is model.jobgraph's, which imports model.streamgraph."""
    offenders = [imp for imp in imports_of("model.streamgraph") if _project_target(imp.target) == "model.jobgraph"]
    assert not offenders, [f"{i.where}: {i.text}" for i in offenders]
    code = "import sys, model.streamgraph; print('model.jobgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out


# ------------------------------------------------------------------------------------------
# (b) model never imports spec or properties
# ------------------------------------------------------------------------------------------


def test_model_never_imports_spec_or_properties():
    offenders = [
        f"{imp.where}: {imp.text}"
        for imp in all_imports()
        if imp.module.split(".")[0] == "model" and imp.target.split(".")[0] in MODEL_MUST_NOT_IMPORT
    ]
    assert not offenders, "model/ imports spec or properties:\n  " + "\n  ".join(offenders)


# ------------------------------------------------------------------------------------------
# (c) an in-function import only with a comment saying why
# ------------------------------------------------------------------------------------------

#: tool directives, which say nothing about why
_DIRECTIVE = re.compile(
    r"\b(noqa|type:\s*ignore|pragma|pylint|mypy|pyright|fmt|isort|ruff)\b(:\s*[\w\-, ]*|\[[^\]]*\])?", re.IGNORECASE
)


def _says_why(comment: str) -> bool:
    text = _DIRECTIVE.sub(" ", comment.lstrip("#"))
    return len(re.findall(r"[A-Za-z]{2,}", text)) >= 2


@cache
def comments(path: Path) -> tuple[dict[int, str], frozenset[int]]:
    """Comments by line, and the lines that hold nothing but a comment."""
    by_line: dict[int, str] = {}
    code_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source(path)).readline):
        if tok.type == tokenize.COMMENT:
            by_line[tok.start[0]] = tok.string
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                              tokenize.ENDMARKER):
            code_lines.update(range(tok.start[0], tok.end[0] + 1))
    return by_line, frozenset(line for line in by_line if line not in code_lines)


def _has_reason(imp: Import, end_line: int) -> bool:
    by_line, comment_only = comments(project_modules()[imp.module])
    own = [by_line[n] for n in range(imp.line, end_line + 1) if n in by_line]
    above = [by_line[imp.line - 1]] if imp.line - 1 in comment_only else []
    return any(_says_why(c) for c in own + above)


def unexplained_in_function_imports(package: str) -> list[str]:
    out = []
    for module, path in project_modules().items():
        if module.split(".")[0] != package:
            continue
        tree = ast.parse(source(path))
        ends = {n.lineno: n.end_lineno for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))}
        seen = set()
        for imp in imports_of(module):
            if not imp.in_function or imp.dynamic or imp.line in seen:
                continue
            seen.add(imp.line)
            if not _has_reason(imp, ends[imp.line]):
                out.append(f"{imp.where}: {imp.text}")
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_in_function_imports_say_why(package):
    offenders = unexplained_in_function_imports(package)
    assert not offenders, (
        f"{len(offenders)} import(s) inside functions without a comment saying why (hoist each to the module"
        " top, or keep it with a one-line reason on its line or the line above):\n  " + "\n  ".join(offenders)
    )


def test_the_reason_rule_itself():
    assert _says_why("# lazy: rich only for the table output")
    assert _says_why("# here, not at module top: importing ``spec`` alone must stay cheap")
    assert not _says_why("# noqa: PLC0415")
    assert not _says_why("# type: ignore[import]")
    assert not _says_why("#")
