"""Celery's entry point for this app (``autodiscover_tasks`` imports ``<app>.tasks``).

The tasks live in ``mcp_tools.tasking.jobs``; this module only makes them discoverable.
"""

from .tasking.jobs import purge_audit_events, purge_expired_tasks, run_task

__all__ = ["purge_audit_events", "purge_expired_tasks", "run_task"]
