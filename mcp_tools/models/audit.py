"""The audit trail: one row per tools/call."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

__all__ = ["AuditEvent", "AuditOutcome"]


class AuditOutcome(models.TextChoices):
    OK = "ok", _("OK")
    TOOL_ERROR = "tool_error", _("Tool error")
    INVALID = "invalid", _("Invalid arguments")
    DENIED = "denied", _("Insufficient scope")
    RATE_LIMITED = "rate_limited", _("Rate limited")
    CANCELLED = "cancelled", _("Cancelled")
    # Approval-gated tools: a person's decision on a call, and a call nobody decided in time.
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    EXPIRED = "expired", _("Not approved in time")


class AuditEvent(models.Model):
    """One tools/call: who, which tool and version, what (redacted), how it ended, how long."""

    # No index of its own: the usage indexes below lead with it (time) and with tool_name, and
    # serve every lookup a single-column index would; each index costs every call's row an insert.
    created_at = models.DateTimeField(_("time"), default=timezone.now)
    principal_key = models.CharField(_("principal"), max_length=255, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_constraint=False,
    )
    client_id = models.CharField(_("client"), max_length=255, blank=True, db_index=True)
    # The scopes the call ran with, as granted (space-separated); "" under a backend that does
    # not restrict by scope. Try it records the scopes the staff user could be granted.
    scopes = models.TextField(_("scopes"), blank=True, default="")
    tool_name = models.CharField(_("tool"), max_length=128)
    tool_version = models.PositiveIntegerField(_("tool version"), null=True)
    arguments = models.JSONField(_("arguments (summary)"), default=dict, blank=True)
    outcome = models.CharField(_("outcome"), max_length=16, choices=AuditOutcome.choices, db_index=True)
    detail = models.CharField(_("detail"), max_length=300, blank=True)
    duration_ms = models.FloatField(_("duration (ms)"), default=0)
    request_id = models.CharField(_("request id"), max_length=100, blank=True)
    protocol_version = models.CharField(_("protocol version"), max_length=16, blank=True)

    class Meta:
        ordering = ("-created_at",)
        # The usage page's queries read only these (covering) indexes: calls, errors and callers
        # of a period, and the durations of one tool in a period (see admin/usage.py).
        indexes = (
            models.Index(fields=("created_at", "tool_name", "outcome", "principal_key"), name="mcp_audit_usage_time"),
            models.Index(fields=("tool_name", "created_at", "outcome", "duration_ms"), name="mcp_audit_usage_tool"),
        )
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")

    def __str__(self) -> str:
        return f"{self.tool_name} by {self.principal_key} ({self.outcome})"
