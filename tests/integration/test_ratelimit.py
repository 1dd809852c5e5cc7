"""A tool's rate limit (Tool.rate_limit): counted per principal and tool, refused with a retry
delay, audited as rate_limited. The parsing, the counters and the Redis path are unit-tested in
tests/unit/test_ratelimit_checks.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from mcp_tools.models import AuditEvent, Tool
from tests.integration.test_oauth import authed, make_token
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_rate_limit_per_principal_and_tool(client: Any, oauth: None, alice: User, version: str) -> None:
    Tool.objects.filter(name="echo").update(rate_limit="3/m")
    mcp = Mcp(client)
    mcp.default_headers["Authorization"] = f"Bearer {make_token(alice, 'notes:read')}"
    if version == "2026-07-28":
        mcp.modern()
    else:
        mcp.initialize(version)
    results = [mcp.call("tools/call", {"name": "echo", "arguments": {"text": str(i)}}) for i in range(5)]
    assert [r.get("isError", False) for r in results] == [False, False, False, True, True]
    assert "retry after" in results[3]["content"][0]["text"]
    assert 0 < results[3]["_meta"]["retryAfterSeconds"] <= 60
    # Another tool and another principal have their own counters.
    assert mcp.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}).get("isError", False) is False
    bob = User.objects.create_user("bob")
    other = authed(client, make_token(bob, "notes:read"))
    assert other.call("tools/call", {"name": "echo", "arguments": {"text": "b"}}).get("isError", False) is False
    outcomes = list(AuditEvent.objects.filter(tool_name="echo").order_by("pk").values_list("outcome", flat=True))
    assert outcomes == ["ok", "ok", "ok", "rate_limited", "rate_limited", "ok"]
