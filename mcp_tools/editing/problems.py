"""What the system checks that read rows say now: for the admin's tool list and the server's log.

``manage.py check --database default`` runs the checks tagged ``database`` (a model tool row
missing or out of date: ``mcp_sync_toolsets`` forgotten; tools nobody can see). A newcomer runs
``runserver`` and opens the admin instead, and neither runs them: ``problems()`` runs the
app's own (``mcp_tools`` and its contrib apps) once per catalog version and process, and
``log_first()`` writes them to the log when a process has built its first catalog.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.core.checks import CheckMessage, Tags
from django.core.checks.registry import registry
from django.db import DEFAULT_DB_ALIAS, DatabaseError

__all__ = ["describe", "log_first", "problems"]

logger = logging.getLogger("mcp_tools")

_lock = threading.Lock()
_seen: dict[str, Any] = {"version": None, "problems": []}


def problems(version: int | None = None) -> list[CheckMessage]:
    """The messages (not silenced) of the app's database checks; computed again only when the
    catalog version ``version`` moved (every tool, scope or toolset change moves it)."""
    with _lock:
        if version is not None and _seen["version"] == version:
            return list(_seen["problems"])
    found: list[CheckMessage] = []
    for check in registry.get_checks():
        tags = getattr(check, "tags", ())
        if Tags.database not in tags or not getattr(check, "__module__", "").startswith("mcp_tools"):
            continue
        try:
            found.extend(m for m in check(app_configs=None, databases=[DEFAULT_DB_ALIAS]) if not m.is_silenced())
        except DatabaseError:
            return []  # not migrated yet: nothing to say about rows
    with _lock:
        _seen.update(version=version, problems=found)
    return list(found)


def reset() -> None:
    """Forget what was computed (tests: a new database starts its catalog versions again)."""
    with _lock:
        _seen.update(version=None, problems=[])


def describe(message: CheckMessage) -> str:
    hint = f" ({message.hint})" if message.hint else ""
    return f"{message.id}: {message.msg}{hint}"


def log_first(sender: Any = None, version: int | None = None, **kwargs: Any) -> None:
    """``signals.first_catalog``: each problem as a warning of the ``mcp_tools`` logger."""
    for message in problems(version):
        logger.warning("System check %s", describe(message))
