"""Tasks that ask: the handler's question waits in an ``McpPendingInput`` row tied to its task.

The worker's ``TaskAsker`` stores the request, moves the task to ``input_required`` and waits
(its thread is alive, so the task's heartbeat goes on). The client learns of the request on
its own schedule, from any process:

- 2025-11-25 (T11-11): the client calls ``tasks/result``; the request goes out on that
  response's SSE stream with the ``related-task`` ``_meta``, and the client POSTs a JSON-RPC
  response, which ``record_answer`` (``stream``) writes into the row.
- 2026-07-28 (TX-6, TX-7): ``tasks/get`` shows the request in ``inputRequests`` under its key;
  ``tasks/update`` carries ``inputResponses`` by key (``record_task_answers``).

Once the answer is in, the task goes back to ``working`` and the handler goes on; no answer
within ``INPUT_TIMEOUT_SECONDS`` ends the question with ``InputUnavailable`` (an ``isError``
result). Keys are numbered over the task's life (``elicit-1``, ``sample-2``, ``<key>-3``), so
none is ever used twice (TX-7).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F
from django.utils import timezone

from ..conf import mcp_settings
from ..exceptions import ToolCancelled
from ..models import McpPendingInput, McpTask
from ..protocol import inputs
from ..protocol import task_wire as wire
from ..storable import json_value
from .answers import check_question, checked_answer, missing_capability
from .waiting import GRACE_SECONDS, wait_for_answer

__all__ = [
    "AnswerRefused",
    "TaskAsker",
    "TaskRequest",
    "outstanding",
    "record_task_answers",
    "withdraw",
]


class TaskAsker:
    """Asks on behalf of a task's handler in the worker, and blocks its thread for the answer."""

    __slots__ = ("attempt", "capabilities", "cancelled", "principal_key", "task_id", "version")

    def __init__(
        self,
        task_id: str,
        attempt: int,
        principal_key: str,
        version: str,
        *,
        capabilities: Mapping[str, Any],
        cancelled: Callable[[], bool],
    ) -> None:
        self.task_id = task_id
        self.attempt = attempt
        self.principal_key = principal_key
        self.version = version
        self.capabilities = capabilities
        self.cancelled = cancelled

    def can(self, method: str) -> bool:
        return inputs.client_can(method, self.capabilities, self.version)

    def ask(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        check_question(method, params, self.version)
        if not self.can(method):
            raise missing_capability(method, self.version)
        answer = self._ask(method, inputs.shape_params(method, params, self.version), key)
        return checked_answer(method, params, answer)

    def _ask(self, method: str, shaped: dict[str, Any], key: str | None) -> Any:
        mine = McpTask.objects.filter(pk=self.task_id, attempts=self.attempt)
        mine.update(inputs_asked=F("inputs_asked") + 1)
        number = mine.values_list("inputs_asked", flat=True).first()
        if number is None:
            raise ToolCancelled()  # purged, or a newer attempt runs the task now
        request_id = f"mcp-tools-{secrets.token_urlsafe(16)}"
        timeout = float(mcp_settings.INPUT_TIMEOUT_SECONDS)
        McpPendingInput.objects.create(
            id=request_id,
            task_id=self.task_id,
            key=f"{key or ('elicit' if method == inputs.ELICIT else 'sample')}-{number}",
            principal_key=self.principal_key,
            method=method,
            params=shaped,
            expires_at=timezone.now() + timedelta(seconds=timeout + GRACE_SECONDS),
        )
        try:
            waiting = f"Waiting for the client to answer {inputs.NAMES[method]}."
            if not McpTask.objects.move(
                self.task_id, wire.INPUT_REQUIRED, attempt=self.attempt, status_message=waiting
            ):
                raise ToolCancelled()  # cancelled (or taken over) meanwhile
            return wait_for_answer(request_id, method, timeout, self.cancelled, lambda reason: None)
        finally:
            # Back to working before the request goes: tasks/get never shows input_required
            # without the request it waits for (a cancelled task stays cancelled, T11-7).
            McpTask.objects.move(self.task_id, wire.WORKING, attempt=self.attempt, status_message="")
            McpPendingInput.objects.filter(pk=request_id).delete()


@dataclass(frozen=True, slots=True)
class TaskRequest:
    """One request of a task still waiting for its answer."""

    id: str
    key: str
    method: str
    params: dict[str, Any]


def outstanding(task_id: str) -> list[TaskRequest]:
    """The task's requests that wait for an answer, oldest first."""
    rows = McpPendingInput.objects.filter(task_id=task_id, answered_at__isnull=True, expires_at__gt=timezone.now())
    return [
        TaskRequest(id=pk, key=key, method=method, params=dict(params or {}))
        for pk, key, method, params in rows.order_by("created_at", "pk").values_list("pk", "key", "method", "params")
    ]


class AnswerRefused(Exception):
    """An answer in ``tasks/update`` is not the shape of its request's result (-32602)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def record_task_answers(task_id: str, principal_key: str, responses: Mapping[str, Any]) -> int:
    """TX-7: store the answers to the task's outstanding requests, by key; returns how many.

    Answers to keys that are not outstanding (never asked, answered already, withdrawn) are
    ignored; a malformed answer to an outstanding one refuses the whole update, storing none.
    """
    waiting = [r for r in outstanding(task_id) if r.key in responses]
    for request in waiting:
        problems = inputs.answer_problems(request.method, responses[request.key])
        if problems:
            raise AnswerRefused(f"inputResponses[{request.key!r}] is malformed: " + "; ".join(problems))
    stored = 0
    for request in waiting:
        stored += McpPendingInput.objects.filter(
            pk=request.id, task_id=task_id, principal_key=principal_key, answered_at__isnull=True
        ).update(answer=json_value(responses[request.key]), answered_at=timezone.now())  # NUL: U+FFFD
    return stored


def withdraw(task_id: str) -> int:
    """Drop a task's requests: its worker is gone, and the next attempt asks again."""
    deleted, _ = McpPendingInput.objects.filter(task_id=task_id).delete()
    return deleted
