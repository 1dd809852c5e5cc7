"""list_changed fan-out: publish catalog changes after commit (``backends``: ``BaseNotifier`` and
the built-in notifiers), deliver them to open streams (``hub``); and each process's subscription
for what it reuses (``watch``, ``receivers``)."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction

from .. import freshness
from ..signals import catalog_changed
from . import receivers, watch
from .backends import BaseNotifier, get_notifier

__all__ = ["BaseNotifier", "connect", "get_notifier", "publish_on_commit"]

logger = logging.getLogger("mcp_tools.notify")


def _publish() -> None:
    freshness.changed()  # this process's next request reads the new version, whatever the notifier
    try:
        get_notifier().publish()
    except Exception as exc:
        # Listeners still catch up from the catalog version within NOTIFY_CATCHUP_SECONDS.
        logger.warning("list_changed: publishing failed (%s); listeners will catch up", exc)


_publish.mcp_publish = True  # type: ignore[attr-defined]


def publish_on_commit(using: str | None = None) -> None:
    """Publish once after the current transaction commits (never for a rolled-back one).

    Called by every catalog-version bump; a transaction that bumps many times (a bulk
    action over 500 tools) registers a single publication.
    """
    connection = transaction.get_connection(using or DEFAULT_DB_ALIAS)
    if connection.in_atomic_block:
        for entry in connection.run_on_commit:
            if getattr(entry[1], "mcp_publish", False):
                return
    transaction.on_commit(_publish, using=using)


def _catalog_changed(sender: Any, using: str | None = None, **kwargs: Any) -> None:
    publish_on_commit(using)


def connect() -> None:
    """Publish every catalog-version move (``mcp_tools.signals.catalog_changed``) after commit;
    revoked tokens too, and follow the notifier where reads are reused (``freshness``)."""
    catalog_changed.connect(_catalog_changed, dispatch_uid="mcp_tools.notify.catalog_changed")
    receivers.connect()
    freshness.set_starter(watch.start)
