"""A step added to ``ToolCall.STEPS`` before ``run`` sees every call, plain or task."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.services.calls import ToolCall
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db


def test_a_step_inserted_before_run_runs_for_plain_and_task_calls(mcp: Mcp, monkeypatch: Any) -> None:
    seen: list[tuple[str, bool]] = []

    def probe(call: ToolCall) -> None:
        seen.append((call.found.name, call.as_task))

    steps = list(ToolCall.STEPS)
    steps.insert([step.__name__ for step in steps].index("run"), probe)
    monkeypatch.setattr(ToolCall, "STEPS", tuple(steps))
    mcp.initialize("2025-11-25")
    plain = mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert plain["content"][0]["text"] == "hi"
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {"ttl": 60_000}})
    assert created["task"]["status"] == "working"
    assert seen == [("echo", False), ("build_report", True)]


def test_a_refusing_step_before_run_stops_a_task_call_before_its_task_exists(mcp: Mcp, monkeypatch: Any) -> None:
    from mcp_tools.models import McpTask

    def refuse(call: ToolCall) -> None:
        raise call.refuse("denied", "Not today.")

    steps = list(ToolCall.STEPS)
    steps.insert([step.__name__ for step in steps].index("run"), refuse)
    monkeypatch.setattr(ToolCall, "STEPS", tuple(steps))
    mcp.initialize("2025-11-25")
    result = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {"ttl": 60_000}})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Not today."
    assert not McpTask.objects.exists()
