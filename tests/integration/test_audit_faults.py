"""The audit buffer when the database refuses a batch: nothing is lost to a moment's lock, and
a database that keeps refusing is not asked again by every request.

A batch refused with an OperationalError (SQLite's lock outlasting its timeout, a table lock in
shared-cache mode, a lock timeout on PostgreSQL, a dropped connection) is kept for the next try,
ahead of the rows that came meanwhile; no path tries again before a back-off (doubled per refusal
in a row); only what is over the backlog bound is dropped, and that is logged; at shutdown the
rows refused are dropped and logged as such. Faults are injected around ``_insert`` (the rows
are written to the real test database), or, on PostgreSQL, made by a real table lock.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

from mcp_tools import audit
from mcp_tools.models import AuditEvent
from mcp_tools.types import Principal
from tests.support.audit_rows import record_echo
from tests.support.mcp_client import MODERN

pytestmark = pytest.mark.django_db(transaction=True)


def _record(n: int) -> None:
    record_echo("faults", f"faults-{n}")


class Refusing:
    """``_insert`` that raises OperationalError for its first ``times`` calls, then writes."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.calls = 0
        self.real = audit._insert

    def __call__(self, rows: list[dict[str, Any]]) -> None:
        self.calls += 1
        if self.calls <= self.times:
            raise OperationalError("database table is locked: mcp_tools_auditevent")
        self.real(rows)


@pytest.fixture
def buffered(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    # A large interval: the writer thread never writes on its own; the test's flushes do.
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 5, "AUDIT_FLUSH_SECONDS": 600}
    audit.flush()
    real = audit._insert
    yield audit._buffer
    # The real INSERT, not the test's: a Refusing made now would wrap whatever the test put there
    # (a refusing one left 45 rows in the buffer for a later test's flush to write).
    monkeypatch.setattr(audit, "_insert", real)
    audit._buffer.retry_at = 0.0
    audit._buffer.refusals = 0
    audit.flush()


def test_a_refused_batch_is_kept_and_written_by_the_next_try_in_order(
    buffered: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    refusing = Refusing(times=1)
    monkeypatch.setattr(audit, "_insert", refusing)
    for n in range(2):
        _record(n)
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        audit.flush()
    assert AuditEvent.objects.count() == 0
    assert "Could not write 2 audit events yet" in caplog.text
    _record(2)
    audit.flush()
    assert refusing.calls == 2
    assert list(AuditEvent.objects.order_by("id").values_list("request_id", flat=True)) == [
        "faults-0",
        "faults-1",
        "faults-2",
    ]
    assert buffered.refusals == 0


def test_after_a_refusal_no_path_tries_again_before_the_back_off(
    buffered: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the writer thread, not the answer's close (flush_due), not a caller whose backlog is
    full: a database that refused is asked again once the back-off has passed, not per row."""
    monkeypatch.setattr(audit, "_RETRY_FIRST", 60.0)
    monkeypatch.setattr(audit, "_RETRY_CAP", 3600.0)
    refusing = Refusing(times=10**6)
    monkeypatch.setattr(audit, "_insert", refusing)
    with audit.deferred():  # full batches are left to flush_due, as under the WSGI front
        for n in range(5):
            _record(n)
        audit.flush_due()
        assert refusing.calls == 1
        for n in range(5, 60):  # past the backlog bound (5 x 10): add() would write itself
            _record(n)
        for _ in range(5):
            audit.flush_due()
    assert refusing.calls == 1
    assert 59 <= buffered.retry_at - time.monotonic() <= 60
    buffered.flush(due=True)  # a caller that queued behind the refused try: it does not ask again
    assert refusing.calls == 1
    buffered.retry_at = 0.0  # as if the back-off had passed
    audit.flush_due()
    assert refusing.calls == 2
    assert 119 <= buffered.retry_at - time.monotonic() <= 120  # doubled
    buffered.refusals = 5000  # a long outage: the back-off stays at its cap, nothing overflows
    buffered.retry_at = 0.0
    audit.flush_due()
    assert refusing.calls == 3
    assert 3599 <= buffered.retry_at - time.monotonic() <= 3600


def test_the_writer_thread_tries_a_refused_full_batch_again_after_the_back_off(
    buffered: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not AUDIT_FLUSH_SECONDS (600 s here) after its first row: a full batch the database
    refused is written by the writer thread as soon as the back-off has passed (the test of the
    WSGI front's batch failed when its shared-cache table lock refused the writer once)."""
    refusing = Refusing(times=1)
    monkeypatch.setattr(audit, "_insert", refusing)
    for n in range(5):  # a full batch: the writer thread is woken for it
        record_echo("retried", f"retried-{n}")
    deadline = time.monotonic() + 10
    while AuditEvent.objects.filter(principal_key="retried").count() < 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert refusing.calls == 2  # refused once, then written after the first back-off (0.1 s)
    assert AuditEvent.objects.filter(principal_key="retried").count() == 5


def test_a_full_backlog_is_not_written_inside_a_callers_transaction(
    buffered: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other requests' rows must not join a transaction that may roll back: the caller leaves
    the backlog to the writer thread (or the next flush) while it is inside one."""
    counting = Refusing(times=0)
    monkeypatch.setattr(audit, "_insert", counting)
    with audit.deferred(), transaction.atomic():
        for n in range(5 * audit._BACKLOG_BATCHES + 2):
            record_echo("backlog", f"backlog-{n}")
    assert counting.calls == 0
    audit.flush()
    assert AuditEvent.objects.filter(principal_key="backlog").count() == 5 * audit._BACKLOG_BATCHES + 2


def test_what_is_over_the_backlog_bound_is_dropped_oldest_first_and_logged(
    buffered: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bound = 5 * (audit._BACKLOG_BATCHES - 1)
    monkeypatch.setattr(audit, "_insert", Refusing(times=10**6))
    with audit.deferred():
        for n in range(bound + 3):
            buffered.add({"request_id": f"faults-{n}"}, held=True)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        audit.flush()
    assert "Could not write 3 audit events: the database refused them (dropped)" in caplog.text
    assert [row["request_id"] for row in buffered.rows] == [f"faults-{n}" for n in range(3, bound + 3)]
    buffered.rows = []  # rows of no real shape: not for the fixture's flush


def test_at_shutdown_refused_rows_are_dropped_and_logged_as_dropped(
    buffered: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(audit, "_insert", Refusing(times=10**6))
    for n in range(2):
        _record(n)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        audit.flush(final=True)
    assert "Could not write 2 audit events at shutdown (dropped)" in caplog.text
    assert buffered.rows == []


def test_a_refusal_inside_a_callers_transaction_leaves_it_usable_and_the_rows_kept(
    buffered: Any, settings: Any
) -> None:
    """On PostgreSQL a failed statement aborts the transaction it runs in: the INSERT runs in a
    savepoint, so a flush inside a caller's ``atomic`` (a full backlog under ATOMIC_REQUESTS, an
    admin view) refused by a real lock leaves that transaction usable and the rows kept."""
    if connection.vendor != "postgresql":
        pytest.skip("a statement's failure aborts the transaction on PostgreSQL; its pass of make test runs this")
    import psycopg

    params = connection.get_connection_params()
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with psycopg.connect(**params) as other, other.transaction():
            other.execute("LOCK TABLE mcp_tools_auditevent IN ACCESS EXCLUSIVE MODE")
            locked.set()
            release.wait(30)

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(30)
        for n in range(2):
            _record(n)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '100ms'")
            audit.flush()
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")  # the caller's transaction is still usable
                assert cursor.fetchone() == (1,)
        assert len(buffered.rows) == 2
        # Immediate mode (a call's row written in the call) inside a caller's transaction: the
        # same savepoint; the row is lost (logged), the caller's transaction is not.
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 1}
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '100ms'")
            record_echo("faults-now", "faults-now-0")
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                assert cursor.fetchone() == (1,)
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 5}
    finally:
        release.set()
        holder.join(30)
    buffered.retry_at = 0.0
    audit.flush()
    assert AuditEvent.objects.filter(principal_key="faults").count() == 2


class Interrupted(Refusing):
    """``_insert`` that is interrupted by ``exc`` (the process being stopped) its first time."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(times=0)
        self.exc = exc

    def __call__(self, rows: list[dict[str, Any]]) -> None:
        self.calls += 1
        if self.calls == 1:
            raise self.exc
        self.real(rows)


@pytest.mark.parametrize("exc", [SystemExit(0), KeyboardInterrupt()], ids=["SystemExit", "KeyboardInterrupt"])
def test_a_write_interrupted_by_the_process_stopping_is_written_at_exit(
    buffered: Any, monkeypatch: pytest.MonkeyPatch, exc: BaseException
) -> None:
    """Issue 32 (6): gunicorn's sync worker stops on SIGQUIT (SIGINT to the arbiter) by raising
    SystemExit from its signal handler, wherever the worker's thread is: in the middle of writing
    a batch after an answer, the batch was lost. Its rows go back to the buffer, and the flush at
    exit (``atexit``) writes them, once each."""
    monkeypatch.setattr(audit, "_insert", Interrupted(exc))
    for n in range(3):
        _record(n)
    with pytest.raises(type(exc)):
        audit.flush()
    _record(3)
    audit._flush_at_exit()
    assert sorted(AuditEvent.objects.filter(principal_key="faults").values_list("request_id", flat=True)) == [
        f"faults-{n}" for n in range(4)
    ]


class RefusingRow:
    """``_insert`` that refuses (as the database does a value it cannot store) any statement
    holding the row of ``request_id``, and writes the others."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self.real = audit._insert

    def __call__(self, rows: list[dict[str, Any]]) -> None:
        if any(row["request_id"] == self.request_id for row in rows):
            raise ValueError("A string literal cannot contain NUL (0x00) characters.")
        self.real(rows)


def test_a_row_the_database_refuses_does_not_take_the_batch_with_it(
    buffered: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(audit, "_insert", RefusingRow("faults-2"))
    for n in range(4):
        _record(n)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        audit.flush()
    written = set(AuditEvent.objects.filter(principal_key="faults").values_list("request_id", flat=True))
    assert written == {"faults-0", "faults-1", "faults-3"}
    assert [r.getMessage() for r in caplog.records] == ["Could not write 1 audit events"]
    assert not audit._buffer.rows


def test_nul_in_what_a_caller_sends_is_stored_not_refused(buffered: Any) -> None:
    # PostgreSQL refuses NUL in text and JSON: a call whose name, id or arguments held one left
    # no row (and, batched, took the batch's other rows with it).
    for name, arguments, request_id in (("ec\x00ho", {}, "nul-1"), ("echo", {"t\x00": "a\x00b"}, "nul-\x002")):
        audit.record(
            audit.CallEvent(
                principal=Principal(key="nul\x00key", client_id="c\x00", granted=frozenset({"a\x00"})),
                tool_name=name,
                tool_version=1,
                arguments=arguments,
                sensitive=frozenset(),
                outcome="ok",
                duration_ms=1.0,
                request_id=request_id,
                protocol_version=MODERN,
            )
        )
    _record(9)
    audit.flush()
    rows = {row.request_id: row for row in AuditEvent.objects.filter(principal_key__startswith="nul")}
    assert set(rows) == {"nul-1", "nul-\ufffd2"}
    assert rows["nul-1"].tool_name == "ec\ufffdho"
    assert rows["nul-\ufffd2"].arguments == {"t\ufffd": "a\ufffdb"}
    assert (rows["nul-1"].principal_key, rows["nul-1"].client_id, rows["nul-1"].scopes) == (
        "nul\ufffdkey",
        "c\ufffd",
        "a\ufffd",
    )
    assert AuditEvent.objects.filter(request_id="faults-9").exists()
