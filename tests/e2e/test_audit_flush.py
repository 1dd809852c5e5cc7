"""Audit rows in batches: written after the flush interval, and none lost on a clean shutdown.

Real servers on a shared SQLite file: uvicorn (one process, or 2 worker processes; the ASGI
front), gunicorn (2 sync workers, the WSGI entry point) and `make run` (project.run: uvicorn
and a Celery worker), each stopped by SIGINT (Ctrl-C) and by SIGTERM. Rows are counted from
another process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.test_worker_loss import _children
from tests.support.mcp_client import MODERN, modern_meta
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

pytestmark = pytest.mark.e2e

BATCHED = {"MCP_AUDIT_FLUSH_ROWS": "1000", "MCP_AUDIT_FLUSH_SECONDS": "600", "MCP_RATE_LIMIT": "100000/m"}


def _call(server: LiveServer, request_id: str) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "audited"}, "_meta": modern_meta()},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "echo",
    }
    request = urllib.request.Request(server.url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        reply = json.loads(response.read())
    assert reply["result"]["content"][0]["text"] == "audited", reply


def _audited(server: LiveServer, prefix: str) -> int:
    rows = server.query("SELECT count(*) FROM mcp_tools_auditevent WHERE request_id LIKE %s", (prefix + "%",))
    return int(rows[0][0])


def _terminate(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def test_batched_rows_are_written_after_the_flush_interval(tmp_path: Path) -> None:
    interval = 4.0
    extra = {**BATCHED, "MCP_AUDIT_FLUSH_SECONDS": str(interval)}
    with run_server(tmp_path, extra_env=extra) as server:
        started = time.monotonic()
        for i in range(5):
            _call(server, f"interval-{i}")
        waiting = _audited(server, "interval-")
        checked = time.monotonic() - started
        assert checked < interval, f"the calls and the count took {checked:.1f} s, longer than the interval"
        assert waiting == 0, "rows wait in the buffer for the interval"
        deadline = time.monotonic() + 15
        while _audited(server, "interval-") < 5 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _audited(server, "interval-") == 5
        assert server.process.poll() is None


def test_immediate_mode_writes_each_row_in_its_call(tmp_path: Path) -> None:
    for extra in ({"MCP_AUDIT_FLUSH_ROWS": "1"}, {"MCP_AUDIT_FLUSH_ROWS": "1000", "MCP_AUDIT_FLUSH_SECONDS": "0"}):
        with run_server(tmp_path, extra_env={**extra, "MCP_RATE_LIMIT": "100000/m"}) as server:
            tag = "now-" + extra["MCP_AUDIT_FLUSH_ROWS"]
            _call(server, f"{tag}-0")
            assert _audited(server, tag) == 1


def test_no_row_is_lost_when_uvicorn_is_terminated(tmp_path: Path) -> None:
    with run_server(tmp_path, extra_env=BATCHED, workers=2) as server:
        for i in range(12):  # spread over both worker processes
            _call(server, f"uvicorn-{i}")
        assert _audited(server, "uvicorn-") == 0
        _terminate(server.process)
        assert _audited(server, "uvicorn-") == 12, server.log()


# uvicorn logs this when the application raised (or was cancelled) in its lifespan: on a
# forced exit it skipped the lifespan shutdown, where the rows are written.
UNSUPPORTED = "ASGI 'lifespan' protocol appears unsupported"


@pytest.mark.parametrize("signals", [("SIGINT",), ("SIGTERM",), ("SIGINT", "SIGINT")], ids=["int", "term", "int-int"])
def test_no_row_is_lost_when_one_uvicorn_process_is_stopped(tmp_path: Path, signals: tuple[str, ...]) -> None:
    """Issue 32 (6): Ctrl-C, SIGTERM, and Ctrl-C twice (uvicorn's "exit now", which skips the
    lifespan shutdown): every buffered row is written, and uvicorn's log (at its default level,
    info) does not say the lifespan protocol is unsupported."""
    env = server_env(tmp_path, BATCHED)
    prepare_database(env)
    port = free_port()
    log_path = tmp_path / "uvicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = LiveServer(f"http://127.0.0.1:{port}", env, process, log_path)
    try:
        wait_ready(server)
        for i in range(12):
            _call(server, f"one-{i}")
        assert _audited(server, "one-") == 0
        for name in signals:
            process.send_signal(getattr(signal, name))
            time.sleep(0.05)
        process.wait(timeout=30)
        text = server.log()
        assert _audited(server, "one-") == 12, text
        assert "Finished server process" in text, text
        assert UNSUPPORTED not in text, text
    finally:
        stop_process(process)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_no_row_is_lost_when_make_run_is_stopped(tmp_path: Path, how: str) -> None:
    """Issue 32 (6): `make run` (project.run) stopped by Ctrl-C (SIGINT to the terminal's whole
    foreground group) or by SIGTERM to the runner: uvicorn gets one signal, runs its lifespan
    shutdown (the buffered rows are written) and says so; before, Ctrl-C reached it twice."""
    port = free_port()
    env = server_env(tmp_path, {**BATCHED, "PORT": str(port), "HOST": "127.0.0.1"})
    prepare_database(env)
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        run = subprocess.Popen(
            [sys.executable, "-m", "project.run"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group, as `make run` in a terminal
        )  # fmt: skip
    server = LiveServer(f"http://127.0.0.1:{port}", env, run, log_path)
    try:
        wait_ready(server, timeout=60)
        for i in range(12):
            _call(server, f"run-{i}")
        assert _audited(server, "run-") == 0
        if how == "ctrl-c":
            os.killpg(run.pid, signal.SIGINT)
        else:
            run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == 0
        text = server.log()
        assert _audited(server, "run-") == 12, text[-3000:]
        assert "Application shutdown complete." in text, text[-3000:]
        assert UNSUPPORTED not in text, text[-3000:]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in _children(run.pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_no_row_is_lost_when_gunicorn_is_stopped(tmp_path: Path, name: str) -> None:
    """SIGTERM (graceful) and SIGINT (gunicorn's quick stop: each sync worker raises SystemExit
    from its signal handler, wherever it is) both write every buffered row as the workers exit."""
    env = server_env(tmp_path, BATCHED)
    prepare_database(env)
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "project.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "2"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = LiveServer(f"http://127.0.0.1:{port}", env, process, log_path)
    try:
        wait_ready(server)
        for i in range(12):
            _call(server, f"gunicorn-{i}")
        assert _audited(server, "gunicorn-") == 0
        process.send_signal(getattr(signal, name))
        process.wait(timeout=30)
        assert _audited(server, "gunicorn-") == 12, server.log()
    finally:
        stop_process(process)
