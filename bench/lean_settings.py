"""A site that serves only the MCP endpoint, as the Django peers' sites do (bench/peers.py ``ours-lean``).

The demo (``project.settings``) is a whole site: the admin, OAuth (DOT), the demo's DRF API, the
library models and, in ``project/__init__.py``, its Celery app. A web worker pays for what its site
installs, so the like-with-like row beside django-mcpz (four contrib apps, one URL) is ``mcp_tools``
in the same four apps: the same database, tools, page size, audit and rate limit as the demo, the
``demo.echo`` handler registered by ``bench/lean/mcp_handlers.py``; nothing imported from ``project``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

DEBUG = False
SECRET_KEY = "bench-only-secret-key-0123456789-0123456789-0123456789"  # noqa: S105
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "mcp_tools",
    "bench.lean",  # bench/lean/mcp_handlers.py: demo.echo, the handler the seeded tools name
]
MIDDLEWARE = json.loads(os.environ.get("BENCH_MIDDLEWARE_JSON", "[]"))  # bench/stacks.py imports project
ROOT_URLCONF = "bench.lean_urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("MCP_SQLITE_PATH", str(Path(os.environ.get("MCP_VAR_DIR", "var")) / "db.sqlite3")),
        "CONN_MAX_AGE": 60,
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
LOGGING = {"version": 1, "disable_existing_loggers": False}
MCP_TOOLS = {
    "SERVER_NAME": "django-mcp-tools-demo",  # the demo's: the same bytes as ours-wsgi answers
    "SERVER_TITLE": "django-mcp-tools demo",
    "INSTRUCTIONS": "Demo tools served from database rows managed in Django admin.",
    "PAGE_SIZE": int(os.environ.get("MCP_PAGE_SIZE", "50")),
    "RESOURCE_URL": "http://127.0.0.1:8000/mcp",
    "AUTH_BACKEND": "mcp_tools.auth.AllowAnyBackend",
    "RATE_LIMIT": os.environ.get("MCP_RATE_LIMIT", "120/m"),
}
