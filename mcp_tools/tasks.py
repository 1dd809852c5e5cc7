"""Celery's entry point for this app (``autodiscover_tasks`` imports ``<app>.tasks``).

The tasks live in ``mcp_tools.tasking.jobs``, ``mcp_tools.tasking.beat`` and
``mcp_tools.handles.jobs``; this module only makes them discoverable.
"""

from .handles.jobs import purge_expired_handles
from .tasking.beat import purge_audit_events, purge_expired_tasks, sweep_lost_tasks
from .tasking.jobs import run_task

__all__ = ["purge_audit_events", "purge_expired_handles", "purge_expired_tasks", "run_task", "sweep_lost_tasks"]
