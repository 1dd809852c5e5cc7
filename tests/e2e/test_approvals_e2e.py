"""Approval-gated tools against a real server, with the official Python SDK client.

The SDK calls a gated tool and waits; a staff user logged in to the server's admin (a real HTTP
session: login form, CSRF) finds the pending call in "Call approvals" and approves or rejects
it with the change page's forms. On 2026-07-28 and 2025-11-25; the SDK sees the result, or an
isError result with the reason. The browser walk-through: tests/e2e/test_admin_browser.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.sdk import legacy_handshake
from tests.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e]

MODERN = "2026-07-28"
PASSWORD = "approver-pw"

GATE_ECHO = """
from django.contrib.auth.models import Permission, User
from mcp_tools.models import Tool
tool = Tool.objects.get(name="echo")
tool.requires_approval = True
tool.approval_timeout = 60
tool.save()
user = User.objects.create_user("approver", password="approver-pw", is_staff=True)
user.user_permissions.add(Permission.objects.get(codename="approve_call"))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp: Path = tmp_path_factory.mktemp("approvals")
    with run_server(tmp) as live:
        live.manage("shell", "-c", GATE_ECHO)
        yield live


class Approver:
    """A staff user in the server's admin, over plain HTTP (as a browser without JavaScript)."""

    def __init__(self, server: LiveServer) -> None:
        self.base = server.base_url
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


async def _flow(server: LiveServer, version: str, decision: str, reason: str = "") -> tuple[Any, str, list[str]]:
    approver = Approver(server)
    await approver.login()
    outcome: dict[str, Any] = {}
    logged: list[str] = []

    async def call() -> None:
        if version == MODERN:
            outcome["result"] = await _call_modern(server.url, f"{decision} {version}")
        else:
            outcome["result"] = await _call_legacy(server.url, f"{decision} {version}", logged)

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
def test_an_approved_call_completes_for_the_sdk_client(server: LiveServer, version: str) -> None:
    result, _, logged = anyio.run(_flow, server, version, "approve")
    assert result.is_error is not True, result
    assert result.content[0].text == f"approve {version}"
    if version != MODERN:  # a legacy stream is told why the call waits
        assert len(logged) == 1
        assert re.fullmatch(r"Call #\d+ of tool 'echo' awaits approval \(up to 60 seconds\)\.", logged[0])


@pytest.mark.parametrize("version", [MODERN, "2025-11-25"])
def test_a_rejected_call_gives_the_sdk_client_the_reason(server: LiveServer, version: str) -> None:
    result, _, _ = anyio.run(_flow, server, version, "reject", "Not during the freeze")
    assert result.is_error is True
    assert result.content[0].text == "The call of tool 'echo' was rejected by approver: Not during the freeze"
