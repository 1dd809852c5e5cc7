"""SSE behaviour against a real uvicorn server (progress, logs, cancellation, GET and listen)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import httpx
import pytest

from tests.support.mcp_client import MODERN, check_message, modern_meta, sse_messages
from tests.support.servers import LiveServer

pytestmark = pytest.mark.e2e

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class Session:
    def __init__(self, server: LiveServer, version: str) -> None:
        self.server = server
        self.version = version
        self.http = httpx.Client(timeout=30)
        self.headers = dict(ACCEPT)
        self.ids = 0
        if version == MODERN:
            self.headers["MCP-Protocol-Version"] = MODERN
            return
        result = self.send(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}},
        )
        assert result[-1]["result"]["protocolVersion"] == version
        if version != "2025-03-26":
            self.headers["MCP-Protocol-Version"] = version
        self.http.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers)

    def send(
        self, method: str, params: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        self.ids += 1
        params = dict(params or {})
        hdrs = {**self.headers, **(headers or {})}
        if self.version == MODERN:
            params["_meta"] = {**modern_meta(), **params.get("_meta", {})}
            hdrs["Mcp-Method"] = method
            if method == "tools/call":
                hdrs["Mcp-Name"] = params["name"]
        response = self.http.post(
            self.server.url, json={"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}, headers=hdrs
        )
        if method == "initialize":
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        messages = (
            sse_messages(response.content)
            if response.headers["content-type"].startswith("text/event-stream")
            else [response.json()]
        )
        for message in messages:
            check_message(self.version, message, method)
        self.last = response
        return messages


VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25", MODERN)


@pytest.fixture(autouse=True)
def _close_sessions(monkeypatch: pytest.MonkeyPatch) -> Any:
    opened: list[Session] = []
    original = Session.__init__

    def tracking_init(self: Session, *args: Any, **kwargs: Any) -> None:
        opened.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Session, "__init__", tracking_init)
    yield
    for session in opened:
        session.http.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_progress_on_the_request_stream(stream_server: LiveServer, version: str) -> None:
    """P-1, P-2, H-7, H-8: progress events precede the final response on the SSE stream."""
    session = Session(stream_server, version)
    messages = session.send(
        "tools/call", {"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p"}}
    )
    assert session.last.headers["content-type"].startswith("text/event-stream")
    assert session.last.headers["x-accel-buffering"] == "no"
    notes, final = messages[:-1], messages[-1]
    values = [n["params"]["progress"] for n in notes]
    assert len(values) == 3
    assert values == sorted(set(values))
    assert final["result"]["content"][0]["text"] == "Completed 3 progress steps."


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_legacy_logs_and_set_level(stream_server: LiveServer, version: str) -> None:
    """LG-1, LG-2."""
    session = Session(stream_server, version)
    messages = session.send("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    assert [m["params"]["data"] for m in messages[:-1]] == [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    assert session.send("logging/setLevel", {"level": "warning"})[0]["result"] == {}
    messages = session.send("tools/call", {"name": "test_tool_with_logging", "arguments": {}})
    assert len(messages) == 1
    assert "result" in messages[0]


def test_modern_logs_only_with_per_request_level(stream_server: LiveServer) -> None:
    """LG-3."""
    session = Session(stream_server, MODERN)
    assert len(session.send("tools/call", {"name": "test_tool_with_logging", "arguments": {}})) == 1
    meta = {"io.modelcontextprotocol/logLevel": "info"}
    messages = session.send("tools/call", {"name": "test_tool_with_logging", "arguments": {}, "_meta": meta})
    assert [m["method"] for m in messages[:-1]] == ["notifications/message"] * 3


def test_cancellation_from_another_request(stream_server: LiveServer) -> None:
    """C-1: a notifications/cancelled POST stops an in-flight call; its stream ends with no response."""
    session = Session(stream_server, "2025-11-25")
    outcome: dict[str, Any] = {}
    progressed = threading.Event()  # the call is in flight: its first progress event came

    def run() -> None:
        started = time.monotonic()
        params = {"name": "build_report", "arguments": {"steps": 20}, "_meta": {"progressToken": 1}}
        body = b""
        message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
        with session.http.stream("POST", stream_server.url, json=message, headers=session.headers) as response:
            for chunk in response.iter_bytes():
                body += chunk
                if b"notifications/progress" in body:
                    progressed.set()
        outcome["messages"] = sse_messages(body)
        outcome["seconds"] = time.monotonic() - started
        progressed.set()  # also when none came: the assertions below say so

    worker = threading.Thread(target=run)
    worker.start()
    # Cancel once the call is seen running (a fixed sleep raced the server's start on a busy machine).
    assert progressed.wait(15), "the call sent no progress"
    cancel = httpx.post(
        stream_server.url,
        json={"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2, "reason": "test"}},
        headers=session.headers,
    )
    assert cancel.status_code == 202
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert outcome["seconds"] < 5  # 20 steps of 0.3 s would take 6 s
    assert all("result" not in m and "error" not in m for m in outcome["messages"])
    assert outcome["messages"], "progress was reported before the cancellation"
    for message in outcome["messages"]:
        check_message(session.version, message, "tools/call")


def _audit_outcome(server: LiveServer, request_id: str, timeout: float = 10.0) -> tuple[str, float]:
    """The audit row of a call (its outcome and duration in ms), once the call has ended."""
    sql = "SELECT outcome, duration_ms FROM mcp_tools_auditevent WHERE request_id = %s"
    deadline = time.monotonic() + timeout
    while True:
        rows = server.query(sql, (request_id,))
        if rows or time.monotonic() > deadline:
            return (str(rows[0][0]), float(rows[0][1])) if rows else ("-", 0.0)
        time.sleep(0.1)


def _slow_call(request_id: str, version: str, steps: int, progress: bool) -> tuple[dict[str, Any], dict[str, str]]:
    params: dict[str, Any] = {"name": "build_report", "arguments": {"steps": steps}}
    headers = {**ACCEPT, "MCP-Protocol-Version": version}
    if version == MODERN:
        params["_meta"] = modern_meta(**({"progressToken": "x"} if progress else {}))
        headers.update({"Mcp-Method": "tools/call", "Mcp-Name": "build_report"})
    elif progress:
        params["_meta"] = {"progressToken": "x"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}, headers


def test_modern_stream_close_cancels(stream_server: LiveServer) -> None:
    """H-D8: closing the response stream cancels the request (the server keeps serving)."""
    request_id = f"close-{time.monotonic_ns()}"
    body, headers = _slow_call(request_id, MODERN, steps=20, progress=True)
    with (
        httpx.Client(timeout=10) as http,
        http.stream("POST", stream_server.url, json=body, headers=headers) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data:"):
                break
    outcome, duration = _audit_outcome(stream_server, request_id)
    assert outcome == "cancelled"
    assert duration < 5000  # 20 steps of 0.3 s would take 6 s
    session = Session(stream_server, MODERN)
    assert "result" in session.send("tools/list")[0]


def test_modern_disconnect_before_a_json_result_cancels(stream_server: LiveServer) -> None:
    """H-D8 [impl]: a client that goes away while waiting for a JSON response cancels the call."""
    request_id = f"gone-{time.monotonic_ns()}"
    body, headers = _slow_call(request_id, MODERN, steps=20, progress=False)
    with httpx.Client(timeout=httpx.Timeout(10, read=0.8)) as http, pytest.raises(httpx.ReadTimeout):
        http.post(stream_server.url, json=body, headers=headers)
    outcome, duration = _audit_outcome(stream_server, request_id)
    assert outcome == "cancelled"
    assert duration < 5000


def test_legacy_disconnect_is_not_cancellation(stream_server: LiveServer) -> None:
    """H-16: a dropped legacy connection does not cancel the call; it runs to its end."""
    session = Session(stream_server, "2025-11-25")
    request_id = f"legacy-gone-{time.monotonic_ns()}"
    body, headers = _slow_call(request_id, "2025-11-25", steps=4, progress=True)
    headers["Mcp-Session-Id"] = session.headers["Mcp-Session-Id"]
    with (
        httpx.Client(timeout=10) as http,
        http.stream("POST", stream_server.url, json=body, headers=headers) as response,
    ):
        for line in response.iter_lines():
            if line.startswith("data:"):
                break
    outcome, duration = _audit_outcome(stream_server, request_id)
    assert outcome == "ok"
    assert duration >= 1000  # all 4 steps of 0.3 s ran


def test_get_stream_primes_and_closes_with_retry(stream_server: LiveServer) -> None:
    """H-11, H-12: 2025-11-25 GET stream starts with an id + empty data event and ends with retry."""
    session = Session(stream_server, "2025-11-25")
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session.headers["Mcp-Session-Id"]}
    started = time.monotonic()
    response = httpx.get(stream_server.url, headers=headers, timeout=10)
    assert response.status_code == 200
    body = response.text
    assert body.startswith("id: ")
    assert "data: \n\n" in body
    assert ": keep-alive" in body
    assert body.rstrip().endswith(f"retry: {3000}")
    assert 1.0 < time.monotonic() - started < 5
    older = Session(stream_server, "2025-06-18")
    response = httpx.get(
        stream_server.url, headers={**headers, "Mcp-Session-Id": older.headers["Mcp-Session-Id"]}, timeout=10
    )
    assert response.status_code == 200
    assert not response.text.startswith("id:")


def test_listen_stream(stream_server: LiveServer) -> None:
    """H-D10: ack first, subscriptionId on every message, graceful listen result at the end."""
    session = Session(stream_server, MODERN)
    messages = session.send(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True, "promptsListChanged": True}}
    )
    ack, final = messages[0], messages[-1]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    # Under ASGI the server delivers list_changed, so toolsListChanged is honoured; prompts never.
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == final["id"]
    assert final["result"] == {
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/subscriptionId": final["id"]},
    }


def test_any_worker_serves_any_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Sessions live in the database: two server processes on one DB serve one session in turn."""
    from tests.support.servers import run_server

    tmp = tmp_path_factory.mktemp("two")
    with run_server(tmp) as first, run_server(tmp, prepare=False) as second:
        session = Session(first, "2025-11-25")
        session.server = second
        assert "result" in session.send("tools/list")[0]
        deleted = httpx.delete(first.url, headers=session.headers)
        assert deleted.status_code == 204
        response = httpx.post(second.url, json={"jsonrpc": "2.0", "id": 5, "method": "ping"}, headers=session.headers)
        assert response.status_code == 404
        json.loads(response.content)


def test_a_trickling_body_is_cut_off_by_the_read_timeout(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Issue 32 (finding 5), against a real uvicorn and the demo's ASGI front: a client that
    declares a body and sends it a byte at a time is answered 408 and disconnected once
    BODY_TIMEOUT_SECONDS have passed; meanwhile the server serves other requests."""
    import socket

    from tests.support.servers import run_server

    tmp = tmp_path_factory.mktemp("trickle")
    with run_server(tmp, extra_env={"MCP_BODY_TIMEOUT_SECONDS": "1.5"}) as server:
        host, port = server.base_url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            head = (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
                "Content-Length: 1000\r\n\r\n"
            )
            sock.sendall(head.encode() + b'{"jsonrpc": "2.0", ')
            started = time.monotonic()
            answer = b""
            sock.settimeout(0.3)
            while time.monotonic() - started < 8:
                try:
                    sock.sendall(b" ")  # a byte now and then, never the whole body
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                except OSError:
                    break  # the server closed the connection
                if not chunk:
                    break
                answer += chunk
            took = time.monotonic() - started
            other = httpx.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": modern_meta()}},
                headers={**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
            )
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert 1.2 < took < 6, took
        message = json.loads(answer.split(b"\r\n\r\n", 1)[1])
        assert message["error"]["code"] == -32600
        assert other.status_code == 200
