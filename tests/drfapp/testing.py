"""Fixtures of the contrib.drf tests: users with model permissions, synced toolset rows, and an
MCP client per user (``X-Test-User``, see tests/drfapp/auth.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission, User

from tests.support.mcp_client import Mcp

ALL_PERMS = ("view", "add", "change", "delete")


def make_user(name: str, *perms: str, superuser: bool = False) -> User:
    user = User.objects.create(username=name, is_superuser=superuser)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return user


def perms(model: str, *actions: str, app: str = "drfapp") -> list[str]:
    return [f"{app}.{action}_{model}" for action in actions or ALL_PERMS]


class Caller:
    """One user's MCP client (2026-07-28 unless told otherwise); every message is validated."""

    def __init__(self, client: Any, who: str, scopes: str = "*", version: str | None = None) -> None:
        self.mcp = Mcp(client)
        self.mcp.default_headers = {"X-Test-User": f"{who} {scopes}"}
        if version is None:
            self.mcp.modern()
        else:
            self.mcp.initialize(version)

    def tools(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        cursor = None
        while True:
            result = self.mcp.call("tools/list", {"cursor": cursor} if cursor else {})
            found.update({tool["name"]: tool for tool in result["tools"]})
            cursor = result.get("nextCursor")
            if not cursor:
                return found

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.mcp.call("tools/call", {"name": name, "arguments": arguments or {}})

    def ok(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        result = self.call(name, arguments)
        assert not result.get("isError"), result
        return result["structuredContent"]

    def refused(self, name: str, arguments: dict[str, Any] | None = None) -> str:
        result = self.call(name, arguments)
        assert result.get("isError") is True, result
        return str(result["content"][0]["text"])
