"""The built-in tool kinds end to end: a real server with OAuth, a real Celery worker on Redis,
and the official Python SDK client.

``celery.task`` rows run the demo's Celery tasks (project/demo/tasks.py) on the worker, in plain
calls (sent to the broker, the result awaited) and as MCP tasks (run in the MCP task's worker);
``drf.view`` rows call the demo REST API (project/library/api.py) as the token's user, so the
viewset allows alice (model permissions on books) and refuses carol (none).

The server gets ``PORT`` and no ``MCP_RESOURCE_URL``: the tokens minted for it (their audience)
are accepted because the demo's resource URL follows HOST/PORT (issue 15, first-run polish).
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import external_services
from tests.support.mcp_client import check_message
from tests.support.sdk import legacy_handshake
from tests.support.servers import LiveServer, Worker, drop_queue, free_port, run_server, start_worker

pytestmark = [pytest.mark.e2e, pytest.mark.redis, pytest.mark.anyio]

REDIS_DB = os.environ.get("MCP_TEST_REDIS_DB", "5")
RELATED = "io.modelcontextprotocol/related-task"
RECEIVED = re.compile(r"Task demo\.word_stats\[[^]]+\] received")

TOOLS = """
from mcp_tools.models import Tool
queue = {queue!r}
for name, key, config, support in [
    ("stats", "celery.task", {{"task": "demo.word_stats", "timeout": 20, "queue": queue}}, "optional"),
    ("divide", "celery.task", {{"task": "demo.divide", "timeout": 20, "queue": queue}}, "forbidden"),
    ("nap", "celery.task", {{"task": "demo.sleep", "timeout": 1, "queue": queue}}, "forbidden"),
    ("api_get_book", "drf.view", {{"route": "book-detail", "method": "GET"}}, "forbidden"),
    ("api_patch_book", "drf.view", {{"route": "book-detail", "method": "PATCH"}}, "forbidden"),
]:
    tool = Tool(name=name, handler_key=key, handler_config=config, task_support=support)
    tool.input_schema = {{"type": "object"}}
    tool.full_clean()
    tool.save()
from django.contrib.auth.models import User
User.objects.create(username="carol")
from project.library.models import Book
print(Book.objects.order_by("id").values_list("id", flat=True).first())
"""


@dataclass
class Stack:
    server: LiveServer
    worker: Worker
    tokens: dict[str, str]
    book: int


@pytest.fixture(scope="module")
def kinds_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    external_services.require("redis")
    tmp: Path = tmp_path_factory.mktemp("kinds")
    queue = f"mcp-kinds-{uuid.uuid4().hex[:8]}"
    port = free_port()
    broker = f"redis://127.0.0.1:6379/{REDIS_DB}"
    env = {
        "MCP_AUTH": "oauth",
        "PORT": str(port),  # and no MCP_RESOURCE_URL: the audience follows HOST/PORT
        "MCP_RESOURCE_URL": "",
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": broker,
        "MCP_TASK_QUEUE": queue,
        "MCP_RATE_LIMIT": "off",
    }
    with run_server(tmp, extra_env=env, port=port) as server:
        server.manage("seed_library", "--books", "20")
        book = int(server.manage("shell", "-c", TOOLS.format(queue=queue)).strip().splitlines()[-1])
        tokens = {
            name: server.manage("mcp_token", "--user", name, "--scopes", "").strip().splitlines()[-1]
            for name in ("alice", "carol")
        }
        worker = start_worker(server.env, tmp / "worker.log", queue=queue)
        try:
            yield Stack(server, worker, tokens, book)
        finally:
            worker.stop()
            drop_queue(broker, queue)


@asynccontextmanager
async def _session(server: LiveServer, token: str) -> AsyncIterator[Any]:
    """A 2025-11-25 SDK session with the token; every JSON answer is checked against the schema."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def validate(response: Any) -> None:
        if not response.headers.get("content-type", "").startswith("application/json"):
            return
        await response.aread()
        request = json.loads(response.request.content or b"{}")
        if response.status_code == 200 and isinstance(request, dict) and "id" in request:
            check_message("2025-11-25", json.loads(response.content), request.get("method"))

    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30, read=60),
        event_hooks={"response": [validate]},
    )
    async with (
        http,
        streamable_http_client(server.url, http_client=http) as (read, write),  # type: ignore[arg-type]
        ClientSession(read, write) as session,
    ):
        await legacy_handshake(session)
        yield session


async def test_celery_task_kind_runs_on_the_worker(kinds_stack: Stack) -> None:
    async with _session(kinds_stack.server, kinds_stack.tokens["alice"]) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"stats", "divide", "nap"} <= names

        result = await session.call_tool("stats", {"text": "to be or not to be", "top": 2})
        assert not result.is_error, result.content
        assert result.structured_content == {"words": 6, "distinct": 4, "top": ["to", "be"]}
        assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]

        result = await session.call_tool("divide", {"a": 1, "b": 4})
        assert result.structured_content == {"result": 0.25}

        result = await session.call_tool("divide", {"a": 1, "b": 0})
        assert result.is_error
        message = result.content[0].text  # type: ignore[union-attr]
        assert "'demo.divide' failed" in message
        assert "ZeroDivision" not in message
        assert "division by zero" not in message

        started = time.monotonic()
        result = await session.call_tool("nap", {"seconds": 5})  # the row waits 1 s at most
        assert result.is_error
        assert result.content[0].text == "Task 'demo.sleep' did not finish within 1 s."  # type: ignore[union-attr]
        assert time.monotonic() - started < 4
    # The worker received what the web process sent, and the task that outlived its wait was revoked.
    log = kinds_stack.worker.log()
    assert RECEIVED.search(log)
    assert "Task demo.divide[" in log
    assert re.search(r"Task demo\.sleep\[([^]]+)\] received", log)
    deadline = time.monotonic() + 5
    while "Tasks flagged as revoked" not in log and time.monotonic() < deadline:
        time.sleep(0.1)
        log = kinds_stack.worker.log()
    assert "Tasks flagged as revoked" in log


async def test_celery_task_kind_as_an_mcp_task_runs_in_the_tasks_worker(kinds_stack: Stack) -> None:
    import anyio
    import mcp.types as types

    sent = len(RECEIVED.findall(kinds_stack.worker.log()))
    async with _session(kinds_stack.server, kinds_stack.tokens["alice"]) as session:
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name="stats", arguments={"text": "a a b"}, task=types.TaskMetadata(ttl=60_000)
            )
        )
        data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        opts: dict[str, Any] = {}
        session._stamp(data, opts)  # SDK 2.3 checks tools/call answers as CallToolResult
        created = types.CreateTaskResult.model_validate(
            await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts)
        )
        task_id = created.task.task_id
        with anyio.fail_after(20):
            result = await session.send_request(
                types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
                types.CallToolResult,
            )
        assert result.structured_content == {"words": 3, "distinct": 2, "top": ["a", "b"]}
        assert result.meta is not None
        assert result.meta[RELATED] == {"taskId": task_id}
    # The MCP task's worker ran the task's function itself: no message for it went to the broker.
    log = kinds_stack.worker.log()
    assert len(RECEIVED.findall(log)) == sent, log
    assert "mcp_tools.run_task" in log


async def test_drf_view_kind_allows_alice_and_refuses_carol(kinds_stack: Stack) -> None:
    async with _session(kinds_stack.server, kinds_stack.tokens["alice"]) as alice:
        got = await alice.call_tool("api_get_book", {"pk": kinds_stack.book})
        assert not got.is_error, got.content
        assert got.structured_content is not None
        assert got.structured_content["id"] == kinds_stack.book
        patched = await alice.call_tool("api_patch_book", {"pk": kinds_stack.book, "price": "7.25"})
        assert not patched.is_error, patched.content
        assert patched.structured_content is not None
        assert patched.structured_content["price"] == "7.25"
        missing = await alice.call_tool("api_get_book", {"pk": 10**9})
        assert missing.is_error
        assert missing.content[0].text.startswith("The view refused the call (404)")  # type: ignore[union-attr]
    async with _session(kinds_stack.server, kinds_stack.tokens["carol"]) as carol:
        refused = await carol.call_tool("api_patch_book", {"pk": kinds_stack.book, "price": "0.01"})
        assert refused.is_error
        text = refused.content[0].text  # type: ignore[union-attr]
        assert text.startswith("The caller is not allowed to do this (403)")
        readable = await carol.call_tool("api_get_book", {"pk": kinds_stack.book})  # reading needs a user only
        assert not readable.is_error
        assert readable.structured_content is not None
        assert readable.structured_content["price"] == "7.25"
    assert "Traceback" not in kinds_stack.server.log()
