"""Generated MCP Apps views of model toolsets (``ModelToolset.ui``): the demo's books get a table
for list_book and forms for create_book/update_book, built from the tools' schemas (UI-2, UI-4)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command

from mcp_tools.contrib.drf import ModelToolset
from mcp_tools.models import Tool
from tests.drfapp.models import Specimen
from tests.support.mcp_client import APPS_CAPABILITIES, Mcp, check_apps


@pytest.fixture
def library_mcp(client: Any, settings: Any, db: None) -> Mcp:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "tests.support.auth.UserHeaderBackend"}
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    call_command("seed_library", "--books", "12", stdout=io.StringIO())
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    mcp = Mcp(client)
    mcp.default_headers["X-Test-User"] = "root library:read library:write"
    mcp.initialize("2025-11-25", capabilities=APPS_CAPABILITIES)
    return mcp


def test_the_book_toolset_gets_generated_views(library_mcp: Mcp) -> None:
    tools = {t["name"]: t for t in library_mcp.call("tools/list")["tools"]}
    views = {name: t["_meta"]["ui"]["resourceUri"] for name, t in tools.items() if "_meta" in t}
    assert views == {name: f"ui://tools/{name}" for name in ("list_book", "get_book", "create_book", "update_book")}
    for name in views:
        check_apps("McpUiToolMeta", tools[name]["_meta"]["ui"])
    assert Tool.objects.get(name="list_book").ui_template_name == "mcp_tools/drf/ui/list.html"
    (item,) = library_mcp.call("resources/read", {"uri": "ui://tools/list_book"})["contents"]
    check_apps("UiResourceContents", item)
    html = item["text"]
    assert 'window.mcpViews["list"](' in html
    assert '<script id="mcp-tool" type="application/json">' in html
    assert '"order_by"' in html  # the schemas the view is built from
    (form,) = library_mcp.call("resources/read", {"uri": "ui://tools/create_book"})["contents"]
    assert 'window.mcpViews["form"](' in form["text"]
    # The text fallback is unchanged: the view only reads structuredContent.
    result = library_mcp.call("tools/call", {"name": "list_book", "arguments": {"limit": 5}})
    assert len(result["structuredContent"]["items"]) == 5
    assert result["content"][0]["type"] == "text"


def test_a_view_written_in_the_admin_replaces_the_generated_one(library_mcp: Mcp) -> None:
    tool = Tool.objects.get(name="get_book")
    tool.ui_template_name = ""
    tool.ui_template = "<p>mine</p>"
    tool.full_clean()
    tool.save()
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    tool.refresh_from_db()
    assert (tool.ui_template, tool.ui_template_name) == ("<p>mine</p>", "")


def test_the_generated_views_declare_the_tool_they_call(library_mcp: Mcp) -> None:
    """Issue 32: a view calls only the tools it declares. The list and form views call their own
    tool again (a page, a save): the sync declares it, under the row's name if an admin renamed it."""
    names = ["list_book", "get_book", "create_book", "update_book", "delete_book"]
    declared = dict(Tool.objects.filter(name__in=names).values_list("name", "ui_tools"))
    assert declared == {
        "list_book": ["list_book"],
        "get_book": [],
        "create_book": ["create_book"],
        "update_book": ["update_book"],
        "delete_book": [],
    }
    Tool.objects.filter(name="list_book").update(name="books.list")
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    assert Tool.objects.get(name="books.list").ui_tools == ["books.list"]


def test_ui_names_operations_of_the_toolset() -> None:
    toolset = type("T", (ModelToolset,), {"model": Specimen, "fields": ["id"], "ui": ["list", "create"]})
    with pytest.raises(ImproperlyConfigured, match="ui:"):
        toolset().check()
    ok = type("T", (ModelToolset,), {"model": Specimen, "fields": ["id"], "ui": ["list"]})()
    ok.check()
    assert (ok.ui_template_name("list"), ok.ui_template_name("get")) == ("mcp_tools/drf/ui/list.html", "")
