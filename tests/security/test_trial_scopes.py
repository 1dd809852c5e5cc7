"""Try it within a real grant: under an OAuth backend the admin's trial runs with the scopes the
staff user could be granted (as ``mcp_token`` and the consent page would give them), shows them,
refuses a tool outside them with the reason, and its audit row records them."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from mcp_tools.models import AuditEvent, Scope, Tool

pytestmark = pytest.mark.django_db

LIST = "/admin/mcp_tools/tool/"
VERSION = "2025-11-25"


@pytest.fixture
def tester(demo_tools: None) -> Client:
    """A staff user with only the view and try permissions on tools."""
    user = User.objects.create_user("tess", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_tool", "try_tool"]))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admins_only(demo_tools: None) -> None:
    """admin:tools is granted only to members of the group "admins"."""
    Scope.objects.get(name="admin:tools").groups.add(Group.objects.create(name="admins"))


def _try(client: Client, name: str, arguments: str = "{}") -> Any:
    tool = Tool.objects.get(name=name)
    return client.post(f"{LIST}{tool.pk}/try/", {"arguments": arguments, "protocol_version": VERSION})


def test_a_tool_outside_the_users_grant_is_refused_with_the_reason(
    tester: Client, oauth_backend: None, admins_only: None
) -> None:
    response = _try(tester, "test_error_handling", "{}")
    trial = response.context["trial"]
    assert trial.response is None
    assert trial.http_status == 403
    assert "admin:tools" in trial.refusal
    assert "granted only to members of admins" in trial.refusal
    assert "Not run" in response.content.decode()
    assert not AuditEvent.objects.filter(tool_name="test_error_handling").exists()


def test_an_inactive_scope_is_named_as_the_reason(tester: Client, oauth_backend: None) -> None:
    Scope.objects.filter(name="admin:tools").update(active=False)
    trial = _try(tester, "test_error_handling", "{}").context["trial"]
    assert trial.response is None
    assert "admin:tools (the scope is inactive" in trial.refusal


def test_a_tool_within_the_grant_runs_and_the_audit_row_records_the_scopes(
    tester: Client, oauth_backend: None, admins_only: None
) -> None:
    response = _try(tester, "build_report", '{"steps": 1}')
    trial = response.context["trial"]
    assert trial.result["content"][0]["text"] == "Report ready after 1 steps."
    granted = response.context["trial_scopes"]
    assert "notes:write" in granted
    assert "admin:tools" not in granted
    page = response.content.decode()
    assert "Runs with the scopes you could be granted" in page
    assert "<code>notes:write</code>" in page
    row = AuditEvent.objects.get(tool_name="build_report")
    assert row.scopes == " ".join(granted)
    assert row.client_id == "django-admin"


def test_the_open_backend_keeps_every_tool_and_says_so(tester: Client) -> None:
    response = _try(tester, "test_error_handling", "{}")
    assert response.context["trial"].result is not None  # called, as any caller of an open endpoint may
    assert response.context["trial_scopes"] is None
    assert "does not restrict by scope" in response.content.decode()
