"""The one settings dict, ``MCP_TOOLS = {...}``, read through ``mcp_settings``."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

DEFAULTS: dict[str, Any] = {
    # What the server calls itself in InitializeResult / server/discover.
    "SERVER_NAME": "django-mcp-tools",
    "SERVER_TITLE": "",
    "SERVER_VERSION": None,  # None: the installed package version
    "INSTRUCTIONS": "",
    # tools/list page size (PA-1) and the 2026-07-28 caching hints (T-7).
    "PAGE_SIZE": 50,
    "LIST_TTL_MS": 60_000,
    "DISCOVER_TTL_MS": 3_600_000,
    # HTTP limits and browser rules.
    "MAX_BODY_BYTES": 1_048_576,
    "ALLOWED_ORIGINS": [],
    "CORS_MAX_AGE": 600,
    # Authentication backend (dotted path to a subclass of mcp_tools.auth.BaseAuthBackend).
    "AUTH_BACKEND": "mcp_tools.auth.AllowAnyBackend",
    # Legacy (initialize) sessions, stored in the database.
    "SESSION_IDLE_SECONDS": 24 * 3600,
    "SESSION_TOUCH_SECONDS": 300,
    # SSE streams: keep-alive comments, the longest a GET stream stays open, reconnect hint.
    "SSE_KEEPALIVE_SECONDS": 15,
    "SSE_MAX_SECONDS": 300,
    "SSE_RETRY_MS": 3000,
    # Module autodiscovered in every installed app for @handler registrations.
    "HANDLER_MODULE": "mcp_handlers",
    # Check structuredContent against the tool's outputSchema before sending it (T-11).
    "VALIDATE_OUTPUT": True,
    # Signing key for cursors; None derives one from SECRET_KEY.
    "CURSOR_KEY": None,
    # How often a running tool looks for a cross-process cancellation flag (seconds).
    "CANCEL_POLL_SECONDS": 0.25,
    # Run ORM work in Django's per-request thread (True) or a shared thread pool (False).
    "THREAD_SENSITIVE": False,
    # Threads of that pool: at most this many synchronous handlers run at once per process.
    "THREAD_POOL_SIZE": min(32, (os.cpu_count() or 1) + 4),
    # list_changed fan-out across processes: "auto" (PostgreSQL LISTEN/NOTIFY on PostgreSQL,
    # else database polling), "postgres", "redis", "polling", "none", or a dotted path to a
    # subclass of mcp_tools.notify.backends.BaseNotifier.
    "NOTIFIER": "auto",
    "NOTIFIER_REDIS_URL": None,  # needed by the "redis" notifier
    "NOTIFIER_CHANNEL": "mcp_tools_catalog",
    # Changes within this window reach each listener as one notification.
    "NOTIFY_DEBOUNCE_SECONDS": 0.1,
    # The polling notifier reads the catalog version this often; push notifiers re-check it
    # this often too (NOTIFY_CATCHUP_SECONDS) so a message lost with a connection is caught up.
    "NOTIFY_POLL_SECONDS": 1.0,
    "NOTIFY_CATCHUP_SECONDS": 15.0,
    # Open notification streams (GET and subscriptions/listen) per principal; 0: no bound.
    "MAX_STREAMS_PER_PRINCIPAL": 32,
    # OAuth resource server. RESOURCE_URL is the canonical URL of the endpoint (no trailing
    # slash): the PRM "resource", the audience tokens must be bound to, the challenges' base.
    "RESOURCE_URL": None,
    # PRM authorization_servers; empty: the origin of RESOURCE_URL (DOT on the same site).
    "AUTHORIZATION_SERVERS": [],
    "RESOURCE_NAME": "",
    # Scopes named in 401 challenges and PRM scopes_supported: "all" (every active scope a
    # tool requires) or "progressive" (only scopes marked advertised; the rest by step-up).
    "SCOPE_ADVERTISING": "all",
    # Accept client-credentials tokens (no user); their principal key is client:<client_id>.
    "ALLOW_CLIENT_CREDENTIALS": False,
    # External authorization server (mcp_tools.auth.JWTBackend): issuer, jwks_uri, audiences
    # (default [RESOURCE_URL]), algorithms, scope_claim, user_claim, leeway, jwks_cache_seconds.
    "JWT": {},
    # Rate limits through Django's cache: "<count>/<s|m|h|d>" per principal and tool; a tool
    # row may override it; None or "" turns the site default off.
    "RATE_LIMIT": "120/m",
    # Dynamic client registrations per client IP ("<count>/<period>").
    "REGISTRATION_RATE_LIMIT": "20/h",
    # Redirect URI schemes DCR accepts besides https and loopback http (e.g. ["cursor", "vscode"]).
    "PRIVATE_REDIRECT_SCHEMES": [],
    # Audit trail: one AuditEvent per tools/call; argument names always redacted; retention.
    "AUDIT_ENABLED": True,
    "AUDIT_REDACT_NAMES": ["password", "secret", "token", "api_key", "apikey", "authorization"],
    "AUDIT_RETENTION_DAYS": 90,
    # Long-running tools as tasks run by Celery (2025-11-25 core tasks, 2026-07-28 extension).
    # False: tools/list advertises no task support and task-augmented calls run inline.
    "TASKS_ENABLED": True,
    # Task lifetime from creation (ms): used when the client asks for none, and the cap.
    "TASK_TTL_DEFAULT_MS": 3_600_000,
    "TASK_TTL_MAX_MS": 86_400_000,
    # Suggested client polling interval (ms), and how long tasks/result blocks at most (s).
    "TASK_POLL_INTERVAL_MS": 1000,
    "TASK_RESULT_WAIT_SECONDS": 300,
    # Largest serialised task result (bytes); larger results fail the task with a clear error.
    "TASK_RESULT_MAX_BYTES": 1_048_576,
    # A worker that died mid-task: "retry" runs it again (up to TASK_MAX_ATTEMPTS), "fail" ends it failed.
    "TASK_WORKER_LOST": "retry",
    "TASK_MAX_ATTEMPTS": 3,
    # Celery queue for task messages (None: the Celery app's default queue).
    "TASK_QUEUE": None,
    # Rows purged per batch by mcp_purge_tasks and the mcp_tools.purge_expired_tasks beat task.
    "TASK_PURGE_BATCH": 1000,
}

IMPORT_STRINGS = ("AUTH_BACKEND",)


class McpSettings:
    """Attribute access to MCP_TOOLS with defaults; unknown keys are a configuration error."""

    def __init__(self) -> None:
        self._cache: dict[str, Any] = {}
        self._user: dict[str, Any] | None = None

    @property
    def user_settings(self) -> dict[str, Any]:
        if self._user is None:
            value = getattr(settings, "MCP_TOOLS", {})
            if not isinstance(value, dict):
                raise ImproperlyConfigured("MCP_TOOLS must be a dict")
            unknown = sorted(set(value) - set(DEFAULTS))
            if unknown:
                raise ImproperlyConfigured(
                    f"Unknown MCP_TOOLS setting(s): {', '.join(unknown)}. "
                    f"Known settings: {', '.join(sorted(DEFAULTS))}."
                )
            self._user = value
        return self._user

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in DEFAULTS:
            raise AttributeError(f"Invalid MCP_TOOLS setting: {name!r}")
        if name in self._cache:
            return self._cache[name]
        value = self.user_settings.get(name, DEFAULTS[name])
        if name in IMPORT_STRINGS and isinstance(value, str):
            try:
                value = import_string(value)
            except ImportError as exc:
                raise ImproperlyConfigured(f"MCP_TOOLS[{name!r}]: cannot import {value!r}: {exc}") from exc
        self._cache[name] = value
        return value

    def reload(self) -> None:
        self._cache.clear()
        self._user = None


mcp_settings = McpSettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting in ("MCP_TOOLS", "SECRET_KEY"):
        mcp_settings.reload()
        from .auth.base import _instantiate

        _instantiate.cache_clear()  # backends read their settings when created


setting_changed.connect(_reload)
