"""Legacy (initialize) sessions: created, loaded and ended here; the transport never writes rows."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.db import connections, router
from django.utils import timezone

from .. import cancel, storable, telemetry
from ..cancel import CancelFlag
from ..conf import mcp_settings
from ..models import McpSession
from ..protocol import apps as apps_wire
from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Request, encode_result
from ..protocol.negotiation import negotiate_legacy
from ..types import Principal
from .identity import capabilities, list_changed_supported, server_info, tools_fingerprint

__all__ = [
    "Session",
    "SessionNotFound",
    "cancel_request",
    "create_session",
    "declared_capabilities",
    "end_session",
    "load_session",
    "mark_initialized",
    "open_get_stream",
    "owns_get_stream",
    "set_log_level",
]

Session = McpSession
"""A legacy session as the transport sees it (the row, loaded by ``load_session``)."""


class SessionNotFound(Exception):
    """Unknown, expired, ended, or owned by another principal: all answer 404 (H-14, H-15)."""


def create_session(req: Request, principal: Principal, *, asgi: bool) -> tuple[bytes, str]:
    """L-1..L-4: answer initialize and open a session row; returns (response, session id)."""
    requested = req.params.get("protocolVersion")
    version = requested if isinstance(requested, str) else ""
    with telemetry.request_span(
        req.method, req.params, req.id, headers=None, protocol_version=version, session_id=None, known=True
    ) as span:
        try:
            return _create_session(req, principal, asgi=asgi)
        except McpError as exc:
            if span is not None:
                span.failed(str(exc.code), exc.message)
            raise


def _create_session(req: Request, principal: Principal, *, asgi: bool) -> tuple[bytes, str]:
    params = req.params
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise e.invalid_params("initialize needs params.protocolVersion (a string)")
    version = negotiate_legacy(requested)
    rev = v.get_revision(version)
    client_info = params.get("clientInfo")
    caps = params.get("capabilities")
    session = McpSession.objects.create(
        protocol_version=version,
        principal_key=principal.key,
        client_info=storable.json_value(client_info) if isinstance(client_info, dict) else {},
        client_capabilities=storable.json_value(caps) if isinstance(caps, dict) else {},
        expires_at=McpSession.expiry(mcp_settings.SESSION_IDLE_SECONDS),
        tools_fingerprint=tools_fingerprint(principal)[0] if list_changed_supported(asgi) else "",
    )
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(rev, asgi, apps=apps_wire.client_declared(session.client_capabilities)),
        "serverInfo": server_info(rev),
    }
    if mcp_settings.INSTRUCTIONS:
        result["instructions"] = mcp_settings.INSTRUCTIONS
    return encode_result(req.id, result), session.id


def load_session(session_id: str, principal: Principal) -> McpSession:
    """The live session of this principal, in one plain SELECT (it runs on every request)."""
    connection = connections[router.db_for_read(McpSession)]
    ops = connection.ops
    table = ops.quote_name(McpSession._meta.db_table)
    now = timezone.now()
    touch_before = now - timedelta(seconds=mcp_settings.SESSION_TOUCH_SECONDS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT protocol_version, log_level, initialized, tools_fingerprint, last_seen_at < %s FROM {table} "  # noqa: S608
            "WHERE id = %s AND principal_key = %s AND expires_at > %s",
            [
                ops.adapt_datetimefield_value(touch_before),
                session_id,
                principal.key,
                ops.adapt_datetimefield_value(now),
            ],
        )
        row = cursor.fetchone()
    if row is None:
        raise SessionNotFound(session_id)
    version, log_level, initialized, heard, stale = row
    session = McpSession(
        id=session_id,
        protocol_version=version,
        principal_key=principal.key,
        log_level=log_level,
        initialized=bool(initialized),
        tools_fingerprint=heard,
    )
    if stale:
        session.expires_at = McpSession.expiry(mcp_settings.SESSION_IDLE_SECONDS)
        McpSession.objects.filter(pk=session_id).update(last_seen_at=now, expires_at=session.expires_at)
    return session


def declared_capabilities(session: McpSession) -> dict[str, Any]:
    """What the client declared at initialize (not loaded with the session: few requests need it)."""
    found = McpSession.objects.filter(pk=session.pk).values_list("client_capabilities", flat=True).first()
    return dict(found) if isinstance(found, dict) else {}


def end_session(session_id: str, principal: Principal) -> bool:
    return McpSession.objects.filter(pk=session_id, principal_key=principal.key).delete()[0] > 0


def mark_initialized(session: McpSession) -> None:
    if not session.initialized:
        McpSession.objects.filter(pk=session.pk).update(initialized=True)


def cancel_request(session: McpSession | None, params: Mapping[str, Any]) -> None:
    """C-1: flag an in-flight request as cancelled; malformed ids are ignored, and an id that
    is not in flight is remembered only briefly (``cancel.EARLY_CANCEL_SECONDS``)."""
    request_id = params.get("requestId")
    if session is None or isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return
    cancel.cancel(CancelFlag.cache_key(session.pk, request_id))


def set_log_level(session: McpSession, level: str) -> None:
    McpSession.objects.filter(pk=session.pk).update(log_level=level)


def open_get_stream(session: McpSession, fingerprint: str, token: str, heard: str | None = None) -> str:
    """Make ``token`` the session's GET stream (H-9: the newest stream gets notifications).

    Returns the tool list the client knows of: ``fingerprint`` (the current one) unless it
    missed a change, so the stream sends list_changed at once when they differ. ``heard`` is
    the list the client says it last heard of (from the Last-Event-ID of the stream it
    resumes); without it, the list as of the session's previous stream opening.
    """
    known = session.tools_fingerprint if heard is None else heard
    McpSession.objects.filter(pk=session.pk).update(tools_fingerprint=fingerprint, get_stream=token)
    return known or fingerprint


def owns_get_stream(session_id: str, token: str) -> bool:
    """Is ``token`` still the session's stream? False: a newer stream took over (on any worker).

    A notification sent on the stream is not recorded as heard: a connection that died
    silently (a partition, no FIN) still accepts writes, so only the client can say what it
    heard (its Last-Event-ID when it reconnects); without one, a reconnect repeats the notice.
    """
    return McpSession.objects.filter(pk=session_id, get_stream=token).exists()
