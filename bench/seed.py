"""Prepare one benchmark database: migrate, load the demo tools, then pad to N tools in total.

Run as ``python bench/seed.py TOTAL [--only-echo]`` with DJANGO_SETTINGS_MODULE and
MCP_SQLITE_PATH set; prints a JSON line with the number of enabled tools and the catalog version.
``--only-echo`` disables every demo tool but ``echo`` first: the peers' catalog (bench/peers.py),
echo plus TOTAL - 1 small tools.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(total: int, only_echo: bool = False) -> None:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from mcp_tools.models import CatalogVersion, Tool

    call_command("migrate", "--noinput", verbosity=0)
    call_command("load_demo_tools", stdout=open("/dev/null", "w"))  # noqa: SIM115
    if only_echo:
        Tool.objects.exclude(name="echo").update(enabled=False)
    existing = Tool.objects.enabled().count()
    extra = max(0, total - existing)
    schema = {
        "type": "object",
        "properties": {"text": {"type": "string", "description": "Text to repeat"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    with transaction.atomic():
        Tool.objects.bulk_create(
            [
                Tool(
                    name=f"bench_tool_{i:05d}",
                    title=f"Bench tool {i}",
                    description=f"Benchmark tool number {i}: repeats the given text back, like echo.",
                    input_schema=schema,
                    handler_key="demo.echo",
                    read_only_hint=True,
                )
                for i in range(extra)
            ],
            batch_size=500,
        )
        CatalogVersion.bump()
    print(json.dumps({"tools": Tool.objects.enabled().count(), "catalog_version": CatalogVersion.current()}))


if __name__ == "__main__":
    main(int(sys.argv[1]), "--only-echo" in sys.argv[2:])
