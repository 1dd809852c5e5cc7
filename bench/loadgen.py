"""Fallback HTTP/1.1 load generator: keep-alive connections over raw asyncio sockets.

Run in its own process by bench/run.py when wrk is not installed:

    python bench/loadgen.py PORT BODY_FILE CONCURRENCY SECONDS [HEADER VALUE]...

Sends the same POST to 127.0.0.1:PORT/mcp from CONCURRENCY connections for SECONDS (at most
MAX_REQUESTS in all) and prints one ``BENCH_JSON {...}`` line in the format of bench/request.lua.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

HOST = "127.0.0.1"
MAX_REQUESTS = 5_000_000
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 10.0


class Stats:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.bytes = 0
        self.errors = {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0}
        self.sent = 0


async def read_response(reader: asyncio.StreamReader) -> tuple[int, int, bool]:
    """Read one response; returns (status, bytes read, whether the server closes the connection)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    chunked = False
    closes = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection" and b"close" in value.lower():
            closes = True  # gunicorn's sync workers answer every request so (no keep-alive)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    size = len(head)
    if length is not None:
        size += len(await reader.readexactly(length))
    elif chunked:
        for _ in range(1_000_000):
            size_line = await reader.readuntil(b"\r\n")
            chunk = int(size_line.split(b";", 1)[0], 16)
            size += len(size_line) + len(await reader.readexactly(chunk + 2))
            if chunk == 0:
                break
    return status, size, closes


async def connection(request: bytes, start: asyncio.Event, deadline_box: list[float], stats: Stats) -> None:
    """One client: requests one after another, on a new connection whenever the server closed
    the last one (as wrk does; gunicorn's sync workers close after every answer)."""
    opened = await _open(stats)
    if opened is None:
        return
    reader, writer = opened
    try:
        await start.wait()
        deadline = deadline_box[0]
        clock = time.perf_counter
        while stats.sent < MAX_REQUESTS:
            began = clock()
            if began >= deadline:
                break
            if writer.is_closing():
                opened = await _open(stats)
                if opened is None:
                    return
                reader, writer = opened
            stats.sent += 1
            try:
                writer.write(request)
            except OSError:
                stats.errors["write"] += 1
                return
            try:
                status, size, closes = await asyncio.wait_for(read_response(reader), READ_TIMEOUT)
            except TimeoutError:
                stats.errors["timeout"] += 1
                return
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
                stats.errors["read"] += 1
                return
            stats.latencies.append(clock() - began)
            stats.bytes += size
            if not 200 <= status < 400:
                stats.errors["status"] += 1
            if closes:
                writer.close()
    finally:
        writer.close()


async def _open(stats: Stats) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    try:
        return await asyncio.wait_for(asyncio.open_connection(HOST, PORT), CONNECT_TIMEOUT)
    except (TimeoutError, OSError):
        stats.errors["connect"] += 1
        return None


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return 0.0
    index = min(len(values) - 1, max(0, round(pct / 100 * len(values) + 0.5) - 1))
    return values[index]


async def run(request: bytes, concurrency: int, seconds: float) -> dict[str, object]:
    stats = Stats()
    start = asyncio.Event()
    deadline_box = [0.0]
    tasks = [asyncio.ensure_future(connection(request, start, deadline_box, stats)) for _ in range(concurrency)]
    await asyncio.sleep(0.2)  # let every connection open before the clock starts
    began = time.perf_counter()
    deadline_box[0] = began + seconds
    start.set()
    await asyncio.wait_for(asyncio.gather(*tasks), seconds + READ_TIMEOUT + CONNECT_TIMEOUT)
    elapsed = time.perf_counter() - began
    lat = sorted(stats.latencies)
    return {
        "requests": len(lat),
        "duration_us": int(elapsed * 1e6),
        "bytes": stats.bytes,
        "errors": stats.errors,
        "latency_us": {
            "p50": int(percentile(lat, 50) * 1e6),
            "p90": int(percentile(lat, 90) * 1e6),
            "p99": int(percentile(lat, 99) * 1e6),
            "mean": round(sum(lat) / len(lat) * 1e6, 1) if lat else 0.0,
            "max": int(lat[-1] * 1e6) if lat else 0,
        },
    }


def build_request(port: int, body: bytes, headers: list[tuple[str, str]]) -> bytes:
    lines = [
        "POST /mcp HTTP/1.1",
        f"Host: {HOST}:{port}",
        f"Content-Length: {len(body)}",
        *(f"{name}: {value}" for name, value in headers),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


PORT = 0


def main(argv: list[str]) -> None:
    global PORT
    PORT = int(argv[0])
    body = Path(argv[1]).read_bytes()
    concurrency = int(argv[2])
    seconds = float(argv[3])
    rest = argv[4:]
    headers = list(zip(rest[::2], rest[1::2], strict=True))
    request = build_request(PORT, body, headers)
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(run(request, concurrency, seconds))
    else:
        result = uvloop.run(run(request, concurrency, seconds))
    print("BENCH_JSON " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
