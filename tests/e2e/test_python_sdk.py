"""The official Python `mcp` SDK client against a real server, once per protocol revision."""

from __future__ import annotations

from typing import Any

import pytest

from project.demo.tools import DEMO_TOOLS
from tests.support.sdk import legacy_handshake
from tests.support.servers import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

EXPECTED_NAMES = sorted(t["name"] for t in DEMO_TOOLS)


async def _exercise(session: Any, list_page: Any) -> dict[str, Any]:
    import mcp.types as types

    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await list_page(cursor)
        pages += 1
        names += [tool.name for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    echo = await session.call_tool("echo", {"text": "hello"})
    added = await session.call_tool("add", {"a": 2, "b": 3})
    slow = await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
    failed = await session.call_tool("test_error_handling", {})
    assert isinstance(echo.content[0], types.TextContent)
    return {
        "names": names,
        "pages": pages,
        "echo": echo.content[0].text,
        "sum": (added.structured_content or {}).get("sum"),
        "progress": progress,
        "slow": slow.content[0].text,
        "failed": failed.is_error,
    }


def _check(outcome: dict[str, Any], structured: bool) -> None:
    assert outcome["names"] == EXPECTED_NAMES
    assert outcome["pages"] == -(-len(EXPECTED_NAMES) // 4)
    assert outcome["echo"] == "hello"
    if structured:
        assert outcome["sum"] == 5
    assert len(outcome["progress"]) == 3
    assert outcome["progress"] == sorted(outcome["progress"])
    assert outcome["slow"] == "Completed 3 progress steps."
    assert outcome["failed"] is True


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_legacy_handshake(stream_server: LiveServer, version: str) -> None:
    """L-1, L-3, T-2, T-10, P-1 with the SDK's ClientSession over streamable HTTP."""
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(stream_server.url) as (read, write), ClientSession(read, write) as session:
        init = await legacy_handshake(session, version)
        assert init.protocol_version == version

        async def list_page(cursor: str | None) -> Any:
            return await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))

        outcome = await _exercise(session, list_page)
    _check(outcome, structured=version != "2025-03-26")


async def test_modern_2026_07_28(stream_server: LiveServer) -> None:
    """LD-1..LD-6, T-2, T-7 with the SDK's stateless 2026-07-28 client."""
    from mcp import Client

    async with Client(stream_server.url, mode="2026-07-28") as client:

        async def list_page(cursor: str | None) -> Any:
            return await client.list_tools(cursor=cursor)

        outcome = await _exercise(client, list_page)
        weather = await client.call_tool("get_weather", {"city": "Tokyo"})
        assert weather.structured_content == {"city": "Tokyo", "conditions": "sunny", "temperature": 21.0}
    _check(outcome, structured=True)


async def test_auto_mode_discovers_modern(stream_server: LiveServer) -> None:
    """LD-4: the SDK's auto mode probes server/discover and picks 2026-07-28."""
    from mcp import Client

    async with Client(stream_server.url) as client:
        result = await client.call_tool("echo", {"text": "auto"})
        assert result.content[0].text == "auto"  # type: ignore[union-attr]
