"""django-mcp-tools: serve MCP tools stored in the database from a Django site.

The public API is what a handler author needs: ``@handler``, ``ToolContext``, ``ToolResult``,
``ToolError``, the content helpers, ``handle_type`` and the answers of ``ctx.elicit`` and
``ctx.sample``. Nothing here touches Django models at import time.
"""

from __future__ import annotations

__version__ = "0.2.0"

from .exceptions import InputUnavailable, ToolCancelled, ToolError
from .handles.kinds import handle_type
from .registry import handler
from .types import (
    Elicited,
    Handle,
    HandleType,
    Sampled,
    ToolContext,
    ToolResult,
    audio,
    embedded_resource,
    image,
    resource_link,
    text,
)

__all__ = [
    "Elicited",
    "Handle",
    "HandleType",
    "InputUnavailable",
    "Sampled",
    "ToolCancelled",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "audio",
    "embedded_resource",
    "handle_type",
    "handler",
    "image",
    "resource_link",
    "text",
]
