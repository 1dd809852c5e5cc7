"""tools/call: one ``ToolCall`` per call, its steps in order, one audit row from its final state.

Like DRF's ``APIView.initial`` then the handler: ``serve`` runs the steps in the order below;
a step that has the answer (a refusal, a task created, a cancellation) ends the call with
``_Answered``, and the audit row is written once, from what the call ended as.

1. ``find_tool``        the tool this grant may call (unknown and hidden answer alike; A-5 step-up)
2. ``read_arguments``   an object; 2026-07-28 parameter headers match it
3. ``decide_task``      whether this call becomes a task (T11-2..T11-4, TX-2)
4. ``check_arguments``  against the input schema (a result or -32602, per revision)
5. ``rate_limit``       per principal and tool
6. ``start_task``       a task call: its task (held while approval is pending), and the answer
7. ``approve``          a plain call of a tool that requires approval waits for a person
8. ``run``              within the principal's concurrent-call bound, through the runner
9. ``shape``            the result for the revision, within ``MAX_RESPONSE_BYTES``
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from .. import approvals, audit, cancel, discovery, ratelimit, runner, telemetry
from ..asking.waiting import people
from ..auth import AuthFailure, get_auth_backend
from ..catalog import Catalog, CompiledTool, get_catalog
from ..conf import mcp_settings
from ..models import ApprovalState
from ..protocol import errors as e
from ..protocol import task_wire
from ..protocol.errors import McpError
from ..protocol.headers import check_param_headers
from ..protocol.jsonrpc import Request
from ..protocol.negotiation import LOG_LEVELS, level_allows
from ..protocol.shaping import error_result, shape_result
from ..protocol.versions import Revision
from ..tasking import service as tasking
from ..tasking import tasks_enabled
from ..types import Asker
from . import inputs
from .exchange import Exchange, complete
from .identity import modern_meta
from .sessions import declared_capabilities
from .tools import callable_tool

__all__ = ["CALL_SLOT_SECONDS", "ToolCall", "call_tool"]

logger = logging.getLogger("mcp_tools")

# A process that died with calls running frees their slots after this long at the latest.
CALL_SLOT_SECONDS = 3600


def call_tool(req: Request, ex: Exchange) -> bytes | None:
    """tools/call, with one audit row per call whatever its outcome."""
    return ToolCall(req, ex).serve()


class _Answered(Exception):
    """A step has the call's answer (``None``: cancelled, nothing is sent)."""

    def __init__(self, body: bytes | None) -> None:
        self.body = body


class ToolCall:
    """One tools/call being served: what it found so far, and how it ended (for the audit)."""

    def __init__(self, req: Request, ex: Exchange) -> None:
        self.req = req
        self.ex = ex
        self.rev: Revision = ex.revision
        self.params = req.params
        self.name = req.params.get("name")
        self.given_arguments = req.params.get("arguments")
        self.tool: CompiledTool | None = None
        self.catalog: Catalog | None = None
        self.arguments: dict[str, Any] = {}
        self.as_task = False
        self.ttl: int | None = None
        # How the call ended, for its audit row.
        self.outcome = "invalid"
        self.detail = ""
        self.started = time.perf_counter()

    # ------------------------------------------------------------------ the call

    def serve(self) -> bytes | None:
        tracked = self.ex.cancelled.key  # legacy calls: notifications/cancelled may name this request
        if tracked is not None:
            cancel.track(tracked)
        try:
            body = self.steps()
            if body is None:
                self.outcome = "cancelled"
            return body
        except AuthFailure as exc:
            self.ended("denied", exc.description)
            raise
        except McpError as exc:
            self.detail = exc.message
            raise
        except Exception:
            self.ended("tool_error", "internal error")
            raise
        finally:
            if tracked is not None:
                cancel.untrack(tracked)
            self.audit()

    def steps(self) -> bytes | None:
        try:
            tool = self.find_tool()
            self.read_arguments(tool)
            self.decide_task(tool)
            self.check_arguments(tool)
            self.rate_limit(tool)
            if self.as_task:
                return self.start_task(tool)
            if tool.requires_approval:
                self.approve(tool)
            result = self.run(tool)
            return None if result is None else self.shape(tool, result)
        except _Answered as answered:
            return answered.body

    def ended(self, outcome: str, detail: str = "") -> None:
        self.outcome, self.detail = outcome, detail

    def answer(self, result: dict[str, Any]) -> _Answered:
        return _Answered(complete(self.req, self.ex, result))

    def refuse(self, outcome: str, message: str) -> _Answered:
        """End with a tool execution error (``isError``) saying ``message``."""
        self.ended(outcome, message)
        return self.answer(error_result(message, self.rev))

    def retry_later(self, message: str, seconds: float) -> _Answered:
        """End rate-limited, with ``_meta.retryAfterSeconds``."""
        self.ended("rate_limited", message)
        refused = error_result(message, self.rev)
        refused["_meta"] = {**(modern_meta() if self.rev.modern else {}), "retryAfterSeconds": seconds}
        return self.answer(refused)

    # ------------------------------------------------------------------ the steps, in order

    def find_tool(self) -> CompiledTool:
        catalog = self.catalog = get_catalog()
        self.ex.principal = catalog.with_permissions(self.ex.principal)  # handlers and tasks get the expanded scopes
        tool = callable_tool(self.name, self.ex.principal, catalog)
        if not tool.model_visible and not self.ex.apps_declared():
            # MCP Apps: an app-only tool is "callable by the app"; a client without the
            # extension has no app, so the tool answers as one that does not exist.
            raise e.invalid_params(f"Unknown tool: {self.name}")
        self.tool = tool
        telemetry.tool_found(tool.name)
        return tool

    def read_arguments(self, tool: CompiledTool) -> None:
        arguments = self.given_arguments
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise e.invalid_params("tools/call params.arguments must be an object")
        self.arguments = arguments
        if self.ex.modern is not None:
            check_param_headers(self.ex.headers, tool.param_headers, arguments)

    def decide_task(self, tool: CompiledTool) -> None:
        """Whether this call becomes a task, and the ttl the client asked for.

        2025-11-25 (T11-2..T11-4): the client asks with ``params.task``; a forbidden tool
        refuses it and a required tool refuses a call without it, both with -32601. 2026-07-28
        (TX-2): the server decides; only a request that declared the extension gets a task, and
        a tool that runs only as a task answers -32021 to one that did not.
        """
        if not tasks_enabled():
            return
        support = tool.spec.task_support
        if self.rev.core_tasks:
            augmented, ttl = task_wire.requested_ttl(self.params)
            if augmented and support == "forbidden":
                raise McpError(e.METHOD_NOT_FOUND, f"Tool {tool.name!r} does not support task-augmented calls")
            if not augmented and support == "required":
                raise McpError(e.METHOD_NOT_FOUND, f"Tool {tool.name!r} must be called as a task (params.task)")
            self.as_task, self.ttl = augmented, ttl
            return
        modern = self.ex.modern
        if self.rev.tasks_extension and modern is not None and support != "forbidden":
            if task_wire.client_declared_extension(modern.client_capabilities):
                self.as_task = True
            elif support == "required":
                raise task_wire.extension_required()

    def check_arguments(self, tool: CompiledTool) -> None:
        problems = tool.input_problems(self.arguments)
        if not problems:
            return
        message = f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems)
        if self.rev.input_errors_as_results:
            raise self.refuse("invalid", message)
        self.detail = message
        raise e.invalid_params(message, data={"errors": problems})

    def rate_limit(self, tool: CompiledTool) -> None:
        """The spec says servers MUST rate limit tool invocations: per principal and tool."""
        try:
            rate = ratelimit.parse_rate(tool.rate_limit or mcp_settings.RATE_LIMIT)
        except ValueError:
            logger.error("Tool %r has an invalid rate limit %r; using the site default", tool.name, tool.rate_limit)
            rate = ratelimit.parse_rate(mcp_settings.RATE_LIMIT)
        if rate is None:
            return
        retry = ratelimit.hit(f"{self.ex.principal.owner}\0{tool.name}", rate)
        if retry is None:
            return
        telemetry.rate_limited(tool.name)
        seconds = int(retry) if retry == int(retry) else retry
        message = f"Rate limit exceeded for tool {tool.name!r} ({rate.describe()}); retry after {seconds} seconds."
        raise self.retry_later(message, float(retry))

    def start_task(self, tool: CompiledTool) -> bytes | None:
        ex, rev = self.ex, self.rev
        if tool.requires_approval:  # held, working, until someone approves it (then enqueued)
            task = approvals.hold_task(tool, self.arguments, ex.principal, rev, self.ttl, self.declared())
        else:
            task = tasking.create_task(tool, self.arguments, ex.principal, rev, self.ttl, self.declared())
        state = tasking.state_of(task, rev)
        created = task_wire.ext_create_result(state) if rev.modern else task_wire.core_create_result(state)
        self.ended("ok", "task created" + (", awaiting approval" if tool.requires_approval else ""))
        return complete(self.req, ex, created)

    def approve(self, tool: CompiledTool) -> None:
        """Store the pending call and wait for a person's decision (any process may take it)."""
        ex = self.ex
        if not people.take():
            message = (
                "Too many calls on this server are waiting for a person right now; retry later "
                "(or call the tool as a task)."
            )
            raise self.retry_later(message, 5.0)
        try:
            pending = approvals.request(tool, self.arguments, ex.principal)
            timeout = approvals.timeout_of(tool)
            if ex.emit is not None and level_allows(self.log_threshold(), "info"):
                waiting = f"Call #{pending.pk} of tool {tool.name!r} awaits approval (up to {timeout} seconds)."
                ex.emit(
                    _notification("notifications/message", {"level": "info", "logger": "mcp_tools", "data": waiting})
                )
            row = approvals.await_decision(pending.pk, timeout, ex.cancelled)
        finally:
            people.give_back()
        if row.state == ApprovalState.APPROVED and approvals.claim(row.pk):
            return
        if row.state == ApprovalState.CANCELLED or ex.cancelled():
            raise _Answered(None)
        outcome = {"rejected": "rejected", "expired": "expired"}.get(str(row.state), "denied")
        raise self.refuse(outcome, approvals.refusal(row, tool.name, timeout))

    def run(self, tool: CompiledTool) -> dict[str, Any] | None:
        """The handler's shaped result, within the principal's bound of concurrent calls."""
        bound = mcp_settings.MAX_CALLS_PER_PRINCIPAL
        slot = f"calls:{self.ex.principal.owner}"
        if bound and not ratelimit.acquire_slot(slot, bound, CALL_SLOT_SECONDS):
            message = f"Too many of your tool calls are running at once (limit {bound}); retry when one has finished."
            raise self.retry_later(message, 1.0)
        try:
            asker = inputs.asker_for(self.ex, tool, self.arguments, self.params)
            return self.call_handler(tool, asker)
        finally:
            if bound:
                ratelimit.release_slot(slot)

    def call_handler(self, tool: CompiledTool, asker: Asker | None) -> dict[str, Any] | None:
        """Run the handler through the runner; None means it was cancelled."""
        ex = self.ex
        if discovery.is_builtin(tool):  # search_tools, describe_tools: answered with the caller's grant
            assert self.catalog is not None
            found = discovery.answer(
                tool,
                self.arguments,
                catalog=self.catalog,
                principal=ex.principal,
                visible=get_auth_backend().can_see,
                rev=self.rev,
                tasks_enabled=tasks_enabled(),
                apps=ex.apps_declared(),
            )
            return shape_result(runner.check_outcome(tool, found), self.rev)

        progress_token = _progress_token(self.params)

        def progress(value: float, total: float | None, message: str | None) -> None:
            # P-1: only for requests that asked and never after the end (ToolContext keeps it increasing).
            if progress_token is None or ex.emit is None or ex.cancelled():
                return
            params: dict[str, Any] = {"progressToken": progress_token, "progress": value}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            ex.emit(_notification("notifications/progress", params))

        threshold = self.log_threshold()

        def log(level: str, data: Any, logger_name: str | None) -> None:
            if ex.emit is None or level not in LOG_LEVELS or not level_allows(threshold, level):
                return
            params: dict[str, Any] = {"level": level, "data": data}
            if logger_name:
                params["logger"] = logger_name
            ex.emit(_notification("notifications/message", params))

        match runner.invoke(tool, self.arguments, ex.principal, progress, log, ex.cancelled, asker):
            case runner.Complete(result):
                return shape_result(result, self.rev)
            case runner.InputRequired(requests):
                return inputs.input_required(ex, tool, self.arguments, asker, requests)
            case runner.Cancelled():
                return None

    def shape(self, tool: CompiledTool, result: dict[str, Any]) -> bytes:
        self.outcome = "tool_error" if result.get("isError") else "ok"
        if result.get("resultType") == "input_required":
            self.detail = "input required: " + ", ".join(result["inputRequests"])
        body = complete(self.req, self.ex, result)
        limit = self.ex.max_bytes or mcp_settings.MAX_RESPONSE_BYTES
        if len(body) <= limit:
            return body
        # Sent as it is, one oversized result would hold its bytes in every buffer on the way.
        message = (
            f"The result of tool {tool.name!r} is too large to send ({len(body)} bytes; the limit is "
            f"{limit} bytes, MAX_RESPONSE_BYTES). Ask for less."
            if limit == mcp_settings.MAX_RESPONSE_BYTES
            else f"The result of tool {tool.name!r} ({len(body)} bytes) does not fit in what is left of "
            f"this batch's {mcp_settings.MAX_RESPONSE_BYTES} bytes (MAX_RESPONSE_BYTES); call it on its own."
        )
        del body
        raise self.refuse("tool_error", message)

    def audit(self) -> None:
        """The call's one audit row (and its telemetry), from the state it ended in."""
        tool = self.tool
        telemetry.call_ended(None if tool is None else tool.name, self.outcome, self.detail)
        audit.record(
            principal=self.ex.principal,
            tool_name=self.name if isinstance(self.name, str) else repr(self.name),
            tool_version=tool.version if tool is not None else None,
            arguments=self.given_arguments if isinstance(self.given_arguments, dict) else None,
            sensitive=tool.sensitive_arguments if tool is not None else frozenset(),
            outcome=self.outcome,
            detail=self.detail,
            duration_ms=(time.perf_counter() - self.started) * 1000,
            request_id=self.req.id,
            protocol_version=self.rev.version,
        )

    # ------------------------------------------------------------------ what the steps share

    def declared(self) -> dict[str, Any]:
        """What the client declared it can answer: the request's (2026-07-28) or the session's."""
        if self.ex.modern is not None:
            return dict(self.ex.modern.client_capabilities)
        return declared_capabilities(self.ex.session) if self.ex.session is not None else {}

    def log_threshold(self) -> str | None:
        ex = self.ex
        if ex.modern is not None:
            return ex.modern.log_level  # LG-3: only when this request asked for it.
        if ex.session is not None and ex.session.log_level:
            return ex.session.log_level
        return "debug"


def _progress_token(params: dict[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, str | int) and not isinstance(token, bool) else None


def _notification(method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params})
