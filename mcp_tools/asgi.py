"""``from mcp_tools.asgi import McpFront``: the ASGI front (it lives in ``mcp_tools.transport.front``)."""

from .transport.front import McpFront

__all__ = ["McpFront"]
