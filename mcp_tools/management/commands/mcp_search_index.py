"""Bring progressive discovery's search entries up to date with the catalog (run on deploy)."""

from typing import Any

from django.core.management.base import BaseCommand

from mcp_tools.catalog import get_catalog
from mcp_tools.discovery import sync

__all__ = ["Command"]


class Command(BaseCommand):
    help = (
        "Write the search entries of the enabled tools that are missing or out of date (what the first "
        "search after a change does otherwise). Run it after migrate and mcp_sync_toolsets on deploy."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = sync(get_catalog())
        self.stdout.write(f"Search entries: {report.tools} enabled tools, {report.written} written.")
