"""An optional WSGI front for the MCP endpoint: JSON POSTs answered in the worker's thread.

Under a WSGI server Django runs the endpoint's async view through ``async_to_sync``: an event
loop and a thread hop per request, several times the cost of the work. The front answers POST
and OPTIONS requests on the endpoint's path by calling the endpoint's synchronous code
directly (no middleware, no request signals, as the ASGI front) and hands everything else to
the Django application unchanged::

    # wsgi.py of the site
    from django.core.wsgi import get_wsgi_application
    from mcp_tools.wsgi import McpWsgiFront

    application = McpWsgiFront(get_wsgi_application())

Answers are JSON: what needs a stream (GET and listen streams, a ``tools/call`` that asked for
progress, ``tasks/result``) goes through Django's handler as before; serve those from ASGI.
See the docs' deploy how-to.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from http import HTTPStatus
from io import BytesIO
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core import signals
from django.core.handlers.wsgi import WSGIRequest
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest
from django.urls import set_script_prefix

from .. import audit
from ..protocol.versions import unreadable_id_is_null
from ..threads import close_old_connections
from .front import INTERNAL_ERROR, EndpointFront

if TYPE_CHECKING:
    from .decide import Decision
    from .replies import Reply

__all__ = ["McpWsgiFront"]

logger = logging.getLogger("django.request")

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class McpWsgiFront(EndpointFront[WSGIApp]):
    """Answer the MCP endpoint's JSON requests directly; pass everything else to ``app``."""

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        endpoint = self.path
        if (
            endpoint is not None
            and environ.get("REQUEST_METHOD") in ("POST", "OPTIONS")
            and environ.get("PATH_INFO") == endpoint
        ):
            answered = self._serve(environ, start_response)
            if answered is not None:
                return answered
        return self.app(environ, start_response)

    def _serve(self, environ: dict[str, Any], start_response: StartResponse) -> _Answer | None:
        decide, answer_sync = _drivers or _load_drivers()
        # As Django's handler does, and as its request_started/request_finished receivers do
        # for connections. The request puts the script name it works out (FORCE_SCRIPT_NAME,
        # else SCRIPT_NAME) in META: the prefix is taken from there, not worked out twice.
        request = _FrontRequest(environ)
        set_script_prefix(environ["SCRIPT_NAME"])
        close_old_connections(_in_thread.connections)
        try:
            with audit.deferred():  # a full batch of audit rows waits for this answer's close()
                reply = answer_sync(decide(request), request)
        except Exception:
            logger.exception("Internal Server Error: %s", request.path)
            signals.got_request_exception.send(sender=None, request=request)
            null = unreadable_id_is_null(environ.get("HTTP_MCP_PROTOCOL_VERSION"))
            return _send(start_response, 500, [("Content-Type", "application/json")], INTERNAL_ERROR[null])
        finally:
            _in_thread.connections = close_old_connections(_thread_connections())
        if reply is None:
            # Django's handler reads the body again: give it the bytes this request read.
            body = request.body if request.method == "POST" and hasattr(request, "_body") else b""
            environ["wsgi.input"] = BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            return None
        try:
            body = reply.body if reply.stream is None else asyncio.run(_collect(reply.stream()))
        finally:
            if reply.on_close is not None:
                reply.on_close()
        return _send(start_response, reply.status, list(reply.headers.items()), body)


class _FrontRequest(WSGIRequest):
    """Django's request, with ``body`` read in one step where Django's checks cannot refuse it.

    Django's ``body`` reads the size limit from the settings four times and measures the body
    again after reading it. Within WSGI the stream holds at most ``CONTENT_LENGTH`` bytes, so a
    body whose declared length is within ``DATA_UPLOAD_MAX_MEMORY_SIZE`` is within it once read:
    one look at the setting is enough. Anything else (a body already read, one over the limit)
    is Django's own ``body``, with its errors.
    """

    _read_started: bool  # set by WSGIRequest.__init__ and read() (not in Django's stubs)

    @property
    def body(self) -> bytes:
        read: bytes | None = self.__dict__.get("_body")
        if read is not None:
            return read
        if self._read_started:
            return super().body  # Django's RawPostDataException
        try:
            declared = int(self.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return super().body
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and declared > limit:
            return super().body  # Django's RequestDataTooBig
        try:
            read = self.read()  # what the stream holds: at most CONTENT_LENGTH bytes
        finally:
            self._stream.close()
        self._body = read
        self._stream = BytesIO(read)
        return read


# Every status line the front may send, made once ("200 OK"): HTTPStatus(status) per answer
# is an enum lookup.
_STATUS_LINES = {status.value: f"{status.value} {status.phrase}" for status in HTTPStatus}


# The endpoint's drivers (``views.decide``, ``views.answer_sync``), imported on the first request
# rather than with this module, which a site's wsgi.py loads before Django is set up; kept
# here, since an import statement costs a few thousand instructions even when the module is loaded.
_Drivers = tuple[Callable[[HttpRequest], "Decision"], Callable[["Decision", HttpRequest], "Reply | None"]]
_drivers: _Drivers | None = None


def _load_drivers() -> _Drivers:
    global _drivers
    from .views import answer_sync, decide

    _drivers = decide, answer_sync
    return _drivers


def _send(start_response: StartResponse, status: int, headers: list[tuple[str, str]], body: bytes) -> _Answer:
    headers.append(("Content-Length", str(len(body))))
    start_response(_STATUS_LINES[status], headers)
    return _Answer((body,))


class _Answer(tuple[bytes, ...]):
    """The body of an answer; the server calls ``close()`` once it is sent (PEP 3333): then
    this thread writes the audit rows that are due, between requests."""

    __slots__ = ()

    def close(self) -> None:
        audit.flush_due()


async def _collect(chunks: AsyncIterator[bytes]) -> bytes:
    """The whole of a short stream (an empty SSE answer); long streams never come here."""
    return b"".join([chunk async for chunk in chunks])


class _InThread(threading.local):
    # The thread's connections as the last request left them: the next request checks these
    # before it starts (the same objects: Django's connections are per thread).
    connections: Sequence[BaseDatabaseWrapper] = ()


_in_thread = _InThread()


def _thread_connections() -> Sequence[BaseDatabaseWrapper]:
    """This thread's connections, as ``connections.all(initialized_only=True)`` has them.

    Once the thread holds a connection of every database it keeps them (the same objects), so
    the list the last request left is still whole: asked again, Django's per-thread store would
    be searched twice per database, at two raised and caught exceptions each time."""
    known = _in_thread.connections
    if len(known) == len(connections.settings):
        return known
    return connections.all(initialized_only=True)
