"""Asking the client for input on behalf of a handler (``ctx.elicit``, ``ctx.sample``).

Three askers, one handler API: ``replay.ReplayAsker`` (2026-07-28) answers from the retried
request and otherwise ends the run with the question (``InputNeeded``), the answers so far
travelling in a signed ``requestState`` (``state``); ``stream.StreamAsker`` (2025-06-18,
2025-11-25) sends the question on the call's SSE stream and waits for the answer, which any
process may receive (``McpPendingInput`` rows, ``waiting``); ``task.TaskAsker`` (a task in the
worker, both eras) moves the task to ``input_required`` and waits for the answer the client
gives through ``tasks/result`` + a response POST (2025-11-25) or ``tasks/update``
(2026-07-28). ``answers`` checks what comes back; ``unavailable.NoAsker`` serves calls that
cannot ask.
"""

from __future__ import annotations

from .replay import ReplayAsker
from .state import RequestState, StateRefused, open_state, seal_state
from .stream import StreamAsker, record_answer
from .task import AnswerRefused, TaskAsker, TaskRequest, outstanding, record_task_answers, withdraw
from .unavailable import NoAsker

__all__ = [
    "AnswerRefused",
    "NoAsker",
    "ReplayAsker",
    "RequestState",
    "StateRefused",
    "StreamAsker",
    "TaskAsker",
    "TaskRequest",
    "open_state",
    "outstanding",
    "record_answer",
    "record_task_answers",
    "seal_state",
    "withdraw",
]
