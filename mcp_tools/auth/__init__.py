"""Authentication backends for the MCP endpoint, picked by ``MCP_TOOLS["AUTH_BACKEND"]``."""

from __future__ import annotations

from .base import AllowAnyBackend, AuthFailure, BaseAuthBackend, get_auth_backend
from .oauth import DOTBackend, JWTBackend, open_door, scopes_enforced

__all__ = [
    "AllowAnyBackend",
    "AuthFailure",
    "BaseAuthBackend",
    "DOTBackend",
    "JWTBackend",
    "get_auth_backend",
    "open_door",
    "scopes_enforced",
]
