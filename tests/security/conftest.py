"""Fixtures for the security tests: the same test settings and fixtures as tests/integration
(the demo catalog in the test database, the schema-checking MCP test client)."""

from __future__ import annotations

from tests.integration.conftest import (
    _clear_cache,
    alice,
    asking_tools,
    client_turns,
    demo_tools,
    header_auth,
    mcp,
    media,
    oauth,
    oauth_backend,
    queued,
    root,
    root_client,
    synced,
)

__all__ = [
    "_clear_cache",
    "alice",
    "asking_tools",
    "client_turns",
    "demo_tools",
    "header_auth",
    "mcp",
    "media",
    "oauth",
    "oauth_backend",
    "queued",
    "root",
    "root_client",
    "synced",
]
