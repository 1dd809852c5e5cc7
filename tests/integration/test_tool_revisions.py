"""Tool revisions: every way a tool changes stores one revision row, in the same transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction

from mcp_tools.models import (
    DISCOVERY_FIELDS,
    EDITABLE_FIELDS,
    UI_FIELDS,
    CatalogVersion,
    Scope,
    Tool,
    ToolRevision,
    revision,
)

pytestmark = pytest.mark.django_db


def _revisions(tool_pk: int) -> list[tuple[str, int | None, list[str]]]:
    return [(r.action, r.version, r.changed) for r in ToolRevision.objects.filter(tool_pk=tool_pk).order_by("pk")]


def test_code_saves_are_recorded_with_the_bumped_version() -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo")
    tool.description = "new"
    tool.save()
    assert tool.version == 2
    # Created: the fields its creator set, not all of them (issue 34: it listed every field).
    assert _revisions(tool.pk) == [("created", 1, ["name", "handler_key"]), ("changed", 2, ["description"])]
    latest = ToolRevision.objects.filter(tool_pk=tool.pk).first()
    assert latest is not None
    assert latest.data["description"] == "new"
    assert sorted(latest.data) == sorted(EDITABLE_FIELDS)  # (jsonb on PostgreSQL orders keys its own way)
    assert (latest.source, latest.user) == ("code", None)


def test_the_created_revision_lists_what_was_set_also_for_rows_stored_with_every_field(admin_client: Any) -> None:
    scope = Scope.objects.create(name="notes:read")
    with revision():
        tool = Tool.objects.create(name="t", title="T", handler_key="demo.echo", task_support="optional")
        tool.required_scopes.add(scope)
    wanted = ["name", "title", "task_support", "handler_key", "required_scopes"]
    assert sorted(_revisions(tool.pk)[0][2]) == sorted(wanted)
    # A row stored before this change listed every field: the admin shows what was set.
    ToolRevision.objects.filter(tool_pk=tool.pk).update(changed=list(EDITABLE_FIELDS))
    page = admin_client.get(f"/admin/mcp_tools/tool/revisions/{tool.pk}/")
    assert sorted(page.context["revisions"][0].changed) == sorted(wanted)
    assert "input_schema" not in page.content.decode()


def test_bulk_updates_store_a_revision_per_row() -> None:
    tools = [Tool.objects.create(name=f"t{i}", handler_key="demo.echo") for i in range(3)]
    Tool.objects.filter(name__in=["t0", "t1"]).update(enabled=False)
    assert _revisions(tools[0].pk)[-1] == ("changed", 2, ["enabled"])
    assert _revisions(tools[1].pk)[-1] == ("changed", 2, ["enabled"])
    assert len(_revisions(tools[2].pk)) == 1


def test_one_block_is_one_revision_per_tool_with_who_and_why() -> None:
    user = get_user_model().objects.create_user("editor")
    scope = Scope.objects.create(name="notes:read")
    with revision(user=user, source="admin", comment="edited"):
        tool = Tool.objects.create(name="t", handler_key="demo.echo")
        tool.required_scopes.add(scope)
        tool.title = "T"
        tool.save()
    rows = list(ToolRevision.objects.filter(tool_pk=tool.pk))
    assert len(rows) == 1
    assert (rows[0].action, rows[0].version, rows[0].user, rows[0].source, rows[0].comment) == (
        "created",
        2,
        user,
        "admin",
        "edited",
    )
    assert rows[0].data["required_scopes"] == ["notes:read"]
    assert rows[0].data["title"] == "T"


def test_scope_changes_from_either_side_and_scope_deletion_are_recorded() -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo")
    scope = Scope.objects.create(name="a")
    tool.required_scopes.add(scope)
    assert _revisions(tool.pk)[-1][2] == ["required_scopes"]
    scope.tools.clear()
    assert ToolRevision.objects.filter(tool_pk=tool.pk).first().data["required_scopes"] == []  # type: ignore[union-attr]
    scope.tools.add(tool)
    scope.delete()
    latest = ToolRevision.objects.filter(tool_pk=tool.pk).first()
    assert latest is not None
    assert (latest.data["required_scopes"], latest.changed) == ([], ["required_scopes"])
    assert len(_revisions(tool.pk)) == 5


def test_deletion_keeps_the_history_and_the_last_state() -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo", description="keep me")
    tool.required_scopes.add(Scope.objects.create(name="s"))
    pk = tool.pk
    tool.delete()
    deleted = ToolRevision.objects.filter(tool_pk=pk).first()
    assert deleted is not None
    assert (deleted.action, deleted.tool_name, deleted.data["description"]) == ("deleted", "t", "keep me")
    assert deleted.data["required_scopes"] == ["s"]
    assert len(_revisions(pk)) == 3


def test_a_rolled_back_change_stores_nothing() -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo")

    def edit_then_fail() -> None:
        with transaction.atomic():
            tool.description = "x"
            tool.save()
            raise RuntimeError

    with pytest.raises(RuntimeError):
        edit_then_fail()
    assert len(_revisions(tool.pk)) == 1


def test_catalog_batch_bumps_once() -> None:
    before = CatalogVersion.current()
    with transaction.atomic(), CatalogVersion.batch():
        for i in range(5):
            Tool.objects.create(name=f"t{i}", handler_key="demo.echo")
    assert CatalogVersion.current() == before + 1
    assert ToolRevision.objects.count() == 5


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_existing_tool_a_baseline_revision() -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("mcp_tools", "0008_handles")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old_apps = executor.loader.project_state(before).apps
    old_tool = old_apps.get_model("mcp_tools", "Tool").objects.create(
        name="old", handler_key="demo.echo", input_schema={"type": "object"}, version=4
    )
    old_tool.required_scopes.add(old_apps.get_model("mcp_tools", "Scope").objects.create(name="s"))
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes("mcp_tools"))
    baseline = ToolRevision.objects.get()
    assert (baseline.tool_pk, baseline.tool_name, baseline.version, baseline.action, baseline.source) == (
        old_tool.pk,
        "old",
        4,
        "created",
        "migration",
    )
    tool = Tool.objects.get()
    current = Tool.snapshots([tool.pk], "default")[tool.pk][2]
    # Columns added after 0009 (0011: approval, 0015: UI, 0018: the views' tools, 0020:
    # discovery) are not in its baseline; a restore keeps them.
    assert baseline.data == {name: value for name, value in current.items() if name in baseline.data}
    assert set(current) - set(baseline.data) == {"requires_approval", "approval_timeout", *UI_FIELDS, *DISCOVERY_FIELDS}
