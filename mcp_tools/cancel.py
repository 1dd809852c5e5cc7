"""Cancellation flags: what a running handler reads as ``ctx.cancelled``.

A legacy client cancels with ``notifications/cancelled``, which may reach another process than
the one running the call, so the flag lives in Django's cache. Only a request that is in flight
can be cancelled: a running call marks itself in flight (``track``), and a cancellation for an id
that is not in flight is kept only ``EARLY_CANCEL_SECONDS`` (it may have overtaken its request on
the way to another process), so a stale or made-up cancellation cannot poison a later request
that reuses the id. Request ids are hashed before they become cache keys.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import orjson
from django.core.cache import cache

from .conf import mcp_settings
from .shared_state import degrade

__all__ = [
    "CancelFlag",
    "cancel",
    "track",
    "untrack",
]


class CancelFlag:
    """Cancellation of one in-flight request, visible across processes through the cache.

    Set directly (on the event loop) or found by ``_probe``, which runs at most every
    CANCEL_POLL_SECONDS; once cancelled it stays cancelled. Subclasses override ``_probe``
    to look somewhere else (a task reads its row).
    """

    __slots__ = ("_checked", "_set", "key")

    def __init__(self, key: str | None) -> None:
        self.key = key
        # Set on the event loop, read by the handler's thread: a plain attribute is enough.
        self._set = False
        self._checked = 0.0

    @staticmethod
    def cache_key(session_id: str, request_id: Any) -> str:
        """A bounded key whatever the id: a digest of the id's JSON, never the id itself."""
        digest = hashlib.blake2b(orjson.dumps(request_id), digest_size=16).hexdigest()
        return f"mcp_tools:cancel:{session_id[:64]}:{digest}"

    def set(self) -> None:
        self._set = True

    def _probe(self) -> bool:
        """Whether the request was cancelled elsewhere (throttled by ``__call__``)."""
        key = self.key
        if key is None:
            return False
        return bool(degrade("cancellation flags", lambda: cache.get(key), None))

    def __call__(self) -> bool:
        if self._set:
            return True
        now = time.monotonic()
        if now - self._checked >= mcp_settings.CANCEL_POLL_SECONDS:
            self._checked = now
            if self._probe():
                self._set = True
        return self._set


# How long a cancellation for a request that is not (yet) in flight is kept: long enough for
# a request to reach its process after its cancellation overtook it, too short to poison a
# later request that reuses the id.
EARLY_CANCEL_SECONDS = 2.0
# How long a cancellation of an in-flight request is kept (the call ends long before).
CANCEL_SECONDS = 3600
# The longest an in-flight mark outlives a process that died without clearing it.
IN_FLIGHT_SECONDS = 24 * 3600


def _in_flight_key(key: str) -> str:
    return key + ":live"


def track(key: str) -> None:
    """Mark the request behind ``key`` in flight: from now on a cancellation reaches it."""
    degrade("cancellation flags", lambda: cache.set(_in_flight_key(key), 1, timeout=IN_FLIGHT_SECONDS), None)


def untrack(key: str) -> None:
    """The request ended: forget it and any cancellation of it."""
    degrade("cancellation flags", lambda: cache.delete_many([_in_flight_key(key), key]), None)


def cancel(key: str) -> bool:
    """Flag the request behind ``key`` cancelled; True when it was in flight (C-1)."""

    def flag() -> bool:
        live = bool(cache.get(_in_flight_key(key)))
        cache.set(key, 1, timeout=CANCEL_SECONDS if live else EARLY_CANCEL_SECONDS)
        return live

    return degrade("cancellation flags", flag, False)
