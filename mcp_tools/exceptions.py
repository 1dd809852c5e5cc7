"""Exceptions a tool handler raises; each one maps to a well-defined answer on the wire."""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should see: becomes a result with ``isError: true`` (T-9).

    The message is sent to the client as is, so keep secrets and internals out of it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolCancelled(Exception):
    """Raised inside a handler (by ``ToolContext.check_cancelled``) when the call was cancelled."""


class InputNeeded(Exception):
    """Raised inside a handler that cannot go on without answers from the client.

    ``requests`` maps a key of the handler's choosing to one request's params (an elicitation
    or sampling request). The runner turns it into an ``InputRequired`` outcome; where the
    client cannot answer, the caller gets a clear ``isError`` result instead of a hang.
    """

    def __init__(self, requests: dict[str, dict[str, object]]) -> None:
        super().__init__(f"input required: {', '.join(requests)}")
        self.requests = requests
