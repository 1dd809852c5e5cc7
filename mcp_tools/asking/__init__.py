"""Asking the client for input on behalf of a handler (``ctx.elicit``, ``ctx.sample``).

Two askers, one handler API: ``replay.ReplayAsker`` (2026-07-28) answers from the retried
request and otherwise ends the run with the question (``InputNeeded``), the answers so far
travelling in a signed ``requestState`` (``state``); ``stream.StreamAsker`` (2025-06-18,
2025-11-25) sends the question on the call's SSE stream and waits for the answer, which any
process may receive (``McpPendingInput`` rows). ``answers`` checks what comes back;
``unavailable.NoAsker`` serves calls that cannot ask (tasks).
"""

from __future__ import annotations

from .replay import ReplayAsker
from .state import RequestState, StateRefused, open_state, seal_state
from .stream import StreamAsker, record_answer
from .unavailable import NoAsker

__all__ = [
    "NoAsker",
    "ReplayAsker",
    "RequestState",
    "StateRefused",
    "StreamAsker",
    "open_state",
    "record_answer",
    "seal_state",
]
