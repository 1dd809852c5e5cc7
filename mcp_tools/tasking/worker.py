"""The worker side of tasks: run one task's handler through the runner and record the outcome.

Called by the Celery task ``mcp_tools.run_task`` (``jobs.py``); everything here is plain Django.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from datetime import timedelta
from typing import Any

import orjson
from django.db import DatabaseError
from django.db.models import Case, F, TextField, Value, When
from django.utils import timezone

from .. import runner, telemetry
from ..asking import NoAsker, TaskAsker, withdraw
from ..cancel import CancelFlag
from ..catalog import get_catalog
from ..conf import mcp_settings
from ..models import McpTask
from ..protocol import errors as e
from ..protocol import task_wire as wire
from ..protocol import versions as v
from ..threads import close_old_connections
from ..types import Asker, Principal, ToolResult
from . import WAITING_FOR_WORKER
from .results import store_result

__all__ = [
    "WORKER_LOST_MESSAGE",
    "execute",
    "heartbeat_stale",
    "retry_allowed",
]

logger = logging.getLogger("mcp_tools.tasks")

WORKER_LOST_MESSAGE = "The worker running this task stopped before it finished."


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
        subject=str(data.get("subject") or ""),
    )


def _fail(task_id: str, code: int, message: str, *, attempt: int | None = None) -> bool:
    return McpTask.objects.move(
        task_id,
        wire.FAILED,
        attempt=attempt,
        error_code=code,
        error_message=message,
        status_message=message,
        finished_at=timezone.now(),
    )


def heartbeat_stale(task: McpTask) -> bool:
    """Whether the attempt that claimed ``task`` stopped writing its heartbeat."""
    beat = task.heartbeat_at or task.started_at
    return beat is None or beat < timezone.now() - timedelta(seconds=mcp_settings.TASK_LOST_AFTER_SECONDS)


def execute(task_id: str, delivery: str | None = None, *, can_ask: bool = True) -> str:
    """Run one task in a worker; returns the status it ended in (for logs and tests).

    ``delivery`` is the Celery id of the message: a message the row no longer names (the task
    was queued again since) is stale and does nothing. Each run claims the next attempt with a
    conditional UPDATE, so two deliveries never run one task at once. Without ``can_ask`` (an
    eager run, inside the creating request) the handler's questions end it at once.
    """
    task = McpTask.objects.filter(pk=task_id).first()
    if task is None:
        return "missing"  # purged, or the broker outlived the row
    skipped = _not_to_run(task, delivery)
    if skipped is not None:
        return skipped
    attempt = task.attempts + 1
    live = (wire.WORKING, wire.INPUT_REQUIRED)
    fields = _claim(attempt)
    if not McpTask.objects.move(task_id, wire.WORKING, expected=live, attempt=task.attempts, **fields):
        return McpTask.objects.filter(pk=task_id).values_list("status", flat=True).first() or "missing"
    if attempt > 1:
        withdraw(task_id)  # its questions go with it; the handler asks again from the start
    task.attempts = attempt
    beating = Heartbeat(task_id, attempt)
    beating.start()
    status = wire.FAILED
    # The worker's span is a child of the call's (its context stored with the row).
    with telemetry.task_span(task_id, task.tool_name, task.trace_context) as span:
        try:
            status = _run(task, can_ask)
        except Exception:
            logger.exception("Task %s could not be run", task_id)
            _fail(task_id, e.INTERNAL_ERROR, "The task could not be run (internal error).", attempt=attempt)
        finally:
            beating.stop()
            if span is not None:
                span.set_attribute("mcp_tools.task.status", status)
            telemetry.task_status(task.tool_name, status)
    return status


def _not_to_run(task: McpTask, delivery: str | None) -> str | None:
    """The status to report instead of running ``task`` for this delivery; None: run it."""
    if task.terminal:
        return task.status  # cancelled before it started, or a duplicate delivery
    if delivery is not None and task.celery_id and delivery != task.celery_id:
        return "superseded"  # queued again after its worker was lost; that message runs it
    if task.attempts == 0 or task.started_at is None:
        return None
    if not heartbeat_stale(task):
        return "running"  # redelivered while its worker still runs it (e.g. a short visibility timeout)
    # acks_late + reject_on_worker_lost: a worker died with this message unacknowledged.
    logger.warning("Task %s was interrupted (attempt %s); worker-lost policy %s", task.pk, task.attempts,
                   mcp_settings.TASK_WORKER_LOST)  # fmt: skip
    if retry_allowed(task):
        return None
    _fail(task.pk, e.INTERNAL_ERROR, WORKER_LOST_MESSAGE, attempt=task.attempts)
    return wire.FAILED


def _claim(attempt: int) -> dict[str, Any]:
    """The fields the conditional UPDATE that claims ``attempt`` writes."""
    now = timezone.now()
    fields: dict[str, Any] = {"attempts": attempt, "started_at": now, "heartbeat_at": now, "updated_at": now}
    if attempt > 1:
        # The lost attempt may have been waiting for an answer: this one starts over, working.
        fields["status_message"] = f"Retrying after a worker stopped (attempt {attempt})."
    else:
        # "Waiting for a worker" (recovery.note_unclaimed) is over; any other message stays.
        waited = When(status_message=WAITING_FOR_WORKER, then=Value(""))
        fields["status_message"] = Case(waited, default=F("status_message"), output_field=TextField())
    return fields


def retry_allowed(task: McpTask) -> bool:
    return mcp_settings.TASK_WORKER_LOST == "retry" and task.attempts < int(mcp_settings.TASK_MAX_ATTEMPTS)


class Heartbeat:
    """The attempt's heartbeat, written every TASK_HEARTBEAT_SECONDS while it runs.

    A thread rather than the handler's progress calls: a handler that reports nothing for
    minutes is still alive. One thread per process beats every attempt running in it (a thread
    started and joined per task cost a tenth of a no-op task's time), in its own DB
    connection; it writes only while the row is the attempt's.
    """

    def __init__(self, task_id: str, attempt: int) -> None:
        self.task_id = task_id
        self.attempt = attempt

    def start(self) -> None:
        _beats.add(self)

    def stop(self) -> None:
        _beats.discard(self)

    def beat(self) -> bool:
        """Write the heartbeat; False once the row is no longer this attempt's to beat."""
        mine = McpTask.objects.filter(
            pk=self.task_id, attempts=self.attempt, status__in=(wire.WORKING, wire.INPUT_REQUIRED)
        )
        return bool(mine.update(heartbeat_at=timezone.now()))


class _Beats:
    """The attempts running in this process, and the one thread that beats them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[Heartbeat] = set()
        self.thread: threading.Thread | None = None

    def add(self, beat: Heartbeat) -> None:
        with self.lock:
            self.running.add(beat)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="mcp-task-heartbeat", daemon=True)
                self.thread.start()

    def discard(self, beat: Heartbeat) -> None:
        with self.lock:
            self.running.discard(beat)

    def _run(self) -> None:
        due: dict[Heartbeat, float] = {}
        period = mcp_settings.TASK_HEARTBEAT_SECONDS
        while True:
            time.sleep(min(period, 1.0) / 4)
            period = mcp_settings.TASK_HEARTBEAT_SECONDS
            now = time.monotonic()
            with self.lock:
                running = list(self.running)
            # An attempt's first beat comes one period after it started, as each one after.
            due = {beat: due.get(beat, now + period) for beat in running}
            ready = [beat for beat, at in due.items() if at <= now]
            if not ready:
                continue
            close_old_connections()
            for beat in ready:
                due[beat] = now + period
                try:
                    if not beat.beat():
                        self.discard(beat)  # finished, cancelled, or taken over by a newer attempt
                except DatabaseError as exc:  # the next beat tries again; the sweep is patient
                    logger.warning("Task %s: heartbeat not written (%s)", beat.task_id, exc)

    def forked(self) -> None:
        """In a forked child (a prefork pool process): the parent's attempts and thread are not its own."""
        self.__init__()  # type: ignore[misc]


_beats = _Beats()
os.register_at_fork(after_in_child=_beats.forked)


class TaskCancelFlag(CancelFlag):
    """ToolContext.cancelled for a task: the row is cancelled, gone, or now run by a newer
    attempt (this one was given up as lost), read like any CancelFlag."""

    __slots__ = ("attempt", "task_id")

    def __init__(self, task_id: str, attempt: int | None = None) -> None:
        super().__init__(None)
        self.task_id = task_id
        self.attempt = attempt

    def _probe(self) -> bool:
        row = McpTask.objects.filter(pk=self.task_id).values_list("status", "attempts").first()
        if row is None or row[0] == wire.CANCELLED:
            return True
        return self.attempt is not None and row[1] != self.attempt


def _run(task: McpTask, can_ask: bool = True) -> str:
    rev = v.get_revision(task.protocol_version)
    tool = get_catalog().get(task.tool_name)
    if tool is None:
        message = f"Unknown tool: {task.tool_name}"
        _fail(task.pk, e.INVALID_PARAMS, message, attempt=task.attempts)
        return wire.FAILED
    cancelled = TaskCancelFlag(task.pk, task.attempts)
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
        McpTask.objects.filter(pk=task.pk, status=wire.WORKING, attempts=task.attempts).update(
            status_message=message[:1000], updated_at=timezone.now()
        )

    def log(level: str, data: Any, logger_name: str | None) -> None:
        logger.log(logging.INFO, "Task %s log (%s): %s", task.pk, level, str(data)[:500])

    # ctx.elicit / ctx.sample: the task waits in input_required for the client's answer (T11-11,
    # TX-6/TX-7), as far as the client declared it can answer when it created the task.
    capabilities = task.client_capabilities if isinstance(task.client_capabilities, dict) else {}
    asker: Asker = TaskAsker(
        task.pk, task.attempts, task.principal_key, rev.version, capabilities=capabilities, cancelled=cancelled
    )
    if not can_ask:
        asker = NoAsker(
            f"Tool {tool.name!r} cannot ask the client for input here: this task runs eagerly, inside "
            "the request that created it (CELERY_TASK_ALWAYS_EAGER), so the client cannot answer yet."
        )
    outcome = runner.settle(
        runner.invoke(runner.Invocation(tool, dict(task.arguments), _principal(task), progress, log, cancelled, asker)),
        _as_is,
        # Only a handler raising InputNeeded itself gets here: the task's asker waits instead.
        lambda _: runner.error(f"Tool {tool.name!r} needs input, which a task cannot ask for this way."),
    )
    if outcome is None:
        # The handler saw the cancellation (or a newer attempt took over); the row says so.
        return McpTask.objects.filter(pk=task.pk).values_list("status", flat=True).first() or "missing"
    stored = store_result(outcome)
    size = len(orjson.dumps(stored))
    limit = int(mcp_settings.TASK_RESULT_MAX_BYTES)
    if size > limit:
        message = f"The tool's result is {size} bytes, over the {limit}-byte limit for task results."
        _fail(task.pk, e.INTERNAL_ERROR, message, attempt=task.attempts)
        return wire.FAILED
    failed = wire.failed_on_error(rev, outcome.is_error)
    status = wire.FAILED if failed else wire.COMPLETED
    message = _error_summary(outcome) if outcome.is_error else ""
    moved = McpTask.objects.move(
        task.pk, status, attempt=task.attempts, result=stored, status_message=message, finished_at=timezone.now()
    )
    if not moved:
        # Cancelled while running: it stays cancelled (T11-13); or a newer attempt took over.
        return McpTask.objects.filter(pk=task.pk).values_list("status", flat=True).first() or "missing"
    logger.info("Task %s %s", task.pk, status)
    return status


def _as_is(result: ToolResult) -> ToolResult:
    return result


def _error_summary(result: ToolResult) -> str:
    """The status message of a task whose result is an error: diagnostic, as T11-17 asks."""
    texts = [b["text"] for b in result.content if isinstance(b, dict) and b.get("type") == "text"]
    if not texts or not isinstance(texts[0], str) or not texts[0].strip():
        return "The tool reported an error."
    first = texts[0].strip()
    return f"The tool reported an error: {first if len(first) <= 500 else first[:499] + '…'}"
