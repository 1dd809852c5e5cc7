"""The audit usage page at scale: render time with 100,000 audit rows on SQLite (in process).

    .venv/bin/python bench/usage.py              # 100,000 rows
    .venv/bin/python bench/usage.py --rows 10000

Creates a throwaway test database, bulk-creates the rows over the last week (12 tools, 50
callers, a mix of outcomes), then renders /admin/mcp_tools/auditevent/usage/ as a superuser for
each period, and prints the median of 5 renders and the number of queries.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
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
    from django.utils import timezone

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0)
    try:
        from mcp_tools.models import AuditEvent

        now = timezone.now()
        outcomes = ("ok",) * 8 + ("tool_error", "invalid", "rate_limited", "denied")
        week = 7 * 24 * 3600
        started = time.perf_counter()
        AuditEvent.objects.bulk_create(
            (
                AuditEvent(
                    created_at=now - timedelta(seconds=(i * 6047) % week),
                    tool_name=f"tool_{(i * 7) % 12}",
                    outcome=outcomes[i % len(outcomes)],
                    principal_key=f"user:{i % 50}|client:bench",
                    duration_ms=float((i * 31) % 2000) / 10,
                )
                for i in range(args.rows)
            ),
            batch_size=5000,
        )
        print(f"{args.rows} audit rows created in {time.perf_counter() - started:.1f} s")
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
