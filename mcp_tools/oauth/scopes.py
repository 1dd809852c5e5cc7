"""DOT's scopes backend fed by the Scope table (cached per catalog version, so a change to a
Scope row, which bumps the catalog version, is seen by the next request)."""

from __future__ import annotations

from typing import Any

from oauth2_provider.scopes import BaseScopes

from ..catalog import get_catalog

__all__ = ["DatabaseScopes"]


class DatabaseScopes(BaseScopes):  # type: ignore[misc]
    """Active scopes are available; advertised ones are the default. User-independent on
    purpose: entitlement is applied at consent, so an unentitled request never kills a flow."""

    def get_all_scopes(self) -> dict[str, str]:
        scopes = get_catalog().scopes
        return {name: scopes.descriptions.get(name) or name for name in sorted(scopes.closure)}

    def get_available_scopes(
        self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        return sorted(get_catalog().scopes.closure)

    def get_default_scopes(self, application: Any = None, request: Any = None, *args: Any, **kwargs: Any) -> list[str]:
        return sorted(get_catalog().scopes.advertised)
