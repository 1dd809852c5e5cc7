"""ASGI entry point (uvicorn project.asgi:application).

The MCP endpoint is answered by mcp_tools' ASGI front (no middleware or request signals on
that path); every other URL goes through Django as usual. MCP_ASGI_FRONT=0 serves the endpoint
through Django's handler like any other view (the benchmark compares both).
"""

import gc
import os
from typing import Any

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application: Any = get_asgi_application()

if settings.DEBUG:
    # The demo serves the admin's CSS and JS itself; production puts a web server or
    # WhiteNoise in front instead.
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    application = ASGIStaticFilesHandler(application)

if os.environ.get("MCP_ASGI_FRONT", "1") != "0":
    from mcp_tools.asgi import McpFront

    application = McpFront(application)
    application.warm()  # the URLconf and the catalog at start-up, not on the first request

# What start-up allocated lives as long as the process: out of the collector's way.
gc.freeze()
