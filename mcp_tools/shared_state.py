"""Django's cache as shared state, and what happens when it cannot be reached.

Rate-limit counters, running-call and stream counts, and cancellation flags live in the cache
so that every process shares them (Redis in production). When the cache cannot be reached the
endpoint keeps serving: each of those features degrades as the docs' "several hosts" how-to
says (limits are not enforced, cancellation of a legacy call from another request is not seen)
and a warning is logged at most once a minute per feature, instead of every call failing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["degrade"]

logger = logging.getLogger("mcp_tools")

T = TypeVar("T")

WARN_EVERY_SECONDS = 60.0
_warned: dict[str, float] = {}
_lock = threading.Lock()


def degrade(feature: str, work: Callable[[], T], fallback: T) -> T:
    """``work()``, or ``fallback`` when the cache raised (a backend's connection error, a
    timeout): the request goes on without ``feature``."""
    try:
        return work()
    except Exception as exc:  # every cache backend raises its own types (redis, pymemcache...)
        now = time.monotonic()
        with _lock:
            due = now - _warned.get(feature, -WARN_EVERY_SECONDS) >= WARN_EVERY_SECONDS
            if due:
                _warned[feature] = now
        if due:
            logger.warning("The cache is unreachable (%s: %s); serving without %s", type(exc).__name__, exc, feature)
        return fallback
