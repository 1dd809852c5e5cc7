"""Tasks whose worker is gone: found by their heartbeat, whatever the broker, and retried or failed.

A broker may never redeliver a message whose worker died (kombu's SQLAlchemy transport does not),
or only after a long visibility timeout (Redis). The row knows better: a working task (or one
waiting in ``input_required``: its worker thread waits, and beats) whose heartbeat is older than
``TASK_LOST_AFTER_SECONDS`` lost its worker. ``recover`` applies
``TASK_WORKER_LOST`` to one such task (queue it again under a new message id, or fail it with a
clear message); ``sweep`` does it for every such task (the beat task
``mcp_tools.sweep_lost_tasks``), and ``tasks/get`` does it on read for the task it returns.

A task that no worker has started (no Celery worker runs, or none consumes its queue) has no
heartbeat to go stale: once it has waited as long, ``note_unclaimed`` says so in its status
message (and the log, once), ``unclaimed`` finds such tasks for the system check and the admin.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from ..asking import withdraw
from ..conf import mcp_settings
from ..models import McpTask
from ..protocol import errors as e
from ..protocol import task_wire as wire
from . import AWAITING_APPROVAL, WAITING_FOR_WORKER, QueueUnavailable
from .service import enqueue
from .worker import WORKER_LOST_MESSAGE, heartbeat_stale, retry_allowed

__all__ = [
    "note_unclaimed",
    "queue_name",
    "recover",
    "sweep",
    "unclaimed",
]

logger = logging.getLogger("mcp_tools.tasks")

# The statuses of a task some worker should be running.
LIVE = (wire.WORKING, wire.INPUT_REQUIRED)


def recover(task: McpTask) -> McpTask:
    """``task`` as it is after its worker, if lost, was dealt with (the row as given otherwise);
    a task no worker has started says so (``note_unclaimed``)."""
    if task.attempts == 0:
        return note_unclaimed(task)
    if task.status not in LIVE or not heartbeat_stale(task):
        return task
    now = timezone.now()
    # The current message id is the compare-and-swap token: one process acts on a lost task.
    mine: dict[str, Any] = {"expected": task.status, "attempt": task.attempts, "where": {"celery_id": task.celery_id}}
    if retry_allowed(task):
        fresh = uuid.uuid4().hex
        message = f"Its worker stopped; queued again (attempt {task.attempts + 1} of {mcp_settings.TASK_MAX_ATTEMPTS})."
        # heartbeat_at=now: the new message has TASK_LOST_AFTER_SECONDS to be picked up before
        # the task counts as lost again (then it is queued once more, never run twice at once).
        # A task lost while waiting for an answer is working again; its question goes with
        # the lost worker, and the next run asks anew.
        if McpTask.objects.move(
            task.pk,
            wire.WORKING,
            **mine,
            celery_id=fresh,
            started_at=None,
            heartbeat_at=now,
            status_message=message,
            updated_at=now,
        ):
            withdraw(task.pk)
            logger.warning("Task %s lost its worker (attempt %s); queued again", task.pk, task.attempts)
            try:
                enqueue(McpTask(pk=task.pk, celery_id=fresh))
            except QueueUnavailable:
                logger.error("Task %s could not be queued again; the next sweep tries again", task.pk)
    elif McpTask.objects.move(
        task.pk,
        wire.FAILED,
        **mine,
        error_code=e.INTERNAL_ERROR,
        error_message=WORKER_LOST_MESSAGE,
        status_message=WORKER_LOST_MESSAGE,
        finished_at=now,
        updated_at=now,
    ):
        withdraw(task.pk)
        logger.warning("Task %s lost its worker (attempt %s); failed", task.pk, task.attempts)
    return McpTask.objects.filter(pk=task.pk).first() or task


def unclaimed(cutoff: datetime | None = None) -> Any:
    """Live tasks queued before ``cutoff`` (default: TASK_LOST_AFTER_SECONDS ago) that no worker
    has started; tasks held for approval are not queued yet."""
    if cutoff is None:
        cutoff = timezone.now() - timedelta(seconds=mcp_settings.TASK_LOST_AFTER_SECONDS)
    waiting = McpTask.objects.live().filter(status=wire.WORKING, attempts=0, updated_at__lt=cutoff)
    return waiting.exclude(status_message__startswith=AWAITING_APPROVAL)


def queue_name() -> str:
    return repr(mcp_settings.TASK_QUEUE) if mcp_settings.TASK_QUEUE else "Celery's default queue"


def note_unclaimed(task: McpTask) -> McpTask:
    """``task``, its status message saying it waits for a worker when none has started it in
    TASK_LOST_AFTER_SECONDS (written once, with one warning in the log; the row as given otherwise)."""
    if (
        task.status != wire.WORKING
        or task.attempts
        or task.status_message.startswith((AWAITING_APPROVAL, WAITING_FOR_WORKER))
    ):
        return task
    waited = (timezone.now() - task.updated_at).total_seconds()
    if waited < mcp_settings.TASK_LOST_AFTER_SECONDS:
        return task
    where = {"celery_id": task.celery_id, "status_message": task.status_message}
    if McpTask.objects.move(
        task.pk, wire.WORKING, expected=wire.WORKING, attempt=0, where=where,
        status_message=WAITING_FOR_WORKER, updated_at=task.updated_at,
    ):  # fmt: skip
        logger.warning(
            "Task %s (tool %r) has waited %d s and no worker has started it: is a Celery worker running, "
            "consuming %s? (celery -A <your project> worker)",
            task.pk, task.tool_name, waited, queue_name(),
        )  # fmt: skip
        task.status_message = WAITING_FOR_WORKER
    return task


def sweep(limit: int = 1000) -> int:
    """Recover every live task whose worker is gone; returns how many were acted on."""
    cutoff = timezone.now() - timedelta(seconds=mcp_settings.TASK_LOST_AFTER_SECONDS)
    stale = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True, started_at__lt=cutoff)
    lost = McpTask.objects.live().filter(stale, status__in=LIVE, attempts__gt=0).order_by("heartbeat_at")
    acted = 0
    for task in lost[:limit]:
        message_id, status = task.celery_id, task.status
        after = recover(task)
        acted += after.celery_id != message_id or after.status != status
    return acted
