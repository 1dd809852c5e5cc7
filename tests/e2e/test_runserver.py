"""Issue 26: the endpoint under Django's development server (``manage.py runserver``).

Django runs an async view under WSGI on a loop of its own and used to read a streamed answer
whole before sending anything ("StreamingHttpResponse must consume asynchronous iterators"): a
GET stream sent no headers for ``SSE_MAX_SECONDS``, and after its client left, the threads it
held kept the autoreloader from restarting the server for as long (300 s).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.servers import ROOT, free_port, prepare_database, server_env

pytestmark = [pytest.mark.e2e, pytest.mark.timing]

LEGACY = "2025-06-18"


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


@contextlib.contextmanager
def _runserver(tmp: Path, extra: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = free_port()
    # One stream at a time per caller: a second GET is accepted once the first was released.
    settings = {"MCP_SSE_KEEPALIVE_SECONDS": "0.2", "DJANGO_DEBUG": "1", "MCP_MAX_STREAMS_PER_PRINCIPAL": "1"}
    env = server_env(tmp, {**settings, **(extra or {})})
    prepare_database(env)
    log_path = tmp / "runserver.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        _serving(base, process, log_path)
        yield base, process, log_path
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)


def _session(base: str) -> dict[str, str]:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    response = httpx.post(
        f"{base}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
    )
    assert response.status_code == 200, response.text
    headers = {**headers, "Mcp-Session-Id": response.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    httpx.post(f"{base}/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def test_a_get_is_refused_at_once_and_a_stream_left_by_its_client_does_not_hold_up_a_reload(tmp_path: Path) -> None:
    """Under WSGI no notification reaches a GET stream, and one held a worker: 405 at once
    (issue 34; H-11 allows it), so no stream is left open for SSE_MAX_SECONDS (issue 26). A call
    streaming progress still answers at once; once its client left mid-call, a change reloads
    runserver when the call's own work is done (a legacy disconnect is not a cancellation)."""
    with _runserver(tmp_path) as (base, process, log_path):
        headers = _session(base)
        started = time.monotonic()
        refused = httpx.get(f"{base}/mcp", headers={**headers, "Accept": "text/event-stream"}, timeout=5)
        assert refused.status_code == 405
        assert refused.headers["allow"] == "POST, DELETE, OPTIONS"
        assert time.monotonic() - started < 3
        # build_report: 10 steps of 0.3 s, each a progress notification on the call's stream.
        params = {"name": "build_report", "arguments": {"steps": 10}, "_meta": {"progressToken": "p"}}
        call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}
        started = time.monotonic()
        with (
            httpx.Client(timeout=5) as client,
            client.stream("POST", f"{base}/mcp", headers=headers, json=call) as stream,
        ):
            assert stream.status_code == 200
            assert stream.headers["content-type"] == "text/event-stream"
            # The WSGI driver sends an SSE comment first (the status and headers go with it); the
            # first progress notification follows in the same chunk or in a later one.
            seen = b""
            for chunk in stream.iter_raw():
                seen += chunk
                if b"notifications/progress" in seen or time.monotonic() - started >= 3:
                    break
            assert b"notifications/progress" in seen
            assert time.monotonic() - started < 3
        # The client left with under 3 s of the call to go; then a file the reloader watches changes.
        left = 3.0 - (time.monotonic() - started)
        (old,) = _children(process.pid)
        touched = time.monotonic()
        os.utime(ROOT / "project" / "urls.py")
        took = _new_server_process(process, old, touched, within=30)
        print(f"runserver: reloaded {took:.2f} s after the change, a call left by its client {left:.2f} s from its end")
        assert took <= max(left, 0) + 2.0
    text = log_path.read_text(errors="replace")
    assert "must consume asynchronous iterators" not in text


# --------------------------------------------------------------------------- issue 34, item 3

BILLING_HANDLERS = """
from mcp_tools import handler
from mcp_tools.contrib.drf import ModelToolset, register
from project.library.models import Author


@handler("billing.total", label="Total")
def total(ctx):
    return {"total": 42}


@register
class InvoiceTools(ModelToolset):
    model = Author
    name = "invoice"
    fields = ["id", "name"]
    operations = ["list"]

    def get_required_permissions(self, operation):
        return []
"""


def _new_server_process(process: subprocess.Popen[bytes], old: int, since: float, within: float) -> float:
    """Seconds from ``since`` until runserver serves from a process other than ``old``."""
    while old in _children(process.pid) or not _children(process.pid):
        assert time.monotonic() - since < within, "runserver did not restart"
        time.sleep(0.05)
    return time.monotonic() - since


def _serving(base: str, process: subprocess.Popen[bytes], log_path: Path, within: float = 60) -> None:
    """Wait until the restarted runserver answers: its new process exists before it listens."""
    deadline = time.monotonic() + within
    while True:
        try:
            httpx.get(f"{base}/admin/login/", timeout=1)
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError(log_path.read_text(errors="replace")[-3000:]) from None
            time.sleep(0.2)


def test_a_handlers_module_added_while_runserver_runs_is_served_after_a_restart(tmp_path: Path) -> None:
    """A newcomer adds ``billing/mcp_handlers.py`` while runserver runs and syncs the toolset:
    runserver restarts by itself (it watched only modules imported at start), so its tools are
    listed and calls work; another file in the folder (an editor's swap file) restarts nothing."""
    app = tmp_path / "site" / "billing"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (tmp_path / "site" / "billing_settings.py").write_text(
        "from project.settings import *  # noqa: F403\n\nINSTALLED_APPS = [*INSTALLED_APPS, 'billing']  # noqa: F405\n"
    )
    extra = {
        "DJANGO_SETTINGS_MODULE": "billing_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)]),
    }
    with _runserver(tmp_path, extra) as (base, process, log_path):
        (old,) = _children(process.pid)
        (app / ".mcp_handlers.py.swp").write_text("an editor's swap file")
        time.sleep(2.5)  # the reloader looks once a second
        assert _children(process.pid) == [old], "a file other than the handlers module restarted runserver"

        written = time.monotonic()
        (app / "mcp_handlers.py").write_text(BILLING_HANDLERS)
        took = _new_server_process(process, old, written, within=30)
        print(f"runserver: restarted {took:.2f} s after billing/mcp_handlers.py was written")
        assert took <= 5.0, took
        env = server_env(tmp_path, extra)
        subprocess.run([sys.executable, "manage.py", "mcp_sync_toolsets"], cwd=ROOT, env=env, check=True)

        _serving(base, process, log_path)
        headers = _session(base)
        listed = httpx.post(f"{base}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        names = [tool["name"] for tool in listed.json()["result"]["tools"]]
        assert "list_invoice" in names, names
        call = {"name": "list_invoice", "arguments": {"limit": 1}}
        answer = httpx.post(
            f"{base}/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}
        ).json()["result"]
        assert answer.get("isError") is not True, answer
        assert "items" in answer["structuredContent"]
    assert "No model toolset is registered" not in log_path.read_text(errors="replace")
