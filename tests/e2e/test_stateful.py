"""Stateful tools and tools that ask, against real servers.

The basket flow with the official Python SDK (legacy and 2026-07-28 clients, checkout confirmed
through elicitation); a legacy elicitation answered through another server process than the
one running the call; a 2026-07-28 retry served by the other process; 20 concurrent add_item
calls on one basket (SQLite file and PostgreSQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import external_services
from tests.support.mcp_client import MODERN, check_message, modern_meta
from tests.support.sdk import legacy_handshake
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e]

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two server processes on one SQLite file: any of them serves any session or retry."""
    tmp = tmp_path_factory.mktemp("stateful")
    with run_server(tmp) as first, run_server(tmp, prepare=False) as second:
        yield first, second


# --------------------------------------------------------------------------- the Python SDK


async def _basket_flow(session: Any, asked: list[Any]) -> None:
    created = await session.call_tool("create_basket", {})
    basket_id = created.structured_content["basket_id"]
    assert basket_id.startswith("bsk_")
    await session.call_tool("add_item", {"basket_id": basket_id, "sku": "apple", "quantity": 2})
    await session.call_tool("add_item", {"basket_id": basket_id, "sku": "tea"})
    viewed = await session.call_tool("view_basket", {"basket_id": basket_id})
    assert viewed.structured_content["item_count"] == 3
    assert viewed.structured_content["total"] == "4.40 EUR"
    order = await session.call_tool("checkout", {"basket_id": basket_id})
    assert order.is_error is not True, order
    assert order.structured_content["ordered"] is True
    assert order.structured_content["order_id"].startswith("ord_")
    assert [params.message for params in asked] == ["Place the order for 3 item(s), total 4.40 EUR?"]
    gone = await session.call_tool("view_basket", {"basket_id": basket_id})
    assert gone.is_error is True
    assert "Call create_basket" in gone.content[0].text


def _confirming(asked: list[Any]) -> Any:
    import mcp.types as types

    async def confirm(context: Any, params: Any) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"confirm": True})

    return confirm


@pytest.mark.anyio
@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_basket_flow_with_the_sdk_legacy_client(pair: tuple[LiveServer, LiveServer], version: str) -> None:
    """T-D5 with elicitation on the call's stream (L-6, H-10): the SDK answers, the order is placed."""
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    asked: list[Any] = []
    async with (
        streamable_http_client(pair[0].url) as (read, write),
        ClientSession(read, write, elicitation_callback=_confirming(asked)) as session,
    ):
        await legacy_handshake(
            session, version, capabilities=types.ClientCapabilities(elicitation=types.ElicitationCapability())
        )
        await _basket_flow(session, asked)


@pytest.mark.anyio
async def test_basket_flow_with_the_sdk_2026_07_28_client(pair: tuple[LiveServer, LiveServer]) -> None:
    """T-D1/T-D5: checkout answers input_required; the SDK retries with the answer; the order is placed."""
    from mcp import Client

    asked: list[Any] = []
    async with Client(pair[0].url, mode=MODERN, elicitation_callback=_confirming(asked)) as client:
        await _basket_flow(client, asked)


@pytest.mark.anyio
async def test_sampling_with_the_sdk_2026_07_28_client(pair: tuple[LiveServer, LiveServer]) -> None:
    import mcp.types as types
    from mcp import Client

    async def answer(context: Any, params: Any) -> Any:
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m", stop_reason="endTurn"
        )

    async with Client(pair[0].url, mode=MODERN, sampling_callback=answer) as client:
        result = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
    assert result.content[0].text == "LLM response: Paris"  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def authenticated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Callers named by X-Test-User (tests.support.auth.HeaderAuthBackend): distinct principals."""
    tmp = tmp_path_factory.mktemp("principals")
    with run_server(tmp, extra_env={"MCP_AUTH_BACKEND": "tests.support.auth.HeaderAuthBackend"}) as server:
        yield server


@pytest.mark.anyio
async def test_two_principals_and_an_expired_basket_with_the_sdk(authenticated: LiveServer) -> None:
    """T-D5: bob's calls on alice's basket read exactly like an unknown basket; an expired basket
    is an isError result that says so and how to recover."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with contextlib.AsyncExitStack() as stack:
        clients = {}
        for user in ("alice", "bob"):
            http = await stack.enter_async_context(create_mcp_http_client(headers={"X-Test-User": user}))
            transport = streamable_http_client(authenticated.url, http_client=http)
            clients[user] = await stack.enter_async_context(Client(transport, mode=MODERN))
        alice, bob = clients["alice"], clients["bob"]
        basket = (await alice.call_tool("create_basket", {})).structured_content["basket_id"]
        await alice.call_tool("add_item", {"basket_id": basket, "sku": "coffee"})
        never = "bsk_" + "Z" * 32
        for name, arguments in (
            ("view_basket", {"basket_id": basket}),
            ("add_item", {"basket_id": basket, "sku": "tea"}),
            ("checkout", {"basket_id": basket}),
        ):
            foreign = await bob.call_tool(name, arguments)
            unknown = await bob.call_tool(name, {**arguments, "basket_id": never})
            assert foreign.is_error is True
            assert foreign.content[0].text == unknown.content[0].text.replace(never, basket)
        viewed = await alice.call_tool("view_basket", {"basket_id": basket})
        assert viewed.structured_content["items"][0]["sku"] == "coffee"  # bob changed nothing

        authenticated.manage(
            "shell",
            "-c",
            "from django.utils import timezone; from mcp_tools.models import McpHandle; "
            f"McpHandle.objects.filter(pk={basket!r}).update(expires_at=timezone.now())",
        )
        expired = await alice.call_tool("add_item", {"basket_id": basket, "sku": "tea"})
        assert expired.is_error is True
        assert expired.content[0].text == (
            f"The basket {basket!r} has expired. A basket expires after 24 hours of inactivity. "
            "Call create_basket to start a new basket."
        )
        fresh = await alice.call_tool("create_basket", {})  # the recovery the message names
        assert fresh.structured_content["basket_id"] != basket


# --------------------------------------------------------------------------- two processes


def _sse_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []


def test_a_legacy_answer_posted_to_another_process_completes_the_call(pair: tuple[LiveServer, LiveServer]) -> None:
    """The call runs on process A; its elicitation is answered through process B (DB hand-over)."""
    first, second = pair
    version = "2025-11-25"
    headers = {**ACCEPT, "MCP-Protocol-Version": version}
    with httpx.Client(timeout=30) as http:
        init = http.post(
            first.url,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "e2e", "version": "1"},
                },
            },
            headers=ACCEPT,
        )
        headers["Mcp-Session-Id"] = init.headers["mcp-session-id"]
        http.post(first.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "Who are you?"}},
        }
        with http.stream("POST", first.url, json=call, headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = _sse_events(response)
            request = next(events)
            check_message(version, request)
            assert request["method"] == "elicitation/create"
            assert request["params"]["message"] == "Who are you?"
            answer = {"action": "accept", "content": {"username": "ada", "email": "ada@example.com"}}
            posted = httpx.post(
                second.url, json={"jsonrpc": "2.0", "id": request["id"], "result": answer}, headers=headers
            )
            assert posted.status_code == 202
            final = next(events)
        check_message(version, final, "tools/call")
        assert final["id"] == 2
        assert final["result"]["content"][0]["text"] == (
            'User response: action=accept, content={"email": "ada@example.com", "username": "ada"}'
        )


def _modern_call(url: str, name: str, arguments: dict[str, Any], **extra: Any) -> dict[str, Any]:
    params = {
        "name": name,
        "arguments": arguments,
        "_meta": modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}),
        **extra,
    }
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = httpx.post(url, json=body, headers=headers, timeout=30)
    message = response.json()
    check_message(MODERN, message, "tools/call")
    assert response.status_code == 200, message
    return dict(message["result"])


def test_a_2026_07_28_retry_served_by_the_other_process(pair: tuple[LiveServer, LiveServer]) -> None:
    """MRTR needs no shared state but the signed requestState (and the basket's row)."""
    first, second = pair
    basket = _modern_call(first.url, "create_basket", {})["structuredContent"]["basket_id"]
    _modern_call(second.url, "add_item", {"basket_id": basket, "sku": "cheese"})
    asked = _modern_call(first.url, "checkout", {"basket_id": basket})
    assert asked["resultType"] == "input_required"
    done = _modern_call(
        second.url,
        "checkout",
        {"basket_id": basket},
        requestState=asked["requestState"],
        inputResponses={"elicit-1": {"action": "accept", "content": {"confirm": True}}},
    )
    assert done["structuredContent"]["ordered"] is True
    assert done["structuredContent"]["total"] == "6.90 EUR"


# --------------------------------------------------------------------------- concurrency


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def database_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp(f"concurrent-{request.param}")
    with contextlib.ExitStack() as stack:
        env: dict[str, str] = {}
        if request.param == "postgres":
            external_services.require("postgres")
            database = stack.enter_context(external_services.temporary_postgres_database("mcp_e2e"))
            env = {"MCP_DATABASE": "postgres", "POSTGRES_DB": database}
        yield stack.enter_context(run_server(tmp, extra_env=env))


@pytest.mark.anyio
async def test_twenty_concurrent_add_item_calls_lose_no_item(database_server: LiveServer) -> None:
    """Read-modify-write under the row lock (PostgreSQL) or the write lock (SQLite): 20 of 20 count."""
    url = database_server.url
    basket = _modern_call(url, "create_basket", {})["structuredContent"]["basket_id"]
    headers = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "add_item"}

    async def add(http: httpx.AsyncClient, n: int) -> dict[str, Any]:
        params = {"name": "add_item", "arguments": {"basket_id": basket, "sku": "apple"}, "_meta": modern_meta()}
        response = await http.post(
            url, json={"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}, headers=headers
        )
        return dict(response.json())

    async with httpx.AsyncClient(timeout=60) as http:
        answers = await asyncio.gather(*(add(http, n) for n in range(20)))
    for answer in answers:
        check_message(MODERN, answer, "tools/call")
        assert answer["result"].get("isError") is not True, answer
    counts = sorted(answer["result"]["structuredContent"]["item_count"] for answer in answers)
    assert counts == list(range(1, 21))  # each call saw the one before it
    viewed = _modern_call(url, "view_basket", {"basket_id": basket})
    assert viewed["structuredContent"]["items"][0]["quantity"] == 20
