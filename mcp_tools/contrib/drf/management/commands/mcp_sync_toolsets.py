"""Create or update the tool rows of every registered model toolset (idempotent)."""

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...sync import sync_toolsets

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Write the tool rows of the model toolsets registered in code (mcp_tools.contrib.drf)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Also rewrite names, titles, descriptions and scopes edited in the admin.",
        )
        parser.add_argument(
            "--prune",
            action="store_true",
            help="Delete rows of toolsets or operations no longer declared (default: disable).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = sync_toolsets(reset=options["reset"], prune=options["prune"])
        except ValidationError as exc:
            raise CommandError(f"A model tool row is invalid: {exc}") from exc
        except ValueError as exc:  # e.g. an action the model's ModelAdmin does not have
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Model tools: {report.summary()}.")
        for name in report.created + report.updated:
            self.stdout.write(f"  {'created' if name in report.created else 'updated'} {name}")
        for name in report.disabled:
            self.stdout.write(f"  disabled {name} (no longer declared)")
