"""Fixtures for view tests: the demo catalog in the test database, an MCP test client, the auth
backends, users, and Celery's broker holding task messages (tests/security uses them too)."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client

from mcp_tools.asking import waiting
from mcp_tools.models import McpTask, Tool
from mcp_tools.registry import ToolKind, registry
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


@pytest.fixture
def synced(db: None, settings: Any) -> None:
    """The model tools of tests/drfapp synced to rows; callers named by X-Test-User."""
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTH_BACKEND": "tests.drfapp.auth.UserHeaderBackend"}
    call_command("mcp_sync_toolsets", stdout=io.StringIO())


@pytest.fixture
def media(settings: Any, tmp_path: Any) -> None:
    """Uploaded files go to the test's tmp dir, served under /media/."""
    settings.MEDIA_ROOT = str(tmp_path)
    settings.MEDIA_URL = "/media/"


OK_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}  # asking_tools asks it


@pytest.fixture
def client_turns(monkeypatch: pytest.MonkeyPatch) -> list[Callable[[], None]]:
    """Steps the test plays as the client, one per look of the waiting worker at its request."""
    turns: list[Callable[[], None]] = []
    real_pause = waiting.pause

    def pause(seconds: float) -> None:
        if turns:
            turns.pop(0)()
        else:
            real_pause(seconds)

    monkeypatch.setattr(waiting, "pause", pause)
    return turns


@pytest.fixture
def asking_tools() -> Iterator[list[Any]]:
    """``confirm`` asks one question; ``interview`` asks the user, then the client's model."""
    seen: list[Any] = []

    def status(ctx: Any) -> str:  # the task's status as its handler goes on after an answer
        return str(McpTask.objects.filter(tool_name=ctx.tool_name).values_list("status", flat=True).get())

    def confirm(ctx: Any) -> str:
        seen.append(("can", ctx.can_elicit, ctx.can_sample))
        answer = ctx.elicit("Export 3 files?", OK_FORM)
        seen.extend([answer, status(ctx)])
        return "Exported." if answer.accepted and answer.content["ok"] else "Not exported."

    def interview(ctx: Any) -> str:
        first = ctx.elicit("Proceed?", OK_FORM, key="proceed")
        seen.append(status(ctx))
        colour = ctx.sample(["Name a colour."], max_tokens=10)
        seen.append(status(ctx))
        return f"{first.action}, {colour.text}"

    registry.register(ToolKind("test.task_confirm", confirm))
    registry.register(ToolKind("test.task_interview", interview))
    Tool.objects.create(
        name="task_confirm", description="asks", handler_key="test.task_confirm", task_support="optional"
    )
    Tool.objects.create(
        name="task_interview", description="asks twice", handler_key="test.task_interview", task_support="optional"
    )
    yield seen
    registry.unregister("test.task_confirm")
    registry.unregister("test.task_interview")
