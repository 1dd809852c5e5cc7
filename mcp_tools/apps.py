"""App config: checks, signal wiring and handler autodiscovery."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class McpToolsConfig(AppConfig):
    name = "mcp_tools"
    verbose_name = _("MCP tools")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, signals
        from .registry import autodiscover

        checks.register()
        signals.connect()
        autodiscover()
