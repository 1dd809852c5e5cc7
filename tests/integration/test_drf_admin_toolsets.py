"""Model toolsets defined in the admin, with no code: saving one checks it, writes its tool rows
in the same transaction (so list_changed fires), and every process rebuilds it by revision."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.core.management import call_command

from mcp_tools.contrib.drf import site
from mcp_tools.contrib.drf.compiled import _compiled
from mcp_tools.contrib.drf.models import ToolsetDefinition
from mcp_tools.models import CatalogVersion, Tool
from mcp_tools.signals import catalog_changed
from tests.drfapp.models import Specimen
from tests.drfapp.testing import Caller, make_user, perms

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("synced")]


def _define(**changes: Any) -> ToolsetDefinition:
    values: dict[str, Any] = {
        "name": "mine",
        "model": ContentType.objects.get_for_model(Specimen),
        "fields": ["id", "char", "integer", "owner"],
        "operations": ["list", "get", "create"],
        "filter_fields": {"integer": ["gte", "lt"]},
        "ordering_fields": ["integer"],
        "owner_field": "owner",
        "required_scopes": {"create": ["mine:write"]},
        **changes,
    }
    definition = ToolsetDefinition(**values)
    definition.full_clean()
    definition.save()
    return definition


def test_saving_a_definition_writes_its_rows_and_moves_the_catalog() -> None:
    heard: list[Any] = []

    def hear(sender: Any, **kwargs: Any) -> None:
        heard.append(sender)

    catalog_changed.connect(hear, weak=False, dispatch_uid="test-heard")
    try:
        before = CatalogVersion.current()
        _define()
    finally:
        catalog_changed.disconnect(dispatch_uid="test-heard")
    assert CatalogVersion.current() > before
    assert heard  # the list_changed fan-out hears catalog_changed and publishes after commit
    tools = {t.name: t for t in Tool.objects.filter(handler_config__toolset="admin.mine")}
    assert set(tools) == {"list_mine", "get_mine", "create_mine"}
    assert tools["list_mine"].handler_config == {"toolset": "admin.mine", "revision": 1}
    assert {s.name for s in tools["create_mine"].required_scopes.all()} == {"mine:write"}
    assert tools["get_mine"].output_schema["properties"]["owner"]["readOnly"] is True  # owner: never handed over


def test_an_invalid_definition_is_refused_with_the_reason() -> None:
    with pytest.raises(ValidationError) as info:
        _define(filter_fields={"password": ["exact"]})
    assert "filter_fields: Specimen has no field" not in str(info.value)
    assert "'password'" in str(info.value)
    with pytest.raises(ValidationError, match="owner_field 'kind' does not point to auth.User"):
        _define(owner_field="kind")
    with pytest.raises(ValidationError, match="operations"):
        _define(operations=["list", "truncate"])
    assert not ToolsetDefinition.objects.exists()
    assert not Tool.objects.filter(handler_config__toolset="admin.mine").exists()


def test_its_tools_run_as_the_caller_on_the_callers_rows(client: Any) -> None:
    alice = make_user("alice", *perms("specimen"))
    bob = make_user("bob", *perms("specimen"))
    Specimen.objects.create(char="bob's", integer=1, owner=bob)
    _define()
    as_alice = Caller(client, "alice")
    assert "('owner' was unexpected)" in as_alice.refused("create_mine", {"char": "x", "owner": bob.pk})
    made = as_alice.ok("create_mine", {"char": "mine", "integer": 5})
    assert made["owner"] == alice.pk  # the owner field is read-only: the caller owns what it makes
    assert [row["char"] for row in as_alice.ok("list_mine", {"filter": {"integer": {"gte": 0}}})["items"]] == ["mine"]
    assert Caller(client, "bob").ok("list_mine")["items"][0]["char"] == "bob's"


def test_an_edit_rewrites_the_rows_and_every_process_follows_the_revision(client: Any) -> None:
    make_user("alice", *perms("specimen"))
    definition = _define()
    Specimen.objects.create(char="x", integer=1, text="hello", owner=None)
    version = Tool.objects.get(name="list_mine").version
    definition.fields = ["id", "char", "text"]
    definition.owner_field = ""
    definition.filter_fields = definition.ordering_fields = []
    definition.full_clean()
    definition.save()
    tool = Tool.objects.get(name="list_mine")
    assert tool.handler_config == {"toolset": "admin.mine", "revision": 2}
    assert tool.version > version
    assert set(tool.output_schema["properties"]["items"]["items"]["properties"]) == {"id", "char", "text"}
    # Another process knows only revision 1 (or nothing): it rebuilds the toolset from the row.
    site._defined.clear()
    _compiled.clear()
    rows = Caller(client, "alice").ok("list_mine")["items"]
    assert rows == [{"id": rows[0]["id"], "char": "x", "text": "hello"}]


def test_disabling_or_deleting_a_definition_retires_its_rows() -> None:
    definition = _define()
    definition.enabled = False
    definition.save()
    assert not Tool.objects.filter(handler_config__toolset="admin.mine", enabled=True).exists()
    definition.enabled = True
    definition.save()
    assert Tool.objects.filter(handler_config__toolset="admin.mine", enabled=True).count() == 3
    definition.delete()
    assert not Tool.objects.filter(handler_config__toolset="admin.mine").exists()


def test_the_sync_command_keeps_admin_definitions(client: Any) -> None:
    _define()
    out = io.StringIO()
    call_command("mcp_sync_toolsets", stdout=out)
    assert "0 created, 0 updated" in out.getvalue()
    assert Tool.objects.filter(handler_config__toolset="admin.mine", enabled=True).count() == 3


def test_the_admin_form_defines_a_toolset(admin_client: Any) -> None:
    assert admin_client.get("/admin/mcp_tools_drf/toolsetdefinition/add/").status_code == 200
    data = {
        "name": "viaform",
        "model": ContentType.objects.get_for_model(Specimen).pk,
        "enabled": "on",
        "operations": '["list"]',
        "required_scopes": "[]",
        "fields": '["id", "char"]',
        "read_only_fields": "[]",
        "lookup_field": "pk",
        "owner_field": "",
        "filter_fields": '{"nope": ["exact"]}',
        "search_fields": "[]",
        "ordering_fields": "[]",
        "ordering": "[]",
        "aggregate_fields": "[]",
        "group_by_fields": "[]",
        "page_size": "20",
        "max_page_size": "100",
        "actions": "[]",
        "destructive_actions": "[]",
        "confirm_destructive": "ask",
    }
    refused = admin_client.post("/admin/mcp_tools_drf/toolsetdefinition/add/", data)
    assert refused.status_code == 200
    assert "has no field &#x27;nope&#x27;" in refused.content.decode()
    saved = admin_client.post("/admin/mcp_tools_drf/toolsetdefinition/add/", {**data, "filter_fields": "{}"})
    assert saved.status_code == 302
    assert Tool.objects.get(name="list_viaform").handler_config == {"toolset": "admin.viaform", "revision": 1}
