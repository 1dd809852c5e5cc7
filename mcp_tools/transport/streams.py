"""Long-lived notification streams: the legacy GET stream and 2026-07-28 subscriptions/listen."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

from .. import services, telemetry
from ..auth import AuthFailure
from ..conf import mcp_settings
from ..notify.hub import Listener, StreamSlot, get_hub, release, take_stream_slot
from ..protocol import errors as e
from ..protocol import sse
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Request
from ..services import Exchange
from ..threads import run_sync
from .replies import Reply, accepts, auth_reply, authenticate, error_reply, legacy_session, plain_error, request_headers

__all__ = ["serve_get", "serve_listen", "too_many_streams"]


def too_many_streams(request_id: str | int | None = None) -> Reply:
    """429: the principal holds ``MAX_STREAMS_PER_PRINCIPAL`` long-lived streams and waits."""
    limit = mcp_settings.MAX_STREAMS_PER_PRINCIPAL
    message = f"Too many open streams and waits (limit {limit}, MAX_STREAMS_PER_PRINCIPAL)"
    error = McpError(e.INVALID_REQUEST, message, http_status=429, headers={"Retry-After": "5"})
    return error_reply(error, request_id)


def serve_listen(message: Request, ex: Exchange) -> Reply:
    """H-D10: acknowledge the honoured subset first, then keep the stream open.

    Every listen stream holds one of the principal's stream slots, whatever it asked for: one
    that asks for nothing is open as long as one that asks for everything.
    """
    frames = services.listen_frames(message, ex.asgi)
    honoured, ack, final, changed = frames.honoured, frames.ack, frames.final, frames.changed
    slot = take_stream_slot(ex.principal)
    if slot is None:
        return too_many_streams(message.id)
    listener = None
    if honoured:
        principal = services.with_permissions(ex.principal)  # loaded here: the listener reads no rows
        listener = Listener(principal, *services.tools_fingerprint(principal))

    # Nothing to deliver under WSGI (no list_changed there): the acknowledgement of nothing and
    # the graceful end at once, rather than a stream of keep-alives holding a worker.
    idle = listener is None and not ex.asgi

    def close() -> None:
        if listener is not None:
            release(listener)
        slot.give_back()

    async def stream() -> AsyncGenerator[bytes, None]:
        counted = telemetry.stream_opened("listen")
        try:
            if listener is not None:
                get_hub().register(listener)
            yield sse.event(ack)
            if not idle:
                async for event in _notifications(listener, changed):
                    yield event
            yield sse.event(final)  # server-initiated end: the graceful listen result
        finally:
            telemetry.stream_closed("listen", counted)
            close()

    return Reply(200, stream=stream, on_close=close)


async def _notifications(
    listener: Listener | None,
    event: bytes,
    claim: Callable[[], Awaitable[bool]] | None = None,
    event_id: Callable[[str], str] | None = None,
) -> AsyncGenerator[bytes, None]:
    """The body of a notification stream: list_changed when it applies, keep-alives between.

    Without a listener (list_changed not delivered here) only keep-alives, until the deadline.
    ``claim`` runs before each notification; False means another stream took over: end.
    ``event_id`` names each notification by the tool list it announces (resumable streams).
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
            assert listener is not None
            yield sse.event(event, event_id=None if event_id is None else event_id(listener.fingerprint))
            get_hub().sent()
        elif loop.time() < deadline:
            yield sse.comment("keep-alive")


def get_event_id(session_id: str, token: str, fingerprint: str) -> str:
    """The SSE event id of a GET stream's event: the stream, and the tool list (the catalog
    fingerprint) the client knows of once it has this event. A client resuming with it as
    Last-Event-ID is told of any change since, whichever host it reconnects to."""
    return f"{session_id[:8]}-get-{token}-{fingerprint}"


def heard_in_event_id(value: str | None, session_id: str) -> str | None:
    """The fingerprint in a Last-Event-ID from one of this session's GET streams, else None
    (absent, malformed, or another session's: then the session row decides)."""
    if not value or not value.startswith(f"{session_id[:8]}-get-"):
        return None
    fingerprint = value.rpartition("-")[2]
    if not 0 < len(fingerprint) <= 32 or fingerprint.strip("0123456789abcdef"):
        return None
    return fingerprint


async def serve_get(request: HttpRequest) -> Reply:
    """H-11: the legacy standalone SSE stream; modern requests have none (H-D1)."""
    if not accepts(request, "text/event-stream"):
        return plain_error(406, e.INVALID_REQUEST, "Not Acceptable: GET needs Accept: text/event-stream")
    headers = request_headers(request)
    if not headers.get("mcp-session-id"):
        return Reply(405, headers={"Allow": "POST, DELETE, OPTIONS"})

    # H-9/H-11: a notification goes on one GET stream of the session, the newest: the session
    # row names it, so a stream on any worker learns it was superseded.
    token = secrets.token_hex(8)

    found = await run_sync(_prepare_get, request, headers, token)
    if isinstance(found, Reply):
        return found
    session, slot, listener, heard = found
    rev = v.get_revision(session.protocol_version)
    retry = mcp_settings.SSE_RETRY_MS

    def event_id(fingerprint: str) -> str:
        return get_event_id(session.pk, token, fingerprint)

    async def claim() -> bool:
        return await run_sync(services.owns_get_stream, session.pk, token)

    async def stream() -> AsyncGenerator[bytes, None]:
        counted = telemetry.stream_opened("get")
        try:
            if rev.sse_priming:
                yield sse.priming(event_id(heard), retry_ms=retry)
            if listener is not None:
                get_hub().register(listener)
                if heard != listener.fingerprint:
                    yield sse.event(services.LIST_CHANGED, event_id=event_id(listener.fingerprint))
                    get_hub().sent()
            async for event in _notifications(listener, services.LIST_CHANGED, claim, event_id):
                yield event
            if rev.sse_priming:
                # H-12: say when to come back before closing the connection.
                yield b"retry: " + str(retry).encode() + b"\n\n"
        finally:
            telemetry.stream_closed("get", counted)
            close()

    def close() -> None:
        if listener is not None:
            release(listener)
        slot.give_back()

    return Reply(200, stream=stream, on_close=close)


def _prepare_get(
    request: HttpRequest, headers: Mapping[str, str], token: str
) -> Reply | tuple[services.Session, StreamSlot, Listener | None, str]:
    """A GET stream's session, stream slot and listener (in a worker thread), or its refusal."""
    try:
        principal = authenticate(request)
    except AuthFailure as exc:
        return auth_reply(exc)
    try:
        session = legacy_session(headers, principal)
    except McpError as exc:
        return error_reply(exc)
    asgi = isinstance(request, ASGIRequest)
    if not asgi:
        # H-11: "or else return HTTP 405 Method Not Allowed". Under WSGI no notification
        # reaches a GET stream (tools.listChanged is false), and an open one holds a worker
        # (gunicorn's sync worker: the only one) until SSE_MAX_SECONDS: clients (the official
        # SDKs open one after initialize) hung. Authenticated first: a bad token is still 401.
        return Reply(405, headers={"Allow": "POST, DELETE, OPTIONS"})
    slot = take_stream_slot(principal)  # every GET stream, list_changed delivered or not
    if slot is None:
        return too_many_streams()
    if not services.list_changed_supported(asgi):
        return session, slot, None, ""
    principal = services.with_permissions(principal)  # loaded here: the listener reads no rows
    fingerprint, version = services.tools_fingerprint(principal)
    # A change the client missed while it had no stream open is sent at once: what it heard
    # is in the Last-Event-ID of the stream it resumes, else what the session row knows.
    heard = heard_in_event_id(headers.get("last-event-id"), session.pk)
    known = services.open_get_stream(session, fingerprint, token, heard)
    return session, slot, Listener(principal, fingerprint, version), known
