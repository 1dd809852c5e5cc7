"""A test backend whose principals carry a Django user: ``X-Test-User: name scope1 scope2``.

The user is the local user of that name (none when there is no such user); scopes are the rest
of the header (``*`` alone: no scope restriction). For tests only.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest

from mcp_tools.auth import AuthFailure, BaseAuthBackend
from mcp_tools.types import Principal


class UserHeaderBackend(BaseAuthBackend):
    def authenticate(self, request: HttpRequest) -> Principal:
        raw = request.headers.get("x-test-user")
        if not raw:
            raise AuthFailure(401, "invalid_token", "Authentication required", {"WWW-Authenticate": "Bearer"})
        name, *scopes = raw.split()
        user = get_user_model().objects.filter(username=name).first()
        return Principal(key=f"user:{name}", user=user, scopes=None if scopes == ["*"] else frozenset(scopes))
