"""The catalog's cache of serialised tools/list pages is bounded in bytes (PAGE_CACHE_BYTES)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from django.test import override_settings

from mcp_tools.catalog import PAGE_ENTRY_OVERHEAD, Catalog, CompiledTool, PageQuery, compile_tool
from mcp_tools.protocol.versions import LATEST, Revision, get_revision
from mcp_tools.types import Principal

SCOPES = [f"s{i}" for i in range(7)]
PAGE = 10


def _tool(i: int) -> CompiledTool:
    row: dict[str, Any] = {
        "pk": i + 1,
        "version": 1,
        "name": f"tool_{i:04d}",
        "title": f"Tool {i}",
        "description": f"Tool number {i}: repeats the given text back.",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "output_schema": None,
        "annotation_title": "",
        "read_only_hint": True,
        "destructive_hint": None,
        "idempotent_hint": None,
        "open_world_hint": None,
        "icons": [],
        "task_support": "forbidden",
        "handler_key": "demo.echo",
        "handler_config": {},
        "required_scopes": frozenset({SCOPES[i % len(SCOPES)]}),
    }
    return compile_tool(row)


def _scope_sets() -> list[Principal]:
    # 100 distinct scope sets (every non-empty subset of 7 scopes numbered 1..100).
    return [
        Principal(key=f"p{n}", scopes=frozenset(s for bit, s in enumerate(SCOPES) if n >> bit & 1))
        for n in range(1, 101)
    ]


def _visible(tool: CompiledTool, principal: Principal) -> bool:
    return principal.scopes is None or tool.required_scopes <= principal.scopes


def _render(tools: list[dict[str, Any]], next_after: str | None) -> bytes:
    return orjson.dumps({"tools": tools, "next": next_after})


def _page(catalog: Catalog, rev: Revision, principal: Principal, after: str | None) -> bytes:
    """One page as tools/list serves it: from the cache, else selected, rendered and kept."""
    query = PageQuery(rev, principal, _visible, after, PAGE, tasks_enabled=False)
    body = catalog.cached_page(query)
    if body is None:
        page = catalog.select_page(query)
        body = _render(page.tools, page.next_after)
        catalog.remember_page(page, body)
    return body


def _walk(catalog: Catalog, principal: Principal, on_page: Any = None) -> list[bytes]:
    """Every page ``principal`` sees, following the positions the pages name."""
    rev = get_revision(LATEST)
    pages, after = [], None
    while True:
        body = _page(catalog, rev, principal, after)
        pages.append(body)
        if on_page is not None:
            on_page()
        after = orjson.loads(body)["next"]
        if after is None:
            return pages


def test_the_page_cache_stays_within_its_byte_bound_and_rebuilds_evicted_pages_identically() -> None:
    tools = [_tool(i) for i in range(700)]
    limit = 64 * 1024
    bounded = Catalog(7, tools, page_cache_bytes=limit)
    unbounded = Catalog(7, tools, page_cache_bytes=1 << 40)
    principals = _scope_sets()

    def within_bound() -> None:
        count, counted = bounded.page_cache_stats()
        held = sum(len(body) + PAGE_ENTRY_OVERHEAD for body in bounded._pages.values())
        assert counted == held <= limit
        assert count == len(bounded._pages)

    expected = {p.key: _walk(unbounded, p) for p in principals}
    for principal in principals:  # the pages of a scope set are its visible tools, in order, once
        names = [t["name"] for body in expected[principal.key] for t in orjson.loads(body)["tools"]]
        assert names == sorted(t.name for t in tools if _visible(t, principal))
    total_pages = sum(len(pages) for pages in expected.values())
    total_bytes = sum(len(b) + PAGE_ENTRY_OVERHEAD for pages in expected.values() for b in pages)
    assert total_pages > 1000
    assert total_bytes > 10 * limit  # far more than fits: eviction is exercised throughout

    for principal in principals:
        assert _walk(bounded, principal, within_bound) == expected[principal.key]
    # The first scope set's pages were evicted long ago: they are rebuilt, byte for byte.
    assert _walk(bounded, principals[0], within_bound) == expected[principals[0].key]
    assert unbounded.page_cache_stats()[0] == total_pages


def test_the_least_recently_used_page_goes_first() -> None:
    tools = [_tool(i) for i in range(40)]
    rev = get_revision(LATEST)
    everyone = Principal(key="all")  # scopes None: sees every tool
    probe = Catalog(1, tools, page_cache_bytes=1 << 20)
    first = _page(probe, rev, everyone, None)
    cost = len(first) + PAGE_ENTRY_OVERHEAD
    catalog = Catalog(1, tools, page_cache_bytes=3 * cost + cost // 2)  # room for three pages
    positions = [None, "tool_0009", "tool_0019", "tool_0029"]
    for after in positions[:3]:
        _page(catalog, rev, everyone, after)
    _page(catalog, rev, everyone, None)  # used again
    _page(catalog, rev, everyone, positions[3])
    kept = {key[2] for key in catalog._pages}
    assert kept == {None, "tool_0019", "tool_0029"}  # "tool_0009" was the least recently used


def test_a_catalog_takes_its_bound_from_the_setting() -> None:
    tools = [_tool(i) for i in range(3)]
    assert Catalog(1, tools).page_cache_limit == 32 * 1024 * 1024
    with override_settings(MCP_TOOLS={"PAGE_CACHE_BYTES": 0}):
        catalog = Catalog(1, tools)
        rev = get_revision(LATEST)
        body = _page(catalog, rev, Principal(key="a"), None)
        assert orjson.loads(body)["tools"]
        assert catalog.page_cache_stats() == (0, 0)  # served, never kept


@pytest.mark.parametrize("value", [-1, "32MB", 1.5])
def test_the_bound_is_a_non_negative_integer(value: object) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from mcp_tools.conf import mcp_settings

    with override_settings(MCP_TOOLS={"PAGE_CACHE_BYTES": value}), pytest.raises(ImproperlyConfigured):
        _ = mcp_settings.PAGE_CACHE_BYTES
