"""The test tree maps to the code: each fixture is defined in one place, shared helpers live in
tests/support/, and tests/INDEX.md names the tests of every module of the package."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest_django.fixtures
import pytest_django.plugin

from tests.support import tests_index

TESTS = Path(__file__).resolve().parents[1]

# Fixture names defined in more than one place on purpose: name -> why. Keep it short.
DELIBERATE_OVERRIDES: dict[str, str] = {}

# The only modules besides test files, conftest.py and __init__.py in each folder of tests/.
NOT_TESTS = {
    ".": {"settings.py", "urls_oauth_without_sign_in.py", "urls_without_mcp.py"},  # named in settings
    "e2e": {"hosted_settings.py"},  # a settings module a server process is started with
}


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("pytest.fixture", "fixture")


def _fixture_name(node: ast.FunctionDef | ast.AsyncFunctionDef, decorator: ast.expr) -> str:
    if isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                return str(keyword.value.value)
    return node.name


def fixtures_defined(source: str) -> list[tuple[str, int]]:
    """The fixtures a module defines (not imports), with their lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found += [(_fixture_name(node, d), node.lineno) for d in node.decorator_list if _is_fixture(d)]
    return found


def fixture_definitions(tests: Path) -> dict[str, list[str]]:
    places = defaultdict(list)
    for path in sorted(tests.rglob("*.py")):
        if "node_modules" in path.parts:
            continue
        for name, line in fixtures_defined(path.read_text(encoding="utf-8")):
            places[name].append(f"{path.relative_to(tests).as_posix()}:{line}")
    return dict(places)


def misplaced_modules(tests: Path) -> list[str]:
    """Modules of tests/ that are neither tests, conftest.py, __init__.py nor allowed by NOT_TESTS
    (helpers belong in tests/support/)."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        folder = path.parent.relative_to(tests)
        if folder.parts[:1] in (("support",), ("drfapp",)) or "node_modules" in path.parts:
            continue
        if path.name.startswith("test_") or path.name in ("conftest.py", "__init__.py"):
            continue
        if path.name not in NOT_TESTS.get(folder.as_posix(), set()):
            found.append(path.relative_to(tests).as_posix())
    return found


def test_each_fixture_is_defined_in_one_place() -> None:
    """A fixture used by several files lives in the conftest.py above them; two fixtures that do
    different things have different names. Fails on the tree before issue 35 (12 names)."""
    repeated = {
        name: places
        for name, places in fixture_definitions(TESTS).items()
        if len(places) > 1 and name not in DELIBERATE_OVERRIDES
    }
    assert repeated == {}, "define each once (a conftest.py) or name what differs"


def test_no_fixture_shadows_one_of_pytest_django() -> None:
    """Ours named admin_client signed in a user named root, pytest-django's one named admin."""
    theirs = {
        name
        for module in (pytest_django.fixtures, pytest_django.plugin)
        for name, _ in fixtures_defined(Path(str(module.__file__)).read_text(encoding="utf-8"))
    }
    assert "admin_client" in theirs
    assert sorted(theirs & set(fixture_definitions(TESTS))) == []


def test_deliberate_overrides_are_still_defined_twice() -> None:
    places = fixture_definitions(TESTS)
    assert [name for name in DELIBERATE_OVERRIDES if len(places.get(name, [])) < 2] == []


def test_helper_modules_live_in_tests_support() -> None:
    """Fails on the tree before issue 35 (13 helpers at tests/ root, 3 in tests/e2e/)."""
    assert misplaced_modules(TESTS) == []


def test_the_module_index_is_current() -> None:
    """tests/INDEX.md is what tests/support/tests_index.py writes for the code as it is (a module
    added, removed or newly tested changes it)."""
    written = tests_index.INDEX.read_text(encoding="utf-8")
    assert written == tests_index.render(), "regenerate it: PYTHONPATH=. python -m tests.support.tests_index"


def test_every_module_with_behaviour_has_tests_in_the_index() -> None:
    """Reads the package from the file system: a module that defines a function or a class and
    that no test names, imports or is listed for fails here (name its tests in EXERCISED_THROUGH,
    or write them)."""
    modules = tests_index.behaviour_modules()
    assert len(modules) > 100
    index = tests_index.files_by_module()
    assert sorted(index) == sorted(modules)
    assert [module for module, files in index.items() if not files] == []
    listed = {
        row.split("`")[1] for row in tests_index.INDEX.read_text(encoding="utf-8").splitlines() if row[:3] == "| `"
    }
    assert sorted(set(modules) - listed) == []


def test_the_hand_written_entries_name_modules_and_files_that_exist() -> None:
    modules = tests_index.behaviour_modules()
    for module, files in tests_index.EXERCISED_THROUGH.items():
        assert module in modules, module
        for name in files:
            assert (TESTS / name).is_file(), name
