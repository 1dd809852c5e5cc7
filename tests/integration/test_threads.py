"""run_sync: the pool thread sees the request's context, and async_to_sync uses the server loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.urls import get_script_prefix, set_script_prefix
from django.utils import translation

from mcp_tools.threads import run_sync

pytestmark = pytest.mark.anyio


@pytest.fixture
def pool(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "THREAD_SENSITIVE": False}


async def test_request_context_reaches_the_pool_thread(pool: None) -> None:
    set_script_prefix("/site/")
    translation.activate("de")
    try:
        seen = await run_sync(lambda: (get_script_prefix(), translation.get_language()))
    finally:
        set_script_prefix("/")
        translation.deactivate()
    assert seen == ("/site/", "de")


async def test_async_to_sync_in_a_handler_runs_on_the_server_loop(pool: None) -> None:
    server_loop = asyncio.get_running_loop()

    async def where() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    assert await run_sync(lambda: async_to_sync(where)()) is server_loop
