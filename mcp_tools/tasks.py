"""Celery's entry point for this app (``autodiscover_tasks`` imports ``<app>.tasks``).

The tasks live in ``mcp_tools.tasking.jobs``, ``mcp_tools.tasking.beat``,
``mcp_tools.handles.jobs`` and ``mcp_tools.approvals.jobs``; this module only makes them
discoverable, writes the process's buffered audit rows when a Celery worker (or one of its
pool processes) shuts down, and lowers Celery's lines about the app's periodic housekeeping to
DEBUG (``tasking/quiet.py``).
"""

from typing import Any

from celery.signals import after_setup_logger, beat_init, worker_process_shutdown, worker_ready, worker_shutdown

from .approvals.jobs import expire_approvals
from .audit import flush
from .handles.jobs import purge_expired_handles
from .tasking.beat import purge_audit_events, purge_expired_tasks, sweep_lost_tasks
from .tasking.jobs import run_task
from .tasking.quiet import install as _quiet_housekeeping

__all__ = [
    "expire_approvals",
    "purge_audit_events",
    "purge_expired_handles",
    "purge_expired_tasks",
    "run_task",
    "sweep_lost_tasks",
]


def _flush_audit(**kwargs: Any) -> None:
    flush(final=True)


worker_shutdown.connect(_flush_audit, weak=False)
worker_process_shutdown.connect(_flush_audit, weak=False)
# Beat's and the worker's lines about the periodic housekeeping at DEBUG (tasking/quiet.py): on
# whichever of these comes after Celery set up its handlers in this process.
for _signal in (after_setup_logger, worker_ready, beat_init):
    _signal.connect(_quiet_housekeeping, weak=False)
