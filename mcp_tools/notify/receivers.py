"""Messages that cut reused token rows short (``TOKEN_CACHE_SECONDS``), sent after the commit.

A DOT access token deleted (``revoke()``, logout, rotation, its application or user deleted) or
changed, and a user saved inactive or deleted: every process drops the rows it keeps of them
(``notify.watch``), the one that made the change at once. Nothing is sent while the setting is 0.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import DEFAULT_DB_ALIAS, transaction
from django.db.models.signals import post_delete, post_save

from ..conf import mcp_settings
from . import watch
from .backends import get_notifier

__all__ = ["connect"]

logger = logging.getLogger("mcp_tools.notify")

# More messages than this from one transaction are sent as one that drops every token row.
MAX_MESSAGES = 100


class _Messages:
    """The messages of one transaction, sent once it commits (one on_commit callback)."""

    mcp_messages = True

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, message: str) -> None:
        if message not in self.items:
            self.items.append(message)

    def __call__(self) -> None:
        send(self.items if len(self.items) <= MAX_MESSAGES else [watch.TOKENS])


def send(messages: list[str]) -> None:
    """This process drops the rows now; the others when the notifier brings the messages."""
    for message in messages:
        watch.heard(message)
    try:
        notifier = get_notifier()
        for message in messages:
            notifier.send(message)
    except Exception as exc:
        logger.warning(
            "Could not publish %d token revocation(s) (%s); other processes see them within TOKEN_CACHE_SECONDS",
            len(messages), exc,
        )  # fmt: skip


def send_on_commit(message: str, using: str | None) -> None:
    connection = transaction.get_connection(using or DEFAULT_DB_ALIAS)
    if not connection.in_atomic_block:
        send([message])
        return
    for entry in connection.run_on_commit:
        if getattr(entry[1], "mcp_messages", False):
            entry[1].add(message)
            return
    messages = _Messages()
    messages.add(message)
    transaction.on_commit(messages, using=using)


def _token_changed(sender: Any, instance: Any, using: str | None = None, created: bool = False, **kwargs: Any) -> None:
    if created or not mcp_settings.TOKEN_CACHE_SECONDS:
        return
    checksum = getattr(instance, "token_checksum", None)
    send_on_commit(f"{watch.TOKEN}{checksum}" if checksum else watch.TOKENS, using)


def _user_changed(sender: Any, instance: Any, using: str | None = None, **kwargs: Any) -> None:
    if not mcp_settings.TOKEN_CACHE_SECONDS:
        return
    if kwargs.get("signal") is post_save and getattr(instance, "is_active", True):
        return
    send_on_commit(f"{watch.USER}{instance.pk}", using)


def connect() -> None:
    from django.apps import apps
    from django.contrib.auth import get_user_model

    if not apps.is_installed("oauth2_provider"):
        return
    from oauth2_provider.models import get_access_token_model

    token = get_access_token_model()
    post_delete.connect(_token_changed, sender=token, dispatch_uid="mcp_tools.notify.token_deleted")
    post_save.connect(_token_changed, sender=token, dispatch_uid="mcp_tools.notify.token_saved")
    user = get_user_model()
    post_delete.connect(_user_changed, sender=user, dispatch_uid="mcp_tools.notify.user_deleted")
    post_save.connect(_user_changed, sender=user, dispatch_uid="mcp_tools.notify.user_saved")
