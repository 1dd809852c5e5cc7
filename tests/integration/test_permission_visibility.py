"""Tools hidden per user: a tool kind may require Django permissions (``permissions=``) and
derive its tools' schemas from their config (``schemas=``). The catalog keys its cached views
on (scope set, relevant permissions held), so the per-scope-set cache stays exact."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools import catalog as catalog_module
from mcp_tools.models import Tool
from mcp_tools.registry import ToolKind, registry
from tests.support.mcp_client import Mcp

pytestmark = pytest.mark.django_db

KEY = "tests.perm"
DERIVED = ({"type": "object", "properties": {"n": {"type": "integer"}}}, {"type": "object"})


def _needs(config: Any) -> list[str]:
    return [config["perm"]] if config.get("perm") else []


def _schemas(config: Any) -> Any:
    if config.get("perm") == "broken":
        raise ValueError("No such thing as 'broken'.")
    return DERIVED


@pytest.fixture
def kind() -> Iterator[ToolKind]:
    found = ToolKind(
        KEY,
        lambda ctx: {"ok": True},
        config_schema={"type": "object", "properties": {"perm": {"type": "string"}}},
        schemas=_schemas,
        permissions=_needs,
    )
    registry.register(found)
    yield found
    registry.unregister(KEY)


@pytest.fixture
def perm_tools(kind: ToolKind) -> None:
    for name, perm in (("p_view", "drfapp.view_kind"), ("p_add", "drfapp.add_kind"), ("open", "")):
        tool = Tool(name=name, handler_key=KEY, handler_config={"perm": perm} if perm else {})
        tool.full_clean()
        tool.save()


def _user(name: str, *perms: str, superuser: bool = False) -> User:
    user = User.objects.create(username=name, is_superuser=superuser)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return user


@pytest.fixture
def users(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "tests.drfapp.auth.UserHeaderBackend"}
    _user("alice", "drfapp.view_kind")
    _user("carol", "drfapp.view_kind", "drfapp.view_specimen")  # a permission no tool needs
    _user("bob")
    _user("root", superuser=True)


def _names(client: Any, who: str) -> list[str]:
    mcp = Mcp(client).modern()
    mcp.default_headers = {"X-Test-User": f"{who} *"}
    return sorted(t["name"] for t in mcp.call("tools/list")["tools"])


def test_schemas_are_derived_from_the_config_when_the_row_is_cleaned(kind: ToolKind) -> None:
    tool = Tool(name="derived", handler_key=KEY, handler_config={"perm": ""}, input_schema={"type": "object"})
    tool.full_clean()
    assert (tool.input_schema, tool.output_schema) == DERIVED
    broken = Tool(name="broken", handler_key=KEY, handler_config={"perm": "broken"})
    with pytest.raises(ValidationError) as info:
        broken.full_clean()
    assert info.value.message_dict["handler_config"] == ["No such thing as 'broken'."]


def test_each_user_sees_the_tools_their_permissions_allow(client: Any, perm_tools: None, users: None) -> None:
    assert _names(client, "alice") == ["open", "p_view"]
    assert _names(client, "carol") == ["open", "p_view"]
    assert _names(client, "bob") == ["open"]
    assert _names(client, "root") == ["open", "p_add", "p_view"]
    assert _names(client, "nobody") == ["open"]  # no user: no permissions


def test_a_tool_the_user_may_not_use_answers_like_an_unknown_tool(client: Any, perm_tools: None, users: None) -> None:
    mcp = Mcp(client).modern()
    mcp.default_headers = {"X-Test-User": "alice *"}
    _, message, _ = mcp.request("tools/call", {"name": "p_add", "arguments": {}})
    assert message["error"]["code"] == -32602
    assert message["error"]["message"] == "Unknown tool: p_add"
    assert mcp.call("tools/call", {"name": "p_view", "arguments": {}})["structuredContent"] == {"ok": True}


def test_views_are_shared_by_users_with_the_same_scopes_and_relevant_permissions(
    client: Any, perm_tools: None, users: None
) -> None:
    """carol holds one permission more than alice, but none that a tool requires: one view."""
    _names(client, "alice")
    _names(client, "carol")
    _names(client, "bob")
    keys = list(catalog_module.get_catalog()._views)
    assert len(keys) == 2
    assert sorted(k.split("\0")[1] for k in keys) == ["", "drfapp.view_kind"]


def test_a_granted_permission_shows_on_the_next_request(client: Any, perm_tools: None, users: None) -> None:
    assert _names(client, "bob") == ["open"]
    bob = User.objects.get(username="bob")
    bob.user_permissions.add(Permission.objects.get(codename="add_kind"))
    assert _names(client, "bob") == ["open", "p_add"]


def test_permissions_cost_queries_only_when_a_tool_requires_any(client: Any, kind: ToolKind, users: None) -> None:
    Tool.objects.create(name="open", handler_key=KEY, handler_config={})

    def count(who: str) -> int:
        mcp = Mcp(client).modern()
        mcp.default_headers = {"X-Test-User": f"{who} *"}
        mcp.call("tools/list")  # warm the catalog
        with CaptureQueriesContext(connection) as queries:
            mcp.call("tools/list")
        return len(queries)

    without = count("alice")
    Tool.objects.create(name="p_view", handler_key=KEY, handler_config={"perm": "drfapp.view_kind"})
    assert count("alice") == without + 2  # the user's and their groups' permissions
    assert count("root") == without  # a superuser holds every permission without a query
