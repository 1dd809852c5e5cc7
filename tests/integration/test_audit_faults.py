"""The audit buffer when the database refuses a batch: nothing is lost to a moment's lock.

A batch refused with an OperationalError (SQLite's lock outlasting its timeout, a table lock in
shared-cache mode, a dropped connection) is tried again after a short pause, then kept for the
next flush, ahead of the rows that came meanwhile; only what is over the backlog bound is
dropped, and that is logged. The faults are injected (a wrapper around ``_insert``); the rows
are written to the real test database.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import OperationalError

from mcp_tools import audit
from mcp_tools.models import AuditEvent
from tests.audit_rows import record_echo

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
def buffered(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A large interval: only the test's own flush() writes; no pause between retries.
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 5, "AUDIT_FLUSH_SECONDS": 600}
    monkeypatch.setattr(audit, "_RETRY_PAUSES", (0.0, 0.0), raising=False)
    audit.flush()
    yield
    audit.flush()


def test_a_batch_refused_by_a_lock_is_written_on_the_retry(buffered: None, monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = Refusing(times=2)
    monkeypatch.setattr(audit, "_insert", refusing)
    for n in range(3):
        _record(n)
    audit.flush()
    assert refusing.calls == 3
    assert sorted(AuditEvent.objects.values_list("request_id", flat=True)) == ["faults-0", "faults-1", "faults-2"]


def test_a_batch_still_refused_waits_for_the_next_flush_in_order(
    buffered: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    refusing = Refusing(times=3)  # every try of the first flush
    monkeypatch.setattr(audit, "_insert", refusing)
    for n in range(2):
        _record(n)
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        audit.flush()
    assert AuditEvent.objects.count() == 0
    assert "Could not write 2 audit events yet" in caplog.text
    _record(2)
    audit.flush()
    assert list(AuditEvent.objects.order_by("id").values_list("request_id", flat=True)) == [
        "faults-0",
        "faults-1",
        "faults-2",
    ]


def test_what_is_over_the_backlog_bound_is_dropped_oldest_first_and_logged(
    buffered: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bound = 5 * (audit._BACKLOG_BATCHES - 1)
    monkeypatch.setattr(audit, "_insert", Refusing(times=10**6))
    with audit.deferred():  # no inline writes while recording: one flush below refuses them all
        for n in range(bound + 3):
            audit._buffer.add({"request_id": f"faults-{n}"}, held=True)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        audit.flush()
    assert "Could not write 3 audit events: the database refused them (dropped)" in caplog.text
    kept = [row["request_id"] for row in audit._buffer.rows]
    assert kept == [f"faults-{n}" for n in range(3, bound + 3)]
    audit._buffer.rows = []  # rows of no real shape: not for the fixture's flush
