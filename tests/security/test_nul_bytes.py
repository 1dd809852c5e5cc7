"""NUL (U+0000) in what a client sends: never a 500, never a call without its audit row.

A JSON string may hold NUL (``"\\u0000"``); PostgreSQL refuses it in text and JSON, written or
looked up. A session's client info is stored with U+FFFD in its place, an id holding NUL is
unknown (no id the server makes holds one), and the audit row of such a call is written
(tests/integration/test_audit_faults.py covers the audit's own fields). The PostgreSQL pass of
``make test`` is the one that can fail; on SQLite the same answers are checked.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.models import AuditEvent, McpApproval, McpSession, McpTask, Tool
from mcp_tools.services.calls import STORED_NUL
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

NUL = "a\x00b"


def _answer(mcp: Mcp, method: str, params: dict[str, Any]) -> dict[str, Any]:
    response, message, _ = mcp.request(method, params)
    assert response.status_code == 200, (method, response.content[:300])
    return message


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
def test_a_session_whose_client_info_holds_nul_is_made(mcp: Mcp, version: str) -> None:
    mcp.initialize(version, clientInfo={"name": NUL, "version": "1"}, capabilities={"experimental": {NUL: {}}})
    session = McpSession.objects.get(pk=mcp.session_id)
    assert session.client_info == {"name": "a\ufffdb", "version": "1"}
    assert session.client_capabilities == {"experimental": {"a\ufffdb": {}}}
    result = mcp.call("tools/call", {"name": "echo", "arguments": {"text": NUL}})
    assert result["content"][0]["text"] == NUL  # the tool gets what was sent
    row = AuditEvent.objects.get(tool_name="echo")
    assert row.arguments == {"text": "a\ufffdb"}


def test_a_task_id_holding_nul_is_an_unknown_task(mcp: Mcp) -> None:
    mcp.initialize("2025-11-25", capabilities={"tasks": {}})
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        unknown = _answer(mcp, method, {"taskId": "t_unknown"})
        nul = _answer(mcp, method, {"taskId": NUL})
        assert nul["error"] == unknown["error"], method


def test_a_handle_id_holding_nul_is_an_unknown_handle(mcp: Mcp) -> None:
    mcp.modern()
    unknown = _answer(mcp, "tools/call", {"name": "view_basket", "arguments": {"basket_id": "bsk_unknown"}})
    nul = _answer(mcp, "tools/call", {"name": "view_basket", "arguments": {"basket_id": "bsk_" + NUL}})
    assert nul["result"]["isError"] is True
    assert nul["result"]["content"][0]["text"] == unknown["result"]["content"][0]["text"].replace(
        "'bsk_unknown'", repr("bsk_" + NUL)
    )
    assert AuditEvent.objects.filter(tool_name="view_basket").count() == 2


def test_a_stored_call_whose_arguments_hold_nul_is_refused_as_invalid(mcp: Mcp) -> None:
    # A task and a call waiting for approval keep their arguments in a row (PostgreSQL: -32603
    # before); a plain call passes them to its handler as sent (above).
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    Tool.objects.create(name="echo_task", handler_key="demo.echo", input_schema=schema, task_support="optional")
    Tool.objects.create(name="echo_approved", handler_key="demo.echo", input_schema=schema, requires_approval=True)
    mcp.initialize("2025-11-25", capabilities={"tasks": {}})
    for name, extra in (("echo_task", {"task": {"ttl": 60_000}}), ("echo_approved", {})):
        result = mcp.call("tools/call", {"name": name, "arguments": {"text": NUL}, **extra})
        assert result["isError"] is True
        assert result["content"][0]["text"] == f"Invalid arguments for tool {name!r}: {STORED_NUL}"
    assert not McpTask.objects.exists()
    assert not McpApproval.objects.exists()
    assert set(AuditEvent.objects.values_list("tool_name", "outcome")) == {
        ("echo_task", "invalid"),
        ("echo_approved", "invalid"),
    }
