"""Settings object, handler registry and schema checks (no database)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from mcp_tools.conf import mcp_settings
from mcp_tools.registry import HandlerRegistry, ToolKind, registry
from mcp_tools.schemas import check_input_schema, check_output_schema, compile_validator


def test_settings_defaults_and_overrides() -> None:
    assert mcp_settings.MAX_BODY_BYTES == 1_048_576
    with override_settings(MCP_TOOLS={"PAGE_SIZE": 7}):
        assert mcp_settings.PAGE_SIZE == 7
        assert mcp_settings.MAX_BODY_BYTES == 1_048_576


def test_unknown_setting_raises() -> None:
    with override_settings(MCP_TOOLS={"PAGE_SIZ": 7}), pytest.raises(ImproperlyConfigured, match="PAGE_SIZ"):
        _ = mcp_settings.PAGE_SIZE


def test_bad_import_raises() -> None:
    with override_settings(MCP_TOOLS={"AUTH_BACKEND": "nope.Missing"}), pytest.raises(ImproperlyConfigured):
        _ = mcp_settings.AUTH_BACKEND


def test_demo_handlers_are_autodiscovered() -> None:
    assert "demo.echo" in registry
    assert registry.get("demo.echo").label == "Echo"  # type: ignore[union-attr]


def test_registry_rejects_duplicates_and_bad_keys() -> None:
    reg = HandlerRegistry()
    reg.register(ToolKind("a.b", lambda ctx: None))
    with pytest.raises(ValueError, match="already registered"):
        reg.register(ToolKind("a.b", lambda ctx: None))
    with pytest.raises(ValueError, match="Invalid handler key"):
        reg.register(ToolKind("a b", lambda ctx: None))
    with pytest.raises(ValueError, match="config_schema"):
        reg.register(ToolKind("c", lambda ctx: None, {"type": 5}))


def test_handler_config_errors() -> None:
    kind = ToolKind("k", lambda ctx: None, {"type": "object", "properties": {"n": {"type": "integer"}}})
    assert kind.config_errors({"n": 1}) == []
    assert kind.config_errors({"n": "x"}) == ["n: 'x' is not of type 'integer'"]


@pytest.mark.parametrize(
    "schema",
    [
        None,
        [],
        {"type": "array"},
        {"type": "object", "properties": {"a": {"type": "nonsense"}}},
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/remote.json"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}},
        {"$schema": "http://example.com/unknown-dialect", "type": "object"},
        {"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}},
    ],
)
def test_invalid_input_schemas_are_refused(schema: object) -> None:
    """T-4, L-16, LD-12, T-D7."""
    with pytest.raises(ValueError, match=r"(?i)schema|header|ref|dialect|object"):
        check_input_schema(schema)


def test_valid_schemas() -> None:
    check_input_schema({"type": "object", "additionalProperties": False})
    check_input_schema({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})
    check_output_schema({"type": "array", "items": {"type": "integer"}})


def test_compiled_validator_honours_dialect_and_never_fetches() -> None:
    validator = compile_validator({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    assert not validator.is_valid({})
    assert validator.is_valid({"n": 1})
