"""Long-running tool calls as tasks run by Celery (2025-11-25 core tasks, the 2026-07-28 extension).

``service`` creates rows and serves the task methods, ``worker`` runs a task's handler in a
Celery worker (with a heartbeat), ``recovery`` retries or fails tasks whose worker is gone,
``results`` stores a task's result in its row, ``jobs`` and ``beat`` hold the Celery tasks
(imported only where Celery is installed), ``quiet`` lowers Celery's lines about them to DEBUG.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, field

from ..conf import mcp_settings
from ..types import Principal

__all__ = [
    "AWAITING_APPROVAL",
    "QueueUnavailable",
    "ResultWatch",
    "StillWorking",
    "WAITING_FOR_WORKER",
    "tasks_enabled",
]

# What a task held for approval says while it waits (its statusMessage; ``approvals.flow``).
AWAITING_APPROVAL = "Awaiting approval"
# What a task no worker has started says, once it has waited TASK_LOST_AFTER_SECONDS
# (``recovery.note_unclaimed``); the worker that starts it clears it.
WAITING_FOR_WORKER = "Waiting for a worker: none has started this task yet."


def tasks_enabled() -> bool:
    """Tasks are served when the setting allows it and Celery, an optional extra, is installed."""
    return bool(mcp_settings.TASKS_ENABLED) and _celery_installed()


@functools.cache
def _celery_installed() -> bool:
    return importlib.util.find_spec("celery") is not None


class QueueUnavailable(Exception):
    """The Celery broker refused the message."""


class StillWorking(Exception):
    """``tasks/result`` on a task that is not terminal yet, before the caller's deadline.

    The view waits for it without holding a thread (it sleeps on the event loop and asks again),
    so clients waiting on results cannot starve the thread pool that serves other requests.
    ``messages`` are what to send on the response's SSE stream meanwhile (the task's requests
    for input, status notifications): framed JSON-RPC messages, in order.
    """

    def __init__(self, task_id: str, messages: list[bytes] | None = None) -> None:
        super().__init__(task_id)
        self.task_id = task_id
        self.messages = messages or []
        # Who waits (set by the method): the wait holds one of their stream slots.
        self.principal: Principal | None = None


@dataclass(slots=True)
class ResultWatch:
    """What one ``tasks/result`` request has sent so far, across its looks at the task."""

    sent: set[str] = field(default_factory=set)  # ids of the requests for input sent on its stream
    status: str | None = None  # the task's status at the last look
