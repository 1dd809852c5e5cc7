"""App config of the Celery task kind: add ``"mcp_tools.contrib.celery"`` to ``INSTALLED_APPS``."""

from django.apps import AppConfig

__all__ = ["McpToolsCeleryConfig"]


class McpToolsCeleryConfig(AppConfig):
    name = "mcp_tools.contrib.celery"
    label = "mcp_tools_celery"
    verbose_name = "MCP tools: Celery tasks as tools"

    def ready(self) -> None:
        from . import checks, handlers

        handlers.register_kinds()
        checks.register()
