"""System checks (documented in the README under "Checks").

- mcp_tools.E001: MCP_TOOLS is not a valid settings dict (unknown key, bad import).
- mcp_tools.W001: an enabled tool names a handler key that no code registered.
- mcp_tools.W002: an enabled tool's stored schema is no longer valid.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning
from django.core.checks import register as register_check
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError


def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from .conf import DEFAULTS, mcp_settings

    try:
        for name in DEFAULTS:
            getattr(mcp_settings, name)
    except ImproperlyConfigured as exc:
        return [Error(str(exc), hint="Fix the MCP_TOOLS setting; see the README.", id="mcp_tools.E001")]
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


def register() -> None:
    register_check(check_settings)
    register_check(check_tools, Tags.database)
