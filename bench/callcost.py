"""tools/call cost per deployment: rps, p99 and server CPU per call, in one run.

    .venv/bin/python bench/callcost.py                       # ours under uvicorn and gunicorn, bare gunicorn
    .venv/bin/python bench/callcost.py --servers ours-gunicorn --duration 5 --concurrency 32

Each server runs 2 processes on 127.0.0.1 over a SQLite database of 101 tools (the demo's plus
padding, ``bench/seed.py``); the load is wrk (1 thread, ``bench/request.lua``) sending a 2026-07-28
``tools/call`` of ``echo``. Server CPU per call is the CPU time of the server's processes (master
and workers, from ``/proc``) over the calls answered. Wall-clock numbers swing with whatever else
runs; for before/after comparisons on a shared machine count instructions with
``bench/callgrind_call.py`` under ``valgrind --tool=callgrind`` instead.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
HOST = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, str(ROOT))
from bench.callgrind_call import CALL as BODY  # noqa: E402
from bench.callgrind_call import HEADERS as _HEADERS  # noqa: E402
from tests.support.servers import free_port, stop_process  # noqa: E402

HEADERS = [(name, value) for name, value in _HEADERS.items() if name != "host"]  # wrk and urllib set Host


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants."""
    total = 0.0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return total


def command(kind: str, port: int, workers: int) -> list[str]:
    bind = f"{HOST}:{port}"
    if kind == "ours-uvicorn":
        return [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", HOST, "--port", str(port),
                "--workers", str(workers), "--log-level", "warning", "--no-access-log"]  # fmt: skip
    # The bare site's own WSGI entry: project.wsgi wraps its application in the MCP front,
    # which builds the MCP catalog the bare settings do not install.
    app = "bench.bare_wsgi:application" if kind.startswith("bare") else "project.wsgi:application"
    return [sys.executable, "-m", "gunicorn", app, "-b", bind, "-w", str(workers), "--log-level", "warning"]


def start(kind: str, env: dict[str, str], workers: int, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            command(kind, port, workers), cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{kind} exited:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=2):
                return process, port
        except OSError:
            time.sleep(0.1)
    stop_process(process)
    raise SystemExit(f"{kind} did not start:\n{log.read_text()}")


def call_once(port: int) -> bytes:
    req = urllib.request.Request(f"http://{HOST}:{port}/mcp", data=json.dumps(BODY).encode(), headers=dict(HEADERS))
    with urllib.request.urlopen(req, timeout=30) as response:
        return bytes(response.read())


def load(port: int, pid: int, concurrency: int, seconds: int, body_file: Path) -> dict[str, float]:
    flat = [item for pair in HEADERS for item in pair]
    cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "10s", "-s", str(BENCH / "request.lua"),
           f"http://{HOST}:{port}/mcp", "--", str(body_file), *flat]  # fmt: skip
    cpu = tree_cpu(pid)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60, check=True)
    cpu = tree_cpu(pid) - cpu
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("BENCH_JSON "))
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    errors = sum(raw["errors"].values())
    n = raw["requests"]
    return {
        "rps": round(n / (raw["duration_us"] / 1e6)),
        "p50_ms": raw["latency_us"]["p50"] / 1000,
        "p99_ms": raw["latency_us"]["p99"] / 1000,
        "cpu_us": round(cpu / max(n, 1) * 1e6),
        "errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default="ours-uvicorn,ours-gunicorn,bare-gunicorn")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("--reps", type=int, default=1)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-callcost-"))
    try:
        db = tmp / "bench.sqlite3"
        env = {k: v for k, v in os.environ.items() if k not in ("MCP_DATABASE", "REDIS_URL")}
        env.update(DJANGO_SETTINGS_MODULE="project.settings", DJANGO_DEBUG="0", MCP_VAR_DIR=str(tmp),
                   MCP_SQLITE_PATH=str(db), PYTHONPATH=str(ROOT), MCP_RATE_LIMIT="1000000000/h")  # fmt: skip
        subprocess.run([sys.executable, str(BENCH / "seed.py"), "101"], cwd=ROOT, env=env, check=True,
                       capture_output=True)  # fmt: skip
        body_file = tmp / "body.json"
        body_file.write_bytes(json.dumps(BODY, separators=(",", ":")).encode())
        answered: bytes | None = None
        results = []
        for kind in [s for s in args.servers.split(",") if s]:
            server_env = dict(env)
            if kind.startswith("bare"):
                if answered is None:  # the bytes ours answers, for a like-with-like body size
                    process, port = start("ours-gunicorn", env, 1, tmp / "probe.log")
                    answered = call_once(port)
                    stop_process(process)
                server_env["DJANGO_SETTINGS_MODULE"] = "bench.bare_wsgi_settings"
                server_env["BENCH_BARE_BODY"] = answered.decode("latin-1")
                server_env["BENCH_MIDDLEWARE"] = "empty"
            process, port = start(kind, server_env, args.workers, tmp / f"{kind}.log")
            try:
                reply = call_once(port)
                if kind.startswith("ours"):
                    answered = answered or reply
                    assert b'"isError"' not in reply or b'"isError":false' in reply, reply
                for c in [int(x) for x in args.concurrency.split(",")]:
                    load(port, process.pid, c, args.warmup, body_file)
                    for rep in range(args.reps):
                        row = {
                            "server": kind,
                            "c": c,
                            "rep": rep,
                            **load(port, process.pid, c, args.duration, body_file),
                        }
                        results.append(row)
                        print(json.dumps(row), flush=True)
            finally:
                stop_process(process)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
