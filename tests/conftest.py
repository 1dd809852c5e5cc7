"""Shared fixtures: schema validation of every response, registry isolation, live servers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import services


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("MCP_TEST_DB") == "postgres" and not services.reachable("postgres") and services.IN_CI:
        raise pytest.UsageError("MCP_TEST_DB=postgres but PostgreSQL is not reachable (CI=true)")


@pytest.fixture
def anyio_backend() -> str:
    """Async tests (marked anyio) run on asyncio, the loop uvicorn and Django use."""
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_catalog() -> Iterator[None]:
    from mcp_tools import catalog

    catalog.reset()
    yield
    catalog.reset()


@pytest.fixture(scope="session")
def live_server_mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The demo site under uvicorn on SQLite, with the demo tools loaded."""
    from tests.servers import run_server

    tmp: Path = tmp_path_factory.mktemp("live")
    with run_server(tmp) as server:
        yield server
