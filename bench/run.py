"""Benchmark /mcp against a bare Django view in the same run (``make bench``).

    .venv/bin/python bench/run.py            # full: 10 s runs, 3 interleaved repetitions
    .venv/bin/python bench/run.py --quick    # 3 s runs, 1 repetition

Starts, on 127.0.0.1 under uvicorn with one worker each:
- ours: the demo site (project.asgi: the endpoint answered by mcp_tools.asgi.McpFront) on a
  SQLite database of --tools tools (15 demo tools plus bulk-created ones), once per middleware
  stack;
- view: the same with MCP_ASGI_FRONT=0 (the endpoint as a plain view behind Django's handler
  and the stack's middleware), once per stack (--no-view skips it);
- bare: bench/bare_settings.py, one async view that parses the request with orjson and
  returns the bytes ours answered to the same request, once per middleware stack;
- ours again on databases of --scale sizes, for the tools/list scaling check.

Loads each from a separate process (wrk when installed, else bench/loadgen.py) and prints
rps, p50, p99 and server CPU per request, the ratios ours/bare and the scaling line; writes
everything to bench/results/latest.json. Installs nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
HOST = "127.0.0.1"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TARGET_RATIO = 0.8
TARGET_AUTH_RATIO = 0.5  # issue 14: with DOT tokens, >= 0.5x the bare Django view of the same run
TARGET_SCALING = 1.2
NOISY_PCT = 15.0  # CPU used by other processes (% of one core) above which a run is flagged
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

sys.path.insert(0, str(ROOT))
from bench.stacks import STACKS  # noqa: E402
from tests.support.servers import stop_process  # noqa: E402

# --------------------------------------------------------------------------- requests


def request_for(shape: str, method: str, session_id: str | None, cursor: str | None = None) -> tuple[bytes, list]:
    """The JSON-RPC body and headers of one benchmark request of ``shape``."""
    params: dict[str, Any] = {}
    if method == "tools/call":
        params = {"name": "echo", "arguments": {"text": "hello"}}
    if cursor is not None:
        params["cursor"] = cursor
    headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
    if shape == "modern":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers += [("MCP-Protocol-Version", MODERN), ("Mcp-Method", method)]
        if method == "tools/call":
            headers.append(("Mcp-Name", "echo"))
    else:
        assert session_id is not None
        headers += [("MCP-Protocol-Version", LEGACY), ("Mcp-Session-Id", session_id)]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, separators=(",", ":"))
    return body.encode(), headers


def post(url: str, body: bytes, headers: list[tuple[str, str]]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def open_session(url: str, extra: list[tuple[str, str]] | None = None) -> str:
    """Legacy shape: initialize once and send notifications/initialized; returns the session id."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
    }
    headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream"), *(extra or [])]
    status, got, body = post(url, json.dumps(init).encode(), headers)
    session_id = got.get("mcp-session-id")
    if status != 200 or not session_id:
        raise SystemExit(f"initialize failed: {status} {body[:300]!r}")
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    status, _, body = post(url, note, [*headers, ("Mcp-Session-Id", session_id), ("MCP-Protocol-Version", LEGACY)])
    if status != 202:
        raise SystemExit(f"notifications/initialized failed: {status} {body[:300]!r}")
    return session_id


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    name: str
    kind: str  # "ours" or "bare"
    stack: str
    settings: str
    tools: int | None
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    session_id: str | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/mcp"

    def cpu_seconds(self) -> float | None:
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / CLK_TCK


UVICORN_FLAGS = ["--workers", "1", "--log-level", "warning", "--no-access-log", "--timeout-graceful-shutdown", "3"]


def start_server(name: str, kind: str, stack: str, settings: str, env: dict[str, str], tmp: Path, tools: int | None):
    port = free_port()
    log_path = tmp / f"{name}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "project.asgi:application", "--host", HOST, "--port", str(port),
             *UVICORN_FLAGS],
            cwd=ROOT, env={**env, "DJANGO_SETTINGS_MODULE": settings}, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = Server(name, kind, stack, settings, tools, port, process, log_path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited early:\n{log_path.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            time.sleep(0.1)
    stop_server(server)  # not yet in the caller's list of started servers
    raise SystemExit(f"{name} did not become ready:\n{log_path.read_text(errors='replace')}")


def start_auth_server(tmp: Path, db: Path, tools: int) -> tuple[Server, list[tuple[str, str]]]:
    """Ours with MCP_AUTH=oauth on the default stack, and a bearer token for every scope."""
    resource = f"http://{HOST}/mcp"  # the audience is the setting, not the port serving it
    env = {**base_env(tmp, db), "BENCH_MIDDLEWARE": "default", "MCP_AUTH": "oauth", "MCP_RESOURCE_URL": resource}
    manage_env = {**env, "DJANGO_SETTINGS_MODULE": "project.settings"}
    for args in (["demo_superuser"], ["mcp_token", "--user", "admin", "--scopes", "all", "--expires", "86400"]):
        out = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=manage_env, capture_output=True, text=True, check=False
        )
        if out.returncode != 0:
            raise SystemExit(f"{args[0]} failed:\n{out.stdout}\n{out.stderr}")
    token = out.stdout.strip().splitlines()[-1]
    server = start_server("ours-auth", "ours", "default", "project.settings", env, tmp, tools)
    return server, [("Authorization", f"Bearer {token}")]


def stop_server(server: Server) -> None:
    stop_process(server.process)


# --------------------------------------------------------------------------- load


@dataclass
class Job:
    """One measured load: a server, a request and a concurrency."""

    server: Server
    body_file: Path
    headers: list[tuple[str, str]]
    concurrency: int


def run_load(job: Job, seconds: int, loadgen: str) -> dict[str, Any]:
    flat = [item for pair in job.headers for item in pair]
    if loadgen == "wrk":
        cmd = [
            "wrk", "-t1", f"-c{job.concurrency}", f"-d{seconds}s", "--timeout", "10s",
            "-s", str(BENCH / "request.lua"), job.server.url, "--", str(job.body_file), *flat,
        ]  # fmt: skip
    else:
        cmd = [sys.executable, str(BENCH / "loadgen.py"), str(job.server.port), str(job.body_file),
               str(job.concurrency), str(seconds), *flat]  # fmt: skip
    cpu_before = job.server.cpu_seconds()
    busy_before = machine_busy()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=seconds + 60, check=False)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy_after = machine_busy()
    cpu_after = job.server.cpu_seconds()
    loadgen_cpu = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("BENCH_JSON ")), None)
    if out.returncode != 0 or line is None:
        raise SystemExit(f"load generator failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    requests = raw["requests"]
    seconds_taken = raw["duration_us"] / 1e6
    cpu = None if cpu_before is None or cpu_after is None or not requests else (cpu_after - cpu_before) / requests
    return {
        "requests": requests,
        "rps": requests / seconds_taken if seconds_taken else 0.0,
        "p50_ms": raw["latency_us"]["p50"] / 1000,
        "p99_ms": raw["latency_us"]["p99"] / 1000,
        "mean_ms": raw["latency_us"]["mean"] / 1000,
        "errors": sum(raw["errors"].values()),
        "error_detail": raw["errors"],
        "cpu_us_per_req": None if cpu is None else cpu * 1e6,
        "loadgen_cpu_s": round(loadgen_cpu, 3),
        "other_cpu_pct": other_cpu_pct(busy_before, busy_after, cpu_before, cpu_after, loadgen_cpu),
    }


def machine_busy() -> tuple[float, float] | None:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields) - idle) / CLK_TCK, sum(fields) / CLK_TCK


def other_cpu_pct(
    before: tuple[float, float] | None,
    after: tuple[float, float] | None,
    server_before: float | None,
    server_after: float | None,
    loadgen: float,
) -> float | None:
    """CPU that neither the server under load nor the load generator used, in % of one core."""
    if before is None or after is None or server_before is None or server_after is None:
        return None
    elapsed = (after[1] - before[1]) / (os.cpu_count() or 1)
    if elapsed <= 0:
        return None
    other = (after[0] - before[0]) - (server_after - server_before) - loadgen
    return round(max(0.0, other) / elapsed * 100, 1)


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": runs}
    for key in ("rps", "p50_ms", "p99_ms", "mean_ms", "cpu_us_per_req", "other_cpu_pct"):
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = statistics.median(values) if values else None
    out["errors"] = sum(r["errors"] for r in runs)
    return out


# --------------------------------------------------------------------------- set-up


def base_env(tmp: Path, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "MCP_DATABASE", "REDIS_URL")}
    env.update(
        {
            "DJANGO_DEBUG": "0",
            "MCP_VAR_DIR": str(tmp),
            "MCP_SQLITE_PATH": str(db),
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(ROOT),
            # Counted (the limiter's cost is measured) but never reached by one benchmark client.
            "MCP_RATE_LIMIT": "1000000000/h",
        }
    )
    return env


def seed(tmp: Path, total: int) -> tuple[Path, dict[str, Any]]:
    db = tmp / f"tools-{total}.sqlite3"
    env = {**base_env(tmp, db), "DJANGO_SETTINGS_MODULE": "project.settings"}
    began = time.perf_counter()
    out = subprocess.run(
        [sys.executable, str(BENCH / "seed.py"), str(total)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"seeding {total} tools failed:\n{out.stdout}\n{out.stderr}")
    info = json.loads(out.stdout.strip().splitlines()[-1])
    info["seconds"] = round(time.perf_counter() - began, 2)
    return db, info


def check_ours(body: bytes, method: str, page_size: int) -> str | None:
    try:
        message = json.loads(body)
    except ValueError:
        return "not JSON"
    result = message.get("result")
    if not isinstance(result, dict):
        return f"no result: {body[:200]!r}"
    if method == "tools/list" and len(result.get("tools", [])) != page_size:
        return f"expected {page_size} tools, got {len(result.get('tools', []))}"
    if method == "tools/call" and (
        result.get("isError") or result.get("content") != [{"type": "text", "text": "hello"}]
    ):
        return f"unexpected call result: {body[:200]!r}"
    return None


def busy_over(seconds: float) -> float | None:
    """How busy the machine is while we do nothing, in % of one core."""
    before = machine_busy()
    time.sleep(seconds)
    after = machine_busy()
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round((after[0] - before[0]) / ((after[1] - before[1]) / (os.cpu_count() or 1)) * 100, 1)


def environment(loadgen: str) -> dict[str, Any]:
    def version(module: str) -> str | None:
        try:
            return str(importlib.import_module(module).__version__)
        except Exception:
            return None

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    status = ["git", "status", "--porcelain", "--", "mcp_tools", "project"]
    dirty = subprocess.run(status, cwd=ROOT, capture_output=True, text=True, check=False)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": commit.stdout.strip() or None,
        "uncommitted_server_changes": bool(dirty.stdout.strip()),
        "python": platform.python_version(),
        "django": version("django"),
        "uvicorn": version("uvicorn"),
        "uvloop": version("uvloop"),
        "httptools": version("httptools"),
        "cpus": os.cpu_count(),
        "loadgen": loadgen,
        "wrk": shutil.which("wrk"),
    }


# --------------------------------------------------------------------------- reporting


def noisy(result: dict[str, Any]) -> str:
    other = result.get("other_cpu_pct")
    return f"  (other processes: {other:.0f} % of a core)" if other is not None and other > NOISY_PCT else ""


def print_run(label: str, result: dict[str, Any]) -> None:
    print(
        f"  {label}{result['rps']:8.0f} rps  p50 {result['p50_ms']:6.2f} ms  p99 {result['p99_ms']:7.2f} ms"
        + (f"  ERRORS {result['error_detail']}" if result["errors"] else "")
        + noisy(result),
        flush=True,
    )


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or not b else a / b


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'stack':<8}{'shape':<8}{'method':<11}{'c':>3} | {'ours rps':>9}{'bare rps':>9}{'ratio':>7} "
        f"| {'p50 ours':>9}{'bare':>7} | {'p99 ours':>9}{'bare':>7} | {'CPU us/req ours':>16}{'bare':>6} "
        f"| {'view rps':>9}{'ratio':>7}{'CPU':>6} |"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        o, b, w = row["ours"], row["bare"], row["view"]
        mark = "" if row["ratio_rps"] is None else (" ok" if row["ratio_rps"] >= TARGET_RATIO else " LOW")
        print(
            f"{row['stack']:<8}{row['shape']:<8}{row['method']:<11}{row['concurrency']:>3} | "
            f"{fmt(o['rps'], '9.0f')}{fmt(b['rps'], '9.0f')}{fmt(row['ratio_rps'], '7.2f')} "
            f"| {fmt(o['p50_ms'], '9.2f')}{fmt(b['p50_ms'], '7.2f')} | {fmt(o['p99_ms'], '9.2f')}"
            f"{fmt(b['p99_ms'], '7.2f')} | {fmt(o['cpu_us_per_req'], '16.0f')}{fmt(b['cpu_us_per_req'], '6.0f')} "
            f"| {fmt(w['rps'] if w else None, '9.0f')}{fmt(row['ratio_view_rps'], '7.2f')}"
            f"{fmt(w['cpu_us_per_req'] if w else None, '6.0f')} |{mark}"
        )


# --------------------------------------------------------------------------- main


def write_report(report: dict[str, Any], measured: dict[Any, list[dict[str, Any]]], output: Path) -> Path:
    """Note in ``report`` how busy the machine was (a warning past ``NOISY_PCT``), write it as
    JSON to ``output``, and return the path to show (relative to the repository when inside it)."""
    others = [r["other_cpu_pct"] for runs in measured.values() for r in runs if r["other_cpu_pct"] is not None]
    report["other_cpu_pct_max"] = max(others, default=None)
    if others and max(others) > NOISY_PCT:
        flagged = sum(1 for o in others if o > NOISY_PCT)
        print(f"\nWARNING: in {flagged} of {len(others)} runs other processes used more than {NOISY_PCT:.0f} % of a "
              f"core (max {max(others):.0f} %): those numbers are noisier")  # fmt: skip
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return output.relative_to(ROOT) if output.is_relative_to(ROOT) else output


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 s runs, 1 repetition, 1 s warm-up")
    parser.add_argument("--duration", type=int, help="seconds per measured run (default 10, quick 3)")
    parser.add_argument("--reps", type=int, help="interleaved repetitions (default 3, quick 1)")
    parser.add_argument("--warmup", type=int, help="warm-up seconds per server and request (default 2, quick 1)")
    parser.add_argument("--tools", type=int, default=1000, help="tools in the main database (default 1000)")
    parser.add_argument("--scale", default="100,10000", help="tool counts of the scaling check ('' to skip)")
    parser.add_argument("--concurrency", default="1,32")
    parser.add_argument("--stacks", default="default,empty", help=f"middleware stacks: {', '.join(STACKS)}")
    parser.add_argument("--shapes", default="modern,legacy")
    parser.add_argument("--methods", default="tools/list,tools/call")
    parser.add_argument(
        "--no-auth", dest="auth", action="store_false", help="skip the run with OAuth token validation on"
    )
    parser.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument("--output", type=Path, default=RESULTS / "latest.json")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--no-view",
        dest="view",
        action="store_false",
        help="skip the extra runs of the endpoint as a plain view behind Django's handler (MCP_ASGI_FRONT=0)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, databases)")
    args = parser.parse_args(argv)
    args.duration = args.duration or (3 if args.quick else 10)
    args.reps = args.reps or (1 if args.quick else 3)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    for name in ("concurrency", "scale"):
        setattr(args, name, [int(x) for x in getattr(args, name).split(",") if x.strip()])
    for name in ("stacks", "shapes", "methods"):
        setattr(args, name, [x.strip() for x in getattr(args, name).split(",") if x.strip()])
    unknown = [s for s in args.stacks if s not in STACKS]
    if unknown:
        parser.error(f"unknown stack(s) {unknown}; known: {', '.join(STACKS)}")
    if not set(args.shapes) <= {"modern", "legacy"}:
        parser.error("--shapes takes modern and/or legacy")
    if not set(args.methods) <= {"tools/list", "tools/call"}:
        parser.error("--methods takes tools/list and/or tools/call")
    if args.duration > 120 or args.reps > 10 or args.warmup > 30:
        parser.error("keep --duration <= 120, --reps <= 10 and --warmup <= 30")
    return args


def pick_loadgen(choice: str) -> str:
    wrk = shutil.which("wrk")
    if choice == "wrk" and not wrk:
        raise SystemExit("wrk is not installed: apt-get install wrk (Debian/Ubuntu) or brew install wrk")
    if choice == "auto":
        if wrk:
            return "wrk"
        print(
            "note: wrk not found; using the Python load generator (bench/loadgen.py), which costs more CPU per\n"
            "      request and lowers the absolute numbers. For wrk: sudo apt-get install wrk (or brew install wrk).\n"
        )
        return "python"
    return choice


def check_prerequisites() -> None:
    for module in ("uvicorn", "orjson", "django"):
        try:
            importlib.import_module(module)
        except ImportError:
            raise SystemExit(
                f"{module} is not installed in {sys.executable}; install the dev extras: pip install -e '.[dev]'"
            ) from None


@contextlib.contextmanager
def servers_running() -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        yield started
    finally:
        for server in started:
            stop_server(server)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    check_prerequisites()
    loadgen = pick_loadgen(args.loadgen)
    tmp = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    began = time.monotonic()
    try:
        return _main(args, loadgen, tmp, began)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _main(args: argparse.Namespace, loadgen: str, tmp: Path, began: float) -> int:
    os.environ.setdefault("MCP_VAR_DIR", str(tmp))
    demo_middleware = importlib.import_module("project.settings").MIDDLEWARE
    page_size = int(os.environ.get("MCP_PAGE_SIZE", "50"))
    env_info = environment(loadgen)
    print(
        f"django-mcp-tools bench: {env_info['date']}, commit {str(env_info['commit'])[:10]}"
        f"{' + uncommitted changes' if env_info['uncommitted_server_changes'] else ''}, Python "
        f"{env_info['python']}, Django {env_info['django']}, uvicorn {env_info['uvicorn']} (1 worker, uvloop "
        f"{env_info['uvloop']}, httptools {env_info['httptools']}), {env_info['cpus']} CPUs, load: {loadgen} "
        f"(1 thread)\nruns of {args.duration} s, {args.reps} interleaved repetition(s), medians; warm-up "
        f"{args.warmup} s; tools/list page size {page_size}"
    )
    idle_other = busy_over(1.0)
    env_info["busy_cpu_pct_before"] = idle_other
    if idle_other is not None and idle_other > NOISY_PCT:
        print(f"WARNING: {idle_other:.0f} % of a core busy before starting: other processes compete for the CPUs")
    print("middleware stacks (bare and view run the stack; ours skips it on /mcp through the ASGI front):")
    for name in args.stacks:
        mw = STACKS[name]
        note = " (= project/settings.py)" if mw == demo_middleware else ""
        print(f"  {name}{note}: {', '.join(m.rsplit('.', 1)[1] for m in mw) or 'none'}")

    sizes = sorted({args.tools, *args.scale})
    dbs: dict[int, Path] = {}
    seeded: dict[int, Any] = {}
    for size in sizes:
        dbs[size], seeded[size] = seed(tmp, size)
        print(f"database: {seeded[size]['tools']} tools (seeded in {seeded[size]['seconds']} s)")

    report: dict[str, Any] = {"environment": env_info, "settings": vars(args) | {"output": str(args.output)}}
    report["stacks"] = {name: STACKS[name] for name in args.stacks}
    report["databases"] = {str(k): v for k, v in seeded.items()}
    report["page_size"] = page_size

    with servers_running() as started:
        ours: dict[str, Server] = {}
        cold: dict[str, float] = {}
        for stack in args.stacks:
            settings = "project.settings" if stack == "default" else "bench.ours_settings"
            env = {**base_env(tmp, dbs[args.tools]), "BENCH_MIDDLEWARE": stack}
            server = start_server(f"ours-{stack}", "ours", stack, settings, env, tmp, args.tools)
            started.append(server)
            ours[stack] = server
        views: dict[str, Server] = {}
        if args.view:
            for stack in args.stacks:
                settings = "project.settings" if stack == "default" else "bench.ours_settings"
                env = {**base_env(tmp, dbs[args.tools]), "BENCH_MIDDLEWARE": stack, "MCP_ASGI_FRONT": "0"}
                server = start_server(f"view-{stack}", "view", stack, settings, env, tmp, args.tools)
                started.append(server)
                views[stack] = server
        auth_server, auth_headers = start_auth_server(tmp, dbs[args.tools], args.tools) if args.auth else (None, [])
        if auth_server is not None:
            started.append(auth_server)
        scaled: dict[int, Server] = {}
        for size in args.scale:
            env = {**base_env(tmp, dbs[size]), "BENCH_MIDDLEWARE": "default"}
            server = start_server(f"ours-{size}", "ours", "default", "project.settings", env, tmp, size)
            started.append(server)
            scaled[size] = server

        # The first tools/list of each process builds the catalog: report it, then sessions.
        for server in [*ours.values(), *views.values(), *scaled.values()]:
            body, headers = request_for("modern", "tools/list", None)
            t0 = time.perf_counter()
            status, _, answer = post(server.url, body, headers)
            cold[server.name] = (time.perf_counter() - t0) * 1000
            if status != 200 or check_ours(answer, "tools/list", page_size):
                raise SystemExit(f"{server.name}: first tools/list failed: {status} {answer[:300]!r}")
            if "legacy" in args.shapes:
                server.session_id = open_session(server.url)

        # Precompute the bare responses from what ours answers, and check every request once.
        responses: dict[str, str] = {}
        jobs: dict[tuple[str, str, str, str], Job] = {}  # (stack, shape, method, kind) -> request
        for stack, server in ours.items():
            for shape in args.shapes:
                for method in args.methods:
                    body, headers = request_for(shape, method, server.session_id)
                    status, _, answer = post(server.url, body, headers)
                    problem = f"HTTP {status}" if status != 200 else check_ours(answer, method, page_size)
                    if problem:
                        raise SystemExit(f"{server.name} {shape} {method}: {problem}")
                    responses.setdefault(f"{shape} {method}", answer.decode("latin-1"))
                    body_file = tmp / f"{stack}-{shape}-{method.replace('/', '_')}.json"
                    body_file.write_bytes(body)
                    jobs[(stack, shape, method, "ours")] = Job(server, body_file, headers, 0)
                    if stack in views:
                        # The same request (and session: any process serves any session) to the view.
                        status, _, answer = post(views[stack].url, body, headers)
                        problem = f"HTTP {status}" if status != 200 else check_ours(answer, method, page_size)
                        if problem:
                            raise SystemExit(f"{views[stack].name} {shape} {method}: {problem}")
                        jobs[(stack, shape, method, "view")] = Job(views[stack], body_file, headers, 0)
        responses_file = tmp / "bare-responses.json"
        responses_file.write_text(json.dumps(responses))
        report["response_bytes"] = {k: len(v) for k, v in responses.items()}

        bare: dict[str, Server] = {}
        for stack in args.stacks:
            env = {**base_env(tmp, tmp / "unused.sqlite3"), "BENCH_MIDDLEWARE": stack, "MCP_ASGI_FRONT": "0",
                   "BENCH_BARE_RESPONSES": str(responses_file)}  # fmt: skip
            server = start_server(f"bare-{stack}", "bare", stack, "bench.bare_settings", env, tmp, None)
            started.append(server)
            bare[stack] = server
            for shape in args.shapes:
                for method in args.methods:
                    ours_job = jobs[(stack, shape, method, "ours")]
                    body = ours_job.body_file.read_bytes()
                    status, _, answer = post(server.url, body, ours_job.headers)
                    if status != 200 or answer != responses[f"{shape} {method}"].encode("latin-1"):
                        raise SystemExit(f"{server.name} {shape} {method}: unexpected answer {status} {answer[:200]!r}")
                    jobs[(stack, shape, method, "bare")] = Job(server, ours_job.body_file, ours_job.headers, 0)

        # Token validation on: the default stack's requests plus a bearer token (DOTBackend).
        if auth_server is not None:
            if "legacy" in args.shapes:
                auth_server.session_id = open_session(auth_server.url, auth_headers)
            for shape in args.shapes:
                for method in args.methods:
                    body, headers = request_for(shape, method, auth_server.session_id)
                    headers = headers + auth_headers
                    status, _, answer = post(auth_server.url, body, headers)
                    problem = f"HTTP {status}" if status != 200 else check_ours(answer, method, page_size)
                    if problem:
                        raise SystemExit(f"{auth_server.name} {shape} {method}: {problem}")
                    body_file = tmp / f"auth-{shape}-{method.replace('/', '_')}.json"
                    body_file.write_bytes(body)
                    jobs[("auth", shape, method, "ours")] = Job(auth_server, body_file, headers, 0)

        # Scaling: the first page and a page from the middle of the catalog, on each size.
        scale_jobs: dict[tuple[int, str], Job] = {}
        for size, server in scaled.items():
            cursor = None
            pages = (size + page_size - 1) // page_size
            for _ in range(pages // 2):
                body, headers = request_for("modern", "tools/list", None, cursor)
                status, _, answer = post(server.url, body, headers)
                cursor = json.loads(answer)["result"].get("nextCursor")
            for page, page_cursor in (("first", None), ("middle", cursor)):
                body, headers = request_for("modern", "tools/list", None, page_cursor)
                status, _, answer = post(server.url, body, headers)
                if status != 200 or check_ours(answer, "tools/list", page_size):
                    raise SystemExit(f"{server.name} {page} page: {status} {answer[:200]!r}")
                body_file = tmp / f"scale-{size}-{page}.json"
                body_file.write_bytes(body)
                scale_jobs[(size, page)] = Job(server, body_file, headers, 1)

        cells = [
            (stack, shape, method, c)
            for stack in args.stacks
            for shape in args.shapes
            for method in args.methods
            for c in args.concurrency
        ]
        auth_cells = (
            [(shape, method, c) for shape in args.shapes for method in args.methods for c in args.concurrency]
            if auth_server is not None and "default" in args.stacks
            else []
        )
        kinds = ("ours", "bare", "view") if views else ("ours", "bare")
        total_runs = (len(cells) * len(kinds) + len(scale_jobs) + len(auth_cells)) * args.reps
        estimate = total_runs * (args.duration + 0.5) + (len(cells) * len(kinds) + len(scale_jobs)) * args.warmup
        print(f"\n{total_runs} measured runs, about {estimate / 60:.1f} min\n")

        def job_for(stack: str, shape: str, method: str, kind: str, c: int) -> Job:
            base = jobs[(stack, shape, method, kind)]
            return Job(base.server, base.body_file, base.headers, c)

        if args.warmup:
            for stack, shape, method, c in cells:
                for kind in kinds:
                    run_load(job_for(stack, shape, method, kind, c), args.warmup, loadgen)
            for job in scale_jobs.values():
                run_load(job, args.warmup, loadgen)

        measured: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for rep in range(args.reps):
            order = kinds if rep % 2 == 0 else kinds[::-1]
            for stack, shape, method, c in cells:
                for kind in order:
                    result = run_load(job_for(stack, shape, method, kind, c), args.duration, loadgen)
                    measured.setdefault((stack, shape, method, c, kind), []).append(result)
                    print_run(f"rep {rep + 1}/{args.reps} {kind:<4} {stack:<8}{shape:<7} {method:<10} c={c:<3}", result)
            for shape, method, c in auth_cells:
                result = run_load(job_for("auth", shape, method, "ours", c), args.duration, loadgen)
                measured.setdefault(("auth", shape, method, c), []).append(result)
                print_run(f"rep {rep + 1}/{args.reps} auth default {shape:<7} {method:<10} c={c:<3}", result)
            for (size, page), job in scale_jobs.items():
                result = run_load(job, args.duration, loadgen)
                measured.setdefault(("scale", size, page), []).append(result)
                print(
                    f"  rep {rep + 1}/{args.reps} ours {size:>6} tools, tools/list {page} page, c=1"
                    f"{result['rps']:8.0f} rps  p50 {result['p50_ms']:6.2f} ms{noisy(result)}",
                    flush=True,
                )

    rows = []
    for stack, shape, method, c in cells:
        o = median_of(measured[(stack, shape, method, c, "ours")])
        b = median_of(measured[(stack, shape, method, c, "bare")])
        w = median_of(measured[(stack, shape, method, c, "view")]) if views else None
        rows.append(
            {
                "stack": stack,
                "shape": shape,
                "method": method,
                "concurrency": c,
                "ours": o,
                "bare": b,
                "ratio_rps": ratio(o["rps"], b["rps"]),
                "ratio_p50": ratio(o["p50_ms"], b["p50_ms"]),
                "ratio_p99": ratio(o["p99_ms"], b["p99_ms"]),
                "ratio_cpu": ratio(o["cpu_us_per_req"], b["cpu_us_per_req"]),
                "view": w,
                "ratio_view_rps": ratio(w["rps"], b["rps"]) if w else None,
            }
        )
    print(f"\nResults ({args.tools} tools; medians of {args.reps}; ratio = ours rps / bare rps, target >= "
          f"{TARGET_RATIO}; latencies in ms; view = the endpoint without the ASGI front, its ratio to bare "
          "and CPU us/req)\n")  # fmt: skip
    print_table(rows)

    auth_rows = []
    if auth_cells:
        print("\nToken validation on (DOTBackend, default stack): ours-with-auth vs ours-without-auth and vs bare")
        for shape, method, c in auth_cells:
            a = median_of(measured[("auth", shape, method, c)])
            o = median_of(measured[("default", shape, method, c, "ours")])
            b = median_of(measured[("default", shape, method, c, "bare")])
            entry = {
                "shape": shape,
                "method": method,
                "concurrency": c,
                "auth": a,
                "auth_over_ours_rps": ratio(a["rps"], o["rps"]),
                "auth_over_bare_rps": ratio(a["rps"], b["rps"]),
                "auth_cpu_us_per_req": a["cpu_us_per_req"],
                "ours_cpu_us_per_req": o["cpu_us_per_req"],
            }
            auth_rows.append(entry)
            print(
                f"  {shape:<7}{method:<11}c={c:<3} auth {a['rps']:8.0f} rps, ours {o['rps']:8.0f}, bare "
                f"{b['rps']:8.0f}: auth/ours {fmt(entry['auth_over_ours_rps'], '.2f')}, auth/bare "
                f"{fmt(entry['auth_over_bare_rps'], '.2f')}; CPU {fmt(a['cpu_us_per_req'], '.0f')} vs "
                f"{fmt(o['cpu_us_per_req'], '.0f')} us/req"
            )
        print(f"\nAuth ratio (ours with a DOT token / bare Django view of this run, default stack, target >= "
              f"{TARGET_AUTH_RATIO}; bench/peers.py gives the same against bare under gunicorn):")  # fmt: skip
        for entry in auth_rows:
            value = entry["auth_over_bare_rps"]
            entry["auth_ok"] = value is not None and value >= TARGET_AUTH_RATIO
            print(f"  {entry['shape']:<7}{entry['method']:<11}c={entry['concurrency']:<3} {fmt(value, '.2f')} "
                  f"{'ok' if entry['auth_ok'] else 'LOW'}")  # fmt: skip
    report["auth"] = auth_rows

    scaling: list[dict[str, Any]] = []
    if len(args.scale) >= 2:
        small, large = min(args.scale), max(args.scale)
        print(f"\ntools/list per-page cost (c=1, modern shape, {page_size} tools a page), {small} vs {large} tools:")
        for page in ("first", "middle"):
            s = median_of(measured[("scale", small, page)])
            big = median_of(measured[("scale", large, page)])
            cost_s, cost_l = 1000 / s["rps"], 1000 / big["rps"]
            entry = {
                "page": page,
                "small": {"tools": small, **s, "ms_per_page": cost_s},
                "large": {"tools": large, **big, "ms_per_page": cost_l},
                "ratio": cost_l / cost_s,
                "ratio_cpu": ratio(big["cpu_us_per_req"], s["cpu_us_per_req"]),
            }
            scaling.append(entry)
            verdict = "ok" if entry["ratio"] <= TARGET_SCALING else "HIGH"
            print(
                f"  {page:<6} page: {cost_s:.3f} ms/page at {small} vs {cost_l:.3f} ms/page at {large}: "
                f"ratio {entry['ratio']:.2f} (target <= {TARGET_SCALING}) {verdict}; server CPU "
                f"{fmt(s['cpu_us_per_req'], '.0f')} vs {fmt(big['cpu_us_per_req'], '.0f')} us/page, "
                f"ratio {fmt(entry['ratio_cpu'], '.2f')}"
            )
    print("\nfirst tools/list after start (builds the catalog): "
          + ", ".join(f"{name} {ms:.0f} ms" for name, ms in cold.items()))  # fmt: skip

    errors = sum(r["ours"]["errors"] + r["bare"]["errors"] + (r["view"] or {}).get("errors", 0) for r in rows) + sum(
        median_of(v)["errors"] for k, v in measured.items() if k[0] == "scale"
    )
    missed = [r for r in rows if r["ratio_rps"] is not None and r["ratio_rps"] < TARGET_RATIO]
    missed_scaling = [s for s in scaling if s["ratio"] > TARGET_SCALING]
    report.update(
        {
            "rows": rows,
            "scaling": scaling,
            "first_list_ms": cold,
            "errors": errors,
            "targets": {
                "ratio_rps_min": TARGET_RATIO,
                "auth_ratio_min": TARGET_AUTH_RATIO,
                "scaling_max": TARGET_SCALING,
                "missed": [f"{r['stack']} {r['shape']} {r['method']} c={r['concurrency']}" for r in missed]
                + [f"scaling {s['page']} page" for s in missed_scaling]
                + [f"auth {a['shape']} {a['method']} c={a['concurrency']}" for a in auth_rows if not a["auth_ok"]],
            },
            "elapsed_seconds": round(time.monotonic() - began, 1),
        }
    )
    shown = write_report(report, measured, args.output)
    print(f"\nTargets missed: {len(report['targets']['missed'])} of {len(rows) + len(scaling) + len(auth_rows)}; "
          f"errors: {errors}; wrote {shown} in {report['elapsed_seconds']:.0f} s")  # fmt: skip
    if errors:
        return 1
    return 1 if args.strict and report["targets"]["missed"] else 0


if __name__ == "__main__":
    sys.exit(main())
