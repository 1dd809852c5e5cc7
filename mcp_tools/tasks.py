"""Celery's entry point for this app (``autodiscover_tasks`` imports ``<app>.tasks``).

The tasks live in ``mcp_tools.tasking.jobs``, ``mcp_tools.tasking.beat``,
``mcp_tools.handles.jobs`` and ``mcp_tools.approvals.jobs``; this module only makes them
discoverable, and writes the process's buffered audit rows when a Celery worker (or one of its
pool processes) shuts down.
"""

from typing import Any

from celery.signals import worker_process_shutdown, worker_shutdown

from .approvals.jobs import expire_approvals
from .audit import flush
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


def _flush_audit(**kwargs: Any) -> None:
    flush()


worker_shutdown.connect(_flush_audit, weak=False)
worker_process_shutdown.connect(_flush_audit, weak=False)
