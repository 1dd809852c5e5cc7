"""Dispatch: which methods a revision serves, and one request to its method."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..auth import AuthFailure
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Request, encode_error, encode_result
from ..protocol.negotiation import LOG_LEVELS
from ..protocol.versions import Revision
from ..tasking import StillWorking, tasks_enabled
from . import tasks, tools
from .exchange import Exchange, complete
from .identity import capabilities, modern_meta
from .sessions import set_log_level

logger = logging.getLogger("mcp_tools")

LEGACY_METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call", "logging/setLevel"})


MODERN_METHODS = frozenset({"server/discover", "tools/list", "tools/call", "subscriptions/listen"})


# Served only where the revision has them and MCP_TOOLS["TASKS_ENABLED"] is on (T11-1, TX-1, TX-12).
CORE_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})


EXTENSION_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})


def handle_request(req: Request, ex: Exchange) -> tuple[int, bytes] | None:
    """Serve one request: (HTTP status, framed response), or None when it was cancelled."""
    try:
        method = _METHODS.get(req.method)
        if method is None or req.method not in _allowed_methods(ex.revision):
            # H-D5: a modern request for a method we do not implement is a 404.
            raise e.method_not_found(req.method, http_status=404 if ex.revision.modern else 200)
        body = method(req, ex)
        return None if body is None else (200, body)
    except (AuthFailure, StillWorking):
        raise  # an HTTP-level answer (403 insufficient_scope), or tasks/result waiting: the view's
    except McpError as exc:
        return exc.http_status, encode_error(req.id, exc)
    except Exception:
        logger.exception("Unexpected error serving %s", req.method)
        return 200, encode_error(req.id, e.internal_error())


def _allowed_methods(rev: Revision) -> frozenset[str]:
    allowed = MODERN_METHODS if rev.modern else LEGACY_METHODS
    if tasks_enabled():
        if rev.core_tasks:
            allowed = allowed | CORE_TASK_METHODS
        elif rev.tasks_extension:
            allowed = allowed | EXTENSION_TASK_METHODS
    return allowed


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
        "capabilities": capabilities(ex.revision, ex.asgi),
        "ttlMs": mcp_settings.DISCOVER_TTL_MS,
        "cacheScope": "public",
        "_meta": modern_meta(),
    }
    if mcp_settings.INSTRUCTIONS:
        result["instructions"] = mcp_settings.INSTRUCTIONS
    return encode_result(req.id, result)


_METHODS: dict[str, Callable[[Request, Exchange], bytes | None]] = {
    "ping": _ping,
    "logging/setLevel": _set_level,
    "server/discover": _discover,
    "tools/list": tools.list_tools,
    "tools/call": tools.call_tool,
    "tasks/get": tasks.get,
    "tasks/result": tasks.result,
    "tasks/list": tasks.list,
    "tasks/cancel": tasks.cancel,
    "tasks/update": tasks.update,
}
