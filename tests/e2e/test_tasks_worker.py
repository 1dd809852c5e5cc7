"""Tasks end to end: uvicorn + a real Celery worker on Redis (DB 5) + real clients.

The server and the worker share a SQLite file; messages go through Redis. Each module run
uses its own queue name so no stale message of an earlier run is consumed.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import external_services
from tests.support.mcp_client import MODERN, check_message, modern_meta
from tests.support.sdk import legacy_handshake, send_unchecked
from tests.support.servers import LiveServer, Worker, drop_queue, run_server, start_worker

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

EXT = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
REDIS_DB = os.environ.get("MCP_TEST_REDIS_DB", "5")
VISIBILITY_TIMEOUT = 3
LOST_AFTER_SECONDS = 2


@dataclass
class Stack:
    server: LiveServer
    worker: Worker
    queue: str
    tmp: Path

    def restart_worker(self) -> None:
        self.worker.stop()
        self.worker = start_worker(self.server.env, self.tmp / "worker.log", queue=self.queue)


@pytest.fixture(scope="module")
def worker_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    external_services.require("redis")
    tmp = tmp_path_factory.mktemp("tasks")
    queue = f"mcp-e2e-{uuid.uuid4().hex[:8]}"
    env = {
        "CELERY_BROKER_URL": f"redis://127.0.0.1:6379/{REDIS_DB}",
        "MCP_TASK_QUEUE": queue,
        "MCP_CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY_TIMEOUT),
        "MCP_CELERY_RESTORE_INTERVAL": "1",
        # A redelivered message whose task still beats is dropped: beat often, give up soon.
        "MCP_TASK_HEARTBEAT_SECONDS": "0.5",
        "MCP_TASK_LOST_AFTER_SECONDS": str(LOST_AFTER_SECONDS),
    }
    with run_server(tmp, extra_env=env) as server:
        worker = start_worker(server.env, tmp / "worker.log", queue=queue)
        s = Stack(server, worker, queue, tmp)
        try:
            yield s
        finally:
            s.worker.stop()
            drop_queue(env["CELERY_BROKER_URL"], queue)


# --------------------------------------------------------------------------- raw HTTP helpers


class Raw:
    """A minimal JSON-RPC client over urllib; validates every message against the schemas."""

    def __init__(self, url: str, version: str = "2025-11-25") -> None:
        self.url = url
        self.version = version
        self.session: str | None = None
        self.next_id = 0

    def post(self, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            hdrs["Mcp-Session-Id"] = self.session
            hdrs["MCP-Protocol-Version"] = self.version
        hdrs.update(headers or {})
        request = urllib.request.Request(self.url, json.dumps(body).encode(), hdrs, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                if method == "initialize":
                    self.session = response.headers["Mcp-Session-Id"]
        except urllib.error.HTTPError as exc:
            raw = exc.read()
        message = json.loads(raw)
        if method != "initialize":
            check_message(self.version, message, method)
        return dict(message)

    def initialize(self) -> None:
        self.post(
            "initialize",
            {"protocolVersion": self.version, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}},
        )

    def modern(
        self, method: str, params: dict[str, Any], name: str | None = None, capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        declared = {"extensions": {EXT: {}}, **(capabilities or {})}
        meta = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": declared})
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        return self.post(method, {**params, "_meta": meta}, headers)


def _poll(get: Any, until: Any, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        state = get()
        if until(state):
            return dict(state)
        assert time.monotonic() < deadline, f"timed out; last state {state}"
        time.sleep(0.1)


def _start_export(client: Raw, steps: int, *, running: bool = False) -> str:
    """Start an export_archive task (0.5 s steps) and return its id; with ``running``, poll until
    the worker runs it (its first step shows as the status message)."""
    created = client.post("tools/call", {"name": "export_archive", "arguments": {"steps": steps}, "task": {}})
    task_id = str(created["result"]["task"]["taskId"])
    if running:
        _poll(
            lambda: client.post("tasks/get", {"taskId": task_id})["result"],
            lambda s: s.get("statusMessage", "").startswith("Step"),
        )
    return task_id


# --------------------------------------------------------------------------- Python SDK, 2025-11-25


@pytest.mark.anyio
async def test_python_sdk_creates_polls_fetches_and_lists(worker_stack: Stack) -> None:
    """T11-5, T11-9, T11-10, T11-12 with the official Python SDK and a real worker."""
    import anyio
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with streamable_http_client(worker_stack.server.url) as (read, write), ClientSession(read, write) as session:
        init = await legacy_handshake(session)
        assert init.capabilities.tasks is not None
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(
                name="build_report", arguments={"steps": 3}, task=types.TaskMetadata(ttl=120_000)
            )
        )
        created = types.CreateTaskResult.model_validate(await send_unchecked(session, request))
        task_id = created.task.task_id
        assert created.task.status == "working"
        statuses: list[str] = []
        messages: list[str] = []
        with anyio.fail_after(20):
            while True:
                got = await session.send_request(
                    types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult
                )
                statuses.append(got.status)
                if got.status_message:
                    messages.append(got.status_message)
                if got.status in ("completed", "failed", "cancelled"):
                    break
                await anyio.sleep(0.1)
        assert statuses[-1] == "completed"
        assert any(m.startswith("Step ") for m in messages)  # progress became the status message
        result = await session.send_request(
            types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
            types.CallToolResult,
        )
        assert result.content[0].text == "Report ready after 3 steps."  # type: ignore[union-attr]
        assert result.meta is not None
        assert result.meta[RELATED] == {"taskId": task_id}
        listed = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
        assert task_id in [t.task_id for t in listed.tasks]


def test_tasks_result_blocks_until_the_worker_finishes(worker_stack: Stack) -> None:
    """T11-10: tasks/result on a working task answers only once it is terminal."""
    client = Raw(worker_stack.server.url)
    client.initialize()
    task_id = _start_export(client, 3)
    started = time.monotonic()
    result = client.post("tasks/result", {"taskId": task_id})
    waited = time.monotonic() - started
    assert result["result"]["content"][0]["text"] == "Report ready after 3 steps."
    assert waited > 1.0  # three 0.5 s steps ran in the worker while we waited
    assert client.post("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"


def test_waiting_on_results_does_not_starve_other_requests(worker_stack: Stack) -> None:
    """T11-10 waits without a thread: 10 clients blocked in tasks/result, tools/list still answers."""
    import concurrent.futures

    client = Raw(worker_stack.server.url)
    client.initialize()
    ids = [_start_export(client, 6) for _ in range(10)]

    def wait(task_id: str) -> dict[str, Any]:
        waiter = Raw(worker_stack.server.url)
        waiter.session = client.session
        return waiter.post("tasks/result", {"taskId": task_id})

    with concurrent.futures.ThreadPoolExecutor(max_workers=10) as pool:
        futures = [pool.submit(wait, task_id) for task_id in ids]
        time.sleep(1.0)  # every waiter is inside tasks/result now
        assert not any(f.done() for f in futures)
        started = time.monotonic()
        listed = client.post("tools/list", {})
        elapsed = time.monotonic() - started
        assert "tools" in listed["result"]
        assert elapsed < 2.0, elapsed
        for task_id in ids:
            client.post("tasks/cancel", {"taskId": task_id})
        outcomes = [f.result(timeout=30) for f in futures]
    assert all("error" in o or "result" in o for o in outcomes)


def test_cancel_a_running_task_ends_cancelled(worker_stack: Stack) -> None:
    """T11-13: the running handler stops; the task stays cancelled after the worker is done."""
    client = Raw(worker_stack.server.url)
    client.initialize()
    task_id = _start_export(client, 20, running=True)
    cancelled = client.post("tasks/cancel", {"taskId": task_id})["result"]
    assert cancelled["status"] == "cancelled"
    time.sleep(1.5)  # the handler checks between 0.5 s steps
    state = client.post("tasks/get", {"taskId": task_id})["result"]
    assert state["status"] == "cancelled"
    assert "Step 20" not in state.get("statusMessage", "")


def test_another_token_cannot_see_the_task(worker_stack: Stack) -> None:
    """T11-16: the demo's AllowAny backend gives every caller the same principal, so isolation is
    covered with two real principals in tests/integration/test_tasks.py; here an unknown id and
    a forged cursor are refused by the real server."""
    client = Raw(worker_stack.server.url)
    client.initialize()
    assert client.post("tasks/get", {"taskId": "A" * 32})["error"]["code"] == -32602
    assert client.post("tasks/list", {"cursor": "nope"})["error"]["code"] == -32602


# --------------------------------------------------------------------------- 2026-07-28 extension


def test_modern_extension_flow(worker_stack: Stack) -> None:
    """TX-1..TX-8: discover, server-decided task, poll to completion with the result, cancel ack."""
    client = Raw(worker_stack.server.url, MODERN)
    discover = client.modern("server/discover", {})
    assert EXT in discover["result"]["capabilities"]["extensions"]
    created = client.modern("tools/call", {"name": "build_report", "arguments": {"steps": 2}}, name="build_report")
    task = created["result"]
    assert task["resultType"] == "task"
    assert task["status"] == "working"
    done = _poll(
        lambda: client.modern("tasks/get", {"taskId": task["taskId"]}, name=task["taskId"])["result"],
        lambda s: s["status"] != "working",
    )
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == {"steps": 2}
    ack = client.modern("tasks/cancel", {"taskId": task["taskId"]}, name=task["taskId"])
    assert ack["result"]["resultType"] == "complete"
    assert client.modern("tasks/get", {"taskId": task["taskId"]}, name=task["taskId"])["result"]["status"] == (
        "completed"
    )


# --------------------------------------------------------------------------- reliability


def test_worker_killed_mid_task_is_retried_by_a_new_worker(worker_stack: Stack) -> None:
    """acks_late + reject_on_worker_lost + Redis visibility timeout: SIGKILL the worker while the
    handler runs, start a new one, and the task ends completed (retried), never stuck working."""
    client = Raw(worker_stack.server.url)
    client.initialize()
    task_id = _start_export(client, 6, running=True)
    os.kill(worker_stack.worker.process.pid, signal.SIGKILL)
    worker_stack.worker.process.wait(timeout=10)
    killed_at = time.monotonic()
    worker_stack.restart_worker()
    final = _poll(
        lambda: client.post("tasks/get", {"taskId": task_id})["result"],
        lambda s: s["status"] != "working",
        timeout=VISIBILITY_TIMEOUT + 25,
    )
    recovered = time.monotonic() - killed_at
    assert final["status"] == "completed", final
    result = client.post("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "Report ready after 6 steps."
    print(f"worker killed -> task completed on the new worker in {recovered:.1f} s")
    assert recovered < VISIBILITY_TIMEOUT + 25


# --------------------------------------------------------------------------- tasks that ask

CONFIRM_FORM = {"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}
CREATE_CONFIRM_TOOL = f"""
from mcp_tools.models import Tool
Tool.objects.update_or_create(name="confirm_export", defaults=dict(
    description="Asks the user to confirm, as a task.", handler_key="demo.form", task_support="optional",
    input_schema={{"type": "object", "properties": {{}}}},
    handler_config={{"message": "Export 3 files?", "reply": "Export:", "schema": {CONFIRM_FORM!r}}},
))
"""


@pytest.fixture(scope="module")
def confirm_tool(worker_stack: Stack) -> str:
    """A task-capable tool whose handler asks the user (the demo's form kind), added to the live server."""
    worker_stack.server.manage("shell", "-c", CREATE_CONFIRM_TOOL)
    return "confirm_export"


@pytest.mark.anyio
async def test_python_sdk_answers_the_elicitation_of_a_task(worker_stack: Stack, confirm_tool: str) -> None:
    """T11-11, T11-15 with the official Python SDK and a real worker: the task waits in
    input_required (and its worker keeps beating: still so after TASK_LOST_AFTER_SECONDS);
    tasks/result carries elicitation/create with related-task _meta; the SDK's elicitation
    callback answers (a response POST); the task works again and completes."""
    import anyio
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    asked: list[Any] = []

    async def confirm(context: Any, params: Any) -> Any:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async def get(session: Any, task_id: str) -> Any:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return await session.send_request(request, types.GetTaskResult)

    async with (
        streamable_http_client(worker_stack.server.url) as (read, write),
        ClientSession(read, write, elicitation_callback=confirm) as session,
    ):
        await legacy_handshake(
            session, capabilities=types.ClientCapabilities(elicitation=types.ElicitationCapability())
        )
        request = types.CallToolRequest(
            params=types.CallToolRequestParams(name=confirm_tool, arguments={}, task=types.TaskMetadata(ttl=120_000))
        )
        created = types.CreateTaskResult.model_validate(await send_unchecked(session, request))
        task_id = created.task.task_id
        with anyio.fail_after(20):
            while (asking := await get(session, task_id)).status != "input_required":
                await anyio.sleep(0.1)
        await anyio.sleep(LOST_AFTER_SECONDS + 1.5)  # tasks/get applies recovery on read
        waiting = await get(session, task_id)
        assert waiting.status == "input_required", waiting
        # Untouched meanwhile: a task given up as lost is queued again, which moves lastUpdatedAt.
        assert waiting.last_updated_at == asking.last_updated_at
        assert waiting.status_message == "Waiting for the client to answer a question to the user (elicitation)."
        assert asked == []  # nothing is asked before the client calls tasks/result
        with anyio.fail_after(20):
            result = await session.send_request(
                types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
                types.CallToolResult,
            )
        assert result.content[0].text == 'Export: action=accept, content={"confirm": true}'  # type: ignore[union-attr]
        assert result.meta is not None
        assert result.meta[RELATED] == {"taskId": task_id}
        assert [params.message for params in asked] == ["Export 3 files?"]
        meta = asked[0].meta.model_dump(by_alias=True) if hasattr(asked[0].meta, "model_dump") else asked[0].meta
        assert meta[RELATED] == {"taskId": task_id}
        done = await get(session, task_id)
        assert done.status == "completed"


def test_tasks_result_stream_carries_the_request_the_status_changes_and_the_result(
    worker_stack: Stack, confirm_tool: str
) -> None:
    """T11-11, T11-14, T11-15 on the wire, with a real worker: one tasks/result stream sends
    notifications/tasks/status (input_required), the request with related-task _meta, then
    (after the response POST) the result; a status notification for the working spell between
    them only when the stream looked during it (the handler ends at once here)."""
    import httpx

    client = Raw(worker_stack.server.url)
    client.post(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "e2e", "version": "1"},
        },
    )
    created = client.post("tools/call", {"name": confirm_tool, "arguments": {}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    _poll(lambda: client.post("tasks/get", {"taskId": task_id})["result"], lambda s: s["status"] == "input_required")
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": str(client.session),
        "MCP-Protocol-Version": client.version,
    }
    body = {"jsonrpc": "2.0", "id": 77, "method": "tasks/result", "params": {"taskId": task_id}}
    received: list[dict[str, Any]] = []
    with httpx.Client(timeout=30) as http, http.stream("POST", client.url, json=body, headers=headers) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for message in _sse_events(response):
            check_message(client.version, message, "tasks/result" if message.get("id") == 77 else None)
            received.append(message)
            if message.get("method") == "elicitation/create":
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "decline"}}
                assert http.post(client.url, json=answer, headers=headers).status_code == 202
    status, request, *between, final = received
    assert status["method"] == "notifications/tasks/status"
    assert status["params"]["status"] == "input_required"
    assert request["method"] == "elicitation/create"
    assert request["params"]["_meta"][RELATED] == {"taskId": task_id}
    assert request["params"]["requestedSchema"] == CONFIRM_FORM
    assert [(m["method"], m["params"]["status"]) for m in between] in ([], [("notifications/tasks/status", "working")])
    assert final["id"] == 77
    assert final["result"]["content"][0]["text"] == "Export: action=decline, content={}"
    assert final["result"]["_meta"][RELATED] == {"taskId": task_id}


def _sse_events(response: Any) -> Iterator[dict[str, Any]]:
    data: list[str] = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            yield json.loads("\n".join(data))
            data = []


def test_modern_task_that_asks_is_answered_with_tasks_update(worker_stack: Stack, confirm_tool: str) -> None:
    """TX-6, TX-7 with a real worker: tasks/get shows inputRequests, tasks/update answers them,
    and the task completes (any server process would do: the answer goes through the database)."""
    client = Raw(worker_stack.server.url, MODERN)
    caps = {"elicitation": {}}
    created = client.modern("tools/call", {"name": confirm_tool, "arguments": {}}, name=confirm_tool, capabilities=caps)
    task_id = created["result"]["taskId"]

    def get() -> dict[str, Any]:
        return client.modern("tasks/get", {"taskId": task_id}, name=task_id, capabilities=caps)["result"]

    asking = _poll(get, lambda s: s["status"] != "working")
    assert asking["status"] == "input_required", asking
    (key, request), *_ = asking["inputRequests"].items()
    assert key == "elicit-1"
    assert request["method"] == "elicitation/create"
    assert request["params"]["requestedSchema"] == CONFIRM_FORM
    answer = {key: {"action": "accept", "content": {"confirm": False}}}
    ack = client.modern("tasks/update", {"taskId": task_id, "inputResponses": answer}, name=task_id, capabilities=caps)
    assert ack["result"]["resultType"] == "complete"
    done = _poll(get, lambda s: s["status"] not in ("working", "input_required"))
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == 'Export: action=accept, content={"confirm": false}'


def test_a_task_whose_worker_dies_while_it_waits_for_input_asks_again_on_a_new_worker(
    worker_stack: Stack, confirm_tool: str
) -> None:
    """SIGKILL the worker while the task waits in input_required: the heartbeat stops, the task is
    queued again (working), the new worker's run asks again under a new key (TX-7) and completes."""
    client = Raw(worker_stack.server.url, MODERN)
    caps = {"elicitation": {}}
    created = client.modern("tools/call", {"name": confirm_tool, "arguments": {}}, name=confirm_tool, capabilities=caps)
    task_id = created["result"]["taskId"]

    def get() -> dict[str, Any]:
        return client.modern("tasks/get", {"taskId": task_id}, name=task_id, capabilities=caps)["result"]

    first = _poll(get, lambda s: s["status"] == "input_required")
    assert list(first["inputRequests"]) == ["elicit-1"]
    os.kill(worker_stack.worker.process.pid, signal.SIGKILL)
    worker_stack.worker.process.wait(timeout=10)
    worker_stack.restart_worker()
    again = _poll(get, lambda s: s["status"] == "input_required" and "elicit-1" not in s["inputRequests"], timeout=30)
    assert list(again["inputRequests"]) == ["elicit-2"]
    answer = {"elicit-1": {"action": "decline"}, "elicit-2": {"action": "accept", "content": {"confirm": True}}}
    client.modern("tasks/update", {"taskId": task_id, "inputResponses": answer}, name=task_id, capabilities=caps)
    done = _poll(get, lambda s: s["status"] not in ("working", "input_required"))
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == 'Export: action=accept, content={"confirm": true}'


@pytest.mark.node
def test_ts_sdk_task_flow(worker_stack: Stack) -> None:
    """T11-2, T11-9..T11-12 with @modelcontextprotocol/sdk 1.x: create, poll, result, list, get."""
    import subprocess

    from tests.support.nodejs import JS_DIR, node

    done = subprocess.run(
        [str(node()), "tasks_legacy.mjs", worker_stack.server.url],
        cwd=JS_DIR,
        capture_output=True,
        text=True,
        timeout=90,
    )
    outcome = json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {"stderr": done.stderr}
    assert outcome.get("ok") is True, outcome
    assert outcome["negotiated"] == "tasks"
    assert outcome["types"][0] == "taskCreated"
    assert outcome["final_type"] == "result", outcome
    assert outcome["result_text"], outcome
    assert outcome["task_id"] in outcome["listed_ids"]
    assert outcome["task_status"] == "completed"
