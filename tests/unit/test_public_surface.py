"""The package's declared public surface: every module says what it exports (``__all__``) or is
private by name (``_name``), every exported name exists, and the package's own modules import from
one another only what is exported (or a submodule).

Read from the source with ``ast``: nothing is imported, so a module's import-time work is not run."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mcp_tools"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if "migrations" not in path.relative_to(PACKAGE).parts
    }


MODULES = _package_modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with those under a top-level ``if``/``try``/``with`` (conditional
    imports and definitions)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If | ast.With):
            out += _top_level(node.body) + _top_level(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try):
            out += _top_level(node.body) + _top_level(node.orelse) + _top_level(node.finalbody)
            for handler in node.handlers:
                out += _top_level(handler.body)
    return out


def bound_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            assert node.value is not None  # type: ignore[attr-defined]
            return list(ast.literal_eval(node.value))  # type: ignore[attr-defined]
    return None


def is_private(module: str) -> bool:
    return any(part.startswith("_") and part != "__init__" for part in module.split("."))


def _imported_from(module: str, tree: ast.Module) -> list[tuple[str, str, int]]:
    """(module imported from, name, line) for each ``from X import name`` of a package module."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        if source in MODULES:
            found += [(source, alias.name, node.lineno) for alias in node.names]
    return found


def test_every_module_declares_its_surface() -> None:
    undeclared = [m for m, tree in TREES.items() if declared_all(tree) is None and not is_private(m)]
    assert not undeclared, f"modules with neither __all__ nor a private _name: {undeclared}"


@pytest.mark.parametrize("module", [m for m in MODULES if declared_all(TREES[m]) is not None])
def test_every_exported_name_exists(module: str) -> None:
    tree = TREES[module]
    exported = declared_all(tree) or []
    missing = sorted(set(exported) - bound_names(tree))
    assert not missing, f"{module}.__all__ names what the module does not define: {missing}"
    assert len(exported) == len(set(exported)), f"{module}.__all__ names a name twice"


def test_the_package_imports_only_what_a_module_exports() -> None:
    stray = []
    for module, tree in TREES.items():
        for source, name, line in _imported_from(module, tree):
            exported = declared_all(TREES[source])
            if source == module or exported is None or f"{source}.{name}" in MODULES or name.startswith("__"):
                continue
            if name not in exported:
                stray.append(f"{MODULES[module].relative_to(ROOT)}:{line} imports {name} from {source}")
    assert not stray, "\n".join(stray)


def test_the_checks_see_a_missing_name() -> None:
    tree = ast.parse('"""A module."""\n\nfrom x import y\n\n__all__ = ["y", "z"]\n\n\ndef f() -> None: ...\n')
    assert declared_all(tree) == ["y", "z"]
    assert set(declared_all(tree) or []) - bound_names(tree) == {"z"}
    assert declared_all(ast.parse("x = 1\n")) is None
    assert is_private("mcp_tools._inner")
    assert not is_private("mcp_tools.services")
