"""The sans-IO core: framing, negotiation, routing headers, cursors and shaping (no database)."""

from __future__ import annotations

import base64

import pytest

from mcp_tools.protocol import errors as e
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.cursor import decode_cursor, encode_cursor
from mcp_tools.protocol.errors import McpError
from mcp_tools.protocol.headers import (
    SchemaHeaderError,
    check_param_headers,
    check_routing_headers,
    extract_param_headers,
)
from mcp_tools.protocol.jsonrpc import (
    Notification,
    Request,
    Response,
    encode_error,
    encode_raw_result,
    load_json,
    parse_message,
)
from mcp_tools.protocol.negotiation import (
    check_legacy_version_header,
    level_allows,
    negotiate_legacy,
    read_modern_meta,
)
from mcp_tools.protocol.shaping import ToolSpec, shape_call_result, shape_content, shape_tool

KEY = b"k" * 32


# --------------------------------------------------------------------------- JSON-RPC (L-9, L-10)


@pytest.mark.parametrize("rid", ["abc", 7, 0, -3])
def test_request_ids_keep_their_type(rid: object) -> None:
    """L-9: string and integer ids are read and echoed unchanged."""
    message = parse_message({"jsonrpc": "2.0", "id": rid, "method": "ping"})
    assert isinstance(message, Request)
    assert message.id == rid
    assert type(message.id) is type(rid)


@pytest.mark.parametrize(
    "obj",
    [
        [],
        "x",
        {"id": 1, "method": "ping"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 3},
        {"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},
    ],
)
def test_malformed_messages_are_invalid_requests(obj: object) -> None:
    with pytest.raises(McpError) as info:
        parse_message(obj)
    assert info.value.code == e.INVALID_REQUEST
    assert info.value.http_status == 400


def test_notifications_and_responses_are_told_apart() -> None:
    assert isinstance(parse_message({"jsonrpc": "2.0", "method": "notifications/initialized"}), Notification)
    assert isinstance(parse_message({"jsonrpc": "2.0", "id": 3, "result": {}}), Response)


def test_parse_error_has_no_id() -> None:
    """L-9: an unreadable body gets -32700 and an error response without id."""
    with pytest.raises(McpError) as info:
        load_json(b"{not json")
    assert info.value.code == e.PARSE_ERROR
    assert b'"id"' not in encode_error(None, info.value)


def test_raw_result_framing_is_valid_json() -> None:
    import json

    framed = encode_raw_result("a", b'{"tools":[]}')
    assert json.loads(framed) == {"jsonrpc": "2.0", "id": "a", "result": {"tools": []}}


# --------------------------------------------------------------------------- negotiation


@pytest.mark.parametrize("version", v.LEGACY_VERSIONS)
def test_legacy_versions_are_echoed(version: str) -> None:
    """L-3."""
    assert negotiate_legacy(version) == version


@pytest.mark.parametrize("requested", ["1900-01-01", "2026-07-28", "2024-11-05"])
def test_unknown_legacy_versions_get_the_newest(requested: str) -> None:
    """L-4: a successful answer naming our newest legacy version."""
    assert negotiate_legacy(requested) == "2025-11-25"


def test_legacy_header_must_be_supported() -> None:
    """L-13: an invalid or unsupported header after init is a 400."""
    check_legacy_version_header({}, "2025-06-18")
    check_legacy_version_header({"mcp-protocol-version": "2025-03-26"}, "2025-11-25")
    with pytest.raises(McpError) as info:
        check_legacy_version_header({"mcp-protocol-version": "1999-01-01"}, "2025-06-18")
    assert info.value.http_status == 400


def _modern_params(**meta: object) -> dict[str, object]:
    base: dict[str, object] = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    base.update(meta)
    return {"_meta": {k: val for k, val in base.items() if val is not None}}


MODERN_HEADERS = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}


def test_modern_meta_is_read() -> None:
    meta = read_modern_meta(MODERN_HEADERS, "tools/list", _modern_params())
    assert meta.revision.version == "2026-07-28"
    assert meta.client_capabilities == {}


def test_modern_missing_capabilities_is_400_invalid_params() -> None:
    """LD-1."""
    params = _modern_params(**{"io.modelcontextprotocol/clientCapabilities": None})
    with pytest.raises(McpError) as info:
        read_modern_meta(MODERN_HEADERS, "tools/list", params)
    assert (info.value.code, info.value.http_status) == (e.INVALID_PARAMS, 400)


def test_modern_unsupported_version() -> None:
    """LD-3: -32022 with supported and requested."""
    params = _modern_params(**{"io.modelcontextprotocol/protocolVersion": "1900-01-01"})
    headers = {**MODERN_HEADERS, "mcp-protocol-version": "1900-01-01"}
    with pytest.raises(McpError) as info:
        read_modern_meta(headers, "tools/list", params)
    assert info.value.code == e.UNSUPPORTED_PROTOCOL_VERSION
    assert info.value.http_status == 400
    assert info.value.data["requested"] == "1900-01-01"
    assert "2026-07-28" in info.value.data["supported"]


@pytest.mark.parametrize(
    "headers",
    [
        {"mcp-method": "tools/list"},
        {"mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list"},
        {"mcp-protocol-version": "2026-07-28"},
        {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"},
        {"mcp-protocol-version": "2026-07-28", "mcp-method": "TOOLS/LIST"},
    ],
)
def test_modern_header_mismatches(headers: dict[str, str]) -> None:
    """H-D4, H-D6: missing or mismatched headers are 400 + -32020; values are case-sensitive."""
    with pytest.raises(McpError) as info:
        read_modern_meta(headers, "tools/list", _modern_params())
    assert (info.value.code, info.value.http_status) == (e.HEADER_MISMATCH, 400)


def test_header_mismatch_wins_over_unsupported_version() -> None:
    """H-D4: a supported header with an unsupported body version is a mismatch (-32020)."""
    params = _modern_params(**{"io.modelcontextprotocol/protocolVersion": "v999.0.0"})
    with pytest.raises(McpError) as info:
        read_modern_meta(MODERN_HEADERS, "tools/list", params)
    assert info.value.code == e.HEADER_MISMATCH


def test_mcp_name_accepts_base64_sentinel() -> None:
    """H-D6: =?base64?...?= values are decoded before comparison."""
    encoded = "=?base64?" + base64.b64encode(b"get_weather").decode() + "?="
    check_routing_headers({"mcp-method": "tools/call", "mcp-name": encoded}, "tools/call", {"name": "get_weather"})
    with pytest.raises(McpError):
        check_routing_headers({"mcp-method": "tools/call", "mcp-name": "other"}, "tools/call", {"name": "get_weather"})
    with pytest.raises(McpError):
        check_routing_headers({"mcp-method": "tools/call"}, "tools/call", {"name": "get_weather"})
    with pytest.raises(McpError):
        check_routing_headers({"mcp-method": "tools/call", "mcp-name": "=?base64?!!!?="}, "tools/call", {"name": "x"})


def test_log_levels() -> None:
    assert level_allows("info", "error")
    assert not level_allows("error", "info")
    assert not level_allows(None, "emergency")


# --------------------------------------------------------------------------- x-mcp-header (T-D7, H-D7)

REGION_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "nested": {"type": "object", "properties": {"count": {"type": "integer", "x-mcp-header": "Count"}}},
        "flag": {"type": "boolean", "x-mcp-header": "Flag"},
    },
}


def test_param_headers_are_extracted() -> None:
    found = {h.name: h.path for h in extract_param_headers(REGION_SCHEMA)}
    assert found == {"Region": ("region",), "Count": ("nested", "count"), "Flag": ("flag",)}


@pytest.mark.parametrize(
    "prop",
    [
        {"type": "string", "x-mcp-header": ""},
        {"type": "string", "x-mcp-header": "Re gion"},
        {"type": "string", "x-mcp-header": "Re:gion"},
        {"type": "number", "x-mcp-header": "Region"},
        {"type": "object", "x-mcp-header": "Region"},
        {"type": "string", "x-mcp-header": 5},
    ],
)
def test_bad_param_header_annotations(prop: dict[str, object]) -> None:
    """T-D7 rules 1, 2 and 4."""
    with pytest.raises(SchemaHeaderError):
        extract_param_headers({"type": "object", "properties": {"region": prop}})


def test_param_header_names_are_unique_case_insensitively() -> None:
    """T-D7 rule 3."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "x-mcp-header": "Region"},
            "b": {"type": "string", "x-mcp-header": "region"},
        },
    }
    with pytest.raises(SchemaHeaderError):
        extract_param_headers(schema)


@pytest.mark.parametrize("where", ["items", "oneOf", "$defs"])
def test_param_header_only_through_properties(where: str) -> None:
    """T-D7 rule 5."""
    inner = {"type": "string", "x-mcp-header": "Region"}
    node: object = {"type": "object", "properties": {"r": inner}}
    wrapped = {"items": node} if where == "items" else {where: [node]} if where == "oneOf" else {where: {"n": node}}
    with pytest.raises(SchemaHeaderError):
        extract_param_headers({"type": "object", "properties": {"list": {"type": "array", **wrapped}}})


def test_param_header_values_must_match_arguments() -> None:
    """H-D7."""
    declared = extract_param_headers(REGION_SCHEMA)
    check_param_headers({"mcp-param-region": "us-west1"}, declared, {"region": "us-west1"})
    check_param_headers({}, declared, {"region": None})
    check_param_headers({}, declared, {})
    check_param_headers(
        {"mcp-param-count": "42.0", "mcp-param-flag": "true"}, declared, {"nested": {"count": 42}, "flag": True}
    )
    for headers, arguments in [
        ({}, {"region": "us-west1"}),
        ({"mcp-param-region": "us-east1"}, {"region": "us-west1"}),
        ({"mcp-param-flag": "True"}, {"flag": True}),
        ({"mcp-param-region": "bad\x01value"}, {"region": "x"}),
    ]:
        with pytest.raises(McpError) as info:
            check_param_headers(headers, declared, arguments)
        assert info.value.code == e.HEADER_MISMATCH


# --------------------------------------------------------------------------- cursors (PA-1)


def test_cursor_round_trip_and_tamper() -> None:
    cursor = encode_cursor("tool.name", KEY, scope="tools/list")
    assert decode_cursor(cursor, KEY, scope="tools/list") == "tool.name"
    for bad in ["", "garbage", cursor[:-2] + "AA", 5, encode_cursor("x", b"other-key", scope="tools/list")]:
        with pytest.raises(McpError) as info:
            decode_cursor(bad, KEY, scope="tools/list")
        assert info.value.code == e.INVALID_PARAMS
    with pytest.raises(McpError):
        decode_cursor(cursor, KEY, scope="tasks/list")


# --------------------------------------------------------------------------- shaping (T-3, T-10, T-11)

SPEC = ToolSpec(
    name="t",
    title="T",
    description="d",
    input_schema={"type": "object"},
    output_schema={"type": "object", "properties": {"x": {"type": "number"}}},
    annotations={"readOnlyHint": True, "destructiveHint": None},
    icons=({"src": "https://example.com/i.png"},),
    task_support="optional",
)


def test_tool_fields_follow_the_revision() -> None:
    """T-3: no field a revision does not define."""
    old = shape_tool(SPEC, v.REVISIONS["2025-03-26"])
    assert set(old) == {"name", "description", "inputSchema", "annotations"}
    assert old["annotations"] == {"readOnlyHint": True}
    mid = shape_tool(SPEC, v.REVISIONS["2025-06-18"])
    assert set(mid) == {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
    new = shape_tool(SPEC, v.REVISIONS["2025-11-25"], tasks_enabled=True)
    assert new["icons"]
    assert new["execution"] == {"taskSupport": "optional"}
    assert "execution" not in shape_tool(SPEC, v.REVISIONS["2025-11-25"], tasks_enabled=False)
    assert "execution" not in shape_tool(SPEC, v.REVISIONS["2026-07-28"], tasks_enabled=True)


def test_non_object_output_schema_is_hidden_from_legacy() -> None:
    """T-3: never send a non-object-root outputSchema to 06-18/11-25."""
    spec = ToolSpec(name="t", input_schema={"type": "object"}, output_schema={"type": "array"})
    assert "outputSchema" not in shape_tool(spec, v.REVISIONS["2025-11-25"])
    assert shape_tool(spec, v.REVISIONS["2026-07-28"])["outputSchema"] == {"type": "array"}


def test_resource_link_becomes_text_for_2025_03_26() -> None:
    link = {"type": "resource_link", "uri": "file:///a", "name": "a", "annotations": {"lastModified": "x"}}
    assert shape_content(link, v.REVISIONS["2025-03-26"]) == {"type": "text", "text": "a: file:///a"}
    assert shape_content(link, v.REVISIONS["2025-06-18"])["type"] == "resource_link"


def test_call_result_shapes() -> None:
    """T-10, T-11, LD-5."""
    legacy = shape_call_result([], v.REVISIONS["2025-03-26"], structured={"a": 1}, has_structured=True)
    assert "structuredContent" not in legacy
    assert "resultType" not in legacy
    modern = shape_call_result([], v.REVISIONS["2026-07-28"], structured=[1], has_structured=True, is_error=True)
    assert modern == {"resultType": "complete", "content": [], "structuredContent": [1], "isError": True}
    scalar = shape_call_result([], v.REVISIONS["2025-11-25"], structured=[1], has_structured=True)
    assert "structuredContent" not in scalar
