"""Running the synchronous (ORM) part of a request off the event loop, or on it.

Two bounded pools per process: the protocol's own work (authentication, ``tools/list``, session
and stream set-up, ``tasks/result`` polling) runs on one (``THREAD_POOL_SIZE``), tool calls,
whose handlers may be slow, on the other (``HANDLER_POOL_SIZE``). Slow handlers then queue
among themselves and never stall a listing, a ping or a stream.

Where every store a request may reach is in the process (``SERVE_ON_LOOP``: every database
SQLite, the default cache Django's local-memory one), a short request is served on the event
loop's thread itself (:func:`run_on_loop`): no hand-over to a pool thread and back.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from asgiref.sync import SyncToAsync, sync_to_async
from django.core.cache import DEFAULT_CACHE_ALIAS, caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.signals import setting_changed
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from .conf import mcp_settings

try:  # asgiref >= 3.7: moves a copied context's Local values onto the thread that runs it
    from asgiref.sync import _restore_context as _rehome_locals
except ImportError:  # pragma: no cover - an asgiref whose Local values are not tied to a thread

    def _rehome_locals(context: contextvars.Context) -> None:
        pass


__all__ = [
    "NotOnLoop",
    "close_old_connections",
    "on_loop",
    "run_on_loop",
    "stores_in_process",
    "run_handler",
    "run_sync",
    "start_handler",
    "submit",
]

P = ParamSpec("P")
R = TypeVar("R")

PROTOCOL = "protocol"
HANDLERS = "handlers"
_pools: dict[str, ThreadPoolExecutor] = {}
_pool_lock = threading.Lock()


def _executor(kind: str = PROTOCOL) -> ThreadPoolExecutor:
    pool = _pools.get(kind)
    if pool is None:
        with _pool_lock:
            pool = _pools.get(kind)
            if pool is None:
                size = mcp_settings.HANDLER_POOL_SIZE if kind == HANDLERS else mcp_settings.THREAD_POOL_SIZE
                pool = _pools[kind] = ThreadPoolExecutor(size, thread_name_prefix=f"mcp-tools-{kind}")
    return pool


def close_old_connections(conns: Sequence[BaseDatabaseWrapper] | None = None) -> Sequence[BaseDatabaseWrapper]:
    """As Django's ``close_old_connections`` between requests, for threads that outlive one (pool
    threads, the audit writer, Celery workers reusing connections, the WSGI front): each of this
    thread's connections (or ``conns``) older than CONN_MAX_AGE, failing its health check
    (CONN_HEALTH_CHECKS) or left unusable by an error is closed, and reopened on use. One inside
    a transaction is left alone (only a test's transaction spans requests). Returns the list."""
    if conns is None:
        conns = connections.all(initialized_only=True)
    for conn in conns:
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()
    return conns


def _hygienic(func: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object]) -> R:
    close_old_connections()  # pool threads keep their connections between requests
    return func(*args, **kwargs)


def _call(
    func: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object], kind: str = PROTOCOL
) -> Awaitable[R]:
    if mcp_settings.THREAD_SENSITIVE:
        return sync_to_async(func, thread_sensitive=True)(*args, **kwargs)
    return _hop(func, args, kwargs, kind)


def _hop(func: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object], kind: str) -> asyncio.Future[R]:
    """``func`` on a pool thread, in a copy of the caller's context: what asgiref's
    ``SyncToAsync`` does for a thread-insensitive call, without what only its other modes need
    (a shielded future, a wrapper object per call, the context copied back): the event loop's
    thread ran 6,880 bytecodes per ``tools/call`` through asgiref, 5,274 this way (issue 37).

    The copy carries the request's asgiref ``Local`` values (script prefix, language, timezone,
    urlconf) into the thread; the thread is marked as asgiref marks its own, so a handler's
    ``async_to_sync`` runs on the server's event loop. Cancelling the future (the client left)
    does not stop the thread: the work runs to its end and its result is dropped, as with asgiref.
    """
    loop = asyncio.get_running_loop()
    return loop.run_in_executor(_executor(kind), _enter, loop, contextvars.copy_context(), func, args, kwargs)


def _enter(
    loop: asyncio.AbstractEventLoop,
    context: contextvars.Context,
    func: Callable[..., R],
    args: tuple[object, ...],
    kwargs: dict[str, object],
) -> R:
    marks = SyncToAsync.threadlocal  # what asgiref's AsyncToSync looks for in a pool thread
    marks.main_event_loop = loop
    marks.main_event_loop_pid = os.getpid()
    marks.task_context = None
    return context.run(_in_context, context, func, args, kwargs)


def _in_context(
    context: contextvars.Context, func: Callable[..., R], args: tuple[object, ...], kwargs: dict[str, object]
) -> R:
    # asgiref ties a Local's values to the thread that set them: re-homed here, as its own
    # SyncToAsync does in the thread, or the request's script prefix and language would not show.
    _rehome_locals(context)
    return _hygienic(func, args, kwargs)


def start_sync(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[R]:
    """Start ``func`` in a protocol thread (see :func:`run_sync`); the future has its result."""
    return asyncio.ensure_future(_call(func, args, kwargs))


def start_handler(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[R]:
    """Start ``func``, work that runs tool handlers, on the handlers' own pool."""
    return asyncio.ensure_future(_call(func, args, kwargs, HANDLERS))


async def run_handler(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``func``, work that runs tool handlers (a batch), on the handlers' own pool."""
    return await _call(func, args, kwargs, HANDLERS)


async def run_sync(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``func`` in a worker thread, with the caller's context.

    By default the threads of one pool (``THREAD_POOL_SIZE``) serve all requests: no thread is
    created per request. ``MCP_TOOLS["THREAD_SENSITIVE"] = True`` uses Django's per-request
    thread instead, which test suites need so the ORM shares the test transaction.
    """
    return await _call(func, args, kwargs)


# --------------------------------------------------------------------------- on the loop's thread


class NotOnLoop(Exception):
    """Raised by work started with :func:`run_on_loop` before it does anything that leaves a
    trace (a count, an audit row, a handler run) when it finds it needs more than the process:
    the caller serves the same request again on a pool thread."""


class _Here(threading.local):
    active = False  # the running work was started by run_on_loop


_here = _Here()


def on_loop() -> bool:
    """Whether this code runs on the event loop's thread, started by :func:`run_on_loop`."""
    return _here.active


def run_on_loop(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """Run ``func`` now, in the calling (event loop's) thread, as a pool thread would run it.

    Django refuses database work in a thread that runs an event loop (its ``async_unsafe``
    check looks for the running loop): that guards a loop against waiting on a database server.
    Only work whose every store is in the process comes here (:func:`stores_in_process`: SQLite
    reads a file this process maps, the local-memory cache is a dict), so the running loop is
    hidden from that check for ``func``'s duration, and only in this thread. The thread's
    connections are checked first, as a pool thread checks its own before each job (Django's
    connections are per thread: the loop's thread has its own). Nothing else runs on the loop
    meanwhile: ``func`` never awaits.
    """
    loop = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    _here.active = True
    try:
        close_old_connections()
        if _journals is None:
            _check_journals()
        if not _journals:
            raise NotOnLoop
        return func(*args, **kwargs)
    finally:
        _here.active = False
        asyncio.events._set_running_loop(loop)


_in_process: bool | None = None
# Whether every SQLite database is in WAL mode (a read never waits for a writer) or in memory;
# learnt on the first request run_on_loop serves (it asks the databases: only there may it).
_journals: bool | None = None
_READ_NEVER_WAITS = frozenset({"wal", "memory"})


def _check_journals() -> None:
    global _journals, _in_process
    modes = set()
    for conn in connections.all():
        if conn.vendor != "sqlite":
            modes.add(conn.vendor)  # (a server: stores_in_process() said no already)
            continue
        with conn.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            modes.add(str(cursor.fetchone()[0]).lower())
    _journals = modes <= _READ_NEVER_WAITS
    if not _journals:
        _in_process = False  # nothing more tries the loop in this process


def stores_in_process() -> bool:
    """Whether every store a request may reach is in this process (known once per process):
    ``SERVE_ON_LOOP`` is on, ``THREAD_SENSITIVE`` off, every database is SQLite, the default
    cache (rate limits, concurrent-call slots, cancellation flags) is Django's local-memory or
    dummy cache, and audit rows are batched (the writer thread writes them: a write may wait
    for another process's lock, a read of SQLite in WAL mode never does; the journal mode is
    checked on the first request, and a database in another mode makes this False). A site on
    PostgreSQL, Redis or memcached gets False: a round trip to a server never blocks the event
    loop. The auth backend's own word (``in_process``) is the transport's to read."""
    global _in_process
    known = _in_process
    if known is None:
        audit_batched = mcp_settings.AUDIT_FLUSH_ROWS > 1 and mcp_settings.AUDIT_FLUSH_SECONDS > 0
        known = _in_process = (
            mcp_settings.SERVE_ON_LOOP
            and not mcp_settings.THREAD_SENSITIVE
            and (audit_batched or not mcp_settings.AUDIT_ENABLED)
            and all(conn.vendor == "sqlite" for conn in connections.all())
            and isinstance(caches[DEFAULT_CACHE_ALIAS], LocMemCache | DummyCache)
        )
    return known


def _stores_changed(*, setting: str, **kwargs: object) -> None:
    global _in_process, _journals
    if setting in ("MCP_TOOLS", "DATABASES", "CACHES"):
        _in_process = _journals = None


setting_changed.connect(_stores_changed, dispatch_uid="mcp_tools.threads.stores")


def submit(func: Callable[..., object], *args: object) -> None:
    """Run ``func`` on the pool and forget it (cache-only work that must not wait for the loop)."""
    _executor().submit(func, *args)
