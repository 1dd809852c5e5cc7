"""Tasks: create a row and enqueue it, run it in a Celery worker, and serve the task methods.

One row (``McpTask``) per task; the two revision families see it through the adapters in
``mcp_tools.protocol.tasks``. Ownership is ``principal.key``: every lookup filters on it, so a
foreign task id answers exactly like an unknown one (T11-16, TX-13).
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import math
import time
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from django.utils import timezone

from .cancel import CancelFlag
from .catalog import CompiledTool, get_catalog
from .conf import mcp_settings
from .protocol import errors as e
from .protocol import tasks as wire
from .protocol import versions as v
from .protocol.cursor import decode_cursor, encode_cursor
from .protocol.versions import Revision
from .task_models import McpTask
from .types import Principal, ToolResult

if TYPE_CHECKING:
    from .services import Exchange

logger = logging.getLogger("mcp_tools.tasks")

WORKER_LOST_MESSAGE = "The worker running this task stopped before it finished."


class QueueUnavailable(Exception):
    """The Celery broker refused the message."""


def tasks_enabled() -> bool:
    """Tasks are served when the setting allows it and Celery, an optional extra, is installed."""
    return bool(mcp_settings.TASKS_ENABLED) and _celery_installed()


@functools.cache
def _celery_installed() -> bool:
    return importlib.util.find_spec("celery") is not None


# --------------------------------------------------------------------------- row <-> protocol


def store_result(result: ToolResult) -> dict[str, Any]:
    """A ToolResult in the row's revision-neutral form."""
    stored: dict[str, Any] = {"content": result.content, "isError": result.is_error}
    if result.has_structured:
        stored["structured"] = result.structured_content
    if result.meta:
        stored["meta"] = result.meta
    return stored


def load_result(stored: dict[str, Any]) -> ToolResult:
    result = ToolResult(content=list(stored.get("content") or []), is_error=bool(stored.get("isError")))
    if "structured" in stored:
        result.structured_content = stored["structured"]
    if stored.get("meta"):
        result.meta = dict(stored["meta"])
    return result


def state_of(task: McpTask, rev: Revision) -> wire.TaskState:
    from .services import shape_result

    result = None
    if task.result is not None and rev.modern:
        result = shape_result(load_result(task.result), rev)
    error = None
    if task.error_code is not None:
        error = {"code": task.error_code, "message": task.error_message}
    return wire.TaskState(
        task_id=task.pk,
        status=task.status,
        status_message=task.status_message,
        created_at=task.created_at,
        updated_at=task.updated_at,
        ttl_ms=task.ttl_ms,
        poll_interval_ms=task.poll_interval_ms,
        result=result,
        error=error,
    )


def effective_ttl(requested: int | None) -> int:
    """T11-8: the requested ttl within [1 s, TASK_TTL_MAX_MS]; the default when none was asked."""
    cap = int(mcp_settings.TASK_TTL_MAX_MS)
    ttl = int(mcp_settings.TASK_TTL_DEFAULT_MS) if requested is None else requested
    return max(1000, min(ttl, cap))


# --------------------------------------------------------------------------- creation


def create_task(tool: CompiledTool, arguments: dict[str, Any], ex: Exchange, ttl_ms: int | None) -> McpTask:
    """Store the row, then enqueue it; the caller answers with the create-task result at once.

    The row is committed before the message is published (TX-4), so any server instance and
    the worker find it. If the broker refuses the message the row is deleted and the client
    gets a clear error: no orphan row is left working forever.
    """
    ttl = effective_ttl(ttl_ms)
    now = timezone.now()
    user = ex.principal.user
    task = McpTask.objects.create(
        principal_key=ex.principal.key,
        principal_data={
            "client_id": ex.principal.client_id,
            "scopes": None if ex.principal.scopes is None else sorted(ex.principal.scopes),
            "user_id": getattr(user, "pk", None),
        },
        protocol_version=ex.revision.version,
        tool_name=tool.name,
        tool_version=tool.version,
        arguments=arguments,
        created_at=now,
        updated_at=now,
        ttl_ms=ttl,
        expires_at=McpTask.expiry(now, ttl),
        poll_interval_ms=int(mcp_settings.TASK_POLL_INTERVAL_MS),
        celery_id=uuid.uuid4().hex,
    )
    logger.info("Task %s created: tool %r for %s", task.pk, tool.name, ex.principal.key)
    try:
        enqueue(task)
    except QueueUnavailable as exc:
        McpTask.objects.filter(pk=task.pk).delete()
        raise e.internal_error(
            "The task queue is unavailable right now; the task was not created. Try again later."
        ) from exc
    return task  # as created (T11-7: working), even if an eager run has finished it already


def enqueue(task: McpTask) -> None:
    try:
        from .tasks import run_task
    except ImportError as exc:  # Celery is an optional extra
        raise QueueUnavailable(f"Celery is not installed: {exc}") from exc

    options: dict[str, Any] = {
        "task_id": task.celery_id,
        "retry": True,
        "retry_policy": {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5},
    }
    if mcp_settings.TASK_QUEUE:
        options["queue"] = mcp_settings.TASK_QUEUE
    try:
        run_task.apply_async(args=[task.pk], **options)
    except Exception as exc:  # kombu/redis raise many types for an unreachable broker
        logger.error("Could not enqueue task %s: %s", task.pk, exc)
        raise QueueUnavailable(str(exc)) from exc


# --------------------------------------------------------------------------- the worker side


def _principal(task: McpTask) -> Principal:
    data = task.principal_data or {}
    scopes = data.get("scopes")
    user = None
    if data.get("user_id") is not None:
        from django.contrib.auth import get_user_model

        user = get_user_model().objects.filter(pk=data["user_id"]).first()
    return Principal(
        key=task.principal_key,
        user=user,
        client_id=data.get("client_id"),
        scopes=None if scopes is None else frozenset(scopes),
    )


def _fail(task_id: str, code: int, message: str) -> bool:
    return McpTask.objects.move(
        task_id,
        wire.FAILED,
        error_code=code,
        error_message=message,
        status_message=message,
        finished_at=timezone.now(),
    )


def execute(task_id: str) -> str:
    """Run one task in a worker; returns the status it ended in (for logs and tests)."""
    task = McpTask.objects.filter(pk=task_id).first()
    if task is None:
        return "missing"  # purged, or the broker outlived the row
    if task.terminal:
        return task.status  # cancelled before it started, or a duplicate delivery
    if task.attempts > 0:
        # acks_late + reject_on_worker_lost: a worker died with this message unacknowledged.
        logger.warning("Task %s was interrupted (attempt %s); worker-lost policy %s", task_id, task.attempts,
                       mcp_settings.TASK_WORKER_LOST)  # fmt: skip
        if mcp_settings.TASK_WORKER_LOST != "retry" or task.attempts >= int(mcp_settings.TASK_MAX_ATTEMPTS):
            _fail(task_id, e.INTERNAL_ERROR, WORKER_LOST_MESSAGE)
            return wire.FAILED
    attempt = task.attempts + 1
    now = timezone.now()
    fields: dict[str, Any] = {"attempts": attempt, "started_at": now, "updated_at": now}
    if attempt > 1:
        fields["status_message"] = f"Retrying after a worker stopped (attempt {attempt})."
    if not McpTask.objects.filter(pk=task_id, status__in=(wire.WORKING, wire.INPUT_REQUIRED)).update(**fields):
        return McpTask.objects.filter(pk=task_id).values_list("status", flat=True).first() or "missing"
    try:
        return _run(task)
    except Exception:
        logger.exception("Task %s could not be run", task_id)
        _fail(task_id, e.INTERNAL_ERROR, "The task could not be run (internal error).")
        return wire.FAILED


class TaskCancelFlag(CancelFlag):
    """ToolContext.cancelled for a task: the row is cancelled (or gone), read like any CancelFlag."""

    __slots__ = ("task_id",)

    def __init__(self, task_id: str) -> None:
        super().__init__(None)
        self.task_id = task_id

    def _probe(self) -> bool:
        status = McpTask.objects.filter(pk=self.task_id).values_list("status", flat=True).first()
        return status is None or status == wire.CANCELLED


def _run(task: McpTask) -> str:
    from .services import invoke

    rev = v.get_revision(task.protocol_version)
    tool = get_catalog().get(task.tool_name)
    if tool is None:
        message = f"Unknown tool: {task.tool_name}"
        _fail(task.pk, e.INVALID_PARAMS, message)
        return wire.FAILED
    cancelled = TaskCancelFlag(task.pk)
    written = [-math.inf]  # time.monotonic() of the last status-message UPDATE

    def progress(value: float, total: float | None, message: str | None) -> None:
        # Progress of a task becomes its status message (TX has no progress for tasks, P-3).
        # ToolContext keeps it increasing; the row is written at most every CANCEL_POLL_SECONDS,
        # and always for the final step (value == total).
        now = time.monotonic()
        if now - written[0] < mcp_settings.CANCEL_POLL_SECONDS and value != total:
            return
        written[0] = now
        if message is None:
            message = f"{value:g} of {total:g}" if total is not None else f"{value:g}"
        McpTask.objects.filter(pk=task.pk, status=wire.WORKING).update(
            status_message=message[:1000], updated_at=timezone.now()
        )

    def log(level: str, data: Any, logger_name: str | None) -> None:
        logger.log(logging.INFO, "Task %s log (%s): %s", task.pk, level, str(data)[:500])

    outcome = invoke(tool, dict(task.arguments), _principal(task), progress, log, cancelled)
    if outcome is None:
        # The handler saw the cancellation; the row already says cancelled (T11-13).
        return wire.CANCELLED
    stored = store_result(outcome)
    size = len(orjson.dumps(stored))
    limit = int(mcp_settings.TASK_RESULT_MAX_BYTES)
    if size > limit:
        message = f"The tool's result is {size} bytes, over the {limit}-byte limit for task results."
        _fail(task.pk, e.INTERNAL_ERROR, message)
        return wire.FAILED
    failed = wire.failed_on_error(rev, outcome.is_error)
    status = wire.FAILED if failed else wire.COMPLETED
    message = "The tool reported an error." if outcome.is_error else ""
    moved = McpTask.objects.move(task.pk, status, result=stored, status_message=message, finished_at=timezone.now())
    if not moved:
        # Cancelled while running: it stays cancelled (T11-13).
        return McpTask.objects.filter(pk=task.pk).values_list("status", flat=True).first() or "missing"
    logger.info("Task %s %s", task.pk, status)
    return status


# --------------------------------------------------------------------------- methods


def find_task(params: dict[str, Any], principal: Principal) -> McpTask:
    task_id = wire.task_id_param(params)
    task = McpTask.objects.owned_by(principal.key).filter(pk=task_id).first()
    if task is None:
        raise wire.task_not_found()
    return task


def cancel(task: McpTask) -> bool:
    """Mark cancelled (before replying, T11-13) and revoke the queued message; False if terminal."""
    now = timezone.now()
    if not McpTask.objects.move(task.pk, wire.CANCELLED, status_message="Cancelled.", finished_at=now):
        return False
    revoke(task)
    logger.info("Task %s cancelled", task.pk)
    return True


def revoke(task: McpTask) -> None:
    """Tell the workers not to start the message; a running handler sees the row's status."""
    if not task.celery_id:
        return
    try:
        from celery import current_app

        current_app.control.revoke(task.celery_id)
    except Exception as exc:  # transports without broadcast (e.g. SQLAlchemy) cannot revoke
        logger.debug("Could not revoke Celery task %s: %s", task.celery_id, exc)


class StillWorking(Exception):
    """``tasks/result`` on a task that is not terminal yet, before the caller's deadline.

    The view waits for it without holding a thread (it sleeps on the event loop and asks again),
    so clients waiting on results cannot starve the thread pool that serves other requests.
    """


def terminal_or_wait(task: McpTask, wait_until: float) -> McpTask:
    """T11-10: the task if terminal; StillWorking before ``wait_until`` (monotonic); then an error."""
    if task.terminal:
        return task
    if time.monotonic() < wait_until:
        raise StillWorking(task.pk)
    raise e.internal_error(
        f"Task {task.pk} is still {task.status} after {mcp_settings.TASK_RESULT_WAIT_SECONDS:g} s; "
        "call tasks/result again.",
    )


def list_page(principal: Principal, cursor: Any, key: bytes, page_size: int) -> tuple[list[McpTask], str | None]:
    """T11-12: the caller's live tasks, newest first, keyset-paginated with signed cursors."""
    from django.db.models import Q

    rows = McpTask.objects.owned_by(principal.key).order_by("-created_at", "-id")
    if cursor is not None:
        position = decode_cursor(cursor, key, scope="tasks/list")
        stamp, _, last_id = position.partition("|")
        try:
            created = datetime.fromisoformat(stamp)
        except ValueError as exc:
            raise e.invalid_params("Invalid cursor") from exc
        rows = rows.filter(Q(created_at__lt=created) | Q(created_at=created, id__lt=last_id))
    page = list(rows[: page_size + 1])
    next_cursor = None
    if len(page) > page_size:
        page = page[:page_size]
        last = page[-1]
        next_cursor = encode_cursor(f"{last.created_at.isoformat()}|{last.pk}", key, scope="tasks/list")
    return page, next_cursor
