"""App config of the DRF integration: add ``"mcp_tools.contrib.drf"`` to ``INSTALLED_APPS``."""

from django.apps import AppConfig

__all__ = ["McpToolsDrfConfig"]


class McpToolsDrfConfig(AppConfig):
    name = "mcp_tools.contrib.drf"
    label = "mcp_tools_drf"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "MCP tools: models as tools (DRF)"

    def ready(self) -> None:
        from . import checks, handlers, receivers, routes

        handlers.register_kinds()  # the built-in tool kinds model tool rows are bound to
        routes.register_kinds()  # drf.view: a tool calling one of the site's DRF views
        receivers.connect()  # toolsets defined in the admin write their rows when saved
        checks.register()
