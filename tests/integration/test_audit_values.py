"""An audit row's values reach the database as the backend's own adapters make them.

The batched INSERT prepares each column without its field's layers (``audit._preparer``); on
SQLite a UTC time and the arguments' JSON take a shorter way. Whatever the way, the value sent
is the one Django's adapter gives (the JSON's text may be spaced and escaped otherwise: the same
JSON once read), and the row reads back as it was recorded.
"""

from __future__ import annotations

import datetime
import json
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from mcp_tools import audit
from mcp_tools.models import AuditEvent

pytestmark = pytest.mark.django_db

TIMES = [
    timezone.now(),
    datetime.datetime(2026, 11, 29, 7, 30, 0, 0, tzinfo=datetime.UTC),
    datetime.datetime(2026, 3, 29, 1, 59, 59, 999999, tzinfo=ZoneInfo("Europe/Paris")),
    datetime.datetime(2026, 11, 29, 7, 30, 0, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=-3))),
]
# The last two are what orjson refuses (past 64 bits, a lone surrogate): json.dumps writes them.
ARGUMENTS = [
    {},
    {"text": "héllo ✓", "n": 3, "ok": True, "none": None},
    {"list": "[list of 2]", "x": 1.5},
    {"big": 2**70},
    {"odd": "\ud800"},
]


def _prepare(name: str) -> Any:
    field = AuditEvent._meta.get_field(name)
    prepare = audit._preparer(field, connection)  # type: ignore[arg-type]
    assert prepare is not None
    return prepare


@pytest.mark.parametrize("value", TIMES)
def test_a_time_is_sent_as_the_backends_adapter_makes_it(value: datetime.datetime) -> None:
    assert _prepare("created_at")(value, connection) == connection.ops.adapt_datetimefield_value(value)


def test_on_a_connection_with_a_time_zone_of_its_own_sqlite_times_go_through_the_adapter() -> None:
    # A stand-in connection in another zone: the short way would write UTC's wall time.
    seen: list[Any] = []
    ops = SimpleNamespace(adapt_datetimefield_value=lambda value: seen.append(value) or "adapted")
    paris = SimpleNamespace(timezone=ZoneInfo("Europe/Paris"), ops=ops)
    assert audit._sqlite_datetime(TIMES[1], paris) == "adapted"
    assert seen == [TIMES[1]]


@pytest.mark.parametrize("value", ARGUMENTS)
def test_the_arguments_are_sent_as_the_backends_adapter_makes_them(value: dict[str, Any]) -> None:
    sent = _prepare("arguments")(value, connection)
    expected = connection.ops.adapt_json_value(value, AuditEvent._meta.get_field("arguments").encoder)  # type: ignore[attr-defined]
    if connection.vendor == "postgresql":  # psycopg's Jsonb wrapper: compared by what it holds
        assert (type(sent), sent.obj) == (type(expected), expected.obj)
    else:
        assert isinstance(sent, str)
        assert json.loads(sent) == json.loads(expected) == value


def _storable(arguments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PostgreSQL's JSON refuses a lone surrogate (no request holds one: the JSON parser refuses
    it first); SQLite stores it escaped."""
    return [a for a in arguments if connection.vendor != "postgresql" or "\ud800" not in a.values()]


def test_a_batch_reads_back_as_recorded() -> None:
    rows = [
        {
            "created_at": when,
            "principal_key": "user:1",
            "user": None,
            "client_id": "c",
            "scopes": "tools:call",
            "tool_name": "echo",
            "tool_version": 1,
            "arguments": arguments,
            "outcome": "ok",
            "detail": "",
            "duration_ms": 0.5,
            "request_id": str(i),
            "protocol_version": "2026-07-28",
        }
        for i, (when, arguments) in enumerate(zip(TIMES * 2, _storable(ARGUMENTS), strict=False))
    ]
    audit._insert(rows)
    stored = {row.request_id: row for row in AuditEvent.objects.all()}
    for i, row in enumerate(rows):
        assert stored[str(i)].created_at == row["created_at"]
        assert stored[str(i)].arguments == row["arguments"]


def test_where_queries_are_logged_the_batch_is_logged_with_its_values() -> None:
    # On SQLite the INSERT is written with ? where nobody logs queries; a log (DEBUG, this test's
    # capture) makes its text from %s: the batch is written and logged all the same.
    row = {
        "created_at": TIMES[1],
        "principal_key": "user:7",
        "user": None,
        "client_id": "c",
        "scopes": "",
        "tool_name": "logged",
        "tool_version": None,
        "arguments": ARGUMENTS[1],
        "outcome": "ok",
        "detail": "",
        "duration_ms": 1.0,
        "request_id": "r1",
        "protocol_version": "2026-07-28",
    }
    with CaptureQueriesContext(connection) as captured:
        audit._insert([row, {**row, "request_id": "r2"}])
    (insert,) = [q["sql"] for q in captured.captured_queries if "INSERT" in q["sql"]]
    assert "'logged'" in insert
    assert "%s" not in insert
    assert "?" not in insert
    assert set(AuditEvent.objects.filter(tool_name="logged").values_list("request_id", flat=True)) == {"r1", "r2"}
