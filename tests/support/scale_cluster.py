"""A small data centre for tests/e2e/test_scale.py, made of network namespaces (tests/support/netns.py).

Shared state lives in the root namespace on the bridge address: a throwaway PostgreSQL cluster
(``initdb`` + ``pg_ctl`` of Debian's packages, run as the ``postgres`` user, trust auth for the
test /24 only) and a throwaway ``redis-server``, both on free ports and stopped afterwards. Web
hosts run the demo's ``project.asgi:application`` (the ASGI front) under uvicorn with two
worker processes; worker hosts run a Celery worker with beat; the client host is the namespace
the test's own thread moves into (``netns.inside``), so every request the test sends leaves from
the client's address, which the web hosts' access logs show.

``Balancer`` is the client side's load balancer: every request goes to a web host picked at
random (a seeded ``random.Random``), over a connection to that host only, and a request whose
connection is refused goes to another host (it never reached the server, so it is safe to
send again).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import httpx2

from tests.support.mcp_client import MODERN, check_message, modern_meta
from tests.support.netns import Host, Topology, reachable, tail, wait_until
from tests.support.servers import ROOT, stop_process

WEB_PORT = 8000
ACCESS_LINE = re.compile(r'INFO:\s+(\d+\.\d+\.\d+\.\d+):\d+ - "(\w+) (\S+) HTTP/[\d.]+" (\d+)')
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
EXT = "io.modelcontextprotocol/tasks"
T0 = time.monotonic()


def say(step: str, text: str) -> None:
    """One line of the test's report (make scale-test runs pytest with -s, so it is shown)."""
    print(f"[scale {time.monotonic() - T0:6.1f}s] {step}: {text}", flush=True)


# --------------------------------------------------------------------------- shared state


@dataclass
class Postgres:
    address: str
    port: int
    root: Path
    bindir: Path
    log: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    def ctl(self, *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", str(self.bindir / "pg_ctl"), "-D", str(self.data), *args],
            capture_output=True, text=True, timeout=timeout, cwd=self.root,
        )  # fmt: skip

    def start(self) -> None:
        done = self.ctl("-l", str(self.log), "-w", "-t", "60", "start")
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl start failed: {done.stderr}\n{tail(self.log)}")

    def restart(self) -> None:
        done = self.ctl("-l", str(self.log), "-w", "-t", "60", "-m", "fast", "restart")
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl restart failed: {done.stderr}\n{tail(self.log)}")

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        if self.postmaster_pid() is None:
            return
        done = self.ctl("-m", "immediate", "-w", "-t", "30", "stop")
        pid = self.postmaster_pid()
        if done.returncode != 0 and pid is not None:  # it is ours: it runs on our data directory
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def connect(self, dbname: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(
            host=self.address, port=self.port, user="postgres", dbname=dbname, autocommit=True, connect_timeout=5
        )


@contextlib.contextmanager
def throwaway_postgres(address: str, port: int, trusted: str) -> Iterator[Postgres]:
    """A new PostgreSQL cluster listening on ``address:port`` only, trusting ``trusted`` (a CIDR)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("no /usr/lib/postgresql/*/bin/initdb (apt-get install postgresql)")
    bindir = Path(found[-1]).parent
    root = Path(tempfile.mkdtemp(prefix=f"mcpscale-pg-{os.getpid()}-"))
    shutil.chown(root, "postgres", "postgres")
    pg = Postgres(address, port, root, bindir, root / "server.log")
    try:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", str(bindir / "initdb"), "-D", str(pg.data), "-U", "postgres",
             "-A", "trust", "-E", "UTF8", "--no-instructions"],
            capture_output=True, text=True, timeout=120, cwd=root,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr}")
        with (pg.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"\nlisten_addresses = '{address}'\nport = {port}\nunix_socket_directories = '{root}'\n"
                "max_connections = 300\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
                "shared_buffers = 32MB\n"
            )
        with (pg.data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {trusted} trust\n")
        pg.start()
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class Redis:
    address: str
    port: int
    root: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{self.address}:{self.port}"

    def start(self) -> None:
        with (self.root / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                ["redis-server", "--bind", self.address, "--port", str(self.port), "--save", "",
                 "--appendonly", "no", "--protected-mode", "no", "--dir", str(self.root)],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        (self.root / "redis.pid").write_text(str(self.process.pid))
        wait_until("redis to listen", lambda: reachable(self.address, self.port), 20)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process, timeout=10)
            self.process = None


@contextlib.contextmanager
def throwaway_redis(address: str, port: int) -> Iterator[Redis]:
    root = Path(tempfile.mkdtemp(prefix=f"mcpscale-redis-{os.getpid()}-"))
    redis = Redis(address, port, root)
    try:
        redis.start()
        yield redis
    finally:
        redis.stop()
        shutil.rmtree(root, ignore_errors=True)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def reap_stale_services() -> list[str]:
    """Stop the PostgreSQL and Redis of earlier runs whose process is gone (killed with SIGKILL),
    each by the id it recorded and only if that process still runs on the run's directory."""
    removed = []
    for root in Path(tempfile.gettempdir()).glob("mcpscale-*-*-*"):
        found = re.fullmatch(r"mcpscale-(pg|redis)-(\d+)-\w+", root.name)
        if not found or Path(f"/proc/{found.group(2)}").exists():
            continue
        pidfile = root / ("data/postmaster.pid" if found.group(1) == "pg" else "redis.pid")
        with contextlib.suppress(OSError, ValueError, IndexError):
            pid = int(pidfile.read_text().split()[0])
            if str(root) in _cmdline(pid) or (found.group(1) == "redis" and "redis-server" in _cmdline(pid)):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
        removed.append(str(root))
    return removed


# --------------------------------------------------------------------------- hosts


@dataclass
class WebHost:
    host: Host
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log_offset: int = 0

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def origin(self) -> str:
        return f"http://{self.host.address}:{WEB_PORT}"

    @property
    def url(self) -> str:
        return self.origin + "/mcp"

    def log(self) -> str:
        return tail(self.log_path, 6000)

    def access(self, since: int = 0) -> list[tuple[str, str, str, int]]:
        """(peer, method, path, status) of each request in this host's access log."""
        text = self.log_path.read_text(errors="replace")[since:]
        return [(m[1], m[2], m[3], int(m[4])) for m in ACCESS_LINE.finditer(text)]

    def log_size(self) -> int:
        return len(self.log_path.read_text(errors="replace")) if self.log_path.exists() else 0


@dataclass
class WorkerHost:
    host: Host
    log_path: Path
    process: subprocess.Popen[bytes] | None = None

    def log(self) -> str:
        return tail(self.log_path, 6000)


@dataclass
class Cluster:
    topology: Topology
    pg: Postgres
    redis: Redis
    tmp: Path
    env: dict[str, str]
    client: Host
    web: dict[str, WebHost] = field(default_factory=dict)
    workers: dict[str, WorkerHost] = field(default_factory=dict)

    def manage(self, host: Host, *args: str) -> str:
        """``manage.py ARGS`` run on ``host`` (inside its namespace)."""
        done = host.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env)
        if done.returncode != 0:
            raise RuntimeError(f"manage.py {' '.join(args[:2])} on {host.name} failed:\n{done.stdout}\n{done.stderr}")
        return str(done.stdout)

    def shell(self, host: Host, code: str) -> str:
        return self.manage(host, "shell", "-c", code).strip()

    # web hosts ---------------------------------------------------------------

    def start_web(self, name: str, wait: bool = True) -> WebHost:
        """Start uvicorn on web host ``name``; with ``wait``, return once it serves."""
        web = self.web[name]
        web.log_offset = web.log_size()
        with web.log_path.open("ab") as log:
            web.process = web.host.popen(
                [sys.executable, "-m", "uvicorn", "project.asgi:application",
                 "--host", web.host.address, "--port", str(WEB_PORT), "--workers", "2",
                 "--log-level", "info", "--timeout-graceful-shutdown", "3"],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        if wait:
            self.wait_web(web)
        return web

    def wait_web(self, web: WebHost, timeout: float = 90) -> None:
        """Ready when both uvicorn workers have started and the site answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert web.process is not None
            if web.process.poll() is not None:
                raise RuntimeError(f"web host {web.name} exited early:\n{web.log()}")
            started = web.log_path.read_text(errors="replace")[web.log_offset :].count("Application startup complete")
            if started >= 2:
                try:
                    if httpx.get(web.origin + "/", timeout=5).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
            time.sleep(0.2)
        raise RuntimeError(f"web host {web.name} did not become ready:\n{web.log()}")

    def stop_web(self, name: str) -> None:
        """SIGTERM to the host's uvicorn (it stops its workers), then anything left is killed."""
        web = self.web[name]
        if web.process is not None:
            stop_process(web.process, timeout=15)
        self.kill_web(name)

    def kill_web(self, name: str) -> list[int]:
        """The host dies: SIGKILL every process on it (uvicorn's master and its workers)."""
        web = self.web[name]
        killed = web.host.kill_all()
        web.process = None
        web.log_offset = web.log_size()
        return killed

    # worker hosts ------------------------------------------------------------

    def start_worker(self, name: str) -> WorkerHost:
        worker = self.workers[name]
        offset = worker.log_path.stat().st_size if worker.log_path.exists() else 0
        with worker.log_path.open("ab") as log:
            worker.process = worker.host.popen(
                [sys.executable, "-m", "celery", "-A", "project", "worker", "-B",
                 "--schedule", str(self.tmp / f"celerybeat-{name}"),
                 "-P", "threads", "-c", "2", "-Q", self.env["MCP_TASK_QUEUE"],
                 "-n", f"{name}@{worker.host.address}", "--without-gossip", "--without-mingle", "--loglevel", "INFO"],
                cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if worker.process.poll() is not None:
                raise RuntimeError(f"worker {name} exited early:\n{worker.log()}")
            if b" ready." in worker.log_path.read_bytes()[offset:]:
                return worker
            time.sleep(0.2)
        raise RuntimeError(f"worker {name} did not become ready:\n{worker.log()}")

    def kill_worker(self, name: str) -> list[int]:
        worker = self.workers[name]
        killed = worker.host.kill_all()
        worker.process = None
        return killed

    def restart_postgres(self) -> None:
        with self.topology.root():  # the new postmaster listens on the bridge address
            self.pg.restart()

    def stop_redis(self) -> None:
        self.redis.stop()

    def start_redis(self) -> None:
        with self.topology.root():
            self.redis.start()

    def logs(self) -> str:
        """The tail of every host's log, for a failing assertion."""
        parts = [f"--- web {w.name}\n{w.log()}" for w in self.web.values()]
        parts += [f"--- worker {w.host.name}\n{w.log()}" for w in self.workers.values()]
        parts.append(f"--- postgres\n{tail(self.pg.log)}")
        return "\n".join(parts)


# --------------------------------------------------------------------------- clients


class Balancer:
    """Picks a web host at random for each request; a host whose connection is refused is
    marked down and the request goes to another one."""

    def __init__(self, cluster: Cluster, rng: random.Random) -> None:
        self.cluster = cluster
        self.rng = rng
        self.down: set[str] = set()
        self.counts: Counter[str] = Counter()
        self.failovers = 0

    def up(self) -> list[str]:
        return [name for name in sorted(self.cluster.web) if name not in self.down]

    def pick(self) -> str:
        up = self.up()
        assert up, "no web host is up"
        return self.rng.choice(up)

    def send(self, attempt: Callable[[WebHost], Any], host: str | None = None) -> tuple[str, Any]:
        """``attempt(web_host)`` on ``host`` or a random host; on a refused connection, another one."""
        for _ in range(len(self.cluster.web) + 1):
            name = host or self.pick()
            try:
                result = attempt(self.cluster.web[name])
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if host is not None:
                    raise
                self.down.add(name)
                self.failovers += 1
                continue
            self.counts[name] += 1
            return name, result
        raise AssertionError("every web host refused the connection")


def parse_body(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response of a POST: a JSON body, or the last message of an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(m) for m in sse_messages(response.text)]
        return messages[-1]
    return dict(response.json())


def sse_messages(text: str) -> list[str]:
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in block.split("\n") if line.startswith("data:")]
        if data and "".join(data):
            out.append("".join(data))
    return out


class McpClient:
    """A raw JSON-RPC client over httpx, each request sent through the balancer; validates every
    answer against the official schema of its revision. ``hosts`` records where each went."""

    def __init__(
        self, balancer: Balancer, version: str = "2025-11-25", name: str = "scale", keepalive: bool = True
    ) -> None:
        """``keepalive=False``: a new connection per request (what a client that cannot tell a
        silently dead connection from a slow one needs to fail over at once)."""
        self.balancer = balancer
        self.version = version
        self.name = name
        self.session: str | None = None
        limits = httpx.Limits() if keepalive else httpx.Limits(max_keepalive_connections=0)
        self.http = httpx.Client(timeout=httpx.Timeout(30, connect=3), limits=limits)
        self.next_id = 0
        self.hosts: list[str] = []

    def close(self) -> None:
        self.http.close()

    def post(
        self, method: str, params: dict[str, Any], *, host: str | None = None, headers: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> dict[str, Any]:  # fmt: skip
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        hdrs = dict(ACCEPT)
        if self.session:
            hdrs["Mcp-Session-Id"] = self.session
            hdrs["MCP-Protocol-Version"] = self.version
        hdrs.update(headers or {})

        def attempt(web: WebHost) -> httpx.Response:
            return self.http.post(web.url, json=body, headers=hdrs, timeout=timeout)

        name, response = self.balancer.send(attempt, host)
        self.hosts.append(name)
        if method == "initialize":
            self.session = response.headers["mcp-session-id"]
        message = parse_body(response)
        if method != "initialize":
            check_message(self.version, message, method)
        message["_host"] = name
        message["_status"] = response.status_code
        return message

    def initialize(self, host: str | None = None) -> str:
        answer = self.post(
            "initialize",
            {"protocolVersion": self.version, "capabilities": {}, "clientInfo": {"name": self.name, "version": "1"}},
            host=host,
        )
        assert answer["result"]["protocolVersion"] == self.version, answer
        self.notify("notifications/initialized")
        assert self.session
        return self.session

    def notify(self, method: str) -> None:
        hdrs = {**ACCEPT, "Mcp-Session-Id": self.session or "", "MCP-Protocol-Version": self.version}
        body = {"jsonrpc": "2.0", "method": method}
        _, response = self.balancer.send(lambda web: self.http.post(web.url, json=body, headers=hdrs))
        assert response.status_code == 202, response.text

    def modern(self, method: str, params: dict[str, Any], name: str | None = None, **kw: Any) -> dict[str, Any]:
        meta = modern_meta(**{"io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}}})
        headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
        saved, self.version = self.version, MODERN
        try:
            return self.post(method, {**params, "_meta": meta}, headers=headers, **kw)
        finally:
            self.version = saved

    def call(self, tool: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
        return self.post("tools/call", {"name": tool, "arguments": arguments}, **kw)

    def tools(self) -> list[dict[str, Any]]:
        """Every page of tools/list (each page from a host of its own)."""
        tools: list[dict[str, Any]] = []
        cursor = None
        for _ in range(50):
            page = self.post("tools/list", {"cursor": cursor} if cursor else {})["result"]
            tools += page["tools"]
            cursor = page.get("nextCursor")
            if not cursor:
                return tools
        raise AssertionError("more than 50 pages")

    def names(self) -> list[str]:
        return [t["name"] for t in self.tools()]


class Listener:
    """A notification stream on one web host, read in a thread: a legacy GET stream of a session
    or a 2026-07-28 ``subscriptions/listen``. Keeps each message with its arrival (wall) time."""

    def __init__(
        self,
        web: WebHost,
        *,
        session: str | None = None,
        version: str = MODERN,
        read_timeout: float = 60,
        last_event_id: str | None = None,
    ) -> None:
        """``read_timeout``: how long a silent stream is trusted (the server sends keep-alives every
        MCP_SSE_KEEPALIVE_SECONDS, so a short one finds a dead connection as a client would).
        ``last_event_id``: resume a GET stream as the SDK clients do (Last-Event-ID)."""
        self.web = web
        self.last_event_id: str | None = None  # the id of the newest event read
        self.read_timeout = read_timeout
        self.version = version if session is not None else MODERN
        self.messages: list[tuple[float, dict[str, Any]]] = []
        self.status = 0
        self.error: str | None = None
        self.ready = threading.Event()
        self.done = threading.Event()
        self._stop = threading.Event()
        if session is None:
            body: dict[str, Any] | None = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()},
            }
            headers = {**ACCEPT, "MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}
            method = "POST"
        else:
            body = None
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session, "MCP-Protocol-Version": version}
            if last_event_id is not None:
                headers["Last-Event-ID"] = last_event_id
            method = "GET"
        self._thread = threading.Thread(target=self._run, args=(web.url, method, headers, body), daemon=True)
        self._thread.start()
        assert self.ready.wait(15), f"the stream on {web.name} did not open"
        assert self.status == 200, f"stream on {web.name}: HTTP {self.status} {self.error}"

    def _run(self, url: str, method: str, headers: dict[str, str], body: Any) -> None:
        try:
            with (
                httpx.Client(timeout=httpx.Timeout(10, read=self.read_timeout)) as client,
                client.stream(method, url, headers=headers, json=body) as response,
            ):
                self.status = response.status_code
                buffer = ""
                for chunk in response.iter_text():
                    self.ready.set()
                    buffer += chunk
                    while "\n\n" in buffer:
                        block, buffer = buffer.split("\n\n", 1)
                        for line in block.splitlines():
                            if line.startswith("id:"):
                                self.last_event_id = line[3:].strip()
                        for data in sse_messages(block + "\n\n"):
                            message = json.loads(data)
                            check_message(self.version, message)
                            self.messages.append((time.time(), message))
                    if self._stop.is_set():
                        return
        except httpx.HTTPError as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ready.set()
            self.done.set()

    def changes(self) -> list[float]:
        return [t for t, m in self.messages if m.get("method") == "notifications/tools/list_changed"]

    def wait_change(self, count: int = 1, timeout: float = 10) -> float | None:
        """Arrival time of the ``count``-th list_changed, or None after ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            changes = self.changes()
            if len(changes) >= count:
                return changes[count - 1]
            time.sleep(0.05)
        return None

    def close(self) -> None:
        self._stop.set()


class RandomHostTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport (httpx2 is the Python SDK's HTTP client): each request goes to a web
    host picked by the balancer (its URL and Host header rewritten), over a connection pool keyed
    by host, so a connection never carries requests for two hosts. Records each request's host
    and session id."""

    def __init__(self, balancer: Balancer) -> None:
        self.balancer = balancer
        self.inner = httpx2.AsyncHTTPTransport()
        self.log: list[tuple[str, str, str | None]] = []  # (host, HTTP method, Mcp-Session-Id)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        for _ in range(len(self.balancer.cluster.web) + 1):
            name = self.balancer.pick()
            web = self.balancer.cluster.web[name]
            request.url = request.url.copy_with(host=web.host.address, port=WEB_PORT)
            request.headers["Host"] = f"{web.host.address}:{WEB_PORT}"
            try:
                response = await self.inner.handle_async_request(request)
            except httpx2.ConnectError:
                self.balancer.down.add(name)
                self.balancer.failovers += 1
                continue
            self.balancer.counts[name] += 1
            self.log.append((name, request.method, request.headers.get("mcp-session-id")))
            return response
        raise httpx2.ConnectError("every web host refused the connection", request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()
