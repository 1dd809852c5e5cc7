"""The module -> tests index (``tests/INDEX.md``): for each module of ``mcp_tools`` that defines a
function or a class, the test files that exercise it.

A test file is listed for a module when its name says so (``test_<module>.py``,
``test_<package>_<module>.py``, ``test_<module>_<more>.py``), when it imports the module
(``import mcp_tools.x``, ``from mcp_tools.x import ...``, ``from mcp_tools import x``, or a name a
package re-exports from it), or when it names the module in a string (a dotted path in a setting,
a patch target, a management command's name). A module that no file names or imports gets the
files named after its package (``test_asking.py``); modules reached only through the endpoint are
given their tests in ``EXERCISED_THROUGH``. Files whose name matches come first, then the others
by how many of the module's names they import; at most ``SHOWN`` are written.

``tests/unit/test_test_tree.py`` fails when the index is out of date or a module has no test.
Regenerate it with::

    PYTHONPATH=. python -m tests.support.tests_index
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

__all__ = ["EXERCISED_THROUGH", "INDEX", "behaviour_modules", "render", "files_by_module"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mcp_tools"
TESTS = ROOT / "tests"
INDEX = TESTS / "INDEX.md"
SHOWN = 6

# Modules no test imports or names, reached through the endpoint or another module: the tests that
# exercise them (checked like the rest: each file must exist).
EXERCISED_THROUGH: dict[str, tuple[str, ...]] = {
    "mcp_tools.admin.config_fields": ("integration/test_admin_schema_forms.py",),
    "mcp_tools.admin.lookups": ("security/test_admin_least_privilege.py",),
    "mcp_tools.admin.tools": ("integration/test_admin_editor.py", "integration/test_admin_models.py"),
    # Django's app configs (ready(): checks, receivers, handler discovery), not MCP Apps
    "mcp_tools.apps": ("integration/test_first_run.py", "integration/test_first_hour.py"),
    "mcp_tools.contrib.celery.apps": ("integration/test_celery_kind.py",),
    "mcp_tools.contrib.drf.apps": ("integration/test_drf_toolsets.py",),
    "mcp_tools.auth.signin": ("integration/test_oauth_pages.py", "e2e/test_oauth_e2e.py"),
    "mcp_tools.editing.history": ("integration/test_tool_revisions.py", "integration/test_admin_editor.py"),
    "mcp_tools.editing.preview": (
        "integration/test_admin_editor.py",
        "integration/test_admin_apps.py",
        "security/test_view_authority.py",
    ),
    "mcp_tools.editing.problems": ("integration/test_first_hour.py",),
    # before gunicorn --preload forks its workers (registered by warm())
    "mcp_tools.prefork": ("e2e/test_preload.py",),
    "mcp_tools.services.exchange": ("integration/test_endpoint.py",),
    "mcp_tools.services.listen": ("integration/test_asgi_front.py", "e2e/test_list_changed.py"),
    "mcp_tools.services.resources": ("integration/test_apps.py", "integration/test_admin_apps.py"),
    "mcp_tools.services.sessions": ("integration/test_endpoint.py",),
    "mcp_tools.services.task_methods": ("integration/test_tasks.py",),
    "mcp_tools.services.tools": ("integration/test_endpoint.py", "integration/test_permission_visibility.py"),
    "mcp_tools.tasking.recovery": ("integration/test_tasks.py", "e2e/test_worker_loss.py"),
    "mcp_tools.tasking.results": ("integration/test_tasks.py",),
}

# Modules whose name is not what the test file of that name is about.
NOT_NAMED_BY_FILE = {"mcp_tools.apps", "mcp_tools.contrib.celery.apps", "mcp_tools.contrib.drf.apps"}

DOTTED = re.compile(r"\bmcp_tools(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _defines_something(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for node in ast.walk(tree))


def behaviour_modules() -> dict[str, Path]:
    """Every module of the package (migrations aside) that defines a function or a class."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.relative_to(PACKAGE).parts:
            continue
        if _defines_something(path):
            found[_module_name(path)] = path
    return found


def _all_modules() -> set[str]:
    return {_module_name(path) for path in PACKAGE.rglob("*.py") if "migrations" not in path.relative_to(PACKAGE).parts}


def _reexports(modules: set[str]) -> dict[tuple[str, str], str]:
    """(module, name) -> the module of the package it imports the name from (``mcp_tools.asgi``'s
    ``McpFront`` is ``mcp_tools.transport.front``'s)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        importer = _module_name(path)
        if "migrations" in path.relative_to(PACKAGE).parts:
            continue
        package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                if source in modules and source != importer:
                    found[(importer, alias.asname or alias.name)] = source
    return found


def _commands(modules: set[str]) -> dict[str, str]:
    """A management command's name -> its module (tests run them by name)."""
    return {module.rsplit(".", 1)[1]: module for module in modules if ".management.commands." in module}


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "node_modules" not in p.parts)


def _longest_module(dotted: str, modules: set[str]) -> str | None:
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _references(path: Path, modules: set[str], reexports: dict[tuple[str, str], str]) -> dict[str, int]:
    """The package's modules a test file imports or names, with how many of their names it imports."""
    counts: dict[str, int] = defaultdict(int)
    commands = _commands(modules)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if (module := _longest_module(alias.name, modules)) is not None:
                    counts[module] += 1
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in modules:
                    counts[submodule] += 1
                elif (module := _longest_module(node.module, modules)) is not None:
                    counts[module] += 1
                    if (source := reexports.get((module, alias.name))) is not None:
                        counts[source] += 1
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in commands:
                counts[commands[node.value]] += 1
            for dotted in DOTTED.findall(node.value):
                if (module := _longest_module(dotted, modules)) is not None:
                    counts[module] += 1
    return counts


def _name_match(module: str, test: Path) -> int:
    """How well a test file's name names the module: 3 exactly, 2 as its first word
    (``test_wsgi_front.py``), 1 by its package's name (``test_asking.py`` for ``asking.task``)."""
    parts = module.split(".")[1:] or ["mcp_tools"]
    stem = test.stem.removeprefix("test_")
    if stem in (parts[-1], "_".join(parts[-2:])):
        return 3
    words = stem.split("_")
    if words[0] == parts[-1]:
        return 2
    return 1 if len(parts) > 1 and parts[-2] in words else 0


def files_by_module() -> dict[str, list[str]]:
    """For each module with behaviour, its test files (paths relative to tests/), best first."""
    modules = behaviour_modules()
    known = _all_modules()
    reexports = _reexports(known)
    weights: dict[str, dict[str, int]] = defaultdict(dict)
    loose: dict[str, dict[str, int]] = defaultdict(dict)  # by the package's name only
    for test in _test_files():
        name = test.relative_to(TESTS).as_posix()
        for module, count in _references(test, known, reexports).items():
            weights[module][name] = count
        for module in modules:
            match = 0 if module in NOT_NAMED_BY_FILE else _name_match(module, test)
            if match >= 2:
                weights[module][name] = match * 10_000 + weights[module].get(name, 0)
            elif match == 1:
                loose[module][name] = 1
    index = {}
    for module in modules:
        found = weights[module] or ({} if module in EXERCISED_THROUGH else loose[module])
        ranked = sorted(found.items(), key=lambda item: (-item[1], item[0]))
        files = [name for name, _ in ranked]
        files += [name for name in EXERCISED_THROUGH.get(module, ()) if name not in files]
        index[module] = files
    return index


def render() -> str:
    lines = [
        "# Module -> tests",
        "",
        "Generated by `tests/support/tests_index.py` (its docstring says how a test file is matched to a",
        "module); `tests/unit/test_test_tree.py` fails when it is out of date. Regenerate with",
        "`PYTHONPATH=. python -m tests.support.tests_index`. Paths are relative to `tests/`; at most",
        f"{SHOWN} files are shown per module, name matches first.",
        "",
        "| Module | Tests |",
        "| --- | --- |",
    ]
    for module, files in files_by_module().items():
        shown = ", ".join(f"`{name}`" for name in files[:SHOWN]) or "(none)"
        if len(files) > SHOWN:
            shown += f" and {len(files) - SHOWN} more"
        lines.append(f"| `{module}` | {shown} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    INDEX.write_text(render(), encoding="utf-8")
    print(f"wrote {INDEX.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
