"""Progressive discovery never widens a grant (issue 36): with the mode on, a token finds (search_tools),
describes (describe_tools) and calls exactly what it could list and call with the mode off, on the
grant boundaries of the earlier security work: scopes (implied and inactive ones), Django
permissions, row rules of model toolsets, approval-gated tools, disabled tools, other grants
(another user, another OAuth application), a backend with rules of its own, a stale index."""

from __future__ import annotations

import io
import json
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command

from mcp_tools import discovery
from mcp_tools.catalog import get_catalog
from mcp_tools.models import McpApproval, Scope, SearchEntry, Tool
from project.library.models import Author, Book
from tests.security.test_grants import application, token
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db

# Requests a model might make, beside every tool's own name (asked of each token).
QUERIES = [
    "books",
    "add a book",
    "how many books per genre",
    "delete a book",
    "change the price of a book",
    "authors",
    "weather",
    "echo text",
    "report",
    "basket",
    "stock",
    "tags",
    "library statistics",
    "error",
    "notes",
]


@pytest.fixture
def site(settings: Any, demo_tools: None) -> dict[str, Any]:
    """The demo catalog with the library's model tools, under DOT, discovery on; alice may view
    books (not change them), bob holds no permission, root is a superuser."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.DOTBackend", "DISCOVERY": "on"}
    call_command("mcp_sync_toolsets", stdout=io.StringIO())
    alice = User.objects.create_user("alice", password="pw-alice")
    alice.user_permissions.add(*Permission.objects.filter(codename__in=["view_book", "view_author"]))
    bob = User.objects.create_user("bob", password="pw-bob")
    root = User.objects.create_superuser("root", password="pw-root")
    app_a, app_b = application("a"), application("b")
    everything = " ".join(Scope.objects.values_list("name", flat=True))
    return {
        "alice_read": token(alice, app_a, "library:read notes:read"),
        "alice_all": token(alice, app_a, everything),
        "alice_b": token(alice, app_b, "library:read"),
        "bob_all": token(bob, app_a, everything),
        "root_read": token(root, app_a, "library:read"),
        "root_all": token(root, app_a, everything),
        "users": {"alice": alice, "bob": bob, "root": root},
        "apps": {"a": app_a, "b": app_b},
    }


def _client(client: Any, raw: str) -> Mcp:
    mcp = Mcp(client)
    mcp.default_headers["Authorization"] = f"Bearer {raw}"
    mcp.initialize("2025-11-25")
    return mcp


def _listed(mcp: Mcp) -> list[str]:
    names: list[str] = []
    cursor = None
    while True:
        result = mcp.call("tools/list", {"cursor": cursor} if cursor else {})
        names += [t["name"] for t in result["tools"]]
        cursor = result.get("nextCursor")
        if not cursor:
            return names


def _found(mcp: Mcp, query: str) -> list[str]:
    result = mcp.call("tools/call", {"name": "search_tools", "arguments": {"query": query, "limit": 20}})
    assert not result.get("isError"), result
    return [t["name"] for t in result["structuredContent"]["tools"]]


def _described(mcp: Mcp, names: list[str]) -> tuple[list[str], list[str]]:
    described: list[str] = []
    unknown: list[str] = []
    for start in range(0, len(names), 10):
        arguments = {"names": names[start : start + 10]}
        found = mcp.call("tools/call", {"name": "describe_tools", "arguments": arguments})["structuredContent"]
        described += [t["name"] for t in found["tools"]]
        unknown += found["unknown"]
    return described, unknown


def _without_discovery(settings: Any, client: Any, raw: str) -> list[str]:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "off"}
    try:
        return _listed(_client(client, raw))
    finally:
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "on"}


@pytest.mark.parametrize("who", ["alice_read", "alice_all", "alice_b", "bob_all", "root_read", "root_all"])
def test_a_grant_finds_and_describes_exactly_what_it_could_list(
    client: Any, settings: Any, site: dict[str, Any], who: str
) -> None:
    """Scopes, implied scopes and permissions: everything a search or describe_tools returns is
    in the token's tools/list with the mode off, and every tool of that list is found by its
    name (Done when). The other tool rows are unknown to describe_tools."""
    allowed = set(_without_discovery(settings, client, site[who]))
    mcp = _client(client, site[who])
    assert set(_listed(mcp)) <= allowed | set(discovery.NAMES)  # the entry set is part of the view
    found: set[str] = set()
    for name in sorted(allowed):
        hits = _found(mcp, name)
        assert hits[0] == name, (name, hits)
        found |= set(hits)
    for query in QUERIES:
        found |= set(_found(mcp, query))
    assert found == allowed
    every_row = sorted(Tool.objects.values_list("name", flat=True))
    described, unknown = _described(mcp, every_row)
    assert set(described) == allowed
    assert set(unknown) == set(every_row) - allowed


def test_the_boundaries_hold_with_the_expected_sets(client: Any, settings: Any, site: dict[str, Any]) -> None:
    """What the grants above may use, spelled out: scopes and permissions cut where they should."""
    alice_read = set(_without_discovery(settings, client, site["alice_read"]))
    assert {"list_book", "get_book", "aggregate_book", "list_author", "get_author"} <= alice_read
    assert not {"create_book", "update_book", "delete_book", "mark_out_of_stock_book"} & alice_read  # scope
    alice_all = set(_without_discovery(settings, client, site["alice_all"]))
    assert not {"create_book", "update_book", "delete_book"} & alice_all  # permission (alice only views)
    bob_all = set(_without_discovery(settings, client, site["bob_all"]))
    assert not {n for n in bob_all if n.endswith(("_book", "_author"))}  # no permission at all
    root_all = set(_without_discovery(settings, client, site["root_all"]))
    assert {"create_book", "delete_book", "clear_tags_book"} <= root_all


def test_an_unusable_tool_named_exactly_is_not_found_nor_callable(
    client: Any, settings: Any, site: dict[str, Any]
) -> None:
    """The exact-name match is filtered by the grant too; a call answers as with the mode off
    (the DOT backend's step-up 403 for a scope the user could be granted, unknown otherwise)."""
    mcp = _client(client, site["alice_read"])
    assert "create_book" not in _found(mcp, "create_book")
    assert "update_book" not in _found(mcp, "update_book update a book")
    response, message, _ = mcp.request("tools/call", {"name": "create_book", "arguments": {}})
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "off"}
    off = _client(client, site["alice_read"])
    response_off, message_off, _ = off.request("tools/call", {"name": "create_book", "arguments": {}})
    assert (response.status_code, message.get("error")) == (response_off.status_code, message_off.get("error"))
    bob = _client(client, site["bob_all"])
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DISCOVERY": "on"}
    _, message, _ = bob.request("tools/call", {"name": "list_book", "arguments": {}})
    assert message["error"] == {"code": -32602, "message": "Unknown tool: list_book"}


def test_row_rules_hold_for_a_tool_found_by_search(client: Any, site: dict[str, Any]) -> None:
    """A model tool found and called by name reaches only the caller's rows (get_queryset)."""
    users = site["users"]
    author = Author.objects.create(name="Ann Author")
    for number, owner in enumerate((users["alice"], users["root"])):
        Book.objects.create(
            title=f"Book of {owner.username}",
            isbn=f"978000000000{number}",
            author=author,
            genre="fiction",
            published=date(2020, 1, 1),
            price=Decimal("9.99"),
            pages=100,
            owner=owner,
        )
    mcp = _client(client, site["alice_read"])
    assert "list_book" in _found(mcp, "list the books")
    result = mcp.call("tools/call", {"name": "list_book", "arguments": {}})
    assert [row["title"] for row in result["structuredContent"]["items"]] == ["Book of alice"]
    root = _client(client, site["root_read"])
    result = root.call("tools/call", {"name": "list_book", "arguments": {}})
    assert len(result["structuredContent"]["items"]) == 2


def test_an_approval_gated_tool_found_by_search_still_waits_for_approval(client: Any, site: dict[str, Any]) -> None:
    Tool.objects.filter(name="echo").update(requires_approval=True, approval_timeout=1)
    mcp = _client(client, site["alice_read"])
    assert _found(mcp, "echo")[0] == "echo"
    result = mcp.call(
        "tools/call", {"name": "echo", "arguments": {"text": "x"}}, headers={"Accept": "application/json"}
    )
    assert result["isError"] is True
    assert result["content"][0]["text"] == "The call of tool 'echo' was not approved within 1 seconds; nothing was run."
    assert McpApproval.objects.get().state == "expired"


def test_disabled_tools_and_inactive_scopes_hide_what_the_index_still_holds(client: Any, site: dict[str, Any]) -> None:
    mcp = _client(client, site["alice_read"])
    assert "get_weather" in _found(mcp, "weather")  # requires notes:read
    Tool.objects.filter(name="echo").update(enabled=False)
    Scope.objects.filter(name="notes:read").update(active=False)
    Scope.objects.get(name="notes:read").save()  # a change of the scope moves the catalog
    assert SearchEntry.objects.filter(tool__name__in=["echo", "get_weather"]).count() == 2
    found = _found(mcp, "weather echo repeat text")
    assert "echo" not in found
    assert "get_weather" not in found
    _, unknown = _described(mcp, ["echo", "get_weather"])
    assert unknown == ["echo", "get_weather"]
    _, message, _ = mcp.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
    assert message["error"]["code"] == -32602
    # The search under the new catalog version removed the disabled tool's entry.
    assert not SearchEntry.objects.filter(tool__name="echo").exists()


def test_the_mode_of_another_application_is_its_own(client: Any, settings: Any, site: dict[str, Any]) -> None:
    """DISCOVERY_CLIENTS: application a in discovery mode, b not: b lists its whole view and has
    no discovery tool; a search by a's token finds nothing b's token was given and a's was not."""
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "DISCOVERY": "off",
        "DISCOVERY_CLIENTS": {site["apps"]["a"].client_id: "on"},
    }
    b = _client(client, site["alice_b"])
    assert "search_tools" not in _listed(b)
    assert "list_book" in _listed(b)
    _, message, _ = b.request("tools/call", {"name": "search_tools", "arguments": {"query": "books"}})
    assert message["error"]["code"] == -32602
    a = _client(client, site["alice_read"])
    assert _listed(a) == ["search_tools", "describe_tools", "get_weather"]  # its arguments go in headers
    assert "get_weather" in _found(a, "weather")  # a's token has notes:read, b's has not


def test_a_backend_with_its_own_rule_is_applied_to_what_a_search_finds(client: Any, settings: Any) -> None:
    """ScopeHeaderBackend shows a tool only when its name is among the caller's scopes: a rule
    the database does not know, applied to each tool found."""
    call_command("load_demo_tools", stdout=io.StringIO())
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTH_BACKEND": "tests.support.auth.ScopeHeaderBackend",
        "DISCOVERY": "on",
    }
    mcp = Mcp(client)
    mcp.default_headers["X-Test-User"] = "carl echo add"
    mcp.initialize()
    assert sorted(_found(mcp, "echo add text numbers repeat sum weather")) == ["add", "echo"]


def test_a_stale_entry_never_lets_a_tool_through(client: Any, settings: Any, site: dict[str, Any]) -> None:
    """An entry that says less than the catalog (here: no permission needed, written behind the
    index's back) is caught by the check of each tool found against the catalog."""
    bob = _client(client, site["bob_all"])
    _found(bob, "books")  # the entries are up to date for this catalog version
    SearchEntry.objects.filter(tool__name="list_book").update(access="|")  # needs nothing
    assert get_catalog().by_name["list_book"].required_permissions == {"library.view_book"}
    assert "list_book" not in _found(bob, "list_book list books")


def test_search_results_are_never_shared_between_grants(client: Any, site: dict[str, Any]) -> None:
    """Nothing of a search is cached: the same words give each grant its own answer."""
    root = _client(client, site["root_all"])
    bob = _client(client, site["bob_all"])
    assert "delete_book" in _found(root, "delete a book")
    assert "delete_book" not in _found(bob, "delete a book")
    assert "delete_book" in json.dumps(
        root.call("tools/call", {"name": "describe_tools", "arguments": {"names": ["delete_book"]}})
    )


def test_the_grant_is_filtered_in_the_query_not_after_it(client: Any, settings: Any) -> None:
    """More tools the caller may not use than a search ranks (``CANDIDATES``) match the words
    better than the one it may: a search still answers that one (the database ranks and cuts
    only the grant's tools)."""
    from mcp_tools.discovery.searching import CANDIDATES
    from mcp_tools.models import CatalogVersion

    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTH_BACKEND": "tests.support.auth.HeaderAuthBackend",
        "DISCOVERY": "on",
    }
    secret = Scope.objects.create(name="widgets:admin")
    hidden = Tool.objects.bulk_create(
        [
            Tool(
                name=f"widget_admin_{number:03d}",
                title="Widget widget",
                description="Widget widget widget: rebuilds every widget.",
                handler_key="demo.echo",
            )
            for number in range(CANDIDATES + 20)
        ]
    )
    Tool.required_scopes.through.objects.bulk_create(
        [Tool.required_scopes.through(tool_id=tool.pk, scope_id=secret.pk) for tool in hidden]
    )
    Tool.objects.create(name="polish_gadget", description="Polishes a gadget, or a widget.", handler_key="demo.echo")
    CatalogVersion.bump()
    mcp = Mcp(client)
    mcp.default_headers["X-Test-User"] = "carl"
    mcp.initialize()
    assert _found(mcp, "widget") == ["polish_gadget"]
    result = mcp.call("tools/call", {"name": "search_tools", "arguments": {"query": "widget", "limit": 1}})
    assert [t["name"] for t in result["structuredContent"]["tools"]] == ["polish_gadget"]
    mcp.default_headers["X-Test-User"] = "dana widgets:admin"
    mcp.initialize()
    assert len(_found(mcp, "widget")) == 20
