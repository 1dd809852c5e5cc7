"""Issue 34: the docs read where they land. What is generated (the settings, commands and checks
tables, the tutorial's code) is committed in the Markdown and must be what the code and the
tutorial's files give now; no page shows a build-only placeholder instead of its content."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mcp_reference", ROOT / "docs" / "_ext" / "mcp_reference.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_parts_of_the_docs_are_current() -> None:
    generator = _generator()
    pages = {page.relative_to(ROOT).as_posix() for page in generator.pages()}
    assert {
        "docs/reference/settings.md",
        "docs/reference/commands.md",
        "docs/reference/checks.md",
        "docs/tutorial/index.md",
    } <= pages
    stale = [page.relative_to(ROOT).as_posix() for page in generator.stale()]
    assert stale == [], f"run make docs-reference: {stale}"


def test_no_page_shows_a_build_only_placeholder_for_code_or_a_table() -> None:
    found = [
        f"{page.relative_to(ROOT)}: {match}"
        for page in sorted((ROOT / "docs").rglob("*.md"))
        for match in re.findall(r"^```\{(literalinclude|mcp-[a-z]+)\}", page.read_text(), re.M)
    ]
    assert found == []


def test_a_region_out_of_date_is_noticed(tmp_path: Path) -> None:
    generator = _generator()
    (tmp_path / "code.py").write_text("before = 1\n# [start]\nkept = 2\n# [end]\nafter = 3\n")
    page = tmp_path / "page.md"
    region = '<!-- generated: include code.py "start-after=# [start]" "end-before=# [end]" -->\n'
    page.write_text(f"Text.\n\n{region}```python\nold = 0\n```\n<!-- end generated -->\n")
    assert generator.refreshed(page) == f"Text.\n\n{region}```python\nkept = 2\n```\n<!-- end generated -->\n"
