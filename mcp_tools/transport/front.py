"""An optional ASGI front for the MCP endpoint: the same view, without Django's request cycle.

Django serves every request through its handler: request signals (whose synchronous receivers
make it start and join a thread per request), the middleware chain and URL resolution. The MCP
endpoint needs none of them: it checks Host, Origin, CORS and credentials itself. The front
answers the endpoint's path by calling the view directly and hands every other request to the
Django application unchanged::

    # asgi.py of the site
    from django.core.asgi import get_asgi_application
    from mcp_tools.asgi import McpFront

    application = McpFront(get_asgi_application())

What differs from the plain view, on the endpoint's path only: the site's middleware and the
``request_started`` / ``request_finished`` signals do not run. See the docs' deploy how-to.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from io import BytesIO
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core import signals
from django.core.exceptions import SuspiciousOperation
from django.core.handlers.asgi import ASGIRequest
from django.db import connections
from django.urls import NoReverseMatch, reverse, set_script_prefix

from .. import audit
from ..conf import mcp_settings
from ..prefork import take_free_heap_at_fork
from ..protocol.errors import internal_error, invalid_request
from ..protocol.jsonrpc import encode_error
from ..protocol.versions import unreadable_id_is_null
from .keepalive import last_answer_on

if TYPE_CHECKING:
    from .replies import Reply

__all__ = ["EndpointFront", "INTERNAL_ERROR", "McpFront"]

logger = logging.getLogger("django.request")

# ASGI types, named so: not the `Scope` model of OAuth scopes, not a JSON-RPC `Message`.
AsgiScope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]
# Loose on purpose: Django's handler and other ASGI apps spell the same protocol differently.
ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]

# Their request id is never read: "id": null where the revision's schema requires the member.
INTERNAL_ERROR = {null: encode_error(None, internal_error(), null_id=null) for null in (False, True)}
BAD_REQUEST = {
    null: encode_error(None, invalid_request("Bad Request: malformed HTTP request"), null_id=null)
    for null in (False, True)
}


App = TypeVar("App")


class EndpointFront(Generic[App]):
    """What the ASGI and WSGI fronts share: the site's ``app`` and the endpoint's ``path``.

    ``path`` is the endpoint's path below the script prefix; by default the URL named
    ``mcp_tools:endpoint``, looked up on the first request.
    """

    def __init__(self, app: App, path: str | None = None) -> None:
        self.app = app
        self._path = path

    @property
    def path(self) -> str | None:
        """The endpoint's path; None (everything goes to the site) when no URL routes to it."""
        if self._path is None:
            try:
                self._path = reverse("mcp_tools:endpoint")
            except NoReverseMatch:
                name = type(self).__name__
                logger.warning("%s: no URL named 'mcp_tools:endpoint'; every request goes to the site", name)
                self._path = ""
        return self._path or None

    def warm(self) -> bool:
        """Build now what each worker would otherwise build on its first requests: the site's
        URLconf (the endpoint's path is looked up in it), the cache backend, the template
        engines (each imports every installed app's tag libraries) and the compiled catalog of
        the current version (tools, their validators, scopes). Call it at the end of the site's
        ``wsgi.py``/``asgi.py``: under a server that forks its workers from a loaded
        application (gunicorn ``--preload``) the workers then share those pages instead of each
        building its own copy, and elsewhere the first request is simply faster. It also has
        the process's first fork take the C heap's free chunks first (``mcp_tools.prefork``),
        so that the workers' own allocations do not copy the parent's pages they lie on.

        No request is served (nothing is audited or counted) and no database connection or
        connection pool is left open (neither may cross a fork): the work runs in a context of
        its own, in the calling thread, whose connections it closes. Where the caller runs an
        event loop (uvicorn imports the application inside its loop, and Django refuses
        database work in the loop's thread) it runs in a thread of its own instead, which
        closes its connections; not otherwise, since a thread's C allocations go to a heap of
        its own, left half free when it ends, which a forked worker's first thread (the audit
        writer) takes over and copies page by page (0.7 MiB PSS per demo worker). A database
        that cannot answer yet (not migrated, not reachable) is logged and skipped: the first
        request builds the catalog as before. Returns whether the catalog was built.

        The URLconf is resolved in that context too: populating the URL resolvers sets an
        asgiref ``Local`` per resolver (27 in the demo) in the context it runs in, and under
        uvicorn every request inherits the importing context, where asgiref would copy and
        re-home each of them on every hop to a pool thread (a quarter of the ASGI front's
        function calls per ``tools/call`` when ``warm()`` resolved it here). The cache backend
        is made here, in the caller's context, on purpose: Django keeps one per context, and
        requests that inherit this one share its connection pool instead of opening their own.
        """
        from django.core.cache import DEFAULT_CACHE_ALIAS, caches

        caches[DEFAULT_CACHE_ALIAS]  # the backend, made once per process (see above)
        take_free_heap_at_fork()
        built: list[bool] = []
        if _loop_running():
            thread = threading.Thread(target=self._warm, args=(built,), name="mcp-tools-warm")
            thread.start()
            thread.join()
        else:
            contextvars.Context().run(self._warm, built)
        return bool(built and built[0])

    def _warm(self, built: list[bool]) -> None:
        from django.template import engines

        self.path  # noqa: B018 - resolving it imports the URLconf and populates its resolvers
        engines.all()  # each imports the tag libraries of every installed app as it is made
        _build_catalog(type(self).__name__, built)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _build_catalog(name: str, built: list[bool]) -> None:
    from django.db import DatabaseError

    from ..catalog import get_catalog

    # The calling thread's own connections (warm() runs in it outside an event loop) are left
    # as they are: closing one inside the caller's transaction would break the transaction.
    theirs = {conn.alias for conn in connections.all(initialized_only=True) if conn.connection is not None}
    try:
        get_catalog(fresh=True)  # (no reuse started: it would follow the notifier before a fork)
        built.append(True)
    except DatabaseError as exc:
        logging.getLogger("mcp_tools").warning(
            "%s.warm(): the catalog is built on the first request instead (%s)", name, exc
        )
        built.append(False)
    finally:
        for conn in connections.all(initialized_only=True):  # this thread's (per thread, not context)
            if conn.alias in theirs:
                continue
            opened = conn.connection is not None
            conn.close()
            close_pool = getattr(conn, "close_pool", None)  # PostgreSQL with OPTIONS["pool"]: its
            if opened and close_pool is not None:  # sockets and threads must not cross a fork
                close_pool()


class McpFront(EndpointFront[ASGIApp]):
    """Serve the MCP endpoint's path directly; pass everything else to ``app`` (see
    :class:`EndpointFront` for ``path``).

    ``static``: also serve ``STATIC_URL`` from the static files finders, as ``runserver`` does
    (Django's ``ASGIStaticFilesHandler``), so the admin has its CSS under uvicorn. By default
    only while ``DEBUG`` is on and ``django.contrib.staticfiles`` is installed; production
    serves static files from the web server or WhiteNoise.
    """

    def __init__(self, app: ASGIApp, path: str | None = None, *, static: bool | None = None) -> None:
        if static is None:
            static = _develop_static()
        if static:
            from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

            if not isinstance(app, ASGIStaticFilesHandler):
                app = ASGIStaticFilesHandler(app)  # type: ignore[arg-type]  # any ASGI app works
        super().__init__(app, path)

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] == "http":
            root = scope.get("root_path", "")
            path = scope["path"]
            endpoint = self.path
            if endpoint is not None and path.startswith(root) and path[len(root) :] == endpoint:
                await _AsgiExchange(scope, receive, send).run()
                return
        await self.app(scope, receive, send)


def _develop_static() -> bool:
    from django.apps import apps
    from django.conf import settings

    return bool(settings.DEBUG) and apps.is_installed("django.contrib.staticfiles")


async def _lifespan(receive: Receive, send: Send) -> None:
    """ASGI lifespan (Django's handler has none): on shutdown, write the buffered audit rows.

    A server told to exit at once (uvicorn on a second Ctrl-C) skips the shutdown message and
    cancels this coroutine as its event loop ends: the rows are written then, and it ends
    quietly (raising there, uvicorn would log "ASGI 'lifespan' protocol appears unsupported").
    """
    while True:
        try:
            message = await receive()
        except asyncio.CancelledError:
            await sync_to_async(_flush_audit, thread_sensitive=False)()
            return
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            try:
                await sync_to_async(_flush_audit, thread_sensitive=False)()
            finally:
                await send({"type": "lifespan.shutdown.complete"})
            return


def _flush_audit() -> None:
    try:
        audit.flush(final=True)
    finally:
        connections.close_all()  # this thread's, opened for the flush


class _AsgiExchange:
    """One HTTP request to the endpoint, from the body in to the last byte out."""

    __slots__ = ("finished", "receive", "scope", "send")

    def __init__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        self.scope = scope
        self.receive = receive
        self.send = send
        self.finished = False

    async def run(self) -> None:
        body, gone = await self._read_body()
        if gone:
            return
        if body is None:
            message = f"Request Timeout: the body did not arrive within {mcp_settings.BODY_TIMEOUT_SECONDS:g} seconds"
            headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
            await self._send_plain(408, headers, encode_error(None, invalid_request(message), null_id=self._null_ids()))
            return
        try:
            request = ASGIRequest(self.scope, BytesIO(body))
        except (UnicodeDecodeError, SuspiciousOperation):
            await self._send_plain(400, [(b"content-type", b"application/json")], BAD_REQUEST[self._null_ids()])
            return
        # As Django's handler does: FORCE_SCRIPT_NAME first, then the server's root_path.
        set_script_prefix(settings.FORCE_SCRIPT_NAME or self.scope.get("root_path", "") or "/")
        task = asyncio.current_task()
        assert task is not None
        # Like Django's handler: a client that goes away cancels the request (H-D8) or ends its
        # stream; nothing else reads from ``receive`` once the body is in.
        watcher = asyncio.ensure_future(self._watch(task))
        try:
            if mcp_settings.THREAD_SENSITIVE:
                # One per-request thread for the ORM work, as under Django's handler; its
                # connections end with it (Django closes them on request_finished).
                async with ThreadSensitiveContext():
                    try:
                        await self._respond(request)
                    finally:
                        await sync_to_async(connections.close_all)()
            else:
                await self._respond(request)
        except asyncio.CancelledError:
            if not watcher.done():
                raise  # not the client: the server is stopping
            task.uncancel()  # the cancellation was ours; the server's task goes on clean
        finally:
            watcher.cancel()

    async def _respond(self, request: ASGIRequest) -> None:
        from .views import respond

        try:
            reply = await respond(request)
        except asyncio.CancelledError:
            raise
        except Exception:
            # What Django's handler would do, in the endpoint's own error shape.
            logger.exception("Internal Server Error: %s", request.path)
            await signals.got_request_exception.asend(sender=None, request=request)
            await self._send_plain(500, [(b"content-type", b"application/json")], INTERNAL_ERROR[self._null_ids()])
            return
        del request  # a long stream keeps only what its generator needs
        try:
            await self._send_reply(reply)
        finally:
            if reply.on_close is not None:
                reply.on_close()

    async def _send_reply(self, reply: Reply) -> None:
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers.items()]
        if reply.stream is None:
            if last_answer_on(self.scope):
                headers.append((b"connection", b"close"))
            await self._send_plain(reply.status, headers, reply.body)
            return
        await self.send({"type": "http.response.start", "status": reply.status, "headers": headers})
        # aclosing: a stream cancelled while a write waits is closed now (its listener and
        # stream slot released), not whenever the generator is collected.
        async with contextlib.aclosing(reply.stream()) as chunks:
            try:
                async for chunk in chunks:
                    await self.send({"type": "http.response.body", "body": chunk, "more_body": True})
            except Exception:
                # Headers are out: end the stream cleanly; the detail goes to the log only.
                logger.exception("Error in the response stream of %s", self.scope["path"])
        self.finished = True
        await self.send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_plain(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        headers.append((b"content-length", str(len(body)).encode()))
        await self.send({"type": "http.response.start", "status": status, "headers": headers})
        self.finished = True
        await self.send({"type": "http.response.body", "body": body, "more_body": False})

    def _null_ids(self) -> bool:
        for name, value in self.scope["headers"]:
            if name == b"mcp-protocol-version":
                return unreadable_id_is_null(value.decode("latin-1"))
        return unreadable_id_is_null(None)

    async def _read_body(self) -> tuple[bytes | None, bool]:
        """The request body, cut one byte past the limit (the view answers 413 for it), or
        None when it did not arrive whole within ``BODY_TIMEOUT_SECONDS`` (a client
        that trickles its body in holds the connection and the bytes so far no longer).

        A declared length over the limit is not read at all: the view refuses it from the header.
        """
        limit = mcp_settings.MAX_BODY_BYTES
        for name, value in self.scope["headers"]:
            if name == b"content-length":
                if value.isdigit() and int(value) > limit:
                    return b"", False
                break
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(mcp_settings.BODY_TIMEOUT_SECONDS):
                while True:
                    message = await self.receive()
                    if message["type"] == "http.disconnect":
                        return b"", True
                    chunk = message.get("body", b"")
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit or not message.get("more_body", False):
                        return b"".join(chunks)[: limit + 1], False
        except TimeoutError:
            return None, False

    async def _watch(self, task: asyncio.Task[Any]) -> None:
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                if not self.finished:
                    task.cancel()
                return
