"""Model tools benchmark (``make bench`` runs it last): ``list_book`` against a plain DRF
ListAPIView serving the same page.

    .venv/bin/python bench/models.py            # 10 s per measurement, 3 repetitions
    .venv/bin/python bench/models.py --quick    # 2 s, 1 repetition

One uvicorn process of the demo (``bench/drf_settings.py``: the ASGI front, SQLite, the demo
library seeded with 10,000 books, its toolsets synced, every caller the demo superuser so
neither side looks up a token). Sequential keep-alive requests (c=1), alternating sides:

- mcp: a 2026-07-28 ``tools/call`` of ``list_book`` (50 rows ordered by price, then the next
  page through its cursor): the endpoint, the catalog, the argument validation, the rate limit
  and audit row, the query under its timeout, the rows written as the serializer writes them
  (no output-schema check: the drf kinds vouch for it, HandlerKind.trusted_output);
- drf: ``GET /api/books`` with DRF's CursorPagination on the same ordering, serializer and
  query plan (no authentication, JSON renderer).

Reports requests per second and median latency of each, and mcp/drf. Writes
bench/results/models.json. Installs nothing; stops only the server it started.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.servers import run_server  # noqa: E402

MODERN = "2026-07-28"


class Side:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def get(self, path: str) -> dict[str, Any]:
        self.conn.request("GET", path, headers={"Accept": "application/json"})
        response = self.conn.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        return dict(json.loads(body))

    def call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
        params = {"name": "list_book", "arguments": arguments, "_meta": meta}
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": "tools/call",
            "Mcp-Name": "list_book",
        }
        self.conn.request("POST", "/mcp", body=body, headers=headers)
        response = self.conn.getresponse()
        data = json.loads(response.read())
        result = data["result"]
        assert response.status == 200, data
        assert not result.get("isError"), result
        return dict(result["structuredContent"])


def _measure(request: Any, seconds: float) -> dict[str, float]:
    for _ in range(20):  # warm-up
        request()
    latencies = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        request()
        latencies.append(time.perf_counter() - started)
    return {"rps": len(latencies) / sum(latencies), "p50_ms": statistics.median(latencies) * 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 s per measurement, 1 repetition")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    seconds, reps = (2.0, 1) if args.quick else (args.seconds, args.reps)
    env = {"DJANGO_SETTINGS_MODULE": "bench.drf_settings", "MCP_LOG_LEVEL": "WARNING"}
    with tempfile.TemporaryDirectory() as tmp, run_server(Path(tmp), extra_env=env) as server:
        for command in (["demo_superuser"], ["seed_library"], ["mcp_sync_toolsets"]):
            server.manage(*command)
        side = Side(int(urlsplit(server.base_url).port or 80))
        first = side.call({"order_by": ["price"], "limit": 50})
        cursor = first["next_cursor"]
        page = side.get("/api/books")
        assert [row["id"] for row in page["results"]] == [row["id"] for row in first["items"]]
        next_path = urlsplit(page["next"])
        requests = {
            "mcp first page": lambda: side.call({"order_by": ["price"], "limit": 50}),
            "drf first page": lambda: side.get("/api/books"),
            "mcp next page": lambda: side.call({"order_by": ["price"], "limit": 50, "cursor": cursor}),
            "drf next page": lambda: side.get(f"{next_path.path}?{next_path.query}"),
        }
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in requests}
        for rep in range(reps):
            order = list(requests) if rep % 2 == 0 else list(reversed(requests))
            for name in order:
                runs[name].append(_measure(requests[name], seconds))
    table = {
        name: {k: statistics.median(r[k] for r in found) for k in ("rps", "p50_ms")} for name, found in runs.items()
    }
    print(f"{'request':<16} {'rps':>8} {'p50 ms':>8}")
    for name, row in table.items():
        print(f"{name:<16} {row['rps']:>8.1f} {row['p50_ms']:>8.2f}")
    for page_name in ("first page", "next page"):
        ratio = table[f"mcp {page_name}"]["rps"] / table[f"drf {page_name}"]["rps"]
        print(f"mcp/drf rps, {page_name}: {ratio:.2f}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "models.json").write_text(json.dumps({"table": table, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
