"""Approval-gated tools against a real server, with the official Python SDK client.

The SDK calls a gated tool and waits; a staff user logged in to the server's admin (a real HTTP
session: login form, CSRF) finds the pending call in "Call approvals" and approves or rejects
it with the change page's forms. On 2026-07-28 and 2025-11-25; the SDK sees the result, or an
isError result with the reason. Task-augmented calls with a real Celery worker on Redis: the
task is held until approved, then run by the worker; a rejected one fails with the reason. The
browser walk-through: tests/e2e/test_admin_browser.py.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.support import external_services
from tests.support.sdk import legacy_handshake, send_unchecked
from tests.support.servers import LiveServer, drop_queue, run_server, start_worker

pytestmark = [pytest.mark.e2e]

MODERN = "2026-07-28"
PASSWORD = "approver-pw"

GATE_ECHO = """
from django.contrib.auth.models import Permission, User
from mcp_tools.models import Tool
for name in ("echo", "build_report"):
    tool = Tool.objects.get(name=name)
    tool.requires_approval = True
    tool.approval_timeout = 60
    tool.save()
user = User.objects.create_user("approver", password="approver-pw", is_staff=True)
user.user_permissions.add(Permission.objects.get(codename="approve_call"))
"""


@pytest.fixture(scope="module")
def gated_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("approvals")
    with run_server(tmp) as live:
        live.manage("shell", "-c", GATE_ECHO)
        yield live


class Approver:
    """A staff user in the server's admin, over plain HTTP (as a browser without JavaScript)."""

    def __init__(self, gated_server: LiveServer) -> None:
        self.base = gated_server.base_url
        self.http = httpx.AsyncClient(base_url=self.base, timeout=10, follow_redirects=True)

    async def login(self) -> None:
        page = await self.http.get("/admin/login/")
        token = _csrf(page.text)
        done = await self.http.post(
            "/admin/login/?next=/admin/",
            data={"username": "approver", "password": PASSWORD, "csrfmiddlewaretoken": token, "next": "/admin/"},
            headers={"Referer": self.base + "/admin/login/"},
        )
        assert "Log out" in done.text or "logout" in done.text, done.text[:500]

    async def pending_call(self, timeout: float = 20) -> int:
        """The id of the one pending call, once it shows in the list."""
        with anyio.fail_after(timeout):
            while True:
                listing = await self.http.get("/admin/mcp_tools/mcpapproval/")
                assert listing.status_code == 200
                found = sorted(
                    {int(n) for n in re.findall(r"/admin/mcp_tools/mcpapproval/(\d+)/change/", listing.text)}
                )
                if found:
                    return found[-1]
                await anyio.sleep(0.2)

    async def decide(self, pk: int, decision: str, reason: str = "") -> str:
        page = await self.http.get(f"/admin/mcp_tools/mcpapproval/{pk}/change/")
        assert 'value="Approve"' in page.text
        done = await self.http.post(
            f"/admin/mcp_tools/mcpapproval/{pk}/decide/",
            data={"csrfmiddlewaretoken": _csrf(page.text), "decision": decision, "reason": reason},
            headers={"Referer": str(page.url)},
        )
        assert done.status_code == 200
        return " ".join(re.findall(r'<li class="(?:success|error)">(.*?)</li>', done.text))


def _csrf(html: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert match, html[:500]
    return match.group(1)


async def _call_modern(url: str, text: str) -> Any:
    from mcp import Client

    async with Client(url, mode=MODERN) as client:
        return await client.call_tool("echo", {"text": text})


async def _call_legacy(url: str, text: str, logged: list[str]) -> Any:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def on_log(params: Any) -> None:
        logged.append(str(params.data))

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, logging_callback=on_log) as session,
    ):
        await legacy_handshake(session, "2025-11-25")
        return await session.call_tool("echo", {"text": text})


async def _flow(gated_server: LiveServer, version: str, decision: str, reason: str = "") -> tuple[Any, str, list[str]]:
    approver = Approver(gated_server)
    await approver.login()
    outcome: dict[str, Any] = {}
    logged: list[str] = []

    async def call() -> None:
        if version == MODERN:
            outcome["result"] = await _call_modern(gated_server.url, f"{decision} {version}")
        else:
            outcome["result"] = await _call_legacy(gated_server.url, f"{decision} {version}", logged)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            pk = await approver.pending_call()
            assert "result" not in outcome  # the call waits for the decision
            message = await approver.decide(pk, decision, reason)
    await approver.http.aclose()
    assert re.fullmatch(rf"{'Approved' if decision == 'approve' else 'Rejected'} call #{pk} of tool echo\.", message)
    return outcome["result"], message, logged


@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
def test_an_approved_call_completes_for_the_sdk_client(gated_server: LiveServer, version: str) -> None:
    result, _, logged = anyio.run(_flow, gated_server, version, "approve")
    assert result.is_error is not True, result
    assert result.content[0].text == f"approve {version}"
    if version != MODERN:  # a legacy stream is told why the call waits
        assert len(logged) == 1
        assert re.fullmatch(r"Call #\d+ of tool 'echo' awaits approval \(up to 60 seconds\)\.", logged[0])


@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
def test_a_rejected_call_gives_the_sdk_client_the_reason(gated_server: LiveServer, version: str) -> None:
    result, _, _ = anyio.run(_flow, gated_server, version, "reject", "Not during the freeze")
    assert result.is_error is True
    assert result.content[0].text == "The call of tool 'echo' was rejected by approver: Not during the freeze"


# --------------------------------------------------------------------------- tasks, real worker


@pytest.fixture(scope="module")
def gated_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The server and a Celery worker on Redis (its own queue), sharing a SQLite file."""
    external_services.require("redis")
    tmp: Path = tmp_path_factory.mktemp("approval-tasks")
    queue = f"mcp-e2e-approvals-{uuid.uuid4().hex[:8]}"
    broker = f"redis://127.0.0.1:6379/{os.environ.get('MCP_TEST_REDIS_DB', '5')}"
    with run_server(tmp, extra_env={"CELERY_BROKER_URL": broker, "MCP_TASK_QUEUE": queue}) as live:
        live.manage("shell", "-c", GATE_ECHO)
        worker = start_worker(live.env, tmp / "worker.log", queue=queue, concurrency=2)
        try:
            yield live
        finally:
            worker.stop()
            drop_queue(broker, queue)


async def _task_flow(gated_server: LiveServer) -> None:
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    approver = Approver(gated_server)
    await approver.login()

    async def get(session: Any, task_id: str) -> Any:
        request = types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id))
        return await session.send_request(request, types.GetTaskResult)

    async def until_done(session: Any, task_id: str) -> Any:
        with anyio.fail_after(30):
            while (got := await get(session, task_id)).status not in ("completed", "failed", "cancelled"):
                await anyio.sleep(0.1)
        return got

    async def result(session: Any, task_id: str) -> Any:
        request = types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
        return await session.send_request(request, types.CallToolResult)

    async with streamable_http_client(gated_server.url) as (read, write), ClientSession(read, write) as session:
        await legacy_handshake(session)
        for decision in ("approve", "reject"):
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(
                    name="build_report", arguments={"steps": 1}, task=types.TaskMetadata(ttl=120_000)
                )
            )
            created = types.CreateTaskResult.model_validate(await send_unchecked(session, request))
            task_id = created.task.task_id
            pk = await approver.pending_call()
            assert created.task.status == "working"
            assert created.task.status_message == f"Awaiting approval (call #{pk})."
            await anyio.sleep(1.0)  # the worker is idle: nothing runs before the decision
            held = await get(session, task_id)
            assert (held.status, held.status_message) == ("working", f"Awaiting approval (call #{pk}).")
            await approver.decide(pk, decision, "Reports are frozen")
            done = await until_done(session, task_id)
            payload = await result(session, task_id)
            if decision == "approve":
                assert done.status == "completed"
                assert payload.content[0].text == "Report ready after 1 steps."
            else:  # T11-17: an isError result fails a 2025-11-25 task
                assert done.status == "failed"
                refusal = "The call of tool 'build_report' was rejected by approver: Reports are frozen"
                assert done.status_message == refusal
                assert payload.is_error is True
                assert payload.content[0].text == refusal
    await approver.http.aclose()


@pytest.mark.redis
def test_a_held_task_runs_in_the_worker_only_once_approved(gated_stack: LiveServer) -> None:
    anyio.run(_task_flow, gated_stack)
