"""django-mcp-tools: serve MCP tools stored in the database from a Django site.

The public API is what a handler author needs: ``@handler``, ``ToolContext``, ``ToolResult``,
``ToolError`` and the content helpers. Nothing here touches Django models at import time.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .exceptions import ToolCancelled, ToolError
from .registry import handler
from .types import ToolContext, ToolResult, audio, embedded_resource, image, resource_link, text

__all__ = [
    "ToolCancelled",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "audio",
    "embedded_resource",
    "handler",
    "image",
    "resource_link",
    "text",
]
