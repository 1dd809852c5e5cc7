"""mcp_export / mcp_import: exact round trips, all-or-nothing validation, one catalog change."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from mcp_tools.editing.transfer import FORMAT, ImportRejected, import_tools
from mcp_tools.models import CatalogVersion, Scope, Tool, ToolRevision

pytestmark = pytest.mark.django_db


def _make_tools(count: int) -> None:
    read = Scope.objects.create(name="notes:read", description="Read notes", advertised=False)
    write = Scope.objects.create(name="notes:write", description="Write notes")
    write.implies.add(read)
    for i in range(count):
        tool = Tool.objects.create(
            name=f"tool.{i:04d}",
            title=f"Tool {i}" if i % 2 else "",
            description=f"Does thing {i}\nsecond line ✓",
            input_schema={
                "type": "object",
                "properties": {"n": {"type": "integer", "minimum": i}},
                "required": ["n"],
                "additionalProperties": False,
            },
            output_schema={"type": "object", "properties": {"sum": {"type": "number"}}} if i % 3 == 0 else None,
            annotation_title="A" if i % 5 == 0 else "",
            read_only_hint=[None, True, False][i % 3],
            destructive_hint=[False, None, True][i % 3],
            icons=[{"src": f"https://example.com/{i}.png", "mimeType": "image/png", "sizes": ["48x48"]}]
            if i % 7 == 0
            else [],
            task_support=["forbidden", "optional", "required"][i % 3],
            enabled=i % 4 != 0,
            handler_key="demo.echo",
            handler_config={"prefix": f"p{i}"} if i % 2 else {},
            rate_limit="10/m" if i % 6 == 0 else "",
            sensitive_arguments=["secret"] if i % 8 == 0 else [],
            # MCP Apps: a view on some, with its CSP, permissions and visibility.
            ui_template=f'<p data-mcp-text="n{i}"></p>' if i % 9 == 0 else "",
            ui_tools=[f"t{i:03d}"] if i % 9 == 0 else [],
            ui_visibility="app" if i % 18 == 0 else "",
            ui_connect_domains=["https://api.example.com"] if i % 9 == 0 else [],
            ui_permissions=["camera"] if i % 27 == 0 else [],
            ui_prefers_border=True if i % 9 == 0 else None,
        )
        if i % 2:
            tool.required_scopes.add(write)


def _export(tmp_path: Path, name: str = "tools.json") -> str:
    path = tmp_path / name
    call_command("mcp_export", "--output", str(path), stderr=io.StringIO())
    return path.read_text()


def test_500_tools_round_trip_exactly(tmp_path: Path) -> None:
    _make_tools(500)
    first = _export(tmp_path)
    document = json.loads(first)
    assert document["format"] == FORMAT
    assert len(document["tools"]) == 500
    # The implied scope comes along with the one the tools require.
    assert [s["name"] for s in document["scopes"]] == ["notes:read", "notes:write"]
    Tool.objects.all().delete()
    Scope.objects.all().delete()
    before = CatalogVersion.current()
    out = io.StringIO()
    call_command("mcp_import", str(tmp_path / "tools.json"), stdout=out)
    assert "500 created, 0 updated, 0 unchanged; 2 scope(s) created" in out.getvalue()
    assert CatalogVersion.current() == before + 1
    assert _export(tmp_path, "again.json") == first
    # Importing the same file again changes nothing at all.
    versions = dict(Tool.objects.values_list("name", "version"))
    out = io.StringIO()
    call_command("mcp_import", str(tmp_path / "tools.json"), stdout=out)
    assert "0 created, 0 updated, 500 unchanged" in out.getvalue()
    assert dict(Tool.objects.values_list("name", "version")) == versions


def _document(*tools: dict[str, Any], scopes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"format": FORMAT, "version": 1, "tools": list(tools), "scopes": scopes or []}


GOOD = {"name": "good", "handler_key": "demo.echo", "input_schema": {"type": "object"}}


def test_an_invalid_row_writes_nothing_and_every_bad_row_is_named() -> None:
    document = _document(
        GOOD,
        {"name": "bad name", "handler_key": "demo.echo"},
        {"name": "schema", "handler_key": "nope", "input_schema": {"type": "object", "properties": {"a": {"type": 1}}}},
        {"name": "scoped", "handler_key": "demo.echo", "required_scopes": ["ghost"], "colour": "red"},
        {"name": "good", "handler_key": "demo.echo"},
    )
    with pytest.raises(ImportRejected) as info:
        import_tools(document)
    problems = info.value.problems
    assert any(p.startswith("tool 2 ('bad name'): name:") for p in problems), problems
    assert any(p.startswith("tool 3 ('schema'): handler_key: No handler") for p in problems), problems
    assert any("tool 3 ('schema'): input_schema:" in p and "/properties/a/type" in p for p in problems), problems
    assert "tool 4 ('scoped'): unknown field(s) colour" in problems
    assert "tool 4 ('scoped'): required_scopes: no scope 'ghost' in the file or the database" in problems
    assert "tool 5 ('good'): the name appears more than once in the file" in problems
    assert not Tool.objects.exists()
    assert not ToolRevision.objects.exists()


def test_the_command_names_the_problems_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"format": "django-mcp-tools/tools",\n "version": 1, "tools": [}')
    err = io.StringIO()
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("mcp_import", str(path), stderr=err)
    assert "Invalid JSON at line 2, column" in err.getvalue()
    path.write_text(json.dumps(_document({**GOOD, "input_schema": {"type": "array"}})))
    with pytest.raises(CommandError):
        call_command("mcp_import", str(path), stderr=err)
    assert 'tool 1 (\'good\'): input_schema: Input schema must have "type": "object"' in err.getvalue()
    assert not Tool.objects.exists()


def test_updates_by_name_record_the_importer_and_dry_runs_write_nothing() -> None:
    Tool.objects.create(name="good", handler_key="demo.echo", description="old", input_schema={"type": "object"})
    report = import_tools(_document({**GOOD, "description": "new"}), dry_run=True)
    assert (report.updated, report.dry_run) == (["good"], True)
    assert Tool.objects.get().description == "old"
    report = import_tools(_document({**GOOD, "description": "new"}))
    assert report.updated == ["good"]
    latest = ToolRevision.objects.first()
    assert latest is not None
    assert (latest.source, latest.changed, latest.data["description"]) == ("import", ["description"], "new")


def test_a_view_with_bad_fields_is_refused_on_import() -> None:
    """The UI fields are checked on import like in the admin: types, origins, the template."""
    document = {
        "format": FORMAT,
        "version": 1,
        "tools": [
            {"name": "v1", "handler_key": "demo.echo", "ui_template": "{% load static %}"},
            {"name": "v2", "handler_key": "demo.echo", "ui_template": "<p></p>", "ui_connect_domains": "x"},
            {"name": "v3", "handler_key": "demo.echo", "ui_template": "<p></p>", "ui_frame_domains": ["*"]},
        ],
    }
    with pytest.raises(ImportRejected) as caught:
        import_tools(document)
    text = "\n".join(caught.value.problems)
    assert "v1" in text
    assert "served as written" in text
    assert "ui_connect_domains: must be a list" in text
    assert "is not an origin" in text
    assert not Tool.objects.filter(name__startswith="v").exists()
