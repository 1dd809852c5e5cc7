"""System check of the Celery task kind (listed in the docs: reference/checks).

- mcp_tools_celery.W001: the site's Celery app has no result backend, so plain calls of
  ``celery.task`` tools (those not made as MCP tasks) cannot get their task's result.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning
from django.core.checks import register as register_check

__all__ = ["register"]


def check_result_backend(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    from celery import current_app
    from celery.backends.base import DisabledBackend

    if not isinstance(current_app.backend, DisabledBackend):
        return []
    return [
        Warning(
            "The Celery app has no result backend: plain calls of celery.task tools fail.",
            hint="Set CELERY_RESULT_BACKEND (e.g. the Redis broker's URL), or give those tools task support "
            "'required' so they always run in a worker.",
            id="mcp_tools_celery.W001",
        )
    ]


def register() -> None:
    register_check(check_result_backend)
