"""Issue 26: no silent dead ends. ``mcp_explain`` (and the service behind the admin's panel)
says, for a grant, which tools it sees and every reason it does not see the others; what it
calls visible is exactly what the endpoint lists for the same grant. System checks W010/W011
name tools nobody can see for want of a Django permission."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import CommandError

from mcp_tools.models import Scope, Tool
from mcp_tools.services.explain import explain, grant_for
from tests.drfapp.testing import Caller, make_user, perms
from tests.integration.test_oauth import authed, make_token, names


def _explain(*args: str) -> str:
    out = io.StringIO()
    call_command("mcp_explain", *args, stdout=out)
    return out.getvalue()


def _reasons(output: str, tool: str) -> str:
    """The lines of ``tool``'s verdict in the command's output."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() and line.split()[0] == tool)
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(" "):
            break
        block.append(line)
    return "\n".join(block)


# --------------------------------------------------------------------------- model tools


@pytest.mark.usefixtures("synced")
def test_a_missing_django_permission_is_named_and_granting_it_shows_the_tool(client: Any) -> None:
    bob = make_user("bob")
    output = _explain("--user", "bob", "--scopes", "specimens:read", "--tool", "list_specimen")
    verdict = _reasons(output, "list_specimen")
    assert "hidden" in verdict
    assert "lacks the Django permission drfapp.view_specimen" in verdict
    assert "list_specimen" not in Caller(client, "bob", "specimens:read").tools()
    bob.user_permissions.add(Permission.objects.get(codename="view_specimen"))
    bob = User.objects.get(pk=bob.pk)  # has_perm caches per instance
    output = _explain("--user", "bob", "--scopes", "specimens:read", "--tool", "list_specimen")
    assert "list_specimen  visible" in output
    assert "list_specimen" in Caller(client, "bob", "specimens:read").tools()


@pytest.mark.usefixtures("synced")
def test_a_missing_scope_and_a_disabled_tool_are_named(client: Any) -> None:
    make_user("carol", *perms("specimen"))
    Tool.objects.filter(name="get_specimen").update(enabled=False)
    output = _explain("--user", "carol", "--scopes", "specimens:read")
    assert "the grant lacks the scope specimens:write" in _reasons(output, "create_specimen")
    assert "disabled" in _reasons(output, "get_specimen")
    assert "visible" in _reasons(output, "list_specimen")


@pytest.mark.usefixtures("synced")
@pytest.mark.parametrize(
    ("who", "granted", "scopes"),
    [
        ("dave", (), "specimens:read"),
        ("erin", ("view",), "specimens:read"),
        ("fred", ("view", "add"), "specimens:read specimens:write"),
        ("gina", ("view", "add", "change", "delete"), "*"),
    ],
)
def test_what_explain_calls_visible_is_what_the_endpoint_lists(
    client: Any, who: str, granted: tuple[str, ...], scopes: str
) -> None:
    user = make_user(who, *(perms("specimen", *granted) if granted else ()))
    grant = grant_for(user, None if scopes == "*" else scopes.split())
    visible = {v.tool for v in explain(grant) if v.visible}
    assert visible == set(Caller(client, who, scopes).tools())
    for verdict in explain(grant):
        assert verdict.visible == (not verdict.reasons), verdict


# --------------------------------------------------------------------------- OAuth grants


@pytest.mark.usefixtures("oauth")
def test_a_real_token_is_explained_as_the_endpoint_sees_it(client: Any) -> None:
    alice = User.objects.create_user("alice")
    token = make_token(alice, "notes:read")
    output = _explain(f"--token={token}")  # a token_urlsafe token may start with "-"
    assert output.startswith("Grant: user alice, client ")
    assert "the token's scopes: notes:read" in output
    listed = set(names(authed(client, token)))
    visible = {line.split()[0] for line in output.splitlines()[2:] if line.split()[1:2] == ["visible"]}
    assert visible == listed
    verdict = _reasons(output, "build_report")
    assert "the grant lacks the scope notes:write (user alice could be granted it: ask for it)" in verdict


@pytest.mark.usefixtures("oauth")
def test_a_scope_the_user_can_never_get_says_so() -> None:
    User.objects.create_user("alice")
    Scope.objects.get(name="admin:tools").groups.add(Group.objects.create(name="admins"))
    output = _explain("--user", "alice", "--tool", "test_error_handling")
    assert "every scope the user could be granted" in output
    assert "can never be granted it (restricted to groups the user is not in)" in output


@pytest.mark.usefixtures("oauth")
def test_a_refused_token_and_an_unknown_tool_are_clear_errors() -> None:
    with pytest.raises(CommandError, match="would refuse this token"):
        _explain("--token", "not-a-token")
    User.objects.create_user("alice")
    with pytest.raises(CommandError, match="No tool named nope"):
        _explain("--user", "alice", "--tool", "nope")
    with pytest.raises(CommandError, match="No user"):
        _explain("--user", "nobody")


def test_an_unregistered_kind_is_named(demo_tools: None) -> None:
    Tool.objects.filter(name="echo").update(handler_key="gone.kind")
    output = _explain("--tool", "echo")
    assert "its tool kind 'gone.kind' is not registered" in _reasons(output, "echo")


# --------------------------------------------------------------------------- checks


@pytest.mark.usefixtures("synced")
def test_w010_model_tools_under_a_backend_without_users(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.AllowAnyBackend"}
    ids = [m.id for m in run_checks(databases=["default"])]
    assert "mcp_tools.W010" in ids
    output = _explain("--tool", "list_specimen")
    assert "this backend has no user" in _reasons(output, "list_specimen")


@pytest.mark.usefixtures("synced")
def test_w011_a_permission_nobody_holds_until_a_group_has_it() -> None:
    def flagged() -> set[str]:
        return {str(m.obj) for m in run_checks(databases=["default"]) if m.id == "mcp_tools.W011"}

    assert "drfapp.view_specimen" in flagged()
    make_user("superuser-only", superuser=True)
    assert "drfapp.view_specimen" in flagged()  # superusers aside
    readers = Group.objects.create(name="readers")
    readers.permissions.add(Permission.objects.get(codename="view_specimen"))
    assert "drfapp.view_specimen" not in flagged()


# --------------------------------------------------------------------------- the admin


@pytest.mark.usefixtures("synced")
def test_the_tool_page_says_who_can_use_it_and_explains_for_a_user(admin_client: Any) -> None:
    make_user("bob")
    readers = Group.objects.create(name="readers")
    readers.permissions.add(Permission.objects.get(codename="view_specimen"))
    tool = Tool.objects.get(name="list_specimen")
    url = f"/admin/mcp_tools/tool/{tool.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert "Who can use this tool" in page
    assert "Scope <code>specimens:read</code>: any user can be granted it." in page
    assert "Django permission <code>drfapp.view_specimen</code>: groups readers, 0 users directly" in page
    assert "when the caller's user holds <code>drfapp.view_specimen</code>" in page
    page = admin_client.get(url, {"explain_user": "bob"}).content.decode()
    assert "does not see this tool" in page
    assert "user bob lacks the Django permission drfapp.view_specimen" in page
    page = admin_client.get(url, {"explain_user": "<nobody>"}).content.decode()
    assert "No user &#x27;&lt;nobody&gt;&#x27;." in page


@pytest.mark.django_db
def test_admin_polish_help_texts_keep_their_placeholders_and_the_audit_list_leads_with_the_outcome(
    admin_client: Any,
) -> None:
    """Issue 26: help texts with <name> lost it as an HTML tag ("list_, get_"); the audit list
    put the outcome after the long principal keys (off screen at 1366 px)."""
    page = admin_client.get("/admin/mcp_tools_drf/toolsetdefinition/add/").content.decode()
    assert "list_NAME, get_NAME" in page
    assert "<name>" not in page
    # The handler config's help: one folded line per kind, not every kind's raw JSON Schema.
    page = admin_client.get("/admin/mcp_tools/tool/add/").content.decode()
    assert "<summary>Config keys of each tool kind</summary>" in page
    assert "<code>drf.view</code>: route (one of " in page
    assert "method (one of GET, POST, PUT, PATCH, DELETE, required)" in page
    assert "&quot;properties&quot;" not in page.split("Config keys of each tool kind")[1].split("</details>")[0]
    from mcp_tools.models import AuditEvent

    AuditEvent.objects.create(principal_key="user:1/client:" + "x" * 60, tool_name="echo", outcome="ok")
    page = admin_client.get("/admin/mcp_tools/auditevent/").content.decode()
    assert "user:1/client:xxxxxxxxxxxxxxxxx…" in page
    assert page.index("column-outcome") < page.index("column-caller") < page.index("column-client_id")


@pytest.mark.usefixtures("synced")
def test_what_a_user_sees_lists_every_tool_with_its_reasons(admin_client: Any, client: Any) -> None:
    make_user("bob", *perms("specimen", "view"))
    page = admin_client.get("/admin/mcp_tools/tool/").content.decode()
    assert 'href="/admin/mcp_tools/tool/explain/"' in page
    page = admin_client.get("/admin/mcp_tools/tool/explain/", {"user": "bob"}).content.decode()
    visible = {v.tool for v in explain(grant_for(User.objects.get(username="bob"))) if v.visible}
    assert f"{len(visible)} of {Tool.objects.count()} tools visible" in page
    assert "user bob lacks the Django permission drfapp.add_specimen" in page
    assert (
        "No user &#x27;nobody&#x27;."
        in admin_client.get("/admin/mcp_tools/tool/explain/", {"user": "nobody"}).content.decode()
    )
    # Staff who may view tools but not users get no such page.
    staff = make_user("staff", "mcp_tools.view_tool")
    User.objects.filter(pk=staff.pk).update(is_staff=True)
    client.force_login(User.objects.get(pk=staff.pk))
    assert client.get("/admin/mcp_tools/tool/explain/", {"user": "bob"}).status_code == 403


# --------------------------------------------------------------------------- not served here (issue 34)


@pytest.mark.usefixtures("synced")
def test_a_model_tool_whose_toolset_is_not_loaded_here_is_neither_listed_nor_visible(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A toolset registered in the process that ran mcp_sync_toolsets, not in this one (its
    handlers module came after this process started): its rows are neither listed nor called,
    and explain says why; the other tools are unaffected."""
    import logging

    from mcp_tools.catalog import reset

    row = Tool.objects.get(name="list_kind")
    orphan = Tool.objects.create(
        name="list_invoice",
        handler_key="drf.list",
        handler_config={"toolset": "billing.InvoiceTools"},
        input_schema=row.input_schema,
        output_schema=row.output_schema,
    )
    reset()
    make_user("root", superuser=True)
    caller = Caller(client, "root")
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        listed = caller.tools()
    assert "list_kind" in listed
    assert "list_invoice" not in listed
    assert "No model toolset is registered as 'billing.InvoiceTools'" in caplog.text
    assert "restarts" in caplog.text
    answer = caller.call("list_invoice")
    assert answer["isError"] is True
    assert answer["content"][0]["text"] == "Tool 'list_invoice' is not available right now."

    (verdict,) = explain(grant_for(User.objects.get(username="root")), ["list_invoice"])
    assert not verdict.visible
    (reason,) = verdict.reasons
    assert reason.startswith("not served by this process: No model toolset is registered as 'billing.InvoiceTools'")
    assert reason.endswith("(a handlers module added after a server started is loaded when it restarts)")
    orphan.delete()
