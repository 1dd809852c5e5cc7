"""The official TypeScript clients against the demo site under uvicorn.

`@modelcontextprotocol/sdk` 1.x (tests/e2e/js/client_legacy.mjs) speaks the legacy revisions through
`initialize`; `@modelcontextprotocol/client` 2.x (tests/e2e/js/client_modern.mjs) speaks 2026-07-28. The
server lists 4 tools per page so every listing spans several pages.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from project.demo.tools import DEMO_TOOLS
from tests.support import nodejs
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e, pytest.mark.node]

PAGE_SIZE = 4
CATALOG = sorted(t["name"] for t in DEMO_TOOLS)
LEGACY_VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]
MODERN_VERSION = "2026-07-28"


@pytest.fixture(scope="module")
def paged_server(node: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with run_server(tmp_path_factory.mktemp("ts-client"), extra_env={"MCP_PAGE_SIZE": str(PAGE_SIZE)}) as server:
        yield server


def run_client(node: Path, server: LiveServer, script: str, version: str, *extra: str) -> dict[str, Any]:
    """Run one client script; return its JSON result line, failing with its output if it did not succeed."""
    done = subprocess.run(
        [node, script, server.url, version, *extra], cwd=nodejs.JS_DIR, capture_output=True, text=True, timeout=120
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    result: dict[str, Any] = {}
    if lines:
        try:
            result = json.loads(lines[-1])
        except json.JSONDecodeError:
            result = {}
    if done.returncode != 0 or not result.get("ok"):
        pytest.fail(
            f"{script} {version} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
            f"\n--- server log\n{server.log()[-4000:]}"
        )
    return result


def assert_common(result: dict[str, Any], version: str) -> None:
    """What every client sees whatever the revision."""
    assert result["negotiated"] == version
    # PA-1: every page, every tool exactly once, in the server's deterministic (name) order.
    assert result["tools"] == CATALOG
    assert result["pages"] == math.ceil(len(CATALOG) / PAGE_SIZE) > 1
    assert result["echo"] == {"text": "hi", "is_error": False}
    # T-11: structuredContent exists from 2025-06-18 on; 2025-03-26 only has the text block.
    if version == "2025-03-26":
        assert result["add"]["structured"] is None
        assert json.loads(result["add"]["text"]) == {"sum": 5}
    else:
        assert result["add"]["structured"]["sum"] == 5
        assert result["weather"]["structured"]["city"] == "Paris"
    assert result["weather"]["is_error"] is False
    # P-1: progress notifications before the result, strictly increasing.
    values = result["progress"]["values"]
    assert len(values) >= 3
    assert values == sorted(set(values))
    assert result["progress"]["is_error"] is False
    # T-9: a failing tool is a result with isError, not a protocol error.
    assert result["error_tool"]["is_error"] is True
    assert result["error_tool"]["text"]


@pytest.mark.parametrize(
    ("script", "version"),
    [*(("client_legacy.mjs", v) for v in LEGACY_VERSIONS), ("client_modern.mjs", MODERN_VERSION)],
)
def test_official_ts_client(node: Path, paged_server: LiveServer, script: str, version: str) -> None:
    """TS SDK 1.x (legacy revisions) and client 2.x (2026-07-28): list every page, call tools, progress, errors.

    Legacy: L-3/L-4 (negotiation), L-13 (MCP-Protocol-Version on later requests), H-14 (DELETE ends the
    session; the dead id then gets 404). Modern: LD-1 (per-request version), H-D4 (MCP-Protocol-Version),
    H-D6 (Mcp-Method/Mcp-Name), H-D7 (Mcp-Param-City mirrored from `x-mcp-header`), LD-2/H-D1 (POST only,
    no session). All: PA-1, T-9, T-11, P-1.
    """
    result = run_client(node, paged_server, script, version)
    assert_common(result, version)
    if script == "client_legacy.mjs":
        assert result["session_id"]
        assert result["all_requests_have_session"] is True
        if version != "2025-03-26":
            assert result["header_versions"] == [version]
        if result["delete_status"] == 405:  # H-14: a server MAY refuse client-ended sessions
            return
        assert result["delete_status"] in (200, 202, 204)
        assert result["after_delete_status"] == 404
    else:
        assert result["era"] == "modern"
        assert result["aggregated_tools"] == CATALOG
        assert "initialize" not in result["rpc_methods"]
        assert result["session_ids_sent"] is False
        assert result["http_methods"] == ["POST"]
        assert result["weather_call_headers"], "no tools/call for get_weather was recorded"
        headers = result["weather_call_headers"][-1]
        assert headers["mcp-protocol-version"] == MODERN_VERSION
        assert headers["mcp-method"] == "tools/call"
        assert headers["mcp-name"] == "get_weather"
        assert headers["mcp-param-city"] == "Paris"
        assert headers["status"] == 200


@pytest.mark.parametrize("mode", ["auto", "2025-11-25"])
def test_ts_client_2x_negotiation(node: Path, paged_server: LiveServer, mode: str) -> None:
    """Client 2.x in `auto` mode probes with server/discover and settles on 2026-07-28 (LD-4); offered only
    2025-11-25 it uses the legacy `initialize` handshake on the same dual-era endpoint (V-1, V-2, L-3)."""
    result = run_client(node, paged_server, "client_modern.mjs", mode)
    if mode == "auto":
        assert result["rpc_methods"][0] == "server/discover"
        assert result["era"] == "modern"
        assert_common(result, MODERN_VERSION)
    else:
        assert result["rpc_methods"][:2] == ["initialize", "notifications/initialized"]
        assert result["era"] == "legacy"
        assert_common(result, mode)
    assert result["aggregated_tools"] == CATALOG
