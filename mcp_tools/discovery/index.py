"""The search entries kept in step with the catalog: checked once per catalog version per process.

Every way a tool changes moves the catalog version (``CatalogVersion``), and so does nothing
else that discovery searches except code (a kind's terms or permissions, after a deploy). The
first search a process serves under a new catalog version reads the stored entries' versions
and digests (one query) and writes the entries that differ from the catalog's tools (one
statement per 500), in a transaction; later searches under that version read nothing more.
An entry is only ever replaced by one of the same or a later tool version, so a process still
serving an older catalog cannot put older text back. Entries of disabled tools stay (the
search joins the tool row and skips them); a deleted tool's entry goes with it (cascade).
``manage.py mcp_search_index`` does the same ahead of the first search (on deploy).
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass

from django.db import DatabaseError, connections, router, transaction

from ..catalog import Catalog
from ..models import SearchEntry
from . import documents

logger = logging.getLogger("mcp_tools")

_CHUNK = 500
_synced: weakref.WeakSet[Catalog] = weakref.WeakSet()
_lock = threading.Lock()


@dataclass(slots=True)
class SyncReport:
    tools: int = 0
    written: int = 0


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
        if stored.get(tool.pk) != doc.digest:
            changed.append((tool.pk, tool.version, doc))
    documents.keep_only(catalog.tools)
    if not changed:
        return report
    with transaction.atomic(using=alias):
        for start in range(0, len(changed), _CHUNK):
            _upsert(alias, changed[start : start + _CHUNK])
    report.written = len(changed)
    return report


def _upsert(alias: str, rows: list[tuple[int, int, documents.Document]]) -> None:
    connection = connections[alias]
    if connection.vendor not in ("postgresql", "sqlite"):
        # Elsewhere: the ORM's upsert, without the version guard.
        SearchEntry.objects.using(alias).bulk_create(
            [
                SearchEntry(
                    tool_id=pk, version=version, digest=d.digest, names=d.names, body=d.body, permissions=d.permissions
                )
                for pk, version, d in rows
            ],
            update_conflicts=True,
            unique_fields=["tool"],
            update_fields=["version", "digest", "names", "body", "permissions"],
        )
        return
    table = connection.ops.quote_name(SearchEntry._meta.db_table)
    values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(rows))
    params: list[int | str] = []
    for pk, version, d in sorted(rows, key=lambda row: row[0]):  # one lock order for every writer
        params += [pk, version, d.digest, d.names, d.body, d.permissions]
    sql = (
        f"INSERT INTO {table} (tool_id, version, digest, names, body, permissions) VALUES {values} "  # noqa: S608
        "ON CONFLICT (tool_id) DO UPDATE SET version = excluded.version, digest = excluded.digest, "
        "names = excluded.names, body = excluded.body, permissions = excluded.permissions "
        f"WHERE {table}.version <= excluded.version"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def forget() -> None:
    """Check again on the next search (tests; after the entries were changed behind our back)."""
    with _lock:
        _synced.clear()
