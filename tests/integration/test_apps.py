"""MCP Apps (io.modelcontextprotocol/ui) through the endpoint: negotiation, _meta.ui, ui:// resources.

Every server message is validated against its revision's schema (``Mcp``), and every ``_meta.ui``
against the extension's types (``tests/spec/ext-apps.schema.json``). UI-1..UI-7.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.models import CatalogVersion, Scope, Tool
from mcp_tools.services import tools_fingerprint
from mcp_tools.types import Principal
from tests.support.mcp_client import APPS_CAPABILITIES, LEGACY, MODERN, Mcp, apps_meta, check_apps

ALL_VERSIONS = (*LEGACY, MODERN)
WEATHER_UI = """<h1 data-mcp-tool="title">Weather</h1>
<p class="city" data-mcp-text="city"></p><p data-mcp-text="conditions"></p>
<p id="desc" data-mcp-tool="description"></p>"""


def _open(mcp: Mcp, version: str, *, apps: bool) -> Mcp:
    if version == MODERN:
        return mcp.modern()
    mcp.initialize(version, capabilities=APPS_CAPABILITIES if apps else {})
    return mcp


def _call(mcp: Mcp, method: str, params: dict[str, Any] | None = None, *, apps: bool) -> dict[str, Any]:
    """A request; on 2026-07-28 its _meta declares MCP Apps when ``apps``."""
    params = dict(params or {})
    if mcp.version == MODERN and apps:
        params["_meta"] = apps_meta()
    _, message, _ = mcp.request(method, params)
    return message


def _give_views() -> None:
    """get_weather gets a view (stored template, CSP, permissions); refresh_weather is app-only."""
    weather = Tool.objects.get(name="get_weather")
    weather.ui_template = WEATHER_UI
    weather.ui_connect_domains = ["https://api.example.com"]
    weather.ui_resource_domains = ["https://*.cdn.example.com"]
    weather.ui_permissions = ["clipboardWrite"]
    weather.ui_prefers_border = True
    weather.full_clean()
    weather.save()
    refresh = Tool(
        name="refresh_weather",
        description="Refresh the weather view.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        output_schema=weather.output_schema,
        handler_key="demo.weather",
        ui_template="<p data-mcp-text='city'></p>",
        ui_visibility="app",
    )
    refresh.full_clean()
    refresh.save()


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_a_client_without_the_extension_sees_the_tools_as_before(mcp: Mcp, version: str) -> None:
    """UI-1, UI-2, UI-3: no capability, no _meta.ui, no app-only tool, no resources methods."""
    _open(mcp, version, apps=False)
    before = _call(mcp, "tools/list", apps=False)["result"]
    _give_views()
    if version != MODERN:
        caps = _open(mcp, version, apps=False).initialize(version)["capabilities"]
        assert "resources" not in caps
        assert "io.modelcontextprotocol/ui" not in caps.get("extensions", {})
    else:
        caps = _call(mcp, "server/discover", apps=False)["result"]["capabilities"]
        assert "resources" not in caps
        assert "io.modelcontextprotocol/ui" not in caps.get("extensions", {})
    after = _call(mcp, "tools/list", apps=False)["result"]
    assert after["tools"] == before["tools"]  # byte for byte the same entries: app-only tool left out
    hidden = _call(mcp, "tools/call", {"name": "refresh_weather", "arguments": {"city": "Paris"}}, apps=False)
    assert hidden["error"]["code"] == -32602
    assert "Unknown tool" in hidden["error"]["message"]
    read = _call(mcp, "resources/read", {"uri": "ui://tools/get_weather"}, apps=False)
    assert read["error"]["code"] == -32601
    shown = _call(mcp, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, apps=False)
    assert shown["result"]["content"][0]["type"] == "text"


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_a_client_with_the_extension_gets_the_views(mcp: Mcp, version: str) -> None:
    """UI-1, UI-2, UI-4: capabilities, _meta.ui on tools, the document and its _meta.ui."""
    _give_views()
    if version != MODERN:
        caps = _open(mcp, version, apps=True).initialize(version, capabilities=APPS_CAPABILITIES)["capabilities"]
    else:
        _open(mcp, version, apps=True)
        caps = _call(mcp, "server/discover", apps=True)["result"]["capabilities"]
    assert caps["resources"] == {}
    assert caps["extensions"]["io.modelcontextprotocol/ui"] == {"mimeTypes": ["text/html;profile=mcp-app"]}
    tools = {t["name"]: t for t in _call(mcp, "tools/list", apps=True)["result"]["tools"]}
    assert tools["get_weather"]["_meta"] == {"ui": {"resourceUri": "ui://tools/get_weather"}}
    assert tools["refresh_weather"]["_meta"] == {
        "ui": {"resourceUri": "ui://tools/refresh_weather", "visibility": ["app"]}
    }
    assert "_meta" not in tools["add"]
    for tool in tools.values():
        if "_meta" in tool:
            check_apps("McpUiToolMeta", tool["_meta"]["ui"])
    result = _call(mcp, "resources/read", {"uri": "ui://tools/get_weather"}, apps=True)["result"]
    (item,) = result["contents"]
    check_apps("UiResourceContents", item)
    check_apps("McpUiResourceMeta", item["_meta"]["ui"])
    assert item["uri"] == "ui://tools/get_weather"
    assert item["mimeType"] == "text/html;profile=mcp-app"
    assert item["_meta"]["ui"] == {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://*.cdn.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": True,
    }
    html = item["text"]
    assert html.startswith("<!DOCTYPE html>")
    assert html.rstrip().endswith("</html>")
    assert WEATHER_UI in html  # served as stored
    assert "window.mcpApp" in html  # the bridge, inlined
    assert '"ui/initialize"' in html
    if version == MODERN:
        assert result["cacheScope"] == "private"
    # The app-only tool runs for this client (its app calls it through the host).
    called = _call(mcp, "tools/call", {"name": "refresh_weather", "arguments": {"city": "Lima"}}, apps=True)
    assert "fog" in called["result"]["content"][0]["text"]


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
def test_resources_list_and_templates(mcp: Mcp, version: str) -> None:
    """UI-6: the views the caller can read; no templates."""
    _give_views()
    _open(mcp, version, apps=True)
    listed = _call(mcp, "resources/list", apps=True)["result"]["resources"]
    assert [r["uri"] for r in listed] == ["ui://tools/get_weather", "ui://tools/refresh_weather"]
    assert listed[0]["mimeType"] == "text/html;profile=mcp-app"
    check_apps("McpUiResourceMeta", listed[0]["_meta"]["ui"])
    assert "_meta" not in listed[1]
    assert _call(mcp, "resources/templates/list", apps=True)["result"]["resourceTemplates"] == []


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_views_the_caller_may_not_read_are_not_found(mcp: Mcp, version: str, header_auth: None) -> None:
    """UI-5: unknown URI, a tool without a view, and a view whose tool is hidden answer alike."""
    _give_views()
    weather = Tool.objects.get(name="get_weather")
    weather.required_scopes.add(Scope.objects.create(name="weather:read"))
    mcp.default_headers["X-Test-User"] = "ann notes:read"  # the demo tool needs it too
    _open(mcp, version, apps=True)
    code = -32602 if version == MODERN else -32002
    for uri in ("ui://tools/get_weather", "ui://tools/add", "ui://tools/nope", "https://example.com/x", "ui://tools/"):
        error = _call(mcp, "resources/read", {"uri": uri}, apps=True)["error"]
        assert (error["code"], error["message"]) == (code, "Resource not found"), uri
    listed = _call(mcp, "resources/list", apps=True)["result"]["resources"]
    assert [r["uri"] for r in listed] == ["ui://tools/refresh_weather"]
    # With the scope the view is readable.
    mcp.default_headers["X-Test-User"] = "ann notes:read weather:read"
    _open(mcp, version, apps=True)
    readable = _call(mcp, "resources/read", {"uri": "ui://tools/get_weather"}, apps=True)
    assert "result" in readable, readable


def test_a_ui_edit_moves_the_catalog_and_what_listeners_see(mcp: Mcp) -> None:
    """An admin's edit of a view is a tool change: the catalog version and the fingerprint
    list_changed listeners compare both move, and the next read serves the new view."""
    _give_views()
    mcp.modern()
    principal = Principal(key="anon")
    version, (fingerprint, _) = CatalogVersion.current(), tools_fingerprint(principal)
    first = _call(mcp, "resources/read", {"uri": "ui://tools/get_weather"}, apps=True)["result"]
    assert WEATHER_UI in first["contents"][0]["text"]
    weather = Tool.objects.get(name="get_weather")
    weather.ui_template = "<h2>get_weather v2</h2>"
    weather.full_clean()
    weather.save()
    assert CatalogVersion.current() > version
    assert tools_fingerprint(principal)[0] != fingerprint
    again = _call(mcp, "resources/read", {"uri": "ui://tools/get_weather"}, apps=True)["result"]
    assert "<h2>get_weather v2</h2>" in again["contents"][0]["text"]


def test_the_extension_needs_the_html_profile(mcp: Mcp) -> None:
    """UI-1: a declaration without text/html;profile=mcp-app among mimeTypes is none."""
    _give_views()
    mcp.initialize("2025-11-25", capabilities={"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": []}}})
    tools = {t["name"]: t for t in mcp.call("tools/list")["tools"]}
    assert "refresh_weather" not in tools
    assert "_meta" not in tools["get_weather"]
