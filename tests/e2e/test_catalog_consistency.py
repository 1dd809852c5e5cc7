"""A tool disabled in one process is refused by every other process from its next call on.

The endpoint reads the catalog version once per request (one indexed SELECT of one row), so an
edit committed anywhere is seen at once: no notifier delay, no cache lifetime. This guards that
guarantee (README "Live catalog") against an in-process version cache without a shared read.
The servers here run on SQLite in WAL mode, where a process skips the read while the
WAL-index shows no commit (``models.walmark``): the edit, committed by another process, must
move that mark (a mark that never moves fails this test).
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.mcp_client import MODERN, modern_meta
from tests.support.servers import LiveServer, run_server

pytestmark = pytest.mark.e2e


def _call(server: LiveServer, name: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": {"text": "x"}, "_meta": modern_meta()},
    }
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    request = urllib.request.Request(server.url, data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        return dict(json.loads(exc.read()))


def test_a_disabled_tool_is_refused_on_every_process_at_once(tmp_path: Path) -> None:
    # Push notifiers off: nothing but the request's own read may tell a process of the edit.
    extra = {"MCP_NOTIFIER": "none", "MCP_RATE_LIMIT": "100000/m", "MCP_AUDIT_FLUSH_ROWS": "100"}
    with run_server(tmp_path, extra_env=extra, workers=2) as server:
        for _ in range(8):  # both processes have the catalog with echo
            assert "result" in _call(server, "echo")
        server.manage(
            "shell",
            "-c",
            "from mcp_tools.models import Tool; t = Tool.objects.get(name='echo'); t.enabled = False; t.save()",
        )
        for _ in range(8):  # whichever process answers
            reply = _call(server, "echo")
            assert "result" not in reply, reply
            assert "Unknown tool" in reply["error"]["message"]
