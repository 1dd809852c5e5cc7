"""Fixtures for view tests: the demo catalog in the test database and an MCP test client."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.http import HttpRequest

from mcp_tools.auth import AuthFailure, BaseAuthBackend
from mcp_tools.types import Principal
from tests.mcp_client import Mcp


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


class HeaderAuthBackend(BaseAuthBackend):
    """Test backend: ``X-Test-User: name scope1 scope2`` (no header: 401)."""

    def authenticate(self, request: HttpRequest) -> Principal:
        raw = request.headers.get("x-test-user")
        if not raw:
            raise AuthFailure(401, "invalid_token", "Authentication required", {"WWW-Authenticate": "Bearer"})
        name, *scopes = raw.split()
        return Principal(key=f"user:{name}", scopes=frozenset(scopes))


@pytest.fixture
def header_auth(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "tests.integration.conftest.HeaderAuthBackend"}
