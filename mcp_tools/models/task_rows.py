"""The task row: one long-running tool call run by Celery, owned by the principal that made it.

No wire shapes here: ``mcp_tools.protocol.task_wire`` shapes a row per revision family.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ..protocol import task_wire as wire
from .querysets import ExpiringQuerySet

__all__ = [
    "McpTask",
    "TaskQuerySet",
    "TaskStatus",
    "new_task_id",
]


def new_task_id() -> str:
    # T11-6, T11-16, TX-13: unguessable (192 random bits), unique, URL-safe.
    return secrets.token_urlsafe(24)


class TaskStatus(models.TextChoices):
    WORKING = wire.WORKING, _("Working")
    INPUT_REQUIRED = wire.INPUT_REQUIRED, _("Input required")
    COMPLETED = wire.COMPLETED, _("Completed")
    FAILED = wire.FAILED, _("Failed")
    CANCELLED = wire.CANCELLED, _("Cancelled")


assert tuple(TaskStatus.values) == wire.STATUSES

# T11-7: the one table of the moves a task's status may make; terminal statuses have none. A
# live status may also be written again unchanged, by a new attempt claiming the task or by a
# retry (``can_move``), but only where the caller names it as the status it expects.
TRANSITIONS: dict[str, frozenset[str]] = {
    wire.WORKING: frozenset({wire.INPUT_REQUIRED, wire.COMPLETED, wire.FAILED, wire.CANCELLED}),
    wire.INPUT_REQUIRED: frozenset({wire.WORKING, wire.COMPLETED, wire.FAILED, wire.CANCELLED}),
    wire.COMPLETED: frozenset(),
    wire.FAILED: frozenset(),
    wire.CANCELLED: frozenset(),
}


def sources_of(new: str) -> tuple[str, ...]:
    """The statuses from which ``new`` may be entered (a change, not a rewrite)."""
    return tuple(s for s in wire.STATUSES if new in TRANSITIONS[s])


def can_move(old: str, new: str) -> bool:
    """Whether a task in ``old`` may be written with ``new``: a legal change, or a live status kept."""
    return new in TRANSITIONS[old] or (old == new and old not in wire.TERMINAL)


def _statuses(expected: str | Iterable[str]) -> tuple[str, ...]:
    return (expected,) if isinstance(expected, str) else tuple(expected)


class TaskQuerySet(ExpiringQuerySet["McpTask"]):
    def live(self) -> TaskQuerySet:
        return self.filter(expires_at__gt=timezone.now())

    def owned_by(self, principal_key: str) -> TaskQuerySet:
        return self.live().filter(principal_key=principal_key)

    def reachable_by(self, principal_key: str, scopes: frozenset[str] | None) -> TaskQuerySet:
        """The live tasks of a grant whose required scopes ``scopes`` (expanded) still cover;
        ``None``: a backend that does not restrict by scope. One extra query (the few distinct
        scope sets of the grant's tasks), so a page of tasks/list is filtered in the database."""
        rows = self.owned_by(principal_key)
        if scopes is None:
            return rows
        sets = set(rows.order_by().values_list("required_scopes", flat=True).distinct())
        covered = [s for s in sets if set(s.split()) <= scopes]
        return rows.filter(required_scopes__in=covered)

    def move(
        self,
        pk: str,
        status: str,
        *,
        expected: str | Iterable[str] | None = None,
        attempt: int | None = None,
        where: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> bool:
        """The one way a task's status is written: a compare-and-swap along ``TRANSITIONS``.

        The row moves only while its status is one of ``expected`` (by default every status
        ``status`` may be entered from); False when it was elsewhere. With ``attempt``, only
        while that attempt is the task's current one (a worker given up as lost cannot
        overwrite what its successor does); ``where``: further conditions on the row.
        """
        olds = sources_of(status) if expected is None else _statuses(expected)
        illegal = [old for old in olds if not can_move(old, status)]
        if illegal:
            raise ValueError(f"A task cannot move from {illegal} to {status!r}.")
        fields.setdefault("updated_at", timezone.now())
        rows = self.filter(pk=pk, status__in=olds, **(where or {}))
        if attempt is not None:
            rows = rows.filter(attempts=attempt)
        return rows.update(status=status, **fields) > 0


class McpTask(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_task_id, editable=False)
    principal_key = models.CharField(_("owner"), max_length=255, editable=False)
    principal_data = models.JSONField(_("owner details"), default=dict, blank=True, editable=False)
    # The scopes the task's tool required when it was created, sorted and space-separated: a
    # token reaches the task (status, result, input, cancel, list) only while it still carries
    # them, so a narrower token of the same grant cannot read what a wider one started.
    required_scopes = models.TextField(_("required scopes"), blank=True, default="", editable=False)
    protocol_version = models.CharField(_("protocol version"), max_length=16, editable=False)
    tool_name = models.CharField(_("tool"), max_length=128, editable=False)
    tool_version = models.PositiveIntegerField(_("tool version"), editable=False)
    arguments = models.JSONField(_("arguments"), default=dict, blank=True, editable=False)
    status = models.CharField(
        _("status"), max_length=16, choices=TaskStatus.choices, default=TaskStatus.WORKING, db_index=True
    )
    status_message = models.TextField(_("status message"), blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("last updated at"), default=timezone.now)
    ttl_ms = models.BigIntegerField(_("ttl (ms)"), null=True, blank=True)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True, db_index=True)
    poll_interval_ms = models.PositiveIntegerField(_("poll interval (ms)"), null=True, blank=True)
    # The handler's outcome in revision-neutral form: content blocks, structured content, isError.
    result = models.JSONField(_("result"), null=True, blank=True, editable=False)
    error_code = models.IntegerField(_("error code"), null=True, blank=True, editable=False)
    error_message = models.TextField(_("error message"), blank=True, editable=False)
    celery_id = models.CharField(_("Celery task id"), max_length=64, blank=True, editable=False)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0, editable=False)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True, editable=False)
    # Written by the worker running the current attempt every TASK_HEARTBEAT_SECONDS: a working
    # task whose heartbeat is older than TASK_LOST_AFTER_SECONDS lost its worker (any broker).
    heartbeat_at = models.DateTimeField(_("heartbeat"), null=True, blank=True, editable=False)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True, editable=False)
    # What the client that created the task declared it can answer (elicitation, sampling): the
    # session's capabilities (2025-11-25) or the creating request's (2026-07-28). The worker's
    # ctx.can_elicit / ctx.can_sample read them.
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True, editable=False)
    # How many requests for input the task has made: numbers their keys, unique over its life (TX-7).
    # The W3C trace context (traceparent, tracestate) of the call that created the task, so the
    # worker's span joins its trace ({} without OpenTelemetry).
    trace_context = models.JSONField(_("trace context"), default=dict, blank=True, editable=False)
    inputs_asked = models.PositiveIntegerField(_("requests for input"), default=0, editable=False)

    objects = TaskQuerySet.as_manager()

    class Meta:
        verbose_name = _("MCP task")
        verbose_name_plural = _("MCP tasks")
        ordering = ("-created_at", "-id")
        indexes = [models.Index(fields=["principal_key", "-created_at", "-id"], name="mcp_task_owner_created")]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=wire.STATUSES), name="mcp_task_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} {self.id[:8]}… ({self.status})"

    @property
    def terminal(self) -> bool:
        return self.status in wire.TERMINAL

    @staticmethod
    def expiry(created_at: datetime, ttl_ms: int) -> datetime:
        # Every task has a ttl (task_service.effective_ttl); the columns stay nullable.
        return created_at + timedelta(milliseconds=ttl_ms)
