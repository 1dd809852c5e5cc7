"""Malformed input (issue 20): mcp_import and the admin refuse any malformed file with a clear
problem naming the tool and field, never a traceback or a 500; a tool's fields have size bounds
that Tool.full_clean() enforces for the admin form, the import and every API alike."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client

from mcp_tools.editing.transfer import FORMAT, ImportRejected, import_tools, loads
from mcp_tools.models import Tool, ToolRevision

pytestmark = pytest.mark.django_db

ADD = "/admin/mcp_tools/tool/add/"
IMPORT = "/admin/mcp_tools/tool/import/"
GOOD = {"name": "good", "handler_key": "demo.echo", "input_schema": {"type": "object"}}


def _document(*tools: Any) -> dict[str, Any]:
    return {"format": FORMAT, "version": 1, "tools": list(tools), "scopes": []}


def _nested(depth: int) -> dict[str, Any]:
    """A valid JSON Schema of ``depth`` nested object properties: JSON ``2 * depth + 1`` deep."""
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def _deep_text(depth: int) -> str:
    """A tools file whose input schema nests ``depth`` arrays (as text: Python cannot dump it)."""
    head = json.dumps(_document({**GOOD, "input_schema": "HOLE"}))
    return head.replace('"HOLE"', "[" * depth + "]" * depth)


def _rejected(document: Any) -> list[str]:
    with pytest.raises(ImportRejected) as info:
        import_tools(document)
    assert not Tool.objects.exists()
    assert not ToolRevision.objects.exists()
    return info.value.problems


# --------------------------------------------------------------------------- deep nesting


def test_the_command_refuses_a_very_deep_file_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(_deep_text(100_000))
    err = io.StringIO()
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("mcp_import", str(path), stderr=err)
    assert "Invalid JSON at line 1, column" in err.getvalue()
    assert "depth" in err.getvalue()
    assert not Tool.objects.exists()


def test_nesting_the_parser_reads_is_refused_naming_the_tool_and_field() -> None:
    with pytest.raises(ImportRejected) as info:
        loads(_deep_text(500))
    assert info.value.problems == ["tool 1 ('good'): input_schema: Nested deeper than 32 levels."]
    problems = _rejected(_document({**GOOD, "input_schema": _nested(40)}))
    assert problems == ["tool 1 ('good'): input_schema: Nested deeper than 32 levels."]


def test_the_admin_import_page_refuses_a_deep_file_with_a_page_not_a_500(root_client: Client) -> None:
    for depth in (500, 100_000):
        upload = io.BytesIO(_deep_text(depth).encode())
        upload.name = "tools.json"
        response = root_client.post(IMPORT, {"file": upload})
        assert response.status_code == 200
        assert response.context["problems"], depth
    assert not Tool.objects.exists()


def test_full_clean_measures_depth_without_recursion() -> None:
    deep: list[Any] = []
    for _ in range(5000):
        deep = [deep]
    tool = Tool(
        name="deep", handler_key="demo.echo", input_schema={"type": "object", "x": deep}, handler_config={"a": deep}
    )
    with pytest.raises(ValidationError) as info:
        tool.full_clean()
    assert info.value.message_dict["input_schema"] == ["Nested deeper than 32 levels."]
    assert info.value.message_dict["handler_config"] == ["Nested deeper than 32 levels."]


# --------------------------------------------------------------------------- wrong types and shapes


def test_wrong_types_are_named_field_by_field() -> None:
    row = {
        "name": "typed",
        "handler_key": "demo.echo",
        "description": 5,
        "input_schema": "an object",
        "enabled": "yes",
        "icons": {"src": "https://x/i.png"},
        "approval_timeout": "10",
        "read_only_hint": 1,
        "handler_config": [],
    }
    problems = _rejected(_document(row))
    assert problems == [
        "tool 1 ('typed'): description: must be a string, not int",
        "tool 1 ('typed'): input_schema: must be an object, not str",
        "tool 1 ('typed'): read_only_hint: must be true or false or null, not int",
        "tool 1 ('typed'): icons: must be a list, not dict",
        "tool 1 ('typed'): handler_config: must be an object, not list",
        "tool 1 ('typed'): approval_timeout: must be an integer or null, not str",
        "tool 1 ('typed'): enabled: must be true or false, not str",
    ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"[" * 2000 + b"]" * 2000, "depth limit exceeded"),
        (b'{"format": "django-mcp-tools/tools", "version": 1, "tools": [1e999]}', "Invalid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"not json", "Invalid JSON at line 1, column 1"),
        (b'"a string"', "must be a JSON object"),
        (
            b'{"format": "django-mcp-tools/tools", "version": 1, "tools": {"a": 1}}',
            '"tools" and "scopes" must be lists',
        ),
        (b'{"format": "django-mcp-tools/tools", "version": 1, "tools": [[1]]}', "tool 1: must be a JSON object"),
    ],
)
def test_malformed_files_are_one_clear_problem(tmp_path: Path, text: bytes, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(text)
    err = io.StringIO()
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("mcp_import", str(path), stderr=err)
    assert problem in err.getvalue()
    assert not Tool.objects.exists()


# --------------------------------------------------------------------------- huge values


def test_huge_values_are_refused_and_the_report_stays_short() -> None:
    problems = _rejected(
        _document(
            {**GOOD, "name": "long", "description": "d" * 1_000_000},
            {**GOOD, "name": "wide", "input_schema": {"type": "object", "description": "s" * 70_000}},
            {**GOOD, "name": "n" * 1_000_000},
            {**GOOD, "name": "many", "icons": [{"src": "https://x/i.png"}] * 9},
            {**GOOD, "name": "conf", "handler_config": {"prefix": "p" * 70_000}},
        )
    )
    assert "tool 1 ('long'): description: At most 8192 characters (1000000 given)." in problems
    assert any(p.startswith("tool 2 ('wide'): input_schema: ") and "the limit is 65536" in p for p in problems)
    assert any(p.startswith("tool 3 ('nnnn") for p in problems)
    assert "tool 4 ('many'): icons: At most 8 icons (9 given)." in problems
    assert any(p.startswith("tool 5 ('conf'): handler_config: ") and "the limit is 65536" in p for p in problems)
    assert all(len(p) < 400 for p in problems), [len(p) for p in problems]


def test_the_largest_values_allowed_are_accepted() -> None:
    report = import_tools(_document({**GOOD, "description": "d" * 8192, "input_schema": _nested(15)}))
    assert report.created == ["good"]


# --------------------------------------------------------------------------- icons


def test_a_javascript_icon_is_refused_by_import_and_by_full_clean() -> None:
    icons = [{"src": "javascript:alert(1)"}, {"src": "http://example.com/i.png"}, {"src": "data:image/png;base64,AA"}]
    problems = _rejected(_document({**GOOD, "icons": icons}))
    assert problems == [
        "tool 1 ('good'): icons: Icon 1: the URL must start with https: or data:.",
        "tool 1 ('good'): icons: Icon 2: the URL must start with https: or data:.",
    ]
    tool = Tool(name="icon", handler_key="demo.echo", icons=[{"src": " JavaScript:alert(1)"}])
    with pytest.raises(ValidationError) as info:
        tool.full_clean()
    assert info.value.message_dict["icons"] == ["Icon 1: the URL must start with https: or data:."]


# --------------------------------------------------------------------------- the admin form


def test_the_admin_form_refuses_an_oversize_description(root_client: Client) -> None:
    form = {
        "name": "greet",
        "handler_key": "demo.echo",
        "handler_config": "{}",
        "input_schema": '{"type": "object"}',
        "description": "d" * 9000,
        "task_support": "forbidden",
        "enabled": "on",
        **dict.fromkeys(("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"), "unknown"),
    }
    response = root_client.post(ADD, form)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["description"] == ["At most 8192 characters (9000 given)."]
    assert not Tool.objects.exists()
    response = root_client.post(ADD, {**form, "description": "d" * 8192})
    assert response.status_code == 302
    assert Tool.objects.get().description == "d" * 8192


def test_the_admin_form_refuses_deep_json_with_a_page_not_a_500(root_client: Client) -> None:
    form = {
        "name": "greet",
        "handler_key": "demo.echo",
        "handler_config": "[" * 100_000 + "]" * 100_000,
        "input_schema": json.dumps(_nested(40)),
        "task_support": "forbidden",
        **dict.fromkeys(("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"), "unknown"),
    }
    response = root_client.post(ADD, form)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["handler_config"] == ["Invalid JSON: nested too deep."]
    assert errors["input_schema"] == ["Nested deeper than 32 levels."]
    assert not Tool.objects.exists()


def test_nul_characters_are_refused_before_the_database_sees_them() -> None:
    """PostgreSQL refuses NUL in text and jsonb with a database error (a 500 in the admin's import)."""
    schema = {"type": "object", "properties": {"a\x00": {"type": "string"}}}
    problems = _rejected(_document({**GOOD, "description": "a\x00b", "input_schema": schema}))
    assert problems == [
        "tool 1 ('good'): input_schema: Contains a NUL character (\\u0000).",
        "tool 1 ('good'): description: Contains a NUL character.",
    ]
    report = import_tools(_document({**GOOD, "description": "a written \\u0000 is text"}))
    assert report.created == ["good"]
