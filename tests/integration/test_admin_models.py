"""Tool rows: validation on save (admin), versions, catalog version, checks and migrations."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from mcp_tools.checks import check_tools
from mcp_tools.models import CatalogVersion, Tool
from tests.support.admin_forms import tool_form

VALID = tool_form(name="admin.tools.list", description="d", input_schema='{"type": "object"}', output_schema="null")


@pytest.fixture
def staff_client(client: Any, db: None) -> Any:
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    return client


def _add(staff_client: Any, **changes: str) -> Any:
    return staff_client.post("/admin/mcp_tools/tool/add/", {**VALID, **changes})


def test_admin_creates_a_tool_and_records_who(staff_client: Any) -> None:
    """T-5: dotted names are accepted."""
    before = CatalogVersion.current()
    response = _add(staff_client)
    assert response.status_code == 302, response.content[:2000]
    tool = Tool.objects.get(name="admin.tools.list")
    assert tool.created_by is not None
    assert tool.updated_by == tool.created_by
    assert CatalogVersion.current() == before + 1


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "my tool"),
        ("name", "x" * 129),
        ("name", "comma,name"),
        ("input_schema", "null"),
        ("input_schema", '{"type": "array"}'),
        ("input_schema", '{"type": "object", "properties": {"a": {"type": "bogus"}}}'),
        ("input_schema", '{"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}}'),
        ("output_schema", '{"type": 7}'),
        ("handler_key", "no.such.handler"),
        ("handler_config", '{"prefix": 5}'),
        ("icons", "ftp://example.com/icon.png"),
        ("icons", "https://example.com/icon.png huge"),
    ],
)
def test_admin_refuses_invalid_tools(staff_client: Any, field: str, value: str) -> None:
    """T-4, T-5, L-16, T-D7: the form shows an error and nothing is saved."""
    response = _add(staff_client, **{field: value})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors.get(field), response.context["adminform"].form.errors
    assert not Tool.objects.exists()


def test_names_are_case_sensitive(db: None) -> None:
    """T-5: "Foo" and "foo" are distinct tools."""
    Tool.objects.create(name="Foo", handler_key="demo.echo")
    Tool.objects.create(name="foo", handler_key="demo.echo")
    assert Tool.objects.count() == 2


def test_versions_move_on_every_change(db: None) -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo")
    start = CatalogVersion.current()
    assert tool.version == 1
    tool.description = "x"
    tool.save()
    assert tool.version == 2
    Tool.objects.filter(pk=tool.pk).update(enabled=False)
    tool.refresh_from_db()
    assert tool.version == 3
    tool.delete()
    assert CatalogVersion.current() == start + 3


def test_admin_bulk_disable_bumps_versions(staff_client: Any) -> None:
    tools = [Tool.objects.create(name=f"t{i}", handler_key="demo.echo") for i in range(3)]
    before = CatalogVersion.current()
    selected = {"action": "disable_tools", "_selected_action": [t.pk for t in tools]}
    # Disabling is destructive: a confirmation page first, and nothing changes yet.
    response = staff_client.post("/admin/mcp_tools/tool/", selected)
    assert response.status_code == 200
    assert b"Disable tools?" in response.content
    assert Tool.objects.filter(enabled=True).count() == 3
    response = staff_client.post("/admin/mcp_tools/tool/", {**selected, "confirm": "yes"})
    assert response.status_code == 302
    assert not Tool.objects.filter(enabled=True).exists()
    assert CatalogVersion.current() == before + 1
    assert set(Tool.objects.values_list("version", flat=True)) == {2}


def test_check_flags_unregistered_handlers(db: None) -> None:
    Tool.objects.create(name="orphan", handler_key="gone.away")
    Tool.objects.create(name="off", handler_key="gone.away", enabled=False)
    messages = check_tools(databases=["default"])
    assert [(m.id, m.obj) for m in messages] == [("mcp_tools.W001", "orphan")]


def test_demo_loader_is_idempotent(db: None) -> None:
    call_command("load_demo_tools", stdout=io.StringIO())
    versions = dict(Tool.objects.values_list("name", "version"))
    out = io.StringIO()
    call_command("load_demo_tools", stdout=out)
    assert "0 created, 0 updated" in out.getvalue()
    assert dict(Tool.objects.values_list("name", "version")) == versions


def test_no_missing_migrations(db: None) -> None:
    call_command("makemigrations", "--check", "--dry-run", stdout=io.StringIO())
