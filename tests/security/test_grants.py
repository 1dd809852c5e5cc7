"""Grants, not users: what one token creates (legacy sessions, tasks and their results, pending
requests for input, handles) is reachable only by a token of the same grant (the same user AND
the same OAuth application) that still carries the scopes its tool required. Everything else
answers exactly like an unknown id."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application

from mcp_tools.models import McpPendingInput, McpTask
from tests.integration.test_jwt_backend import jwks_url, jwt_auth, keys, sign  # noqa: F401
from tests.support.mcp_client import Mcp, modern_meta

pytestmark = pytest.mark.django_db

RESOURCE = "http://testserver/mcp"
EXT = "io.modelcontextprotocol/tasks"


def application(name: str) -> Application:
    return Application.objects.create(
        name=name,
        client_type=Application.CLIENT_PUBLIC,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="http://127.0.0.1/cb",
    )


def token(user: User, app: Application, scope: str) -> str:
    raw = secrets.token_urlsafe(24)
    AccessToken.objects.create(
        user=user,
        application=app,
        token=raw,
        scope=scope,
        expires=timezone.now() + timedelta(hours=1),
        resource=[RESOURCE],
    )
    return raw


def session(client: Any, raw: str) -> Mcp:
    """A 2025-11-25 session opened with ``raw`` (core tasks: get, result, list, cancel)."""
    mcp = Mcp(client)
    mcp.default_headers["Authorization"] = f"Bearer {raw}"
    mcp.initialize("2025-11-25")
    return mcp


def modern(client: Any, raw: str) -> Mcp:
    mcp = Mcp(client).modern()
    mcp.default_headers["Authorization"] = f"Bearer {raw}"
    return mcp


@pytest.fixture
def tokens(oauth: None, alice: User) -> dict[str, str]:
    """alice's tokens: the writer (notes:write, app A), a library:read-only token of the same
    app, and a notes:write token of another app."""
    app_a, app_b = application("a"), application("b")
    return {
        "writer": token(alice, app_a, "notes:write"),
        "narrow": token(alice, app_a, "library:read"),
        "other_app": token(alice, app_b, "notes:write"),
    }


def _error(mcp: Mcp, method: str, params: dict[str, Any]) -> dict[str, Any]:
    _, message, _ = mcp.request(method, params)
    assert "error" in message, (method, message)
    return dict(message["error"])


def test_a_task_is_reachable_only_by_its_grant_with_the_scopes_its_tool_required(
    client: Any, tokens: dict[str, str]
) -> None:
    writer = session(client, tokens["writer"])
    created = writer.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {}})
    task_id = created["task"]["taskId"]
    assert McpTask.objects.get(pk=task_id).required_scopes == "notes:write"
    unknown = "x" * len(task_id)
    for who in ("narrow", "other_app"):
        caller = session(client, tokens[who])
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            foreign = _error(caller, method, {"taskId": task_id})
            missing = _error(caller, method, {"taskId": unknown})
            assert foreign == missing, (who, method)
            assert foreign["code"] == -32602
        assert caller.call("tasks/list")["tasks"] == [], who
    # Its own grant still reaches it: nothing was cancelled by the others.
    assert writer.call("tasks/get", {"taskId": task_id})["status"] == "completed"
    assert [t["taskId"] for t in writer.call("tasks/list")["tasks"]] == [task_id]
    result = writer.call("tasks/result", {"taskId": task_id})
    assert result["content"][0]["text"] == "Report ready after 1 steps."


def test_tasks_list_pages_only_over_the_tasks_the_scopes_cover(
    client: Any, tokens: dict[str, str], settings: Any
) -> None:
    """A narrower token of the same grant pages over its own tasks only: no page is short or
    empty because of tasks it cannot see."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": 2}
    writer = session(client, tokens["writer"])
    for _ in range(3):
        writer.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {}})
    mine = [writer.call("tools/call", {"name": "noop", "task": {}})["task"]["taskId"] for _ in range(3)]
    narrow = session(client, tokens["narrow"])
    seen: list[str] = []
    cursor = None
    while True:
        page = narrow.call("tasks/list", {"cursor": cursor} if cursor else {})
        assert page["tasks"], "no empty page"
        seen += [t["taskId"] for t in page["tasks"]]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert sorted(seen) == sorted(mine)


def test_a_legacy_session_is_not_found_with_another_apps_token(client: Any, tokens: dict[str, str]) -> None:
    writer = session(client, tokens["writer"])
    thief = Mcp(client)
    thief.default_headers["Authorization"] = f"Bearer {tokens['other_app']}"
    thief.session_id, thief.version = writer.session_id, writer.version
    response, _ = thief.post({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, validate=False)
    assert response.status_code == 404
    # The same user's token of the same application continues the session.
    same = Mcp(client)
    same.default_headers["Authorization"] = f"Bearer {tokens['narrow']}"
    same.session_id, same.version = writer.session_id, writer.version
    response, _ = same.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, validate=False)
    assert response.status_code == 200


def test_a_handle_is_not_found_with_another_apps_token(client: Any, tokens: dict[str, str]) -> None:
    writer = modern(client, tokens["writer"])
    basket = writer.call("tools/call", {"name": "create_basket", "arguments": {}})["structuredContent"]["basket_id"]
    writer.call("tools/call", {"name": "add_item", "arguments": {"basket_id": basket, "sku": "apple"}})
    other = modern(client, tokens["other_app"])
    viewed = other.call("tools/call", {"name": "view_basket", "arguments": {"basket_id": basket}})
    assert viewed["isError"] is True
    assert "apple" not in str(viewed)
    own = writer.call("tools/call", {"name": "view_basket", "arguments": {"basket_id": basket}})
    assert own["structuredContent"]["item_count"] == 1


def test_a_pending_input_request_is_answered_only_by_its_grant(
    client: Any, tokens: dict[str, str], queued: None
) -> None:
    """tasks/update (2026-07-28) of a task waiting for input: another app's token, or a token
    without the tool's scope, gets not-found and the answer is not recorded."""
    meta = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}})
    writer = modern(client, tokens["writer"])
    created = writer.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "_meta": meta})
    task_id = created["taskId"]
    McpTask.objects.filter(pk=task_id).update(status="input_required")
    request = McpPendingInput.objects.create(
        id="req-1",
        principal_key=McpTask.objects.get(pk=task_id).principal_key,
        method="elicitation/create",
        task_id=task_id,
        key="confirm",
        params={"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}},
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    answer = {"confirm": {"action": "accept", "content": {}}}
    for who in ("narrow", "other_app"):
        caller = modern(client, tokens[who])
        refused = _error(caller, "tasks/update", {"taskId": task_id, "inputResponses": answer, "_meta": meta})
        assert refused["code"] == -32602
        request.refresh_from_db()
        assert request.answered_at is None, who
    writer.call("tasks/update", {"taskId": task_id, "inputResponses": answer, "_meta": meta})
    request.refresh_from_db()
    assert request.answered_at is not None


def test_rate_limits_count_per_user_across_applications(client: Any, tokens: dict[str, str], settings: Any) -> None:
    """The grant binds what a request can reach; limits stay per user, so a second application
    does not double them."""
    from mcp_tools.models import Tool

    Tool.objects.filter(name="noop").update(rate_limit="2/m")
    first, second = modern(client, tokens["writer"]), modern(client, tokens["other_app"])
    assert first.call("tools/call", {"name": "noop", "arguments": {}}).get("isError") is not True
    assert second.call("tools/call", {"name": "noop", "arguments": {}}).get("isError") is not True
    _, third, _ = second.request("tools/call", {"name": "noop", "arguments": {}})
    assert "rate" in str(third).lower() or "retry" in str(third).lower(), third


def test_a_legacy_answer_to_a_tasks_request_needs_a_token_that_reaches_the_task(
    client: Any, tokens: dict[str, str], queued: None
) -> None:
    """2025-11-25: the answer to a task's request, POSTed as a JSON-RPC response, is taken only
    from a session whose token still carries the scopes of the task's tool."""
    writer = session(client, tokens["writer"])
    task_id = writer.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {}})["task"][
        "taskId"
    ]
    McpTask.objects.filter(pk=task_id).update(status="input_required")
    request = McpPendingInput.objects.create(
        id="mcp-tools-req-1",
        principal_key=McpTask.objects.get(pk=task_id).principal_key,
        method="elicitation/create",
        task_id=task_id,
        params={"message": "Go?", "requestedSchema": {"type": "object", "properties": {}}},
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    answer = {"jsonrpc": "2.0", "id": "mcp-tools-req-1", "result": {"action": "accept", "content": {}}}
    narrow = session(client, tokens["narrow"])
    narrow.post(answer, validate=False)
    request.refresh_from_db()
    assert request.answered_at is None
    writer.post(answer, validate=False)
    request.refresh_from_db()
    assert request.answered_at is not None


def test_a_jwt_grant_is_the_subject_and_its_client(client: Any, jwt_auth: None, keys: Any) -> None:  # noqa: F811
    """JWTBackend: the same subject through another client (``azp``) reaches nothing of the first."""
    User.objects.create_user("alice")

    def as_client(azp: str) -> Mcp:
        mcp = Mcp(client).modern()
        mcp.default_headers["Authorization"] = f"Bearer {sign(keys[0], scope='notes:read', azp=azp)}"
        return mcp

    first = as_client("kc-a")
    basket = first.call("tools/call", {"name": "create_basket", "arguments": {}})["structuredContent"]["basket_id"]
    assert as_client("kc-b").call("tools/call", {"name": "view_basket", "arguments": {"basket_id": basket}})["isError"]
    assert (
        not as_client("kc-a")
        .call("tools/call", {"name": "view_basket", "arguments": {"basket_id": basket}})
        .get("isError")
    )


def test_grant_keys_fit_their_columns_and_never_collide_by_truncation() -> None:
    from mcp_tools.auth.oauth import token_principal

    short = token_principal("user:7", "app", {"notes:read"})
    assert (short.key, short.subject, short.owner) == ("user:7/client:app", "user:7", "user:7")
    assert token_principal("client:app", "app", set()).key == "client:app"
    assert token_principal("sub:x", None, set()).key == "sub:x"
    long_a = token_principal("sub:" + "s" * 300, "a", set())
    long_b = token_principal("sub:" + "s" * 300, "b", set())
    assert long_a.key != long_b.key
    assert len(long_a.key) <= 255
    assert long_a.key.startswith("grant:")
