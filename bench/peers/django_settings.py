"""Django settings shared by the Django peers (django-mcpz, django-mcp-server) under gunicorn.

BENCH_MIDDLEWARE_JSON is the middleware list (bench/peers.py passes the stack every Django
server of the run gets); BENCH_PEER_DB the SQLite file (nothing is read or written per request).
"""

from __future__ import annotations

import json
import os

DEBUG = False
SECRET_KEY = "bench-only-secret-key-0123456789-0123456789-0123456789"  # noqa: S105
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
MIDDLEWARE = json.loads(os.environ.get("BENCH_MIDDLEWARE_JSON", "[]"))
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ.get("BENCH_PEER_DB", ":memory:")}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
LOGGING = {"version": 1, "disable_existing_loggers": False}
