"""gunicorn ``--preload``: the demo's wsgi.py builds the URLconf and the catalog once, in the
process the workers are forked from (``McpWsgiFront.warm()``), and the workers share it.

What must hold for that to be safe: every worker answers (each opening the database itself);
no database connection crosses the fork (the arbiter holds none); and a catalog built before
the fork is not kept past a change: an edit saved by another process (``manage.py shell``
here) is seen by every worker's next request. Memory is measured by ``bench/peers.py
--preload``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_client import MODERN, modern_meta
from tests.support.servers import ROOT, LiveServer, free_port, prepare_database, server_env, stop_process, wait_ready

pytestmark = pytest.mark.e2e


def _post(server: LiveServer, method: str, params: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": modern_meta()}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if name is not None:
        headers["Mcp-Name"] = name
    request = urllib.request.Request(server.url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        reply: dict[str, Any] = json.loads(response.read())
    return reply


def _listed(server: LiveServer) -> set[str]:
    return {tool["name"] for tool in _post(server, "tools/list", {})["result"]["tools"]}


def _holds_database(pid: int) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    return any(str(p.readlink()).endswith(".sqlite3") for p in fds.iterdir() if p.is_symlink())


def _at_once(server: LiveServer, n: int = 4) -> list[set[str]]:
    """``n`` listings at the same time: a sync worker serves one at a time, so both serve."""
    out: list[set[str]] = []
    threads = [threading.Thread(target=lambda: out.append(_listed(server))) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(out) == n
    return out


def _workers(pid: int, count: int = 2, timeout: float = 20) -> list[int]:
    """The arbiter's children once ``count`` are there (the first answer may come from the
    first worker forked, before the second is)."""
    deadline = time.monotonic() + timeout
    while True:
        children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        if len(children) >= count or time.monotonic() > deadline:
            return children
        time.sleep(0.1)


def test_preloaded_workers_answer_and_see_a_change_made_after_the_fork(tmp_path: Path) -> None:
    env = server_env(tmp_path, {"MCP_RATE_LIMIT": "100000/m"})
    prepare_database(env)
    port = free_port()
    log_path = tmp_path / "gunicorn.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "project.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", "2",
             "--preload"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = LiveServer(f"http://127.0.0.1:{port}", env, process, log_path)
    try:
        wait_ready(server)
        # The parent built the catalog before forking (nothing logged about warm()) and holds
        # no database file open: only the workers do.
        assert "warm()" not in server.log(), server.log()
        parent_fds = {str(p.readlink()) for p in Path(f"/proc/{process.pid}/fd").iterdir() if p.is_symlink()}
        assert not any(t.endswith(".sqlite3") for t in parent_fds), sorted(parent_fds)
        workers = _workers(process.pid)
        assert len(workers) == 2, server.log()

        reply = _post(server, "tools/call", {"name": "echo", "arguments": {"text": "forked"}}, name="echo")
        assert reply["result"]["content"][0]["text"] == "forked", reply
        for _ in range(20):  # until each worker has served (each opened the database itself)
            assert all("echo" in names for names in _at_once(server))
            if all(_holds_database(pid) for pid in workers):
                break
        assert all(_holds_database(pid) for pid in workers), server.log()

        server.manage(
            "shell", "-c",
            "from mcp_tools.models import Tool; t = Tool.objects.get(name='echo'); t.enabled = False; t.save()",
        )  # fmt: skip
        for _ in range(5):  # each request reads the catalog version (after a commit): no worker keeps the old one
            assert all("echo" not in names for names in _at_once(server))
        assert process.poll() is None, server.log()
    finally:
        stop_process(process)
