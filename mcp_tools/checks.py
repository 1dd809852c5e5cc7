"""System checks (listed in the docs: reference/checks).

- mcp_tools.E001: MCP_TOOLS is not a valid settings dict (unknown key, bad import).
- mcp_tools.W001: an enabled tool names a handler key that no code registered.
- mcp_tools.W002: an enabled tool's stored schema is no longer valid.
- mcp_tools.E002: an OAuth backend is configured without a usable RESOURCE_URL.
- mcp_tools.W003: DOT's issuer is not the first of the PRM authorization_servers.
- mcp_tools.W004: the endpoint is open to anyone (AllowAnyBackend) while DEBUG is off.
- mcp_tools.W005: an enabled ``drf.view``/``celery.task`` tool has no required scope while an
  OAuth backend is on (any token may call it).
- mcp_tools.W010: enabled tools need Django permissions, and the backend has no users
  (AllowAnyBackend): they are hidden from every caller.
- mcp_tools.W011: enabled tools need a Django permission that no group and no user (superusers
  aside) holds: hidden from everyone but superusers.
- mcp_tools.W020: a tool's stored view holds Django template syntax, which is served as written
  (stored views are no longer rendered on the server).
- mcp_tools.W021: a tool's UI template path is outside UI_TEMPLATE_PREFIXES: its view is not served.
- mcp_tools.W023: the site is its own authorization server (DOTBackend) and no sign-in page
  serves ``LOGIN_URL``: people sent to sign in before consent get a 404 (include
  ``mcp_tools.oauth.urls``, which serves one, or point LOGIN_URL at the site's sign-in view).
- mcp_tools.W024: a scheme in ``PRIVATE_REDIRECT_SCHEMES`` is missing from DOT's
  ``ALLOWED_REDIRECT_URI_SCHEMES``: registration accepts it, DOT refuses to store it.
- mcp_tools.W025: ``ALLOW_CLIENT_CREDENTIALS`` is on and DOT's application admin is not
  ``mcp_tools.oauth.admin.ApplicationAdmin`` (or a subclass): no admin page edits what a
  client-credentials application is entitled to, so none gets a token.
- mcp_tools.W012: progressive discovery is on and an enabled tool is named like one of the
  discovery tools (search_tools, describe_tools): grants in discovery mode cannot reach it.
- mcp_tools.W026: enabled tools can run as tasks, and this process has no Celery app of the site
  (Celery's fallback app) or no broker (``CELERY_BROKER_URL``): their tasks would be queued where
  no worker of the site looks.
- mcp_tools.W027: tasks have waited longer than ``TASK_LOST_AFTER_SECONDS`` and no worker has
  started them: no Celery worker runs, or none consumes their queue (``TASK_QUEUE``).
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning
from django.core.checks import register as register_check
from django.db import DatabaseError

__all__ = ["register"]


def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """E001: every MCP_TOOLS key is read and checked (type, range, import) at startup."""
    from .conf import mcp_settings

    problems = mcp_settings.problems()
    if problems:
        hint = "Fix the MCP_TOOLS setting; the docs' settings reference (reference/settings) lists every key."
        return [Error(problem, hint=hint, id="mcp_tools.E001") for problem in problems]
    errors = _check_values(mcp_settings)
    return errors or check_oauth()


def _check_values(mcp_settings: Any) -> list[CheckMessage]:
    """Values that would otherwise fail only at the first call that reads them."""
    from .ratelimit import parse_rate

    errors: list[CheckMessage] = []
    for name in ("RATE_LIMIT", "REGISTRATION_RATE_LIMIT"):
        try:
            parse_rate(getattr(mcp_settings, name))
        except ValueError as exc:
            errors.append(Error(f"MCP_TOOLS[{name!r}]: {exc}", id="mcp_tools.E001"))
    from .auth import BaseAuthBackend

    backend = mcp_settings.AUTH_BACKEND
    if not (isinstance(backend, type) and issubclass(backend, BaseAuthBackend)):
        errors.append(
            Error(
                f"MCP_TOOLS['AUTH_BACKEND'] must be a subclass of BaseAuthBackend, not {backend!r}", id="mcp_tools.E001"
            )
        )
    return errors


def check_oauth() -> list[CheckMessage]:
    from urllib.parse import urlsplit

    from .auth.oauth import OAuthBackend, authorization_servers, canonical_resource
    from .conf import mcp_settings

    backend = mcp_settings.AUTH_BACKEND
    if not (isinstance(backend, type) and issubclass(backend, OAuthBackend)):
        return []
    url = mcp_settings.RESOURCE_URL
    parts = urlsplit(str(url or ""))
    if not url or parts.scheme not in ("http", "https") or not parts.hostname:
        return [Error("MCP_TOOLS['RESOURCE_URL'] must be the absolute URL of the endpoint", id="mcp_tools.E002")]
    if canonical_resource(str(url)) != str(url):
        return [
            Error(
                f"MCP_TOOLS['RESOURCE_URL'] is not canonical: use {canonical_resource(str(url))!r}",
                hint="Lowercase scheme and host, no default port, no trailing slash, query or fragment (A-8).",
                id="mcp_tools.E002",
            )
        ]
    from django.conf import settings

    issuer = (getattr(settings, "OAUTH2_PROVIDER", None) or {}).get("OIDC_ISS_ENDPOINT")
    if issuer and issuer != authorization_servers()[0]:
        return [
            Warning(
                f"OAUTH2_PROVIDER['OIDC_ISS_ENDPOINT'] ({issuer}) is not the PRM authorization server "
                f"({authorization_servers()[0]}); clients reject metadata whose issuer differs",
                id="mcp_tools.W003",
            )
        ]
    return []


# Named, not imported: checks and the oauth package are independent layers.
ENTITLEMENT_ADMIN = "mcp_tools.oauth.admin.ApplicationAdmin"


def check_authorization_server(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W023-W025: what the site's own authorization server (DOT) needs around it."""
    from django.apps import apps

    from .auth import DOTBackend
    from .conf import mcp_settings

    backend = mcp_settings.AUTH_BACKEND
    if mcp_settings.problems() or not apps.is_installed("oauth2_provider"):
        return []
    if not (isinstance(backend, type) and issubclass(backend, DOTBackend)):
        return []
    from .auth.signin import package_sign_in, site_sign_in

    messages: list[CheckMessage] = []
    configured, served = site_sign_in()
    if not served and package_sign_in() is None:
        messages.append(
            Warning(
                f"LOGIN_URL ({configured}) is not a view of this site: people sent to sign in before the consent "
                "page get a 404.",
                hint="Include mcp_tools.oauth.urls at the site root (it serves a sign-in page at o/login/), or set "
                "LOGIN_URL to the site's own sign-in view.",
                id="mcp_tools.W023",
            )
        )
    messages.extend(_redirect_schemes_check())
    if mcp_settings.ALLOW_CLIENT_CREDENTIALS:
        messages.extend(_entitlement_admin_check())
    return messages


def _redirect_schemes_check() -> list[CheckMessage]:
    """W024: the private redirect schemes registration accepts are ones DOT stores too."""
    from django.conf import settings

    from .conf import mcp_settings

    dot = getattr(settings, "OAUTH2_PROVIDER", None) or {}
    allowed = set(dot.get("ALLOWED_REDIRECT_URI_SCHEMES") or ("http", "https"))
    missing = [s for s in mcp_settings.PRIVATE_REDIRECT_SCHEMES if s not in allowed]
    if not missing:
        return []
    return [
        Warning(
            f"PRIVATE_REDIRECT_SCHEMES {missing} are not in OAUTH2_PROVIDER['ALLOWED_REDIRECT_URI_SCHEMES']: "
            "registration accepts such redirect URIs, and DOT refuses to store or redirect to them.",
            hint="oauth2_provider_settings(url, ALLOWED_REDIRECT_URI_SCHEMES=['http', 'https', *schemes]).",
            id="mcp_tools.W024",
        )
    ]


def _entitlement_admin_check() -> list[CheckMessage]:
    """W025: client-credentials applications need the admin page that entitles them."""
    from oauth2_provider.settings import oauth2_settings

    bases = getattr(oauth2_settings.APPLICATION_ADMIN_CLASS, "__mro__", ())
    if any(f"{c.__module__}.{c.__qualname__}" == ENTITLEMENT_ADMIN for c in bases):
        return []
    return [
        Warning(
            "ALLOW_CLIENT_CREDENTIALS is on and no admin page edits what a client-credentials application is "
            "entitled to: such applications get no token.",
            hint=f"Set OAUTH2_PROVIDER['APPLICATION_ADMIN_CLASS'] to {ENTITLEMENT_ADMIN!r} (or a subclass); "
            "oauth2_provider_settings() does.",
            id="mcp_tools.W025",
        )
    ]


def check_open_endpoint(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W004: secure by default means saying so when the endpoint serves every tool to anyone."""
    from django.conf import settings

    from .auth import AllowAnyBackend
    from .conf import mcp_settings

    if settings.DEBUG or mcp_settings.problems():
        return []
    backend = mcp_settings.AUTH_BACKEND
    if isinstance(backend, type) and issubclass(backend, AllowAnyBackend):
        return [
            Warning(
                "The MCP endpoint is open: AllowAnyBackend lets anyone list and call every tool, and DEBUG is off.",
                hint="Set MCP_TOOLS['AUTH_BACKEND'] to mcp_tools.auth.DOTBackend (or JWTBackend, or your own "
                "backend); see the docs' tutorial and how-to/oauth. Silence with SILENCED_SYSTEM_CHECKS on a "
                "trusted network.",
                id="mcp_tools.W004",
            )
        ]
    return []


def check_tools(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if not databases:
        return []
    from .models import Tool
    from .registry import registry
    from .schemas import check_input_schema, check_output_schema

    messages: list[CheckMessage] = []
    try:
        rows = list(Tool.objects.enabled().values_list("name", "handler_key", "input_schema", "output_schema"))
    except DatabaseError:
        return []  # not migrated yet
    for name, key, input_schema, output_schema in rows:
        if key not in registry:
            messages.append(
                Warning(
                    f"Enabled tool {name!r} uses handler {key!r}, which is not registered.",
                    hint="Register it with @handler in an app's mcp_handlers.py, or disable the tool.",
                    obj=name,
                    id="mcp_tools.W001",
                )
            )
        try:
            check_input_schema(input_schema)
            if output_schema is not None:
                check_output_schema(output_schema)
        except ValueError as exc:
            messages.append(
                Warning(
                    f"Enabled tool {name!r} has an invalid schema: {exc}",
                    hint="Edit the tool in the admin.",
                    obj=name,
                    id="mcp_tools.W002",
                )
            )
    return messages


def check_open_doors(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W005: an enabled tool of a kind that reaches into the site (``drf.view``, ``celery.task``)
    with no required scope, while an OAuth backend is on: any token may call it."""
    if not databases:
        return []
    from django.db.models import Count

    from .auth import open_door, scopes_enforced
    from .models import Tool

    if not scopes_enforced():
        return []
    try:
        rows = list(
            Tool.objects.enabled()
            .annotate(scope_count=Count("required_scopes"))
            .filter(scope_count=0)
            .values_list("name", "handler_key")
        )
    except DatabaseError:
        return []  # not migrated yet
    messages: list[CheckMessage] = []
    for name, key in rows:
        warning = open_door(name, key, enabled=True, has_scope=False)
        if warning:
            messages.append(
                Warning(
                    warning,
                    hint="Give the tool a required scope (granted only to whom it is meant for), or disable it.",
                    obj=name,
                    id="mcp_tools.W005",
                )
            )
    return messages


def _permissions_needed(rows: list[tuple[str, str, Any]]) -> dict[str, list[str]]:
    """permission -> the tools (name, handler key, config) that need it."""
    from .registry import registry

    needs: dict[str, list[str]] = {}
    for name, key, config in rows:
        kind = registry.get(key)
        if kind is None:
            continue  # W001
        try:
            wanted = kind.required_permissions(config or {})
        except Exception:  # noqa: S112 - the catalog logs it and hides the tool
            continue
        for permission in wanted:
            needs.setdefault(permission, []).append(name)
    return needs


def check_permissions(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W010/W011: tools that nobody can see for want of a Django permission (issue 26: model
    tools were invisible with no word said). ``manage.py mcp_explain`` says it per user."""
    if not databases:
        return []
    from .auth import AllowAnyBackend
    from .conf import mcp_settings
    from .models import Tool

    if mcp_settings.problems():
        return []
    try:
        rows = list(Tool.objects.enabled().values_list("name", "handler_key", "handler_config"))
    except DatabaseError:
        return []  # not migrated yet
    needs = _permissions_needed(rows)
    if not needs:
        return []
    tools = sorted({t for names in needs.values() for t in names})
    backend = mcp_settings.AUTH_BACKEND
    if isinstance(backend, type) and issubclass(backend, AllowAnyBackend):
        return [
            Warning(
                f"{len(tools)} enabled tool(s) need Django permissions, and AllowAnyBackend has no users: "
                f"they are hidden from every caller ({_some(tools)}).",
                hint="Use a backend that authenticates users (mcp_tools.auth.DOTBackend), or give the toolset "
                "get_required_permissions() returning [] for public data. manage.py mcp_explain says why per tool.",
                id="mcp_tools.W010",
            )
        ]
    return [
        Warning(
            f"No group and no user (superusers aside) holds {permission!r}: tools {_some(sorted(names))} are "
            "hidden from everyone else.",
            hint="Grant the permission to a group (admin: Groups) and put the users in it; manage.py "
            "mcp_explain --user USER says what a user sees and why.",
            obj=permission,
            id="mcp_tools.W011",
        )
        for permission, names in sorted(needs.items())
        if not _held_by_anyone(permission)
    ]


def check_views(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W020/W021: views written for the server-side rendering of stored templates (before issue
    32), served as text now, and template paths outside the allowed folders, not served."""
    if not databases:
        return []
    from .conf import mcp_settings
    from .models import Tool
    from .ui.render import template_name_problem, template_syntax

    if mcp_settings.problems():
        return []
    messages: list[CheckMessage] = []
    try:
        rows = Tool.objects.exclude(ui_template="", ui_template_name="").values_list(
            "name", "ui_template", "ui_template_name"
        )
        for name, template, template_name in rows.iterator(chunk_size=100):
            syntax = template_syntax(template) if template else None
            if syntax is not None:
                messages.append(
                    Warning(
                        f"Tool {name!r}'s stored view holds template syntax ({syntax}): it is served as "
                        "written, not rendered.",
                        hint="Edit the view in the admin: give it its data through the app bridge (data-mcp-text, "
                        "data-mcp-tool, mcpApp.on), or ship it as a template in code (UI template path). "
                        "See the how-to MCP Apps.",
                        obj=name,
                        id="mcp_tools.W020",
                    )
                )
            problem = template_name_problem(template_name) if template_name and not template else None
            if problem is not None:
                messages.append(
                    Warning(
                        f"Tool {name!r}'s UI template path {template_name!r} is not served: {problem}",
                        hint="Move the template under one of UI_TEMPLATE_PREFIXES, or add its folder to the setting.",
                        obj=name,
                        id="mcp_tools.W021",
                    )
                )
    except DatabaseError:
        return []  # not migrated yet
    return messages


def check_task_workers(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W026/W027: tasks nobody will run (issue 34: a task stayed working forever, no word said)."""
    if not databases:
        return []
    from .conf import mcp_settings
    from .models import Tool
    from .tasking import tasks_enabled

    if not tasks_enabled():
        return []
    try:
        tools = sorted(Tool.objects.enabled().exclude(task_support="forbidden").values_list("name", flat=True))
    except DatabaseError:
        return []  # not migrated yet
    messages: list[CheckMessage] = []
    problem = _celery_problem() if tools else ""
    if problem:
        messages.append(
            Warning(
                f"{len(tools)} enabled tool(s) can run as tasks ({_some(tools)}), but {problem}.",
                hint="Add the Celery app of the docs' tasks how-to (mysite/celery.py, imported by mysite/__init__.py) "
                "and set CELERY_BROKER_URL; run a worker: celery -A mysite worker.",
                id="mcp_tools.W026",
            )
        )
    from .tasking.recovery import queue_name, unclaimed

    waiting = unclaimed()
    try:
        count = waiting.count()
        oldest = waiting.order_by("updated_at").values_list("updated_at", "tool_name").first()
    except DatabaseError:
        return messages
    if count and oldest is not None:
        queue = mcp_settings.TASK_QUEUE
        command = "celery -A <your project> worker" + (f" -Q {queue}" if queue else "")
        messages.append(
            Warning(
                f"{count} task(s) wait for a worker: none has started them (the oldest, of tool {oldest[1]!r}, "
                f"queued at {oldest[0]:%Y-%m-%d %H:%M:%S %Z}).",
                hint=f"Start a Celery worker consuming {queue_name()} ({command}); their clients see "
                "'Waiting for a worker' in tasks/get.",
                id="mcp_tools.W027",
            )
        )
    return messages


def _celery_problem() -> str:
    """What keeps tasks of this process from reaching a worker of the site ("" when nothing)."""
    from celery import current_app

    app = current_app._get_current_object()
    if app.conf.task_always_eager:
        return ""  # run in the calling process (tests, some development setups)
    if app.main == "default":
        return "this process has no Celery app of the site (Celery's fallback app, which no worker of the site reads)"
    if not app.conf.broker_url:
        return f"the Celery app {app.main!r} has no broker (CELERY_BROKER_URL unset: Celery would use amqp://localhost)"
    return ""


def _some(names: list[str], most: int = 5) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _held_by_anyone(permission: str) -> bool:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission

    app_label, _, codename = permission.partition(".")
    found = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    if not found.exists():
        return False
    if Group.objects.filter(permissions__in=found).exists():
        return True
    user_model = get_user_model()
    if not hasattr(user_model, "user_permissions"):
        return True  # a custom user model with its own rules: has_perm decides, nothing to say here
    return bool(user_model._default_manager.filter(user_permissions__in=found, is_active=True).exists())


def check_discovery(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """W012: discovery is on (for some grant) and a tool row is named like a discovery tool."""
    from .conf import mcp_settings

    if not databases or (mcp_settings.DISCOVERY == "off" and set(mcp_settings.DISCOVERY_CLIENTS.values()) <= {"off"}):
        return []
    from .discovery import NAMES
    from .models import Tool

    try:
        taken = list(Tool.objects.enabled().filter(name__in=NAMES).values_list("name", flat=True))
    except DatabaseError:
        return []
    return [
        Warning(
            f"Enabled tool {name!r} has the name of a discovery tool: a grant in discovery mode calls the "
            "discovery tool by that name, and never finds this one.",
            hint="Rename the tool in the admin.",
            obj=name,
            id="mcp_tools.W012",
        )
        for name in taken
    ]


def register() -> None:
    register_check(check_settings)
    register_check(check_open_endpoint, Tags.security)
    register_check(check_authorization_server, Tags.security)
    register_check(check_tools, Tags.database)
    register_check(check_open_doors, Tags.database, Tags.security)
    register_check(check_permissions, Tags.database)
    register_check(check_views, Tags.database)
    register_check(check_discovery, Tags.database)
    register_check(check_task_workers, Tags.database)
