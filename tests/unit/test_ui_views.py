"""Tool views (MCP Apps): stored views served as written, templates shipped in code rendered, the
document and its bridge, the UI fields' checks (UI-4, UI-7)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from mcp_tools.models import Tool
from mcp_tools.models.tools import MAX_UI_TEMPLATE_CHARS
from mcp_tools.protocol import apps as apps_wire
from mcp_tools.ui import UiSource, render_document, template_problems
from mcp_tools.ui.render import UiRenderError, head_end, is_document, reset, template_syntax

_SOURCE = {"pk": 1, "version": 1, "name": "t", "title": "<b>T</b>", "description": "d", "resource_uri": "ui://tools/t"}


def _render(template: str = "", **extra: Any) -> str:
    reset()
    return render_document(UiSource(**{**_SOURCE, **extra, "template": template}))


# ------------------------------------------------------------------ stored views: documents, not templates


@pytest.mark.parametrize(
    "template",
    [
        "{% load static %}",
        "{% include 'admin/base.html' %}",
        "{% extends 'admin/base.html' %}",
        "{% debug %}",
        "{% url 'admin:index' %}",
        "{% csrf_token %}",
        "{% autoescape off %}{{ tool.title }}{% endautoescape %}",
        "{{ tool.title|safe }}",
        "{% lorem 100000 w %}",
        "{{ tool.name|make_list|join:',' }}",
        "{# a comment #}",
    ],
)
def test_a_stored_view_with_template_syntax_is_refused_and_served_as_text(template: str) -> None:
    """Issue 32: what the old sandbox refused (or ran) is text now. The form says so; a row
    stored before (served anyway) reaches the client as those characters, never rendered."""
    problems = template_problems(template, "")
    assert list(problems) == ["ui_template"], template
    assert "served as written" in problems["ui_template"][0]
    assert template in _render(template)


def test_a_stored_view_is_served_byte_for_byte() -> None:
    template = "<p>{{ not a variable }}</p>\n<script>var a = {b: {c: 1}};</script>\u00e9"
    html = _render(template)
    assert f"<body>\n{template}\n</body>" in html
    assert template_syntax("<script>var a = {b: {c: 1}};</script>") is None  # JS braces are not syntax


def test_where_the_template_syntax_is_said() -> None:
    assert template_syntax("a\nb {{ tool.title }}") == "{{ tool.title }} on line 2"
    assert template_syntax("{% if x %}" + "y" * 100) == "{% if x %} on line 1"
    assert template_syntax("{{ " + "x" * 100 + " }}") == "{{ " + "x" * 34 + "... on line 1"
    assert template_syntax("{{ a\n}}") is None  # a tag spans one line, as Django's lexer reads it
    assert template_syntax("{% x }} {# y") is None


def test_reading_a_stored_view_takes_one_pass_over_it() -> None:
    """Django's own tag pattern, a doctype pattern of repeated comments and a <head> pattern were
    quadratic or worse on a hostile view of MAX_UI_TEMPLATE_CHARS characters."""
    hostile = [
        "{{" * (MAX_UI_TEMPLATE_CHARS // 2),
        "{{ " + "x" * (MAX_UI_TEMPLATE_CHARS - 3),
        "<!--a-->" * (MAX_UI_TEMPLATE_CHARS // 8),
        "<!DOCTYPE html>" + "<head " * ((MAX_UI_TEMPLATE_CHARS - 15) // 6),
    ]
    started = time.process_time()
    for text in hostile:
        template_problems(text, "")
        is_document(text)
        head_end(text)
    assert time.process_time() - started < 1.0


def test_a_fragment_becomes_a_complete_document_with_the_bridge() -> None:
    html = _render("<p>hi</p>")
    assert html.startswith("<!DOCTYPE html>\n<html")
    assert html.index("window.mcpApp") < html.index("<body>") < html.index("<p>hi</p>")
    assert "</script" not in html.split("<script>", 1)[1].split("</script>")[0]  # the inlined code cannot end it


def test_a_complete_document_gets_the_bridge_in_its_head() -> None:
    html = _render("<!-- x --><!doctype html><html><head lang=en><title>x</title></head><body>b</body></html>")
    assert html.startswith("<!-- x --><!doctype html><html><head lang=en><script>")
    assert html.count("<!doctype html") == 1
    assert "<body>b</body>" in html
    assert is_document("  <!-- a --> \n<!DOCTYPE  html>")
    assert not is_document("<!-- a <!DOCTYPE html>")
    assert template_problems("<!DOCTYPE html><body>no head</body>", "") == {
        "ui_template": ["A complete document needs a <head> (the app bridge goes there)."]
    }
    with pytest.raises(UiRenderError, match="head"):
        _render("<!DOCTYPE html><body>no head</body>")


def test_views_are_cached_per_tool_version() -> None:
    reset()
    first = render_document(UiSource(**{**_SOURCE, "template": "<p>one</p>"}))
    assert "<p>one</p>" in first
    # Same (pk, version): the cached document, whatever the source says now.
    assert render_document(UiSource(**{**_SOURCE, "template": "<p>two</p>"})) is first
    assert "<p>two</p>" in render_document(UiSource(**{**_SOURCE, "version": 2, "template": "<p>two</p>"}))


# ------------------------------------------------------------------ templates shipped in code


def test_a_template_path_names_a_template_under_the_allowed_folders(settings: Any) -> None:
    """UI_TEMPLATE_PREFIXES: an admin names a view shipped in code, not any template of the site."""
    assert template_problems("", "mcp_tools/drf/ui/list.html") == {}
    assert template_problems("", "mcp_ui/test_view.html") == {}
    assert template_problems("", "mcp_ui/no_such.html") == {
        "ui_template_name": ["No template 'mcp_ui/no_such.html' in the site's templates."]
    }
    for outside in (
        "mcp_tools/admin/tool_base.html",
        "admin/base.html",
        "mcp_ui/../admin/base.html",
        "mcp_ui/./test_view.html",
        "/mcp_ui/test_view.html",
        "mcp_ui\\test_view.html",
    ):
        (problem,) = template_problems("", outside)["ui_template_name"]
        assert "UI_TEMPLATE_PREFIXES" in problem, outside
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "UI_TEMPLATE_PREFIXES": ["mcp_tools/admin/"]}
    assert template_problems("", "mcp_tools/admin/tool_base.html") == {}
    assert "UI_TEMPLATE_PREFIXES" in template_problems("", "mcp_ui/test_view.html")["ui_template_name"][0]


def test_a_template_shipped_in_code_is_rendered_with_the_tool_s_context() -> None:
    """Issue 32, finding 6: join works in a rendered view (it always failed in the old sandbox),
    and a template calling dict.clear empties the view's copy of a schema, not the catalog's."""
    schema = {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]}
    html = _render(template_name="mcp_ui/test_view.html", input_schema=schema)
    assert "<h1>&lt;b&gt;T&lt;/b&gt;</h1>" in html  # autoescaped
    assert '<p class="names">a, b</p>' in html
    assert '<p class="cleared">0</p>' in html
    assert schema == {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]}


def test_a_template_path_outside_the_folders_is_not_rendered(settings: Any) -> None:
    """A row stored before the setting changed: not rendered, the reason said to the admin."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "UI_TEMPLATE_PREFIXES": ["elsewhere/"]}
    with pytest.raises(UiRenderError, match="UI_TEMPLATE_PREFIXES"):
        _render(template_name="mcp_ui/test_view.html")


def test_the_prefixes_setting_is_checked(settings: Any) -> None:
    from mcp_tools.conf import mcp_settings

    for wrong in (["mcp_ui"], ["/abs/"], ["a/../b/"], "mcp_ui/"):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "UI_TEMPLATE_PREFIXES": wrong}
        assert any("UI_TEMPLATE_PREFIXES" in p for p in mcp_settings.problems()), wrong


# ------------------------------------------------------------------ the UI fields


def _tool(**fields: Any) -> Tool:
    return Tool(name="t", handler_key="demo.noop", **fields)


def _errors(tool: Tool) -> dict[str, list[str]]:
    try:
        tool.clean()
    except ValidationError as exc:
        return exc.message_dict
    return {}


def test_the_ui_fields_are_checked() -> None:
    """UI-7: each CSP value is an origin, never a keyword or a directive; known permissions only."""
    errors = _errors(
        _tool(
            ui_template="<p>x</p>",
            ui_connect_domains=["https://api.example.com", "'unsafe-eval'", "https://a.com; script-src *"],
            ui_resource_domains=["http://cdn.example.com"],
            ui_frame_domains="https://x.com",
            ui_base_uri_domains=["https://*.example.com", "http://localhost:8000"],
            ui_permissions=["camera", "usb"],
            ui_domain="not a domain",
        )
    )
    assert len(errors["ui_connect_domains"]) == 2
    assert "only for localhost" in errors["ui_resource_domains"][0]
    assert errors["ui_frame_domains"] == ["A list of origins."]
    assert "ui_base_uri_domains" not in errors
    assert "ui_permissions" in errors
    assert "ui_domain" in errors
    assert _errors(_tool(ui_template="<p>x</p>", ui_template_name="x.html"))["ui_template_name"]
    assert _errors(_tool(ui_visibility="app"))["ui_visibility"]
    assert _errors(_tool(ui_template="{% load i18n %}"))["ui_template"]
    assert _errors(_tool(ui_template="<p data-mcp-tool='title'></p>", ui_permissions=["camera"])) == {}


def test_the_tools_a_view_may_call_are_tool_names() -> None:
    view = {"ui_template": "<p>x</p>"}
    assert _errors(_tool(**view, ui_tools=["list_book", "a.b-c_d"])) == {}
    assert _errors(_tool(**view, ui_tools="list_book"))["ui_tools"] == ["A list of tool names."]
    assert _errors(_tool(**view, ui_tools=[1]))["ui_tools"] == ["A list of tool names."]
    assert _errors(_tool(**view, ui_tools=["no spaces", "ok", "x\n"]))["ui_tools"] == [
        "'no spaces' is not a tool name.",
        "'x\\n' is not a tool name.",
    ]
    assert _errors(_tool(**view, ui_tools=["a", "b", "a"]))["ui_tools"] == ["Named more than once: a."]
    assert "At most 32" in _errors(_tool(**view, ui_tools=[f"t{i}" for i in range(33)]))["ui_tools"][0]
    assert "give the tool a UI" in _errors(_tool(ui_tools=["a"]))["ui_tools"][0]


def test_the_wire_shapes_of_a_view() -> None:
    link = apps_wire.UiLink("ui://tools/t")
    assert link.meta() == {"ui": {"resourceUri": "ui://tools/t"}}
    assert apps_wire.UiLink("ui://tools/t", ("app",)).meta()["ui"]["visibility"] == ["app"]
    meta = apps_wire.UiResourceMeta.build({"frameDomains": ["https://a.com"], "connectDomains": []}, ["camera"])
    assert meta.meta() == {"ui": {"csp": {"frameDomains": ["https://a.com"]}, "permissions": {"camera": {}}}}
    assert apps_wire.UiResourceMeta().meta() is None
    assert apps_wire.parse_ui_uri("ui://tools/a.b") == "a.b"
    assert apps_wire.parse_ui_uri("ui://other/a") is None
    assert apps_wire.client_declared({"extensions": {apps_wire.EXTENSION: {"mimeTypes": [apps_wire.MIME_TYPE]}}})
    assert not apps_wire.client_declared({"extensions": {apps_wire.EXTENSION: {}}})
    assert not apps_wire.client_declared({"extensions": []})


def test_a_view_at_the_size_limit_fits_the_document_bound() -> None:
    """MAX_DOCUMENT_BYTES leaves room for a stored view at its size limit, in 4-byte characters."""
    html = _render("\U0001f600" * MAX_UI_TEMPLATE_CHARS)
    assert len(html.encode()) < 2_000_000
