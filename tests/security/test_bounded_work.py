"""Bounded work (issue 20): a JSON-RPC batch holds at most MAX_BATCH_ITEMS messages, each of
its tool calls counts against the rate limit as a call of its own, and no answer passes
MAX_RESPONSE_BYTES, whatever the batch asks for or a tool returns."""

from __future__ import annotations

import io
import json
import tracemalloc
from typing import Any

from django.test import RequestFactory

from mcp_tools.models import AuditEvent, Tool
from mcp_tools.wsgi import McpWsgiFront
from tests.support.mcp_client import Mcp, check_message

REVISION = "2025-03-26"  # the one revision with batches (L-8)


def _call(i: int, text: str = "hi", name: str = "echo") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": {"text": text}}}


def _list(i: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/list"}


def _checked(messages: list[dict[str, Any]], method: str) -> None:
    for message in messages:
        check_message(REVISION, message, method)


def test_a_batch_over_max_batch_items_is_one_error_and_runs_nothing(mcp: Mcp) -> None:
    mcp.initialize(REVISION)
    response, messages = mcp.post([_call(i) for i in range(33)], validate=False)
    assert response.status_code == 400
    assert len(messages) == 1
    _checked(messages, "tools/call")
    error = messages[0]["error"]
    assert error["code"] == -32600
    assert "at most 32" in error["message"]
    assert "MAX_BATCH_ITEMS" in error["message"]
    assert not AuditEvent.objects.exists()  # no item ran
    response, messages = mcp.post([_call(i) for i in range(32)], validate=False)
    assert response.status_code == 200
    assert len(messages) == 32
    _checked(messages, "tools/call")


def test_the_batch_limit_is_a_setting(mcp: Mcp, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_BATCH_ITEMS": 2}
    mcp.initialize(REVISION)
    response, messages = mcp.post([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(3)], validate=False)
    assert response.status_code == 400
    assert "at most 2" in messages[0]["error"]["message"]
    _checked(messages, "ping")


def test_each_tool_call_of_a_batch_is_one_hit_of_the_rate_limit(mcp: Mcp) -> None:
    Tool.objects.filter(name="echo").update(rate_limit="3/m")
    mcp.initialize(REVISION)
    response, messages = mcp.post([_call(i) for i in range(5)], validate=False)
    assert response.status_code == 200
    _checked(messages, "tools/call")
    refused = [m for m in messages if m["result"].get("isError")]
    assert len(refused) == 2
    assert all("Rate limit exceeded" in m["result"]["content"][0]["text"] for m in refused)
    assert all(m["result"]["_meta"]["retryAfterSeconds"] > 0 for m in refused)
    # The batch used the whole minute: a single call afterwards is refused too.
    result = mcp.call("tools/call", {"name": "echo", "arguments": {"text": "one more"}})
    assert result["isError"] is True
    assert list(AuditEvent.objects.values_list("outcome", flat=True)).count("rate_limited") == 3


def test_a_batch_takes_the_concurrent_call_slot_once_per_call(mcp: Mcp, settings: Any) -> None:
    """MAX_CALLS_PER_PRINCIPAL: the items of a batch run one after the other, each holding the
    principal's slot while it runs and giving it back, so a bound of 1 still serves them all."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_PRINCIPAL": 1}
    mcp.initialize(REVISION)
    response, messages = mcp.post([_call(i) for i in range(4)], validate=False)
    _checked(messages, "tools/call")
    assert [m["result"].get("isError", False) for m in messages] == [False] * 4


def _large_tools(count: int, description: int = 8192) -> None:
    Tool.objects.bulk_create(
        Tool(name=f"wide.{i:03d}", description="d" * description, handler_key="demo.echo") for i in range(count)
    )
    Tool.bump_catalog()


def test_a_batch_stops_running_its_items_at_max_response_bytes(mcp: Mcp, settings: Any) -> None:
    """The answers of a batch stay within the bound: once the next answer would pass it, that
    answer and every later request get a short error each (one response per request)."""
    limit = 262_144
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_RESPONSE_BYTES": limit}
    _large_tools(60)
    mcp.initialize(REVISION)
    batch = [_list(i) for i in range(10)] + [_call(100 + i) for i in range(3)]
    response, messages = mcp.post(batch, validate=False)
    assert response.status_code == 200
    assert len(response.content) <= limit
    assert len(messages) == len(batch)  # one response per request
    _checked(messages[:10], "tools/list")
    _checked(messages[10:], "tools/call")
    answered = [m for m in messages if "result" in m]
    assert answered, "the first page fits"
    errors = [m for m in messages if "error" in m]
    assert errors
    assert errors[0]["error"]["code"] == -32603
    assert "MAX_RESPONSE_BYTES" in errors[0]["error"]["message"]
    assert all(m["error"]["code"] == -32600 and "not run" in m["error"]["message"] for m in errors[1:])
    # The tool calls after the bound was reached were not run (no audit rows).
    assert not AuditEvent.objects.exists()


def test_a_tool_result_over_max_response_bytes_is_an_error_result(mcp: Mcp, settings: Any) -> None:
    limit = 262_144
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_RESPONSE_BYTES": limit}
    mcp.initialize(REVISION)
    response, message, _ = mcp.request("tools/call", {"name": "echo", "arguments": {"text": "x" * 300_000}})
    assert response.status_code == 200
    assert len(response.content) < 2000
    result = message["result"]
    assert result["isError"] is True
    assert "too large" in result["content"][0]["text"]
    assert str(limit) in result["content"][0]["text"]
    assert AuditEvent.objects.get().outcome == "tool_error"
    # Within a batch the same result is measured against what is left of the bound.
    response, messages = mcp.post([_call(1, "x" * 200_000), _call(2, "x" * 200_000)], validate=False)
    _checked(messages, "tools/call")
    assert len(response.content) <= limit
    assert messages[0]["result"]["content"][0]["text"] == "x" * 200_000
    assert messages[1]["result"]["isError"] is True


def test_a_tools_list_page_of_large_tools_stays_within_the_bound(mcp: Mcp, settings: Any) -> None:
    """Pages end early rather than pass MAX_RESPONSE_BYTES; the cursor walks every tool."""
    limit = 262_144
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_RESPONSE_BYTES": limit}
    _large_tools(60)
    mcp.initialize(REVISION)
    names: list[str] = []
    cursor = None
    while True:
        response, message, _ = mcp.request("tools/list", {} if cursor is None else {"cursor": cursor})
        assert len(response.content) <= limit
        names += [tool["name"] for tool in message["result"]["tools"]]
        cursor = message["result"].get("nextCursor")
        if cursor is None:
            break
    assert len(names) == len(set(names)) == Tool.objects.count()


def test_large_descriptions_and_a_full_batch_stay_within_default_bounds(mcp: Mcp) -> None:
    """The attack of the review, at today's limits: the longest descriptions a tool may have and
    a batch of tools/list as large as allowed. The answer and the memory it takes stay bounded
    (before: 32 pages of 50 such tools, about 14 MB, built and joined in memory)."""
    _large_tools(60)
    mcp.initialize(REVISION)
    batch = [_list(i) for i in range(32)]
    tracemalloc.start()
    try:
        response, messages = mcp.post(batch, validate=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 200
    assert len(response.content) <= 4 * 1_048_576
    assert len(messages) == 32
    _checked(messages, "tools/list")
    # The answer's bytes a few times over (the answers, the joined body, the test client's copy
    # and its decoded JSON): about 13 MB; before, about 60 MB.
    assert peak < 20 * 1_048_576, f"{peak / 1_048_576:.1f} MB traced at the peak"


def test_the_wsgi_front_applies_the_same_bounds(mcp: Mcp) -> None:
    """McpWsgiFront answers batches in the worker's thread (views.answer_sync): the same limit."""
    mcp.initialize(REVISION)
    assert mcp.session_id is not None
    front = McpWsgiFront(lambda environ, start_response: [], "/mcp")
    raw = json.dumps([_call(i) for i in range(33)]).encode()
    environ = RequestFactory()._base_environ(  # type: ignore[attr-defined]
        PATH_INFO="/mcp",
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(raw)),
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_SESSION_ID=mcp.session_id,
    )
    environ["wsgi.input"] = io.BytesIO(raw)
    status: list[str] = []
    body = b"".join(front(environ, lambda line, headers: status.append(line)))
    assert status == ["400 Bad Request"]
    message = json.loads(body)
    check_message(REVISION, message, "tools/call")
    assert message["error"]["code"] == -32600
    assert "MAX_BATCH_ITEMS" in message["error"]["message"]
    assert not AuditEvent.objects.exists()
