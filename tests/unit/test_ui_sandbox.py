"""Tool views (MCP Apps): the sandboxed template engine, the document, the UI fields' checks (UI-4, UI-7)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from mcp_tools.models import Tool
from mcp_tools.protocol import apps as apps_wire
from mcp_tools.ui import UiSource, render_document, template_problems
from mcp_tools.ui.render import UiRenderError, reset

_SOURCE = {"pk": 1, "version": 1, "name": "t", "title": "<b>T</b>", "description": "d", "resource_uri": "ui://tools/t"}


def _render(template: str, **extra: Any) -> str:
    reset()
    return render_document(UiSource(**{**_SOURCE, **extra, "template": template}))


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
        "{{ tool.title|safeseq }}",
        "{% lorem 100000 w %}",
        "{{ tool.title|ljust:'100000000' }}",
        "{% if %}",
    ],
)
def test_the_sandbox_refuses_what_reaches_beyond_the_template(template: str) -> None:
    problems = template_problems(template, "")
    assert list(problems) == ["ui_template"], template
    assert problems["ui_template"][0].startswith("Template error")


def test_what_the_sandbox_allows_renders_escaped() -> None:
    template = "{% for k, v in tool.items %}{% if k == 'title' %}<i>{{ v|upper }}</i>{% endif %}{% endfor %}"
    assert template_problems(template, "") == {}
    html = _render(template)
    assert "<i>&lt;B&gt;T&lt;/B&gt;</i>" in html  # autoescape on, whatever the filter
    assert template_problems("{{ tool.input_schema|json_script:'schema' }}", "") == {}


def test_a_fragment_becomes_a_complete_document_with_the_bridge() -> None:
    html = _render("<p>hi</p>")
    assert html.startswith("<!DOCTYPE html>\n<html")
    assert html.index("window.mcpApp") < html.index("<body>") < html.index("<p>hi</p>")
    assert "</script" not in html.split("<script>", 1)[1].split("</script>")[0]  # the inlined code cannot end it


def test_a_complete_document_gets_the_bridge_in_its_head() -> None:
    html = _render("<!doctype html><html><head><title>x</title></head><body>{{ tool.name }}</body></html>")
    assert html.startswith("<!doctype html><html><head><script>")
    assert html.count("<!doctype html") == 1
    assert "<body>t</body>" in html
    with pytest.raises(Exception, match="head"):
        _render("<!DOCTYPE html><body>no head</body>")


def test_views_are_cached_per_tool_version() -> None:
    reset()
    first = render_document(UiSource(**{**_SOURCE, "template": "<p>one</p>"}))
    assert "<p>one</p>" in first
    # Same (pk, version): the cached document, whatever the source says now.
    assert render_document(UiSource(**{**_SOURCE, "template": "<p>two</p>"})) is first
    assert "<p>two</p>" in render_document(UiSource(**{**_SOURCE, "version": 2, "template": "<p>two</p>"}))


def test_a_template_path_names_a_site_template() -> None:
    assert template_problems("", "no/such/template.html") == {
        "ui_template_name": ["No template 'no/such/template.html' in the site's templates."]
    }
    assert template_problems("", "mcp_tools/admin/tool_base.html") == {}


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
    assert _errors(_tool(ui_template="<p>{{ tool.name }}</p>", ui_permissions=["camera"])) == {}


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


# ------------------------------------------------------------------ work and output are bounded (UI-4)


def test_a_template_cannot_change_the_tool_it_renders() -> None:
    """Django calls a context value's methods without arguments: ``dict.clear`` among them. The
    view gets copies, so the catalog's own schema (shared by every request) stays whole."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    html = _render("{{ tool.input_schema.clear }}{{ tool.input_schema.properties.clear }}", input_schema=schema)
    assert "<body>" in html
    assert schema == {"type": "object", "properties": {"a": {"type": "string"}}}


@pytest.mark.parametrize(
    "template",
    ["{{ tool.name|stringformat:'1000000000s' }}", "{% filter stringformat:'999999999s' %}x{% endfilter %}"],
)
def test_filters_that_make_huge_output_from_a_small_template_are_refused(template: str) -> None:
    problems = template_problems(template, "")
    assert list(problems) == ["ui_template"], template


def _doubling(times: int) -> str:
    """``{% with %}`` nested ``times`` deep, each doubling the string of the one outside."""
    opening = "".join(f"{{% with v{i + 1}=v{i}|add:v{i} %}}" for i in range(times))
    return "{% with v0=tool.name %}" + opening + f"{{{{ v{times} }}}}" + "{% endwith %}" * (times + 1)


def test_doubling_a_string_stops_at_the_bound_before_memory_grows() -> None:
    import tracemalloc

    reset()
    tracemalloc.start()
    try:
        with pytest.raises(UiRenderError, match="larger than"):
            render_document(UiSource(**{**_SOURCE, "template": _doubling(27)}))  # 2**27 characters
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def test_nested_loops_stop_at_the_work_bound() -> None:
    """Three loops over 400 characters are 64 million iterations: refused after the budget."""
    import time

    letters = "x" * 400
    template = f'{{% for a in "{letters}" %}}{{% for b in "{letters}" %}}{{% for c in "{letters}" %}}'
    template += "{% endfor %}{% endfor %}{% endfor %}"
    assert template_problems(template, "") == {}
    started = time.monotonic()
    with pytest.raises(UiRenderError, match="too much work"):
        _render(template)
    assert time.monotonic() - started < 5


def test_a_loop_over_large_text_stops_at_the_output_bound() -> None:
    body = "y" * 50_000
    template = f'{{% for a in "{"x" * 1000}" %}}{body}{{% endfor %}}'  # 50 MB of output
    with pytest.raises(UiRenderError, match="larger than"):
        _render(template)


def test_a_real_table_still_renders() -> None:
    """The bounds leave room for what a view does: a 200-row table of 5 columns."""
    template = (
        "<table>{% for row in tool.input_schema.rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}"
        "</tr>{% endfor %}</table>"
    )
    rows = [[f"r{r}c{c}" for c in range(5)] for r in range(200)]
    html = _render(template, input_schema={"rows": rows})
    assert html.count("<td>") == 1000
