"""One hub per serving process: it hears catalog changes and wakes the listeners they affect.

Each open notification stream (a legacy GET stream or a 2026-07-28 ``subscriptions/listen``
stream) is a :class:`Listener`: a principal, the fingerprint of the tool list it last saw,
and an event. The hub keeps one notifier connection for the whole process, coalesces bursts
(``NOTIFY_DEBOUNCE_SECONDS``), loads the new catalog once, and offers it to every listener;
a listener whose visible tool list changed is woken, the others never hear of it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..conf import mcp_settings
from ..ratelimit import acquire_slot, release_slot
from ..types import Principal
from .backends import BaseNotifier, get_notifier

__all__ = [
    "Listener",
    "StreamSlot",
    "get_hub",
    "release",
    "take_stream_slot",
]

logger = logging.getLogger("mcp_tools.notify")

Wake = Literal["changed", "idle", "closed"]
STATS_SECONDS = 20


class Listener:
    """The small fixed state of one open stream."""

    __slots__ = ("principal", "fingerprint", "version", "_waiter", "pending", "closed", "hub", "released")

    def __init__(self, principal: Principal, fingerprint: str, version: int) -> None:
        self.principal = principal
        self.fingerprint = fingerprint
        self.version = version
        # A bare future while the stream waits (no Event, no Task per wait: idle streams are many).
        self._waiter: asyncio.Future[None] | None = None
        self.pending = False
        self.closed = False
        self.hub: Hub | None = None  # set on registration
        self.released = False

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def offer(self, catalog: Any, visible: Callable[..., bool]) -> None:
        if catalog.version == self.version:
            return
        self.version = catalog.version
        # A token's scopes are what it was granted, expanded with the implications of *this*
        # catalog version: a changed implication can show or hide tools.
        self.principal = catalog.scoped(self.principal)
        fingerprint = catalog.fingerprint(self.principal, visible)
        if fingerprint != self.fingerprint:
            self.fingerprint = fingerprint
            self.pending = True
            self._wake()

    def close(self) -> None:
        self.closed = True
        self._wake()

    async def next(self, timeout: float) -> Wake:
        """Wait up to ``timeout`` seconds: a change to send, nothing (keep-alive), or the end."""
        if not (self.pending or self.closed):
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(timeout, _resolve, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        if self.closed:
            return "closed"
        if self.pending:
            self.pending = False
            return "changed"
        return "idle"


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Hub:
    def __init__(self, loop: asyncio.AbstractEventLoop, notifier: BaseNotifier) -> None:
        self.loop = loop
        self.notifier = notifier
        self.listeners: set[Listener] = set()
        self.catalog: Any = None
        self.events_sent = 0
        self.closing = False
        self._kick = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._stats_written: tuple[int, int] | None = None
        self.process = f"{socket.gethostname()}:{os.getpid()}"

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._tasks = [
            self.loop.create_task(self._dispatch(), name="mcp-notify-dispatch"),
            self.loop.create_task(self._listen(), name="mcp-notify-listen"),
            self.loop.create_task(self._tick(), name="mcp-notify-tick"),
            self.loop.create_task(self._stats(), name="mcp-notify-stats"),
        ]
        self._chain_shutdown_signals()
        self.kick()

    def shutdown(self) -> None:
        """Server shutdown: every stream ends gracefully (listen result / retry hint)."""
        self.closing = True
        for listener in list(self.listeners):
            listener.close()

    def _chain_shutdown_signals(self) -> None:
        # ASGI servers (uvicorn, hypercorn) wait for open responses before the lifespan
        # shutdown, so streams would only end at SSE_MAX_SECONDS. Run ahead of their handlers.
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous: Any = signal.getsignal(signum)
            if not callable(previous) or getattr(previous, "mcp_hub", False):
                continue

            def handler(number: int, frame: Any, previous: Any = previous) -> None:
                self.loop.call_soon_threadsafe(self.shutdown)
                previous(number, frame)

            handler.mcp_hub = True  # type: ignore[attr-defined]
            signal.signal(signum, handler)

    # ----------------------------------------------------------------- listeners

    def register(self, listener: Listener) -> None:
        if self.closing:
            listener.close()
            return
        self.listeners.add(listener)
        listener.hub = self
        if self.catalog is not None and self.catalog.version > listener.version:
            # A change landed between the stream's opening read and its registration.
            from ..auth import get_auth_backend

            listener.offer(self.catalog, get_auth_backend().can_see)

    def unregister(self, listener: Listener) -> None:
        self.listeners.discard(listener)

    def sent(self) -> None:
        self.events_sent += 1

    # ----------------------------------------------------------------- the loop

    def kick(self) -> None:
        self._kick.set()

    async def _listen(self) -> None:
        try:
            await self.notifier.listen(self.kick)
        except asyncio.CancelledError:
            raise
        except Exception:  # pragma: no cover - a notifier bug must not stop polling
            logger.exception("list_changed notifier %s failed; falling back to polling", self.notifier.name)

    async def _tick(self) -> None:
        interval = mcp_settings.NOTIFY_CATCHUP_SECONDS if self.notifier.pushes else mcp_settings.NOTIFY_POLL_SECONDS
        while True:
            await asyncio.sleep(interval)
            if self.listeners:
                self.kick()

    async def _dispatch(self) -> None:
        from ..auth import get_auth_backend
        from ..catalog import get_catalog
        from ..threads import run_sync

        debounce = mcp_settings.NOTIFY_DEBOUNCE_SECONDS
        while True:
            await self._kick.wait()
            if debounce > 0:
                await asyncio.sleep(debounce)  # coalesce a burst of changes into one look
            self._kick.clear()
            try:
                catalog = await run_sync(get_catalog, fresh=True)  # told of a change: no reuse
            except Exception as exc:  # database down: try again on the next kick
                logger.warning("list_changed: cannot read the catalog (%s)", exc)
                continue
            if self.catalog is not None and catalog.version == self.catalog.version:
                continue
            self.catalog = catalog
            visible = get_auth_backend().can_see
            for listener in list(self.listeners):
                listener.offer(catalog, visible)

    async def _stats(self) -> None:
        from ..threads import run_sync

        rounds = 0
        while True:
            current = (len(self.listeners), self.events_sent)
            # Write at most once a second on change, and as a heartbeat every STATS_SECONDS.
            if current != self._stats_written or rounds % int(STATS_SECONDS) == 0:
                try:
                    await run_sync(_write_stats, self.process, self.notifier.name, *current)
                    self._stats_written = current
                except Exception as exc:
                    logger.debug("list_changed: cannot write stream stats (%s)", exc)
            rounds += 1
            await asyncio.sleep(1.0)


def _write_stats(process: str, notifier: str, listeners: int, events_sent: int) -> None:
    from django.utils import timezone

    from ..models import StreamStats

    StreamStats.objects.update_or_create(
        process=process,
        defaults={
            "notifier": notifier,
            "listeners": listeners,
            "events_sent": events_sent,
            "heartbeat_at": timezone.now(),
        },
    )


_hub: Hub | None = None


def get_hub() -> Hub:
    """The hub of the running event loop (started on first use)."""
    global _hub
    loop = asyncio.get_running_loop()
    if _hub is None or _hub.loop is not loop:
        _hub = Hub(loop, get_notifier())
        _hub.start()
    return _hub


def current_hub() -> Hub | None:
    return _hub


# --------------------------------------------------------------------------- streams per principal


_release_lock = threading.Lock()


class StreamSlot:
    """One of a principal's ``MAX_STREAMS_PER_PRINCIPAL`` slots, held by one long-lived stream
    or wait (a GET or listen stream whatever it delivers, a ``tasks/result`` waiting for its
    task) from its start to its end; given back once, by whichever of its ends comes first
    (its generator's end, the response's close), from the event loop or any thread."""

    __slots__ = ("given_back", "principal")

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self.given_back = False

    def give_back(self) -> None:
        with _release_lock:
            if self.given_back:
                return
            self.given_back = True
        if mcp_settings.MAX_STREAMS_PER_PRINCIPAL:
            from ..threads import submit

            submit(release_stream_slot, self.principal)


def take_stream_slot(principal: Principal) -> StreamSlot | None:
    """A stream slot of ``principal`` (its owner: the user, across their OAuth clients), or None
    when they hold ``MAX_STREAMS_PER_PRINCIPAL`` already (the caller answers 429)."""
    return StreamSlot(principal) if acquire_stream_slot(principal) else None


def acquire_stream_slot(principal: Principal) -> bool:
    """Count an open stream for ``principal`` in the shared cache; False over the bound."""
    limit = mcp_settings.MAX_STREAMS_PER_PRINCIPAL
    if not limit:
        return True
    # A worker that died holding slots frees them at the latest one stream lifetime later.
    longest = max(mcp_settings.SSE_MAX_SECONDS, mcp_settings.TASK_RESULT_WAIT_SECONDS)
    return acquire_slot(f"streams:{principal.owner}", limit, int(longest) + 60)


def release(listener: Listener) -> None:
    """The stream ended (client gone, deadline, shutdown) or its response was dropped unsent:
    forget it in its hub, once (its stream slot is the stream's ``StreamSlot``). Runs on the
    event loop or in the thread where Django closes a response, so it never awaits and hands
    the work to the right place."""
    with _release_lock:
        if listener.released:
            return
        listener.released = True
    hub = listener.hub
    if hub is not None and not hub.loop.is_closed():
        hub.loop.call_soon_threadsafe(hub.unregister, listener)


def release_stream_slot(principal: Principal) -> None:
    if mcp_settings.MAX_STREAMS_PER_PRINCIPAL:
        release_slot(f"streams:{principal.owner}")
