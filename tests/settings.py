"""Test settings: the demo project, on SQLite (default) or PostgreSQL (MCP_TEST_DB=postgres)."""

import os

os.environ.setdefault("MCP_DATABASE", os.environ.get("MCP_TEST_DB", "sqlite"))

from project.settings import *  # noqa: F403

# A test app for contrib.drf: a model with every standard field type, and its toolsets.
INSTALLED_APPS = [*INSTALLED_APPS, "tests.drfapp"]  # noqa: F405
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    DATABASES["default"] = {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}  # noqa: F405
else:
    DATABASES["default"]["TEST"] = {"NAME": os.environ.get("MCP_TEST_DB_NAME", "test_mcp_tools")}  # noqa: F405
LOGGING = {"version": 1, "disable_existing_loggers": False}
# The ORM work of the view must share the test transaction of Django's test client.
MCP_TOOLS = {**MCP_TOOLS, "THREAD_SENSITIVE": True}  # noqa: F405
# The Django test client talks to http://testserver.
MCP_TOOLS["RESOURCE_URL"] = "http://testserver/mcp"
# In-process tests read audit rows right after a call, inside their transaction: each row is
# written in its call. Batched writing is tested against real servers (tests/e2e/test_audit_flush.py).
MCP_TOOLS["AUDIT_FLUSH_ROWS"] = 1
OAUTH2_PROVIDER = {**OAUTH2_PROVIDER, "OIDC_ISS_ENDPOINT": "http://testserver"}  # noqa: F405
# Task-augmented calls run in-process (eager) unless a test starts a real worker.
CELERY_TASK_ALWAYS_EAGER = True
CELERY_BROKER_URL = "memory://"
# Results of tasks a celery.task tool waits for (mcp_tools.contrib.celery), kept in memory.
CELERY_RESULT_BACKEND = "cache+memory://"
