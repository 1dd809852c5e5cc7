"""contrib.drf list and aggregate: allowlisted filters, search and ordering, keyset cursors that
hold under concurrent inserts, limits a hostile caller cannot pass, a database-enforced
timeout, and a constant number of queries per page whatever the table size."""

from __future__ import annotations

import datetime
import itertools
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools.contrib.drf.handlers import run
from mcp_tools.contrib.drf.query import QueryTimeout, guarded
from mcp_tools.exceptions import ToolError
from mcp_tools.types import Principal, ToolContext
from project.library.models import Book
from project.library.seed import seed
from tests.drfapp.models import Kind, Specimen
from tests.drfapp.testing import Caller, make_user, perms

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("synced")]


@pytest.fixture
def sam_caller(client: Any) -> Caller:
    make_user("sam", *perms("specimen"))
    return Caller(client, "sam")


@pytest.fixture
def rows() -> list[Specimen]:
    red, blue = Kind.objects.create(name="red"), Kind.objects.create(name="blue")
    made = []
    for i in range(30):
        specimen = Specimen.objects.create(
            char=f"item {i:02d}",
            text="needle in text" if i % 7 == 0 else "hay",
            colour="green" if i % 3 == 0 else "red",
            size=None if i % 4 == 0 else 1 + i % 2,
            integer=i - 10,
            decimal=Decimal(i) / 4,
            date=None if i % 5 == 0 else datetime.date(2024, 1, 1) + datetime.timedelta(days=i % 9),
            datetime=datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(hours=i),
            floating=None if i % 6 == 0 else float(i % 4),
            boolean=i % 2 == 0,
            kind=red if i % 2 else (blue if i % 3 else None),
        )
        specimen.kinds.set([red] if i % 2 else [red, blue])
        made.append(specimen)
    return made


def _chars(page: dict[str, Any]) -> list[str]:
    return [row["char"] for row in page["items"]]


def _every_page(caller: Caller, tool: str, arguments: dict[str, Any], between: Any = None) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    for page_number in itertools.count():
        page = caller.ok(tool, {**arguments, **({"cursor": cursor} if cursor else {})})
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return seen
        if between is not None:
            between(page_number)


# --------------------------------------------------------------------------- filters, search, ordering


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"char": {"exact": "item 03"}}, lambda s: s.char == "item 03"),
        ({"char": {"in": ["item 01", "item 02", "nope"]}}, lambda s: s.char in ("item 01", "item 02")),
        ({"char": {"icontains": "M 1"}}, lambda s: "m 1" in s.char),
        ({"char": {"startswith": "item 2"}}, lambda s: s.char.startswith("item 2")),
        ({"colour": {"exact": "green"}}, lambda s: s.colour == "green"),
        ({"size": {"isnull": True}}, lambda s: s.size is None),
        ({"integer": {"gte": 5, "lt": 9}}, lambda s: 5 <= s.integer < 9),
        ({"integer": {"lte": -8}}, lambda s: s.integer <= -8),
        ({"integer": {"gt": 17}}, lambda s: s.integer > 17),
        ({"integer": {"range": [0, 2]}}, lambda s: 0 <= s.integer <= 2),
        ({"decimal": {"gte": "6.5", "lte": "7"}}, lambda s: Decimal("6.5") <= s.decimal <= 7),
        ({"date": {"range": ["2024-01-02", "2024-01-03"]}}, lambda s: s.date and 2 <= s.date.day <= 3),
        ({"date": {"isnull": True}}, lambda s: s.date is None),
        (
            {"datetime": {"gte": "2024-01-02T00:00:00Z", "lt": "2024-01-02T03:00:00+00:00"}},
            lambda s: 24 <= s.integer + 10 < 27,
        ),
        ({"boolean": {"exact": False}}, lambda s: not s.boolean),
        ({"kind": {"isnull": True}}, lambda s: s.kind_id is None),
        ({"kinds": {"exact": "__blue__"}}, lambda s: s.integer % 2 == 0),
    ],
)
def test_each_operator_selects_the_rows_it_names(
    sam_caller: Caller, rows: list[Specimen], condition: dict[str, Any], expected: Any
) -> None:
    if "kinds" in condition:
        condition = {"kinds": {"exact": Kind.objects.get(name="blue").pk}}
    got = [row["char"] for row in _every_page(sam_caller, "list_specimen", {"filter": condition, "limit": 7})]
    assert got == sorted(s.char for s in rows if expected(s))
    assert len(got) == len(set(got))  # a to-many filter never repeats a row


def test_search_needs_every_word_in_some_declared_field(sam_caller: Caller, rows: list[Specimen]) -> None:
    found = _chars(sam_caller.ok("list_specimen", {"search": "NEEDLE text", "limit": 50}))
    assert found == [s.char for s in rows if "needle" in s.text]
    # "blu" is in the name of the related kind (kind__name, a path only the toolset may name).
    found = _chars(sam_caller.ok("list_specimen", {"search": "item 1 blu", "limit": 50}))
    assert found == ["item 10", "item 14", "item 16"]


@pytest.mark.parametrize(
    "order_by",
    [["integer"], ["-integer"], ["date"], ["-date", "char"], ["floating", "-decimal"], ["-kind"], ["size", "-time"]],
)
def test_paging_returns_each_row_once_in_order_for_any_ordering(
    sam_caller: Caller, rows: list[Specimen], order_by: list[str]
) -> None:
    seen = _every_page(sam_caller, "list_specimen", {"order_by": order_by, "limit": 4})
    assert sorted(row["id"] for row in seen) == sorted(s.pk for s in rows)
    first = order_by[0].lstrip("-")
    values = [row[first] for row in seen]
    present = [v for v in values if v is not None]
    assert values == present + [None] * (len(values) - len(present))  # NULLs last either way
    assert present == sorted(present, reverse=order_by[0].startswith("-"))


def test_rows_inserted_between_pages_never_repeat_or_hide_a_row(sam_caller: Caller, rows: list[Specimen]) -> None:
    inserted: list[int] = []

    def insert(page_number: int) -> None:
        for j in range(3):  # before, inside and after the current position
            made = Specimen.objects.create(char=f"new {page_number}-{j}", integer=[-100, 0, 100][j])
            inserted.append(made.pk)

    seen = _every_page(sam_caller, "list_specimen", {"order_by": ["integer"], "limit": 5}, between=insert)
    ids = [row["id"] for row in seen]
    assert len(ids) == len(set(ids))
    assert {s.pk for s in rows} <= set(ids)  # every row that existed at the start, exactly once
    assert set(ids) - {s.pk for s in rows} <= set(inserted)


def test_total_and_limit(sam_caller: Caller, rows: list[Specimen]) -> None:
    page = sam_caller.ok("list_specimen", {"filter": {"colour": {"exact": "green"}}, "limit": 3, "include_total": True})
    assert page["total"] == 10
    assert len(page["items"]) == 3
    assert len(sam_caller.ok("list_specimen")["items"]) == 10  # the toolset's page_size
    assert "limit" in sam_caller.refused("list_specimen", {"limit": 51})  # max_page_size 50


# --------------------------------------------------------------------------- a hostile caller


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"filter": {"password": {"exact": "x"}}}, "is not one of ['char', 'colour',"),
        ({"filter": {"kind__name": {"exact": "red"}}}, "'kind__name' is not one of"),
        ({"filter": {"owner": {"exact": 1}}}, "'owner' is not one of"),
        ({"filter": {"char": {"regex": ".*"}}}, "'regex' is not one of ['exact', 'in', 'icontains', 'startswith']"),
        ({"filter": {"integer": {"in": list(range(101))}}}, "is too long"),
        ({"order_by": ["password"]}, "'password' is not one of ['char', '-char',"),
        ({"order_by": ["kind__name"]}, "is not one of"),
        ({"search": "x" * 201}, "is too long"),
        ({"limit": 0}, "less than the minimum of 1"),
        ({"sql": "1; DROP TABLE"}, "Additional properties are not allowed ('sql' was unexpected)"),
    ],
)
def test_the_input_schema_refuses_what_is_outside_the_allowlists(
    sam_caller: Caller, arguments: dict[str, Any], words: str
) -> None:
    message = sam_caller.refused("list_specimen", arguments)
    assert message.startswith("Invalid arguments for tool 'list_specimen'")
    assert words in message


def _direct(user: Any, arguments: dict[str, Any], operation: str = "list") -> Any:
    context = ToolContext(
        arguments=arguments,
        config={"toolset": "drfapp.SpecimenTools"},
        principal=Principal(key=f"user:{user.username}", user=user),
        tool_name=f"{operation}_specimen",
        tool_version=1,
        _progress=lambda *a: None,
        _log=lambda *a: None,
        _cancelled=lambda: False,
    )
    return run(operation, context)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"filter": {"password": {"exact": "x"}}},
            "Filtering on 'password' is not allowed; filterable fields: boolean,",
        ),
        ({"filter": {"kind__name": {"exact": "x"}}}, "Filtering on 'kind__name' is not allowed;"),
        ({"filter": {"char": {"regex": "x"}}}, "filter.char: operator 'regex' is not allowed; use one of: exact, in,"),
        ({"filter": {"integer": {"in": list(range(101))}}}, "filter.integer.in: expected 1 to 100 values, got 101"),
        ({"filter": {"integer": {"gte": "ten"}}}, "filter.integer.gte: “ten” value must be an integer."),
        ({"filter": {"date": {"gte": {"$gt": 1}}}}, "filter.date.gte: expected a single value, not dict"),
        (
            {
                "filter": {
                    "char": {"exact": "a", "in": ["b"], "icontains": "c", "startswith": "d"},
                    "integer": {"gt": 1, "gte": 1, "lt": 9, "lte": 9, "range": [1, 2], "in": [1], "exact": 1},
                }
            },
            "Too many filter conditions; at most 10.",
        ),  # fmt: skip
        ({"order_by": ["password"]}, "Ordering by 'password' is not allowed; orderable fields: char, date,"),
        ({"order_by": ["char", "integer", "date", "size"]}, "order_by takes at most 3 fields"),
        ({"search": "x" * 201}, "search must be a string of at most 200 characters"),
        ({"limit": 10_000}, "limit must be an integer from 1 to 50"),
        ({"cursor": "forged"}, "Invalid cursor"),
    ],
)
def test_the_handler_refuses_the_same_without_the_schema(arguments: dict[str, Any], message: str) -> None:
    """Defence in depth: the handler checks every name itself (a task, a bug in a schema)."""
    user = make_user("sam", *perms("specimen"))
    with pytest.raises(ToolError) as info:
        _direct(user, arguments)
    assert str(info.value).startswith(message), str(info.value)


def test_a_cursor_is_bound_to_its_tool_query_and_caller(client: Any, sam_caller: Caller, rows: list[Specimen]) -> None:
    page = sam_caller.ok("list_specimen", {"order_by": ["integer"], "limit": 2})
    cursor = page["next_cursor"]
    assert cursor
    assert sam_caller.ok("list_specimen", {"order_by": ["integer"], "limit": 2, "cursor": cursor})["items"]
    tampered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    assert sam_caller.refused("list_specimen", {"order_by": ["integer"], "cursor": tampered}).startswith(
        "Invalid cursor"
    )
    assert sam_caller.refused("list_specimen", {"order_by": ["-integer"], "cursor": cursor}).startswith(
        "This cursor belongs to another query"
    )
    make_user("eve", *perms("specimen"))
    eve = Caller(client, "eve")
    assert eve.refused("list_specimen", {"order_by": ["integer"], "cursor": cursor}).startswith("Invalid cursor")
    make_user("kim", *perms("kind"))
    assert Caller(client, "kim").refused("list_kind", {"cursor": cursor}).startswith("Invalid cursor")


def test_older_revisions_get_invalid_arguments_as_a_protocol_error(client: Any, rows: list[Specimen]) -> None:
    """2025-06-18 and older say invalid arguments are -32602 (the core's rule), never a 500."""
    make_user("sam", *perms("specimen"))
    old = Caller(client, "sam", version="2025-06-18")
    _, message, _ = old.mcp.request("tools/call", {"name": "list_specimen", "arguments": {"filter": {"password": {}}}})
    assert message["error"]["code"] == -32602
    assert "'password' is not one of" in message["error"]["message"]
    result = old.call("list_specimen", {"cursor": "forged"})
    assert result["isError"] is True  # what only the handler knows is an isError result everywhere


# --------------------------------------------------------------------------- aggregates


def test_aggregates_count_sum_average_and_extremes_by_group(sam_caller: Caller, rows: list[Specimen]) -> None:
    totals = sam_caller.ok("aggregate_specimen", {"sum": ["integer", "decimal"], "avg": ["integer"], "max": ["date"]})
    assert totals["groups"] == [
        {"count": 30, "sum_integer": 135, "avg_integer": 4.5, "sum_decimal": "108.75", "max_date": "2024-01-09"}
    ]
    by_colour = sam_caller.ok(
        "aggregate_specimen", {"group_by": "colour", "min": ["integer"], "filter": {"integer": {"lt": 10}}}
    )
    assert by_colour["groups"] == [
        {"group": "green", "count": 7, "min_integer": -10},
        {"group": "red", "count": 13, "min_integer": -9},
    ]
    by_size = sam_caller.ok("aggregate_specimen", {"group_by": "size"})["groups"]
    assert [g["group"] for g in by_size] == [1, 2, None]  # NULL is a group too, last
    assert sam_caller.refused("aggregate_specimen", {"sum": ["char"]}).endswith(
        "'char' is not one of ['integer', 'decimal', 'floating', 'big', 'doubled']"
    )
    user = User.objects.get(username="sam")
    with pytest.raises(ToolError, match=r"sum of 'char' is not allowed; sum takes: big, decimal,"):
        _direct(user, {"sum": ["char"]}, "aggregate")
    with pytest.raises(ToolError, match=r"Grouping by 'text' is not allowed; group_by takes: colour, kind,"):
        _direct(user, {"group_by": "text"}, "aggregate")


# --------------------------------------------------------------------------- time and cost


@pytest.mark.parametrize("read_only", [False, True])
def test_the_database_stops_a_query_past_the_timeout(read_only: bool) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    if connection.vendor == "postgresql":
        endless = "SELECT pg_sleep(5)"
    with (
        pytest.raises(QueryTimeout, match=r"longer than 0.2 s"),
        guarded("default", 0.2, read_only=read_only),
        connection.cursor() as c,
    ):
        c.execute(endless)
    with connection.cursor() as c:  # the connection is still good
        c.execute("SELECT 1")
        assert c.fetchone() == (1,)


@pytest.mark.django_db(transaction=True)
def test_a_read_begins_deferred_whatever_the_transaction_mode() -> None:
    """Issue 27: the demo's SQLite ``transaction_mode: IMMEDIATE`` made every guarded read take the
    write lock; a read-only block begins a plain (deferred) transaction, still under its timeout,
    and a write keeps the configured mode (tests/e2e/test_drf_read_lock.py: against a real lock)."""
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    if connection.vendor == "postgresql":
        endless = "SELECT pg_sleep(5)"
    connection.ensure_connection()
    configured = getattr(connection, "transaction_mode", None)
    connection.transaction_mode = "IMMEDIATE"  # the demo's setting (tests run on an in-memory database)
    try:
        _reads_and_a_write(endless)
    finally:
        connection.transaction_mode = configured


def _reads_and_a_write(endless: str) -> None:
    with CaptureQueriesContext(connection) as reads:
        with pytest.raises(QueryTimeout), guarded("default", 0.2, read_only=True), connection.cursor() as c:
            c.execute(endless)
        with guarded("default", 5, read_only=True):
            assert Book.objects.count() == 0
    with CaptureQueriesContext(connection) as writes, guarded("default", 5):
        Book.objects.count()
    if connection.vendor == "sqlite":
        assert [q["sql"] for q in reads if q["sql"].startswith("BEGIN")] == ["BEGIN", "BEGIN"]
        assert connection.transaction_mode == "IMMEDIATE"  # put back
        assert [q["sql"] for q in writes if q["sql"].startswith("BEGIN")] == ["BEGIN IMMEDIATE"]
    else:  # PostgreSQL: the timeout is SET LOCAL in the read's transaction
        assert any("statement_timeout" in q["sql"] for q in reads)
    assert not connection.in_atomic_block


def test_a_slow_list_is_an_error_result(sam_caller: Caller, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp_tools.contrib.drf.compiled import compiled_for

    # PostgreSQL's shortest timeout is 1 ms, and its scan of 2,000 rows of "hay" took 0.75 to
    # 0.87 ms here: the search sometimes finished first. 1,000 characters a row take it ~12 ms.
    Specimen.objects.bulk_create([Specimen(char=f"row {i}", text="hay " * 250) for i in range(2000)])
    monkeypatch.setattr(compiled_for("drfapp.SpecimenTools").toolset, "query_timeout", 1e-9)
    assert "The query ran longer than" in sam_caller.refused("list_specimen", {"search": "needle"})


def _books_page_queries(client: Any, books: int) -> tuple[int, int]:
    seed(books)
    assert Book.objects.count() == books
    root = Caller(client, "root")
    root.ok("list_book", {"limit": 1})  # warm the catalog and the compiled toolset
    with CaptureQueriesContext(connection) as queries:
        page = root.ok("list_book", {"limit": 50, "order_by": ["price"], "filter": {"pages": {"gte": 100}}})
    assert len(page["items"]) == 50
    assert any(row["tags"] for row in page["items"])
    return len(queries), len(page["items"])


def test_a_page_costs_the_same_queries_at_100_and_10000_rows(client: Any) -> None:
    make_user("root", superuser=True)
    small, _ = _books_page_queries(client, 100)
    large, _ = _books_page_queries(client, 10_000)
    assert small == large
    # The test backend's user, the catalog version, a savepoint pair, the page, its tags, the audit
    # row; on PostgreSQL also the statement timeout: read, set, and put back after the savepoint.
    assert large == 7 + (3 if connection.vendor == "postgresql" else 0)
