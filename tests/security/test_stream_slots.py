"""Issue 32 (finding 5): every long-lived stream or wait holds one of its owner's stream slots.

``MAX_STREAMS_PER_PRINCIPAL`` bounds what one user keeps open on the server. A
``subscriptions/listen`` that asked for nothing took no slot (100 held open against a limit of
32), and a ``tasks/result`` waiting for a working task took none either. Each now holds a slot
from its start to its end, and one more gets 429; a slot comes back when its stream ends.
Real view, real cache counters, Django's async client holding the streams open on one loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from tests.support.mcp_client import MODERN, Mcp, check_message, modern_meta

pytestmark = pytest.mark.django_db

LIMIT = 3
ACCEPT = "application/json, text/event-stream"


@pytest.fixture
def limited(settings: Any) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "MAX_STREAMS_PER_PRINCIPAL": LIMIT,
        "SSE_MAX_SECONDS": 30,
        "SSE_KEEPALIVE_SECONDS": 10,
    }


def _listen(request_id: int, notifications: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "subscriptions/listen",
        "params": {"_meta": modern_meta(), "notifications": notifications},
    }


LISTEN_HEADERS = {"Accept": ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}


@contextlib.asynccontextmanager
async def _held(client: AsyncClient, body: dict[str, Any], headers: dict[str, str]) -> AsyncIterator[Any]:
    """POST ``body``; while inside, a streamed answer is held open (its first chunk read)."""
    response = await client.post("/mcp", body, content_type="application/json", headers=headers)
    chunks = None
    try:
        if response.status_code == 200 and response.streaming:
            chunks = response.streaming_content.__aiter__()
            await chunks.__anext__()  # the acknowledgement: the stream is open
        yield response
    finally:
        if chunks is not None:
            await chunks.aclose()
        await asyncio.to_thread(response.close)


def _refusal(response: Any, request_id: int, version: str) -> dict[str, Any]:
    assert response.status_code == 429, response.status_code
    assert response["Retry-After"] == "5"
    message = json.loads(response.content)
    check_message(version, message)
    assert message["id"] == request_id
    assert "MAX_STREAMS_PER_PRINCIPAL" in message["error"]["message"]
    return message


@pytest.mark.usefixtures("limited", "demo_tools")
@pytest.mark.parametrize("asked", [{}, {"toolsListChanged": True}], ids=["nothing", "list_changed"])
def test_every_listen_stream_holds_a_slot_whatever_it_asks_for(asked: dict[str, Any]) -> None:
    """A listen that asks for nothing stays open as long as one that asks for everything: it
    holds a slot too; the fourth of a limit of three is refused, and one more fits once one ends."""

    async def scenario() -> None:
        client = AsyncClient()
        async with contextlib.AsyncExitStack() as streams:
            for i in range(LIMIT):
                opened = await streams.enter_async_context(_held(client, _listen(i, asked), LISTEN_HEADERS))
                assert opened.status_code == 200, i
            async with _held(client, _listen(99, asked), LISTEN_HEADERS) as refused:
                _refusal(refused, 99, MODERN)
        deadline = asyncio.get_running_loop().time() + 5
        while True:  # slots come back on the thread pool, at once
            async with _held(client, _listen(100, asked), LISTEN_HEADERS) as again:
                if again.status_code == 200 or asyncio.get_running_loop().time() > deadline:
                    assert again.status_code == 200
                    return
            await asyncio.sleep(0.05)

    async_to_sync(scenario)()


@pytest.mark.usefixtures("queued")
def test_a_tasks_result_waiting_for_its_task_holds_a_slot(mcp: Mcp, settings: Any) -> None:
    """T11-10: tasks/result blocks until the task ends. The wait holds a slot: a second wait
    over a limit of one is refused at once (429, the request's id), and a slot comes back when
    the first wait answers; a task already done answers without waiting and takes no slot."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_STREAMS_PER_PRINCIPAL": 1, "TASK_RESULT_WAIT_SECONDS": 1.5}
    mcp.initialize("2025-11-25")
    created = mcp.call("tools/call", {"name": "build_report", "arguments": {"steps": 1}, "task": {}})
    task_id = created["task"]["taskId"]
    headers = {
        "Accept": "application/json",
        "Mcp-Session-Id": mcp.session_id or "",
        "MCP-Protocol-Version": "2025-11-25",
    }

    def result(request_id: int) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tasks/result", "params": {"taskId": task_id}}

    async def scenario() -> tuple[Any, Any]:
        client = AsyncClient()
        first = asyncio.ensure_future(client.post("/mcp", result(1), content_type="application/json", headers=headers))
        await asyncio.sleep(0.5)  # the first is waiting now
        assert not first.done()
        second = await client.post("/mcp", result(2), content_type="application/json", headers=headers)
        assert not first.done()
        return await first, second

    first, second = async_to_sync(scenario)()
    _refusal(second, 2, "2025-11-25")
    waited = json.loads(first.content)
    assert waited["id"] == 1
    assert "still working" in waited["error"]["message"]  # the wait ended: its slot came back
    deadline = time.monotonic() + 5
    while True:  # the slot comes back on the thread pool, at once: then a wait is not refused
        response, third, _ = mcp.request("tasks/result", {"taskId": task_id})
        if response.status_code != 429 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "still working" in third["error"]["message"]
