"""System check of the DRF integration (listed in the docs: reference/checks; how-to: expose-a-model).

- mcp_tools_drf.W001: a model tool row is missing or out of date with its toolset's code.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, Warning
from django.core.checks import register as register_check
from django.db import DatabaseError

__all__ = ["register"]


def check_rows(app_configs: Any = None, databases: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if not databases:
        return []
    from .sync import stale_rows

    try:
        problems = stale_rows()
    except DatabaseError:
        return []  # not migrated yet
    return [
        Warning(
            f"Model tool {problem}.",
            hint="Run manage.py mcp_sync_toolsets (after migrate, on every deploy).",
            id="mcp_tools_drf.W001",
        )
        for problem in problems
    ]


def register() -> None:
    register_check(check_rows, Tags.database)
