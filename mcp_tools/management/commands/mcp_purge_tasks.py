"""Delete MCP tasks past their ttl in batches."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mcp_tools.conf import mcp_settings
from mcp_tools.models import McpTask

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Delete MCP tasks (and their results) whose ttl has passed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=None)

    def handle(self, *args: Any, batch_size: int | None, **options: Any) -> None:
        size = batch_size or int(mcp_settings.TASK_PURGE_BATCH)
        deleted = McpTask.objects.delete_expired(batch_size=size)
        self.stdout.write(f"Deleted {deleted} expired task(s).")
