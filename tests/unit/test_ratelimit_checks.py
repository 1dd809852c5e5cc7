"""Rate grammar, the rate-limit counter, and the system checks that catch bad values at startup."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError

from mcp_tools.checks import check_settings
from mcp_tools.ratelimit import Rate, hit, parse_rate, validate_rate


@pytest.mark.parametrize(
    ("value", "expected"),
    [("10/m", Rate(10, 60)), ("500/h", Rate(500, 3600)), ("20/30s", Rate(20, 30)), (" 3 / d ", Rate(3, 86400))],
)
def test_parse_rate(value: str, expected: Rate) -> None:
    assert parse_rate(value) == expected


@pytest.mark.parametrize("value", [None, "", "off", "OFF"])
def test_parse_rate_off(value: str | None) -> None:
    assert parse_rate(value) is None


@pytest.mark.parametrize("value", ["100/min", "ten/m", "10", "/m"])
def test_parse_rate_rejects_and_the_model_validator_agrees(value: str) -> None:
    with pytest.raises(ValueError, match="Invalid rate"):
        parse_rate(value)
    with pytest.raises(ValidationError):
        validate_rate(value)


def test_hit_counts_per_window() -> None:
    cache.clear()
    rate = Rate(2, 60)
    assert hit("alice\0echo", rate) is None
    assert hit("alice\0echo", rate) is None
    retry = hit("alice\0echo", rate)
    assert retry is not None
    assert 1.0 <= retry <= 60
    assert hit("bob\0echo", rate) is None  # another principal has its own window


def test_on_locmem_the_counter_is_the_cache_s_own_value_and_its_window_ends(monkeypatch: Any) -> None:
    # The default cache of the tests is a LocMemCache: counted in one step under its lock, the
    # values stored as its own incr/add store them (get and clear see them; issue 37).
    from django.core.cache.backends.locmem import LocMemCache

    from mcp_tools import ratelimit

    assert type(ratelimit._default_cache()) is LocMemCache
    cache.clear()
    rate = Rate(3, 30)
    count_key = "mcp_tools:rl:" + ratelimit._digest("dora\0echo") + ":30:n"
    start_key = count_key[:-1] + "t"
    now = [1_000_000.0]
    monkeypatch.setattr(ratelimit.time, "time", lambda: now[0])
    monkeypatch.setattr("django.core.cache.backends.locmem.time.time", lambda: now[0])
    checked: list[str] = []
    monkeypatch.setattr(LocMemCache, "validate_key", lambda self, key: checked.append(key))
    assert [hit("dora\0echo", rate) for _ in range(3)] == [None, None, None]
    assert checked == []  # an accepted call: no memcached key check (a character loop per key)
    monkeypatch.undo()
    monkeypatch.setattr(ratelimit.time, "time", lambda: now[0])
    monkeypatch.setattr("django.core.cache.backends.locmem.time.time", lambda: now[0])
    assert cache.get(count_key) == 3
    assert cache.get(start_key) == 1_000_000.0
    now[0] += 10
    assert hit("dora\0echo", rate) == 20.0  # the window opened 10 s ago
    assert cache.get(count_key) == 4
    now[0] += 21  # the window is over: a new one opens
    assert hit("dora\0echo", rate) is None
    assert cache.get(count_key) == 1
    cache.clear()  # clears the counters too
    assert [hit("dora\0echo", rate) for _ in range(3)] == [None, None, None]
    assert hit("dora\0echo", rate) is not None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("RATE_LIMIT", "100/min"),
        ("REGISTRATION_RATE_LIMIT", "x"),
        ("SCOPE_ADVERTISING", "progresive"),
        ("THREAD_POOL_SIZE", 0),
        ("THREAD_POOL_SIZE", "8"),
    ],
)
def test_bad_values_fail_the_system_checks(settings: Any, key: str, value: object) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, key: value}
    errors = check_settings()
    assert [e.id for e in errors] == ["mcp_tools.E001"]
    assert key in errors[0].msg


@pytest.fixture
def redis_cache(settings: Any) -> Any:
    """The default cache on the machine's Redis, under a key prefix of its own."""
    import secrets

    from django.core.cache import caches

    from tests.support.external_services import require

    require("redis")
    prefix = f"rltest{secrets.token_hex(4)}"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:6379/0",
            "KEY_PREFIX": prefix,
        }
    }
    backend: Any = caches["default"]
    yield backend
    client = backend._cache.get_client(None, write=True)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


def test_on_redis_a_call_is_one_round_trip_and_the_window_expires(redis_cache: Any) -> None:
    """The counter is counted by redis-py in one pipeline (Django's incr would be two round
    trips); the window's end comes from the key's TTL."""
    from mcp_tools import ratelimit

    client = redis_cache._cache.get_client(None, write=True)
    sent: list[int] = []
    original = type(client.pipeline()).execute

    def counting(pipe: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(len(pipe.command_stack))
        return original(pipe, *args, **kwargs)

    rate = Rate(2, 1)
    pipeline_class = type(client.pipeline())
    pipeline_class.execute = counting
    try:
        assert hit("carol\0echo", rate) is None
        assert hit("carol\0echo", rate) is None
        retry = hit("carol\0echo", rate)
    finally:
        pipeline_class.execute = original
    assert sent == [2, 2, 2]  # SET NX EX + INCR, once per call
    assert retry == 1.0
    key = redis_cache.make_and_validate_key("mcp_tools:rl:" + ratelimit._digest("carol\0echo") + ":1:n")
    assert int(client.get(key)) == 3
    assert 0 < client.pttl(key) <= 1000
    import time

    time.sleep(1.1)
    assert hit("carol\0echo", rate) is None  # a new window
    assert hit("dave\0echo", rate) is None  # another principal: its own counter


def test_on_redis_the_limit_holds_for_concurrent_callers(redis_cache: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    rate = Rate(25, 60)
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: hit("erin\0echo", rate), range(60)))
    assert sum(o is None for o in outcomes) == 25
    assert all(o is None or 1.0 <= o <= 60 for o in outcomes)


def _round_trips(client: Any) -> tuple[list[int], Any]:
    """Count the round trips of the rate limit: pipelines (their command counts) and PTTLs."""
    sent: list[int] = []
    pipeline_class = type(client.pipeline())
    original = pipeline_class.execute

    def counting(pipe: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(len(pipe.command_stack))
        return original(pipe, *args, **kwargs)

    pipeline_class.execute = counting
    return sent, lambda: setattr(pipeline_class, "execute", original)


def test_on_redis_a_counter_past_its_limit_refuses_with_no_round_trip(redis_cache: Any, monkeypatch: Any) -> None:
    """T-13: counts only grow within a window: once this process saw the counter past its
    limit, it refuses until the window ends without asking Redis (the first refusal asks its TTL)."""
    client = redis_cache._cache.get_client(None, write=True)
    pttls: list[str] = []
    original_pttl = type(client).pttl
    monkeypatch.setattr(type(client), "pttl", lambda self, key: pttls.append(key) or original_pttl(self, key))
    sent, restore = _round_trips(client)
    rate = Rate(2, 2)
    try:
        outcomes = [hit("frank\0echo", rate) for _ in range(6)]
    finally:
        restore()
    assert outcomes[:2] == [None, None]
    assert all(o is not None and 1.0 <= o <= 2 for o in outcomes[2:])
    assert sent == [2, 2, 2]  # the three counted calls; the next three asked nothing
    assert len(pttls) == 1
    import time

    time.sleep(2.1)  # the window ended: counted again
    assert hit("frank\0echo", rate) is None


def test_on_redis_a_batch_is_one_round_trip_per_n_calls(redis_cache: Any, settings: Any) -> None:
    from mcp_tools import ratelimit

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RATE_LIMIT_BATCH": 5}
    client = redis_cache._cache.get_client(None, write=True)
    sent, restore = _round_trips(client)
    try:
        assert all(hit("gina\0echo", Rate(100, 60)) is None for _ in range(12))
    finally:
        restore()
    # The first call learns the counter; then each fifth call adds the four held before it.
    assert sent == [3, 3, 3]
    key = redis_cache.make_and_validate_key("mcp_tools:rl:" + ratelimit._digest("gina\0echo") + ":60:n")
    assert int(client.get(key)) == 11  # the twelfth is held by this process


def test_on_redis_a_batch_passes_a_limit_by_at_most_n_minus_1_calls_per_process(
    redis_cache: Any, settings: Any, monkeypatch: Any
) -> None:
    """T-13 with RATE_LIMIT_BATCH: two processes (each its own knowledge of the counters) taking
    calls in turn, the worst order for the bound: 20 per window with batches of 5 accepts 20 to
    20 + 2 x 4 calls."""
    from mcp_tools import ratelimit

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RATE_LIMIT_BATCH": 5}
    processes = [ratelimit._Windows(), ratelimit._Windows()]
    accepted = 0
    for n in range(80):
        monkeypatch.setattr(ratelimit, "_windows", processes[n % 2])
        accepted += hit("hana\0echo", Rate(20, 60)) is None
    assert 20 <= accepted <= 28
    # Once each has read the counter past its limit, neither accepts more in this window.
    for n in range(10):
        monkeypatch.setattr(ratelimit, "_windows", processes[n % 2])
        assert hit("hana\0echo", Rate(20, 60)) is not None


def test_on_redis_a_batch_holds_the_limit_for_concurrent_callers_of_one_process(
    redis_cache: Any, settings: Any
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RATE_LIMIT_BATCH": 5}
    rate = Rate(25, 60)
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: hit("ivan\0echo", rate), range(60)))
    assert 25 <= sum(o is None for o in outcomes) <= 29
    assert all(o is None or 1.0 <= o <= 60 for o in outcomes)


def test_on_redis_every_context_counts_through_one_backend(redis_cache: Any) -> None:
    """Django keeps a cache backend per context: under ASGI a request that did not inherit one
    made its own, and its own Redis connection pool (a new connection per request). The rate
    limit shares the process's RedisCache (redis-py's pool is thread-safe)."""
    import contextvars

    from mcp_tools import ratelimit

    backends = [contextvars.Context().run(ratelimit._default_cache) for _ in range(3)]
    assert backends[0] is backends[1] is backends[2]
    clients = [contextvars.Context().run(lambda: hit("mia\0echo", Rate(100, 60))) for _ in range(3)]
    assert clients == [None, None, None]


def test_on_locmem_one_backend_serves_every_thread_until_the_caches_change(settings: Any) -> None:
    # The LocMemCache is looked up once per process (Django's lookup is per thread and context,
    # about 1 us a call); its entries are the process's, per LOCATION, whichever thread counts.
    import threading

    from mcp_tools import ratelimit

    cache.clear()
    rate = Rate(5, 60)
    first = ratelimit._default_cache()
    seen: list[Any] = []
    worker = threading.Thread(target=lambda: seen.extend([ratelimit._default_cache(), hit("eve\0echo", rate)]))
    worker.start()
    worker.join()
    assert seen == [first, None]
    assert cache.get("mcp_tools:rl:" + ratelimit._digest("eve\0echo") + ":60:n") == 1
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rate-limit-other"}
    }
    other = ratelimit._default_cache()
    assert other is not first
    assert other._cache is not first._cache
    assert hit("eve\0echo", rate) is None
    assert other.get("mcp_tools:rl:" + ratelimit._digest("eve\0echo") + ":60:n") == 1  # counted anew there
    other.clear()
