"""Helpers for tests that drive the official Python SDK client (`mcp` package)."""

from __future__ import annotations

from typing import Any


async def legacy_handshake(
    session: Any, version: str = "2025-11-25", *, name: str = "e2e", capabilities: Any = None
) -> Any:
    """``initialize`` at exactly ``version`` and ``notifications/initialized``; the result.

    The SDK's own ``initialize()`` negotiates the newest revision it knows; tests of a given
    legacy revision send the request themselves and adopt the answer.
    """
    from mcp import types

    init = await session.send_request(
        types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=version,
                capabilities=capabilities or types.ClientCapabilities(),
                client_info=types.Implementation(name=name, version="1"),
            )
        ),
        types.InitializeResult,
    )
    session.adopt(init)
    await session.send_notification(types.InitializedNotification())
    return init


async def send_unchecked(session: Any, request: Any) -> dict[str, Any]:
    """SDK 2.3.0 types CreateTaskResult but validates every tools/call answer as a CallToolResult,
    so a task-augmented call goes through the session's own dispatcher without that check."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, opts)
    return dict(await session._dispatcher.send_raw_request(data["method"], data.get("params"), opts))
