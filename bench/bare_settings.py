"""Settings of the bare comparison site: one async view, no database.

BENCH_MIDDLEWARE picks the stack: "default" is the demo site's list (project/settings.py),
"empty" is no middleware at all. The apps those middleware need are installed either way.
"""

from __future__ import annotations

import os

from bench.stacks import middleware_for

DEBUG = False
SECRET_KEY = "bench-only-secret-key-0123456789-0123456789-0123456789"  # noqa: S105
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
]
MIDDLEWARE = middleware_for(os.environ.get("BENCH_MIDDLEWARE", "default"))
ROOT_URLCONF = "bench.bare_urls"
DATABASES: dict[str, dict[str, str]] = {}
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
LOGGING = {"version": 1, "disable_existing_loggers": False}
