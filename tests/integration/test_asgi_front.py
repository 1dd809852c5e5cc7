"""mcp_tools.asgi.McpFront in process: routing, body limits, disconnects and internal errors.

The protocol itself through the front is covered end to end (tests/e2e run the demo's
project.asgi, which uses the front; the stream tests run once with it and once without).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from mcp_tools.asgi import McpFront
from mcp_tools.transport import views
from tests.support.mcp_client import MODERN, modern_meta

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
async def _close_worker_connections() -> Any:
    """The ORM work ran in asgiref's shared thread: close its connection, or PostgreSQL cannot
    drop the test database at the end of the run."""
    yield
    await sync_to_async(connections.close_all)()


class Inner:
    """Stands for the Django application behind the front."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _scope(path: str = "/mcp", *, root_path: str = "", headers: list[tuple[bytes, bytes]] | None = None) -> Any:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": headers
        if headers is not None
        else [
            (b"host", b"testserver"),
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"mcp-protocol-version", MODERN.encode()),
            (b"mcp-method", b"tools/list"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def _call(app: Any, scope: Any, chunks: list[bytes]) -> tuple[int | None, dict[bytes, bytes], bytes]:
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            done.set()

    await asyncio.wait_for(app(scope, receive, send), 10)
    start = next((m for m in sent if m["type"] == "http.response.start"), None)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return (start or {}).get("status"), dict((start or {}).get("headers", [])), body


def _list_body() -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}}).encode()


async def test_other_paths_go_to_the_site() -> None:
    inner = Inner()
    front = McpFront(inner)
    for path in ("/", "/admin/", "/mcp/", "/mcpx"):
        status, _, _ = await _call(front, _scope(path), [b""])
        assert status == 204
    assert inner.paths == ["/", "/admin/", "/mcp/", "/mcpx"]


@pytest.mark.django_db(transaction=True)
async def test_endpoint_is_served_with_a_content_length() -> None:
    inner = Inner()
    status, headers, body = await _call(McpFront(inner), _scope(), [_list_body()])
    assert status == 200, body
    assert inner.paths == []
    assert headers[b"content-length"] == str(len(body)).encode()
    assert json.loads(body)["result"]["tools"] == []  # an empty catalog in this database


@pytest.mark.django_db(transaction=True)
async def test_a_connection_is_asked_to_reconnect_after_keepalive_requests_answers(settings: Any) -> None:
    """uvicorn's workers share one listening socket and the first to wake accepts a whole burst
    of connections: all of a client's keep-alive connections could stay on one worker. The
    front asks for a new connection after KEEPALIVE_REQUESTS answers on one (issue 37)."""
    from mcp_tools.transport import keepalive

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "KEEPALIVE_REQUESTS": 3}
    keepalive._answers.counts.clear()  # what earlier tests' answers counted
    front = McpFront(Inner())
    other = {**_scope(), "client": ("127.0.0.1", 50001)}
    closes = []
    for scope in (_scope(), _scope(), other, _scope(), _scope(), other, other):
        status, headers, _ = await _call(front, scope, [_list_body()])
        assert status == 200
        closes.append(headers.get(b"connection"))
    # The third answer on each connection says close; a connection with that port later starts again.
    assert closes == [None, None, None, b"close", None, None, b"close"]


@pytest.mark.django_db(transaction=True)
async def test_no_reconnect_is_asked_over_http2_without_a_client_or_when_off(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp_tools.transport import keepalive

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "KEEPALIVE_REQUESTS": 1}
    front = McpFront(Inner())
    for scope in ({**_scope(), "http_version": "2"}, {**_scope(), "client": None}):
        _, headers, _ = await _call(front, scope, [_list_body()])
        assert b"connection" not in headers  # HTTP/2 forbids it; no address, no count
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "KEEPALIVE_REQUESTS": 0}
    for _ in range(3):
        _, headers, _ = await _call(front, _scope(), [_list_body()])
        assert b"connection" not in headers
    # What the front remembers per connection is bounded.
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "KEEPALIVE_REQUESTS": 100}
    monkeypatch.setattr(keepalive.Answers, "MAX_KNOWN", 4)
    for port in range(40000, 40010):
        await _call(front, {**_scope(), "client": ("127.0.0.1", port)}, [_list_body()])
        assert len(keepalive._answers.counts) <= 4


@pytest.mark.django_db(transaction=True)
async def test_root_path_prefix() -> None:
    inner = Inner()
    status, _, body = await _call(McpFront(inner), _scope("/site/mcp", root_path="/site"), [_list_body()])
    assert status == 200, body
    status, _, _ = await _call(McpFront(inner), _scope("/mcp", root_path="/site"), [b""])
    assert status == 204  # not below the root path: the site's


async def test_declared_oversized_body_is_refused_unread(settings: Any) -> None:
    """H-* body limit: 413 from the declared length, before any body is read."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_BODY_BYTES": 100}
    scope = _scope()
    scope["headers"].append((b"content-length", b"5000"))
    status, _, body = await _call(McpFront(Inner()), scope, [b"x" * 5000])
    assert status == 413
    assert json.loads(body)["error"]["code"] == -32600


async def test_streamed_oversized_body_is_cut_and_refused(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_BODY_BYTES": 100}
    status, _, body = await _call(McpFront(Inner()), _scope(), [b"x" * 60, b"x" * 60, b"x" * 60])
    assert status == 413


async def test_client_gone_before_the_body_gets_nothing() -> None:
    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    await McpFront(Inner())(_scope(), receive, send)
    assert sent == []


async def test_internal_error_is_a_json_500_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Fault injection: an exception escaping the view gives a JSON-RPC internal error, no detail."""
    from django.core import signals

    async def broken(request: Any) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(views, "respond", broken)
    seen: list[Any] = []

    def receiver(sender: Any, request: Any, **kwargs: Any) -> None:
        seen.append(request)

    signals.got_request_exception.connect(receiver)
    try:
        with caplog.at_level(logging.ERROR, logger="django.request"):
            status, headers, body = await _call(McpFront(Inner()), _scope(), [_list_body()])
    finally:
        signals.got_request_exception.disconnect(receiver)
    assert status == 500
    assert headers[b"content-type"] == b"application/json"
    assert json.loads(body) == {"jsonrpc": "2.0", "error": {"code": -32603, "message": "Internal error"}}
    assert b"secret" not in body
    assert "secret detail" in caplog.text
    assert len(seen) == 1


async def test_without_the_endpoint_url_everything_goes_to_the_site(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.ROOT_URLCONF = "tests.urls_without_mcp"
    inner = Inner()
    with caplog.at_level(logging.WARNING, logger="django.request"):
        status, _, _ = await _call(McpFront(inner), _scope(), [_list_body()])
    assert status == 204
    assert inner.paths == ["/mcp"]
    assert "no URL named 'mcp_tools:endpoint'" in caplog.text


async def test_undecodable_query_string_is_a_400() -> None:
    scope = _scope()
    scope["query_string"] = b"x=\xff"
    status, _, body = await _call(McpFront(Inner()), scope, [_list_body()])
    assert status == 400
    assert json.loads(body)["error"]["code"] == -32600


async def test_error_inside_a_stream_ends_it_cleanly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Fault injection: the stream's generator fails after its first event; the response ends."""
    closed: list[bool] = []

    async def events() -> Any:
        try:
            yield b"data: first\n\n"
            raise RuntimeError("stream broke")
        finally:
            closed.append(True)

    async def streaming(request: Any) -> Any:
        return views.Reply(200, headers={"Content-Type": "text/event-stream"}, stream=events)

    monkeypatch.setattr(views, "respond", streaming)
    with caplog.at_level(logging.ERROR, logger="django.request"):
        status, _, body = await _call(McpFront(Inner()), _scope(), [_list_body()])
    assert status == 200
    assert body == b"data: first\n\n"
    assert "stream broke" in caplog.text
    assert closed == [True]


async def test_a_client_gone_mid_stream_closes_the_stream_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disconnect cancels the request while a write waits; the stream's cleanup runs before
    the front returns (listener and stream slot released), and the server's task is not left
    cancelled."""
    closed: list[bool] = []
    release = asyncio.Event()

    async def events() -> Any:
        try:
            while True:
                yield b": keep-alive\n\n"
        finally:
            closed.append(True)

    async def streaming(request: Any) -> Any:
        return views.Reply(200, headers={"Content-Type": "text/event-stream"}, stream=events)

    monkeypatch.setattr(views, "respond", streaming)
    messages = [{"type": "http.request", "body": _list_body(), "more_body": False}]
    writes = 0

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await release.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal writes
        writes += 1
        if writes == 3:
            release.set()  # the client goes away...
            await asyncio.sleep(3600)  # ...while this write waits (a slow socket)

    task = asyncio.ensure_future(McpFront(Inner())(_scope(), receive, send))
    await asyncio.wait_for(task, 5)
    assert closed == [True]
    assert task.cancelling() == 0


async def test_a_reply_dropped_before_its_stream_starts_is_still_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client gone while the response head is written: the stream never runs, but the reply's
    on_close (a listener's stream slot) still runs, once."""
    closes: list[bool] = []
    release = asyncio.Event()

    async def never_started() -> Any:
        yield b"unreachable"

    async def streaming(request: Any) -> Any:
        return views.Reply(200, stream=never_started, on_close=lambda: closes.append(True))

    monkeypatch.setattr(views, "respond", streaming)
    messages = [{"type": "http.request", "body": _list_body(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await release.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        release.set()
        await asyncio.sleep(3600)  # the head never gets out

    await asyncio.wait_for(McpFront(Inner())(_scope(), receive, send), 5)
    assert closes == [True]


async def test_the_plain_view_closes_an_unsent_stream_reply() -> None:
    """Django closes every response it handled; the endpoint's streaming response passes that on."""
    closes: list[bool] = []

    async def events() -> Any:
        yield b""

    response = views._StreamingResponse(events())
    response.on_close = lambda: closes.append(True)
    response.close()
    assert closes == [True]


async def test_lifespan_shutdown_writes_the_buffered_audit_rows(settings: Any, transactional_db: None) -> None:
    """Django's handler has no lifespan; the front answers it and flushes the audit buffer."""
    from mcp_tools import audit
    from mcp_tools.models import AuditEvent
    from mcp_tools.types import Principal

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 1000, "AUDIT_FLUSH_SECONDS": 600}
    inner = Inner()
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    def record() -> None:
        audit.record(
            audit.CallEvent(
                principal=Principal(key="lifespan"),
                tool_name="echo",
                tool_version=1,
                arguments={"text": "x"},
                sensitive=frozenset(),
                outcome="ok",
                duration_ms=1.0,
                request_id="lifespan-1",
                protocol_version=MODERN,
            )
        )

    await sync_to_async(record)()
    count = sync_to_async(AuditEvent.objects.filter(request_id="lifespan-1").count)
    assert await count() == 0
    await McpFront(inner)({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert inner.paths == []
    assert await count() == 1


async def test_a_cancelled_lifespan_still_writes_the_buffered_audit_rows(settings: Any, transactional_db: None) -> None:
    """Issue 32 (6): uvicorn told to exit at once (a second Ctrl-C) skips the shutdown message
    and cancels the lifespan as its loop ends; the front writes the rows then and ends without
    raising (raising, uvicorn logged "ASGI 'lifespan' protocol appears unsupported")."""
    from mcp_tools.models import AuditEvent
    from tests.support.audit_rows import record_echo

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 1000, "AUDIT_FLUSH_SECONDS": 600}
    started = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if not sent:
            return {"type": "lifespan.startup"}
        await asyncio.Event().wait()  # the shutdown message never comes
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        started.set()

    await sync_to_async(record_echo)("lifespan-cancelled", "cancelled-1")
    count = sync_to_async(AuditEvent.objects.filter(request_id="cancelled-1").count)
    lifespan = asyncio.ensure_future(McpFront(Inner())({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send))
    await started.wait()
    assert await count() == 0
    lifespan.cancel()
    await lifespan  # ends quietly: no CancelledError
    assert [m["type"] for m in sent] == ["lifespan.startup.complete"]
    assert await count() == 1


async def test_static_files_are_served_in_debug_as_runserver_does(settings: Any) -> None:
    """Issue 26: under uvicorn the README's ``McpFront(get_asgi_application())`` gave the admin
    no CSS (/static/ 404). In DEBUG the front serves STATIC_URL from the finders; not otherwise."""
    from django.core.asgi import get_asgi_application

    css = _scope("/static/admin/css/base.css", headers=[(b"host", b"testserver")])
    css["method"] = "GET"
    settings.DEBUG = True
    status, headers, body = await _call(McpFront(get_asgi_application()), css, [b""])
    assert status == 200
    assert b"text/css" in {k.lower(): v for k, v in headers.items()}[b"content-type"]
    assert b"body" in body
    settings.DEBUG = False
    status, _, _ = await _call(McpFront(get_asgi_application()), css, [b""])
    assert status == 404
    status, _, _ = await _call(McpFront(get_asgi_application(), static=True), css, [b""])
    assert status == 200
