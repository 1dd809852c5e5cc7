"""App config: checks, signal wiring and handler autodiscovery."""

import os
from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

__all__ = ["McpToolsConfig"]


class McpToolsConfig(AppConfig):
    name = "mcp_tools"
    verbose_name = _("MCP tools")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, notify
        from .models import receivers
        from .registry import autodiscover, watch_for_handler_modules
        from .signals import first_catalog

        checks.register()
        receivers.connect()  # relation changes and deletions move the catalog version
        notify.connect()  # ...and each move is published to listeners after commit
        autodiscover()
        # What `check --database default` would say (mcp_sync_toolsets forgotten...), in the log
        # of a development server once it has read its first catalog.
        first_catalog.connect(_log_problems, dispatch_uid="mcp_tools.problems")
        if os.environ.get("RUN_MAIN") == "true":  # runserver's serving process (its autoreloader)
            from django.utils.autoreload import autoreload_started

            # An app's handlers module added while it runs restarts it, as an edit does.
            autoreload_started.connect(watch_for_handler_modules, dispatch_uid="mcp_tools.handler_modules")


def _log_problems(sender: Any = None, version: int | None = None, **kwargs: Any) -> None:
    """Under DEBUG only: the checks import what a worker serving calls need not (jsonschema);
    production runs ``check --database default`` on deploy, and the admin shows the same."""
    from django.conf import settings

    if settings.DEBUG:
        from .editing.problems import log_first

        log_first(sender, version)
