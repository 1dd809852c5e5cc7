"""The tool editor in the admin: form errors, preview, revisions, bulk actions, import/export,
Try it and permissions, each checked against what an MCP client then sees."""

from __future__ import annotations

import io
import json
import sys
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client

from mcp_tools.models import AuditEvent, CatalogVersion, Scope, Tool, ToolRevision
from tests.support.admin_forms import tool_form
from tests.support.mcp_client import LEGACY, MODERN, Mcp

ADD = "/admin/mcp_tools/tool/add/"
LIST = "/admin/mcp_tools/tool/"

FORM = tool_form(name="greet", title="Greeter", description="Says hello", handler_config='{"prefix": "hi "}')


def _errors(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 200, response.status_code
    return {k: list(v) for k, v in response.context["adminform"].form.errors.items()}


def _listed(client: Client, version: str = "2025-11-25") -> dict[str, dict[str, Any]]:
    mcp = Mcp(client)
    if version == MODERN:
        mcp.modern()
    else:
        mcp.initialize(version)
    return {tool["name"]: tool for tool in mcp.call("tools/list")["tools"]}


# ---------------------------------------------------------------------- the form


def test_handler_choices_show_label_key_and_description(root_client: Client) -> None:
    page = root_client.get(ADD).content.decode()
    assert "<strong>Echo</strong> <code>demo.echo</code>" in page
    assert "Returns the text argument, after an optional configured prefix." in page
    assert 'type="radio" name="handler_key"' in page
    # What each kind's config holds is listed next to the config, one line a kind.
    assert "<code>demo.echo</code>: prefix (string)</div>" in page


def test_a_json_syntax_error_says_line_and_column(root_client: Client) -> None:
    errors = _errors(root_client.post(ADD, {**FORM, "input_schema": '{\n  "type": "object",\n}'}))
    # Python's own message and position: 3.13 names the trailing comma where 3.11 and 3.12 say
    # what they expected after it.
    if sys.version_info >= (3, 13):
        expected = "Invalid JSON at line 2, column 19: Illegal trailing comma before end of object."
    else:
        expected = "Invalid JSON at line 3, column 1: Expecting property name enclosed in double quotes."
    assert errors["input_schema"] == [expected]
    # What was typed is shown back unchanged, next to its error.
    page = root_client.post(ADD, {**FORM, "input_schema": '{"type": "object",}'}).content.decode()
    assert "{&quot;type&quot;: &quot;object&quot;,}</textarea>" in page


def test_every_meta_schema_error_is_shown_with_its_path(root_client: Client) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "bogus"}, "b": {"minimum": "x"}}, "required": "a"}
    errors = _errors(root_client.post(ADD, {**FORM, "input_schema": json.dumps(schema)}))["input_schema"]
    assert [e.split(":")[0] for e in errors] == [
        "Input schema is not a valid schema at /properties/a/type",
        "Input schema is not a valid schema at /properties/b/minimum",
        "Input schema is not a valid schema at /required",
    ]
    assert not Tool.objects.exists()


def test_the_handler_config_is_checked_against_the_kinds_schema(root_client: Client) -> None:
    errors = _errors(root_client.post(ADD, {**FORM, "handler_config": '{"prefix": 5, "other": 1}'}))
    assert errors["handler_config"] == [
        "(config): Additional properties are not allowed ('other' was unexpected)",
        "prefix: 5 is not of type 'string'",
    ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("icons", "ftp://x/i.png", "Line 1: the icon URL must start with https: or data:"),
        ("icons", "https://x/i.png image/png huge", "Line 1: 'huge' is not a MIME type, sizes (48x48) or light/dark"),
        ("rate_limit", "often", "Invalid rate 'often'; use e.g. '10/m', '500/h' or 'off'"),
        ("task_support", "sometimes", "Select a valid choice. sometimes is not one of the available choices."),
        ("handler_key", "no.such", "Select a valid choice. no.such is not one of the available choices."),
    ],
)
def test_other_fields_refuse_bad_values_clearly(root_client: Client, field: str, value: str, message: str) -> None:
    assert _errors(root_client.post(ADD, {**FORM, field: value}))[field] == [message]


def test_fields_are_saved_and_shown_back_indented(root_client: Client) -> None:
    scope = Scope.objects.create(name="notes:read")
    response = root_client.post(
        ADD,
        {
            **FORM,
            "icons": "https://example.com/a.png image/png 48x48,96x96 dark\ndata:image/png;base64,AAAA",
            "sensitive_arguments": "password, token",
            "rate_limit": "5/m",
            "task_support": "optional",
            "read_only_hint": "true",
            "required_scopes": [scope.pk],
        },
    )
    assert response.status_code == 302, _errors(response)
    tool = Tool.objects.get(name="greet")
    assert tool.icons == [
        {"src": "https://example.com/a.png", "mimeType": "image/png", "sizes": ["48x48", "96x96"], "theme": "dark"},
        {"src": "data:image/png;base64,AAAA"},
    ]
    assert (tool.sensitive_arguments, tool.rate_limit, tool.task_support) == (["password", "token"], "5/m", "optional")
    assert tool.read_only_hint is True
    assert list(tool.required_scopes.values_list("name", flat=True)) == ["notes:read"]
    page = root_client.get(f"{LIST}{tool.pk}/change/").content.decode()
    assert "{\n  &quot;type&quot;: &quot;object&quot;,\n  &quot;properties&quot;: {" in page
    assert "https://example.com/a.png image/png 48x48,96x96 dark" in page


def test_an_invalid_tool_never_reaches_tools_list(root_client: Client) -> None:
    root_client.post(ADD, {**FORM, "input_schema": '{"type": "array"}'})
    assert "greet" not in _listed(root_client)
    assert root_client.post(ADD, FORM).status_code == 302
    assert "greet" in _listed(root_client)


# ---------------------------------------------------------------------- preview


def test_the_preview_is_the_exact_tools_list_entry_of_every_revision(root_client: Client) -> None:
    Tool.objects.create(
        name="rich",
        title="Rich",
        description="d",
        input_schema={"type": "object"},
        output_schema={"type": "object", "properties": {"n": {"type": "number"}}},
        annotation_title="R",
        read_only_hint=True,
        icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
        task_support="optional",
        handler_key="demo.echo",
    )
    tool = Tool.objects.get(name="rich")
    response = root_client.get(f"{LIST}{tool.pk}/change/")
    preview = {entry["version"]: json.loads(entry["json"]) for entry in response.context["preview"]}
    assert set(preview) == {*LEGACY, MODERN}
    for version in (*LEGACY, MODERN):
        assert preview[version] == _listed(root_client, version)["rich"], version
    assert "icons" not in preview["2025-06-18"]
    assert "title" not in preview["2025-03-26"]


# ---------------------------------------------------------------------- revisions


def test_admin_edits_are_revisions_with_a_diff_and_a_restore(root_client: Client, root: Any) -> None:
    assert root_client.post(ADD, FORM).status_code == 302
    tool = Tool.objects.get(name="greet")
    change = f"{LIST}{tool.pk}/change/"
    assert root_client.post(change, {**FORM, "description": "Says hello loudly"}).status_code == 302
    first, second = ToolRevision.objects.filter(tool_pk=tool.pk).order_by("pk")
    assert (first.action, first.user, first.source) == ("created", root, "admin")
    assert (second.action, second.changed, second.version) == ("changed", ["description"], 2)

    history = root_client.get(f"{LIST}{tool.pk}/history/")
    assert [r.pk for r in history.context["revisions"]] == [second.pk, first.pk]
    diff = root_client.get(f"{LIST}revisions/{tool.pk}/compare/", {"a": first.pk, "b": second.pk})
    [changed] = diff.context["changes"]
    assert (changed.name, changed.lines) == (
        "description",
        (("@", "@@ -1 +1 @@"), ("-", "Says hello"), ("+", "Says hello loudly")),
    )

    restore = f"{LIST}revisions/{tool.pk}/{first.pk}/restore/"
    assert root_client.get(restore).status_code == 200  # a confirmation page first
    assert Tool.objects.get().description == "Says hello loudly"
    assert root_client.post(restore).status_code == 302
    tool.refresh_from_db()
    assert (tool.description, tool.version) == ("Says hello", 3)
    latest = ToolRevision.objects.filter(tool_pk=tool.pk).first()
    assert latest is not None
    assert (latest.action, latest.changed, latest.user) == ("restored", ["description"], root)
    assert _listed(root_client)["greet"]["description"] == "Says hello"


def test_a_deleted_tool_keeps_its_history_and_comes_back(root_client: Client) -> None:
    scope = Scope.objects.create(name="s")
    assert root_client.post(ADD, {**FORM, "required_scopes": [scope.pk]}).status_code == 302
    tool = Tool.objects.get(name="greet")
    pk = tool.pk
    assert root_client.post(f"{LIST}{pk}/delete/", {"post": "yes"}).status_code == 302
    assert not Tool.objects.exists()
    deleted = root_client.get(f"{LIST}deleted/")
    assert [r.tool_name for r in deleted.context["deleted"]] == ["greet"]
    revisions = root_client.get(f"{LIST}revisions/{pk}/")
    assert [r.action for r in revisions.context["revisions"]] == ["deleted", "created"]
    gone = revisions.context["revisions"][0]
    assert root_client.post(f"{LIST}revisions/{pk}/{gone.pk}/restore/").status_code == 302
    back = Tool.objects.get()
    assert (back.pk, back.name, back.version) == (pk, "greet", 2)
    assert list(back.required_scopes.values_list("name", flat=True)) == ["s"]
    assert "greet" in _listed(root_client)
    assert ToolRevision.objects.filter(tool_pk=pk).first().action == "restored"  # type: ignore[union-attr]


def test_a_restore_that_is_no_longer_valid_is_refused(root_client: Client) -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo")
    first = ToolRevision.objects.get(tool_pk=tool.pk)
    ToolRevision.objects.filter(pk=first.pk).update(data={**first.data, "handler_key": "gone.away"})
    tool.description = "x"
    tool.save()
    response = root_client.post(f"{LIST}revisions/{tool.pk}/{first.pk}/restore/")
    assert response.status_code == 200
    assert response.context["errors"] == ["handler_key: No handler is registered under 'gone.away'."]
    tool.refresh_from_db()
    assert tool.description == "x"


# ---------------------------------------------------------------------- bulk actions and filters


def _action(client: Client, action: str, tools: list[Tool], **extra: str) -> Any:
    return client.post(LIST, {"action": action, "_selected_action": [t.pk for t in tools], **extra}, follow=True)


def test_enable_says_what_it_did_bumps_once_and_stores_revisions(root_client: Client, root: Any) -> None:
    tools = [Tool.objects.create(name=f"t{i}", handler_key="demo.echo", enabled=i == 0) for i in range(3)]
    before = CatalogVersion.current()
    response = _action(root_client, "enable_tools", tools)
    assert [str(m) for m in response.context["messages"]] == [
        "Enabled 2 tool(s); 1 already enabled. The catalog version moved once."
    ]
    assert CatalogVersion.current() == before + 1
    rows = ToolRevision.objects.filter(source="admin action")
    assert sorted((r.tool_name, r.user, r.changed) for r in rows) == [
        ("t1", root, ["enabled"]),
        ("t2", root, ["enabled"]),
    ]
    assert set(_listed(root_client)) == {"t0", "t1", "t2"}


def test_duplicate_makes_disabled_copies_with_their_scopes(root_client: Client) -> None:
    scope = Scope.objects.create(name="s")
    tool = Tool.objects.create(name="orig", handler_key="demo.echo", description="d")
    tool.required_scopes.add(scope)
    Tool.objects.create(name="orig.copy", handler_key="demo.echo")
    before = CatalogVersion.current()
    response = _action(root_client, "duplicate_tools", [tool])
    assert [str(m) for m in response.context["messages"]] == ["Duplicated 1 tool(s), disabled: orig → orig.copy2."]
    copy = Tool.objects.get(name="orig.copy2")
    assert (copy.enabled, copy.description) == (False, "d")
    assert list(copy.required_scopes.values_list("name", flat=True)) == ["s"]
    assert CatalogVersion.current() == before + 1
    assert ToolRevision.objects.filter(tool_pk=copy.pk).get().action == "created"


def test_export_selected_downloads_the_json_of_those_tools(root_client: Client) -> None:
    tools = [Tool.objects.create(name=f"t{i}", handler_key="demo.echo") for i in range(3)]
    response = root_client.post(LIST, {"action": "export_tools", "_selected_action": [tools[0].pk, tools[2].pk]})
    assert response["Content-Disposition"] == 'attachment; filename="tools.json"'
    assert [t["name"] for t in json.loads(response.content)["tools"]] == ["t0", "t2"]


def test_bulk_delete_is_one_catalog_change_with_revisions(root_client: Client) -> None:
    tools = [Tool.objects.create(name=f"t{i}", handler_key="demo.echo") for i in range(3)]
    before = CatalogVersion.current()
    response = _action(root_client, "delete_selected", tools, post="yes")
    assert "Successfully deleted 3 tools." in [str(m) for m in response.context["messages"]]
    assert CatalogVersion.current() == before + 1
    assert ToolRevision.objects.filter(action="deleted").count() == 3


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ({"handler": "demo.add"}, ["b"]),
        ({"enabled__exact": "0"}, ["c"]),
        ({"task_support__exact": "optional"}, ["b"]),
        ({"q": "weather"}, ["c"]),
        ({"q": "b"}, ["b"]),
    ],
)
def test_filters_and_search(root_client: Client, query: dict[str, str], names: list[str]) -> None:
    scope = Scope.objects.create(name="s")
    Tool.objects.create(name="a", handler_key="demo.echo").required_scopes.add(scope)
    Tool.objects.create(name="b", handler_key="demo.add", task_support="optional")
    Tool.objects.create(name="c", handler_key="demo.echo", enabled=False, description="the weather")
    response = root_client.get(LIST, query)
    assert [t.name for t in response.context["cl"].result_list] == names
    page = root_client.get(LIST).content.decode()
    assert "By tool kind" in page
    assert "Add two numbers" in page  # the kind's label in the filter
    assert [
        t.name for t in root_client.get(LIST, {"required_scopes__id__exact": scope.pk}).context["cl"].result_list
    ] == ["a"]


class _Forms(HTMLParser):
    """The forms of a page as a browser's parser sees them: nested ones, the ids of all, and
    for each control with a ``form`` attribute the form it names."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.nested: list[dict[str, str | None]] = []
        self.ids: list[str | None] = []
        self.owners: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "form":
            if self.depth:
                self.nested.append(named)
            self.depth += 1
            self.ids.append(named.get("id"))
        elif tag in ("input", "button", "select", "textarea") and named.get("form"):
            self.owners[str(named.get("name") or named.get("value"))] = str(named["form"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.depth -= 1


def _forms(html: str) -> _Forms:
    parsed = _Forms()
    parsed.feed(html)
    return parsed


def test_no_form_is_nested_in_another_on_a_tools_pages(root_client: Client, root: Any) -> None:
    """Issue 34 (1): the "Explain for user" form sat inside the change form; browsers drop a
    nested form, so its button submitted the save. Its controls now name a form of their own,
    outside the change form, on every page of a tool (add, change with an explanation, Try it)."""
    tool = Tool.objects.create(name="explained", handler_key="demo.echo")
    change = f"/admin/mcp_tools/tool/{tool.pk}/change/"
    for url, query in (
        (change, {}),
        (change, {"explain_user": root.username}),
        (ADD, {}),
        (f"{LIST}{tool.pk}/try/", {}),
    ):
        response = root_client.get(url, query)
        assert response.status_code == 200, url
        forms = _forms(response.content.decode())
        assert forms.depth == 0, url
        assert forms.nested == [], (url, forms.nested)
        for control, owner in forms.owners.items():
            assert owner in forms.ids, (url, control, owner)
    forms = _forms(root_client.get(change).content.decode())
    assert forms.owners == {"explain_user": "mcp-explain-form", "Explain": "mcp-explain-form"}
    assert {"tool_form", "mcp-explain-form"} <= set(forms.ids)


# ---------------------------------------------------------------------- import and export pages


def test_the_import_upload_is_all_or_nothing(root_client: Client) -> None:
    Tool.objects.create(name="keep", handler_key="demo.echo")
    exported = root_client.get(f"{LIST}export/").content
    Tool.objects.all().delete()
    bad = json.loads(exported)
    bad["tools"].append({"name": "bad one", "handler_key": "demo.echo"})
    upload = io.BytesIO(json.dumps(bad).encode())
    upload.name = "tools.json"
    response = root_client.post(f"{LIST}import/", {"file": upload})
    assert response.context["problems"] == [
        "tool 2 ('bad one'): name: 1 to 128 characters of A-Z, a-z, 0-9, underscore, hyphen and dot; no spaces."
    ]
    assert not Tool.objects.exists()
    upload = io.BytesIO(exported)
    upload.name = "tools.json"
    response = root_client.post(f"{LIST}import/", {"file": upload}, follow=True)
    assert [str(m) for m in response.context["messages"]] == [
        "Imported 1 tool(s): 1 created, 0 updated, 0 unchanged; 0 scope(s) created."
    ]
    assert ToolRevision.objects.filter(tool_name="keep").first().source == "admin import"  # type: ignore[union-attr]


# ---------------------------------------------------------------------- try it


def _try(client: Client, tool: Tool, arguments: str, version: str = "2025-11-25") -> Any:
    return client.post(f"{LIST}{tool.pk}/try/", {"arguments": arguments, "protocol_version": version})


def test_try_it_runs_the_tool_as_a_client_would_and_audits_it(root_client: Client, root: Any) -> None:
    tool = Tool.objects.create(
        name="add",
        handler_key="demo.add",
        input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
        output_schema={"type": "object", "properties": {"sum": {"type": "number"}}},
    )
    response = _try(root_client, tool, '{"a": 2, "b": 3}')
    trial = response.context["trial"]
    assert trial.result == {"content": [{"type": "text", "text": '{"sum":5}'}], "structuredContent": {"sum": 5}}
    assert response.context["result"]["is_error"] is False
    assert "&quot;sum&quot;: 5" in response.content.decode()
    event = AuditEvent.objects.get()
    assert (event.principal_key, event.user_id, event.client_id, event.outcome) == (
        f"user:{root.pk}",
        root.pk,
        "django-admin",
        "ok",
    )
    # Invalid arguments: an isError result on 2025-11-25, a -32602 error on 2025-03-26.
    assert _try(root_client, tool, '{"a": "x"}').context["trial"].result["isError"] is True
    assert _try(root_client, tool, '{"a": "x"}', "2025-03-26").context["trial"].error["code"] == -32602
    # Arguments that are not an object, or not JSON, are form errors.
    assert _try(root_client, tool, "[1]").context["form"].errors["arguments"] == [
        "Tool arguments are a JSON object, e.g. {}."
    ]
    assert "line 1, column 2" in _try(root_client, tool, "{x").context["form"].errors["arguments"][0]


def test_try_it_shares_the_rate_limit_of_mcp_calls(root_client: Client) -> None:
    tool = Tool.objects.create(name="echo", handler_key="demo.echo", rate_limit="1/m")
    assert _try(root_client, tool, "{}").context["trial"].result.get("isError") is None
    limited = _try(root_client, tool, "{}").context["trial"].result
    assert limited["isError"] is True
    assert "Rate limit exceeded" in limited["content"][0]["text"]
    assert list(AuditEvent.objects.order_by("pk").values_list("outcome", flat=True)) == ["ok", "rate_limited"]


# ---------------------------------------------------------------------- permissions


def _staff(*codenames: str) -> Client:
    user = get_user_model().objects.create_user("staff", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="mcp_tools", codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


def test_model_permissions_decide_who_may_view_change_and_try(db: None) -> None:
    tool = Tool.objects.create(name="t", handler_key="demo.echo")
    first = ToolRevision.objects.get()
    viewer = _staff("view_tool")
    page = viewer.get(f"{LIST}{tool.pk}/change/")
    assert page.status_code == 200
    assert page.context["preview"]
    assert "Try it" not in page.content.decode()
    assert viewer.get(f"{LIST}{tool.pk}/history/").status_code == 200
    assert viewer.get(f"{LIST}{tool.pk}/try/").status_code == 403
    assert viewer.post(f"{LIST}revisions/{tool.pk}/{first.pk}/restore/").status_code == 403
    assert viewer.get(f"{LIST}import/").status_code == 403
    actions = [name for name, _ in viewer.get(LIST).context["action_form"].fields["action"].choices]
    assert actions == ["", "export_tools"]

    tester = Client()
    tester.force_login(get_user_model().objects.get(username="staff"))
    Permission.objects.get(codename="try_tool").user_set.add(get_user_model().objects.get(username="staff"))
    assert "Try it" in tester.get(f"{LIST}{tool.pk}/change/").content.decode()
    assert tester.get(f"{LIST}{tool.pk}/try/").status_code == 200
    assert tester.post(f"{LIST}{tool.pk}/try/", {"arguments": "{}", "protocol_version": MODERN}).status_code == 200


# ---------------------------------------------------------------------- the demo's landing page


@pytest.mark.parametrize("backend", ["mcp_tools.auth.AllowAnyBackend", "mcp_tools.auth.DOTBackend"])
def test_the_landing_page_says_how_to_connect(client: Client, settings: Any, backend: str) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": backend}
    page = client.get("/").content.decode()
    assert '<code id="mcp-url">http://testserver/mcp</code>' in page
    assert "npx @modelcontextprotocol/inspector" in page
    assert "npx @modelcontextprotocol/inspector@0.15.0   # Node.js 20" in page  # issue 26: one that runs there
    assert 'Client("http://testserver/mcp")' in page
    assert "StreamableHTTPClientTransport" in page
    assert '<a href="/admin/mcp_tools/tool/" id="admin-link">admin</a>' in page
    if backend.endswith("DOTBackend"):
        assert "/.well-known/oauth-protected-resource/mcp" in page
    else:
        assert "MCP_AUTH=oauth make run" in page


def test_deleting_a_scope_in_the_admin_is_a_revision_of_its_tools_by_that_user(root_client: Client, root: Any) -> None:
    scope = Scope.objects.create(name="s")
    tool = Tool.objects.create(name="t", handler_key="demo.echo")
    tool.required_scopes.add(scope)
    assert root_client.post(f"/admin/mcp_tools/scope/{scope.pk}/delete/", {"post": "yes"}).status_code == 302
    latest = ToolRevision.objects.filter(tool_pk=tool.pk).first()
    assert latest is not None
    assert (latest.changed, latest.user, latest.source) == (["required_scopes"], root, "admin")
