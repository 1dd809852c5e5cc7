"""Demo site settings: SQLite and in-process defaults, switchable through the environment.

Environment: DJANGO_DEBUG, DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS, MCP_DATABASE ("sqlite" or
"postgres"), POSTGRES_* , REDIS_URL (cache), MCP_SQLITE_PATH, MCP_AUTH ("oauth" turns on
OAuth for /mcp; default: open, for local trials), MCP_RESOURCE_URL (the endpoint's public URL;
default http://HOST:PORT/mcp), HOST and PORT (those `make run` serves on), CELERY_RESULT_BACKEND,
MCP_NOTIFIER, MCP_NOTIFIER_REDIS_URL, MCP_NOTIFIER_CHANNEL, MCP_MAX_STREAMS_PER_PRINCIPAL,
MCP_AUTH_BACKEND, MCP_CATALOG_VERSION_MAX_AGE, MCP_TOKEN_CACHE_SECONDS, MCP_RATE_LIMIT_BATCH,
CELERY_BROKER_URL (default: an embedded SQLite broker file under var/, no server needed),
MCP_CELERY_VISIBILITY_TIMEOUT, MCP_DISCOVERY ("off", "on" or "auto": progressive discovery).
"""

from __future__ import annotations

import os
from pathlib import Path

from mcp_tools.oauth.settings import oauth2_provider_settings

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("MCP_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-secret-key-change-me-in-production-0123456789")
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "oauth2_provider",
    "mcp_tools",
    "mcp_tools.contrib.drf",  # ORM models as tools (README "ORM models as tools")
    "mcp_tools.contrib.celery",  # the celery.task tool kind (README "Built-in tool kinds")
    "project.demo",
    "project.library",  # the demo models exposed as tools
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "project.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
ASGI_APPLICATION = "project.asgi.application"
WSGI_APPLICATION = "project.wsgi.application"

if os.environ.get("MCP_DATABASE", "sqlite") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("POSTGRES_DB", "test"),
            "USER": os.environ.get("POSTGRES_USER", "postgres"),
            "PASSWORD": os.environ.get("POSTGRES_PASSWORD", ""),
            "HOST": os.environ.get("POSTGRES_HOST", "127.0.0.1"),
            "PORT": os.environ.get("POSTGRES_PORT", "5432"),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("MCP_SQLITE_PATH", str(VAR_DIR / "db.sqlite3")),
            # The endpoint's pool threads keep their connection this long (Django's default 0
            # would open one per request, PRAGMAs included).
            "CONN_MAX_AGE": 60,
            # WAL + synchronous=NORMAL: no disk sync per commit (see README "Audit trail").
            "OPTIONS": {
                "timeout": 20,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }

if os.environ.get("REDIS_URL"):
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": os.environ["REDIS_URL"],
            "KEY_PREFIX": os.environ.get("MCP_CACHE_PREFIX", ""),
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# django-oauth-toolkit as the authorization server of this site, set up for MCP clients
# (see README "OAuth"). The issuer is the site origin, so PRM, metadata and `iss` agree.
# Without MCP_RESOURCE_URL, the endpoint's URL follows HOST and PORT (those `make run` serves on),
# so tokens minted for this server (their audience) are accepted on whatever port it serves.
_HOST = os.environ.get("HOST", "127.0.0.1")
_HOST = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(_HOST, _HOST)  # noqa: S104
if ":" in _HOST and not _HOST.startswith("["):
    _HOST = f"[{_HOST}]"  # an IPv6 address in a URL
MCP_RESOURCE_URL = os.environ.get("MCP_RESOURCE_URL") or f"http://{_HOST}:{os.environ.get('PORT', '8000')}/mcp"
OAUTH2_PROVIDER = oauth2_provider_settings(MCP_RESOURCE_URL)  # every key overridable: (url, KEY=value)
# No LOGIN_URL and no sign-in view of the demo's own: the consent page sends people to the
# package's sign-in page (o/login/), as on a site built from the tutorial.

MCP_TOOLS = {
    "SERVER_NAME": "django-mcp-tools-demo",
    "SERVER_TITLE": "django-mcp-tools demo",
    "INSTRUCTIONS": "Demo tools served from database rows managed in Django admin.",
    "PAGE_SIZE": int(os.environ.get("MCP_PAGE_SIZE", "50")),
    "SSE_MAX_SECONDS": float(os.environ.get("MCP_SSE_MAX_SECONDS", "300")),
    "SSE_KEEPALIVE_SECONDS": float(os.environ.get("MCP_SSE_KEEPALIVE_SECONDS", "15")),
    "THREAD_SENSITIVE": os.environ.get("MCP_THREAD_SENSITIVE") == "1",
    # list_changed fan-out: "auto" picks LISTEN/NOTIFY on PostgreSQL, polling on SQLite.
    "NOTIFIER": os.environ.get("MCP_NOTIFIER", "auto"),
    "NOTIFIER_REDIS_URL": os.environ.get("MCP_NOTIFIER_REDIS_URL") or os.environ.get("REDIS_URL"),
    "MAX_STREAMS_PER_PRINCIPAL": int(os.environ.get("MCP_MAX_STREAMS_PER_PRINCIPAL", "32")),
    "BODY_TIMEOUT_SECONDS": float(os.environ.get("MCP_BODY_TIMEOUT_SECONDS", "30")),
    "RESOURCE_URL": MCP_RESOURCE_URL,
    "RESOURCE_NAME": "django-mcp-tools demo",
    "AUTH_BACKEND": "mcp_tools.auth.DOTBackend"
    if os.environ.get("MCP_AUTH") == "oauth"
    else "mcp_tools.auth.AllowAnyBackend",
    "RATE_LIMIT": os.environ.get("MCP_RATE_LIMIT", "120/m"),
    # Browser origins besides the site's own (e.g. an MCP Apps host page), separated by spaces.
    "ALLOWED_ORIGINS": os.environ.get("MCP_ALLOWED_ORIGINS", "").split(),
    "TASK_QUEUE": os.environ.get("MCP_TASK_QUEUE") or None,
    "TASK_WORKER_LOST": os.environ.get("MCP_TASK_WORKER_LOST", "retry"),
    # Progressive discovery (docs/howto/discovery.md): a small entry set, the rest found by search.
    "DISCOVERY": os.environ.get("MCP_DISCOVERY", "off"),
}

# Celery runs task-augmented tool calls. The default broker is kombu's SQLAlchemy transport
# on a SQLite file, so `make run` needs no server; production sets CELERY_BROKER_URL to Redis
# (redis://...) or RabbitMQ (amqp://...).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # An unacknowledged message (its worker was killed) is redelivered after this many
        # seconds. A redelivery while the task still runs does nothing (its heartbeat is
        # fresh); a killed worker's task is found sooner by its heartbeat anyway.
        "visibility_timeout": int(os.environ.get("MCP_CELERY_VISIBILITY_TIMEOUT", "3600")),
        # How often (s) a worker sweeps for such messages; one scan per sweep.
        "unacked_restore_interval": int(os.environ.get("MCP_CELERY_RESTORE_INTERVAL", "10")),
        "unacked_restore_throttle": 1,
    }
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Results are kept only for calls that wait for one (the celery.task tool kind asks per call):
# on the Redis broker's server, otherwise in a SQLite file next to the embedded broker.
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND") or (
    CELERY_BROKER_URL
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}"
)
CELERY_RESULT_EXPIRES = 3600
CELERY_TASK_IGNORE_RESULT = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = os.environ.get("MCP_CELERY_EAGER") == "1"
# Celery closes the worker's database connections after every task unless told to reuse them
# (a new connection, on SQLite with its PRAGMAs, per task). mcp_tools.run_task checks its
# connection before each task as Django does between requests (CONN_MAX_AGE, health checks).
CELERY_DB_REUSE_MAX = int(os.environ.get("MCP_CELERY_DB_REUSE_MAX", "1000"))
CELERY_BEAT_SCHEDULE = {
    "mcp-tools-purge-expired-tasks": {"task": "mcp_tools.purge_expired_tasks", "schedule": 300.0},
    "mcp-tools-purge-audit-events": {"task": "mcp_tools.purge_audit_events", "schedule": 3600.0},
    # Tasks whose worker died are retried or failed (TASK_WORKER_LOST), whatever the broker.
    "mcp-tools-sweep-lost-tasks": {"task": "mcp_tools.sweep_lost_tasks", "schedule": 10.0},
    "mcp-tools-purge-expired-handles": {"task": "mcp_tools.purge_expired_handles", "schedule": 300.0},
    # Calls of approval-gated tools nobody decided in time: held tasks end with the refusal.
    "mcp-tools-expire-approvals": {"task": "mcp_tools.expire_approvals", "schedule": 30.0},
}
for _name in ("TASK_HEARTBEAT_SECONDS", "TASK_LOST_AFTER_SECONDS"):
    if os.environ.get(f"MCP_{_name}"):
        MCP_TOOLS[_name] = float(os.environ[f"MCP_{_name}"])
if os.environ.get("MCP_AUDIT_FLUSH_ROWS"):  # 1: each audit row written in its call
    MCP_TOOLS["AUDIT_FLUSH_ROWS"] = int(os.environ["MCP_AUDIT_FLUSH_ROWS"])
if os.environ.get("MCP_AUDIT_FLUSH_SECONDS"):
    MCP_TOOLS["AUDIT_FLUSH_SECONDS"] = float(os.environ["MCP_AUDIT_FLUSH_SECONDS"])
if os.environ.get("MCP_KEEPALIVE_REQUESTS"):
    MCP_TOOLS["KEEPALIVE_REQUESTS"] = int(os.environ["MCP_KEEPALIVE_REQUESTS"])
if os.environ.get("MCP_HANDLER_POOL_SIZE"):
    MCP_TOOLS["HANDLER_POOL_SIZE"] = int(os.environ["MCP_HANDLER_POOL_SIZE"])
if os.environ.get("MCP_AUTH_BACKEND"):
    MCP_TOOLS["AUTH_BACKEND"] = os.environ["MCP_AUTH_BACKEND"]
if os.environ.get("MCP_NOTIFIER_CHANNEL"):
    MCP_TOOLS["NOTIFIER_CHANNEL"] = os.environ["MCP_NOTIFIER_CHANNEL"]
# Fewer round trips to the shared stores per request, each within a stated bound
# (docs/explanation/capacity.md); 0 / 1 (the defaults) keep every read and count per request.
for _name in ("CATALOG_VERSION_MAX_AGE", "TOKEN_CACHE_SECONDS"):
    if os.environ.get(f"MCP_{_name}"):
        MCP_TOOLS[_name] = float(os.environ[f"MCP_{_name}"])
if os.environ.get("MCP_RATE_LIMIT_BATCH"):
    MCP_TOOLS["RATE_LIMIT_BATCH"] = int(os.environ["MCP_RATE_LIMIT_BATCH"])

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    # The handler on the root logger, not on mcp_tools: a Celery worker replaces the root's
    # handlers with its own, so each line is written once there (a handler of mcp_tools' own
    # would write to the worker's redirected stderr, a second copy at WARNING).
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {"mcp_tools": {"level": os.environ.get("MCP_LOG_LEVEL", "INFO")}},
}

# OpenTelemetry (docs/howto/observability.md): OTEL_TRACES_EXPORTER=console make run prints each
# request's span; nothing is set up unless an OTEL_*_EXPORTER variable asks for it.
from project.otel import configure as _configure_otel  # noqa: E402

_configure_otel()
