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

from tests.servers import ROOT, free_port, prepare_database, server_env

pytestmark = [pytest.mark.e2e, pytest.mark.timing]

LEGACY = "2025-06-18"


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


@contextlib.contextmanager
def _runserver(tmp: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port = free_port()
    # One stream at a time per caller: a second GET is accepted once the first was released.
    env = server_env(
        tmp, {"MCP_SSE_KEEPALIVE_SECONDS": "0.2", "DJANGO_DEBUG": "1", "MCP_MAX_STREAMS_PER_PRINCIPAL": "1"}
    )
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
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/admin/login/", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise AssertionError(log_path.read_text(errors="replace")[-3000:]) from None
                time.sleep(0.2)
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


def test_a_get_stream_answers_at_once_and_a_dropped_one_does_not_hold_up_a_reload(tmp_path: Path) -> None:
    with _runserver(tmp_path) as (base, process, log_path):
        headers = _session(base)
        started = time.monotonic()
        with (
            httpx.Client(timeout=5) as client,
            client.stream("GET", f"{base}/mcp", headers={**headers, "Accept": "text/event-stream"}) as stream,
        ):
            assert stream.status_code == 200
            assert stream.headers["content-type"] == "text/event-stream"
            first = next(stream.iter_raw())
            assert first.startswith(b":")  # a comment at once, then keep-alives
            assert time.monotonic() - started < 3
        # The client is gone: the server notices on its next keep-alive and ends the stream,
        # which frees the caller's one stream slot: a new GET is accepted, and kept open.
        client = httpx.Client(timeout=5)
        deadline = time.monotonic() + 10
        while True:
            held = client.stream("GET", f"{base}/mcp", headers={**headers, "Accept": "text/event-stream"})
            response = held.__enter__()
            if response.status_code == 200:
                break
            assert response.status_code == 429, response.status_code
            held.__exit__(None, None, None)
            assert time.monotonic() < deadline, "the dropped stream still holds its slot"
            time.sleep(0.1)
        # Then a file the reloader watches changes, with that stream open.
        try:
            (old,) = _children(process.pid)
            touched = time.monotonic()
            os.utime(ROOT / "project" / "urls.py")
            while old in _children(process.pid) or not _children(process.pid):
                assert time.monotonic() - touched < 30, "the old server process did not exit"
                time.sleep(0.05)
            took = time.monotonic() - touched
        finally:
            with contextlib.suppress(Exception):
                held.__exit__(None, None, None)
            client.close()
        print(f"runserver: reloaded {took:.2f} s after the change, a GET stream open")
        assert took <= 2.0
    text = log_path.read_text(errors="replace")
    assert "must consume asynchronous iterators" not in text
