"""WSGI entry of bench/lean_settings.py: project/wsgi.py without importing ``project`` (its Celery app)."""

import gc
import os
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.lean_settings")
application: Any = get_wsgi_application()

from mcp_tools.wsgi import McpWsgiFront  # noqa: E402

application = McpWsgiFront(application)
application.warm()
gc.freeze()
