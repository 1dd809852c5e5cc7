"""Celery tasks of the reusable app, as ``shared_task`` so any host Celery app picks them up.

Celery's autodiscovery imports them through ``mcp_tools.tasks``.

``run_task`` acknowledges late and is rejected (requeued) when its worker dies, so a killed
worker does not lose the call: the next delivery retries it or ends it failed, per
``MCP_TOOLS["TASK_WORKER_LOST"]``. Schedule ``purge_expired_tasks`` and
``purge_audit_events`` with Celery beat.
"""

from __future__ import annotations

from celery import shared_task

from ..audit import purge
from ..conf import mcp_settings
from ..models import McpTask
from .worker import execute


@shared_task(  # type: ignore[untyped-decorator]
    name="mcp_tools.run_task", acks_late=True, reject_on_worker_lost=True, ignore_result=True
)
def run_task(task_id: str) -> str:
    return execute(task_id)


@shared_task(name="mcp_tools.purge_expired_tasks", ignore_result=True)  # type: ignore[untyped-decorator]
def purge_expired_tasks() -> int:
    return McpTask.objects.delete_expired(batch_size=int(mcp_settings.TASK_PURGE_BATCH))


@shared_task(name="mcp_tools.purge_audit_events", ignore_result=True)  # type: ignore[untyped-decorator]
def purge_audit_events() -> int:
    return purge()
