"""Run the demo site under a real uvicorn server for end-to-end tests and benchmarks."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_script(script: str, timeout: float) -> Any:
    """Run ``script`` in a fresh interpreter (the checkout on its path, nothing else of this
    process's environment) and return the JSON of its last line of output."""
    import json

    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    base_url: str
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        return self.base_url + "/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def manage(self, *args: str) -> str:
        """Run a management command against the server's database."""
        out = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, check=True
        )
        return out.stdout

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read-only SQL statement on the server's database (``%s`` placeholders).

        For reading what the server wrote (audit rows, sessions) in a polling loop: a direct
        connection answers in milliseconds where ``manage("shell", ...)`` starts Django (about
        1.5 s of CPU), which on a busy machine made waits longer than what they waited for.
        """
        if self.env.get("MCP_DATABASE", "sqlite") == "postgres":
            import psycopg

            with psycopg.connect(
                host=self.env.get("POSTGRES_HOST", "127.0.0.1"),
                port=int(self.env.get("POSTGRES_PORT", "5432")),
                user=self.env.get("POSTGRES_USER", "postgres"),
                dbname=self.env["POSTGRES_DB"],
                autocommit=True,
            ) as conn:
                return list(conn.execute(sql, params).fetchall())  # type: ignore[arg-type]
        uri = Path(self.env["MCP_SQLITE_PATH"]).as_uri() + "?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=10)) as conn:
            return list(conn.execute(sql.replace("%s", "?"), params).fetchall())


# The servers of run_server() now running, and what was seen of those that ended by themselves
# (an exit code, a signal) before their test stopped them: tests/e2e/conftest.py adds both to a
# failed test's report, so that a server that died (a "Server disconnected" in a client) says how.
RUNNING: list[LiveServer] = []
ENDED_BY_THEMSELVES: list[str] = []


def ended_by_itself(server: LiveServer) -> str | None:
    """How ``server`` ended, with its log's last lines, if it exited while it was still wanted."""
    code = server.process.poll()
    if code is None:
        return None
    how = f"signal {-code}" if code < 0 else f"exit code {code}"
    tail = "\n".join(server.log().splitlines()[-40:])
    return f"the server at {server.base_url} ended by itself ({how}); the end of its log:\n{tail}"


def stop_process(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it has not exited within ``timeout`` seconds."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def server_env(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "project.settings",
            "DJANGO_DEBUG": "0",
            "MCP_VAR_DIR": str(tmp),
            "MCP_SQLITE_PATH": str(tmp / "e2e.sqlite3"),
            "PYTHONUNBUFFERED": "1",
            # Tests read the audit rows of a call right after it: written in the call, unless
            # a test asks for batches (the demo's default).
            "MCP_AUDIT_FLUSH_ROWS": "1",
        }
    )
    env.update(extra or {})
    return env


def prepare_database(env: dict[str, str]) -> None:
    """``migrate`` and ``load_demo_tools`` for the server's database.

    A new SQLite file is a copy of one this process made that way once (see ``sqlite_template``):
    starting Django twice per server cost about 4 s of the e2e run's CPU each, for the same
    file every time. An existing file (a second start on the same database), PostgreSQL, or
    MCP_TEST_DB_TEMPLATE=0 run the two commands as before.
    """
    target = Path(env.get("MCP_SQLITE_PATH", ""))
    sqlite = env.get("MCP_DATABASE", "sqlite") == "sqlite" and env.get("MCP_SQLITE_PATH")
    if sqlite and not target.exists() and os.environ.get("MCP_TEST_DB_TEMPLATE", "1") != "0":
        copy_sqlite(sqlite_template(), target)
        return
    _migrate_and_load(env)


def _migrate_and_load(env: dict[str, str]) -> None:
    for args in (["migrate", "--noinput", "-v0"], ["load_demo_tools"]):
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True)


_template_lock = threading.Lock()
_template: Path | None = None


def sqlite_template() -> Path:
    """A SQLite database migrated and loaded with the demo tools, made once per process.

    Neither ``migrate`` nor ``load_demo_tools`` reads the environment a test gives its server
    (INSTALLED_APPS and the demo tools are fixed), so one file serves every server; it is made
    in a neutral environment and removed when the process exits.
    """
    global _template
    with _template_lock:
        if _template is None or not _template.exists():
            folder = Path(tempfile.mkdtemp(prefix="mcp-db-template-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            env = server_env(folder, {"MCP_DATABASE": "sqlite"})
            _migrate_and_load(env)
            _template = Path(env["MCP_SQLITE_PATH"])
        return _template


def copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy (SQLite's backup API: the WAL's pages included)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(source)) as src, contextlib.closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


@contextlib.contextmanager
def run_server(
    tmp: Path,
    *,
    extra_env: dict[str, str] | None = None,
    app: str = "project.asgi:application",
    prepare: bool = True,
    workers: int = 1,
    port: int | None = None,
) -> Iterator[LiveServer]:
    env = server_env(tmp, extra_env)
    if prepare:
        prepare_database(env)
    port = port or free_port()
    log_path = tmp / f"uvicorn-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "uvicorn", app,
                "--host", "127.0.0.1", "--port", str(port),
                "--workers", str(workers), "--log-level", "warning", "--timeout-graceful-shutdown", "3",
            ],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    server = LiveServer(f"http://127.0.0.1:{port}", env, process, log_path)
    RUNNING.append(server)
    try:
        wait_ready(server)
        yield server
    finally:
        RUNNING.remove(server)
        if (ended := ended_by_itself(server)) is not None:
            ENDED_BY_THEMSELVES.append(ended)
        stop_process(process)


def wait_ready(server: LiveServer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{server.log()}")
        try:
            with urllib.request.urlopen(server.base_url + "/", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"server did not become ready:\n{server.log()}")


@dataclass
class Worker:
    """A real Celery worker subprocess of the demo project."""

    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        stop_process(self.process, timeout=15)


def start_worker(env: dict[str, str], log_path: Path, *, queue: str, concurrency: int = 4) -> Worker:
    """Start ``celery -A project worker`` consuming ``queue`` and wait until it is ready."""
    offset = log_path.stat().st_size if log_path.exists() else 0
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "project", "worker",
                "-P", "threads", "-c", str(concurrency), "-Q", queue,
                "-n", f"{queue}-{time.monotonic_ns()}@127.0.0.1", "--without-gossip", "--without-mingle",
                "--loglevel", "INFO",
            ],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    worker = Worker(process, log_path)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"worker exited early:\n{worker.log()}")
        if b" ready." in log_path.read_bytes()[offset:]:
            return worker
        time.sleep(0.1)
    worker.stop()
    raise RuntimeError(f"worker did not become ready:\n{worker.log()}")


def drop_queue(broker_url: str, queue: str) -> None:
    """Delete a Redis queue of ``start_worker`` and kombu's binding keys for it."""
    import redis

    redis.Redis.from_url(broker_url).delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
