"""Periodic Celery tasks: schedule them with Celery beat (the demo's ``CELERY_BEAT_SCHEDULE``).

- ``mcp_tools.sweep_lost_tasks``: retry or fail tasks whose worker is gone (``recovery.sweep``);
  schedule it at about ``TASK_LOST_AFTER_SECONDS`` / 3.
- ``mcp_tools.purge_expired_tasks``: delete tasks past their ttl, in batches.
- ``mcp_tools.purge_audit_events``: delete audit rows past ``AUDIT_RETENTION_DAYS``.
"""

from __future__ import annotations

from celery import shared_task

from ..audit import purge
from ..conf import mcp_settings
from ..models import McpTask
from .recovery import sweep

__all__ = ["purge_audit_events", "purge_expired_tasks", "sweep_lost_tasks"]


@shared_task(name="mcp_tools.sweep_lost_tasks", ignore_result=True)  # type: ignore[untyped-decorator]
def sweep_lost_tasks() -> int:
    return sweep()


@shared_task(name="mcp_tools.purge_expired_tasks", ignore_result=True)  # type: ignore[untyped-decorator]
def purge_expired_tasks() -> int:
    return McpTask.objects.delete_expired(batch_size=int(mcp_settings.TASK_PURGE_BATCH))


@shared_task(name="mcp_tools.purge_audit_events", ignore_result=True)  # type: ignore[untyped-decorator]
def purge_audit_events() -> int:
    return purge()
