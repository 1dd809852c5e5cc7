"""Issue 32 (finding 5): a body that trickles in is cut off by a read timeout.

The ASGI front read a POST's body for as long as the client kept sending: a byte now and then
held the connection, the request's memory and a place in the server's connection limit for
ever. It now reads the whole body within ``BODY_TIMEOUT_SECONDS`` or answers 408 (a JSON-RPC
error, ``Connection: close``); the view is never reached. In process, with the front's ASGI
callable and a client that sends a first chunk and then nothing; the real-socket case against
uvicorn is in tests/e2e/test_http_streams.py.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from mcp_tools.asgi import McpFront
from tests.support.mcp_client import MODERN, check_message

pytestmark = pytest.mark.anyio


def _scope() -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"content-length", b"1000"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", MODERN.encode()),
            (b"mcp-method", b"tools/list"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def _trickle(app: Any, chunks: list[bytes], every: float) -> tuple[list[dict[str, Any]], float]:
    """Send ``chunks`` one per ``every`` seconds, never the last (more_body stays true)."""
    sent: list[dict[str, Any]] = []
    pending = list(chunks)

    async def receive() -> dict[str, Any]:
        if pending:
            await asyncio.sleep(every)
            return {"type": "http.request", "body": pending.pop(0), "more_body": True}
        await asyncio.sleep(3600)  # the client sends nothing more and stays connected
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    started = time.monotonic()
    await asyncio.wait_for(app(_scope(), receive, send), 10)
    return sent, time.monotonic() - started


class Inner:
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the site got the endpoint's request")


@pytest.mark.parametrize("every", [0.0, 0.1], ids=["stops", "trickles"])
async def test_a_body_that_does_not_arrive_in_time_gets_408(settings: Any, every: float) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "BODY_TIMEOUT_SECONDS": 0.5}
    sent, took = await _trickle(McpFront(Inner()), [b'{"jsonrpc": "2.0", '] + [b" "] * 50, every)
    assert 0.4 < took < 3, took
    start = sent[0]
    assert start["status"] == 408
    headers = dict(start["headers"])
    assert headers[b"connection"] == b"close"
    body = b"".join(m.get("body", b"") for m in sent[1:])
    message = json.loads(body)
    check_message(MODERN, message)
    assert message["error"]["code"] == -32600
    assert "0.5 seconds" in message["error"]["message"]
