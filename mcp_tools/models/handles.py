"""Handle rows: expiring JSON state of a handler, addressed by an opaque id, owned by a principal.

The handler API over them is ``mcp_tools.handles``; kinds (prefix, lifetime) live in code.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .querysets import ExpiringQuerySet

__all__ = ["McpHandle", "McpPendingInput", "McpRedemption"]


class HandleQuerySet(ExpiringQuerySet["McpHandle"]):
    def live(self) -> HandleQuerySet:
        return self.filter(expires_at__gt=timezone.now())

    def owned_by(self, principal_key: str) -> HandleQuerySet:
        return self.live().filter(principal_key=principal_key)


class McpHandle(models.Model):
    # "<prefix>_<192 random bits>": opaque, never derived from the state or the owner.
    id = models.CharField(_("handle"), primary_key=True, max_length=64, editable=False)
    kind = models.CharField(_("kind"), max_length=16, db_index=True, editable=False)
    principal_key = models.CharField(_("owner"), max_length=255, editable=False)
    state = models.JSONField(_("state"), default=dict, blank=True)
    # Bumped by every update: read-modify-write compares it, so no update is ever lost.
    revision = models.PositiveIntegerField(_("revision"), default=0, editable=False)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("last used at"), default=timezone.now)
    expires_at = models.DateTimeField(_("expires at"), db_index=True)

    objects = HandleQuerySet.as_manager()

    class Meta:
        verbose_name = _("handle")
        verbose_name_plural = _("handles")
        ordering = ("-updated_at",)
        indexes = [models.Index(fields=["principal_key", "kind"], name="mcp_handle_owner_kind")]

    def __str__(self) -> str:
        return f"{self.id[: len(self.kind) + 9]}…"

    @property
    def live(self) -> bool:
        return self.expires_at > timezone.now()


class PendingInputQuerySet(ExpiringQuerySet["McpPendingInput"]):
    pass


class McpPendingInput(models.Model):
    """A request for input waiting for the client's answer: of a legacy call, sent on its stream,
    or of a task (``task`` set), sent on a ``tasks/result`` stream (2025-11-25) or shown by
    ``tasks/get`` (2026-07-28).

    The answer may reach any process: the one that took the response POST (or ``tasks/update``)
    writes it here, the one running the call or the task reads it. A call's request is bound to
    the session and the principal that made the call; a task's to the task and its owner.
    """

    id = models.CharField(_("request id"), primary_key=True, max_length=64, editable=False)
    session_id = models.CharField(_("session"), max_length=64, blank=True, editable=False)
    principal_key = models.CharField(_("owner"), max_length=255, editable=False)
    method = models.CharField(_("method"), max_length=64, editable=False)
    task = models.ForeignKey(
        "mcp_tools.McpTask",
        verbose_name=_("task"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="input_requests",
        editable=False,
    )
    # A task's request: its key in inputRequests (unique over the task's life) and its params.
    key = models.CharField(_("key"), max_length=64, blank=True, editable=False)
    params = models.JSONField(_("params"), null=True, blank=True, editable=False)
    answer = models.JSONField(_("answer"), null=True, blank=True, editable=False)
    error = models.JSONField(_("error"), null=True, blank=True, editable=False)
    answered_at = models.DateTimeField(_("answered at"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    expires_at = models.DateTimeField(_("expires at"), db_index=True, editable=False)

    objects = PendingInputQuerySet.as_manager()

    class Meta:
        verbose_name = _("pending input request")
        verbose_name_plural = _("pending input requests")

    def __str__(self) -> str:
        return f"{self.method} {self.id}"


class RedemptionQuerySet(ExpiringQuerySet["McpRedemption"]):
    pass


class McpRedemption(models.Model):
    """A ``requestState`` whose accepted confirmation was used (2026-07-28): at most once.

    ``ctx.elicit(..., once=True)`` answers from a state only if inserting the state's nonce
    here succeeds (the primary key makes it atomic across processes and databases); a replay
    of the same retry is asked again. Rows live as long as the state could (purged with
    expired handles).
    """

    nonce = models.CharField(_("nonce"), primary_key=True, max_length=64, editable=False)
    expires_at = models.DateTimeField(_("expires at"), db_index=True, editable=False)

    objects = RedemptionQuerySet.as_manager()

    class Meta:
        verbose_name = _("used confirmation")
        verbose_name_plural = _("used confirmations")

    def __str__(self) -> str:
        return self.nonce
