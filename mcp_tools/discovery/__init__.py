"""Progressive discovery: a small entry set in ``tools/list``, the rest of a grant's catalog
found by search and called by name (``DISCOVERY``; docs/howto/discovery.md).

The services ask three things of it: the subset ``tools/list`` shows a principal (``entry``:
None when the mode is off for it), the discovery tool a ``tools/call`` names (``builtin``), and
that tool's answer (``answer``). It never widens what a grant may use: the entry set is a part of
the principal's view, a search filters by the grant in its query and checks each tool found
against the catalog, and every tool found is called through the ordinary ``tools/call``.
"""

from __future__ import annotations

from ..catalog import Catalog, CompiledTool, Subset, VisibilityCheck
from ..types import Principal
from .index import ensure, sync
from .mode import active, mode_of
from .searching import Found, search, usable
from .tools import BUILTINS, DESCRIBE_NAME, NAMES, SEARCH_NAME, answer, hit, is_builtin

__all__ = [
    "BUILTINS",
    "DESCRIBE_NAME",
    "ENTRY",
    "NAMES",
    "SEARCH_NAME",
    "Found",
    "active",
    "answer",
    "builtin",
    "ensure",
    "entry",
    "entry_set",
    "hit",
    "is_builtin",
    "mode_of",
    "search",
    "sync",
    "usable",
]


def _in_entry_set(tool: CompiledTool) -> bool:
    # Besides the tools an admin marked: app-only tools stay listed for clients with MCP Apps (a
    # host calls them for its views; the view of a client without the extension leaves them out
    # already), and so do tools with parameter headers (x-mcp-header): a 2026-07-28 client must
    # mirror those arguments in Mcp-Param-* headers (H-D7), which it learns from tools/list.
    listed = tool.always_listed or not tool.model_visible or bool(tool.param_headers)
    return listed and tool.name not in BUILTINS


ENTRY = Subset("discovery", _in_entry_set, tuple(BUILTINS.values()))


def entry(catalog: Catalog, principal: Principal, visible: VisibilityCheck) -> Subset | None:
    """What ``tools/list`` shows ``principal`` in discovery mode (None: the mode is off for it)."""
    return ENTRY if active(catalog, principal, visible) else None


def builtin(name: str, catalog: Catalog, principal: Principal, visible: VisibilityCheck) -> CompiledTool | None:
    """The discovery tool called ``name``, when the mode is on for ``principal``; else None."""
    tool = BUILTINS.get(name)
    if tool is None or not active(catalog, principal, visible):
        return None
    return tool


def entry_set(catalog: Catalog, principal: Principal, visible: VisibilityCheck) -> list[CompiledTool]:
    """The catalog's tools in ``principal``'s entry set (the admin's preview), by name."""
    return [tool for tool in catalog.tools if _in_entry_set(tool) and usable(tool, principal, visible)]
