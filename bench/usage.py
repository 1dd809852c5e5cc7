"""The audit usage page at scale: render time with 100,000 audit rows (in process).

    .venv/bin/python bench/usage.py              # 100,000 rows, SQLite
    .venv/bin/python bench/usage.py --rows 1000000
    MCP_TEST_DB=postgres MCP_TEST_DB_NAME=test_usage .venv/bin/python bench/usage.py

Creates a throwaway test database, inserts the rows over the last week (12 tools, 50 callers, a
mix of outcomes; the demo's ``demo_audit_rows`` command makes the same ones), then renders
/admin/mcp_tools/auditevent/usage/ as a superuser for each period, and prints the median of 5
renders and the number of queries (``BENCH_SQL=1``: each query's time and its start;
``BENCH_ANALYZE=1``: ANALYZE on PostgreSQL after the insert, as autovacuum soon would).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0)
    try:
        from project.demo.management.commands.demo_audit_rows import insert

        started = time.perf_counter()
        insert(args.rows)
        print(f"{args.rows} audit rows created in {time.perf_counter() - started:.1f} s")
        if connection.vendor == "postgresql" and os.environ.get("BENCH_ANALYZE"):
            with connection.cursor() as cursor:  # what autovacuum does soon after a bulk insert
                cursor.execute("ANALYZE mcp_tools_auditevent")
        get_user_model().objects.create_superuser("bench", "bench@example.com", "pw")
        client = Client()
        client.login(username="bench", password="pw")  # noqa: S106
        for period in ("hour", "day", "week"):
            times = []
            for _ in range(5):
                with CaptureQueriesContext(connection) as queries:
                    t0 = time.perf_counter()
                    response = client.get("/admin/mcp_tools/auditevent/usage/", {"period": period})
                    times.append(time.perf_counter() - t0)
                assert response.status_code == 200
            if os.environ.get("BENCH_SQL"):
                for q in queries.captured_queries:
                    print("  ", q["time"], q["sql"][:90])
            print(f"period={period}: median {statistics.median(times) * 1000:.0f} ms, "
                  f"{len(queries.captured_queries)} queries")  # fmt: skip
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
