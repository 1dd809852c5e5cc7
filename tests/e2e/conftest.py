"""End-to-end fixtures: a real uvicorn server with short-lived streams for stream tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.servers import LiveServer, run_server


@pytest.fixture(scope="module", params=["front", "view"])
def stream_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Streams end after 1.5 s and keep-alives every 0.5 s, so stream tests finish quickly.

    Once with the endpoint answered by mcp_tools.asgi.McpFront (the demo's deployment) and once
    as a plain view behind Django's ASGI handler and the demo's middleware.
    """
    tmp = tmp_path_factory.mktemp("streams")
    env = {"MCP_SSE_MAX_SECONDS": "1.5", "MCP_SSE_KEEPALIVE_SECONDS": "0.5", "MCP_PAGE_SIZE": "4"}
    env["MCP_ASGI_FRONT"] = "1" if request.param == "front" else "0"
    with run_server(tmp, extra_env=env) as server:
        yield server
