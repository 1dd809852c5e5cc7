"""Revisions of tools: one row per change of a tool (who, when, what), in the changing transaction.

Every way a tool changes goes through here: ``Tool.save()``, ``ToolQuerySet.update()`` (bulk
edits), deletions, and changes of its required scopes (either side of the relation, and the
deletion of a scope). Changes made inside one ``revision()`` block become one row per tool,
written when the block ends, still inside its transaction; a change outside any block opens a
block of its own. The row stores the tool as the database holds it at that moment (so the
``F()`` version bumps are seen as numbers), which makes any row a complete state to compare
with another or to restore.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import models, router, transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

__all__ = [
    "RevisionAction",
    "ToolRevision",
    "current_frame",
    "record_changes",
    "revision",
    "set_fields",
]

_CHUNK = 500


class RevisionAction(models.TextChoices):
    CREATED = "created", _("Created")
    CHANGED = "changed", _("Changed")
    DELETED = "deleted", _("Deleted")
    RESTORED = "restored", _("Restored")


class ToolRevision(models.Model):
    """The state of one tool after one change; kept when the tool is deleted."""

    tool_pk = models.BigIntegerField(_("tool id"), db_index=True)
    tool_name = models.CharField(_("tool name"), max_length=128, db_index=True)
    version = models.PositiveIntegerField(_("tool version"), null=True, blank=True)
    action = models.CharField(_("action"), max_length=16, choices=RevisionAction.choices)
    data = models.JSONField(_("data"), default=dict, help_text=_("The tool's editable fields after the change."))
    changed = models.JSONField(_("changed fields"), default=list, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    source = models.CharField(_("source"), max_length=32, blank=True, help_text=_("admin, import, code, ..."))
    comment = models.CharField(_("comment"), max_length=300, blank=True)
    created_at = models.DateTimeField(_("time"), default=timezone.now, db_index=True)

    class Meta:
        ordering = ("-pk",)
        verbose_name = _("tool revision")
        verbose_name_plural = _("tool revisions")
        indexes = [models.Index(fields=["tool_pk", "-id"], name="mcp_toolrev_tool_latest")]

    def __str__(self) -> str:
        return f"{self.tool_name} #{self.pk} ({self.action})"


@dataclass(slots=True)
class RevisionFrame:
    """What one ``revision()`` block saw: the tools it touched and who is changing them."""

    user: Any
    source: str
    comment: str
    using: str
    touched: dict[int, str] = field(default_factory=dict)  # tool pk -> action
    deleted: dict[int, tuple[str, int | None, dict[str, Any]]] = field(default_factory=dict)

    def touch(self, pks: Iterable[int], action: str = RevisionAction.CHANGED) -> None:
        for pk in pks:
            if pk in self.deleted:
                continue
            previous = self.touched.get(pk)
            # Created (or restored) earlier in the same block: that stays the row's action.
            if previous not in (RevisionAction.CREATED, RevisionAction.RESTORED):
                self.touched[pk] = action

    def mark_deleted(self, pk: int, name: str, version: int | None, data: dict[str, Any]) -> None:
        self.touched.pop(pk, None)
        self.deleted[pk] = (name, version, data)


_frame: ContextVar[RevisionFrame | None] = ContextVar("mcp_tools_revision", default=None)


def current_frame() -> RevisionFrame | None:
    return _frame.get()


@contextlib.contextmanager
def revision(
    *, user: Any = None, source: str = "", comment: str = "", using: str | None = None
) -> Iterator[RevisionFrame]:
    """Group the tool changes inside into one revision row per tool, in one transaction.

    Nested blocks join the outermost one (which keeps its user, source and comment unless it
    had none). The rows are written when the outermost block ends without an exception.
    """
    outer = _frame.get()
    if outer is not None:
        outer.user = outer.user if outer.user is not None else _real_user(user)
        outer.source = outer.source or source
        outer.comment = outer.comment or comment
        yield outer
        return
    alias = using or router.db_for_write(ToolRevision)
    frame = RevisionFrame(user=_real_user(user), source=source, comment=comment, using=alias)
    token = _frame.set(frame)
    try:
        with transaction.atomic(using=alias):
            yield frame
            _write(frame)
    finally:
        _frame.reset(token)


def record_changes(pks: Iterable[int], action: str = RevisionAction.CHANGED, *, using: str | None = None) -> None:
    """Note that the tools ``pks`` changed: in the open block, or in a block of their own."""
    with revision(using=using) as frame:
        frame.touch(pks, action)


def _real_user(user: Any) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def latest_revisions(pks: Iterable[int], using: str) -> dict[int, ToolRevision]:
    """The newest revision of each of ``pks`` (two queries per 500 tools)."""
    found: dict[int, ToolRevision] = {}
    pks = list(pks)
    for start in range(0, len(pks), _CHUNK):
        chunk = pks[start : start + _CHUNK]
        ids = (
            ToolRevision.objects.using(using)
            .filter(tool_pk__in=chunk)
            .order_by()
            .values("tool_pk")
            .annotate(last=Max("id"))
            .values_list("last", flat=True)
        )
        for row in ToolRevision.objects.using(using).filter(id__in=list(ids)):
            found[row.tool_pk] = row
    return found


def changed_fields(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """The fields whose values differ; with no earlier state (a tool created), those given a
    value other than the field's default: what its creator set, not every field."""
    if before is None:
        return set_fields(after)
    return [name for name in after if before.get(name) != after.get(name)]


def set_fields(state: dict[str, Any]) -> list[str]:
    """The fields of ``state`` (a tool's stored fields) that differ from a new tool's defaults."""
    tool_model = apps.get_model("mcp_tools", "Tool")
    found = []
    for name, value in state.items():
        try:
            field = tool_model._meta.get_field(name)
        except FieldDoesNotExist:
            found.append(name)  # a field of an older version of the model: say it was there
            continue
        default = [] if field.many_to_many else field.get_default()
        if value != default and not (value in ("", None, [], {}) and default in ("", None, [], {})):
            found.append(name)
    return found


def _write(frame: RevisionFrame) -> None:
    if not frame.touched and not frame.deleted:
        return
    tool_model = apps.get_model("mcp_tools", "Tool")
    states: dict[int, tuple[str, int | None, dict[str, Any]]] = tool_model.snapshots(frame.touched, frame.using)
    previous = latest_revisions([*states, *frame.deleted], frame.using)
    now = timezone.now()
    rows = []
    for pk, action in frame.touched.items():
        if pk not in states:  # gone since (deleted outside the block's notice)
            continue
        rows.append((pk, action, states[pk]))
    rows.extend((pk, RevisionAction.DELETED, state) for pk, state in frame.deleted.items())
    ToolRevision.objects.using(frame.using).bulk_create(
        [
            ToolRevision(
                tool_pk=pk,
                tool_name=name,
                version=version,
                action=action,
                data=data,
                changed=[] if action == RevisionAction.DELETED else changed_fields(_data(previous.get(pk)), data),
                user=frame.user,
                source=frame.source or "code",
                comment=frame.comment[:300],
                created_at=now,
            )
            for pk, action, (name, version, data) in sorted(rows, key=lambda r: r[0])
        ],
        batch_size=_CHUNK,
    )


def _data(row: ToolRevision | None) -> dict[str, Any] | None:
    return None if row is None else dict(row.data)
