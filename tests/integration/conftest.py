"""Fixtures for view tests: the demo catalog in the test database and an MCP test client."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command

from tests.support.mcp_client import Mcp


@pytest.fixture(autouse=True)
def _clear_cache() -> Any:
    """Cancellation flags live in the cache: no test sees another's."""
    yield
    cache.clear()


@pytest.fixture
def demo_tools(db: None) -> None:
    call_command("load_demo_tools", stdout=io.StringIO())


@pytest.fixture
def mcp(client: Any, demo_tools: None) -> Mcp:
    return Mcp(client)


@pytest.fixture
def header_auth(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "tests.support.auth.HeaderAuthBackend"}
