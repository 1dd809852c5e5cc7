"""django-mcp-server peer: its app and DRF installed, stateless, no extra instructions tool."""

from __future__ import annotations

from django_settings import *  # noqa: F403
from django_settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "rest_framework", "mcp_server", "benchtools"]
ROOT_URLCONF = "peer_urls"
# Stateless: its stateful mode keeps sessions in Django's session store, a row per request.
DJANGO_MCP_GLOBAL_SERVER_CONFIG = {"name": "bench", "stateless": True}
DJANGO_MCP_GET_SERVER_INSTRUCTIONS_TOOL = False  # the catalog is echo + 100, like every server's
REST_FRAMEWORK = {"DEFAULT_AUTHENTICATION_CLASSES": [], "DEFAULT_PERMISSION_CLASSES": []}
