"""What the server says about itself: serverInfo, capabilities, and keys derived from settings."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings

from .. import __version__
from ..auth import get_auth_backend
from ..catalog import get_catalog
from ..conf import mcp_settings, reset_on_change
from ..notify.backends import NullNotifier, get_notifier
from ..protocol import apps as apps_wire
from ..protocol import task_wire
from ..protocol import versions as v
from ..protocol.versions import Revision
from ..tasking import tasks_enabled
from ..types import Principal

__all__ = [
    "capabilities",
    "cursor_key",
    "with_permissions",
    "list_changed_supported",
    "modern_meta",
    "server_info",
    "tools_fingerprint",
]


@reset_on_change
def _server_info(title: bool) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": mcp_settings.SERVER_NAME,
        "version": mcp_settings.SERVER_VERSION or __version__,
    }
    if title and mcp_settings.SERVER_TITLE:
        info["title"] = mcp_settings.SERVER_TITLE
    return info


def server_info(rev: Revision) -> dict[str, Any]:
    return _server_info(rev.title_and_output_schema)


def list_changed_supported(asgi: bool) -> bool:
    """Whether this deployment can deliver notifications/tools/list_changed (T-1).

    Only under ASGI: a WSGI worker cannot hold streams open while serving other requests.
    """
    return asgi and not isinstance(get_notifier(), NullNotifier)


def capabilities(rev: Revision, asgi: bool, *, apps: bool = False) -> dict[str, Any]:
    """What the server offers; ``apps``: the client declared MCP Apps, so it is told of the
    extension and of the ``resources`` its views are read from (no one else is: they are the
    tools' views, and "If host does not support MCP Apps, tool behaves as standard tool")."""
    caps: dict[str, Any] = {"logging": {}, "tools": {"listChanged": list_changed_supported(asgi)}}
    extensions: dict[str, Any] = {}
    if tasks_enabled():
        if rev.core_tasks:
            caps["tasks"] = task_wire.core_capabilities()
        if rev.tasks_extension:
            extensions.update(task_wire.ext_capabilities())
    if apps:
        caps["resources"] = {}
        extensions[apps_wire.EXTENSION] = apps_wire.server_capability()
    if extensions:
        caps["extensions"] = extensions
    return caps


def tools_fingerprint(principal: Principal) -> tuple[str, int]:
    """What ``principal`` sees now, as (fingerprint, catalog version)."""
    catalog = get_catalog()
    return catalog.fingerprint(catalog.with_permissions(principal), get_auth_backend().can_see), catalog.version


def with_permissions(principal: Principal) -> Principal:
    """``principal`` with its scopes expanded and its user's permissions loaded (see
    ``Catalog.with_permissions``): what a listener keeps, since it cannot read the database later."""
    return get_catalog().with_permissions(principal)


def modern_meta() -> dict[str, Any]:
    return {v.META_SERVER_INFO: server_info(v.get_revision(v.V2026_07_28))}


@reset_on_change
def cursor_key() -> bytes:
    """The key that signs cursors: ``CURSOR_KEY``, or one derived from ``SECRET_KEY``."""
    secret = mcp_settings.CURSOR_KEY or settings.SECRET_KEY
    return hashlib.sha256(b"mcp_tools.cursor\0" + secret.encode()).digest()
