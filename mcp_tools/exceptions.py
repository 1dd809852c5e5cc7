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
