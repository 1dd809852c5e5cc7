"""Running the synchronous (ORM) part of a request off the event loop."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import SyncToAsync, sync_to_async
from django.db import connections

from .conf import mcp_settings

P = ParamSpec("P")
R = TypeVar("R")

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(mcp_settings.THREAD_POOL_SIZE, thread_name_prefix="mcp-tools")
    return _pool


def _hygienic(func: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object]) -> R:
    # Pool threads outlive requests and keep their connections open between them (like
    # CONN_MAX_AGE=None); a connection that saw an error is dropped if it is unusable.
    for conn in connections.all(initialized_only=True):
        if conn.errors_occurred:
            conn.close_if_unusable_or_obsolete()
    return func(*args, **kwargs)


def _call(func: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object]) -> Coroutine[Any, Any, R]:
    if mcp_settings.THREAD_SENSITIVE:
        return sync_to_async(func, thread_sensitive=True)(*args, **kwargs)
    # asgiref's SyncToAsync on our pool: it carries the request's context into the thread
    # (script prefix, language, timezone and urlconf live in asgiref Locals) and lets a handler
    # use async_to_sync against the server's event loop.
    return SyncToAsync(functools.partial(_hygienic, func, args, kwargs), thread_sensitive=False, executor=_executor())()


def start_sync(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[R]:
    """Start ``func`` in a worker thread (see :func:`run_sync`); the future has its result."""
    return asyncio.ensure_future(_call(func, args, kwargs))


async def run_sync(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``func`` in a worker thread, with the caller's context.

    By default the threads of one pool (``THREAD_POOL_SIZE``) serve all requests: no thread is
    created per request. ``MCP_TOOLS["THREAD_SENSITIVE"] = True`` uses Django's per-request
    thread instead, which test suites need so the ORM shares the test transaction.
    """
    return await _call(func, args, kwargs)


def submit(func: Callable[..., object], *args: object) -> None:
    """Run ``func`` on the pool and forget it (cache-only work that must not wait for the loop)."""
    _executor().submit(func, *args)
