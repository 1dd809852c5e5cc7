"""The transport's shape (issue 35): small modules, short functions, few parameters.

Every ``mcp_tools/transport`` module at most 400 lines; every function at most 60 lines, with
at most 5 positional parameters and 8 in all (``self``/``cls`` not counted). Group the
arguments of a function that would need more (a small dataclass, keyword-only parameters).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import mcp_tools.transport

PACKAGE = Path(mcp_tools.transport.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))


def _functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_is_at_most_400_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= 400


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_functions_are_short_and_take_few_parameters(path: Path) -> None:
    problems = []
    for func in _functions(path):
        args = func.args
        positional = [a.arg for a in args.posonlyargs + args.args if a.arg not in ("self", "cls")]
        total = len(positional) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
        lines = (func.end_lineno or func.lineno) - func.lineno + 1
        if lines > 60 or len(positional) > 5 or total > 8:
            problems.append(f"{func.name}: {lines} lines, {len(positional)} positional, {total} in all")
    assert problems == []


def test_the_package_has_modules() -> None:  # the checks above see the package's files
    assert {"decide.py", "views.py", "batch.py"} <= {p.name for p in MODULES}
