"""Dispatch: which methods a revision serves, and one request to its method."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import telemetry
from ..auth import AuthFailure
from ..conf import mcp_settings
from ..models import McpSession
from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Message, Notification, Request, encode_error, encode_result
from ..protocol.negotiation import LOG_LEVELS
from ..protocol.versions import Revision
from ..tasking import StillWorking, tasks_enabled
from ..threads import NotOnLoop
from . import calls, resources, task_methods, tools
from .exchange import Exchange, complete
from .identity import capabilities, modern_meta
from .sessions import cancel_request, mark_initialized, set_log_level

__all__ = [
    "CORE_TASKS",
    "LEGACY",
    "METHODS",
    "MODERN",
    "PLAIN",
    "TASKS_EXTENSION",
    "Method",
    "MethodTraits",
    "accept_notification",
    "handle_request",
    "traits",
]

logger = logging.getLogger("mcp_tools")

# Which revisions serve a method (``Method.served_by``): legacy sessions, 2026-07-28 requests,
# and the task methods, served only where the revision has them and MCP_TOOLS["TASKS_ENABLED"] is
# on (T11-1, TX-1, TX-12).
LEGACY = "legacy"
MODERN = "modern"
CORE_TASKS = "core-tasks"
TASKS_EXTENSION = "tasks-extension"


@dataclass(frozen=True, slots=True)
class MethodTraits:
    """What the transport must know of a method to carry it; it names no method itself."""

    # May send notifications (progress, logs) before its result: its answer may become SSE.
    streams: bool = False
    # A long poll (tasks/result): waits on the event loop for work done elsewhere.
    waits: bool = False
    # Opens a notification stream that outlives the request (subscriptions/listen).
    subscribes: bool = False
    # Answered before any session exists, and opens one (initialize).
    opens_session: bool = False
    # A client notification: ``accept`` routes it (legacy sessions; 2026-07-28 defines none).
    notification: bool = False
    # Whether a request with these params is likely served whole in the process, where every
    # store is (``SERVE_ON_LOOP``): then on the event loop's thread. None: never.
    fits_loop: Callable[[Mapping[str, Any]], bool] | None = None

    def needs_loop(self, params: Mapping[str, Any]) -> bool:
        """Whether the answer needs an event loop: a wait, a stream, or progress asked for."""
        if self.waits or self.subscribes:
            return True
        meta = params.get("_meta")
        return self.streams and isinstance(meta, dict) and "progressToken" in meta


PLAIN = MethodTraits()


def _always(params: Mapping[str, Any]) -> bool:
    return True


IN_PROCESS = MethodTraits(fits_loop=_always)


@dataclass(frozen=True, slots=True)
class Method:
    """One entry of the method table: who serves it, for which revisions, and its traits."""

    serve: Callable[[Request, Exchange], bytes | None] | None
    served_by: frozenset[str]
    traits: MethodTraits = PLAIN
    accept: Callable[[Notification, McpSession], None] | None = None

    def served(self, rev: Revision) -> bool:
        if (MODERN if rev.modern else LEGACY) in self.served_by:
            return True
        if not tasks_enabled():
            return False
        if rev.core_tasks:
            return CORE_TASKS in self.served_by
        return rev.tasks_extension and TASKS_EXTENSION in self.served_by


def traits(message: Message | str | None) -> MethodTraits:
    """The traits of a message's method (or of a method name); plain for anything unknown."""
    name = message if isinstance(message, str) or message is None else getattr(message, "method", None)
    entry = METHODS.get(name) if isinstance(name, str) else None
    return PLAIN if entry is None else entry.traits


def accept_notification(message: Notification, session: McpSession) -> None:
    """A legacy client's notification, routed by the table (unknown ones are ignored)."""
    entry = METHODS.get(message.method)
    with telemetry.request_span(
        message.method,
        message.params,
        None,
        headers=None,
        protocol_version=session.protocol_version,
        session_id=session.pk,
        known=entry is not None,
    ):
        if entry is not None and entry.accept is not None:
            entry.accept(message, session)


def handle_request(req: Request, ex: Exchange) -> tuple[int, bytes] | None:
    """Serve one request: (HTTP status, framed response), or None when it was cancelled.

    Under OpenTelemetry, one SERVER span per request (``telemetry.request_span``).
    """
    session_id = ex.session.pk if ex.session is not None else None
    entry = METHODS.get(req.method)
    with telemetry.request_span(
        req.method,
        req.params,
        req.id,
        headers=ex.headers,
        protocol_version=ex.revision.version,
        session_id=session_id,
        known=entry is not None,
    ) as span:
        try:
            if entry is None or entry.serve is None or not entry.served(ex.revision):
                # H-D5: a modern request for a method we do not implement is a 404.
                raise e.method_not_found(req.method, http_status=404 if ex.revision.modern else 200)
            body = entry.serve(req, ex)
            return None if body is None else (200, body)
        except StillWorking:
            raise  # tasks/result waiting: the view's
        except NotOnLoop:
            if span is not None:
                span.hand_over()
            raise  # served again on a pool thread: the view's
        except AuthFailure as exc:
            if span is not None:
                span.failed(exc.error, exc.description)
            raise  # an HTTP-level answer (403 insufficient_scope)
        except McpError as exc:
            if span is not None:
                span.failed(str(exc.code), exc.message)
            return exc.http_status, encode_error(req.id, exc)
        except Exception:
            logger.exception("Unexpected error serving %s", req.method)
            if span is not None:
                span.failed(str(e.INTERNAL_ERROR), "internal error")
            return 200, encode_error(req.id, e.internal_error())


def _ping(req: Request, ex: Exchange) -> bytes:
    return complete(req, ex, {})


def _set_level(req: Request, ex: Exchange) -> bytes:
    level = req.params.get("level")
    if level not in LOG_LEVELS:
        raise e.invalid_params(f"Unknown log level: {level!r}; use one of {', '.join(LOG_LEVELS)}")
    assert ex.session is not None
    set_log_level(ex.session, level)
    return complete(req, ex, {})


def _discover(req: Request, ex: Exchange) -> bytes:
    result: dict[str, Any] = {
        "resultType": "complete",
        "supportedVersions": list(v.SUPPORTED_VERSIONS),
        # What this request's clientCapabilities declared: MCP Apps is offered to its clients only.
        "capabilities": capabilities(ex.revision, ex.asgi, apps=ex.apps_declared()),
        "ttlMs": mcp_settings.DISCOVER_TTL_MS,
        "cacheScope": "public",
        "_meta": modern_meta(),
    }
    if mcp_settings.INSTRUCTIONS:
        result["instructions"] = mcp_settings.INSTRUCTIONS
    return encode_result(req.id, result)


def _initialized(message: Notification, session: McpSession) -> None:
    mark_initialized(session)


def _cancelled(message: Notification, session: McpSession) -> None:
    cancel_request(session, message.params)


_BOTH = frozenset({LEGACY, MODERN})
_CORE_AND_EXTENSION = frozenset({CORE_TASKS, TASKS_EXTENSION})

# The one method table: a new method is a function in services/ and a line here.
METHODS: dict[str, Method] = {
    # Served by the transport through services.create_session (it sets Mcp-Session-Id); a
    # 2026-07-28 "initialize" is a removed method (404 + -32601).
    "initialize": Method(None, frozenset({LEGACY}), MethodTraits(opens_session=True)),
    "ping": Method(_ping, frozenset({LEGACY})),  # legacy: a session's, never on the loop
    "logging/setLevel": Method(_set_level, frozenset({LEGACY})),
    "server/discover": Method(_discover, frozenset({MODERN})),
    "tools/list": Method(tools.list_tools, _BOTH, IN_PROCESS),
    "tools/call": Method(calls.call_tool, _BOTH, MethodTraits(streams=True, fits_loop=calls.fits_loop)),
    # MCP Apps: the tools' ui:// views, for clients that declared io.modelcontextprotocol/ui.
    "resources/read": Method(resources.read_resource, _BOTH),
    "resources/list": Method(resources.list_resources, _BOTH),
    "resources/templates/list": Method(resources.list_resource_templates, _BOTH),
    # Served by the transport's listen stream (transport.streams.serve_listen).
    "subscriptions/listen": Method(None, frozenset({MODERN}), MethodTraits(subscribes=True)),
    "tasks/get": Method(task_methods.get, _CORE_AND_EXTENSION),
    "tasks/result": Method(task_methods.result, frozenset({CORE_TASKS}), MethodTraits(waits=True)),
    "tasks/list": Method(task_methods.list, frozenset({CORE_TASKS})),
    "tasks/cancel": Method(task_methods.cancel, _CORE_AND_EXTENSION),
    "tasks/update": Method(task_methods.update, frozenset({TASKS_EXTENSION})),
    "notifications/initialized": Method(None, frozenset({LEGACY}), MethodTraits(notification=True), _initialized),
    "notifications/cancelled": Method(None, frozenset({LEGACY}), MethodTraits(notification=True), _cancelled),
}
