"""ORM models as tools end to end: the official Python SDK client against a real server with
OAuth, the demo library (project.library) seeded and its toolsets synced. Every JSON response
the SDK receives is also validated against the negotiated revision's schema."""

from __future__ import annotations

import datetime
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_client import check_message
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

BOOKS = 400  # alice owns 70%, bob 30% (project/library/seed.py)
RESOURCE = "http://127.0.0.1/mcp"  # the audience is the setting, whatever port serves it


@pytest.fixture(scope="module")
def served_library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    tmp: Path = tmp_path_factory.mktemp("drf")
    env = {"MCP_AUTH": "oauth", "MCP_RESOURCE_URL": RESOURCE, "MCP_RATE_LIMIT": "off"}
    with run_server(tmp, extra_env=env) as server:
        server.manage("seed_library", "--books", str(BOOKS))
        server.manage("mcp_sync_toolsets")
        tokens = {
            name: server.manage("mcp_token", "--user", name, "--scopes", scopes).strip().splitlines()[-1]
            for name, scopes in (("alice", "library:write"), ("bob", "library:read library:write"))
        }
        tokens["reader"] = server.manage("mcp_token", "--user", "alice", "--scopes", "library:read").splitlines()[-1]
        yield server, tokens


CHECKED: list[str] = []  # the methods whose responses were validated


@asynccontextmanager
async def _client(server: LiveServer, token: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def validate(response: Any) -> None:
        if not response.headers.get("content-type", "").startswith("application/json"):
            return
        await response.aread()
        request = json.loads(response.request.content or b"{}")
        if response.status_code == 200 and isinstance(request, dict) and "id" in request:
            check_message("2026-07-28", json.loads(response.content), request.get("method"))
            CHECKED.append(request.get("method"))

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=60),
        event_hooks={"response": [validate]},
    )
    async with http, Client(streamable_http_client(server.url, http_client=http), mode="2026-07-28") as client:  # type: ignore[arg-type]
        yield client


async def _ok(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


async def _refused(client: Any, name: str, arguments: dict[str, Any]) -> Any:
    result = await client.call_tool(name, arguments)
    assert result.is_error, result
    return result


async def test_library_tools_end_to_end(served_library: tuple[LiveServer, dict[str, str]]) -> None:
    server, tokens = served_library
    async with _client(server, tokens["alice"]) as alice:
        tools = {tool.name: tool for tool in (await alice.list_tools()).tools}
        assert {"list_book", "get_book", "create_book", "update_book", "delete_book", "aggregate_book"} <= set(tools)
        assert tools["list_book"].annotations.read_only_hint is True
        assert tools["delete_book"].annotations.destructive_hint is True
        assert tools["list_book"].output_schema["properties"]["items"]["items"]["title"] == "Book"

        # Filters, search and ordering.
        page = await _ok(
            alice,
            "list_book",
            {"filter": {"genre": {"in": ["poetry", "history"]}, "price": {"gte": "20"}}, "order_by": ["-price"]},
        )
        assert page["items"]
        assert all(row["genre"] in ("poetry", "history") and float(row["price"]) >= 20 for row in page["items"])
        prices = [float(row["price"]) for row in page["items"]]
        assert prices == sorted(prices, reverse=True)
        found = await _ok(alice, "list_book", {"search": "harbor", "limit": 100})
        assert found["items"]
        assert all("harbor" in (row["title"] + row["isbn"]).lower() for row in found["items"])

        # Page through every row, inserting rows between pages: each existing row exactly once.
        first = await _ok(alice, "list_book", {"order_by": ["price"], "limit": 50, "include_total": True})
        total = first["total"]
        assert total == round(BOOKS * 0.7)
        seen = [row["id"] for row in first["items"]]
        cursor = first["next_cursor"]
        made: list[int] = []
        while cursor:
            created = await _ok(
                alice,
                "create_book",
                {"title": f"Inserted {len(made)}", "isbn": f"99900000{len(made):05d}", "author": 1, "genre": "poetry"}
                | {"price": ["0.50", "50.00", "99.99"][len(made) % 3], "pages": 10},
            )
            made.append(created["id"])
            page = await _ok(alice, "list_book", {"order_by": ["price"], "limit": 50, "cursor": cursor})
            seen += [row["id"] for row in page["items"]]
            cursor = page["next_cursor"]
        assert len(seen) == len(set(seen))
        assert len(set(seen) - set(made)) == total

        # Get, create (a validation error first), update, delete, aggregate.
        book = await _ok(alice, "get_book", {"id": seen[0]})
        assert book["id"] == seen[0]
        future = (datetime.date.today() + datetime.timedelta(days=30)).isoformat()
        draft = {"title": "New", "isbn": "9781234567897", "author": 2, "tags": [1, 2], "genre": "science"}
        draft |= {"price": "12.50", "pages": 320, "published": future}
        refused = await _refused(alice, "create_book", draft)
        assert refused.structured_content == {"errors": {"published": ["A book cannot be published in the future."]}}
        created = await _ok(alice, "create_book", draft | {"published": "2001-02-03"})
        assert (created["published"], created["price"], sorted(created["tags"])) == ("2001-02-03", "12.50", [1, 2])
        updated = await _ok(alice, "update_book", {"id": created["id"], "data": {"price": "9.99", "tags": []}})
        assert (updated["price"], updated["tags"], updated["title"]) == ("9.99", [], "New")
        assert await _ok(alice, "delete_book", {"id": created["id"]}) == {"deleted": True, "id": created["id"]}
        gone = await _refused(alice, "get_book", {"id": created["id"]})
        assert gone.content[0].text == f"No book with id {created['id']}."
        stats = await _ok(alice, "aggregate_book", {"group_by": "genre", "avg": ["price"], "max": ["published"]})
        assert sum(group["count"] for group in stats["groups"]) == total + len(made)
        assert {group["group"] for group in stats["groups"]} == {"fiction", "science", "history", "poetry", "children"}

        # Outside the allowlist: a clear isError naming what is allowed.
        refused = await _refused(alice, "list_book", {"filter": {"owner": {"exact": 1}}})
        assert "'owner' is not one of ['title', 'genre', 'published'" in refused.content[0].text

    async with _client(server, tokens["bob"]) as bob:
        bobs = await _ok(bob, "list_book", {"limit": 200, "include_total": True})
        assert bobs["total"] == BOOKS - round(BOOKS * 0.7)
        assert not {row["id"] for row in bobs["items"]} & set(seen)
        other = await _refused(bob, "get_book", {"id": seen[0]})
        assert other.content[0].text == f"No book with id {seen[0]}."
        assert (await _refused(bob, "delete_book", {"id": seen[0]})).content[0].text == f"No book with id {seen[0]}."

    async with _client(server, tokens["reader"]) as reader:  # library:read only: no write tools
        names = {tool.name for tool in (await reader.list_tools()).tools}
        assert {"list_book", "get_book", "aggregate_book", "list_author"} <= names
        assert not {"create_book", "update_book", "delete_book"} & names
    assert CHECKED.count("tools/call") > 20
    assert "tools/list" in CHECKED


@pytest.mark.node
@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
def test_typescript_client_lists_and_calls_a_model_tool(
    served_library: tuple[LiveServer, dict[str, str]], version: str
) -> None:
    """The official TypeScript clients (SDK 1.x through initialize, client 2.x on 2026-07-28) with alice's
    bearer token see list_book with its annotations and schemas, call it with a filter, an ordering and a
    limit and get her poetry books; a filter outside the allowlist is refused naming what is allowed."""
    from tests.e2e.test_ts_client import run_client
    from tests.support import nodejs

    server, tokens = served_library
    result = run_client(nodejs.node(), server, "client_model.mjs", version, tokens["reader"])
    if version == "2026-07-28":
        assert result["negotiated"] == version
    assert {"list_book", "get_book", "aggregate_book", "list_author"} <= set(result["tools"])
    assert not {"create_book", "delete_book"} & set(result["tools"])  # library:read only
    tool = result["list_book"]
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["input_properties"] == ["cursor", "filter", "include_total", "limit", "order_by", "search"]
    assert tool["output_properties"] == ["items", "next_cursor", "total"]
    page = result["page"]
    assert page["is_error"] is False, page["text"]
    items = page["structured"]["items"]
    assert len(items) == 5
    assert all(row["genre"] == "poetry" for row in items)
    prices = [float(row["price"]) for row in items]
    assert prices == sorted(prices, reverse=True)
    assert page["structured"]["total"] >= 5
    assert json.loads(page["text"]) == page["structured"]  # the text block carries the same JSON
    # Outside the allowlist: -32602 before 2025-11-25, an isError result from then on; both name what is allowed.
    assert (result["refused"]["is_error"], result["refused"]["code"]) == (
        (False, -32602) if version == "2025-06-18" else (True, None)
    )
    assert "'owner' is not one of ['title', 'genre'" in result["refused"]["text"]


def _answering(answers: list[Any], asked: list[str]) -> Any:
    async def answer(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return answers.pop(0)

    return answer


async def _new_book(client: Any, title: str, isbn: str) -> int:
    draft = {"title": title, "isbn": isbn, "author": 1, "genre": "poetry", "price": "1.00", "pages": 1}
    return int((await _ok(client, "create_book", draft))["id"])


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
async def test_delete_asks_the_user_through_the_sdk_elicitation_callback(
    served_library: tuple[LiveServer, dict[str, str]], version: str
) -> None:
    """The demo's BookTools confirm destructive operations ("ask"): a client that declared
    elicitation is asked, naming the book; declined, nothing is deleted; accepted, it is. On
    2026-07-28 through input_required and the SDK's retry, on 2025-06-18 through elicitation/create
    on the call's stream."""
    import httpx2
    import mcp.types as types
    from mcp import Client, ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from tests.support.sdk import legacy_handshake

    server, tokens = served_library
    asked: list[str] = []
    answers = [types.ElicitResult(action="decline"), types.ElicitResult(action="accept", content={"confirm": True})]
    callback = _answering(answers, asked)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=httpx2.Timeout(30))
    async with http:
        if version == "2026-07-28":
            transport = streamable_http_client(server.url, http_client=http)
            async with Client(transport, mode="2026-07-28", elicitation_callback=callback) as client:  # type: ignore[arg-type]
                await _confirmed_delete(client, asked, "9992000000001")
        else:
            async with (
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write, elicitation_callback=callback) as session,
            ):
                capabilities = types.ClientCapabilities(elicitation=types.ElicitationCapability())
                await legacy_handshake(session, version, capabilities=capabilities)
                await _confirmed_delete(session, asked, "9992000000002")
    assert not answers


async def _confirmed_delete(client: Any, asked: list[str], isbn: str) -> None:
    book = await _new_book(client, f"Doomed {len(asked)}", isbn)
    question = f"Do you want to delete the book 'Doomed {len(asked)}' (id {book})? This cannot be undone."
    declined = await _refused(client, "delete_book", {"id": book})
    assert declined.content[0].text == (
        f"Nothing was deleted: the user declined the confirmation to delete the book 'Doomed 0' (id {book})."
    )
    assert (await _ok(client, "get_book", {"id": book}))["id"] == book
    assert await _ok(client, "delete_book", {"id": book}) == {"deleted": True, "id": book}
    assert asked == [question, question]
    assert (await _refused(client, "get_book", {"id": book})).content[0].text == f"No book with id {book}."


async def test_admin_actions_of_the_books_run_as_tools(served_library: tuple[LiveServer, dict[str, str]]) -> None:
    """BookAdmin's actions as tools: mark_out_of_stock_book runs on alice's books and says so in
    text; bob cannot reach her ids; clear_tags_book is destructive, asked for and declined here."""
    import mcp.types as types

    server, tokens = served_library
    async with _client(server, tokens["alice"]) as alice:
        tools = {tool.name: tool for tool in (await alice.list_tools()).tools}
        assert tools["mark_out_of_stock_book"].annotations.destructive_hint is False
        assert tools["clear_tags_book"].annotations.destructive_hint is True
        assert tools["mark_out_of_stock_book"].input_schema["properties"]["ids"]["maxItems"] == 100
        page = await _ok(alice, "list_book", {"filter": {"in_stock": {"exact": True}}, "limit": 2})
        ids = [row["id"] for row in page["items"]]
        result = await alice.call_tool("mark_out_of_stock_book", {"ids": ids})
        assert not result.is_error, result.content
        assert result.content[0].text == "2 book(s) marked out of stock."
        assert result.structured_content == {
            "ids": ids,
            "messages": [{"level": "success", "message": "2 book(s) marked out of stock."}],
        }
        for book in ids:
            assert (await _ok(alice, "get_book", {"id": book}))["in_stock"] is False
    async with _client(server, tokens["bob"]) as bob:
        refused = await _refused(bob, "mark_out_of_stock_book", {"ids": ids})
        assert refused.content[0].text == f"No books with id {ids[0]}, {ids[1]}; nothing was done."

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    asked: list[str] = []
    callback = _answering([types.ElicitResult(action="decline")], asked)
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=httpx2.Timeout(30))
    async with http:
        transport = streamable_http_client(server.url, http_client=http)
        async with Client(transport, mode="2026-07-28", elicitation_callback=callback) as client:  # type: ignore[arg-type]
            declined = await _refused(client, "clear_tags_book", {"ids": ids})
    assert asked == [
        f"Do you want to run 'Remove every tag of selected books' on 2 books (id {ids[0]}, {ids[1]})? "
        "This cannot be undone."
    ]
    assert declined.content[0].text.startswith("Nothing was done: the user declined")
