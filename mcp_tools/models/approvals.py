"""Calls of approval-gated tools waiting for a person: one row per call, decided in the admin.

The row is the only shared state: the process that waits for the decision (a plain call) or the
task that is held until it (a task-augmented call) reads it, whichever process decides writes it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

__all__ = ["ApprovalState", "McpApproval"]


class ApprovalState(models.TextChoices):
    PENDING = "pending", _("Pending")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    EXPIRED = "expired", _("Expired")
    CANCELLED = "cancelled", _("Cancelled")


class ApprovalQuerySet(models.QuerySet["McpApproval"]):
    def pending(self) -> ApprovalQuerySet:
        return self.filter(state=ApprovalState.PENDING)

    def due(self) -> ApprovalQuerySet:
        """Pending rows past their deadline (expired, not marked yet)."""
        return self.pending().filter(expires_at__lte=timezone.now())

    def settle(self, pk: int, state: str, **fields: object) -> bool:
        """Move a pending row to ``state``; False when it was decided (or settled) meanwhile."""
        return self.filter(pk=pk, state=ApprovalState.PENDING).update(state=state, **fields) > 0


class McpApproval(models.Model):
    """One call of an approval-gated tool: who asked, with what, and what a person decided."""

    tool = models.ForeignKey(
        "mcp_tools.Tool",
        verbose_name=_("tool"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="approvals",
    )
    tool_name = models.CharField(_("tool name"), max_length=128, help_text=_("As called (kept if the tool goes)."))
    tool_version = models.PositiveIntegerField(_("tool version"))
    arguments = models.JSONField(
        _("arguments"), default=dict, blank=True, help_text=_("As called; sensitive values redacted.")
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("caller"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    principal_key = models.CharField(_("principal"), max_length=255)
    client_id = models.CharField(_("client"), max_length=255, blank=True)
    state = models.CharField(
        _("state"), max_length=16, choices=ApprovalState.choices, default=ApprovalState.PENDING, db_index=True
    )
    reason = models.TextField(_("reason"), blank=True, help_text=_("Why it was rejected (sent to the caller)."))
    requested_at = models.DateTimeField(_("requested at"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires at"), help_text=_("Not decided by then: the call is refused."))
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("decided by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    # The task held until the decision (task-augmented calls): a plain id, as tasks are purged.
    task_id = models.CharField(_("task"), max_length=64, blank=True, db_index=True)
    # When the approved call started running: set once, so it runs once whoever races for it.
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)

    objects = ApprovalQuerySet.as_manager()

    class Meta:
        verbose_name = _("call approval")
        verbose_name_plural = _("call approvals")
        ordering = ("-requested_at", "-id")
        permissions = [("approve_call", _("Can approve or reject calls of approval-gated tools"))]
        constraints = [
            models.CheckConstraint(condition=models.Q(state__in=ApprovalState.values), name="mcp_approval_state_valid"),
        ]

    def __str__(self) -> str:
        return f"call #{self.pk} of {self.tool_name} ({self.state})"

    @property
    def pending(self) -> bool:
        return self.state == ApprovalState.PENDING
