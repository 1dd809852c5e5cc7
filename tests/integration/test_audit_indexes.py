"""The audit table keeps no index of its own on created_at or tool_name (migration 0021).

The two usage indexes lead with those columns and serve the lookups the single-column ones did
(the retention purge, the changelist's default order and its tool filter), while every index
costs each call's audit row one more insert. Migrating back makes them again, by the names
Django gave them; on SQLite without copying the table. A database the audit table is not
migrated on (a router sends it elsewhere) is left alone.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from mcp_tools.models import AuditEvent

TABLE = AuditEvent._meta.db_table
WIDE = {"mcp_audit_usage_time", "mcp_audit_usage_tool"}


def _single_column_indexes() -> dict[str, str]:
    """Each non-unique index of the audit table over one column: its name -> the column."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, TABLE)
    return {
        name: info["columns"][0]
        for name, info in found.items()
        if info["index"] and not info["unique"] and not info["primary_key"] and len(info["columns"]) == 1
    }


@pytest.mark.django_db
def test_no_single_column_index_on_the_columns_the_wide_indexes_lead_with() -> None:
    with connection.cursor() as cursor:
        names = set(connection.introspection.get_constraints(cursor, TABLE))
    assert names >= WIDE
    columns = set(_single_column_indexes().values())
    assert not columns & {"created_at", "tool_name"}, _single_column_indexes()
    # The indexes people look a caller up by stay.
    assert columns >= {"principal_key", "client_id", "user_id", "outcome"}


@pytest.fixture
def back_to_0020() -> Iterator[None]:
    call_command("migrate", "mcp_tools", "0020", verbosity=0)
    try:
        yield
    finally:
        call_command("migrate", "mcp_tools", verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_migrating_back_makes_the_indexes_again_and_forward_drops_them(back_to_0020: None) -> None:
    before = _single_column_indexes()
    assert {"created_at", "tool_name"} <= set(before.values()), before
    rows = AuditEvent.objects.count()
    call_command("migrate", "mcp_tools", "0021", verbosity=0)
    after = _single_column_indexes()
    assert not set(after.values()) & {"created_at", "tool_name"}, after
    assert set(before) - set(after) == {n for n, column in before.items() if column in ("created_at", "tool_name")}
    assert AuditEvent.objects.count() == rows


@pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans")
@pytest.mark.django_db
def test_the_purge_and_the_changelist_still_search_an_index() -> None:
    now = timezone.now()
    AuditEvent.objects.bulk_create(
        AuditEvent(created_at=now - timedelta(hours=i), principal_key="p", tool_name=f"t{i % 5}", outcome="ok")
        for i in range(200)
    )
    queries = {
        "purge": AuditEvent.objects.filter(created_at__lt=now - timedelta(days=1)).values("pk"),
        "changelist": AuditEvent.objects.order_by("-created_at")[:100],
        "by tool": AuditEvent.objects.filter(tool_name="t1").order_by("-created_at")[:100],
    }
    for what, query in queries.items():
        sql, params = query.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = [row[-1] for row in cursor.fetchall()]
        assert any("INDEX mcp_audit_usage_" in step for step in plan), (what, plan)
        assert not any(step.startswith("SCAN mcp_tools_auditevent") and "INDEX" not in step for step in plan), (
            what,
            plan,
        )


class AuditElsewhere:
    """A router that migrates the audit table on another database only."""

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool | None:
        return False if model_name == "auditevent" else None


class _Editor:
    """Records what the migration asks of a schema editor."""

    def __init__(self) -> None:
        self.connection = connection
        self.asked: list[str] = []
        self.quote_name = connection.ops.quote_name

    def _create_index_name(self, *args: Any, **kwargs: Any) -> str:
        return "name"

    def _create_index_sql(self, *args: Any, **kwargs: Any) -> str:
        return "CREATE INDEX"

    def execute(self, sql: Any) -> None:
        self.asked.append(str(sql))

    def alter_field(self, *args: Any) -> None:
        self.asked.append("alter_field")


@pytest.mark.django_db
def test_the_migration_leaves_a_database_the_audit_is_not_routed_to(settings: Any) -> None:
    migration = importlib.import_module("mcp_tools.migrations.0021_audit_single_indexes")
    routed = _Editor()
    migration.drop(apps, routed)
    migration.restore(apps, routed)
    assert len(routed.asked) == 4  # two columns each way
    settings.DATABASE_ROUTERS = [f"{__name__}.AuditElsewhere"]
    elsewhere = _Editor()
    migration.drop(apps, elsewhere)
    migration.restore(apps, elsewhere)
    assert elsewhere.asked == []
