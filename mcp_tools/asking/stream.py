"""2025-06-18 and 2025-11-25: the question goes on the call's SSE stream as a server request and
the handler waits for the answer, which the client POSTs, possibly to another process.

The waiting process polls an ``McpPendingInput`` row (``waiting``); the process that takes the
answer's POST fills it in (``record_answer``, which also takes the answers to a task's
requests). Bound to the session and principal of the call. The wait ends with the answer, the
call's cancellation, or ``INPUT_TIMEOUT_SECONDS`` (L-14: the request is then cancelled with
``notifications/cancelled`` and the call ends with an ``isError`` result).
A waiting call holds its thread: at most half of the pool waits at once.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import orjson
from django.db.models import Q
from django.utils import timezone

from ..conf import mcp_settings
from ..exceptions import InputUnavailable
from ..models import McpPendingInput, McpSession
from ..protocol import inputs
from ..storable import json_value, lookable
from .answers import check_question, checked_answer, missing_capability
from .waiting import GRACE_SECONDS, people, wait_for_answer

__all__ = ["StreamAsker", "record_answer"]

logger = logging.getLogger("mcp_tools")


_slots = people  # calls waiting for a person: shared with approval-gated calls


class StreamAsker:
    """Asks on the stream of one legacy call and blocks its thread until the answer comes."""

    __slots__ = ("_capabilities", "cancelled", "emit", "principal_key", "session_id", "version")

    def __init__(
        self,
        version: str,
        session_id: str,
        principal_key: str,
        emit: Callable[[bytes], None] | None,
        cancelled: Callable[[], bool],
    ) -> None:
        self.version = version
        self.session_id = session_id
        self.principal_key = principal_key
        self.emit = emit
        self.cancelled = cancelled
        self._capabilities: dict[str, Any] | None = None

    def _declared(self) -> dict[str, Any]:
        # Read once, and only by calls that ask: most requests never need the capabilities.
        if self._capabilities is None:
            found = McpSession.objects.filter(pk=self.session_id).values_list("client_capabilities", flat=True).first()
            self._capabilities = found if isinstance(found, dict) else {}
        return self._capabilities

    def can(self, method: str) -> bool:
        return inputs.client_can(method, self._declared(), self.version)

    def ask(self, method: str, params: dict[str, Any], key: str | None) -> dict[str, Any]:
        check_question(method, params, self.version)
        if not self.can(method):
            raise missing_capability(method, self.version)
        if self.emit is None:
            raise InputUnavailable(
                f"This tool needs to ask {inputs.NAMES[method]}, which needs an SSE response: "
                "send the call with Accept: text/event-stream (and not in a batch)."
            )
        if not _slots.take():
            raise InputUnavailable(
                f"This tool needs to ask {inputs.NAMES[method]}, but the server is waiting for too many "
                "answers right now; try again shortly."
            )
        try:
            answer = self._ask(method, inputs.shape_params(method, params, self.version))
        finally:
            _slots.give_back()
        return checked_answer(method, params, answer)

    def _ask(self, method: str, shaped: dict[str, Any]) -> Any:
        assert self.emit is not None
        request_id = f"mcp-tools-{secrets.token_urlsafe(16)}"
        timeout = float(mcp_settings.INPUT_TIMEOUT_SECONDS)
        McpPendingInput.objects.create(
            id=request_id,
            session_id=self.session_id,
            principal_key=self.principal_key,
            method=method,
            expires_at=timezone.now() + timedelta(seconds=timeout + GRACE_SECONDS),
        )
        try:
            self.emit(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": shaped}))
            return wait_for_answer(
                request_id, method, timeout, self.cancelled, lambda reason: self._cancel_request(request_id, reason)
            )
        finally:
            McpPendingInput.objects.filter(pk=request_id).delete()

    def _cancel_request(self, request_id: str, reason: str) -> None:
        """L-14: a request the server no longer waits for is cancelled."""
        assert self.emit is not None
        note = {"requestId": request_id, "reason": reason}
        self.emit(orjson.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": note}))


def record_answer(
    session_id: str, principal_key: str, request_id: Any, result: Any, error: Any, *, tasks: Any = None
) -> bool:
    """Store the client's answer to a request of ours, from whichever process took the POST.

    Only a request this principal still waits for takes it: a call's request from the session
    that made the call, a task's request (2025-11-25, sent on a ``tasks/result`` stream) from any
    session of the task's owner whose token still reaches the task (``tasks``: a queryset of
    them; None: any task of the owner). Anything else (an unknown id, a second answer, another
    session's or principal's id) is ignored.
    """
    if not isinstance(request_id, str) or not request_id.startswith("mcp-tools-") or not lookable(request_id):
        return False
    of_task = Q(task__isnull=False) if tasks is None else Q(task__in=tasks)
    updated = McpPendingInput.objects.filter(
        Q(session_id=session_id, task__isnull=True) | of_task,
        pk=request_id,
        principal_key=principal_key,
        answered_at__isnull=True,
        expires_at__gt=timezone.now(),
    ).update(  # NUL shown as U+FFFD: PostgreSQL refuses it in JSON
        answer=json_value(result) if error is None else None, error=json_value(error), answered_at=timezone.now()
    )
    if not updated:
        logger.info("Ignored a response to %r: no request of this session waits for it", request_id)
    return bool(updated)
