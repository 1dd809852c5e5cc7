"""The Streamable HTTP endpoint's drivers: each carries out the one decision of ``decide``.

:func:`respond` (the async driver: the view under ASGI and the ASGI front) and
:func:`answer_sync` (the sync driver: the WSGI front, and the view under a WSGI server for what
needs no event loop) serve a :class:`~.decide.Decision`; the protocol lives elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
from typing import Any, TypeVar

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from .. import services
from ..auth import AuthFailure
from ..cancel import CancelFlag
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol.jsonrpc import Request
from ..threads import run_handler, run_sync
from .batch import serve_batch
from .decide import Decision, Kind, decide
from .replies import (
    Reply,
    accepts,
    auth_reply,
    authenticate,
    cors_headers,
    plain_error,
    preflight,
    read_id_rule,
    request_headers,
)
from .serve import serve_message
from .streams import serve_get
from .waits import await_task_result, fits_loop, serve_on_loop, serve_streaming

__all__ = ["answer", "answer_sync", "decide", "endpoint", "respond"]  # decide: for the WSGI front

logger = logging.getLogger("mcp_tools")
T = TypeVar("T")


# --------------------------------------------------------------------------- the drivers


async def respond(request: HttpRequest) -> Reply:
    """The endpoint's answer with every header set; the view (or the ASGI front) sends it."""
    return await answer(decide(request), request)


async def answer(decision: Decision, request: HttpRequest) -> Reply:
    """The async driver: ``decision`` carried out on the event loop."""
    kind = decision.kind
    message = decision.message
    if kind is Kind.STREAM:
        assert isinstance(message, Request)
        can_stream = accepts(request, "text/event-stream")
        here = serve_on_loop(request, message, can_stream) if fits_loop(request, message) else None
        reply = here if here is not None else await serve_streaming(request, message, can_stream)
    elif kind is Kind.JSON:
        assert message is not None
        here = (
            serve_on_loop(request, message, False)
            if isinstance(message, Request) and fits_loop(request, message)
            else None
        )
        reply = here if here is not None else await run_sync(serve_message, request, message, None, CancelFlag(None))
    elif kind is Kind.WAIT:
        assert isinstance(message, Request)
        reply = await await_task_result(request, message, accepts(request, "text/event-stream"))
    else:
        reply = await _answer_other(decision, request)
    return _with_headers(reply, request)


async def _answer_other(decision: Decision, request: HttpRequest) -> Reply:
    """What is not one message: a refusal, a batch, a preflight, a GET stream, a DELETE."""
    kind = decision.kind
    if kind is Kind.REFUSE:
        assert decision.reply is not None
        return decision.reply
    if kind is Kind.BATCH:
        assert decision.batch is not None
        return await run_handler(serve_batch, request, decision.batch)  # a batch may call tools
    if kind is Kind.PREFLIGHT:
        return preflight(request)
    if kind is Kind.LISTEN:
        return await serve_get(request)
    return await _delete(request)


def answer_sync(decision: Decision, request: HttpRequest) -> Reply | None:
    """The sync driver: ``decision`` carried out in the calling thread, or None when it needs
    an event loop (``decision.needs_loop``: GET and DELETE, ``tasks/result``, which may wait for
    the task, ``subscriptions/listen`` and a ``tools/call`` that asked for progress).

    Everything else is answered as for a client that accepts only JSON: the same code as
    :func:`answer`, in the calling thread.
    """
    if decision.needs_loop:
        return None
    kind = decision.kind
    if kind is Kind.JSON or kind is Kind.STREAM:
        assert decision.message is not None
        reply = serve_message(request, decision.message, None, CancelFlag(None))
    elif kind is Kind.REFUSE:
        assert decision.reply is not None
        reply = decision.reply
    elif kind is Kind.BATCH:
        assert decision.batch is not None
        reply = serve_batch(request, decision.batch)
    elif kind is Kind.PREFLIGHT:
        reply = preflight(request)
    else:
        return None
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
    decision, reply = await run_sync(_decide_sync, request)
    runner = _LoopThread.get()
    if reply is None:
        on_loop = _answer_on_loop(decision, request)
        reply = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(on_loop, runner.loop))
    if reply.stream is None:
        return _plain_response(reply)
    response = _StreamingResponse(runner.iterate(reply.stream), status=reply.status)
    response.on_close = reply.on_close
    for key, value in reply.headers.items():
        response[key] = value
    return response


def _decide_sync(request: HttpRequest) -> tuple[Decision, Reply | None]:
    decision = decide(request)
    return decision, answer_sync(decision, request)


async def _answer_on_loop(decision: Decision, request: HttpRequest) -> Reply:
    read_id_rule(request)  # the loop's thread has a context of its own
    return await answer(decision, request)


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
