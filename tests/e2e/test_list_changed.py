"""list_changed fan-out across processes: real servers, real clients, edits through the admin site.

Two uvicorn processes share one database. Clients listen on process A; an admin edits tools
through the admin site served by process B. Fan-out runs over PostgreSQL LISTEN/NOTIFY
(PostgreSQL database), over Redis pub/sub (a shared SQLite file), and with the polling notifier
(the default on SQLite; a shared SQLite file). Callers are named by
``tests.support.auth.ScopeHeaderBackend``: a tool is visible to a caller whose scopes name it.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import re
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import external_services
from tests.support.mcp_client import MODERN, check_message, modern_meta
from tests.support.nodejs import JS_DIR, node
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e]

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
ALICE = "alice echo add"  # sees echo and add
CAROL = "carol get_weather"  # sees get_weather only
QUIET_SECONDS = 2.0  # how long "receives nothing" is watched
BULK = 150  # tools saved in one transaction (500 cost 10 s of setup per notifier, and says no more)
STREAMING_SESSIONS = "SELECT id FROM mcp_tools_mcpsession WHERE get_stream <> ''"  # legacy GET stream open


@pytest.fixture(scope="module", params=["postgres", "redis", "polling"])
def notifier_fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Any]]:
    env = {
        "MCP_AUTH_BACKEND": "tests.support.auth.ScopeHeaderBackend",
        "MCP_SSE_KEEPALIVE_SECONDS": "1",
        "MCP_SSE_MAX_SECONDS": "60",
    }
    tmp = tmp_path_factory.mktemp(f"fleet-{request.param}")
    with contextlib.ExitStack() as stack:
        if request.param == "postgres":
            external_services.require("postgres")
            database = stack.enter_context(external_services.temporary_postgres_database("mcp_e2e"))
            env.update({"MCP_DATABASE": "postgres", "POSTGRES_DB": database, "MCP_NOTIFIER": "postgres"})
        elif request.param == "redis":
            external_services.require("redis")
            env.update({"MCP_NOTIFIER": "redis", "MCP_NOTIFIER_REDIS_URL": "redis://127.0.0.1:6379/7"})
        else:  # the default on SQLite: both processes poll the catalog version of the shared file
            env["MCP_NOTIFIER"] = "polling"
        a = stack.enter_context(run_server(tmp, extra_env=env))
        b = stack.enter_context(run_server(tmp, extra_env=env, prepare=False))
        a.manage("demo_superuser")
        yield a, b


# --------------------------------------------------------------------------- helpers


class Admin:
    """A staff user driving the real admin site with a browser's cookies and CSRF token."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self._post("/admin/login/?next=/admin/", {"username": "admin", "password": "admin", "next": "/admin/"})

    def _csrf(self, path: str) -> str:
        with self.opener.open(self.server.base_url + path, timeout=10) as response:
            html = response.read().decode()
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        assert found, f"no CSRF token on {path}"
        return found.group(1)

    def _post(self, path: str, data: dict[str, Any]) -> str:
        token = self._csrf(path)
        body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}, doseq=True).encode()
        with self.opener.open(self.server.base_url + path, body, timeout=30) as response:
            assert response.status == 200
            return str(response.read().decode())

    def tool_pk(self, name: str) -> int:
        return int(self.server.query("SELECT id FROM mcp_tools_tool WHERE name = %s", (name,))[0][0])

    def set_enabled(self, name: str, enabled: bool) -> None:
        """The changelist action, as a person would use it (disabling: on the confirmation page)."""
        data: dict[str, Any] = {"action": "enable_tools" if enabled else "disable_tools"}
        data["_selected_action"] = [self.tool_pk(name)]
        if not enabled:
            html = self._post("/admin/mcp_tools/tool/", {**data, "index": "0"})
            assert "Disable tools?" in html
            data["confirm"] = "yes"  # the confirmation page posts this, without "index"
        else:
            data["index"] = "0"
        html = self._post("/admin/mcp_tools/tool/", data)
        assert "errornote" not in html


class Listener:
    """A raw notification stream read in a thread, keeping every message with its arrival time."""

    def __init__(
        self,
        server: LiveServer,
        user: str,
        *,
        session: str | None = None,
        version: str = MODERN,
        last_event_id: str | None = None,
    ) -> None:
        self.messages: list[tuple[float, dict[str, Any]]] = []
        self.last_event_id: str | None = None  # the id of the newest event read
        self.version = version
        self.status = 0
        self.ready = threading.Event()
        self.done = threading.Event()
        self._stop = threading.Event()
        headers = {**ACCEPT, "X-Test-User": user}
        if session is None:
            body: dict[str, Any] | None = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
            }
            headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"})
            method = "POST"
        else:
            body = None
            headers = {"Accept": "text/event-stream", "X-Test-User": user, "Mcp-Session-Id": session}
            headers["MCP-Protocol-Version"] = version
            if last_event_id is not None:
                headers["Last-Event-ID"] = last_event_id
            method = "GET"
        self._thread = threading.Thread(target=self._run, args=(server.url, method, headers, body), daemon=True)
        self._thread.start()
        assert self.ready.wait(10), "the stream did not open"

    def _run(self, url: str, method: str, headers: dict[str, str], body: Any) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(10, read=70)) as client,
                client.stream(method, url, headers=headers, json=body) as response,
            ):
                self.status = response.status_code
                buffer = ""
                for chunk in response.iter_text():
                    if not self.ready.is_set():
                        self.ready.set()
                    buffer += chunk
                    while "\n\n" in buffer:
                        block, buffer = buffer.split("\n\n", 1)
                        ids = [line[3:].strip() for line in block.split("\n") if line.startswith("id:")]
                        if ids:
                            self.last_event_id = ids[-1]
                        data = [line[5:].strip() for line in block.split("\n") if line.startswith("data:")]
                        if data and "".join(data):
                            message = json.loads("".join(data))
                            check_message(self.version, message)
                            self.messages.append((time.monotonic(), message))
                    if self._stop.is_set():
                        return
        except httpx.HTTPError:
            pass
        finally:
            self.ready.set()
            self.done.set()

    def changes(self) -> list[dict[str, Any]]:
        return [m for _, m in self.messages if m.get("method") == "notifications/tools/list_changed"]

    def wait_change(self, count: int = 1, timeout: float = 10) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.changes()) >= count:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self._stop.set()


def _legacy_session(server: LiveServer, user: str, version: str = "2025-11-25") -> str:
    headers = {**ACCEPT, "X-Test-User": user}
    response = httpx.post(
        server.url,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}},
        },
        headers=headers,
    )
    assert response.json()["result"]["capabilities"]["tools"] == {"listChanged": True}  # T-1 under ASGI
    session = response.headers["mcp-session-id"]
    headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": version})
    httpx.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    return session


def _modern_names(server: LiveServer, user: str) -> list[str]:
    headers = {**ACCEPT, "X-Test-User": user, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": modern_meta()}}
    return [t["name"] for t in httpx.post(server.url, json=body, headers=headers).json()["result"]["tools"]]


@pytest.fixture
def admin(notifier_fleet: tuple[LiveServer, LiveServer]) -> Iterator[Admin]:
    admin = Admin(notifier_fleet[1])
    yield admin
    admin.set_enabled("echo", True)  # leave the catalog as the next test expects it


# --------------------------------------------------------------------------- SDK clients


@pytest.mark.anyio
async def test_python_sdk_legacy_get_stream_hears_admin_edit(
    notifier_fleet: tuple[LiveServer, LiveServer], admin: Admin
) -> None:
    """H-11, T-1: the SDK's GET stream on A gets list_changed after an admin edit on B; Carol hears nothing."""
    import anyio
    import mcp.types as types
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    a, _ = notifier_fleet
    heard: dict[str, list[float]] = {"alice": [], "carol": []}

    def handler_for(who: str) -> Any:
        async def handle(message: Any) -> None:
            inner = getattr(message, "root", message)
            if isinstance(inner, types.ToolListChangedNotification):
                heard[who].append(time.monotonic())

        return handle

    streaming_before = set(a.query(STREAMING_SESSIONS))
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for who, user in (("alice", ALICE), ("carol", CAROL)):
            http = await stack.enter_async_context(create_mcp_http_client(headers={"X-Test-User": user}))
            read, write = await stack.enter_async_context(streamable_http_client(a.url, http_client=http))
            session = await stack.enter_async_context(ClientSession(read, write, message_handler=handler_for(who)))
            init = await session.initialize()
            assert init.capabilities.tools is not None
            assert init.capabilities.tools.list_changed is True
            sessions[who] = session
        before = sorted(t.name for t in (await sessions["alice"].list_tools()).tools)
        assert before == ["add", "echo"]
        # The SDK opens its GET stream after notifications/initialized: wait until the server
        # holds both sessions' streams (a stream opened after the edit would hear of it too,
        # from the session's tools fingerprint, but this test is about the live stream).
        with anyio.fail_after(10):
            while len(set(a.query(STREAMING_SESSIONS)) - streaming_before) < 2:
                await anyio.sleep(0.05)
        edited = time.monotonic()
        await anyio.to_thread.run_sync(admin.set_enabled, "echo", False)
        with anyio.fail_after(10):
            while not heard["alice"]:
                await anyio.sleep(0.05)
        after = sorted(t.name for t in (await sessions["alice"].list_tools()).tools)
        assert after == ["add"]
        await anyio.sleep(QUIET_SECONDS)
        assert len(heard["alice"]) == 1
        assert heard["carol"] == []
        assert heard["alice"][0] - edited < 5


@pytest.mark.anyio
async def test_python_sdk_modern_listen_hears_admin_edit(
    notifier_fleet: tuple[LiveServer, LiveServer], admin: Admin
) -> None:
    """H-D10: the SDK's Client.listen on A gets list_changed after an admin edit on B, then refetches."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.subscriptions import ToolsListChanged

    a, _ = notifier_fleet
    async with (
        create_mcp_http_client(headers={"X-Test-User": ALICE}) as http,
        Client(streamable_http_client(a.url, http_client=http), mode="2026-07-28") as client,  # type: ignore[arg-type]
    ):
        assert sorted(t.name for t in (await client.list_tools()).tools) == ["add", "echo"]
        async with client.listen(tools_list_changed=True) as subscription:
            await anyio.to_thread.run_sync(admin.set_enabled, "echo", False)
            with anyio.fail_after(10):
                event = await subscription.__anext__()
            assert isinstance(event, ToolsListChanged)
        assert sorted(t.name for t in (await client.list_tools()).tools) == ["add"]


@pytest.mark.node
def test_ts_sdk_listen_hears_admin_edit(notifier_fleet: tuple[LiveServer, LiveServer], admin: Admin) -> None:
    """H-D10 with @modelcontextprotocol/client: listen on A, admin edit on B, refreshed list without echo."""
    import subprocess

    a, _ = notifier_fleet
    binary = node()
    carol = Listener(a, CAROL)
    with subprocess.Popen(
        [str(binary), "listen_modern.mjs", a.url, ALICE, "15000"],
        cwd=JS_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            ready = json.loads(process.stdout.readline() or "{}")
            assert ready.get("ready") is True, ready
            assert sorted(ready["before"]) == ["add", "echo"]
            assert ready["honored"] == {"toolsListChanged": True}
            admin.set_enabled("echo", False)
            outcome = json.loads(process.stdout.readline() or "{}")
            process.wait(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
            carol.close()
    assert outcome.get("ok") is True, outcome
    assert outcome["outcome"] == "changed"
    assert outcome["changes"][0] == {"tools": ["add"]}
    time.sleep(QUIET_SECONDS / 2)
    assert carol.changes() == []


# --------------------------------------------------------------------------- delivery rules


def test_rolled_back_edit_sends_nothing(notifier_fleet: tuple[LiveServer, LiveServer]) -> None:
    a, b = notifier_fleet
    alice = Listener(a, ALICE)
    try:
        b.manage(
            "shell",
            "-c",
            "from django.db import transaction\n"
            "from mcp_tools.models import Tool\n"
            "with transaction.atomic():\n"
            "    t = Tool.objects.get(name='echo'); t.enabled = False; t.save()\n"
            "    transaction.set_rollback(True)\n",
        )
        time.sleep(QUIET_SECONDS)
        assert alice.changes() == []
        assert "echo" in _modern_names(a, ALICE)
    finally:
        alice.close()


def test_bulk_change_of_many_tools_is_one_notification(notifier_fleet: tuple[LiveServer, LiveServer]) -> None:
    """BULK tools created, then each saved in one transaction: each listener hears once, per change."""
    a, b = notifier_fleet
    create = (
        "from django.db import transaction\n"
        "from mcp_tools.models import Tool\n"
        "with transaction.atomic():\n"
        f"    for i in range({BULK}):\n"
        "        Tool.objects.update_or_create(name=f'bulk_{i:03d}', defaults=dict(handler_key='demo.echo',"
        " input_schema={'type': 'object'}, enabled=False))\n"
    )
    b.manage("shell", "-c", create)
    all_seeing = Listener(a, "root all")
    alice = Listener(a, ALICE)
    try:
        b.manage(
            "shell",
            "-c",
            "from django.db import transaction\n"
            "from mcp_tools.models import Tool\n"
            "with transaction.atomic():\n"
            "    for t in Tool.objects.filter(name__startswith='bulk_'):\n"
            "        t.enabled = True; t.save()\n",
        )
        assert all_seeing.wait_change(1)
        time.sleep(QUIET_SECONDS)
        assert len(all_seeing.changes()) == 1
        assert alice.changes() == []  # none of the 500 is visible to Alice
    finally:
        all_seeing.close()
        alice.close()
        b.manage(
            "shell", "-c", "from mcp_tools.models import Tool; Tool.objects.filter(name__startswith='bulk').delete()"
        )


def test_reconnecting_get_stream_learns_of_a_missed_change(
    notifier_fleet: tuple[LiveServer, LiveServer], admin: Admin
) -> None:
    """A session whose GET stream was closed during an edit hears of it when it reconnects."""
    a, _ = notifier_fleet
    session = _legacy_session(a, ALICE)
    first = Listener(a, ALICE, session=session, version="2025-11-25")
    time.sleep(0.5)
    first.close()
    assert first.done.wait(5)
    admin.set_enabled("echo", False)
    time.sleep(1.0)
    again = Listener(a, ALICE, session=session, version="2025-11-25")
    try:
        assert again.wait_change(1, timeout=5)
    finally:
        again.close()


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
def test_resumed_get_stream_is_told_exactly_what_it_missed(
    notifier_fleet: tuple[LiveServer, LiveServer], admin: Admin, version: str
) -> None:
    """H-11 resumability: each GET stream event's id names the tool list it announces, so a
    client resuming with Last-Event-ID (as the SDK clients do) on any worker gets list_changed
    exactly when the list changed after that event; one resuming without an id cannot say what
    it heard, and is told again (a notification written to a connection is not proof it arrived:
    see the scale test's partition step)."""
    a, b = notifier_fleet
    session = _legacy_session(a, ALICE, version)
    first = Listener(a, ALICE, session=session, version=version)
    try:
        time.sleep(0.5)
        admin.set_enabled("echo", False)
        assert first.wait_change(1)
        heard = first.last_event_id
        assert heard, "the list_changed event carried no id"
    finally:
        first.close()
    assert first.done.wait(5)
    no_id = Listener(b, ALICE, session=session, version=version, last_event_id="garbage-get-x-zz")
    try:
        assert no_id.wait_change(1, timeout=5)  # an id it cannot read: told again
    finally:
        no_id.close()
    resumed = Listener(a, ALICE, session=session, version=version, last_event_id=heard)
    time.sleep(QUIET_SECONDS)
    resumed.close()
    assert resumed.changes() == []  # it heard the newest list: nothing to repeat
    admin.set_enabled("echo", True)
    time.sleep(1.0)
    behind = Listener(b, ALICE, session=session, version=version, last_event_id=heard)
    try:
        assert behind.wait_change(1, timeout=5)  # changed since that event: told at once
    finally:
        behind.close()


def test_stream_stats_count_listeners(notifier_fleet: tuple[LiveServer, LiveServer], tmp_path: Path) -> None:
    """Observability: `manage.py mcp_streams` shows each process's open listeners."""
    a, _ = notifier_fleet
    listeners = [Listener(a, f"user{i} echo") for i in range(3)]
    try:
        deadline = time.monotonic() + 10
        total = -1
        while time.monotonic() < deadline:
            out = a.manage("mcp_streams")
            total = int(re.search(r"total: listeners=(\d+)", out).group(1))  # type: ignore[union-attr]
            if total >= 3:
                break
            time.sleep(1)
        assert total >= 3, out
    finally:
        for listener in listeners:
            listener.close()


def test_only_the_newest_get_stream_of_a_session_is_notified(
    notifier_fleet: tuple[LiveServer, LiveServer], admin: Admin
) -> None:
    """H-9, H-11: a session's notification goes on one GET stream, never on two."""
    a, b = notifier_fleet
    session = _legacy_session(a, ALICE)
    older = Listener(a, ALICE, session=session, version="2025-11-25")
    time.sleep(0.3)
    newer = Listener(b, ALICE, session=session, version="2025-11-25")  # any worker serves the session
    try:
        time.sleep(0.5)
        admin.set_enabled("echo", False)
        assert newer.wait_change(1)
        time.sleep(QUIET_SECONDS / 2)
        assert older.changes() == []
        assert older.done.wait(5)  # the superseded stream ends instead of lingering
    finally:
        older.close()
        newer.close()


def test_open_streams_are_bounded_per_principal(tmp_path: Path) -> None:
    """Over MAX_STREAMS_PER_PRINCIPAL a listen request gets 429 with Retry-After; others are unaffected."""
    env = {"MCP_AUTH_BACKEND": "tests.support.auth.ScopeHeaderBackend", "MCP_MAX_STREAMS_PER_PRINCIPAL": "2"}
    with run_server(tmp_path, extra_env=env) as server:
        streams = [Listener(server, ALICE), Listener(server, ALICE)]
        try:
            headers = {**ACCEPT, "X-Test-User": ALICE, "MCP-Protocol-Version": MODERN}
            headers["Mcp-Method"] = "subscriptions/listen"
            body = {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
            }
            refused = httpx.post(server.url, json=body, headers=headers, timeout=10)
            assert refused.status_code == 429
            assert refused.headers["retry-after"]
            check_message(MODERN, refused.json())
            assert "Too many open streams and waits" in refused.json()["error"]["message"]
            assert refused.json()["id"] == 9
            carol = Listener(server, CAROL)  # the bound is per principal
            assert carol.status == 200
            carol.close()
        finally:
            for stream in streams:
                stream.close()


def test_server_shutdown_ends_listen_streams_gracefully(tmp_path: Path) -> None:
    """H-D10: on SIGTERM a listen stream gets the graceful listen result at once, not at SSE_MAX_SECONDS."""
    env = {"MCP_AUTH_BACKEND": "tests.support.auth.ScopeHeaderBackend", "MCP_SSE_MAX_SECONDS": "120"}
    with run_server(tmp_path, extra_env=env) as server:
        alice = Listener(server, ALICE)
        time.sleep(0.5)
        started = time.monotonic()
        server.process.terminate()
        assert alice.done.wait(10)
        elapsed = time.monotonic() - started
    final = alice.messages[-1][1]
    assert final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
    assert elapsed < 5


def test_a_new_view_is_heard_of_and_read(notifier_fleet: tuple[LiveServer, LiveServer]) -> None:
    """UI-1, UI-4 (MCP Apps): a view given to a tool on B is a catalog change: a listener on A
    declaring the extension hears list_changed, and then reads the new ui:// resource there."""
    a, b = notifier_fleet
    apps = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/ui": {
        "mimeTypes": ["text/html;profile=mcp-app"]}}}}  # fmt: skip
    headers = {**ACCEPT, "X-Test-User": ALICE, "MCP-Protocol-Version": MODERN}

    def post(method: str, params: dict[str, Any], **extra: str) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 3, "method": method, "params": {**params, "_meta": modern_meta(**apps)}}
        message = httpx.post(a.url, json=body, headers={**headers, "Mcp-Method": method, **extra}).json()
        check_message(MODERN, message, method)
        return dict(message)

    listener = Listener(a, ALICE)
    try:
        b.manage("shell", "-c", (
            "from mcp_tools.models import Tool; t = Tool.objects.get(name='echo'); "
            "t.ui_template = '<p>echo view 1</p>'; t.full_clean(); t.save()"
        ))  # fmt: skip
        assert listener.wait_change(), "no list_changed for the new view"
        tools = {t["name"]: t for t in post("tools/list", {})["result"]["tools"]}
        assert tools["echo"]["_meta"] == {"ui": {"resourceUri": "ui://tools/echo"}}
        read = post("resources/read", {"uri": "ui://tools/echo"}, **{"Mcp-Name": "ui://tools/echo"})
        assert "<p>echo view 1</p>" in read["result"]["contents"][0]["text"]
    finally:
        listener.close()
        b.manage("shell", "-c", (
            "from mcp_tools.models import Tool; t = Tool.objects.get(name='echo'); t.ui_template = ''; t.save()"
        ))  # fmt: skip
