"""Create or update the demo tools; running it twice changes nothing the second time."""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from mcp_tools.models import Tool
from project.demo.tools import DEMO_TOOLS


class Command(BaseCommand):
    help = "Load the demo tools (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        created = updated = 0
        with transaction.atomic():
            for spec in DEMO_TOOLS:
                tool = Tool.objects.filter(name=spec["name"]).first()
                if tool is None:
                    tool = Tool(**spec)
                    tool.full_clean()
                    tool.save()
                    created += 1
                    continue
                changed = [k for k, value in spec.items() if getattr(tool, k) != value]
                if changed:
                    for key in changed:
                        setattr(tool, key, spec[key])
                    tool.full_clean()
                    tool.save()
                    updated += 1
        self.stdout.write(f"Demo tools: {created} created, {updated} updated, {len(DEMO_TOOLS)} in total.")
