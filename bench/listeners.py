"""list_changed fan-out benchmark (``make bench`` runs it after the others).

    .venv/bin/python bench/listeners.py                 # 1,000 listeners, 3 commits per notifier
    .venv/bin/python bench/listeners.py --listeners 200 --rounds 1

Starts two uvicorn processes (one worker each) on one PostgreSQL database, opens --listeners
2026-07-28 ``subscriptions/listen`` streams spread over both, then commits one tool edit from a
third process (``manage.py shell``) and times, for every listener, the moment its
``notifications/tools/list_changed`` arrives after the commit returned. Runs once with the
PostgreSQL LISTEN/NOTIFY notifier and once with Redis pub/sub. Memory per idle listener is the
servers' RSS growth while the listeners are open, divided by their number. The servers run the
demo's project.asgi (the endpoint answered by mcp_tools.asgi.McpFront); --view adds the same runs
with the endpoint as a plain view behind Django's handler and --middleware.

Targets (issue: live catalog): p99 <= 1 s from commit to the last listener, <= 50 KB per idle
listener. Needs PostgreSQL (and Redis for the second run) on 127.0.0.1. Every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.external_services import temporary_postgres_database  # noqa: E402
from tests.support.mcp_client import MODERN, modern_meta  # noqa: E402
from tests.support.servers import LiveServer, prepare_database, run_server, server_env  # noqa: E402

TARGET_P99_S = 1.0
TARGET_KB = 50.0
LISTEN_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
    }
).encode()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


class Stream:
    """One raw HTTP/1.1 listen stream: only the bytes it needs, to keep the client side light."""

    def __init__(self) -> None:
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.arrivals: list[float] = []
        self.acked = asyncio.Event()

    async def open(self, port: int) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", port)
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: subscriptions/listen\r\n"
            f"Content-Length: {len(LISTEN_BODY)}\r\n\r\n"
        ).encode()
        self.writer.write(head + LISTEN_BODY)
        await self.writer.drain()

    async def read(self) -> None:
        assert self.reader is not None
        buffer = b""
        while True:
            chunk = await self.reader.read(4096)
            if not chunk:
                return
            now = time.time()
            buffer += chunk
            if b"subscriptions/acknowledged" in buffer:
                self.acked.set()
            while b"notifications/tools/list_changed" in buffer:
                self.arrivals.append(now)
                buffer = buffer.split(b"notifications/tools/list_changed", 1)[1]
            buffer = buffer[-64:]

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def commit_edit(server: LiveServer, round_no: int) -> float:
    """Save one tool in a separate process; returns the wall time right after the commit."""
    out = server.manage(
        "shell",
        "-c",
        "import time\nfrom mcp_tools.models import Tool\n"
        "t = Tool.objects.get(name='echo')\n"
        f"t.description = 'Echo, bench round {round_no}'\n"
        "t.save()\nprint('COMMITTED', repr(time.time()))\n",
    )
    return float(out.split("COMMITTED", 1)[1].split()[0])


async def measure(servers: list[LiveServer], count: int, rounds: int) -> dict[str, Any]:
    ports = [int(s.base_url.rsplit(":", 1)[1]) for s in servers]
    pids = [s.process.pid for s in servers]
    # Warm up each server (imports, catalog, the hub and its notifier connection).
    warm = [Stream() for _ in ports]
    for stream, port in zip(warm, ports, strict=True):
        await stream.open(port)
    warm_tasks = [asyncio.create_task(s.read()) for s in warm]
    await asyncio.wait_for(asyncio.gather(*(s.acked.wait() for s in warm)), 20)
    await asyncio.sleep(1.0)
    before = [rss_kb(pid) for pid in pids]

    streams = [Stream() for _ in range(count)]
    readers = []
    for i, stream in enumerate(streams):
        await stream.open(ports[i % len(ports)])
        readers.append(asyncio.create_task(stream.read()))
        if i % 50 == 49:
            await asyncio.sleep(0.05)  # let the servers accept in batches
    await asyncio.wait_for(asyncio.gather(*(s.acked.wait() for s in streams)), 120)
    await asyncio.sleep(2.0)
    after = [rss_kb(pid) for pid in pids]
    per_listener_kb = (sum(after) - sum(before)) / count

    latencies: list[float] = []
    missing = 0
    for round_no in range(1, rounds + 1):
        expected = round_no
        committed = await asyncio.to_thread(commit_edit, servers[-1], round_no)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(len(s.arrivals) < expected for s in streams):
            await asyncio.sleep(0.05)
        for s in streams:
            if len(s.arrivals) >= expected:
                latencies.append(s.arrivals[expected - 1] - committed)
            else:
                missing += 1
        await asyncio.sleep(1.0)
    for s in streams + warm:
        s.close()
    for task in readers + warm_tasks:
        task.cancel()
    latencies.sort()
    return {
        "listeners": count,
        "rounds": rounds,
        "received": len(latencies),
        "missing": missing,
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1) if latencies else None,
        "max_ms": round(latencies[-1] * 1000, 1) if latencies else None,
        "rss_before_kb": before,
        "rss_after_kb": after,
        "kb_per_idle_listener": round(per_listener_kb, 1),
    }


def run(notifier: str, count: int, rounds: int, middleware: str, front: bool) -> dict[str, Any]:
    with temporary_postgres_database("mcp_bench") as database, tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        env = {
            "MCP_DATABASE": "postgres",
            "POSTGRES_DB": database,
            "MCP_NOTIFIER": notifier,
            "MCP_NOTIFIER_REDIS_URL": "redis://127.0.0.1:6379/8",
            "MCP_MAX_STREAMS_PER_PRINCIPAL": "0",
            "MCP_SSE_MAX_SECONDS": "600",
            "MCP_SSE_KEEPALIVE_SECONDS": "15",
            "DJANGO_SETTINGS_MODULE": "bench.ours_settings",
            "BENCH_MIDDLEWARE": middleware,
            "MCP_ASGI_FRONT": "1" if front else "0",
        }
        # Migrate with the demo settings (the admin's checks want its middleware).
        prepare_database(server_env(tmp, {**env, "DJANGO_SETTINGS_MODULE": "project.settings"}))
        with run_server(tmp, extra_env=env, prepare=False) as a, run_server(tmp, extra_env=env, prepare=False) as b:
            result = asyncio.run(measure([a, b], count, rounds))
    result["notifier"] = notifier
    result["middleware"] = middleware
    result["served_by"] = "front" if front else "view"
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--listeners", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--notifiers", default="postgres,redis")
    parser.add_argument("--middleware", default="default", help="bench/stacks.py stack of the servers")
    parser.add_argument(
        "--view",
        action="store_true",
        help="also measure the endpoint as a plain view behind Django's handler (MCP_ASGI_FRONT=0)",
    )
    args = parser.parse_args()
    results = []
    notifiers = args.notifiers.split(",")
    runs = [(n, True) for n in notifiers] + ([(n, False) for n in notifiers] if args.view else [])
    for notifier, front in runs:
        result = run(notifier, args.listeners, args.rounds, args.middleware, front)
        results.append(result)
        ok_latency = result["p99_ms"] is not None and result["p99_ms"] <= TARGET_P99_S * 1000 and not result["missing"]
        ok_memory = result["kb_per_idle_listener"] <= TARGET_KB
        served = "ASGI front" if front else f"plain view, {args.middleware} middleware"
        print(
            f"list_changed fan-out [{notifier}, {served}]: "
            f"{result['listeners']} listeners over 2 processes, "
            f"{result['rounds']} commits: received {result['received']}, missing {result['missing']}; "
            f"commit -> listener p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms "
            f"(target p99 <= {TARGET_P99_S * 1000:.0f} ms: {'met' if ok_latency else 'MISSED'}); "
            f"{result['kb_per_idle_listener']} KB per idle listener "
            f"(target <= {TARGET_KB:.0f} KB: {'met' if ok_memory else 'MISSED'})",
            flush=True,
        )
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "listeners.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
