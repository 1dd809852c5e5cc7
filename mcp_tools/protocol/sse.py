"""Server-Sent Events framing (WHATWG event-stream)."""

from __future__ import annotations

__all__ = ["comment", "event", "priming"]


def event(data: bytes, *, event_id: str | None = None) -> bytes:
    """One SSE event. JSON from orjson has no raw newlines, so data fits on one line."""
    out = b"" if event_id is None else b"id: " + event_id.encode() + b"\n"
    return out + b"event: message\ndata: " + data + b"\n\n"


def priming(event_id: str, *, retry_ms: int | None = None) -> bytes:
    """2025-11-25: "the server SHOULD immediately send an SSE event consisting of an event ID
    and an empty data field in order to prime the client to reconnect"."""
    out = b"id: " + event_id.encode() + b"\n"
    if retry_ms is not None:
        out += b"retry: " + str(retry_ms).encode() + b"\n"
    return out + b"data: \n\n"


def comment(text: str = "") -> bytes:
    """A keep-alive comment line; clients ignore it."""
    return b": " + text.encode() + b"\n\n"
