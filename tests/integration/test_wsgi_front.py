"""mcp_tools.wsgi.McpWsgiFront in process: JSON POSTs answered in the calling thread, the rest
handed to the site with its body intact. Under a real gunicorn: tests/e2e/test_audit_flush.py."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
from django.db import connection
from django.test import RequestFactory

from mcp_tools.models import AuditEvent
from mcp_tools.wsgi import McpWsgiFront
from tests.support.audit_rows import record_echo
from tests.support.mcp_client import MODERN, modern_meta

pytestmark = pytest.mark.django_db


class Inner:
    """Stands for the Django application behind the front."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes]] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        self.seen.append((environ["REQUEST_METHOD"], environ["wsgi.input"].read(length)))
        start_response("204 No Content", [])
        return []


def _environ(method: str, body: dict[str, Any] | None = None, **headers: str) -> dict[str, Any]:
    raw = json.dumps(body).encode() if body is not None else b""
    factory = RequestFactory()
    environ = factory._base_environ(  # type: ignore[attr-defined]
        PATH_INFO="/mcp",
        REQUEST_METHOD=method,
        CONTENT_TYPE="application/json",
        CONTENT_LENGTH=str(len(raw)),
        HTTP_ACCEPT="application/json, text/event-stream",
        HTTP_MCP_PROTOCOL_VERSION=MODERN,
        **{f"HTTP_{k.upper()}": v for k, v in headers.items()},
    )
    environ["wsgi.input"] = io.BytesIO(raw)
    return environ


def _run(app: McpWsgiFront, environ: dict[str, Any]) -> tuple[str, dict[str, str], bytes]:
    status: list[str] = []
    headers: dict[str, str] = {}

    def start_response(line: str, pairs: list[tuple[str, str]]) -> None:
        status.append(line)
        headers.update(pairs)

    body = b"".join(app(environ, start_response))
    return status[0], headers, body


def _call(name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments, "_meta": modern_meta(**meta)}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def test_a_tool_call_is_answered_by_the_front(demo_tools: None) -> None:
    inner = Inner()
    environ = _environ("POST", _call("echo", {"text": "wsgi"}), MCP_METHOD="tools/call", MCP_NAME="echo")
    status, headers, body = _run(McpWsgiFront(inner, "/mcp"), environ)
    assert inner.seen == []
    assert status == "200 OK"
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body)
    reply = json.loads(body)
    assert reply["id"] == 7
    assert reply["result"]["content"][0]["text"] == "wsgi"
    assert AuditEvent.objects.filter(tool_name="echo", request_id="7", outcome="ok").count() == 1


def test_refusals_and_preflight_are_answered_by_the_front(demo_tools: None) -> None:
    inner = Inner()
    front = McpWsgiFront(inner, "/mcp")
    bad_origin = _environ("POST", _call("echo", {"text": "x"}), ORIGIN="http://evil.example")
    assert _run(front, bad_origin)[0].startswith("403")
    environ = _environ("POST", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}})
    environ["CONTENT_TYPE"] = "text/plain"
    assert _run(front, environ)[0].startswith("415")
    assert _run(front, _environ("OPTIONS", ORIGIN="http://testserver"))[0].startswith("20")
    assert inner.seen == []


def test_what_needs_a_stream_goes_to_the_site_with_its_body(demo_tools: None) -> None:
    inner = Inner()
    front = McpWsgiFront(inner, "/mcp")
    progress = _call("echo", {"text": "p"}, progressToken="t")
    status, _, _ = _run(front, _environ("POST", progress, MCP_METHOD="tools/call", MCP_NAME="echo"))
    assert status == "204 No Content"
    assert inner.seen == [("POST", json.dumps(progress).encode())]
    _run(front, _environ("GET"))
    other = _environ("POST", _call("echo", {"text": "x"}))
    other["PATH_INFO"] = "/admin/"
    _run(front, other)
    assert [method for method, _ in inner.seen] == ["POST", "GET", "POST"]


def test_the_front_checks_every_connection_of_its_thread(demo_tools: None) -> None:
    from django.db import connections

    from mcp_tools.models.tools import _connection
    from mcp_tools.transport import wsgi

    front = McpWsgiFront(Inner(), "/mcp")
    for text in ("one", "two"):  # the second request reuses the list the first one left
        environ = _environ("POST", _call("echo", {"text": text}), MCP_METHOD="tools/call", MCP_NAME="echo")
        assert _run(front, environ)[0] == "200 OK"
        assert list(wsgi._in_thread.connections) == connections.all(initialized_only=True)
    assert _connection("default") is connections["default"]


def test_the_front_request_reads_the_body_as_django_does(settings: Any) -> None:
    from django.core.exceptions import RequestDataTooBig
    from django.core.handlers.wsgi import WSGIRequest
    from django.http.request import RawPostDataException

    from mcp_tools.transport.wsgi import _FrontRequest

    raw = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    for length in (len(raw), 10, 0):  # the declared length bounds what is read, as in Django
        environ = _environ("POST")
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(raw), str(length)
        theirs = WSGIRequest(dict(environ, **{"wsgi.input": io.BytesIO(raw)}))
        ours = _FrontRequest(environ)
        assert ours.body == theirs.body == raw[:length]
        assert ours.body is ours.body
        assert ours.read() == theirs.read() == raw[:length]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10
    over = _environ("POST")
    over["wsgi.input"], over["CONTENT_LENGTH"] = io.BytesIO(raw), str(len(raw))
    with pytest.raises(RequestDataTooBig):
        _ = _FrontRequest(over).body
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = None
    started = _FrontRequest(dict(over, **{"wsgi.input": io.BytesIO(raw)}))
    assert started.read(5) == raw[:5]
    with pytest.raises(RawPostDataException):
        _ = started.body
    unlimited = _FrontRequest(dict(over, **{"wsgi.input": io.BytesIO(raw)}))
    assert unlimited.body == raw


@pytest.mark.django_db(transaction=True)
def test_a_connection_past_conn_max_age_is_replaced_before_the_next_request(demo_tools: None) -> None:
    """As Django's handler does before a request: the front checks the connections its thread's
    last request left (it remembers them) and replaces one past CONN_MAX_AGE, so the request
    runs on a fresh connection that stays open after it. Had only the check after the request
    run, the old connection would have served it and been closed at its end."""
    from django.db import connection

    if connection.vendor == "sqlite":
        pytest.skip("in-memory SQLite ignores close(); the PostgreSQL pass of make test runs this")
    front = McpWsgiFront(Inner(), "/mcp")

    def call() -> None:
        environ = _environ("POST", _call("echo", {"text": "x"}), MCP_METHOD="tools/call", MCP_NAME="echo")
        status, _, body = _run(front, environ)
        assert status == "200 OK", body

    call()  # the thread's connection is now open and remembered by the front
    old = connection.connection
    assert old is not None
    connection.close_at = time.monotonic() - 1  # past CONN_MAX_AGE while idle between requests
    call()
    assert connection.connection is not None  # not closed after the request: it was fresh
    assert connection.connection is not old


@pytest.mark.django_db(transaction=True)
def test_a_full_audit_batch_is_written_after_the_answer_is_sent(demo_tools: None, settings: Any) -> None:
    """The front records inside ``audit.deferred()``: a full batch is not handed to the writer
    thread in the middle of a request (the threads share the GIL) but written when the server
    closes the answer (PEP 3333), in the request's thread. Rows recorded outside a front still
    wake the writer thread as soon as a batch is full."""
    from mcp_tools import audit

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 3, "AUDIT_FLUSH_SECONDS": 600}
    audit.flush()
    # Rows an earlier test left in this process's buffer are written by that flush, after the
    # earlier test's table was emptied (CI's PostgreSQL pass once found 45 here): they are not
    # this test's, which counts from here.
    before = AuditEvent.objects.count()
    sessions = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    sessions_before = _fetch_count(sessions) if connection.vendor == "postgresql" else 0
    front = McpWsgiFront(Inner())
    answers = []
    for n in range(3):
        environ = _environ("POST", _call("echo", {"text": f"held {n}"}), MCP_METHOD="tools/call", MCP_NAME="echo")
        answer = front(environ, lambda status, headers: None)
        assert b"held" in b"".join(answer)
        answers.append(answer)
    time.sleep(0.5)  # the writer thread, woken, would have written them by now
    assert AuditEvent.objects.count() == before
    for answer in answers[:2]:
        answer.close()  # type: ignore[attr-defined]  # as the server does once each is sent
    assert AuditEvent.objects.count() == before + 3  # the first close() wrote the full batch

    for n in range(3):
        record_echo("outside", f"outside-{n}")
    deadline = time.monotonic() + 5
    while AuditEvent.objects.filter(principal_key="outside").count() < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert AuditEvent.objects.filter(principal_key="outside").count() == 3
    if connection.vendor == "postgresql":
        # With nothing left to write the writer thread closes its connection (it held one per
        # process for CONN_MAX_AGE, and kept the test database from being dropped).
        deadline = time.monotonic() + 5
        while _fetch_count(sessions) > sessions_before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _fetch_count(sessions) == sessions_before


def _fetch_count(sql: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_warm_builds_the_catalog_before_any_request_and_leaves_no_connection_open(demo_tools: None) -> None:
    """``warm()`` (the demo's wsgi.py and asgi.py call it) builds the current catalog, with its
    compiled tools, in the process that gunicorn --preload forks the workers from; a connection
    must not cross the fork, so none stays open (in-memory SQLite ignores close())."""
    from mcp_tools import catalog
    from mcp_tools.models import CatalogVersion

    sessions = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    postgres = connection.vendor == "postgresql"
    before = _fetch_count(sessions) if postgres else 0
    catalog.reset()
    front = McpWsgiFront(Inner())
    assert front.warm() is True
    if postgres:
        # Its own connection, closed: a backend leaves pg_stat_activity a moment after its client
        # closed the connection (listed still in 58 of 200 closes here), so the count may lag.
        deadline = time.monotonic() + 5
        while _fetch_count(sessions) > before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _fetch_count(sessions) == before
    built = catalog._current
    assert built is not None
    assert built.version == CatalogVersion.current()
    assert "echo" in {tool.name for tool in built.tools}
    # The first request uses it as it is (same version: nothing rebuilt).
    environ = _environ("POST", _call("echo", {"text": "warm"}), MCP_METHOD="tools/call", MCP_NAME="echo")
    status, _, body = _run(front, environ)
    assert status == "200 OK", body
    assert b"warm" in body
    assert catalog._current is built


@pytest.mark.django_db(transaction=True)
def test_warm_leaves_only_the_cache_backend_in_the_context_it_is_called_from(demo_tools: None) -> None:
    """uvicorn imports asgi.py (which calls warm()) in the context its request tasks inherit:
    an asgiref Local set there is copied and re-homed by asgiref on every hop of every request
    to a pool thread. Populating the URL resolvers set one per resolver (27 context variables
    per tools/call through the ASGI front, about a quarter of its function calls); the cache
    backend's is left there on purpose (requests share the backend, and its connection pool)."""
    import contextvars

    from django.core.cache import DEFAULT_CACHE_ALIAS, caches

    from mcp_tools import catalog

    catalog.reset()
    cache_only = contextvars.Context()
    cache_only.run(lambda: caches[DEFAULT_CACHE_ALIAS])
    context = contextvars.Context()  # as the importing context starts: empty
    assert context.run(McpWsgiFront(Inner()).warm) is True
    assert len(list(context)) == len(list(cache_only)) == 1
    assert catalog._current is not None


@pytest.mark.django_db
def test_warm_leaves_the_callers_open_connection_and_transaction_alone(demo_tools: None) -> None:
    """warm() runs in the calling thread outside an event loop: it closes what it opened, not a
    connection the caller holds (closing it inside the caller's transaction broke the transaction:
    the next query raised TransactionManagementError)."""
    from mcp_tools import catalog
    from mcp_tools.models import CatalogVersion

    if connection.vendor == "sqlite":
        pytest.skip("in-memory SQLite ignores close(); the PostgreSQL pass of make test runs this")
    version = CatalogVersion.current()  # the caller's connection is open, in this test's transaction
    assert connection.in_atomic_block
    catalog.reset()
    assert McpWsgiFront(Inner()).warm() is True
    assert connection.connection is not None
    assert CatalogVersion.current() == version  # the transaction still answers


def test_warm_with_a_database_that_cannot_answer_logs_and_leaves_the_catalog_to_the_first_request(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A site whose database is not migrated or not reachable yet still starts (``runserver``
    imports wsgi.py before ``migrate`` on a fresh checkout): the fault is injected."""
    from django.db import OperationalError

    from mcp_tools import catalog
    from mcp_tools.models import CatalogVersion

    def refuse() -> int:
        raise OperationalError("no such table: mcp_tools_catalogversion")

    monkeypatch.setattr(CatalogVersion, "current", staticmethod(refuse))
    catalog.reset()
    with caplog.at_level("WARNING", logger="mcp_tools"):
        assert McpWsgiFront(Inner()).warm() is False
    assert "the catalog is built on the first request instead (no such table" in caplog.text
    assert catalog._current is None


@pytest.mark.django_db(transaction=True)
def test_warm_inside_a_running_event_loop(demo_tools: None) -> None:
    """uvicorn imports the site's asgi.py inside its event loop, where Django refuses database
    work in the loop's thread (SynchronousOnlyOperation): warm() reads in a thread of its own."""
    import asyncio

    from mcp_tools import catalog
    from mcp_tools.asgi import McpFront

    async def start_up() -> bool:
        return McpFront(Inner()).warm()  # type: ignore[arg-type]  # never called: only warmed

    catalog.reset()
    assert asyncio.run(start_up()) is True
    assert catalog._current is not None
