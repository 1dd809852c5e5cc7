"""Delete audit events older than the retention (MCP_TOOLS["AUDIT_RETENTION_DAYS"])."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mcp_tools.audit import purge

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Delete audit events older than AUDIT_RETENTION_DAYS (or --days)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=None)
        parser.add_argument("--batch-size", type=int, default=5000)

    def handle(self, *args: Any, days: int | None, batch_size: int, **options: Any) -> None:
        deleted = purge(days, batch_size=batch_size)
        self.stdout.write(f"Deleted {deleted} audit event(s).")
