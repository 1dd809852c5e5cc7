"""Rate limits of tool calls, counted in Django's cache so they hold across processes.

A limit is ``"<count>/<period>"`` with the period in seconds, or a number and a unit
(``10/m``, ``500/h``, ``20/30s``); ``"off"`` disables it. The window opens at the first call
of a (principal, tool) pair and lasts one period; every process sharing the cache (Redis in
production) counts into the same atomic counter. On Redis a call is one round trip, none once
this process saw the counter past its limit (until the window ends), and one per
``RATE_LIMIT_BATCH`` calls where the site accepts that bounded overshoot (``_Windows``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.core.cache import DEFAULT_CACHE_ALIAS, cache, caches
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.core.signals import setting_changed

from .conf import mcp_settings
from .shared_state import degrade

__all__ = [
    "acquire_slot",
    "hit",
    "parse_rate",
    "release_slot",
    "validate_rate",
]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])\s*$")


@dataclass(frozen=True, slots=True)
class Rate:
    count: int
    seconds: int

    def describe(self) -> str:
        return f"{self.count} call(s) per {self.seconds} s"


@lru_cache(maxsize=256)
def parse_rate(value: str | None) -> Rate | None:
    """None for no limit; ValueError for a malformed one."""
    if value is None or not value.strip() or value.strip().lower() == "off":
        return None
    match = _RATE_RE.match(value)
    if match is None:
        raise ValueError(f"Invalid rate {value!r}; use e.g. '10/m', '500/h' or 'off'")
    count, multiplier, unit = match.groups()
    return Rate(int(count), int(multiplier or 1) * _UNITS[unit])


def hit(scope: str, rate: Rate) -> float | None:
    """Count one event; None when allowed, else the seconds until the window reopens.

    With the cache unreachable the event is allowed (the limit is not enforced meanwhile).
    """
    return degrade("rate limits", lambda: _hit(scope, rate), None)


# The default cache when it is Django's RedisCache or LocMemCache, shared by every thread and
# context of the process: Django keeps a backend per context, and under ASGI a request that did
# not inherit one made its own, with its own connection pool, so a connection per request
# (redis-py's pool is thread-safe; a LocMemCache holds no state of its own beside its settings:
# its entries and lock are the process's, per LOCATION). Other backends, pylibmc's for one, may
# not be thread-safe, and are looked up per call as Django does (about 1 us each time).
_shared: Any = None


def _default_cache() -> Any:
    global _shared
    backend = _shared
    if backend is None:
        backend = caches[DEFAULT_CACHE_ALIAS]
        if isinstance(backend, RedisCache) or type(backend) is LocMemCache:
            _shared = backend
    return backend


def _caches_changed(*, setting: str, **kwargs: Any) -> None:
    global _shared
    if setting == "CACHES":
        _shared = None
        _locmem_keys.cache_clear()


setting_changed.connect(_caches_changed, dispatch_uid="mcp_tools.ratelimit.caches")


def _hit(scope: str, rate: Rate) -> float | None:
    backend: Any = _default_cache()  # looked up once (each use of the proxy looks again)
    if type(backend) is LocMemCache and _LOCMEM_PARTS:
        now = time.time()
        count_key, start_key, start_name = _locmem_keys(backend, scope, rate.seconds)
        count = _count_locmem(backend, count_key, start_key, rate, now)
        return None if count <= rate.count else _retry_after(backend, start_name, rate, now)
    digest = _digest(scope)
    count_key = f"mcp_tools:rl:{digest}:{rate.seconds}:n"
    if isinstance(backend, RedisCache):
        client = backend._cache.get_client(count_key, write=True)  # type: ignore[attr-defined]  # Django's client holder
        # make_key: the key is ASCII and short (a digest), so the memcached key check is skipped.
        return _hit_redis(client, backend.make_key(count_key), rate)
    start_key = f"mcp_tools:rl:{digest}:{rate.seconds}:t"
    now = time.time()
    for _ in range(3):
        # One cache operation per call once a window is open: the incr counts; the first call
        # of a window finds no counter and opens it.
        try:
            count = backend.incr(count_key)
        except ValueError:
            if not backend.add(count_key, 1, timeout=rate.seconds):
                continue  # another process opened the window first: count into it
            backend.set(start_key, now, timeout=rate.seconds)
            count = 1
        return None if count <= rate.count else _retry_after(backend, start_key, rate, now)
    return None


def _retry_after(backend: Any, start_key: str, rate: Rate, now: float) -> float:
    """Seconds until the window that refused a call ends (at least one)."""
    started = backend.get(start_key)
    started = float(started) if isinstance(started, int | float) else now
    return max(1.0, round(started + rate.seconds - now, 1))


# What _count_locmem uses of Django's LocMemCache (present from Django 2.1 through 6.x); if a
# release changes them, the cache's public incr/add serve instead.
_LOCMEM_PARTS = all(hasattr(LocMemCache, name) for name in ("_has_expired", "_set", "pickle_protocol"))


@lru_cache(maxsize=4096)
def _locmem_keys(backend: Any, scope: str, seconds: int) -> tuple[str, str, str]:
    """The counter's and the window start's keys of ``scope`` as ``backend`` stores them (its
    ``make_key``), and the start's key as the public calls take it; made once per scope."""
    digest = _digest(scope)
    start_name = f"mcp_tools:rl:{digest}:{seconds}:t"
    return backend.make_key(f"mcp_tools:rl:{digest}:{seconds}:n"), backend.make_key(start_name), start_name


def _count_locmem(backend: Any, key: str, start_key: str, rate: Rate, now: float) -> int:
    """Django's LocMemCache ``incr``, and ``add`` of a new window, in one step under the cache's
    own lock, with the values stored as the cache stores them (``get`` and ``clear`` see them).
    ``key`` and ``start_key`` are made keys (:func:`_locmem_keys`).

    The public calls check every key for memcached (a character loop per key, a third of a
    call's cost here) and take the lock twice when a window opens; these keys are short ASCII
    digests. A LocMemCache is one process's: the counts hold per process, as before.
    """
    protocol = backend.pickle_protocol
    with backend._lock:
        if backend._has_expired(key):  # no counter, or its window ended: open one
            backend._set(key, pickle.dumps(1, protocol), rate.seconds)
            backend._set(start_key, pickle.dumps(now, protocol), rate.seconds)
            return 1
        count = int(pickle.loads(backend._cache[key])) + 1  # noqa: S301 - in-process, written above
        backend._cache[key] = pickle.dumps(count, protocol)
        backend._cache.move_to_end(key, last=False)
        return count


@lru_cache(maxsize=4096)
def _digest(scope: str) -> str:
    return hashlib.sha256(scope.encode()).hexdigest()[:32]


def _hit_redis(client: Any, key: str, rate: Rate) -> float | None:
    """On the redis-py client behind Django's Redis cache: Django's ``incr`` is two round trips
    (EXISTS, INCRBY) and opening a window two more; here a call is at most one round trip, a
    pipeline of ``SET NX EX`` and ``INCRBY``, and the window's end is the key's TTL.

    A counter this process saw past its limit refuses here until its window ends, with no round
    trip (counts only grow within a window). With ``RATE_LIMIT_BATCH`` = N > 1 a process also
    accepts up to N - 1 calls of a counter by itself, while what it knows of the counter leaves
    room for them, and adds them with the next call's round trip (see :class:`_Windows`).
    """
    now = time.monotonic()
    window = _windows.known.get(key)
    if window is not None and now < window.until:
        if window.known > rate.count:
            return max(1.0, round(window.until - now, 1))
    else:
        window = None
    batch = mcp_settings.RATE_LIMIT_BATCH
    if batch > 1:
        return _hit_batched(client, key, rate, batch, window=window, now=now)
    pipe = client.pipeline(transaction=False)
    pipe.set(key, 0, ex=rate.seconds, nx=True)
    pipe.incr(key)
    count = int(pipe.execute()[1])
    if count <= rate.count:
        return None
    left = client.pttl(key)
    if not isinstance(left, int) or left < 0:  # no expiry (should not happen): give it one
        client.expire(key, rate.seconds)
        left = rate.seconds * 1000
    _windows.learn(key, count, time.monotonic() + left / 1000, rate.seconds)
    return max(1.0, round(left / 1000, 1))


def _hit_batched(client: Any, key: str, rate: Rate, batch: int, *, window: _Window | None, now: float) -> float | None:
    windows = _windows
    n = 1
    adding = False
    if window is not None:
        with windows.lock:
            if not window.syncing:  # (while another thread adds this process's calls, count alone)
                if window.pending + 1 < batch and window.known + window.pending + 1 <= rate.count:
                    window.pending += 1
                    return None
                n = window.pending + 1
                window.pending = 0
                window.syncing = adding = True
    try:
        pipe = client.pipeline(transaction=False)
        pipe.set(key, 0, ex=rate.seconds, nx=True)
        pipe.incrby(key, n)
        pipe.pttl(key)
        _, count, left = pipe.execute()
    finally:
        if adding and window is not None:
            window.syncing = False
    count = int(count)
    if not isinstance(left, int) or left < 0:  # no expiry (should not happen): give it one
        client.expire(key, rate.seconds)
        left = rate.seconds * 1000
    windows.learn(key, count, time.monotonic() + left / 1000, rate.seconds)
    if count <= rate.count:
        return None
    return max(1.0, round(left / 1000, 1))


@dataclass(slots=True)
class _Window:
    until: float  # when the counter's window ends (monotonic; from its TTL)
    known: int  # the shared count as last read
    pending: int = 0  # calls accepted here and not yet added to it (RATE_LIMIT_BATCH)
    syncing: bool = False  # a thread is adding them now


class _Windows:
    """What this process knows of the shared counters it used (Redis cache only).

    A counter past its limit is refused here until its window ends. With ``RATE_LIMIT_BATCH``
    = N, a process accepts a call without a round trip while it holds fewer than N - 1 calls
    not yet added and the count it last read plus those stays within the limit; the N-th call
    adds them all with one ``INCRBY``. Every process holds at most N - 1 accepted calls the
    counter does not know of, and once the counter shows the limit passed no process that has
    read it accepts more: a limit of L is passed by at most (N - 1) calls per process serving
    that principal and tool in a window. Calls held when a window ends are not counted in the
    next one. At most ``MAX_KNOWN`` counters are remembered (expired ones are dropped first;
    past that, a counter is counted call by call).
    """

    MAX_KNOWN = 100_000

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.known: dict[str, _Window] = {}

    def learn(self, key: str, count: int, until: float, seconds: int) -> None:
        """What one round trip read: the counter's ``count`` and the end of its window."""
        with self.lock:
            window = self.known.get(key)
            if window is not None and window.until > time.monotonic() and until < window.until + seconds / 2:
                # The same window (a later one ends a whole period later). Answers may come back
                # out of order; counts only grow within a window.
                window.known = max(window.known, count)
                window.until = until
                return
            if len(self.known) >= self.MAX_KNOWN:
                now = time.monotonic()
                self.known = {k: w for k, w in self.known.items() if w.until > now}
                if len(self.known) >= self.MAX_KNOWN:
                    return
            self.known[key] = _Window(until, count)

    def forked(self) -> None:
        self.__init__()  # type: ignore[misc]


_windows = _Windows()
os.register_at_fork(after_in_child=_windows.forked)


def validate_rate(value: str) -> None:
    """Model/form validator: the same grammar as the settings (``parse_rate``)."""
    from django.core.exceptions import ValidationError

    try:
        parse_rate(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from exc


def _slot_key(name: str) -> str:
    return f"mcp_tools:slots:{hashlib.sha256(name.encode()).hexdigest()[:32]}"


def acquire_slot(name: str, limit: int, ttl: int) -> bool:
    """See ``_acquire``; with the cache unreachable the slot is granted (no bound meanwhile)."""
    return degrade("concurrency bounds", lambda: _acquire(name, limit, ttl), True)


def _acquire(name: str, limit: int, ttl: int) -> bool:
    """Count one more holder of ``name`` (open streams, running calls) in the shared cache;
    False, and nothing counted, when ``limit`` holders are there already.

    The counter outlives every holder it counts by ``ttl`` seconds at most, so a process that
    died holding slots frees them then.
    """
    key = _slot_key(name)
    cache.add(key, 0, timeout=ttl)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=ttl)
        count = 1
    if count > limit:
        release_slot(name)
        return False
    return True


def release_slot(name: str) -> None:
    def release() -> None:
        with contextlib.suppress(ValueError):
            cache.decr(_slot_key(name))

    degrade("concurrency bounds", release, None)
