"""Delete expired MCP sessions in batches."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mcp_tools.models import McpSession

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Delete expired legacy MCP sessions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=1000)

    def handle(self, *args: Any, batch_size: int, **options: Any) -> None:
        deleted = McpSession.objects.delete_expired(batch_size=batch_size)
        self.stdout.write(f"Deleted {deleted} expired session(s).")
