"""The audit trail of tool calls: argument summaries with sensitive values redacted, and purging."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.db import connections, router
from django.db.models import Field
from django.utils import timezone

from .conf import mcp_settings
from .types import Principal

logger = logging.getLogger("mcp_tools")

REDACTED = "[redacted]"
_MAX_STRING = 200


def summarize_arguments(arguments: Mapping[str, Any], sensitive: frozenset[str]) -> dict[str, Any]:
    """Top-level arguments only: scalars (strings truncated), containers by size; values of
    sensitive names (the tool's list, writeOnly properties, AUDIT_REDACT_NAMES) redacted."""
    redact_names = [n.lower() for n in mcp_settings.AUDIT_REDACT_NAMES]
    summary: dict[str, Any] = {}
    for name, value in list(arguments.items())[:50]:
        lowered = str(name).lower()
        if name in sensitive or any(word in lowered for word in redact_names):
            summary[name] = REDACTED
        elif isinstance(value, str):
            summary[name] = value if len(value) <= _MAX_STRING else value[:_MAX_STRING] + "…"
        elif value is None or isinstance(value, bool | int | float):
            summary[name] = value
        elif isinstance(value, list):
            summary[name] = f"[list of {len(value)}]"
        elif isinstance(value, dict):
            summary[name] = f"{{object with {len(value)} keys}}"
        else:  # pragma: no cover - JSON has no other types
            summary[name] = type(value).__name__
    return summary


def record(
    *,
    principal: Principal,
    tool_name: str,
    tool_version: int | None,
    arguments: Mapping[str, Any] | None,
    sensitive: frozenset[str],
    outcome: str,
    detail: str = "",
    duration_ms: float,
    request_id: Any,
    protocol_version: str,
) -> None:
    """Write one AuditEvent; a failure to write is logged, never breaks the call.

    It runs on every call, so it is one plain INSERT (no model instance, no save signals).
    """
    if not mcp_settings.AUDIT_ENABLED:
        return
    user = principal.user
    try:
        _insert(
            {
                "created_at": timezone.now(),
                "principal_key": principal.key[:255],
                "user": getattr(user, "pk", None),
                "client_id": (principal.client_id or "")[:255],
                "tool_name": str(tool_name)[:128],
                "tool_version": tool_version,
                "arguments": summarize_arguments(arguments or {}, sensitive),
                "outcome": outcome,
                "detail": detail[:300],
                "duration_ms": round(duration_ms, 3),
                "request_id": str(request_id)[:100],
                "protocol_version": protocol_version,
            }
        )
    except Exception:
        logger.exception("Could not write the audit event of a call to %r", tool_name)


_statements: dict[str, tuple[str, list[Field[Any, Any]]]] = {}


def _insert(values: dict[str, Any]) -> None:
    from .models import AuditEvent

    alias = router.db_for_write(AuditEvent)
    connection = connections[alias]
    statement = _statements.get(alias)
    if statement is None:
        fields = [f for f in AuditEvent._meta.concrete_fields if not f.primary_key]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        marks = ", ".join(["%s"] * len(fields))
        table = quote(AuditEvent._meta.db_table)
        statement = _statements[alias] = (f"INSERT INTO {table} ({columns}) VALUES ({marks})", fields)  # noqa: S608
    sql, fields = statement
    params = [f.get_db_prep_save(values[f.name], connection) for f in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def purge(days: int | None = None, batch_size: int = 5000) -> int:
    """Delete audit events older than ``days`` (default AUDIT_RETENTION_DAYS), in batches."""
    from .models import AuditEvent
    from .models.querysets import delete_in_batches

    keep = mcp_settings.AUDIT_RETENTION_DAYS if days is None else days
    cutoff = timezone.now() - timedelta(days=keep)
    return delete_in_batches(AuditEvent.objects.filter(created_at__lt=cutoff), batch_size)
