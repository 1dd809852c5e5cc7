"""The search entries kept in step with the catalog: checked once per catalog version per process.

Every way a tool changes moves the catalog version (``CatalogVersion``), and so does nothing
else that discovery searches except code (a kind's terms or permissions, after a deploy). The
first search a process serves under a new catalog version reads the stored entries' versions
and digests (one query) and writes the entries that differ from the catalog's tools (one
statement per 500), in a transaction; later searches under that version read nothing more.
An entry is only ever replaced by one of the same or a later tool version, so a process still
serving an older catalog cannot put older text back. The entries of tools the catalog no longer
holds go once the database says those tools are disabled (never one of a tool enabled since);
a deleted tool's entry goes with it (cascade). Whatever an entry says, a search checks each tool
it finds against the catalog.
``manage.py mcp_search_index`` does the same ahead of the first search (on deploy).
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass

from django.db import DatabaseError, connections, router, transaction

from ..catalog import Catalog
from ..models import SearchEntry, Tool
from . import documents

__all__ = ["ensure", "sync"]

logger = logging.getLogger("mcp_tools")

_CHUNK = 500
_ANALYZE_AFTER = 500
_synced: weakref.WeakSet[Catalog] = weakref.WeakSet()
_lock = threading.Lock()


@dataclass(slots=True)
class SyncReport:
    tools: int = 0
    written: int = 0
    removed: int = 0


def ensure(catalog: Catalog) -> None:
    """Bring the entries in step with ``catalog`` once per catalog (per process); a failure is
    logged and the search runs on what is stored (its grant filter does not depend on it)."""
    if catalog in _synced:
        return
    with _lock:
        if catalog in _synced:
            return
        try:
            sync(catalog)
        except DatabaseError:
            logger.exception("Discovery: the search entries could not be brought up to date")
            return
        _synced.add(catalog)


def sync(catalog: Catalog, using: str | None = None) -> SyncReport:
    """Write the entries of ``catalog``'s tools that are missing or differ from what is stored."""
    alias = using or router.db_for_write(SearchEntry)
    report = SyncReport(tools=len(catalog.tools))
    stored = dict(SearchEntry.objects.using(alias).values_list("tool_id", "digest"))
    changed = []
    for tool in catalog.tools:
        doc = documents.document(tool)
        if stored.pop(tool.pk, None) != doc.digest:
            changed.append((tool.pk, tool.version, doc))
    documents.keep_only(catalog.tools)
    gone = sorted(stored)  # entries of tools this catalog does not hold
    if not changed and not gone:
        return report
    with transaction.atomic(using=alias):
        for start in range(0, len(changed), _CHUNK):
            _upsert(alias, changed[start : start + _CHUNK])
        for start in range(0, len(gone), _CHUNK):
            disabled = Tool.objects.using(alias).filter(pk__in=gone[start : start + _CHUNK], enabled=False)
            report.removed += SearchEntry.objects.using(alias).filter(tool__in=disabled.values("pk")).delete()[0]
        if connections[alias].vendor == "postgresql" and len(changed) > _ANALYZE_AFTER:
            # Many new rows: the planner learns how selective words are now (before autovacuum).
            with connections[alias].cursor() as cursor:
                cursor.execute(f"ANALYZE {connections[alias].ops.quote_name(SearchEntry._meta.db_table)}")
    report.written = len(changed)
    return report


def _upsert(alias: str, rows: list[tuple[int, int, documents.Document]]) -> None:
    connection = connections[alias]
    if connection.vendor not in ("postgresql", "sqlite"):
        # Elsewhere: the ORM's upsert, without the version guard.
        SearchEntry.objects.using(alias).bulk_create(
            [SearchEntry(tool_id=pk, version=version, **_values(d)) for pk, version, d in rows],
            update_conflicts=True,
            unique_fields=["tool"],
            update_fields=["version", *_COLUMNS],
        )
        return
    table = connection.ops.quote_name(SearchEntry._meta.db_table)
    columns = ("tool_id", "version", *_COLUMNS)
    values = ", ".join(["(" + ", ".join(["%s"] * len(columns)) + ")"] * len(rows))
    params: list[int | str | bool] = []
    for pk, version, d in sorted(rows, key=lambda row: row[0]):  # one lock order for every writer
        params += [pk, version, *_values(d).values()]
    updates = ", ".join(f"{column} = excluded.{column}" for column in ("version", *_COLUMNS))
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES {values} "  # noqa: S608
        f"ON CONFLICT (tool_id) DO UPDATE SET {updates} WHERE {table}.version <= excluded.version"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


_COLUMNS = ("digest", "name", "names", "body", "access", "model_visible", "safety")


def _values(d: documents.Document) -> dict[str, int | str | bool]:
    return {
        "digest": d.digest,
        "name": d.name,
        "names": d.names,
        "body": d.body,
        "access": d.access,
        "model_visible": d.model_visible,
        "safety": d.safety,
    }


def forget() -> None:
    """Check again on the next search (tests; after the entries were changed behind our back)."""
    with _lock:
        _synced.clear()
