"""django-oauth-toolkit as the authorization server of the same site, configured for MCP clients.

Needs ``oauth2_provider`` in INSTALLED_APPS (``pip install django-mcp-tools[oauth]``); the
rest of ``mcp_tools`` does not import this package.
"""

__all__: list[str] = []
