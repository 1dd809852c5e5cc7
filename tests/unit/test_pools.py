"""``mcp_tools.pools.Pool`` (``POOL_JOIN_MS`` above 0): short jobs on one thread, slow ones
joined by others after ``join_after``, as many as a ThreadPoolExecutor once jobs are slow.

Timing bounds are generous: the jobs sleep (no CPU), so a busy machine moves them little.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.test import override_settings

from mcp_tools import threads
from mcp_tools.pools import Pool


@pytest.fixture
def pools():
    made: list[Pool] = []

    def make(size: int, join_after: float) -> Pool:
        pool = Pool(size, f"test-pool-{len(made)}", join_after)
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.shutdown(wait=True, cancel_futures=True)


def test_short_jobs_run_one_after_the_other_on_one_thread(pools) -> None:
    """Jobs queued for a second and more: the watcher looks several times and lets no helper in."""
    pool = pools(6, 0.2)
    futures = [pool.submit(lambda: (time.sleep(0.002), threading.current_thread().name)[1]) for _ in range(500)]
    assert {f.result(timeout=60) for f in futures} == {"test-pool-0_0"}
    assert pool.typical < 0.2


def test_a_job_behind_a_slow_one_starts_after_join_after(pools) -> None:
    pool = pools(4, 0.1)
    began = time.monotonic()
    slow = pool.submit(time.sleep, 2.0)
    behind = pool.submit(lambda: (time.monotonic() - began, threading.current_thread().name))
    waited, name = behind.result(timeout=30)
    assert 0.09 <= waited < 1.5  # not before join_after, and long before the slow job ends
    assert name != "test-pool-0_0"  # a helper took it
    assert not slow.done()
    slow.result(timeout=30)


def test_a_job_waits_for_the_first_thread_while_the_running_one_is_young(pools) -> None:
    pool = pools(4, 5.0)
    began = time.monotonic()
    first = pool.submit(time.sleep, 0.2)
    behind = pool.submit(lambda: time.monotonic() - began)
    first.result(timeout=30)
    assert 0.19 <= behind.result(timeout=30) < 4.0  # ran after the first, on its thread


def test_slow_jobs_run_as_many_at_once_as_the_pool_has_threads(pools) -> None:
    """100 ms jobs arriving at 50 a second need 5 threads: without the wide mode a new job
    (young for join_after) held the next back every time and the queue grew."""
    pool = pools(6, 0.05)
    began = time.monotonic()
    futures = []
    for _ in range(60):
        futures.append(pool.submit(time.sleep, 0.1))
        time.sleep(0.02)
    for future in futures:
        future.result(timeout=30)
    took = time.monotonic() - began
    assert took < 1.2 + 0.8, took  # arrivals 1.2 s; the last one done soon after
    assert pool.typical >= 0.05


def test_at_most_size_jobs_run_at_once(pools) -> None:
    pool = pools(3, 0.02)
    running = 0
    peak = 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.1)
        with lock:
            running -= 1

    for future in [pool.submit(job) for _ in range(12)]:
        future.result(timeout=30)
    assert peak == 3


def test_an_exception_reaches_the_caller_and_the_thread_goes_on(pools) -> None:
    pool = pools(2, 0.05)

    def fails() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        pool.submit(fails).result(timeout=30)
    assert pool.submit(lambda: 7).result(timeout=30) == 7


def test_shutdown_runs_what_was_queued_or_cancels_it(pools) -> None:
    pool = pools(2, 0.05)
    done = [pool.submit(time.sleep, 0.01) for _ in range(5)]
    pool.shutdown(wait=True)
    assert all(f.done() and f.exception() is None for f in done)
    with pytest.raises(RuntimeError):
        pool.submit(time.sleep, 0)

    other = pools(1, 0.05)
    blocker = other.submit(time.sleep, 0.3)
    queued = [other.submit(time.sleep, 0) for _ in range(3)]
    other.shutdown(wait=True, cancel_futures=True)
    assert blocker.result(timeout=30) is None
    assert all(f.cancelled() for f in queued)


def test_the_setting_picks_the_pool() -> None:
    saved = dict(threads._pools)
    try:
        for join_ms, kind in ((0, ThreadPoolExecutor), (50, Pool)):
            threads._pools.clear()
            with override_settings(MCP_TOOLS={"POOL_JOIN_MS": join_ms}):
                pool = threads._executor(threads.HANDLERS)
            assert isinstance(pool, kind)
            assert pool.submit(lambda: 3).result(timeout=30) == 3
            pool.shutdown(wait=True)
    finally:
        threads._pools.clear()
        threads._pools.update(saved)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_makes_its_own_pools() -> None:
    saved = dict(threads._pools)
    try:
        threads._pools.clear()
        with override_settings(MCP_TOOLS={"POOL_JOIN_MS": 50}):
            parents = threads._executor()
            parents.submit(lambda: None).result(timeout=30)
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: the parent's pool has no thread here
                ok = False
                try:
                    ok = threads._executor() is not parents and threads._executor().submit(lambda: 5).result(5) == 5
                finally:
                    os.write(write, b"1" if ok else b"0")
                    os._exit(0)
            os.close(write)
            answer = os.read(read, 1)
            os.waitpid(pid, 0)
            os.close(read)
        assert answer == b"1"
        parents.shutdown(wait=True)
    finally:
        threads._pools.clear()
        threads._pools.update(saved)
