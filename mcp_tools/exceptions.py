"""Exceptions a tool handler raises; each one maps to a well-defined answer on the wire."""

from __future__ import annotations

__all__ = [
    "InputNeeded",
    "InputUnavailable",
    "ToolCancelled",
    "ToolError",
]


class ToolError(Exception):
    """A failure the model should see: becomes a result with ``isError: true`` (T-9).

    The message is sent to the client as is, so keep secrets and internals out of it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolCancelled(Exception):
    """Raised inside a handler (by ``ToolContext.check_cancelled``) when the call was cancelled."""


class InputUnavailable(ToolError):
    """``ctx.elicit``/``ctx.sample`` cannot get an answer: the client did not declare the
    capability, the call has no stream to ask on, or the client did not answer in time.

    A ``ToolError``: the call ends with an ``isError`` result saying why, never a hang.
    """


class InputNeeded(Exception):
    """The handler cannot go on without answers from the client (2026-07-28).

    Raised by ``ctx.elicit``/``ctx.sample`` when the answer is not in the request yet;
    ``requests`` maps a key to one input request (``{"method": ..., "params": ...}``). The
    runner turns it into an ``InputRequired`` outcome, answered as an ``input_required`` result
    whose retry runs the handler again with the answers at hand.
    """

    def __init__(self, requests: dict[str, dict[str, object]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests
