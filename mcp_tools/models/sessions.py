"""Legacy protocol sessions and per-process stream statistics."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .querysets import SessionQuerySet

__all__ = [
    "McpSession",
    "STATS_STALE_SECONDS",
    "StreamStats",
    "new_session_id",
]

# A process whose stream statistics are older than this is gone.
STATS_STALE_SECONDS = 60


def new_session_id() -> str:
    # H-14/H-15: cryptographically random, visible ASCII only (URL-safe base64).
    return secrets.token_urlsafe(32)


class McpSession(models.Model):
    """A legacy (initialize-based) protocol session; any worker can serve it."""

    id = models.CharField(primary_key=True, max_length=64, default=new_session_id, editable=False)
    protocol_version = models.CharField(_("protocol version"), max_length=16)
    principal_key = models.CharField(_("principal"), max_length=255, db_index=True)
    client_info = models.JSONField(_("client info"), default=dict, blank=True)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    log_level = models.CharField(_("log level"), max_length=16, blank=True)
    # What the client last heard of the tool list (Catalog.fingerprint): a GET stream opened
    # after a missed list_changed sends it at once.
    tools_fingerprint = models.CharField(_("tools fingerprint"), max_length=32, blank=True)
    # The session's current GET stream (H-9: a notification goes on one stream only).
    get_stream = models.CharField(_("GET stream"), max_length=16, blank=True, editable=False)
    initialized = models.BooleanField(_("initialized"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_seen_at = models.DateTimeField(_("last seen at"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires at"), db_index=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        verbose_name = _("MCP session")
        verbose_name_plural = _("MCP sessions")

    def __str__(self) -> str:
        return f"{self.id[:8]}… ({self.protocol_version})"

    @staticmethod
    def expiry(idle_seconds: int) -> Any:
        return timezone.now() + timedelta(seconds=idle_seconds)


class StreamStats(models.Model):
    """One row per serving process: its open notification streams and events sent."""

    process = models.CharField(_("process"), max_length=255, primary_key=True, help_text=_("host:pid"))
    notifier = models.CharField(_("notifier"), max_length=32)
    listeners = models.PositiveIntegerField(_("open listeners"), default=0)
    events_sent = models.PositiveBigIntegerField(_("list_changed sent"), default=0)
    heartbeat_at = models.DateTimeField(_("heartbeat"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("stream statistics")
        verbose_name_plural = _("stream statistics")

    def __str__(self) -> str:
        return self.process

    @property
    def is_live(self) -> bool:
        return self.heartbeat_at >= timezone.now() - timedelta(seconds=STATS_STALE_SECONDS)
