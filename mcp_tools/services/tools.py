"""tools/list and tools/call: the catalog page for a scope set, and one call through the runner."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import orjson

from .. import approvals, audit, cancel, ratelimit, runner
from ..asking.waiting import people
from ..auth import AuthFailure, get_auth_backend
from ..catalog import Catalog, CompiledTool, get_catalog
from ..conf import mcp_settings
from ..models import ApprovalState
from ..protocol import errors as e
from ..protocol import tasks as task_wire
from ..protocol.cursor import decode_cursor, encode_cursor
from ..protocol.errors import McpError
from ..protocol.headers import check_param_headers
from ..protocol.jsonrpc import Request, encode_raw_result
from ..protocol.negotiation import LOG_LEVELS, level_allows
from ..protocol.versions import Revision
from ..tasking import service as tasking
from ..tasking import tasks_enabled
from ..types import Asker, Principal
from . import inputs
from .exchange import Exchange, complete
from .identity import cursor_key, modern_meta
from .sessions import declared_capabilities

logger = logging.getLogger("mcp_tools")


def list_tools(req: Request, ex: Exchange) -> bytes:
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
        catalog.entitled(ex.principal),
        backend.can_see,
        after,
        mcp_settings.PAGE_SIZE,
        render,
        tasks_enabled=tasks_enabled(),
        max_bytes=mcp_settings.MAX_RESPONSE_BYTES,
    )
    return encode_raw_result(req.id, body)


def find_tool(name: Any, principal: Principal, catalog: Catalog) -> CompiledTool:
    if not isinstance(name, str):
        raise e.invalid_params("tools/call needs params.name (a string)")
    backend = get_auth_backend()
    tool = catalog.get(name)
    if tool is not None and not tool.permitted(principal):
        tool = None  # a Django permission the user lacks: no scope would help
    if tool is not None and not backend.can_see(tool, principal):
        # A-5 step-up: a tool the user could be granted gets 403 insufficient_scope.
        failure = backend.step_up(tool, principal)
        if failure is not None:
            raise failure
        tool = None
    # A tool the caller may not see otherwise answers exactly like a tool that does not exist.
    if tool is None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "tools/call of %r by %s: %s; manage.py mcp_explain --tool %s says why",
                name[:100], principal.key, "hidden from this caller" if catalog.get(name) else "no such enabled tool",
                name[:100],
            )  # fmt: skip
        raise e.invalid_params(f"Unknown tool: {name}")
    return tool


def authorize_batch(requests: list[Request], principal: Principal) -> None:
    """Raise the step-up ``AuthFailure`` of the first ``tools/call`` in ``requests`` the
    principal may not make, before any of them runs; other problems are answered per item."""
    catalog = get_catalog()
    scoped = catalog.entitled(principal)
    for req in requests:
        if req.method == "tools/call":
            try:
                find_tool(req.params.get("name"), scoped, catalog)
            except McpError:
                continue


def call_tool(req: Request, ex: Exchange) -> bytes | None:
    """tools/call, with one audit row per call whatever its outcome."""
    started = time.perf_counter()
    params = req.params
    name = params.get("name")
    arguments = params.get("arguments")
    note: dict[str, Any] = {"outcome": "invalid", "detail": "", "tool": None}
    tracked = ex.cancelled.key  # legacy calls: notifications/cancelled may name this request
    if tracked is not None:
        cancel.track(tracked)
    try:
        body = _call_inner(req, ex, note)
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
        if tracked is not None:
            cancel.untrack(tracked)
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


def _call_inner(req: Request, ex: Exchange, note: dict[str, Any]) -> bytes | None:
    params = req.params
    catalog = get_catalog()
    ex.principal = catalog.entitled(ex.principal)  # handlers and tasks get the expanded scopes
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
    problems = tool.input_problems(arguments)
    if problems:
        message = f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems)
        note["detail"] = message
        if rev.input_errors_as_results:
            return complete(req, ex, runner.refusal(message, rev))
        raise e.invalid_params(message, data={"errors": problems})
    limited = _rate_limited(tool, ex)
    if limited is not None:
        note.update(outcome="rate_limited", detail=limited[0])
        return complete(req, ex, _retry_later(limited[0], limited[1], rev))
    if as_task:
        if tool.requires_approval:  # held, working, until someone approves it (then enqueued)
            task = approvals.hold_task(tool, arguments, ex.principal, rev, ttl, _declared(ex))
        else:
            task = tasking.create_task(tool, arguments, ex.principal, rev, ttl, _declared(ex))
        state = tasking.state_of(task, rev)
        created = task_wire.ext_create_result(state) if rev.modern else task_wire.core_create_result(state)
        note.update(outcome="ok", detail="task created" + (", awaiting approval" if tool.requires_approval else ""))
        return complete(req, ex, created)
    if tool.requires_approval:
        gate = _await_approval(req, ex, tool, arguments, note)
        if not isinstance(gate, _Approved):
            return gate  # the refusal, or None: cancelled while waiting
    bound = mcp_settings.MAX_CALLS_PER_PRINCIPAL
    slot = f"calls:{ex.principal.owner}"
    if bound and not ratelimit.acquire_slot(slot, bound, CALL_SLOT_SECONDS):
        message = f"Too many of your tool calls are running at once (limit {bound}); retry when one has finished."
        note.update(outcome="rate_limited", detail=message)
        return complete(req, ex, _retry_later(message, 1.0, rev))
    try:
        asker = inputs.asker_for(ex, tool, arguments, params)
        result = run_tool(tool, arguments, ex, progress_token=_progress_token(params), asker=asker)
    finally:
        if bound:
            ratelimit.release_slot(slot)
    if result is None:
        return None
    note["outcome"] = "tool_error" if result.get("isError") else "ok"
    if result.get("resultType") == "input_required":
        note["detail"] = "input required: " + ", ".join(result["inputRequests"])
    body = complete(req, ex, result)
    limit = ex.max_bytes or mcp_settings.MAX_RESPONSE_BYTES
    if len(body) > limit:
        # Sent as it is, one oversized result would hold its bytes in every buffer on the way.
        message = (
            f"The result of tool {tool.name!r} is too large to send ({len(body)} bytes; the limit is "
            f"{limit} bytes, MAX_RESPONSE_BYTES). Ask for less."
            if limit == mcp_settings.MAX_RESPONSE_BYTES
            else f"The result of tool {tool.name!r} ({len(body)} bytes) does not fit in what is left of "
            f"this batch's {mcp_settings.MAX_RESPONSE_BYTES} bytes (MAX_RESPONSE_BYTES); call it on its own."
        )
        del body
        note.update(outcome="tool_error", detail=message)
        return complete(req, ex, runner.refusal(message, rev))
    return body


class _Approved:
    """The call was approved and this process claimed it: run it."""


APPROVED = _Approved()


def _await_approval(
    req: Request, ex: Exchange, tool: CompiledTool, arguments: dict[str, Any], note: dict[str, Any]
) -> bytes | None | _Approved:
    """Store the pending call and wait for a person's decision (any process may take it)."""
    if not people.take():
        message = (
            "Too many calls on this server are waiting for a person right now; retry later "
            "(or call the tool as a task)."
        )
        note.update(outcome="rate_limited", detail=message)
        return complete(req, ex, _retry_later(message, 5.0, ex.revision))
    try:
        pending = approvals.request(tool, arguments, ex.principal)
        timeout = approvals.timeout_of(tool)
        if ex.emit is not None and level_allows(_log_threshold(ex), "info"):
            waiting = f"Call #{pending.pk} of tool {tool.name!r} awaits approval (up to {timeout} seconds)."
            logged = {"level": "info", "logger": "mcp_tools", "data": waiting}
            ex.emit(_notification("notifications/message", logged))
        row = approvals.await_decision(pending.pk, timeout, ex.cancelled)
    finally:
        people.give_back()
    if row.state == ApprovalState.APPROVED and approvals.claim(row.pk):
        return APPROVED
    if row.state == ApprovalState.CANCELLED or ex.cancelled():
        return None
    message = approvals.refusal(row, tool.name, timeout)
    outcome = {"rejected": "rejected", "expired": "expired"}.get(str(row.state), "denied")
    note.update(outcome=outcome, detail=message)
    return complete(req, ex, runner.refusal(message, ex.revision))


def _declared(ex: Exchange) -> dict[str, Any]:
    """What the client declared it can answer: the request's (2026-07-28) or the session's."""
    if ex.modern is not None:
        return dict(ex.modern.client_capabilities)
    return declared_capabilities(ex.session) if ex.session is not None else {}


# A process that died with calls running frees their slots after this long at the latest.
CALL_SLOT_SECONDS = 3600


def _retry_later(message: str, seconds: float, rev: Revision) -> dict[str, Any]:
    """A tool execution error asking to retry, with ``_meta.retryAfterSeconds``."""
    refused = runner.refusal(message, rev)
    refused["_meta"] = {**(modern_meta() if rev.modern else {}), "retryAfterSeconds": seconds}
    return refused


def _rate_limited(tool: CompiledTool, ex: Exchange) -> tuple[str, float] | None:
    """The spec says servers MUST rate limit tool invocations: per principal and tool."""
    try:
        rate = ratelimit.parse_rate(tool.rate_limit or mcp_settings.RATE_LIMIT)
    except ValueError:
        logger.error("Tool %r has an invalid rate limit %r; using the site default", tool.name, tool.rate_limit)
        rate = ratelimit.parse_rate(mcp_settings.RATE_LIMIT)
    if rate is None:
        return None
    retry = ratelimit.hit(f"{ex.principal.owner}\0{tool.name}", rate)
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
    if not tasks_enabled():
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
    tool: CompiledTool,
    arguments: dict[str, Any],
    ex: Exchange,
    *,
    progress_token: str | int | None,
    asker: Asker | None = None,
) -> dict[str, Any] | None:
    """Run the handler through the runner and shape its outcome; None means it was cancelled."""
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

    match runner.invoke(tool, arguments, ex.principal, progress, log, ex.cancelled, asker):
        case runner.Complete(result):
            return runner.shape_result(result, rev)
        case runner.InputRequired(requests):
            return inputs.input_required(ex, tool, arguments, asker, requests)
        case runner.Cancelled():
            return None


def _log_threshold(ex: Exchange) -> str | None:
    if ex.modern is not None:
        return ex.modern.log_level  # LG-3: only when this request asked for it.
    if ex.session is not None and ex.session.log_level:
        return ex.session.log_level
    return "debug"


def _notification(method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})
