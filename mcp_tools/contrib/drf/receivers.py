"""Saving or deleting a toolset defined in the admin writes its tool rows in the same transaction
(each row's save moves the catalog version, so list_changed goes out once it commits)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save

from .models import ToolsetDefinition
from .sync import sync_definition

__all__ = ["connect"]


def _saved(sender: Any, instance: ToolsetDefinition, raw: bool = False, **kwargs: Any) -> None:
    if not raw:  # not while loading fixtures
        sync_definition(instance)


def _deleted(sender: Any, instance: ToolsetDefinition, **kwargs: Any) -> None:
    instance.pk = None  # gone: its rows are deleted
    sync_definition(instance)


def connect() -> None:
    post_save.connect(_saved, sender=ToolsetDefinition, dispatch_uid="mcp_tools_drf.toolset_saved")
    post_delete.connect(_deleted, sender=ToolsetDefinition, dispatch_uid="mcp_tools_drf.toolset_deleted")
