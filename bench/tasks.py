"""Task benchmark (``make bench`` runs it after bench/run.py).

    .venv/bin/python bench/tasks.py            # 200 latency samples, 2000 tasks for throughput
    .venv/bin/python bench/tasks.py --quick    # 50 / 400

Starts the demo site under uvicorn (one process) and one Celery worker (threads pool) on a
Redis broker (BENCH_REDIS_URL, default redis://127.0.0.1:6379/5, a queue of its own), both on
one SQLite (default) or PostgreSQL (--db postgres) database, and measures with the no-op tool:

- delay: the client sends a task-augmented ``tools/call``; the worker stamps ``started_at`` on
  the row just before the handler runs. Sequential calls, the queue idle: median and p99 of
  (started_at - send time), same machine clock.
- throughput: N tasks submitted by several client threads as fast as the server takes them;
  tasks/s = N / (last finished_at - first send). Also the submit rate alone.

Writes bench/results/tasks.json. Installs nothing; stops only the processes it started.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.loadgen import percentile  # noqa: E402
from tests.support.servers import drop_queue, run_server, start_worker  # noqa: E402

TARGET_MEDIAN_MS = 20.0
TARGET_RATE = 200.0


class Client:
    """One keep-alive HTTP connection with a 2025-11-25 session."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.session = ""
        self.next_id = 0
        self.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b"}})

    def post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers |= {"Mcp-Session-Id": self.session, "MCP-Protocol-Version": "2025-11-25"}
        self.conn.request("POST", "/mcp", body, headers)
        response = self.conn.getresponse()
        data = response.read()
        if method == "initialize":
            self.session = response.getheader("Mcp-Session-Id") or ""
        return dict(json.loads(data)) if data else {}

    def create(self) -> tuple[str, float]:
        sent = time.time()
        answer = self.post("tools/call", {"name": "noop", "arguments": {}, "task": {}})
        return str(answer["result"]["task"]["taskId"]), sent


def _rows(env: dict[str, str], ids: list[str]) -> dict[str, tuple[float, float]]:
    """started_at / finished_at (epoch seconds) of the given tasks, read with the ORM."""
    code = (
        "import json,sys,django;django.setup();from mcp_tools.models import McpTask;"
        "ids=json.load(sys.stdin);out={}\n"
        "for i in range(0,len(ids),500):\n"
        " for pk,s,f in McpTask.objects.filter(pk__in=ids[i:i+500]).values_list('pk','started_at','finished_at'):\n"
        "  out[pk]=[s.timestamp() if s else None,f.timestamp() if f else None]\n"
        "print(json.dumps(out))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], input=json.dumps(ids), cwd=ROOT, env=env, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    return {k: (v[0], v[1]) for k, v in json.loads(done.stdout).items()}


def _wait_finished(env: dict[str, str], ids: list[str], timeout: float) -> dict[str, tuple[float, float]]:
    deadline = time.monotonic() + timeout
    while True:
        rows = _rows(env, ids)
        if all(rows.get(i, (None, None))[1] for i in ids) or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


def measure_delay(port: int, env: dict[str, str], samples: int) -> dict[str, Any]:
    client = Client(port)
    for _ in range(10):  # warm-up: catalog, connections, worker threads
        client.create()
    time.sleep(1)
    sent: dict[str, float] = {}
    for _ in range(samples):
        task_id, at = client.create()
        sent[task_id] = at
        time.sleep(0.03)  # keep the queue idle: this measures latency, not backlog
    rows = _wait_finished(env, list(sent), 60)
    delays = [(rows[i][0] - sent[i]) * 1000 for i in sent if rows.get(i, (None, None))[0]]
    return {
        "samples": len(delays),
        "median_ms": round(statistics.median(delays), 2),
        "p99_ms": round(percentile(sorted(delays), 99), 2),
        "max_ms": round(max(delays), 2),
    }


def measure_rate(port: int, env: dict[str, str], total: int, threads: int) -> dict[str, Any]:
    clients = [Client(port) for _ in range(threads)]
    ids: list[str] = []
    firsts: list[float] = []
    lock = threading.Lock()

    def submit(client: Client, count: int) -> None:
        mine = []
        first = None
        for _ in range(count):
            task_id, at = client.create()
            first = first or at
            mine.append(task_id)
        with lock:
            ids.extend(mine)
            firsts.append(first or time.time())

    per = total // threads
    workers = [threading.Thread(target=submit, args=(c, per)) for c in clients]
    began = time.time()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    submitted = time.time()
    rows = _wait_finished(env, ids, 300)
    finished = [rows[i][1] for i in ids if rows.get(i, (None, None))[1]]
    last = max(finished)
    return {
        "tasks": len(ids),
        "finished": len(finished),
        "client_threads": threads,
        "submit_per_s": round(len(ids) / (submitted - began), 1),
        "tasks_per_s": round(len(finished) / (last - min(firsts)), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--samples", type=int)
    parser.add_argument("--tasks", type=int)
    parser.add_argument("--threads", type=int, default=8, help="client threads submitting tasks")
    parser.add_argument("--concurrency", type=int, default=8, help="worker threads")
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "tasks.json")
    args = parser.parse_args(argv)
    samples = args.samples or (50 if args.quick else 200)
    total = args.tasks or (400 if args.quick else 2000)
    queue = f"mcp-bench-{uuid.uuid4().hex[:8]}"
    broker = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/5")
    # No rate limit: the bench measures the queue, not the limiter (120/m by default).
    extra = {"CELERY_BROKER_URL": broker, "MCP_TASK_QUEUE": queue, "MCP_LOG_LEVEL": "WARNING", "MCP_RATE_LIMIT": "off"}
    if args.db == "postgres":
        extra |= {"MCP_DATABASE": "postgres", "POSTGRES_DB": os.environ.get("BENCH_POSTGRES_DB", "test")}
    with tempfile.TemporaryDirectory(prefix="mcp-bench-tasks-") as tmp_name:
        tmp = Path(tmp_name)
        with run_server(tmp, extra_env=extra) as server:
            worker = start_worker(server.env, tmp / "worker.log", queue=queue, concurrency=args.concurrency)
            try:
                port = int(server.base_url.rsplit(":", 1)[1])
                delay = measure_delay(port, server.env, samples)
                rate = measure_rate(port, server.env, total, args.threads)
            finally:
                worker.stop()
                drop_queue(broker, queue)
    result = {
        "when": datetime.now(UTC).isoformat(),
        "db": args.db,
        "broker": "redis",
        "delay": delay,
        "throughput": rate,
        "targets": {"median_ms": TARGET_MEDIAN_MS, "tasks_per_s": TARGET_RATE},
        "load_avg": os.getloadavg(),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2))
    ok_delay = delay["median_ms"] <= TARGET_MEDIAN_MS
    ok_rate = rate["tasks_per_s"] >= TARGET_RATE
    print(
        f"tasks: tools/call -> handler start median {delay['median_ms']} ms, p99 {delay['p99_ms']} ms "
        f"({delay['samples']} samples) [{'ok' if ok_delay else 'MISSED'} <= {TARGET_MEDIAN_MS} ms]"
    )
    print(
        f"tasks: {rate['tasks_per_s']} tasks/s sustained over {rate['finished']}/{rate['tasks']} no-op tasks "
        f"(submit {rate['submit_per_s']}/s) [{'ok' if ok_rate else 'MISSED'} >= {TARGET_RATE}]"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
