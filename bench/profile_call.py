"""Where the time of one tools/call goes, in process, beside django-mcpz and a bare Django view.

    .venv/bin/python bench/profile_call.py            # 3,000 calls each (make bench runs it)
    .venv/bin/python bench/profile_call.py --calls 10000

No server and no socket: each process calls a WSGI application in a loop with the same
2026-07-28 ``tools/call`` of ``echo`` (django-mcpz gets the stateless 2025-11-25 shape it takes),
so what is left is the application's own cost, the part a deployment cannot change. Ours runs
through ``project.wsgi`` (the WSGI front) on a fresh SQLite catalog of 101 tools with the demo's
settings: every call audited (rows batched, ``AUDIT_FLUSH_ROWS``) and rate limited. It is timed
first without a profiler, then under cProfile, and the time is split into cost centres (the
cumulative time of the functions named below, as a share of the whole). django-mcpz runs from
its venv made by ``bench/peers.py`` (skipped when that venv is missing); the bare view is
``bench/bare_wsgi_settings``.

The audit writer thread is held back here, so its batched INSERTs run (and are profiled) in the
calling thread: under a server they run in that thread, and take the same CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MCPZ_PYTHON = ROOT / "var" / "bench-peers" / "mcpz" / "bin" / "python"
PEERS = ROOT / "bench" / "peers"

# (label, module path suffix, function name): cumulative time of these, as shares of a call.
CENTRES = [
    ("catalog version read (one SELECT)", "mcp_tools/models/tools.py", "current"),
    ("audit, in all (record)", "mcp_tools/audit.py", "record"),
    ("  of which the batched INSERT", "mcp_tools/audit.py", "_insert"),
    ("rate limit (cache counter)", "mcp_tools/ratelimit.py", "hit"),
    ("argument validation", "mcp_tools/catalog.py", "input_problems"),
    ("scopes and tool lookup", "mcp_tools/services/tools.py", "callable_tool"),
    ("authentication", "mcp_tools/transport/replies.py", "authenticate"),
    ("handler run and result checks", "mcp_tools/runner.py", "invoke"),
    ("result shaping and encoding", "mcp_tools/services/exchange.py", "complete"),
    ("_meta and routing headers", "mcp_tools/protocol/negotiation.py", "read_modern_meta"),
    ("POST checks and JSON parse", "mcp_tools/transport/decide.py", "_read_post"),
    ("  of which the body read (Django)", "django/http/request.py", "body"),
    ("Host/Origin check", "mcp_tools/transport/replies.py", "check_host_and_origin"),
    ("DB connection checks before and after (Django's)", "mcp_tools/threads.py", "close_old_connections"),
    ("WSGIRequest (Django)", "django/core/handlers/wsgi.py", "__init__"),
]

NEXT_STEPS = """\
What the peers do not do, and the next step for each (tools/call below 1.0x django-mcpz at c=1
is these, on the request's critical path):
  - the audit: its row in the call, and the batched INSERT. Under the WSGI front a full batch
    is written after the answer that filled it is sent, between requests (same-run A/B with
    bench/peers.py --baseline: p99 at c=1 1.2-1.5 ms instead of 2.6-3.3 ms, 1.01-1.25x req/s);
    with AUDIT_ENABLED off, short runs gave about 1.02x django-mcpz at c=1. The INSERT still
    costs CPU: on SQLite the table's six secondary indexes are half of a row's INSERT (about 5
    of 11 us in raw sqlite3). Next, a leaner index set (the admin filters on time, tool and
    outcome), or the audit table on PostgreSQL, where the INSERT's work runs in the database
    server;
  - the catalog version read: one indexed SELECT per request keeps every process consistent at
    once (tests/e2e/test_catalog_consistency.py); on SQLite in WAL mode (this profile's database)
    it runs only after a commit (models/walmark.py: the audit's batches), elsewhere the push
    notifiers with CATALOG_VERSION_MAX_AGE trade it for a stated bound;
  - the rate-limit counter: one cache operation (one Redis round trip on Redis);
  - Django's per-request connection checks and WSGIRequest, which the bare view pays too;
  - the rest is protocol work: Host/Origin, routing headers and _meta, JSON-RPC, shaping.
"""


def child(kind: str, calls: int) -> dict[str, Any]:
    """Run in the measured process: time ``calls`` calls, then profile as many."""
    import cProfile
    import pstats

    import django

    if kind == "mcpz":  # its modules (peers/catalog.py) before ours of the same name (bench/)
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
    django.setup()
    if kind == "mcpz":
        run = _mcpz_runner()
    else:
        sys.path.insert(0, str(ROOT))
        from bench.callgrind_call import wsgi

        if kind == "ours":
            from mcp_tools import audit

            audit._buffer.thread = object()  # type: ignore[assignment]  # no writer thread: flushes inline

        def run(n: int) -> None:
            wsgi(n, bare=kind == "bare")

    run(300)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        run(calls)
        best = min(best, time.perf_counter() - started)
    out: dict[str, Any] = {"us_per_call": best / calls * 1e6}
    if kind != "ours":
        return out
    profile = cProfile.Profile()
    profile.enable()
    run(calls)
    profile.disable()
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = sum(v[3] for k, v in stats.items() if k[2] == "wsgi" and k[0].endswith("callgrind_call.py"))
    centres = {}
    for label, path, name in CENTRES:
        seconds = sum(v[3] for k, v in stats.items() if k[0].endswith(path) and k[2] == name)
        centres[label] = seconds / total if total else 0.0
    out["centres"] = centres
    return out


def _mcpz_runner() -> Any:
    import io

    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    sys.path.append(str(ROOT))  # after the peer's modules: for bench.callgrind_call only
    from bench.callgrind_call import post_environ

    call_command("migrate", verbosity=0)
    app: Any = get_wsgi_application()
    call = {"name": "echo", "arguments": {"text": "hello"}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).encode()
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    base = post_environ(body, {**headers, "mcp-protocol-version": "2025-11-25", "host": "127.0.0.1"})

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        assert status.startswith("200"), status

    def run(n: int) -> None:
        for _ in range(n):
            out = b"".join(app(dict(base, **{"wsgi.input": io.BytesIO(body)}), start_response))
            assert b'"hello"' in out, out

    return run


def measure(kind: str, calls: int, tmp: Path) -> dict[str, Any] | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MCP_")) and k != "REDIS_URL"}
    python: str | Path = sys.executable
    if kind == "mcpz":
        if not MCPZ_PYTHON.exists():
            return None
        python = MCPZ_PYTHON
        env.update(
            PYTHONPATH=os.pathsep.join((str(PEERS), str(PEERS / "mcpz"))),
            DJANGO_SETTINGS_MODULE="peer_settings",
            BENCH_MIDDLEWARE_JSON="[]",
            BENCH_PEER_DB=str(tmp / "mcpz.sqlite3"),
        )
    else:
        env.update(
            PYTHONPATH=str(ROOT),
            DJANGO_SETTINGS_MODULE="project.settings" if kind == "ours" else "bench.bare_wsgi_settings",
            DJANGO_DEBUG="0",
            MCP_VAR_DIR=str(tmp),
            MCP_SQLITE_PATH=str(tmp / "ours.sqlite3"),
            MCP_RATE_LIMIT="1000000000/h",  # limited on every call, never refused
        )
    done = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--child", kind, "--calls", str(calls)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--child", choices=["ours", "bare", "mcpz"])
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.calls)))
        return 0
    with tempfile.TemporaryDirectory(prefix="mcp-profile-") as name:
        tmp = Path(name)
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings", "MCP_VAR_DIR": name}
        env.update(MCP_SQLITE_PATH=str(tmp / "ours.sqlite3"), PYTHONPATH=str(ROOT))
        env.pop("MCP_DATABASE", None)
        subprocess.run([sys.executable, str(ROOT / "bench" / "seed.py"), "101"], env=env, check=True, cwd=ROOT)
        results = {kind: measure(kind, args.calls, tmp) for kind in ("ours", "bare", "mcpz")}
    ours = results["ours"]
    assert ours is not None
    per_call = ours["us_per_call"]
    print(f"\nOne tools/call in process ({args.calls} calls, best of 3; no server, no socket):")
    for kind, label in (("ours", "ours (WSGI front)"), ("bare", "bare Django view"), ("mcpz", "django-mcpz 1.2")):
        found = results[kind]
        print(
            f"  {label:<20} "
            + ("not measured (no venv: run bench/peers.py)" if found is None else f"{found['us_per_call']:7.1f} us")
        )
    print("\nWhere ours spends it (cProfile, cumulative, as a share of a call; us from the unprofiled time):")
    accounted = 0.0
    for label, share in ours["centres"].items():
        if not label.startswith(" "):  # nested lines are inside the line above
            accounted += share
        print(f"  {share * 100:5.1f}%  {share * per_call:6.1f} us  {label}")
    rest = 1 - accounted
    print(f"  {rest * 100:5.1f}%  {rest * per_call:6.1f} us  the rest: front, headers, JSON-RPC dispatch")
    print("\n" + NEXT_STEPS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
