"""Batch flood: how much memory 1 MiB JSON-RPC batches cost the server (issue 20, bounded work).

    .venv/bin/python bench/batch_flood.py                  # 30 s, 4 at a time, ~7,000 items a batch
    .venv/bin/python bench/batch_flood.py --items 32       # batches the server accepts, same 1 MiB
    .venv/bin/python bench/batch_flood.py --shape empty    # [{},{},...]: the costliest body to decode
    .venv/bin/python bench/batch_flood.py --seconds 10 --concurrency 2

Starts the demo site under uvicorn (one worker, ``project.asgi``, SQLite with the demo tools, as
the README deploys it) on 127.0.0.1, opens a 2025-03-26 session (the revision with batches),
reads the server's idle RSS (the sum over its process tree, from /proc), then POSTs batches of
``--items`` ``tools/list`` requests padded up to ``--body-bytes`` (1 MiB, MAX_BODY_BYTES), each
answer read and dropped, ``--concurrency`` at a time for ``--seconds``, sampling the RSS every
50 ms. Afterwards the server must still answer a ping. Prints idle RSS, peak RSS, the delta and
the number of batches answered; exits 1 when the delta passes ``--max-delta-mb`` (50) or the
server stopped answering. Bounded: the flood ends after ``--seconds`` (and is cut short if the
server passes ``--rss-cap-mb``), each request times out, and the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.servers import run_server  # noqa: E402

HOST = "127.0.0.1"
REVISION = "2025-03-26"
MB = 1024 * 1024


def tree_rss_kb(root: int) -> int:
    """VmRSS summed over ``root`` and every process descending from it."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        pending.extend(parents.get(pid, ()))
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def post(port: int, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int, dict[str, str], int, bytes]:
    """(status, headers, bytes in the answer, its first 4 KB); the rest is read and dropped."""
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(
            "POST",
            "/mcp",
            body,
            {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
        )
        response = conn.getresponse()
        head, size = b"", 0
        while chunk := response.read(65_536):
            if len(head) < 4096:
                head += chunk[: 4096 - len(head)]
            size += len(chunk)
        return response.status, {k.lower(): v for k, v in response.getheaders()}, size, head
    finally:
        conn.close()


def open_session(port: int) -> str:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "flood", "version": "1"}},
    }
    status, headers, _, head = post(port, json.dumps(init).encode(), {}, 10)
    if status != 200 or "mcp-session-id" not in headers:
        raise RuntimeError(f"initialize failed: {status} {head[:300]!r}")
    session = headers["mcp-session-id"]
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    post(port, note, {"Mcp-Session-Id": session}, 10)
    return session


def batch_body(items: int, body_bytes: int) -> bytes:
    """``items`` tools/list requests, each padded with an ignored ``_meta`` string, so the body is
    just under ``body_bytes``."""
    bare = [{"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": {"_meta": {"pad": ""}}} for i in range(items)]
    room = body_bytes - len(json.dumps(bare, separators=(",", ":"))) - 16
    pad, extra = divmod(max(room, 0), items)
    for i, item in enumerate(bare):
        item["params"]["_meta"]["pad"] = "x" * (pad + (1 if i < extra else 0))
    body = json.dumps(bare, separators=(",", ":")).encode()
    assert len(body) <= body_bytes, len(body)
    return body


def empty_objects_body(body_bytes: int) -> bytes:
    """``[{},{},...]`` up to ``body_bytes``: the most Python objects a body of that size decodes to."""
    return b"[" + b",".join([b"{}"] * ((body_bytes - 2) // 3)) + b"]"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the flood (default 30)")
    parser.add_argument("--concurrency", type=int, default=4, help="batches in flight at once (default 4)")
    parser.add_argument("--items", type=int, default=7000, help="tools/list requests per batch (default 7000)")
    parser.add_argument(
        "--shape",
        choices=("padded", "empty"),
        default="padded",
        help="padded: --items tools/list requests padded to the body size; empty: [{},{},...] (costliest to decode)",
    )
    parser.add_argument("--body-bytes", type=int, default=MB, help="size of each body (default 1 MiB)")
    parser.add_argument("--max-delta-mb", type=float, default=50.0, help="fail above this RSS growth (default 50)")
    parser.add_argument("--rss-cap-mb", type=float, default=6144.0, help="cut the flood short above this RSS")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one request may take (default 60)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    body = batch_body(args.items, args.body_bytes) if args.shape == "padded" else empty_objects_body(args.body_bytes)
    with tempfile.TemporaryDirectory(prefix="batch-flood-") as tmp, run_server(Path(tmp)) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        pid = server.process.pid
        session = open_session(port)
        headers = {"Mcp-Session-Id": session}
        # One small batch first: the catalog and its first page are built before the idle reading.
        status, _, size, head = post(port, batch_body(2, 4096), headers, 10)
        if status != 200:
            raise RuntimeError(f"a 2-item batch failed: {status} {head[:300]!r}")
        time.sleep(1.0)
        idle = tree_rss_kb(pid)
        stop = threading.Event()
        lock = threading.Lock()
        outcome: dict[str, Any] = {"answered": 0, "failed": 0, "bytes": 0, "statuses": {}, "example": b""}

        def flood() -> None:
            while not stop.is_set():
                try:
                    status, _, size, head = post(port, body, headers, args.timeout)
                except OSError as exc:
                    with lock:
                        outcome["failed"] += 1
                        outcome["statuses"][type(exc).__name__] = outcome["statuses"].get(type(exc).__name__, 0) + 1
                    time.sleep(0.1)
                    continue
                with lock:
                    outcome["answered"] += 1
                    outcome["bytes"] += size
                    outcome["statuses"][status] = outcome["statuses"].get(status, 0) + 1
                    outcome["example"] = outcome["example"] or head[:200]

        threads = [threading.Thread(target=flood, daemon=True) for _ in range(args.concurrency)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        peak, capped = idle, False
        while time.monotonic() - began < args.seconds:
            peak = max(peak, tree_rss_kb(pid))
            if peak > args.rss_cap_mb * 1024:
                capped = True
                break
            time.sleep(0.05)
        stop.set()
        for thread in threads:  # each finishes the request it is in (bounded by --timeout)
            while thread.is_alive():
                peak = max(peak, tree_rss_kb(pid))
                thread.join(0.05)
        elapsed = time.monotonic() - began
        ping = json.dumps({"jsonrpc": "2.0", "id": 99, "method": "ping"}).encode()
        try:
            status, _, _, head = post(port, ping, headers, 10)
            alive = status == 200 and b'"result"' in head
        except OSError:
            alive = False
        after = tree_rss_kb(pid)
    delta = (peak - idle) / 1024
    what = f"{args.items} tools/list" if args.shape == "padded" else f"{body.count(b',') + 1} empty objects"
    print(f"batch flood: {what} per batch, {len(body)} bytes a body, {args.concurrency} at a time")
    print(f"  idle RSS      {idle / 1024:8.1f} MB")
    print(f"  peak RSS      {peak / 1024:8.1f} MB{'  (cut short at --rss-cap-mb)' if capped else ''}")
    print(f"  delta         {delta:8.1f} MB   (limit {args.max_delta_mb:g} MB)")
    print(f"  after         {after / 1024:8.1f} MB")
    print(f"  batches       {outcome['answered']} answered, {outcome['failed']} failed in {elapsed:.1f} s")
    print(f"  answer bytes  {outcome['bytes']} ({outcome['bytes'] / max(outcome['answered'], 1):.0f} per batch)")
    print(f"  statuses      {outcome['statuses']}")
    print(f"  an answer     {outcome['example'][:160]!r}")
    print(f"  ping after    {'answered' if alive else 'NO ANSWER'}")
    return 0 if alive and delta <= args.max_delta_mb and not capped else 1


if __name__ == "__main__":
    sys.exit(main())
