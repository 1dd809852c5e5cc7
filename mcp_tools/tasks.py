"""Celery's entry point for this app (``autodiscover_tasks`` imports ``<app>.tasks``).

The tasks live in ``mcp_tools.tasking.jobs`` and ``mcp_tools.tasking.beat``; this module only
makes them discoverable.
"""

from .tasking.beat import purge_audit_events, purge_expired_tasks, sweep_lost_tasks
from .tasking.jobs import run_task

__all__ = ["purge_audit_events", "purge_expired_tasks", "run_task", "sweep_lost_tasks"]
