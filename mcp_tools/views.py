"""The Streamable HTTP endpoint: HTTP and SSE in and out; the protocol lives elsewhere."""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
from django.core.exceptions import DisallowedHost, RequestDataTooBig
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from . import services
from .auth import AuthFailure, get_auth_backend
from .conf import mcp_settings
from .models import McpSession
from .notify.hub import Listener, acquire_stream_slot, get_hub, release
from .protocol import errors as e
from .protocol import sse
from .protocol import versions as v
from .protocol.errors import McpError
from .protocol.jsonrpc import (
    Message,
    Notification,
    Request,
    Response,
    encode_error,
    encode_notification,
    encode_result,
    load_json,
    parse_message,
    readable_id,
)
from .protocol.negotiation import check_legacy_version_header, is_modern, read_modern_meta
from .services import CancelFlag, Exchange, SessionNotFound
from .task_service import StillWorking
from .threads import run_sync, start_sync
from .types import Principal

logger = logging.getLogger("mcp_tools")

ALLOW = "GET, POST, DELETE, OPTIONS"
BASE_ALLOWED_HEADERS = (
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
)
EXPOSED_HEADERS = "Mcp-Session-Id, WWW-Authenticate"

Emit = Callable[[bytes], None]


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stream: Callable[[], AsyncGenerator[bytes, None]] | None = None
    # Called once the reply is done with, sent or not (a stream that never started still
    # holds its slot); whoever sends the reply calls it.
    on_close: Callable[[], None] | None = None


def _error_reply(exc: McpError, request_id: Any = None) -> Reply:
    return Reply(exc.http_status, encode_error(request_id, exc), dict(exc.headers))


def _plain_error(status: int, code: int, message: str) -> Reply:
    return _error_reply(McpError(code, message, http_status=status))


# --------------------------------------------------------------------------- HTTP checks


def _check_host_and_origin(request: HttpRequest) -> Reply | None:
    """H-2: DNS-rebinding defence. A bad Host or a foreign Origin gets 403."""
    try:
        host = request.get_host()
    except DisallowedHost:
        return _plain_error(403, e.INVALID_REQUEST, "Forbidden: Host not allowed")
    origin = request.headers.get("origin")
    if origin is None or _origin_allowed(origin, host, request.scheme or "http"):
        return None
    return _plain_error(403, e.INVALID_REQUEST, "Forbidden: Origin not allowed")


def _origin_allowed(origin: str, host: str, scheme: str) -> bool:
    allowed = mcp_settings.ALLOWED_ORIGINS
    if "*" in allowed or origin in allowed:
        return True
    parts = urlsplit(origin)
    return parts.netloc == host and parts.scheme == scheme


def _accepts(request: HttpRequest, media_type: str) -> bool:
    accept = request.headers.get("accept")
    if not accept:
        return True
    kinds = {item.split(";", 1)[0].strip().lower() for item in accept.split(",")}
    major = media_type.split("/", 1)[0]
    return bool(kinds & {media_type, f"{major}/*", "*/*"})


def _cors_headers(request: HttpRequest) -> dict[str, str]:
    origin = request.headers.get("origin")
    if not origin:
        return {}
    return {"Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": EXPOSED_HEADERS, "Vary": "Origin"}


def _preflight(request: HttpRequest) -> Reply:
    asked = request.headers.get("access-control-request-headers", "")
    names = [h.strip().lower() for h in asked.split(",") if h.strip()]
    allowed = [h for h in names if h in BASE_ALLOWED_HEADERS or h.startswith("mcp-param-")]
    return Reply(
        204,
        headers={
            "Access-Control-Allow-Methods": ALLOW,
            "Access-Control-Allow-Headers": ", ".join(allowed or BASE_ALLOWED_HEADERS),
            "Access-Control-Max-Age": str(mcp_settings.CORS_MAX_AGE),
        },
    )


def _headers(request: HttpRequest) -> dict[str, str]:
    return {key.lower(): value for key, value in request.headers.items()}


# --------------------------------------------------------------------------- the endpoint


async def respond(request: HttpRequest) -> Reply:
    """The endpoint's answer with every header set; the view (or the ASGI front) sends it."""
    refused = _check_host_and_origin(request)
    if refused is not None:
        reply = refused
    elif request.method == "OPTIONS":
        reply = _preflight(request)
    elif request.method == "POST":
        reply = await _post(request)
    elif request.method == "GET":
        reply = await _get(request)
    elif request.method == "DELETE":
        reply = await _delete(request)
    else:
        reply = Reply(405, headers={"Allow": ALLOW})
    headers = reply.headers = dict(reply.headers)  # never a shared dict
    if reply.stream is not None:
        headers["Content-Type"] = "text/event-stream"
        headers["Cache-Control"] = "no-cache, no-transform"
        headers["X-Accel-Buffering"] = "no"  # H-D9
    elif reply.body:
        headers["Content-Type"] = "application/json"
    headers.update(_cors_headers(request))
    return reply


@csrf_exempt
async def endpoint(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    reply = await respond(request)
    response: HttpResponse | StreamingHttpResponse
    if reply.stream is not None:
        response = _StreamingResponse(reply.stream(), status=reply.status)
        response.on_close = reply.on_close
    else:
        response = HttpResponse(reply.body, status=reply.status)
        if not reply.body:
            del response["Content-Type"]
    for key, value in reply.headers.items():
        response[key] = value
    return response


class _StreamingResponse(StreamingHttpResponse):
    """Django closes every response it handled, sent or not (in a worker thread)."""

    on_close: Callable[[], None] | None = None

    def close(self) -> None:
        try:
            if self.on_close is not None:
                self.on_close()
        finally:
            super().close()


endpoint.login_required = False  # type: ignore[attr-defined]  # Django 5.1+ LoginRequiredMiddleware


async def _post(request: HttpRequest) -> Reply:
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json":
        return _plain_error(415, e.INVALID_REQUEST, "Unsupported Media Type: POST bodies must be application/json")
    if not (_accepts(request, "application/json") or _accepts(request, "text/event-stream")):
        return _plain_error(406, e.INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream")
    limit = mcp_settings.MAX_BODY_BYTES
    try:
        declared = int(request.headers.get("content-length") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return _plain_error(413, e.INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")
    try:
        body = request.body
    except RequestDataTooBig:  # DATA_UPLOAD_MAX_MEMORY_SIZE is below MAX_BODY_BYTES
        return _plain_error(413, e.INVALID_REQUEST, "Payload Too Large")
    if len(body) > limit:
        return _plain_error(413, e.INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")
    try:
        decoded = load_json(body)
    except McpError as exc:
        return _error_reply(exc)
    can_stream = _accepts(request, "text/event-stream")
    if isinstance(decoded, list):
        return await run_sync(_serve_batch, request, decoded)
    try:
        message = parse_message(decoded)
    except McpError as exc:
        return _error_reply(exc, readable_id(decoded))
    return await _serve_message(request, message, can_stream)


def _authenticate(request: HttpRequest) -> Principal:
    return get_auth_backend().authenticate(request)


def _auth_reply(exc: AuthFailure) -> Reply:
    body = orjson.dumps({"error": exc.error, "error_description": exc.description})
    return Reply(exc.status, body, {"Cache-Control": "no-store", **exc.headers})


async def _serve_message(request: HttpRequest, message: Message, can_stream: bool) -> Reply:
    if isinstance(message, Request) and message.method == "tasks/result":
        return await _await_task_result(request, message)
    if not (isinstance(message, Request) and message.method == "tools/call"):
        # Only a tool call can emit notifications before its result: no stream machinery.
        return await run_sync(_serve_sync, request, message, None, CancelFlag(None))
    # H-D8: a 2026-07-28 client that goes away cancels its call; H-16: a legacy one does not
    # (it cancels with notifications/cancelled), so its call runs to the end unheard.
    cancelled = CancelFlag(None)
    on_disconnect = cancelled.set if is_modern(message.params) else None
    outbox = _Outbox(asyncio.get_running_loop())
    work = start_sync(_serve_sync, request, message, outbox.emit if can_stream else None, cancelled)
    work.add_done_callback(outbox.wake)
    try:
        if not work.done():
            await outbox.wait()  # the result, or the first notification, whichever comes first
    except asyncio.CancelledError:
        if on_disconnect is not None:
            on_disconnect()
        raise
    if not outbox.items:
        return work.result()
    # The call emitted a notification before its result: answer with an SSE stream (H-7).
    return Reply(200, stream=lambda: _request_stream(outbox, work, on_disconnect))


class _Outbox:
    """Notifications a tool call emits from its thread, handed over to the event loop."""

    __slots__ = ("items", "loop", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.items: deque[bytes] = deque()
        self.waiter: asyncio.Future[None] | None = None

    def emit(self, data: bytes) -> None:  # in the handler's thread
        self.loop.call_soon_threadsafe(self._arrived, data)

    def _arrived(self, data: bytes) -> None:
        self.items.append(data)
        self.wake()

    def wake(self, _: object = None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def wait(self) -> None:
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None


async def _await_task_result(request: HttpRequest, message: Request) -> Reply:
    """T11-10: tasks/result waits for a working task on the event loop, not in a pool thread.

    Each look is one short trip to the thread pool; between looks the request holds nothing but
    a timer, and a client that goes away cancels the wait.
    """
    wait_until = time.monotonic() + float(mcp_settings.TASK_RESULT_WAIT_SECONDS)
    delay = 0.02
    while True:
        try:
            return await run_sync(_serve_sync, request, message, None, CancelFlag(None), wait_until)
        except StillWorking:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)


async def _request_stream(
    outbox: _Outbox, work: asyncio.Future[Reply], on_disconnect: Callable[[], None] | None
) -> AsyncGenerator[bytes, None]:
    try:
        while True:
            while outbox.items:
                yield sse.event(outbox.items.popleft())
            # Notifications are handed over before the result (one thread, FIFO callbacks), so
            # when the work is done, everything it emitted has been sent.
            if work.done():
                break
            await outbox.wait()
        reply = work.result()
        # A cancelled call ends its stream without a response (C-1).
        if reply.body:
            yield sse.event(reply.body)
    except (asyncio.CancelledError, GeneratorExit):
        if on_disconnect is not None:  # H-D8 (modern only; H-16)
            on_disconnect()
        raise


def _serve_sync(
    request: HttpRequest, message: Message, emit: Emit | None, cancelled: CancelFlag, wait_until: float = 0.0
) -> Reply:
    """Authenticate, pick the era, and serve one message (runs in a worker thread)."""
    try:
        principal = _authenticate(request)
    except AuthFailure as exc:
        return _auth_reply(exc)
    headers = _headers(request)
    asgi = isinstance(request, ASGIRequest)
    request_id = message.id if isinstance(message, Request) else None
    try:
        # V-2: a request carrying the 2026-07-28 _meta fields is modern whatever its method
        # (a modern "initialize" is a removed method: 404 + -32601).
        if isinstance(message, Request | Notification) and is_modern(message.params):
            return _serve_modern(message, principal, headers, emit, cancelled, asgi)
        if isinstance(message, Response) and headers.get("mcp-protocol-version") in v.MODERN_VERSIONS:
            # H-D2: 2026-07-28 clients never POST responses (the server sends no requests).
            raise e.invalid_request("Invalid Request: clients do not send JSON-RPC responses in 2026-07-28")
        if isinstance(message, Request) and message.method == "initialize":
            body, session_id = services.create_session(message, principal, asgi=asgi)
            return Reply(200, body, {"Mcp-Session-Id": session_id})
        return _serve_legacy(message, principal, headers, emit, cancelled, asgi, wait_until)
    except McpError as exc:
        return _error_reply(exc, request_id)
    except AuthFailure as exc:  # step-up for a tools/call
        return _auth_reply(exc)


def _serve_modern(
    message: Request | Notification,
    principal: Principal,
    headers: dict[str, str],
    emit: Emit | None,
    cancelled: CancelFlag,
    asgi: bool,
) -> Reply:
    if isinstance(message, Notification):
        # D defines no client notification over HTTP; an accepted one still gets 202 (H-D2).
        return Reply(202)
    meta = read_modern_meta(headers, message.method, message.params)
    ex = Exchange(meta.revision, principal, headers, modern=meta, emit=emit, cancelled=cancelled, asgi=asgi)
    if message.method == "subscriptions/listen":
        return _listen(message, ex)
    outcome = services.handle_request(message, ex)
    return Reply(200) if outcome is None else Reply(*outcome)


def _legacy_session(headers: dict[str, str], principal: Principal) -> McpSession:
    session_id = headers.get("mcp-session-id")
    if not session_id:
        if headers.get("mcp-protocol-version") in v.MODERN_VERSIONS:
            raise e.invalid_params("Missing params._meta protocol fields", http_status=400)
        raise e.invalid_request("Bad Request: missing Mcp-Session-Id header; send initialize first")
    try:
        session = services.load_session(session_id, principal)
    except SessionNotFound as exc:
        raise McpError(
            e.INVALID_REQUEST, "Session not found; start a new one with initialize", http_status=404
        ) from exc
    check_legacy_version_header(headers, session.protocol_version)
    return session


def _serve_legacy(
    message: Message,
    principal: Principal,
    headers: dict[str, str],
    emit: Emit | None,
    cancelled: CancelFlag,
    asgi: bool,
    wait_until: float,
) -> Reply:
    session = _legacy_session(headers, principal)
    rev = v.get_revision(session.protocol_version)
    if isinstance(message, Notification):
        _accept_notification(message, session)
        return Reply(202)
    if isinstance(message, Response):
        return Reply(202)
    # Legacy clients cancel with notifications/cancelled, possibly through another worker.
    cancelled.key = CancelFlag.cache_key(session.pk, message.id)
    ex = Exchange(
        rev, principal, headers, session=session, emit=emit, cancelled=cancelled, asgi=asgi, wait_until=wait_until
    )
    outcome = services.handle_request(message, ex)
    if outcome is None:
        return Reply(200, stream=_empty_stream)
    return Reply(*outcome)


async def _empty_stream() -> AsyncGenerator[bytes, None]:
    if False:  # pragma: no cover - makes this an async generator
        yield b""


def _accept_notification(message: Notification, session: McpSession) -> None:
    if message.method == "notifications/initialized":
        services.mark_initialized(session)
    elif message.method == "notifications/cancelled":
        services.cancel_request(session, message.params)


def _serve_batch(request: HttpRequest, items: list[Any]) -> Reply:
    """L-8: 2025-03-26 sessions accept arrays; later revisions refuse them."""
    if not items:
        return _plain_error(400, e.INVALID_REQUEST, "Invalid Request: empty batch")
    try:
        principal = _authenticate(request)
    except AuthFailure as exc:
        return _auth_reply(exc)
    headers = _headers(request)
    if any(isinstance(item, dict) and item.get("method") == "initialize" for item in items):
        return _plain_error(400, e.INVALID_REQUEST, "Invalid Request: initialize must not be part of a batch")
    try:
        session = _legacy_session(headers, principal)
    except McpError as exc:
        return _error_reply(exc)
    rev = v.get_revision(session.protocol_version)
    if not rev.batching:
        return _plain_error(400, e.INVALID_REQUEST, f"Invalid Request: JSON-RPC batches are not part of {rev.version}")
    responses: list[bytes] = []
    for item in items:
        try:
            message = parse_message(item)
        except McpError as exc:
            responses.append(encode_error(readable_id(item), exc))
            continue
        if isinstance(message, Notification):
            _accept_notification(message, session)
        elif isinstance(message, Request):
            ex = Exchange(rev, principal, headers, session=session, asgi=isinstance(request, ASGIRequest))
            try:
                outcome = services.handle_request(message, ex)
            except AuthFailure as exc:
                return _auth_reply(exc)
            if outcome is not None:
                responses.append(outcome[1])
    if not responses:
        return Reply(202)
    return Reply(200, b"[" + b",".join(responses) + b"]")


# --------------------------------------------------------------------------- long-lived streams

LIST_CHANGED_METHOD = "notifications/tools/list_changed"
LIST_CHANGED = encode_notification(LIST_CHANGED_METHOD)


def _too_many_streams() -> Reply:
    limit = mcp_settings.MAX_STREAMS_PER_PRINCIPAL
    message = f"Too many open notification streams (limit {limit})"
    return _error_reply(McpError(e.INVALID_REQUEST, message, http_status=429, headers={"Retry-After": "5"}))


def _listen(message: Request, ex: Exchange) -> Reply:
    """H-D10: acknowledge the honoured subset first, then keep the stream open."""
    wanted = message.params.get("notifications")
    if wanted is not None and not isinstance(wanted, dict):
        raise e.invalid_params("subscriptions/listen params.notifications must be an object")
    honoured: dict[str, Any] = {}
    if isinstance(wanted, dict) and wanted.get("toolsListChanged") is True and services.list_changed_supported(ex.asgi):
        honoured["toolsListChanged"] = True
    meta = {v.META_SUBSCRIPTION_ID: message.id}
    ack = encode_notification("notifications/subscriptions/acknowledged", {"_meta": meta, "notifications": honoured})
    final = encode_result(message.id, {"resultType": "complete", "_meta": meta})
    changed = encode_notification(LIST_CHANGED_METHOD, {"_meta": meta})
    principal = ex.principal
    listener = None
    if honoured:
        if not acquire_stream_slot(principal):
            return _too_many_streams()
        listener = Listener(principal, *services.tools_fingerprint(principal))

    async def stream() -> AsyncGenerator[bytes, None]:
        try:
            if listener is not None:
                get_hub().register(listener)
            yield sse.event(ack)
            async for event in _notifications(listener, changed):
                yield event
            yield sse.event(final)  # server-initiated end: the graceful listen result
        finally:
            if listener is not None:
                release(listener)

    return Reply(200, stream=stream, on_close=None if listener is None else lambda: release(listener))


async def _notifications(
    listener: Listener | None,
    event: bytes,
    claim: Callable[[], Awaitable[bool]] | None = None,
) -> AsyncGenerator[bytes, None]:
    """The body of a notification stream: list_changed when it applies, keep-alives between.

    Without a listener (list_changed not delivered here) only keep-alives, until the deadline.
    ``claim`` runs before each notification; False means another stream took over: end.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + mcp_settings.SSE_MAX_SECONDS
    interval = mcp_settings.SSE_KEEPALIVE_SECONDS
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        if listener is None:
            await asyncio.sleep(min(interval, remaining))
            wake = "idle"
        else:
            wake = await listener.next(min(interval, remaining))
        if wake == "closed":
            return
        if wake == "changed":
            if claim is not None and not await claim():
                return
            yield sse.event(event)
            get_hub().sent()
        elif loop.time() < deadline:
            yield sse.comment("keep-alive")


async def _get(request: HttpRequest) -> Reply:
    """H-11: the legacy standalone SSE stream; modern requests have none (H-D1)."""
    if not _accepts(request, "text/event-stream"):
        return _plain_error(406, e.INVALID_REQUEST, "Not Acceptable: GET needs Accept: text/event-stream")
    headers = _headers(request)
    if not headers.get("mcp-session-id"):
        return Reply(405, headers={"Allow": "POST, DELETE, OPTIONS"})
    asgi = isinstance(request, ASGIRequest)

    # H-9/H-11: a notification goes on one GET stream of the session, the newest: the session
    # row names it, so a stream on any worker learns it was superseded.
    token = secrets.token_hex(8)

    def prepare() -> Reply | tuple[McpSession, Listener | None, bool]:
        try:
            principal = _authenticate(request)
        except AuthFailure as exc:
            return _auth_reply(exc)
        try:
            session = _legacy_session(headers, principal)
        except McpError as exc:
            return _error_reply(exc)
        if not services.list_changed_supported(asgi):
            return session, None, False
        if not acquire_stream_slot(principal):
            return _too_many_streams()
        fingerprint, version = services.tools_fingerprint(principal)
        # A change the client missed while it had no stream open is sent at once.
        missed = bool(session.tools_fingerprint) and session.tools_fingerprint != fingerprint
        McpSession.objects.filter(pk=session.pk).update(tools_fingerprint=fingerprint, get_stream=token)
        return session, Listener(principal, fingerprint, version), missed

    found = await run_sync(prepare)
    if isinstance(found, Reply):
        return found
    session, listener, missed = found
    rev = v.get_revision(session.protocol_version)
    retry = mcp_settings.SSE_RETRY_MS

    def claim_sync(fingerprint: str) -> bool:
        # One UPDATE: still the session's stream? Then record what the client is about to hear.
        return bool(McpSession.objects.filter(pk=session.pk, get_stream=token).update(tools_fingerprint=fingerprint))

    async def claim() -> bool:
        assert listener is not None
        return await run_sync(claim_sync, listener.fingerprint)

    async def stream() -> AsyncGenerator[bytes, None]:
        try:
            if rev.sse_priming:
                yield sse.priming(f"{session.pk[:8]}-get-{token}", retry_ms=retry)
            if listener is not None:
                get_hub().register(listener)
                if missed:
                    yield sse.event(LIST_CHANGED)
                    get_hub().sent()
            async for event in _notifications(listener, LIST_CHANGED, claim):
                yield event
            if rev.sse_priming:
                # H-12: say when to come back before closing the connection.
                yield b"retry: " + str(retry).encode() + b"\n\n"
        finally:
            if listener is not None:
                release(listener)

    return Reply(200, stream=stream, on_close=None if listener is None else lambda: release(listener))


async def _delete(request: HttpRequest) -> Reply:
    headers = _headers(request)
    session_id = headers.get("mcp-session-id")
    if not session_id:
        return _plain_error(400, e.INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header")

    def end() -> Reply:
        try:
            principal = _authenticate(request)
        except AuthFailure as exc:
            return _auth_reply(exc)
        if services.end_session(session_id, principal):
            return Reply(204)
        return _plain_error(404, e.INVALID_REQUEST, "Session not found")

    return await run_sync(end)
