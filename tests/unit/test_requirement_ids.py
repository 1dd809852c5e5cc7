"""Every requirement ID the code or the tests cite is defined in docs/reference/requirements.md.

The IDs (``L-9``, ``H-D8``, ``A-S1``, ``T11-10``, ``TX-9``...) come from the requirements digest
of the MCP specification; the docs page is their copy inside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reference" / "requirements.md"
# The families of the digest: versions, lifecycle (legacy, draft), HTTP, tools, 2025-11-25 tasks,
# the tasks extension, authorization, cancellation, progress, ping, logging, pagination and MCP Apps.
CITED = re.compile(r"\b(?:V|L|LD|LG|H|T|T11|TX|A|C|P|PA|PG|UI)-[DS]?\d+\b")
DEFINED = re.compile(r"^\| <span id=\"[a-z0-9-]+\"></span>`([A-Z0-9]+-[A-Z]?\d+)` \|", re.MULTILINE)


def cited_ids() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for top in ("mcp_tools", "tests", "project", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            for ident in set(CITED.findall(path.read_text(encoding="utf-8"))):
                found.setdefault(ident, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_cited_requirement_id_is_defined() -> None:
    defined = set(DEFINED.findall(PAGE.read_text(encoding="utf-8")))
    cited = cited_ids()
    assert len(cited) > 50, "the ID pattern no longer finds the citations"
    missing = {ident: files for ident, files in cited.items() if ident not in defined}
    assert not missing, f"cited but not defined in {PAGE.relative_to(ROOT)}: {missing}"


def test_the_page_defines_each_id_once() -> None:
    ids = DEFINED.findall(PAGE.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids))
    assert {"L-9", "H-D8", "A-5", "T11-10", "TX-9", "V-2", "C-1"} <= set(ids)
