"""The demo site that hosts mcp_tools."""
