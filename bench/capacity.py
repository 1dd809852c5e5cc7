"""The capacity model: what a request costs PostgreSQL and Redis, how many workers one of each
serves, and the model checked against 1, 2 and 4 real workers.

    .venv/bin/python bench/capacity.py               # about 5 minutes
    .venv/bin/python bench/capacity.py --quick       # 3 s runs (about 2 minutes)
    .venv/bin/python bench/capacity.py --workers 1,2 --settings default

1. A PostgreSQL cluster (``initdb``: fsync and synchronous_commit on, as shipped, with
   ``max_connections`` 300, no autovacuum or timed checkpoint while measuring) and a ``redis-server`` of the
   script's own, on 127.0.0.1 and free ports, removed at the end (also on Ctrl-C). Needs root
   (PostgreSQL runs as ``postgres``).
2. The demo's database there: migrate, the demo tools, a superuser and a DOT token.
3. What one operation costs each store: ``pgbench`` (simple protocol, as psycopg sends them,
   ``--clients`` connections) runs each statement a request sends, exactly as the app sends it
   (the text is captured from the app itself: the token lookup, the catalog version, a 100-row
   audit INSERT, the health check); ``redis-benchmark`` runs pipelines of 2 and 3 commands on
   random keys (the rate limit's ``SET NX EX`` + ``INCRBY``, and its batch pipeline with
   ``PTTL``). For each: operations per second here, and the store's CPU time per operation
   (its processes' user + system time from /proc: what the operation costs the store, which
   other load on the machine moves far less than rates).
4. The model (``docs/explanation/capacity.md``): per request, the round trips of the table in
   that page (``tests/e2e/test_round_trips.py`` keeps it) times those costs: the CPU of
   PostgreSQL and of Redis per tools/call and per tools/list, for the defaults and the scale
   settings. A worker's own CPU per request (measured in 5.) over a store's CPU per request is
   the number of busy workers one core of that store serves.
5. The check: the demo under gunicorn (sync workers, the WSGI front), OAuth with a real token,
   on the cluster and Redis above, with 1, 2 and 4 workers, ``wrk`` sending tools/call: the
   rate, the workers' CPU per call, and each store's CPU per call measured against the model's
   prediction (target: within 25 %). Redis commands are counted from ``INFO commandstats``.

Everything runs on 127.0.0.1; every run is bounded (``--seconds``); results go to
``bench/results/capacity.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.run import CLK_TCK, free_port, machine_busy  # noqa: E402
from tests.support.scale_cluster import Postgres, throwaway_redis  # noqa: E402
from tests.support.servers import stop_process  # noqa: E402

HOST = "127.0.0.1"
RESULTS = ROOT / "bench" / "results" / "capacity.json"
BENCH = ROOT / "bench"
DATABASE = "capacity"
RESOURCE = f"http://{HOST}/mcp"
TARGET = 0.25  # the model within 25 % of what was measured
SCALE = {"MCP_CATALOG_VERSION_MAX_AGE": "5", "MCP_TOKEN_CACHE_SECONDS": "60", "MCP_RATE_LIMIT_BATCH": "10"}

# Per request, from the table of docs/explanation/capacity.md (what tests/e2e/test_round_trips.py
# measured; the amortised figures at their expected value: one 100-row INSERT per 100 calls,
# and its health check).
PER_REQUEST: dict[str, dict[str, dict[str, float]]] = {
    "default": {
        "tools/call": {"token": 1, "version": 1, "audit_row": 1, "health": 0.01, "redis2": 1},
        "tools/list": {"token": 1, "version": 1},
    },
    "scale": {
        "tools/call": {"audit_row": 1, "health": 0.01, "redis3": 0.1},
        "tools/list": {},
    },
}


# --------------------------------------------------------------------------- processes and CPU


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its children, living (their own time) and reaped (cutime)."""
    try:
        fields = _stat(pid)
    except OSError:
        return 0.0
    total = sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            with contextlib.suppress(OSError):
                total += sum(int(x) for x in _stat(int(child))[11:15])
    return total / CLK_TCK


@contextlib.contextmanager
def private_postgres(port: int) -> Iterator[Postgres]:
    """A PostgreSQL cluster of its own as shipped (fsync, synchronous_commit), on 127.0.0.1."""
    import glob

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise SystemExit("no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)")
    bindir = Path(found[-1]).parent
    root = Path(tempfile.mkdtemp(prefix=f"mcpscale-pg-{os.getpid()}-"))  # reaped like the scale test's
    shutil.chown(root, "postgres", "postgres")
    pg = Postgres(HOST, port, root, bindir, root / "server.log")
    try:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", str(bindir / "initdb"), "-D", str(pg.data), "-U", "postgres",
             "-A", "trust", "-E", "UTF8", "--no-instructions"],
            capture_output=True, text=True, timeout=120, cwd=root,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"initdb failed: {done.stderr}")
        with (pg.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '{HOST}'\nport = {port}\nunix_socket_directories = '{root}'\n"
                "max_connections = 300\nshared_buffers = 128MB\n"
                # Autovacuum's passes over the audit table (once a minute, after enough INSERTs)
                # and the timed checkpoint (every 5 minutes: the run is longer) cost PostgreSQL
                # tens to hundreds of milliseconds each and land in one measured window or
                # another (the one replay that came out at a third of the workers' cost ran 5
                # minutes after the cluster started). The model is per statement, the vacuum and the checkpoint
                # per table and period (docs/explanation/capacity.md): neither runs while measuring.
                "autovacuum = off\ncheckpoint_timeout = '1h'\nmax_wal_size = '4GB'\n"
                # PostgreSQL's own count of the statements it ran, by statement.
                "shared_preload_libraries = 'pg_stat_statements'\n"
            )
        pg.start()
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Stores:
    pg: Postgres
    redis: Any  # tests.support.scale_cluster.Redis

    def pg_cpu(self) -> float:
        pid = self.pg.postmaster_pid()
        return 0.0 if pid is None else tree_cpu(pid)

    def redis_cpu(self) -> float:
        """Redis's own CPU seconds (``INFO cpu``: getrusage, to the microsecond). /proc counts
        in clock ticks (10 ms here), as coarse as what a few hundred calls a second cost it."""
        import redis

        if self.redis.process is None:
            return 0.0
        cpu = redis.Redis(HOST, self.redis.port).info("cpu")
        return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])

    def redis_commands(self) -> dict[str, int]:
        import redis

        stats = redis.Redis(HOST, self.redis.port).info("commandstats")
        return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


def demo_env(stores: Stores, tmp: Path, settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "DJANGO_", "POSTGRES_", "REDIS_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DJANGO_DEBUG": "0",
            "PYTHONPATH": str(ROOT),
            "MCP_VAR_DIR": str(tmp),
            "MCP_DATABASE": "postgres",
            "POSTGRES_HOST": HOST,
            "POSTGRES_PORT": str(stores.pg.port),
            "POSTGRES_DB": DATABASE,
            "POSTGRES_USER": "postgres",
            "REDIS_URL": f"{stores.redis.url}/0",
            "MCP_NOTIFIER": "redis",
            "MCP_NOTIFIER_REDIS_URL": f"{stores.redis.url}/1",
            "MCP_AUTH": "oauth",
            "MCP_RESOURCE_URL": RESOURCE,
            # Every call counted by the rate limit, none refused.
            "MCP_RATE_LIMIT": "1000000000/h",
        }
    )
    if settings == "scale":
        env.update(SCALE)
    return env


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise SystemExit(f"manage.py {args[0]} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


# The statements of one request, as the app sends them (rendered by psycopg's ClientCursor, the
# simple protocol Django uses), printed as JSON by `manage.py shell`.
CAPTURE = r"""
import hashlib, json
from django.db import connection
from mcp_tools import audit
from mcp_tools.auth.oauth import DOTBackend
from mcp_tools.models import CatalogVersion
from mcp_tools.types import Principal

token = TOKEN
connection.ensure_connection()
render = connection.connection.cursor().mogrify
checksum = hashlib.sha256(token.encode()).hexdigest()
out = {"token": render(DOTBackend()._lookup_sql(connection), [checksum])}
table = connection.ops.quote_name(CatalogVersion._meta.db_table)
out["version"] = f"SELECT version FROM {table} WHERE id = 1"
seen = []
def keep(execute, sql, params, many, context):
    seen.append(render(sql, params))
    return execute(sql, params, many, context)
with connection.execute_wrapper(keep):
    audit.record(audit.CallEvent(
        principal=Principal(
            "user:1/client:cli", None, "cli", granted=frozenset({"notes:read"}), user_id=1, subject="user:1"
        ),
        tool_name="echo", tool_version=1, arguments={"text": "hello"}, sensitive=frozenset(), outcome="ok",
        detail="", duration_ms=0.4, request_id=1, protocol_version="2026-07-28",
    ))
out["audit_one"] = seen[-1]
print("CAPTURED " + json.dumps(out))
"""


# A timestamptz literal as psycopg renders one (the audit row's created_at).
_TIMESTAMP = re.compile(r"'\d{4}-\d\d-\d\d[ T][0-9:.]+[+-]\d\d(?::\d\d)?'::timestamptz")


def capture_statements(env: dict[str, str], token: str) -> dict[str, str]:
    out = manage({**env, "MCP_AUDIT_FLUSH_ROWS": "1"}, "shell", "-c", CAPTURE.replace("TOKEN", repr(token)))
    line = next(ln for ln in out.splitlines() if ln.startswith("CAPTURED "))
    found: dict[str, str] = json.loads(line.removeprefix("CAPTURED "))
    head, _, values = found.pop("audit_one").partition(" VALUES ")
    # Each row its own time, as the workers' rows have (record() stamps each call): 100 equal
    # times per INSERT put runs of equal keys into the indexes that lead with the time, which
    # PostgreSQL's B-trees deduplicate as pages fill, work the workers' INSERTs never cause.
    values, stamped = _TIMESTAMP.subn("clock_timestamp()", values)
    if stamped != 1:
        raise SystemExit(f"the audit row's time was not found once in the captured INSERT: {values[:300]}")
    found["audit100"] = head + " VALUES " + ", ".join([values] * 100)  # one batch: AUDIT_FLUSH_ROWS
    found["health"] = "SELECT 1"
    return found


# --------------------------------------------------------------------------- store costs


def pgbench(stores: Stores, tmp: Path, name: str, sql: str, seconds: int, clients: int) -> dict[str, Any]:
    script = tmp / f"{name}.sql"
    script.write_text(sql.rstrip(";") + ";\n")
    cmd = [
        "pgbench", "-h", HOST, "-p", str(stores.pg.port), "-U", "postgres", "-n", "-M", "simple",
        "-c", str(clients), "-j", "2", "-T", str(seconds), "-f", str(script), DATABASE,
    ]  # fmt: skip
    before = stores.pg_cpu()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    after = stores.pg_cpu()
    if done.returncode != 0:
        raise SystemExit(f"pgbench {name} failed:\n{done.stdout}\n{done.stderr}")
    processed = int(re.search(r"number of transactions actually processed: (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    tps = float(re.search(r"tps = ([\d.]+)", done.stdout).group(1))  # type: ignore[union-attr]
    return {"ops": processed, "ops_per_s": round(tps, 1), "cpu_us_per_op": round((after - before) / processed * 1e6, 2)}


def redis_benchmark(stores: Stores, pipeline: int, seconds: int, clients: int) -> dict[str, Any]:
    """Round trips of ``pipeline`` commands on random keys (INCRBY: the rate limit's counter)."""
    total = 200_000 * pipeline
    cmd = [
        "redis-benchmark", "-h", HOST, "-p", str(stores.redis.port), "-c", str(clients), "-n", str(total),
        "-r", "100000", "-P", str(pipeline), "-q", "INCRBY", "rl:__rand_int__", "1",
    ]  # fmt: skip
    before, commands_before = stores.redis_cpu(), stores.redis_commands().get("incrby", 0)
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds * 10 + 120)
    elapsed = time.monotonic() - started
    after, commands = stores.redis_cpu(), stores.redis_commands().get("incrby", 0) - commands_before
    if done.returncode != 0 or not commands:
        raise SystemExit(f"redis-benchmark failed:\n{done.stdout}\n{done.stderr}")
    trips = commands / pipeline
    return {
        "ops": int(trips),
        "ops_per_s": round(trips / elapsed, 1),
        "cpu_us_per_op": round((after - before) / trips * 1e6, 2),
    }


def store_costs(stores: Stores, tmp: Path, statements: dict[str, str], seconds: int, clients: int) -> dict[str, Any]:
    costs: dict[str, Any] = {}
    for name in ("token", "version", "health", "audit100"):
        costs[name] = pgbench(stores, tmp, name, statements[name], seconds, clients)
        print(
            f"  pgbench {name:9}: {costs[name]['ops_per_s']:>9.0f} /s, "
            f"{costs[name]['cpu_us_per_op']:7.1f} us of PostgreSQL CPU each"
        )
    costs["audit_row"] = {
        "ops_per_s": round(costs["audit100"]["ops_per_s"] * 100, 1),
        "cpu_us_per_op": round(costs["audit100"]["cpu_us_per_op"] / 100, 2),
    }
    for pipeline in (2, 3):
        name = f"redis{pipeline}"
        costs[name] = redis_benchmark(stores, pipeline, seconds, clients * 2)
        print(
            f"  redis pipeline of {pipeline}: {costs[name]['ops_per_s']:>9.0f} /s, "
            f"{costs[name]['cpu_us_per_op']:7.1f} us of Redis CPU each"
        )
    return costs


def model(costs: dict[str, Any]) -> dict[str, Any]:
    """Store CPU (us) per request, from the counts and the costs."""
    pg = {"token", "version", "audit_row", "health"}
    out: dict[str, Any] = {}
    for settings, requests in PER_REQUEST.items():
        for request, ops in requests.items():
            out[f"{settings} {request}"] = {
                "pg_us": round(sum(n * costs[op]["cpu_us_per_op"] for op, n in ops.items() if op in pg), 2),
                "redis_us": round(sum(n * costs[op]["cpu_us_per_op"] for op, n in ops.items() if op not in pg), 2),
            }
    return out


# --------------------------------------------------------------------------- the check with real workers


@contextlib.contextmanager
def gunicorn(env: dict[str, str], workers: int, tmp: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    log = (tmp / f"gunicorn-{workers}.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "project.wsgi:application", "-b", f"{HOST}:{port}", "-w", str(workers),
         "--access-logfile", "-", "--log-level", "warning", "--disable-redirect-access-to-syslog"],
        cwd=ROOT, env={**env, "GUNICORN_CMD_ARGS": ""}, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                import urllib.request

                with urllib.request.urlopen(f"http://{HOST}:{port}/", timeout=2):
                    break
            except OSError as exc:
                if process.poll() is not None or time.monotonic() > deadline:
                    log_text = (tmp / f"gunicorn-{workers}.log").read_text()
                    raise SystemExit(f"gunicorn did not start:\n{log_text}") from exc
                time.sleep(0.2)
        yield process, port
    finally:
        stop_process(process)
        log.close()


def request_files(tmp: Path, token: str) -> tuple[Path, list[str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hello"}, "_meta": meta}}  # fmt: skip
    path = tmp / "call.json"
    path.write_text(json.dumps(body))
    headers = [
        "Content-Type", "application/json", "Accept", "application/json, text/event-stream",
        "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo",
        "Authorization", f"Bearer {token}",
    ]  # fmt: skip
    return path, headers


def wrk(port: int, body: Path, headers: list[str], seconds: int, concurrency: int) -> dict[str, Any]:
    import resource

    cmd = ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "10s", "-s", str(BENCH / "request.lua"),
           f"http://{HOST}:{port}/mcp", "--", str(body), *headers]  # fmt: skip
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = next((ln for ln in done.stdout.splitlines() if ln.startswith("BENCH_JSON ")), None)
    if done.returncode != 0 or line is None:
        raise SystemExit(f"wrk failed:\n{done.stdout}\n{done.stderr}")
    raw = json.loads(line.removeprefix("BENCH_JSON "))
    errors = sum(raw["errors"].values())
    if errors:
        raise SystemExit(f"wrk: {errors} errors {raw['errors']}")
    return {
        "requests": raw["requests"],
        "rps": raw["requests"] / (raw["duration_us"] / 1e6),
        "p99_ms": raw["latency_us"]["p99"] / 1000,
        "wrk_cpu_s": (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime),
    }


def pg_statements(stores: Stores, *, reset: bool = False) -> dict[str, int]:
    """What PostgreSQL ran in the demo's database, by kind (as tests/support/roundtrips.py names them)."""
    from tests.support.roundtrips import sql_kind

    with stores.pg.connect(DATABASE) as conn:
        if reset:
            conn.execute("SELECT pg_stat_statements_reset()")
            return {}
        rows = conn.execute(
            "SELECT query, calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s",
            (DATABASE,),
        ).fetchall()
    found: dict[str, int] = {}
    for query, calls in rows:
        if "pg_stat_statements" in query or "pg_stat_activity" in query:
            continue  # this script's own
        kind = "SELECT 1" if query.strip() == "SELECT $1" else sql_kind(query).removeprefix("pg ")
        found[kind] = found.get(kind, 0) + int(calls)
    return found


def pg_connections(stores: Stores) -> int:
    with stores.pg.connect() as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (DATABASE,)
        ).fetchone()
    return int(row[0]) if row else 0


def check_workers(
    stores: Stores, env: dict[str, str], tmp: Path, token: str, workers: int, seconds: int
) -> dict[str, Any]:
    body, headers = request_files(tmp, token)
    concurrency = 16
    with gunicorn(env, workers, tmp) as (process, port):
        wrk(port, body, headers, 2, concurrency)  # warm: connections, catalogs, token rows
        time.sleep(1.5)  # the warm-up's audit rows written
        # What the stores spend with nothing to do (timers, the stats collector, the
        # checkpointer), per second: taken out of what the load costs them.
        idle_pg, idle_redis = idle_rate(stores.pg_cpu, min(seconds, 5)), idle_rate(stores.redis_cpu, 2.0)
        started = time.monotonic()
        pg_statements(stores, reset=True)
        cpu = tree_cpu(process.pid), stores.pg_cpu(), stores.redis_cpu()
        commands = stores.redis_commands()
        busy = machine_busy()
        load = wrk(port, body, headers, seconds, concurrency)
        connections = pg_connections(stores)
        time.sleep(1.5)  # the run's last audit rows written (AUDIT_FLUSH_SECONDS)
        after = tree_cpu(process.pid), stores.pg_cpu(), stores.redis_cpu()
        elapsed = time.monotonic() - started
        busy_after = machine_busy()
        commands_after = stores.redis_commands()
        statements = pg_statements(stores)
        # Idle again, after: the mean of both is what is taken out (autovacuum, checkpoints).
        idle_pg = (idle_pg + idle_rate(stores.pg_cpu, min(seconds, 5))) / 2
        idle_redis = (idle_redis + idle_rate(stores.redis_cpu, 2.0)) / 2
    n = load["requests"]
    sent = {k: commands_after.get(k, 0) - commands.get(k, 0) for k in commands_after if k != "info"}
    measured = {
        "rps": round(load["rps"], 1),
        "p99_ms": round(load["p99_ms"], 2),
        "worker_us": round((after[0] - cpu[0]) / n * 1e6, 1),
        "pg_us": round((after[1] - cpu[1] - idle_pg * elapsed) / n * 1e6, 2),
        "redis_us": round((after[2] - cpu[2] - idle_redis * elapsed) / n * 1e6, 2),
        "pg_idle_cpu_pct": round(idle_pg * 100, 2),
        "wrk_us": round(load["wrk_cpu_s"] / n * 1e6, 1),
        "redis_commands_per_call": {k: round(v / n, 3) for k, v in sorted(sent.items()) if v},
        "pg_statements_per_call": {k: round(v / n, 3) for k, v in sorted(statements.items()) if v},
        "pg_connections": connections,
    }
    if busy is not None and busy_after is not None:
        measured["machine_busy_pct"] = round((busy_after[0] - busy[0]) / (busy_after[1] - busy[1]) * 100, 1)
    return measured


def check_model(
    stores: Stores, env: dict[str, str], tmp: Path, token: str, statements: dict[str, str], measured: dict[str, Any],
    seconds: int, settings: str,
) -> None:  # fmt: skip
    """The model at the rate the workers made: the statements and pipelines a call sends (the
    table's counts), replayed at that rate over as many connections; its store CPU per call
    against what the workers cost the stores.

    Redis's replay runs twice: on the machine at rest, and while the same workers serve the
    same load with the rate limit off (Redis then gets the replay's pipelines only, on a
    machine as busy as during the measured run). A call costs Redis a few microseconds, and
    what those cost depends on how busy the machine's cores are (run at rest the replay cost
    Redis half of what it cost beside the workers, run for run); the second is the like-for-
    like figure the check uses, the first is reported beside it."""
    rate = measured["rps"]
    mix = CALL_MIX[settings]
    model_pg = replay_pg(stores, tmp, statements, mix, rate, measured["pg_connections"], seconds)
    at_rest = replay_redis(stores, settings, rate, measured["workers"], seconds)
    model_redis = replay_redis_beside_workers(stores, env, tmp, token, settings, rate, measured["workers"], seconds)
    measured["pg_model_us"] = round(model_pg, 2)
    measured["redis_model_us"] = round(model_redis, 2)
    measured["redis_model_at_rest_us"] = round(at_rest, 2)
    measured["pg_vs_model"] = round(measured["pg_us"] / model_pg, 3) if model_pg > 0 else None
    measured["redis_vs_model"] = round(measured["redis_us"] / model_redis, 3) if model_redis > 0 else None
    measured["redis_vs_model_at_rest"] = round(measured["redis_us"] / at_rest, 3) if at_rest > 0 else None


# --------------------------------------------------------------------------- the model at a rate

# One tools/call's statements as pgbench transactions, weighted per 100 calls: with the
# defaults the token and the version each call, one 100-row INSERT and its health check per
# 100 calls; with the scale settings the INSERT and its health check alone. And the Redis
# round trips per call: the rate limit's pipeline (of 2; of 3 once per RATE_LIMIT_BATCH).
CALL_MIX = {
    "default": (("token", 100), ("version", 100), ("audit100", 1), ("health", 1)),
    "scale": (("audit100", 1), ("health", 1)),
}
REDIS_TRIPS = {"default": (2, 1.0), "scale": (3, 0.1)}
REDIS_REPLAY = r"""
import random, sys, threading, time
import redis
port, rate, seconds, clients, size = (int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]),
                                       int(sys.argv[5]))
def run():
    client = redis.Redis("127.0.0.1", port)
    interval = clients / rate
    due = time.monotonic()
    end = due + seconds
    while due < end:
        pipe = client.pipeline(transaction=False)
        key = f"rl:{random.randrange(100000)}"
        pipe.set(key, 0, ex=60, nx=True)
        pipe.incrby(key, 1)
        if size == 3:
            pipe.pttl(key)
        pipe.execute()
        due += interval
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
threads = [threading.Thread(target=run) for _ in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
"""


def idle_rate(read: Any, seconds: float) -> float:
    """CPU seconds per second a store spends with nothing to do."""
    before, started = read(), time.monotonic()
    time.sleep(seconds)
    return (read() - before) / (time.monotonic() - started)


def replay_pg(
    stores: Stores, tmp: Path, statements: dict[str, str], mix: tuple[tuple[str, int], ...], calls_per_s: float,
    clients: int, seconds: int,
) -> float:  # fmt: skip
    """PostgreSQL CPU (us) per call of ``mix`` (a call's statements per 100 calls) sent at
    ``calls_per_s`` over ``clients`` connections."""
    args = []
    for name, weight in mix:
        script = tmp / f"{name}.sql"
        script.write_text(statements[name].rstrip(";") + ";\n")
        args += ["-f", f"{script}@{weight}"]
    per_call = sum(w for _, w in mix) / 100
    idle_before = idle_rate(stores.pg_cpu, min(seconds, 5))
    cmd = [
        "pgbench", "-h", HOST, "-p", str(stores.pg.port), "-U", "postgres", "-n", "-M", "simple",
        "-c", str(max(1, clients)), "-j", "1", "-T", str(seconds), "-R", str(round(calls_per_s * per_call, 2)),
        *args, DATABASE,
    ]  # fmt: skip
    before, started = stores.pg_cpu(), time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120)
    cpu, elapsed = stores.pg_cpu() - before, time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"pgbench replay failed:\n{done.stdout}\n{done.stderr}")
    processed = int(re.search(r"number of transactions actually processed: (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    # Idle before and after, as for the workers (check_workers): the mean is taken out.
    idle = (idle_before + idle_rate(stores.pg_cpu, min(seconds, 5))) / 2
    return (cpu - idle * elapsed) / max(processed / per_call, 1) * 1e6


def replay_redis(
    stores: Stores, settings: str, calls_per_s: float, clients: int, seconds: int, idle: float | None = None
) -> float:
    """Redis CPU (us) per call of the rate limit's round trips sent at ``calls_per_s``; ``idle``:
    Redis's CPU per second without them (measured first when not given)."""
    size, share = REDIS_TRIPS[settings]
    if idle is None:
        idle = idle_rate(stores.redis_cpu, min(seconds, 5))
    before, started = stores.redis_cpu(), time.monotonic()
    commands = stores.redis_commands().get("incrby", 0)
    rate = calls_per_s * share
    subprocess.run(
        [sys.executable, "-c", REDIS_REPLAY, str(stores.redis.port), str(rate), str(seconds), str(clients), str(size)],
        check=True, timeout=seconds + 60,
    )  # fmt: skip
    cpu, elapsed = stores.redis_cpu() - before, time.monotonic() - started
    trips = stores.redis_commands().get("incrby", 0) - commands
    return (cpu - idle * elapsed) / max(trips / share, 1) * 1e6


def replay_redis_beside_workers(
    stores: Stores, env: dict[str, str], tmp: Path, token: str, settings: str, calls_per_s: float, workers: int,
    seconds: int,
) -> float:  # fmt: skip
    """:func:`replay_redis` while ``workers`` gunicorn workers serve the measured run's load
    (``wrk``, tools/call, c=16) with the rate limit off: the replay alone reaches Redis, with
    the machine's cores as busy as in the run. Redis's idle CPU is measured under that load too."""
    import threading

    body, headers = request_files(tmp, token)
    failed: list[BaseException] = []

    def load(duration: int) -> None:
        try:
            wrk(port, body, headers, duration, 16)
        except BaseException as exc:  # SystemExit included: reported below, in this thread
            failed.append(exc)

    with gunicorn({**env, "MCP_RATE_LIMIT": "off"}, workers, tmp) as (_, port):
        load(2)  # warm: connections, catalogs, token rows
        thread = threading.Thread(target=load, args=(seconds + 5,))
        thread.start()
        try:
            time.sleep(0.5)
            idle = idle_rate(stores.redis_cpu, 2.0)
            cost = replay_redis(stores, settings, calls_per_s, workers, seconds, idle=idle)
        finally:
            thread.join()
    if failed:
        raise SystemExit(f"the load beside the Redis replay failed: {failed[0]}")
    return cost


# --------------------------------------------------------------------------- report


def workers_per_store(worker_us: float, store_us: float) -> float | None:
    """Busy workers one core of a store serves: a worker's CPU per request over the store's."""
    return None if not store_us else round(worker_us / store_us, 1)


def print_model(costs: dict[str, Any], predicted: dict[str, Any], checks: dict[str, Any]) -> None:
    print("\nModel: store CPU per request (us), and busy workers per store core")
    for key, value in predicted.items():
        settings = key.split()[0]
        worker_us = [c["worker_us"] for k, c in checks.items() if k.startswith(settings)]
        per_worker = min(worker_us) if worker_us else None
        pg_workers = workers_per_store(per_worker, value["pg_us"]) if per_worker else None
        redis_workers = workers_per_store(per_worker, value["redis_us"]) if per_worker else None
        print(
            f"  {key:20} PostgreSQL {value['pg_us']:7.1f} us, Redis {value['redis_us']:6.1f} us"
            + (
                f"; a worker {per_worker:.0f} us: {pg_workers} workers per PostgreSQL core, {redis_workers} per Redis"
                if per_worker
                else ""
            )  # fmt: skip
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=8, help="each pgbench, redis-benchmark and wrk run")
    parser.add_argument("--quick", action="store_true", help="3 s runs")
    parser.add_argument("--clients", type=int, default=8, help="pgbench connections (redis-benchmark: twice)")
    parser.add_argument("--workers", default="1,2,4", help="gunicorn worker counts to check the model with")
    parser.add_argument("--settings", default="default,scale", help="default and/or scale (docs: capacity)")
    args = parser.parse_args(argv)
    seconds = 3 if args.quick else args.seconds
    if os.geteuid() != 0:
        raise SystemExit("bench/capacity.py needs root: its PostgreSQL cluster runs as the postgres user")
    for tool in ("pgbench", "redis-benchmark", "redis-server", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed (apt-get install postgresql-client redis-tools redis-server wrk)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))  # the context managers clean up
    report: dict[str, Any] = {"seconds": seconds, "clients": args.clients, "started": time.strftime("%Y-%m-%d %H:%M")}
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcp-capacity-")))
        pg = stack.enter_context(private_postgres(free_port()))
        redis = stack.enter_context(throwaway_redis(HOST, free_port()))
        stores = Stores(pg, redis)
        with pg.connect() as conn:
            conn.execute(f'CREATE DATABASE "{DATABASE}"')
        with pg.connect(DATABASE) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        env = demo_env(stores, tmp, "default")
        print(f"PostgreSQL {pg.port}, Redis {redis.port}: migrating the demo's database...")
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "load_demo_tools")
        manage(env, "demo_superuser")
        token = (
            manage(env, "mcp_token", "--user", "admin", "--scopes", "all", "--expires", "86400")
            .strip()
            .splitlines()[-1]
        )
        statements = capture_statements(env, token)
        report["statements"] = {k: v[:300] for k, v in statements.items()}
        print(f"What one operation costs each store ({seconds} s each, {args.clients} clients):")
        costs = store_costs(stores, tmp, statements, seconds, args.clients)
        report["costs"] = costs
        predicted = model(costs)
        report["model"] = predicted
        checks: dict[str, Any] = {}
        for settings in args.settings.split(","):
            env = demo_env(stores, tmp, settings)
            for workers in (int(w) for w in args.workers.split(",")):
                result = check_workers(stores, env, tmp, token, workers, seconds)
                result["workers"] = workers
                check_model(stores, env, tmp, token, statements, result, seconds, settings)
                checks[f"{settings} {workers}"] = result
                print(
                    f"  {settings:7} {workers} worker(s): {result['rps']:7.0f} calls/s, "
                    f"worker {result['worker_us']:6.0f} us, "
                    f"PostgreSQL {result['pg_us']:5.1f} us (model {result['pg_model_us']}, x{result['pg_vs_model']}), "
                    f"Redis {result['redis_us']:5.1f} us "
                    f"(model {result['redis_model_us']}, x{result['redis_vs_model']}; "
                    f"at rest {result['redis_model_at_rest_us']}, x{result['redis_vs_model_at_rest']}), "
                    f"{result['pg_connections']} connections\n"
                    f"      per call, PostgreSQL {result['pg_statements_per_call']}"
                    f"\n      Redis {result['redis_commands_per_call']}"
                )
        report["checks"] = checks
        print_model(costs, predicted, checks)
        within = [
            abs(c[key] - 1) <= TARGET for c in checks.values() for key in ("pg_vs_model", "redis_vs_model") if c[key]
        ]
        report["within_target"] = all(within)
        print(f"\nModel within {TARGET:.0%} of every measured store cost: {'yes' if all(within) else 'NO'}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(f"Written to {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
