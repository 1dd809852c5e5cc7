"""Waiting for the answer to a request for input: poll its ``McpPendingInput`` row.

Shared by the two askers that block (the legacy call's ``StreamAsker`` and a task's
``TaskAsker``): whichever process takes the client's answer writes it into the row, the
process that asked reads it here. The wait ends with the answer, the call's (or task's)
cancellation, or ``timeout``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..conf import mcp_settings
from ..exceptions import InputUnavailable, ToolCancelled
from ..models import McpPendingInput
from ..protocol import inputs

__all__ = [
    "GRACE_SECONDS",
    "people",
    "poll",
    "wait_for_answer",
]

# How long an answer waits for the process that asked after its deadline, before the purge.
GRACE_SECONDS = 60

T = TypeVar("T")


class WaitSlots:
    """Calls of this process waiting for a person, each holding a thread of the handler pool:
    a legacy call waiting for an answer on its stream, a call waiting for its approval.

    At most half of ``HANDLER_POOL_SIZE`` wait at once, so calls that wait for people never take
    every handler thread from calls that do not (answers and decisions arrive elsewhere: the
    protocol pool, the admin).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.taken = 0

    def take(self) -> bool:
        with self._lock:
            if self.taken >= max(1, int(mcp_settings.HANDLER_POOL_SIZE) // 2):
                return False
            self.taken += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.taken -= 1


people = WaitSlots()

# Between two looks at the row (a module attribute, so tests can act while a worker waits).
pause = time.sleep


def poll(look: Callable[[], T | None], timeout: float, cancelled: Callable[[], bool]) -> T | None:
    """``look()`` until it returns something (returned), backing off from 20 to 250 ms; None when
    ``cancelled()`` turns true or ``timeout`` seconds pass first (ask ``cancelled()`` which).

    The waiting of everything decided by another process through a row: answers to requests for
    input here, decisions on approval-gated calls (``mcp_tools.approvals``).
    """
    deadline = time.monotonic() + timeout
    delay = 0.02
    while True:
        found = look()
        if found is not None:
            return found
        if cancelled() or time.monotonic() >= deadline:
            return None
        pause(delay)
        delay = min(delay * 1.5, 0.25)


def wait_for_answer(
    request_id: str,
    method: str,
    timeout: float,
    cancelled: Callable[[], bool],
    give_up: Callable[[str], None],
) -> Any:
    """The client's answer to ``request_id``, or raise.

    ``InputUnavailable`` when the client answered with an error or not within ``timeout``
    seconds, ``ToolCancelled`` when ``cancelled()`` turns true; ``give_up(reason)`` is called
    first in both of the last two cases (a legacy call cancels its request, L-14).
    """

    def look() -> tuple[Any, Any] | None:
        return (
            McpPendingInput.objects.filter(pk=request_id, answered_at__isnull=False)
            .values_list("answer", "error")
            .first()
        )

    row = poll(look, timeout, cancelled)
    if row is not None:
        answer, error = row
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else None
            raise InputUnavailable(f"The client did not answer {inputs.NAMES[method]}: {message or error}")
        return answer
    if cancelled():
        give_up("The tool call was cancelled.")
        raise ToolCancelled()
    give_up(f"No answer within {timeout:g} seconds.")
    raise InputUnavailable(
        f"The client did not answer {inputs.NAMES[method]} within {timeout:g} seconds; "
        "call the tool again to be asked again."
    )
