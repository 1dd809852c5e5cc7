"""The audit trail of tool calls: argument summaries with sensitive values redacted, and purging.

Rows are buffered per process and written by a writer thread with one multi-row INSERT when
``AUDIT_FLUSH_ROWS`` rows wait or ``AUDIT_FLUSH_SECONDS`` after the first of them, and by
:func:`flush` on a clean shutdown (``atexit``, the ASGI front's lifespan shutdown, Celery's
worker shutdown); a write interrupted by the process stopping (``SystemExit`` from a server's
signal handler) puts its rows back for the flush at exit. A crash loses at most the buffer.
``AUDIT_FLUSH_ROWS = 1`` or ``AUDIT_FLUSH_SECONDS = 0`` writes each row at once, in the call.

A front that answers requests in its own thread (the WSGI front) records inside
:func:`deferred` and calls :func:`flush_due` once its answer is sent: a full batch is then
written in that thread, between requests, instead of by the writer thread in the middle of the
next one (the two threads of a process share one GIL: a write in the writer thread delays
whatever request the process serves meanwhile). The writer thread still writes what waited
``AUDIT_FLUSH_SECONDS``.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, timedelta
from functools import lru_cache, partial
from typing import Any

import orjson
from django.db import OperationalError, connections, router, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import Field
from django.utils import timezone

from .conf import mcp_settings
from .storable import text as _text  # NUL refused by PostgreSQL would leave a call without its row
from .threads import close_old_connections, on_loop
from .types import Principal

__all__ = [
    "REDACTED",
    "deferred",
    "flush",
    "flush_due",
    "purge",
    "record",
]

logger = logging.getLogger("mcp_tools")

REDACTED = "[redacted]"
_MAX_STRING = 200


def summarize_arguments(arguments: Mapping[str, Any], sensitive: frozenset[str]) -> dict[str, Any]:
    """Top-level arguments only: scalars (strings truncated), containers by size; values of
    sensitive names (the tool's list, writeOnly properties, AUDIT_REDACT_NAMES) redacted."""
    redacted = _redacted_words(tuple(mcp_settings.AUDIT_REDACT_NAMES))
    summary: dict[str, Any] = {}
    for name, value in list(arguments.items())[:50]:
        if name in sensitive or (redacted is not None and redacted.search(str(name).lower())):
            summary[_text(name)] = REDACTED
        elif isinstance(value, str):
            summary[_text(name)] = _text(value if len(value) <= _MAX_STRING else value[:_MAX_STRING] + "…")
        elif value is None or isinstance(value, bool | int | float):
            summary[_text(name)] = value
        elif isinstance(value, list):
            summary[_text(name)] = f"[list of {len(value)}]"
        elif isinstance(value, dict):
            summary[_text(name)] = f"{{object with {len(value)} keys}}"
        else:  # pragma: no cover - JSON has no other types
            summary[_text(name)] = type(value).__name__
    return summary


@lru_cache(maxsize=8)
def _redacted_words(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """One search for any of ``names`` (lower-cased) inside an argument's lower-cased name, in
    place of a test per name and argument; None when nothing is redacted by name."""
    words = [re.escape(name.lower()) for name in names]
    return re.compile("|".join(words)) if words else None


# Not frozen: a frozen dataclass sets each field through object.__setattr__, on every call.
@dataclass(slots=True)
class CallEvent:
    """What one audit row says of a call (or of a decision on one): who, which tool, with
    which arguments (summarized, ``sensitive`` names redacted), how it ended and how long it took."""

    principal: Principal
    tool_name: str
    tool_version: int | None
    arguments: Mapping[str, Any] | None
    sensitive: frozenset[str]
    outcome: str
    duration_ms: float
    request_id: Any
    protocol_version: str
    detail: str = ""


def record(event: CallEvent) -> None:
    """Record one AuditEvent; a failure to write is logged, never breaks the call.

    It runs on every call: the row joins the process's buffer (one multi-row INSERT per batch,
    no model instance, no save signals), or is written at once in immediate mode.
    """
    if not mcp_settings.AUDIT_ENABLED:
        return
    principal = event.principal
    user_id = principal.user_id if principal.user_id is not None else getattr(principal.user, "pk", None)
    try:
        values = {
            "created_at": timezone.now(),
            "principal_key": _text(principal.owner[:255]),
            "user": user_id,
            "client_id": _text((principal.client_id or "")[:255]),
            "scopes": "" if principal.granted is None else _text(" ".join(sorted(principal.granted))),
            "tool_name": _text(str(event.tool_name)[:128]),
            "tool_version": event.tool_version,
            "arguments": summarize_arguments(event.arguments or {}, event.sensitive),
            "outcome": event.outcome,
            "detail": _text(event.detail[:300]),
            "duration_ms": round(event.duration_ms, 3),
            "request_id": _text(str(event.request_id)[:100]),
            "protocol_version": _text(event.protocol_version),
        }
        if mcp_settings.AUDIT_FLUSH_ROWS <= 1 or mcp_settings.AUDIT_FLUSH_SECONDS <= 0:
            _insert([values])
        else:
            _buffer.add(values, held=_held.active)
    except Exception:
        logger.exception("Could not write the audit event of a call to %r", event.tool_name)


def flush(*, final: bool = False) -> None:
    """Write the rows this process holds now (tests call it; a clean shutdown calls it with
    ``final``: rows the database refuses then are dropped and logged, not kept for later)."""
    _buffer.flush(final=final)


def _flush_at_exit() -> None:
    _buffer.flush(final=True)


class _Held(threading.local):
    active = False


_held = _Held()


class deferred:  # lower case: used as the function it was, ``with audit.deferred():``
    """Inside, a full batch is left for :func:`flush_due`, which the caller promises to call
    after its answer is sent (the writer thread still writes rows that waited too long).

    A class rather than a ``contextlib.contextmanager``: the WSGI front enters it on every
    request, and a generator-based one costs a generator and two more frames each time."""

    __slots__ = ("_previous",)

    def __enter__(self) -> None:
        self._previous, _held.active = _held.active, True

    def __exit__(self, *exc: object) -> None:
        _held.active = self._previous


def flush_due() -> None:
    """Write the buffer here and now if a batch is full or its first row waited long enough."""
    _buffer.flush_if_due()


# When the writer falls this many batches behind (a slow database), callers write themselves.
_BACKLOG_BATCHES = 10
# The writer thread keeps its connection while it writes at least this often (seconds): a
# connection opened per batch cost PostgreSQL a new server process per batch per worker.
_IDLE_CLOSE_SECONDS = 2.0
# A batch the database refuses with an OperationalError (locked, busy, connection lost) waits
# this long before the next try, doubled per refusal in a row up to the cap (seconds).
_RETRY_FIRST = 0.1
_RETRY_CAP = 5.0
# The writer's waits with no rows are at least this long (a tiny AUDIT_FLUSH_SECONDS would make
# it wake all the time) and any wait at most the longest (seconds).
_SHORTEST_IDLE_WAIT = 0.05
_LONGEST_WAIT = 3600.0


class _Buffer:
    """The process's rows waiting to be written, and the daemon thread that writes them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)
        self.writing = threading.Lock()  # one write at a time, in order
        self.rows: list[dict[str, Any]] = []
        self.first_at = 0.0  # when the oldest waiting row joined (time.monotonic)
        self.full = False  # a batch filled outside deferred(): the writer thread writes it now
        self.thread: threading.Thread | None = None
        # When the writer's present wait ends at the latest (time.monotonic); inf: no timeout.
        self.wakes_at = float("inf")
        self.written_at = 0.0  # when the writer last wrote (its connection's idle time)
        self.refusals = 0  # refusals in a row (OperationalError); the next try not before retry_at
        self.retry_at = 0.0

    def add(self, values: dict[str, Any], *, held: bool = False) -> None:
        limit = mcp_settings.AUDIT_FLUSH_ROWS
        with self.lock:
            if not self.rows:
                self.first_at = time.monotonic()
            self.rows.append(values)
            waiting = len(self.rows)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="mcp-tools-audit", daemon=True)
                self.thread.start()
            if waiting >= limit and not held:
                self.full = True
                self.wake.notify()
            elif waiting == 1 and self.wakes_at > self.first_at + mcp_settings.AUDIT_FLUSH_SECONDS:
                # The writer would look too late for this row (it is not waiting now, its wait
                # has no timeout, or AUDIT_FLUSH_SECONDS was made shorter). Otherwise it is left
                # asleep: a thread woken wants the GIL, and while it waits for it every release
                # of the GIL by this one (each system call) wakes it again, a futex wake each time
                # (measured: 10 us per os.pread instead of 1, a fifth of a WSGI tools/call in
                # process).
                self.wake.notify()
        if waiting >= limit * _BACKLOG_BATCHES and not on_loop() and not _callers_transaction(_audit_connection()):
            # The writer is this many batches behind: the caller writes (not inside its own
            # transaction, whose rollback would take the other requests' rows with it; not on
            # the event loop's thread, which a wait for the database would stall).
            self.flush(due=True)

    def flush_if_due(self) -> None:
        rows = self.rows
        now = time.monotonic()
        if (
            rows
            and now >= self.retry_at
            and (len(rows) >= mcp_settings.AUDIT_FLUSH_ROWS or now - self.first_at >= mcp_settings.AUDIT_FLUSH_SECONDS)
        ):
            close_old_connections()  # the audit's database may not be the one the request used
            self.flush(due=True)

    def _run(self) -> None:
        holding = False  # this thread holds a database connection from its last write
        while True:
            with self.lock:
                while not self._ready(holding):
                    pass  # each turn waits until something may have changed
            if holding and not self.rows:
                # Nothing written for _IDLE_CLOSE_SECONDS: the thread gives its connection back
                # rather than hold one per process until CONN_MAX_AGE.
                connections.close_all()
                holding = False
                continue
            try:
                close_old_connections()
                self.flush(due=True)
            except Exception:  # the writer thread outlives whatever one batch raised
                logger.exception("The audit writer thread could not write a batch")
            holding = True
            self.written_at = time.monotonic()

    def _ready(self, holding: bool) -> bool:
        """With the lock held: wait a while; True when a batch is due, or (``holding`` a
        connection) when there are no rows and it wrote nothing for ``_IDLE_CLOSE_SECONDS``.

        With no rows it waits at most ``AUDIT_FLUSH_SECONDS``, so that the first row of a batch
        need not wake it (see :meth:`add`): a row that came meanwhile is found when the wait
        ends, before its own ``AUDIT_FLUSH_SECONDS`` have passed, and waits out the rest."""
        now = time.monotonic()
        flush_seconds = mcp_settings.AUDIT_FLUSH_SECONDS
        if not self.rows:
            # (AUDIT_FLUSH_SECONDS = 0 buffers nothing: the rows are written in their calls.) A
            # shorter interval than the floor is kept all the same: add() wakes the writer then.
            timed = max(flush_seconds, _SHORTEST_IDLE_WAIT) if flush_seconds > 0 else None
            if not holding:
                self._wait(timed, now)
                return False
            idle = self.written_at + _IDLE_CLOSE_SECONDS - now
            if idle <= 0:
                return True  # idle that long: the connection goes back (the caller sees no rows)
            self._wait(idle if timed is None else min(idle, timed), now)
            return False
        backoff = self.retry_at - now
        if backoff > 0:  # the database refused the last try: not before retry_at
            self._wait(backoff, now)
            return False
        if self.full:
            return True
        left = self.first_at + flush_seconds - now
        if left <= 0:
            return True
        self._wait(left, now)
        return False

    def _wait(self, seconds: float | None, now: float) -> None:
        """Wait (the lock held) until notified or ``seconds`` passed (None: no timeout)."""
        if seconds is not None:
            seconds = min(seconds, _LONGEST_WAIT)  # a timeout past threading.TIMEOUT_MAX raises
        self.wakes_at = float("inf") if seconds is None else now + seconds
        try:
            self.wake.wait(seconds)
        finally:
            self.wakes_at = float("inf")

    def flush(self, *, final: bool = False, due: bool = False) -> None:
        """Write the waiting rows now (``due``: unless the database refused the last try and its
        back-off has not passed: looked at once this thread holds the write turn, so callers
        queued behind a refused try do not each ask again)."""
        with self.writing:
            if due and time.monotonic() < self.retry_at:
                return
            with self.lock:
                batch, self.rows = self.rows, []
                self.full = False
            if not batch:
                return
            try:
                _insert(batch)
            except OperationalError:
                # Locked or busy (SQLite's lock outlasting its timeout, a table lock of its
                # shared cache), or the connection lost: the rows wait for the next try.
                if final:
                    logger.exception("Could not write %d audit events at shutdown (dropped)", len(batch))
                else:
                    self._put_back(batch)
            except Exception:
                self._one_by_one(batch)
            except BaseException:
                # The process is being stopped in the middle of the write (a server's signal
                # handler raising SystemExit, as gunicorn's sync workers do on SIGQUIT, or
                # KeyboardInterrupt): the INSERT's transaction is rolled back, so the rows go
                # back to the buffer for the flush at exit.
                with self.lock:
                    self.rows = batch + self.rows
                raise
            else:
                self.refusals = 0
                self.retry_at = 0.0

    def _one_by_one(self, batch: list[dict[str, Any]]) -> None:
        """A batch the database refused for its data (not for being busy): each row is tried
        alone, so that a row it refuses does not take the batch's other calls with it."""
        dropped = 0
        for row in batch if len(batch) > 1 else ():
            try:
                _insert([row])
            except Exception:
                dropped += 1
        if dropped or len(batch) == 1:
            logger.exception("Could not write %d audit events", dropped or 1)

    def _put_back(self, batch: list[dict[str, Any]]) -> None:
        """A batch the database refused waits for the next try, before the rows that came
        meanwhile; tries back off (``_RETRY_FIRST`` doubled per refusal in a row, at most
        ``_RETRY_CAP`` s) for every path that flushes. What is over the backlog bound (all but
        one batch of it, so that a caller's own write starts only once a batch more came) is
        dropped, oldest first, and logged."""
        bound = mcp_settings.AUDIT_FLUSH_ROWS * (_BACKLOG_BATCHES - 1)
        with self.lock:
            rows = batch + self.rows
            dropped = max(0, len(rows) - bound)
            self.rows = rows[dropped:]
            # A full batch waits for the back-off only, not for AUDIT_FLUSH_SECONDS after its
            # first row: the writer thread tries it again once retry_at has passed.
            self.full = len(self.rows) >= mcp_settings.AUDIT_FLUSH_ROWS
            self.refusals += 1
            self.retry_at = time.monotonic() + min(_RETRY_CAP, _RETRY_FIRST * 2 ** min(self.refusals - 1, 16))
            self.wake.notify()  # the writer thread waits for retry_at
        if dropped:
            logger.error("Could not write %d audit events: the database refused them (dropped)", dropped)
        else:
            logger.warning("Could not write %d audit events yet: the database refused them (kept)", len(batch))

    def forked(self) -> None:
        """In a forked child: the parent's rows are the parent's to write, its thread is gone."""
        self.__init__()  # type: ignore[misc]


_buffer = _Buffer()
os.register_at_fork(after_in_child=_buffer.forked)
atexit.register(_flush_at_exit)

# Per database alias: the INSERT's head, its fields, and per field its name and how its value
# is prepared (see _preparer).
_statements: dict[str, tuple[str, list[Field[Any, Any]], list[tuple[str, Any]]]] = {}
# Fields whose database value is the Python value record() puts in a row (str, int, float or
# None): no per-row get_db_prep_save for them. The others (dates, JSON, the user's key) go
# through their field as usual.
_AS_IS = frozenset(
    {
        "CharField",
        "TextField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveBigIntegerField",
        "PositiveSmallIntegerField",
        "FloatField",
    }
)


def _preparer(field: Field[Any, Any], connection: Any) -> Any:
    """How a column's value reaches the driver: None (as it is), or a function of (value,
    connection). Dates and JSON go straight to the backend's adapters (what their fields end
    with, minus the layers before); an integer user key as it is; anything else through its field."""
    kind = field.get_internal_type()
    if kind in _AS_IS:
        return None
    if kind == "ForeignKey" and field.target_field.get_internal_type() in _AS_IS | {"AutoField", "BigAutoField"}:  # type: ignore[attr-defined]
        return None
    if kind == "DateTimeField":
        if connection.vendor == "sqlite":
            return _sqlite_datetime
        return lambda value, conn: conn.ops.adapt_datetimefield_value(value)
    if kind == "JSONField":
        encoder = field.encoder  # type: ignore[attr-defined]
        if type(connection.ops).adapt_json_value is BaseDatabaseOperations.adapt_json_value:
            # The base adapter (SQLite's, MySQL's) is json.dumps(value, cls=encoder): called as
            # it is, or (no encoder of the field's own) orjson's text of the same JSON.
            if encoder is None:
                return _json_text
            dumps = partial(json.dumps, cls=encoder)
            return lambda value, conn: dumps(value)
        return lambda value, conn: conn.ops.adapt_json_value(value, encoder)
    return field.get_db_prep_save


def _json_text(value: Any, connection: Any) -> str:
    """The JSON text of an argument summary: orjson's (a fifth of ``json.dumps``' cost; compact,
    UTF-8 rather than ``\\u`` escapes: the same JSON once read), or ``json.dumps``' for what
    orjson refuses (an integer past 64 bits, a lone surrogate)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value)


def _sqlite_datetime(value: Any, connection: Any) -> Any:
    """SQLite's text of a time. A UTC time (``timezone.now()``'s) on a connection in UTC (no
    ``TIME_ZONE`` of its own) is the naive time's text, as the backend's adapter makes it, without
    its checks and conversions; any other time through the adapter."""
    if value.tzinfo is UTC and connection.timezone is UTC:
        return str(value.replace(tzinfo=None))
    return connection.ops.adapt_datetimefield_value(value)


def _audit_connection() -> Any:
    from .models import AuditEvent

    return connections[router.db_for_write(AuditEvent)]


def _callers_transaction(connection: Any) -> bool:
    """Whether this thread is inside a transaction of the caller's on ``connection`` (a test
    case's own wrapping transaction is not one: it stands for autocommit)."""
    return any(not getattr(block, "_from_testcase", False) for block in connection.atomic_blocks)


def _statement(alias: str, connection: Any) -> tuple[str, list[Field[Any, Any]], list[tuple[str, Any]]]:
    """The INSERT's head, its fields and how each value is prepared, for ``alias`` (kept)."""
    from .models import AuditEvent

    fields = [f for f in AuditEvent._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    table = quote(AuditEvent._meta.db_table)
    columns_in = [(f.name, _preparer(f, connection)) for f in fields]
    statement = _statements[alias] = (f"INSERT INTO {table} ({columns}) VALUES ", fields, columns_in)  # noqa: S608
    return statement


def _insert(rows: list[dict[str, Any]]) -> None:
    """One INSERT of ``rows`` (several statements, in one transaction, past the backend's
    parameter limit). Inside a caller's transaction it runs in a savepoint, so that a refusal
    leaves that transaction usable (PostgreSQL aborts it otherwise)."""
    from .models import AuditEvent

    alias = router.db_for_write(AuditEvent)
    connection = connections[alias]
    statement = _statements.get(alias) or _statement(alias, connection)
    head, fields, columns_in = statement
    # On SQLite Django turns each %s into ? with a regular expression over the statement (for
    # a batch of 100 rows, 1,300 of them: 2 us per row); written as ? they are left as they are.
    # Not where queries are logged (DEBUG, a test's CaptureQueriesContext): the log's text of a
    # statement is made from its %s.
    placeholder = "?" if connection.vendor == "sqlite" and not connection.queries_logged else "%s"
    one = "(" + ", ".join([placeholder] * len(fields)) + ")"
    size = max(1, _batch_size(connection, fields, rows))
    # One statement commits by itself; more are one transaction (one commit, one disk sync).
    wrap = len(rows) > size or _callers_transaction(connection)
    atomic = transaction.atomic(using=alias) if wrap else contextlib.nullcontext()
    with atomic, connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            params = [
                values[name] if convert is None else convert(values[name], connection)
                for values in chunk
                for name, convert in columns_in
            ]
            cursor.execute(head + ", ".join([one] * len(chunk)), params)


def _batch_size(connection: Any, fields: list[Field[Any, Any]], rows: list[dict[str, Any]]) -> int:
    """Rows per INSERT statement. On SQLite, from the connection's own limit of parameters
    (32,766 since SQLite 3.32) where Django assumes the oldest one (999): a batch of 100 audit
    rows is then one statement, which commits by itself, instead of two in a transaction."""
    if connection.vendor == "sqlite":
        import sqlite3  # (loaded already: the backend is SQLite)

        connection.ensure_connection()
        try:
            limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        except (AttributeError, sqlite3.Error):  # Python before 3.11
            limit = 0
        if limit > 0:
            return int(limit // len(fields))
    return int(connection.ops.bulk_batch_size(fields, rows))


def purge(days: int | None = None, batch_size: int = 5000) -> int:
    """Delete audit events older than ``days`` (default AUDIT_RETENTION_DAYS), in batches."""
    from .models import AuditEvent
    from .models.querysets import delete_in_batches

    keep = mcp_settings.AUDIT_RETENTION_DAYS if days is None else days
    cutoff = timezone.now() - timedelta(days=keep)
    return delete_in_batches(AuditEvent.objects.filter(created_at__lt=cutoff), batch_size)
