"""The authentication backend contract, and the open backend for local development."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..conf import mcp_settings, reset_on_change
from ..types import ANONYMOUS, Principal, ToolInfo

if TYPE_CHECKING:
    from django.http import HttpRequest


__all__ = [
    "AllowAnyBackend",
    "AuthFailure",
    "BaseAuthBackend",
    "get_auth_backend",
]


class AuthFailure(Exception):
    """Authentication failed: the view answers with ``status`` and these headers.

    ``scopes``: for a 403 ``insufficient_scope``, the scopes its challenge asks for (the answer
    to a JSON-RPC request then also says so in a JSON-RPC error, which clients show).
    """

    def __init__(
        self,
        status: int,
        error: str,
        description: str,
        headers: dict[str, str] | None = None,
        scopes: list[str] | None = None,
    ) -> None:
        super().__init__(description)
        self.status = status
        self.error = error
        self.description = description
        self.headers = headers or {}
        self.scopes = scopes or []


class BaseAuthBackend:
    """Decides who calls and which tools they may see.

    Subclass it and name the class in ``MCP_TOOLS["AUTH_BACKEND"]``:

    - ``authenticate(request)`` returns a :class:`~mcp_tools.types.Principal` or raises
      :class:`AuthFailure` (401/403 with a ``WWW-Authenticate`` challenge);
    - ``can_see(tool, principal)`` says whether a tool (a :class:`~mcp_tools.types.ToolInfo`) is
      listed for, and callable by, the principal. It must depend only on the tool and
      ``principal.scopes`` because its answer is cached per scope set.
    - ``filters_by_principal`` is True when different callers may see different lists.
    """

    filters_by_principal = True
    # True when ``authenticate`` reaches nothing but the site's own database (no HTTP, no other
    # server): where every store is in the process (SERVE_ON_LOOP), requests are then served on
    # the event loop's thread. A subclass that reaches further must set it False.
    in_process = False

    def authenticate(self, request: HttpRequest) -> Principal:
        raise NotImplementedError

    def can_see(self, tool: ToolInfo, principal: Principal) -> bool:
        if principal.scopes is None:
            # Granted scopes not yet expanded (Catalog.scoped): show nothing rather than all.
            return principal.granted is None
        return tool.required_scopes <= principal.scopes

    def step_up(self, tool: ToolInfo, principal: Principal) -> AuthFailure | None:
        """For a tool the principal cannot see: an AuthFailure (403) inviting re-authorization
        with more scopes, or None to answer as for an unknown tool."""
        return None


class AllowAnyBackend(BaseAuthBackend):
    """No authentication: every caller is the anonymous principal and sees every tool.

    For local development and demos only; a deployment reachable by others should use an
    OAuth backend.
    """

    filters_by_principal = False
    in_process = True

    def authenticate(self, request: HttpRequest) -> Principal:
        return ANONYMOUS


@reset_on_change
def _instantiate(cls: type[BaseAuthBackend]) -> BaseAuthBackend:
    return cls()


def get_auth_backend() -> BaseAuthBackend:
    cls = mcp_settings.AUTH_BACKEND
    return _instantiate(cls)
