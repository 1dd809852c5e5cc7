"""The Streamable HTTP endpoint: POST, GET and DELETE in, JSON or SSE out; the protocol lives elsewhere."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.exceptions import RequestDataTooBig
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from .. import services, telemetry
from ..auth import AuthFailure
from ..cancel import CancelFlag
from ..conf import mcp_settings
from ..notify.hub import StreamSlot, take_stream_slot
from ..protocol import errors as e
from ..protocol import sse
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import (
    Message,
    Notification,
    Request,
    Response,
    TooDeep,
    encode_error,
    load_json,
    parse_message,
    readable_id,
)
from ..protocol.negotiation import is_modern, read_modern_meta
from ..services import Exchange
from ..tasking import ResultWatch, StillWorking
from ..threads import run_handler, run_sync, start_handler
from ..types import Principal
from .replies import (
    ALLOW,
    Emit,
    Reply,
    accepts,
    auth_reply,
    authenticate,
    check_host_and_origin,
    cors_headers,
    error_reply,
    legacy_session,
    plain_error,
    preflight,
    read_id_rule,
    request_headers,
)
from .streams import serve_get, serve_listen, too_many_streams

__all__ = ["endpoint", "respond", "respond_sync"]

logger = logging.getLogger("mcp_tools")
T = TypeVar("T")


# --------------------------------------------------------------------------- the endpoint


async def respond(request: HttpRequest) -> Reply:
    """The endpoint's answer with every header set; the view (or the ASGI front) sends it."""
    read_id_rule(request)
    refused = check_host_and_origin(request)
    if refused is not None:
        reply = refused
    elif request.method == "OPTIONS":
        reply = preflight(request)
    elif request.method == "POST":
        reply = await _post(request)
    elif request.method == "GET":
        reply = await serve_get(request)
    elif request.method == "DELETE":
        reply = await _delete(request)
    else:
        reply = Reply(405, headers={"Allow": ALLOW})
    return _with_headers(reply, request)


def _with_headers(reply: Reply, request: HttpRequest) -> Reply:
    """The answer's media type, stream and CORS headers, on a dict of its own."""
    headers = reply.headers = dict(reply.headers)  # never a shared dict
    if reply.stream is not None:
        headers["Content-Type"] = "text/event-stream"
        headers["Cache-Control"] = "no-cache, no-transform"
        headers["X-Accel-Buffering"] = "no"  # H-D9
    elif reply.body:
        headers["Content-Type"] = "application/json"
    headers.update(cors_headers(request))
    return reply


@csrf_exempt
async def endpoint(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    if not isinstance(request, ASGIRequest) and not mcp_settings.THREAD_SENSITIVE:
        # (THREAD_SENSITIVE, for test suites, keeps the ORM in the test's thread: the whole
        # answer is made in the view, as before, and Django reads a stream whole.)
        return await _wsgi_endpoint(request)
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


async def _wsgi_endpoint(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The endpoint under a WSGI server (``runserver``, gunicorn without the WSGI front).

    Django runs an async view there on an event loop of its own that ends with the view, and
    would read a streamed answer whole before sending a byte (the warning "StreamingHttpResponse
    must consume asynchronous iterators"): a GET stream sent nothing for ``SSE_MAX_SECONDS``, and
    its threads kept ``runserver`` from reloading. What needs no loop is answered as the WSGI
    front answers it; the rest runs on the process's stream loop in a daemon thread
    (:class:`_LoopThread`), and a stream is handed to the server as a synchronous iterator,
    chunk by chunk: a client that went away is noticed on the next write (a keep-alive
    at the latest), and the daemon thread never holds up the process's exit.
    """
    reply = await run_sync(respond_sync, request)
    runner = _LoopThread.get()
    if reply is None:
        reply = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(respond(request), runner.loop))
    if reply.stream is None:
        return _plain_response(reply)
    response = _StreamingResponse(runner.iterate(reply.stream), status=reply.status)
    response.on_close = reply.on_close
    for key, value in reply.headers.items():
        response[key] = value
    return response


def _plain_response(reply: Reply) -> HttpResponse:
    response = HttpResponse(reply.body, status=reply.status)
    if not reply.body:
        del response["Content-Type"]
    for key, value in reply.headers.items():
        response[key] = value
    if reply.on_close is not None:
        reply.on_close()
    return response


class _LoopThread:
    """The event loop that serves this process's streamed answers under WSGI: one per process,
    in a daemon thread, started on first use (the notification hub lives on it, as on an ASGI
    server's loop). Each request thread drives its own stream on it, chunk by chunk."""

    _current: _LoopThread | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="mcp-tools-wsgi-streams", daemon=True)
        self._thread.start()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._lock:
            if cls._current is None or not cls._current._thread.is_alive():
                cls._current = cls()
            return cls._current

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def iterate(self, stream: Callable[[], AsyncGenerator[bytes, None]]) -> Iterator[bytes]:
        """The stream's chunks, each produced on the loop; closing the iterator (the server
        does when the client is gone) closes the stream."""
        chunks = stream()
        try:
            # A WSGI server sends the status and headers with the first bytes of the body: an SSE
            # comment (ignored by every client) sends them now, as an ASGI server does.
            yield b":\n\n"
            while True:
                try:
                    yield self.run(chunks.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            with contextlib.suppress(Exception):
                self.run(chunks.aclose(), timeout=10)


endpoint.login_required = False  # type: ignore[attr-defined]  # Django 5.1+ LoginRequiredMiddleware


def _read_post(request: HttpRequest) -> tuple[Reply | None, Any]:
    """A POST's media types, size and JSON checked: (a refusal, None) or (None, the JSON)."""
    content_type = request_headers(request).get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json":
        return plain_error(415, e.INVALID_REQUEST, "Unsupported Media Type: POST bodies must be application/json"), None
    if not (accepts(request, "application/json") or accepts(request, "text/event-stream")):
        return plain_error(406, e.INVALID_REQUEST, "Not Acceptable: accept application/json or text/event-stream"), None
    limit = mcp_settings.MAX_BODY_BYTES
    try:
        declared = int(request_headers(request).get("content-length") or 0)
    except ValueError:
        declared = 0
    if declared > limit:
        return plain_error(413, e.INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes"), None
    try:
        body = request.body
    except RequestDataTooBig:  # DATA_UPLOAD_MAX_MEMORY_SIZE is below MAX_BODY_BYTES
        return plain_error(413, e.INVALID_REQUEST, "Payload Too Large"), None
    if len(body) > limit:
        return plain_error(413, e.INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes"), None
    try:
        return None, load_json(body)
    except TooDeep as exc:  # it knows the id, and whether the message named a modern revision
        return error_reply(exc, exc.request_id, modern=exc.modern), None
    except McpError as exc:
        return error_reply(exc), None


async def _post(request: HttpRequest) -> Reply:
    refused, decoded = _read_post(request)
    if refused is not None:
        return refused
    can_stream = accepts(request, "text/event-stream")
    if isinstance(decoded, list):
        batch = _batch_of(decoded)
        del decoded  # a batch over the bound is let go here, before the thread hop
        return await run_handler(_serve_batch, request, batch)  # a batch may call tools
    try:
        message = parse_message(decoded)
    except McpError as exc:
        return error_reply(exc, readable_id(decoded))
    return await _serve_message(request, message, can_stream)


def respond_sync(request: HttpRequest) -> Reply | None:
    """The endpoint's answer to a POST or OPTIONS without an event loop (the WSGI front), or
    None when the request needs one: GET and DELETE, ``tasks/result`` (it may wait for the
    task), ``subscriptions/listen`` and a ``tools/call`` that asked for progress (streams).

    Everything else is answered as for a client that accepts only JSON: the same code as
    :func:`respond`, in the calling thread.
    """
    read_id_rule(request)
    reply = check_host_and_origin(request)
    if reply is None:
        if request.method == "OPTIONS":
            reply = preflight(request)
        elif request.method != "POST":
            return None
        else:
            reply, decoded = _read_post(request)
            if reply is None and isinstance(decoded, list):
                batch = _batch_of(decoded)
                del decoded
                reply = _serve_batch(request, batch)
            elif reply is None:
                try:
                    message = parse_message(decoded)
                except McpError as exc:
                    reply = error_reply(exc, readable_id(decoded))
                else:
                    if _needs_loop(message):
                        return None
                    reply = _serve_sync(request, message, None, CancelFlag(None))
    return _with_headers(reply, request)


def _needs_loop(message: Message) -> bool:
    return isinstance(message, Request) and services.traits(message).needs_loop(message.params)


async def _serve_message(request: HttpRequest, message: Message, can_stream: bool) -> Reply:
    traits = services.traits(message) if isinstance(message, Request) else services.PLAIN
    if isinstance(message, Request) and traits.waits:
        return await _await_task_result(request, message, can_stream)
    if not (isinstance(message, Request) and traits.streams):
        # Only a method that streams can emit notifications before its result: no stream machinery.
        return await run_sync(_serve_sync, request, message, None, CancelFlag(None))
    # H-D8: a 2026-07-28 client that goes away cancels its call; H-16: a legacy one does not
    # (it cancels with notifications/cancelled), so its call runs to the end unheard.
    cancelled = CancelFlag(None)
    on_disconnect = cancelled.set if is_modern(message.params) else None
    outbox = _Outbox(asyncio.get_running_loop())
    work = start_handler(_serve_sync, request, message, outbox.emit if can_stream else None, cancelled)
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


async def _await_task_result(request: HttpRequest, message: Request, can_stream: bool) -> Reply:
    """T11-10: tasks/result waits for a working task on the event loop, not in a pool thread.

    Each look is one short trip to the thread pool; between looks the request holds nothing but
    a timer, and a client that goes away cancels the wait. When the task has something to send
    meanwhile (its requests for input, T11-11; status notifications) and the client accepts
    SSE, the answer becomes a stream carrying those, then the result. From its first look at a
    task still working until its answer, the wait holds one of the caller's stream slots
    (``MAX_STREAMS_PER_PRINCIPAL``), as a GET or listen stream does: one over the bound is 429.
    """
    wait_until = time.monotonic() + float(mcp_settings.TASK_RESULT_WAIT_SECONDS)
    watch = ResultWatch() if can_stream else None
    delay = 0.02
    slot: StreamSlot | None = None
    try:
        while True:
            try:
                return await run_sync(_serve_sync, request, message, None, CancelFlag(None), wait_until, watch)
            except StillWorking as pending:
                if slot is None and pending.principal is not None:
                    slot = await run_sync(take_stream_slot, pending.principal)
                    if slot is None:
                        return too_many_streams(message.id)
                if pending.messages and watch is not None:
                    held, slot = slot, None  # the stream gives it back when it ends
                    return _result_reply(request, message, wait_until, watch, pending.messages, held)
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
    finally:
        if slot is not None:
            slot.give_back()


def _result_reply(
    request: HttpRequest,
    message: Request,
    wait_until: float,
    watch: ResultWatch,
    first: list[bytes],
    slot: StreamSlot | None,
) -> Reply:
    def close() -> None:
        if slot is not None:
            slot.give_back()

    def stream() -> AsyncGenerator[bytes, None]:
        return _result_stream(request, message, wait_until, watch, first, close)

    return Reply(200, stream=stream, on_close=close)


async def _result_stream(
    request: HttpRequest,
    message: Request,
    wait_until: float,
    watch: ResultWatch,
    first: list[bytes],
    close: Callable[[], None],
) -> AsyncGenerator[bytes, None]:
    """The rest of a tasks/result that went to SSE: what the task sends, then its result."""
    counted = telemetry.stream_opened("task_result")
    try:
        for data in first:
            yield sse.event(data)
        delay = 0.02
        while True:
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.5)
            try:
                reply = await run_sync(_serve_sync, request, message, None, CancelFlag(None), wait_until, watch)
            except StillWorking as pending:
                for data in pending.messages:
                    yield sse.event(data)
                if pending.messages:
                    delay = 0.02  # an answer is on its way: look again soon
                continue
            if reply.body:
                yield sse.event(reply.body)
            return
    finally:
        telemetry.stream_closed("task_result", counted)
        close()


async def _request_stream(
    outbox: _Outbox, work: asyncio.Future[Reply], on_disconnect: Callable[[], None] | None
) -> AsyncGenerator[bytes, None]:
    counted = telemetry.stream_opened("response")
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
    finally:
        telemetry.stream_closed("response", counted)


def _serve_sync(
    request: HttpRequest,
    message: Message,
    emit: Emit | None,
    cancelled: CancelFlag,
    wait_until: float = 0.0,
    watch: ResultWatch | None = None,
) -> Reply:
    """Authenticate, pick the era, and serve one message (runs in a worker thread)."""
    try:
        principal = authenticate(request)
    except AuthFailure as exc:
        return auth_reply(exc)
    headers = request_headers(request)
    asgi = isinstance(request, ASGIRequest)
    request_id = message.id if isinstance(message, Request) else None
    try:
        # V-2: a request carrying the 2026-07-28 _meta fields is modern whatever its method
        # (a modern initialize is a removed method: 404 + -32601).
        if isinstance(message, Request | Notification) and is_modern(message.params):
            return _serve_modern(message, principal, headers, emit, cancelled, asgi)
        if isinstance(message, Response) and headers.get("mcp-protocol-version") in v.MODERN_VERSIONS:
            # H-D2: 2026-07-28 clients never POST responses (the server sends no requests).
            raise e.invalid_request("Invalid Request: clients do not send JSON-RPC responses in 2026-07-28")
        if isinstance(message, Request) and services.traits(message).opens_session:
            body, session_id = services.create_session(message, principal, asgi=asgi)
            return Reply(200, body, {"Mcp-Session-Id": session_id})
        return _serve_legacy(message, principal, headers, emit, cancelled, asgi, wait_until, watch)
    except McpError as exc:
        return error_reply(exc, request_id)
    except AuthFailure as exc:  # step-up for a tools/call
        return auth_reply(exc, request_id, message=True)


def _serve_modern(
    message: Request | Notification,
    principal: Principal,
    headers: Mapping[str, str],
    emit: Emit | None,
    cancelled: CancelFlag,
    asgi: bool,
) -> Reply:
    if isinstance(message, Notification):
        # D defines no client notification over HTTP; an accepted one still gets 202 (H-D2).
        return Reply(202)
    meta = read_modern_meta(headers, message.method, message.params)
    ex = Exchange(meta.revision, principal, headers, modern=meta, emit=emit, cancelled=cancelled, asgi=asgi)
    if services.traits(message).subscribes:
        return serve_listen(message, ex)
    outcome = services.handle_request(message, ex)
    return Reply(200) if outcome is None else Reply(*outcome)


def _serve_legacy(
    message: Message,
    principal: Principal,
    headers: Mapping[str, str],
    emit: Emit | None,
    cancelled: CancelFlag,
    asgi: bool,
    wait_until: float,
    watch: ResultWatch | None,
) -> Reply:
    session = legacy_session(headers, principal)
    rev = v.get_revision(session.protocol_version)
    if isinstance(message, Notification):
        services.accept_notification(message, session)
        return Reply(202)
    if isinstance(message, Response):
        services.accept_answer(message, session, principal)  # to the call that asked, on any process
        return Reply(202)
    # Legacy clients cancel with notifications/cancelled, possibly through another worker.
    cancelled.key = CancelFlag.cache_key(session.pk, message.id)
    ex = Exchange(
        rev,
        principal,
        headers,
        session=session,
        emit=emit,
        cancelled=cancelled,
        asgi=asgi,
        wait_until=wait_until,
        watch=watch,
    )
    outcome = services.handle_request(message, ex)
    if outcome is None:
        return Reply(200, stream=_empty_stream)
    return Reply(*outcome)


async def _empty_stream() -> AsyncGenerator[bytes, None]:
    if False:  # pragma: no cover - makes this an async generator
        yield b""


@dataclass(frozen=True, slots=True)
class _Oversized:
    """What is kept of a batch over ``MAX_BATCH_ITEMS``: decoding a megabyte of small items takes
    tens of MB, so the items are let go at once; the batch is refused once the session is read."""

    count: int
    has_initialize: bool


def _batch_of(items: list[Any]) -> list[Any] | _Oversized:
    if len(items) <= mcp_settings.MAX_BATCH_ITEMS:
        return items
    return _Oversized(len(items), _has_initialize(items))


def _serve_batch(request: HttpRequest, items: list[Any] | _Oversized) -> Reply:
    """L-8: 2025-03-26 sessions accept arrays; later revisions refuse them.

    A batch holds at most ``MAX_BATCH_ITEMS`` messages (over it: one -32600, nothing run), and
    its answers together stay within ``MAX_RESPONSE_BYTES``: each tool call gets what is left
    of the bound as its own (a larger result is an isError result), and once an answer would
    pass it, that answer and every request after it get a short error instead (one response
    per request, as JSON-RPC batches have it), the later ones not run.
    """
    if not items:
        return plain_error(400, e.INVALID_REQUEST, "Invalid Request: empty batch")
    try:
        principal = authenticate(request)
    except AuthFailure as exc:
        return auth_reply(exc)
    headers = request_headers(request)
    if items.has_initialize if isinstance(items, _Oversized) else _has_initialize(items):
        return plain_error(400, e.INVALID_REQUEST, "Invalid Request: initialize must not be part of a batch")
    try:
        session = legacy_session(headers, principal)
    except McpError as exc:
        return error_reply(exc)
    rev = v.get_revision(session.protocol_version)
    # From here the session's revision, not the header (a tolerated other legacy version, L-13),
    # decides how an unreadable id is written.
    null_id = rev.error_id_required
    if not rev.batching:
        refusal = e.invalid_request(f"Invalid Request: JSON-RPC batches are not part of {rev.version}")
        return Reply(400, encode_error(None, refusal, null_id=null_id))
    if isinstance(items, _Oversized):
        refusal = e.invalid_request(
            f"Invalid Request: a batch may hold at most {mcp_settings.MAX_BATCH_ITEMS} messages (MAX_BATCH_ITEMS); "
            f"this one has {items.count}. Nothing was run; send fewer at a time."
        )
        return Reply(400, encode_error(None, refusal, null_id=null_id))
    parsed: list[Message | bytes] = []
    for item in items:
        try:
            parsed.append(parse_message(item))
        except McpError as exc:
            parsed.append(encode_error(readable_id(item), exc, null_id=null_id))
    # A batch is authorized whole before any item runs: a step-up (403) refuses it before it
    # has side effects, never after earlier calls ran and their results would be lost.
    try:
        services.authorize_batch([m for m in parsed if isinstance(m, Request)], principal)
    except AuthFailure as exc:
        return auth_reply(exc, message=True)
    limit = mcp_settings.MAX_RESPONSE_BYTES
    responses: list[bytes] = []
    size = 2  # the brackets
    full = False
    for message in parsed:
        answer: bytes | None = None
        if isinstance(message, bytes):
            answer = message
        elif isinstance(message, Notification):
            services.accept_notification(message, session)
        elif isinstance(message, Response):
            services.accept_answer(message, session, principal)
        elif isinstance(message, Request) and full:
            answer = encode_error(message.id, _not_run(limit))
        elif isinstance(message, Request):
            # What is left of the bound, less room for a short error per later item.
            room = limit - size - _ERROR_ROOM * len(parsed)
            ex = Exchange(
                rev, principal, headers, session=session, asgi=isinstance(request, ASGIRequest), max_bytes=max(room, 1)
            )
            try:
                outcome = services.handle_request(message, ex)
            except AuthFailure as exc:  # the catalog changed since the batch was authorized
                outcome = (200, encode_error(message.id, e.invalid_params(exc.description)))
            answer = None if outcome is None else outcome[1]
            if answer is not None and len(answer) > room:
                answer = encode_error(message.id, _too_large(len(answer), limit))
                full = True
        if answer is not None:
            responses.append(answer)
            size += len(answer) + 1
    if not responses:
        return Reply(202)
    return Reply(200, b"[" + b",".join(responses) + b"]")


def _has_initialize(items: list[Any]) -> bool:
    return any(isinstance(item, dict) and services.traits(item.get("method")).opens_session for item in items)


# Bytes kept free per item of a batch for the short error it may get instead of its answer.
_ERROR_ROOM = 256


def _too_large(size: int, limit: int) -> McpError:
    return e.internal_error(
        f"Response too large: this answer ({size} bytes) would take the batch's answers past "
        f"{limit} bytes (MAX_RESPONSE_BYTES); it was not sent. Send the request on its own."
    )


def _not_run(limit: int) -> McpError:
    return e.invalid_request(
        f"Invalid Request: not run: the batch's answers reached {limit} bytes (MAX_RESPONSE_BYTES). "
        "Send the request again, in a smaller batch."
    )


# --------------------------------------------------------------------------- long-lived streams


async def _delete(request: HttpRequest) -> Reply:
    headers = request_headers(request)
    session_id = headers.get("mcp-session-id")
    if not session_id:
        return plain_error(400, e.INVALID_REQUEST, "Bad Request: missing Mcp-Session-Id header")

    def end() -> Reply:
        try:
            principal = authenticate(request)
        except AuthFailure as exc:
            return auth_reply(exc)
        if services.end_session(session_id, principal):
            return Reply(204)
        return plain_error(404, e.INVALID_REQUEST, "Session not found")

    return await run_sync(end)
