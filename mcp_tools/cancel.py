"""Cancellation flags: what a running handler reads as ``ctx.cancelled``."""

from __future__ import annotations

import time
from typing import Any

import orjson
from django.core.cache import cache

from .conf import mcp_settings


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
        return f"mcp_tools:cancel:{session_id}:{orjson.dumps(request_id).decode()}"

    def set(self) -> None:
        self._set = True

    def _probe(self) -> bool:
        """Whether the request was cancelled elsewhere (throttled by ``__call__``)."""
        return self.key is not None and bool(cache.get(self.key))

    def __call__(self) -> bool:
        if self._set:
            return True
        now = time.monotonic()
        if now - self._checked >= mcp_settings.CANCEL_POLL_SECONDS:
            self._checked = now
            if self._probe():
                self._set = True
        return self._set
