"""Signal receivers, wired in one place by ``connect()``."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete


def _tool_deleted(sender: Any, **kwargs: Any) -> None:
    from .models import CatalogVersion

    # Runs inside the deleting transaction: the catalog version moves with the rows.
    CatalogVersion.bump()


def connect() -> None:
    from .models import Tool

    post_delete.connect(_tool_deleted, sender=Tool, dispatch_uid="mcp_tools.tool_deleted")
