"""Issue 32 (finding 5): a staff user sees in the admin only what they may see elsewhere in it.

- The "Who can use this tool" panel of a tool's page needs only ``view_tool``. It told whether
  a user exists, the scopes they could be granted (so their groups) and their permissions,
  which "What a user sees" guards with the user model's view permission; it named the groups
  holding a permission and counted the users holding it directly.
- The usage page of the audit trail listed every tool name (from the tools table) and the
  tasks by status to staff who may only view the audit trail.
- A changelist took any lookup on its model's fields from the URL: ``__regex`` on the request
  id a client chose ran in Python on SQLite (7.5 s for a 25-character id, exponential).

Each refusal has its control: a staff user with the permission sees what the other may not.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.utils import timezone

from mcp_tools.models import AuditEvent, McpTask, Scope, Tool
from tests.drfapp.testing import make_user

pytestmark = pytest.mark.django_db

TOOL = "list_specimen"  # a model tool: a scope and a Django permission decide who sees it


def _staff(client: Client, name: str, *permissions: str) -> Client:
    user = make_user(name, *permissions)
    User.objects.filter(pk=user.pk).update(is_staff=True)
    client.force_login(User.objects.get(pk=user.pk))
    return client


@pytest.fixture
def restricted(synced: None) -> Tool:
    """The tool's scope is restricted to a group; another group holds its permission; a user
    (who exists: the panel must not tell) holds it directly."""
    Group.objects.create(name="scope-holders")
    Scope.objects.get(name="specimens:read").groups.set([Group.objects.get(name="scope-holders")])
    readers = Group.objects.create(name="specimen-readers")
    readers.permissions.add(Permission.objects.get(codename="view_specimen"))
    make_user("carol", "drfapp.view_specimen")
    return Tool.objects.get(name=TOOL)


def _page(client: Client, tool: Tool, **query: str) -> str:
    response = client.get(f"/admin/mcp_tools/tool/{tool.pk}/change/", query)
    assert response.status_code == 200
    return response.content.decode()


def test_the_tool_page_shows_no_user_group_or_count_to_who_may_only_view_tools(restricted: Tool) -> None:
    viewer = _staff(Client(), "viewer", "mcp_tools.view_tool")
    page = _page(viewer, restricted, explain_user="carol")
    assert "Who can use this tool" in page  # the tool's own requirements still show
    assert "specimens:read" in page
    assert "drfapp.view_specimen" in page
    for hidden in ("scope-holders", "specimen-readers", "users directly", "Explain for user", "explain_user", "carol"):
        assert hidden not in page, hidden
    assert "sees this tool" not in page
    assert "No user" not in _page(viewer, restricted, explain_user="nobody")  # no oracle either


def test_the_tool_page_explains_for_a_user_to_who_may_view_users_and_groups(restricted: Tool) -> None:
    """Control: with the view permissions of users and groups, as "What a user sees" asks."""
    admin_user = _staff(Client(), "viewer", "mcp_tools.view_tool", "auth.view_user", "auth.view_group")
    page = _page(admin_user, restricted, explain_user="carol")
    assert "only members of scope-holders can be granted it" in page
    assert "groups specimen-readers, 1 user directly" in page
    assert 'form="mcp-explain-form"' in page
    assert "user carol" in page
    assert "sees this tool" in page  # carol holds the permission (this backend: no scopes)
    assert "No user &#x27;nobody&#x27;." in _page(admin_user, restricted, explain_user="nobody")
    # Users but not groups: the explanation, and no group names.
    users_only = _staff(Client(), "users-only", "mcp_tools.view_tool", "auth.view_user")
    page = _page(users_only, restricted)
    assert "Explain for user" in page
    assert "specimen-readers" not in page
    assert "1 user directly" in page


USAGE = "/admin/mcp_tools/auditevent/usage/"


@pytest.fixture
def usage_rows(db: None) -> None:
    Tool.objects.create(name="never_called_secret", handler_key="demo.echo")
    AuditEvent.objects.create(principal_key="user:1", tool_name="echo", outcome="ok", created_at=timezone.now())
    McpTask.objects.create(principal_key="user:1", protocol_version="2025-11-25", tool_name="echo", tool_version=1)


@pytest.mark.usefixtures("usage_rows")
def test_the_usage_page_shows_tools_and_tasks_only_to_who_may_view_them() -> None:
    auditor = _staff(Client(), "auditor", "mcp_tools.view_auditevent")
    page = auditor.get(USAGE, {"period": "day"}).content.decode()
    assert "1 calls" in page  # the audit trail itself: what this viewer may see
    assert "never_called_secret" not in page
    assert "Tasks created" not in page
    assert "/admin/mcp_tools/mcptask/" not in page
    # Control: with the view permissions of tools and tasks.
    both = _staff(Client(), "both", "mcp_tools.view_auditevent", "mcp_tools.view_tool", "mcp_tools.view_mcptask")
    page = both.get(USAGE, {"period": "day"}).content.decode()
    assert "never_called_secret" in page
    assert "Tasks created" in page
    assert ">working<" in page


# A pattern that backtracks exponentially in Python's re on a string of "a"s that does not match.
EVIL = "^(a+)+$"
CHANGELISTS = ("auditevent", "mcptask", "mcpsession", "mcpapproval", "mcphandle", "tool", "scope")


@pytest.mark.parametrize("lookup", ["regex", "iregex", "contains", "startswith"])
@pytest.mark.parametrize("model", CHANGELISTS)
def test_changelists_refuse_pattern_lookups_from_the_url(admin_client: Any, model: str, lookup: str) -> None:
    field = {"auditevent": "request_id", "mcptask": "status_message", "mcpsession": "principal_key"}.get(
        model, "principal_key" if model in ("mcpapproval", "mcphandle") else "name"
    )
    started = time.monotonic()
    response = admin_client.get(f"/admin/mcp_tools/{model}/", {f"{field}__{lookup}": EVIL})
    assert response.status_code == 400  # DisallowedModelAdminLookup
    assert time.monotonic() - started < 5
    # Through a relation too, and on the primary key's alias.
    assert admin_client.get(f"/admin/mcp_tools/{model}/", {f"pk__{lookup}": EVIL}).status_code == 400


def test_a_regex_on_a_client_chosen_request_id_runs_nowhere(admin_client: Any) -> None:
    """The review's case: a 25-character request id and an exponential pattern."""
    AuditEvent.objects.create(principal_key="user:1", tool_name="echo", outcome="ok", request_id="a" * 25 + "!")
    started = time.monotonic()
    response = admin_client.get("/admin/mcp_tools/auditevent/", {"request_id__regex": EVIL})
    assert response.status_code == 400
    assert time.monotonic() - started < 1


def test_the_filters_links_and_date_hierarchy_still_work(admin_client: Any) -> None:
    """Control: every lookup the changelists' own filters, date hierarchy and the usage page's
    links produce is allowed."""
    now = timezone.now()
    AuditEvent.objects.create(principal_key="user:1", tool_name="echo", outcome="ok", created_at=now)
    queries = [
        ("auditevent", {"outcome__exact": "ok", "tool_name__exact": "echo"}),
        ("auditevent", {"created_at__gte": (now - timezone.timedelta(days=1)).isoformat()}),
        ("auditevent", {"created_at__year": str(now.year), "created_at__month": str(now.month)}),
        ("auditevent", {"outcome__in": "tool_error,invalid", "principal_key": "user:1"}),
        ("auditevent", {"user__username": "admin", "protocol_version__exact": "2025-11-25"}),
        ("mcptask", {"status__exact": "working", "tool_name__exact": "echo"}),
        ("mcpsession", {"initialized__exact": "1"}),
        ("tool", {"enabled__exact": "1", "handler": "demo.echo", "required_scopes__id__exact": "1"}),
        ("mcpapproval", {"state": "pending"}),
        ("mcphandle", {"live": "yes"}),
    ]
    for model, query in queries:
        assert admin_client.get(f"/admin/mcp_tools/{model}/", query).status_code == 200, (model, query)
