"""The domain's own signal receivers: relation changes and deletions move the catalog version.

Wired once by ``connect()`` (from ``AppConfig.ready``); publishing the change to listeners is
the notify package's business, which hears ``mcp_tools.signals.catalog_changed``.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete

from .tools import CatalogVersion, Scope, Tool


def _bump(sender: Any, **kwargs: Any) -> None:
    # Runs inside the changing transaction: the catalog version moves with the rows, so
    # every cached list (and the list_changed fan-out) sees the new visibility.
    CatalogVersion.bump()


def _m2m_changed(sender: Any, action: str, **kwargs: Any) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        _bump(sender)


def connect() -> None:
    post_delete.connect(_bump, sender=Tool, dispatch_uid="mcp_tools.tool_deleted")
    post_delete.connect(_bump, sender=Scope, dispatch_uid="mcp_tools.scope_deleted")
    m2m_changed.connect(_m2m_changed, sender=Tool.required_scopes.through, dispatch_uid="mcp_tools.tool_scopes")
    m2m_changed.connect(_m2m_changed, sender=Scope.implies.through, dispatch_uid="mcp_tools.scope_implies")
