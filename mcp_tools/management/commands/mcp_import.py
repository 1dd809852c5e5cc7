"""Read a tools export: every row is validated first, and nothing is written if one is invalid."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from mcp_tools.editing.transfer import ImportRejected, import_tools, loads

__all__ = ["Command"]


class Command(BaseCommand):
    help = "Import tools from a JSON export (create or update by name); all-or-nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The export to read ('-' for standard input).")
        parser.add_argument("--dry-run", action="store_true", help="Validate and report, write nothing.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            raw = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}") from exc
        try:
            report = import_tools(loads(raw), source="import", dry_run=options["dry_run"])
        except ImportRejected as exc:
            for problem in exc.problems:
                self.stderr.write(problem)
            raise CommandError(f"Nothing was imported: {len(exc.problems)} problem(s) in {path}") from exc
        self.stdout.write(report.summary())
