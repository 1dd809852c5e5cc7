"""The ``celery.task`` tool kind (mcp_tools.contrib.celery) through the view, Celery eager.

Plain calls here run the task in-process (CELERY_TASK_ALWAYS_EAGER, tests/settings.py); the real
worker and broker are exercised in tests/e2e/test_builtin_kinds.py.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from mcp_tools.admin.forms import ToolForm
from mcp_tools.contrib.celery import handlers
from mcp_tools.exceptions import ToolCancelled
from mcp_tools.models import Tool
from mcp_tools.registry import registry
from mcp_tools.types import ANONYMOUS, ToolContext
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db


def _tool(name: str, config: dict[str, Any], **extra: Any) -> Tool:
    tool = Tool(name=name, handler_key="celery.task", handler_config=config, input_schema={"type": "object"}, **extra)
    tool.full_clean()
    tool.save()
    return tool


def test_the_kind_is_registered_with_label_description_and_a_task_list() -> None:
    kind = registry.get("celery.task")
    assert kind is not None
    assert kind.label
    assert kind.description
    schema = kind.get_config_schema()
    assert schema is not None
    names = schema["properties"]["task"]["enum"]
    # The demo's tasks are offered; Celery's own and this app's internal jobs are not.
    assert {"demo.word_stats", "demo.divide", "demo.sleep"} <= set(names)
    assert not [n for n in names if n.startswith(("celery.", "mcp_tools."))]


def test_the_admin_form_lists_the_tasks_and_a_wrong_config_is_a_form_error(admin_client: Any) -> None:
    help_text = str(ToolForm().fields["handler_config"].help_text)
    assert "celery.task" in help_text
    assert "demo.word_stats" in help_text
    form = ToolForm(
        data={
            "name": "bad_task",
            "handler_key": "celery.task",
            "handler_config": '{"task": "mcp_tools.run_task", "timeout": -1}',
            "input_schema": '{"type": "object"}',
            "task_support": "forbidden",
            "enabled": "on",
        }
    )
    assert not form.is_valid()
    errors = " ".join(form.errors["handler_config"])
    assert "task: 'mcp_tools.run_task' is not one of" in errors
    assert "timeout:" in errors


def test_config_is_validated_on_save() -> None:
    with pytest.raises(ValidationError) as caught:
        _tool("no_such_task", {"task": "demo.missing"})
    assert "handler_config" in caught.value.message_dict
    with pytest.raises(ValidationError):
        _tool("extra_key", {"task": "demo.divide", "unknown": 1})


def test_a_dict_result_is_structured_content_and_text(mcp: Mcp) -> None:
    _tool("stats", {"task": "demo.word_stats", "timeout": 5})
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "stats", "arguments": {"text": "a b a c a b", "top": 2}})
    assert not result.get("isError")
    assert result["structuredContent"] == {"words": 6, "distinct": 3, "top": ["a", "b"]}
    assert result["content"][0]["type"] == "text"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


def test_a_non_dict_result_is_wrapped(mcp: Mcp) -> None:
    _tool("divide", {"task": "demo.divide"})
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "divide", "arguments": {"a": 7, "b": 2}})
    assert result["structuredContent"] == {"result": 3.5}


def test_a_failing_task_is_an_error_result_without_internals(mcp: Mcp) -> None:
    _tool("divide", {"task": "demo.divide"})
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "divide", "arguments": {"a": 1, "b": 0}})
    assert result["isError"] is True
    message = result["content"][0]["text"]
    assert "'demo.divide' failed" in message
    assert "division" not in message
    assert "ZeroDivisionError" not in message
    assert "Traceback" not in message


def test_arguments_the_task_does_not_take_are_a_clear_error(mcp: Mcp) -> None:
    _tool("divide", {"task": "demo.divide"})
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "divide", "arguments": {"a": 1, "c": 2}})
    assert result["isError"] is True
    assert "Invalid arguments for task 'demo.divide'" in result["content"][0]["text"]


def test_a_task_gone_since_the_row_was_saved_is_unavailable(mcp: Mcp, monkeypatch: pytest.MonkeyPatch) -> None:
    _tool("divide", {"task": "demo.divide"})
    monkeypatch.setattr(handlers, "task_names", lambda: ["demo.word_stats"])  # fault: the task went away
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "divide", "arguments": {"a": 1, "b": 2}})
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Tool 'divide' is not available right now."


def test_called_as_a_task_it_runs_in_the_tasks_worker(mcp: Mcp) -> None:
    _tool("stats", {"task": "demo.word_stats"}, task_support="optional")
    mcp.initialize("2025-11-25")
    created = mcp.call("tools/call", {"name": "stats", "arguments": {"text": "x y x"}, "task": {"ttl": 60000}})
    task_id = created["task"]["taskId"]
    result = mcp.call("tasks/result", {"taskId": task_id})
    assert result["structuredContent"] == {"words": 3, "distinct": 2, "top": ["x", "y"]}


def test_a_plain_call_waits_at_most_its_timeout(mcp: Mcp, queued: None) -> None:
    _tool("slow", {"task": "demo.sleep", "timeout": 0.3})
    mcp.initialize()
    started = time.monotonic()
    result = mcp.call("tools/call", {"name": "slow", "arguments": {"seconds": 1}})
    assert result.get("isError") is True
    assert result["content"][0]["text"] == "Task 'demo.sleep' did not finish within 0.3 s."
    assert time.monotonic() - started < 3


def test_a_cancelled_call_stops_waiting(queued: None) -> None:
    checks: list[bool] = []

    def cancelled() -> bool:
        checks.append(True)
        return len(checks) > 2  # the client cancels while the call waits

    ctx = ToolContext(
        arguments={"seconds": 1},
        config={"task": "demo.sleep", "timeout": 10},
        principal=ANONYMOUS,
        tool_name="slow",
        tool_version=1,
        _progress=lambda *a: None,
        _log=lambda *a: None,
        _cancelled=cancelled,
    )
    started = time.monotonic()
    with pytest.raises(ToolCancelled):
        handlers.run_celery_task(ctx)
    assert time.monotonic() - started < 3


def test_without_a_result_backend_a_check_warns_and_a_plain_call_is_unavailable(
    mcp: Mcp, queued: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from celery import current_app
    from celery.backends.base import DisabledBackend

    from mcp_tools.contrib.celery.checks import check_result_backend

    assert check_result_backend() == []
    app = current_app._get_current_object()
    monkeypatch.setattr(type(app), "backend", DisabledBackend(app))  # fault: no backend configured
    (warning,) = check_result_backend()
    assert warning.id == "mcp_tools_celery.W001"
    _tool("divide", {"task": "demo.divide"})
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "divide", "arguments": {"a": 1, "b": 2}})
    assert result.get("isError") is True
    assert result["content"][0]["text"] == "Tool 'divide' is not available right now."


def test_the_admin_offers_both_built_in_kinds_with_label_description_and_choices(admin_client: Any) -> None:
    page = admin_client.get("/admin/mcp_tools/tool/add/").content.decode()
    assert "<strong>Run a Celery task</strong> <code>celery.task</code>" in page
    assert "<strong>Call a DRF view of this site</strong> <code>drf.view</code>" in page
    assert "Runs one of this site&#x27;s Celery tasks by name" in page
    assert "demo.word_stats" in page  # the task choices
    assert "library-stats" in page  # the route choices
