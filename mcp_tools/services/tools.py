"""tools/list, and the tool a tools/call names for its caller (the call itself: ``services.calls``)."""

from __future__ import annotations

import logging
from typing import Any

import orjson

from .. import discovery
from ..auth import get_auth_backend
from ..catalog import Catalog, CompiledTool, PageQuery, get_catalog
from ..conf import mcp_settings
from ..protocol import errors as e
from ..protocol.cursor import decode_cursor, encode_cursor
from ..protocol.errors import McpError
from ..protocol.jsonrpc import Request, encode_raw_result
from ..tasking import tasks_enabled
from ..types import Principal
from .exchange import Exchange
from .identity import cursor_key, modern_meta

__all__ = ["authorize_batch", "callable_tool", "list_tools"]

logger = logging.getLogger("mcp_tools")


def list_tools(req: Request, ex: Exchange) -> bytes:
    backend = get_auth_backend()
    key = cursor_key()
    raw_cursor = req.params.get("cursor")
    after = None if raw_cursor is None else decode_cursor(raw_cursor, key, scope="tools/list")
    rev = ex.revision

    def render(tools: list[dict[str, Any]], next_after: str | None) -> bytes:
        result: dict[str, Any] = {}
        if rev.modern:
            result["resultType"] = "complete"
        result["tools"] = tools
        if next_after is not None:
            result["nextCursor"] = encode_cursor(next_after, key, scope="tools/list")
        if rev.modern:
            # T-7: a list filtered by authorization is private; every page shares the scope.
            result["ttlMs"] = mcp_settings.LIST_TTL_MS
            result["cacheScope"] = "private"
            result["_meta"] = modern_meta()
        return orjson.dumps(result)

    catalog = get_catalog()
    principal = catalog.with_permissions(ex.principal)
    query = PageQuery(
        rev,
        principal,
        backend.can_see,
        after,
        mcp_settings.PAGE_SIZE,
        tasks_enabled(),
        max_bytes=mcp_settings.MAX_RESPONSE_BYTES,
        # Asked only when some tool has a view: otherwise the pages are the same for every client.
        apps=catalog.has_ui and ex.apps_declared(),
        # Progressive discovery: the entry set and the discovery tools (None: the whole view).
        subset=discovery.entry(catalog, principal, backend.can_see),
    )
    body = catalog.cached_page(query)
    if body is None:
        page = catalog.select_page(query)
        body = render(page.tools, page.next_after)
        catalog.remember_page(page, body)
    return encode_raw_result(req.id, body)


def callable_tool(name: Any, principal: Principal, catalog: Catalog) -> CompiledTool:
    """The tool ``name`` this principal may call; a hidden tool answers like an unknown one."""
    if not isinstance(name, str):
        raise e.invalid_params("tools/call needs params.name (a string)")
    backend = get_auth_backend()
    tool = discovery.builtin(name, catalog, principal, backend.can_see)  # None unless discovery is on
    if tool is not None:
        return tool
    tool = catalog.get(name)
    if tool is not None and not tool.permitted(principal):
        tool = None  # a Django permission the user lacks: no scope would help
    if tool is not None and not backend.can_see(tool, principal):
        # A-5 step-up: a tool the user could be granted gets 403 insufficient_scope.
        failure = backend.step_up(tool, principal)
        if failure is not None:
            raise failure
        tool = None
    # A tool the caller may not see otherwise answers exactly like a tool that does not exist.
    if tool is None:
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug(
                "tools/call of %r by %s: %s; manage.py mcp_explain --tool %s says why",
                name[:100], principal.key, "hidden from this caller" if catalog.get(name) else "no such enabled tool",
                name[:100],
            )  # fmt: skip
        raise e.invalid_params(f"Unknown tool: {name}")
    return tool


def authorize_batch(requests: list[Request], principal: Principal) -> None:
    """Raise the step-up ``AuthFailure`` of the first ``tools/call`` in ``requests`` the
    principal may not make, before any of them runs; other problems are answered per item."""
    catalog = get_catalog()
    scoped = catalog.with_permissions(principal)
    for req in requests:
        if req.method == "tools/call":
            try:
                callable_tool(req.params.get("name"), scoped, catalog)
            except McpError:
                continue
