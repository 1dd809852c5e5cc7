"""Whether progressive discovery is on for a request: the site's mode, per OAuth client, or by size."""

from __future__ import annotations

from ..catalog import Catalog, VisibilityCheck
from ..conf import mcp_settings
from ..types import Principal

__all__ = ["active", "mode_of"]


def mode_of(principal: Principal) -> str:
    """The configured mode for ``principal``'s OAuth client: ``off``, ``on`` or ``auto``."""
    mode = mcp_settings.DISCOVERY
    clients = mcp_settings.DISCOVERY_CLIENTS
    if clients and principal.client_id is not None:
        return clients.get(principal.client_id, mode)
    return mode


def active(catalog: Catalog, principal: Principal, visible: VisibilityCheck) -> bool:
    """Whether ``principal`` (expanded with ``Catalog.with_permissions``) gets the entry set and the
    discovery tools: the mode is ``on``, or ``auto`` and it may use more than
    ``DISCOVERY_THRESHOLD`` tools (its cached view: no query)."""
    if mcp_settings.DISCOVERY == "off" and not mcp_settings.DISCOVERY_CLIENTS:
        return False  # the default: two attribute reads
    mode = mode_of(principal)
    if mode == "auto":
        return len(catalog.visible_indices(principal, visible)) > mcp_settings.DISCOVERY_THRESHOLD
    return mode == "on"
