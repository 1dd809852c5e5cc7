"""Every PostgreSQL round trip and Redis command a process sends, counted by kind, in that process.

``install()`` wraps the lowest methods every caller shares (psycopg's ``Cursor.execute`` and
``executemany``, its connections' ``commit``/``rollback``; redis-py's
``AbstractConnection.send_packed_command``), so nothing on the measured path changes: Django's
cursor, the driver cursor ``models.raw.fetch_one`` uses, the health check's ``SELECT 1``, the
audit writer thread and redis-py pipelines are all seen as the stores see them. A kind is

- ``pg <VERB> <table>`` for a statement (``pg SELECT mcp_tools_catalogversion``), ``pg BEGIN``
  for the implicit one psycopg sends before the first statement of a transaction, ``pg COMMIT``
  and ``pg ROLLBACK``: each one round trip;
- ``redis <CMD>+<CMD>`` for one round trip to Redis, its commands in order (a pipeline of
  ``SET`` and ``INCR`` is ``redis SET+INCR``); ``redis connect`` for a new connection.

``tests/support/counted_site.py`` serves the counts of a server process on ``/__roundtrips__``.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from typing import Any

_lock = threading.Lock()
_counts: Counter[str] = Counter()
_installed = False

_VERB = re.compile(r"^\s*(\w+)", re.ASCII)
_CALL = re.compile(r"^\s*\w+\s+([\w.]+)\s*\(", re.ASCII)
_TABLE = re.compile(r'\b(?:FROM|INTO|UPDATE|TABLE)\s+"?([\w.]+)"?', re.ASCII | re.IGNORECASE)


def record(kind: str, n: int = 1) -> None:
    with _lock:
        _counts[kind] += n


def snapshot(*, reset: bool = False) -> dict[str, int]:
    """The counts so far (and start again from nothing)."""
    with _lock:
        found = dict(_counts)
        if reset:
            _counts.clear()
    return found


def sql_kind(query: Any) -> str:
    text = query.decode() if isinstance(query, bytes) else query if isinstance(query, str) else repr(query)
    verb = _VERB.match(text)
    name = verb.group(1).upper() if verb else "?"
    if text.strip().upper() == "SELECT 1":
        return "pg SELECT 1"
    table = _TABLE.search(text)
    if table:
        return f"pg {name} {table.group(1)}"
    call = _CALL.match(text)  # SELECT set_config(...): a function, no table
    return f"pg {name} {call.group(1)}" if call else f"pg {name}"


def redis_commands(packed: Any) -> list[str]:
    """The command names in a packed RESP request (one or several commands)."""
    chunks = [packed] if isinstance(packed, bytes | bytearray | memoryview | str) else list(packed)
    data = b"".join(c.encode() if isinstance(c, str) else bytes(c) for c in chunks)
    names: list[str] = []
    at = 0
    while at < len(data) and data[at : at + 1] == b"*":
        end = data.index(b"\r\n", at)
        count = int(data[at + 1 : end])
        at = end + 2
        for index in range(count):
            end = data.index(b"\r\n", at)
            length = int(data[at + 1 : end])  # "$<length>"
            value = data[end + 2 : end + 2 + length]
            if index == 0:
                names.append(value.decode("latin-1").upper())
            at = end + 2 + length + 2
    return names


def install() -> None:
    """Wrap psycopg and redis-py in this process (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    _install_psycopg()
    _install_redis()


def _install_psycopg() -> None:
    import psycopg
    from psycopg import pq

    idle = pq.TransactionStatus.IDLE

    def begins(cursor: Any) -> None:
        conn = cursor.connection
        if not conn.autocommit and conn.info.transaction_status == idle:
            record("pg BEGIN")

    original_execute = psycopg.Cursor.execute
    original_many = psycopg.Cursor.executemany

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        begins(self)
        record(sql_kind(query))
        return original_execute(self, query, *args, **kwargs)

    def executemany(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        begins(self)
        record(sql_kind(query) + " (many)")
        return original_many(self, query, *args, **kwargs)

    original_connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def connect(cls: Any, *args: Any, **kwargs: Any) -> Any:
        record("pg connect")
        return original_connect(cls, *args, **kwargs)

    psycopg.Connection.connect = classmethod(connect)  # type: ignore[method-assign,assignment]
    psycopg.connect = psycopg.Connection.connect  # the module's alias (what Django calls)
    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    psycopg.Cursor.executemany = executemany  # type: ignore[method-assign]

    for name in ("commit", "rollback"):
        original = getattr(psycopg.Connection, name)

        def ended(self: Any, *, _original: Any = original, _name: str = name.upper()) -> Any:
            if self.info.transaction_status != idle:
                record(f"pg {_name}")
            return _original(self)

        setattr(psycopg.Connection, name, ended)


def _install_redis() -> None:
    from redis.connection import AbstractConnection

    original = AbstractConnection.send_packed_command
    original_connect = AbstractConnection.connect_check_health

    def connect_check_health(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._sock:
            record("redis connect")
        return original_connect(self, *args, **kwargs)

    AbstractConnection.connect_check_health = connect_check_health  # type: ignore[method-assign]

    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> Any:
        record("redis " + "+".join(redis_commands(command)))
        return original(self, command, check_health)

    AbstractConnection.send_packed_command = send_packed_command  # type: ignore[method-assign]
