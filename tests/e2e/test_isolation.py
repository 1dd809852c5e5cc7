"""Slow tools are isolated: handlers run on their own pool, so listing stays fast (issue 13)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.mcp_client import MODERN, check_message, modern_meta
from tests.support.servers import LiveServer, run_server

pytestmark = [pytest.mark.e2e, pytest.mark.timing]

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": MODERN}


@pytest.fixture(scope="module")
def wide_pool_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # Enough handler threads that all 20 slow calls run at once (the default queues them).
    with run_server(tmp_path_factory.mktemp("isolation"), extra_env={"MCP_HANDLER_POOL_SIZE": "20"}) as live:
        yield live


def _post(client: httpx.Client, url: str, method: str, params: dict[str, Any], name: str | None = None) -> Any:
    headers = {**HEADERS, "Mcp-Method": method, **({"Mcp-Name": name} if name else {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": modern_meta()}}
    return client.post(url, json=body, headers=headers)


def test_listing_stays_fast_while_twenty_slow_calls_run(wide_pool_server: LiveServer) -> None:
    """20 calls of 5 s each in flight (more than either pool has threads): tools/list p99 < 50 ms."""
    results: list[int] = []

    def slow() -> None:
        with httpx.Client(timeout=60) as client:
            response = _post(
                client,
                wide_pool_server.url,
                "tools/call",
                {"name": "build_report", "arguments": {"steps": 17}},
                "build_report",
            )
            results.append(response.status_code)

    callers = [threading.Thread(target=slow) for _ in range(20)]
    for caller in callers:
        caller.start()
    time.sleep(1.0)  # every call has reached the server and the handler pool is full
    timings = []
    with httpx.Client(timeout=10) as client:
        _post(client, wide_pool_server.url, "tools/list", {})  # a warm connection
        deadline = time.monotonic() + 3.0  # well inside the 5 s the slow calls take
        while time.monotonic() < deadline and len(timings) < 200:
            started = time.perf_counter()
            response = _post(client, wide_pool_server.url, "tools/list", {})
            timings.append(time.perf_counter() - started)
            assert response.status_code == 200
            check_message(MODERN, response.json(), "tools/list")
    running = sum(caller.is_alive() for caller in callers)
    for caller in callers:
        caller.join(timeout=60)
    assert running >= 15, "the slow calls were still in flight while tools/list was measured"
    assert results == [200] * 20
    timings.sort()
    p99 = timings[max(0, int(len(timings) * 0.99) - 1)]
    assert len(timings) >= 50
    assert p99 < 0.050, f"tools/list p99 {p99 * 1000:.1f} ms with 20 slow calls in flight ({len(timings)} requests)"
