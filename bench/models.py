"""Model tools benchmark (``make bench`` runs it last): ``list_book`` against a plain DRF
ListAPIView serving the same page, under the same servers, at c=1 and c=8.

    .venv/bin/python bench/models.py                    # SQLite and PostgreSQL, 8 s runs, 2 repetitions
    .venv/bin/python bench/models.py --quick            # 3 s runs, 1 repetition
    .venv/bin/python bench/models.py --db sqlite --servers gunicorn --concurrency 8

The demo site with ``bench/drf_settings.py`` (the demo library seeded with 10,000 books, its
toolsets synced, every caller the demo superuser so neither side looks up a token), on SQLite (the
demo's settings: WAL, ``transaction_mode: IMMEDIATE``) and on PostgreSQL (a database of its own,
``BENCH_MODELS_PG_DB``, default ``bench_models``, made and dropped by the script; skipped when
PostgreSQL is not reachable), each under:

- gunicorn: 2 sync workers, ``project.wsgi`` (the WSGI front answers /mcp);
- uvicorn: 2 workers, ``project.asgi`` (the ASGI front answers /mcp).

Two requests, checked once to return the same 50 books before load:

- mcp: a 2026-07-28 ``tools/call`` of ``list_book`` (50 rows ordered by price): the endpoint, the
  catalog, the argument validation, the rate limit (off in these settings) and audit row, the
  query under its timeout, the rows written as the serializer writes them;
- drf: ``GET /api/books``, a ``ListAPIView`` with ``CursorPagination`` on the same ordering,
  serializer and query plan (no authentication, JSON renderer).

wrk (1 thread) at each concurrency, mcp and drf alternating (the order flips per repetition),
medians. Reports req/s and p99 of each, mcp/drf, and the issue-27 targets at c=8 under gunicorn
(throughput >= 1.5x DRF's, p99 <= DRF's). Writes bench/results/models.json. Needs wrk; installs
nothing; stops only the servers it started.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peers import GUNICORN, PeerServer, ensure_gunicorn, gunicorn_cmd, start, uvicorn_cmd  # noqa: E402
from bench.run import HOST, RESULTS, free_port, post  # noqa: E402
from tests.support.servers import server_env, stop_process  # noqa: E402

MODERN = "2026-07-28"
BENCH = ROOT / "bench"
ARGUMENTS = {"order_by": ["price"], "limit": 50}
TARGET_RPS_VS_DRF = 1.5  # list_book at c=8, gunicorn sync 2 workers (issue 27)
DEPLOYMENTS = {
    "gunicorn": ("project.wsgi:application", gunicorn_cmd),
    "uvicorn": ("project.asgi:application", uvicorn_cmd),
}


def mcp_request() -> tuple[bytes, list[tuple[str, str]]]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    params = {"name": "list_book", "arguments": ARGUMENTS, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "list_book"),
    ]
    return body, headers


def wrk(url: str, script: str, args: list[str], concurrency: int, seconds: int) -> dict[str, Any]:
    cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "10s", "-s", str(BENCH / script), url,
           "--", *args]  # fmt: skip
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=seconds + 60, check=False)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("BENCH_JSON ")), None)
    if out.returncode != 0 or line is None:
        raise SystemExit(f"wrk failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    seconds_taken = raw["duration_us"] / 1e6
    return {
        "rps": raw["requests"] / seconds_taken if seconds_taken else 0.0,
        "p50_ms": raw["latency_us"]["p50"] / 1000,
        "p99_ms": raw["latency_us"]["p99"] / 1000,
        "errors": sum(raw["errors"].values()),
    }


def postgres_database(name: str) -> bool:
    """A fresh database ``name`` on the demo's PostgreSQL server; False when it is unreachable."""
    try:
        import psycopg
    except ImportError:
        return False
    try:
        with psycopg.connect(
            host=os.environ.get("POSTGRES_HOST", "127.0.0.1"),
            port=os.environ.get("POSTGRES_PORT", "5432"),
            user=os.environ.get("POSTGRES_USER", "postgres"),
            password=os.environ.get("POSTGRES_PASSWORD", ""),
            dbname="postgres",
            autocommit=True,
            connect_timeout=5,
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError:
        return False
    return True


def drop_postgres_database(name: str) -> None:
    import psycopg

    with psycopg.connect(
        host=os.environ.get("POSTGRES_HOST", "127.0.0.1"),
        port=os.environ.get("POSTGRES_PORT", "5432"),
        user=os.environ.get("POSTGRES_USER", "postgres"),
        password=os.environ.get("POSTGRES_PASSWORD", ""),
        dbname="postgres",
        autocommit=True,
        connect_timeout=5,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def site_env(tmp: Path, db: str, pg_name: str) -> dict[str, str]:
    env = server_env(tmp, {"DJANGO_SETTINGS_MODULE": "bench.drf_settings", "MCP_LOG_LEVEL": "WARNING"})
    env.pop("MCP_AUDIT_FLUSH_ROWS", None)  # the demo's batched audit, as deployed
    env["PYTHONPATH"] = os.pathsep.join((str(ROOT), str(GUNICORN)))
    env["MCP_DATABASE"] = db
    if db == "postgres":
        env["POSTGRES_DB"] = pg_name
    return env


def prepare(env: dict[str, str]) -> None:
    for args in (["migrate", "--noinput", "-v0"], ["demo_superuser"], ["seed_library"], ["mcp_sync_toolsets"]):
        out = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{out.stdout}\n{out.stderr}")


def check_same_page(server: PeerServer, body: bytes, headers: list[tuple[str, str]]) -> None:
    status, _, answer = post(server.url, body, headers)
    result = json.loads(answer).get("result", {}) if status == 200 else {}
    if status != 200 or result.get("isError"):
        raise SystemExit(f"{server.name}: list_book failed: {status} {answer[:300]!r}")
    import urllib.request

    with urllib.request.urlopen(f"http://{HOST}:{server.port}/api/books", timeout=30) as response:
        page = json.loads(response.read())
    ours = [row["id"] for row in result["structuredContent"]["items"]]
    theirs = [row["id"] for row in page["results"]]
    if ours != theirs or len(ours) != 50:
        raise SystemExit(f"{server.name}: list_book and /api/books differ: {ours[:5]} vs {theirs[:5]}")


def measure(server: PeerServer, args: argparse.Namespace, body_file: Path, headers: list[tuple[str, str]]) -> dict:  # type: ignore[type-arg]
    flat = [item for pair in headers for item in pair]
    sides = {
        "mcp": (server.url, "request.lua", [str(body_file), *flat]),
        "drf": (f"http://{HOST}:{server.port}/api/books", "request.lua", ["GET", "Accept", "application/json"]),
    }
    runs: dict[str, list[dict[str, Any]]] = {}
    for c in args.concurrency:
        for url, script, extra in sides.values():  # warm-up
            wrk(url, script, extra, c, args.warmup)
        for rep in range(args.reps):
            order = list(sides) if rep % 2 == 0 else list(reversed(sides))
            for side in order:
                url, script, extra = sides[side]
                result = wrk(url, script, extra, c, args.duration)
                runs.setdefault(f"{side} c={c}", []).append(result)
                print(f"    rep {rep + 1} {side} c={c}: {result['rps']:7.1f} rps, p99 {result['p99_ms']:7.1f} ms"
                      f"{', ERRORS ' + str(result['errors']) if result['errors'] else ''}", flush=True)  # fmt: skip
    return {
        key: {k: statistics.median(r[k] for r in found) for k in ("rps", "p50_ms", "p99_ms", "errors")}
        for key, found in runs.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 s runs, 1 repetition, 1 s warm-up")
    parser.add_argument("--duration", type=int, help="seconds per run (default 8, quick 3)")
    parser.add_argument("--reps", type=int, help="repetitions (default 2, quick 1)")
    parser.add_argument("--warmup", type=int, help="warm-up seconds (default 2, quick 1)")
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--db", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--servers", default="gunicorn,uvicorn", help="gunicorn, uvicorn or both")
    parser.add_argument("--output", type=Path, default=RESULTS / "models.json")
    args = parser.parse_args(argv)
    args.duration = args.duration or (3 if args.quick else 8)
    args.reps = args.reps or (1 if args.quick else 2)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    args.concurrency = [int(x) for x in args.concurrency.split(",") if x.strip()]
    if args.duration > 120 or args.reps > 10 or args.warmup > 30 or max(args.concurrency) > 64:
        parser.error("keep --duration <= 120, --reps <= 10, --warmup <= 30 and concurrency <= 64")
    if shutil.which("wrk") is None:
        raise SystemExit("bench/models.py needs wrk (make wrk)")
    ensure_gunicorn()
    pg_name = os.environ.get("BENCH_MODELS_PG_DB", "bench_models")
    table: dict[str, dict[str, dict[str, Any]]] = {}
    body, headers = mcp_request()
    for db in [d.strip() for d in args.db.split(",") if d.strip()]:
        if db == "postgres" and not postgres_database(pg_name):
            print("PostgreSQL is not reachable: skipped")
            continue
        tmp = Path(tempfile.mkdtemp(prefix="mcp-models-"))
        try:
            env = site_env(tmp, db, pg_name)
            began = time.monotonic()
            prepare(env)
            print(f"{db}: 10,000 books seeded and synced in {time.monotonic() - began:.0f} s", flush=True)
            body_file = tmp / "list_book.json"
            body_file.write_bytes(body)
            for name in [s.strip() for s in args.servers.split(",") if s.strip()]:
                app, command = DEPLOYMENTS[name]
                port = free_port()
                server = start(f"{name}-{db}", command(sys.executable, app, port), ROOT, env, tmp, port)
                try:
                    check_same_page(server, body, headers)
                    print(f"  {name} 2 workers, {db}", flush=True)
                    table[f"{name} {db}"] = measure(server, args, body_file, headers)
                finally:
                    stop_process(server.process)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if db == "postgres":
                drop_postgres_database(pg_name)
    missed = print_table(table, args.concurrency)
    args.output.parent.mkdir(exist_ok=True)
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    args.output.write_text(json.dumps({"settings": settings, "table": table, "missed": missed}, indent=2))
    print(f"\nTargets missed: {len(missed)}{' (' + '; '.join(missed) + ')' if missed else ''}; wrote {args.output}")
    return 0


def print_table(table: dict[str, dict[str, dict[str, Any]]], concurrency: list[int]) -> list[str]:
    print("\nlist_book (50 books by price, 10,000 books) against DRF's ListAPIView; req/s, p99 ms; medians\n")
    print(f"{'deployment':<18} {'c':>3} | {'mcp rps':>8} {'p99':>7} | {'drf rps':>8} {'p99':>7} | {'mcp/drf':>7}")
    missed = []
    for deployment, cells in table.items():
        for c in concurrency:
            mcp, drf = cells.get(f"mcp c={c}"), cells.get(f"drf c={c}")
            if mcp is None or drf is None:
                continue
            ratio = mcp["rps"] / drf["rps"] if drf["rps"] else float("nan")
            print(f"{deployment:<18} {c:>3} | {mcp['rps']:8.1f} {mcp['p99_ms']:7.1f} | {drf['rps']:8.1f} "
                  f"{drf['p99_ms']:7.1f} | {ratio:7.2f}")  # fmt: skip
            if deployment.startswith("gunicorn") and c == 8:
                if ratio < TARGET_RPS_VS_DRF:
                    missed.append(f"{deployment} c=8 rps {ratio:.2f}x DRF < {TARGET_RPS_VS_DRF}")
                if mcp["p99_ms"] > drf["p99_ms"]:
                    missed.append(f"{deployment} c=8 p99 {mcp['p99_ms']:.1f} ms > DRF's {drf['p99_ms']:.1f}")
    print(f"\nTargets (issue 27), gunicorn sync 2 workers at c=8: req/s >= {TARGET_RPS_VS_DRF}x DRF's, p99 <= DRF's")
    return missed


if __name__ == "__main__":
    sys.exit(main())
