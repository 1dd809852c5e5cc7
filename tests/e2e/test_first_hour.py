"""Issue 34, the first hour: what a newcomer meets with the official Python SDK, on real servers.

- A token that lacks a scope the user may be granted: the SDK shows which scope (it showed a bare
  -32603 "Server returned an error response" for the 403 step-up).
- gunicorn as the deploy how-to shows it (its default: one synchronous worker) serves the SDK's
  session (its GET stream held the only worker: every later request timed out).
- What the SDK can do with tools that run as tasks is what the tasks how-to says.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import (
    ROOT,
    LiveServer,
    free_port,
    prepare_database,
    run_server,
    server_env,
    stop_process,
    wait_ready,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo under uvicorn with OAuth on; its superuser ``admin`` mints the tokens."""
    port = free_port()
    env = {"MCP_AUTH": "oauth", "MCP_RESOURCE_URL": f"http://127.0.0.1:{port}/mcp"}
    with run_server(tmp_path_factory.mktemp("first-hour"), extra_env=env, port=port) as server:
        server.manage("demo_superuser")
        yield server


def _token(server: LiveServer, scopes: str) -> str:
    return server.manage("mcp_token", "--user", "admin", "--scopes", scopes).split()[-1]


@contextlib.asynccontextmanager
async def _client(server: LiveServer, token: str, mode: str) -> AsyncIterator[Any]:
    """The official SDK's high-level client, with a bearer token, legacy or 2026-07-28."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(server.url, http_client=http), mode=mode) as client,
    ):
        yield client


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_python_sdk_says_which_scope_a_call_lacks(oauth_server: LiveServer, mode: str) -> None:
    """A-5: 403 insufficient_scope with the challenge, and a JSON-RPC error the SDK surfaces."""
    from mcp.shared.exceptions import MCPError

    async with _client(oauth_server, _token(oauth_server, "notes:read"), mode) as client:
        echo = await client.call_tool("echo", {"text": "allowed"})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("build_report", {"steps": 1})
    assert echo.content[0].text == "allowed"
    error = refused.value.error
    assert error.code == -32600, error
    assert "requires the scope notes:write; this token lacks notes:write" in error.message
    assert "Authorize again asking for the scopes: notes:read notes:write" in error.message


# --------------------------------------------------------------------------- gunicorn, as deploy.md shows it

DEPLOY = ROOT / "docs" / "howto" / "deploy.md"


def _documented(start: str) -> str:
    """The code block of deploy.md whose first line starts with ``start``."""
    blocks = re.findall(r"^```\w*\n(.*?)^```", DEPLOY.read_text(), re.M | re.S)
    found = [block for block in blocks if block.startswith(start)]
    assert found, f"deploy.md has no code block starting with {start!r}"
    return found[0]


@pytest.fixture
def gunicorn_as_documented(tmp_path: Path) -> Iterator[LiveServer]:
    """A site ``mysite`` whose wsgi.py is deploy.md's, served by deploy.md's gunicorn line:
    gunicorn's default worker, one synchronous process."""
    site = tmp_path / "site" / "mysite"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("")
    (site / "settings.py").write_text("from project.settings import *  # noqa: F403\n")
    (site / "wsgi.py").write_text(_documented("# mysite/wsgi.py"))
    command = shlex.split(_documented("gunicorn mysite.wsgi").splitlines()[0])
    port = free_port()
    command = [sys.executable, "-m", *[f"127.0.0.1:{port}" if arg.startswith("127.0.0.1:") else arg for arg in command]]
    assert not {"--workers", "-w", "--threads"} & set(command)  # gunicorn's defaults: one sync worker
    env = server_env(tmp_path, {"PYTHONPATH": os.pathsep.join([str(site.parent), str(ROOT)])})
    env.pop("DJANGO_SETTINGS_MODULE")  # wsgi.py names it, as startproject's does
    prepare_database({**env, "DJANGO_SETTINGS_MODULE": "mysite.settings"})
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    server = LiveServer(f"http://127.0.0.1:{port}", env, process, log_path)
    try:
        wait_ready(server)
        yield server
    finally:
        stop_process(process)


async def test_the_python_sdk_lists_and_calls_on_gunicorns_default_worker(gunicorn_as_documented: LiveServer) -> None:
    """H-11: one sync worker and the SDK's session (which opens a GET stream after initialize):
    the GET is answered 405 at once, so the worker goes on serving the session's POSTs (the GET
    stream held the only worker: the SDK's next request timed out). Legacy and 2026-07-28."""
    import anyio
    import mcp.types as types
    from mcp import Client, ClientSession
    from mcp.client.streamable_http import streamable_http_client

    url = gunicorn_as_documented.url
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(60):
        async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await anyio.sleep(1.5)  # the SDK's GET stream has gone out
            names = [tool.name for tool in (await session.list_tools()).tools]
            echo = await session.call_tool("echo", {"text": "from gunicorn"})
            slow = await session.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        async with Client(url, mode="2026-07-28") as client:
            modern = await client.call_tool("echo", {"text": "modern"})
    assert "echo" in names
    assert isinstance(echo.content[0], types.TextContent)
    assert echo.content[0].text == "from gunicorn"
    assert slow.content[0].text == "Completed 3 progress steps."  # type: ignore[union-attr]
    assert len(progress) == 3
    assert modern.content[0].text == "modern"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- tasks and the Python SDK


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_what_the_python_sdk_can_do_with_task_tools_is_what_the_docs_say(
    oauth_server: LiveServer, mode: str
) -> None:
    """docs/howto/celery-tasks.md, "Which clients can make task-augmented calls": the SDK (2.3)
    calls an `optional` tool inline, and cannot call a `required` one (it cannot ask for a task),
    whose refusal says why. No worker runs: nothing here is a task."""
    from mcp.shared.exceptions import MCPError

    async with _client(oauth_server, _token(oauth_server, "all"), mode) as client:
        inline = await client.call_tool("build_report", {"steps": 1})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("export_archive", {"steps": 1})
    assert not inline.is_error
    assert "1" in inline.content[0].text
    if mode == "legacy":
        assert refused.value.error.code == -32601
        assert refused.value.error.message == "Tool 'export_archive' must be called as a task (params.task)"
    else:
        assert refused.value.error.code == -32021
