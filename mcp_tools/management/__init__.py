"""The app's management commands (``commands/``: ``mcp_explain``, ``mcp_export``, ``mcp_import``,
``mcp_ready``, ``mcp_token``, the ``mcp_purge_*`` commands, ``mcp_search_index``, ``mcp_streams``)."""

__all__: list[str] = []
