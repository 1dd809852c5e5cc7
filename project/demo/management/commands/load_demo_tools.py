"""Create or update the demo tools; running it twice changes nothing the second time."""

from typing import Any

from django.core.management.base import BaseCommand
from django.db import transaction

from mcp_tools.models import Scope, Tool
from project.demo.tools import DEMO_SCOPES, DEMO_TOOL_SCOPES, DEMO_TOOLS


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
            scopes = {}
            for name, description, advertised, _implies in DEMO_SCOPES:
                scopes[name], _ = Scope.objects.get_or_create(
                    name=name, defaults={"description": description, "advertised": advertised}
                )
            for name, _description, _advertised, implies in DEMO_SCOPES:
                wanted = {scopes[n] for n in implies}
                if set(scopes[name].implies.all()) != wanted:
                    scopes[name].implies.set(wanted)
            for tool in Tool.objects.filter(name__in=[spec["name"] for spec in DEMO_TOOLS]):
                wanted = {scopes[n] for n in DEMO_TOOL_SCOPES.get(tool.name, [])}
                if set(tool.required_scopes.all()) != wanted:
                    tool.required_scopes.set(wanted)
        self.stdout.write(f"Demo tools: {created} created, {updated} updated, {len(DEMO_TOOLS)} in total.")
