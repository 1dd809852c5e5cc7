"""One row of a plain SELECT on the hot path, without the cost of Django's cursor."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def fetch_one(connection: Any, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first row of ``sql`` (``%s`` placeholders) on ``connection``, or None.

    Outside transactions and when nobody records queries (DEBUG, test query counts, execute
    wrappers) it runs on the driver's own cursor, inside Django's error wrapper (a broken
    connection is still marked unusable): a fifth of the CPU of Django's cursor. Otherwise on
    Django's cursor, so that what records queries sees it.
    """
    if connection.queries_logged or connection.execute_wrappers or connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cursor = connection.connection.cursor()
        try:
            # The sqlite3 driver takes qmark parameters; Django's cursor translates them itself.
            cursor.execute(sql.replace("%s", "?") if params and connection.vendor == "sqlite" else sql, params)
            return cursor.fetchone()
        finally:
            cursor.close()
