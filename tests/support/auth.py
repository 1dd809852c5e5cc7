"""Test authentication backends for the suite (not for production).

``X-Test-User: name scope1 scope2`` names the caller and its scopes (no header: 401).
``HeaderAuthBackend`` keeps the base visibility rule (a tool's required scopes);
``ScopeHeaderBackend`` shows a tool when its name is one of the scopes or the scopes hold
``all``: it depends only on the tool and the scopes, as ``can_see`` must, so two callers see
different lists without the OAuth setup.
"""

from __future__ import annotations

from django.http import HttpRequest

from mcp_tools.auth import AuthFailure, BaseAuthBackend
from mcp_tools.catalog import CompiledTool
from mcp_tools.types import Principal


class HeaderAuthBackend(BaseAuthBackend):
    def authenticate(self, request: HttpRequest) -> Principal:
        raw = request.headers.get("x-test-user")
        if not raw:
            raise AuthFailure(401, "invalid_token", "Authentication required", {"WWW-Authenticate": "Bearer"})
        name, *scopes = raw.split()
        return Principal(key=f"user:{name}", scopes=frozenset(scopes))


class ScopeHeaderBackend(HeaderAuthBackend):
    def can_see(self, tool: CompiledTool, principal: Principal) -> bool:
        scopes = principal.scopes or frozenset()
        return "all" in scopes or tool.name in scopes


class StepUpHeaderBackend(HeaderAuthBackend):
    """Like an OAuth backend: a tool the caller lacks scopes for asks for them (403)."""

    def step_up(self, tool: CompiledTool, principal: Principal) -> AuthFailure | None:
        wanted = " ".join(sorted(tool.required_scopes))
        return AuthFailure(403, "insufficient_scope", f"Tool {tool.name!r} needs {wanted}", {})


class UserHeaderBackend(HeaderAuthBackend):
    """``X-Test-User: name scope...`` as the Django user of that name (model toolsets need one)."""

    def authenticate(self, request: HttpRequest) -> Principal:
        from django.contrib.auth import get_user_model

        principal = super().authenticate(request)
        user = get_user_model().objects.get(username=principal.key.removeprefix("user:"))
        return Principal(key=principal.key, scopes=principal.scopes, user=user)
