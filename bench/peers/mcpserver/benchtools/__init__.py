"""The benchmark catalog as a django-mcp-server toolset (found in ``mcp.py`` by the app)."""
