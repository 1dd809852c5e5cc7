"""The domain's own signal receivers: relation changes and deletions move the catalog version
and store tool revisions (``models.revisions``).

Wired once by ``connect()`` (from ``AppConfig.ready``); publishing the change to listeners is
the notify package's business, which hears ``mcp_tools.signals.catalog_changed``.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, pre_delete

from .revisions import record_changes, revision
from .tools import CatalogVersion, Scope, Tool

__all__ = ["connect"]


def _bump(sender: Any, **kwargs: Any) -> None:
    # Runs inside the changing transaction: the catalog version moves with the rows, so
    # every cached list (and the list_changed fan-out) sees the new visibility.
    CatalogVersion.bump()


def _m2m_changed(sender: Any, action: str, **kwargs: Any) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        _bump(sender)


def _tool_deleting(sender: Any, instance: Tool, using: str, **kwargs: Any) -> None:
    # Before the row (and its scope links) go: the last state is what a restore brings back.
    state = Tool.snapshots([instance.pk], using).get(instance.pk)
    if state is not None:
        with revision(using=using) as frame:
            frame.mark_deleted(instance.pk, *state)


def _tool_scopes_changed(
    sender: Any, instance: Any, *, action: str, reverse: bool, pk_set: set[int] | None, using: str, **kwargs: Any
) -> None:
    if not reverse:  # tool.required_scopes.add(...)
        if action in ("post_add", "post_remove", "post_clear"):
            record_changes([instance.pk], using=using)
        return
    # scope.tools.add(...): the tools are the other side.
    if action == "pre_clear":
        instance._mcp_tool_pks = list(instance.tools.values_list("pk", flat=True))
    elif action in ("post_add", "post_remove"):
        record_changes(sorted(pk_set or ()), using=using)
    elif action == "post_clear":
        record_changes(getattr(instance, "_mcp_tool_pks", ()), using=using)


def _scope_deleting(sender: Any, instance: Scope, **kwargs: Any) -> None:
    instance._mcp_tool_pks = list(instance.tools.values_list("pk", flat=True))  # type: ignore[attr-defined]


def _scope_deleted(sender: Any, instance: Scope, using: str, **kwargs: Any) -> None:
    # The tools that required it lost it without an m2m signal.
    record_changes(getattr(instance, "_mcp_tool_pks", ()), using=using)


def connect() -> None:
    post_delete.connect(_bump, sender=Tool, dispatch_uid="mcp_tools.tool_deleted")
    post_delete.connect(_bump, sender=Scope, dispatch_uid="mcp_tools.scope_deleted")
    m2m_changed.connect(_m2m_changed, sender=Tool.required_scopes.through, dispatch_uid="mcp_tools.tool_scopes")
    m2m_changed.connect(_m2m_changed, sender=Scope.implies.through, dispatch_uid="mcp_tools.scope_implies")
    # Revisions: deletions keep the last state; scope links changed from either side.
    pre_delete.connect(_tool_deleting, sender=Tool, dispatch_uid="mcp_tools.tool_revision_deleted")
    pre_delete.connect(_scope_deleting, sender=Scope, dispatch_uid="mcp_tools.scope_revision_deleting")
    post_delete.connect(_scope_deleted, sender=Scope, dispatch_uid="mcp_tools.scope_revision_deleted")
    m2m_changed.connect(
        _tool_scopes_changed, sender=Tool.required_scopes.through, dispatch_uid="mcp_tools.tool_scopes_revision"
    )
