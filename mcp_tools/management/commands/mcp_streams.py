"""Show open notification streams and list_changed sent, per serving process."""

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from mcp_tools.models import STATS_STALE_SECONDS, StreamStats

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Open list_changed listeners and notifications sent, per live serving process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="Include processes that stopped reporting.")
        parser.add_argument("--purge", action="store_true", help="Delete the rows of stopped processes.")

    def handle(self, *args: Any, all: bool, purge: bool, **options: Any) -> None:
        cutoff = timezone.now() - timedelta(seconds=STATS_STALE_SECONDS)
        if purge:
            deleted = StreamStats.objects.filter(heartbeat_at__lt=cutoff).delete()[0]
            self.stdout.write(f"Deleted {deleted} stale row(s).")
        rows = StreamStats.objects.order_by("process")
        if not all:
            rows = rows.filter(heartbeat_at__gte=cutoff)
        listeners = events = 0
        for row in rows:
            state = "" if row.is_live else "  (stopped)"
            self.stdout.write(
                f"{row.process:<32} {row.notifier:<9} listeners={row.listeners:<6} sent={row.events_sent}{state}"
            )
            if row.is_live:
                listeners += row.listeners
                events += row.events_sent
        self.stdout.write(f"total: listeners={listeners} sent={events}")
