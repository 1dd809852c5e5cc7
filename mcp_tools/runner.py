"""The runner: one tool call through its handler, for a request or a task worker alike.

It knows nothing of HTTP, sessions or Celery. It builds the handler's ``ToolContext``, runs the
handler, and answers with a typed outcome: ``Complete`` (a checked ``ToolResult``, failures
included as ``isError`` results), ``InputRequired`` (the handler needs answers from the client
before it can go on) or ``Cancelled``. The request service and the task service decide what each
outcome means; ``protocol.shaping`` writes it for the negotiated revision.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from .catalog import CompiledTool
from .conf import mcp_settings
from .exceptions import InputNeeded, ToolCancelled, ToolError
from .handles.store import HandleStore
from .registry import registry
from .types import Asker, Principal, ToolContext, ToolResult, text

__all__ = [
    "CANCELLED",
    "CONTENT_TYPES",
    "Cancelled",
    "Complete",
    "InputRequired",
    "Invocation",
    "LogFn",
    "Outcome",
    "ProgressFn",
    "check_outcome",
    "error",
    "invoke",
    "normalize",
    "settle",
]

logger = logging.getLogger("mcp_tools")

CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})

ProgressFn = Callable[[float, float | None, str | None], None]
LogFn = Callable[[str, Any, str | None], None]


@dataclass(frozen=True, slots=True)
class Complete:
    """The call ended with a result (an ``isError`` one for tool failures)."""

    result: ToolResult


@dataclass(frozen=True, slots=True)
class InputRequired:
    """The handler asked the client for input (``requests``: key -> request params)."""

    requests: dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Cancelled:
    """The client cancelled the call; nothing is sent for it."""


CANCELLED = Cancelled()

Outcome = Complete | InputRequired | Cancelled

R = TypeVar("R")


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every call.
@dataclass(slots=True)
class Invocation:
    """One run of a tool's handler: what its ``ToolContext`` is built from.

    ``asker`` answers ``ctx.elicit``/``ctx.sample`` (``mcp_tools.asking``); without one the
    handler's questions end the call with an ``isError`` result.
    """

    tool: CompiledTool
    arguments: dict[str, Any]
    principal: Principal
    progress: ProgressFn
    log: LogFn
    cancelled: Callable[[], bool]
    asker: Asker | None = None


def invoke(call: Invocation) -> Outcome:
    """Run a tool's handler (in the web process or a task worker).

    The outcome is revision-neutral: failures become ``isError`` results, never exceptions.
    """
    tool, principal, cancelled = call.tool, call.principal, call.cancelled
    kind = registry.get(tool.handler_key)
    if kind is None or tool.unavailable:
        why = tool.unavailable or f"its tool kind {tool.handler_key!r} is not registered"
        logger.error("Tool %r is not available in this process: %s", tool.name, why)
        return Complete(error(f"Tool {tool.name!r} is not available right now."))
    context = ToolContext(
        arguments=call.arguments,
        config=tool.handler_config,
        principal=principal,
        tool_name=tool.name,
        tool_version=tool.version,
        _progress=call.progress,
        _log=call.log,
        _cancelled=cancelled,
        handles=HandleStore(principal),
        _asker=call.asker,
    )
    try:
        outcome = kind.func(context)
    except ToolError as exc:
        return Complete(error(exc.message))
    except ToolCancelled:
        return CANCELLED
    except InputNeeded as exc:
        return CANCELLED if cancelled() else InputRequired(dict(exc.requests))
    except Exception:
        reference = uuid.uuid4().hex[:12]
        logger.exception("Tool %r failed (reference %s)", tool.name, reference)
        return Complete(error(f"Tool {tool.name!r} failed unexpectedly (reference {reference})."))
    if cancelled():
        return CANCELLED
    return Complete(check_outcome(tool, outcome))


def settle(
    outcome: Outcome, done: Callable[[ToolResult], R], asked: Callable[[dict[str, dict[str, Any]]], R]
) -> R | None:
    """What an outcome ends the call with, for a request and a task worker alike: ``done`` of
    the result, ``asked`` of the handler's requests for input, None when it was cancelled."""
    if isinstance(outcome, Complete):
        return done(outcome.result)
    if isinstance(outcome, InputRequired):
        return asked(outcome.requests)
    return None


def error(message: str) -> ToolResult:
    """An ``isError`` result carrying ``message`` as its one text block."""
    return ToolResult(content=[text(message)], is_error=True)


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
        structured_json = orjson.dumps(result.structured_content) if result.has_structured else None
        refused = _output_refusal(tool, result)
        if refused is not None:
            return refused
        if structured_json is not None and not content:
            # T-11: mirror structured content as JSON text for older clients.
            content = [text(structured_json.decode())]
        if result.meta is not None:
            orjson.dumps(result.meta)
    except (TypeError, orjson.JSONEncodeError):
        logger.exception("Tool %r returned a value that is not a valid tool result", tool.name)
        return error(f"Tool {tool.name!r} returned an invalid result.")
    return ToolResult(
        content=content, structured_content=result.structured_content, is_error=result.is_error, meta=result.meta
    )


def _output_refusal(tool: CompiledTool, result: ToolResult) -> ToolResult | None:
    """The isError result replacing a successful ``result`` that breaks the tool's outputSchema
    (or has no structured content for one); None when it stands."""
    if not result.has_structured:
        if tool.output_validator is not None and not result.is_error:
            logger.error("Tool %r has an outputSchema but returned no structured content", tool.name)
            return error(f"Tool {tool.name!r} produced no structured output.")
        return None
    if result.is_error or not mcp_settings.VALIDATE_OUTPUT or tool.output_trusted or tool.output_validator is None:
        return None
    problems = tool.output_problems(result.structured_content)
    if not problems:
        return None
    logger.error("Tool %r returned output that breaks its outputSchema: %s", tool.name, problems)
    return error(f"Tool {tool.name!r} produced output that does not match its output schema.")
