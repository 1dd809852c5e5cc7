"""Running the synchronous (ORM) part of a request off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections

from .conf import mcp_settings

P = ParamSpec("P")
R = TypeVar("R")


def _with_connection_hygiene(func: Callable[P, R]) -> Callable[P, R]:
    @wraps(func)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        # Pool threads outlive requests and keep their connections open between them (like
        # CONN_MAX_AGE=None); a connection that saw an error is dropped if it is unusable.
        for conn in connections.all(initialized_only=True):
            if conn.errors_occurred:
                conn.close_if_unusable_or_obsolete()
        return func(*args, **kwargs)

    return run


async def run_sync(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``func`` in a worker thread.

    By default a shared pool of threads serves all requests (no thread is created per
    request). ``MCP_TOOLS["THREAD_SENSITIVE"] = True`` uses Django's per-request thread
    instead, which test suites need so the ORM shares the test transaction.
    """
    if mcp_settings.THREAD_SENSITIVE:
        return await sync_to_async(func, thread_sensitive=True)(*args, **kwargs)
    return await sync_to_async(_with_connection_hygiene(func), thread_sensitive=False)(*args, **kwargs)
