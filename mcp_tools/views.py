"""``mcp_tools.views.endpoint``: the MCP endpoint view (it lives in ``mcp_tools.transport.views``)."""

from .transport.views import endpoint

__all__ = ["endpoint"]
