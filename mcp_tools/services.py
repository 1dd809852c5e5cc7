"""MCP methods served from the database: sessions, discovery, tools/list and tools/call.

Everything here is synchronous Django code run off the event loop; the view does the I/O.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from typing import Any

import orjson
from django.core.cache import cache
from django.db import connections, router
from django.utils import timezone

from . import __version__, audit, ratelimit, task_service
from .auth import AuthFailure, get_auth_backend
from .cancel import CancelFlag as CancelFlag  # re-exported: the view builds them
from .catalog import Catalog, CompiledTool, get_catalog
from .conf import mcp_settings
from .exceptions import ToolCancelled, ToolError
from .models import McpSession
from .protocol import errors as e
from .protocol import tasks as task_wire
from .protocol import versions as v
from .protocol.cursor import decode_cursor, encode_cursor
from .protocol.errors import McpError
from .protocol.headers import check_param_headers
from .protocol.jsonrpc import Request, encode_error, encode_raw_result, encode_result
from .protocol.negotiation import LOG_LEVELS, ModernRequestMeta, level_allows, negotiate_legacy
from .protocol.shaping import error_result, shape_call_result
from .protocol.versions import Revision
from .registry import registry
from .schemas import error_messages
from .types import Principal, ToolContext, ToolResult, text

logger = logging.getLogger("mcp_tools")

LEGACY_METHODS = frozenset({"initialize", "ping", "tools/list", "tools/call", "logging/setLevel"})
MODERN_METHODS = frozenset({"server/discover", "tools/list", "tools/call", "subscriptions/listen"})
# Served only where the revision has them and MCP_TOOLS["TASKS_ENABLED"] is on (T11-1, TX-1, TX-12).
CORE_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
EXTENSION_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


class SessionNotFound(Exception):
    """Unknown, expired, ended, or owned by another principal: all answer 404 (H-14, H-15)."""


@dataclass(slots=True)
class Exchange:
    """One JSON-RPC request being served, with what its era told us."""

    revision: Revision
    principal: Principal
    headers: Mapping[str, str]
    session: McpSession | None = None
    modern: ModernRequestMeta | None = None
    emit: Callable[[bytes], None] | None = None
    cancelled: CancelFlag = field(default_factory=lambda: CancelFlag(None))
    # Served under ASGI, where notification streams can stay open (listChanged).
    asgi: bool = False
    # tasks/result: until when (time.monotonic) the view keeps waiting for a working task.
    wait_until: float = 0.0


# --------------------------------------------------------------------------- server identity


@lru_cache(maxsize=8)
def _server_info(title: bool) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": mcp_settings.SERVER_NAME,
        "version": mcp_settings.SERVER_VERSION or __version__,
    }
    if title and mcp_settings.SERVER_TITLE:
        info["title"] = mcp_settings.SERVER_TITLE
    return info


def server_info(rev: Revision) -> dict[str, Any]:
    return _server_info(rev.title_and_output_schema)


def list_changed_supported(asgi: bool) -> bool:
    """Whether this deployment can deliver notifications/tools/list_changed (T-1).

    Only under ASGI: a WSGI worker cannot hold streams open while serving other requests.
    """
    from .notify.backends import NullNotifier, get_notifier

    return asgi and not isinstance(get_notifier(), NullNotifier)


def capabilities(rev: Revision, asgi: bool) -> dict[str, Any]:
    caps: dict[str, Any] = {"logging": {}, "tools": {"listChanged": list_changed_supported(asgi)}}
    if task_service.tasks_enabled():
        if rev.core_tasks:
            caps["tasks"] = task_wire.core_capabilities()
        if rev.tasks_extension:
            caps["extensions"] = task_wire.ext_capabilities()
    return caps


def tools_fingerprint(principal: Principal) -> tuple[str, int]:
    """What ``principal`` sees now, as (fingerprint, catalog version)."""
    catalog = get_catalog()
    return catalog.fingerprint(catalog.scoped(principal), get_auth_backend().can_see), catalog.version


def modern_meta() -> dict[str, Any]:
    return {v.META_SERVER_INFO: server_info(v.get_revision(v.V2026_07_28))}


# --------------------------------------------------------------------------- sessions


def create_session(req: Request, principal: Principal, *, asgi: bool) -> tuple[bytes, str]:
    """L-1..L-4: answer initialize and open a session row; returns (response, session id)."""
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
        client_info=client_info if isinstance(client_info, dict) else {},
        client_capabilities=caps if isinstance(caps, dict) else {},
        expires_at=McpSession.expiry(mcp_settings.SESSION_IDLE_SECONDS),
        tools_fingerprint=tools_fingerprint(principal)[0] if list_changed_supported(asgi) else "",
    )
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(rev, asgi),
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


def end_session(session_id: str, principal: Principal) -> bool:
    return McpSession.objects.filter(pk=session_id, principal_key=principal.key).delete()[0] > 0


def mark_initialized(session: McpSession) -> None:
    if not session.initialized:
        McpSession.objects.filter(pk=session.pk).update(initialized=True)


def cancel_request(session: McpSession | None, params: Mapping[str, Any]) -> None:
    """C-1: flag an in-flight request as cancelled; malformed or unknown ids are ignored."""
    request_id = params.get("requestId")
    if session is None or isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return
    cache.set(CancelFlag.cache_key(session.pk, request_id), 1, timeout=3600)


# --------------------------------------------------------------------------- dispatch


def handle_request(req: Request, ex: Exchange) -> tuple[int, bytes] | None:
    """Serve one request: (HTTP status, framed response), or None when it was cancelled."""
    try:
        method = _METHODS.get(req.method)
        if method is None or req.method not in _allowed_methods(ex.revision):
            # H-D5: a modern request for a method we do not implement is a 404.
            raise e.method_not_found(req.method, http_status=404 if ex.revision.modern else 200)
        body = method(req, ex)
        return None if body is None else (200, body)
    except (AuthFailure, task_service.StillWorking):
        raise  # an HTTP-level answer (403 insufficient_scope), or tasks/result waiting: the view's
    except McpError as exc:
        return exc.http_status, encode_error(req.id, exc)
    except Exception:
        logger.exception("Unexpected error serving %s", req.method)
        return 200, encode_error(req.id, e.internal_error())


def _allowed_methods(rev: Revision) -> frozenset[str]:
    allowed = MODERN_METHODS if rev.modern else LEGACY_METHODS
    if task_service.tasks_enabled():
        if rev.core_tasks:
            allowed = allowed | CORE_TASK_METHODS
        elif rev.tasks_extension:
            allowed = allowed | EXTENSION_TASK_METHODS
    return allowed


def _result(req: Request, ex: Exchange, result: dict[str, Any]) -> bytes:
    if ex.revision.modern:
        result.setdefault("resultType", "complete")
        result.setdefault("_meta", modern_meta())
    return encode_result(req.id, result)


def _ping(req: Request, ex: Exchange) -> bytes:
    return _result(req, ex, {})


def _set_level(req: Request, ex: Exchange) -> bytes:
    level = req.params.get("level")
    if level not in LOG_LEVELS:
        raise e.invalid_params(f"Unknown log level: {level!r}; use one of {', '.join(LOG_LEVELS)}")
    assert ex.session is not None
    McpSession.objects.filter(pk=ex.session.pk).update(log_level=level)
    return _result(req, ex, {})


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


@lru_cache(maxsize=4)
def _cursor_key(secret: str, explicit: str | None) -> bytes:
    import hashlib

    return hashlib.sha256(b"mcp_tools.cursor\0" + (explicit or secret).encode()).digest()


def cursor_key() -> bytes:
    from django.conf import settings

    return _cursor_key(settings.SECRET_KEY, mcp_settings.CURSOR_KEY)


def _list_tools(req: Request, ex: Exchange) -> bytes:
    backend = get_auth_backend()
    key = cursor_key()
    raw_cursor = req.params.get("cursor")
    after = None if raw_cursor is None else decode_cursor(raw_cursor, key, scope="tools/list")
    rev = ex.revision

    def render(tools: list[dict[str, Any]], next_after: str | None) -> bytes:
        result: dict[str, Any] = {}
        if rev.modern:
            result["resultType"] = "complete"
        result["tools"] = tools
        if next_after is not None:
            result["nextCursor"] = encode_cursor(next_after, key, scope="tools/list")
        if rev.modern:
            # T-7: a list filtered by authorization is private; every page shares the scope.
            result["ttlMs"] = mcp_settings.LIST_TTL_MS
            result["cacheScope"] = "private"
            result["_meta"] = modern_meta()
        return orjson.dumps(result)

    catalog = get_catalog()
    body = catalog.page(
        rev,
        catalog.scoped(ex.principal),
        backend.can_see,
        after,
        mcp_settings.PAGE_SIZE,
        render,
        tasks_enabled=task_service.tasks_enabled(),
    )
    return encode_raw_result(req.id, body)


# --------------------------------------------------------------------------- tools/call


def find_tool(name: Any, principal: Principal, catalog: Catalog) -> CompiledTool:
    if not isinstance(name, str):
        raise e.invalid_params("tools/call needs params.name (a string)")
    backend = get_auth_backend()
    tool = catalog.get(name)
    if tool is not None and not backend.can_see(tool, principal):
        # A-5 step-up: a tool the user could be granted gets 403 insufficient_scope.
        failure = backend.step_up(tool, principal)
        if failure is not None:
            raise failure
        tool = None
    # A tool the caller may not see otherwise answers exactly like a tool that does not exist.
    if tool is None:
        raise e.invalid_params(f"Unknown tool: {name}")
    return tool


def _call_tool(req: Request, ex: Exchange) -> bytes | None:
    """tools/call, with one audit row per call whatever its outcome."""
    started = time.perf_counter()
    params = req.params
    name = params.get("name")
    arguments = params.get("arguments")
    note: dict[str, Any] = {"outcome": "invalid", "detail": "", "tool": None}
    try:
        body = _call_tool_inner(req, ex, note)
        if body is None:
            note["outcome"] = "cancelled"
        return body
    except AuthFailure as exc:
        note.update(outcome="denied", detail=exc.description)
        raise
    except McpError as exc:
        note["detail"] = exc.message
        raise
    except Exception:
        note.update(outcome="tool_error", detail="internal error")
        raise
    finally:
        tool: CompiledTool | None = note["tool"]
        audit.record(
            principal=ex.principal,
            tool_name=name if isinstance(name, str) else repr(name),
            tool_version=tool.version if tool is not None else None,
            arguments=arguments if isinstance(arguments, dict) else None,
            sensitive=tool.sensitive_arguments if tool is not None else frozenset(),
            outcome=note["outcome"],
            detail=note["detail"],
            duration_ms=(time.perf_counter() - started) * 1000,
            request_id=req.id,
            protocol_version=ex.revision.version,
        )


def _call_tool_inner(req: Request, ex: Exchange, note: dict[str, Any]) -> bytes | None:
    params = req.params
    catalog = get_catalog()
    ex.principal = catalog.scoped(ex.principal)  # handlers and tasks get the expanded scopes
    tool = find_tool(params.get("name"), ex.principal, catalog)
    note["tool"] = tool
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise e.invalid_params("tools/call params.arguments must be an object")
    if ex.modern is not None:
        check_param_headers(ex.headers, tool.param_headers, arguments)
    rev = ex.revision
    as_task, ttl = _task_decision(tool, params, ex)
    problems = error_messages(tool.input_validator, arguments)
    if problems:
        message = f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems)
        note["detail"] = message
        if rev.input_errors_as_results:
            return _result(req, ex, error_result(message, rev))
        raise e.invalid_params(message, data={"errors": problems})
    limited = _rate_limited(tool, ex)
    if limited is not None:
        note.update(outcome="rate_limited", detail=limited[0])
        refused = error_result(limited[0], rev)
        refused["_meta"] = {**(modern_meta() if rev.modern else {}), "retryAfterSeconds": limited[1]}
        return _result(req, ex, refused)
    if as_task:
        task = task_service.create_task(tool, arguments, ex, ttl)
        state = task_service.state_of(task, rev)
        created = task_wire.ext_create_result(state) if rev.modern else task_wire.core_create_result(state)
        note.update(outcome="ok", detail="task created")
        return _result(req, ex, created)
    result = run_tool(tool, arguments, ex, progress_token=_progress_token(params))
    if result is None:
        return None
    note["outcome"] = "tool_error" if result.get("isError") else "ok"
    return _result(req, ex, result)


def _rate_limited(tool: CompiledTool, ex: Exchange) -> tuple[str, float] | None:
    """The spec says servers MUST rate limit tool invocations: per principal and tool."""
    try:
        rate = ratelimit.parse_rate(tool.rate_limit or mcp_settings.RATE_LIMIT)
    except ValueError:
        logger.error("Tool %r has an invalid rate limit %r; using the site default", tool.name, tool.rate_limit)
        rate = ratelimit.parse_rate(mcp_settings.RATE_LIMIT)
    if rate is None:
        return None
    retry = ratelimit.hit(f"{ex.principal.key}\0{tool.name}", rate)
    if retry is None:
        return None
    seconds = int(retry) if retry == int(retry) else retry
    return (
        f"Rate limit exceeded for tool {tool.name!r} ({rate.describe()}); retry after {seconds} seconds.",
        float(retry),
    )


def _task_decision(tool: CompiledTool, params: Mapping[str, Any], ex: Exchange) -> tuple[bool, int | None]:
    """Whether this call becomes a task, and the ttl the client asked for.

    2025-11-25 (T11-2..T11-4): the client asks with ``params.task``; a forbidden tool refuses
    it and a required tool refuses a call without it, both with -32601. 2026-07-28 (TX-2): the
    server decides; only a request that declared the extension gets a task, and a tool that
    runs only as a task answers -32021 to one that did not.
    """
    rev = ex.revision
    if not task_service.tasks_enabled():
        return False, None
    support = tool.spec.task_support
    if rev.core_tasks:
        augmented, ttl = task_wire.requested_ttl(params)
        if augmented and support == "forbidden":
            raise McpError(e.METHOD_NOT_FOUND, f"Tool {tool.name!r} does not support task-augmented calls")
        if not augmented and support == "required":
            raise McpError(e.METHOD_NOT_FOUND, f"Tool {tool.name!r} must be called as a task (params.task)")
        return augmented, ttl
    if rev.tasks_extension and ex.modern is not None and support != "forbidden":
        if task_wire.client_declared_extension(ex.modern.client_capabilities):
            return True, None
        if support == "required":
            raise task_wire.extension_required()
    return False, None


def _progress_token(params: Mapping[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def run_tool(
    tool: CompiledTool, arguments: dict[str, Any], ex: Exchange, *, progress_token: str | int | None
) -> dict[str, Any] | None:
    """Run the handler and shape its outcome; None means the call was cancelled."""
    rev = ex.revision

    def progress(value: float, total: float | None, message: str | None) -> None:
        # P-1: only for requests that asked and never after the end (ToolContext keeps it increasing).
        if progress_token is None or ex.emit is None or ex.cancelled():
            return
        note: dict[str, Any] = {"progressToken": progress_token, "progress": value}
        if total is not None:
            note["total"] = total
        if message is not None:
            note["message"] = message
        ex.emit(_notification("notifications/progress", note))

    threshold = _log_threshold(ex)

    def log(level: str, data: Any, logger_name: str | None) -> None:
        if ex.emit is None or level not in LOG_LEVELS or not level_allows(threshold, level):
            return
        note: dict[str, Any] = {"level": level, "data": data}
        if logger_name:
            note["logger"] = logger_name
        ex.emit(_notification("notifications/message", note))

    outcome = invoke(tool, arguments, ex.principal, progress, log, ex.cancelled)
    if outcome is None:
        return None
    return shape_result(outcome, rev)


ProgressFn = Callable[[float, float | None, str | None], None]
LogFn = Callable[[str, Any, str | None], None]


def invoke(
    tool: CompiledTool,
    arguments: dict[str, Any],
    principal: Principal,
    progress: ProgressFn,
    log: LogFn,
    cancelled: Callable[[], bool],
) -> ToolResult | None:
    """Run a tool's handler (in the web process or a task worker); None means it was cancelled.

    The outcome is revision-neutral: failures become ``isError`` results, never exceptions.
    """
    kind = registry.get(tool.handler_key)
    if kind is None:
        logger.error("Tool %r names handler %r, which is not registered", tool.name, tool.handler_key)
        return _error(f"Tool {tool.name!r} is not available right now.")
    context = ToolContext(
        arguments=arguments,
        config=tool.handler_config,
        principal=principal,
        tool_name=tool.name,
        tool_version=tool.version,
        _progress=progress,
        _log=log,
        _cancelled=cancelled,
    )
    try:
        outcome = kind.func(context)
    except ToolError as exc:
        return _error(exc.message)
    except ToolCancelled:
        return None
    except Exception:
        reference = uuid.uuid4().hex[:12]
        logger.exception("Tool %r failed (reference %s)", tool.name, reference)
        return _error(f"Tool {tool.name!r} failed unexpectedly (reference {reference}).")
    if cancelled():
        return None
    return check_outcome(tool, outcome)


def _error(message: str) -> ToolResult:
    return ToolResult(content=[text(message)], is_error=True)


def _log_threshold(ex: Exchange) -> str | None:
    if ex.modern is not None:
        return ex.modern.log_level  # LG-3: only when this request asked for it.
    if ex.session is not None and ex.session.log_level:
        return ex.session.log_level
    return "debug"


def _notification(method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})


def normalize(outcome: Any) -> ToolResult:
    """Turn what a handler returned into a ToolResult (see the handler docs)."""
    if isinstance(outcome, ToolResult):
        return outcome
    if isinstance(outcome, str):
        return ToolResult(content=[text(outcome)])
    if (
        isinstance(outcome, list)
        and outcome
        and all(isinstance(b, dict) and b.get("type") in CONTENT_TYPES for b in outcome)
    ):
        return ToolResult(content=list(outcome))
    if isinstance(outcome, dict) and outcome.get("type") in CONTENT_TYPES:
        return ToolResult(content=[outcome])
    if outcome is None:
        return ToolResult(content=[])
    return ToolResult(structured_content=outcome)


def check_outcome(tool: CompiledTool, outcome: Any) -> ToolResult:
    """Normalise and check a handler's outcome: a valid ToolResult, or an isError one saying why."""
    try:
        result = normalize(outcome)
        content = list(result.content)
        for block in content:
            if not isinstance(block, dict) or block.get("type") not in CONTENT_TYPES:
                raise TypeError(f"not a content block: {block!r:.80}")
        if result.has_structured:
            structured_json = orjson.dumps(result.structured_content).decode()
            if not result.is_error and mcp_settings.VALIDATE_OUTPUT and tool.output_validator is not None:
                problems = error_messages(tool.output_validator, result.structured_content)
                if problems:
                    logger.error("Tool %r returned output that breaks its outputSchema: %s", tool.name, problems)
                    return _error(f"Tool {tool.name!r} produced output that does not match its output schema.")
            if not content:
                # T-11: mirror structured content as JSON text for older clients.
                content = [text(structured_json)]
        elif tool.output_validator is not None and not result.is_error:
            logger.error("Tool %r has an outputSchema but returned no structured content", tool.name)
            return _error(f"Tool {tool.name!r} produced no structured output.")
        if result.meta is not None:
            orjson.dumps(result.meta)
    except (TypeError, orjson.JSONEncodeError):
        logger.exception("Tool %r returned a value that is not a valid tool result", tool.name)
        return _error(f"Tool {tool.name!r} returned an invalid result.")
    return ToolResult(
        content=content, structured_content=result.structured_content, is_error=result.is_error, meta=result.meta
    )


def shape_result(result: ToolResult, rev: Revision) -> dict[str, Any]:
    return shape_call_result(
        result.content,
        rev,
        structured=result.structured_content,
        has_structured=result.has_structured,
        is_error=result.is_error,
        meta=result.meta,
    )


# --------------------------------------------------------------------------- tasks


def _task_request(ex: Exchange) -> None:
    """TX-11: the extension's task methods need the extension declared in this request."""
    if ex.modern is not None and not task_wire.client_declared_extension(ex.modern.client_capabilities):
        raise task_wire.extension_required()


def _tasks_get(req: Request, ex: Exchange) -> bytes:
    _task_request(ex)
    task = task_service.find_task(req.params, ex.principal)
    state = task_service.state_of(task, ex.revision)
    if ex.revision.modern:
        return _result(req, ex, task_wire.ext_detailed(state))
    return _result(req, ex, task_wire.core_task(state))


def _tasks_result(req: Request, ex: Exchange) -> bytes:
    """T11-10: block until terminal, then answer what tools/call would have, with related-task meta."""
    task = task_service.find_task(req.params, ex.principal)
    task = task_service.terminal_or_wait(task, ex.wait_until)
    if task.error_code is not None:
        raise McpError(task.error_code, task.error_message)
    if task.result is None:
        raise e.invalid_params(f"Task {task.pk} was cancelled and has no result")
    result = shape_result(task_service.load_result(task.result), ex.revision)
    result["_meta"] = {**(result.get("_meta") or {}), **task_wire.related_task_meta(task.pk)}
    return _result(req, ex, result)


def _tasks_list(req: Request, ex: Exchange) -> bytes:
    page, next_cursor = task_service.list_page(
        ex.principal, req.params.get("cursor"), cursor_key(), int(mcp_settings.PAGE_SIZE)
    )
    result: dict[str, Any] = {"tasks": [task_wire.core_task(task_service.state_of(t, ex.revision)) for t in page]}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return _result(req, ex, result)


def _tasks_cancel(req: Request, ex: Exchange) -> bytes:
    _task_request(ex)
    task = task_service.find_task(req.params, ex.principal)
    cancelled = task_service.cancel(task)
    if ex.revision.modern:
        # TX-8: an empty acknowledgement; cancellation is eventually consistent.
        return _result(req, ex, {})
    if not cancelled:
        # T11-13: a terminal task cannot be cancelled.
        raise e.invalid_params(f"Cannot cancel task {task.pk}: it is already {task.status}")
    task.refresh_from_db()
    return _result(req, ex, task_wire.core_task(task_service.state_of(task, ex.revision)))


def _tasks_update(req: Request, ex: Exchange) -> bytes:
    """TX-7: acknowledge; our tools never ask for input, so no answer is outstanding."""
    _task_request(ex)
    task_service.find_task(req.params, ex.principal)
    if not isinstance(req.params.get("inputResponses"), dict):
        raise e.invalid_params("tasks/update needs params.inputResponses (an object)")
    return _result(req, ex, {})


_METHODS: dict[str, Callable[[Request, Exchange], bytes | None]] = {
    "ping": _ping,
    "logging/setLevel": _set_level,
    "server/discover": _discover,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
    "tasks/get": _tasks_get,
    "tasks/result": _tasks_result,
    "tasks/list": _tasks_list,
    "tasks/cancel": _tasks_cancel,
    "tasks/update": _tasks_update,
}
