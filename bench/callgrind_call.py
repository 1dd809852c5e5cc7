"""Instructions per tools/call, in one process, for ``valgrind --tool=callgrind`` (steady under load).

    MCP_SQLITE_PATH=... DJANGO_SETTINGS_MODULE=project.settings \\
      valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/callgrind_call.py wsgi 2000

Runs ``N`` 2026-07-28 ``tools/call`` of ``echo`` through ``project.wsgi`` (the WSGI front) or
``project.asgi`` (the ASGI front, its thread hop included), or ``bare`` (with
``DJANGO_SETTINGS_MODULE=bench.bare_wsgi_settings``: a bare synchronous Django view, the limit)
after a warm-up of 50; no server, no socket. Instructions per call are (instructions of a run of N - of a run of 0) / N:
run it twice.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The request every tools/call bench sends (bench/callcost.py too): a 2026-07-28 call of echo.
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": "echo",
        "arguments": {"text": "hello"},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    },
}
BODY = json.dumps(CALL).encode()
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
    "host": "127.0.0.1",
}


def post_environ(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """The WSGI environ of a POST to /mcp on 127.0.0.1 (without ``wsgi.input``)."""
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/mcp",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "CONTENT_TYPE": headers["content-type"],
        "CONTENT_LENGTH": str(len(body)),
        **{"HTTP_" + k.upper().replace("-", "_"): v for k, v in headers.items() if k != "content-type"},
    }


def wsgi(n: int, bare: bool = False) -> None:
    application: Any
    if bare:  # DJANGO_SETTINGS_MODULE=bench.bare_wsgi_settings: the bare view, the limit
        from django.core.wsgi import get_wsgi_application

        application = get_wsgi_application()
    else:
        from project import wsgi as site

        application = site.application

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        assert status.startswith("200"), status

    base = post_environ(BODY, HEADERS)
    for _ in range(n):
        environ = dict(base, **{"wsgi.input": io.BytesIO(BODY)})
        out = b"".join(application(environ, start_response))
        assert bare or b'"hello"' in out, out


def asgi(n: int) -> None:
    from project.asgi import application

    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in HEADERS.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }

    async def one() -> None:
        sent: list[dict[str, Any]] = []
        done = asyncio.Event()
        first = [True]

        async def receive() -> dict[str, Any]:
            if first[0]:
                first[0] = False
                return {"type": "http.request", "body": BODY, "more_body": False}
            await done.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await application(dict(scope), receive, send)
        done.set()
        assert b'"hello"' in sent[-1]["body"], sent

    async def run() -> None:
        for _ in range(n):
            await one()

    asyncio.run(run())


if __name__ == "__main__":
    import django

    django.setup()
    kind, count = sys.argv[1], int(sys.argv[2])
    if kind != "bare":
        # Under valgrind a call takes about 50 times as long, so the audit writer thread would
        # write a part of a batch every AUDIT_FLUSH_SECONDS (a statement of a new length each
        # time, which SQLite parses again), which a server under load never does: here, as
        # there, the batches are written whole (AUDIT_FLUSH_ROWS), the rest at exit.
        from django.conf import settings

        from mcp_tools.conf import mcp_settings

        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUDIT_FLUSH_SECONDS": 3600}
        mcp_settings.reload()
    for n in (50, count):
        if kind == "asgi":
            asgi(n)
        else:
            wsgi(n, bare=kind == "bare")
