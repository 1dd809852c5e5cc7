"""SERVE_ON_LOOP: where every store is in the process, short requests are served on the event
loop's thread (issue 37: the ASGI p99 came from the hand-over to a pool thread and back).

Each test runs twice in CI: on SQLite (the fast suite: every store in the process, so an inline
tool's call runs on the loop's thread) and on PostgreSQL (a database server: never on the loop).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from mcp_tools import audit, threads
from mcp_tools.asgi import McpFront
from mcp_tools.auth import AllowAnyBackend
from mcp_tools.models import AuditEvent, Tool
from mcp_tools.protocol.jsonrpc import Request
from mcp_tools.protocol.task_wire import TASKS_EXTENSION
from mcp_tools.protocol.versions import META_CLIENT_CAPABILITIES, META_LOG_LEVEL
from mcp_tools.registry import ToolKind, registry
from mcp_tools.transport import waits
from tests.integration.test_asgi_front import Inner, _call, _scope
from tests.support.mcp_client import modern_meta
from tests.support.otel import Providers, otel_fixture, server_spans  # noqa: F401  (the otel fixture)

pytestmark = pytest.mark.anyio

POOL_PREFIX = "mcp-tools-"  # the pools' thread names (mcp_tools.threads)


def _where(ctx: Any) -> str:
    return threading.current_thread().name


@pytest.fixture(autouse=True)
def kinds(settings: Any, transactional_db: None) -> Iterator[None]:
    # The test settings run the ORM in the test's thread (THREAD_SENSITIVE) for its transaction;
    # served as a site is served, with the pools.
    # Audit rows batched, as a site's are (the test settings write each at once, which keeps
    # a request off the loop: a write may wait for another process's lock).
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "THREAD_SENSITIVE": False, "AUDIT_FLUSH_ROWS": 100}
    registry.register(ToolKind("test.where_inline", _where, inline=True))
    registry.register(ToolKind("test.where_pooled", _where))
    yield
    registry.unregister("test.where_inline")
    registry.unregister("test.where_pooled")
    audit.flush()  # the batched rows, while the database is there (the writer thread would retry)


def _tool(name: str, key: str) -> Tool:
    return Tool.objects.create(name=name, description="Where it ran.", handler_key=key, input_schema={"type": "object"})


def _headers(name: str) -> list[tuple[bytes, bytes]]:
    """A 2026-07-28 tools/call's headers (stateless: no session): the front tests' tools/list ones, retargeted."""
    listing = [(key, value) for key, value in _scope()["headers"] if key != b"mcp-method"]
    return [*listing, (b"mcp-method", b"tools/call"), (b"mcp-name", name.encode())]


def _body(name: str) -> bytes:
    params = {"name": name, "arguments": {}, "_meta": modern_meta()}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}).encode()


async def _run(name: str) -> dict[str, Any]:
    status, _, answer = await _call(McpFront(Inner()), _scope(headers=_headers(name)), [_body(name)])
    assert status == 200, answer
    result: dict[str, Any] = json.loads(answer)["result"]
    return result


def _in_process() -> bool:
    return connection.vendor == "sqlite"


@pytest.mark.django_db(transaction=True)
async def test_an_inline_kinds_call_runs_on_the_loops_thread_only_where_every_store_is_in_the_process() -> None:
    from asgiref.sync import sync_to_async

    await sync_to_async(_tool)("inline", "test.where_inline")
    await sync_to_async(_tool)("pooled", "test.where_pooled")
    here = threading.current_thread().name
    await _run("inline")  # the first call after a change goes to a pool thread: it builds the catalog
    inline = (await _run("inline"))["content"][0]["text"]
    pooled = (await _run("pooled"))["content"][0]["text"]
    assert pooled.startswith(POOL_PREFIX)  # a kind not declared inline: always a pool thread
    if _in_process():
        assert inline == here
    else:  # PostgreSQL: a round trip to a server never blocks the loop
        assert inline.startswith(POOL_PREFIX)
    assert threads.stores_in_process() is _in_process()


@pytest.fixture
def handed_over(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per request tried on the loop's thread: True when it was handed to a pool thread."""
    from mcp_tools.transport import views

    tried: list[bool] = []
    serve = views.serve_on_loop

    def spy(*args: Any) -> Any:
        reply = serve(*args)
        tried.append(reply is None)
        return reply

    monkeypatch.setattr(views, "serve_on_loop", spy)
    return tried


async def _audited(name: str) -> int:
    from asgiref.sync import sync_to_async

    await sync_to_async(audit.flush)()
    return int(await sync_to_async(AuditEvent.objects.filter(tool_name=name).count)())


@pytest.mark.django_db(transaction=True)
async def test_a_call_whose_tool_left_its_inline_kind_goes_to_a_pool_thread_audited_once(
    handed_over: list[bool], otel: type[Providers]
) -> None:
    """The hint reads the catalog built last; the request that finds a newer version hands
    itself to a pool thread (no catalog is built on the loop) before anything is counted or
    audited, and is served there once."""
    from asgiref.sync import sync_to_async

    tool = await sync_to_async(_tool)("moved", "test.where_inline")
    await _run("moved")  # builds the catalog with the tool on its inline kind
    await _run("moved")  # (and one more span before the request that matters)
    await sync_to_async(Tool.objects.filter(pk=tool.pk).update)(handler_key="test.where_pooled")
    await sync_to_async(_bump)()
    before = await _audited("moved")
    handed_over.clear()
    where = (await _run("moved"))["content"][0]["text"]
    assert where.startswith(POOL_PREFIX)
    assert await _audited("moved") == before + 1
    assert handed_over == ([True] if _in_process() else [])
    # The try on the loop ends its span marked as handed over; the pool's span is the call's.
    marked = [span.attributes.get("mcp_tools.handed_over") for span in server_spans()[-2:]]
    assert marked == ([True, None] if _in_process() else [None, None])


@pytest.mark.django_db(transaction=True)
async def test_a_tool_some_callers_may_not_see_takes_the_pools_path_as_an_unknown_name_does(
    handed_over: list[bool],
) -> None:
    """An inline kind's tool with a required scope is not tried on the loop: for a caller who may
    not see it, its refusal then takes the path of an unknown name's (the pool), so neither the
    answer nor its timing tells them apart."""
    from asgiref.sync import sync_to_async

    tool = await sync_to_async(_tool)("scoped", "test.where_inline")
    await sync_to_async(_require_scope)(tool)
    await _run("scoped")  # the catalog of this version, built on a pool thread
    handed_over.clear()
    where = (await _run("scoped"))["content"][0]["text"]
    assert where.startswith(POOL_PREFIX)
    status, _, answer = await _call(McpFront(Inner()), _scope(headers=_headers("nope")), [_body("nope")])
    assert status == 200
    assert json.loads(answer)["error"]["code"] == -32602
    assert handed_over == []  # neither was tried on the loop
    request: Any = _FakeRequest()
    assert not waits.fits_loop(request, Request(1, "tools/call", {"name": "scoped"}))
    assert not waits.fits_loop(request, Request(1, "tools/call", {"name": "nope"}))


def _require_scope(tool: Tool) -> None:
    from mcp_tools.models import Scope

    tool.required_scopes.add(Scope.objects.create(name="loop:test"))


@pytest.mark.django_db(transaction=True)
async def test_the_loop_is_given_back_whatever_the_work_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_journals", True)

    def boom() -> None:
        assert threads.on_loop()
        raise ValueError("boom")

    loop = asyncio.get_running_loop()
    with pytest.raises(ValueError, match="boom"):
        threads.run_on_loop(boom)
    assert asyncio.get_running_loop() is loop
    assert not threads.on_loop()


@pytest.mark.django_db(transaction=True)
async def test_a_database_whose_readers_may_wait_keeps_every_request_off_the_loop(
    monkeypatch: pytest.MonkeyPatch, handed_over: list[bool]
) -> None:
    """The journal mode is asked on the first request served on the loop: one whose readers
    wait for writers (not WAL, not memory) hands that request over and keeps the rest off."""
    from asgiref.sync import sync_to_async

    await sync_to_async(_tool)("inline", "test.where_inline")
    await _run("inline")
    monkeypatch.setattr(threads, "_READ_NEVER_WAITS", frozenset({"none of them"}))
    monkeypatch.setattr(threads, "_journals", None)
    handed_over.clear()
    for _ in range(2):
        assert (await _run("inline"))["content"][0]["text"].startswith(POOL_PREFIX)
    assert handed_over == ([True] if _in_process() else [])
    assert not threads.stores_in_process()
    monkeypatch.setattr(threads, "_in_process", None)  # (what a settings change does)
    monkeypatch.setattr(threads, "_journals", None)


class RemoteBackend(AllowAnyBackend):
    """An auth backend that says it reaches beyond the process (as JWTBackend fetches its keys)."""

    in_process = False


def _bump() -> None:
    from mcp_tools.models import CatalogVersion

    CatalogVersion.bump()  # the next request reads the new version; the hint has the old catalog


class _FakeRequest:
    META: dict[str, str] = {}


@pytest.mark.django_db(transaction=True)
async def test_what_is_never_served_on_the_loop(settings: Any) -> None:
    from asgiref.sync import sync_to_async

    await sync_to_async(_tool)("inline", "test.where_inline")
    await _run("inline")
    request: Any = _FakeRequest()
    plain = Request(1, "tools/call", {"name": "inline", "arguments": {}})
    assert waits.fits_loop(request, plain) is _in_process()
    assert waits.fits_loop(request, Request(1, "tools/list", {})) is _in_process()
    # A session's request, one with a progress token, a task, another method, an unknown tool.
    session: Any = type("S", (), {"META": {"HTTP_MCP_SESSION_ID": "x"}})()
    assert not waits.fits_loop(session, plain)
    progress = Request(1, "tools/call", {"name": "inline", "_meta": {"progressToken": 1}})
    assert not waits.fits_loop(request, progress)
    assert not waits.fits_loop(request, Request(1, "tools/call", {"name": "inline", "task": {}}))
    assert not waits.fits_loop(request, Request(1, "tasks/get", {"taskId": "x"}))
    tasks = modern_meta(**{META_CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}})
    assert not waits.fits_loop(request, Request(1, "tools/call", {"name": "inline", "_meta": tasks}))
    served = settings.MCP_TOOLS
    settings.MCP_TOOLS = {**served, "AUTH_BACKEND": "tests.integration.test_serve_on_loop.RemoteBackend"}
    assert not waits.fits_loop(request, plain)
    settings.MCP_TOOLS = served
    assert waits.fits_loop(request, plain) is _in_process()
    assert not waits.fits_loop(request, Request(1, "tools/call", {"name": ["inline"]}))
    # A cache server, or the setting off: nothing on the loop.
    local = settings.CACHES
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://x"}}
    assert not waits.fits_loop(request, plain)
    settings.CACHES = local
    assert waits.fits_loop(request, plain) is _in_process()
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 1}  # each row written at once
    assert not waits.fits_loop(request, plain)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 100, "SERVE_ON_LOOP": False}
    assert not waits.fits_loop(request, plain)
    assert (await _run("inline"))["content"][0]["text"].startswith(POOL_PREFIX)


@pytest.mark.django_db(transaction=True)
async def test_an_inline_call_that_logs_answers_with_its_notifications_then_its_result() -> None:
    """Served on the loop's thread, the answer is what the pool's would be (H-7): the
    notifications the handler sent, then the result, as an SSE stream."""
    from asgiref.sync import sync_to_async

    def chatty(ctx: Any) -> str:
        ctx.log("info", "on my way")
        return threading.current_thread().name

    registry.register(ToolKind("test.chatty", chatty, inline=True))
    try:
        await sync_to_async(_tool)("chatty", "test.chatty")
        params = {"name": "chatty", "arguments": {}, "_meta": modern_meta(**{META_LOG_LEVEL: "info"})}
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}).encode()
        await _run("chatty")  # builds the catalog
        status, headers, answer = await _call(McpFront(Inner()), _scope(headers=_headers("chatty")), [body])
    finally:
        registry.unregister("test.chatty")
    assert status == 200
    assert headers[b"content-type"] == b"text/event-stream"
    events = [json.loads(line[5:]) for line in answer.decode().splitlines() if line.startswith("data:")]
    assert events[0]["method"] == "notifications/message"
    assert events[-1]["id"] == 9
    ran = events[-1]["result"]["content"][0]["text"]
    assert (ran == threading.current_thread().name) is _in_process()
