"""tools/call: one ``ToolCall`` per call, its steps in order, one audit row from its final state.

Like DRF's ``APIView.initial`` then the handler: ``serve`` runs ``ToolCall.STEPS`` in order, for
a plain call and a task call alike (each step does its part for both); a step that has the
answer (a refusal, a task created, a cancellation) ends the call with ``_Answered``, and the
audit row is written once, from what the call ended as. The list below is ``ToolCall.STEPS``
(a test holds them equal):

1. ``find_tool``        the tool this grant may call (unknown and hidden answer alike; A-5 step-up)
2. ``read_arguments``   an object; 2026-07-28 parameter headers match it
3. ``decide_task``      whether this call becomes a task (T11-2..T11-4, TX-2)
4. ``check_arguments``  against the input schema (a result or -32602, per revision)
5. ``stay_on_loop``     a call on the event loop's thread (``SERVE_ON_LOOP``) whose tool is not an
                        inline kind, waits for approval or becomes a task goes to a pool thread
6. ``rate_limit``       per principal and tool
7. ``approve``          a plain call of a tool that requires approval waits for a person (a task is held)
8. ``run``              a plain call: the handler, within the principal's concurrent-call bound;
                        a task call: its task is created (held while approval is pending) and answered
9. ``shape``            the result for the revision, within ``MAX_RESPONSE_BYTES``
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from .. import approvals, audit, cancel, discovery, ratelimit, runner, telemetry
from ..asking.waiting import people
from ..auth import AuthFailure, get_auth_backend
from ..catalog import Catalog, CompiledTool, get_catalog, last_built
from ..conf import mcp_settings
from ..models import ApprovalState
from ..protocol import errors as e
from ..protocol import task_wire
from ..protocol.errors import McpError
from ..protocol.headers import check_param_headers
from ..protocol.jsonrpc import Request
from ..protocol.negotiation import LOG_LEVELS, level_allows
from ..protocol.shaping import error_result, shape_result
from ..protocol.versions import META_CLIENT_CAPABILITIES, Revision
from ..registry import registry
from ..storable import holds_nul
from ..tasking import service as tasking
from ..tasking import tasks_enabled
from ..threads import NotOnLoop, on_loop
from ..types import Asker, ToolResult
from . import inputs
from .exchange import Exchange, complete
from .identity import modern_meta
from .sessions import declared_capabilities
from .tools import callable_tool

__all__ = ["CALL_SLOT_SECONDS", "ToolCall", "call_tool"]

logger = logging.getLogger("mcp_tools")

# A process that died with calls running frees their slots after this long at the latest.
CALL_SLOT_SECONDS = 3600


def fits_loop(params: Mapping[str, Any]) -> bool:
    """Whether a tools/call with ``params`` is worth serving on the event loop's thread, by the
    catalog this process built last: a plain call (no task asked for or declared) of a tool
    every caller may call (no required scope or permission) whose kind is inline. A tool some
    callers may not see takes the pool's path as an unknown name does, so the path (and its
    timing) tells a hidden tool from an unknown one no more than the answer does. The call's
    step ``stay_on_loop`` decides on the catalog it is served from."""
    name = params.get("name")
    catalog = last_built()
    if catalog is None or not isinstance(name, str) or "task" in params or _declares_tasks(params):
        return False
    tool = catalog.get(name)
    return tool is not None and tool.spec.task_support != "required" and _runs_on_loop(tool)


def _runs_on_loop(tool: CompiledTool) -> bool:
    """The tool's part of the rule, for the hint and the step alike: every caller may call it
    (no required scope or permission), it runs here, needs no approval, and its kind is inline."""
    if tool.required_scopes or tool.required_permissions or tool.unavailable or tool.requires_approval:
        return False
    kind = registry.get(tool.handler_key)
    return kind is not None and kind.inline


def _declares_tasks(params: Mapping[str, Any]) -> bool:
    """A 2026-07-28 request that declared the tasks extension (its call may become a task)."""
    meta = params.get("_meta")
    capabilities = meta.get(META_CLIENT_CAPABILITIES) if isinstance(meta, dict) else None
    return isinstance(capabilities, dict) and task_wire.client_declared_extension(capabilities)


def call_tool(req: Request, ex: Exchange) -> bytes | None:
    """tools/call, with one audit row per call whatever its outcome."""
    return ToolCall(req, ex).serve()


class _Answered(Exception):
    """A step has the call's answer (``None``: cancelled, nothing is sent)."""

    def __init__(self, body: bytes | None) -> None:
        self.body = body


# Why a stored call's arguments holding NUL are refused (check_arguments).
STORED_NUL = "arguments: a stored call (a task, or one waiting for approval) cannot hold null characters (U+0000)"


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
        # The tool ``find_tool`` found: set by that step, read by every later one (an attribute,
        # not a property checking ``tool``: eight reads per call).
        self.found: CompiledTool
        self.catalog: Catalog | None = None
        self.arguments: dict[str, Any] = {}
        self.as_task = False
        self.ttl: int | None = None
        self.result: dict[str, Any] | None = None  # the handler's, shaped for the revision
        self.body: bytes | None = None  # the answer (None: cancelled, nothing is sent)
        # How the call ended, for its audit row.
        self.outcome = "invalid"
        self.detail = ""
        self.started = time.perf_counter()
        self.handed_over = False  # served again on a pool thread: that serving audits it

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
        except NotOnLoop:
            self.handed_over = True
            raise
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
            if not self.handed_over:
                self.audit()

    def steps(self) -> bytes | None:
        """Run ``STEPS`` in order; the answer (None: cancelled) is what the call ended with."""
        try:
            for step in self.STEPS:
                step(self)
        except _Answered as answered:
            return answered.body
        return self.body

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

    def find_tool(self) -> None:
        catalog = self.catalog = get_catalog()
        self.ex.principal = catalog.with_permissions(self.ex.principal)  # handlers and tasks get the expanded scopes
        tool = callable_tool(self.name, self.ex.principal, catalog)
        if not tool.model_visible and not self.ex.apps_declared():
            # MCP Apps: an app-only tool is "callable by the app"; a client without the
            # extension has no app, so the tool answers as one that does not exist.
            raise e.invalid_params(f"Unknown tool: {self.name}")
        self.tool = self.found = tool
        telemetry.tool_found(tool.name)

    def read_arguments(self) -> None:
        arguments = self.given_arguments
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise e.invalid_params("tools/call params.arguments must be an object")
        self.arguments = arguments
        if self.ex.modern is not None:
            check_param_headers(self.ex.headers, self.found.param_headers, arguments)

    def decide_task(self) -> None:
        """Whether this call becomes a task, and the ttl the client asked for.

        2025-11-25 (T11-2..T11-4): the client asks with ``params.task``; a forbidden tool
        refuses it and a required tool refuses a call without it, both with -32601. 2026-07-28
        (TX-2): the server decides; only a request that declared the extension gets a task, and
        a tool that runs only as a task answers -32021 to one that did not.
        """
        if not tasks_enabled():
            return
        if self.rev.core_tasks:
            self.as_task, self.ttl = _core_task_request(self.found, self.params)
            return
        modern = self.ex.modern
        if self.rev.tasks_extension and modern is not None:
            self.as_task = _extension_task(self.found, modern.client_capabilities)

    def check_arguments(self) -> None:
        tool = self.found
        problems = tool.input_problems(self.arguments)
        if not problems and (self.as_task or tool.requires_approval) and holds_nul(self.arguments):
            # A call that is stored (a task, or one waiting for a person) keeps its arguments in
            # a row, and PostgreSQL refuses NUL in JSON: the call failed there with -32603.
            problems = [STORED_NUL]
        if not problems:
            return
        message = f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems)
        if self.rev.input_errors_as_results:
            raise self.refuse("invalid", message)
        self.detail = message
        raise e.invalid_params(message, data={"errors": problems})

    def stay_on_loop(self) -> None:
        """On the event loop's thread only what runs at once in the process: an inline kind's
        handler, called plainly (no task, no approval). Nothing is counted or run before this."""
        if not on_loop():
            return
        if self.as_task or not _runs_on_loop(self.found):
            raise NotOnLoop

    def rate_limit(self) -> None:
        """The spec says servers MUST rate limit tool invocations: per principal and tool."""
        tool = self.found
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

    def approve(self) -> None:
        """Store the pending call and wait for a person's decision (any process may take it).

        A task call does not wait: ``run`` stores its task held, working, until someone approves it.
        """
        tool, ex = self.found, self.ex
        if not tool.requires_approval or self.as_task:
            return
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

    def run(self) -> None:
        """The handler's shaped result, within the principal's bound of concurrent calls; a task
        call ends here with its created task (the worker runs the handler)."""
        if self.as_task:
            raise _Answered(self.start_task())
        bound = mcp_settings.MAX_CALLS_PER_PRINCIPAL
        slot = f"calls:{self.ex.principal.owner}"
        if bound and not ratelimit.acquire_slot(slot, bound, CALL_SLOT_SECONDS):
            message = f"Too many of your tool calls are running at once (limit {bound}); retry when one has finished."
            raise self.retry_later(message, 1.0)
        try:
            asker = inputs.asker_for(self.ex, self.found, self.arguments, self.params)
            self.result = self.call_handler(asker)
        finally:
            if bound:
                ratelimit.release_slot(slot)

    def shape(self) -> None:
        result = self.result
        if result is None:
            return  # cancelled: nothing is sent
        tool = self.found
        self.outcome = "tool_error" if result.get("isError") else "ok"
        if result.get("resultType") == "input_required":
            self.detail = "input required: " + ", ".join(result["inputRequests"])
        body = complete(self.req, self.ex, result)
        limit = self.ex.max_bytes or mcp_settings.MAX_RESPONSE_BYTES
        if len(body) <= limit:
            self.body = body
            return
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

    # The steps of every call, plain or task, in order (the module docstring lists them).
    STEPS: tuple[Callable[[ToolCall], None], ...] = (
        find_tool,
        read_arguments,
        decide_task,
        check_arguments,
        stay_on_loop,
        rate_limit,
        approve,
        run,
        shape,
    )

    # ------------------------------------------------------------------ what the steps call

    def start_task(self) -> bytes:
        """A task call's task (held while approval is pending), and the create-task answer."""
        tool, ex, rev = self.found, self.ex, self.rev
        new = tasking.NewTask(tool, self.arguments, ex.principal, rev, self.ttl, self.declared())
        # Held, working, until someone approves it (then enqueued).
        task = approvals.hold_task(new) if tool.requires_approval else tasking.create_task(new)
        state = tasking.state_of(task, rev)
        created = task_wire.ext_create_result(state) if rev.modern else task_wire.core_create_result(state)
        self.ended("ok", "task created" + (", awaiting approval" if tool.requires_approval else ""))
        return complete(self.req, ex, created)

    def call_handler(self, asker: Asker | None) -> dict[str, Any] | None:
        """Run the handler through the runner; None means it was cancelled."""
        tool, ex = self.found, self.ex
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

        outcome = runner.invoke(
            runner.Invocation(tool, self.arguments, ex.principal, progress, log, ex.cancelled, asker)
        )
        return runner.settle(
            outcome, self.shaped, lambda requests: inputs.input_required(ex, tool, self.arguments, asker, requests)
        )

    def shaped(self, result: ToolResult) -> dict[str, Any]:
        return shape_result(result, self.rev)

    def audit(self) -> None:
        """The call's one audit row (and its telemetry), from the state it ended in."""
        tool = self.tool
        telemetry.call_ended(None if tool is None else tool.name, self.outcome, self.detail)
        audit.record(
            audit.CallEvent(
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


def _core_task_request(tool: CompiledTool, params: dict[str, Any]) -> tuple[bool, int | None]:
    """2025-11-25: whether the client asked for a task (``params.task``), and its ttl."""
    support = tool.spec.task_support
    augmented, ttl = task_wire.requested_ttl(params)
    if augmented and support == "forbidden":
        raise McpError(e.METHOD_NOT_FOUND, f"Tool {tool.name!r} does not support task-augmented calls")
    if not augmented and support == "required":
        raise McpError(e.METHOD_NOT_FOUND, f"Tool {tool.name!r} must be called as a task (params.task)")
    return augmented, ttl


def _extension_task(tool: CompiledTool, client_capabilities: dict[str, Any]) -> bool:
    """2026-07-28: the server decides; a request that declared the extension gets a task."""
    support = tool.spec.task_support
    if support == "forbidden":
        return False
    if task_wire.client_declared_extension(client_capabilities):
        return True
    if support == "required":
        raise task_wire.extension_required()
    return False
