"""The audit writer thread is left asleep by the first row of a batch when its wait ends in time.

A thread that is woken wants the GIL, and while it waits for it each release of the GIL by the
thread serving requests (every system call) wakes it again: a notify per batch made every
``os.pread`` of a WSGI ``tools/call`` cost about 10 us instead of 1. The writer waits at most
``AUDIT_FLUSH_SECONDS`` with no rows, so a row still waits no longer than that to be written;
a writer whose wait would end too late (a shorter interval set meanwhile) is woken as before.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from mcp_tools import audit
from mcp_tools.models import AuditEvent
from tests.support.audit_rows import record_echo

pytestmark = pytest.mark.django_db(transaction=True)

SLACK = 1.0  # seconds a loaded machine may add to the writer's own wait


def _written_within(request_id: str, seconds: float) -> float | None:
    """Seconds until the row of ``request_id`` is in the table (polled), or None."""
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        if AuditEvent.objects.filter(request_id=request_id).exists():
            return time.monotonic() - began
        time.sleep(0.01)
    return None


@pytest.fixture
def interval(settings: Any) -> Any:
    def set_interval(seconds: float) -> None:
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_ROWS": 100, "AUDIT_FLUSH_SECONDS": seconds}

    audit.flush()
    yield set_interval
    audit.flush()


def _writer_waits(at_least: float = 0.0) -> None:
    """Until the writer thread is inside a wait that ends at least ``at_least`` s from now."""
    began = time.monotonic()
    while time.monotonic() - began < 2 + SLACK:
        wakes_at = audit._buffer.wakes_at
        if wakes_at != float("inf") and wakes_at - time.monotonic() >= at_least:
            return
        time.sleep(0.005)
    raise AssertionError(f"the writer thread never waited {at_least} s or more")


def _counting_notify(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = audit._buffer.wake.notify

    def notify(n: int = 1) -> None:
        calls.append(n)
        real(n)

    monkeypatch.setattr(audit._buffer.wake, "notify", notify)
    return calls


def test_the_first_row_of_a_batch_leaves_the_writer_asleep_and_waits_at_most_the_interval(
    interval: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    interval(0.4)
    record_echo("writer", "writer-settle")  # the writer now waits with this interval
    assert _written_within("writer-settle", 0.4 + SLACK) is not None
    _writer_waits()
    notified = _counting_notify(monkeypatch)
    with audit.deferred():  # as the WSGI front records: no flush of its own in these calls
        for n in range(3):
            record_echo("writer", f"writer-{n}")
    assert notified == []
    waited = _written_within("writer-0", 0.4 + SLACK)
    assert waited is not None, "the writer thread never wrote the rows"
    assert AuditEvent.objects.filter(request_id__startswith="writer-").count() == 4


def test_a_writer_whose_wait_ends_too_late_is_woken_for_the_first_row(
    interval: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "_IDLE_CLOSE_SECONDS", 600)  # no idle close cuts its wait short
    interval(600)
    record_echo("writer", "writer-long")
    _writer_waits(at_least=100)  # for the row's 600 s (it looks again within the old interval)
    audit.flush()
    interval(0.2)
    notified = _counting_notify(monkeypatch)
    record_echo("writer", "writer-short")
    assert notified == [1]
    assert _written_within("writer-short", 0.2 + SLACK) is not None


def test_an_interval_past_the_longest_wait_keeps_the_writer_alive(interval: Any) -> None:
    interval(1e12)  # threading's waits refuse a timeout this long (OverflowError)
    record_echo("writer", "writer-far")
    _writer_waits(at_least=100)
    assert audit._buffer.thread is not None
    assert audit._buffer.thread.is_alive()
    assert audit._buffer.wakes_at - time.monotonic() <= audit._LONGEST_WAIT
    audit.flush()
    assert AuditEvent.objects.filter(request_id="writer-far").exists()
