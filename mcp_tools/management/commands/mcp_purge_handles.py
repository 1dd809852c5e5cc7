"""Delete expired handles (and abandoned requests for input) in batches."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mcp_tools.handles.store import purge_expired

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Delete handles past their expiry, and requests for input nobody waits for any more."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=None)

    def handle(self, *args: Any, batch_size: int | None, **options: Any) -> None:
        handles, requests = purge_expired(batch_size)
        self.stdout.write(f"Deleted {handles} expired handle(s) and {requests} abandoned input request(s).")
