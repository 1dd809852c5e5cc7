"""Write tools (with the scopes they require) as JSON: the file mcp_import and the admin read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.editing.transfer import dumps, export_tools
from mcp_tools.models import Tool

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Export tools as JSON (all of them, or those named)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("names", nargs="*", help="Tool names to export (default: every tool).")
        parser.add_argument("--output", "-o", help="Write to this file instead of standard output.")

    def handle(self, *args: Any, **options: Any) -> None:
        names: list[str] = options["names"]
        tools = None
        if names:
            tools = list(Tool.objects.filter(name__in=names))
            missing = sorted(set(names) - {t.name for t in tools})
            if missing:
                raise CommandError(f"No tool named {', '.join(map(repr, missing))}")
        text = dumps(export_tools(tools))
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            count = len(tools) if tools is not None else Tool.objects.count()
            self.stderr.write(f"Wrote {count} tool(s) to {options['output']}")
        else:
            self.stdout.write(text, ending="")
