"""OpenTelemetry: the request's SERVER span, its parent from the client, a task's worker span, metrics.

Needs the OTel SDK (a dev dependency): one global tracer and meter provider for the process,
with in-memory exporters each test clears.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tools import telemetry
from mcp_tools.models import McpTask
from mcp_tools.tasking.worker import execute
from tests.support.mcp_client import Mcp, modern_meta, sse_messages
from tests.support.otel import otel_fixture, points, server_spans  # noqa: F401  (the otel fixture)

pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.trace import SpanKind, StatusCode

pytestmark = pytest.mark.django_db

CLIENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"
EXT = "io.modelcontextprotocol/tasks"
_server_spans = server_spans
_points = points


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_tools_list_and_call_spans(mcp: Mcp, otel: Any, version: str) -> None:
    if version == "2026-07-28":
        mcp.modern()
    else:
        mcp.initialize(version)
    otel.spans.clear()
    mcp.call("tools/list")
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    listed, called = _server_spans()
    assert listed.name == "tools/list"
    assert listed.attributes["mcp.method.name"] == "tools/list"
    assert listed.attributes["mcp.protocol.version"] == version
    assert "gen_ai.operation.name" not in listed.attributes
    assert called.name == "tools/call echo"
    attributes = dict(called.attributes)
    assert attributes["gen_ai.tool.name"] == "echo"
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["jsonrpc.request.id"]
    assert "error.type" not in attributes
    assert called.status.status_code == StatusCode.UNSET
    if version == "2025-06-18":
        assert attributes["mcp.session.id"] == mcp.session_id
    else:
        assert "mcp.session.id" not in attributes
    durations = _points("mcp.server.operation.duration")
    assert {p.attributes["mcp.method.name"] for p in durations} >= {"tools/list", "tools/call"}
    assert any(p.attributes.get("gen_ai.tool.name") == "echo" for p in _points("mcp_tools.tool.calls"))


def test_jsonrpc_error_and_tool_error_set_error_status(mcp: Mcp, otel: Any) -> None:
    mcp.initialize("2025-11-25")  # invalid arguments are an isError result from 2025-11-25 on
    otel.spans.clear()
    _, message, _ = mcp.request("tools/call", {"name": "no_such_tool", "arguments": {}})
    code = message["error"]["code"]
    _, message, _ = mcp.request("tools/call", {"name": "echo", "arguments": {"text": 5}})
    assert message["result"]["isError"] is True
    unknown, invalid = _server_spans()
    assert unknown.attributes["error.type"] == str(code)
    assert unknown.attributes["rpc.response.status_code"] == str(code)
    assert unknown.status.status_code == StatusCode.ERROR
    assert unknown.status.description == message_text(unknown)
    assert invalid.attributes["error.type"] == "tool_error"
    assert invalid.status.status_code == StatusCode.ERROR
    failed = _points("mcp.server.operation.duration")
    assert {p.attributes.get("error.type") for p in failed} >= {str(code), "tool_error"}
    assert any(p.attributes["mcp_tools.outcome"] == "invalid" for p in _points("mcp_tools.tool.errors"))


def message_text(span: Any) -> str:
    return str(span.status.description or "")


def test_parent_from_traceparent_header(mcp: Mcp, otel: Any) -> None:
    mcp.modern()
    mcp.call("tools/list", headers={"traceparent": TRACEPARENT})
    (span,) = _server_spans()
    assert format(span.context.trace_id, "032x") == CLIENT_TRACE
    assert span.parent is not None
    assert format(span.parent.span_id, "016x") == CLIENT_SPAN


def test_parent_from_meta_wins_and_links_the_http_context(mcp: Mcp, otel: Any) -> None:
    mcp.modern()
    other = "00-11111111111111111111111111111111-2222222222222222-01"
    mcp.call("tools/list", {"_meta": modern_meta(traceparent=TRACEPARENT)}, headers={"traceparent": other})
    (span,) = _server_spans()
    assert format(span.context.trace_id, "032x") == CLIENT_TRACE
    assert format(span.parent.span_id, "016x") == CLIENT_SPAN
    assert [format(link.context.trace_id, "032x") for link in span.links] == ["1" * 32]


def test_task_worker_span_shares_the_call_trace(mcp: Mcp, otel: Any) -> None:
    from project.celery import app

    mcp.modern()
    app.conf.task_always_eager = False  # the message waits; this test runs the worker itself
    try:
        meta = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}})
        created = mcp.call(
            "tools/call",
            {"name": "build_report", "arguments": {"steps": 1}, "_meta": {**meta, "traceparent": TRACEPARENT}},
        )
    finally:
        app.conf.task_always_eager = True
    task_id = created["taskId"]
    assert McpTask.objects.get(pk=task_id).trace_context["traceparent"].startswith(f"00-{CLIENT_TRACE}-")
    assert execute(task_id) == "completed"
    (call,) = _server_spans()
    (worker,) = [s for s in otel.spans.get_finished_spans() if s.kind == SpanKind.CONSUMER]
    assert worker.name == "execute_tool build_report"
    assert worker.context.trace_id == call.context.trace_id == int(CLIENT_TRACE, 16)
    assert worker.parent.span_id == call.context.span_id
    statuses = {p.attributes["mcp_tools.task.status"] for p in _points("mcp_tools.tasks")}
    assert {"working", "completed"} <= statuses


def test_without_opentelemetry_the_endpoint_works_and_records_nothing(
    mcp: Mcp, otel: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.setitem(sys.modules, name, None)  # type: ignore[arg-type]
    telemetry.reload()
    try:
        mcp.modern()
        mcp.call("tools/list", headers={"traceparent": TRACEPARENT})
        assert not mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}}).get("isError")
        assert telemetry._state.api is None
        assert telemetry.inject() == {}
    finally:
        monkeypatch.undo()
        telemetry.reload()
    assert otel.spans.get_finished_spans() == ()


def test_rate_limit_refusals_are_counted(mcp: Mcp, otel: Any) -> None:
    from mcp_tools.models import Tool

    Tool.objects.filter(name="echo").update(rate_limit="1/m")
    mcp.modern()
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    refused = mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert refused["isError"] is True
    (point,) = [p for p in _points("mcp_tools.rate_limit.refusals") if p.attributes["gen_ai.tool.name"] == "echo"]
    assert point.value >= 1
    assert _server_spans()[-1].attributes["error.type"] == "tool_error"


def test_initialize_and_a_legacy_notification_have_their_spans(mcp: Mcp, otel: Any) -> None:
    mcp.initialize("2025-06-18")  # sends notifications/initialized
    (init,) = [s for s in _server_spans() if s.name == "initialize"]
    assert init.attributes["mcp.protocol.version"] == "2025-06-18"
    (span,) = [s for s in _server_spans() if s.name == "notifications/initialized"]
    assert span.attributes["mcp.session.id"] == mcp.session_id
    assert "jsonrpc.request.id" not in span.attributes


def _open_streams() -> dict[str, int]:
    """``mcp_tools.streams.open`` by kind (cumulative since the process began: compare)."""
    return {p.attributes["mcp_tools.stream.kind"]: p.value for p in _points("mcp_tools.streams.open")}


def _delta(before: dict[str, int], now: dict[str, int]) -> dict[str, int]:
    return {k: now.get(k, 0) - before.get(k, 0) for k in {*now, *before} if now.get(k, 0) != before.get(k, 0)}


def _stream_counting(body: Any, headers: dict[str, str]) -> tuple[list[bytes], dict[str, int]]:
    """POST ``body`` (a GET without one) with Django's async client, on one event loop from the
    view to the stream's end; returns the chunks and the open streams after the first chunk."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    async def read() -> tuple[list[bytes], dict[str, int]]:
        client = AsyncClient()
        if body is None:
            response = await client.get("/mcp", headers=headers)
        else:
            response = await client.post("/mcp", body, content_type="application/json", headers=headers)
        assert response.status_code == 200
        assert response["Content-Type"] == "text/event-stream"
        chunks = response.streaming_content.__aiter__()
        first = await chunks.__anext__()
        during = _open_streams()
        return [first] + [chunk async for chunk in chunks], during

    return async_to_sync(read)()


def test_every_long_lived_stream_is_counted_while_open(mcp: Mcp, otel: Any, settings: Any) -> None:
    """The up-down counter counts each stream the endpoint holds, by kind, while it is open:
    a POST answered with SSE (a call that sent progress first), the GET stream and a
    subscriptions/listen stream (those two end after SSE_MAX_SECONDS here)."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "SSE_MAX_SECONDS": 0.3, "SSE_KEEPALIVE_SECONDS": 0.1}
    mcp.initialize("2025-11-25")
    before = _open_streams()

    def delta(now: dict[str, int]) -> dict[str, int]:
        return _delta(before, now)

    headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": mcp.session_id or ""}
    headers["MCP-Protocol-Version"] = "2025-11-25"
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": 1}},
    }
    chunks, during = _stream_counting(call, headers)
    assert delta(during) == {"response": 1}
    assert b'"result"' in chunks[-1]
    assert delta(_open_streams()) == {}

    _, during = _stream_counting(None, headers | {"Accept": "text/event-stream"})
    assert delta(during) == {"get": 1}
    assert delta(_open_streams()) == {}

    listen = {
        "jsonrpc": "2.0",
        "id": 8,
        "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": {"toolsListChanged": True}},
    }
    modern = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28"}
    _, during = _stream_counting(listen, modern | {"Mcp-Method": "subscriptions/listen"})
    assert delta(during) == {"listen": 1}
    assert delta(_open_streams()) == {}


def test_a_tasks_result_stream_is_counted_while_open(
    mcp: Mcp,
    otel: Any,
    settings: Any,
    asking_tools: list[Any],
    client_turns: list[Callable[[], None]],
) -> None:
    """A tasks/result that streams a task's request for input (2025-11-25) is an open stream
    until it ends; the task then completes with the answer POSTed back."""
    from project.celery import app

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INPUT_TIMEOUT_SECONDS": 5, "TASK_RESULT_WAIT_SECONDS": 0.3}
    seen: dict[str, Any] = {}
    app.conf.task_always_eager = False  # the test runs the worker's entry point itself
    try:
        mcp.initialize("2025-11-25", capabilities={"elicitation": {}})
        task_id = str(mcp.call("tools/call", {"name": "task_confirm", "arguments": {}, "task": {}})["task"]["taskId"])

        def client() -> None:
            before = _open_streams()
            body = {"jsonrpc": "2.0", "id": mcp.next_id(), "method": "tasks/result", "params": {"taskId": task_id}}
            headers = {
                "Accept": "application/json, text/event-stream",
                "Mcp-Session-Id": mcp.session_id or "",
                "MCP-Protocol-Version": "2025-11-25",
            }
            chunks, during = _stream_counting(body, headers)
            seen["during"], seen["after"] = _delta(before, during), _delta(before, _open_streams())
            [request] = [m for m in sse_messages(b"".join(chunks)) if m.get("method") == "elicitation/create"]
            mcp.post({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"ok": True}}})

        client_turns.append(client)
        assert execute(task_id) == "completed"
    finally:
        app.conf.task_always_eager = True
    assert seen == {"during": {"task_result": 1}, "after": {}}
