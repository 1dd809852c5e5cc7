"""The Streamable HTTP endpoint through Django's test client; REQUIREMENTS ids in docstrings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools.models import CatalogVersion, McpSession, Tool
from tests.support.mcp_client import LEGACY, MODERN, Mcp, check_message, modern_meta

ALL_VERSIONS = (*LEGACY, MODERN)
JSON_HEADERS = {"Accept": "application/json, text/event-stream"}


def _setup(mcp: Mcp, version: str) -> Mcp:
    if version == MODERN:
        return mcp.modern()
    mcp.initialize(version)
    return mcp


# --------------------------------------------------------------------------- lifecycle


@pytest.mark.parametrize("version", LEGACY)
def test_initialize_echoes_supported_versions(mcp: Mcp, version: str) -> None:
    """L-1, L-3, L-2: the result has version, capabilities and serverInfo shaped to the revision."""
    result = mcp.initialize(version)
    assert result["protocolVersion"] == version
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["serverInfo"]["name"] == "django-mcp-tools-demo"
    assert ("title" in result["serverInfo"]) == (version != "2025-03-26")
    assert McpSession.objects.filter(pk=mcp.session_id, protocol_version=version).exists()


def test_initialize_with_unknown_version_succeeds_with_newest(mcp: Mcp) -> None:
    """L-4."""
    assert mcp.initialize("1900-01-01")["protocolVersion"] == "2025-11-25"


def test_initialize_without_version_is_invalid_params(mcp: Mcp) -> None:
    response, messages = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert messages[0]["error"]["code"] == -32602


def test_session_ids_are_random_visible_ascii(mcp: Mcp) -> None:
    """H-14."""
    ids = set()
    for _ in range(3):
        mcp.initialize()
        assert mcp.session_id
        assert all(0x21 <= ord(c) <= 0x7E for c in mcp.session_id)
        assert len(mcp.session_id) >= 32
        ids.add(mcp.session_id)
    assert len(ids) == 3


def test_notification_gets_202_empty(mcp: Mcp) -> None:
    """H-6."""
    mcp.initialize()
    response = mcp.notify("notifications/initialized")
    assert response.status_code == 202
    assert response.content == b""
    assert McpSession.objects.get(pk=mcp.session_id).initialized


def test_client_response_gets_202(mcp: Mcp) -> None:
    mcp.initialize()
    response, messages = mcp.post({"jsonrpc": "2.0", "id": 99, "result": {}})
    assert (response.status_code, messages) == (202, [])


@pytest.mark.parametrize("rid", ["abc", 7])
def test_ids_are_echoed(mcp: Mcp, rid: Any) -> None:
    """L-9."""
    mcp.initialize()
    _, messages = mcp.post({"jsonrpc": "2.0", "id": rid, "method": "ping"}, method="ping")
    assert messages == [{"jsonrpc": "2.0", "id": rid, "result": {}}]


def test_ping_before_initialized_notification(mcp: Mcp) -> None:
    """PG-1: ping is answered even before notifications/initialized."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}},
    }
    response, _ = mcp.post(body, validate=False)
    mcp.session_id, mcp.version = response.headers["Mcp-Session-Id"], "2025-06-18"
    assert mcp.call("ping") == {}


# --------------------------------------------------------------------------- HTTP rules


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_parse_error(mcp: Mcp, version: str) -> None:
    """L-9, H-5: unparsable JSON is 400 + -32700 with no id (2025-11-25 and later)."""
    response, messages = mcp.post(b"{oops", validate=False, headers={"MCP-Protocol-Version": version})
    assert response.status_code == 400
    check_message(version, messages[0])
    assert messages[0]["error"]["code"] == -32700
    assert "id" not in messages[0]


@pytest.mark.parametrize("version", [None, "2025-03-26", "2025-06-18"])
def test_parse_error_id_is_null_where_the_schema_requires_an_id(mcp: Mcp, version: str | None) -> None:
    """JSON-RPC 2.0 section 5: an unreadable id is null. The 2025-03-26 and 2025-06-18 schemas
    require the member; without a version header a server assumes 2025-03-26."""
    headers = {"MCP-Protocol-Version": version} if version else {}
    for body in (b"{oops", b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', b"[1]"):
        response, messages = mcp.post(body, validate=False, headers=headers)
        assert response.status_code == 400 or body == b"[1]", (body, response.status_code)
        assert "id" in messages[0], body
        assert messages[0]["id"] is None
        check_message(version or "2025-03-26", messages[0])


@pytest.mark.parametrize(
    "body", [b"5", b'"x"', b'{"jsonrpc":"2.0"}', b'{"jsonrpc":"2.0","id":null,"method":"ping"}', b"{}"]
)
def test_invalid_request(mcp: Mcp, body: bytes) -> None:
    """H-5: JSON that is not a JSON-RPC message is 400 + -32600."""
    response, messages = mcp.post(body)
    assert response.status_code == 400
    assert messages[0]["error"]["code"] == -32600


def test_wrong_content_type_is_415(client: Any, db: None) -> None:
    response = client.post("/mcp", "x=1", content_type="application/x-www-form-urlencoded", headers=JSON_HEADERS)
    assert response.status_code == 415
    assert json.loads(response.content)["error"]["code"] == -32600


def test_unacceptable_accept_is_406(client: Any, db: None) -> None:
    response = client.post("/mcp", b"{}", content_type="application/json", headers={"Accept": "text/html"})
    assert response.status_code == 406


def test_oversized_body_is_413(client: Any, db: None, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_BODY_BYTES": 100}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 200}})
    response = client.post("/mcp", body, content_type="application/json", headers=JSON_HEADERS)
    assert response.status_code == 413
    assert json.loads(response.content)["error"]["code"] == -32600


def test_foreign_origin_is_403(mcp: Mcp) -> None:
    """H-2."""
    response, messages = mcp.post(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Origin": "https://evil.example"}
    )
    assert response.status_code == 403
    assert messages[0]["id"] is None  # not read: the origin is refused first (2025-03-26 rules)


def test_same_origin_and_configured_origins_pass(mcp: Mcp, settings: Any) -> None:
    mcp.initialize()
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "ping"}, headers={"Origin": "http://testserver"})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "http://testserver"
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "ALLOWED_ORIGINS": ["https://app.example"]}
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={"Origin": "https://app.example"})
    assert response.status_code == 200


def test_disallowed_host_is_403(client: Any, db: None) -> None:
    """H-2: DNS rebinding arrives with a foreign Host."""
    response = client.post(
        "/mcp", b"{}", content_type="application/json", headers={**JSON_HEADERS, "Host": "evil.example.com"}
    )
    # Django's CommonMiddleware refuses it (400) before the view; without it the view says 403.
    assert response.status_code in (400, 403)


def test_the_host_check_follows_allowed_hosts(rf: Any, settings: Any) -> None:
    """H-2: the endpoint remembers Django's answer per Host, and forgets it when ALLOWED_HOSTS
    changes (a host removed is refused from the next request on)."""
    from mcp_tools.transport.replies import check_host_and_origin

    settings.ALLOWED_HOSTS = ["api.example.com"]
    assert check_host_and_origin(rf.post("/mcp", HTTP_HOST="api.example.com")) is None
    assert check_host_and_origin(rf.post("/mcp", HTTP_HOST="api.example.com")) is None  # remembered
    refused = check_host_and_origin(rf.post("/mcp", HTTP_HOST="evil.example.com"))
    assert refused is not None
    assert refused.status == 403
    settings.ALLOWED_HOSTS = ["testserver"]
    refused = check_host_and_origin(rf.post("/mcp", HTTP_HOST="api.example.com"))
    assert refused is not None
    assert refused.status == 403


def test_cors_preflight(client: Any, db: None) -> None:
    response = client.options(
        "/mcp",
        headers={
            "Origin": "http://testserver",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, mcp-protocol-version, mcp-param-region, x-evil",
        },
    )
    assert response.status_code == 204
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    allowed = response.headers["Access-Control-Allow-Headers"]
    assert "mcp-param-region" in allowed
    assert "x-evil" not in allowed
    assert "Mcp-Session-Id" in response.headers["Access-Control-Expose-Headers"]


def test_other_methods_are_405(client: Any, db: None) -> None:
    assert client.put("/mcp", b"{}", content_type="application/json").status_code == 405


# --------------------------------------------------------------------------- sessions


def test_missing_session_is_400(mcp: Mcp) -> None:
    """H-14: requests other than initialize need the session header."""
    response, messages = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 400


def test_unknown_session_is_404(mcp: Mcp) -> None:
    mcp.session_id = "no-such-session"
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 404


def test_delete_ends_session(mcp: Mcp, client: Any) -> None:
    """H-14: after DELETE, the id answers 404."""
    mcp.initialize()
    response = client.delete("/mcp", headers={"Mcp-Session-Id": mcp.session_id})
    assert response.status_code == 204
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 404
    assert client.delete("/mcp", headers={"Mcp-Session-Id": mcp.session_id}).status_code == 404
    assert client.delete("/mcp").status_code == 400


def test_expired_session_is_404(mcp: Mcp) -> None:
    from django.utils import timezone

    mcp.initialize()
    McpSession.objects.filter(pk=mcp.session_id).update(expires_at=timezone.now())
    response, _ = mcp.post({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 404
    assert McpSession.objects.delete_expired() == 1


def test_session_is_bound_to_its_principal(mcp: Mcp, header_auth: None) -> None:
    """H-15: another principal presenting the session id is never served as the owner."""
    response, messages = mcp.post(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "a", "version": "1"},
            },
        },
        headers={"X-Test-User": "alice"},
        validate=False,
    )
    mcp.session_id, mcp.version = response.headers["Mcp-Session-Id"], "2025-11-25"
    ok, _ = mcp.post({"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers={"X-Test-User": "alice"})
    assert ok.status_code == 200
    stolen, _ = mcp.post({"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers={"X-Test-User": "bob"})
    assert stolen.status_code == 404
    anonymous, _ = mcp.post({"jsonrpc": "2.0", "id": 4, "method": "ping"}, validate=False)
    assert anonymous.status_code == 401


def test_bad_protocol_version_header_is_400(mcp: Mcp) -> None:
    """L-13."""
    mcp.initialize("2025-06-18")
    response, _ = mcp.post(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"MCP-Protocol-Version": "1999-01-01"}
    )
    assert response.status_code == 400


# --------------------------------------------------------------------------- batches (L-7, L-8)


def test_batches_in_2025_03_26(mcp: Mcp) -> None:
    mcp.initialize("2025-03-26")
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "b"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "nope"},
        {"bad": True},
    ]
    response, messages = mcp.post(batch, validate=False)
    assert response.status_code == 200
    check_message("2025-03-26", messages[0], "ping")
    check_message("2025-03-26", messages[1], "tools/call")
    assert messages[1]["result"]["content"] == [{"type": "text", "text": "b"}]
    assert messages[2]["error"]["code"] == -32601
    assert messages[3]["error"]["code"] == -32600
    only_notes, _ = mcp.post([{"jsonrpc": "2.0", "method": "notifications/initialized"}], validate=False)
    assert only_notes.status_code == 202


def test_batches_refused_after_2025_03_26(mcp: Mcp) -> None:
    mcp.initialize("2025-06-18")
    response, messages = mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], validate=False)
    assert response.status_code == 400
    assert messages[0]["error"]["code"] == -32600


def test_batch_errors_follow_the_sessions_revision_not_a_tolerated_header(mcp: Mcp) -> None:
    """L-8, L-9, L-13: a 2025-03-26 session sending another legacy revision's header still
    batches; an item whose id cannot be read is answered with ``"id": null`` (that revision's
    schema requires the member); a 2025-11-25 session's refused batch omits the id."""
    mcp.initialize("2025-03-26")
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": None, "method": "ping"}]
    response, messages = mcp.post(batch, headers={"MCP-Protocol-Version": "2025-11-25"}, validate=False)
    assert response.status_code == 200
    assert messages[1] == {"jsonrpc": "2.0", "id": None, "error": messages[1]["error"]}
    for message in messages:
        check_message("2025-03-26", message, "ping")

    mcp.initialize("2025-11-25")
    response, messages = mcp.post(batch, headers={"MCP-Protocol-Version": "2025-06-18"}, validate=False)
    assert response.status_code == 400
    assert "id" not in messages[0]
    check_message("2025-11-25", messages[0], None)


def test_initialize_inside_batch_is_refused(mcp: Mcp) -> None:
    response, _ = mcp.post([{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}], validate=False)
    assert response.status_code == 400


# --------------------------------------------------------------------------- methods


@pytest.mark.parametrize("version", LEGACY)
def test_unknown_method_legacy(mcp: Mcp, version: str) -> None:
    """H-D5 (legacy: 200 with -32601)."""
    mcp.initialize(version)
    response, message, _ = mcp.request("prompts/list")
    assert response.status_code == 200
    assert message["error"]["code"] == -32601


@pytest.mark.parametrize(
    "method",
    ["ping", "logging/setLevel", "prompts/list", "resources/list", "tasks/result", "initialized", "initialize"],
)
def test_unknown_or_removed_method_modern_is_404(mcp: Mcp, method: str) -> None:
    """H-D5, PG-2: modern requests for methods we do not implement are 404 + -32601."""
    response, message, _ = mcp.modern().request(method)
    assert response.status_code == 404
    assert message["error"]["code"] == -32601


# --------------------------------------------------------------------------- tools/list


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_list_pages_through_everything_in_order(mcp: Mcp, version: str, settings: Any) -> None:
    """T-2, T-6, PA-1, PA-2: every enabled tool once, deterministic order, no empty cursor."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": 4}
    _setup(mcp, version)
    names: list[str] = []
    cursor = None
    pages = 0
    while True:
        result = mcp.call("tools/list", {"cursor": cursor} if cursor else {})
        pages += 1
        names += [t["name"] for t in result["tools"]]
        if version == MODERN:
            assert result["cacheScope"] == "private"
            assert result["ttlMs"] >= 0
        cursor = result.get("nextCursor")
        if cursor is None:
            break
        assert cursor != ""
    expected = sorted(Tool.objects.filter(enabled=True).values_list("name", flat=True))
    assert names == expected
    assert pages == -(-len(expected) // 4)
    again = mcp.call("tools/list")
    assert [t["name"] for t in again["tools"]] == expected[:4]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_garbage_cursor_is_invalid_params(mcp: Mcp, version: str) -> None:
    """PA-1."""
    _setup(mcp, version)
    _, message, _ = mcp.request("tools/list", {"cursor": "not-a-cursor"})
    assert message["error"]["code"] == -32602


def test_disabled_tools_are_not_listed_or_callable(mcp: Mcp) -> None:
    Tool.objects.filter(name="echo").update(enabled=False)
    mcp.initialize()
    assert "echo" not in [t["name"] for t in mcp.call("tools/list")["tools"]]
    _, message, _ = mcp.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert message["error"]["code"] == -32602


def test_list_reflects_edits_immediately(mcp: Mcp) -> None:
    mcp.initialize()
    before = mcp.call("tools/list")
    tool = Tool.objects.get(name="add")
    tool.description = "Changed"
    tool.save()
    after = mcp.call("tools/list")
    assert before != after
    assert next(t for t in after["tools"] if t["name"] == "add")["description"] == "Changed"


def test_list_query_count_does_not_grow_with_catalog(mcp: Mcp, settings: Any) -> None:
    """A tools/list costs a constant number of queries (catalog version + session); a
    tools/call adds its audit row."""
    mcp.initialize()

    def queries_for_list() -> int:
        mcp.call("tools/list")  # warm: catalog loaded once per version
        with CaptureQueriesContext(connection) as ctx:
            mcp.call("tools/list")
            mcp.call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        return len(ctx)

    small = queries_for_list()
    Tool.objects.bulk_create(
        [Tool(name=f"bulk_{i:04d}", handler_key="demo.echo", input_schema={"type": "object"}) for i in range(300)]
    )
    CatalogVersion.bump()
    large = queries_for_list()
    assert small == large <= 5


# --------------------------------------------------------------------------- tools/call


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_unknown_tool_is_invalid_params(mcp: Mcp, version: str) -> None:
    """T-8."""
    _setup(mcp, version)
    headers = {"Mcp-Name": "nope"} if version == MODERN else None
    _, message, _ = mcp.request("tools/call", {"name": "nope", "arguments": {}}, headers=headers)
    assert message["error"]["code"] == -32602
    assert "nope" in message["error"]["message"]


@pytest.mark.parametrize("params", [{}, {"name": 5}, {"name": "echo", "arguments": [1]}])
def test_malformed_call_is_invalid_params(mcp: Mcp, params: dict[str, Any]) -> None:
    """T-8."""
    mcp.initialize()
    _, message, _ = mcp.request("tools/call", params)
    assert message["error"]["code"] == -32602


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_invalid_arguments(mcp: Mcp, version: str) -> None:
    """T-9: isError results on 2025-11-25+, -32602 on older revisions."""
    _setup(mcp, version)
    _, message, _ = mcp.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": "two"}})
    if version in ("2025-03-26", "2025-06-18"):
        assert message["error"]["code"] == -32602
        assert "arguments.b" in message["error"]["message"]
    else:
        result = message["result"]
        assert result["isError"] is True
        assert result["content"][0]["type"] == "text"
        assert "arguments.b" in result["content"][0]["text"]


def test_missing_arguments_default_to_empty(mcp: Mcp) -> None:
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "test_simple_text"})
    assert result["content"][0]["text"] == "This is a simple text response for testing."


@pytest.mark.parametrize("version", ALL_VERSIONS)
@pytest.mark.parametrize(
    ("tool", "kinds"),
    [
        ("test_simple_text", ["text"]),
        ("test_image_content", ["image"]),
        ("test_audio_content", ["audio"]),
        ("test_embedded_resource", ["resource"]),
        ("test_multiple_content_types", ["text", "image", "resource"]),
        ("color_swatch", ["text", "image"]),
    ],
)
def test_content_types(mcp: Mcp, version: str, tool: str, kinds: list[str]) -> None:
    """T-10: every content kind validates against each revision's schema."""
    _setup(mcp, version)
    result = mcp.call("tools/call", {"name": tool, "arguments": {}})
    assert [block["type"] for block in result["content"]] == kinds


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_resource_link_and_annotations(mcp: Mcp, version: str) -> None:
    Tool.objects.create(
        name="linker",
        handler_key="demo.static",
        handler_config={
            "content": [
                {"type": "resource_link", "uri": "file:///r.txt", "name": "r", "mimeType": "text/plain"},
                {
                    "type": "text",
                    "text": "t",
                    "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2026-01-01T00:00:00Z"},
                },
            ]
        },
    )
    _setup(mcp, version)
    result = mcp.call("tools/call", {"name": "linker", "arguments": {}})
    first, second = result["content"]
    assert first["type"] == ("text" if version == "2025-03-26" else "resource_link")
    assert ("lastModified" in second["annotations"]) == (version != "2025-03-26")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_structured_content(mcp: Mcp, version: str) -> None:
    """T-11: structuredContent validated against outputSchema and mirrored as JSON text."""
    _setup(mcp, version)
    headers = {"Mcp-Param-City": "Paris"} if version == MODERN else None
    result = mcp.call("tools/call", {"name": "get_weather", "arguments": {"city": "Paris"}}, headers=headers)
    expected = {"city": "Paris", "conditions": "cloudy", "temperature": 14.5}
    assert json.loads(result["content"][0]["text"]) == expected
    if version == "2025-03-26":
        assert "structuredContent" not in result
    else:
        assert result["structuredContent"] == expected


def test_output_schema_violation_is_a_tool_error(mcp: Mcp) -> None:
    Tool.objects.filter(name="add").update(output_schema={"type": "object", "required": ["total"]})
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert result["isError"] is True
    assert "output schema" in result["content"][0]["text"]


def test_tool_error_is_an_is_error_result(mcp: Mcp) -> None:
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "test_error_handling", "arguments": {}})
    assert result == {
        "content": [{"type": "text", "text": "This tool intentionally returns an error for testing"}],
        "isError": True,
    }


def test_handler_crash_is_sanitized(mcp: Mcp, caplog: Any) -> None:
    """A handler exception is an isError result; the detail is only in the server log."""
    Tool.objects.create(name="crasher", handler_key="demo.crash")
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "crasher", "arguments": {}})
    assert result["isError"] is True
    assert "hunter2" not in json.dumps(result)
    assert "hunter2" in caplog.text


def test_unregistered_handler_is_a_tool_error(mcp: Mcp) -> None:
    Tool.objects.create(name="orphan", handler_key="no.such.handler")
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "orphan", "arguments": {}})
    assert result["isError"] is True


def test_set_level(mcp: Mcp) -> None:
    """LG-2: setLevel answers {} and is stored on the session; unknown levels are -32602."""
    mcp.initialize()
    assert mcp.call("logging/setLevel", {"level": "error"}) == {}
    assert McpSession.objects.get(pk=mcp.session_id).log_level == "error"
    _, message, _ = mcp.request("logging/setLevel", {"level": "loud"})
    assert message["error"]["code"] == -32602


def test_no_progress_without_token_or_stream(mcp: Mcp) -> None:
    """P-1: no token, no progress; P-2: a JSON-only client gets JSON."""
    mcp.initialize()
    response, message, notes = mcp.request("tools/call", {"name": "test_tool_with_progress", "arguments": {}})
    assert response["Content-Type"] == "application/json"
    assert notes == []
    response, messages = mcp.post(
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "test_tool_with_progress", "_meta": {"progressToken": 1}},
        },
        headers={"Accept": "application/json"},
    )
    assert response["Content-Type"] == "application/json"
    assert len(messages) == 1
    assert "result" in messages[0]


# --------------------------------------------------------------------------- 2026-07-28


def test_discover(mcp: Mcp) -> None:
    """LD-4, LD-6."""
    result = mcp.modern().call("server/discover")
    assert result["resultType"] == "complete"
    assert "2026-07-28" in result["supportedVersions"]
    assert "2025-11-25" in result["supportedVersions"]
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "django-mcp-tools-demo"


def test_modern_results_carry_result_type_and_server_info(mcp: Mcp) -> None:
    """LD-5, LD-6, T-D4."""
    result = mcp.modern().call("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert result["resultType"] == "complete"
    assert "io.modelcontextprotocol/serverInfo" in result["_meta"]


def test_modern_errors(mcp: Mcp) -> None:
    """LD-1, LD-3, H-D4, H-D6 through the view."""
    mcp.modern()
    bad_version = {"_meta": modern_meta(**{"io.modelcontextprotocol/protocolVersion": "1900-01-01"})}
    response, message, _ = mcp.request("tools/list", bad_version, headers={"MCP-Protocol-Version": "1900-01-01"})
    assert (response.status_code, message["error"]["code"]) == (400, -32022)
    assert message["error"]["data"]["requested"] == "1900-01-01"
    missing = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}
    response, message, _ = mcp.request("tools/list", missing)
    assert (response.status_code, message["error"]["code"]) == (400, -32602)
    response, message, _ = mcp.request("tools/list", headers={"Mcp-Method": "tools/call"})
    assert (response.status_code, message["error"]["code"]) == (400, -32020)
    response, message, _ = mcp.request(
        "tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers={"Mcp-Name": "add"}
    )
    assert (response.status_code, message["error"]["code"]) == (400, -32020)


def test_modern_param_headers(mcp: Mcp) -> None:
    """H-D7 with the demo get_weather tool (x-mcp-header: City)."""
    mcp.modern()
    params = {"name": "get_weather", "arguments": {"city": "Paris"}}
    response, message, _ = mcp.request("tools/call", params)
    assert (response.status_code, message["error"]["code"]) == (400, -32020)
    response, message, _ = mcp.request("tools/call", params, headers={"Mcp-Param-City": "Tokyo"})
    assert (response.status_code, message["error"]["code"]) == (400, -32020)
    assert "result" in mcp.request("tools/call", params, headers={"Mcp-Param-City": "=?base64?UGFyaXM=?="})[1]


def test_modern_ignores_session_header(mcp: Mcp) -> None:
    """H-D1: a modern request is served statelessly whatever session header it carries."""
    mcp.modern()
    response, message, _ = mcp.request("tools/list", headers={"Mcp-Session-Id": "whatever"})
    assert response.status_code == 200
    assert "result" in message
    assert "Mcp-Session-Id" not in response.headers


def test_modern_notification_is_202(mcp: Mcp) -> None:
    mcp.modern()
    response, _ = mcp.post(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"_meta": modern_meta(), "requestId": 1}}
    )
    assert response.status_code == 202


def test_modern_response_post_is_invalid_request(mcp: Mcp) -> None:
    """H-D2: a 2026-07-28 client never POSTs a JSON-RPC response."""
    response, messages = mcp.post({"jsonrpc": "2.0", "id": 1, "result": {}}, headers={"MCP-Protocol-Version": MODERN})
    assert response.status_code == 400
    assert messages[0]["error"]["code"] == -32600


# --------------------------------------------------------------------------- GET


def test_get_without_session_is_405(client: Any, db: None) -> None:
    """H-D1, H-11."""
    response = client.get("/mcp", headers={"Accept": "text/event-stream"})
    assert response.status_code == 405


def test_what_the_endpoint_remembers_per_client_header_is_bounded_in_size(rf: Any, settings: Any) -> None:
    """Host answers and parsed Accept headers are kept per value a client picks: only values of
    a bounded length are kept, so a client sending long headers pins no memory (long ones are
    still checked, every time)."""
    from mcp_tools.transport import replies

    settings.ALLOWED_HOSTS = ["*"]
    long_host = "a" * 600 + ".example.com"
    assert replies.check_host_and_origin(rf.post("/mcp", HTTP_HOST=long_host)) is None
    assert not any(long_host in key for key in replies._hosts)
    assert replies.check_host_and_origin(rf.post("/mcp", HTTP_HOST="short.example.com")) is None
    assert any("short.example.com" in key for key in replies._hosts)

    replies._kept_media_types.cache_clear()
    long_accept = "application/json, " + ", ".join(f"text/x-{i}" for i in range(200))
    assert replies.accepts(rf.post("/mcp", HTTP_ACCEPT=long_accept), "application/json")
    assert not replies.accepts(rf.post("/mcp", HTTP_ACCEPT=long_accept), "text/event-stream")
    assert replies._kept_media_types.cache_info().currsize == 0
    assert replies.accepts(rf.post("/mcp", HTTP_ACCEPT="application/json, text/event-stream"), "text/event-stream")
    assert replies._kept_media_types.cache_info().currsize == 1
