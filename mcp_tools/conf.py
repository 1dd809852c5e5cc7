"""The one settings dict, ``MCP_TOOLS = {...}``, read through the typed ``mcp_settings``.

Each key has a default, a type and a check (``SETTINGS``). A value is checked when it is first
read, and every key is checked at startup by the system check ``mcp_tools.E001``. Unknown keys
are a configuration error. Whatever is derived from settings and cached (the auth backend, the
server identity, the cursor key) registers with :func:`reset_on_change` and is cleared, with
the values, on ``setting_changed`` for ``MCP_TOOLS`` or ``SECRET_KEY``.

This module imports nothing else of the app: every layer may read settings.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

__all__ = ["SETTINGS", "mcp_settings", "reset_on_change"]

SettingCheck = Callable[[Any], str | None]


def _int(minimum: int) -> SettingCheck:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, not {type(value).__name__}"
        return None if value >= minimum else f"must be at least {minimum}"

    return check


def _number(minimum: float, *, above: bool = False) -> SettingCheck:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, not {type(value).__name__}"
        if above and value <= minimum:
            return f"must be above {minimum:g}"
        return None if value >= minimum else f"must be at least {minimum:g}"

    return check


def _str(*, optional: bool = False, nonempty: bool = False) -> SettingCheck:
    def check(value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            return f"must be a string{' or None' if optional else ''}, not {type(value).__name__}"
        return "must not be empty" if nonempty and not value else None

    return check


def _bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"must be True or False, not {type(value).__name__}"


def _strings(value: Any) -> str | None:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        return "must be a list of strings"
    return None


def _folders(value: Any) -> str | None:
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        return "must be a list of strings"
    wrong = [item for item in value if not item.endswith("/") or item.startswith("/") or ".." in item.split("/")]
    return f"each must be a relative folder ending with '/', not {wrong[0]!r}" if wrong else None


def _mapping(value: Any) -> str | None:
    return None if isinstance(value, dict) else f"must be a dict, not {type(value).__name__}"


def _choice(*choices: str) -> SettingCheck:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(map(repr, choices))}, not {value!r}"

    return check


DISCOVERY_MODES = ("off", "on", "auto")


def _discovery_clients(value: Any) -> str | None:
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):
        return "must be a dict of OAuth client ids to 'off', 'on' or 'auto'"
    wrong = sorted(key for key, mode in value.items() if mode not in DISCOVERY_MODES)
    return f"gives an unknown mode for {', '.join(map(repr, wrong[:5]))} (use 'off', 'on' or 'auto')" if wrong else None


def _rate(value: Any) -> str | None:
    # The format itself is checked by mcp_tools.ratelimit (system check E001).
    return None if value is None or isinstance(value, str) else "must be a rate string such as '120/m', or None"


def _import(value: Any) -> str | None:
    return None if isinstance(value, str | type) else "must be a dotted path to a class"


@dataclass(frozen=True, slots=True)
class Setting:
    default: Any
    check: SettingCheck
    help: str


SETTINGS: dict[str, Setting] = {
    # What the server calls itself in InitializeResult / server/discover.
    "SERVER_NAME": Setting("django-mcp-tools", _str(nonempty=True), "serverInfo.name"),
    "SERVER_TITLE": Setting("", _str(), "serverInfo.title"),
    "SERVER_VERSION": Setting(None, _str(optional=True), "serverInfo.version; None: the package version"),
    "INSTRUCTIONS": Setting("", _str(), "instructions in initialize / discover"),
    # tools/list page size (PA-1) and the 2026-07-28 caching hints (T-7).
    "PAGE_SIZE": Setting(50, _int(1), "tools per tools/list page"),
    # Serialised tools/list pages kept per process (least recently used evicted past this).
    "PAGE_CACHE_BYTES": Setting(32 * 1024 * 1024, _int(0), "bytes of serialised pages cached per process"),
    "LIST_TTL_MS": Setting(60_000, _int(0), "2026-07-28 tools/list ttlMs"),
    "DISCOVER_TTL_MS": Setting(3_600_000, _int(0), "2026-07-28 server/discover ttlMs"),
    # HTTP limits and browser rules.
    "MAX_BODY_BYTES": Setting(1_048_576, _int(1), "larger POST bodies get 413"),
    # The ASGI front reads a POST's whole body within this time, else answers 408: a body that
    # trickles in (a byte now and then) holds no connection and no memory for long.
    "BODY_TIMEOUT_SECONDS": Setting(30, _number(0, above=True), "longest the ASGI front waits for a body"),
    # JSON answers the ASGI front sends on one HTTP/1.1 connection before it asks the client to
    # reconnect (Connection: close), so that keep-alive connections spread again over the
    # server's processes: uvicorn's workers share one listening socket, and the first to wake
    # accepts a whole burst of connections. 0: connections are never closed by the front.
    "KEEPALIVE_REQUESTS": Setting(100, _int(0), "JSON answers per connection (ASGI front)"),
    # A JSON-RPC batch (2025-03-26) of more messages is refused whole (-32600), nothing run.
    "MAX_BATCH_ITEMS": Setting(32, _int(1), "messages in one JSON-RPC batch"),
    # The largest answer to one POST: a tool result over it becomes an isError result; a batch
    # stops running its items once its answers would pass it. Keep it above the largest page.
    "MAX_RESPONSE_BYTES": Setting(4 * 1_048_576, _int(262_144), "bytes of one answer"),
    "ALLOWED_ORIGINS": Setting([], _strings, "extra browser origins"),
    "CORS_MAX_AGE": Setting(600, _int(0), "preflight cache seconds"),
    # Authentication backend (dotted path to a subclass of mcp_tools.auth.BaseAuthBackend).
    "AUTH_BACKEND": Setting("mcp_tools.auth.AllowAnyBackend", _import, "authentication backend class"),
    # Legacy (initialize) sessions, stored in the database.
    "SESSION_IDLE_SECONDS": Setting(24 * 3600, _int(1), "session idle expiry"),
    "SESSION_TOUCH_SECONDS": Setting(300, _int(0), "how often activity extends a session"),
    # SSE streams: keep-alive comments, the longest a GET stream stays open, reconnect hint.
    "SSE_KEEPALIVE_SECONDS": Setting(15, _number(0, above=True), "keep-alive comment interval"),
    "SSE_MAX_SECONDS": Setting(300, _number(0, above=True), "longest a notification stream stays open"),
    "SSE_RETRY_MS": Setting(3000, _int(0), "SSE reconnect hint"),
    # Module autodiscovered in every installed app for @handler registrations.
    "HANDLER_MODULE": Setting("mcp_handlers", _str(nonempty=True), "module autodiscovered for handlers"),
    # Check structuredContent against the tool's outputSchema before sending it (T-11).
    "VALIDATE_OUTPUT": Setting(True, _bool, "check structuredContent against outputSchema"),
    # Signing key for cursors; None derives one from SECRET_KEY.
    "CURSOR_KEY": Setting(None, _str(optional=True, nonempty=True), "cursor signing key"),
    # How often a running tool looks for a cross-process cancellation flag (seconds).
    "CANCEL_POLL_SECONDS": Setting(0.25, _number(0), "cancellation poll interval"),
    # Handles (ctx.handles): largest state of one handle, rows per purge batch.
    "HANDLE_STATE_MAX_BYTES": Setting(262_144, _int(1), "largest JSON state of one handle"),
    "HANDLE_PURGE_BATCH": Setting(1000, _int(1), "rows per handle purge batch"),
    # Asking for input (ctx.elicit, ctx.sample): how long a legacy call waits for the client's
    # answer on its stream, and how long a 2026-07-28 requestState stays valid.
    "INPUT_TIMEOUT_SECONDS": Setting(300, _number(0, above=True), "longest wait for a legacy answer"),
    "REQUEST_STATE_TTL_SECONDS": Setting(900, _int(1), "lifetime of a 2026-07-28 requestState"),
    # Approval-gated tools: how long a call waits for a person's decision when its tool sets no
    # timeout of its own (a plain call holds its request that long; a task stays held).
    "APPROVAL_TIMEOUT": Setting(300, _int(1), "longest wait for an approval (seconds)"),
    # Run ORM work in Django's per-request thread (True) or a shared thread pool (False).
    "THREAD_SENSITIVE": Setting(False, _bool, "use Django's per-request thread"),
    # Threads of that pool: the protocol's own ORM work (auth, tools/list, sessions, streams).
    "THREAD_POOL_SIZE": Setting(min(32, (os.cpu_count() or 1) + 4), _int(1), "threads of the protocol pool"),
    # Threads that run tool calls: at most this many handlers run at once per process; slow
    # handlers queue here and never hold up the protocol pool.
    "HANDLER_POOL_SIZE": Setting(min(32, (os.cpu_count() or 1) + 4), _int(1), "threads that run tool calls"),
    # Under ASGI, where every store is in the process (SQLite, the local-memory cache), serve
    # tools/list and calls of inline tool kinds on the event loop's thread (no hand-over).
    "SERVE_ON_LOOP": Setting(True, _bool, "serve in-process requests on the event loop's thread"),
    # Tool calls of one principal running at once across all processes (cache counter); 0: no
    # bound. A call over it is an isError result asking to retry (with retryAfterSeconds).
    "MAX_CALLS_PER_PRINCIPAL": Setting(0, _int(0), "concurrent tool calls per principal"),
    # list_changed fan-out across processes: "auto" (PostgreSQL LISTEN/NOTIFY on PostgreSQL,
    # else database polling), "postgres", "redis", "polling", "none", or a dotted path to a
    # subclass of mcp_tools.notify.backends.BaseNotifier.
    "NOTIFIER": Setting("auto", _str(nonempty=True), "list_changed fan-out backend"),
    "NOTIFIER_REDIS_URL": Setting(None, _str(optional=True), "Redis URL of the redis notifier"),
    "NOTIFIER_CHANNEL": Setting("mcp_tools_catalog", _str(nonempty=True), "channel of the push notifiers"),
    # Changes within this window reach each listener as one notification.
    "NOTIFY_DEBOUNCE_SECONDS": Setting(0.1, _number(0), "list_changed debounce window"),
    # The polling notifier reads the catalog version this often; push notifiers re-check it
    # this often too (NOTIFY_CATCHUP_SECONDS) so a message lost with a connection is caught up.
    "NOTIFY_POLL_SECONDS": Setting(1.0, _number(0, above=True), "polling interval"),
    "NOTIFY_CATCHUP_SECONDS": Setting(15.0, _number(0, above=True), "push notifiers' re-check interval"),
    # Long-lived streams per principal (the GET stream, subscriptions/listen, a tasks/result
    # waiting for its task), counted in the cache; 0: no bound.
    "MAX_STREAMS_PER_PRINCIPAL": Setting(32, _int(0), "open streams and waits per principal"),
    # OAuth resource server. RESOURCE_URL is the canonical URL of the endpoint (no trailing
    # slash): the PRM "resource", the audience tokens must be bound to, the challenges' base.
    "RESOURCE_URL": Setting(None, _str(optional=True), "canonical URL of the endpoint"),
    # PRM authorization_servers; empty: the origin of RESOURCE_URL (DOT on the same site).
    "AUTHORIZATION_SERVERS": Setting([], _strings, "PRM authorization_servers"),
    "RESOURCE_NAME": Setting("", _str(), "PRM resource_name"),
    # Scopes named in 401 challenges and PRM scopes_supported: "all" (every active scope a
    # tool requires) or "progressive" (only scopes marked advertised; the rest by step-up).
    "SCOPE_ADVERTISING": Setting("all", _choice("all", "progressive"), "scopes in challenges"),
    # Accept client-credentials tokens (no user); their principal key is client:<client_id>.
    "ALLOW_CLIENT_CREDENTIALS": Setting(False, _bool, "accept tokens without a user"),
    # External authorization server (mcp_tools.auth.JWTBackend): issuer, jwks_uri, audiences
    # (default [RESOURCE_URL]), algorithms, scope_claim, user_claim, leeway, jwks_cache_seconds.
    "JWT": Setting({}, _mapping, "JWTBackend settings"),
    # Rate limits through Django's cache: "<count>/<s|m|h|d>" per principal and tool; a tool
    # row may override it; None or "" turns the site default off.
    "RATE_LIMIT": Setting("120/m", _rate, "tool calls per principal and tool"),
    # Calls of one (principal, tool) a process counts by itself before it adds them to the shared
    # counter in one round trip (Redis cache only). 1: every call is counted in the cache at
    # once (a limit is exact); N: a limit may be passed by up to N - 1 calls per process serving
    # that principal in a window (docs: explanation/capacity).
    "RATE_LIMIT_BATCH": Setting(1, _int(1), "calls counted locally per shared counter update"),
    # What a request may reuse instead of asking PostgreSQL (docs: explanation/capacity). 0: the
    # catalog version is read on every request, so a change is seen everywhere from the next
    # request. N: a process reuses the version it read for up to N seconds; a change published
    # by a push notifier (postgres, redis) makes every process read it again at once.
    "CATALOG_VERSION_MAX_AGE": Setting(0.0, _number(0), "seconds a process reuses the catalog version"),
    # 0: an access token is looked up on every request (DOTBackend), so a revoked token is
    # refused everywhere from the next request. N: a valid token's row is reused for up to N
    # seconds; its revocation (or its user made inactive) published by a push notifier drops
    # it in every process at once. TOKEN_CACHE_SIZE bounds the rows a process keeps.
    "TOKEN_CACHE_SECONDS": Setting(0.0, _number(0), "seconds a process reuses a token's row"),
    "TOKEN_CACHE_SIZE": Setting(10_000, _int(1), "token rows a process keeps at most"),
    # Dynamic client registrations per client IP ("<count>/<period>").
    "REGISTRATION_RATE_LIMIT": Setting("20/h", _rate, "dynamic client registrations per IP"),
    # Redirect URI schemes DCR accepts besides https and loopback http (e.g. ["cursor", "vscode"]).
    "PRIVATE_REDIRECT_SCHEMES": Setting([], _strings, "extra redirect URI schemes for DCR"),
    # Audit trail: one AuditEvent per tools/call; argument names always redacted; retention.
    "AUDIT_ENABLED": Setting(True, _bool, "write the audit trail"),
    "AUDIT_REDACT_NAMES": Setting(
        ["password", "secret", "token", "api_key", "apikey", "authorization"], _strings, "argument names redacted"
    ),
    "AUDIT_RETENTION_DAYS": Setting(90, _int(1), "audit rows older than this are purged"),
    # Audit rows are buffered per process and written with one multi-row INSERT when
    # AUDIT_FLUSH_ROWS are waiting or AUDIT_FLUSH_SECONDS after the first of them, and on a
    # clean shutdown; a crash loses at most the buffer. AUDIT_FLUSH_ROWS = 1 (or
    # AUDIT_FLUSH_SECONDS = 0) writes each row at once, in the call, as before.
    "AUDIT_FLUSH_ROWS": Setting(100, _int(1), "audit rows written per batch"),
    "AUDIT_FLUSH_SECONDS": Setting(1.0, _number(0), "longest an audit row waits in the buffer"),
    # Long-running tools as tasks run by Celery (2025-11-25 core tasks, 2026-07-28 extension).
    # False: tools/list advertises no task support and task-augmented calls run inline.
    "TASKS_ENABLED": Setting(True, _bool, "serve tasks"),
    # Task lifetime from creation (ms): used when the client asks for none, and the cap.
    "TASK_TTL_DEFAULT_MS": Setting(3_600_000, _int(1000), "task lifetime when none is asked"),
    "TASK_TTL_MAX_MS": Setting(86_400_000, _int(1000), "longest task lifetime"),
    # Suggested client polling interval (ms), and how long tasks/result blocks at most (s).
    "TASK_POLL_INTERVAL_MS": Setting(1000, _int(0), "pollInterval suggested to clients"),
    "TASK_RESULT_WAIT_SECONDS": Setting(300, _number(0), "longest a tasks/result blocks"),
    # Largest serialised task result (bytes); larger results fail the task with a clear error.
    "TASK_RESULT_MAX_BYTES": Setting(1_048_576, _int(1), "largest task result"),
    # A worker that died mid-task: "retry" runs it again (up to TASK_MAX_ATTEMPTS), "fail" ends it failed.
    "TASK_WORKER_LOST": Setting("retry", _choice("retry", "fail"), "what an interrupted task does"),
    "TASK_MAX_ATTEMPTS": Setting(3, _int(1), "runs of one task at most"),
    # A running task's worker writes a heartbeat this often; a working task whose heartbeat is
    # older than TASK_LOST_AFTER_SECONDS lost its worker, whatever the broker: the sweep (beat
    # task mcp_tools.sweep_lost_tasks, and tasks/get on read) applies TASK_WORKER_LOST to it.
    "TASK_HEARTBEAT_SECONDS": Setting(5.0, _number(0, above=True), "task heartbeat interval"),
    "TASK_LOST_AFTER_SECONDS": Setting(30.0, _number(0, above=True), "heartbeat age of a lost task"),
    # Celery queue for task messages (None: the Celery app's default queue).
    "TASK_QUEUE": Setting(None, _str(optional=True), "Celery queue of task messages"),
    # Rows purged per batch by mcp_purge_tasks and the mcp_tools.purge_expired_tasks beat task.
    "TASK_PURGE_BATCH": Setting(1000, _int(1), "rows per purge batch"),
    # MCP Apps: the template folders a tool's "UI template path" may name (templates shipped in
    # code, rendered on the server); stored views are never rendered.
    "UI_TEMPLATE_PREFIXES": Setting(["mcp_ui/", "mcp_tools/drf/ui/"], _folders, "template folders of views"),
    # Progressive discovery (docs/howto/discovery.md): "on" lists only the tools marked "always
    # listed" and the discovery tools (search_tools, describe_tools); the rest of what a grant
    # may use is found by search and called by name. "auto": on for a grant that may use more
    # than DISCOVERY_THRESHOLD tools. DISCOVERY_CLIENTS overrides the mode per OAuth client id.
    "DISCOVERY": Setting("off", _choice(*DISCOVERY_MODES), "progressive discovery: off, on or auto"),
    "DISCOVERY_THRESHOLD": Setting(40, _int(0), "tools a grant may use before auto turns discovery on"),
    "DISCOVERY_CLIENTS": Setting({}, _discovery_clients, "discovery mode per OAuth client id"),
}

DEFAULTS: dict[str, Any] = {name: setting.default for name, setting in SETTINGS.items()}
IMPORT_STRINGS = ("AUTH_BACKEND",)


class McpSettings:
    """Typed attribute access to ``MCP_TOOLS`` with defaults.

    The annotations below are what code reading a setting sees; a value of the wrong type or
    range raises ``ImproperlyConfigured`` naming the key, and so does an unknown key.
    """

    SERVER_NAME: str
    SERVER_TITLE: str
    SERVER_VERSION: str | None
    INSTRUCTIONS: str
    PAGE_SIZE: int
    PAGE_CACHE_BYTES: int
    LIST_TTL_MS: int
    DISCOVER_TTL_MS: int
    MAX_BODY_BYTES: int
    BODY_TIMEOUT_SECONDS: float
    KEEPALIVE_REQUESTS: int
    MAX_BATCH_ITEMS: int
    MAX_RESPONSE_BYTES: int
    ALLOWED_ORIGINS: list[str]
    CORS_MAX_AGE: int
    AUTH_BACKEND: type[Any]
    SESSION_IDLE_SECONDS: int
    SESSION_TOUCH_SECONDS: int
    SSE_KEEPALIVE_SECONDS: float
    SSE_MAX_SECONDS: float
    SSE_RETRY_MS: int
    HANDLER_MODULE: str
    VALIDATE_OUTPUT: bool
    CURSOR_KEY: str | None
    CANCEL_POLL_SECONDS: float
    HANDLE_STATE_MAX_BYTES: int
    HANDLE_PURGE_BATCH: int
    INPUT_TIMEOUT_SECONDS: float
    REQUEST_STATE_TTL_SECONDS: int
    APPROVAL_TIMEOUT: int
    THREAD_SENSITIVE: bool
    THREAD_POOL_SIZE: int
    HANDLER_POOL_SIZE: int
    SERVE_ON_LOOP: bool
    MAX_CALLS_PER_PRINCIPAL: int
    NOTIFIER: str
    NOTIFIER_REDIS_URL: str | None
    NOTIFIER_CHANNEL: str
    NOTIFY_DEBOUNCE_SECONDS: float
    NOTIFY_POLL_SECONDS: float
    NOTIFY_CATCHUP_SECONDS: float
    MAX_STREAMS_PER_PRINCIPAL: int
    RESOURCE_URL: str | None
    AUTHORIZATION_SERVERS: list[str]
    RESOURCE_NAME: str
    SCOPE_ADVERTISING: str
    ALLOW_CLIENT_CREDENTIALS: bool
    JWT: dict[str, Any]
    RATE_LIMIT: str | None
    RATE_LIMIT_BATCH: int
    CATALOG_VERSION_MAX_AGE: float
    TOKEN_CACHE_SECONDS: float
    TOKEN_CACHE_SIZE: int
    REGISTRATION_RATE_LIMIT: str | None
    PRIVATE_REDIRECT_SCHEMES: list[str]
    AUDIT_ENABLED: bool
    AUDIT_REDACT_NAMES: list[str]
    AUDIT_RETENTION_DAYS: int
    AUDIT_FLUSH_ROWS: int
    AUDIT_FLUSH_SECONDS: float
    TASKS_ENABLED: bool
    TASK_TTL_DEFAULT_MS: int
    TASK_TTL_MAX_MS: int
    TASK_POLL_INTERVAL_MS: int
    TASK_RESULT_WAIT_SECONDS: float
    TASK_RESULT_MAX_BYTES: int
    TASK_WORKER_LOST: str
    TASK_MAX_ATTEMPTS: int
    TASK_HEARTBEAT_SECONDS: float
    TASK_LOST_AFTER_SECONDS: float
    TASK_QUEUE: str | None
    TASK_PURGE_BATCH: int
    UI_TEMPLATE_PREFIXES: list[str]
    DISCOVERY: str
    DISCOVERY_THRESHOLD: int
    DISCOVERY_CLIENTS: dict[str, str]

    def __init__(self) -> None:
        self._user: dict[str, Any] | None = None

    @property
    def user_settings(self) -> dict[str, Any]:
        if self._user is None:
            value = getattr(settings, "MCP_TOOLS", {})
            if not isinstance(value, dict):
                raise ImproperlyConfigured("MCP_TOOLS must be a dict")
            unknown = sorted(set(value) - set(SETTINGS))
            if unknown:
                raise ImproperlyConfigured(
                    f"Unknown MCP_TOOLS setting(s): {', '.join(unknown)}. "
                    f"Known settings: {', '.join(sorted(SETTINGS))}."
                )
            self._user = value
        return self._user

    def __getattr__(self, name: str) -> Any:
        """A setting's first read (checked, imported); it is then kept as a plain attribute of
        the instance, so Python never calls this again for it until ``reload()``."""
        if name.startswith("_") or name not in SETTINGS:
            raise AttributeError(f"Invalid MCP_TOOLS setting: {name!r}")
        spec = SETTINGS[name]
        value = self.user_settings.get(name, spec.default)
        problem = spec.check(value)
        if problem is not None:
            raise ImproperlyConfigured(f"MCP_TOOLS[{name!r}] {problem}.")
        if name in IMPORT_STRINGS and isinstance(value, str):
            try:
                value = import_string(value)
            except ImportError as exc:
                raise ImproperlyConfigured(f"MCP_TOOLS[{name!r}]: cannot import {value!r}: {exc}") from exc
        self.__dict__[name] = value
        return value

    def problems(self) -> list[str]:
        """Every key that cannot be read, with why (the system check reports them all)."""
        try:
            _ = self.user_settings
        except ImproperlyConfigured as exc:
            return [str(exc)]
        found = []
        for name in SETTINGS:
            try:
                getattr(self, name)
            except ImproperlyConfigured as exc:
                found.append(str(exc))
        return found

    def reload(self) -> None:
        for name in SETTINGS:
            self.__dict__.pop(name, None)
        self._user = None


mcp_settings = McpSettings()

P = ParamSpec("P")
R = TypeVar("R")
_resets: list[Callable[[], None]] = []


def reset_on_change(func: Callable[P, R]) -> Callable[P, R]:
    """Cache ``func``'s results until the settings change (``setting_changed`` clears them).

    For values derived from settings: a backend instance, the server identity, a key.
    """
    cached = functools.lru_cache(maxsize=32)(func)
    _resets.append(cached.cache_clear)
    return cached  # type: ignore[return-value]


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting in ("MCP_TOOLS", "SECRET_KEY"):
        mcp_settings.reload()
        for clear in _resets:
            clear()


setting_changed.connect(_reload, dispatch_uid="mcp_tools.conf.reload")
