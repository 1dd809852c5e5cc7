"""Celery's entry point for this app (``autodiscover_tasks`` imports ``<app>.tasks``).

The tasks live in ``mcp_tools.tasking.jobs``, ``mcp_tools.tasking.beat``,
``mcp_tools.handles.jobs`` and ``mcp_tools.approvals.jobs``; this module only makes them discoverable.
"""

from .approvals.jobs import expire_approvals
from .handles.jobs import purge_expired_handles
from .tasking.beat import purge_audit_events, purge_expired_tasks, sweep_lost_tasks
from .tasking.jobs import run_task

__all__ = [
    "expire_approvals",
    "purge_audit_events",
    "purge_expired_handles",
    "purge_expired_tasks",
    "run_task",
    "sweep_lost_tasks",
]
