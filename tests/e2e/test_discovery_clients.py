"""Progressive discovery with real clients (issue 36): the official Python SDK, the official TypeScript
clients (1.x legacy, 2.x 2026-07-28) and the Inspector's CLI each list the entry set, find a tool with
search_tools, read it with describe_tools, and call it by its name although it was not listed.

The server runs the demo with ``MCP_DISCOVERY=on``; ``echo`` is marked always listed, ``get_weather`` is
in the entry set because its argument travels in a header (x-mcp-header), and ``add`` is found by search.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import nodejs
from tests.support.sdk import legacy_handshake
from tests.support.servers import LiveServer, prepare_database, run_server, server_env

pytestmark = [pytest.mark.e2e]

ENTRY_SET = ["search_tools", "describe_tools", "echo", "get_weather"]
INSPECTOR_CLI = nodejs.NODE_MODULES / "@modelcontextprotocol" / "inspector-cli" / "build"


@pytest.fixture(scope="module")
def discovery_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("discovery")
    env = server_env(tmp, {"MCP_DISCOVERY": "on"})
    prepare_database(env)
    with contextlib.closing(sqlite3.connect(env["MCP_SQLITE_PATH"])) as db, db:
        db.execute("UPDATE mcp_tools_tool SET always_listed = 1, version = version + 1 WHERE name = 'echo'")
        db.execute("UPDATE mcp_tools_catalogversion SET version = version + 1")
    with run_server(tmp, extra_env={"MCP_DISCOVERY": "on"}, prepare=False) as server:
        yield server


def _structured(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


@pytest.mark.anyio
async def test_python_sdk_legacy_session(discovery_server: LiveServer) -> None:
    """2025-11-25 over a session: list, search, describe, call by name."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(discovery_server.url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await legacy_handshake(session, "2025-11-25")
        listed = [tool.name for tool in (await session.list_tools()).tools]
        assert listed == ENTRY_SET
        found = _structured(await session.call_tool("search_tools", {"query": "add two numbers", "limit": 3}))
        assert found["tools"][0]["name"] == "add"
        assert found["tools"][0]["arguments"] == "a: number, b: number"
        described = _structured(await session.call_tool("describe_tools", {"names": ["add"]}))
        assert described["tools"][0]["inputSchema"]["required"] == ["a", "b"]
        added = await session.call_tool("add", {"a": 20, "b": 22})  # not listed: called by its name
        assert not added.is_error
        assert added.structured_content == {"sum": 42}


@pytest.mark.anyio
async def test_python_sdk_2026_07_28(discovery_server: LiveServer) -> None:
    """The stateless client: the entry set's get_weather is called with its Mcp-Param header, a found tool by name."""
    from mcp import Client

    async with Client(discovery_server.url, mode="2026-07-28") as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        assert listed == ENTRY_SET
        weather = await client.call_tool("get_weather", {"city": "Lima"})
        assert weather.structured_content == {"city": "Lima", "conditions": "fog", "temperature": 17.2}
        found = _structured(await client.call_tool("search_tools", {"query": "png image of a colour"}))
        assert found["tools"][0]["name"] == "color_swatch"
        swatch = await client.call_tool("color_swatch", {"color": "green"})
        assert not swatch.is_error
        assert [block.type for block in swatch.content] == ["text", "image"]


@pytest.mark.node
@pytest.mark.parametrize("mode", ["2025-11-25", "2026-07-28"])
def test_typescript_clients(node: Path, discovery_server: LiveServer, mode: str) -> None:
    """@modelcontextprotocol/sdk 1.x (2025-11-25) and @modelcontextprotocol/client 2.x (2026-07-28)."""
    done = subprocess.run(
        [node, "client_discovery.mjs", discovery_server.url, mode],
        cwd=nodejs.JS_DIR, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    result = json.loads(lines[-1]) if lines else {}
    assert done.returncode == 0, (done.stdout, done.stderr, discovery_server.log()[-3000:])
    assert result["ok"] is True
    assert result["listed"] == ENTRY_SET
    assert result["found"][0] == "add"
    assert result["first"]["arguments"] == "a: number, b: number"
    assert result["definition"]["name"] == "add"
    assert result["definition"]["inputSchema"]["required"] == ["a", "b"]
    assert result["sum"]["structured"] == {"sum": 42}
    assert result["sum"]["is_error"] is False


def _inspector(node: Path, server: LiveServer, *args: str) -> Any:
    """One Inspector CLI call (``@modelcontextprotocol/inspector-cli``, pinned in tests/e2e/js), its JSON output.

    It runs from the package's build directory: the CLI finds its own package.json relative to the
    working directory.
    """
    done = subprocess.run(
        [node, "index.js", server.url, "--transport", "http", *args],
        cwd=INSPECTOR_CLI, capture_output=True, text=True, timeout=120,
        env={"PATH": str(node.parent), "HOME": str(server.log_path.parent)},
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout, done.stderr)
    start = done.stdout.index("{")
    return json.loads(done.stdout[start:])


@pytest.mark.node
def test_inspector_cli(node: Path, discovery_server: LiveServer) -> None:
    """The Inspector's CLI: tools/list is the entry set; search_tools finds add; add is called by name."""
    listed = _inspector(node, discovery_server, "--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ENTRY_SET
    found = _inspector(
        node, discovery_server, "--method", "tools/call", "--tool-name", "search_tools",
        "--tool-arg", "query=sum of two numbers",
    )  # fmt: skip
    assert found["structuredContent"]["tools"][0]["name"] == "add"
    added = _inspector(
        node, discovery_server, "--method", "tools/call", "--tool-name", "add", "--tool-arg", "a=2", "--tool-arg", "b=3"
    )
    assert added["structuredContent"] == {"sum": 5}
    assert not added.get("isError")
