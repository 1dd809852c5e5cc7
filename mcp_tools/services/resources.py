"""resources/read, resources/list and resources/templates/list: the ``ui://`` views of tools (MCP Apps).

Served only to a client that declared ``io.modelcontextprotocol/ui`` (no one else was told of
``resources``); the only resources are tools' views, ``ui://tools/<tool name>``. A view is read
by whoever can see its tool, as tools/list shows it to them; any other URI, a tool without a
view and a tool hidden from the caller all answer "Resource not found" alike.
"""

from __future__ import annotations

import logging
from typing import Any

from ..auth import get_auth_backend
from ..catalog import Catalog, CompiledTool, get_catalog
from ..conf import mcp_settings
from ..protocol import apps as apps_wire
from ..protocol import errors as e
from ..protocol.cursor import decode_cursor, encode_cursor
from ..protocol.jsonrpc import Request
from ..types import Principal
from ..ui import render_document
from ..ui.render import UiRenderError
from .exchange import Exchange, complete
from .identity import cursor_key

__all__ = ["list_resource_templates", "list_resources", "read_resource"]

logger = logging.getLogger("mcp_tools")


def _require_apps(req: Request, ex: Exchange) -> None:
    """A client that did not declare MCP Apps was offered no resources: the methods do not exist."""
    if not ex.apps_declared():
        raise e.method_not_found(req.method, http_status=404 if ex.revision.modern else 200)


def _cache_fields(ex: Exchange, result: dict[str, Any]) -> dict[str, Any]:
    if ex.revision.modern:
        # What a caller may read depends on what it may see: private, as tools/list is.
        result["ttlMs"] = mcp_settings.LIST_TTL_MS
        result["cacheScope"] = "private"
    return result


def _visible_views(catalog: Catalog, principal: Principal) -> list[CompiledTool]:
    backend = get_auth_backend()
    return [
        tool
        for i in catalog.visible_indices(principal, backend.can_see)
        if (tool := catalog.tools[i]).spec.ui is not None
    ]


def read_resource(req: Request, ex: Exchange) -> bytes:
    _require_apps(req, ex)
    uri = req.params.get("uri")
    if not isinstance(uri, str):
        raise e.invalid_params("resources/read needs params.uri (a string)")
    name = apps_wire.parse_ui_uri(uri)
    catalog = get_catalog()
    principal = catalog.with_permissions(ex.principal)
    tool = catalog.get(name) if name is not None else None
    if (
        tool is None
        or tool.spec.ui is None
        or not tool.permitted(principal)
        or not get_auth_backend().can_see(tool, principal)
    ):
        raise apps_wire.resource_not_found(uri, ex.revision)
    try:
        html = render_document(tool.ui_source())
    except UiRenderError as exc:
        # The admin sees why (the form checks it); a client learns nothing of the template.
        logger.error("The view of tool %r could not be rendered: %s", tool.name, exc)
        raise e.internal_error("The tool's view could not be rendered") from None
    contents = apps_wire.resource_contents(uri, html, tool.ui_meta or apps_wire.UiResourceMeta())
    return complete(req, ex, _cache_fields(ex, {"contents": [contents]}))


def list_resources(req: Request, ex: Exchange) -> bytes:
    """Every view the caller can read, by tool name, in pages of ``PAGE_SIZE``."""
    _require_apps(req, ex)
    key = cursor_key()
    raw_cursor = req.params.get("cursor")
    after = None if raw_cursor is None else decode_cursor(raw_cursor, key, scope="resources/list")
    catalog = get_catalog()
    views = _visible_views(catalog, catalog.with_permissions(ex.principal))
    if after is not None:
        views = [tool for tool in views if tool.name > after]
    size = mcp_settings.PAGE_SIZE
    page, more = views[:size], len(views) > size
    rev = ex.revision
    resources = []
    for tool in page:
        entry: dict[str, Any] = {"uri": apps_wire.ui_uri(tool.name), "name": tool.name}
        if tool.spec.title and rev.title_and_output_schema:
            entry["title"] = tool.spec.title
        if tool.spec.description:
            entry["description"] = tool.spec.description
        entry["mimeType"] = apps_wire.MIME_TYPE
        meta = tool.ui_meta.meta() if tool.ui_meta is not None else None
        if meta is not None:
            entry["_meta"] = meta
        resources.append(entry)
    result: dict[str, Any] = {"resources": resources}
    if more:
        result["nextCursor"] = encode_cursor(page[-1].name, key, scope="resources/list")
    return complete(req, ex, _cache_fields(ex, result))


def list_resource_templates(req: Request, ex: Exchange) -> bytes:
    """No templated resources: each view has its own fixed URI."""
    _require_apps(req, ex)
    return complete(req, ex, _cache_fields(ex, {"resourceTemplates": []}))
