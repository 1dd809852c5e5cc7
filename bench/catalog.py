"""Catalog scale: 10,000 tools seen through 100 scope sets, in one process (``make bench``).

    .venv/bin/python bench/catalog.py            # 10,000 tools, 100 scope sets (about 1-2 min)
    .venv/bin/python bench/catalog.py --quick    # 10,000 tools, 20 scope sets

Seeds a SQLite database (bench/seed.py), gives every tool one of 7 required scopes, then in
this process:
- builds the catalog (``get_catalog``) and reports the time and the memory it holds (tracemalloc);
- walks every ``tools/list`` page of every scope set (100 distinct sets of those scopes, each
  seeing about 0-100 % of the tools) through the catalog's page cache
  (``Catalog.cached_page``, ``select_page``, ``remember_page``), the code ``tools/list`` runs,
  with the cursor encoding of the real endpoint: the cost of a page built (a miss) and of a
  page served from the cache (a hit), first page and pages deeper in the catalog;
- does the walk once with the default page cache bound (``PAGE_CACHE_BYTES``) and once
  unbounded, and reports what the page cache holds (pages, counted bytes, and the memory
  tracemalloc sees the walk keep), against the bound.
Writes bench/results/catalog.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "bench" / "results"
SCOPES = [f"bench.scope{i}" for i in range(7)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20 scope sets instead of 100")
    parser.add_argument("--tools", type=int, default=10_000)
    parser.add_argument("--scope-sets", type=int, help="distinct scope sets (default 100, quick 20; at most 127)")
    parser.add_argument("--page-size", type=int, default=50)
    parser.add_argument("--output", type=Path, default=RESULTS / "catalog.json")
    args = parser.parse_args(argv)
    args.scope_sets = args.scope_sets or (20 if args.quick else 100)
    if not 1 <= args.scope_sets <= 2 ** len(SCOPES) - 1 or not 1 <= args.tools <= 100_000:
        parser.error(f"--scope-sets takes 1..{2 ** len(SCOPES) - 1}, --tools 1..100000")
    return args


def setup(tmp: Path, tools: int) -> dict[str, Any]:
    db = tmp / "catalog.sqlite3"
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DJANGO_DEBUG": "0",
            "MCP_VAR_DIR": str(tmp),
            "MCP_SQLITE_PATH": str(db),
        }
    )
    os.environ.pop("MCP_DATABASE", None)
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "seed.py"), str(tools)],
        cwd=ROOT, env=os.environ.copy(), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"seeding failed:\n{out.stdout}\n{out.stderr}")
    import django

    django.setup()
    from django.db import transaction

    from mcp_tools.models import CatalogVersion, Scope, Tool

    with transaction.atomic():
        scopes = [Scope.objects.create(name=name, description=name) for name in SCOPES]
        link = Tool.required_scopes.through
        pks = list(Tool.objects.order_by("name").values_list("pk", flat=True))
        link.objects.bulk_create(
            [link(tool_id=pk, scope_id=scopes[i % len(scopes)].pk) for i, pk in enumerate(pks)], batch_size=1000
        )
        CatalogVersion.bump()
    return {"tools": len(pks), "scopes": len(SCOPES)}


def principals(count: int) -> list[Any]:
    from mcp_tools.types import Principal

    return [
        Principal(key=f"p{n}", granted=frozenset(s for bit, s in enumerate(SCOPES) if n >> bit & 1))
        for n in range(1, count + 1)
    ]


def walk(catalog: Any, principal: Any, page_size: int, misses: list[float], hits: list[float] | None) -> list[float]:
    """Every page of ``principal``; appends the time of each to ``misses`` (or ``hits``)."""
    import orjson

    from mcp_tools.auth import get_auth_backend
    from mcp_tools.catalog import PageQuery
    from mcp_tools.protocol.cursor import decode_cursor, encode_cursor
    from mcp_tools.protocol.versions import LATEST, get_revision
    from mcp_tools.services.identity import cursor_key

    key = cursor_key()
    rev = get_revision(LATEST)
    visible = get_auth_backend().can_see
    scoped = catalog.with_permissions(principal)

    def render(tools: list[dict[str, Any]], next_after: str | None) -> bytes:
        result: dict[str, Any] = {"resultType": "complete", "tools": tools}
        if next_after is not None:
            result["nextCursor"] = encode_cursor(next_after, key, scope="tools/list")
        return orjson.dumps(result)

    times, cursor = [], None
    while True:
        t0 = time.perf_counter()
        after = None if cursor is None else decode_cursor(cursor, key, scope="tools/list")
        query = PageQuery(rev, scoped, visible, after, page_size, tasks_enabled=False)
        body = catalog.cached_page(query)
        if body is None:
            page = catalog.select_page(query)
            body = render(page.tools, page.next_after)
            catalog.remember_page(page, body)
        elapsed = time.perf_counter() - t0
        times.append(elapsed)
        (misses if hits is None else hits).append(elapsed)
        cursor = orjson.loads(body).get("nextCursor")
        if cursor is None:
            return times


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    began = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-catalog-"))
    try:
        seeded = setup(tmp, args.tools)
        from django.test import override_settings

        from mcp_tools import catalog as catalog_module
        from mcp_tools.conf import mcp_settings

        report: dict[str, Any] = {"seeded": seeded, "scope_sets": args.scope_sets, "page_size": args.page_size}
        print(f"catalog bench: {seeded['tools']} tools, each requiring one of {seeded['scopes']} scopes; "
              f"{args.scope_sets} scope sets; page size {args.page_size}")  # fmt: skip

        # The build, timed, then again under tracemalloc for what the catalog holds.
        catalog_module.reset()
        t0 = time.perf_counter()
        catalog_module.get_catalog()
        build_s = time.perf_counter() - t0
        catalog_module.reset()
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        catalog = catalog_module.get_catalog()
        catalog_mb = (tracemalloc.get_traced_memory()[0] - before) / 2**20
        tracemalloc.stop()
        report["build"] = {"seconds": round(build_s, 3), "catalog_mb": round(catalog_mb, 2)}
        print(f"  build: {build_s * 1000:.0f} ms; the catalog holds {catalog_mb:.1f} MB (tools, no pages yet)")

        people = principals(args.scope_sets)
        runs: dict[str, Any] = {}
        for label, limit in (("default", mcp_settings.PAGE_CACHE_BYTES), ("unbounded", 1 << 40)):
            with override_settings(MCP_TOOLS={"PAGE_SIZE": args.page_size, "PAGE_CACHE_BYTES": limit}):
                catalog_module.reset()
                catalog = catalog_module.get_catalog()
                gc.collect()
                tracemalloc.start()
                held_before = tracemalloc.get_traced_memory()[0]
                misses: list[float] = []
                first: list[float] = []
                deep: list[float] = []
                t0 = time.perf_counter()
                pages_seen = 0
                for person in people:
                    times = walk(catalog, person, args.page_size, misses, None)
                    pages_seen += len(times)
                    first.append(times[0])
                    deep.extend(times[len(times) // 2 :][:1])
                walk_s = time.perf_counter() - t0
                gc.collect()
                held_mb = (tracemalloc.get_traced_memory()[0] - held_before) / 2**20
                tracemalloc.stop()
                pages, counted = catalog.page_cache_stats()
                hits: list[float] = []
                for person in people[-5:]:  # the most recently used: still cached under any bound
                    walk(catalog, person, args.page_size, [], hits)
                runs[label] = {
                    "limit_bytes": limit,
                    "pages_walked": pages_seen,
                    "walk_seconds": round(walk_s, 2),
                    "miss_ms_median": statistics.median(misses) * 1000,
                    "miss_ms_p99": sorted(misses)[int(len(misses) * 0.99)] * 1000,
                    "first_page_miss_ms_median": statistics.median(first) * 1000,
                    "middle_page_miss_ms_median": statistics.median(deep) * 1000,
                    "hit_us_median": statistics.median(hits) * 1e6,
                    "cached_pages": pages,
                    "cached_counted_mb": counted / 2**20,
                    "walk_kept_mb": held_mb,
                }
                r = runs[label]
                bound = "unbounded" if label == "unbounded" else f"bound {limit / 2**20:.0f} MiB (PAGE_CACHE_BYTES)"
                print(
                    f"  {label:<9} {bound}: {pages_seen} pages walked in {walk_s:.1f} s; a page built "
                    f"{r['miss_ms_median']:.2f} ms median (p99 {r['miss_ms_p99']:.2f}; first page "
                    f"{r['first_page_miss_ms_median']:.2f}, middle {r['middle_page_miss_ms_median']:.2f}), served "
                    f"from the cache {r['hit_us_median']:.1f} us; cache: {pages} pages, {r['cached_counted_mb']:.1f} "
                    f"MB counted, {held_mb:.1f} MB kept by the walk (tracemalloc: pages, views, keys)"
                )
        report["runs"] = runs
        within = runs["default"]["cached_counted_mb"] * 2**20 <= runs["default"]["limit_bytes"]
        report["bound_holds"] = within
        print(f"  the default bound {'holds' if within else 'is EXCEEDED'}: the unbounded cache would hold "
              f"{runs['unbounded']['cached_counted_mb']:.1f} MB for these {args.scope_sets} scope sets")  # fmt: skip
        report["elapsed_seconds"] = round(time.monotonic() - began, 1)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n")
        shown = args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output
        print(f"wrote {shown} in {report['elapsed_seconds']:.0f} s")
        return 0 if within else 1
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
