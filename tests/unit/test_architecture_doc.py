"""ARCHITECTURE.md names every piece of the package, read from the file system: each top-level
module (`name.py`) and package (`name/`), and each module of the packages a newcomer reads first
(`services/`, `transport/`, `tasking/`), in that package's row of the table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mcp_tools"
DOC = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
NAMED = set(re.findall(r"`([^`\s]+)`", DOC))
# The packages whose every module the table's row names (as `module`).
ROWS = ("services", "transport", "tasking")


def top_level() -> list[str]:
    names = []
    for path in sorted(PACKAGE.iterdir()):
        if path.is_dir() and (path / "__init__.py").exists() and path.name != "migrations":
            names.append(f"{path.name}/")
        elif path.suffix == ".py" and path.name != "__init__.py":
            names.append(path.name)
    return names


def row(package: str, doc: str = DOC) -> str:
    """The table row whose first cell is exactly `package/`."""
    found = [line for line in doc.splitlines() if line.startswith(f"| `{package}/` |")]
    assert len(found) == 1, f"ARCHITECTURE.md has {len(found)} rows for `{package}/`"
    return found[0]


def unnamed_modules(package: str, doc: str = DOC) -> list[str]:
    named = set(re.findall(r"`([\w.]+)`", row(package, doc)))
    modules = sorted(p.stem for p in (PACKAGE / package).glob("*.py") if p.name != "__init__.py")
    return [m for m in modules if m not in named]


def test_every_top_level_module_and_package_is_named() -> None:
    missing = [name for name in top_level() if name not in NAMED]
    assert not missing, f"ARCHITECTURE.md does not name: {missing}"


@pytest.mark.parametrize("package", ROWS)
def test_every_module_of_the_package_is_named_in_its_row(package: str) -> None:
    missing = unnamed_modules(package)
    assert not missing, f"the `{package}/` row of ARCHITECTURE.md does not name: {missing}"


def test_a_module_left_out_is_seen() -> None:
    doc = "| `tasking/` | `service`, `worker` |\n"
    assert "jobs" in unnamed_modules("tasking", doc)
    assert "service" not in unnamed_modules("tasking", doc)
