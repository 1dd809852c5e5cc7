"""Celery's lines about the app's housekeeping tasks, at DEBUG.

Celery beat logs every task it sends at INFO, and the worker logs each task it receives and
each that succeeds: for the app's periodic housekeeping (the lost-task sweep runs every 10 s in
the demo) that is about two dozen lines a minute on an idle site. :func:`install` adds a filter
to the root logger's handlers (where Celery's own loggers end) that lowers those lines to DEBUG:
shown when the worker runs with ``--loglevel DEBUG``, dropped otherwise. A failure is logged at
ERROR and is never touched, nor is any line about another task (an MCP task's own outcome is one
INFO line of ``mcp_tools``).
"""

from __future__ import annotations

import logging

__all__ = ["install"]

HOUSEKEEPING = (
    "mcp_tools.sweep_lost_tasks",
    "mcp_tools.purge_expired_tasks",
    "mcp_tools.purge_audit_events",
    "mcp_tools.purge_expired_handles",
    "mcp_tools.expire_approvals",
)


class HousekeepingAtDebug(logging.Filter):
    """Lowers INFO lines naming a housekeeping task to DEBUG (dropped unless root is at DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not record.name.startswith("celery"):
            return True
        message = record.getMessage()
        if not any(name in message for name in HOUSEKEEPING):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


def install(**kwargs: object) -> None:
    """Add the filter to every handler of the root logger (once each); a Celery signal receiver."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, HousekeepingAtDebug) for f in handler.filters):
            handler.addFilter(HousekeepingAtDebug())
