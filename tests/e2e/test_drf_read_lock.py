"""Read-only model tools take no write lock: a real server of the demo (SQLite in WAL mode with
``transaction_mode: IMMEDIATE``, as shipped) answers ``list_book`` and ``get_book`` while another
connection holds the database's write lock, and a write tool still waits for that lock.

Before reads began their transaction ``DEFERRED``, every model query ran in a ``BEGIN IMMEDIATE``
transaction (for its timeout), so a read queued behind any writer, another worker's reads and
audit writes included (issue 27)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_client import check_message
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e]

MODERN = "2026-07-28"
RESOURCE = "http://127.0.0.1/mcp"


@pytest.fixture(scope="module")
def sqlite_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, str]]:
    tmp: Path = tmp_path_factory.mktemp("drf-lock")
    env = {
        "MCP_AUTH": "oauth",
        "MCP_RESOURCE_URL": RESOURCE,
        "MCP_RATE_LIMIT": "off",
        "MCP_DATABASE": "sqlite",  # the lock under test is SQLite's
        "MCP_AUDIT_FLUSH_ROWS": "100",  # the demo's batched audit: no write in the call
        "MCP_AUDIT_FLUSH_SECONDS": "60",
    }
    with run_server(tmp, extra_env=env) as server:
        server.manage("seed_library", "--books", "60")
        server.manage("mcp_sync_toolsets")
        token = server.manage("mcp_token", "--user", "bob", "--scopes", "library:read library:write")
        yield server, token.strip().splitlines()[-1]


def _call(server: LiveServer, token: str, name: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": meta},
    }
    request = urllib.request.Request(
        server.url,
        data=json.dumps(message).encode(),
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        },
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        answer = json.loads(response.read())
    check_message(MODERN, answer, "tools/call")
    result = answer["result"]
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


@contextlib.contextmanager
def write_lock(server: LiveServer) -> Iterator[sqlite3.Connection]:
    """Another connection holding the database's write lock (``BEGIN IMMEDIATE``) meanwhile."""
    holder = sqlite3.connect(server.env["MCP_SQLITE_PATH"], timeout=5, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield holder
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def test_read_only_model_tools_run_while_another_connection_holds_the_write_lock(
    sqlite_library: tuple[LiveServer, str],
) -> None:
    server, token = sqlite_library
    first = _call(server, token, "list_book", {"order_by": ["price"], "limit": 5}, timeout=30)  # warm up
    book = first["items"][0]
    count = _call(server, token, "aggregate_book", {}, timeout=30)
    with write_lock(server):
        started = time.monotonic()
        # The server's SQLite busy timeout is 20 s: a read that waited for the lock would time out here.
        page = _call(server, token, "list_book", {"order_by": ["price"], "limit": 5}, timeout=5)
        one = _call(server, token, "get_book", {"id": book["id"]}, timeout=5)
        counted = _call(server, token, "aggregate_book", {}, timeout=5)
        elapsed = time.monotonic() - started
    assert page["items"] == first["items"]
    assert one["id"] == book["id"]
    assert counted == count
    assert elapsed < 5, elapsed


def test_a_write_tool_still_waits_for_the_write_lock(sqlite_library: tuple[LiveServer, str]) -> None:
    server, token = sqlite_library
    book = _call(server, token, "list_book", {"limit": 1}, timeout=30)["items"][0]
    done: dict[str, Any] = {}

    def rename() -> None:
        try:
            done["book"] = _call(
                server, token, "update_book", {"id": book["id"], "data": {"title": "Renamed"}}, timeout=15
            )
        except Exception as exc:  # the assertion below reports it
            done["error"] = exc

    with write_lock(server):
        writer = threading.Thread(target=rename, daemon=True)
        writer.start()
        writer.join(1.0)
        assert writer.is_alive(), done  # queued behind the lock, not failed
    writer.join(15)
    assert not writer.is_alive()
    assert done.get("book", {}).get("title") == "Renamed", done
