"""Several hosts (issue 14): two web hosts, worker hosts and a client host as network namespaces.

The topology (tests/support/netns.py, tests/support/scale_cluster.py): a bridge in the root namespace at
198.18.N.1 (N: the first free /24 of 198.18.0.0/16, the benchmark range) with this run's own
PostgreSQL and Redis bound to it; web hosts ``a`` (.11) and ``b`` (.12), each uvicorn with two
worker processes serving ``project.asgi:application`` (the ASGI front); worker hosts ``w1``
(.21) and ``w2`` (.22) running a Celery worker with beat (broker: Redis); the client host (.31),
the namespace this test's thread moves into. Every client request goes to a web host picked at
random (seeded: the seed is printed; ``MCP_SCALE_SEED`` replays it), legacy sessions included.

The steps run in order on one cluster and print what they checked (``make scale-test`` shows it):

1. the official Python and TypeScript SDK clients: list, call, task flows across both hosts;
2. an admin edit on host A reaches listeners on host B (Redis, then PostgreSQL notifier);
3. a rate limit holds across hosts;
4. a web host killed mid-way loses no session, task or notification;
5. a worker host killed mid-task: the task is retried on another worker host or failed;
6. Redis down, then a PostgreSQL restart, survived by every process.

Needs root and iproute2; without them the module is skipped, or fails with CI=true.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import external_services, netns, nodejs
from tests.support.netns import Topology, inside
from tests.support.scale_cluster import (
    Balancer,
    Cluster,
    Listener,
    McpClient,
    RandomHostTransport,
    WebHost,
    WorkerHost,
    reap_stale_services,
    say,
    throwaway_postgres,
    throwaway_redis,
)
from tests.support.sdk import legacy_handshake
from tests.support.servers import server_env

pytestmark = [pytest.mark.e2e, pytest.mark.scale, pytest.mark.node, pytest.mark.timeout(600)]

HEARTBEAT = 0.5
LOST_AFTER = 3.0
LOST_MESSAGE = "The worker running this task stopped before it finished."
# The suite's seed (CI runs it every time); MCP_SCALE_SEED replays another one.
FIXED_SEED = 251125
SEED = int(os.environ.get("MCP_SCALE_SEED") or FIXED_SEED)


def _rng(step: int) -> random.Random:
    return random.Random(SEED * 10 + step)


# --------------------------------------------------------------------------- the cluster


@pytest.fixture(scope="module")
def node_bin() -> Path:
    return nodejs.node()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, node_bin: Path) -> Iterator[Cluster]:
    """The hosts, started once for the module. ``node_bin`` first: `npm ci` (if the packages are
    missing) must run before this thread moves into the client namespace, which has no way out."""
    reason = netns.available()
    if reason:
        if external_services.IN_CI:
            pytest.fail(f"network namespaces are unavailable: {reason} (CI=true: a failure)")
        pytest.skip(f"network namespaces are unavailable: {reason}")
    for name in netns.reap_stale() + reap_stale_services():
        say("setup", f"removed {name}, left by an earlier run that was killed")
    tmp = tmp_path_factory.mktemp("scale")
    started = time.monotonic()
    own_namespace = os.stat("/proc/thread-self/ns/net").st_ino
    with contextlib.ExitStack() as stack:
        # SIGTERM (a CI time limit, `kill`) ends the run like Ctrl-C, so the teardown below runs.
        previous = signal.signal(signal.SIGTERM, _interrupt)
        stack.callback(signal.signal, signal.SIGTERM, previous)
        topology = stack.enter_context(Topology())
        hosts = {
            "a": topology.add_host("web-a", 11),
            "b": topology.add_host("web-b", 12),
            "w1": topology.add_host("worker-1", 21),
            "w2": topology.add_host("worker-2", 22),
            "client": topology.add_host("client", 31),
        }
        pg_port = topology.free_port()
        redis_port = topology.free_port()
        while redis_port == pg_port:
            redis_port = topology.free_port()
        pg = stack.enter_context(throwaway_postgres(topology.gateway, pg_port, str(topology.network)))
        redis = stack.enter_context(throwaway_redis(topology.gateway, redis_port))
        with pg.connect() as conn:
            conn.execute("CREATE DATABASE mcp_scale")
        env = server_env(
            tmp,
            {
                "MCP_DATABASE": "postgres",
                "POSTGRES_HOST": topology.gateway,
                "POSTGRES_PORT": str(pg_port),
                "POSTGRES_DB": "mcp_scale",
                "POSTGRES_USER": "postgres",
                "REDIS_URL": f"{redis.url}/0",
                "MCP_CACHE_PREFIX": "scale",
                "MCP_NOTIFIER": "redis",
                "MCP_NOTIFIER_REDIS_URL": f"{redis.url}/0",
                "CELERY_BROKER_URL": f"{redis.url}/1",
                "MCP_TASK_QUEUE": "mcp-scale",
                "MCP_TASK_HEARTBEAT_SECONDS": str(HEARTBEAT),
                "MCP_TASK_LOST_AFTER_SECONDS": str(LOST_AFTER),
                "MCP_PAGE_SIZE": "4",
                "MCP_SSE_KEEPALIVE_SECONDS": "1",
                "MCP_SSE_MAX_SECONDS": "120",
                "DJANGO_ALLOWED_HOSTS": f"{hosts['a'].address},{hosts['b'].address}",
            },
        )
        cluster = Cluster(topology, pg, redis, tmp, env, hosts["client"])
        for name in ("a", "b"):
            cluster.web[name] = WebHost(hosts[name], tmp / f"web-{name}.log")
        for name in ("w1", "w2"):
            cluster.workers[name] = WorkerHost(hosts[name], tmp / f"worker-{name}.log")
        # From here on this thread is the client host: its sockets leave from the client's address.
        stack.enter_context(inside(cluster.client))
        stack.callback(_stop_hosts, cluster)
        cluster.manage(hosts["a"], "migrate", "--noinput", "-v0")
        cluster.manage(hosts["a"], "load_demo_tools")
        for name in ("a", "b"):
            cluster.start_web(name, wait=False)
        cluster.start_worker("w1")
        for name in ("a", "b"):
            cluster.wait_web(cluster.web[name])
        for host in hosts.values():
            assert "default" not in host.routes()
        say(
            "setup",
            f"bridge {topology.bridge} {topology.gateway}/24; PostgreSQL {pg.bindir.parent.name} on "
            f"{topology.gateway}:{pg_port}, Redis on {topology.gateway}:{redis_port}; web hosts "
            f"a={hosts['a'].address} b={hosts['b'].address} (uvicorn, 2 workers each), worker host "
            f"w1={hosts['w1'].address}, client {hosts['client'].address}; no default route anywhere; "
            f"seed {SEED}; up in {time.monotonic() - started:.1f} s",
        )
        yield cluster
    assert os.stat("/proc/thread-self/ns/net").st_ino == own_namespace  # the thread is back home
    leftovers = topology.leftovers()
    assert leftovers == [], leftovers
    say("teardown", "every process stopped, namespaces, veths and the bridge removed")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _stop_hosts(cluster: Cluster) -> None:
    for name in cluster.web:
        cluster.kill_web(name)
    for name in cluster.workers:
        cluster.kill_worker(name)


def _access_summary(cluster: Cluster, since: dict[str, int]) -> tuple[dict[str, int], set[str]]:
    counts, peers = {}, set()
    for name, web in cluster.web.items():
        lines = web.access(since.get(name, 0))
        counts[name] = len(lines)
        peers |= {peer for peer, *_ in lines}
    return counts, peers


def _offsets(cluster: Cluster) -> dict[str, int]:
    return {name: web.log_size() for name, web in cluster.web.items()}


# --------------------------------------------------------------------------- step 1: SDK clients


@pytest.mark.anyio
async def test_1_python_sdk_flows_with_every_request_on_a_random_host(cluster: Cluster) -> None:
    import anyio
    import httpx2
    import mcp.types as types
    from mcp import Client, ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from tests.e2e.test_python_sdk import _check, _exercise
    from tests.e2e.test_tasks_worker import RELATED
    from tests.support.sdk import send_unchecked

    offsets = _offsets(cluster)
    balancer = Balancer(cluster, _rng(1))
    transport = RandomHostTransport(balancer)
    url = cluster.web["a"].url  # rewritten per request by the transport
    timeout = httpx2.Timeout(30, read=300)
    async with httpx2.AsyncClient(transport=transport, timeout=timeout) as http:
        async with (
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await legacy_handshake(session, name="scale")

            async def list_page(cursor: str | None) -> Any:
                return await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))

            outcome = await _exercise(session, list_page)
            _check(outcome, structured=True)
            request = types.CallToolRequest(
                params=types.CallToolRequestParams(
                    name="build_report", arguments={"steps": 3}, task=types.TaskMetadata(ttl=120_000)
                )
            )
            created = types.CreateTaskResult.model_validate(await send_unchecked(session, request))
            task_id = created.task.task_id
            with anyio.fail_after(30):
                while True:
                    got = await session.send_request(
                        types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)), types.GetTaskResult
                    )
                    if got.status != "working":
                        break
                    await anyio.sleep(0.2)
            assert got.status == "completed", got
            result = await session.send_request(
                types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id)),
                types.CallToolResult,
            )
            assert result.content[0].text == "Report ready after 3 steps."  # type: ignore[union-attr]
            assert result.meta is not None
            assert result.meta[RELATED] == {"taskId": task_id}
            listed = await session.send_request(types.ListTasksRequest(), types.ListTasksResult)
            assert task_id in [t.task_id for t in listed.tasks]
        legacy = list(transport.log)
        async with Client(streamable_http_client(url, http_client=http), mode="2026-07-28") as client:  # type: ignore[arg-type]

            async def list_modern(cursor: str | None) -> Any:
                return await client.list_tools(cursor=cursor)

            modern_outcome = await _exercise(client, list_modern)
            _check(modern_outcome, structured=True)
        modern = transport.log[len(legacy) :]
    sessions = {s for _, _, s in legacy if s}
    hosts_legacy = Counter(h for h, _, _ in legacy)
    hosts_modern = Counter(h for h, _, _ in modern)
    assert len(sessions) == 1, sessions  # one Mcp-Session-Id throughout, whichever host answered
    assert set(hosts_legacy) == {"a", "b"}, hosts_legacy  # 21 requests: both hosts, but for 1 seed in 10**6
    assert set(hosts_legacy + hosts_modern) == {"a", "b"}
    assert not any(s for _, _, s in modern)
    say(
        "1 python-sdk",
        f"legacy 2025-11-25 session: {outcome['pages']} tools/list pages, echo/add/progress/error calls, "
        f"build_report task created, polled, result and tasks/list: {len(legacy)} HTTP requests "
        f"(a={hosts_legacy['a']}, b={hosts_legacy['b']}, GET streams and DELETE included) under one "
        f"Mcp-Session-Id",
    )
    say(
        "1 python-sdk",
        f"2026-07-28 stateless: list and calls: {len(modern)} requests (a={hosts_modern['a']}, "
        f"b={hosts_modern['b']}), no session id sent",
    )
    counts, peers = _access_summary(cluster, offsets)
    assert peers == {cluster.client.address}, peers
    assert all(counts.values()), counts
    say("1 python-sdk", f"access logs: a={counts['a']} b={counts['b']} requests, every one from {peers.pop()}")


def _node(
    cluster: Cluster, binary: Path, script: str, *args: str, pin: str | None = None, seed: int = 0
) -> dict[str, Any]:
    """Run a tests/e2e/js client script on the client host; with ``pin`` unset every request goes
    to a random web host (random_host.mjs). Returns its result line plus ``routing``."""
    origins = [web.origin for web in cluster.web.values()]
    url = cluster.web[pin or "a"].url
    command = [str(binary)] + ([] if pin else ["--import", "./random_host.mjs"]) + [script, url, *args]
    env = {**os.environ, "MCP_SCALE_HOSTS": ",".join(origins), "MCP_SCALE_SEED": str(SEED * 10 + seed)}
    done = cluster.client.run(command, cwd=nodejs.JS_DIR, env=env, timeout=150)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        result: dict[str, Any] = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        result = {}
    if done.returncode != 0 or not result.get("ok"):
        pytest.fail(f"{script} {args} exited {done.returncode}\n{done.stdout}\n{done.stderr}\n{cluster.logs()}")
    for line in done.stderr.splitlines():
        if line.startswith("random-host "):
            result["routing"] = json.loads(line.removeprefix("random-host "))
    return result


def _by_host(cluster: Cluster, routing: dict[str, Any]) -> dict[str, int]:
    by_origin = routing["counts"]
    return {name: by_origin[web.origin] for name, web in cluster.web.items()}


def test_1_typescript_sdk_flows_with_every_request_on_a_random_host(cluster: Cluster, node_bin: Path) -> None:
    from tests.e2e.test_ts_client import assert_common

    offsets = _offsets(cluster)
    legacy = _node(cluster, node_bin, "client_legacy.mjs", "2025-11-25", seed=1)
    assert_common(legacy, "2025-11-25")
    assert legacy["all_requests_have_session"] is True
    assert legacy["after_delete_status"] == 404  # the session ended on one host is gone on both
    hosts = _by_host(cluster, legacy["routing"])
    assert all(hosts.values()), hosts
    assert legacy["routing"]["sessions"] == [legacy["session_id"]]
    say(
        "1 ts-sdk",
        f"@modelcontextprotocol/sdk 1.x, 2025-11-25 session: every tools/list page, echo/add/progress/error/"
        f"weather calls, DELETE then 404: {sum(hosts.values())} requests (a={hosts['a']}, b={hosts['b']}) "
        "under one Mcp-Session-Id",
    )
    modern = _node(cluster, node_bin, "client_modern.mjs", "2026-07-28", seed=2)
    assert_common(modern, "2026-07-28")
    assert modern["session_ids_sent"] is False
    hosts = _by_host(cluster, modern["routing"])
    assert all(hosts.values()), hosts
    say(
        "1 ts-sdk",
        f"@modelcontextprotocol/client 2.x, 2026-07-28: pages, aggregated list, calls with Mcp-Param headers: "
        f"{sum(hosts.values())} requests (a={hosts['a']}, b={hosts['b']})",
    )
    tasks = _node(cluster, node_bin, "tasks_legacy.mjs", seed=3)
    assert tasks["types"][0] == "taskCreated"
    assert tasks["final_type"] == "result", tasks
    assert tasks["task_id"] in tasks["listed_ids"]
    assert tasks["task_status"] == "completed"
    hosts = _by_host(cluster, tasks["routing"])  # 9 requests: not always on both hosts
    say(
        "1 ts-sdk",
        f"SDK 1.x task flow (callToolStream: created, {len(tasks['statuses'])} status polls, result; "
        f"listTasks, getTask): {sum(hosts.values())} requests (a={hosts['a']}, b={hosts['b']}), "
        f"task run by worker host w1",
    )
    counts, peers = _access_summary(cluster, offsets)
    assert peers == {cluster.client.address}, peers
    assert all(counts.values()), counts
    say("1 ts-sdk", f"access logs: a={counts['a']} b={counts['b']} requests, every one from {peers.pop()}")


# --------------------------------------------------------------------------- step 2: list_changed


def _use_notifier(cluster: Cluster, notifier: str) -> None:
    if cluster.env["MCP_NOTIFIER"] == notifier:
        return
    cluster.env["MCP_NOTIFIER"] = notifier
    for name in cluster.web:
        cluster.stop_web(name)
        cluster.start_web(name, wait=False)
    for web in cluster.web.values():
        cluster.wait_web(web)
    say("2 list_changed", f"web hosts restarted with MCP_NOTIFIER={notifier}")


def _edit_tool(cluster: Cluster, host: str, name: str, description: str) -> float:
    """An admin edit on ``host`` (manage.py shell in its namespace); returns the wall time of the commit."""
    code = (
        "import time\nfrom mcp_tools.models import Tool\n"
        f"t = Tool.objects.get(name={name!r}); t.description = {description!r}; t.save()\n"
        "print(time.time())"
    )
    return float(cluster.shell(cluster.web[host].host, code).splitlines()[-1])


@pytest.mark.parametrize("notifier", ["redis", "postgres"])
def test_2_admin_edit_on_host_a_reaches_listeners_on_host_b(cluster: Cluster, node_bin: Path, notifier: str) -> None:
    _use_notifier(cluster, notifier)
    balancer = Balancer(cluster, _rng(2))
    client = McpClient(balancer)
    session = client.initialize()
    get_b = Listener(cluster.web["b"], session=session, version="2025-11-25")
    listen_b = Listener(cluster.web["b"])
    listen_a = Listener(cluster.web["a"])
    command = ["ip", "netns", "exec", cluster.client.netns, str(node_bin), "listen_modern.mjs"]
    command += [cluster.web["b"].url, "anyone", "20000"]
    listeners = (get_b, listen_b, listen_a)
    with subprocess.Popen(command, cwd=nodejs.JS_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as ts:
        try:
            assert ts.stdout is not None
            ready = json.loads(ts.stdout.readline() or "{}")
            assert ready.get("ready") is True, ready
            assert ready["honored"] == {"toolsListChanged": True}
            time.sleep(0.5)
            description = f"Repeat the given text back (edited on host a, {notifier} notifier)."
            committed = _edit_tool(cluster, "a", "echo", description)
            outcome = json.loads(ts.stdout.readline() or "{}")
            ts.wait(timeout=20)
            heard = {}
            for label, listener in zip(("b GET", "b listen", "a listen"), listeners, strict=True):
                arrived = listener.wait_change(1, timeout=10)
                assert arrived is not None, f"{label} heard nothing\n{cluster.logs()}"
                heard[label] = arrived - committed
            time.sleep(1.0)
            assert [len(x.changes()) for x in listeners] == [1, 1, 1]  # once, not once per process
        finally:
            if ts.poll() is None:
                ts.kill()
            for listener in listeners:
                listener.close()
    assert outcome.get("ok") is True, outcome
    assert outcome["outcome"] == "changed"
    assert "echo" in outcome["changes"][0]["tools"]
    listed = client.tools()
    client.close()
    assert [t["description"] for t in listed if t["name"] == "echo"] == [description]
    say(
        "2 list_changed",
        f"[{notifier}] admin edit of echo committed on host a; notifications/tools/list_changed on host b's "
        f"legacy GET stream after {heard['b GET']:.2f} s, b's subscriptions/listen {heard['b listen']:.2f} s, "
        f"a's listen {heard['a listen']:.2f} s, TS client 2.x listening on b refreshed its list; one each",
    )


# --------------------------------------------------------------------------- step 3: rate limit


def test_3_rate_limit_holds_across_hosts(cluster: Cluster) -> None:
    code = (
        "from mcp_tools.models import Tool\n"
        "Tool.objects.update_or_create(name='scale_limited', defaults=dict(handler_key='demo.echo', "
        "input_schema={'type': 'object', 'properties': {'text': {'type': 'string'}}, 'required': ['text']}, "
        "rate_limit='7/h', enabled=True))\n"
    )
    cluster.shell(cluster.web["a"].host, code)
    balancer = Balancer(cluster, _rng(3))
    legacy = McpClient(balancer)
    legacy.initialize()
    modern = McpClient(balancer)
    accepted: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    retry_after = set()
    try:
        for i in range(20):
            if i % 2:
                answer = modern.modern(
                    "tools/call", {"name": "scale_limited", "arguments": {"text": "x"}}, "scale_limited"
                )
            else:
                answer = legacy.call("scale_limited", {"text": "x"})
            result = answer["result"]
            if result.get("isError"):
                assert "Rate limit" in result["content"][0]["text"] or "rate" in result["content"][0]["text"].lower()
                retry_after.add(result["_meta"]["retryAfterSeconds"] > 0)
                refused[answer["_host"]] += 1
            else:
                accepted[answer["_host"]] += 1
        outcomes = cluster.shell(
            cluster.web["b"].host,
            "import json\nfrom collections import Counter\nfrom mcp_tools.models import AuditEvent\n"
            "rows = AuditEvent.objects.filter(tool_name='scale_limited').values_list('outcome', flat=True)\n"
            "print(json.dumps(Counter(rows), sort_keys=True))",
        ).splitlines()[-1]
    finally:
        legacy.close()
        modern.close()
        cluster.shell(
            cluster.web["a"].host,
            "from mcp_tools.models import Tool; Tool.objects.filter(name='scale_limited').delete()",
        )
    served = accepted + refused
    assert set(served) == {"a", "b"}, served
    assert sum(accepted.values()) == 7, (accepted, refused)
    assert retry_after == {True}
    assert json.loads(outcomes) == {"ok": 7, "rate_limited": 13}, outcomes
    say(
        "3 rate limit",
        f"tool limited to 7/h, 20 calls (legacy session and 2026-07-28 alternating) on random hosts: "
        f"host a served {served['a']} (accepted {accepted['a']}), host b {served['b']} (accepted {accepted['b']}): "
        f"7 accepted in total, 13 refused with retryAfterSeconds; audit rows by outcome: {outcomes}",
    )


# --------------------------------------------------------------------------- step 4: a web host dies


def _poll(get: Any, until: Any, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        state = get()
        if until(state):
            return dict(state)
        assert time.monotonic() < deadline, f"timed out; last state {state}"
        time.sleep(0.2)


def test_4_killing_web_host_b_loses_no_session_task_or_notification(cluster: Cluster) -> None:
    balancer = Balancer(cluster, _rng(4))
    client = McpClient(balancer)
    session = client.initialize()
    created = client.post("tools/call", {"name": "export_archive", "arguments": {"steps": 12}, "task": {}}, host="b")
    task_id = created["result"]["task"]["taskId"]
    _poll(
        lambda: client.post("tasks/get", {"taskId": task_id})["result"],
        lambda s: s.get("statusMessage", "").startswith("Step"),
        timeout=20,
    )
    get_b = Listener(cluster.web["b"], session=session, version="2025-11-25")
    listen_b = Listener(cluster.web["b"])
    waited: dict[str, Any] = {}

    def wait_result() -> None:  # a tasks/result blocked on host b when it dies
        waiter = McpClient(balancer)
        waiter.session = session
        try:
            waited["answer"] = waiter.post("tasks/result", {"taskId": task_id}, host="b", timeout=60)
        except httpx.HTTPError as exc:
            waited["error"] = type(exc).__name__
        finally:
            waiter.close()

    waiter = threading.Thread(target=wait_result, daemon=True)
    waiter.start()
    time.sleep(1.0)
    killed = cluster.kill_web("b")
    killed_at = time.monotonic()
    try:
        assert get_b.done.wait(10), "the GET stream on the dead host did not end"
        assert listen_b.done.wait(10), "the listen stream on the dead host did not end"
        waiter.join(15)
        assert "error" in waited, waited  # the waiting request died with its host
        say(
            "4 web host down",
            f"SIGKILL to all {len(killed)} processes of host b (uvicorn and its workers) while a task ran, "
            f"a tasks/result waited there ({waited['error']}) and a GET stream and a listen stream were open "
            f"there (both ended)",
        )
        with pytest.raises(httpx.ConnectError):
            client.post("ping", {}, host="b")
        committed = _edit_tool(cluster, "a", "echo", "Repeat the given text back (edited while host b was down).")
        # The client carries on: same session, requests to b refused and sent to a.
        names = client.names()
        assert "echo" in names
        echo = client.call("echo", {"text": "still here"})
        assert echo["result"]["content"][0]["text"] == "still here"
        assert client.session == session
        reopened = time.time()
        again = Listener(cluster.web["a"], session=session, version="2025-11-25")
        arrived = again.wait_change(1, timeout=5)
        assert arrived is not None, "the reconnected GET stream did not catch up on the missed change"
        relisten = Listener(cluster.web["a"])
        time.sleep(1.0)
        modern_replay = len(relisten.changes())
        again.close()
        relisten.close()
        say(
            "4 web host down",
            f"same Mcp-Session-Id on host a: tools/list ({len(names)} tools) and echo answered "
            f"({balancer.failovers} request(s) refused by b and re-sent to a); admin edit while no stream was "
            f"open: the session's GET stream reopened on host a got list_changed {arrived - reopened:.2f} s after "
            f"opening ({arrived - committed:.1f} s after the commit; fingerprint catch-up); a new 2026-07-28 "
            f"listen on a got {modern_replay} replay (stateless: nothing to catch up on, the client re-lists)",
        )
        result = client.post("tasks/result", {"taskId": task_id}, timeout=60)
        assert result["_host"] == "a"
        assert result["result"]["content"][0]["text"] == "Report ready after 12 steps.", result
        state = client.post("tasks/get", {"taskId": task_id})["result"]
        assert state["status"] == "completed"
        say(
            "4 web host down",
            f"the task created on host b completed on the worker and its tasks/result, asked again on host a, "
            f"answered {time.monotonic() - killed_at:.1f} s after the kill",
        )
    finally:
        get_b.close()
        listen_b.close()
        if cluster.web["b"].process is None:
            cluster.start_web("b")
    balancer.down.clear()
    answer = client.post("tools/list", {}, host="b")
    assert "result" in answer, answer
    assert client.session == session
    say("4 web host down", "host b started again: it serves the same session at once")
    client.close()


# Found by this step at stop 16 (see the CHANGELOG): a GET stream whose connection dies
# silently (a partition between client and host: no FIN, no RST) still counts as the session's
# stream on its host, which keeps running and writes list_changed into the dead connection. The
# stream used to record that change as heard, so the client's next GET stream found nothing
# missed. Now a notification sent is never taken as heard: the client says what it heard with the
# Last-Event-ID of the stream it resumes (each event's id names the tool list it announces).


def _session_heard(cluster: Cluster, session: str) -> str:
    """The tool-list fingerprint the session row records as heard by the client."""
    code = f"from mcp_tools.models import McpSession; print(McpSession.objects.get(pk={session!r}).tools_fingerprint)"
    return cluster.shell(cluster.web["a"].host, code).splitlines()[-1]


def test_4_partition_between_client_and_host_b_loses_no_notification(cluster: Cluster) -> None:
    """Host b stays up (and reaches PostgreSQL and Redis) but the client can no longer reach it."""
    balancer = Balancer(cluster, _rng(9))
    client = McpClient(balancer, keepalive=False)
    session = client.initialize()
    b = cluster.web["b"].host
    stream = Listener(cluster.web["b"], session=session, version="2025-11-25", read_timeout=3)
    time.sleep(0.5)
    heard_before = _session_heard(cluster, session)
    b.cut_off(cluster.client)
    cluster.client.cut_off(b)
    try:
        committed = _edit_tool(cluster, "a", "echo", "Repeat the given text back (edited during a partition).")
        assert stream.done.wait(15), "the client did not notice the silent stream"
        claimed = _session_heard(cluster, session) != heard_before
        assert not claimed, "a notification written into the dead stream was recorded as heard"
        say(
            "4 partition",
            f"client and host b cut off from each other (blackhole routes both ways; b still reaches the "
            f"database); the client's GET stream on b went silent and ended ({stream.error}); an admin "
            f"edit on a: {len(stream.changes())} list_changed received on that stream; the session row "
            f"{'records the new list as heard (claimed by the stream on b)' if claimed else 'is unchanged'}",
        )
        started = time.monotonic()
        names = client.names()  # requests to b fail (no route) and go to a
        say(
            "4 partition",
            f"the client carries on with the same session: tools/list ({len(names)} tools) in "
            f"{time.monotonic() - started:.1f} s, {balancer.failovers} request(s) to b failed over to a",
        )
        # As the SDK clients do: resume with the id of the last event read on the dead stream.
        resumed_from = stream.last_event_id
        assert resumed_from, "the GET stream on b sent no event id to resume from"
        again = Listener(cluster.web["a"], session=session, version="2025-11-25", last_event_id=resumed_from)
        arrived = again.wait_change(1, timeout=5)
        again.close()
        say(
            "4 partition",
            f"the session's GET stream resumed on host a (Last-Event-ID {resumed_from[-24:]}…, the list the client "
            "last heard of): "
            + (f"list_changed after {arrived - committed:.1f} s" if arrived else "no list_changed: the change is lost"),
        )
        assert arrived is not None, "the change sent into the dead stream on b counted as heard"
        assert again.last_event_id
        assert again.last_event_id != resumed_from
        current = Listener(cluster.web["a"], session=session, version="2025-11-25", last_event_id=again.last_event_id)
        time.sleep(1.0)
        repeated = len(current.changes())
        current.close()
        assert repeated == 0, "a client that heard the newest list got list_changed again"
        say("4 partition", "resumed again with the newest event's id: no list_changed repeated (nothing missed)")
    finally:
        stream.close()
        b.cut_off(cluster.client, cut=False)
        cluster.client.cut_off(b, cut=False)
        client.close()


# --------------------------------------------------------------------------- step 5: a worker host dies


def test_5_killing_the_worker_host_mid_task_ends_the_task_retried_or_failed(cluster: Cluster) -> None:
    balancer = Balancer(cluster, _rng(5))
    client = McpClient(balancer)
    client.initialize()
    try:
        created = client.post("tools/call", {"name": "export_archive", "arguments": {"steps": 10}, "task": {}})
        task_id = created["result"]["task"]["taskId"]
        _poll(
            lambda: client.post("tasks/get", {"taskId": task_id})["result"],
            lambda s: s.get("statusMessage", "").startswith("Step"),
            timeout=20,
        )
        killed = cluster.kill_worker("w1")
        killed_at = time.monotonic()
        queued = client.post("tools/call", {"name": "export_archive", "arguments": {"steps": 2}, "task": {}})
        queued_id = queued["result"]["task"]["taskId"]
        say(
            "5 worker host down",
            f"SIGKILL to worker host w1's {len(killed)} processes (worker and its beat) at a task's step; "
            "a second task created while no worker is up",
        )
        cluster.start_worker("w2")
        say("5 worker host down", f"a new worker started on host w2 ({cluster.workers['w2'].host.address})")
        final = _poll(
            lambda: client.post("tasks/get", {"taskId": task_id})["result"],
            lambda s: s["status"] != "working",
            timeout=LOST_AFTER + 40,
        )
        recovered = time.monotonic() - killed_at
        attempts = cluster.shell(
            cluster.web["a"].host,
            f"from mcp_tools.models import McpTask; print(McpTask.objects.get(pk={task_id!r}).attempts)",
        ).splitlines()[-1]
        assert final["status"] in ("completed", "failed"), final
        if final["status"] == "failed":
            assert final["statusMessage"] == LOST_MESSAGE
        else:
            result = client.post("tasks/result", {"taskId": task_id})["result"]
            assert result["content"][0]["text"] == "Report ready after 10 steps."
            assert int(attempts) >= 2, attempts  # it was killed mid-run and run again
        second = _poll(
            lambda: client.post("tasks/get", {"taskId": queued_id})["result"],
            lambda s: s["status"] != "working",
            timeout=40,
        )
        assert second["status"] == "completed", second
        say(
            "5 worker host down",
            f"the interrupted task ended {final['status']} after {attempts} attempts, {recovered:.1f} s after the "
            f"kill (heartbeat every {HEARTBEAT} s, lost after {LOST_AFTER} s), never stuck in working; "
            "the task queued meanwhile completed on w2",
        )
    finally:
        client.close()


# --------------------------------------------------------------------------- step 6: shared state failures


def _outcome(run: Any) -> str:
    """What one request got, in a few words: "ok", "isError: ...", "error CODE: ..." or the exception."""
    try:
        answer = run()
    except (httpx.HTTPError, AssertionError, KeyError, ValueError) as exc:
        return f"failed: {type(exc).__name__} {str(exc)[:80]}"
    if isinstance(answer, Listener):
        answer.close()
        return "ok (stream open)"
    if "error" in answer:
        return f"HTTP {answer['_status']} error {answer['error']['code']}: {answer['error']['message'][:70]}"
    result = answer["result"]
    if result.get("isError"):
        return f"isError: {result['content'][0]['text'][:70]}"
    return "ok"


def _probe_everything(cluster: Cluster, balancer: Balancer, session: str) -> dict[str, str]:
    legacy = McpClient(balancer)
    legacy.session = session
    modern = McpClient(balancer)
    fresh = McpClient(balancer)
    probes = {
        "legacy tools/list": lambda: legacy.post("tools/list", {}),
        "modern tools/list": lambda: modern.modern("tools/list", {}),
        "legacy tools/call": lambda: legacy.call("echo", {"text": "x"}),
        "modern tools/call": lambda: modern.modern("tools/call", {"name": "echo", "arguments": {"text": "x"}}, "echo"),
        "new session": lambda: {"result": {"sid": fresh.initialize()}},
        "task created": lambda: legacy.post("tools/call", {"name": "noop", "arguments": {}, "task": {}}),
        "GET stream": lambda: Listener(cluster.web[balancer.pick()], session=session, version="2025-11-25"),
        "listen stream": lambda: Listener(cluster.web[balancer.pick()]),
    }
    try:
        return {label: _outcome(run) for label, run in probes.items()}
    finally:
        for client in (legacy, modern, fresh):
            client.close()


def _pids(cluster: Cluster) -> dict[str, list[int]]:
    hosts = [web.host for web in cluster.web.values()] + [worker.host for worker in cluster.workers.values()]
    return {host.name: sorted(host.pids()) for host in hosts}


def _task_completes(client: McpClient, steps: int = 2, timeout: float = 40) -> str:
    created = client.post("tools/call", {"name": "build_report", "arguments": {"steps": steps}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    final = _poll(
        lambda: client.post("tasks/get", {"taskId": task_id})["result"], lambda s: s["status"] != "working", timeout
    )
    return str(final["status"])


# Found by this step (see the CHANGELOG): with the cache (Redis) unreachable, every tools/call
# answers -32603 "Internal error" (cancel.track and ratelimit.hit raise redis.ConnectionError
# before the handler runs) and opening a GET or listen stream answers HTTP 500 (the stream slot
# count, hub.acquire_stream_slot). Listing, sessions and streams already open keep working.
def test_6_redis_down_listing_served_and_everything_back_without_restarts(cluster: Cluster) -> None:
    _use_notifier(cluster, "postgres")
    balancer = Balancer(cluster, _rng(6))
    client = McpClient(balancer)
    session = client.initialize()
    worker = next(name for name, w in cluster.workers.items() if w.process is not None)
    before = _probe_everything(cluster, balancer, session)
    assert set(before.values()) <= {"ok", "ok (stream open)"}, before
    pids = _pids(cluster)
    # A session of its own: the probes open GET streams on theirs, and a session's newest GET
    # stream is the one that gets its notifications (H-9).
    listening = McpClient(balancer)
    open_stream = Listener(cluster.web["b"], session=listening.initialize(), version="2025-11-25")
    cluster.stop_redis()
    try:
        during = _probe_everything(cluster, balancer, session)
        committed = _edit_tool(cluster, "a", "echo", "Repeat the given text back (edited while Redis was down).")
        heard = open_stream.wait_change(1, timeout=10)
    finally:
        open_stream.close()
        listening.close()
        cluster.start_redis()
    down_at = time.monotonic()
    after = _probe_everything(cluster, balancer, session)
    back_in = time.monotonic() - down_at
    task = _task_completes(client)
    for label in before:
        say("6 redis down", f"{label:18} before: {before[label]:17} | down: {during[label]:58} | back: {after[label]}")
    say(
        "6 redis down",
        "an admin edit on a while Redis was down reached a GET stream on b opened before: "
        + (f"after {heard - committed:.2f} s (PostgreSQL notifier)" if heard else "not heard"),
    )
    assert during["legacy tools/list"] == "ok"
    assert during["modern tools/list"] == "ok"
    assert during["new session"] == "ok"
    assert heard is not None
    assert set(after.values()) <= {"ok", "ok (stream open)"}, after
    assert task == "completed"
    assert _pids(cluster) == pids  # nothing was restarted
    say(
        "6 redis down",
        f"Redis back on the same port: every probe ok again at once ({back_in:.1f} s for the probes), a task "
        f"created and completed by worker {worker} (broker reconnected), no process restarted",
    )
    client.close()


def test_6_redis_down_calls_and_new_streams_still_served(cluster: Cluster) -> None:
    balancer = Balancer(cluster, _rng(7))
    client = McpClient(balancer)
    session = client.initialize()
    cluster.stop_redis()
    try:
        during = _probe_everything(cluster, balancer, session)
    finally:
        cluster.start_redis()
        client.close()
    say("6 redis down", f"calls and new streams with Redis down: {during}")
    for label in ("legacy tools/call", "modern tools/call", "GET stream", "listen stream"):
        assert during[label].startswith("ok"), (label, during[label])


def test_6_postgres_restart_survived_by_every_process(cluster: Cluster) -> None:
    _use_notifier(cluster, "postgres")
    balancer = Balancer(cluster, _rng(8))
    client = McpClient(balancer)
    session = client.initialize()
    pids = _pids(cluster)
    get_a = Listener(cluster.web["a"], session=session, version="2025-11-25")
    listen_b = Listener(cluster.web["b"])
    try:
        started = time.monotonic()
        cluster.restart_postgres()
        say("6 postgres restart", f"pg_ctl restart -m fast took {time.monotonic() - started:.1f} s")
        outcomes: Counter[str] = Counter()
        for i in range(24):
            host = "ab"[i % 2]
            answer = (
                client.post("tools/list", {}, host=host)
                if i % 4 < 2
                else client.call("echo", {"text": "pg"}, host=host)
            )
            outcomes[f"{host} {'ok' if 'result' in answer and not answer['result'].get('isError') else 'failed'}"] += 1
        task = _task_completes(client)
        committed = _edit_tool(cluster, "a", "echo", "Repeat the given text back (edited after a PostgreSQL restart).")
        heard = {
            label: listener.wait_change(1, timeout=20) for label, listener in (("a GET", get_a), ("b listen", listen_b))
        }
    finally:
        get_a.close()
        listen_b.close()
    say(
        "6 postgres restart",
        f"24 requests after the restart, alternating hosts: {dict(sorted(outcomes.items()))}; a task completed "
        f"({task}); an admin edit on a reached streams opened before the restart: "
        + ", ".join(f"{k} after {v - committed:.2f} s" if v else f"{k} not heard" for k, v in heard.items()),
    )
    assert outcomes == {"a ok": 12, "b ok": 12}, outcomes
    assert task == "completed"
    assert all(heard.values()), heard
    assert _pids(cluster) == pids
    assert client.session == session
    say("6 postgres restart", "same session throughout, no process restarted")
    client.close()
