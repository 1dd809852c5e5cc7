"""App config: checks, signal wiring and handler autodiscovery."""

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class McpToolsConfig(AppConfig):
    name = "mcp_tools"
    verbose_name = _("MCP tools")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, notify
        from .models import receivers
        from .registry import autodiscover

        checks.register()
        receivers.connect()  # relation changes and deletions move the catalog version
        notify.connect()  # ...and each move is published to listeners after commit
        autodiscover()
