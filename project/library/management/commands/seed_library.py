"""Seed the demo library (10,000 books by default); running it again adds only what is missing."""

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from project.library.seed import seed


class Command(BaseCommand):
    help = "Seed the demo library: authors, tags, books (bulk_create; idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--books", type=int, default=10_000, help="How many books there should be.")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        created = seed(options["books"])
        self.stdout.write(f"Library: {created} books created in {time.perf_counter() - started:.1f} s.")
