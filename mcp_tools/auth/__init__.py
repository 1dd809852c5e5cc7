"""Authentication backends for the MCP endpoint, picked by ``MCP_TOOLS["AUTH_BACKEND"]``."""

from __future__ import annotations

from .base import AllowAnyBackend, AuthFailure, BaseAuthBackend, get_auth_backend

__all__ = ["AllowAnyBackend", "AuthFailure", "BaseAuthBackend", "get_auth_backend"]
