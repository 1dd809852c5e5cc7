"""The ASGI front under a real uvicorn: after KEEPALIVE_REQUESTS JSON answers on one HTTP/1.1
connection the answer says ``Connection: close`` and the server closes it (issue 37: keep-alive
connections spread again over the server's processes); the client's next connection is served."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path
from urllib.parse import urlsplit

from tests.support.mcp_client import MODERN, modern_meta
from tests.support.servers import run_server

BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}})
REQUEST = (
    "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Accept: application/json, text/event-stream\r\n"
    f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/list\r\n"
    f"Content-Length: {len(BODY)}\r\n\r\n{BODY}"
).encode()


def _answer(sock: socket.socket) -> http.client.HTTPResponse:
    sock.sendall(REQUEST)
    response = http.client.HTTPResponse(sock)
    response.begin()
    body = response.read()
    assert response.status == 200, body
    assert json.loads(body)["result"]["tools"]
    return response


def test_the_front_closes_a_connection_after_keepalive_requests_answers(tmp_path: Path) -> None:
    with run_server(tmp_path, extra_env={"MCP_KEEPALIVE_REQUESTS": "3"}) as server:
        address = urlsplit(server.base_url)
        for _ in range(2):  # a second connection gets the same bound
            with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
                answers = [_answer(sock) for _ in range(3)]
                assert [a.getheader("Connection") for a in answers] == [None, None, "close"]
                assert sock.recv(1) == b""  # the server closed it
