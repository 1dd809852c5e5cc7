"""What processes reuse instead of reading a shared store per request, and what cuts it short,
across real servers: uvicorn (the ASGI front) and gunicorn (the WSGI front) on one PostgreSQL
database, the Redis notifier on a redis-server of the test's own (so it can be stopped), with
``CATALOG_VERSION_MAX_AGE`` 60 s, ``TOKEN_CACHE_SECONDS`` 300 s and ``RATE_LIMIT_BATCH`` 5.

Each server counts its round trips (``tests/support/counted_site.py``): a test sees that a process
reuses (no version read, no token lookup per request) before it shows what ends the reuse:

- a tool disabled from a third process is refused by both within a notifier message, not 60 s;
- with the notifier's Redis stopped, every request reads the version again, so a change made
  meanwhile (whose message is lost) is seen by the next request; reuse comes back with Redis;
- a revoked token, and the token of a user made inactive, are refused by both at once;
- a rate limit of 20 calls per hour, counted in batches of 5, accepts 20 to 28 calls over two
  processes (at most 4 more per process).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_round_trips import REDIS_DB, counts, gunicorn, scale_env
from tests.support import external_services
from tests.support.mcp_client import MODERN, modern_meta
from tests.support.servers import LiveServer, free_port, prepare_database, run_server, server_env

pytestmark = [pytest.mark.e2e]

MAX_AGE = "60"
QUICK = 5.0  # what "at once" is allowed to take here: a message, on a loaded machine


@dataclass
class Fleet:
    a: LiveServer  # uvicorn, ASGI front
    b: LiveServer  # gunicorn, WSGI front
    token: str
    notifier: Any  # the test's redis-server (tests.support.scale_cluster.Redis)

    @property
    def servers(self) -> tuple[LiveServer, LiveServer]:
        return self.a, self.b

    def shell(self, code: str) -> str:
        return self.a.manage("shell", "-c", code)

    def token_for(self, username: str) -> str:
        self.shell(
            "from django.contrib.auth.models import User; "
            f"User.objects.filter(username={username!r}).exists() or User.objects.create_user({username!r})"
        )
        return self.a.manage("mcp_token", "--user", username, "--scopes", "all").strip().splitlines()[-1]


def post(server: LiveServer, token: str, method: str, params: dict[str, Any]) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": modern_meta()}}
    return httpx.post(server.url, json=body, headers=headers, timeout=30)


def call(server: LiveServer, token: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = post(server, token, "tools/call", {"name": name, "arguments": arguments})
    assert response.status_code == 200, response.text
    return dict(response.json())


def echo_known(server: LiveServer, token: str) -> bool:
    reply = call(server, token, "echo", {"text": "x"})
    if "error" in reply:
        assert reply["error"]["message"] == "Unknown tool: echo", reply
        return False
    return True


def reads(server: LiveServer, token: str, n: int = 3) -> tuple[float, float]:
    """(catalog version reads, token lookups) per tools/list over ``n`` of them."""
    counts(server, reset=True)
    for _ in range(n):
        assert post(server, token, "tools/list", {}).status_code == 200
    found = counts(server)
    return (
        found.get("pg SELECT mcp_tools_catalogversion", 0) / n,
        found.get("pg SELECT oauth2_provider_accesstoken", 0) / n,
    )


def until(what: str, check: Callable[[], bool], timeout: float) -> float:
    """Seconds until ``check()`` holds (polled); fails after ``timeout``."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            pytest.fail(f"{what}: not within {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - started


def reusing(server: LiveServer, token: str) -> bool:
    return reads(server, token) == (0.0, 0.0)


@pytest.fixture(scope="module")
def counted_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    from tests.support.scale_cluster import throwaway_redis

    external_services.require("postgres")
    external_services.require("redis")
    tmp: Path = tmp_path_factory.mktemp("reuse")
    prefix = f"mcp-reuse-{uuid.uuid4().hex[:10]}"
    with contextlib.ExitStack() as stack:
        notifier = stack.enter_context(throwaway_redis("127.0.0.1", free_port()))
        database = stack.enter_context(external_services.temporary_postgres_database("mcp_reuse"))
        env = scale_env(
            database,
            prefix,
            MCP_NOTIFIER_REDIS_URL=f"{notifier.url}/0",
            MCP_CATALOG_VERSION_MAX_AGE=MAX_AGE,
            MCP_TOKEN_CACHE_SECONDS="300",
            MCP_RATE_LIMIT_BATCH="5",
        )
        prepare_database(server_env(tmp, env))
        a = stack.enter_context(run_server(tmp, extra_env=env, app="tests.support.counted_site:asgi", prepare=False))
        b = stack.enter_context(gunicorn(tmp, env))
        a.manage("demo_superuser")
        token = a.manage("mcp_token", "--user", "admin", "--scopes", "all").strip().splitlines()[-1]
        try:
            yield Fleet(a, b, token, notifier)
        finally:
            import redis

            client = redis.Redis.from_url(REDIS_DB)
            keys = list(client.scan_iter(match=f"{prefix}:*", count=500))
            if keys:
                client.delete(*keys)


def _set_enabled(counted_fleet: Fleet, name: str, enabled: bool) -> None:
    counted_fleet.shell(
        f"from mcp_tools.models import Tool; t = Tool.objects.get(name={name!r}); t.enabled = {enabled!r}; t.save()"
    )


def test_a_tool_disabled_anywhere_is_refused_everywhere_within_a_message(counted_fleet: Fleet) -> None:
    for server in counted_fleet.servers:
        assert echo_known(server, counted_fleet.token)
        until("the subscription up, reads reused", lambda s=server: reusing(s, counted_fleet.token), 15)
    _set_enabled(counted_fleet, "echo", False)
    try:
        for server in counted_fleet.servers:
            # The bound is 60 s (CATALOG_VERSION_MAX_AGE); the message makes it a moment.
            seconds = until("echo refused", lambda s=server: not echo_known(s, counted_fleet.token), QUICK)
            print(f"{server.base_url}: echo refused {seconds:.3f} s after the change committed")
    finally:
        _set_enabled(counted_fleet, "echo", True)
    for server in counted_fleet.servers:
        until("echo back", lambda s=server: echo_known(s, counted_fleet.token), QUICK)


def test_with_the_notifier_down_every_request_reads_again(counted_fleet: Fleet) -> None:
    for server in counted_fleet.servers:
        until("the subscription up, reads reused", lambda s=server: reusing(s, counted_fleet.token), 15)
    counted_fleet.notifier.stop()
    try:
        for server in counted_fleet.servers:
            # The subscription lost: one version read and one token lookup per request.
            until("reads per request", lambda s=server: reads(s, counted_fleet.token) == (1.0, 1.0), 15)
        _set_enabled(counted_fleet, "echo", False)  # its message is lost (nobody listens)
        for server in counted_fleet.servers:
            assert not echo_known(server, counted_fleet.token)  # the very next request
        _set_enabled(counted_fleet, "echo", True)
        for server in counted_fleet.servers:
            assert echo_known(server, counted_fleet.token)
    finally:
        counted_fleet.notifier.start()
    for server in counted_fleet.servers:  # reconnected (back-off up to 5 s): reuse again
        until("the subscription up again", lambda s=server: reusing(s, counted_fleet.token), 30)


def test_a_revoked_token_is_refused_everywhere_within_a_message(counted_fleet: Fleet) -> None:
    """T-13 (access control per call) with tokens' rows reused: the revocation cuts it short."""
    revoked, bobs = counted_fleet.token_for("admin"), counted_fleet.token_for("bob")
    for server in counted_fleet.servers:
        for token in (revoked, bobs):
            assert post(server, token, "tools/list", {}).status_code == 200
        until("token rows reused", lambda s=server: reusing(s, revoked) and reusing(s, bobs), 15)
    counted_fleet.shell(
        f"from oauth2_provider.models import AccessToken; AccessToken.objects.get(token={revoked!r}).revoke()"
    )
    counted_fleet.shell(
        "from django.contrib.auth.models import User; "
        "u = User.objects.get(username='bob'); u.is_active = False; u.save()"
    )
    for server in counted_fleet.servers:
        for token in (revoked, bobs):
            seconds = until(
                "the token refused", lambda s=server, t=token: post(s, t, "tools/list", {}).status_code == 401, QUICK
            )
            print(f"{server.base_url}: a token refused {seconds:.3f} s after the change committed")
        assert post(server, counted_fleet.token, "tools/list", {}).status_code == 200  # other tokens unharmed


def test_a_batched_rate_limit_passes_by_at_most_batch_minus_one_per_process(counted_fleet: Fleet) -> None:
    """T-13 (rate-limit invocations), with the overshoot RATE_LIMIT_BATCH states."""
    counted_fleet.shell("from mcp_tools.models import Tool; Tool.objects.filter(name='add').update(rate_limit='20/h')")
    for server in counted_fleet.servers:  # the change reached both (their catalogs carry the limit)
        until("the limit", lambda s=server: "error" not in call(s, counted_fleet.token, "add", {"a": 0, "b": 0}), QUICK)
    # The two calls above opened the window; 78 more, alternating, 20 to 28 accepted in all.
    results = [
        call(counted_fleet.servers[n % 2], counted_fleet.token, "add", {"a": n, "b": 1})["result"] for n in range(78)
    ]
    accepted = 2 + sum(not r.get("isError") for r in results)
    print(f"20/h in batches of 5 over 2 processes: {accepted} accepted of 80")
    assert 20 <= accepted <= 28
    assert all("retry after" in r["content"][0]["text"] for r in results if r.get("isError"))
    assert results[-1].get("isError")  # both know the window is full
