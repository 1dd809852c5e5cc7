"""First-run polish (issue 15): every admin action says what it did, and the landing page gives
a token command whose audience is this server's resource URL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.contenttypes.models import ContentType
from django.contrib.messages import get_messages
from django.test import Client
from django.utils import timezone

from mcp_tools.contrib.drf.models import ToolsetDefinition
from mcp_tools.models import AuditEvent, McpApproval, McpHandle, McpSession, McpTask, Scope, StreamStats, Tool
from tests.drfapp.models import Specimen
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db

# Each admin action of the app's admins -> (the message it must give, extra POST data for its
# confirmation page). A new action fails the coverage check below until it is listed here.
EXPECTED: dict[tuple[str, str], tuple[str, dict[str, str]]] = {
    ("tool", "enable_tools"): ("Enabled 1 tool(s); 1 already enabled.", {}),  # build_report starts disabled
    ("tool", "disable_tools"): ("Disabled 1 tool(s); 1 already disabled.", {"confirm": "yes"}),
    ("tool", "duplicate_tools"): ("Duplicated 2 tool(s), disabled:", {}),
    ("tool", "export_tools"): ("Exported 2 tool(s).", {}),
    ("tool", "delete_selected"): ("Successfully deleted 2 tools.", {"post": "yes"}),
    ("mcptask", "cancel_tasks"): ("Cancelled 0 task(s); 1 already finished.", {}),
    ("mcptask", "delete_selected"): ("Successfully deleted 1 ", {"post": "yes"}),
    ("mcphandle", "expire_handles"): ("Expired 1 handle(s); 1 already expired.", {}),
    ("mcphandle", "delete_selected"): ("Successfully deleted 2 ", {"post": "yes"}),
    ("mcpsession", "delete_selected"): ("Successfully deleted 1 ", {"post": "yes"}),
    ("streamstats", "delete_selected"): ("Successfully deleted 1 ", {"post": "yes"}),
    ("scope", "delete_selected"): ("Successfully deleted 1 ", {"post": "yes"}),
    ("auditevent", "delete_selected"): ("Successfully deleted 1 ", {"post": "yes"}),
    ("toolsetdefinition", "delete_selected"): ("Successfully deleted 1 ", {"post": "yes"}),
    ("mcpapproval", "approve_selected"): ("Approved 1 call(s): #", {}),  # and why the other was not: expired
    ("mcpapproval", "reject_selected"): ("Rejected 1 call(s): #", {}),
    ("mcpapproval", "delete_selected"): ("Successfully deleted 2 ", {"post": "yes"}),
}


def _tools() -> list[Tool]:
    echo = Tool(name="echo", handler_key="demo.echo", input_schema={"type": "object"})
    report = Tool(name="build_report", handler_key="demo.report", task_support="optional", enabled=False)
    report.input_schema = {"type": "object"}
    for tool in (echo, report):
        tool.full_clean()
        tool.save()
    return [echo, report]


def _call(client: Client) -> tuple[Mcp, dict[str, Any]]:
    """A real session, one audited call and one (eager) task."""
    _tools()
    Tool.objects.filter(name="build_report").update(enabled=True)
    mcp = Mcp(client)
    mcp.initialize("2025-11-25")
    mcp.call("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {}})
    return mcp, created


def _handles() -> list[McpHandle]:
    now = timezone.now()
    return [
        McpHandle.objects.create(id=f"h{i}", kind="basket", principal_key="anonymous", expires_at=now + delta)
        for i, delta in enumerate((timedelta(hours=1), -timedelta(hours=1)))
    ]


def _approvals() -> list[McpApproval]:
    """Two pending calls, the second past its deadline (so it can no longer be decided)."""
    now = timezone.now()
    return McpApproval.objects.bulk_create(
        McpApproval(tool_name="echo", tool_version=1, principal_key="anonymous", expires_at=now + delta)
        for delta in (timedelta(hours=1), -timedelta(seconds=1))
    )


def _definition() -> list[ToolsetDefinition]:
    definition = ToolsetDefinition(
        name="mine", model=ContentType.objects.get_for_model(Specimen), fields=["id", "char"], operations=["list"]
    )
    definition.full_clean()
    definition.save()
    return [definition]


ROWS: dict[str, Any] = {
    "tool": lambda client: _tools(),
    "mcptask": lambda client: [McpTask.objects.get(pk=_call(client)[1]["task"]["taskId"])],
    "mcphandle": lambda client: _handles(),
    "mcpsession": lambda client: (_call(client), [McpSession.objects.get()])[1],
    "streamstats": lambda client: [StreamStats.objects.create(process="host:1", notifier="polling")],
    "scope": lambda client: [Scope.objects.create(name="first-run")],
    "auditevent": lambda client: (_call(client), [AuditEvent.objects.filter(tool_name="echo").get()])[1],
    "toolsetdefinition": lambda client: _definition(),
    "mcpapproval": lambda client: _approvals(),
}


def test_every_admin_action_says_what_it_did(admin_client: Client, client: Client) -> None:
    request = admin_client.get("/admin/").wsgi_request
    found = {
        (model._meta.model_name, name)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in ("mcp_tools", "mcp_tools_drf")
        for name in model_admin.get_actions(request)
    }
    assert found == set(EXPECTED), "list each admin action and the message it gives"
    for (model_name, action), (message, extra) in sorted(EXPECTED.items()):
        rows = ROWS[model_name](client)
        app_label = "mcp_tools_drf" if model_name == "toolsetdefinition" else "mcp_tools"
        data = {"action": action, "_selected_action": [str(row.pk) for row in rows], **extra}
        response = admin_client.post(f"/admin/{app_label}/{model_name}/", data)
        assert response.status_code in (200, 302), (action, response.status_code)
        said = [str(m) for m in get_messages(response.wsgi_request)]
        assert any(text.startswith(message) for text in said), (model_name, action, said)
        admin_client.get("/admin/")  # shows (and so consumes) the messages
        _clear()


def _clear() -> None:
    for model in (ToolsetDefinition, McpApproval, McpHandle, McpTask, AuditEvent, McpSession, StreamStats, Tool, Scope):
        model._base_manager.all().delete()


@pytest.mark.parametrize(
    ("resource", "command"),
    [
        ("http://127.0.0.1:8000/mcp", "python manage.py mcp_token --user admin --scopes all"),
        (
            "http://127.0.0.1:9000/mcp",
            "MCP_RESOURCE_URL=http://127.0.0.1:9000/mcp python manage.py mcp_token --user admin --scopes all",
        ),
    ],
)
def test_the_landing_page_token_command_matches_the_servers_audience(
    client: Client, settings: Any, resource: str, command: str
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.DOTBackend", "RESOURCE_URL": resource}
    page = client.get("/").content.decode()
    assert f'<code id="token-command">{command}</code>' in page
    assert f"its audience is <code>{resource}</code>" in page
