"""A tool's view (MCP Apps) edited in the admin: form fields, preview, the served document and
the preview host's calls; the edit reaches MCP clients as a new catalog version (UI-1, UI-4, UI-7)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from mcp_tools.models import CatalogVersion, Tool, ToolRevision
from mcp_tools.protocol.apps import host_csp
from tests.integration.test_admin_editor import ADD, FORM, LIST
from tests.support.mcp_client import APPS_CAPABILITIES, Mcp

UI_FORM = {
    **FORM,
    "ui_template": "<h1 data-mcp-tool='title'></h1><p data-mcp-text='text'></p>",
    "ui_tools": "greet",
    "ui_template_name": "",
    "ui_visibility": "",
    "ui_connect_domains": "https://api.example.com",
    "ui_resource_domains": "https://*.cdn.example.com, https://fonts.example.com",
    "ui_frame_domains": "",
    "ui_base_uri_domains": "",
    "ui_permissions": ["clipboardWrite"],
    "ui_prefers_border": "true",
    "ui_domain": "",
}


def test_an_admin_gives_a_tool_a_view_and_clients_get_it(root_client: Client) -> None:
    mcp = Mcp(root_client)
    mcp.initialize("2025-11-25", capabilities=APPS_CAPABILITIES)
    before = CatalogVersion.current()
    response = root_client.post(ADD, UI_FORM)
    assert response.status_code == 302, response.context["adminform"].form.errors
    tool = Tool.objects.get(name="greet")
    assert tool.ui_resource_domains == ["https://*.cdn.example.com", "https://fonts.example.com"]
    assert (tool.ui_permissions, tool.ui_prefers_border) == (["clipboardWrite"], True)
    assert CatalogVersion.current() > before  # list_changed goes out for it, as for any tool edit
    assert "ui_template" in ToolRevision.objects.filter(tool_pk=tool.pk).latest("pk").data
    listed = {t["name"]: t for t in mcp.call("tools/list")["tools"]}
    assert listed["greet"]["_meta"] == {"ui": {"resourceUri": "ui://tools/greet"}}
    (item,) = mcp.call("resources/read", {"uri": "ui://tools/greet"})["contents"]
    assert UI_FORM["ui_template"] in item["text"]  # served as stored
    # The change page previews it in a sandboxed iframe with the CSP a host would build.
    page = root_client.get(f"{LIST}{tool.pk}/change/").content.decode()
    assert "data-mcp-ui-host" in page
    assert "mcp_tools/ui_host.js" in page  # the official AppBridge, bundled (static)
    config = json.loads(page.split('<script id="mcp-ui-config" type="application/json">')[1].split("</script>")[0])
    assert (config["src"], config["trial"]) == (f"{LIST}{tool.pk}/ui/", None)
    # What the host lets the view ask for, and what it tells the view of its tool (toolInfo).
    assert (config["tools"], config["user"], config["connectDomains"]) == (
        ["greet"],
        "root",
        ["https://api.example.com"],
    )
    assert (config["tool"]["name"], config["tool"]["title"]) == ("greet", "Greeter")
    assert "It may send what it receives to: <code>https://api.example.com</code>" in page
    assert tool.ui_tools == ["greet"]
    assert '"resourceUri": "ui://tools/greet"' in page.replace("&quot;", '"')  # the tools/list preview
    document = root_client.get(f"{LIST}{tool.pk}/ui/")
    assert document["Content-Type"] == "text/html; charset=utf-8"
    assert document.content.decode() == item["text"]
    csp = document["Content-Security-Policy"]
    assert csp == host_csp(_meta(item)) + "; sandbox allow-scripts"
    assert "connect-src 'self' https://api.example.com" in csp
    assert "script-src 'self' 'unsafe-inline' https://*.cdn.example.com https://fonts.example.com" in csp
    assert "frame-src 'none'" in csp
    assert document["X-Frame-Options"] == "SAMEORIGIN"


def _meta(item: dict[str, Any]) -> Any:
    from mcp_tools.protocol.apps import UiResourceMeta

    ui = item["_meta"]["ui"]
    return UiResourceMeta.build(ui.get("csp", {}), list(ui.get("permissions", {})), "", ui.get("prefersBorder"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("ui_connect_domains", "'unsafe-eval'", "is not an origin"),
        ("ui_frame_domains", "http://example.com", "only for localhost"),
        ("ui_template", "{% load static %}", "served as written"),
        ("ui_template", "<h1>{{ tool.title }}</h1>", "served as written"),
        ("ui_template", "<!DOCTYPE html><body></body>", "needs a <head>"),
        ("ui_template_name", "mcp_ui/no_such.html", "No template"),
        ("ui_template_name", "admin/base.html", "UI_TEMPLATE_PREFIXES"),
        ("ui_tools", "a b a", "more than once"),
        ("ui_domain", "a b", "is not a host name"),
    ],
)
def test_the_ui_fields_refuse_bad_values(root_client: Client, field: str, value: str, message: str) -> None:
    data = {**UI_FORM, field: value}
    if field == "ui_template_name":
        data["ui_template"] = ""
    response = root_client.post(ADD, data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert message in " ".join(errors.get(field, [])), errors


def test_try_it_feeds_the_view_and_its_calls_go_through_the_admin(root_client: Client) -> None:
    assert root_client.post(ADD, UI_FORM).status_code == 302
    tool = Tool.objects.get(name="greet")
    page = root_client.post(f"{LIST}{tool.pk}/try/", {"arguments": '{"text": "x"}', "protocol_version": "2025-11-25"})
    html = page.content.decode()
    assert "data-mcp-ui-host" in html
    config = json.loads(html.split('<script id="mcp-ui-config" type="application/json">')[1].split("</script>")[0])
    assert config["callUrl"] == f"{LIST}{tool.pk}/ui/call/"
    assert config["protocolVersion"] == "2025-11-25"
    trial = config["trial"]
    assert trial["arguments"] == {"text": "x"}
    assert trial["result"]["content"][0]["text"] == "hi x"
    # The preview host's tools/call: a Try it call, answered with the JSON-RPC response.
    answer = root_client.post(
        f"{LIST}{tool.pk}/ui/call/", {"name": "greet", "arguments": {"text": "y"}}, content_type="application/json"
    ).json()
    assert answer["result"]["content"][0]["text"] == "hi y"
    refused = root_client.post(f"{LIST}{tool.pk}/ui/call/", "[]", content_type="application/json")
    assert refused.status_code == 400
    assert root_client.get(f"{LIST}{tool.pk}/ui/call/").status_code == 405


def test_a_tool_without_a_view_has_no_preview(root_client: Client) -> None:
    assert root_client.post(ADD, FORM).status_code == 302
    tool = Tool.objects.get(name="greet")
    assert root_client.get(f"{LIST}{tool.pk}/ui/").status_code == 404
    assert "data-mcp-ui-host" not in root_client.get(f"{LIST}{tool.pk}/change/").content.decode()


def test_a_view_that_calls_its_own_tool_follows_a_rename(root_client: Client) -> None:
    assert root_client.post(ADD, UI_FORM).status_code == 302
    tool = Tool.objects.get(name="greet")
    assert tool.ui_tools == ["greet"]
    response = root_client.post(f"{LIST}{tool.pk}/change/", {**UI_FORM, "name": "hello"})
    assert response.status_code == 302, response.context["adminform"].form.errors
    tool.refresh_from_db()
    assert (tool.name, tool.ui_tools) == ("hello", ["hello"])


@pytest.mark.django_db(transaction=True)
def test_the_migration_declares_the_calls_of_the_generated_views() -> None:
    """0018: rows of the generated list and form views (which page and save through their own
    tool) declare it, so their previews keep working before the next mcp_sync_toolsets."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("mcp_tools", "0017_handler_key_help")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps.get_model("mcp_tools", "Tool")
    rows = {
        "list_x": "mcp_tools/drf/ui/list.html",
        "create_x": "mcp_tools/drf/ui/form.html",
        "get_x": "mcp_tools/drf/ui/detail.html",
        "other": "",
    }
    for name, template_name in rows.items():
        old.objects.create(name=name, handler_key="demo.echo", ui_template_name=template_name)
    old.objects.create(name="mine", handler_key="demo.echo", ui_template="<p>x</p>")
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes("mcp_tools"))
    declared = dict(Tool.objects.values_list("name", "ui_tools"))
    assert declared == {"list_x": ["list_x"], "create_x": ["create_x"], "get_x": [], "other": [], "mine": []}
