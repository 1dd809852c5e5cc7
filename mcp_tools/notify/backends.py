"""Notifier backends: how one process tells the others that the catalog changed.

A notifier has two halves. ``publish()`` runs in the process that committed a change (after
the commit). ``listen(kick)`` runs as one task per serving process and calls ``kick()`` for
every message, and once after every (re)connection so a message lost while the connection
was down is caught up: the hub then reads the catalog version, which is the truth. Messages
carry no data a listener trusts.

The push notifiers (``postgres``, ``redis``) carry other short messages on the same channel
(``send``), and can be followed message by message (``follow``): each process's watcher
(``notify.watch``) hears a catalog change or a revoked token there, and knows whether its
subscription is up. A message can only make a process read again what it may have kept: it
never grants anything.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.utils.module_loading import import_string

from ..conf import mcp_settings

__all__ = [
    "BaseNotifier",
    "CATALOG",
    "NullNotifier",
    "get_notifier",
]

logger = logging.getLogger("mcp_tools.notify")

Kick = Callable[[], None]
OnMessage = Callable[[str], None]

# What a catalog change publishes; other messages (``send``) are for the watchers only.
CATALOG = "catalog"

# Backoff between reconnection attempts of a push notifier (seconds).
RECONNECT_DELAYS = (0.1, 0.5, 1.0, 2.0, 5.0)


class BaseNotifier:
    """Subclass and name it in ``MCP_TOOLS["NOTIFIER"]`` to fan out another way."""

    name = "base"
    #: Whether listen() is driven by messages (True) or only by the hub's periodic check.
    pushes = True
    #: Whether ``follow`` reports each message and the state of the connection (the built-in
    #: push notifiers). Without it, what a process may reuse is bounded by the settings alone.
    followable = False

    def publish(self) -> None:
        """Tell every process that the catalog changed (called after commit; may raise)."""

    def send(self, message: str) -> None:
        """Tell every process's watcher ``message`` (a short ASCII text; may raise). Nothing by
        default: a notifier that cannot carry it leaves the bounds of the settings in force."""

    async def listen(self, kick: Kick) -> None:
        """Call ``kick()`` for each message until cancelled; reconnect on errors."""
        await asyncio.Event().wait()

    async def follow(self, connected: Kick, message: OnMessage, lost: Kick) -> None:
        """For ``followable`` notifiers: call ``connected()`` whenever the subscription is (re)made,
        ``message(text)`` for each message and ``lost()`` when the connection goes, until cancelled."""
        raise NotImplementedError


class _Pushing(BaseNotifier):
    """What the built-in push notifiers share: ``listen`` is ``follow`` for catalog messages."""

    followable = True

    def publish(self) -> None:
        self.send(CATALOG)

    async def listen(self, kick: Kick) -> None:
        def heard(text: str) -> None:
            if text == CATALOG:
                kick()

        await self.follow(kick, heard, _nothing)


def _nothing() -> None:
    pass


class PollingNotifier(BaseNotifier):
    """No messages: the hub reads the catalog version every ``NOTIFY_POLL_SECONDS``.

    The default on SQLite and the fallback everywhere; costs one small SELECT per process per
    interval while the process has listeners.
    """

    name = "polling"
    pushes = False


class NullNotifier(BaseNotifier):
    """list_changed is off: the capability is declared false."""

    name = "none"
    pushes = False


class PostgresNotifier(_Pushing):
    """PostgreSQL ``LISTEN``/``NOTIFY`` on the site's own database (no other server needed)."""

    name = "postgres"
    # Keys of Django's connection parameters that are not libpq connection options.
    _NOT_LIBPQ = frozenset({"cursor_factory", "context", "prepare_threshold", "server_side_binding", "pool"})

    def __init__(self, using: str = DEFAULT_DB_ALIAS) -> None:
        self.using = using
        self.channel = mcp_settings.NOTIFIER_CHANNEL

    def send(self, message: str) -> None:
        with connections[self.using].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [self.channel, message])

    def _conninfo(self) -> dict[str, Any]:
        params = connections[self.using].get_connection_params()
        return {k: v for k, v in params.items() if k not in self._NOT_LIBPQ and v not in (None, "")}

    async def follow(self, connected: Kick, message: OnMessage, lost: Kick) -> None:
        import psycopg
        from psycopg import sql

        attempt = 0
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(**self._conninfo(), autocommit=True)
            except (OSError, psycopg.Error) as exc:
                await _backoff("PostgreSQL", exc, attempt)
                attempt += 1
                continue
            try:
                async with conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    attempt = 0
                    connected()  # catch up on anything missed while not listening
                    try:
                        async for notice in conn.notifies():
                            message(notice.payload)
                    finally:
                        lost()
            except (OSError, psycopg.Error) as exc:
                await _backoff("PostgreSQL", exc, attempt)
                attempt += 1


class RedisNotifier(_Pushing):
    """Redis pub/sub, for sites that already run Redis (``NOTIFIER_REDIS_URL``)."""

    name = "redis"

    def __init__(self) -> None:
        from django.core.exceptions import ImproperlyConfigured

        url = mcp_settings.NOTIFIER_REDIS_URL
        if not url:
            raise ImproperlyConfigured('MCP_TOOLS["NOTIFIER"] = "redis" needs MCP_TOOLS["NOTIFIER_REDIS_URL"]')
        self.url: str = url
        self.channel = mcp_settings.NOTIFIER_CHANNEL
        self._client: Any = None

    def send(self, message: str) -> None:
        import redis

        if self._client is None:
            self._client = redis.Redis.from_url(self.url, socket_timeout=2, socket_connect_timeout=2)
        self._client.publish(self.channel, message.encode("ascii"))

    async def follow(self, connected: Kick, message: OnMessage, lost: Kick) -> None:
        import redis.asyncio as aredis
        from redis.exceptions import RedisError

        attempt = 0
        while True:
            client = aredis.Redis.from_url(self.url, socket_connect_timeout=2, health_check_interval=10)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                attempt = 0
                connected()
                try:
                    async for item in pubsub.listen():
                        if item and item.get("type") == "message":
                            data = item.get("data")
                            message(data.decode("ascii", "replace") if isinstance(data, bytes) else str(data))
                finally:
                    lost()
                # listen() ends when the connection is gone: reconnect.
                raise ConnectionError("Redis subscription ended")
            except (OSError, RedisError) as exc:
                await _backoff("Redis", exc, attempt)
                attempt += 1
            finally:
                try:
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
                    await client.aclose()
                except (OSError, RedisError):  # pragma: no cover - closing a broken connection
                    pass


async def _backoff(what: str, exc: BaseException, attempt: int) -> None:
    delay = RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]
    log = logger.warning if attempt == 0 else logger.debug
    log("list_changed notifier: %s connection lost (%s); retrying in %.1fs", what, exc, delay)
    await asyncio.sleep(delay)


ALIASES: dict[str, type[BaseNotifier]] = {
    "polling": PollingNotifier,
    "none": NullNotifier,
    "postgres": PostgresNotifier,
    "redis": RedisNotifier,
}

_notifier: BaseNotifier | None = None


def get_notifier() -> BaseNotifier:
    global _notifier
    if _notifier is None:
        _notifier = build_notifier(mcp_settings.NOTIFIER)
    return _notifier


def build_notifier(choice: str) -> BaseNotifier:
    if choice == "auto":
        vendor = connections[DEFAULT_DB_ALIAS].vendor
        choice = "postgres" if vendor == "postgresql" else "polling"
    cls = ALIASES.get(choice)
    if cls is None:
        cls = import_string(choice)
    return cls()


def reset() -> None:
    global _notifier
    _notifier = None
