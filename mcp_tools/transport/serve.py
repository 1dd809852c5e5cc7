"""One message served in the calling thread: authenticate, pick the era, answer."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest

from .. import services
from ..auth import AuthFailure
from ..cancel import CancelFlag
from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Message, Notification, Request, Response
from ..protocol.negotiation import is_modern, read_modern_meta
from ..services import Exchange
from ..tasking import ResultWatch
from ..types import Principal
from .replies import Emit, Reply, auth_reply, authenticate, error_reply, legacy_session, request_headers
from .streams import serve_listen

__all__ = ["serve_message"]


def serve_message(
    request: HttpRequest,
    message: Message,
    emit: Emit | None,
    cancelled: CancelFlag,
    *,
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
            return _serve_modern(message, principal, headers, emit=emit, cancelled=cancelled, asgi=asgi)
        if isinstance(message, Response) and headers.get("mcp-protocol-version") in v.MODERN_VERSIONS:
            # H-D2: 2026-07-28 clients never POST responses (the server sends no requests).
            raise e.invalid_request("Invalid Request: clients do not send JSON-RPC responses in 2026-07-28")
        if isinstance(message, Request) and services.traits(message).opens_session:
            body, session_id = services.create_session(message, principal, asgi=asgi)
            return Reply(200, body, {"Mcp-Session-Id": session_id})
        return _serve_legacy(
            message, principal, headers, emit=emit, cancelled=cancelled, asgi=asgi, wait_until=wait_until, watch=watch
        )
    except McpError as exc:
        return error_reply(exc, request_id)
    except AuthFailure as exc:  # step-up for a tools/call
        return auth_reply(exc, request_id, message=True)


def _serve_modern(
    message: Request | Notification,
    principal: Principal,
    headers: Mapping[str, str],
    *,
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
    *,
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
