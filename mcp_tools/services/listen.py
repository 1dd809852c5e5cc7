"""subscriptions/listen (2026-07-28, H-D10) and the legacy GET stream: what their frames say.

The transport keeps the stream open and sends these frames; the method and notification names
live here, not in the transport.
"""

from __future__ import annotations

from typing import Any

from ..protocol import errors as e
from ..protocol import versions as v
from ..protocol.jsonrpc import Request, encode_notification, encode_result
from .identity import list_changed_supported

__all__ = ["LIST_CHANGED", "LIST_CHANGED_METHOD", "ListenFrames", "listen_frames"]

LIST_CHANGED_METHOD = "notifications/tools/list_changed"

# The legacy GET stream's list_changed notification (it carries no subscription id).
LIST_CHANGED = encode_notification(LIST_CHANGED_METHOD)


class ListenFrames:
    """The frames of one listen stream: the acknowledgement, list_changed, the final result."""

    __slots__ = ("ack", "changed", "final", "honoured")

    def __init__(self, message: Request, asgi: bool) -> None:
        wanted = message.params.get("notifications")
        if wanted is not None and not isinstance(wanted, dict):
            raise e.invalid_params("subscriptions/listen params.notifications must be an object")
        self.honoured: dict[str, Any] = {}
        if isinstance(wanted, dict) and wanted.get("toolsListChanged") is True and list_changed_supported(asgi):
            self.honoured["toolsListChanged"] = True
        meta = {v.META_SUBSCRIPTION_ID: message.id}
        self.ack = encode_notification(
            "notifications/subscriptions/acknowledged", {"_meta": meta, "notifications": self.honoured}
        )
        self.final = encode_result(message.id, {"resultType": "complete", "_meta": meta})
        self.changed = encode_notification(LIST_CHANGED_METHOD, {"_meta": meta})


def listen_frames(message: Request, asgi: bool) -> ListenFrames:
    """The frames of a listen stream for ``message``; -32602 for malformed params."""
    return ListenFrames(message, asgi)
