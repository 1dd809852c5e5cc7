"""Tasks: create a row and enqueue it, serve the task methods, and shape a row per revision.

One row (``McpTask``) per task; the two revision families see it through the adapters in
``mcp_tools.protocol.task_wire``. Ownership is ``principal.key`` (the grant: user and client) and
the scopes the tool required (``McpTask.required_scopes``): every lookup filters on both, so a
foreign task id, or one the token's scopes no longer cover, answers exactly like an unknown one
(T11-16, TX-13). The worker side is
``worker.py``; the Celery tasks are ``jobs.py`` and ``beat.py``; lost workers: ``recovery.py``.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.utils import timezone

from .. import telemetry
from ..asking import outstanding
from ..catalog import CompiledTool, get_catalog
from ..conf import mcp_settings
from ..models import McpTask
from ..models.task_rows import TaskQuerySet
from ..protocol import errors as e
from ..protocol import task_wire as wire
from ..protocol import versions as v
from ..protocol.cursor import decode_cursor, encode_cursor
from ..protocol.shaping import shape_result
from ..protocol.versions import Revision
from ..storable import lookable
from ..types import Principal
from . import QueueUnavailable, ResultWatch, StillWorking
from .results import load_result

__all__ = [
    "NewTask",
    "cancel",
    "create_task",
    "enqueue",
    "find_task",
    "list_page",
    "reachable_tasks",
    "state_of",
    "terminal_or_wait",
]

logger = logging.getLogger("mcp_tools.tasks")


# --------------------------------------------------------------------------- row <-> protocol


def state_of(task: McpTask, rev: Revision) -> wire.TaskState:
    result = None
    if task.result is not None and rev.modern:
        result = shape_result(load_result(task.result), rev)
    error = None
    if task.error_code is not None:
        error = {"code": task.error_code, "message": task.error_message}
    requests = None
    if task.status == wire.INPUT_REQUIRED and rev.modern:
        # TX-6: every outstanding request, under its key ({method, params}, as MRTR has them).
        requests = {r.key: {"method": r.method, "params": r.params} for r in outstanding(task.pk)}
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
        input_requests=requests,
    )


def effective_ttl(requested: int | None) -> int:
    """T11-8: the requested ttl within [1 s, TASK_TTL_MAX_MS]; the default when none was asked."""
    cap = int(mcp_settings.TASK_TTL_MAX_MS)
    ttl = int(mcp_settings.TASK_TTL_DEFAULT_MS) if requested is None else requested
    return max(1000, min(ttl, cap))


# --------------------------------------------------------------------------- creation


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every call.
@dataclass(slots=True)
class NewTask:
    """What a task is created from: the call's tool, arguments, grant and revision, the ttl the
    client asked for, and what the client declared it can answer (what the handler may ask it
    in the worker)."""

    tool: CompiledTool
    arguments: dict[str, Any]
    principal: Principal
    rev: Revision
    ttl_ms: int | None = None
    client_capabilities: dict[str, Any] | None = None


def create_task(new: NewTask, *, held: str = "") -> McpTask:
    """Store the row, then enqueue it; the caller answers with the create-task result at once.

    The row is committed before the message is published (TX-4), so any server instance and
    the worker find it. If the broker refuses the message the row is deleted and the client
    gets a clear error: no orphan row is left working forever. A ``held`` task (its status
    message says why: awaiting approval) is stored working and not enqueued: whoever releases
    it calls ``enqueue``.
    """
    tool, principal = new.tool, new.principal
    ttl = effective_ttl(new.ttl_ms)
    now = timezone.now()
    user = principal.user
    task = McpTask.objects.create(
        principal_key=principal.key,
        principal_data={
            "client_id": principal.client_id,
            "scopes": None if principal.scopes is None else sorted(principal.scopes),
            "user_id": getattr(user, "pk", None),
            "subject": principal.owner,
        },
        required_scopes=" ".join(sorted(tool.required_scopes)),
        protocol_version=new.rev.version,
        tool_name=tool.name,
        tool_version=tool.version,
        arguments=new.arguments,
        created_at=now,
        updated_at=now,
        ttl_ms=ttl,
        expires_at=McpTask.expiry(now, ttl),
        poll_interval_ms=int(mcp_settings.TASK_POLL_INTERVAL_MS),
        celery_id=uuid.uuid4().hex,
        client_capabilities=new.client_capabilities or {},
        status_message=held,
        trace_context=telemetry.inject(),
    )
    telemetry.task_status(tool.name, wire.WORKING)
    logger.info("Task %s created: tool %r for %s", task.pk, tool.name, principal.key)
    if held:
        return task
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
        from .jobs import run_task
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
        run_task.apply_async(args=[task.pk, task.celery_id], **options)
    except Exception as exc:  # kombu/redis raise many types for an unreachable broker
        logger.error("Could not enqueue task %s: %s", task.pk, exc)
        raise QueueUnavailable(str(exc)) from exc


# --------------------------------------------------------------------------- methods


def _scopes(principal: Principal) -> frozenset[str] | None:
    """The token's scopes expanded under the current catalog (None: not restricted by scope)."""
    return get_catalog().scoped(principal).scopes if principal.granted is not None else principal.scopes


def reachable_tasks(principal: Principal) -> TaskQuerySet:
    """The tasks of this grant that its token's scopes still cover."""
    return McpTask.objects.reachable_by(principal.key, _scopes(principal))


def find_task(params: dict[str, Any], principal: Principal) -> McpTask:
    """The grant's task, if the token still carries the scopes its tool required (one query)."""
    task_id = wire.task_id_param(params)
    task = McpTask.objects.owned_by(principal.key).filter(pk=task_id).first() if lookable(task_id) else None
    scopes = _scopes(principal) if task is not None else None
    if task is None or (scopes is not None and not set(task.required_scopes.split()) <= scopes):
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


def terminal_or_wait(task: McpTask, wait_until: float, watch: ResultWatch | None = None) -> McpTask:
    """T11-10: the task if terminal; StillWorking before ``wait_until`` (monotonic); then an error.

    With a ``watch`` (a ``tasks/result`` that can stream), StillWorking carries what to send
    meanwhile: ``notifications/tasks/status`` when the status moved (T11-14), and each request
    for input of the task not sent on this stream yet, tagged with the task (T11-11, T11-15).
    """
    if task.terminal:
        return task
    if time.monotonic() < wait_until:
        raise StillWorking(task.pk, [] if watch is None else _news(task, watch))
    raise e.internal_error(
        f"Task {task.pk} is still {task.status} after {mcp_settings.TASK_RESULT_WAIT_SECONDS:g} s; "
        "call tasks/result again.",
    )


def _news(task: McpTask, watch: ResultWatch) -> list[bytes]:
    messages: list[bytes] = []
    moved = task.status != watch.status
    # The first look at a working task sends nothing: a plain tasks/result stays plain JSON.
    if moved and (watch.status is not None or task.status == wire.INPUT_REQUIRED):
        state = state_of(task, v.get_revision(task.protocol_version))
        messages.append(orjson.dumps(wire.core_status_notification(state)))
    watch.status = task.status
    if task.status == wire.INPUT_REQUIRED:
        for request in outstanding(task.pk):
            if request.id not in watch.sent:
                watch.sent.add(request.id)
                framed = wire.core_input_request(request.id, request.method, request.params, task.pk)
                messages.append(orjson.dumps(framed))
    return messages


def list_page(principal: Principal, cursor: Any, key: bytes, page_size: int) -> tuple[list[McpTask], str | None]:
    """T11-12: the caller's live tasks, newest first, keyset-paginated with signed cursors."""
    from django.db.models import Q

    rows = reachable_tasks(principal).order_by("-created_at", "-id")
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
