"""Issue 23: the demo honours the standard OTEL_* variables (project/otel.py).

The demo server under uvicorn with ``OTEL_TRACES_EXPORTER=console`` prints a span per request on
its standard output: a ``tools/call`` prints a SERVER span named after the method and the tool,
with ``mcp.method.name`` and ``gen_ai.tool.name``, a child of the ``traceparent`` the client sent.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.servers import LiveServer, run_server

pytestmark = pytest.mark.e2e

VERSION = "2025-11-25"
CLIENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
CLIENT_SPAN = "b7ad6b7169203331"


def _spans(text: str) -> list[dict[str, Any]]:
    """The JSON objects ConsoleSpanExporter printed (indented), among the server's other lines."""
    decoder = json.JSONDecoder()
    found, at = [], text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict) and "context" in value and "name" in value:
            found.append(value)
        at = text.find("{", end)
    return found


def _post(server: LiveServer, body: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", **headers}
    response = httpx.post(server.url, json=body, headers=headers, timeout=30)
    assert response.status_code in (200, 202), response.text
    return response


def test_a_tools_call_prints_its_span_with_the_console_exporter(tmp_path: Path) -> None:
    with run_server(tmp_path, extra_env={"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "e2e-demo"}) as server:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}},
        }
        session = _post(server, init, {}).headers["Mcp-Session-Id"]
        headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION}
        _post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
        params = {"name": "echo", "arguments": {"text": "hi"}}
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        traceparent = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
        answer = _post(server, call, {**headers, "traceparent": traceparent}).json()
        assert answer["result"]["content"] == [{"type": "text", "text": "hi"}]
        deadline = time.monotonic() + 15  # SimpleSpanProcessor prints as the span ends: soon
        spans: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            spans = [s for s in _spans(server.log()) if s["name"] == "tools/call echo"]
            if spans:
                break
            time.sleep(0.1)
    assert spans, server.log()[-4000:]
    (span,) = spans
    assert span["kind"] == "SpanKind.SERVER"
    assert span["attributes"]["mcp.method.name"] == "tools/call"
    assert span["attributes"]["gen_ai.tool.name"] == "echo"
    assert span["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert span["attributes"]["mcp.protocol.version"] == VERSION
    assert span["attributes"]["mcp.session.id"] == session
    assert span["attributes"]["jsonrpc.request.id"] == "2"
    assert span["context"]["trace_id"] == f"0x{CLIENT_TRACE}"  # the client's trace, continued
    assert span["parent_id"] == f"0x{CLIENT_SPAN}"
    assert span["resource"]["attributes"]["service.name"] == "e2e-demo"
    names = {s["name"] for s in _spans(server.log())}
    assert {"initialize", "notifications/initialized"} <= names
