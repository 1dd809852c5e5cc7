"""Progressive discovery (issue 36): the entry set in tools/list, search_tools and describe_tools,
the mode per site, per OAuth client and by size, and what stays the same when the mode is off.

Every server message goes through the schema-checking client (tests/support/mcp_client.py), for each
revision where it matters (T-2, T-3, T-10)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools import discovery
from mcp_tools.auth import get_auth_backend
from mcp_tools.catalog import get_catalog
from mcp_tools.models import AuditEvent, CatalogVersion, SearchEntry, Tool
from mcp_tools.protocol.shaping import shape_tool
from mcp_tools.protocol.versions import get_revision
from mcp_tools.services import tools_fingerprint
from mcp_tools.types import ANONYMOUS
from tests.support.mcp_client import LEGACY, MODERN, Mcp

pytestmark = pytest.mark.django_db

ALL_VERSIONS = [*LEGACY, MODERN]


@pytest.fixture
def on(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "on"}


def _open(mcp: Mcp, version: str) -> Mcp:
    if version == MODERN:
        return mcp.modern()
    mcp.initialize(version)
    return mcp


def _names(mcp: Mcp) -> list[str]:
    names: list[str] = []
    cursor = None
    while True:
        result = mcp.call("tools/list", {"cursor": cursor} if cursor else {})
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            return names


def _search(mcp: Mcp, query: str, **more: Any) -> dict[str, Any]:
    result = mcp.call("tools/call", {"name": "search_tools", "arguments": {"query": query, **more}})
    assert not result.get("isError"), result
    if "structuredContent" in result:
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]  # T-11
        return dict(result["structuredContent"])
    return dict(json.loads(result["content"][0]["text"]))  # 2025-03-26: text only


# --------------------------------------------------------------------------- mode off


def test_mode_off_lists_everything_and_knows_no_discovery_tool(mcp: Mcp) -> None:
    """The default: tools/list is the whole view, and the discovery tools do not exist."""
    mcp.initialize()
    names = _names(mcp)
    assert names == sorted(Tool.objects.filter(enabled=True).values_list("name", flat=True))
    assert "search_tools" not in names
    _, message, _ = mcp.request("tools/call", {"name": "search_tools", "arguments": {"query": "echo"}})
    assert message["error"]["code"] == -32602  # T-8: unknown tool


# --------------------------------------------------------------------------- the entry set


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_mode_on_lists_the_entry_set_and_the_discovery_tools(mcp: Mcp, on: None, version: str) -> None:
    """T-2, T-3: the entry set is a valid tools/list in every revision: the discovery tools
    first, then the tools marked always listed and those whose arguments go in headers
    (get_weather: x-mcp-header, H-D7), nothing else."""
    Tool.objects.filter(name__in=["echo", "add"]).update(always_listed=True)
    _open(mcp, version)
    result = mcp.call("tools/list")
    assert [t["name"] for t in result["tools"]] == ["search_tools", "describe_tools", "add", "echo", "get_weather"]
    search = result["tools"][0]
    assert search["inputSchema"]["required"] == ["query"]
    assert search["inputSchema"]["additionalProperties"] is False
    assert search["annotations"]["readOnlyHint"] is True
    assert ("outputSchema" in search) == (version != "2025-03-26")
    assert "nextCursor" not in result


def test_entry_set_pages_keep_the_discovery_tools_on_the_first(mcp: Mcp, on: None, settings: Any) -> None:
    """PA-1: the entry set is paged like the full list; the discovery tools come once."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": 2}
    Tool.objects.filter(name__in=["echo", "add", "noop", "color_swatch"]).update(always_listed=True)
    mcp.initialize()
    assert _names(mcp) == ["search_tools", "describe_tools", "add", "color_swatch", "echo", "get_weather", "noop"]


def test_every_tool_of_the_grant_is_found_by_its_name_and_callable(mcp: Mcp, on: None) -> None:
    """Done when: every tool the grant may use is found by a search that names it, first, and
    is callable by name although it is not listed."""
    mcp.initialize()
    catalog = get_catalog()
    principal = catalog.with_permissions(ANONYMOUS)
    usable = [t.name for t in catalog.tools if discovery.usable(t, principal, get_auth_backend().can_see)]
    assert len(usable) > 20
    for name in usable:
        assert _search(mcp, name)["tools"][0]["name"] == name
    result = mcp.call("tools/call", {"name": "echo", "arguments": {"text": "found"}})
    assert result["content"][0]["text"] == "found"


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_search_results_carry_what_a_model_chooses_and_calls_by(mcp: Mcp, on: None, version: str) -> None:
    """T-10, T-11: the result validates; each hit has its name, a short description and its
    arguments at a glance; the best match comes first."""
    _open(mcp, version)
    found = _search(mcp, "current weather in a city")
    assert found["tools"][0] == {
        "name": "get_weather",
        "title": "Weather",
        "description": "Current conditions for a city (demo data: Paris, Tokyo, Lima).",
        "arguments": "city: string",
        "readOnly": True,
    }
    assert found["more"] is False


def test_search_limit_and_more(mcp: Mcp, on: None) -> None:
    mcp.initialize()
    found = _search(mcp, "test returns content", limit=2)
    assert len(found["tools"]) == 2
    assert found["more"] is True
    assert len(_search(mcp, "test returns content", limit=20)["tools"]) > 2


def test_a_search_that_finds_nothing_says_so(mcp: Mcp, on: None) -> None:
    mcp.initialize()
    found = _search(mcp, "zzzyzx qqqxx")
    assert found["tools"] == []
    assert found["more"] is False
    assert "No tool matched" in found["note"]
    assert _search(mcp, "the of and")["tools"] == []  # stop words only


@pytest.mark.parametrize(
    "arguments",
    [{}, {"query": ""}, {"query": 5}, {"query": "x", "limit": 0}, {"query": "x", "limit": 21}, {"query": "x", "y": 1}],
)
def test_bad_search_arguments_get_a_clear_error(mcp: Mcp, on: None, arguments: dict[str, Any]) -> None:
    """T-9: argument errors are isError results that say what is wrong."""
    mcp.initialize("2025-11-25")
    result = mcp.call("tools/call", {"name": "search_tools", "arguments": arguments})
    assert result["isError"] is True
    assert "Invalid arguments for tool 'search_tools'" in result["content"][0]["text"]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_describe_gives_the_definition_tools_list_gives(mcp: Mcp, on: None, version: str) -> None:
    """describe_tools answers each tool exactly as tools/list shapes it for the revision, and
    names it cannot describe (unknown or outside the grant) under unknown."""
    _open(mcp, version)
    result = mcp.call("tools/call", {"name": "describe_tools", "arguments": {"names": ["add", "nope", "echo"]}})
    found = result.get("structuredContent") or json.loads(result["content"][0]["text"])
    catalog = get_catalog()
    rev = get_revision(version)
    expected = [shape_tool(catalog.by_name[n].spec, rev, tasks_enabled=True) for n in ("add", "echo")]
    assert found == {"tools": expected, "unknown": ["nope"]}


def test_the_entry_set_follows_always_listed(mcp: Mcp, on: None) -> None:
    """Curating: marking a tool always listed adds it to the entry set, and moves every
    listener's fingerprint (list_changed, T-12)."""
    mcp.initialize()
    before = tools_fingerprint(ANONYMOUS)[0]
    assert "echo" not in _names(mcp)
    tool = Tool.objects.get(name="echo")
    tool.always_listed = True
    tool.save()
    assert "echo" in _names(mcp)
    assert tools_fingerprint(ANONYMOUS)[0] != before


def test_tags_find_a_tool(mcp: Mcp, on: None) -> None:
    """Admin-given tags (groups) are searched: a word only a tag holds finds the tool."""
    mcp.initialize()
    assert "add" not in [t["name"] for t in _search(mcp, "billing")["tools"]]
    tool = Tool.objects.get(name="add")
    tool.tags = ["billing", "invoices"]
    tool.full_clean()
    tool.save()
    assert _search(mcp, "billing")["tools"][0]["name"] == "add"
    assert _search(mcp, "invoice")["tools"][0]["name"] == "add"  # stemmed


def test_a_changed_description_is_searched_after_the_change(mcp: Mcp, on: None) -> None:
    """The entries follow the catalog version: an edit is found by its new words at once."""
    mcp.initialize()
    assert _search(mcp, "flamingo")["tools"] == []
    Tool.objects.filter(name="noop").update(description="Feeds the flamingo.")
    assert [t["name"] for t in _search(mcp, "flamingo")["tools"]] == ["noop"]


def test_disabled_and_deleted_tools_are_never_found(mcp: Mcp, on: None) -> None:
    mcp.initialize()
    assert _search(mcp, "echo")["tools"][0]["name"] == "echo"
    Tool.objects.filter(name="echo").update(enabled=False)
    assert "echo" not in [t["name"] for t in _search(mcp, "echo repeat text")["tools"]]
    _, message, _ = mcp.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert message["error"]["code"] == -32602
    Tool.objects.filter(name="echo").delete()
    assert not SearchEntry.objects.filter(tool__name="echo").exists()


def test_discovery_calls_are_audited_and_rate_limited(mcp: Mcp, on: None, settings: Any) -> None:
    """Same rules as any tool: one audit row per call, the site's rate limit per principal."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RATE_LIMIT": "2/m"}
    mcp.initialize()
    _search(mcp, "echo")
    mcp.call("tools/call", {"name": "describe_tools", "arguments": {"names": ["echo"]}})
    assert set(AuditEvent.objects.values_list("tool_name", "outcome")) >= {
        ("search_tools", "ok"),
        ("describe_tools", "ok"),
    }
    _search(mcp, "echo")
    result = mcp.call("tools/call", {"name": "search_tools", "arguments": {"query": "echo"}})
    assert result["isError"] is True
    assert "Rate limit exceeded" in result["content"][0]["text"]


def test_a_search_costs_a_constant_number_of_queries(mcp: Mcp, on: None) -> None:
    """A request costs the same queries at 30 tools and at 530 (the entries are checked once
    per catalog version and process; a search is then one SELECT)."""
    mcp.initialize()

    def count() -> int:
        _search(mcp, "echo text")  # the first under this catalog version brings the entries up to date
        with CaptureQueriesContext(connection) as ctx:
            _search(mcp, "repeat the text back")
        return len(ctx)

    small = count()
    Tool.objects.bulk_create(
        [
            Tool(name=f"bulk_{i:04d}", description=f"Repeats text number {i}.", handler_key="demo.echo")
            for i in range(500)
        ]
    )
    CatalogVersion.bump()
    large = count()
    assert small == large <= 5


# --------------------------------------------------------------------------- the mode per grant


def test_mode_per_oauth_client(mcp: Mcp, settings: Any) -> None:
    """DISCOVERY_CLIENTS turns the mode on for one application (and off for another)."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "tests.support.auth.HeaderAuthBackend"}
    catalog = get_catalog()
    visible = get_auth_backend().can_see
    grant = ANONYMOUS.__class__
    claude = catalog.with_permissions(grant(key="user:a/client:claude", client_id="claude", scopes=frozenset()))
    other = catalog.with_permissions(grant(key="user:a/client:other", client_id="other", scopes=frozenset()))
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY_CLIENTS": {"claude": "on"}}
    assert discovery.entry(get_catalog(), claude, visible) is not None
    assert discovery.entry(get_catalog(), other, visible) is None
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "on", "DISCOVERY_CLIENTS": {"other": "off"}}
    assert discovery.entry(get_catalog(), claude, visible) is not None
    assert discovery.entry(get_catalog(), other, visible) is None


def test_auto_turns_on_above_the_threshold(mcp: Mcp, settings: Any) -> None:
    """auto: a grant that may use more tools than DISCOVERY_THRESHOLD gets the entry set."""
    mcp.initialize()
    count = len(_names(mcp))
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "auto", "DISCOVERY_THRESHOLD": count}
    assert "search_tools" not in _names(mcp)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "auto", "DISCOVERY_THRESHOLD": count - 1}
    assert _names(mcp) == ["search_tools", "describe_tools", "get_weather"]


def test_a_row_named_like_a_discovery_tool_is_shadowed_only_in_the_mode(mcp: Mcp, settings: Any) -> None:
    """With the mode off a row named search_tools is an ordinary tool; with it on the discovery
    tool answers, and the row is neither listed nor found (check mcp_tools.W012 says so)."""
    echo = Tool.objects.get(name="echo")
    Tool.objects.create(
        name="search_tools", description="Site tool.", handler_key="demo.echo", input_schema=echo.input_schema
    )
    mcp.initialize()
    result = mcp.call("tools/call", {"name": "search_tools", "arguments": {"text": "mine"}})
    assert result["content"][0]["text"] == "mine"
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "on"}
    assert _names(mcp) == ["search_tools", "describe_tools", "get_weather"]
    assert "search_tools" not in [t["name"] for t in _search(mcp, "site tool")["tools"]]


def test_search_index_command_writes_the_entries(demo_tools: None) -> None:
    """``manage.py mcp_search_index`` brings the entries up to date ahead of the first search."""
    out = io.StringIO()
    call_command("mcp_search_index", stdout=out)
    assert SearchEntry.objects.count() == Tool.objects.filter(enabled=True).count()
    assert "written" in out.getvalue()
    out = io.StringIO()
    call_command("mcp_search_index", stdout=out)
    assert "0 written" in out.getvalue()


# --------------------------------------------------------------------------- curating


@pytest.mark.parametrize(
    ("tags", "problem"),
    [
        ("billing", "A list of tags"),
        ([1], "A list of tags"),
        ([f"t{i}" for i in range(17)], "At most 16 tags"),
        (["-billing"], "Tag 1: 1 to 40"),
        (["x" * 41], "Tag 1: 1 to 40"),
        (["ok", "bad;tag"], "Tag 2: 1 to 40"),
        (["Billing", "billing"], "Each tag once"),
    ],
)
def test_bad_tags_are_refused_with_a_reason(demo_tools: None, tags: Any, problem: str) -> None:
    from django.core.exceptions import ValidationError

    tool = Tool.objects.get(name="add")
    tool.tags = tags
    with pytest.raises(ValidationError) as caught:
        tool.full_clean()
    assert any(problem in message for message in caught.value.message_dict["tags"])


def test_tags_and_always_listed_travel_with_export_import_and_revisions(demo_tools: None) -> None:
    """Like every tool field (models.tools.EDITABLE_FIELDS): exported, imported, kept in revisions."""
    from mcp_tools.editing.transfer import ImportRejected, export_tools, import_tools
    from mcp_tools.models import ToolRevision

    tool = Tool.objects.get(name="add")
    tool.tags, tool.always_listed = ["billing", "math"], True
    tool.full_clean()
    tool.save()
    latest = ToolRevision.objects.filter(tool_pk=tool.pk).first()
    assert latest is not None
    assert set(latest.changed) == {"tags", "always_listed"}
    document = export_tools()
    row = next(r for r in document["tools"] if r["name"] == "add")
    assert (row["tags"], row["always_listed"]) == (["billing", "math"], True)
    Tool.objects.filter(name="add").update(tags=[], always_listed=False)
    report = import_tools(document)
    assert "add" in report.updated
    assert Tool.objects.filter(name="add", tags=["billing", "math"], always_listed=True).exists()
    with pytest.raises(ImportRejected) as caught:
        import_tools({**document, "tools": [{**row, "tags": "billing"}]})
    assert "tool 1 ('add'): tags: must be a list, not str" in caught.value.problems


def test_the_admin_form_edits_tags_separated_by_commas(admin_client: Any, db: None) -> None:
    from tests.integration.test_admin_models import VALID

    data = {**VALID, "name": "billing.refund", "tags": "billing, credit notes", "always_listed": "on"}
    response = admin_client.post("/admin/mcp_tools/tool/add/", data)
    assert response.status_code == 302, response.content[:2000]
    tool = Tool.objects.get(name="billing.refund")
    assert (tool.tags, tool.always_listed) == (["billing", "credit notes"], True)
    page = admin_client.get(f"/admin/mcp_tools/tool/{tool.pk}/change/").content.decode()
    assert 'value="billing, credit notes"' in page
    response = admin_client.post("/admin/mcp_tools/tool/add/", {**data, "name": "other", "tags": "ok, bad;tag"})
    assert "Tag 2: 1 to 40 letters" in response.content.decode()


def test_check_w012_names_a_row_shadowed_by_a_discovery_tool(demo_tools: None, settings: Any) -> None:
    from django.core.checks import run_checks

    Tool.objects.create(name="describe_tools", handler_key="demo.echo")

    def ids() -> list[str]:
        return [m.id for m in run_checks(databases=["default"]) if m.id == "mcp_tools.W012"]

    assert ids() == []  # the mode is off: nothing is shadowed
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY_CLIENTS": {"claude": "on"}}
    assert ids() == ["mcp_tools.W012"]


def test_what_a_user_sees_shows_the_entry_set_and_a_sample_search(admin_client: Any, demo_tools: None) -> None:
    """Beside "What a user sees": the grant's mode, entry set and what a search answers it."""
    Tool.objects.filter(name="echo").update(always_listed=True)
    page = admin_client.get("/admin/mcp_tools/tool/explain/", {"user": "admin", "q": "weather in a city"})
    assert page.status_code == 200
    preview = page.context["discovery"]
    assert (preview.mode, preview.active, preview.entry) == ("off", False, ["echo", "get_weather"])
    assert preview.found[0]["name"] == "get_weather"
    text = page.content.decode()
    assert "Progressive discovery" in text
    assert "<code>get_weather</code>" in text


def test_mcp_explain_search(demo_tools: None, settings: Any) -> None:
    from django.contrib.auth.models import User

    User.objects.create_superuser("root", password="pw")
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "on"}
    out = io.StringIO()
    call_command("mcp_explain", "--user", "root", "--search", "weather", stdout=out)
    text = out.getvalue()
    assert "Discovery: mode on, on for this grant" in text
    assert "  get_weather  (city: string)" in text


# --------------------------------------------------------------------------- the index and the fallback


def test_an_entry_is_never_replaced_by_an_older_tool_version(demo_tools: None) -> None:
    """A process still on an older catalog cannot put older text back (the upsert's guard)."""
    catalog = get_catalog()
    discovery.sync(catalog)
    echo = catalog.by_name["echo"]
    SearchEntry.objects.filter(tool_id=echo.pk).update(version=echo.version + 5, names="newer words", digest="x")
    report = discovery.sync(catalog)
    assert report.written == 1  # the digest differs: written, but the guard keeps the newer row
    assert SearchEntry.objects.get(tool_id=echo.pk).names == "newer words"


def test_without_full_text_search_a_like_scan_finds_the_same(
    mcp: Mcp, on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another database (or a SQLite without FTS5) searches the entries with LIKE."""
    from mcp_tools.discovery import searching

    mcp.initialize()
    queries = ["current weather in a city", "add two numbers", "png image of a colour", "echo"]
    expected = [_search(mcp, query)["tools"][0]["name"] for query in queries]
    monkeypatch.setattr(searching, "_postgresql", searching._like)
    monkeypatch.setattr(searching, "_has_fts", lambda connection: False)
    assert [_search(mcp, query)["tools"][0]["name"] for query in queries] == expected
