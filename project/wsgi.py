"""WSGI entry point (gunicorn project.wsgi:application); SSE streams need the ASGI one.

JSON POSTs to the MCP endpoint are answered by mcp_tools' WSGI front (in the worker's thread,
no event loop); MCP_WSGI_FRONT=0 serves the endpoint through Django's handler like any view.
"""

import gc
import os
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application: Any = get_wsgi_application()

if os.environ.get("MCP_WSGI_FRONT", "1") != "0":
    from mcp_tools.wsgi import McpWsgiFront

    application = McpWsgiFront(application)
    # The URLconf, the template engines and the catalog built now, and the C heap's free chunks
    # taken at the first fork: under gunicorn --preload, once for all workers (see deploy.md).
    application.warm()

# What start-up allocated lives as long as the process: out of the collector's way.
gc.freeze()
