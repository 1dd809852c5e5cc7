"""Fixtures for view tests: the demo catalog in the test database, an MCP test client, the auth
backends, users, and Celery's broker holding task messages (tests/security uses them too)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client

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


@pytest.fixture
def oauth_backend(settings: Any) -> None:
    """Callers authenticate with OAuth access tokens (django-oauth-toolkit's, mcp_tools.auth.DOTBackend)."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "mcp_tools.auth.DOTBackend"}


@pytest.fixture
def oauth(demo_tools: None, oauth_backend: None) -> None:
    """The demo catalog behind OAuth (the catalog loaded first, then the backend set)."""


@pytest.fixture
def alice(db: None) -> Any:
    """A user with a password (to sign in to the authorization pages)."""
    return get_user_model().objects.create_user("alice", password="pw-alice")


@pytest.fixture
def root(db: None) -> Any:
    """A superuser named root."""
    return get_user_model().objects.create_superuser("root", "root@example.com", "pw")


@pytest.fixture
def root_client(client: Client, root: Any) -> Client:
    """The test client signed in as root (pytest-django's admin_client signs in a user named admin)."""
    client.force_login(root)
    return client


@pytest.fixture
def queued() -> Iterator[None]:
    """Task messages go to Celery's in-memory broker, where no worker takes them (the task stays
    working), instead of running inline."""
    from project.celery import app

    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = True
