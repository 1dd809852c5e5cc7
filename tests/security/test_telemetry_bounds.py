"""Issue 32 (finding 4): what a client sends never becomes a metric series of its own.

With OpenTelemetry metrics on, the raw method name and tool name were metric attributes before
the server knew the method or the tool: every distinct name a client made up was a new series,
kept for the life of the process (100 requests with 1 MB method names took a worker from 106 to
207 MB). The real OpenTelemetry SDK (an in-memory metric reader) counts the series here: a
method the server does not know and a tool the call did not find are recorded as ``_OTHER``
(the conventions' fallback value), so many distinct names make a fixed number of series, and
the strings of the client that reach a span are cut to ``MAX_ATTRIBUTE_CHARS``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.mcp_client import Mcp
from tests.support.otel import otel_fixture, points, server_spans  # noqa: F401  (the otel fixture)

pytestmark = pytest.mark.django_db

MARK = "made-up-"
OTHER = "_OTHER"  # the conventions' fallback value (mcp_tools.telemetry.OTHER)
MAX_ATTRIBUTE_CHARS = 128  # mcp_tools.telemetry.MAX_ATTRIBUTE_CHARS
METRICS = ("mcp.server.operation.duration", "mcp_tools.tool.calls", "mcp_tools.tool.errors")


def _series() -> set[tuple[str, frozenset[tuple[str, Any]]]]:
    """Every (metric, attribute set) recorded since the process set the provider."""
    return {(name, frozenset(p.attributes.items())) for name in METRICS for p in points(name)}


def _made_up(i: int, size: int) -> str:
    return f"{MARK}{i:04d}-" + "x" * size


def _send_made_up_names(mcp: Mcp, start: int, count: int) -> None:
    for i in range(start, start + count):
        _, unknown_method, _ = mcp.request(_made_up(i, 10_000))
        assert unknown_method["error"]["code"] == -32601
        _, unknown_tool, _ = mcp.request("tools/call", {"name": _made_up(i, 10_000), "arguments": {}})
        assert "error" in unknown_tool or unknown_tool["result"]["isError"]


def test_made_up_methods_and_tools_add_no_series(mcp: Mcp, otel: Any) -> None:
    mcp.initialize("2025-11-25")
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "known"}})  # control: a real tool
    _send_made_up_names(mcp, 0, 15)
    after_some = _series()
    _send_made_up_names(mcp, 15, 30)
    assert _series() == after_some, "more made-up names made more series"
    values = [str(v) for _, attributes in after_some for _, v in attributes]
    assert not [v for v in values if MARK in v]
    methods = {dict(a)["mcp.method.name"] for n, a in after_some if n == METRICS[0]}
    assert {OTHER, "tools/call", "initialize"} <= methods
    tools = {dict(a)["gen_ai.tool.name"] for n, a in after_some if n == METRICS[1]}
    assert {OTHER, "echo"} <= tools  # the real tool keeps its own series

    spans = server_spans()
    names = {span.name for span in spans}
    assert "tools/call echo" in names
    assert not [name for name in names if MARK in name]
    for span in spans:
        for key, value in span.attributes.items():
            assert len(str(value)) <= MAX_ATTRIBUTE_CHARS, (span.name, key)
        assert len(span.status.description or "") <= MAX_ATTRIBUTE_CHARS, span.name
    called = [s for s in spans if s.attributes.get("mcp.method.name") == "tools/call"]
    assert {s.attributes["gen_ai.tool.name"] for s in called} == {"echo", OTHER}


def test_made_up_protocol_versions_and_request_ids_are_bounded(mcp: Mcp, otel: Any) -> None:
    """initialize's requested protocolVersion (the span starts before negotiation) and the
    request id are the client's strings: an unsupported version is ``_OTHER`` in the metrics,
    and an id reaches the span cut to MAX_ATTRIBUTE_CHARS."""
    for i in range(10):
        body = {
            "jsonrpc": "2.0",
            "id": _made_up(i, 5_000),
            "method": "initialize",
            "params": {
                "protocolVersion": _made_up(i, 5_000),
                "capabilities": {},
                "clientInfo": {"name": "bounds", "version": "1"},
            },
        }
        response, messages = mcp.post(body, method="initialize")
        assert response.status_code == 200
        assert messages[0]["result"]["protocolVersion"]  # negotiated to one it supports
    versions = {p.attributes["mcp.protocol.version"] for p in points(METRICS[0])}
    assert not [v for v in versions if MARK in str(v)]
    assert OTHER in versions
    for span in server_spans():
        assert len(span.attributes["jsonrpc.request.id"]) <= MAX_ATTRIBUTE_CHARS
        assert span.attributes["mcp.protocol.version"] == OTHER
