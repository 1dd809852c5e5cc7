"""``from mcp_tools.wsgi import McpWsgiFront``: the WSGI front (it lives in ``mcp_tools.transport.wsgi``)."""

from .transport.wsgi import McpWsgiFront

__all__ = ["McpWsgiFront"]
