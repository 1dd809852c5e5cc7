"""The ``celery.task`` tool kind: a tool whose call runs one of the site's Celery tasks.

The config names the task (``task``, chosen from the tasks the site's Celery app has, without
Celery's own ``celery.*`` tasks and this app's ``mcp_tools.*`` jobs), how long to wait for it
(``timeout``, seconds) and optionally the queue to send it to (``queue``). The tool's arguments
are the task's keyword arguments; a dict the task returns is the result's ``structuredContent``
(anything else is wrapped as ``{"result": value}``), mirrored as a text block.

Where the task runs:

- In a plain ``tools/call`` (the web process), the task is sent to the broker like any
  ``apply_async`` and the call waits for its result, at most ``timeout`` seconds. This needs a
  result backend (``CELERY_RESULT_BACKEND``). When the client cancels the call, or the wait times
  out, the task is revoked (a worker that has not started it drops it).
- In a call made as an MCP task, the handler already runs inside a Celery worker (the MCP task's
  ``mcp_tools.run_task``). Sending another message and blocking on its result there would hold
  one worker slot waiting for another (Celery forbids ``result.get()`` inside a task for this
  reason: with every slot waiting, nothing runs). The task's function runs right there instead,
  with ``task.apply()`` (its signals and its retries' bookkeeping as in a worker); the MCP task's
  own heartbeat, cancellation and expiry cover it. ``timeout`` does not apply then.

A task that raises gives an ``isError`` result naming the task and nothing of the exception (its
traceback is logged with a reference, as the runner does for handlers).
"""

from __future__ import annotations

import inspect
import json
import logging
import time
import uuid
from typing import Any

from celery import current_app, current_task
from celery.backends.base import DisabledBackend
from django.core.serializers.json import DjangoJSONEncoder

from ...exceptions import ToolCancelled, ToolError
from ...registry import ToolKind, registry
from ...types import ToolContext, ToolResult

__all__ = ["register_kinds"]

logger = logging.getLogger("mcp_tools")

KEY = "celery.task"
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 3600.0
POLL_SECONDS = 0.1
# Task names never offered: Celery's own (celery.chord, celery.backend_cleanup ...) and this
# app's internal jobs (mcp_tools.run_task, the purges).
HIDDEN_PREFIXES = ("celery.", "mcp_tools.")
_discovered: set[int] = set()  # the Celery apps whose task modules were imported


def task_names() -> list[str]:
    """The names of the tasks the site's Celery app has, that a tool may run, sorted."""
    app = current_app
    if id(app) not in _discovered:  # once per process and app (about 30 ms)
        app.loader.import_default_modules()  # runs the app's autodiscover_tasks(), as a worker does
        _discovered.add(id(app))
    return sorted(name for name in app.tasks if not name.startswith(HIDDEN_PREFIXES))


def config_schema() -> dict[str, Any]:
    """The config schema, its ``task`` an enum of the tasks the site has right now."""
    return {
        "type": "object",
        "properties": {
            "task": {"type": "string", "enum": task_names(), "description": "The registered task to run."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": MAX_TIMEOUT,
                "default": DEFAULT_TIMEOUT,
                "description": "Seconds a plain call waits for the task's result.",
            },
            "queue": {"type": "string", "minLength": 1, "description": "Send it to this queue (default: its route)."},
        },
        "required": ["task"],
        "additionalProperties": False,
    }


def _task(name: Any) -> Any:
    if not isinstance(name, str) or name.startswith(HIDDEN_PREFIXES) or name not in task_names():
        return None
    return current_app.tasks[name]


def _check_arguments(name: str, task: Any, arguments: dict[str, Any]) -> None:
    """A clear isError for arguments the task's signature does not take, before it is sent."""
    try:
        signature = inspect.signature(task.run)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(**arguments)
    except TypeError as exc:
        raise ToolError(f"Invalid arguments for task {name!r}: {exc}.") from None


def _in_worker() -> bool:
    """Whether this call runs inside a Celery task (an MCP task's worker, or eager mode)."""
    # current_task is a proxy: false outside a task.
    return bool(current_task) and bool(current_task.request.id)


def _failed(name: str, exc: Any) -> ToolError:
    reference = uuid.uuid4().hex[:12]
    logger.error("Celery task %r failed (reference %s): %r", name, reference, exc)
    return ToolError(f"Task {name!r} failed (reference {reference}).")


def _wait(name: str, task: Any, ctx: ToolContext, timeout: float, queue: str | None) -> Any:
    if isinstance(current_app.backend, DisabledBackend):
        logger.error("celery.task tool %r: the Celery app has no result backend (CELERY_RESULT_BACKEND)", ctx.tool_name)
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.")
    options: dict[str, Any] = {"ignore_result": False}
    if queue:
        options["queue"] = queue
    result = task.apply_async(kwargs=ctx.arguments, **options)
    deadline = time.monotonic() + timeout
    try:
        while not result.ready():
            if ctx.cancelled:
                result.revoke()
                raise ToolCancelled()
            if time.monotonic() >= deadline:
                result.revoke()
                raise ToolError(f"Task {name!r} did not finish within {timeout:g} s.")
            time.sleep(POLL_SECONDS)
        if not result.successful():
            raise _failed(name, result.result)
        return result.result
    finally:
        if result.ready():
            result.forget()  # the result was read (or is of no use): drop it from the backend


def run_celery_task(ctx: ToolContext) -> ToolResult:
    """Run a Celery task of this site by name: the arguments are its kwargs, its result the output."""
    name = ctx.config.get("task")
    task = _task(name)
    if task is None or not isinstance(name, str):
        logger.error("Tool %r names Celery task %r, which is not available", ctx.tool_name, name)
        raise ToolError(f"Tool {ctx.tool_name!r} is not available right now.")
    _check_arguments(name, task, ctx.arguments)
    if _in_worker():
        local = task.apply(kwargs=ctx.arguments)
        if not local.successful():
            raise _failed(name, local.result)
        value = local.result
    else:
        timeout = float(ctx.config.get("timeout", DEFAULT_TIMEOUT))
        value = _wait(name, task, ctx, timeout, ctx.config.get("queue"))
    value = json.loads(json.dumps(value, cls=DjangoJSONEncoder))
    return ToolResult(structured_content=value if isinstance(value, dict) else {"result": value})


KIND = ToolKind(
    key=KEY,
    needs_scope=True,  # it reaches the site's own code: flagged when enabled with no required scope
    func=run_celery_task,
    config_schema=config_schema,
    label="Run a Celery task",
    description=(
        "Runs one of this site's Celery tasks by name: the tool's arguments are its keyword arguments, "
        "its return value the structured result. A plain call waits up to the config's timeout; "
        "a call made as a task runs it in the task's worker."
    ),
)


def register_kinds() -> None:
    """Register ``celery.task`` (idempotent; the app config calls it)."""
    registry.register(KIND)
